//! Splitting arrays and matrices (issue 13, item 5; the seed works on
//! scalar slots, so an array's elements and a matrix's columns are varyings
//! of their own): an output array of 32-bit scalars or vectors, or a matrix,
//! whose consumer input at the same location has the same shape, becomes
//! one variable per element (column) on both sides, at the locations the
//! elements had — so that dead-I/O removal, propagation, deduplication,
//! narrowing and compaction then see each one as a vector ([`split_pairs`]).
//!
//! Only where every use on both sides is one the split can rewrite
//! ([`splittable`]): a load or store of the whole variable (stores become a
//! store per element of its `OpCompositeExtract`, loads an
//! `OpCompositeConstruct` of the elements' loads) or an access chain whose
//! first index is a constant (it points into that element's variable). An
//! indirectly indexed one stays whole (the seed keeps such slots), and so
//! do per-vertex arrays, transform-feedback outputs and variables the
//! application placed at a component. Exact at every level: every value is
//! where it was, interpolated as it was.

use super::Var;
use crate::ir::{add_io_variable, code, decorate, def, next_id, pointer_type, replace_uses, var_type};
use crate::Malformed;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Decoration, Op, Word};

/// (element type, element count, whether it is a matrix) of an array of
/// 32-bit scalars or vectors, or of a matrix.
fn shape(m: &Module, var: Word) -> Option<(Word, u32, bool)> {
    let t = def(m, var_type(m, var)?)?;
    let (elem, n, matrix) = match (t.class.opcode, t.operands.as_slice()) {
        (Op::TypeArray, [Operand::IdRef(e), Operand::IdRef(len)]) => {
            let c = def(m, *len).filter(|c| c.class.opcode == Op::Constant)?;
            match c.operands.first() {
                Some(Operand::LiteralBit32(n)) => (*e, *n, false),
                _ => return None,
            }
        }
        (Op::TypeMatrix, [Operand::IdRef(col), Operand::LiteralBit32(n)]) => (*col, *n, true),
        _ => return None,
    };
    (super::scalar_kind(m, elem).is_some() && (2..=32).contains(&n)).then_some((elem, n, matrix))
}

/// The value of constant index `id`, if it is one.
fn index_value(m: &Module, id: Word) -> Option<u32> {
    match def(m, id).filter(|c| c.class.opcode == Op::Constant)?.operands.first() {
        Some(Operand::LiteralBit32(v)) => Some(*v),
        _ => None,
    }
}

/// Whether every use of `var` (with `n` elements) is a plain whole load or
/// store or an access chain whose first index is a constant below `n`.
fn splittable(m: &Module, var: Word, n: u32) -> bool {
    code(m).filter(|i| i.operands.contains(&Operand::IdRef(var))).all(|i| {
        match (i.class.opcode, i.operands.as_slice()) {
            (Op::Load, [Operand::IdRef(p)]) => *p == var,
            (Op::Store, [Operand::IdRef(p), Operand::IdRef(v)]) => *p == var && *v != var,
            (Op::AccessChain | Op::InBoundsAccessChain, [Operand::IdRef(p), Operand::IdRef(k), rest @ ..]) => {
                *p == var && index_value(m, *k).is_some_and(|k| k < n) && !rest.contains(&Operand::IdRef(var))
            }
            _ => false,
        }
    })
}

/// Whether `v` is one the split may take (whole locations, its own).
fn candidate(v: &Var) -> bool {
    v.locations > 1 && !v.xfb && !v.per_vertex && !v.indirect && v.component.is_none()
}

/// Splits every output array or matrix of `outputs` whose input in
/// `inputs` (same location, same shape) can be split too, in both modules.
/// Returns the locations of those split.
pub(super) fn split_pairs(
    producer: &mut Module,
    consumer: &mut Module,
    outputs: &[Var],
    inputs: &[Var],
) -> Result<Vec<u32>, (bool, Malformed)> {
    let mut done = Vec::new();
    for o in outputs.iter().filter(|o| candidate(o)) {
        let Some(i) = inputs.iter().find(|i| i.location == o.location && candidate(i)) else { continue };
        let (Some(ps), Some(cs)) = (shape(producer, o.id), shape(consumer, i.id)) else { continue };
        let same = ps.1 == cs.1
            && ps.2 == cs.2
            && super::scalar_kind(producer, ps.0) == super::scalar_kind(consumer, cs.0)
            && o.locations == ps.1
            && i.locations == cs.1;
        // (An initialized output would lose its initializer: the elements'
        // variables have none.)
        let initialized = super::initializer(producer, o.id).is_some();
        if !same || initialized || !splittable(producer, o.id, ps.1) || !splittable(consumer, i.id, cs.1) {
            continue;
        }
        split(producer, o.id, o.location).map_err(|e| (true, e))?;
        split(consumer, i.id, i.location).map_err(|e| (false, e))?;
        done.push(o.location);
    }
    Ok(done)
}

