//! The convergent group (issue 13, item 5; the seed's "Convergence property
//! of shader outputs"): an output whose value is the same on every vertex of
//! a primitive can be interpolated in any mode or be flat and read the same
//! value (up to interpolation rounding), so compaction packs it with
//! whichever group — flat or interpolated, of its scalar kind — has room,
//! and the rest as flat.
//!
//! An output is convergent ([`convergent_output`]) when
//! - the producer is not a geometry shader (one invocation emits a whole
//!   primitive's vertices, each store may differ),
//! - every store to it is a plain `OpStore` in the first block of an entry
//!   point's function (run unconditionally, once, by every invocation), and
//! - every stored value is computed ([`convergent_value`]) only from
//!   constants, loads from uniform blocks and push constants (not through
//!   a buffer device address read from them), and, in a
//!   tessellation evaluation shader, patch inputs (uniform within a patch, so
//!   within each of its primitives) — through side-effect-free arithmetic
//!   ([`crate::values::pure`], pure `GLSL.std.450` functions) and access
//!   chains whose indices are convergent too.
//!
//! As the seed says, a flat varying is never convergent (it may be an
//! integer, or hold an infinity that interpolation would turn into a NaN);
//! only floating-point interpolated ones are, and not those interpolated per
//! `Sample` (that decoration may be what makes the fragment shader run per
//! sample). Moving one between
//! interpolation modes is exact only up to interpolation rounding, so the
//! linker does it at `full` only; when one becomes flat its producer stores
//! `x·0 + x` (exact; an infinity becomes a NaN, as interpolating it made it).

use super::Stage;
use crate::ir::{code, constant, decorate, decorations_of, def, entry_functions, find_or_add, fresh, is_constant};
use crate::values::{glsl_set, pure, pure_ext};
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Decoration, Op, StorageClass, Word};
use std::collections::{HashMap, HashSet};

/// The interpolation-affecting decorations compaction groups by.
pub(super) const INTERPOLATION: [Decoration; 4] =
    [Decoration::Flat, Decoration::NoPerspective, Decoration::Centroid, Decoration::Sample];

