//! A vertex shader whose first draw of a multi-draw is made harmless: the
//! other half of a driver workaround in the layer
//! (`layer/src/fdm/multiview_flush.rs`).
//!
//! lavapipe's draw module sets the view index of a run of clipped primitives
//! when the run starts, and its loop over the views of a multiview draw does
//! not end the run, so a view's clipped primitives can land in an earlier
//! view's layer. A chunk of primitives that need no clipping flushes the run
//! and sets the view index afresh. The layer therefore issues each direct
//! draw of a multiview pass as a multi-draw `{dummy, draw}`, and binds a
//! variant of the pipeline whose vertex shader went through [`gate`]:
//!
//! - a wrapper becomes the entry point: it calls the application's entry
//!   function, then, where `DrawIndex` is 0 (the dummy), writes `Position =
//!   (0, 0, 0, 1)` and zero clip distances (where the shader writes them):
//!   every vertex of the dummy is the same point inside the clip volume, a
//!   triangle of zero area that takes the unclipped path and covers nothing;
//! - the application's own `DrawIndex` (if it reads one) becomes a private
//!   variable holding `max(DrawIndex − 1, 0)`: its draws see the indices they
//!   would have had, and the dummy sees what the first draw sees (so it
//!   reads exactly the memory that draw reads).
//!
//! Refused: a shader with side effects (the dummy would repeat them),
//! transform feedback (it would capture the dummy), cull distances written
//! (they send every chunk down the clipped path: nothing to gain), no
//! `Position`, and an entry function shared with another entry point.

use crate::ir::{
    builtin_inputs, builtin_of, code, constant, decorate, def, find_or_add, fresh, make_private, pointer_type,
    remove_decorations, var_type,
};
use rspirv::dr::{Block, Function, Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Capability, Decoration, ExecutionModel, FunctionControl, Op, SelectionControl};
use rspirv::spirv::{StorageClass, Word};

#[derive(Debug, thiserror::Error)]
pub enum Unsupported {
    #[error("no vertex entry point named {0:?}")]
    NoEntry(String),
    #[error("the entry function is also another entry point's")]
    SharedEntry,
    #[error("the shader writes storage or uses atomics (the first draw would repeat them)")]
    SideEffects,
    #[error("the shader declares transform feedback (it would capture the first draw)")]
    TransformFeedback,
    #[error("the shader writes cull distances")]
    CullDistance,
    #[error("the shader declares no Position output")]
    NoPosition,
    #[error("malformed module: {0}")]
    Malformed(#[from] crate::Malformed),
}

/// Where a built-in output lives: a variable of its own, or a member of an
/// output block variable.
#[derive(Clone, Copy, Debug)]
struct Output {
    var: Word,
    member: Option<u32>,
    ty: Word,
}

/// The output variables holding `builtin` (Output storage class).
fn outputs(m: &Module, builtin: BuiltIn) -> Vec<Output> {
    let mut out = Vec::new();
    let output_vars = m.types_global_values.iter().filter(|i| {
        i.class.opcode == Op::Variable && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Output))
    });
    for v in output_vars {
        let (Some(var), Some(ty)) = (v.result_id, v.result_id.and_then(|id| var_type(m, id))) else { continue };
        if builtin_of(m, var) == Some(builtin) {
            out.push(Output { var, member: None, ty });
            continue;
        }
        // A block member: OpMemberDecorate %struct N BuiltIn B.
        for a in &m.annotations {
            if let (
                Op::MemberDecorate,
                [Operand::IdRef(s), Operand::LiteralBit32(n), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)],
            ) = (a.class.opcode, a.operands.as_slice())
            {
                let member_ty = def(m, *s).and_then(|st| match st.operands.get(*n as usize) {
                    Some(Operand::IdRef(t)) if st.class.opcode == Op::TypeStruct => Some(*t),
                    _ => None,
                });
                if *s == ty && *b == builtin {
                    if let Some(mt) = member_ty {
                        out.push(Output { var, member: Some(*n), ty: mt });
                    }
                }
            }
        }
    }
    out
}

/// Whether the code may write output `o`: any use of a variable of its own;
/// for a block member, an access chain to that member, or any use of the
/// block other than an access chain with a constant first index.
fn written(m: &Module, o: &Output) -> bool {
    let member_of = |i: &Instruction| match i.operands.get(1) {
        Some(Operand::IdRef(c)) => def(m, *c).and_then(|d| match (d.class.opcode, d.operands.first()) {
            (Op::Constant, Some(Operand::LiteralBit32(v))) => Some(*v),
            _ => None,
        }),
        _ => None,
    };
    code(m).any(|i| {
        if !i.operands.contains(&Operand::IdRef(o.var)) {
            return false;
        }
        match o.member {
            None => true,
            Some(n) => {
                let chain = matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain)
                    && i.operands.first() == Some(&Operand::IdRef(o.var));
                !chain || member_of(i).is_none_or(|k| k == n)
            }
        }
    })
}

