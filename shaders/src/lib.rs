//! Pure SPIR-V transforms for Overlap, over `rspirv`'s data representation.
//! Nothing here touches Vulkan: every pass is a function from module to
//! module, unit-tested without a GPU, and every output can be checked with
//! [`validate`].
//!
//! Modules come from applications, valid or not: no pass recurses to a depth
//! the input controls, loops on a cyclic definition or panics. A module a
//! pass cannot handle is refused with an error value ([`Malformed`] for one
//! whose ids do not hold together, see [`check`]), so that the layer passes
//! it down unchanged.

pub mod capability;
pub mod fdm;
pub mod first_draw;
pub mod interlock;
#[doc(hidden)]
pub mod interp;
mod ir;
pub mod library;
mod malformed;
pub mod opaque;
pub mod ordered;
pub mod spinlock;
pub mod subsampled;
#[cfg(test)]
pub(crate) mod testing;
mod values;
pub mod varyings;
pub mod viewport_broadcast;
pub mod viewport_index;

pub use malformed::{check, Malformed, MAX_DEPTH};

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

/// The opcodes an OpSpecConstantOp may hold (the SPIR-V specification's
/// list, Shader and Kernel capabilities together).
const SPEC_CONSTANT_OPS: &[rspirv::spirv::Op] = {
    use rspirv::spirv::Op::*;
    &[
        SConvert,
        UConvert,
        FConvert,
        SNegate,
        Not,
        IAdd,
        ISub,
        IMul,
        UDiv,
        SDiv,
        UMod,
        SRem,
        SMod,
        ShiftRightLogical,
        ShiftRightArithmetic,
        ShiftLeftLogical,
        BitwiseOr,
        BitwiseXor,
        BitwiseAnd,
        VectorShuffle,
        CompositeExtract,
        CompositeInsert,
        LogicalOr,
        LogicalAnd,
        LogicalNot,
        LogicalEqual,
        LogicalNotEqual,
        Select,
        IEqual,
        INotEqual,
        ULessThan,
        SLessThan,
        UGreaterThan,
        SGreaterThan,
        ULessThanEqual,
        SLessThanEqual,
        UGreaterThanEqual,
        SGreaterThanEqual,
        QuantizeToF16,
        ConvertFToS,
        ConvertSToF,
        ConvertFToU,
        ConvertUToF,
        ConvertPtrToU,
        ConvertUToPtr,
        GenericCastToPtr,
        PtrCastToGeneric,
        Bitcast,
        FNegate,
        FAdd,
        FSub,
        FMul,
        FDiv,
        FRem,
        FMod,
        AccessChain,
        InBoundsAccessChain,
        PtrAccessChain,
        InBoundsPtrAccessChain,
    ]
};

/// Parses SPIR-V words into a module.
pub fn parse(words: &[u32]) -> Result<Module, Error> {
    // rspirv reads a literal string up to its instruction's word count
    // without checking that count against the end of the stream (it panics):
    // every instruction must fit first.
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        if count == 0 || count > words.len() - at {
            return Err(Error::Parse(format!("the instruction at word {at} has a word count of {count}")));
        }
        // rspirv parses an OpSpecConstantOp's operands by the grammar of the
        // opcode it holds, and panics on kinds it cannot read there (a
        // result id, another OpSpecConstantOp): only the opcodes the spec
        // allows in it go on.
        if first & 0xffff == rspirv::spirv::Op::SpecConstantOp as u32 && count >= 4 {
            let inner = words[at + 3];
            if !SPEC_CONSTANT_OPS.iter().any(|op| *op as u32 == inner) {
                return Err(Error::Parse(format!(
                    "the OpSpecConstantOp at word {at} holds opcode {inner}, which it may not"
                )));
            }
        }
        at += count;
    }
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
    if let Some(why) = validator_would_assert(words) {
        return Err(Error::Invalid(why));
    }
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

