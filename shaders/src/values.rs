//! Seeing values as they are, not as they are spelled: the varying linker's
//! analyses compare value ids, and unoptimized SPIR-V (glslang without
//! `-O`, what many programs ship) spells one value many ways — every read
//! of a local variable is a fresh `OpLoad`, `vec2 q = …; a = q; b = q;`
//! stores two different ids. [`canonicalize`] rewrites a module so that
//! equal values get one id, with changes that keep every value bit-identical:
//!
//! - **local variables stored once**: a function variable whose only uses
//!   are loads and one store (or its initializer), where the store
//!   dominates every load — it is in the function's first block, which
//!   dominates all others, or it shares the one block all loads are in, before
//!   them — is replaced by the stored value;
//! - **copies**: `OpCopyObject` is replaced by its operand;
//! - **equal expressions** (value numbering): two instructions with the same
//!   opcode, result type and operands, of a side-effect-free kind (arithmetic,
//!   conversions, comparisons, composites, access chains, `GLSL.std.450`
//!   functions but `Modf` and `Frexp`, and loads from
//!   read-only memory: inputs, push constants, uniform blocks), are one value
//!   where the first dominates the second (the first is in the function's
//!   first block, or both are in one block). Results that carry decorations
//!   (`NoContraction`, `RelaxedPrecision`, …) are left alone.
//!
//! - **unused results**: a side-effect-free instruction of those kinds, or a
//!   plain load (no memory-access operand), whose result nothing uses is
//!   removed — so an input read only into a dead value is not read at all.
//!
//! Rounds repeat until nothing changes (at most [`ROUNDS`]); each round is a
//! linear walk with one replacement map, so the cost stays linear in the
//! module per round.

use crate::ir::forget_removed;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Decoration, Op, StorageClass, Word};
use std::collections::{HashMap, HashSet};

/// Most rounds of forwarding and numbering (each exposes more of the other).
pub const ROUNDS: usize = 8;

/// Rewrites `m` so that equal values share one id (see the module doc).
/// Returns how many instructions it removed.
pub fn canonicalize(m: &mut Module) -> usize {
    let mut removed = 0;
    for _ in 0..ROUNDS {
        let n = forward_locals(m) + number_values(m) + remove_unused(m);
        if n == 0 {
            break;
        }
        removed += n;
    }
    if removed > 0 {
        forget_removed(m);
    }
    removed
}

/// Applies `map` (transitively: a value may map to one that maps again)
/// to every id operand of the functions' code.
fn apply(m: &mut Module, map: &HashMap<Word, Word>) {
    if map.is_empty() {
        return;
    }
    let resolve = |mut id: Word| {
        // Chains are acyclic (each maps a later id to an earlier one) and at
        // most as long as the map.
        for _ in 0..=map.len() {
            match map.get(&id) {
                Some(next) => id = *next,
                None => break,
            }
        }
        id
    };
    for f in &mut m.functions {
        for b in &mut f.blocks {
            for i in &mut b.instructions {
                for o in &mut i.operands {
                    if let Operand::IdRef(id) = o {
                        *id = resolve(*id);
                    }
                }
            }
        }
    }
}

/// Ids that carry a decoration (left out of numbering).
fn decorated(m: &Module) -> HashSet<Word> {
    m.annotations
        .iter()
        .filter(|a| matches!(a.class.opcode, Op::Decorate | Op::DecorateId | Op::DecorateString))
        .filter_map(|a| match a.operands.first() {
            Some(Operand::IdRef(id)) => Some(*id),
            _ => None,
        })
        .collect()
}

