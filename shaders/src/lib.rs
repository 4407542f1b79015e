//! Pure SPIR-V transforms for Overlap, over `rspirv`'s data representation.
//! Nothing here touches Vulkan: every pass is a function from module to
//! module, unit-tested without a GPU, and every output can be checked with
//! [`validate`].

pub mod fdm;
pub mod interlock;
pub mod spinlock;
#[cfg(test)]
pub(crate) mod testing;
pub mod varyings;

use rspirv::binary::Assemble;
use rspirv::dr::Module;
use spirv_tools::val::Validator;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("SPIR-V does not parse: {0}")]
    Parse(String),
    #[error("SPIR-V is {0} bytes long, not a whole number of 32-bit words")]
    Length(usize),
    #[error("the SPIR-V validator rejects the module: {0}")]
    Invalid(String),
    #[error("the SPIR-V validator is unavailable: {0}")]
    ValidatorUnavailable(String),
}

/// Parses SPIR-V words into a module.
pub fn parse(words: &[u32]) -> Result<Module, Error> {
    let mut loader = rspirv::dr::Loader::new();
    rspirv::binary::parse_words(words, &mut loader).map_err(|e| Error::Parse(e.to_string()))?;
    Ok(loader.module())
}

/// Parses SPIR-V bytes (as found in a `.spv` file or `pCode`).
pub fn parse_bytes(bytes: &[u8]) -> Result<Module, Error> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Error::Length(bytes.len()));
    }
    let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
    parse(&words)
}

/// Encodes a module back into words.
pub fn assemble(module: &Module) -> Vec<u32> {
    module.assemble()
}

/// The Vulkan environment a module is validated for.
#[derive(Clone, Copy, Debug)]
pub enum TargetEnv {
    Vulkan1_0,
    Vulkan1_1,
    Vulkan1_2,
    Vulkan1_3,
}

/// Validates `words` for `env` with SPIRV-Tools (compiled into the crate, in process).
///
/// Block layout is not checked: which layout rules apply depends on device
/// features the application enabled (scalar, standard uniform buffer layout:
/// zink relies on them), and no pass of this crate changes a layout
/// decoration, so the driver's acceptance of the original layout carries over.
pub fn validate(words: &[u32], env: TargetEnv) -> Result<(), Error> {
    let env = match env {
        TargetEnv::Vulkan1_0 => spirv_tools::TargetEnv::Vulkan_1_0,
        TargetEnv::Vulkan1_1 => spirv_tools::TargetEnv::Vulkan_1_1,
        TargetEnv::Vulkan1_2 => spirv_tools::TargetEnv::Vulkan_1_2,
        TargetEnv::Vulkan1_3 => spirv_tools::TargetEnv::Vulkan_1_3,
    };
    let validator = spirv_tools::val::create(Some(env));
    let options = spirv_tools::val::ValidatorOptions { skip_block_layout: true, ..Default::default() };
    match validator.validate(words, Some(options)) {
        Ok(()) => Ok(()),
        Err(e) if e.inner == spirv_tools::error::SpirvResult::Unsupported => {
            Err(Error::ValidatorUnavailable(e.to_string()))
        }
        Err(e) => Err(Error::Invalid(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal valid Vulkan fragment shader, hand-assembled:
    /// OpCapability Shader; OpMemoryModel Logical GLSL450;
    /// OpEntryPoint Fragment %main "main"; OpExecutionMode %main OriginUpperLeft;
    /// %void = OpTypeVoid; %fn = OpTypeFunction %void;
    /// %main = OpFunction %void None %fn; OpLabel; OpReturn; OpFunctionEnd
    fn minimal_fragment() -> Vec<u32> {
        vec![
            0x0723_0203,
            0x0001_0000,
            0,
            6,
            0, // header, bound 6
            0x0002_0011,
            1, // OpCapability Shader
            0x0003_000e,
            0,
            1, // OpMemoryModel Logical GLSL450
            0x0005_000f,
            4,
            1,
            0x6e69_616d,
            0, // OpEntryPoint Fragment %1 "main"
            0x0003_0010,
            1,
            7, // OpExecutionMode %1 OriginUpperLeft
            0x0002_0013,
            2, // %2 = OpTypeVoid
            0x0003_0021,
            3,
            2, // %3 = OpTypeFunction %2
            0x0005_0036,
            2,
            1,
            0,
            3, // %1 = OpFunction %2 None %3
            0x0002_00f8,
            4,           // OpLabel %4
            0x0001_00fd, // OpReturn
            0x0001_0038, // OpFunctionEnd
        ]
    }

    #[test]
    fn round_trip_is_identical_and_valid() {
        let words = minimal_fragment();
        validate(&words, TargetEnv::Vulkan1_0).unwrap();
        let module = parse(&words).unwrap();
        let out = assemble(&module);
        // rspirv stamps its own generator id (word 2); everything else is kept.
        assert_eq!(out[..2], words[..2]);
        assert_eq!(out[3..], words[3..]);
    }

    #[test]
    fn the_validator_rejects_an_invalid_module() {
        // The minimal shader with OpReturn removed: a block without a terminator.
        let mut words = minimal_fragment();
        words.remove(words.len() - 2);
        assert!(matches!(validate(&words, TargetEnv::Vulkan1_0), Err(Error::Invalid(_))));
    }

    #[test]
    fn truncated_input_is_an_error() {
        let words = minimal_fragment();
        assert!(parse(&words[..words.len() - 3]).is_err());
        assert!(matches!(parse_bytes(&[1, 2, 3]), Err(Error::Length(3))));
    }

    #[test]
    fn validation_rejects_broken_module() {
        let mut words = minimal_fragment();
        words.truncate(words.len() - 1); // drop OpFunctionEnd
        assert!(validate(&words, TargetEnv::Vulkan1_0).is_err());
    }
}
