//! The structural check every fallible pass runs before touching a module.
//!
//! The passes walk type graphs, constant trees and def-use chains of modules
//! that applications hand to the driver, valid or not. [`check`] refuses, with
//! a [`Malformed`] value, the shapes under which such a walk could go wrong: an
//! id used but never defined, defined twice or outside the id bound, and a
//! type, constant or global variable that refers to itself or to a later
//! declaration (SPIR-V's logical layout asks for declaration before use,
//! `OpTypeForwardPointer` aside). Past it, every type and constant graph is
//! acyclic; the walks themselves are iterative or bounded by [`MAX_DEPTH`]
//! anyway.

use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Op, Word};
use std::collections::{HashMap, HashSet};

/// How deep a type or constant may nest before a walk gives up with
/// [`Malformed::TooDeep`] (SPIR-V's own limit on struct nesting is 255; no
/// interface or uniform type of a real shader comes near 64).
pub const MAX_DEPTH: usize = 64;

/// Ids a pass may allocate past the module's bound: a bound closer than this
/// to `u32::MAX` would overflow.
const BOUND_HEADROOM: Word = 1 << 20;

/// Why a module cannot be transformed at all. Every pass refuses such a
/// module (the layer then passes it down unchanged, with a warning).
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum Malformed {
    #[error("the module has no header")]
    NoHeader,
    #[error("the module's id bound {0} leaves no room for new ids")]
    Bound(Word),
    #[error("id {id} is outside the module's id range 1..{bound}")]
    OutOfBound { id: Word, bound: Word },
    #[error("id {0} is defined more than once")]
    Redefined(Word),
    #[error("id {0} is used but never defined")]
    Undefined(Word),
    #[error("the declaration of id {0} refers to itself or to a later declaration")]
    ForwardReference(Word),
    #[error("the definition of id {0} nests more than {MAX_DEPTH} levels deep")]
    TooDeep(Word),
    #[error("the definition of id {0} refers to itself")]
    Cyclic(Word),
    #[error("id {0} is not the kind of definition its use needs")]
    Unexpected(Word),
}

/// Ids an instruction reads: its result type and its id operands.
fn referenced(i: &Instruction) -> impl Iterator<Item = Word> + '_ {
    i.result_type.into_iter().chain(i.operands.iter().filter_map(|o| match o {
        Operand::IdRef(id) | Operand::IdScope(id) | Operand::IdMemorySemantics(id) => Some(*id),
        _ => None,
    }))
}

/// Whether the global instruction is a declaration that must come after
/// everything it refers to.
fn declares(op: Op) -> bool {
    (op.is_type() && op != Op::TypeForwardPointer) || op.is_constant() || matches!(op, Op::Variable | Op::Undef)
}

/// Checks the module's ids (see the module documentation).
pub fn check(m: &Module) -> Result<(), Malformed> {
    let bound = m.header.as_ref().ok_or(Malformed::NoHeader)?.bound;
    if bound > Word::MAX - BOUND_HEADROOM {
        return Err(Malformed::Bound(bound));
    }
    // Every definition, with the position in the global section of those made there.
    let mut defined: HashSet<Word> = HashSet::new();
    let mut global_position: HashMap<Word, usize> = HashMap::new();
    for i in m.all_inst_iter() {
        if let Some(id) = i.result_id {
            if id == 0 || id >= bound {
                return Err(Malformed::OutOfBound { id, bound });
            }
            if !defined.insert(id) {
                return Err(Malformed::Redefined(id));
            }
        }
    }
    for (n, i) in m.types_global_values.iter().enumerate() {
        if let Some(id) = i.result_id {
            global_position.insert(id, n);
        }
    }
    let forward_pointers: HashSet<Word> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::TypeForwardPointer)
        .filter_map(|i| match i.operands.first() {
            Some(Operand::IdRef(p)) => Some(*p),
            _ => None,
        })
        .collect();
    for (n, i) in m.types_global_values.iter().enumerate() {
        if !declares(i.class.opcode) {
            continue;
        }
        for id in referenced(i) {
            let later = global_position.get(&id).is_some_and(|p| *p >= n);
            if later && !forward_pointers.contains(&id) {
                return Err(Malformed::ForwardReference(i.result_id.unwrap_or(id)));
            }
        }
    }
    // Names may name anything; everything else must refer to definitions.
    let named = |i: &&Instruction| !matches!(i.class.opcode, Op::Name | Op::MemberName);
    for i in m.all_inst_iter().filter(named) {
        if let Some(id) = referenced(i).find(|id| !defined.contains(id)) {
            return Err(Malformed::Undefined(id));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rspirv::dr::Instruction;
    use rspirv::spirv::Op;

    fn module(globals: Vec<Instruction>) -> Module {
        let mut m = Module::new();
        m.header = Some(rspirv::dr::ModuleHeader::new(100));
        m.types_global_values = globals;
        m
    }

    fn ty(op: Op, id: Word, operands: Vec<Operand>) -> Instruction {
        Instruction::new(op, None, Some(id), operands)
    }

    #[test]
    fn declarations_in_order_pass() {
        let float = ty(Op::TypeFloat, 1, vec![Operand::LiteralBit32(32)]);
        let vec4 = ty(Op::TypeVector, 2, vec![Operand::IdRef(1), Operand::LiteralBit32(4)]);
        assert_eq!(check(&module(vec![float, vec4])), Ok(()));
    }

    #[test]
    fn self_reference_undefined_ids_and_bounds_are_refused() {
        let cyclic = ty(Op::TypeVector, 2, vec![Operand::IdRef(2), Operand::LiteralBit32(4)]);
        assert_eq!(check(&module(vec![cyclic])), Err(Malformed::ForwardReference(2)));
        let dangling = ty(Op::TypeVector, 2, vec![Operand::IdRef(7), Operand::LiteralBit32(4)]);
        assert_eq!(check(&module(vec![dangling])), Err(Malformed::Undefined(7)));
        let float = ty(Op::TypeFloat, 1, vec![Operand::LiteralBit32(32)]);
        let again = ty(Op::TypeFloat, 1, vec![Operand::LiteralBit32(16)]);
        assert_eq!(check(&module(vec![float.clone(), again])), Err(Malformed::Redefined(1)));
        let high = ty(Op::TypeFloat, 100, vec![Operand::LiteralBit32(32)]);
        assert_eq!(check(&module(vec![high])), Err(Malformed::OutOfBound { id: 100, bound: 100 }));
        let mut m = module(vec![float]);
        m.header = None;
        assert_eq!(check(&m), Err(Malformed::NoHeader));
    }

    #[test]
    fn forward_pointers_may_be_used_before_their_declaration() {
        use rspirv::spirv::StorageClass;
        let sc = Operand::StorageClass(StorageClass::PhysicalStorageBuffer);
        let fwd = Instruction::new(Op::TypeForwardPointer, None, None, vec![Operand::IdRef(3), sc.clone()]);
        let s = ty(Op::TypeStruct, 2, vec![Operand::IdRef(3)]);
        let p = ty(Op::TypePointer, 3, vec![sc, Operand::IdRef(2)]);
        assert_eq!(check(&module(vec![fwd, s, p])), Ok(()));
    }
}
