//! Fragment density map built-ins on drivers without `VK_EXT_fragment_density_map`.
//!
//! The layer renders a bin of fragment area `a = (ax, ay)` into a scratch
//! target `1/a` the size of the framebuffer region, with the transform
//! `x' = x / a` (the bin offset is zero by construction: every area has a
//! scratch target of its own, see `layer/src/fdm`). A fragment shader then
//! sees, per area, constants baked into its own pipeline variant:
//!
//! - `FragSizeEXT` = `a`;
//! - `FragInvocationCountEXT` = the invocations per fragment the pipeline
//!   asks for (`fragmentDensityInvocations` is false: the area never adds
//!   invocations);
//! - `FragCoord.xy` = scratch `FragCoord.xy · a`, the fragment centre in
//!   framebuffer space (turnip's `(unscaled − offset) · fragSize` with a zero
//!   offset); `z` and `w` are unchanged.
//!
//! The `FragmentDensityEXT` capability (keeping the `Shader` it implied) and
//! its SPIR-V extension are removed; the built-in variables become private
//! variables holding those values.

use crate::ir::{
    add_to_interface, builtin_inputs, code, constant, declares_capability, def, entry_functions, find_or_add, fresh,
    make_private, passed_to_function, pointer_type, prepend_to_function, remove_decorations, replace_uses,
    retype_chains, var_type,
};
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Capability, Decoration, ExecutionModel, Op, StorageClass, Word};

/// The layer's own shaders of the density-map GPU plan (compiled from
/// `glsl/` by `glsl/generate`, SPIR-V 1.0): the compute step that reads the
/// map and writes the conditional-rendering predicates, and the upscale
/// (a triangle over a region, the scratch target fetched at `p / area`).
pub const GPU_PLAN_COMP: &[u8] = include_bytes!("generated/fdm_plan.comp.spv");
pub const UPSCALE_VERT: &[u8] = include_bytes!("generated/fdm_upscale.vert.spv");
pub const UPSCALE_FRAG: &[u8] = include_bytes!("generated/fdm_upscale.frag.spv");
/// The upscale's fragment shader for layered scratch targets (compiled
/// with `ARRAY`: a multiview pass's, each view reading its layer), for
/// multisampled ones (`MS`: one sample per draw) and both.
pub const UPSCALE_ARRAY_FRAG: &[u8] = include_bytes!("generated/fdm_upscale_array.frag.spv");
pub const UPSCALE_MS_FRAG: &[u8] = include_bytes!("generated/fdm_upscale_ms.frag.spv");
pub const UPSCALE_MS_ARRAY_FRAG: &[u8] = include_bytes!("generated/fdm_upscale_ms_array.frag.spv");
/// The four for depth attachments (`DEPTH`: the fragment's depth written).
pub const UPSCALE_DEPTH_FRAG: &[u8] = include_bytes!("generated/fdm_upscale_depth.frag.spv");
pub const UPSCALE_DEPTH_ARRAY_FRAG: &[u8] = include_bytes!("generated/fdm_upscale_depth_array.frag.spv");
pub const UPSCALE_DEPTH_MS_FRAG: &[u8] = include_bytes!("generated/fdm_upscale_depth_ms.frag.spv");
pub const UPSCALE_DEPTH_MS_ARRAY_FRAG: &[u8] = include_bytes!("generated/fdm_upscale_depth_ms_array.frag.spv");
/// The host plan's composite as a compute shader (a storage image write per
/// pixel, no raster back end), for a 2D and a layered scratch target.
pub const COMPOSITE_COMP: &[u8] = include_bytes!("generated/fdm_composite.comp.spv");
pub const COMPOSITE_ARRAY_COMP: &[u8] = include_bytes!("generated/fdm_composite_array.comp.spv");
/// The GPU plan's upscale as a compute shader (`PLAN`), 2D and layered.
pub const COMPOSITE_PLAN_COMP: &[u8] = include_bytes!("generated/fdm_composite_plan.comp.spv");
pub const COMPOSITE_PLAN_ARRAY_COMP: &[u8] = include_bytes!("generated/fdm_composite_plan_array.comp.spv");
/// The GPU plan's region clears (`fdm_clear.vert`), and their fragment
/// shaders by the subpass's count of colour attachments (0-8).
pub const CLEAR_VERT: &[u8] = include_bytes!("generated/fdm_clear.vert.spv");
pub const CLEAR_FRAGS: [&[u8]; 9] = [
    include_bytes!("generated/fdm_clear_0.frag.spv"),
    include_bytes!("generated/fdm_clear_1.frag.spv"),
    include_bytes!("generated/fdm_clear_2.frag.spv"),
    include_bytes!("generated/fdm_clear_3.frag.spv"),
    include_bytes!("generated/fdm_clear_4.frag.spv"),
    include_bytes!("generated/fdm_clear_5.frag.spv"),
    include_bytes!("generated/fdm_clear_6.frag.spv"),
    include_bytes!("generated/fdm_clear_7.frag.spv"),
    include_bytes!("generated/fdm_clear_8.frag.spv"),
];

