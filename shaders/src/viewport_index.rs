//! A vertex shader that sends each view of a multiview draw to the viewport
//! of the same index: the density map's per-view viewports
//! (`layer/src/fdm/per_view.rs`).
//!
//! A replay of a multiview pass renders every view over its rectangle, but
//! each view needs only its own bins there. With `ViewportIndex = ViewIndex`
//! written by the last pre-rasterization stage, the layer gives each view a
//! scissor of its own (the bounding box of the bins that view asked for at
//! the replay's area), so a view shades nothing of the other views' bins.
//!
//! The rewrite: the capabilities `MultiView` and
//! `ShaderViewportIndexLayerEXT` (with their extensions), a `ViewIndex`
//! input (the module's own where it has one), a new `ViewportIndex` output
//! listed in the entry point's interface, and at the start of the entry
//! function `ViewportIndex = ViewIndex`. Refused: a module that writes
//! `ViewportIndex` (or `Layer`, which a multiview pass may not write)
//! already, and an entry function shared with another entry point.
//!
//! The other rewrites here serve the density map's viewport masks (designs
//! D–F of docs/design/density-map-recording.md): the vertex shader writes
//! `ViewportMaskNV[0]` (`VK_NV_viewport_array2`) from a specialization
//! constant ([`viewport_mask`]; the test program's `viewport-mask-bench`) or
//! from a `uint` input ([`viewport_mask_from_input`], the layer's partners),
//! so that each primitive goes to every viewport of the mask — several
//! replays of a pass in one draw; or it passes that input on as an output
//! ([`mask_to_output`]) to the geometry stage of
//! [`crate::viewport_broadcast`], where the driver has no mask.

use crate::first_draw::entry_function;
use crate::ir::{add_capability, add_extension, builtin_inputs, builtin_target, decorate, find_or_add, fresh};
use crate::ir::{constant, pointer_type, prepend_to_function, var_type};
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Capability, Decoration, Op, StorageClass};

