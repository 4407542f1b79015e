//! Stage-agnostic helpers over `rspirv`'s data representation, shared by
//! the passes ([`crate::fdm`], [`crate::spinlock`], [`crate::varyings`]):
//! definition, decoration and type lookups; entry points and their
//! interface lists; fresh ids and deduplicated type and constant
//! declarations; rewrites every pass needs (replacing uses, moving an
//! interface variable to the private storage class, prepending code to a
//! function, dropping names and decorations of removed ids); and copying
//! types and constants from one module into another.
//!
//! The helpers expect a module [`crate::check`] has accepted (a header with
//! room for new ids, no id defined twice, declarations before use). None of
//! them recurses: type graphs are walked with a stack of their own, every
//! other lookup is one level deep, and a missing or unexpected definition is
//! a `None` (or a [`Malformed`]), never a panic.

use crate::Malformed;
use rspirv::dr::{Block, Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Capability, Decoration, ExecutionModel, Op, StorageClass, Word};
use std::collections::{HashMap, HashSet};

/// Whether SPIR-V `words` declare one of `capabilities`: a scan of the
/// module's leading instructions (capabilities, extensions, extended
/// instruction imports, memory model), without parsing it, so that the
/// layer never parses a module a pass has nothing to do in.
pub(crate) fn declares_capability(words: &[u32], capabilities: &[Capability]) -> bool {
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let (count, op) = ((first >> 16) as usize, first & 0xffff);
        if count == 0 {
            return false;
        }
        match op {
            o if o == Op::Capability as u32 => {
                if words.get(at + 1).is_some_and(|c| capabilities.iter().any(|x| *x as u32 == *c)) {
                    return true;
                }
            }
            // Capabilities come first (SPIR-V 2.4, logical layout); these follow them.
            o if o == Op::Extension as u32 || o == Op::ExtInstImport as u32 || o == Op::MemoryModel as u32 => {}
            _ => return false,
        }
        at += count;
    }
    false
}

// Lookups.

/// The global instruction (type, constant, global variable) defining `id`.
pub(crate) fn def(m: &Module, id: Word) -> Option<&Instruction> {
    m.types_global_values.iter().find(|i| i.result_id == Some(id))
}

/// Whether globals `a` and `b` have the same result type.
pub(crate) fn def_type_eq(m: &Module, a: Word, b: Word) -> bool {
    let t = |id| m.types_global_values.iter().find(|i| i.result_id == Some(id)).and_then(|i| i.result_type);
    t(a) == t(b)
}

/// Whether `id` is a (non-specialization) constant.
pub(crate) fn is_constant(m: &Module, id: Word) -> bool {
    def(m, id).is_some_and(|i| {
        matches!(
            i.class.opcode,
            Op::Constant | Op::ConstantComposite | Op::ConstantTrue | Op::ConstantFalse | Op::ConstantNull
        )
    })
}

/// Every instruction of the module's function bodies, in order.
pub(crate) fn code(m: &Module) -> impl Iterator<Item = &Instruction> {
    m.functions.iter().flat_map(|f| &f.blocks).flat_map(|b| &b.instructions)
}

/// Every id an instruction reads through an `IdRef` operand (its result
/// type aside).
pub(crate) fn id_operands(i: &Instruction) -> impl Iterator<Item = Word> + '_ {
    i.operands.iter().filter_map(|o| match o {
        Operand::IdRef(id) => Some(*id),
        _ => None,
    })
}

/// Whether `id` is passed to a function call (as an argument, not as the
/// function called).
pub(crate) fn passed_to_function(m: &Module, id: Word) -> bool {
    code(m).any(|i| i.class.opcode == Op::FunctionCall && i.operands.iter().skip(1).any(|o| *o == Operand::IdRef(id)))
}

/// The `OpDecorate` instructions whose target is `id`.
pub(crate) fn decorations_of(m: &Module, id: Word) -> Vec<&Instruction> {
    m.annotations
        .iter()
        .filter(|a| a.class.opcode == Op::Decorate && a.operands.first() == Some(&Operand::IdRef(id)))
        .collect()
}

/// The literal of `id`'s decoration `dec` (`Location`, `Binding`, ...).
pub(crate) fn decoration_value(m: &Module, id: Word, dec: Decoration) -> Option<u32> {
    decorations_of(m, id).iter().find_map(|d| match (d.operands.get(1), d.operands.get(2)) {
        (Some(Operand::Decoration(x)), Some(Operand::LiteralBit32(v))) if *x == dec => Some(*v),
        _ => None,
    })
}