/// Gates the first draw of the vertex entry point `entry` (module doc). The
/// module is left unchanged when it is refused.
pub fn gate(module: &mut Module, entry: &str) -> Result<(), Unsupported> {
    crate::check(module)?;
    let mut out = module.clone();
    gate_checked(&mut out, entry)?;
    *module = out;
    Ok(())
}

/// [`gate`] on a checked module, changing it in place: the refusals, the
/// new `DrawIndex`, the wrapper, and the entry point moved onto it.
fn gate_checked(m: &mut Module, entry: &str) -> Result<(), Unsupported> {
    let (ep, main) = entry_function(m, entry)?;
    refuse(m)?;
    let position = *outputs(m, BuiltIn::Position).first().ok_or(Unsupported::NoPosition)?;
    let clips: Vec<Output> = outputs(m, BuiltIn::ClipDistance).into_iter().filter(|o| written(m, o)).collect();
    let main_type = m
        .functions
        .iter()
        .find(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(main))
        .and_then(|f| f.def.as_ref())
        .and_then(|d| match (d.result_type, d.operands.get(1)) {
            (Some(void), Some(Operand::IdRef(fnty))) => Some((void, *fnty)),
            _ => None,
        })
        .ok_or(crate::Malformed::Undefined(main))?;
    let index = draw_index(m)?;
    let wrapper = add_wrapper(m, main, main_type, &index, position, &clips)?;
    m.entry_points[ep].operands[1] = Operand::IdRef(wrapper);
    for x in m.execution_modes.iter_mut().filter(|x| x.operands.first() == Some(&Operand::IdRef(main))) {
        x.operands[0] = Operand::IdRef(wrapper);
    }
    Ok(())
}

/// The index of vertex entry point `entry` and its function, unless that
/// function is also another entry point's.
pub(crate) fn entry_function(m: &Module, entry: &str) -> Result<(usize, Word), Unsupported> {
    let ep = m
        .entry_points
        .iter()
        .position(|e| {
            e.operands.first() == Some(&Operand::ExecutionModel(ExecutionModel::Vertex))
                && matches!(e.operands.get(2), Some(Operand::LiteralString(s)) if s == entry)
        })
        .ok_or_else(|| Unsupported::NoEntry(entry.to_string()))?;
    let Some(Operand::IdRef(main)) = m.entry_points[ep].operands.get(1).cloned() else {
        return Err(Unsupported::NoEntry(entry.to_string()));
    };
    let shared =
        m.entry_points.iter().enumerate().any(|(i, e)| i != ep && e.operands.get(1) == Some(&Operand::IdRef(main)));
    if shared {
        return Err(Unsupported::SharedEntry);
    }
    Ok((ep, main))
}

/// The refusals that need no more than a look at the module: side effects,
/// transform feedback, cull distances written.
fn refuse(m: &Module) -> Result<(), Unsupported> {
    if crate::fdm::has_side_effects(m) {
        return Err(Unsupported::SideEffects);
    }
    let xfb =
        m.capabilities.iter().any(|c| c.operands.first() == Some(&Operand::Capability(Capability::TransformFeedback)))
            || m.execution_modes
                .iter()
                .any(|x| x.operands.get(1) == Some(&Operand::ExecutionMode(rspirv::spirv::ExecutionMode::Xfb)));
    if xfb {
        return Err(Unsupported::TransformFeedback);
    }
    if outputs(m, BuiltIn::CullDistance).iter().any(|o| written(m, o)) {
        return Err(Unsupported::CullDistance);
    }
    Ok(())
}

/// `DrawIndex` as the wrapper sees it ([`draw_index`]).
struct DrawIndex {
    /// The integer type of the index.
    int: Word,
    /// The new `DrawIndex` input.
    raw: Word,
    /// The application's own `DrawIndex` variables, now private.
    app: Vec<Word>,
}

/// DrawIndex: a new input; the application's own (if any) made private.
fn draw_index(m: &mut Module) -> Result<DrawIndex, Unsupported> {
    let app = builtin_inputs(m, BuiltIn::DrawIndex);
    let int = match app.first().and_then(|v| var_type(m, *v)) {
        Some(t) => t,
        None => find_or_add(m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(1)]),
    };
    let input_ptr = pointer_type(m, StorageClass::Input, int);
    for v in &app {
        remove_decorations(m, *v, &[Decoration::BuiltIn]);
        make_private(m, *v, None)?;
    }
    let raw = crate::ir::add_io_variable(m, input_ptr, StorageClass::Input);
    decorate(m, raw, Decoration::BuiltIn, vec![Operand::BuiltIn(BuiltIn::DrawIndex)]);
    crate::ir::add_capability(m, Capability::DrawParameters);
    crate::ir::add_extension(m, "SPV_KHR_shader_draw_parameters");
    Ok(DrawIndex { int, raw, app })
}

