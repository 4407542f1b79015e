//! A discard that is never taken, so that llvmpipe never treats a fragment
//! shader as opaque: the other half of the `serialized` interlock strategy
//! on lavapipe (`interlock_never_opaque` in the layer).
//!
//! llvmpipe marks a fragment shader variant *opaque* when nothing the
//! pipeline does depends on what the colour buffer held before: one colour
//! buffer written with its full mask, no blending or logic op, no depth or
//! stencil test, no alpha test or alpha-to-coverage, one sample, and no
//! discard in the shader. When a later triangle of such a variant covers a
//! whole 64×64 tile, the rasterizer throws away every command binned for that
//! tile before it — without asking whether those earlier fragment shaders
//! wrote memory. A read-modify-write in a critical section then loses every
//! earlier primitive's work, which no interlock strategy can give back.
//!
//! The cheapest input of that rule a module can change is the discard:
//! [`add_untaken_discard`] puts, at the start of every fragment entry
//! function, `if (FragCoord.x < 0.0) discard;` — never taken (fragment
//! coordinates are framebuffer coordinates, never negative), and not foldable
//! by a compiler that knows nothing of the rasterizer's range. The shader's
//! results are unchanged; the driver merely keeps the earlier commands.

use crate::ir::{builtin_inputs, constant, decorate, entry_functions, find_or_add, fresh, pointer_type, var_type};
use crate::Malformed;
use rspirv::dr::{Block, Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Decoration, ExecutionModel, Op, SelectionControl, StorageClass, Word};

/// `FragCoord`'s input variable and its type (vec4 of 32-bit floats):
/// the module's own, or a new one. Listed in every fragment entry point's
/// interface, and only there (it is a fragment-only built-in).
fn frag_coord(m: &mut Module) -> Result<(Word, Word), Malformed> {
    let var = match builtin_inputs(m, BuiltIn::FragCoord).first() {
        Some(&v) => v,
        None => {
            let float = find_or_add(m, Op::TypeFloat, None, vec![Operand::LiteralBit32(32)]);
            let vec4 = find_or_add(m, Op::TypeVector, None, vec![Operand::IdRef(float), Operand::LiteralBit32(4)]);
            let ptr = pointer_type(m, StorageClass::Input, vec4);
            let v = fresh(m);
            m.types_global_values.push(Instruction::new(
                Op::Variable,
                Some(ptr),
                Some(v),
                vec![Operand::StorageClass(StorageClass::Input)],
            ));
            decorate(m, v, Decoration::BuiltIn, vec![Operand::BuiltIn(BuiltIn::FragCoord)]);
            v
        }
    };
    let ty = var_type(m, var).ok_or(Malformed::Unexpected(var))?;
    for ep in &mut m.entry_points {
        let fragment = ep.operands.first() == Some(&Operand::ExecutionModel(ExecutionModel::Fragment));
        if fragment && !ep.operands.iter().skip(3).any(|o| *o == Operand::IdRef(var)) {
            ep.operands.push(Operand::IdRef(var));
        }
    }
    Ok((var, ty))
}

/// The scalar type of vector type `vec`.
fn component_type(m: &Module, vec: Word) -> Result<Word, Malformed> {
    match crate::ir::def(m, vec).map(|i| (i.class.opcode, i.operands.as_slice())) {
        Some((Op::TypeVector, [Operand::IdRef(c), ..])) => Ok(*c),
        _ => Err(Malformed::Unexpected(vec)),
    }
}