/// The pointee type of pointer type `ptr`.
pub(crate) fn pointee_of(m: &Module, ptr: Word) -> Option<Word> {
    match def(m, ptr)?.operands.get(1) {
        Some(Operand::IdRef(t)) => Some(*t),
        _ => None,
    }
}

/// The type a global variable holds.
pub(crate) fn var_type(m: &Module, var: Word) -> Option<Word> {
    pointee_of(m, def(m, var)?.result_type?)
}

/// The built-in `id` is decorated with.
pub(crate) fn builtin_of(m: &Module, id: Word) -> Option<BuiltIn> {
    m.annotations.iter().find_map(|a| match a.operands.as_slice() {
        [Operand::IdRef(t), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)]
            if *t == id && a.class.opcode == Op::Decorate =>
        {
            Some(*b)
        }
        _ => None,
    })
}

/// The first id decorated with `builtin` (not a block member; not
/// necessarily a variable in a malformed module).
pub(crate) fn builtin_target(m: &Module, builtin: BuiltIn) -> Option<Word> {
    m.annotations.iter().find_map(|a| match (a.class.opcode, a.operands.as_slice()) {
        (Op::Decorate, [Operand::IdRef(t), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)])
            if *b == builtin =>
        {
            Some(*t)
        }
        _ => None,
    })
}

/// The input variables decorated with `builtin`.
pub(crate) fn builtin_inputs(m: &Module, builtin: BuiltIn) -> Vec<Word> {
    m.types_global_values
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Input))
        })
        .filter_map(|i| i.result_id)
        .filter(|id| builtin_of(m, *id) == Some(builtin))
        .collect()
}

/// Where the function-body instruction defining `id` is: (function, block,
/// instruction).
pub(crate) fn find_inst(module: &Module, id: Word) -> Option<(usize, usize, usize)> {
    for (fi, f) in module.functions.iter().enumerate() {
        for (bi, b) in f.blocks.iter().enumerate() {
            if let Some(ii) = b.instructions.iter().position(|i| i.result_id == Some(id)) {
                return Some((fi, bi, ii));
            }
        }
    }
    None
}

/// Uses of `id` as an operand in function bodies.
pub(crate) fn use_count(m: &Module, id: Word) -> usize {
    code(m).map(|i| i.operands.iter().filter(|o| **o == Operand::IdRef(id)).count()).sum()
}

// Blocks.

/// A block's label (0, no id, for a block without one, which the loader
/// never makes).
pub(crate) fn label_of(b: &Block) -> Word {
    b.label.as_ref().and_then(|l| l.result_id).unwrap_or(0)
}

/// CFG successors and structured merge/continue targets of a block.
pub(crate) fn successors(b: &Block) -> Vec<Word> {
    let mut out = Vec::new();
    for i in &b.instructions {
        match i.class.opcode {
            Op::Branch | Op::BranchConditional | Op::Switch | Op::SelectionMerge | Op::LoopMerge => {
                for o in &i.operands {
                    if let Operand::IdRef(id) = o {
                        out.push(*id);
                    }
                }
            }
            _ => {}
        }
    }
    // BranchConditional's condition and Switch's selector are ids too, but not
    // labels; callers intersect with the function's labels.
    out
}

// Entry points and their interfaces.

/// The functions of the module's entry points of execution model `model`
/// (of every entry point for `None`).
pub(crate) fn entry_functions(m: &Module, model: Option<ExecutionModel>) -> Vec<Word> {
    m.entry_points
        .iter()
        .filter(|e| model.is_none_or(|x| e.operands.first() == Some(&Operand::ExecutionModel(x))))
        .filter_map(|e| match e.operands.get(1) {
            Some(Operand::IdRef(f)) => Some(*f),
            _ => None,
        })
        .collect()
}

/// Whether entry points list every global variable their functions use
/// (SPIR-V 1.4 and later) rather than only Input/Output ones.
pub(crate) fn lists_all_globals(m: &Module) -> bool {
    let version = m.header.as_ref().map(|h| h.version).unwrap_or(0x0001_0000);
    (version >> 8) & 0xffff >= 0x0104
}

