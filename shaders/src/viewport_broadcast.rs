//! A geometry shader that sends each triangle to the viewports a mask names:
//! the density map's viewport masks (`layer/src/fdm/viewport_mask.rs`)
//! where the driver has geometry shaders and `multiViewport` but not
//! `VK_NV_viewport_array2` (lavapipe).
//!
//! The vertex shader passes the mask on ([`crate::viewport_index::mask_to_output`]:
//! a flat `int` output read from the layer's vertex attribute); the
//! geometry shader made here from that vertex shader runs [`INVOCATIONS`]
//! invocations per triangle, and invocation `k` emits the triangle, every
//! output of the vertex shader passed through, with `ViewportIndex = k`
//! where bit `k` of the mask is set (and `PrimitiveId` passed on, which a
//! fragment shader reading it needs from a geometry stage).
//!
//! The module is the vertex shader's own with its code gone: its
//! capabilities, extensions, memory model, types and constants stay (every
//! type an output has is there already), its variables but the entry
//! point's outputs go with their decorations and its debug information.
//! Each output stays an output of the same type and decorations; an input
//! array of three of the same type and decorations (the built-in block
//! member by member) is added for it. Refused: built-in outputs other than
//! `Position`, `PointSize`, `ClipDistance` and `CullDistance` (`PointSize`
//! is not passed on: the partners draw filled triangles), transform
//! feedback, decoration groups.

use crate::first_draw::entry_function;
use crate::ir::{add_capability, builtin_of, constant, decorate, def, find_or_add, fresh, pointee_of, pointer_type};
use rspirv::dr::{Block, Function, Instruction, Module, Operand};
use rspirv::spirv::{
    BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel, FunctionControl, Op, SelectionControl,
    StorageClass, Word,
};

/// The invocations of the geometry shader: the viewports one draw reaches.
pub const INVOCATIONS: u32 = 16;