/// The per-variant values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    /// The fragment area of the bins the variant renders.
    pub area: (u32, u32),
    /// `FragInvocationCountEXT`.
    pub invocations: u32,
}

/// What [`lower`] changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub frag_size: bool,
    pub invocation_count: bool,
    pub frag_coord_scaled: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Unsupported {
    #[error("a density built-in is a block member, not a variable")]
    BuiltinInBlock,
    #[error("a density built-in's pointer is passed to a function")]
    PointerArgument,
    #[error("input location {0} is the shader's own")]
    LocationTaken(u32),
    #[error("malformed module: {0}")]
    Malformed(#[from] crate::Malformed),
}

/// Where a variant's area comes from.
#[derive(Clone, Copy)]
enum Source {
    /// Constants: the variant renders one area, at the origin of its own
    /// scratch target.
    Constant(Params),
    /// A flat `vec4` input at this location: the fragment area `(x, y)` and
    /// the origin `(z, w)` of the region its bin was rendered at, and
    /// `FragInvocationCountEXT`.
    Input { location: u32, invocations: u32 },
}

const DENSITY_EXTENSIONS: [&str; 2] = ["SPV_EXT_fragment_invocation_density", "SPV_NV_shading_rate"];

/// Whether `words` declares the `FragmentDensityEXT` capability (a scan of
/// the capability section, without parsing the module).
pub fn uses_density_builtins(words: &[u32]) -> bool {
    declares_capability(words, &[Capability::FragmentDensityEXT])
}

/// Whether the module reads `FragCoord` (so that a binned render needs a
/// variant of it per area).
pub fn reads_frag_coord(m: &Module) -> bool {
    !builtin_inputs(m, BuiltIn::FragCoord).is_empty()
}

/// Lowers the density built-ins of a fragment shader module for one
/// variant; on an error the module is left as it was.
pub fn lower(module: &mut Module, p: &Params) -> Result<Report, Unsupported> {
    lower_from(module, Source::Constant(*p))
}

/// [`lower`] for one variant that serves every area (design G of
/// `docs/design/density-map-recording.md`, not yet used by the layer): the
/// area and the origin of the region the fragment's bin was rendered at come
/// from a flat `vec4` input at `location` (`(area.x, area.y, origin.x,
/// origin.y)`, written per primitive by the stage before), each region
/// rendered at the top-left of its own rectangle (`x' = (x − origin)/area +
/// origin`): `FragSizeEXT = area`, `FragCoord.xy = (FragCoord.xy − origin) ·
/// area + origin`. Refused where an input of the module reaches `location`.
pub fn lower_from_input(module: &mut Module, invocations: u32, location: u32) -> Result<Report, Unsupported> {
    lower_from(module, Source::Input { location, invocations })
}

fn lower_from(module: &mut Module, source: Source) -> Result<Report, Unsupported> {
    crate::check(module)?;
    if let Source::Input { location, .. } = source {
        if let Some(l) = crate::ir::max_location(module, StorageClass::Input).filter(|l| *l >= location) {
            return Err(Unsupported::LocationTaken(l));
        }
    }
    let mut out = module.clone();
    let report = lower_checked(&mut out, source)?;
    *module = out;
    Ok(report)
}

/// The `vec4` flat input at `location` [`Source::Input`] reads, declared.
fn area_input(m: &mut Module, location: u32) -> Word {
    let float = find_or_add(m, Op::TypeFloat, None, vec![Operand::LiteralBit32(32)]);
    let vec4 = find_or_add(m, Op::TypeVector, None, vec![Operand::IdRef(float), Operand::LiteralBit32(4)]);
    let ptr = pointer_type(m, StorageClass::Input, vec4);
    let input = crate::ir::add_io_variable(m, ptr, StorageClass::Input);
    crate::ir::decorate(m, input, Decoration::Location, vec![Operand::LiteralBit32(location)]);
    crate::ir::decorate(m, input, Decoration::Flat, vec![]);
    input
}

/// Code that loads `input` (a `vec4` of `float`) once; its four components.
fn components(m: &mut Module, input: Word, code: &mut Vec<Instruction>) -> [Word; 4] {
    let float = find_or_add(m, Op::TypeFloat, None, vec![Operand::LiteralBit32(32)]);
    let vec4 = find_or_add(m, Op::TypeVector, None, vec![Operand::IdRef(float), Operand::LiteralBit32(4)]);
    let load = fresh(m);
    code.push(Instruction::new(Op::Load, Some(vec4), Some(load), vec![Operand::IdRef(input)]));
    std::array::from_fn(|k| {
        let out = fresh(m);
        code.push(Instruction::new(
            Op::CompositeExtract,
            Some(float),
            Some(out),
            vec![Operand::IdRef(load), Operand::LiteralBit32(k as u32)],
        ));
        out
    })
}

/// Code for `a op b` of type `ty`; its result.
fn binary(m: &mut Module, code: &mut Vec<Instruction>, (op, ty): (Op, Word), a: Word, b: Word) -> Word {
    let id = fresh(m);
    code.push(Instruction::new(op, Some(ty), Some(id), vec![Operand::IdRef(a), Operand::IdRef(b)]));
    id
}

fn lower_checked(m: &mut Module, source: Source) -> Result<Report, Unsupported> {
    let member_builtin = m.annotations.iter().any(|a| {
        a.class.opcode == Op::MemberDecorate
            && matches!(
                a.operands.get(3),
                Some(Operand::BuiltIn(BuiltIn::FragSizeEXT | BuiltIn::FragInvocationCountEXT))
            )
    });
    if member_builtin {
        return Err(Unsupported::BuiltinInBlock);
    }
    let size_vars = builtin_inputs(m, BuiltIn::FragSizeEXT);
    let count_vars = builtin_inputs(m, BuiltIn::FragInvocationCountEXT);
    let scale = match source {
        Source::Constant(p) => p.area != (1, 1),
        Source::Input { .. } => true,
    };
    let coord_vars = if scale { builtin_inputs(m, BuiltIn::FragCoord) } else { Vec::new() };
    for v in size_vars.iter().chain(&count_vars).chain(&coord_vars) {
        if passed_to_function(m, *v) {
            return Err(Unsupported::PointerArgument);
        }
    }
    let (scale, invocations) = match source {
        Source::Constant(p) => (Scale::Constant(p.area), p.invocations),
        // The input is declared only where something reads it.
        Source::Input { location, invocations } if !size_vars.is_empty() || !coord_vars.is_empty() => {
            (Scale::Input(area_input(m, location)), invocations)
        }
        Source::Input { invocations, .. } => (Scale::Constant((1, 1)), invocations),
    };
    let mut report = Report::default();
    for v in size_vars {
        let Some(ty) = var_type(m, v) else { continue };
        let Some(Operand::IdRef(scalar)) = def(m, ty).and_then(|t| t.operands.first()).cloned() else { continue };
        remove_decorations(m, v, &[Decoration::BuiltIn, Decoration::Flat]);
        match scale {
            Scale::Constant(area) => {
                let x = constant(m, scalar, area.0);
                let y = constant(m, scalar, area.1);
                let c = find_or_add(m, Op::ConstantComposite, Some(ty), vec![Operand::IdRef(x), Operand::IdRef(y)]);
                make_private(m, v, Some(c))?;
            }
            Scale::Input(input) => {
                make_private(m, v, None)?;
                write_size(m, v, (ty, scalar), input);
            }
        }
        report.frag_size = true;
    }
    for v in count_vars {
        let Some(ty) = var_type(m, v) else { continue };
        let c = constant(m, ty, invocations);
        remove_decorations(m, v, &[Decoration::BuiltIn, Decoration::Flat]);
        make_private(m, v, Some(c))?;
        report.invocation_count = true;
    }
    for v in coord_vars {
        scale_frag_coord(m, v, scale);
        report.frag_coord_scaled = true;
    }
    crate::capability::remove(m, &[Capability::FragmentDensityEXT]);
    m.extensions.retain(
        |e| !matches!(e.operands.first(), Some(Operand::LiteralString(s)) if DENSITY_EXTENSIONS.contains(&s.as_str())),
    );
    Ok(report)
}

/// At the start of each fragment entry point, the private `FragSizeEXT`
/// `v` (of vector type `ty` of `scalar`) = the area of `input`.
fn write_size(m: &mut Module, v: Word, (ty, scalar): (Word, Word), input: Word) {
    for f in entry_functions(m, Some(ExecutionModel::Fragment)) {
        let mut code = Vec::new();
        let [x, y, _, _] = components(m, input, &mut code);
        let [ix, iy, size]: [Word; 3] = std::array::from_fn(|_| fresh(m));
        let signed = def(m, scalar).and_then(|t| t.operands.get(1)) == Some(&Operand::LiteralBit32(1));
        let convert = if signed { Op::ConvertFToS } else { Op::ConvertFToU };
        code.extend([
            Instruction::new(convert, Some(scalar), Some(ix), vec![Operand::IdRef(x)]),
            Instruction::new(convert, Some(scalar), Some(iy), vec![Operand::IdRef(y)]),
            Instruction::new(
                Op::CompositeConstruct,
                Some(ty),
                Some(size),
                vec![Operand::IdRef(ix), Operand::IdRef(iy)],
            ),
            Instruction::new(Op::Store, None, None, vec![Operand::IdRef(v), Operand::IdRef(size)]),
        ]);
        prepend_to_function(m, f, code);
    }
}

/// How [`scale_frag_coord`] scales.
#[derive(Clone, Copy)]
enum Scale {
    /// `xy · area`.
    Constant((u32, u32)),
    /// `(xy − origin) · area + origin`, both from this `vec4` input.
    Input(Word),
}

/// Every use of `FragCoord` reads a private copy with `xy` scaled by the
/// area, written at the start of each fragment entry point.
fn scale_frag_coord(m: &mut Module, coord: Word, scale: Scale) {
    let Some(vec4) = var_type(m, coord) else { return };
    let Some(Operand::IdRef(float)) = def(m, vec4).and_then(|t| t.operands.first()).cloned() else { return };
    let ptr = pointer_type(m, StorageClass::Private, vec4);
    let copy = fresh(m);
    m.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(ptr),
        Some(copy),
        vec![Operand::StorageClass(StorageClass::Private)],
    ));
    replace_uses(m, coord, copy);
    retype_chains(m, copy, StorageClass::Private);
    let entries = entry_functions(m, Some(ExecutionModel::Fragment));
    add_to_interface(m, copy);
    for f in entries {
        let mut code = Vec::new();
        // The area and, read from the input, the origin the scaled coordinates are relative to.
        let (ax, ay, origin) = match scale {
            Scale::Constant(area) => {
                (constant(m, float, (area.0 as f32).to_bits()), constant(m, float, (area.1 as f32).to_bits()), None)
            }
            Scale::Input(input) => {
                let [ax, ay, ox, oy] = components(m, input, &mut code);
                (ax, ay, Some((ox, oy)))
            }
        };
        let load = fresh(m);
        code.push(Instruction::new(Op::Load, Some(vec4), Some(load), vec![Operand::IdRef(coord)]));
        let mut with = load;
        for (k, (a, o)) in [(ax, origin.map(|o| o.0)), (ay, origin.map(|o| o.1))].into_iter().enumerate() {
            let c = fresh(m);
            code.push(Instruction::new(
                Op::CompositeExtract,
                Some(float),
                Some(c),
                vec![Operand::IdRef(load), Operand::LiteralBit32(k as u32)],
            ));
            // `c · a`, or `(c − o) · a + o`.
            let scaled = match o {
                None => binary(m, &mut code, (Op::FMul, float), c, a),
                Some(o) => {
                    let d = binary(m, &mut code, (Op::FSub, float), c, o);
                    let s = binary(m, &mut code, (Op::FMul, float), d, a);
                    binary(m, &mut code, (Op::FAdd, float), s, o)
                }
            };
            let next = fresh(m);
            code.push(Instruction::new(
                Op::CompositeInsert,
                Some(vec4),
                Some(next),
                vec![Operand::IdRef(scaled), Operand::IdRef(with), Operand::LiteralBit32(k as u32)],
            ));
            with = next;
        }
        code.push(Instruction::new(Op::Store, None, None, vec![Operand::IdRef(copy), Operand::IdRef(with)]));
        prepend_to_function(m, f, code);
    }
}