/// Lists a new private or resource variable in every entry point's
/// interface where the SPIR-V version asks for it.
pub(crate) fn add_to_interface(m: &mut Module, id: Word) {
    if lists_all_globals(m) {
        for ep in &mut m.entry_points {
            ep.operands.push(Operand::IdRef(id));
        }
    }
}

/// Lists an input or output variable in every entry point's interface
/// (where it is not listed already), whatever the SPIR-V version.
/// A new global variable of pointer type `ptr_type` in `class`, listed in
/// every entry point's interface.
pub(crate) fn add_io_variable(m: &mut Module, ptr_type: Word, class: StorageClass) -> Word {
    let id = fresh(m);
    m.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(ptr_type),
        Some(id),
        vec![Operand::StorageClass(class)],
    ));
    add_io_to_interface(m, id);
    id
}

pub(crate) fn add_io_to_interface(m: &mut Module, id: Word) {
    for ep in &mut m.entry_points {
        if !ep.operands.iter().skip(3).any(|o| *o == Operand::IdRef(id)) {
            ep.operands.push(Operand::IdRef(id));
        }
    }
}

// Ids and declarations.

/// A new id: the module's bound, raised by one ([`crate::check`] makes sure
/// the module has a header and room for new ids).
pub(crate) fn fresh(m: &mut Module) -> Word {
    next_id(&mut m.header)
}

/// [`fresh`] on the header alone, while the functions are borrowed.
pub(crate) fn next_id(header: &mut Option<rspirv::dr::ModuleHeader>) -> Word {
    let h = header.get_or_insert_with(|| rspirv::dr::ModuleHeader::new(1));
    let id = h.bound;
    h.bound = h.bound.saturating_add(1);
    id
}

/// A global instruction (type or constant) `op` with these operands: an
/// identical declaration's id, or a new one appended to the global section.
pub(crate) fn find_or_add(m: &mut Module, op: Op, result_type: Option<Word>, operands: Vec<Operand>) -> Word {
    if let Some(id) = m
        .types_global_values
        .iter()
        .find(|i| i.class.opcode == op && i.result_type == result_type && i.operands == operands)
        .and_then(|i| i.result_id)
    {
        return id;
    }
    let id = fresh(m);
    m.types_global_values.push(Instruction::new(op, result_type, Some(id), operands));
    id
}

/// The pointer type to `pointee` in storage class `class`, declared if missing.
pub(crate) fn pointer_type(m: &mut Module, class: StorageClass, pointee: Word) -> Word {
    find_or_add(m, Op::TypePointer, None, vec![Operand::StorageClass(class), Operand::IdRef(pointee)])
}

/// The 32-bit constant of type `ty` whose bits are `bits`, declared if missing.
pub(crate) fn constant(m: &mut Module, ty: Word, bits: u32) -> Word {
    find_or_add(m, Op::Constant, Some(ty), vec![Operand::LiteralBit32(bits)])
}

/// Decorates `target` with `d` and its literal or id operands `extra`.
pub(crate) fn decorate(m: &mut Module, target: Word, d: Decoration, extra: Vec<Operand>) {
    let mut operands = vec![Operand::IdRef(target), Operand::Decoration(d)];
    operands.extend(extra);
    m.annotations.push(Instruction::new(Op::Decorate, None, None, operands));
}

/// Removes `id`'s decorations of the kinds in `which`.
pub(crate) fn remove_decorations(m: &mut Module, id: Word, which: &[Decoration]) {
    m.annotations.retain(|a| {
        !(a.operands.first() == Some(&Operand::IdRef(id))
            && matches!(a.operands.get(1), Some(Operand::Decoration(d)) if which.contains(d)))
    });
}

// Rewrites.

/// Replaces every use of `from` by `to` in function bodies.
pub(crate) fn replace_uses(m: &mut Module, from: Word, to: Word) {
    for f in &mut m.functions {
        for b in &mut f.blocks {
            for i in &mut b.instructions {
                for o in &mut i.operands {
                    if *o == Operand::IdRef(from) {
                        *o = Operand::IdRef(to);
                    }
                }
            }
        }
    }
}

