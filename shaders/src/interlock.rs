//! Fragment shader interlock lowering (`SPV_EXT_fragment_shader_interlock`).
//!
//! **serialized** — for a rasterizer that already shades overlapping
//! fragments one after another in primitive order (llvmpipe: each 64x64 tile
//! is shaded by one thread, primitive by primitive, and per-sample shading
//! runs the samples of a pixel one after another), every critical section is
//! already exclusive and ordered. Lowering removes
//! `OpBeginInvocationInterlockEXT` / `OpEndInvocationInterlockEXT`, the six
//! interlock execution modes, the three capabilities (declaring `Shader`,
//! which they implied, where the module does not already) and the extension; the
//! shader's memory accesses are untouched, so the section's effects happen in
//! the same order as with hardware interlock. Any shape of section is fine
//! (one block, nested control flow, a called function, several pairs, pairs
//! under divergent conditions as DXC emits for rasterizer-ordered views).

use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Capability, ExecutionMode, Op};

const EXTENSION: &str = "SPV_EXT_fragment_shader_interlock";

const CAPABILITIES: [Capability; 3] = [
    Capability::FragmentShaderSampleInterlockEXT,
    Capability::FragmentShaderPixelInterlockEXT,
    Capability::FragmentShaderShadingRateInterlockEXT,
];

/// The interlock execution modes and what they ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    pub granularity: Granularity,
    pub ordered: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    Pixel,
    Sample,
    ShadingRate,
}

impl Mode {
    pub fn from_execution_mode(m: ExecutionMode) -> Option<Mode> {
        let (granularity, ordered) = match m {
            ExecutionMode::PixelInterlockOrderedEXT => (Granularity::Pixel, true),
            ExecutionMode::PixelInterlockUnorderedEXT => (Granularity::Pixel, false),
            ExecutionMode::SampleInterlockOrderedEXT => (Granularity::Sample, true),
            ExecutionMode::SampleInterlockUnorderedEXT => (Granularity::Sample, false),
            ExecutionMode::ShadingRateInterlockOrderedEXT => (Granularity::ShadingRate, true),
            ExecutionMode::ShadingRateInterlockUnorderedEXT => (Granularity::ShadingRate, false),
            _ => return None,
        };
        Some(Mode { granularity, ordered })
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = match self.granularity {
            Granularity::Pixel => "pixel",
            Granularity::Sample => "sample",
            Granularity::ShadingRate => "shading-rate",
        };
        write!(f, "{g} interlock, {}", if self.ordered { "ordered" } else { "unordered" })
    }
}

/// What lowering found and removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The interlock execution modes of the module's entry points.
    pub modes: Vec<Mode>,
    pub begins: usize,
    pub ends: usize,
}

/// Whether SPIR-V `words` declare an interlock capability: a cheap scan of the
/// module's leading capability instructions, so that modules without
/// interlock are never parsed.
pub fn uses_interlock(words: &[u32]) -> bool {
    crate::ir::declares_capability(words, &CAPABILITIES)
}

fn interlock_mode(inst: &Instruction) -> Option<Mode> {
    match inst.operands.get(1) {
        Some(Operand::ExecutionMode(m)) => Mode::from_execution_mode(*m),
        _ => None,
    }
}

/// The interlock modes a module declares.
pub fn modes(module: &Module) -> Vec<Mode> {
    module.execution_modes.iter().filter_map(interlock_mode).collect()
}

/// Removes the interlock capabilities (keeping what they implied),
/// extension and execution modes.
pub fn remove_interlock_declarations(module: &mut Module) {
    crate::capability::remove(module, &CAPABILITIES);
    module.extensions.retain(|e| !matches!(e.operands.first(), Some(Operand::LiteralString(s)) if s == EXTENSION));
    module.execution_modes.retain(|m| interlock_mode(m).is_none());
}