/// Local variables stored once, forwarded. Returns the instructions removed.
fn forward_locals(m: &mut Module) -> usize {
    let mut map: HashMap<Word, Word> = HashMap::new();
    let mut drop: HashSet<(usize, usize, usize)> = HashSet::new();
    for (fi, f) in m.functions.iter().enumerate() {
        let Some(first) = f.blocks.first() else { continue };
        // Candidates: (variable, initializer).
        let mut vars: HashMap<Word, Option<Word>> = HashMap::new();
        for i in &first.instructions {
            if i.class.opcode != Op::Variable {
                continue;
            }
            if i.operands.first() != Some(&Operand::StorageClass(StorageClass::Function)) {
                continue;
            }
            let init = match i.operands.get(1) {
                Some(Operand::IdRef(v)) => Some(*v),
                _ => None,
            };
            if let Some(id) = i.result_id {
                vars.insert(id, init);
            }
        }
        if vars.is_empty() {
            continue;
        }
        // Per variable: its stores and loads, (block, index); any other use
        // (access chain, call argument, copy) disqualifies it.
        struct Uses {
            stores: Vec<(usize, usize, Word)>,
            loads: Vec<(usize, usize, Word)>,
            other: bool,
        }
        let mut uses: HashMap<Word, Uses> =
            vars.keys().map(|v| (*v, Uses { stores: Vec::new(), loads: Vec::new(), other: false })).collect();
        for (bi, b) in f.blocks.iter().enumerate() {
            for (ii, i) in b.instructions.iter().enumerate() {
                match i.class.opcode {
                    Op::Variable if bi == 0 => continue,
                    Op::Store => {
                        let ptr = i.operands.first();
                        let value = i.operands.get(1);
                        if let (Some(Operand::IdRef(p)), Some(Operand::IdRef(v))) = (ptr, value) {
                            if let Some(u) = uses.get_mut(p) {
                                // A memory-access operand (volatile…) is left alone.
                                if i.operands.len() > 2 {
                                    u.other = true;
                                }
                                u.stores.push((bi, ii, *v));
                            }
                            // The variable stored *as a value* (a pointer) is another use.
                            if let Some(u) = uses.get_mut(v) {
                                u.other = true;
                            }
                            continue;
                        }
                    }
                    Op::Load => {
                        if let (Some(Operand::IdRef(p)), Some(r)) = (i.operands.first(), i.result_id) {
                            if let Some(u) = uses.get_mut(p) {
                                if i.operands.len() > 1 {
                                    u.other = true;
                                }
                                u.loads.push((bi, ii, r));
                            }
                            continue;
                        }
                    }
                    _ => {}
                }
                for o in &i.operands {
                    if let Operand::IdRef(id) = o {
                        if let Some(u) = uses.get_mut(id) {
                            u.other = true;
                        }
                    }
                }
            }
        }
        for (var, u) in uses {
            if u.other {
                continue;
            }
            let init = vars.get(&var).copied().flatten();
            let (store_at, value) = match (u.stores.as_slice(), init) {
                ([], Some(v)) => (None, v),
                ([(b, i, v)], None) => (Some((*b, *i)), *v),
                _ => continue,
            };
            let dominates = match store_at {
                // The initializer: before everything.
                None => true,
                // In the first block, before any load there.
                Some((0, si)) => u.loads.iter().all(|(b, i, _)| *b != 0 || *i > si),
                // Elsewhere: only loads later in the same block.
                Some((sb, si)) => u.loads.iter().all(|(b, i, _)| *b == sb && *i > si),
            };
            if !dominates {
                continue;
            }
            for (b, i, r) in &u.loads {
                map.insert(*r, value);
                drop.insert((fi, *b, *i));
            }
            if let Some((b, i)) = store_at {
                drop.insert((fi, b, i));
            }
            // The variable itself.
            if let Some(vi) = f.blocks[0].instructions.iter().position(|x| x.result_id == Some(var)) {
                drop.insert((fi, 0, vi));
            }
        }
    }
    let removed = drop.len();
    remove(m, &drop);
    apply(m, &map);
    removed
}

/// Side-effect-free instructions (and plain loads) whose results nothing
/// uses. Returns the instructions removed.
fn remove_unused(m: &mut Module) -> usize {
    let glsl = glsl_set(m);
    let mut used: HashSet<Word> = HashSet::new();
    for f in &m.functions {
        for b in &f.blocks {
            for i in &b.instructions {
                used.extend(i.operands.iter().filter_map(|o| match o {
                    Operand::IdRef(id) => Some(*id),
                    _ => None,
                }));
            }
        }
    }
    let mut drop: HashSet<(usize, usize, usize)> = HashSet::new();
    for (fi, f) in m.functions.iter().enumerate() {
        for (bi, b) in f.blocks.iter().enumerate() {
            for (ii, i) in b.instructions.iter().enumerate() {
                let Some(r) = i.result_id else { continue };
                let removable =
                    pure(i.class.opcode) || pure_ext(i, glsl) || (i.class.opcode == Op::Load && i.operands.len() == 1);
                if removable && !used.contains(&r) {
                    drop.insert((fi, bi, ii));
                }
            }
        }
    }
    let removed = drop.len();
    remove(m, &drop);
    removed
}