/// Inserts `code` at the start of function `f` (after its variables);
/// false when the module has no such function with a body.
pub(crate) fn prepend_to_function(m: &mut Module, f: Word, code: Vec<Instruction>) -> bool {
    let Some(func) = m.functions.iter_mut().find(|fun| fun.def.as_ref().and_then(|d| d.result_id) == Some(f)) else {
        return false;
    };
    let Some(first) = func.blocks.first_mut() else { return false };
    let at = first.instructions.iter().take_while(|i| i.class.opcode == Op::Variable).count();
    first.instructions.splice(at..at, code);
    true
}

/// Turns an interface variable into a private one (optionally initialised),
/// dropping its interface decorations and its entry-point listing.
pub(crate) fn make_private(m: &mut Module, id: Word, init: Option<Word>) -> Result<(), Malformed> {
    let pointee = var_type(m, id).ok_or(Malformed::Unexpected(id))?;
    let ptr = pointer_type(m, StorageClass::Private, pointee);
    let pos = m.types_global_values.iter().position(|i| i.result_id == Some(id)).ok_or(Malformed::Undefined(id))?;
    let mut operands = vec![Operand::StorageClass(StorageClass::Private)];
    if let Some(c) = init {
        operands.push(Operand::IdRef(c));
    }
    let new = Instruction::new(Op::Variable, Some(ptr), Some(id), operands);
    m.types_global_values.remove(pos);
    // After its pointer type (and initialiser), which may have just been added.
    m.types_global_values.push(new);
    remove_decorations(
        m,
        id,
        &[
            Decoration::Location,
            Decoration::Component,
            Decoration::Flat,
            Decoration::NoPerspective,
            Decoration::Centroid,
            Decoration::Sample,
            // Valid on Input and Output variables only.
            Decoration::Invariant,
            Decoration::Patch,
            Decoration::Stream,
            Decoration::Index,
            Decoration::PerVertexKHR,
            Decoration::PerPrimitiveEXT,
            Decoration::PerViewNV,
            Decoration::PerTaskNV,
            Decoration::PassthroughNV,
            Decoration::ViewportRelativeNV,
            Decoration::SecondaryViewportRelativeNV,
        ],
    );
    retype_chains(m, id, StorageClass::Private);
    // From SPIR-V 1.4 every global a function uses is listed; before, only Input/Output.
    if !lists_all_globals(m) {
        for ep in &mut m.entry_points {
            ep.operands.retain(|o| *o != Operand::IdRef(id));
        }
    }
    Ok(())
}

/// Gives every access chain rooted at `root` (directly or through another
/// chain) a pointer type of storage class `class`, after `root` itself moved
/// to that class.
pub(crate) fn retype_chains(m: &mut Module, root: Word, class: StorageClass) {
    let mut roots: HashSet<Word> = HashSet::from([root]);
    let mut retype: Vec<(usize, usize, usize, Word)> = Vec::new();
    for (fi, f) in m.functions.iter().enumerate() {
        for (bi, b) in f.blocks.iter().enumerate() {
            for (ii, i) in b.instructions.iter().enumerate() {
                let chain = matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain | Op::CopyObject);
                if let (true, Some(Operand::IdRef(base)), Some(id), Some(ty)) =
                    (chain, i.operands.first(), i.result_id, i.result_type)
                {
                    if roots.contains(base) {
                        roots.insert(id);
                        retype.push((fi, bi, ii, ty));
                    }
                }
            }
        }
    }
    for (fi, bi, ii, old) in retype {
        let pointee = match def(m, old).and_then(|p| p.operands.get(1)) {
            Some(Operand::IdRef(t)) => *t,
            _ => continue,
        };
        let ptr = pointer_type(m, class, pointee);
        m.functions[fi].blocks[bi].instructions[ii].result_type = Some(ptr);
    }
}

/// Drops the names and decorations of ids no longer defined: instructions a
/// pass removed may have been named or decorated (`RelaxedPrecision` on
/// mediump arithmetic).
pub(crate) fn forget_removed(m: &mut Module) {
    let defined: HashSet<Word> = m.all_inst_iter().filter_map(|i| i.result_id).collect();
    let live = |o: Option<&Operand>| !matches!(o, Some(Operand::IdRef(id)) if !defined.contains(id));
    m.debug_names.retain(|n| live(n.operands.first()));
    m.annotations.retain(|a| match a.class.opcode {
        Op::GroupDecorate | Op::GroupMemberDecorate => true,
        _ => live(a.operands.first()),
    });
    for a in &mut m.annotations {
        match a.class.opcode {
            // (group, target...) and (group, (target, member)...).
            Op::GroupDecorate => a.operands.retain(|o| live(Some(o))),
            Op::GroupMemberDecorate => {
                let group = a.operands.first().cloned();
                let pairs: Vec<Operand> = a
                    .operands
                    .get(1..)
                    .unwrap_or_default()
                    .chunks(2)
                    .filter(|pair| live(pair.first()))
                    .flat_map(|pair| pair.iter().cloned())
                    .collect();
                a.operands = group.into_iter().chain(pairs).collect();
            }
            _ => {}
        }
    }
}