/// Lowers for the `serialized` strategy (see the module documentation).
pub fn lower_serialized(module: &mut Module) -> Report {
    let mut report = Report { modes: modes(module), ..Default::default() };
    remove_interlock_declarations(module);
    for f in &mut module.functions {
        for b in &mut f.blocks {
            b.instructions.retain(|i| match i.class.opcode {
                Op::BeginInvocationInterlockEXT => {
                    report.begins += 1;
                    false
                }
                Op::EndInvocationInterlockEXT => {
                    report.ends += 1;
                    false
                }
                _ => true,
            });
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assemble_text, glsl};
    use crate::{assemble, parse, validate, TargetEnv};

    const PREAMBLE: &str = "#version 450\n#extension GL_ARB_fragment_shader_interlock : require\n";

    /// The shapes a lowering must handle, as GLSL bodies (with `main`).
    const SHAPES: &[(&str, &str)] = &[
        ("one block", "layout(binding=0, r32ui) coherent uniform uimage2D img;\nvoid main() { beginInvocationInterlockARB(); imageStore(img, ivec2(gl_FragCoord.xy), imageLoad(img, ivec2(gl_FragCoord.xy)) + 1u); endInvocationInterlockARB(); }"),
        ("nested control flow inside the section", "layout(binding=0, r32ui) coherent uniform uimage2D img;\nlayout(location=0) flat in int n;\nvoid main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x; for (int i = 0; i < n; i++) { if ((v & 1u) == 0u) v += 3u; else v -= 1u; } imageStore(img, p, uvec4(v)); endInvocationInterlockARB(); }"),
        ("section after discard", "layout(binding=0, r32ui) coherent uniform uimage2D img;\nvoid main() { if (gl_FragCoord.x < 2.0) discard; beginInvocationInterlockARB(); imageStore(img, ivec2(gl_FragCoord.xy), uvec4(7u)); endInvocationInterlockARB(); }"),
        ("section in a called function", "layout(binding=0, r32ui) coherent uniform uimage2D img;\nvoid touch(ivec2 p) { imageStore(img, p, imageLoad(img, p) * 2u); }\nvoid main() { beginInvocationInterlockARB(); touch(ivec2(gl_FragCoord.xy)); endInvocationInterlockARB(); }"),
    ];

    const MODES: &[(&str, Mode)] = &[
        ("pixel_interlock_ordered", Mode { granularity: Granularity::Pixel, ordered: true }),
        ("pixel_interlock_unordered", Mode { granularity: Granularity::Pixel, ordered: false }),
        ("sample_interlock_ordered", Mode { granularity: Granularity::Sample, ordered: true }),
        ("sample_interlock_unordered", Mode { granularity: Granularity::Sample, ordered: false }),
    ];

    fn check_lowered(words: &[u32], want_mode: Mode, pairs: usize) {
        assert!(uses_interlock(words));
        let mut m = parse(words).unwrap();
        let report = lower_serialized(&mut m);
        assert_eq!(report.modes, vec![want_mode]);
        assert_eq!((report.begins, report.ends), (pairs, pairs));
        let out = assemble(&m);
        validate(&out, TargetEnv::Vulkan1_1).unwrap();
        assert!(!uses_interlock(&out));
        let again = parse(&out).unwrap();
        assert!(modes(&again).is_empty());
        let text = crate::testing::disassemble(&out);
        for gone in ["Interlock", EXTENSION] {
            assert!(!text.contains(gone), "{gone} left in:\n{text}");
        }
    }

    /// Every shape under every mode lowers to valid SPIR-V without interlock.
    #[test]
    fn glsl_shapes_by_mode() {
        for (mode_name, mode) in MODES {
            for (shape, body) in SHAPES {
                let src = format!("{PREAMBLE}layout({mode_name}) in;\n{body}\n");
                let words = glsl(&src, "frag").unwrap_or_else(|e| panic!("{shape}: {e}"));
                check_lowered(&words, *mode, 1);
            }
        }
    }

    /// Hand-written: two begin/end pairs, each under its own divergent
    /// condition (as DXC emits for rasterizer-ordered views).
    #[test]
    fn divergent_pairs_in_assembly() {
        let text = crate::testing::DIVERGENT_PAIRS;
        let words = assemble_text(text).unwrap();
        validate(&words, TargetEnv::Vulkan1_1).unwrap();
        check_lowered(&words, Mode { granularity: Granularity::Pixel, ordered: true }, 2);
    }

    #[test]
    fn modules_without_interlock_are_not_matched() {
        let words =
            glsl("#version 450\nlayout(location=0) out vec4 c;\nvoid main() { c = vec4(1); }\n", "frag").unwrap();
        assert!(!uses_interlock(&words));
        assert!(!uses_interlock(&[]));
        assert!(!uses_interlock(&words[..5]));
    }
}

#[cfg(test)]
mod robustness {
    use super::*;
    use crate::testing::lowering_keeps_shader_declared;

    /// Each interlock capability implies `Shader`: a module declaring only
    /// it must come out declaring `Shader`, or it no longer validates.
    #[test]
    fn shader_stays_declared_when_interlock_was_the_only_capability() {
        lowering_keeps_shader_declared(|m| {
            let r = lower_serialized(m);
            assert_eq!((r.begins, r.ends), (1, 1));
        });
    }
}