/// Whether a module can have side effects a replay would repeat: storage
/// buffer or image writes, atomics (any stage).
pub fn has_side_effects(m: &Module) -> bool {
    let class_of_pointer = |ty: Word| match def(m, ty).map(|t| (t.class.opcode, t.operands.first())) {
        Some((Op::TypePointer, Some(Operand::StorageClass(c)))) => Some(*c),
        _ => None,
    };
    let buffer_block =
        m.annotations.iter().any(|a| a.operands.get(1) == Some(&Operand::Decoration(Decoration::BufferBlock)));
    let mut pointer_types: std::collections::HashMap<Word, Word> = std::collections::HashMap::new();
    for i in m.types_global_values.iter().chain(code(m)) {
        if let (Some(id), Some(ty)) = (i.result_id, i.result_type) {
            pointer_types.insert(id, ty);
        }
    }
    code(m).any(|i| {
        let op = i.class.opcode;
        let atomic = matches!(
            op,
            Op::AtomicStore
                | Op::AtomicExchange
                | Op::AtomicCompareExchange
                | Op::AtomicIIncrement
                | Op::AtomicIDecrement
                | Op::AtomicIAdd
                | Op::AtomicISub
                | Op::AtomicSMin
                | Op::AtomicUMin
                | Op::AtomicSMax
                | Op::AtomicUMax
                | Op::AtomicAnd
                | Op::AtomicOr
                | Op::AtomicXor
                | Op::AtomicFAddEXT
                | Op::AtomicFMinEXT
                | Op::AtomicFMaxEXT
        );
        let stores = matches!(op, Op::Store | Op::CopyMemory) && {
            let target = match i.operands.first() {
                Some(Operand::IdRef(p)) => pointer_types.get(p).copied(),
                _ => None,
            };
            match target.and_then(class_of_pointer) {
                Some(StorageClass::StorageBuffer | StorageClass::PhysicalStorageBuffer) => true,
                Some(StorageClass::Uniform) => buffer_block,
                _ => false,
            }
        };
        atomic || stores || op == Op::ImageWrite
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_gpu_plan_shaders_are_up_to_date() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("glsl");
        for (name, defines, embedded) in [
            ("fdm_plan.comp", "", super::GPU_PLAN_COMP),
            ("fdm_upscale.vert", "", super::UPSCALE_VERT),
            ("fdm_upscale.frag", "", super::UPSCALE_FRAG),
            ("fdm_upscale.frag", "-DARRAY", super::UPSCALE_ARRAY_FRAG),
            ("fdm_upscale.frag", "-DMS", super::UPSCALE_MS_FRAG),
            ("fdm_upscale.frag", "-DARRAY -DMS", super::UPSCALE_MS_ARRAY_FRAG),
            ("fdm_upscale.frag", "-DDEPTH", super::UPSCALE_DEPTH_FRAG),
            ("fdm_upscale.frag", "-DDEPTH -DARRAY", super::UPSCALE_DEPTH_ARRAY_FRAG),
            ("fdm_upscale.frag", "-DDEPTH -DMS", super::UPSCALE_DEPTH_MS_FRAG),
            ("fdm_upscale.frag", "-DDEPTH -DMS -DARRAY", super::UPSCALE_DEPTH_MS_ARRAY_FRAG),
            ("fdm_composite.comp", "", super::COMPOSITE_COMP),
            ("fdm_composite.comp", "-DARRAY", super::COMPOSITE_ARRAY_COMP),
            ("fdm_composite.comp", "-DPLAN", super::COMPOSITE_PLAN_COMP),
            ("fdm_composite.comp", "-DPLAN -DARRAY", super::COMPOSITE_PLAN_ARRAY_COMP),
            ("fdm_clear.vert", "", super::CLEAR_VERT),
            ("fdm_clear.frag", "-DCOUNT=0", super::CLEAR_FRAGS[0]),
            ("fdm_clear.frag", "-DCOUNT=1", super::CLEAR_FRAGS[1]),
            ("fdm_clear.frag", "-DCOUNT=2", super::CLEAR_FRAGS[2]),
            ("fdm_clear.frag", "-DCOUNT=3", super::CLEAR_FRAGS[3]),
            ("fdm_clear.frag", "-DCOUNT=4", super::CLEAR_FRAGS[4]),
            ("fdm_clear.frag", "-DCOUNT=5", super::CLEAR_FRAGS[5]),
            ("fdm_clear.frag", "-DCOUNT=6", super::CLEAR_FRAGS[6]),
            ("fdm_clear.frag", "-DCOUNT=7", super::CLEAR_FRAGS[7]),
            ("fdm_clear.frag", "-DCOUNT=8", super::CLEAR_FRAGS[8]),
        ] {
            let tag = defines.replace(' ', "");
            let out = std::env::temp_dir().join(format!("overlap-{}-{name}{tag}.spv", std::process::id()));
            let status = std::process::Command::new("glslangValidator")
                .args(["-V", "--target-env", "vulkan1.0"])
                .args(defines.split_whitespace())
                .arg("-o")
                .arg(&out)
                .arg(dir.join(name))
                .stdout(std::process::Stdio::null())
                .status()
                .expect("glslangValidator runs");
            assert!(status.success(), "{name} compiles");
            let fresh = std::fs::read(&out).unwrap();
            let _ = std::fs::remove_file(&out);
            assert!(fresh == embedded, "{name}: run shaders/glsl/generate");
        }
    }

    use super::*;
    use crate::testing::glsl;
    use crate::{assemble, parse, validate, TargetEnv};

    pub(super) const FS: &str = r#"#version 450
#extension GL_EXT_fragment_invocation_density : require
layout(location = 0) out vec4 color;
void main() {
    ivec2 s = gl_FragSizeEXT;
    color = vec4(1.0 / float(s.x), 1.0 / float(s.y), float(gl_FragInvocationCountEXT), gl_FragCoord.x + gl_FragCoord.y * 0.5);
}
"#;

    fn lowered(src: &str, p: Params) -> (String, Report) {
        let words = glsl(src, "frag").unwrap();
        assert!(uses_density_builtins(&words) == src.contains("density"));
        let mut m = parse(&words).unwrap();
        let r = lower(&mut m, &p).unwrap();
        let out = assemble(&m);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{}", crate::testing::disassemble(&out)));
        assert!(!uses_density_builtins(&out));
        (crate::testing::disassemble(&out), r)
    }

    #[test]
    fn builtins_become_constants_and_frag_coord_is_scaled() {
        let (text, r) = lowered(FS, Params { area: (2, 4), invocations: 1 });
        assert_eq!(r, Report { frag_size: true, invocation_count: true, frag_coord_scaled: true });
        assert!(!text.contains("BuiltIn FragSizeEXT") && !text.contains("BuiltIn FragInvocationCountEXT"), "{text}");
        assert!(!text.contains("OpExtension \"SPV_EXT_fragment_invocation_density\""), "{text}");
        assert!(text.contains("OpConstant %float 2") && text.contains("OpConstant %float 4"), "{text}");
        assert!(text.contains("BuiltIn FragCoord"), "{text}");
    }

    #[test]
    fn one_variant_reads_the_area_and_the_regions_origin_from_its_input() {
        let mut m = parse(&glsl(FS, "frag").unwrap()).unwrap();
        let r = lower_from_input(&mut m, 1, 3).unwrap();
        assert_eq!(r, Report { frag_size: true, invocation_count: true, frag_coord_scaled: true });
        let out = assemble(&m);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{}", crate::testing::disassemble(&out)));
        assert!(!uses_density_builtins(&out));
        // Area 2x4, the region's origin (8, 16): the scratch fragment centred at (9.5, 17.5) is the framebuffer
        // fragment centred at ((9.5 - 8) * 2 + 8, (17.5 - 16) * 4 + 16) = (11, 22).
        use crate::interp::V;
        let area = [2.0, 4.0, 8.0, 16.0];
        let input = |(l, c): (u32, u32), _| if l == 3 { V::F(area[c as usize]) } else { V::U };
        let builtins = |b| match b {
            BuiltIn::FragCoord => V::C(vec![V::F(9.5), V::F(17.5), V::F(0.5), V::F(1.0)]),
            _ => V::U,
        };
        let got = crate::interp::run(&parse(&out).unwrap(), &input, &builtins).unwrap();
        let want = [0.5, 0.25, 1.0, 11.0 + 22.0 * 0.5];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(got.get(&(0, k as u32)), Some(&V::F(*w)), "component {k}: {got:?}");
        }
    }

    #[test]
    fn the_area_input_must_be_free() {
        let src = "#version 450\n#extension GL_EXT_fragment_invocation_density : require\n\
                   layout(location = 2) in vec2 uv[2];\nlayout(location = 0) out vec4 c;\n\
                   void main() { c = vec4(uv[1], vec2(gl_FragSizeEXT)); }";
        let words = glsl(src, "frag").unwrap();
        let mut m = parse(&words).unwrap();
        // The array spans locations 2 and 3.
        assert_eq!(lower_from_input(&mut m, 1, 3), Err(Unsupported::LocationTaken(3)));
        assert_eq!(assemble(&m), assemble(&parse(&words).unwrap()), "unchanged");
        assert!(lower_from_input(&mut m, 1, 4).is_ok());
    }

    #[test]
    fn area_one_leaves_frag_coord_alone() {
        let (text, r) = lowered(FS, Params { area: (1, 1), invocations: 4 });
        assert!(!r.frag_coord_scaled && r.frag_size && r.invocation_count);
        assert!(!text.contains("OpTypePointer Private %v4float"), "{text}");
    }

    #[test]
    fn frag_coord_only_shaders_need_no_capability() {
        let src = "#version 450\nlayout(location=0) out vec4 c;\nvoid main(){ c = vec4(gl_FragCoord.xy, gl_FragCoord.zw); }\n";
        let (_, r) = lowered(src, Params { area: (4, 4), invocations: 1 });
        assert!(r.frag_coord_scaled && !r.frag_size);
    }

    #[test]
    fn side_effects_are_found() {
        let pure = parse(&glsl(FS, "frag").unwrap()).unwrap();
        assert!(!has_side_effects(&pure));
        let ssbo = "#version 450\nlayout(std430, binding=0) buffer B { uint n[]; };\nlayout(location=0) out vec4 c;\nvoid main(){ n[0] = 1u; c = vec4(1); }\n";
        assert!(has_side_effects(&parse(&glsl(ssbo, "frag").unwrap()).unwrap()));
        let atomic = "#version 450\nlayout(std430, binding=0) buffer B { uint n; };\nlayout(location=0) out vec4 c;\nvoid main(){ atomicAdd(n, 1u); c = vec4(1); }\n";
        assert!(has_side_effects(&parse(&glsl(atomic, "frag").unwrap()).unwrap()));
        let image = "#version 450\nlayout(r32ui, binding=0) uniform uimage2D img;\nlayout(location=0) out vec4 c;\nvoid main(){ imageStore(img, ivec2(0), uvec4(1)); c = vec4(1); }\n";
        assert!(has_side_effects(&parse(&glsl(image, "frag").unwrap()).unwrap()));
        let read = "#version 450\nlayout(std430, binding=0) readonly buffer B { uint n; };\nlayout(location=0) out vec4 c;\nvoid main(){ c = vec4(float(n)); }\n";
        assert!(!has_side_effects(&parse(&glsl(read, "frag").unwrap()).unwrap()));
    }
}