// Copying types and constants between modules.

/// Copies a scalar type from one module into another.
fn copy_scalar_type(from: &Module, to: &mut Module, ty: Word) -> Option<Word> {
    let t = def(from, ty)?;
    match t.class.opcode {
        Op::TypeFloat | Op::TypeInt | Op::TypeBool => Some(find_or_add(to, t.class.opcode, None, t.operands.clone())),
        _ => None,
    }
}

/// Copies a scalar or vector type from one module into another (a vector's
/// components are scalars: one level, never a walk).
pub(crate) fn copy_type(from: &Module, to: &mut Module, ty: Word) -> Option<Word> {
    let t = def(from, ty)?;
    match (t.class.opcode, t.operands.as_slice()) {
        (Op::TypeVector, [Operand::IdRef(c), n @ Operand::LiteralBit32(_)]) => {
            let n = n.clone();
            let c = copy_scalar_type(from, to, *c)?;
            Some(find_or_add(to, Op::TypeVector, None, vec![Operand::IdRef(c), n]))
        }
        _ => copy_scalar_type(from, to, ty),
    }
}

/// Copies a scalar constant of a scalar type.
fn copy_scalar_constant(from: &Module, to: &mut Module, c: Word) -> Option<Word> {
    let k = def(from, c)?;
    let ty = copy_scalar_type(from, to, k.result_type?)?;
    match k.class.opcode {
        Op::Constant | Op::ConstantTrue | Op::ConstantFalse | Op::ConstantNull => {
            Some(find_or_add(to, k.class.opcode, Some(ty), k.operands.clone()))
        }
        _ => None,
    }
}

/// Copies a scalar or vector constant (a composite of scalar constants: two
/// levels at most, never a walk).
pub(crate) fn copy_constant(from: &Module, to: &mut Module, c: Word) -> Option<Word> {
    let k = def(from, c)?;
    let ty = copy_type(from, to, k.result_type?)?;
    match k.class.opcode {
        Op::Constant | Op::ConstantTrue | Op::ConstantFalse | Op::ConstantNull => {
            Some(find_or_add(to, k.class.opcode, Some(ty), k.operands.clone()))
        }
        Op::ConstantComposite => {
            let mut parts = Vec::new();
            for o in &k.operands {
                let Operand::IdRef(p) = o else { return None };
                parts.push(Operand::IdRef(copy_scalar_constant(from, to, *p)?));
            }
            Some(find_or_add(to, Op::ConstantComposite, Some(ty), parts))
        }
        _ => None,
    }
}