/// Splits [`splittable`] `var` at `location` into one variable per element,
/// element `k` at `location + k` with `var`'s other decorations; `var` is
/// removed (its names and decorations go with [`crate::ir::forget_removed`]).
fn split(m: &mut Module, var: Word, location: u32) -> Result<(), Malformed> {
    let (elem, n, _) = shape(m, var).ok_or(Malformed::Unexpected(var))?;
    let ty = var_type(m, var).ok_or(Malformed::Unexpected(var))?;
    let ptr = def(m, var).and_then(|v| v.result_type).ok_or(Malformed::Unexpected(var))?;
    let class = match def(m, ptr).and_then(|p| p.operands.first()) {
        Some(Operand::StorageClass(c)) => *c,
        _ => return Err(Malformed::Unexpected(ptr)),
    };
    let elem_ptr = pointer_type(m, class, elem);
    let kept: Vec<Instruction> = m
        .annotations
        .iter()
        .filter(|a| a.class.opcode == Op::Decorate && a.operands.first() == Some(&Operand::IdRef(var)))
        .filter(|a| !matches!(a.operands.get(1), Some(Operand::Decoration(Decoration::Location))))
        .cloned()
        .collect();
    let mut parts = Vec::with_capacity(n as usize);
    for k in 0..n {
        let id = add_io_variable(m, elem_ptr, class);
        m.annotations.extend(kept.iter().map(|a| {
            let mut a = a.clone();
            a.operands[0] = Operand::IdRef(id);
            a
        }));
        decorate(m, id, Decoration::Location, vec![Operand::LiteralBit32(location + k)]);
        parts.push(id);
    }
    // Element indices of the chains, read before the rewrite borrows the code.
    let indices: std::collections::HashMap<Word, u32> = code(m)
        .filter(|i| matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain))
        .filter(|i| i.operands.first() == Some(&Operand::IdRef(var)))
        .filter_map(|i| match i.operands.get(1) {
            Some(Operand::IdRef(k)) => Some((*k, index_value(m, *k)?)),
            _ => None,
        })
        .collect();
    // Chains to the whole element: their uses point at the element's variable.
    let mut whole: Vec<(Word, Word)> = Vec::new();
    for f in &mut m.functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for inst in b.instructions.drain(..) {
                let on_var = inst.operands.first() == Some(&Operand::IdRef(var));
                match inst.class.opcode {
                    Op::Store if on_var => {
                        let Some(&Operand::IdRef(value)) = inst.operands.get(1) else {
                            return Err(Malformed::Unexpected(var));
                        };
                        for (k, part) in parts.iter().enumerate() {
                            let e = next_id(&mut m.header);
                            out.push(Instruction::new(
                                Op::CompositeExtract,
                                Some(elem),
                                Some(e),
                                vec![Operand::IdRef(value), Operand::LiteralBit32(k as u32)],
                            ));
                            out.push(Instruction::new(
                                Op::Store,
                                None,
                                None,
                                vec![Operand::IdRef(*part), Operand::IdRef(e)],
                            ));
                        }
                    }
                    Op::Load if on_var => {
                        let mut loaded = Vec::with_capacity(parts.len());
                        for part in &parts {
                            let e = next_id(&mut m.header);
                            out.push(Instruction::new(Op::Load, Some(elem), Some(e), vec![Operand::IdRef(*part)]));
                            loaded.push(Operand::IdRef(e));
                        }
                        out.push(Instruction::new(Op::CompositeConstruct, Some(ty), inst.result_id, loaded));
                    }
                    Op::AccessChain | Op::InBoundsAccessChain if on_var => {
                        let k = match inst.operands.get(1) {
                            Some(Operand::IdRef(k)) => indices.get(k).copied(),
                            _ => None,
                        };
                        let (Some(k), Some(id)) = (k, inst.result_id) else {
                            return Err(Malformed::Unexpected(var));
                        };
                        let part = parts[k as usize];
                        if inst.operands.len() == 2 {
                            whole.push((id, part));
                        } else {
                            let mut inst = inst;
                            inst.operands.remove(1);
                            inst.operands[0] = Operand::IdRef(part);
                            out.push(inst);
                        }
                    }
                    _ => out.push(inst),
                }
            }
            b.instructions = out;
        }
    }
    for (chain, part) in whole {
        replace_uses(m, chain, part);
    }
    m.types_global_values.retain(|i| i.result_id != Some(var));
    for ep in &mut m.entry_points {
        ep.operands.retain(|o| *o != Operand::IdRef(var));
    }
    Ok(())
}