/// Removes the instructions at `at` (function, block, index).
fn remove(m: &mut Module, at: &HashSet<(usize, usize, usize)>) {
    if at.is_empty() {
        return;
    }
    for (fi, f) in m.functions.iter_mut().enumerate() {
        for (bi, b) in f.blocks.iter_mut().enumerate() {
            let mut ii = 0;
            b.instructions.retain(|_| {
                let keep = !at.contains(&(fi, bi, ii));
                ii += 1;
                keep
            });
        }
    }
}

/// Side-effect-free instructions whose result depends only on their
/// operands (and the result type).
pub(crate) fn pure(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        FAdd | FSub
            | FMul
            | FDiv
            | FRem
            | FMod
            | FNegate
            | IAdd
            | ISub
            | IMul
            | SDiv
            | UDiv
            | SRem
            | SMod
            | UMod
            | SNegate
            | VectorTimesScalar
            | MatrixTimesScalar
            | VectorTimesMatrix
            | MatrixTimesVector
            | MatrixTimesMatrix
            | OuterProduct
            | Dot
            | Transpose
            | ConvertFToU
            | ConvertFToS
            | ConvertSToF
            | ConvertUToF
            | UConvert
            | SConvert
            | FConvert
            | Bitcast
            | CompositeConstruct
            | CompositeExtract
            | CompositeInsert
            | VectorShuffle
            | VectorExtractDynamic
            | VectorInsertDynamic
            | Select
            | LogicalAnd
            | LogicalOr
            | LogicalNot
            | LogicalEqual
            | LogicalNotEqual
            | IEqual
            | INotEqual
            | SLessThan
            | SLessThanEqual
            | SGreaterThan
            | SGreaterThanEqual
            | ULessThan
            | ULessThanEqual
            | UGreaterThan
            | UGreaterThanEqual
            | FOrdEqual
            | FOrdNotEqual
            | FOrdLessThan
            | FOrdLessThanEqual
            | FOrdGreaterThan
            | FOrdGreaterThanEqual
            | FUnordEqual
            | FUnordNotEqual
            | FUnordLessThan
            | FUnordLessThanEqual
            | FUnordGreaterThan
            | FUnordGreaterThanEqual
            | ShiftLeftLogical
            | ShiftRightLogical
            | ShiftRightArithmetic
            | BitwiseAnd
            | BitwiseOr
            | BitwiseXor
            | Not
            | AccessChain
            | InBoundsAccessChain
            | CopyObject
    )
}

/// The id of the module's `GLSL.std.450` instruction set, if it imports it.
pub(crate) fn glsl_set(m: &Module) -> Option<Word> {
    m.ext_inst_imports
        .iter()
        .find(|i| matches!(i.operands.first(), Some(Operand::LiteralString(s)) if s == "GLSL.std.450"))
        .and_then(|i| i.result_id)
}

/// A `GLSL.std.450` instruction: a function of its operands, except `Modf`
/// (35) and `Frexp` (51), which also write through a pointer.
pub(crate) fn pure_ext(i: &Instruction, glsl: Option<Word>) -> bool {
    i.class.opcode == Op::ExtInst
        && glsl.is_some_and(|set| i.operands.first() == Some(&Operand::IdRef(set)))
        && matches!(i.operands.get(1), Some(Operand::LiteralExtInstInteger(n)) if *n != 35 && *n != 51)
}