/// SPIRV-Tools is compiled with its assertions on (spirv-tools-sys does not
/// define `NDEBUG`), and some of them fire on invalid modules, aborting the
/// process. This finds, without running the validator, the shapes known to
/// reach one (found by the fuzz harness), and says why such a module is
/// invalid, as a release build of spirv-val would:
///
/// - `TessLevelOuter` / `TessLevelInner` declared as an array of 32-bit
///   floats whose length is not an integer `OpConstant`
///   (`validate_builtins.cpp`: "Array type definition is corrupt").
fn validator_would_assert(words: &[u32]) -> Option<String> {
    use rspirv::spirv::{BuiltIn, Decoration, Op};
    use std::collections::HashMap;
    let tess_level = |b: u32| b == BuiltIn::TessLevelOuter as u32 || b == BuiltIn::TessLevelInner as u32;
    let is = |i: &[u32], op: Op| i[0] & 0xffff == op as u32;
    let mut insts: Vec<&[u32]> = Vec::new();
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        let Some(inst) = words.get(at..at + count).filter(|_| count > 0) else { break };
        insts.push(inst);
        at += count;
    }
    // Types by id; the opcode and type of constants and variables by id.
    let mut types: HashMap<u32, &[u32]> = HashMap::new();
    let mut typed: HashMap<u32, (Op, u32)> = HashMap::new();
    for i in &insts {
        match (Op::from_u32(i[0] & 0xffff), i.len()) {
            (Some(op), 2..) if op.is_type() => {
                types.insert(i[1], i);
            }
            (Some(op), 3..) if op.is_constant() || op == Op::Variable => {
                typed.insert(i[2], (op, i[1]));
            }
            _ => {}
        }
    }
    // The types of the tessellation level built-ins, as the validator finds them.
    let tess_levels = insts.iter().filter_map(|i| match **i {
        [_, target, d, b] if is(i, Op::Decorate) && d == Decoration::BuiltIn as u32 && tess_level(b) => {
            match *typed.get(&target)? {
                (Op::Variable, ptr) => match types.get(&ptr)? {
                    p @ [_, _, _, pointee] if is(p, Op::TypePointer) => Some(*pointee),
                    _ => None,
                },
                (_, ty) => Some(ty),
            }
        }
        [_, target, member, d, b] if is(i, Op::MemberDecorate) && d == Decoration::BuiltIn as u32 && tess_level(b) => {
            let s = types.get(&target).filter(|s| is(s, Op::TypeStruct))?;
            s.get(2 + member as usize).copied()
        }
        _ => None,
    });
    for ty in tess_levels {
        let Some(&&[_, _, element, length]) = types.get(&ty).filter(|a| is(a, Op::TypeArray)) else { continue };
        let float32 = types.get(&element).is_some_and(|f| is(f, Op::TypeFloat) && f.get(2) == Some(&32));
        let int_constant = typed.get(&length).is_some_and(|(op, t)| {
            matches!(op, Op::Constant | Op::ConstantNull) && types.get(t).is_some_and(|t| is(t, Op::TypeInt))
        });
        if float32 && !int_constant {
            return Some(format!(
                "a TessLevelOuter or TessLevelInner built-in is an array (id {ty}) whose length is not an integer constant"
            ));
        }
    }
    None
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

    /// rspirv panicked on a string operand whose instruction's word count
    /// ran past the end of the module (found by the fuzz harness).
    #[test]
    fn an_instruction_running_past_the_end_is_an_error() {
        let mut words = minimal_fragment();
        // OpEntryPoint (its name a string) claiming 0x105 words.
        words[10] = 0x0105_000f;
        assert!(matches!(parse(&words), Err(Error::Parse(_))));
        words[10] = 0x0005_000f;
        words.push(0x0003_0005); // a trailing OpName missing its words
        assert!(matches!(parse(&words), Err(Error::Parse(_))));
        words.pop();
        words.push(0);
        assert!(matches!(parse(&words), Err(Error::Parse(_))));
    }

    /// rspirv panicked on an OpSpecConstantOp holding an opcode it may not
    /// (another OpSpecConstantOp: its grammar has a result id among its
    /// operands) — found by the fuzz harness (seed 1, case 100 149).
    #[test]
    fn a_spec_constant_op_holding_a_forbidden_opcode_is_an_error() {
        let base = minimal_fragment();
        let with = |inner: u32| {
            let mut words = base.clone();
            let id = words[3];
            words[3] = id + 3;
            // %int = OpTypeInt 32 1; %one = OpConstant %int 1;
            // %x = OpSpecConstantOp %int <inner> %one %one
            words.extend([0x0004_0015, id, 32, 1, 0x0004_002b, id, id + 1, 1]);
            words.extend([0x0006_0034, id, id + 2, inner, id + 1, id + 1]);
            words
        };
        let iadd = rspirv::spirv::Op::IAdd as u32;
        assert!(parse(&with(iadd)).is_ok(), "the allowed opcode parses");
        let spec_op = rspirv::spirv::Op::SpecConstantOp as u32;
        assert!(matches!(parse(&with(spec_op)), Err(Error::Parse(m)) if m.contains("holds opcode 52")));
    }

    /// SPIRV-Tools asserted (aborting the process) on a tessellation level
    /// array whose length is a specialization constant (found by the fuzz
    /// harness); `validate` says it is invalid instead.
    #[test]
    fn a_tessellation_level_of_spec_constant_length_is_invalid_not_an_abort() {
        use rspirv::spirv::Op;
        let src = "#version 450\nlayout(vertices = 3) out;\nvoid main() { gl_TessLevelInner[0] = 1.0; gl_TessLevelOuter[0] = 1.0; }\n";
        let mut words = crate::testing::glsl(src, "tesc").unwrap();
        validate(&words, TargetEnv::Vulkan1_1).unwrap();
        // The length of gl_TessLevelInner (`%uint_2 = OpConstant %uint 2`) becomes a spec constant.
        crate::testing::patch(
            &mut words,
            Op::Constant,
            |w| w[3] == 2,
            |w| w[0] = (w[0] & 0xffff_0000) | Op::SpecConstant as u32,
        );
        let e = validate(&words, TargetEnv::Vulkan1_1).unwrap_err();
        assert!(e.to_string().contains("whose length is not an integer constant"), "{e}");
    }

    #[test]
    fn validation_rejects_broken_module() {
        let mut words = minimal_fragment();
        words.truncate(words.len() - 1); // drop OpFunctionEnd
        assert!(validate(&words, TargetEnv::Vulkan1_0).is_err());
    }
}