#[derive(Debug, thiserror::Error)]
pub enum Unsupported {
    #[error("{0}")]
    Entry(#[from] crate::first_draw::Unsupported),
    #[error("the vertex shader writes {0:?}, which a geometry shader cannot pass on")]
    BuiltIn(BuiltIn),
    #[error("the vertex shader captures transform feedback")]
    TransformFeedback,
    #[error("the vertex shader uses decoration groups")]
    DecorationGroups,
    #[error("malformed module: {0}")]
    Malformed(#[from] crate::Malformed),
}

/// The built-ins passed through (`PointSize` is dropped: triangles only).
const PASSED: [BuiltIn; 3] = [BuiltIn::Position, BuiltIn::ClipDistance, BuiltIn::CullDistance];

/// One output of the vertex shader and how it is copied.
struct Passed {
    /// The output variable (the geometry shader's output too) and its type.
    var: Word,
    ty: Word,
    /// `None`: copied whole; otherwise the members of a built-in block to
    /// copy (index, member type).
    members: Option<Vec<(u32, Word)>>,
}

/// The geometry shader (module doc) for the vertex entry point `entry` of
/// `vs`, whose output at location `mask` is the mask (`int`).
pub fn geometry(vs: &Module, entry: &str, mask: u32) -> Result<Module, Unsupported> {
    crate::check(vs)?;
    let (ep, _) = entry_function(vs, entry)?;
    let xfb = vs
        .capabilities
        .iter()
        .any(|c| c.operands.first() == Some(&Operand::Capability(Capability::TransformFeedback)))
        || vs.execution_modes.iter().any(|x| x.operands.get(1) == Some(&Operand::ExecutionMode(ExecutionMode::Xfb)));
    if xfb {
        return Err(Unsupported::TransformFeedback);
    }
    let groups = [Op::DecorationGroup, Op::GroupDecorate, Op::GroupMemberDecorate];
    if vs.annotations.iter().any(|a| groups.contains(&a.class.opcode)) {
        return Err(Unsupported::DecorationGroups);
    }
    let outputs: Vec<Word> = vs.entry_points[ep]
        .operands
        .iter()
        .skip(3)
        .filter_map(|o| match o {
            Operand::IdRef(v) => Some(*v),
            _ => None,
        })
        .filter(|v| {
            def(vs, *v).is_some_and(|d| d.operands.first() == Some(&Operand::StorageClass(StorageClass::Output)))
        })
        .collect();
    let mut m = vs.clone();
    strip_to_declarations(&mut m, &outputs);
    let mut passed = Vec::new();
    let mut mask_var = None;
    for &var in &outputs {
        let ty = def(&m, var).and_then(|d| d.result_type).and_then(|p| pointee_of(&m, p));
        let ty = ty.ok_or(crate::Malformed::Unexpected(var))?;
        if crate::ir::decoration_value(&m, var, Decoration::Location) == Some(mask) {
            mask_var = Some((var, ty));
            continue;
        }
        let members = match builtin_of(&m, var) {
            Some(BuiltIn::PointSize) => continue,
            Some(b) if !PASSED.contains(&b) => return Err(Unsupported::BuiltIn(b)),
            _ => block_members(&m, ty)?,
        };
        passed.push(Passed { var, ty, members });
    }
    let (mask_var, mask_ty) = mask_var.ok_or(crate::Malformed::Unexpected(mask))?;
    add_capability(&mut m, Capability::Geometry);
    add_capability(&mut m, Capability::MultiViewport);
    let body = Body::declare(&mut m, &passed, (mask_var, mask_ty))?;
    body.emit(&mut m, &passed);
    // The mask's output is the vertex shader's alone.
    m.types_global_values.retain(|i| i.result_id != Some(mask_var));
    m.annotations.retain(|a| a.operands.first() != Some(&Operand::IdRef(mask_var)));
    Ok(m)
}

/// `m` without code, entry points, debug information and variables other
/// than `outputs`, and without the decorations of what went.
fn strip_to_declarations(m: &mut Module, outputs: &[Word]) {
    m.functions.clear();
    m.entry_points.clear();
    m.execution_modes.clear();
    m.debug_string_source.clear();
    m.debug_names.clear();
    m.debug_module_processed.clear();
    let debug = [Op::Line, Op::NoLine, Op::ExtInst, Op::String];
    m.types_global_values.retain(|i| {
        !debug.contains(&i.class.opcode)
            && (i.class.opcode != Op::Variable || i.result_id.is_some_and(|v| outputs.contains(&v)))
    });
    let defined: std::collections::HashSet<Word> = m.types_global_values.iter().filter_map(|i| i.result_id).collect();
    m.annotations.retain(|a| {
        a.operands.iter().all(|o| match o {
            Operand::IdRef(t) => defined.contains(t),
            _ => true,
        })
    });
}

/// The members of `ty` to copy where it is a block with built-in members
/// (`None` where it has none: copied whole); a refused built-in member is
/// an error.
fn block_members(m: &Module, ty: Word) -> Result<Option<Vec<(u32, Word)>>, Unsupported> {
    let member_builtins: Vec<(u32, BuiltIn)> = m
        .annotations
        .iter()
        .filter_map(|a| match (a.class.opcode, a.operands.as_slice()) {
            (
                Op::MemberDecorate,
                [Operand::IdRef(t), Operand::LiteralBit32(k), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)],
            ) if *t == ty => Some((*k, *b)),
            _ => None,
        })
        .collect();
    if member_builtins.is_empty() {
        return Ok(None);
    }
    let members: Vec<Word> = def(m, ty)
        .filter(|d| d.class.opcode == Op::TypeStruct)
        .ok_or(crate::Malformed::Unexpected(ty))?
        .operands
        .iter()
        .filter_map(|o| match o {
            Operand::IdRef(x) => Some(*x),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (k, &member) in members.iter().enumerate() {
        match member_builtins.iter().find(|(i, _)| *i == k as u32).map(|(_, b)| *b) {
            Some(BuiltIn::PointSize) => {}
            Some(b) if PASSED.contains(&b) => out.push((k as u32, member)),
            Some(b) => return Err(Unsupported::BuiltIn(b)),
            // A member of a block with built-ins that is not one itself: malformed for Vulkan.
            None => return Err(crate::Malformed::Unexpected(ty).into()),
        }
    }
    Ok(Some(out))
}

/// The ids the geometry shader's function uses.
struct Body {
    main: Word,
    void: Word,
    fnty: Word,
    int: Word,
    boolean: Word,
    /// Per passed output, its input array variable.
    inputs: Vec<Word>,
    mask_in: Word,
    invocation: Word,
    primitive_in: Word,
    primitive_out: Word,
    viewport: Word,
}

impl Body {
    /// Declares the inputs, the built-ins and the entry point.
    fn declare(m: &mut Module, passed: &[Passed], (mask_var, mask_ty): (Word, Word)) -> Result<Body, Unsupported> {
        let int = find_or_add(m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(1)]);
        let uint = find_or_add(m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(0)]);
        let boolean = find_or_add(m, Op::TypeBool, None, vec![]);
        let void = find_or_add(m, Op::TypeVoid, None, vec![]);
        let fnty = find_or_add(m, Op::TypeFunction, None, vec![Operand::IdRef(void)]);
        let three = constant(m, uint, 3);
        let array_input = |m: &mut Module, of: Word, like: Word| {
            let array = find_or_add(m, Op::TypeArray, None, vec![Operand::IdRef(of), Operand::IdRef(three)]);
            let ptr = pointer_type(m, StorageClass::Input, array);
            let var = crate::ir::add_io_variable(m, ptr, StorageClass::Input);
            let decorations: Vec<Instruction> = crate::ir::decorations_of(m, like)
                .into_iter()
                .filter(|d| d.class.opcode == Op::Decorate)
                .filter(|d| !matches!(d.operands.get(1), Some(Operand::Decoration(Decoration::Invariant))))
                .cloned()
                .collect();
            for mut d in decorations {
                d.operands[0] = Operand::IdRef(var);
                m.annotations.push(d);
            }
            var
        };
        let inputs = passed.iter().map(|p| array_input(m, p.ty, p.var)).collect();
        let mask_in = array_input(m, mask_ty, mask_var);
        let builtin = |m: &mut Module, class: StorageClass, b: BuiltIn| {
            let ptr = pointer_type(m, class, int);
            let var = crate::ir::add_io_variable(m, ptr, class);
            decorate(m, var, Decoration::BuiltIn, vec![Operand::BuiltIn(b)]);
            var
        };
        let invocation = builtin(m, StorageClass::Input, BuiltIn::InvocationId);
        let primitive_in = builtin(m, StorageClass::Input, BuiltIn::PrimitiveId);
        let primitive_out = builtin(m, StorageClass::Output, BuiltIn::PrimitiveId);
        let viewport = builtin(m, StorageClass::Output, BuiltIn::ViewportIndex);
        let main = fresh(m);
        let mut interface: Vec<Word> = passed.iter().map(|p| p.var).collect();
        interface.extend(&inputs);
        interface.extend([mask_in, invocation, primitive_in, primitive_out, viewport]);
        let mut operands = vec![
            Operand::ExecutionModel(ExecutionModel::Geometry),
            Operand::IdRef(main),
            Operand::LiteralString("main".into()),
        ];
        operands.extend(interface.iter().map(|v| Operand::IdRef(*v)));
        m.entry_points.push(Instruction::new(Op::EntryPoint, None, None, operands));
        for (mode, extra) in [
            (ExecutionMode::Triangles, None),
            (ExecutionMode::Invocations, Some(INVOCATIONS)),
            (ExecutionMode::OutputTriangleStrip, None),
            (ExecutionMode::OutputVertices, Some(3)),
        ] {
            let mut operands = vec![Operand::IdRef(main), Operand::ExecutionMode(mode)];
            operands.extend(extra.map(Operand::LiteralBit32));
            m.execution_modes.push(Instruction::new(Op::ExecutionMode, None, None, operands));
        }
        Ok(Body { main, void, fnty, int, boolean, inputs, mask_in, invocation, primitive_in, primitive_out, viewport })
    }

    /// The function: where bit `InvocationId` of vertex 0's mask is set,
    /// the triangle's three vertices with every output copied.
    fn emit(&self, m: &mut Module, passed: &[Passed]) {
        let int = self.int;
        let (zero, one) = (constant(m, int, 0), constant(m, int, 1));
        let (entry, emit, merge) = (fresh(m), fresh(m), fresh(m));
        let load = |m: &mut Module, code: &mut Vec<Instruction>, ty: Word, from: Word| {
            let id = fresh(m);
            code.push(Instruction::new(Op::Load, Some(ty), Some(id), vec![Operand::IdRef(from)]));
            id
        };
        let chain = |m: &mut Module, code: &mut Vec<Instruction>, (class, ty): (StorageClass, Word), path: &[Word]| {
            let ptr = pointer_type(m, class, ty);
            let id = fresh(m);
            code.push(Instruction::new(
                Op::AccessChain,
                Some(ptr),
                Some(id),
                path.iter().map(|w| Operand::IdRef(*w)).collect(),
            ));
            id
        };
        let store = |code: &mut Vec<Instruction>, to: Word, value: Word| {
            code.push(Instruction::new(Op::Store, None, None, vec![Operand::IdRef(to), Operand::IdRef(value)]));
        };
        let mut head = Vec::new();
        let k = load(m, &mut head, int, self.invocation);
        let at = chain(m, &mut head, (StorageClass::Input, int), &[self.mask_in, zero]);
        let mask = load(m, &mut head, int, at);
        let (shifted, bit, set) = (fresh(m), fresh(m), fresh(m));
        head.extend([
            Instruction::new(
                Op::ShiftRightLogical,
                Some(int),
                Some(shifted),
                vec![Operand::IdRef(mask), Operand::IdRef(k)],
            ),
            Instruction::new(Op::BitwiseAnd, Some(int), Some(bit), vec![Operand::IdRef(shifted), Operand::IdRef(one)]),
            Instruction::new(
                Op::INotEqual,
                Some(self.boolean),
                Some(set),
                vec![Operand::IdRef(bit), Operand::IdRef(zero)],
            ),
            Instruction::new(
                Op::SelectionMerge,
                None,
                None,
                vec![Operand::IdRef(merge), Operand::SelectionControl(SelectionControl::NONE)],
            ),
            Instruction::new(
                Op::BranchConditional,
                None,
                None,
                vec![Operand::IdRef(set), Operand::IdRef(emit), Operand::IdRef(merge)],
            ),
        ]);
        let mut code = Vec::new();
        let primitive = load(m, &mut code, int, self.primitive_in);
        for vertex in 0..3 {
            let v = constant(m, int, vertex);
            for (p, &input) in passed.iter().zip(&self.inputs) {
                match &p.members {
                    None => {
                        let at = chain(m, &mut code, (StorageClass::Input, p.ty), &[input, v]);
                        let value = load(m, &mut code, p.ty, at);
                        store(&mut code, p.var, value);
                    }
                    Some(members) => {
                        for &(index, ty) in members {
                            let i = constant(m, int, index);
                            let from = chain(m, &mut code, (StorageClass::Input, ty), &[input, v, i]);
                            let value = load(m, &mut code, ty, from);
                            let to = chain(m, &mut code, (StorageClass::Output, ty), &[p.var, i]);
                            store(&mut code, to, value);
                        }
                    }
                }
            }
            store(&mut code, self.viewport, k);
            store(&mut code, self.primitive_out, primitive);
            code.push(Instruction::new(Op::EmitVertex, None, None, vec![]));
        }
        code.push(Instruction::new(Op::EndPrimitive, None, None, vec![]));
        code.push(Instruction::new(Op::Branch, None, None, vec![Operand::IdRef(merge)]));
        let label = |id| Some(Instruction::new(Op::Label, None, Some(id), vec![]));
        m.functions.push(Function {
            def: Some(Instruction::new(
                Op::Function,
                Some(self.void),
                Some(self.main),
                vec![Operand::FunctionControl(FunctionControl::NONE), Operand::IdRef(self.fnty)],
            )),
            end: Some(Instruction::new(Op::FunctionEnd, None, None, vec![])),
            parameters: vec![],
            blocks: vec![
                Block { label: label(entry), instructions: head },
                Block { label: label(emit), instructions: code },
                Block { label: label(merge), instructions: vec![Instruction::new(Op::Return, None, None, vec![])] },
            ],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{disassemble, glsl, glsl_for};
    use crate::viewport_index::mask_to_output;
    use crate::{assemble, parse, validate, TargetEnv};

    /// The vertex shader `src` passing the mask from input 31, and its
    /// geometry shader, both validated for `env`; the geometry shader
    /// disassembled.
    fn broadcast(src: &str, env: TargetEnv) -> Result<String, Unsupported> {
        let words = match env {
            TargetEnv::Vulkan1_0 | TargetEnv::Vulkan1_1 => glsl(src, "vert").unwrap(),
            _ => glsl_for(src, "vert", "vulkan1.2").unwrap(),
        };
        let mut vs = parse(&words).unwrap();
        let at = mask_to_output(&mut vs, "main", 31, 32).unwrap();
        let vs_words = assemble(&vs);
        validate(&vs_words, env).unwrap_or_else(|e| panic!("{e}\n{}", disassemble(&vs_words)));
        let gs = geometry(&parse(&vs_words).unwrap(), "main", at)?;
        let out = assemble(&gs);
        validate(&out, env).unwrap_or_else(|e| panic!("{e}\n{}", disassemble(&out)));
        Ok(disassemble(&out))
    }

    #[test]
    fn every_output_is_passed_through_to_the_masks_viewports() {
        let src = "#version 450\nlayout(location = 0) in vec4 p;\nlayout(location = 0) out vec2 uv;\n\
                   layout(location = 1) out flat ivec2 id;\nlayout(location = 2) out noperspective float f[2];\n\
                   layout(location = 4) out mat2 m;\nlayout(location = 6) centroid out vec3 c;\n\
                   layout(binding = 0) uniform U { vec4 o; } u;\n\
                   out gl_PerVertex { vec4 gl_Position; float gl_PointSize; float gl_ClipDistance[2]; };\n\
                   void main() { uv = p.xy; id = ivec2(gl_VertexIndex); f[0] = 1.0; f[1] = p.z; m = mat2(p);\n\
                   c = p.xyz; gl_ClipDistance[0] = p.w; gl_ClipDistance[1] = -p.w; gl_Position = p + u.o; }";
        for env in [TargetEnv::Vulkan1_1, TargetEnv::Vulkan1_2] {
            let text = broadcast(src, env).unwrap();
            assert!(text.contains("OpEntryPoint Geometry"), "{text}");
            assert!(text.contains("Invocations 16") && text.contains("OutputVertices 3"), "{text}");
            assert_eq!(text.matches("OpEmitVertex").count(), 3, "{text}");
            for d in ["BuiltIn ViewportIndex", "BuiltIn InvocationId", "Location 7", "NoPerspective", "Centroid"] {
                assert!(text.contains(d), "{d}: {text}");
            }
            // Each location's output and its input array: two of each.
            for l in 0..7 {
                let n =
                    text.lines().filter(|x| x.contains("OpDecorate") && x.ends_with(&format!("Location {l}"))).count();
                assert_eq!(n, if [3, 5].contains(&l) { 0 } else { 2 }, "location {l}: {text}");
            }
            assert!(!text.contains("DescriptorSet"), "the uniform went: {text}");
            // Position and the clip distances are copied per vertex; the point size is not.
            assert_eq!(text.matches("OpStore").count(), 3 * (5 + 2 + 2), "{text}");
        }
    }

    #[test]
    fn outputs_a_geometry_shader_cannot_pass_on_are_refused() {
        let src = "#version 450\n#extension GL_EXT_fragment_shading_rate : require\n\
                   void main() { gl_PrimitiveShadingRateEXT = 0; gl_Position = vec4(0.0); }";
        assert!(matches!(
            broadcast(src, TargetEnv::Vulkan1_2),
            Err(Unsupported::BuiltIn(BuiltIn::PrimitiveShadingRateKHR))
        ));
    }

    #[test]
    fn the_masks_output_takes_the_next_free_location() {
        let src =
            "#version 450\nlayout(location = 3) out dvec4 d;\nvoid main() { d = dvec4(1.0); gl_Position = vec4(0.0); }";
        let mut m = parse(&glsl(src, "vert").unwrap()).unwrap();
        // A dvec4 spans locations 3 and 4.
        assert_eq!(mask_to_output(&mut m, "main", 31, 32).unwrap(), 5);
        let mut m = parse(&glsl(src, "vert").unwrap()).unwrap();
        assert!(mask_to_output(&mut m, "main", 31, 5).is_err());
    }
}
