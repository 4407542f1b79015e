//! Links the functions of a small library module (compiled from GLSL at
//! generation time, see `crate::ordered`) into an application's module.
//!
//! The library's global declarations are copied in its order (SPIR-V
//! declares before use): scalar, vector, matrix, function and pointer types
//! and constants are shared with identical declarations of the module (SPIR-V
//! forbids two identical non-aggregate types); structures, arrays and
//! variables are always fresh, with the library's decorations (the
//! descriptor set patched to the caller's), so that layouts never mix with
//! the application's own types. Every function but the library's entry
//! point is copied with fresh ids. Input and output variables (the entry
//! point's) are left behind. Names come along, for dumps.
//!
//! The caller checks that the memory models agree (it picks the library
//! compiled for the module's model) and that the module's SPIR-V version is
//! at least the library's.

use crate::ir;
use rspirv::dr::{Function, Instruction, Module, Operand};
use rspirv::spirv::{Decoration, Op, StorageClass, Word};
use std::collections::HashMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LinkError {
    #[error("the library declares {0:?}, which linking does not copy")]
    Declaration(Op),
    #[error("the library refers to id {0} before declaring it")]
    Undeclared(Word),
    #[error("the module's SPIR-V version is older than the library's")]
    Version,
}

/// What was linked: the module's ids of the library's named functions and
/// global variables (by their name, a function's up to its `(`).
#[derive(Debug, Default)]
pub struct Linked {
    pub functions: HashMap<String, Word>,
    pub globals: HashMap<String, Word>,
}

fn remap(map: &HashMap<Word, Word>, o: &Operand) -> Result<Operand, LinkError> {
    Ok(match o {
        Operand::IdRef(x) => Operand::IdRef(*map.get(x).ok_or(LinkError::Undeclared(*x))?),
        Operand::IdScope(x) => Operand::IdScope(*map.get(x).ok_or(LinkError::Undeclared(*x))?),
        Operand::IdMemorySemantics(x) => Operand::IdMemorySemantics(*map.get(x).ok_or(LinkError::Undeclared(*x))?),
        other => other.clone(),
    })
}

fn remap_all(map: &HashMap<Word, Word>, ops: &[Operand]) -> Result<Vec<Operand>, LinkError> {
    ops.iter().map(|o| remap(map, o)).collect()
}

/// The capabilities, extensions and extended-instruction imports `lib`
/// needs, added to `m` where it lacks them (the caller picked a library
/// whose memory model is the module's, so these are few); `map` gets the
/// imports' ids in `m`.
fn merge_preamble(m: &mut Module, lib: &Module, map: &mut HashMap<Word, Word>) {
    for c in &lib.capabilities {
        if !m.capabilities.iter().any(|x| x.operands == c.operands) {
            m.capabilities.push(c.clone());
        }
    }
    for e in &lib.extensions {
        if !m.extensions.iter().any(|x| x.operands == e.operands) {
            m.extensions.push(e.clone());
        }
    }
    for imp in &lib.ext_inst_imports {
        let Some(id) = imp.result_id else { continue };
        let found = m.ext_inst_imports.iter().find(|x| x.operands == imp.operands).and_then(|x| x.result_id);
        let new = match found {
            Some(x) => x,
            None => {
                let x = ir::fresh(m);
                m.ext_inst_imports.push(Instruction::new(Op::ExtInstImport, None, Some(x), imp.operands.clone()));
                x
            }
        };
        map.insert(id, new);
    }
}