#[derive(Debug, thiserror::Error)]
pub enum Unsupported {
    #[error("{0}")]
    Entry(#[from] crate::first_draw::Unsupported),
    #[error("the shader writes ViewportIndex or Layer itself")]
    WritesViewport,
    #[error("the entry function has no body")]
    NoBody,
    #[error("the shader writes ViewportMaskNV itself")]
    WritesMask,
    #[error("specialization constant {0} is the shader's own")]
    SpecIdTaken(u32),
    #[error("input location {0} is the shader's own")]
    LocationTaken(u32),
    #[error("no output location is free for the mask (the next is {0})")]
    NoOutputLocation(u32),
    #[error("malformed module: {0}")]
    Malformed(#[from] crate::Malformed),
}

/// Makes the vertex entry point `entry` write `ViewportIndex = ViewIndex`
/// (module doc). The module is left unchanged when it is refused.
pub fn per_view(module: &mut Module, entry: &str) -> Result<(), Unsupported> {
    crate::check(module)?;
    let mut m = module.clone();
    let (ep, main) = entry_function(&m, entry)?;
    let member = m.annotations.iter().any(|a| {
        a.class.opcode == Op::MemberDecorate
            && matches!(a.operands.get(3), Some(Operand::BuiltIn(BuiltIn::ViewportIndex | BuiltIn::Layer)))
    });
    if member || builtin_target(&m, BuiltIn::ViewportIndex).is_some() || builtin_target(&m, BuiltIn::Layer).is_some() {
        return Err(Unsupported::WritesViewport);
    }
    add_capability(&mut m, Capability::MultiView);
    add_capability(&mut m, Capability::ShaderViewportIndexLayerEXT);
    if m.header.as_ref().map_or(0, |h| h.version) < 0x0001_0300 {
        add_extension(&mut m, "SPV_KHR_multiview");
    }
    add_extension(&mut m, "SPV_EXT_shader_viewport_index_layer");
    // The module's ViewIndex, or a new one; ViewportIndex of the same integer type.
    let (view, int) = match builtin_inputs(&m, BuiltIn::ViewIndex).first() {
        Some(&v) => (v, var_type(&m, v).ok_or(crate::Malformed::Unexpected(v))?),
        None => {
            let int = find_or_add(&mut m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(1)]);
            let ptr = pointer_type(&mut m, StorageClass::Input, int);
            let v = new_variable(&mut m, ptr, StorageClass::Input, ep);
            decorate(&mut m, v, Decoration::BuiltIn, vec![Operand::BuiltIn(BuiltIn::ViewIndex)]);
            (v, int)
        }
    };
    add_to_entry(&mut m, ep, view);
    let ptr = pointer_type(&mut m, StorageClass::Output, int);
    let out = new_variable(&mut m, ptr, StorageClass::Output, ep);
    decorate(&mut m, out, Decoration::BuiltIn, vec![Operand::BuiltIn(BuiltIn::ViewportIndex)]);
    let loaded = fresh(&mut m);
    let code = vec![
        Instruction::new(Op::Load, Some(int), Some(loaded), vec![Operand::IdRef(view)]),
        Instruction::new(Op::Store, None, None, vec![Operand::IdRef(out), Operand::IdRef(loaded)]),
    ];
    if !prepend_to_function(&mut m, main, code) {
        return Err(Unsupported::NoBody);
    }
    *module = m;
    Ok(())
}

/// The specialization constant id of [`viewport_mask`]'s mask (one the
/// layer reserves; a module that uses it is refused).
pub const VIEWPORT_MASK_SPEC_ID: u32 = 0x4f56_4d00;

/// Makes the vertex entry point `entry` (the last pre-rasterization stage of
/// a pipeline without tessellation or geometry) write
/// `ViewportMaskNV[0]` = the specialization constant
/// [`VIEWPORT_MASK_SPEC_ID`] (default 1: viewport 0 alone) at its start:
/// the capability `ShaderViewportMaskNV` (`SPV_NV_viewport_array2`), a new
/// `int[1]` output decorated `ViewportMaskNV` in the entry point's interface.
/// Refused, the module unchanged: a module that writes `ViewportIndex`,
/// `Layer` or `ViewportMaskNV` already, or uses the constant id.
pub fn viewport_mask(module: &mut Module, entry: &str) -> Result<(), Unsupported> {
    viewport_mask_to(module, entry, 1)
}

/// [`viewport_mask`] with `default` as the constant's default value: the
/// mask where the pipeline does not specialize it (the layer's density-map
/// partners, whose specialization info stays the application's).
pub fn viewport_mask_to(module: &mut Module, entry: &str, default: u32) -> Result<(), Unsupported> {
    write_mask(module, entry, Mask::Constant(default), None)
}

/// Makes the vertex entry point `entry` write `ViewportMaskNV[0]` = a new
/// `uint` input at `location` (a vertex attribute the pipeline supplies:
/// the density map's GPU plan gives it from its plan buffer, a word the
/// plan shader wrote). Refused as [`viewport_mask`], and where an input of
/// the module reaches `location`.
pub fn viewport_mask_from_input(module: &mut Module, entry: &str, location: u32) -> Result<(), Unsupported> {
    write_mask(module, entry, Mask::Input(location), None)
}

/// Makes the vertex entry point `entry` pass a new `uint` input at
/// `location` on as a flat `int` output at the first location past the
/// module's own outputs (returned): the mask a broadcasting geometry shader
/// reads ([`crate::viewport_broadcast`]), where the driver has no
/// `ViewportMaskNV`. Refused as [`viewport_mask_from_input`], and where that
/// output location would not be below `limit` (the device's output
/// locations).
pub fn mask_to_output(module: &mut Module, entry: &str, location: u32, limit: u32) -> Result<u32, Unsupported> {
    let at = crate::ir::max_location(module, StorageClass::Output).map_or(0, |l| l.saturating_add(1));
    if at >= limit {
        return Err(Unsupported::NoOutputLocation(at));
    }
    write_mask(module, entry, Mask::Input(location), Some(at))?;
    Ok(at)
}

/// Where the mask comes from.
enum Mask {
    /// [`VIEWPORT_MASK_SPEC_ID`], this its default.
    Constant(u32),
    /// A `uint` input at this location.
    Input(u32),
}

/// Writes the mask from `source` to `ViewportMaskNV[0]`, or (`output`) to a
/// flat `int` output at that location.
fn write_mask(module: &mut Module, entry: &str, source: Mask, output: Option<u32>) -> Result<(), Unsupported> {
    crate::check(module)?;
    let mut m = module.clone();
    let (ep, main) = entry_function(&m, entry)?;
    let member = |b: BuiltIn| {
        m.annotations
            .iter()
            .any(|a| a.class.opcode == Op::MemberDecorate && a.operands.get(3) == Some(&Operand::BuiltIn(b)))
    };
    if member(BuiltIn::ViewportMaskNV) || builtin_target(&m, BuiltIn::ViewportMaskNV).is_some() {
        return Err(Unsupported::WritesMask);
    }
    if member(BuiltIn::ViewportIndex)
        || member(BuiltIn::Layer)
        || builtin_target(&m, BuiltIn::ViewportIndex).is_some()
        || builtin_target(&m, BuiltIn::Layer).is_some()
    {
        return Err(Unsupported::WritesViewport);
    }
    let taken = m.annotations.iter().any(|a| {
        a.class.opcode == Op::Decorate
            && a.operands.get(1) == Some(&Operand::Decoration(Decoration::SpecId))
            && a.operands.get(2) == Some(&Operand::LiteralBit32(VIEWPORT_MASK_SPEC_ID))
    });
    if taken {
        return Err(Unsupported::SpecIdTaken(VIEWPORT_MASK_SPEC_ID));
    }
    if let Mask::Input(location) = source {
        if let Some(l) = crate::ir::max_location(&m, StorageClass::Input).filter(|l| *l >= location) {
            return Err(Unsupported::LocationTaken(l));
        }
    }
    let int = find_or_add(&mut m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(1)]);
    let uint = find_or_add(&mut m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(0)]);
    let (mask, mut code) = match source {
        Mask::Constant(default) => {
            // A specialization constant is never shared with an identical one: a new id.
            let mask = fresh(&mut m);
            m.types_global_values.push(Instruction::new(
                Op::SpecConstant,
                Some(int),
                Some(mask),
                vec![Operand::LiteralBit32(default)],
            ));
            decorate(&mut m, mask, Decoration::SpecId, vec![Operand::LiteralBit32(VIEWPORT_MASK_SPEC_ID)]);
            (mask, Vec::new())
        }
        Mask::Input(location) => {
            let ptr = pointer_type(&mut m, StorageClass::Input, uint);
            let input = new_variable(&mut m, ptr, StorageClass::Input, ep);
            decorate(&mut m, input, Decoration::Location, vec![Operand::LiteralBit32(location)]);
            let (loaded, mask) = (fresh(&mut m), fresh(&mut m));
            let code = vec![
                Instruction::new(Op::Load, Some(uint), Some(loaded), vec![Operand::IdRef(input)]),
                Instruction::new(Op::Bitcast, Some(int), Some(mask), vec![Operand::IdRef(loaded)]),
            ];
            (mask, code)
        }
    };
    let element = pointer_type(&mut m, StorageClass::Output, int);
    let target = match output {
        None => {
            add_capability(&mut m, Capability::ShaderViewportMaskNV);
            add_extension(&mut m, "SPV_NV_viewport_array2");
            let one = constant(&mut m, uint, 1);
            let array = find_or_add(&mut m, Op::TypeArray, None, vec![Operand::IdRef(int), Operand::IdRef(one)]);
            let ptr = pointer_type(&mut m, StorageClass::Output, array);
            let out = new_variable(&mut m, ptr, StorageClass::Output, ep);
            decorate(&mut m, out, Decoration::BuiltIn, vec![Operand::BuiltIn(BuiltIn::ViewportMaskNV)]);
            let (zero, at) = (constant(&mut m, int, 0), fresh(&mut m));
            code.push(Instruction::new(
                Op::AccessChain,
                Some(element),
                Some(at),
                vec![Operand::IdRef(out), Operand::IdRef(zero)],
            ));
            at
        }
        Some(location) => {
            let out = new_variable(&mut m, element, StorageClass::Output, ep);
            decorate(&mut m, out, Decoration::Location, vec![Operand::LiteralBit32(location)]);
            decorate(&mut m, out, Decoration::Flat, vec![]);
            out
        }
    };
    code.push(Instruction::new(Op::Store, None, None, vec![Operand::IdRef(target), Operand::IdRef(mask)]));
    if !prepend_to_function(&mut m, main, code) {
        return Err(Unsupported::NoBody);
    }
    *module = m;
    Ok(())
}