/// Global variables whose memory a shader cannot write: inputs, push
/// constants, uniform blocks (not `BufferBlock` storage).
fn read_only_globals(m: &Module) -> HashSet<Word> {
    let buffer_blocks: HashSet<Word> = m
        .annotations
        .iter()
        .filter(|a| {
            a.class.opcode == Op::Decorate && a.operands.get(1) == Some(&Operand::Decoration(Decoration::BufferBlock))
        })
        .filter_map(|a| match a.operands.first() {
            Some(Operand::IdRef(id)) => Some(*id),
            _ => None,
        })
        .collect();
    let pointee: HashMap<Word, Word> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::TypePointer)
        .filter_map(|i| match (i.result_id, i.operands.get(1)) {
            (Some(p), Some(Operand::IdRef(t))) => Some((p, *t)),
            _ => None,
        })
        .collect();
    m.types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable)
        .filter(|i| match i.operands.first() {
            Some(Operand::StorageClass(StorageClass::Input | StorageClass::PushConstant)) => true,
            Some(Operand::StorageClass(StorageClass::Uniform)) => {
                i.result_type.and_then(|t| pointee.get(&t)).is_some_and(|t| !buffer_blocks.contains(t))
            }
            _ => false,
        })
        .filter_map(|i| i.result_id)
        .collect()
}

/// The instruction's value-numbering key, if it has one.
fn key(
    i: &Instruction,
    read_only: &HashSet<Word>,
    chains: &HashMap<Word, Word>,
    glsl: Option<Word>,
) -> Option<(Op, Word, Vec<Operand>)> {
    let op = i.class.opcode;
    let ty = i.result_type?;
    i.result_id?;
    let numbered = pure(op)
        || pure_ext(i, glsl)
        || (op == Op::Load && i.operands.len() == 1 && {
            // A load from read-only memory: the variable itself or a chain into it.
            match i.operands.first() {
                Some(Operand::IdRef(p)) => {
                    read_only.contains(p) || chains.get(p).is_some_and(|r| read_only.contains(r))
                }
                _ => false,
            }
        });
    numbered.then(|| (op, ty, i.operands.clone()))
}

/// Equal expressions, one id. Returns the instructions removed.
fn number_values(m: &mut Module) -> usize {
    let decorated = decorated(m);
    let read_only = read_only_globals(m);
    let glsl = glsl_set(m);
    let mut map: HashMap<Word, Word> = HashMap::new();
    let mut drop: HashSet<(usize, usize, usize)> = HashSet::new();
    for (fi, f) in m.functions.iter().enumerate() {
        // Access chains by result, to their root variable (chains of chains
        // resolve through the map as they are met, in order).
        let mut chains: HashMap<Word, Word> = HashMap::new();
        let mut first_block: HashMap<(Op, Word, Vec<Operand>), Word> = HashMap::new();
        for (bi, b) in f.blocks.iter().enumerate() {
            let mut seen = if bi == 0 { HashMap::new() } else { first_block.clone() };
            for (ii, i) in b.instructions.iter().enumerate() {
                if matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain) {
                    if let (Some(r), Some(Operand::IdRef(base))) = (i.result_id, i.operands.first()) {
                        let root = chains.get(base).copied().unwrap_or(*base);
                        chains.insert(r, root);
                    }
                }
                let Some(r) = i.result_id else { continue };
                if decorated.contains(&r) {
                    continue;
                }
                if i.class.opcode == Op::CopyObject {
                    if let Some(Operand::IdRef(v)) = i.operands.first() {
                        map.insert(r, *v);
                        drop.insert((fi, bi, ii));
                    }
                    continue;
                }
                let Some(mut k) = key(i, &read_only, &chains, glsl) else { continue };
                // Operands as already renumbered in this round.
                for o in &mut k.2 {
                    if let Operand::IdRef(id) = o {
                        if let Some(to) = map.get(id) {
                            *id = *to;
                        }
                    }
                }
                match seen.get(&k) {
                    Some(earlier) => {
                        map.insert(r, *earlier);
                        drop.insert((fi, bi, ii));
                    }
                    None => {
                        if bi == 0 {
                            first_block.insert(k.clone(), r);
                        }
                        seen.insert(k, r);
                    }
                }
            }
        }
    }
    let removed = drop.len();
    remove(m, &drop);
    apply(m, &map);
    removed
}