/// Adds the wrapper of the application's entry function `main` (of
/// `main_type`: its return and function types): it sets the application's
/// `DrawIndex` from `index`, calls `main`, then, for the first draw, stores
/// the origin into `position` and zeros into the `clips`. Returns its id.
fn add_wrapper(
    m: &mut Module,
    main: Word,
    main_type: (Word, Word),
    index: &DrawIndex,
    position: Output,
    clips: &[Output],
) -> Result<Word, Unsupported> {
    let (int, raw, app_index) = (index.int, index.raw, &index.app);
    // Constants.
    let boolean = find_or_add(m, Op::TypeBool, None, vec![]);
    let zero = constant(m, int, 0);
    let one = constant(m, int, 1);
    let index_ty = find_or_add(m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(1)]);
    let (vec4, float) = match def(m, position.ty).map(|d| (d.class.opcode, d.operands.clone())) {
        Some((Op::TypeVector, ops)) => match ops.first() {
            Some(Operand::IdRef(f)) => (position.ty, *f),
            _ => return Err(crate::Malformed::Unexpected(position.ty).into()),
        },
        _ => return Err(crate::Malformed::Unexpected(position.ty).into()),
    };
    let f0 = constant(m, float, 0.0f32.to_bits());
    let f1 = constant(m, float, 1.0f32.to_bits());
    let origin = find_or_add(
        m,
        Op::ConstantComposite,
        Some(vec4),
        vec![Operand::IdRef(f0), Operand::IdRef(f0), Operand::IdRef(f0), Operand::IdRef(f1)],
    );

    // The wrapper.
    let (void, fnty) = main_type;
    let (wrapper, entry_label, gate_label, merge_label) = (fresh(m), fresh(m), fresh(m), fresh(m));
    let loaded = fresh(m);
    let first = fresh(m);
    let mut head = vec![
        Instruction::new(Op::Load, Some(int), Some(loaded), vec![Operand::IdRef(raw)]),
        Instruction::new(Op::IEqual, Some(boolean), Some(first), vec![Operand::IdRef(loaded), Operand::IdRef(zero)]),
    ];
    if !app_index.is_empty() {
        let (less, shifted) = (fresh(m), fresh(m));
        head.push(Instruction::new(Op::ISub, Some(int), Some(less), vec![Operand::IdRef(loaded), Operand::IdRef(one)]));
        head.push(Instruction::new(
            Op::Select,
            Some(int),
            Some(shifted),
            vec![Operand::IdRef(first), Operand::IdRef(loaded), Operand::IdRef(less)],
        ));
        for v in app_index {
            head.push(Instruction::new(Op::Store, None, None, vec![Operand::IdRef(*v), Operand::IdRef(shifted)]));
        }
    }
    let call = fresh(m);
    head.push(Instruction::new(Op::FunctionCall, Some(void), Some(call), vec![Operand::IdRef(main)]));
    head.push(Instruction::new(
        Op::SelectionMerge,
        None,
        None,
        vec![Operand::IdRef(merge_label), Operand::SelectionControl(SelectionControl::NONE)],
    ));
    head.push(Instruction::new(
        Op::BranchConditional,
        None,
        None,
        vec![Operand::IdRef(first), Operand::IdRef(gate_label), Operand::IdRef(merge_label)],
    ));
    let mut gated = Vec::new();
    let store = |m: &mut Module, o: &Output, value: Word, gated: &mut Vec<Instruction>| {
        let target = match o.member {
            None => o.var,
            Some(n) => {
                let ptr = pointer_type(m, StorageClass::Output, o.ty);
                let k = constant(m, index_ty, n);
                let chain = fresh(m);
                gated.push(Instruction::new(
                    Op::AccessChain,
                    Some(ptr),
                    Some(chain),
                    vec![Operand::IdRef(o.var), Operand::IdRef(k)],
                ));
                chain
            }
        };
        gated.push(Instruction::new(Op::Store, None, None, vec![Operand::IdRef(target), Operand::IdRef(value)]));
    };
    store(m, &position, origin, &mut gated);
    for c in clips {
        let null = find_or_add(m, Op::ConstantNull, Some(c.ty), vec![]);
        store(m, c, null, &mut gated);
    }
    gated.push(Instruction::new(Op::Branch, None, None, vec![Operand::IdRef(merge_label)]));
    let label = |id| Some(Instruction::new(Op::Label, None, Some(id), vec![]));
    m.functions.push(Function {
        def: Some(Instruction::new(
            Op::Function,
            Some(void),
            Some(wrapper),
            vec![Operand::FunctionControl(FunctionControl::NONE), Operand::IdRef(fnty)],
        )),
        end: Some(Instruction::new(Op::FunctionEnd, None, None, vec![])),
        parameters: vec![],
        blocks: vec![
            Block { label: label(entry_label), instructions: head },
            Block { label: label(gate_label), instructions: gated },
            Block { label: label(merge_label), instructions: vec![Instruction::new(Op::Return, None, None, vec![])] },
        ],
    });
    Ok(wrapper)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{disassemble, glsl};
    use crate::{assemble, parse, validate, TargetEnv};

    fn gated(src: &str) -> Result<Vec<u32>, Unsupported> {
        let words = glsl(src, "vert").unwrap();
        let mut m = parse(&words).unwrap();
        gate(&mut m, "main")?;
        let out = assemble(&m);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{}", disassemble(&out)));
        Ok(out)
    }

    #[test]
    fn the_first_draw_collapses_to_a_point_and_draw_index_shifts() {
        let out = gated(
            "#version 450\n#extension GL_ARB_shader_draw_parameters : require\n\
             layout(location = 0) out flat int id;\n\
             void main() { id = gl_DrawIDARB; gl_Position = vec4(float(gl_VertexIndex), 0.0, 0.0, 1.0); gl_ClipDistance[0] = -1.0; }",
        )
        .unwrap();
        let text = disassemble(&out);
        // One DrawIndex input left; the application's is private, written
        // with the shifted index; the wrapper is the entry point.
        assert_eq!(text.matches("BuiltIn DrawIndex").count(), 1, "{text}");
        assert!(text.contains("OpISub"), "{text}");
        assert!(text.contains("OpSelect"), "{text}");
        assert!(text.contains("OpConstantNull"), "clip distances zeroed: {text}");
        let m = parse(&out).unwrap();
        let entry = match m.entry_points[0].operands[1] {
            Operand::IdRef(f) => f,
            _ => unreachable!(),
        };
        let wrapper = m.functions.iter().find(|f| f.def.as_ref().unwrap().result_id == Some(entry)).unwrap();
        assert_eq!(wrapper.blocks.len(), 3);
        assert!(wrapper.blocks[0].instructions.iter().any(|i| i.class.opcode == Op::FunctionCall));
    }

    #[test]
    fn a_shader_without_draw_index_gets_one_and_unwritten_clip_distances_stay_alone() {
        let out = gated("#version 450\nvoid main() { gl_Position = vec4(0.5); }").unwrap();
        let text = disassemble(&out);
        assert!(text.contains("OpCapability DrawParameters"), "{text}");
        assert!(text.contains("BuiltIn DrawIndex"), "{text}");
        assert!(!text.contains("OpConstantNull"), "{text}");
        assert!(!text.contains("OpISub"), "{text}");
    }

    #[test]
    fn a_standalone_position_variable_is_gated() {
        // The assembler's form: Position as a variable of its own.
        let text = "OpCapability Shader\nOpMemoryModel Logical GLSL450\nOpEntryPoint Vertex %main \"main\" %pos\n\
                    OpDecorate %pos BuiltIn Position\n%void = OpTypeVoid\n%fn = OpTypeFunction %void\n\
                    %float = OpTypeFloat 32\n%v4 = OpTypeVector %float 4\n%ptr = OpTypePointer Output %v4\n\
                    %pos = OpVariable %ptr Output\n%half = OpConstant %float 0.5\n\
                    %c = OpConstantComposite %v4 %half %half %half %half\n\
                    %main = OpFunction %void None %fn\n%l = OpLabel\nOpStore %pos %c\nOpReturn\nOpFunctionEnd\n";
        let words = crate::testing::assemble_text(text).unwrap();
        let mut m = parse(&words).unwrap();
        gate(&mut m, "main").unwrap();
        let out = assemble(&m);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{}", disassemble(&out)));
        assert!(disassemble(&out).contains("OpFunctionCall"));
    }

    #[test]
    fn what_would_repeat_or_gain_nothing_is_refused() {
        let storage = "#version 450\nlayout(std430, binding = 0) buffer B { uint n; };\n\
                       void main() { atomicAdd(n, 1u); gl_Position = vec4(0.0); }";
        assert!(matches!(gated(storage), Err(Unsupported::SideEffects)));
        let cull = "#version 450\nvoid main() { gl_CullDistance[0] = 1.0; gl_Position = vec4(0.0); }";
        assert!(matches!(gated(cull), Err(Unsupported::CullDistance)));
        let words = glsl("#version 450\nvoid main() { gl_Position = vec4(0.0); }", "vert").unwrap();
        let mut m = parse(&words).unwrap();
        assert!(matches!(gate(&mut m, "other"), Err(Unsupported::NoEntry(_))));
        assert_eq!(assemble(&m), assemble(&parse(&words).unwrap()), "a refused module is left as it was");
    }
}