/// Whether `value` (in `m`, a `stage` shader) is the same for every vertex
/// of a primitive: see the module comment. The expression is walked with a
/// stack of its own and a visited set (each id once), never by recursion.
pub(super) fn convergent_value(m: &Module, value: Word, stage: Stage) -> bool {
    let insts: HashMap<Word, &Instruction> = code(m).filter_map(|i| Some((i.result_id?, i))).collect();
    let glsl = glsl_set(m);
    let mut seen: HashSet<Word> = HashSet::new();
    let mut stack = vec![value];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) || is_constant(m, id) {
            continue;
        }
        if let Some(i) = insts.get(&id) {
            // Memory reached through a buffer device address may be written
            // by the draw itself: not known to be the same for every vertex.
            if i.class.opcode == Op::Load && physical(m, &insts, i) {
                return false;
            }
            let operands: &[Operand] = if pure_ext(i, glsl) {
                &i.operands[2..]
            } else if pure(i.class.opcode) || i.class.opcode == Op::Load {
                &i.operands
            } else {
                return false;
            };
            // (A load's memory-access literals are no ids.)
            stack.extend(operands.iter().filter_map(|o| match o {
                Operand::IdRef(x) => Some(*x),
                _ => None,
            }));
            continue;
        }
        // A global variable: uniform block, push constants, patch input of
        // a tessellation evaluation shader.
        let Some(g) = def(m, id).filter(|g| g.class.opcode == Op::Variable) else { return false };
        let decorated = |target: Word, d: Decoration| {
            decorations_of(m, target).iter().any(|a| a.operands.get(1) == Some(&Operand::Decoration(d)))
        };
        let pointee = g.result_type.and_then(|p| crate::ir::pointee_of(m, p));
        let ok = match g.operands.first() {
            Some(Operand::StorageClass(StorageClass::PushConstant)) => true,
            Some(Operand::StorageClass(StorageClass::Uniform)) => {
                pointee.is_some_and(|b| decorated(b, Decoration::Block))
            }
            Some(Operand::StorageClass(StorageClass::Input)) => {
                stage == Stage::TessellationEvaluation && decorated(id, Decoration::Patch)
            }
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Whether load `i` reads through a `PhysicalStorageBuffer` pointer (or one
/// whose type is not known).
fn physical(m: &Module, insts: &HashMap<Word, &Instruction>, i: &Instruction) -> bool {
    let Some(Operand::IdRef(ptr)) = i.operands.first() else { return true };
    let ty = insts.get(ptr).and_then(|p| p.result_type).or_else(|| def(m, *ptr).and_then(|p| p.result_type));
    match ty.and_then(|t| def(m, t)).map(|t| (t.class.opcode, t.operands.first())) {
        Some((Op::TypePointer, Some(Operand::StorageClass(c)))) => *c == StorageClass::PhysicalStorageBuffer,
        _ => true,
    }
}

/// Whether output `var` of a `stage` producer is convergent: every store is
/// a plain store, in the first block of an entry point's function, of a
/// [`convergent_value`]; nothing else uses it (the producer does not read
/// it back: a promoted one stores `x·0 + x`).
pub(super) fn convergent_output(m: &Module, var: Word, stage: Stage) -> bool {
    if stage == Stage::Geometry {
        return false;
    }
    let entries = entry_functions(m, None);
    let mut stores = 0;
    for f in &m.functions {
        let entry = f.def.as_ref().and_then(|d| d.result_id).is_some_and(|id| entries.contains(&id));
        for (bi, b) in f.blocks.iter().enumerate() {
            for i in &b.instructions {
                if !i.operands.contains(&Operand::IdRef(var)) {
                    continue;
                }
                match (i.class.opcode, i.operands.as_slice()) {
                    (Op::Store, [Operand::IdRef(p), Operand::IdRef(v), ..]) if *p == var => {
                        if !(entry && bi == 0 && convergent_value(m, *v, stage)) {
                            return false;
                        }
                        stores += 1;
                    }
                    // (Read back, its value would change with x·0 + x.)
                    _ => return false,
                }
            }
        }
    }
    stores > 0
}

/// Replaces `var`'s interpolation decorations by `interp`.
pub(super) fn set_interpolation(m: &mut Module, var: Word, interp: &[Decoration]) {
    crate::ir::remove_decorations(m, var, &INTERPOLATION);
    for d in interp {
        decorate(m, var, *d, vec![]);
    }
}

/// Makes every store to floating-point output `var` store `x·0 + x` (both
/// `NoContraction`): exact for finite values, an infinity becomes a NaN as
/// interpolation made it. Stores whose value is not a float scalar or vector
/// are left alone (false).
pub(super) fn flush_infinities(m: &mut Module, var: Word) -> bool {
    let mut all = true;
    let mut at: Vec<(usize, usize, usize)> = Vec::new();
    for (fi, f) in m.functions.iter().enumerate() {
        for (bi, b) in f.blocks.iter().enumerate() {
            for (ii, i) in b.instructions.iter().enumerate() {
                if i.class.opcode == Op::Store && i.operands.first() == Some(&Operand::IdRef(var)) {
                    at.push((fi, bi, ii));
                }
            }
        }
    }
    // Last first, so earlier positions stay valid.
    for (fi, bi, ii) in at.into_iter().rev() {
        let Some(&Operand::IdRef(value)) = m.functions[fi].blocks[bi].instructions[ii].operands.get(1) else {
            all = false;
            continue;
        };
        let Some(ty) = code(m).find(|i| i.result_id == Some(value)).and_then(|i| i.result_type) else {
            all = false;
            continue;
        };
        let (scalar, n) = match def(m, ty).map(|t| (t.class.opcode, t.operands.clone())) {
            Some((Op::TypeFloat, _)) => (ty, 1),
            Some((Op::TypeVector, ops)) => match ops.as_slice() {
                [Operand::IdRef(c), Operand::LiteralBit32(n)] => (*c, *n),
                _ => (0, 0),
            },
            _ => (0, 0),
        };
        if n == 0 || def(m, scalar).map(|t| t.class.opcode) != Some(Op::TypeFloat) {
            all = false;
            continue;
        }
        let zero_s = constant(m, scalar, 0);
        let zero = if n == 1 {
            zero_s
        } else {
            find_or_add(m, Op::ConstantComposite, Some(ty), vec![Operand::IdRef(zero_s); n as usize])
        };
        let (mul, add) = (fresh(m), fresh(m));
        let block = &mut m.functions[fi].blocks[bi].instructions;
        block[ii].operands[1] = Operand::IdRef(add);
        block.insert(
            ii,
            Instruction::new(Op::FAdd, Some(ty), Some(add), vec![Operand::IdRef(mul), Operand::IdRef(value)]),
        );
        block.insert(
            ii,
            Instruction::new(Op::FMul, Some(ty), Some(mul), vec![Operand::IdRef(value), Operand::IdRef(zero)]),
        );
        for x in [mul, add] {
            decorate(m, x, Decoration::NoContraction, vec![]);
        }
    }
    all
}