/// Links `lib` into `m`; `set` replaces the library's descriptor sets.
pub fn link(m: &mut Module, lib: &Module, set: u32) -> Result<Linked, LinkError> {
    let version = |m: &Module| m.header.as_ref().map(|h| h.version).unwrap_or(0x0001_0000);
    if version(m) < version(lib) {
        return Err(LinkError::Version);
    }
    let mut map: HashMap<Word, Word> = HashMap::new();
    merge_preamble(m, lib, &mut map);
    // Fresh ids: those decorations and names may follow.
    let mut fresh_ids: HashMap<Word, Word> = HashMap::new();
    let mut new_vars = Vec::new();
    for i in &lib.types_global_values {
        let Some(id) = i.result_id else { continue };
        let ty = match i.result_type {
            Some(t) => Some(*map.get(&t).ok_or(LinkError::Undeclared(t))?),
            None => None,
        };
        let new = match i.class.opcode {
            Op::TypeVoid
            | Op::TypeBool
            | Op::TypeInt
            | Op::TypeFloat
            | Op::TypeVector
            | Op::TypeMatrix
            | Op::TypeFunction
            | Op::TypePointer
            | Op::Constant
            | Op::ConstantTrue
            | Op::ConstantFalse
            | Op::ConstantNull
            | Op::ConstantComposite
            | Op::Undef => {
                let ops = remap_all(&map, &i.operands)?;
                ir::find_or_add(m, i.class.opcode, ty, ops)
            }
            Op::TypeStruct | Op::TypeArray | Op::TypeRuntimeArray => {
                let ops = remap_all(&map, &i.operands)?;
                let x = ir::fresh(m);
                m.types_global_values.push(Instruction::new(i.class.opcode, None, Some(x), ops));
                fresh_ids.insert(id, x);
                x
            }
            Op::Variable => {
                let class = match i.operands.first() {
                    Some(Operand::StorageClass(c)) => *c,
                    _ => return Err(LinkError::Declaration(Op::Variable)),
                };
                if matches!(class, StorageClass::Input | StorageClass::Output) {
                    continue; // the library's entry point's
                }
                let ops = remap_all(&map, &i.operands)?;
                let x = ir::fresh(m);
                m.types_global_values.push(Instruction::new(Op::Variable, ty, Some(x), ops));
                fresh_ids.insert(id, x);
                new_vars.push(x);
                x
            }
            other => return Err(LinkError::Declaration(other)),
        };
        map.insert(id, new);
    }
    for a in &lib.annotations {
        let Some(Operand::IdRef(target)) = a.operands.first() else { continue };
        let Some(&new) = fresh_ids.get(target) else { continue };
        if !matches!(a.class.opcode, Op::Decorate | Op::MemberDecorate) {
            return Err(LinkError::Declaration(a.class.opcode));
        }
        let mut ops = a.operands.clone();
        ops[0] = Operand::IdRef(new);
        if a.class.opcode == Op::Decorate && ops.get(1) == Some(&Operand::Decoration(Decoration::DescriptorSet)) {
            ops[2] = Operand::LiteralBit32(set);
        }
        m.annotations.push(Instruction::new(a.class.opcode, None, None, ops));
    }
    let entry_fns = ir::entry_functions(lib, None);
    let mut names: HashMap<Word, String> = HashMap::new();
    for n in &lib.debug_names {
        if let (Op::Name, Some(Operand::IdRef(t)), Some(Operand::LiteralString(s))) =
            (n.class.opcode, n.operands.first(), n.operands.get(1))
        {
            names.insert(*t, s.clone());
        }
    }
    let mut out = Linked::default();
    // Functions: their ids first (calls may precede definitions).
    let mut functions = Vec::new();
    for f in &lib.functions {
        let Some(def) = &f.def else { continue };
        let Some(fid) = def.result_id else { continue };
        if entry_fns.contains(&fid) {
            continue;
        }
        let x = ir::fresh(m);
        map.insert(fid, x);
        if let Some(n) = names.get(&fid) {
            let short = n.split('(').next().unwrap_or(n).to_string();
            out.functions.insert(short, x);
        }
        functions.push(f);
    }
    for (old, new) in &fresh_ids {
        if let Some(n) = names.get(old) {
            out.globals.insert(n.clone(), *new);
            m.debug_names.push(Instruction::new(
                Op::Name,
                None,
                None,
                vec![Operand::IdRef(*new), Operand::LiteralString(n.clone())],
            ));
        }
    }
    for (name, id) in &out.functions {
        m.debug_names.push(Instruction::new(
            Op::Name,
            None,
            None,
            vec![Operand::IdRef(*id), Operand::LiteralString(name.clone())],
        ));
    }
    for f in functions {
        let copy = copy_function(m, &map, f)?;
        m.functions.push(copy);
    }
    for v in new_vars {
        ir::add_to_interface(m, v);
    }
    Ok(out)
}

/// A copy of `f` with fresh ids for everything it defines.
fn copy_function(m: &mut Module, globals: &HashMap<Word, Word>, f: &Function) -> Result<Function, LinkError> {
    let mut map = globals.clone();
    // SPIR-V ids are unique in a module: a function's own never collide with globals.
    let define = |m: &mut Module, map: &mut HashMap<Word, Word>, id: Option<Word>| {
        if let Some(id) = id {
            let x = ir::fresh(m);
            map.insert(id, x);
        }
    };
    // Every local result id (parameters, labels, results) gets a fresh one
    // first: phis and branches refer forward.
    for p in &f.parameters {
        define(m, &mut map, p.result_id);
    }
    for b in &f.blocks {
        define(m, &mut map, b.label.as_ref().and_then(|l| l.result_id));
        for i in &b.instructions {
            define(m, &mut map, i.result_id);
        }
    }
    let tr = |map: &HashMap<Word, Word>, i: &Instruction| -> Result<Instruction, LinkError> {
        let ty = match i.result_type {
            Some(t) => Some(*map.get(&t).ok_or(LinkError::Undeclared(t))?),
            None => None,
        };
        let id = match i.result_id {
            Some(r) => Some(*map.get(&r).ok_or(LinkError::Undeclared(r))?),
            None => None,
        };
        Ok(Instruction::new(i.class.opcode, ty, id, remap_all(map, &i.operands)?))
    };
    let mut out = Function::new();
    out.def = match &f.def {
        Some(d) => Some(tr(&map, d)?),
        None => None,
    };
    out.end = f.end.clone();
    for p in &f.parameters {
        out.parameters.push(tr(&map, p)?);
    }
    for b in &f.blocks {
        let mut nb = rspirv::dr::Block::new();
        nb.label = match &b.label {
            Some(l) => Some(tr(&map, l)?),
            None => None,
        };
        for i in &b.instructions {
            if matches!(i.class.opcode, Op::Line | Op::NoLine) {
                continue;
            }
            nb.instructions.push(tr(&map, i)?);
        }
        out.blocks.push(nb);
    }
    Ok(out)
}