/// A new global variable of pointer type `ptr` in `class`, listed in the
/// interface of entry point `ep` alone (an output of this vertex entry point
/// in another stage's interface would be invalid).
fn new_variable(m: &mut Module, ptr: u32, class: StorageClass, ep: usize) -> u32 {
    let id = fresh(m);
    m.types_global_values.push(Instruction::new(Op::Variable, Some(ptr), Some(id), vec![Operand::StorageClass(class)]));
    add_to_entry(m, ep, id);
    id
}

/// Lists `id` in the interface of entry point `ep` where it is not yet.
fn add_to_entry(m: &mut Module, ep: usize, id: u32) {
    let e = &mut m.entry_points[ep];
    if !e.operands.iter().skip(3).any(|o| *o == Operand::IdRef(id)) {
        e.operands.push(Operand::IdRef(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{disassemble, glsl, glsl_for};
    use crate::{assemble, parse, validate, TargetEnv};

    /// `words` rewritten by `pass` (for entry point `main`), validated for
    /// `env`, disassembled.
    fn rewritten_by(
        pass: fn(&mut Module, &str) -> Result<(), Unsupported>,
        words: &[u32],
        env: TargetEnv,
    ) -> Result<String, Unsupported> {
        let mut m = parse(words).unwrap();
        pass(&mut m, "main")?;
        let out = assemble(&m);
        validate(&out, env).unwrap_or_else(|e| panic!("{e}\n{}", disassemble(&out)));
        Ok(disassemble(&out))
    }

    fn rewritten(words: &[u32], env: TargetEnv) -> Result<String, Unsupported> {
        rewritten_by(per_view, words, env)
    }

    #[test]
    fn the_view_index_becomes_the_viewport_index() {
        // Without a ViewIndex of its own (SPIR-V 1.0 and 1.3), and with one.
        let plain = "#version 450\nvoid main() { gl_Position = vec4(float(gl_VertexIndex), 0.0, 0.0, 1.0); }";
        for (words, env) in [
            (glsl(plain, "vert").unwrap(), TargetEnv::Vulkan1_1),
            (glsl_for(plain, "vert", "vulkan1.1").unwrap(), TargetEnv::Vulkan1_1),
        ] {
            let text = rewritten(&words, env).unwrap();
            assert_eq!(text.matches("BuiltIn ViewIndex").count(), 1, "{text}");
            assert_eq!(text.matches("BuiltIn ViewportIndex").count(), 1, "{text}");
            assert!(text.contains("OpCapability ShaderViewportIndexLayerEXT"), "{text}");
        }
        let own = "#version 450\n#extension GL_EXT_multiview : require\nlayout(location = 0) out flat int v;\n\
                   void main() { v = gl_ViewIndex; gl_Position = vec4(0.0, 0.0, 0.0, 1.0); }";
        let text = rewritten(&glsl(own, "vert").unwrap(), TargetEnv::Vulkan1_1).unwrap();
        assert_eq!(text.matches("BuiltIn ViewIndex").count(), 1, "the module's own ViewIndex is read: {text}");
    }

    #[test]
    fn the_mask_is_written_from_its_specialization_constant() {
        let vert = "#version 450\nvoid main() { gl_Position = vec4(float(gl_VertexIndex), 0.0, 0.0, 1.0); }";
        for (words, env) in [
            (glsl(vert, "vert").unwrap(), TargetEnv::Vulkan1_1),
            (glsl_for(vert, "vert", "vulkan1.2").unwrap(), TargetEnv::Vulkan1_2),
        ] {
            let text = rewritten_by(viewport_mask, &words, env).unwrap();
            assert!(text.contains("OpCapability ShaderViewportMaskNV"), "{text}");
            assert_eq!(text.matches("BuiltIn ViewportMaskNV").count(), 1, "{text}");
            assert!(text.contains(&format!("SpecId {VIEWPORT_MASK_SPEC_ID}")), "{text}");
            let spec = text.lines().find(|l| l.contains("OpSpecConstant")).unwrap();
            let id = spec.split_whitespace().next().unwrap();
            assert!(text.lines().any(|l| l.contains("OpStore") && l.trim_end().ends_with(id)), "{text}");
        }
    }

    #[test]
    fn the_masks_default_is_the_one_asked_for() {
        let vert = "#version 450\nvoid main() { gl_Position = vec4(0.0, 0.0, 0.0, 1.0); }";
        let words = glsl(vert, "vert").unwrap();
        let to_15: fn(&mut Module, &str) -> Result<(), Unsupported> = |m, e| viewport_mask_to(m, e, 15);
        for (pass, want) in [(viewport_mask as fn(&mut Module, &str) -> Result<(), Unsupported>, "1"), (to_15, "15")] {
            let text = rewritten_by(pass, &words, TargetEnv::Vulkan1_1).unwrap();
            let spec = text.lines().find(|l| l.contains("OpSpecConstant ")).unwrap();
            assert_eq!(spec.split_whitespace().last(), Some(want), "{text}");
        }
    }

    #[test]
    fn the_mask_can_come_from_an_input() {
        let vert = "#version 450\nlayout(location = 0) in vec4 p;\nlayout(location = 1) in mat2 m;\n\
                    void main() { gl_Position = p + vec4(m[1], 0.0, 0.0); }";
        let words = glsl(vert, "vert").unwrap();
        let at_31: fn(&mut Module, &str) -> Result<(), Unsupported> = |m, e| viewport_mask_from_input(m, e, 31);
        let text = rewritten_by(at_31, &words, TargetEnv::Vulkan1_1).unwrap();
        assert!(text.contains("OpCapability ShaderViewportMaskNV"), "{text}");
        assert!(text.contains("Location 31"), "{text}");
        assert!(!text.contains("OpSpecConstant"), "no constant: {text}");
        assert!(text.contains("OpBitcast"), "the uint input stored as the int mask: {text}");
        // The matrix spans locations 1 and 2: location 2 is the module's own, 3 is free.
        let mut m = parse(&words).unwrap();
        assert!(matches!(viewport_mask_from_input(&mut m, "main", 2), Err(Unsupported::LocationTaken(2))));
        assert_eq!(assemble(&m), assemble(&parse(&words).unwrap()), "unchanged");
        assert!(viewport_mask_from_input(&mut m, "main", 3).is_ok());
    }

    #[test]
    fn a_shader_with_its_own_viewports_or_the_constant_id_is_left_alone() {
        let index = "#version 450\n#extension GL_ARB_shader_viewport_layer_array : require\n\
                     void main() { gl_ViewportIndex = 1; gl_Position = vec4(0.0, 0.0, 0.0, 1.0); }";
        let mask = "#version 450\n#extension GL_NV_viewport_array2 : require\n\
                    void main() { gl_ViewportMask[0] = 3; gl_Position = vec4(0.0, 0.0, 0.0, 1.0); }";
        // glslang takes ids below 2048 only: the shader's id 7 is renumbered to the reserved one.
        let spec = "#version 450\nlayout(constant_id = 7) const int K = 2;\n\
                    void main() { gl_Position = vec4(float(K), 0.0, 0.0, 1.0); }";
        for (src, want) in [(index, "WritesViewport"), (mask, "WritesMask"), (spec, "SpecIdTaken")] {
            let mut m = parse(&glsl(src, "vert").unwrap()).unwrap();
            for a in &mut m.annotations {
                if a.operands.get(1) == Some(&Operand::Decoration(Decoration::SpecId)) {
                    a.operands[2] = Operand::LiteralBit32(VIEWPORT_MASK_SPEC_ID);
                }
            }
            let words = assemble(&m);
            let mut m = parse(&words).unwrap();
            let e = viewport_mask(&mut m, "main").unwrap_err();
            assert!(format!("{e:?}").starts_with(want), "{e:?}");
            assert_eq!(assemble(&m), assemble(&parse(&words).unwrap()), "unchanged");
        }
    }

    #[test]
    fn a_shader_that_writes_the_viewport_index_is_left_alone() {
        let src = "#version 450\n#extension GL_ARB_shader_viewport_layer_array : require\n\
                   void main() { gl_ViewportIndex = 1; gl_Position = vec4(0.0, 0.0, 0.0, 1.0); }";
        let words = glsl(src, "vert").unwrap();
        let mut m = parse(&words).unwrap();
        assert!(matches!(per_view(&mut m, "main"), Err(Unsupported::WritesViewport)));
        assert_eq!(assemble(&m), assemble(&parse(&words).unwrap()), "unchanged");
        let mut m = parse(&glsl("#version 450\nvoid main() {}", "vert").unwrap()).unwrap();
        assert!(matches!(per_view(&mut m, "other"), Err(Unsupported::Entry(_))));
    }
}