/// Puts an untaken discard at the start of every fragment entry function
/// (see the module documentation). Returns how many functions it guarded.
pub fn add_untaken_discard(m: &mut Module) -> Result<usize, Malformed> {
    crate::malformed::check(m)?;
    let mut functions = entry_functions(m, Some(ExecutionModel::Fragment));
    functions.sort_unstable();
    functions.dedup();
    if functions.is_empty() {
        return Ok(0);
    }
    let (coord, vec4) = frag_coord(m)?;
    let float = component_type(m, vec4)?;
    let boolean = find_or_add(m, Op::TypeBool, None, vec![]);
    let zero = constant(m, float, 0.0f32.to_bits());
    let mut guarded = 0;
    for f in functions {
        let (load, x, negative, entry, kill) = (fresh(m), fresh(m), fresh(m), fresh(m), fresh(m));
        let Some(func) = m.functions.iter_mut().find(|fun| fun.def.as_ref().and_then(|d| d.result_id) == Some(f))
        else {
            continue;
        };
        let Some(first) = func.blocks.first_mut() else { continue };
        let Some(rest) = first.label.as_ref().and_then(|l| l.result_id) else {
            return Err(Malformed::Unexpected(f));
        };
        // The function's variables (and the line information among them)
        // must stay at the start of its first block.
        let head = first
            .instructions
            .iter()
            .take_while(|i| matches!(i.class.opcode, Op::Variable | Op::Line | Op::NoLine))
            .count();
        let mut code: Vec<Instruction> = first.instructions.drain(..head).collect();
        code.extend([
            Instruction::new(Op::Load, Some(vec4), Some(load), vec![Operand::IdRef(coord)]),
            Instruction::new(
                Op::CompositeExtract,
                Some(float),
                Some(x),
                vec![Operand::IdRef(load), Operand::LiteralBit32(0)],
            ),
            Instruction::new(
                Op::FOrdLessThan,
                Some(boolean),
                Some(negative),
                vec![Operand::IdRef(x), Operand::IdRef(zero)],
            ),
            Instruction::new(
                Op::SelectionMerge,
                None,
                None,
                vec![Operand::IdRef(rest), Operand::SelectionControl(SelectionControl::NONE)],
            ),
            Instruction::new(
                Op::BranchConditional,
                None,
                None,
                vec![Operand::IdRef(negative), Operand::IdRef(kill), Operand::IdRef(rest)],
            ),
        ]);
        let block = |label: Word, instructions: Vec<Instruction>| Block {
            label: Some(Instruction::new(Op::Label, None, Some(label), vec![])),
            instructions,
        };
        // The old first block keeps its label (phis elsewhere name it as a
        // predecessor), now the selection's merge block.
        func.blocks
            .splice(0..0, [block(entry, code), block(kill, vec![Instruction::new(Op::Kill, None, None, vec![])])]);
        guarded += 1;
    }
    Ok(guarded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::glsl;
    use crate::{assemble, parse, validate, TargetEnv};

    fn guarded(src: &str) -> (usize, String) {
        let words = glsl(src, "frag").unwrap();
        let mut m = parse(&words).unwrap();
        let n = add_untaken_discard(&mut m).unwrap();
        let out = assemble(&m);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{}", crate::testing::disassemble(&out)));
        (n, crate::testing::disassemble(&out))
    }

    #[test]
    fn a_shader_reading_frag_coord_keeps_one_variable() {
        let (n, text) = guarded(
            "#version 450\nlayout(binding=0, r32ui) uniform uimage2D img;\nlayout(location=0) out vec4 o;\nvoid main() { ivec2 p = ivec2(gl_FragCoord.xy); imageStore(img, p, imageLoad(img, p) + 1u); o = vec4(1); }\n",
        );
        assert_eq!(n, 1);
        assert_eq!(text.matches("BuiltIn FragCoord").count(), 1, "{text}");
        assert_eq!(text.matches("OpKill").count(), 1, "{text}");
        assert!(text.contains("OpFOrdLessThan"), "{text}");
    }

    #[test]
    fn a_shader_without_frag_coord_gets_one_in_its_interface() {
        let (n, text) = guarded(
            "#version 450\nlayout(location=0) flat in int i;\nlayout(location=0) out vec4 o;\nvoid main() { float v[4] = float[4](1.0, 2.0, 3.0, 4.0); o = vec4(v[i & 3]); }\n",
        );
        assert_eq!(n, 1);
        assert!(text.contains("BuiltIn FragCoord"), "{text}");
        let entry = text.lines().find(|l| l.contains("OpEntryPoint")).unwrap();
        assert_eq!(entry.split_whitespace().count(), 7, "three interface variables: {entry}");
    }

    /// A loop header right at the start of `main` (its first block is the
    /// loop's pre-header) and function variables stay valid.
    #[test]
    fn loops_and_variables_at_the_start_stay_valid() {
        let (n, _) = guarded(
            "#version 450\nlayout(location=0) flat in int k;\nlayout(location=0) out vec4 o;\nvoid main() { vec4 a = vec4(0); for (int i = 0; i < k; i++) { a += vec4(i); } o = a; }\n",
        );
        assert_eq!(n, 1);
    }

    #[test]
    fn vertex_modules_are_left_alone() {
        let words = glsl("#version 450\nvoid main() { gl_Position = vec4(0); }\n", "vert").unwrap();
        let mut m = parse(&words).unwrap();
        let before = assemble(&m);
        assert_eq!(add_untaken_discard(&mut m).unwrap(), 0);
        assert_eq!(assemble(&m), before);
    }
}