/// Copies type `ty` from `from` into `to` with its decorations (block,
/// offsets, strides): a fresh copy, so layouts never mix with the
/// consumer's own types. The type graph is walked depth first with a stack
/// of its own; `None` for a type that cannot be copied (or a cyclic one,
/// which [`crate::check`] has already refused).
pub(crate) fn copy_type_deep(from: &Module, to: &mut Module, ty: Word, map: &mut HashMap<Word, Word>) -> Option<Word> {
    /// The types a composite type is made of (an array's length is a constant).
    fn parts(t: &Instruction) -> impl Iterator<Item = Word> + '_ {
        let composite =
            matches!(t.class.opcode, Op::TypeMatrix | Op::TypeArray | Op::TypeStruct | Op::TypeRuntimeArray);
        t.operands.iter().enumerate().filter_map(move |(k, o)| match o {
            Operand::IdRef(x) if composite && !(t.class.opcode == Op::TypeArray && k == 1) => Some(*x),
            _ => None,
        })
    }
    let root = ty;
    // Types whose parts are being copied: meeting one again is a cycle.
    let mut open: HashSet<Word> = HashSet::new();
    // (type, whether its parts have been copied)
    let mut stack: Vec<(Word, bool)> = vec![(root, false)];
    while let Some((ty, ready)) = stack.pop() {
        if map.contains_key(&ty) {
            continue;
        }
        let t = def(from, ty)?.clone();
        if !ready {
            if !open.insert(ty) {
                return None;
            }
            stack.push((ty, true));
            stack.extend(parts(&t).filter(|p| !map.contains_key(p)).map(|p| (p, false)));
            continue;
        }
        open.remove(&ty);
        let new = match t.class.opcode {
            Op::TypeFloat | Op::TypeInt | Op::TypeBool | Op::TypeVector => copy_type(from, to, ty)?,
            Op::TypeMatrix => {
                let (Some(Operand::IdRef(col)), Some(n)) = (t.operands.first(), t.operands.get(1)) else { return None };
                let c = *map.get(col)?;
                find_or_add(to, Op::TypeMatrix, None, vec![Operand::IdRef(c), n.clone()])
            }
            Op::TypeArray | Op::TypeStruct | Op::TypeRuntimeArray => {
                let mut ops = Vec::new();
                for (k, o) in t.operands.iter().enumerate() {
                    match o {
                        Operand::IdRef(x) if t.class.opcode == Op::TypeArray && k == 1 => {
                            ops.push(Operand::IdRef(copy_constant(from, to, *x)?))
                        }
                        Operand::IdRef(x) => ops.push(Operand::IdRef(*map.get(x)?)),
                        other => ops.push(other.clone()),
                    }
                }
                let id = fresh(to);
                to.types_global_values.push(Instruction::new(t.class.opcode, None, Some(id), ops));
                let decs: Vec<Instruction> = from
                    .annotations
                    .iter()
                    .filter(|a| {
                        matches!(a.class.opcode, Op::Decorate | Op::MemberDecorate)
                            && a.operands.first() == Some(&Operand::IdRef(ty))
                    })
                    .cloned()
                    .collect();
                for mut d in decs {
                    d.operands[0] = Operand::IdRef(id);
                    to.annotations.push(d);
                }
                id
            }
            _ => return None,
        };
        map.insert(ty, new);
    }
    map.get(&root).copied()
}

/// How many locations a value of type `ty` occupies (nesting past 16 levels
/// counts as one: a bound, not a walk as deep as the input).
fn span(m: &Module, ty: Word, depth: u32) -> u32 {
    let Some(t) = def(m, ty) else { return 1 };
    if depth > 16 {
        return 1;
    }
    let literal = |i: usize| match t.operands.get(i) {
        Some(Operand::LiteralBit32(n)) => *n,
        _ => 1,
    };
    let id = |i: usize| match t.operands.get(i) {
        Some(Operand::IdRef(x)) => Some(*x),
        _ => None,
    };
    match t.class.opcode {
        Op::TypeVector => {
            let wide =
                id(0).and_then(|c| def(m, c)).is_some_and(|c| c.operands.first() == Some(&Operand::LiteralBit32(64)));
            if wide && literal(1) > 2 {
                2
            } else {
                1
            }
        }
        Op::TypeMatrix => literal(1).saturating_mul(id(0).map_or(1, |c| span(m, c, depth + 1))),
        Op::TypeArray => {
            let len = id(1).and_then(|c| def(m, c)).and_then(|c| match c.operands.first() {
                Some(Operand::LiteralBit32(n)) => Some(*n),
                _ => None,
            });
            len.unwrap_or(1).saturating_mul(id(0).map_or(1, |e| span(m, e, depth + 1)))
        }
        Op::TypeStruct => t
            .operands
            .iter()
            .filter_map(|o| match o {
                Operand::IdRef(x) => Some(span(m, *x, depth + 1)),
                _ => None,
            })
            .fold(0u32, |a, b| a.saturating_add(b)),
        _ => 1,
    }
}