#[cfg(test)]
mod robustness {
    use super::*;
    use crate::testing::{assert_shader_declared, glsl, remove, self_referential_vector};
    use crate::{assemble, parse, validate, TargetEnv};

    /// A fragment shader whose only capability is `FragmentDensityEXT`
    /// (which implies `Shader`) keeps a valid capability set: the lowering
    /// once left it with none.
    #[test]
    fn shader_stays_declared_when_density_was_the_only_capability() {
        let mut words = glsl(tests::FS, "frag").unwrap();
        remove(&mut words, Op::Capability, |w| w[1] == Capability::Shader as u32);
        validate(&words, TargetEnv::Vulkan1_1).unwrap();
        for area in [(1, 1), (2, 4)] {
            let mut m = parse(&words).unwrap();
            lower(&mut m, &Params { area, invocations: 1 }).unwrap();
            assert_shader_declared(&m, &format!("area {area:?}"), "FragmentDensityEXT");
        }
    }

    #[test]
    fn a_self_referential_type_is_an_error_and_leaves_the_module_alone() {
        let mut words = glsl(tests::FS, "frag").unwrap();
        let v = self_referential_vector(&mut words);
        let mut m = parse(&words).unwrap();
        let p = Params { area: (2, 2), invocations: 1 };
        assert_eq!(lower(&mut m, &p), Err(Unsupported::Malformed(crate::Malformed::ForwardReference(v))));
        assert_eq!(assemble(&m)[5..], words[5..]);
    }
}