/// The highest location an `Input` (`Output`) variable or block member is
/// decorated with (the last one it spans).
pub(crate) fn max_location(m: &Module, class: StorageClass) -> Option<u32> {
    let vars: Vec<(Word, Word)> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable && i.operands.first() == Some(&Operand::StorageClass(class)))
        .filter_map(|i| Some((i.result_id?, pointee_of(m, i.result_type?)?)))
        .collect();
    let mut max = None;
    for (var, pointee) in vars {
        for a in &m.annotations {
            let loc = match (a.class.opcode, a.operands.as_slice()) {
                (
                    Op::Decorate,
                    [Operand::IdRef(t), Operand::Decoration(Decoration::Location), Operand::LiteralBit32(l)],
                ) if *t == var => Some(*l),
                (
                    Op::MemberDecorate,
                    [Operand::IdRef(t), Operand::LiteralBit32(_), Operand::Decoration(Decoration::Location), Operand::LiteralBit32(l)],
                ) if *t == pointee => Some(*l),
                _ => None,
            };
            // The last location the variable (or block member) spans.
            let ty = match a.operands.as_slice() {
                [Operand::IdRef(_), Operand::LiteralBit32(k), ..] if a.class.opcode == Op::MemberDecorate => {
                    match def(m, pointee).map(|t| (t.class.opcode, t.operands.get(*k as usize))) {
                        Some((Op::TypeStruct, Some(Operand::IdRef(member)))) => *member,
                        _ => pointee,
                    }
                }
                _ => pointee,
            };
            if let Some(l) = loc {
                let last = l.saturating_add(span(m, ty, 0).saturating_sub(1));
                max = Some(max.map_or(last, |x: u32| x.max(last)));
            }
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assemble_text;
    use crate::{assemble, parse, validate, TargetEnv};

    /// A fragment and a vertex entry point; the fragment one reads
    /// `FragCoord` and writes it to an output at location 0, component 0.
    const TWO_ENTRY_POINTS: &str = "
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint Fragment %frag \"frag\" %coord %out
               OpEntryPoint Vertex %vert \"vert\"
               OpExecutionMode %frag OriginUpperLeft
               OpDecorate %coord BuiltIn FragCoord
               OpDecorate %out Location 0
               OpDecorate %out Component 0
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
       %vec4 = OpTypeVector %float 4
     %in_ptr = OpTypePointer Input %vec4
    %out_ptr = OpTypePointer Output %vec4
      %coord = OpVariable %in_ptr Input
        %out = OpVariable %out_ptr Output
       %frag = OpFunction %void None %fn
         %f0 = OpLabel
          %c = OpLoad %vec4 %coord
               OpStore %out %c
               OpReturn
               OpFunctionEnd
       %vert = OpFunction %void None %fn
         %v0 = OpLabel
               OpReturn
               OpFunctionEnd
";

    fn module() -> Module {
        let words = assemble_text(TWO_ENTRY_POINTS).unwrap();
        validate(&words, TargetEnv::Vulkan1_1).unwrap();
        let m = parse(&words).unwrap();
        crate::check(&m).unwrap();
        m
    }

    fn id_of(m: &Module, op: Op, pick: impl Fn(&Instruction) -> bool) -> Word {
        m.types_global_values.iter().find(|i| i.class.opcode == op && pick(i)).and_then(|i| i.result_id).unwrap()
    }

    #[test]
    fn capability_scan_stops_at_the_first_instruction_past_the_capabilities() {
        let words = assemble_text(TWO_ENTRY_POINTS).unwrap();
        assert!(declares_capability(&words, &[Capability::Shader]));
        assert!(!declares_capability(&words, &[Capability::FragmentDensityEXT]));
        assert!(!declares_capability(&words[..5], &[Capability::Shader]));
        assert!(!declares_capability(&[], &[Capability::Shader]));
        // A zero word count ends the scan instead of looping.
        let mut zero = words.clone();
        zero[5] = 0x0000_0011;
        assert!(!declares_capability(&zero, &[Capability::Shader]));
    }

    #[test]
    fn lookups() {
        let m = module();
        let coord = builtin_target(&m, BuiltIn::FragCoord).unwrap();
        assert_eq!(builtin_inputs(&m, BuiltIn::FragCoord), [coord]);
        assert_eq!(builtin_of(&m, coord), Some(BuiltIn::FragCoord));
        let vec4 = id_of(&m, Op::TypeVector, |_| true);
        assert_eq!(var_type(&m, coord), Some(vec4));
        let out = id_of(&m, Op::Variable, |i| i.operands == [Operand::StorageClass(StorageClass::Output)]);
        assert_eq!(decoration_value(&m, out, Decoration::Location), Some(0));
        assert_eq!(decorations_of(&m, out).len(), 2);
        assert!(def_type_eq(&m, coord, coord) && !def_type_eq(&m, coord, out));
        assert_eq!(use_count(&m, coord), 1);
        assert!(!passed_to_function(&m, coord));
        assert_eq!(entry_functions(&m, None).len(), 2);
        assert_eq!(entry_functions(&m, Some(ExecutionModel::Vertex)).len(), 1);
        assert!(!lists_all_globals(&m));
        assert_eq!(
            label_of(&m.functions[0].blocks[0]),
            m.functions[0].blocks[0].label.as_ref().unwrap().result_id.unwrap()
        );
    }

    #[test]
    fn declarations_are_deduplicated_and_ids_are_fresh() {
        let mut m = module();
        let bound = m.header.as_ref().unwrap().bound;
        let float = id_of(&m, Op::TypeFloat, |_| true);
        let existing =
            id_of(&m, Op::TypePointer, |i| i.operands.first() == Some(&Operand::StorageClass(StorageClass::Input)));
        let vec4 = id_of(&m, Op::TypeVector, |_| true);
        assert_eq!(pointer_type(&mut m, StorageClass::Input, vec4), existing);
        assert_eq!(m.header.as_ref().unwrap().bound, bound);
        let one = constant(&mut m, float, 1.0f32.to_bits());
        assert_eq!(one, bound);
        assert_eq!(constant(&mut m, float, 1.0f32.to_bits()), one);
        assert_eq!(fresh(&mut m), bound + 1);
        assert_eq!(m.header.as_ref().unwrap().bound, bound + 2);
    }

    #[test]
    fn an_output_made_private_loses_its_interface_decorations_and_listing() {
        let mut m = module();
        let out = id_of(&m, Op::Variable, |i| i.operands == [Operand::StorageClass(StorageClass::Output)]);
        make_private(&mut m, out, None).unwrap();
        assert!(decorations_of(&m, out).is_empty());
        assert!(m.entry_points.iter().all(|e| !e.operands.contains(&Operand::IdRef(out))));
        // Listing an input twice lists it once.
        let coord = builtin_target(&m, BuiltIn::FragCoord).unwrap();
        add_io_to_interface(&mut m, coord);
        let listed = |m: &Module| m.entry_points.iter().filter(|e| e.operands.contains(&Operand::IdRef(coord))).count();
        assert_eq!(listed(&m), 2);
        add_io_to_interface(&mut m, coord);
        assert_eq!(listed(&m), 2);
        remove_decorations(&mut m, coord, &[Decoration::Location]);
        assert_eq!(builtin_of(&m, coord), Some(BuiltIn::FragCoord));
        remove_decorations(&mut m, coord, &[Decoration::BuiltIn]);
        assert_eq!(builtin_of(&m, coord), None);
        assert!(make_private(&mut m, 0, None).is_err());
    }

    #[test]
    fn a_vector_constant_is_copied_with_its_types() {
        let mut from = module();
        let float = id_of(&from, Op::TypeFloat, |_| true);
        let vec4 = id_of(&from, Op::TypeVector, |_| true);
        let half = constant(&mut from, float, 0.5f32.to_bits());
        let c = find_or_add(&mut from, Op::ConstantComposite, Some(vec4), vec![Operand::IdRef(half); 4]);
        let mut to = module();
        let copied = copy_constant(&from, &mut to, c).unwrap();
        assert!(is_constant(&to, copied));
        assert_eq!(def(&to, copied).and_then(|k| k.result_type), Some(vec4));
        crate::check(&to).unwrap();
        validate(&assemble(&to), TargetEnv::Vulkan1_1).unwrap();
    }
}

/// Whether the module declares capability `c`.
pub(crate) fn has_capability(m: &Module, c: Capability) -> bool {
    m.capabilities.iter().any(|i| i.operands.first() == Some(&Operand::Capability(c)))
}

/// Declares capability `c` where the module does not.
pub(crate) fn add_capability(m: &mut Module, c: Capability) {
    if !has_capability(m, c) {
        m.capabilities.push(Instruction::new(Op::Capability, None, None, vec![Operand::Capability(c)]));
    }
}

/// Declares SPIR-V extension `name` where the module does not.
pub(crate) fn add_extension(m: &mut Module, name: &str) {
    if !m.extensions.iter().any(|e| matches!(e.operands.first(), Some(Operand::LiteralString(s)) if s == name)) {
        m.extensions.push(Instruction::new(Op::Extension, None, None, vec![Operand::LiteralString(name.into())]));
    }
}
