//! Linking the interface between two shader stages (producer → consumer),
//! after Mesa's `nir_opt_varyings` design (`nir-opt-varyings.md`), on SPIR-V.
//!
//! It works per interface *variable* (a location range), in this order,
//! after [`crate::values::canonicalize`] has given equal values one id in both
//! modules (local variables stored once, copies, equal expressions: what
//! unoptimized SPIR-V spells many ways):
//!
//! 1. **dead I/O** — producer outputs no consumer input reads become private
//!    variables (their stores stay, for the driver to drop); consumer inputs
//!    no producer output writes become private, undefined values. Built-ins and
//!    transform-feedback outputs are never touched.
//! 2. **constant and uniform propagation** — an output whose every store
//!    writes the same value is computed in the consumer, and the output dies:
//!    a scalar or vector constant initialises the input, now private; a
//!    cheap expression (at most `UNIFORM_COST` arithmetic instructions) of
//!    constants and loads from uniform buffer blocks or push constants that
//!    [`LinkEnv`] says the consumer can see (none for [`link`]) is copied to
//!    the start of the consumer, with its block types and descriptor
//!    bindings, and stored into the input (an interpolated input gets
//!    `x·0 + x`, so that infinities become NaNs as interpolation makes them).
//! 3. **deduplication** — two outputs always storing the same value, with the
//!    same type and interpolation decorations, become one: the consumer reads
//!    the first, the second dies.
//! 4. **code motion** (`full`) — a fragment-shader sum of two interpolated
//!    inputs, each read once and only by it, is computed in the producer and
//!    passed as one varying; then sums with and products by a constant of an
//!    interpolated input move to the producer, until none is left.
//! 5. **narrowing** — a vector output whose consumer reads only some
//!    components keeps only those, in order, on both sides (loads in the
//!    consumer are widened back with undefined unread components; stores in
//!    the producer keep the read ones).
//! 6. **compaction** — the survivors get consecutive locations, in order of
//!    their old ones, in both modules (overlapping ranges move together);
//!    single-location 32- and 16-bit scalars and vectors narrower than a
//!    vec4, alone at their location on both sides, share locations through
//!    `Component` decorations with others of the same scalar kind, width and
//!    interpolation (a 16-bit value takes a whole component, as Vulkan
//!    assigns them; the widths are not mixed in a location); at `full`,
//!    convergent ones (the same on every vertex of a primitive,
//!    [`convergent`]) with any group of their kind that has room — a vector
//!    with no room whole filling the holes of two groups, each part taking
//!    its group's interpolation —, the rest as flat.
//!
//! [`Level::Safe`] keeps every value bit-identical: it propagates only into
//! flat inputs and moves no code. [`Level::Full`] also propagates into
//! interpolated inputs and moves code (exact up to interpolation rounding).
//! Before all of these, arrays and matrices whose every use has a constant
//! element index are split into one varying per element ([`arrays`]).
//! Code motion (step 4) takes 32-bit floats only. Not done: uniform expressions of other instructions or sources (storage
//! buffers, images), code motion of other shapes; the report's notes say
//! which variables were left as they were and why.
//!
//! Outputs the producer reads back (GLSL `out` variables are read-write;
//! HLSL translators keep outputs in the output variables throughout) stay
//! variables with their loads in every step: dead removal, propagation and
//! deduplication make them private and keep their stores and initializers;
//! deduplication merges two outputs only where the same blocks store them
//! (one value id stored in a loop or under a condition is not one value);
//! code motion changes only the store of an output nothing else sees
//! ([`only_stored`]), and the removed output of a moved sum keeps its one
//! whole store; narrowing, splitting and convergent packing take only
//! outputs that are only written. Tested by evaluation (`varyings/readback.rs`).
//!
//! Both modules are checked first ([`crate::check`]); every walk over their
//! types, constants and expressions is iterative or bounded by
//! [`crate::MAX_DEPTH`], and an error leaves both modules as they were.

use crate::ir::{
    add_io_variable, add_to_interface, code, constant, copy_constant, copy_type_deep, decorate, decoration_value,
    decorations_of, def, def_type_eq, entry_functions, find_inst, find_or_add, forget_removed, fresh, is_constant,
    make_private, next_id, pointee_of, pointer_type, prepend_to_function, replace_uses, use_count, var_type,
};
use crate::{Malformed, MAX_DEPTH};
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Decoration, Op, StorageClass, Word};
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Only bit-identical transformations.
    Safe,
    /// Also those exact only up to interpolation rounding.
    Full,
}

/// What linking did, per side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub locations_before: usize,
    pub locations_after: usize,
    pub components_before: usize,
    pub components_after: usize,
    pub removed_dead: Vec<u32>,
    pub propagated_constants: Vec<u32>,
    /// Locations whose uniform / UBO / push-constant expression is now
    /// computed in the consumer.
    pub propagated_uniforms: Vec<u32>,
    pub deduplicated: Vec<(u32, u32)>,
    /// (location, components before, components after) of vectors narrowed
    /// to the components the consumer reads.
    pub narrowed: Vec<(u32, u32, u32)>,
    /// (kept location, removed location) of sums of two interpolated inputs
    /// now computed in the producer (`full`).
    pub moved_sums: Vec<(u32, u32)>,
    /// Locations of interpolated inputs whose sum with, or product by, a
    /// constant is now computed in the producer (`full`; once per operation).
    pub moved_constant_ops: Vec<u32>,
    /// Old location → new location.
    pub relocated: Vec<(u32, u32)>,
    /// Old location → (new location, component), for outputs packed into a
    /// location shared with others.
    pub packed: Vec<(u32, u32, u32)>,
    /// (old location, components in the first part, the second part's
    /// location) of vectors split across two locations (scalar granularity).
    pub split: Vec<(u32, u32, u32)>,
    /// (old location, whether it became flat) of convergent varyings (the
    /// same on every vertex of a primitive) packed with a group of another
    /// interpolation than their own (`full`; a vector split over two groups:
    /// once for each part in another group).
    pub convergent: Vec<(u32, bool)>,
    /// Locations of arrays and matrices split into one varying per element
    /// (column) on both sides.
    pub split_arrays: Vec<u32>,
    /// Consumer inputs whose values the consumer never uses (they reach no
    /// output, memory write or branch): removed with their outputs.
    pub unused_inputs: Vec<u32>,
    /// Tessellation control outputs the consumer does not read but the
    /// producer reads back: kept, placed after the others.
    pub read_back: Vec<u32>,
    /// Locations of varyings indexed indirectly: kept where they are.
    pub kept_in_place: Vec<u32>,
    /// Outputs the consumer does not read (transform feedback, read back):
    /// old location → new location, after all the others.
    pub placed_last: Vec<(u32, u32)>,
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LinkError {
    #[error("the {0} has no entry point")]
    NoEntryPoint(&'static str),
    #[error("the {0} is malformed: {1}")]
    Malformed(&'static str, Malformed),
    #[error("the {side}'s interface variable at location {location} reaches past location {MAX_LOCATIONS}")]
    Oversized { side: &'static str, location: u32 },
    #[error("the {0} has {1}")]
    Stage(&'static str, &'static str),
    #[error("a {0} stage cannot feed a {1} stage")]
    Order(&'static str, &'static str),
}

mod arrays;
mod convergent;
#[cfg(test)]
mod readback;
mod stages;
pub use stages::{link_stages, stage_of, PairReport, Stage};

/// Interface variables must end below this location (Vulkan devices offer at
/// most a few dozen); past it a module is refused rather than walked.
const MAX_LOCATIONS: u32 = 1 << 12;

fn in_producer(e: Malformed) -> LinkError {
    LinkError::Malformed("producer", e)
}

fn in_consumer(e: Malformed) -> LinkError {
    LinkError::Malformed("consumer", e)
}

/// One location-decorated interface variable.
#[derive(Clone, Debug)]
struct Var {
    id: Word,
    location: u32,
    locations: u32,
    components: u32,
    /// Interpolation-affecting decorations (Flat, NoPerspective, Centroid, Sample).
    interp: Vec<Decoration>,
    xfb: bool,
    /// The Component decoration, if any.
    component: Option<u32>,
    /// The scalar kind (float, int, uint) and component count of a 32-bit
    /// scalar or vector (of the element, for a per-vertex array).
    kind: Option<(Scalar, u32)>,
    /// An array over the vertices of a patch or primitive (`stages`): its
    /// footprint and kind are its element's.
    per_vertex: bool,
    /// Indexed with a non-constant slot index: it keeps its location.
    indirect: bool,
}

impl Var {
    /// The kind and component count of a variable that may share its
    /// location: narrower than a vec4, not captured by transform feedback,
    /// and not already placed at a component by the application.
    fn packable(&self) -> Option<(Scalar, u32)> {
        if self.component.is_some() || self.xfb || self.per_vertex || self.indirect {
            return None;
        }
        self.kind.filter(|(_, n)| *n < 4)
    }
}

/// The scalar kind of a packable varying. 16-bit ones are kinds of their
/// own: each still takes a whole 32-bit component of a location (Vulkan's
/// location and component rules do not pack them tighter), and the two
/// widths are not mixed in one location (the seed's 16-bit groups).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Scalar {
    Float,
    Int,
    Uint,
    Float16,
    Int16,
    Uint16,
}

impl Scalar {
    /// A floating-point kind (interpolation turns its infinities into NaNs).
    fn is_float(self) -> bool {
        matches!(self, Scalar::Float | Scalar::Float16)
    }
}

/// The 32- or 16-bit scalar kind and component count of a scalar or vector
/// type (a vector's components are scalars: one level, never a walk).
fn scalar_kind(m: &Module, ty: Word) -> Option<(Scalar, u32)> {
    let scalar = |t: &Instruction| match (t.class.opcode, t.operands.as_slice()) {
        (Op::TypeFloat, [Operand::LiteralBit32(32), ..]) => Some(Scalar::Float),
        (Op::TypeFloat, [Operand::LiteralBit32(16), ..]) => Some(Scalar::Float16),
        (Op::TypeInt, [Operand::LiteralBit32(w @ (16 | 32)), Operand::LiteralBit32(signed)]) => {
            Some(match (w, signed) {
                (32, 1) => Scalar::Int,
                (32, _) => Scalar::Uint,
                (_, 1) => Scalar::Int16,
                _ => Scalar::Uint16,
            })
        }
        _ => None,
    };
    let t = def(m, ty)?;
    match (t.class.opcode, t.operands.as_slice()) {
        (Op::TypeVector, [Operand::IdRef(c), Operand::LiteralBit32(n)]) => Some((scalar(def(m, *c)?)?, *n)),
        _ => Some((scalar(t)?, 1)),
    }
}

/// Why a footprint could not be computed.
enum Footprint {
    /// An array of structures (blocks): not walked.
    Structures,
    /// Arrays nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// More than [`MAX_LOCATIONS`] locations.
    Oversized,
}

/// (locations, scalar components) a type occupies: arrays (of arrays) of
/// scalars, vectors and matrices; anything else counts as one vec4. The
/// array chain is walked in a loop, at most [`MAX_DEPTH`] deep.
fn footprint(m: &Module, ty: Word) -> Result<(u32, u32), Footprint> {
    // Components of a vector (a matrix column); 4 for anything else.
    let width = |t: Option<&Instruction>| match t.map(|t| (t.class.opcode, t.operands.get(1))) {
        Some((Op::TypeVector, Some(Operand::LiteralBit32(n)))) => *n,
        _ => 4,
    };
    let mut elements: u32 = 1;
    let mut ty = ty;
    for _ in 0..MAX_DEPTH {
        let Some(t) = def(m, ty) else { break };
        let (l, c) = match t.class.opcode {
            Op::TypeFloat | Op::TypeInt | Op::TypeBool => (1, 1),
            Op::TypeVector => (1, width(Some(t))),
            Op::TypeMatrix => {
                let cols = match t.operands.get(1) {
                    Some(Operand::LiteralBit32(n)) => *n,
                    _ => 4,
                };
                let column = match t.operands.first() {
                    Some(Operand::IdRef(col)) => width(def(m, *col)),
                    _ => 4,
                };
                (cols, cols.saturating_mul(column))
            }
            Op::TypeStruct if elements > 1 => return Err(Footprint::Structures),
            Op::TypeArray => {
                let n = match t.operands.get(1) {
                    Some(Operand::IdRef(len)) => match def(m, *len).and_then(|c| c.operands.first()) {
                        Some(Operand::LiteralBit32(v)) => *v,
                        _ => 1,
                    },
                    _ => 1,
                };
                elements = elements.checked_mul(n).filter(|e| *e <= MAX_LOCATIONS).ok_or(Footprint::Oversized)?;
                match t.operands.first() {
                    Some(Operand::IdRef(e)) => {
                        ty = *e;
                        continue;
                    }
                    _ => (1, 4),
                }
            }
            _ => (1, 4),
        };
        let locations = l.checked_mul(elements).filter(|l| *l <= MAX_LOCATIONS).ok_or(Footprint::Oversized)?;
        return Ok((locations, c.saturating_mul(elements)));
    }
    if def(m, ty).is_none() {
        return Ok((elements, elements.saturating_mul(4)));
    }
    Err(Footprint::TooDeep)
}

/// The module's location-decorated variables of `class` (`side` names the
/// module in errors), non-patch ones arrays over vertices where the stage's
/// are.
fn interface(m: &Module, class: StorageClass, side: &'static str) -> Result<Vec<Var>, LinkError> {
    let stage = stage_of(m, side)?;
    let arrayed = match class {
        StorageClass::Input => stages::per_vertex_inputs(stage),
        _ => stages::per_vertex_outputs(stage),
    };
    let mut out = Vec::new();
    for v in &m.types_global_values {
        if v.class.opcode != Op::Variable || v.operands.first() != Some(&Operand::StorageClass(class)) {
            continue;
        }
        let Some(id) = v.result_id else { continue };
        let decs = decorations_of(m, id);
        let location = decs.iter().find_map(|d| match (d.operands.get(1), d.operands.get(2)) {
            (Some(Operand::Decoration(Decoration::Location)), Some(Operand::LiteralBit32(l))) => Some(*l),
            _ => None,
        });
        let Some(location) = location else {
            // Built-ins, and blocks whose members carry the locations: those
            // the linker does not place, so it links nothing around them.
            if stages::member_locations(m, v) {
                return Err(LinkError::Stage(side, "an interface block with locations on its members"));
            }
            continue;
        };
        let mut ty = v.result_type.and_then(|p| pointee_of(m, p)).unwrap_or(0);
        let patch = decs.iter().any(|d| d.operands.get(1) == Some(&Operand::Decoration(Decoration::Patch)));
        let per_vertex = arrayed && !patch;
        if per_vertex {
            // The element of the array over vertices.
            match def(m, ty).map(|t| (t.class.opcode, t.operands.first())) {
                Some((Op::TypeArray, Some(Operand::IdRef(e)))) => ty = *e,
                _ => return Err(LinkError::Malformed(side, Malformed::Unexpected(id))),
            }
        }
        let (locations, components) = match stages::block_footprint(m, ty, side)?.map_or_else(|| footprint(m, ty), Ok) {
            Ok(f) if location.checked_add(f.0).is_some_and(|end| end <= MAX_LOCATIONS) => f,
            Ok(_) | Err(Footprint::Oversized) => return Err(LinkError::Oversized { side, location }),
            Err(Footprint::TooDeep) => return Err(LinkError::Malformed(side, Malformed::TooDeep(ty))),
            Err(Footprint::Structures) => return Err(LinkError::Stage(side, "an array of interface blocks")),
        };
        let interp = decs
            .iter()
            .filter_map(|d| match d.operands.get(1) {
                Some(Operand::Decoration(
                    x @ (Decoration::Flat | Decoration::NoPerspective | Decoration::Centroid | Decoration::Sample),
                )) => Some(*x),
                _ => None,
            })
            .collect();
        // Captured by transform feedback: an `Offset` (front ends give every
        // output of a stage that captures any an `XfbBuffer`).
        let xfb = decs.iter().any(|d| matches!(d.operands.get(1), Some(Operand::Decoration(Decoration::Offset))));
        let component = decs.iter().find_map(|d| match (d.operands.get(1), d.operands.get(2)) {
            (Some(Operand::Decoration(Decoration::Component)), Some(Operand::LiteralBit32(c))) => Some(*c),
            _ => None,
        });
        let kind = scalar_kind(m, ty);
        let indirect = stages::indirectly_indexed(m, id, per_vertex);
        out.push(Var { id, location, locations, components, interp, xfb, component, kind, per_vertex, indirect });
    }
    out.sort_by_key(|v| v.location);
    Ok(out)
}

/// Whether any instruction of a function uses `id`.
fn referenced_in_code(m: &Module, id: Word) -> bool {
    m.functions
        .iter()
        .flat_map(|f| f.blocks.iter().flat_map(|b| b.instructions.iter()))
        .any(|i| i.operands.contains(&Operand::IdRef(id)))
}

/// Every value stored to `var` (None when it is written any other way:
/// through an access chain, a copy, or passed to a function). Loads of it
/// are allowed (the producer may read its output back): the passes that
/// use this keep the variable and its stores, so a load still reads what it
/// read. An initializer counts as a value stored.
fn stored_values(m: &Module, var: Word) -> Option<Vec<Word>> {
    Some(whole_stores(m, var)?.into_iter().map(|(_, v)| v).collect())
}

/// Where an initializer of a variable is "stored" in [`whole_stores`]: before
/// every block.
const INITIALIZER: (usize, usize) = (usize::MAX, usize::MAX);

/// The initializer of global variable `var`, if it has one.
fn initializer(m: &Module, var: Word) -> Option<Word> {
    match def(m, var)?.operands.get(1) {
        Some(Operand::IdRef(init)) => Some(*init),
        _ => None,
    }
}

/// Every whole store to `var`, as (function, block) and the value stored
/// (its initializer as one at [`INITIALIZER`]); None when `var` is written
/// or used any other way than by whole stores and whole loads (an access
/// chain, `OpCopyMemory`, `OpCopyObject`, a function call, a `OpPhi` or
/// `OpSelect` of pointers ...).
fn whole_stores(m: &Module, var: Word) -> Option<Vec<((usize, usize), Word)>> {
    let mut values: Vec<((usize, usize), Word)> = initializer(m, var).map(|i| (INITIALIZER, i)).into_iter().collect();
    if m.functions.iter().any(|f| f.parameters.iter().any(|p| p.result_id == Some(var))) {
        return None;
    }
    for (fi, f) in m.functions.iter().enumerate() {
        for (bi, b) in f.blocks.iter().enumerate() {
            for i in &b.instructions {
                if !i.operands.contains(&Operand::IdRef(var)) {
                    continue;
                }
                match (i.class.opcode, i.operands.as_slice()) {
                    (Op::Store, [Operand::IdRef(p), Operand::IdRef(v), ..]) if *p == var && *v != var => {
                        values.push(((fi, bi), *v))
                    }
                    (Op::Load, [Operand::IdRef(p), ..]) if *p == var => {}
                    _ => return None,
                }
            }
        }
    }
    Some(values)
}

/// Whether the producer's only uses of output `var` are whole `OpStore`s to
/// it (and it has no initializer): nothing reads it back, writes part of
/// it, copies it or passes it anywhere, so a pass may change what is stored
/// and where (code motion) without any other instruction seeing it.
fn only_stored(m: &Module, var: Word) -> bool {
    whole_stores(m, var).is_some_and(|s| s.iter().all(|(at, _)| *at != INITIALIZER))
        && !code(m).any(|i| i.class.opcode == Op::Load && i.operands.first() == Some(&Operand::IdRef(var)))
}

/// Makes producer output `var` private, keeping its initializer (a
/// producer that reads the variable back still reads it).
fn privatize_output(m: &mut Module, var: Word) -> Result<(), Malformed> {
    let init = initializer(m, var);
    make_private(m, var, init)
}

fn set_location(m: &mut Module, id: Word, location: u32) {
    for a in &mut m.annotations {
        if let [Operand::IdRef(t), Operand::Decoration(Decoration::Location), l, ..] = a.operands.as_mut_slice() {
            if *t == id {
                *l = Operand::LiteralBit32(location);
            }
        }
    }
}

fn usage(vars: &[Var]) -> (usize, usize) {
    let locations: HashSet<u32> = vars.iter().flat_map(|v| v.location..v.location + v.locations).collect();
    (locations.len(), vars.iter().map(|v| v.components as usize).sum())
}

/// The components of the `n`-wide vector input `var` that `m` reads, or
/// `None` when some use reads it whole or in a way the linker does not
/// follow.
fn components_read(m: &Module, var: Word, n: u32) -> Option<HashSet<u32>> {
    let insts: Vec<&Instruction> = code(m).collect();
    let uses = |id: Word| insts.iter().filter(move |i| i.operands.iter().any(|o| *o == Operand::IdRef(id))).copied();
    let const_index = |id: Word| match def(m, id).map(|c| (c.class.opcode, c.operands.first())) {
        Some((Op::Constant, Some(Operand::LiteralBit32(k)))) => Some(*k),
        _ => None,
    };
    let mut used = HashSet::new();
    for u in uses(var) {
        match u.class.opcode {
            Op::Load => {
                for w in uses(u.result_id?) {
                    match (w.class.opcode, w.operands.as_slice()) {
                        (Op::CompositeExtract, [Operand::IdRef(_), Operand::LiteralBit32(k)]) if *k < n => {
                            used.insert(*k);
                        }
                        (Op::VectorShuffle, [Operand::IdRef(a), Operand::IdRef(b), sel @ ..]) => {
                            let base_a = if *a == u.result_id? { Some(0) } else { None };
                            let base_b =
                                if *b == u.result_id? { Some(def_width(m, insts.as_slice(), *a)?) } else { None };
                            for s in sel {
                                let Operand::LiteralBit32(k) = s else { return None };
                                if let Some(0) = base_a {
                                    if *k < n {
                                        used.insert(*k);
                                    }
                                }
                                if let Some(c) = base_b.and_then(|off| k.checked_sub(off)).filter(|c| *c < n) {
                                    used.insert(c);
                                }
                            }
                        }
                        _ => return None,
                    }
                }
            }
            Op::AccessChain | Op::InBoundsAccessChain if u.operands.len() == 2 => {
                let Operand::IdRef(idx) = u.operands[1] else { return None };
                // (A constant index past the vector reads nothing defined: left alone.)
                used.insert(const_index(idx).filter(|k| *k < n)?);
            }
            Op::Name => {}
            _ => return None,
        }
    }
    Some(used)
}

/// The component count of the vector value `id` (a result in `insts`).
fn def_width(m: &Module, insts: &[&Instruction], id: Word) -> Option<u32> {
    let ty = insts.iter().find(|i| i.result_id == Some(id))?.result_type?;
    scalar_kind(m, ty).map(|(_, n)| n)
}

/// Whether the producer only writes `var` (whole stores, or stores through
/// constant-index access chains) and never reads it back (nor initializes
/// it: a retyped variable's initializer would no longer match).
fn narrowable_output(m: &Module, var: Word) -> bool {
    if initializer(m, var).is_some() {
        return false;
    }
    let insts: Vec<&Instruction> = code(m).collect();
    insts.iter().filter(|i| i.operands.iter().any(|o| *o == Operand::IdRef(var))).all(|u| match u.class.opcode {
        Op::Store => u.operands.first() == Some(&Operand::IdRef(var)),
        Op::AccessChain | Op::InBoundsAccessChain if u.operands.len() == 2 => {
            let Some(chain) = u.result_id else { return false };
            let constant = matches!(&u.operands[1], Operand::IdRef(i) if def(m, *i).is_some_and(|c| c.class.opcode == Op::Constant));
            constant
                && insts
                    .iter()
                    .filter(|i| i.operands.iter().any(|o| *o == Operand::IdRef(chain)))
                    .all(|i| i.class.opcode == Op::Store && i.operands.first() == Some(&Operand::IdRef(chain)))
        }
        Op::Name => true,
        _ => false,
    })
}

/// The scalar type of a vector type, and the `m`-wide type of the same
/// scalar (the scalar itself for 1).
fn narrowed_type(module: &mut Module, vec: Word, m: u32) -> (Word, Word) {
    let scalar = match def(module, vec).and_then(|t| t.operands.first()) {
        Some(Operand::IdRef(s)) => *s,
        _ => vec,
    };
    let ty = if m == 1 {
        scalar
    } else {
        find_or_add(module, Op::TypeVector, None, vec![Operand::IdRef(scalar), Operand::LiteralBit32(m)])
    };
    (scalar, ty)
}

/// Gives interface variable `var` the narrowed type; returns (old vector
/// type, scalar type, new type).
fn retype_var(module: &mut Module, var: Word, m: u32) -> Result<(Word, Word, Word), Malformed> {
    let ptr = def(module, var).and_then(|v| v.result_type).ok_or(Malformed::Unexpected(var))?;
    let (class, vec) = match def(module, ptr).map(|p| p.operands.as_slice()) {
        Some([c @ Operand::StorageClass(_), Operand::IdRef(t)]) => (c.clone(), *t),
        _ => return Err(Malformed::Unexpected(ptr)),
    };
    let (scalar, ty) = narrowed_type(module, vec, m);
    let new_ptr = find_or_add(module, Op::TypePointer, None, vec![class, Operand::IdRef(ty)]);
    // The variable after its (possibly new) pointer type.
    let pos =
        module.types_global_values.iter().position(|i| i.result_id == Some(var)).ok_or(Malformed::Undefined(var))?;
    let mut inst = module.types_global_values.remove(pos);
    inst.result_type = Some(new_ptr);
    module.types_global_values.push(inst);
    Ok((vec, scalar, ty))
}

/// A constant of the type of constant `like`, with `value`.
fn index_constant(module: &mut Module, like: Word, value: u32) -> Option<Word> {
    let ty = def(module, like)?.result_type?;
    Some(constant(module, ty, value))
}

/// Narrows consumer input `var` (an `n`-vector) to components `keep`:
/// whole loads are widened back (unread components undefined), component
/// access chains re-indexed.
fn narrow_input(module: &mut Module, var: Word, n: u32, keep: &[u32]) -> Result<(), Malformed> {
    let m = keep.len() as u32;
    let (vec, scalar, ty) = retype_var(module, var, m)?;
    let undef = find_or_add(module, Op::Undef, Some(scalar), vec![]);
    let pos_of = |k: u32| keep.iter().position(|x| *x == k).map(|p| p as u32);
    let mut chains: Vec<(Word, Word)> = Vec::new(); // (chain id, replacement pointer) when m == 1
    let mut const_fixes: Vec<Word> = Vec::new();
    for f in &mut module.functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for inst in b.instructions.drain(..) {
                match inst.class.opcode {
                    Op::Load if inst.operands.first() == Some(&Operand::IdRef(var)) => {
                        let narrow = next_id(&mut module.header);
                        out.push(Instruction::new(Op::Load, Some(ty), Some(narrow), vec![Operand::IdRef(var)]));
                        let widened = if m == 1 {
                            let parts = (0..n)
                                .map(|k| Operand::IdRef(if pos_of(k).is_some() { narrow } else { undef }))
                                .collect();
                            Instruction::new(Op::CompositeConstruct, Some(vec), inst.result_id, parts)
                        } else {
                            let mut ops = vec![Operand::IdRef(narrow), Operand::IdRef(narrow)];
                            ops.extend((0..n).map(|k| Operand::LiteralBit32(pos_of(k).unwrap_or(0xFFFF_FFFF))));
                            Instruction::new(Op::VectorShuffle, Some(vec), inst.result_id, ops)
                        };
                        out.push(widened);
                    }
                    Op::AccessChain | Op::InBoundsAccessChain
                        if inst.operands.first() == Some(&Operand::IdRef(var)) =>
                    {
                        let Some(chain) = inst.result_id else { continue };
                        if m == 1 {
                            chains.push((chain, var));
                        } else {
                            const_fixes.push(chain);
                            out.push(inst);
                        }
                    }
                    _ => out.push(inst),
                }
            }
            b.instructions = out;
        }
    }
    for (chain, ptr) in chains {
        replace_uses(module, chain, ptr);
    }
    fix_chain_indices(module, const_fixes, keep);
    Ok(())
}

/// Re-indexes the component access chains `chains` (their one index is a
/// constant old component) to the positions in `keep`.
fn fix_chain_indices(module: &mut Module, chains: Vec<Word>, keep: &[u32]) {
    for chain in chains {
        let Some((fi, bi, ii)) = find_inst(module, chain) else { continue };
        let Some(&Operand::IdRef(idx)) = module.functions[fi].blocks[bi].instructions[ii].operands.get(1) else {
            continue;
        };
        let old = match def(module, idx).and_then(|c| c.operands.first()) {
            Some(Operand::LiteralBit32(k)) => *k,
            _ => continue,
        };
        let Some(new) = keep.iter().position(|k| *k == old) else { continue };
        let Some(c) = index_constant(module, idx, new as u32) else { continue };
        module.functions[fi].blocks[bi].instructions[ii].operands[1] = Operand::IdRef(c);
    }
}

/// Narrows producer output `var` (an `n`-vector, only written) to the
/// components `keep`: whole stores keep those components; stores to a
/// dropped component go to a private variable nobody reads.
fn narrow_output(module: &mut Module, var: Word, keep: &[u32]) -> Result<(), Malformed> {
    let m = keep.len() as u32;
    let (_, scalar, ty) = retype_var(module, var, m)?;
    let sink_ptr = pointer_type(module, StorageClass::Private, scalar);
    let sink = fresh(module);
    module.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(sink_ptr),
        Some(sink),
        vec![Operand::StorageClass(StorageClass::Private)],
    ));
    add_to_interface(module, sink);
    let mut redirect: Vec<(Word, Word)> = Vec::new();
    let mut reindex: Vec<Word> = Vec::new();
    let mut dropped: Vec<Word> = Vec::new();
    for f in &mut module.functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for inst in b.instructions.drain(..) {
                match inst.class.opcode {
                    Op::Store if inst.operands.first() == Some(&Operand::IdRef(var)) => {
                        let (Some(&Operand::IdRef(value)), [first, ..]) = (inst.operands.get(1), keep) else {
                            out.push(inst);
                            continue;
                        };
                        let part = next_id(&mut module.header);
                        if m == 1 {
                            out.push(Instruction::new(
                                Op::CompositeExtract,
                                Some(ty),
                                Some(part),
                                vec![Operand::IdRef(value), Operand::LiteralBit32(*first)],
                            ));
                        } else {
                            let mut ops = vec![Operand::IdRef(value), Operand::IdRef(value)];
                            ops.extend(keep.iter().map(|k| Operand::LiteralBit32(*k)));
                            out.push(Instruction::new(Op::VectorShuffle, Some(ty), Some(part), ops));
                        }
                        out.push(Instruction::new(
                            Op::Store,
                            None,
                            None,
                            vec![Operand::IdRef(var), Operand::IdRef(part)],
                        ));
                    }
                    Op::AccessChain | Op::InBoundsAccessChain
                        if inst.operands.first() == Some(&Operand::IdRef(var)) =>
                    {
                        dropped.extend(inst.result_id);
                        out.push(inst);
                    }
                    _ => out.push(inst),
                }
            }
            b.instructions = out;
        }
    }
    for chain in dropped {
        let Some((fi, bi, ii)) = find_inst(module, chain) else { continue };
        let Some(&Operand::IdRef(idx)) = module.functions[fi].blocks[bi].instructions[ii].operands.get(1) else {
            continue;
        };
        let old = match def(module, idx).and_then(|c| c.operands.first()) {
            Some(Operand::LiteralBit32(k)) => *k,
            _ => continue,
        };
        match (keep.contains(&old), m) {
            (false, _) => redirect.push((chain, sink)),
            (true, 1) => redirect.push((chain, var)),
            (true, _) => reindex.push(chain),
        }
    }
    for (chain, ptr) in &redirect {
        if let Some((fi, bi, ii)) = find_inst(module, *chain) {
            module.functions[fi].blocks[bi].instructions.remove(ii);
        }
        replace_uses(module, *chain, *ptr);
    }
    fix_chain_indices(module, reindex, keep);
    Ok(())
}

/// Whether the consumer only reads `var` through plain loads of the whole
/// variable or of one component (an access chain with a constant index):
/// the uses a split into two variables can rewrite.
fn split_readable(m: &Module, var: Word) -> bool {
    let insts: Vec<&Instruction> = code(m).collect();
    let plain_loads_of = |id: Word| {
        insts
            .iter()
            .filter(|i| i.operands.contains(&Operand::IdRef(id)))
            .all(|i| i.class.opcode == Op::Load && i.operands.len() == 1)
    };
    insts.iter().filter(|i| i.operands.contains(&Operand::IdRef(var))).all(|u| match u.class.opcode {
        Op::Load => u.operands.len() == 1,
        Op::AccessChain | Op::InBoundsAccessChain if u.operands.len() == 2 => {
            let constant = matches!(&u.operands[1], Operand::IdRef(i) if def(m, *i).is_some_and(|c| c.class.opcode == Op::Constant));
            constant && u.result_id.is_some_and(plain_loads_of)
        }
        _ => false,
    })
}

/// Splits interface variable `var` (an `n`-vector, at most written — see
/// [`narrowable_output`] — or read as [`split_readable`] says) after
/// component `k`: `var` keeps components `0..k`, a new variable of the same
/// storage class and decorations (but its location and component, the pair
/// given) takes `k..n`. Whole stores store both parts, whole loads load both and
/// put them together, component access chains point into the part that
/// holds their component. Returns the new variable.
fn split_var(
    module: &mut Module,
    var: Word,
    n: u32,
    k: u32,
    (second, component): (u32, u32),
) -> Result<Word, Malformed> {
    let ptr = def(module, var).and_then(|v| v.result_type).ok_or(Malformed::Unexpected(var))?;
    let class = match def(module, ptr).and_then(|p| p.operands.first()) {
        Some(Operand::StorageClass(c)) => *c,
        _ => return Err(Malformed::Unexpected(ptr)),
    };
    let (vec, _, first_ty) = retype_var(module, var, k)?;
    let (_, second_ty) = narrowed_type(module, vec, n - k);
    let second_ptr = pointer_type(module, class, second_ty);
    let var2 = add_io_variable(module, second_ptr, class);
    let copied: Vec<Instruction> = module
        .annotations
        .iter()
        .filter(|a| a.class.opcode == Op::Decorate && a.operands.first() == Some(&Operand::IdRef(var)))
        .filter(|a| {
            !matches!(a.operands.get(1), Some(Operand::Decoration(Decoration::Location | Decoration::Component)))
        })
        .map(|a| {
            let mut a = a.clone();
            a.operands[0] = Operand::IdRef(var2);
            a
        })
        .collect();
    module.annotations.extend(copied);
    decorate(module, var2, Decoration::Location, vec![Operand::LiteralBit32(second)]);
    if component != 0 {
        decorate(module, var2, Decoration::Component, vec![Operand::LiteralBit32(component)]);
    }
    let part = |first: bool, value: Word, out: &mut Vec<Instruction>, header: &mut Option<rspirv::dr::ModuleHeader>| {
        let (range, ty) = if first { (0..k, first_ty) } else { (k..n, second_ty) };
        let id = next_id(header);
        out.push(if range.len() == 1 {
            Instruction::new(
                Op::CompositeExtract,
                Some(ty),
                Some(id),
                vec![Operand::IdRef(value), Operand::LiteralBit32(range.start)],
            )
        } else {
            let mut ops = vec![Operand::IdRef(value), Operand::IdRef(value)];
            ops.extend(range.map(Operand::LiteralBit32));
            Instruction::new(Op::VectorShuffle, Some(ty), Some(id), ops)
        });
        id
    };
    let mut chains: Vec<Word> = Vec::new();
    for f in &mut module.functions {
        for b in &mut f.blocks {
            let mut out = Vec::with_capacity(b.instructions.len());
            for inst in b.instructions.drain(..) {
                let on_var = inst.operands.first() == Some(&Operand::IdRef(var));
                match inst.class.opcode {
                    Op::Store if on_var => {
                        let Some(&Operand::IdRef(value)) = inst.operands.get(1) else {
                            out.push(inst);
                            continue;
                        };
                        let a = part(true, value, &mut out, &mut module.header);
                        let b2 = part(false, value, &mut out, &mut module.header);
                        out.push(Instruction::new(Op::Store, None, None, vec![Operand::IdRef(var), Operand::IdRef(a)]));
                        out.push(Instruction::new(
                            Op::Store,
                            None,
                            None,
                            vec![Operand::IdRef(var2), Operand::IdRef(b2)],
                        ));
                    }
                    Op::Load if on_var => {
                        let (a, b2) = (next_id(&mut module.header), next_id(&mut module.header));
                        out.push(Instruction::new(Op::Load, Some(first_ty), Some(a), vec![Operand::IdRef(var)]));
                        out.push(Instruction::new(Op::Load, Some(second_ty), Some(b2), vec![Operand::IdRef(var2)]));
                        out.push(Instruction::new(
                            Op::CompositeConstruct,
                            Some(vec),
                            inst.result_id,
                            vec![Operand::IdRef(a), Operand::IdRef(b2)],
                        ));
                    }
                    Op::AccessChain | Op::InBoundsAccessChain if on_var => {
                        chains.extend(inst.result_id);
                        out.push(inst);
                    }
                    _ => out.push(inst),
                }
            }
            b.instructions = out;
        }
    }
    // Component chains: into the part that holds the component.
    for chain in chains {
        let Some((fi, bi, ii)) = find_inst(module, chain) else { continue };
        let Some(&Operand::IdRef(idx)) = module.functions[fi].blocks[bi].instructions[ii].operands.get(1) else {
            continue;
        };
        let Some(Operand::LiteralBit32(c)) = def(module, idx).and_then(|c| c.operands.first()).cloned() else {
            continue;
        };
        let (target, at, width) = if c < k { (var, c, k) } else { (var2, c - k, n - k) };
        if width == 1 {
            module.functions[fi].blocks[bi].instructions.remove(ii);
            replace_uses(module, chain, target);
        } else {
            let Some(new_idx) = index_constant(module, idx, at) else { continue };
            let inst = &mut module.functions[fi].blocks[bi].instructions[ii];
            inst.operands = vec![Operand::IdRef(target), Operand::IdRef(new_idx)];
        }
    }
    Ok(var2)
}

/// A uniform expression found in the producer: its instructions in
/// definition order, and the global variables (uniform buffers, push
/// constants) it loads from.
struct UniformExpr {
    insts: Vec<Instruction>,
    vars: Vec<Word>,
}

/// Byte size of a push-constant block type, from its members' offsets (an
/// upper bound is enough: the whole block must be visible).
fn block_extent(m: &Module, ty: Word) -> u32 {
    let members = def(m, ty).map(|t| t.operands.len()).unwrap_or(0) as u32;
    let last = m
        .annotations
        .iter()
        .filter_map(|a| match a.operands.as_slice() {
            [Operand::IdRef(t), Operand::LiteralBit32(_), Operand::Decoration(Decoration::Offset), Operand::LiteralBit32(o)]
                if *t == ty =>
            {
                Some(*o)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0);
    last.saturating_add(16 * members.max(1))
}

/// Why a value is not a uniform expression [`link_with`] can propagate.
enum NotUniform {
    /// It is not one (nothing to say).
    No,
    /// It would be, but the consumer cannot see its source, or it costs too much.
    Hidden(String),
    /// Its definitions refer to themselves (invalid SSA).
    Malformed(Malformed),
}

/// Whether `value` (in `m`) is an expression of constants and loads from
/// uniform buffers or push constants the consumer can see, within the cost
/// bound. The expression is walked depth first with a stack of its own (its
/// instructions come out in definition order), never by recursion.
fn uniform_expression(m: &Module, value: Word, env: &LinkEnv) -> Result<UniformExpr, NotUniform> {
    let insts: HashMap<Word, &Instruction> = code(m).filter_map(|i| Some((i.result_id?, i))).collect();
    let mut order: Vec<Instruction> = Vec::new();
    let mut vars: Vec<Word> = Vec::new();
    let mut seen: HashSet<Word> = HashSet::new();
    // Instructions whose operands are being visited: meeting one again is a cycle.
    let mut open: HashSet<Word> = HashSet::new();
    // (id, whether its operands have been visited)
    let mut stack: Vec<(Word, bool)> = vec![(value, false)];
    while let Some((id, visited)) = stack.pop() {
        if visited {
            open.remove(&id);
            seen.insert(id);
            order.extend(insts.get(&id).map(|i| (*i).clone()));
            let arithmetic = order
                .iter()
                .filter(|i| !matches!(i.class.opcode, Op::Load | Op::AccessChain | Op::InBoundsAccessChain))
                .count();
            if arithmetic > UNIFORM_COST {
                return Err(NotUniform::Hidden(format!(
                    "its uniform expression has more than {UNIFORM_COST} arithmetic instructions"
                )));
            }
            continue;
        }
        if seen.contains(&id) || is_constant(m, id) {
            continue;
        }
        if open.contains(&id) {
            return Err(NotUniform::Malformed(Malformed::Cyclic(id)));
        }
        if let Some(g) = def(m, id) {
            // A global variable: a uniform buffer block or push constants.
            if g.class.opcode != Op::Variable {
                return Err(NotUniform::No);
            }
            let block = g.result_type.and_then(|p| pointee_of(m, p)).ok_or(NotUniform::No)?;
            let is_block = decorations_of(m, block)
                .iter()
                .any(|d| d.operands.get(1) == Some(&Operand::Decoration(Decoration::Block)));
            match g.operands.first() {
                Some(Operand::StorageClass(StorageClass::Uniform)) if is_block => {
                    let set = decoration_value(m, id, Decoration::DescriptorSet).unwrap_or(0);
                    let binding = decoration_value(m, id, Decoration::Binding).unwrap_or(0);
                    if !env.all_visible && !env.uniform_buffers.contains(&(set, binding)) {
                        return Err(NotUniform::Hidden(format!(
                            "its uniform buffer (set {set}, binding {binding}) is not visible to the consumer"
                        )));
                    }
                }
                Some(Operand::StorageClass(StorageClass::PushConstant)) => {
                    let end = block_extent(m, block);
                    if !env.all_visible && !env.push_constants.iter().any(|(o, s)| *o == 0 && *s >= end) {
                        return Err(NotUniform::Hidden(
                            "its push constants are not all visible to the consumer".into(),
                        ));
                    }
                }
                _ => return Err(NotUniform::No),
            }
            seen.insert(id);
            vars.push(id);
            continue;
        }
        let i = insts.get(&id).ok_or(NotUniform::No)?;
        let allowed = matches!(
            i.class.opcode,
            Op::Load
                | Op::AccessChain
                | Op::InBoundsAccessChain
                | Op::FAdd
                | Op::FSub
                | Op::FMul
                | Op::FNegate
                | Op::IAdd
                | Op::ISub
                | Op::IMul
                | Op::SNegate
                | Op::ConvertSToF
                | Op::ConvertUToF
                | Op::ConvertFToS
                | Op::ConvertFToU
                | Op::Bitcast
                | Op::CompositeConstruct
                | Op::CompositeExtract
                | Op::VectorShuffle
                | Op::VectorTimesScalar
        );
        if !allowed {
            return Err(NotUniform::No);
        }
        if matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain)
            && !i.operands.iter().skip(1).all(|o| matches!(o, Operand::IdRef(x) if is_constant(m, *x)))
        {
            return Err(NotUniform::No);
        }
        open.insert(id);
        stack.push((id, true));
        // Reversed, so that the operands are visited in order.
        stack.extend(i.operands.iter().rev().filter_map(|o| match o {
            Operand::IdRef(src) => Some((*src, false)),
            _ => None,
        }));
    }
    // Only an expression that loads something (plain constants are step 2's).
    if !order.iter().any(|i| i.class.opcode == Op::Load) {
        return Err(NotUniform::No);
    }
    Ok(UniformExpr { insts: order, vars })
}

/// Computes `expr` (whose result is `value`) at the start of the consumer's
/// entry points and stores it into input `input`, which becomes private.
/// `interpolated`: the input was interpolated, so Infs become NaNs as
/// interpolation would make them (x·0 + x, exact). False (consumer left as
/// it was) when something cannot be copied.
fn copy_uniform_expression(
    from: &Module,
    to: &mut Module,
    expr: &UniformExpr,
    value: Word,
    input: Word,
    interpolated: bool,
) -> bool {
    let backup = to.clone();
    let ok = (|| -> Option<()> {
        let mut types: HashMap<Word, Word> = HashMap::new();
        let mut ids: HashMap<Word, Word> = HashMap::new();
        // The sources: a new variable per uniform buffer / push-constant block.
        for v in &expr.vars {
            let var = def(from, *v)?.clone();
            let class = var.operands.first()?.clone();
            if class == Operand::StorageClass(StorageClass::PushConstant)
                && to.types_global_values.iter().any(|i| {
                    i.class.opcode == Op::Variable
                        && i.operands.first() == Some(&Operand::StorageClass(StorageClass::PushConstant))
                })
            {
                return None; // one push-constant block per entry point
            }
            let block = copy_type_deep(from, to, pointee_of(from, var.result_type?)?, &mut types)?;
            let ptr = find_or_add(to, Op::TypePointer, None, vec![class.clone(), Operand::IdRef(block)]);
            let id = fresh(to);
            to.types_global_values.push(Instruction::new(Op::Variable, Some(ptr), Some(id), vec![class]));
            for d in [Decoration::DescriptorSet, Decoration::Binding] {
                if let Some(x) = decoration_value(from, *v, d) {
                    decorate(to, id, d, vec![Operand::LiteralBit32(x)]);
                }
            }
            add_to_interface(to, id);
            ids.insert(*v, id);
        }
        // The instructions, re-typed and re-numbered.
        let mut code = Vec::new();
        for i in &expr.insts {
            let ty = i.result_type?;
            let new_ty = if def(from, ty)?.class.opcode == Op::TypePointer {
                let class = def(from, ty)?.operands.first()?.clone();
                let pointee = copy_type_deep(from, to, pointee_of(from, ty)?, &mut types)?;
                find_or_add(to, Op::TypePointer, None, vec![class, Operand::IdRef(pointee)])
            } else {
                copy_type_deep(from, to, ty, &mut types)?
            };
            let mut ops = Vec::new();
            for o in &i.operands {
                ops.push(match o {
                    Operand::IdRef(x) if ids.contains_key(x) => Operand::IdRef(ids[x]),
                    Operand::IdRef(x) if is_constant(from, *x) => Operand::IdRef(copy_constant(from, to, *x)?),
                    Operand::IdRef(_) => return None,
                    other => other.clone(),
                });
            }
            let id = fresh(to);
            ids.insert(i.result_id?, id);
            code.push(Instruction::new(i.class.opcode, Some(new_ty), Some(id), ops));
        }
        let mut result = *ids.get(&value)?;
        let result_ty = code.last()?.result_type?;
        let float = scalar_kind(to, result_ty).is_some_and(|(k, _)| k.is_float());
        if interpolated && float {
            // Infs become NaNs, as interpolating them would: x*0 + x, exact.
            let (scalar_ty, n) = (
                match def(to, result_ty)?.class.opcode {
                    Op::TypeVector => match def(to, result_ty)?.operands.first()? {
                        Operand::IdRef(s) => *s,
                        _ => return None,
                    },
                    _ => result_ty,
                },
                scalar_kind(to, result_ty)?.1,
            );
            let zero_s = constant(to, scalar_ty, 0);
            let zero = if n == 1 {
                zero_s
            } else {
                find_or_add(to, Op::ConstantComposite, Some(result_ty), vec![Operand::IdRef(zero_s); n as usize])
            };
            let (mul, add) = (fresh(to), fresh(to));
            code.push(Instruction::new(
                Op::FMul,
                Some(result_ty),
                Some(mul),
                vec![Operand::IdRef(result), Operand::IdRef(zero)],
            ));
            code.push(Instruction::new(
                Op::FAdd,
                Some(result_ty),
                Some(add),
                vec![Operand::IdRef(mul), Operand::IdRef(result)],
            ));
            for x in [mul, add] {
                decorate(to, x, Decoration::NoContraction, vec![]);
            }
            result = add;
        }
        // The input's type must be the expression's.
        let input_ty = var_type(to, input)?;
        if input_ty != result_ty {
            return None;
        }
        make_private(to, input, None).ok()?;
        code.push(Instruction::new(Op::Store, None, None, vec![Operand::IdRef(input), Operand::IdRef(result)]));
        let entries = entry_functions(to, None);
        if entries.len() != 1 {
            return None;
        }
        prepend_to_function(to, entries[0], code).then_some(())
    })();
    if ok.is_none() {
        *to = backup;
    }
    ok.is_some()
}

/// The value the `OpStore` at `at` (function, block, instruction) stores.
fn stored_value(m: &Module, at: (usize, usize, usize)) -> Option<Word> {
    match m.functions.get(at.0)?.blocks.get(at.1)?.instructions.get(at.2)?.operands.get(1)? {
        Operand::IdRef(v) => Some(*v),
        _ => None,
    }
}

/// Where the single `OpStore` to `var` is: (function, block, instruction).
fn single_store(m: &Module, var: Word) -> Option<(usize, usize, usize)> {
    let mut found = None;
    for (fi, f) in m.functions.iter().enumerate() {
        for (bi, b) in f.blocks.iter().enumerate() {
            for (ii, i) in b.instructions.iter().enumerate() {
                if i.class.opcode == Op::Store && i.operands.first() == Some(&Operand::IdRef(var)) {
                    if found.is_some() {
                        return None;
                    }
                    found = Some((fi, bi, ii));
                }
            }
        }
    }
    found
}

/// Inputs read by exactly one whole load whose result has one use (load
/// result → input): interpolated 32-bit float scalars and vectors.
fn single_loads<'a>(consumer: &Module, inputs: &'a [Var], gone_inputs: &HashSet<Word>) -> HashMap<Word, &'a Var> {
    let mut loads = HashMap::new();
    for i in inputs {
        if gone_inputs.contains(&i.id)
            || i.locations != 1
            || i.component.is_some()
            || i.interp.contains(&Decoration::Flat)
            || !i.kind.is_some_and(|(k, _)| k == Scalar::Float)
        {
            continue;
        }
        let users: Vec<&Instruction> =
            code(consumer).filter(|x| x.operands.iter().any(|o| *o == Operand::IdRef(i.id))).collect();
        if let [l] = users.as_slice() {
            if let (Op::Load, Some(load)) = (l.class.opcode, l.result_id) {
                if use_count(consumer, load) == 1 {
                    loads.insert(load, i);
                }
            }
        }
    }
    loads
}

/// One step of code motion with a constant: an interpolated input `x`, read
/// once, whose only use is `x + c`, `c + x`, `x * c`, `c * x` or `x * s`
/// (vector times constant scalar), has that operation computed in the
/// producer instead (interp(x) + c = interp(x + c), interp(x) · c =
/// interp(x · c)). Returns whether something moved.
fn move_constant_op(
    producer: &mut Module,
    consumer: &mut Module,
    outputs: &[Var],
    inputs: &[Var],
    dead: &HashSet<Word>,
    gone_inputs: &HashSet<Word>,
    report: &mut Report,
) -> bool {
    let loads = single_loads(consumer, inputs, gone_inputs);
    let ops: Vec<Instruction> = code(consumer)
        .filter(|x| matches!(x.class.opcode, Op::FAdd | Op::FMul | Op::VectorTimesScalar))
        .cloned()
        .collect();
    for op in ops {
        let (Some(op_id), [Operand::IdRef(x0), Operand::IdRef(x1)]) = (op.result_id, op.operands.as_slice()) else {
            continue;
        };
        let (load, constant, first) = match (loads.get(x0), loads.get(x1)) {
            (Some(_), None) if is_constant(consumer, *x1) => (*x0, *x1, true),
            (None, Some(_)) if is_constant(consumer, *x0) && op.class.opcode != Op::VectorTimesScalar => {
                (*x1, *x0, false)
            }
            _ => continue,
        };
        let input = loads[&load];
        let Some(o) = outputs.iter().find(|o| o.location == input.location && !dead.contains(&o.id) && !o.xfb) else {
            continue;
        };
        if o.kind != input.kind || o.component.is_some() || o.locations != 1 {
            continue;
        }
        // Its store changes: nothing else may see the output (a read-back
        // would read the moved operation's result, a partial write or copy
        // would overwrite it).
        if !only_stored(producer, o.id) {
            continue;
        }
        // The result has the input's type (not a vector built from a scalar).
        if op.result_type != var_type(consumer, input.id) {
            continue;
        }
        let Some(at) = single_store(producer, o.id) else { continue };
        let Some(v) = stored_value(producer, at) else { continue };
        let Some(c) = copy_constant(consumer, producer, constant) else { continue };
        let Some(pty) = var_type(producer, o.id) else { continue };
        let s = fresh(producer);
        let operands =
            if first { vec![Operand::IdRef(v), Operand::IdRef(c)] } else { vec![Operand::IdRef(c), Operand::IdRef(v)] };
        let block = &mut producer.functions[at.0].blocks[at.1].instructions;
        block.insert(at.2, Instruction::new(op.class.opcode, Some(pty), Some(s), operands));
        block[at.2 + 1].operands[1] = Operand::IdRef(s);
        for f in &mut consumer.functions {
            for bl in &mut f.blocks {
                bl.instructions.retain(|x| x.result_id != Some(op_id));
            }
        }
        replace_uses(consumer, op_id, load);
        report.moved_constant_ops.push(input.location);
        return true;
    }
    false
}

/// Step 4, sums of two inputs (see the module documentation).
fn move_sums(
    producer: &mut Module,
    consumer: &mut Module,
    outputs: &[Var],
    inputs: &[Var],
    dead: &mut HashSet<Word>,
    gone_inputs: &mut HashSet<Word>,
    report: &mut Report,
) -> Result<(), LinkError> {
    let mut loads = single_loads(consumer, inputs, gone_inputs);
    let sums: Vec<Instruction> = code(consumer).filter(|x| x.class.opcode == Op::FAdd).cloned().collect();
    for sum in sums {
        let (Some(sum_id), [Operand::IdRef(la), Operand::IdRef(lb)]) = (sum.result_id, sum.operands.as_slice()) else {
            continue;
        };
        let (Some(a), Some(b)) = (loads.get(la).copied(), loads.get(lb).copied()) else { continue };
        if a.id == b.id
            || a.kind != b.kind
            || a.interp != b.interp
            || gone_inputs.contains(&a.id)
            || gone_inputs.contains(&b.id)
        {
            continue;
        }
        let out = |loc: u32| {
            outputs.iter().find(|o| o.location == loc && !dead.contains(&o.id) && !o.xfb && o.locations == 1)
        };
        let (Some(oa), Some(ob)) = (out(a.location), out(b.location)) else { continue };
        if oa.kind != a.kind || ob.kind != b.kind || oa.component.is_some() || ob.component.is_some() {
            continue;
        }
        // In the producer: one store each, in the same block. The kept
        // output's store moves and stores the sum, so nothing else may see
        // that output ([`only_stored`]); the removed one keeps its store
        // (it becomes private) and may be read back, but written no other
        // way, so that its stored value is its value. When only the second
        // is read back, the second is kept.
        let (mut a, mut b, mut oa, mut ob, mut la, mut lb) = (a, b, oa, ob, *la, *lb);
        if !only_stored(producer, oa.id) && only_stored(producer, ob.id) {
            (a, b, oa, ob, la, lb) = (b, a, ob, oa, lb, la);
        }
        let whole = |o: &Var| whole_stores(producer, o.id).is_some_and(|s| s.len() == 1 && s[0].0 != INITIALIZER);
        if !only_stored(producer, oa.id) || !whole(ob) {
            report.notes.push(format!(
                "locations {} and {}: the producer reads back or writes its output other than by one store; \
                 the sum stays in the consumer",
                oa.location, ob.location
            ));
            continue;
        }
        let (Some(sa), Some(sb)) = (single_store(producer, oa.id), single_store(producer, ob.id)) else { continue };
        if (sa.0, sa.1) != (sb.0, sb.1) {
            continue;
        }
        let (Some(va), Some(vb)) = (stored_value(producer, sa), stored_value(producer, sb)) else { continue };
        let Some(pty) = var_type(producer, oa.id) else { continue };
        // The producer: a's store holds the sum, after both values exist.
        let s = fresh(producer);
        let block = &mut producer.functions[sa.0].blocks[sa.1].instructions;
        let later = sa.2.max(sb.2);
        block.insert(
            later + 1,
            Instruction::new(Op::FAdd, Some(pty), Some(s), vec![Operand::IdRef(va), Operand::IdRef(vb)]),
        );
        block
            .insert(later + 2, Instruction::new(Op::Store, None, None, vec![Operand::IdRef(oa.id), Operand::IdRef(s)]));
        block.remove(sa.2);
        // The consumer: the sum is a's input now.
        for f in &mut consumer.functions {
            for bl in &mut f.blocks {
                bl.instructions.retain(|x| x.result_id != Some(sum_id));
            }
        }
        replace_uses(consumer, sum_id, la);
        make_private(consumer, b.id, None).map_err(in_consumer)?;
        gone_inputs.insert(b.id);
        dead.insert(ob.id);
        loads.remove(&la);
        loads.remove(&lb);
        report.moved_sums.push((a.location, b.location));
    }
    Ok(())
}

/// What the pipeline lets the consumer stage see, for uniform propagation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkEnv {
    /// (set, binding) of uniform buffers the consumer stage may access.
    pub uniform_buffers: HashSet<(u32, u32)>,
    /// Push-constant byte ranges (offset, size) the consumer stage may access.
    pub push_constants: Vec<(u32, u32)>,
    /// Assume the consumer sees every uniform buffer and push constant (for
    /// analysing a pair without its pipeline layout).
    pub all_visible: bool,
    /// Compare values as they are spelled, without [`crate::values`]'s
    /// canonical form first (the control of the tests that show the
    /// linker sees through unoptimized SPIR-V; `overlap link-varyings
    /// --as-spelled`).
    pub as_spelled: bool,
}

/// Most arithmetic instructions a propagated uniform expression may have
/// (loads and access chains are free): the fragment shader runs far more
/// often than its producer, so only cheap expressions are worth moving.
const UNIFORM_COST: usize = 2;

/// Links `producer` to `consumer` with nothing known of the pipeline layout
/// (no uniform propagation).
pub fn link(producer: &mut Module, consumer: &mut Module, level: Level) -> Result<Report, LinkError> {
    link_with(producer, consumer, level, &LinkEnv::default())
}

/// Links `producer` (the last pre-rasterization stage) to `consumer` (a
/// fragment shader), propagating uniform expressions where `env` says the
/// consumer can read their sources. On an error both modules are left as
/// they were.
pub fn link_with(
    producer: &mut Module,
    consumer: &mut Module,
    level: Level,
    env: &LinkEnv,
) -> Result<Report, LinkError> {
    if producer.entry_points.is_empty() {
        return Err(LinkError::NoEntryPoint("producer"));
    }
    if consumer.entry_points.is_empty() {
        return Err(LinkError::NoEntryPoint("consumer"));
    }
    crate::check(producer).map_err(in_producer)?;
    crate::check(consumer).map_err(in_consumer)?;
    let (mut p, mut c) = (producer.clone(), consumer.clone());
    // 0. Values as they are, not as they are spelled (unoptimized SPIR-V).
    if !env.as_spelled {
        crate::values::canonicalize(&mut p);
        crate::values::canonicalize(&mut c);
    }
    let report = link_checked(&mut p, &mut c, level, env)?;
    (*producer, *consumer) = (p, c);
    Ok(report)
}

/// What the steps of [`link_checked`] share: the two modules, what is known
/// of the pair, and what the steps before have decided.
struct Linking<'a> {
    producer: &'a mut Module,
    consumer: &'a mut Module,
    level: Level,
    env: &'a LinkEnv,
    producer_stage: Stage,
    /// Only a fragment shader interpolates its inputs; any other consumer
    /// reads what was written, as a flat input does.
    interpolating: bool,
    /// Producer outputs that are no output any more (dead, propagated,
    /// merged, moved): made private after code motion ([`Self::privatize_dead`]).
    dead: HashSet<Word>,
    /// Consumer inputs that are no input any more (already made private).
    gone_inputs: HashSet<Word>,
    report: Report,
}

/// Per value, interpolation and footprint (step 3): the first output's
/// input, the output, and the blocks that store it.
type Firsts<'v> = HashMap<(Word, Vec<Decoration>, (u32, u32)), (Word, &'v Var, Vec<(usize, usize)>)>;

impl Linking<'_> {
    /// Step 0a: arrays and matrices whose every use on both sides has a
    /// constant element index become one varying per element ([`arrays`]).
    fn split_arrays(&mut self) -> Result<(), LinkError> {
        let outputs = interface(self.producer, StorageClass::Output, "producer")?;
        let inputs = interface(self.consumer, StorageClass::Input, "consumer")?;
        self.report.split_arrays =
            arrays::split_pairs(self.producer, self.consumer, &outputs, &inputs).map_err(|(p, e)| {
                if p {
                    in_producer(e)
                } else {
                    in_consumer(e)
                }
            })?;
        Ok(())
    }

    /// Step 0b: inputs the consumer declares but never reads (unoptimized
    /// SPIR-V keeps every declared input in the interface) are no input.
    fn drop_unread_inputs(&mut self) -> Result<(), LinkError> {
        for i in interface(self.consumer, StorageClass::Input, "consumer")? {
            if !self.env.as_spelled && !referenced_in_code(self.consumer, i.id) {
                make_private(self.consumer, i.id, None).map_err(in_consumer)?;
                self.report.notes.push(format!("consumer input at location {} is never read", i.location));
            }
        }
        Ok(())
    }

    /// Step 1, dead I/O: inputs whose values the consumer never uses first
    /// (read into values nothing uses; after the later pair's link, the
    /// values of its dead outputs), then outputs no remaining input reads
    /// (but transform-feedback ones, and tessellation control outputs the
    /// producer reads back), then inputs no output writes (undefined).
    fn remove_dead_io(&mut self, outputs: &[Var], inputs: &[Var]) -> Result<(), LinkError> {
        let written: HashSet<u32> = outputs.iter().flat_map(|v| v.location..v.location + v.locations).collect();
        let live = stages::live_inputs(self.consumer);
        for i in inputs {
            if !self.env.as_spelled && !live.contains(&i.id) {
                make_private(self.consumer, i.id, None).map_err(in_consumer)?;
                self.gone_inputs.insert(i.id);
                self.report.unused_inputs.push(i.location);
            }
        }
        // (`interface` keeps every location range below MAX_LOCATIONS.)
        let read: HashSet<u32> = inputs
            .iter()
            .filter(|v| !self.gone_inputs.contains(&v.id))
            .flat_map(|v| v.location..v.location + v.locations)
            .collect();
        for o in outputs {
            if !o.xfb && !(o.location..o.location + o.locations).any(|l| read.contains(&l)) {
                if self.producer_stage == Stage::TessellationControl && stages::reads_back(self.producer, o.id) {
                    self.report.read_back.push(o.location);
                    continue;
                }
                self.dead.insert(o.id);
                self.report.removed_dead.push(o.location);
            }
        }
        for i in inputs {
            if self.gone_inputs.contains(&i.id) {
                continue;
            }
            if !(i.location..i.location + i.locations).any(|l| written.contains(&l)) {
                make_private(self.consumer, i.id, None).map_err(in_consumer)?;
                self.gone_inputs.insert(i.id);
                self.report
                    .notes
                    .push(format!("consumer input at location {} has no producer output: undefined", i.location));
            }
        }
        Ok(())
    }

    /// Steps 2 and 3's pairing: the input an output feeds (`by_location`:
    /// inputs by location and component, as variables may share a
    /// location), if it is still an input of the same footprint and type
    /// and neither is indexed indirectly, and the one value every store of
    /// the output writes. None otherwise, with a note where one says why.
    fn pair<'v>(&mut self, o: &Var, by_location: &BTreeMap<(u32, u32), &'v Var>) -> Option<(&'v Var, Word)> {
        let input = *by_location.get(&(o.location, o.component.unwrap_or(0)))?;
        if self.gone_inputs.contains(&input.id) {
            return None;
        }
        let notes = &mut self.report.notes;
        if o.indirect || input.indirect {
            notes.push(format!("location {}: indexed indirectly; kept in place", o.location));
            return None;
        }
        if input.locations != o.locations || input.components != o.components {
            notes.push(format!("location {}: input and output differ in shape; left as is", o.location));
            return None;
        }
        if input.kind != o.kind {
            notes.push(format!("location {}: input and output differ in type; left as is", o.location));
            return None;
        }
        let Some(values) = stored_values(self.producer, o.id) else {
            notes.push(format!("location {}: written through an access chain or call; left as is", o.location));
            return None;
        };
        let value = values.first().filter(|v| values.iter().all(|x| x == *v)).copied()?;
        Some((input, value))
    }

    /// Step 2, constant and uniform propagation: output `o`, whose every
    /// store writes `value`, has that value, a constant or a cheap uniform
    /// expression, computed in the consumer and stored into `input`, now
    /// private (into a flat input only, at [`Level::Safe`]); `o` dies.
    /// Returns whether it did.
    fn propagate(&mut self, o: &Var, input: &Var, value: Word) -> Result<bool, LinkError> {
        let flat = input.interp.contains(&Decoration::Flat) || !self.interpolating;
        if !flat && self.level != Level::Full {
            return Ok(false);
        }
        if is_constant(self.producer, value) {
            let copied = copy_constant(self.producer, self.consumer, value);
            // Into an array over vertices: every vertex's element.
            let copied = if input.per_vertex {
                copied.and_then(|c| stages::every_vertex(self.consumer, input.id, c))
            } else {
                copied
            };
            // (Of the input's own type: a scalar kind alone does not tell bool from int.)
            let Some(c) = copied
                .filter(|c| def(self.consumer, *c).and_then(|k| k.result_type) == var_type(self.consumer, input.id))
            else {
                return Ok(false);
            };
            make_private(self.consumer, input.id, Some(c)).map_err(in_consumer)?;
            self.gone_inputs.insert(input.id);
            self.dead.insert(o.id);
            self.report.propagated_constants.push(o.location);
            return Ok(true);
        }
        match uniform_expression(self.producer, value, self.env) {
            Ok(expr) => {
                if copy_uniform_expression(self.producer, self.consumer, &expr, value, input.id, !flat) {
                    self.gone_inputs.insert(input.id);
                    self.dead.insert(o.id);
                    self.report.propagated_uniforms.push(o.location);
                    return Ok(true);
                }
            }
            Err(NotUniform::Hidden(why)) => self.report.notes.push(format!("location {}: {why}", o.location)),
            Err(NotUniform::Malformed(e)) => return Err(in_producer(e)),
            Err(NotUniform::No) => {}
        }
        Ok(false)
    }

    /// Step 3, deduplication: output `o`, whose every store writes `value`
    /// into `input`, and an earlier output storing the same value in the
    /// same blocks, with the same interpolation and footprint (`firsts`),
    /// become one: the consumer reads the earlier one's input, `o` dies.
    fn deduplicate<'v>(
        &mut self,
        o: &'v Var,
        input: &Var,
        value: Word,
        firsts: &mut Firsts<'v>,
    ) -> Result<(), LinkError> {
        let key = (value, input.interp.clone(), (o.locations, o.components));
        // Two outputs storing one value id hold one value only where every
        // execution that stores either stores both: the same blocks store
        // them (an id defined in a loop, or a store under a condition, is
        // another value, or none, elsewhere). Their loads in the producer
        // still read what they read: the removed one becomes private.
        let mut blocks: Vec<(usize, usize)> =
            whole_stores(self.producer, o.id).unwrap_or_default().into_iter().map(|(at, _)| at).collect();
        blocks.sort_unstable();
        blocks.dedup();
        match firsts.get(&key) {
            Some((_, kept, kept_blocks)) if *kept_blocks != blocks => self.report.notes.push(format!(
                "location {}: stores the value of location {} in other blocks; not merged",
                o.location, kept.location
            )),
            Some((kept_input, kept, _)) => {
                if def_type_eq(self.consumer, *kept_input, input.id) {
                    replace_uses(self.consumer, input.id, *kept_input);
                    make_private(self.consumer, input.id, None).map_err(in_consumer)?;
                    self.gone_inputs.insert(input.id);
                    self.dead.insert(o.id);
                    self.report.deduplicated.push((o.location, kept.location));
                }
            }
            None => {
                firsts.insert(key, (input.id, o, blocks));
            }
        }
        Ok(())
    }

    /// Step 4, backward code motion (`full`, into a fragment shader only): a
    /// sum of two interpolated inputs of the same type and interpolation,
    /// each read once and only by that sum, is computed in the producer and
    /// passed as one varying (interp(a) + interp(b) = interp(a + b), exact
    /// up to interpolation rounding) ([`move_sums`]); then sums with and
    /// products by constants, until none is left (`(a + b) * 0.5` moves
    /// whole: first the sum, then the product) ([`move_constant_op`]).
    fn move_code(&mut self, outputs: &[Var], inputs: &[Var]) -> Result<(), LinkError> {
        if self.level != Level::Full || !self.interpolating {
            return Ok(());
        }
        let (dead, gone_inputs, report) = (&mut self.dead, &mut self.gone_inputs, &mut self.report);
        move_sums(self.producer, self.consumer, outputs, inputs, dead, gone_inputs, report)?;
        while move_constant_op(self.producer, self.consumer, outputs, inputs, dead, gone_inputs, report) {}
        Ok(())
    }

    /// The outputs steps 1 to 4 removed become private variables (their
    /// stores stay, for the driver to drop).
    fn privatize_dead(&mut self) -> Result<(), LinkError> {
        // In id order: the new pointer types' ids follow it, so the same
        // pair links to the same module every run (a set's order is not).
        let mut dead: Vec<Word> = self.dead.iter().copied().collect();
        dead.sort_unstable();
        for id in dead {
            privatize_output(self.producer, id).map_err(in_producer)?;
        }
        Ok(())
    }

    /// Step 5, component narrowing: a vector output whose consumer reads
    /// only some of its components keeps only those (in order), on both
    /// sides; `outputs` and `inputs` say their new component counts. Exact
    /// at every level: the components that remain carry the same values,
    /// interpolated the same way.
    fn narrow(&mut self, outputs: &mut [Var], inputs: &mut [Var]) -> Result<(), LinkError> {
        for oi in 0..outputs.len() {
            let o = outputs[oi].clone();
            if self.dead.contains(&o.id)
                || o.xfb
                || o.component.is_some()
                || o.locations != 1
                || o.per_vertex
                || o.indirect
            {
                continue;
            }
            let Some((_, n)) = o.kind.filter(|(_, n)| *n >= 2) else { continue };
            let Some(ii) = inputs.iter().position(|i| i.location == o.location && !self.gone_inputs.contains(&i.id))
            else {
                continue;
            };
            let i = inputs[ii].clone();
            if i.kind != o.kind || i.component.is_some() || i.locations != 1 || i.per_vertex || i.indirect {
                continue;
            }
            let Some(used) = components_read(self.consumer, i.id, n) else { continue };
            let keep: Vec<u32> = (0..n).filter(|k| used.contains(k)).collect();
            if keep.is_empty() || keep.len() as u32 == n {
                continue;
            }
            if !narrowable_output(self.producer, o.id) {
                self.report
                    .notes
                    .push(format!("location {}: the producer reads its output back; not narrowed", o.location));
                continue;
            }
            narrow_input(self.consumer, i.id, n, &keep).map_err(in_consumer)?;
            narrow_output(self.producer, o.id, &keep).map_err(in_producer)?;
            let m = keep.len() as u32;
            self.report.narrowed.push((o.location, n, m));
            for v in [&mut outputs[oi], &mut inputs[ii]] {
                v.components = m;
                v.kind = v.kind.map(|(k, _)| (k, m));
            }
        }
        Ok(())
    }

    /// Step 5b, the convergent group (`full`, into a fragment shader):
    /// outputs the same on every vertex of a primitive, interpolated floats,
    /// which compaction may pack with any group of their kind that has room
    /// ([`convergent`]).
    fn convergent_outputs(&self, outputs: &[Var], inputs: &[Var]) -> HashSet<Word> {
        if self.level != Level::Full || !self.interpolating {
            return HashSet::new();
        }
        outputs
            .iter()
            .filter(|o| !self.dead.contains(&o.id) && o.kind.is_some_and(|(k, _)| k.is_float()))
            .filter(|o| {
                inputs.iter().any(|i| {
                    // (Not a `Sample` one either: it may be what makes the
                    // fragment shader run per sample.)
                    i.location == o.location
                        && !self.gone_inputs.contains(&i.id)
                        && !i.interp.iter().any(|d| matches!(d, Decoration::Flat | Decoration::Sample))
                })
            })
            .filter(|o| convergent::convergent_output(self.producer, o.id, self.producer_stage))
            .map(|o| o.id)
            .collect()
    }

    /// Step 6, compaction. Single-location 32-bit scalars and vectors
    /// narrower than a vec4, alone at their location on both sides, are
    /// packed into shared locations with Component decorations — only with
    /// others of the same scalar kind and the same interpolation decorations,
    /// so the packing is valid under every interface rule and changes no
    /// value; `convergent` ones ([`Self::convergent_outputs`]) with any group
    /// of their kind that has room. Scalar granularity: a vector that does
    /// not fit the open location of its group fills it and goes on at the
    /// next (`split_var` on both sides), unless the next location had room
    /// for it whole anyway. Everything else keeps whole locations; all
    /// survivors are renumbered consecutively in order of their old
    /// locations, by groups: runs of overlapping location ranges on either
    /// side (an input array across two outputs) move as a whole, so nothing
    /// comes to overlap. Planned first ([`Layout`]), then done.
    fn compact(&mut self, outputs: &[Var], inputs: &[Var], convergent: &HashSet<Word>) -> Result<(), LinkError> {
        let survivors: Vec<&Var> = outputs.iter().filter(|o| !self.dead.contains(&o.id)).collect();
        note_kept_whole(&survivors, &mut self.report);
        let live_inputs: Vec<&Var> = inputs.iter().filter(|i| !self.gone_inputs.contains(&i.id)).collect();
        let sharing = |vars: &[&Var], v: &Var| {
            vars.iter()
                .filter(|w| w.location < v.location + v.locations && v.location < w.location + w.locations)
                .count()
        };
        let input_at: HashMap<u32, &Var> =
            live_inputs.iter().filter(|i| i.locations == 1).map(|i| (i.location, *i)).collect();
        let pack_key = |o: &Var| -> Option<(PackKey, u32)> {
            let (kind, n) = o.packable()?;
            let input = input_at.get(&o.location)?;
            let alone = sharing(&survivors, o) == 1 && sharing(&live_inputs, input) == 1;
            (alone && input.packable() == Some((kind, n))).then(|| {
                let mut interp = input.interp.clone();
                interp.sort_by_key(|d| *d as u32);
                ((kind, interp), n)
            })
        };
        let mut layout = Layout::new(&survivors, &live_inputs, &mut self.report);
        // Outputs the consumer does not read (transform feedback only, read
        // back by a tessellation control shader) go after all the others.
        let unread = |o: &Var| {
            !live_inputs.iter().any(|i| i.location < o.location + o.locations && o.location < i.location + i.locations)
        };
        let (last, read_first): (Vec<&Var>, Vec<&Var>) = survivors.iter().copied().partition(|o| unread(o));
        // Convergent varyings after the other read ones, to fill what room
        // they left (the seed's order).
        let (converging, others): (Vec<&Var>, Vec<&Var>) =
            read_first.iter().copied().partition(|o| convergent.contains(&o.id) && pack_key(o).is_some());
        for o in others.iter().chain(&converging).chain(&last) {
            // Whether a vector may be split across two locations.
            let splittable = || {
                narrowable_output(self.producer, o.id)
                    && input_at.get(&o.location).is_some_and(|i| split_readable(self.consumer, i.id))
            };
            match pack_key(o) {
                Some(((kind, own), n)) if convergent.contains(&o.id) => {
                    layout.pack_convergent(o, kind, own, n, splittable)
                }
                Some((key, n)) => layout.pack(o, key, n, splittable),
                None => {
                    if let Some(g) = layout.group_of(o.location) {
                        layout.allocate(g);
                    }
                }
            }
        }
        layout.undo_useless_splits();
        // (Only an input overlapping no surviving output, of an invalid pair, is left.)
        for i in &live_inputs {
            if let (None, Some(g)) = (layout.packed.get(&i.location), layout.group_of(i.location)) {
                layout.allocate(g);
            }
        }
        self.relocate(&layout, &survivors, &last, &live_inputs, &input_at)
    }

    /// Step 6's moves, as `layout` planned them: the new locations and
    /// components of the `survivors` and `live_inputs` (`last`: the outputs
    /// the consumer does not read), the interpolation of convergent
    /// varyings in a group of another, and the splits.
    fn relocate(
        &mut self,
        layout: &Layout,
        survivors: &[&Var],
        last: &[&Var],
        live_inputs: &[&Var],
        input_at: &HashMap<u32, &Var>,
    ) -> Result<(), LinkError> {
        for o in survivors {
            layout.place(self.producer, o, Some(&mut self.report));
        }
        for o in last {
            if let Some(g) = layout.group_of(o.location).filter(|g| !layout.fixed.contains(g)) {
                if let Some(at) = layout.moved.get(&g) {
                    self.report.placed_last.push((o.location, at + (o.location - layout.groups[g].0)));
                }
            }
        }
        for i in live_inputs {
            layout.place(self.consumer, i, None);
        }
        // Convergent varyings in a group of another interpolation take its
        // decorations on both sides; those now flat store x·0 + x.
        for (&old, interp) in &layout.promoted {
            let (Some(o), Some(i)) = (survivors.iter().find(|o| o.location == old), input_at.get(&old)) else {
                continue;
            };
            let flat = interp.contains(&Decoration::Flat);
            if flat && !convergent::flush_infinities(self.producer, o.id) {
                return Err(LinkError::Malformed("producer", Malformed::Unexpected(o.id)));
            }
            convergent::set_interpolation(self.producer, o.id, interp);
            convergent::set_interpolation(self.consumer, i.id, interp);
            self.report.convergent.push((old, flat));
        }
        for (old, first, second, component, interp) in layout.splits.iter().cloned() {
            let (Some(o), Some(i)) = (survivors.iter().find(|o| o.location == old), input_at.get(&old)) else {
                continue;
            };
            let p2 = split_var(self.producer, o.id, o.components, first, (second, component)).map_err(in_producer)?;
            let c2 = split_var(self.consumer, i.id, i.components, first, (second, component)).map_err(in_consumer)?;
            if let Some(interp) = interp {
                if interp.contains(&Decoration::Flat) && !convergent::flush_infinities(self.producer, p2) {
                    return Err(LinkError::Malformed("producer", Malformed::Unexpected(o.id)));
                }
                convergent::set_interpolation(self.producer, p2, &interp);
                convergent::set_interpolation(self.consumer, c2, &interp);
                self.report.convergent.push((old, interp.contains(&Decoration::Flat)));
            }
            self.report.split.push((old, first, second));
        }
        Ok(())
    }
}

/// Notes why a survivor keeps whole locations (the report's account of
/// what compaction did not split or pack).
fn note_kept_whole(survivors: &[&Var], report: &mut Report) {
    for o in survivors {
        let why = if o.xfb {
            Some("captured by transform feedback")
        } else if o.component.is_some() {
            Some("already placed at a component by the application")
        } else if o.locations > 1 {
            Some("an array or matrix (whole locations)")
        } else if o.kind.is_none() {
            Some("not a 32- or 16-bit scalar or vector")
        } else {
            None
        };
        if let Some(why) = why {
            report.notes.push(format!("location {}: kept whole: {why}", o.location));
        }
    }
}

/// What varyings sharing a location have in common: the scalar kind and the
/// (sorted) interpolation decorations.
type PackKey = (Scalar, Vec<Decoration>);

/// A location varyings share: their key, the location, the components used.
type Bin = (PackKey, u32, u32);

/// A variable split at a location's end: its old location, the components
/// in the first part, the second part's location and component, and its
/// interpolation where a convergent one's differs from the first's.
type Split = (u32, u32, u32, u32, Option<Vec<Decoration>>);

/// Compaction's plan (step 6): where the survivors go, decided before
/// anything moves.
struct Layout {
    /// [first, end) of each group: a run of overlapping location ranges on
    /// either side, which moves as a whole.
    groups: Vec<(u32, u32)>,
    /// Groups with an indirectly indexed varying: they stay where they are,
    /// and the others are placed around them.
    fixed: Vec<usize>,
    /// The location ranges of the `fixed` groups.
    fixed_ranges: Vec<(u32, u32)>,
    /// Group → its new first location.
    moved: HashMap<usize, u32>,
    /// Old location → (location, component) of a packed varying.
    packed: HashMap<u32, (u32, u32)>,
    bins: Vec<Bin>,
    splits: Vec<Split>,
    /// Convergent varyings in a group of another interpolation: old
    /// location → the interpolation they get.
    promoted: BTreeMap<u32, Vec<Decoration>>,
    /// The first location not yet given out.
    next: u32,
}

impl Layout {
    /// The groups of the `survivors` and `live_inputs`, those with an
    /// indirectly indexed varying kept in place (in `report`); nothing placed yet.
    fn new(survivors: &[&Var], live_inputs: &[&Var], report: &mut Report) -> Layout {
        let mut ranges: Vec<(u32, u32)> =
            survivors.iter().chain(live_inputs).map(|v| (v.location, v.location + v.locations)).collect();
        ranges.sort_unstable();
        let mut groups: Vec<(u32, u32)> = Vec::new();
        for (first, end) in ranges {
            match groups.last_mut() {
                Some(g) if first < g.1 => g.1 = g.1.max(end),
                _ => groups.push((first, end)),
            }
        }
        let mut layout = Layout {
            groups,
            fixed: Vec::new(),
            fixed_ranges: Vec::new(),
            moved: HashMap::new(),
            packed: HashMap::new(),
            bins: Vec::new(),
            splits: Vec::new(),
            promoted: BTreeMap::new(),
            next: 0,
        };
        let fixed: Vec<usize> = survivors
            .iter()
            .chain(live_inputs)
            .filter(|v| v.indirect)
            .filter_map(|v| layout.group_of(v.location))
            .collect();
        for g in &fixed {
            if layout.moved.insert(*g, layout.groups[*g].0).is_none() {
                report.kept_in_place.push(layout.groups[*g].0);
            }
        }
        layout.fixed_ranges = fixed.iter().map(|g| layout.groups[*g]).collect();
        layout.fixed = fixed;
        layout
    }

    /// The group of a location.
    fn group_of(&self, location: u32) -> Option<usize> {
        self.groups.iter().position(|g| g.0 <= location && location < g.1)
    }

    /// The first free location at or after `at` for `size` locations (each
    /// step passes one fixed range for good: at most their number of steps).
    fn free(&self, mut at: u32, size: u32) -> u32 {
        while let Some(r) = self.fixed_ranges.iter().find(|r| at < r.1 && r.0 < at + size) {
            at = r.1;
        }
        at
    }

    /// Places group `g` whole at the next free locations, unless placed.
    fn allocate(&mut self, g: usize) {
        if !self.moved.contains_key(&g) {
            let size = self.groups[g].1 - self.groups[g].0;
            let at = self.free(self.next, size);
            self.next = at + size;
            self.moved.insert(g, at);
        }
    }

    /// A new shared location of `key`, with `used` components taken: its location.
    fn open(&mut self, key: PackKey, used: u32) -> u32 {
        let at = self.free(self.next, 1);
        self.bins.push((key, at, used));
        self.next = at + 1;
        at
    }

    /// Packs `o`, of key `key` and `n` components, with others of its key:
    /// where one location has room for it whole, else filling the open one
    /// and going on at the next where it is `splittable`, else at a new one.
    fn pack(&mut self, o: &Var, key: PackKey, n: u32, splittable: impl FnOnce() -> bool) {
        let room = self.bins.iter().position(|b| b.0 == key && b.2 < 4);
        match self.bins.iter_mut().find(|b| b.0 == key && b.2 + n <= 4) {
            Some(bin) => {
                self.packed.insert(o.location, (bin.1, bin.2));
                bin.2 += n;
            }
            // Scalar granularity: the components that fit fill the open
            // location, the rest opens the next one.
            None if room.is_some_and(|_| splittable()) => {
                let bin = &mut self.bins[room.unwrap_or_default()];
                let first = 4 - bin.2;
                self.packed.insert(o.location, (bin.1, bin.2));
                bin.2 = 4;
                let at = self.open(key, n - first);
                self.splits.push((o.location, first, at, 0, None));
            }
            None => {
                let at = self.open(key, n);
                self.packed.insert(o.location, (at, 0));
            }
        }
    }

    /// Packs convergent `o`, of scalar kind `kind`, interpolation `own` and
    /// `n` components, with any group of its kind: where one has room for it
    /// whole (its own interpolation first), else, where it is `splittable`,
    /// filling a hole and going on at a second (of any interpolation) or at
    /// a new location, else as flat; it takes the group's interpolation.
    fn pack_convergent(
        &mut self,
        o: &Var,
        kind: Scalar,
        own: Vec<Decoration>,
        n: u32,
        splittable: impl FnOnce() -> bool,
    ) {
        // Room in a group of its own interpolation first, then any.
        let room = |b: &Bin| b.0 .0 == kind && b.2 + n <= 4;
        let at = self.bins.iter().position(|b| room(b) && b.0 .1 == own).or_else(|| self.bins.iter().position(room));
        // No room for it whole: a vector fills a hole of its kind (its
        // own interpolation first) and goes on at a new location of
        // that group's interpolation, as the scalars it is made of would.
        let hole = |b: &Bin| b.0 .0 == kind && b.2 < 4;
        let split = (n > 1 && splittable())
            .then(|| {
                self.bins.iter().position(|b| hole(b) && b.0 .1 == own).or_else(|| self.bins.iter().position(hole))
            })
            .flatten();
        let interp = match (at, split) {
            (Some(b), _) => {
                let bin = &mut self.bins[b];
                self.packed.insert(o.location, (bin.1, bin.2));
                bin.2 += n;
                bin.0 .1.clone()
            }
            (None, Some(b)) => {
                let (first, interp) = (4 - self.bins[b].2, self.bins[b].0 .1.clone());
                self.packed.insert(o.location, (self.bins[b].1, self.bins[b].2));
                self.bins[b].2 = 4;
                // The rest: into a second hole with room for it, of any
                // interpolation (it takes that group's), else a new
                // location of the first part's interpolation.
                let rest = n - first;
                match self.bins.iter().position(|x| x.0 .0 == kind && x.2 + rest <= 4) {
                    Some(b2) => {
                        let (at, component, own2) = (self.bins[b2].1, self.bins[b2].2, self.bins[b2].0 .1.clone());
                        self.bins[b2].2 += rest;
                        self.splits.push((o.location, first, at, component, (own2 != interp).then_some(own2)));
                    }
                    None => {
                        let at = self.open((kind, interp.clone()), rest);
                        self.splits.push((o.location, first, at, 0, None));
                    }
                }
                interp
            }
            // The rest is packed as flat, where later ones may join.
            (None, None) => {
                let at = self.open((kind, vec![Decoration::Flat]), n);
                self.packed.insert(o.location, (at, 0));
                vec![Decoration::Flat]
            }
        };
        if interp != own {
            self.promoted.insert(o.location, interp);
        }
    }

    /// A split whose second location kept room for the whole vector saved
    /// nothing: the vector goes there whole, before what joined it.
    fn undo_useless_splits(&mut self) {
        let (bins, packed) = (&mut self.bins, &mut self.packed);
        self.splits.retain(|&(old, first, second, component, _)| {
            if component != 0 {
                return true; // (in a hole of another group: it never had room whole)
            }
            let Some(bin) = bins.iter_mut().find(|b| b.1 == second) else { return true };
            if bin.2 + first > 4 {
                return true;
            }
            bin.2 += first;
            for (l, c) in packed.values_mut() {
                if *l == second {
                    *c += first;
                }
            }
            if let Some((was, _)) = packed.insert(old, (second, 0)) {
                if let Some(b) = bins.iter_mut().find(|b| b.1 == was) {
                    b.2 -= first;
                }
            }
            false
        });
    }

    /// Moves `v` in `m` where it goes (its location, and its component if
    /// packed), noting it in `report` if given.
    fn place(&self, m: &mut Module, v: &Var, report: Option<&mut Report>) {
        let (new, component) = match self.packed.get(&v.location) {
            Some(&(l, c)) => (l, c),
            None => match self
                .group_of(v.location)
                .and_then(|g| Some(self.moved.get(&g)? + (v.location - self.groups[g].0)))
            {
                Some(l) => (l, 0),
                None => return,
            },
        };
        if new != v.location {
            set_location(m, v.id, new);
        }
        if component != 0 {
            decorate(m, v.id, Decoration::Component, vec![Operand::LiteralBit32(component)]);
        }
        if let Some(r) = report {
            if self.packed.contains_key(&v.location) && self.bins.iter().any(|b| b.1 == new && b.2 > v.components) {
                r.packed.push((v.location, new, component));
            } else if new != v.location {
                r.relocated.push((v.location, new));
            }
        }
    }
}

/// [`link_with`] on checked modules, changing them in place: the steps of
/// the module documentation, in order, each a function of [`Linking`].
fn link_checked(
    producer: &mut Module,
    consumer: &mut Module,
    level: Level,
    env: &LinkEnv,
) -> Result<Report, LinkError> {
    let producer_stage = stage_of(producer, "producer")?;
    let interpolating = stage_of(consumer, "consumer")? == Stage::Fragment;
    let mut l = Linking {
        producer,
        consumer,
        level,
        env,
        producer_stage,
        interpolating,
        dead: HashSet::new(),
        gone_inputs: HashSet::new(),
        report: Report::default(),
    };
    // 0a. Arrays and matrices indexed by constants, split per element.
    l.split_arrays()?;
    let mut outputs = interface(l.producer, StorageClass::Output, "producer")?;
    // 0b. Inputs never read.
    l.drop_unread_inputs()?;
    let mut inputs = interface(l.consumer, StorageClass::Input, "consumer")?;
    (l.report.locations_before, l.report.components_before) = usage(&outputs);
    // 1. Dead I/O.
    l.remove_dead_io(&outputs, &inputs)?;
    // 2. Propagation, else 3. deduplication, output by output (whole
    //    variables with a matching input at the same location and of the
    //    same footprint): what propagation leaves may merge with an earlier
    //    output.
    let by_location: BTreeMap<(u32, u32), &Var> =
        inputs.iter().map(|v| ((v.location, v.component.unwrap_or(0)), v)).collect();
    let mut firsts = Firsts::new();
    let candidates: Vec<&Var> = outputs.iter().filter(|o| !l.dead.contains(&o.id) && !o.xfb).collect();
    for o in candidates {
        let Some((input, value)) = l.pair(o, &by_location) else { continue };
        if !l.propagate(o, input, value)? {
            l.deduplicate(o, input, value, &mut firsts)?;
        }
    }
    // 4. Code motion.
    l.move_code(&outputs, &inputs)?;
    l.privatize_dead()?;
    // 5. Narrowing.
    l.narrow(&mut outputs, &mut inputs)?;
    // 5b. Convergent outputs, and 6. compaction.
    let convergent = l.convergent_outputs(&outputs, &inputs);
    l.compact(&outputs, &inputs, &convergent)?;
    forget_removed(l.producer);
    forget_removed(l.consumer);
    let after = interface(l.producer, StorageClass::Output, "producer")?;
    (l.report.locations_after, l.report.components_after) = usage(&after);
    Ok(l.report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{disassemble, glsl, glsl_for};
    use crate::{assemble, parse, validate, TargetEnv};

    fn pair(vs: &str, fs: &str, level: Level) -> (Report, String, String) {
        let mut p = parse(&glsl(vs, "vert").unwrap()).unwrap();
        let mut c = parse(&glsl(fs, "frag").unwrap()).unwrap();
        let r = link(&mut p, &mut c, level).unwrap();
        let (pw, cw) = (assemble(&p), assemble(&c));
        validate(&pw, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("producer: {e}\n{}", disassemble(&pw)));
        validate(&cw, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("consumer: {e}\n{}", disassemble(&cw)));
        interface_matches(&p, &c);
        (r, disassemble(&pw), disassemble(&cw))
    }

    /// Every consumer input has a producer output at the same location and
    /// component with the same footprint and scalar kind (the Vulkan
    /// interface-matching rule), and no two inputs overlap.
    pub(super) fn interface_matches(p: &Module, c: &Module) {
        let outs = interface(p, StorageClass::Output, "producer").unwrap();
        let ins = interface(c, StorageClass::Input, "consumer").unwrap();
        for i in &ins {
            let o = outs
                .iter()
                .find(|o| (o.location, o.component.unwrap_or(0)) == (i.location, i.component.unwrap_or(0)))
                .unwrap_or_else(|| panic!("input {}.{:?} unmatched", i.location, i.component));
            assert_eq!(
                (o.locations, o.components, o.kind),
                (i.locations, i.components, i.kind),
                "location {}.{:?}",
                i.location,
                i.component
            );
        }
        // Inputs sharing a location share their interpolation (Vulkan's
        // rule for components of one location).
        let mut interp_at: HashMap<u32, Vec<Decoration>> = HashMap::new();
        for i in ins.iter().filter(|i| i.locations == 1) {
            let mut d = i.interp.clone();
            d.sort_by_key(|d| *d as u32);
            let first = interp_at.entry(i.location).or_insert_with(|| d.clone());
            assert_eq!(*first, d, "location {}: inputs of different interpolation", i.location);
        }
        let mut used = HashSet::new();
        for i in &ins {
            let width = if i.locations == 1 { i.components } else { 4 };
            for l in i.location..i.location + i.locations {
                let first = i.component.unwrap_or(0);
                for c in first..first + width.min(4) {
                    assert!(used.insert((l, c)), "inputs overlap at {l}.{c}");
                }
            }
        }
    }

    const VS: &str = "#version 450\n";
    const FS: &str = "#version 450\nlayout(location=0) out vec4 o;\n";

    /// Scalar granularity: three interpolated float vectors of 3, 3 and 2
    /// components fill two locations (the second vec3 split after its first
    /// component), where whole-variable packing needs three. The consumer
    /// reads the split vector whole and by component; a written-back output
    /// (the producer reads it) is not split.
    #[test]
    fn vectors_split_across_locations_fill_them() {
        let vs = format!("{VS}layout(location=0) out vec3 a;\nlayout(location=1) out vec3 b;\nlayout(location=2) out vec2 c;\n\
            void main() {{ float t = float(gl_VertexIndex); gl_Position = vec4(t); a = vec3(t, 1.5 * t, 2.5 * t); b = a.zyx * 3.0; b.y = t * 7.0; c = a.xy + 0.25; }}\n");
        let fs = format!(
            "{FS}layout(location=0) in vec3 a;\nlayout(location=1) in vec3 b;\nlayout(location=2) in vec2 c;\n\
            void main() {{ o = vec4(a + b, b.z + c.x) * c.y; }}\n"
        );
        let (r, p, c) = pair(&vs, &fs, Level::Safe);
        assert_eq!((r.locations_before, r.locations_after), (3, 2), "{r:?}");
        assert_eq!(r.split, vec![(1, 1, 1)], "{r:?}");
        assert_eq!(r.components_after, 8, "{r:?}");
        for text in [&p, &c] {
            assert!(!text.contains("Location 2"), "{text}");
        }
        // Read back by the producer: no split, three locations.
        let vs_back = vs.replace("c = a.xy + 0.25;", "c = a.xy + b.xy;");
        let (r, _, _) = pair(&vs_back, &fs, Level::Safe);
        assert!(r.split.is_empty(), "{r:?}");
        assert_eq!(r.locations_after, 3, "{r:?}");
    }

    /// The convergent group: a push-constant expression (not propagated:
    /// [`link`] shows the consumer no push constants) is the same on every
    /// vertex, so at `full` it fills the interpolated group's last component
    /// and a second one the flat group's (promoted to flat, its store
    /// `x·0 + x`): two locations where `safe` needs three. Controls: the
    /// same at `safe`, and with the value varying per vertex, stored under
    /// a branch, read back by the producer or interpolated per sample
    /// (which may be what makes the fragment shader run per sample), three
    /// locations and no convergent packing.
    #[test]
    fn convergent_varyings_fill_any_group() {
        let vs = format!(
            "{VS}layout(push_constant) uniform P {{ vec4 tint; }} pc;\n\
            layout(location=0) out vec3 a;\nlayout(location=1) flat out vec3 b;\n\
            layout(location=2) out float u;\nlayout(location=3) noperspective out float v;\n\
            void main() {{ float t = float(gl_VertexIndex); gl_Position = vec4(t); a = vec3(t, 2.0 * t, 3.0 * t); \
            b = vec3(t * 5.0); u = pc.tint.x * pc.tint.y * pc.tint.z; V; }}\n"
        );
        let fs = format!(
            "{FS}layout(location=0) in vec3 a;\nlayout(location=1) flat in vec3 b;\n\
            layout(location=2) in float u;\nlayout(location=3) noperspective in float v;\n\
            void main() {{ o = vec4(a + b, u * v); }}\n"
        );
        let convergent = vs.replace("V;", "v = pc.tint.w + pc.tint.x;");
        let (r, p, c) = pair(&convergent, &fs, Level::Full);
        assert_eq!((r.locations_before, r.locations_after), (4, 2), "{r:?}");
        assert_eq!(r.convergent, vec![(3, true)], "{r:?}");
        assert!(r.packed.contains(&(2, 0, 3)) && r.packed.contains(&(3, 1, 3)), "{r:?}");
        assert!(!c.contains("NoPerspective"), "{c}");
        assert!(p.matches("NoContraction").count() >= 2, "{p}");
        let (r, _, _) = pair(&convergent, &fs, Level::Safe);
        assert_eq!((r.locations_after, r.convergent.len()), (3, 0), "{r:?}");
        let controls = [
            "v = pc.tint.w + t;",
            "if (t > 1.0) v = pc.tint.w; else v = pc.tint.x;",
            // Read back by the producer.
            "v = pc.tint.w + pc.tint.x; b.x = v * 2.0;",
        ];
        for v in controls {
            let (r, _, _) = pair(&vs.replace("V;", v), &fs, Level::Full);
            assert_eq!((r.locations_after, r.convergent.len()), (3, 0), "{v}: {r:?}");
        }
        // Interpolated per sample: it keeps its group.
        let (vs_s, fs_s) = (convergent.replace("noperspective", "sample"), fs.replace("noperspective", "sample"));
        let (r, _, _) = pair(&vs_s, &fs_s, Level::Full);
        assert_eq!((r.locations_after, r.convergent.len()), (3, 0), "{r:?}");
    }

    /// A value read through a buffer device address taken from push
    /// constants is not convergent (the draw may write that memory): the
    /// pair keeps three locations at `full`; read from the push constants
    /// themselves, it joins the flat group: two.
    /// The seed works on scalars: a convergent vec2 with no room whole in
    /// any group fills the holes of two groups of different interpolation
    /// (its first component smooth in `a`'s location, its second flat in
    /// `b`'s, `x·0 + x` stored): two locations where whole vectors need
    /// three. Controls: at `safe` (no convergent group) three locations, and
    /// with the value varying per vertex no split.
    #[test]
    fn a_convergent_vector_fills_holes_of_two_groups() {
        let vs = format!(
            "{VS}layout(push_constant) uniform P {{ vec4 tint; }} pc;\n\
            layout(location=0) out vec3 a;\nlayout(location=1) flat out vec3 b;\nlayout(location=2) out vec2 w;\n\
            void main() {{ float t = float(gl_VertexIndex); gl_Position = vec4(t); a = vec3(t, 2.0 * t, 3.0 * t); \
            b = vec3(t * 5.0); W; }}\n"
        );
        let fs = format!(
            "{FS}layout(location=0) in vec3 a;\nlayout(location=1) flat in vec3 b;\nlayout(location=2) in vec2 w;\n\
            void main() {{ o = vec4(a + b, w.x - w.y); }}\n"
        );
        let convergent = vs.replace("W;", "w = pc.tint.xy * pc.tint.zw;");
        let (r, p, c) = pair(&convergent, &fs, Level::Full);
        assert_eq!((r.locations_before, r.locations_after), (3, 2), "{r:?}");
        assert_eq!(r.split, vec![(2, 1, 1)], "{r:?}");
        assert!(r.packed.contains(&(2, 0, 3)), "{r:?}");
        assert!(c.matches("Component 3").count() >= 2, "{c}");
        assert!(p.contains("NoContraction"), "{p}");
        let (r, _, _) = pair(&convergent, &fs, Level::Safe);
        assert_eq!((r.locations_after, r.split.len()), (3, 0), "{r:?}");
        let varying = vs.replace("W;", "w = pc.tint.xy * t;");
        let (r, _, _) = pair(&varying, &fs, Level::Full);
        assert_eq!(r.locations_after, 3, "{r:?}");
    }

    #[test]
    fn buffer_device_address_loads_are_not_convergent() {
        let vs = "#version 450\n#extension GL_EXT_buffer_reference : require\n\
            layout(buffer_reference) buffer B { vec4 x; };\n\
            layout(push_constant) uniform P { vec4 tint; B b; } pc;\n\
            layout(location=0) out vec3 a;\nlayout(location=1) flat out vec3 f;\n\
            layout(location=2) out float u;\nlayout(location=3) out float v;\n\
            void main() { float t = float(gl_VertexIndex); gl_Position = vec4(t); a = vec3(t, 2.0 * t, 3.0 * t); \
            f = vec3(t * 5.0); u = t * 0.5; V; }\n";
        let fs = format!(
            "{FS}layout(location=0) in vec3 a;\nlayout(location=1) flat in vec3 f;\n\
            layout(location=2) in float u;\nlayout(location=3) in float v;\n\
            void main() {{ o = vec4(a + f, u * v); }}\n"
        );
        let linked = |v: &str| {
            let mut p = parse(&glsl_for(&vs.replace("V;", v), "vert", "vulkan1.2").unwrap()).unwrap();
            let mut c = parse(&glsl(&fs, "frag").unwrap()).unwrap();
            let r = link(&mut p, &mut c, Level::Full).unwrap();
            validate(&assemble(&p), TargetEnv::Vulkan1_2).unwrap_or_else(|e| panic!("{e}"));
            interface_matches(&p, &c);
            r
        };
        let r = linked("v = pc.b.x.y + pc.tint.w;");
        assert_eq!((r.locations_after, r.convergent.len()), (3, 0), "{r:?}");
        let r = linked("v = pc.tint.y + pc.tint.w;");
        assert_eq!((r.locations_after, r.convergent.clone()), (2, vec![(3, true)]), "{r:?}");
    }

    /// A tessellation evaluation shader's patch inputs are convergent (one
    /// value for the whole patch): an output computed from one fills the
    /// flat group of the fragment shader's inputs at `full`; an output from
    /// `gl_TessCoord` does not.
    #[test]
    fn patch_inputs_are_convergent() {
        let tese = "#version 450\nlayout(triangles) in;\nlayout(location=0) patch in float k;\n\
            layout(location=0) out vec4 a;\nlayout(location=1) flat out vec3 b;\nlayout(location=2) out float u;\n\
            void main() { vec3 t = gl_TessCoord; gl_Position = vec4(t, 1.0); a = vec4(t * 2.0, t.y); b = t; u = U; }\n";
        let fs = format!(
            "{FS}layout(location=0) in vec4 a;\nlayout(location=1) flat in vec3 b;\nlayout(location=2) in float u;\n\
            void main() {{ o = a + vec4(b, u); }}\n"
        );
        let link_tese = |u: &str| {
            let mut p = parse(&glsl(&tese.replace("U;", u), "tese").unwrap()).unwrap();
            let mut c = parse(&glsl(&fs, "frag").unwrap()).unwrap();
            let r = link(&mut p, &mut c, Level::Full).unwrap();
            for w in [assemble(&p), assemble(&c)] {
                validate(&w, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{}", disassemble(&w)));
            }
            interface_matches(&p, &c);
            r
        };
        // (`a` fills its location: the patch value joins `b`'s, flat.)
        let r = link_tese("k * 3.0 + 1.0;");
        assert_eq!((r.locations_after, r.convergent.clone()), (2, vec![(2, true)]), "{r:?}");
        let r = link_tese("t.x * k;");
        assert_eq!((r.locations_after, r.convergent.len()), (3, 0), "{r:?}");
    }

    /// Arrays and matrices indexed with constants are split into one
    /// varying per element (column), which then compact like vectors: a
    /// `vec2[2]`, a `mat2` read whole and a `float[3]` of which two
    /// elements are read take 3 locations instead of 7 at `safe`. Controls:
    /// an element read with a non-constant index keeps the array whole (in
    /// its own locations), and so does a matrix whose column the producer
    /// writes with one.
    #[test]
    fn constant_indexed_arrays_and_matrices_are_split() {
        let vs = format!(
            "{VS}layout(location=0) out vec2 a[2];\nlayout(location=2) out mat2 m;\nlayout(location=4) out float w[3];\n\
            M\nvoid main() {{ float t = float(gl_VertexIndex); gl_Position = vec4(t); a[0] = vec2(t, 1.0 + t); \
            a[1] = a[0] * 2.0; W; w[0] = t * 3.0; w[1] = t; w[2] = t * 4.0; }}\n"
        );
        let fs = format!(
            "{FS}layout(location=0) in vec2 a[2];\nlayout(location=2) in mat2 m;\nlayout(location=4) in float w[3];\n\
            void main() {{ o = vec4(a[0] + m * a[1], w[0], R); }}\n"
        );
        let split_vs = vs.replace("M\n", "").replace("W;", "m = mat2(t, 2.0 * t, 3.0, t * t);");
        let (r, p, c) = pair(&split_vs, &fs.replace("R", "w[2]"), Level::Safe);
        assert_eq!(r.split_arrays, vec![0, 2, 4], "{r:?}");
        assert_eq!((r.locations_before, r.locations_after), (7, 3), "{r:?}");
        assert_eq!(r.removed_dead, vec![5], "{r:?}");
        // (No interface variable of an array or matrix type is left.)
        for text in [&p, &c] {
            let variables: Vec<&str> = text.lines().filter(|l| l.contains("OpVariable")).collect();
            assert!(variables.iter().all(|v| !v.contains("_arr_") && !v.contains("mat2")), "{text}");
        }
        // Indirectly indexed: `w` stays an array in locations of its own.
        let (r, _, _) = pair(&split_vs, &fs.replace("R", "w[uint(gl_FragCoord.x) % 3u]"), Level::Safe);
        assert_eq!(r.split_arrays, vec![0, 2], "{r:?}");
        assert_eq!(r.locations_after, 5, "{r:?}");
        // A column written with a non-constant index in the producer: the
        // matrix stays whole.
        let dynamic = vs.replace("M\n", "").replace("W;", "m = mat2(1.0); m[gl_VertexIndex & 1] = vec2(t);");
        let (r, _, _) = pair(&dynamic, &fs.replace("R", "w[2]"), Level::Safe);
        assert_eq!((r.split_arrays.clone(), r.locations_after), (vec![0, 4], 4), "{r:?}");
        // Written through a function's `out` parameter (glslang copies it
        // back whole): split like any whole store.
        let call = vs.replace("M\n", "void fill(out mat2 x, float t) { x = mat2(t); }\n").replace("W;", "fill(m, t);");
        let (r, _, _) = pair(&call, &fs.replace("R", "w[2]"), Level::Safe);
        assert_eq!((r.split_arrays.clone(), r.locations_after), (vec![0, 2, 4], 3), "{r:?}");
    }

    #[test]
    fn dead_outputs_are_removed_and_survivors_compacted() {
        let vs = format!("{VS}layout(location=0) out vec4 a;\nlayout(location=3) out vec4 dead;\nlayout(location=5) out vec2 b;\nvoid main() {{ gl_Position = vec4(0); a = vec4(1,2,3,float(gl_VertexIndex)); dead = a * 2.0; b = a.xy; }}\n");
        let fs = format!("{FS}layout(location=0) in vec4 a;\nlayout(location=5) in vec2 b;\nvoid main() {{ o = a + vec4(b, 0, 0); }}\n");
        let (r, p, c) = pair(&vs, &fs, Level::Safe);
        assert_eq!(r.removed_dead, vec![3]);
        assert_eq!((r.locations_before, r.locations_after), (3, 2));
        assert_eq!((r.components_before, r.components_after), (10, 6));
        assert_eq!(r.relocated, vec![(5, 1)]);
        assert!(p.contains("Location 1") && !p.contains("Location 5"), "{p}");
        assert!(c.contains("Location 1") && !c.contains("Location 5"), "{c}");
    }

    #[test]
    fn vectors_shrink_to_the_components_read_and_then_pack() {
        // a: .xy read (vec4 -> vec2); b: only .w read (vec4 -> float, written
        // whole and through a component); c: .x and .z read through a
        // swizzle (vec3 -> vec2). Then a and c (float, same interpolation)
        // share one location, b another slot of it.
        let vs = format!("{VS}layout(location=0) out vec4 a;\nlayout(location=1) out vec4 b;\nlayout(location=2) out vec3 c;\nvoid main() {{ float f = float(gl_VertexIndex); gl_Position = vec4(f); a = vec4(f, f + 1.0, f + 2.0, f + 3.0); b = vec4(f * 2.0); b.w = f * 5.0; b.y = 9.0; c = vec3(f, 7.0, f * 3.0); }}\n");
        let fs = format!("{FS}layout(location=0) in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) in vec3 c;\nvoid main() {{ o = vec4(a.xy, b.w, 0.0) + c.xzxz; }}\n");
        let (r, p, cs) = pair(&vs, &fs, Level::Safe);
        assert_eq!(r.narrowed, vec![(0, 4, 2), (1, 4, 1), (2, 3, 2)], "{r:?}");
        assert_eq!((r.locations_before, r.locations_after), (3, 2), "{r:?}");
        assert_eq!((r.components_before, r.components_after), (11, 5), "{r:?}");
        assert!(p.contains("OpVectorShuffle") && cs.contains("OpVectorShuffle"), "{p}\n{cs}");
    }

    fn pair_with(vs: &str, fs: &str, level: Level, env: &LinkEnv) -> (Report, String, String) {
        let mut p = parse(&crate::testing::optimize(&glsl(vs, "vert").unwrap())).unwrap();
        let mut c = parse(&glsl(fs, "frag").unwrap()).unwrap();
        let r = link_with(&mut p, &mut c, level, env).unwrap();
        let (pw, cw) = (assemble(&p), assemble(&c));
        validate(&pw, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("producer: {e}\n{}", disassemble(&pw)));
        validate(&cw, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("consumer: {e}\n{}", disassemble(&cw)));
        interface_matches(&p, &c);
        (r, disassemble(&pw), disassemble(&cw))
    }

    #[test]
    fn uniform_expressions_move_where_the_consumer_sees_their_sources() {
        let vs = format!("{VS}layout(set=0, binding=1) uniform U {{ vec4 tint; float k; }};\nlayout(push_constant) uniform P {{ vec4 offset; }};\nlayout(location=0) flat out vec4 a;\nlayout(location=1) out vec4 b;\nlayout(location=2) out vec4 v;\nvoid main() {{ gl_Position = vec4(0); a = tint * k + offset; b = tint * 2.0; v = vec4(float(gl_VertexIndex)); }}\n");
        let fs = format!("{FS}layout(location=0) flat in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) in vec4 v;\nvoid main() {{ o = a + b + v; }}\n");
        let seen =
            LinkEnv { uniform_buffers: HashSet::from([(0, 1)]), push_constants: vec![(0, 16)], ..Default::default() };
        // safe: the flat one moves (with its UBO and push-constant block).
        let (r, _, c) = pair_with(&vs, &fs, Level::Safe, &seen);
        assert_eq!(r.propagated_uniforms, vec![0], "{r:?}");
        assert!(c.contains("DescriptorSet 0") && c.contains("Binding 1") && c.contains("PushConstant"), "{c}");
        assert_eq!(r.locations_after, 2);
        // full: the interpolated one too, with Infs made NaNs (x*0 + x, exact).
        let (r, _, c) = pair_with(&vs, &fs, Level::Full, &seen);
        assert_eq!(r.propagated_uniforms, vec![0, 1], "{r:?}");
        assert!(c.contains("NoContraction"), "{c}");
        assert_eq!(r.locations_after, 1);
        // Not visible to the fragment stage: nothing moves, and the report says why.
        let (r, _, _) = pair_with(&vs, &fs, Level::Full, &LinkEnv::default());
        assert!(r.propagated_uniforms.is_empty(), "{r:?}");
        assert!(r.notes.iter().any(|n| n.contains("not visible")), "{r:?}");
    }

    #[test]
    fn sums_of_interpolated_inputs_move_to_the_producer_at_full() {
        let vs = format!("{VS}layout(location=0) out vec4 a;\nlayout(location=1) out vec4 b;\nlayout(location=2) flat out vec4 f;\nvoid main() {{ float x = float(gl_VertexIndex); gl_Position = vec4(x); a = vec4(x, 1, 2, 3); b = vec4(2, x, 4, x); f = vec4(x * 2.0); }}\n");
        let fs = format!("{FS}layout(location=0) in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) flat in vec4 f;\nvoid main() {{ o = (a + b) * f; }}\n");
        let (r, _, _) = pair(&vs, &fs, Level::Safe);
        assert!(r.moved_sums.is_empty(), "{r:?}");
        let (r, p, c) = pair(&vs, &fs, Level::Full);
        assert_eq!(r.moved_sums, vec![(0, 1)], "{r:?}");
        assert_eq!(r.locations_after, 2, "{r:?}");
        assert!(p.contains("OpFAdd %v4float"), "{p}");
        assert!(!c.contains("OpFAdd"), "{c}");
        // A flat input and an interpolated one never combine.
        let fs2 = format!("{FS}layout(location=0) in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) flat in vec4 f;\nvoid main() {{ o = (a + f) * b; }}\n");
        let (r, _, _) = pair(&vs, &fs2, Level::Full);
        assert!(r.moved_sums.is_empty(), "{r:?}");
    }

    #[test]
    fn sums_with_and_products_by_constants_move_too() {
        let vs = format!("{VS}layout(location=0) out vec4 a;\nlayout(location=1) out vec4 b;\nlayout(location=2) noperspective out float t;\nvoid main() {{ float x = float(gl_VertexIndex); gl_Position = vec4(x); a = vec4(x, 1, 2, 3); b = vec4(2, x, 4, x); t = x * 0.25; }}\n");
        let fs = format!("{FS}layout(location=0) in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) noperspective in float t;\nvoid main() {{ o = (a + b) * 0.5 + vec4(t * 3.0 + 1.0); }}\n");
        let (r, _, _) = pair(&vs, &fs, Level::Safe);
        assert!(r.moved_constant_ops.is_empty() && r.moved_sums.is_empty(), "{r:?}");
        let (r, p, c) = pair(&vs, &fs, Level::Full);
        assert_eq!(r.moved_sums, vec![(0, 1)], "{r:?}");
        // (a + b) * 0.5, t * 3.0, then + 1.0.
        let mut moved = r.moved_constant_ops.clone();
        moved.sort();
        assert_eq!(moved, vec![0, 2, 2], "{r:?}");
        assert!(p.contains("OpVectorTimesScalar") || p.contains("OpFMul %v4float"), "{p}");
        // Only the final sum of the two moved inputs stays in the consumer.
        assert_eq!(
            c.matches("OpFAdd").count() + c.matches("OpFMul").count() + c.matches("OpVectorTimesScalar").count(),
            1,
            "{c}"
        );
    }

    #[test]
    fn whole_variables_say_why() {
        // (Indexed with non-constant indices: not split into elements.)
        let vs = format!("{VS}layout(location=0) out vec4 a[2];\nlayout(location=2) out mat2 m;\nvoid main() {{ gl_Position = vec4(0); a[0] = vec4(gl_VertexIndex); a[1] = vec4(1); m = mat2(1.0); m[gl_VertexIndex & 1] = vec2(float(gl_VertexIndex)); }}\n");
        let fs = format!("{FS}layout(location=0) in vec4 a[2];\nlayout(location=2) in mat2 m;\nvoid main() {{ o = a[int(gl_FragCoord.x) & 1] + vec4(m[0], m[1]); }}\n");
        let (r, _, _) = pair(&vs, &fs, Level::Safe);
        assert!(r.notes.iter().any(|n| n == "location 0: kept whole: an array or matrix (whole locations)"), "{r:?}");
        assert!(r.notes.iter().any(|n| n == "location 2: kept whole: an array or matrix (whole locations)"), "{r:?}");
    }

    #[test]
    fn outputs_read_back_are_not_narrowed() {
        let vs = format!("{VS}layout(location=0) out vec4 a;\nvoid main() {{ gl_Position = vec4(0); a = vec4(float(gl_VertexIndex)); a.x = a.w + 1.0; }}\n");
        let fs = format!("{FS}layout(location=0) in vec4 a;\nvoid main() {{ o = vec4(a.x); }}\n");
        let (r, _, _) = pair(&vs, &fs, Level::Safe);
        assert!(r.narrowed.is_empty(), "{r:?}");
    }

    #[test]
    fn flat_constants_move_to_the_consumer() {
        let vs = format!("{VS}layout(location=0) flat out int k;\nlayout(location=1) out vec4 v;\nvoid main() {{ gl_Position = vec4(0); k = 7; v = vec4(float(gl_VertexIndex)); }}\n");
        let fs = format!("{FS}layout(location=0) flat in int k;\nlayout(location=1) in vec4 v;\nvoid main() {{ o = v * float(k); }}\n");
        let (r, p, c) = pair(&vs, &fs, Level::Safe);
        assert_eq!(r.propagated_constants, vec![0]);
        assert!(c.contains("OpConstant %int 7"), "{c}");
        assert_eq!(r.locations_after, 1);
        assert!(!p.contains("Location 1"), "v moved to location 0:\n{p}");
    }

    #[test]
    fn interpolated_constants_move_only_at_full() {
        let vs =
            format!("{VS}layout(location=0) out vec4 k;\nvoid main() {{ gl_Position = vec4(0); k = vec4(0.5); }}\n");
        let fs = format!("{FS}layout(location=0) in vec4 k;\nvoid main() {{ o = k; }}\n");
        let (r, _, _) = pair(&vs, &fs, Level::Safe);
        assert!(r.propagated_constants.is_empty());
        let (r, _, _) = pair(&vs, &fs, Level::Full);
        assert_eq!(r.propagated_constants, vec![0]);
        assert_eq!(r.locations_after, 0);
    }

    #[test]
    fn duplicated_outputs_become_one() {
        let vs = format!("{VS}layout(location=0) out vec4 a;\nlayout(location=1) out vec4 b;\nlayout(location=2) out vec4 c;\nvoid main() {{ vec4 x = vec4(float(gl_VertexIndex)); gl_Position = x; a = x; b = x; c = x * 3.0; }}\n");
        let fs = format!("{FS}layout(location=0) in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) in vec4 c;\nvoid main() {{ o = a + b + c; }}\n");
        // glslang keeps `x` in a function variable: optimise to SSA first.
        let mut p = parse(&crate::testing::optimize(&glsl(&vs, "vert").unwrap())).unwrap();
        let mut cm = parse(&glsl(&fs, "frag").unwrap()).unwrap();
        let r = link(&mut p, &mut cm, Level::Safe).unwrap();
        let (pw, cw) = (assemble(&p), assemble(&cm));
        validate(&pw, TargetEnv::Vulkan1_1).unwrap();
        validate(&cw, TargetEnv::Vulkan1_1).unwrap();
        interface_matches(&p, &cm);
        assert_eq!(r.deduplicated, vec![(1, 0)]);
        assert_eq!(r.locations_after, 2);
    }

    /// A vertex and fragment shader (after the heads `vs` and `fs`) passing
    /// `vars` — (interpolation qualifier, type, name, value written) — at
    /// locations 0, 1, …; the fragment shader sums `read(type, name)` of each.
    fn declared_pair(
        mut vs: String,
        mut fs: String,
        vars: &[(&str, &str, &str, &str)],
        read: impl Fn(&str, &str) -> String,
    ) -> (String, String) {
        let (mut body, mut sum) = (String::new(), String::new());
        for (n, (q, ty, name, value)) in vars.iter().enumerate() {
            vs += &format!("layout(location={n}) {q} out {ty} {name};\n");
            fs += &format!("layout(location={n}) {q} in {ty} {name};\n");
            body += &format!("{name} = {value}; ");
            sum += &format!(" + {}", read(ty, name));
        }
        (
            format!("{vs}void main() {{ gl_Position = vec4(0); {body}}}\n"),
            format!("{fs}void main() {{ o = vec4(0.0{sum}); }}\n"),
        )
    }

    #[test]
    fn narrow_outputs_share_locations_by_kind_and_interpolation() {
        let vars = [
            ("flat", "int", "a", "gl_VertexIndex"),
            ("flat", "int", "b", "gl_VertexIndex * 2"),
            ("", "float", "c", "float(gl_VertexIndex)"),
            ("noperspective", "float", "d", "float(gl_VertexIndex) * 3.0"),
            ("", "float", "e", "float(gl_VertexIndex) * 5.0"),
            ("", "vec3", "f", "vec3(float(gl_VertexIndex) * 7.0)"),
            ("flat", "uint", "h", "uint(gl_VertexIndex)"),
        ];
        // The vec3 is read whole (all components), so it is not narrowed.
        let (vs, fs) = declared_pair(VS.to_string(), FS.to_string(), &vars, |ty, name| {
            if ty == "vec3" {
                format!("float({name}.x + {name}.y + {name}.z)")
            } else {
                format!("float({name})")
            }
        });
        let (r, p, _) = pair(&vs, &fs, Level::Safe);
        // a+b: flat ints; c+e: smooth floats; d alone (noperspective); f (a
        // vec3) does not fit beside c+e; h (uint) does not join the ints.
        assert_eq!((r.locations_before, r.locations_after), (7, 5), "{r:?}");
        assert_eq!(r.packed, vec![(0, 0, 0), (1, 0, 1), (2, 1, 0), (4, 1, 1)], "{r:?}");
        assert_eq!(r.relocated, vec![(3, 2), (5, 3), (6, 4)], "{r:?}");
        assert!(p.contains("Component 1"), "{p}");
    }

    /// 16-bit varyings pack like 32-bit ones — each takes a whole component
    /// — but only with 16-bit ones of their kind and interpolation (the
    /// seed's 16-bit groups), never beside a 32-bit value.
    #[test]
    fn sixteen_bit_varyings_pack_in_groups_of_their_own() {
        let ext = "#extension GL_EXT_shader_explicit_arithmetic_types : require\n";
        let vars = [
            ("", "float16_t", "a", "float16_t(gl_VertexIndex)"),
            ("", "f16vec2", "b", "f16vec2(gl_VertexIndex, 2)"),
            ("", "float", "c", "float(gl_VertexIndex) * 3.0"),
            ("flat", "int16_t", "d", "int16_t(gl_VertexIndex)"),
            ("flat", "i16vec2", "e", "i16vec2(gl_VertexIndex, 5)"),
            ("flat", "int", "f", "gl_VertexIndex * 7"),
            ("", "float16_t", "g", "float16_t(gl_VertexIndex) * float16_t(9.0)"),
            ("flat", "uint16_t", "h", "uint16_t(gl_VertexIndex)"),
        ];
        let (vs, fs) = declared_pair(
            format!("{VS}{ext}"),
            format!("#version 450\n{ext}layout(location=0) out vec4 o;\n"),
            &vars,
            |ty, name| {
                if ty.contains("vec2") {
                    format!("float({name}.x) + float({name}.y)")
                } else {
                    format!("float({name})")
                }
            },
        );
        let (r, p, c) = pair(&vs, &fs, Level::Safe);
        // a+b+g: smooth 16-bit floats; c alone (32-bit); d+e: flat 16-bit
        // ints; f alone (32-bit int); h alone (16-bit uint).
        assert_eq!((r.locations_before, r.locations_after), (8, 5), "{r:?}");
        assert_eq!(r.packed, vec![(0, 0, 0), (1, 0, 1), (3, 2, 0), (4, 2, 1), (6, 0, 3)], "{r:?}");
        assert!(p.contains("StorageInputOutput16") && c.contains("Component 3"), "{p}\n{c}");
    }

    #[test]
    fn builtins_and_xfb_outputs_stay() {
        let vs = format!("{VS}layout(xfb_buffer=0, xfb_offset=0, location=0) out vec4 captured;\nvoid main() {{ gl_Position = vec4(1); gl_PointSize = 1.0; captured = vec4(2); }}\n");
        let fs = format!("{FS}void main() {{ o = vec4(1); }}\n");
        let (r, p, _) = pair(&vs, &fs, Level::Full);
        assert!(r.removed_dead.is_empty());
        assert!(p.contains("BuiltIn Position"));
        assert!(p.contains("Location 0"));
    }
}

/// The per-step matrix: producer stage × component type × interpolation
/// qualifier × step, each a producer/FS pair, linked, validated and
/// interface-checked, with the
/// expected outcome computed from the rules above (not from the output).
#[cfg(test)]
mod matrix {
    use super::*;
    use crate::testing::glsl;
    use crate::{assemble, parse, validate, TargetEnv};

    const TYPES: &[(&str, &str, bool)] = &[
        // (GLSL type, a constant of it, integer?)
        ("float", "0.5", false),
        ("vec2", "vec2(0.5, 0.25)", false),
        ("vec3", "vec3(0.5)", false),
        ("vec4", "vec4(0.5, 0.25, 0.125, 1.0)", false),
        ("int", "7", true),
        ("uint", "9u", true),
        ("ivec2", "ivec2(1, 2)", true),
        ("uvec4", "uvec4(1u)", true),
    ];
    const QUALIFIERS: &[&str] = &["", "flat", "noperspective", "centroid"];

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Step {
        Dead,
        Constant,
        Duplicate,
    }

    fn value_of(ty: &str, int: bool) -> String {
        // A non-constant value of `ty` derived from the vertex index.
        let s = if int { format!("{ty}(gl_VertexIndex)") } else { format!("{ty}(float(gl_VertexIndex))") };
        s
    }

    fn to_color(ty: &str, name: &str) -> String {
        match ty {
            "float" | "int" | "uint" => format!("vec4(float({name}))"),
            "vec2" | "ivec2" => format!("vec4(vec2({name}), 0.0, 1.0)"),
            "vec3" => format!("vec4({name}, 1.0)"),
            _ => format!("vec4({name})"),
        }
    }

    /// The producer stages: vertex, tessellation evaluation and geometry.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Stage {
        Vertex,
        TessEval,
        Geometry,
    }

    /// A producer of stage `stage` writing `a` and `b` (declarations `decl`).
    fn producer(stage: Stage, decl: &str, a: &str, b: &str) -> (String, &'static str) {
        match stage {
            Stage::Vertex => (format!("#version 450\n{decl}void main() {{ gl_Position = vec4(0); a = {a}; b = {b}; }}\n"), "vert"),
            Stage::TessEval => (
                format!("#version 450\nlayout(triangles) in;\n{decl}void main() {{ gl_Position = vec4(gl_TessCoord, 1.0); a = {a}; b = {b}; }}\n"),
                "tese",
            ),
            // Three vertices, each storing the outputs again.
            Stage::Geometry => (
                format!("#version 450\nlayout(triangles) in;\nlayout(triangle_strip, max_vertices = 3) out;\n{decl}void main() {{ for (int i = 0; i < 3; i++) {{ gl_Position = gl_in[i].gl_Position; a = {a}; b = {b}; EmitVertex(); }} EndPrimitive(); }}\n"),
                "geom",
            ),
        }
    }

    #[test]
    fn every_stage_type_qualifier_and_step() {
        let mut cases = 0;
        for stage in [Stage::Vertex, Stage::TessEval, Stage::Geometry] {
            for (ty, constant, int) in TYPES {
                // Every type from the vertex shader; a subset from the others.
                if stage != Stage::Vertex && !matches!(*ty, "float" | "vec4" | "int") {
                    continue;
                }
                for q in QUALIFIERS {
                    // Integer varyings must be flat; skip the invalid combinations.
                    if *int && *q != "flat" {
                        continue;
                    }
                    for step in [Step::Dead, Step::Constant, Step::Duplicate] {
                        for level in [Level::Safe, Level::Full] {
                            let v = match stage {
                                Stage::Vertex => value_of(ty, *int),
                                Stage::TessEval if *int => format!("{ty}(gl_PrimitiveID)"),
                                Stage::TessEval => format!("{ty}(gl_TessCoord.x)"),
                                Stage::Geometry if *int => format!("{ty}(i)"),
                                Stage::Geometry => format!("{ty}(float(i))"),
                            };
                            let (a, b) = match step {
                                Step::Dead => (v.clone(), v.clone()),
                                Step::Constant => (constant.to_string(), v.clone()),
                                Step::Duplicate => (v.clone(), v.clone()),
                            };
                            let decl =
                                format!("layout(location=0) {q} out {ty} a;\nlayout(location=1) {q} out {ty} b;\n");
                            let (src, kind) = producer(stage, &decl, &a, &b);
                            let reads_a = step != Step::Dead;
                            let fs = format!(
                                "#version 450\nlayout(location=0) out vec4 o;\n{}layout(location=1) {q} in {ty} b;\nvoid main() {{ o = {}{}; }}\n",
                                if reads_a { format!("layout(location=0) {q} in {ty} a;\n") } else { String::new() },
                                to_color(ty, "b"),
                                if reads_a { format!(" + {}", to_color(ty, "a")) } else { String::new() },
                            );
                            let mut p = parse(&crate::testing::optimize(&glsl(&src, kind).unwrap())).unwrap();
                            let mut c = parse(&glsl(&fs, "frag").unwrap()).unwrap();
                            let r = link(&mut p, &mut c, level).unwrap();
                            let (pw, cw) = (assemble(&p), assemble(&c));
                            let ctx = format!("{stage:?} {ty} {q} {step:?} {level:?}");
                            validate(&pw, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{ctx} producer: {e}"));
                            validate(&cw, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{ctx} consumer: {e}"));
                            super::tests::interface_matches(&p, &c);
                            // (The geometry shader's loop stores one SSA value per
                            // output, the same for a and b: deduplicated too.)
                            match step {
                                Step::Dead => assert_eq!(r.removed_dead, vec![0], "{ctx}"),
                                Step::Constant => {
                                    let expected = *q == "flat" || level == Level::Full;
                                    assert_eq!(r.propagated_constants == vec![0], expected, "{ctx}: {r:?}");
                                }
                                Step::Duplicate => assert_eq!(r.deduplicated, vec![(1, 0)], "{ctx}: {r:?}"),
                            }
                            // One variable survives, at location 0, unless two do:
                            // then two 32-bit values of at most 2 components share
                            // one location.
                            let both = step == Step::Constant && r.propagated_constants.is_empty();
                            let packs = matches!(*ty, "float" | "vec2" | "int" | "uint" | "ivec2");
                            assert_eq!(r.locations_after, 1 + usize::from(both && !packs), "{ctx}: {r:?}");
                            assert_eq!(r.packed.len(), 2 * usize::from(both && packs), "{ctx}: {r:?}");
                            cases += 1;
                        }
                    }
                }
            }
        }
        // Vertex: 8 types; the others: float and vec4 (4 qualifiers), int (flat).
        assert_eq!(cases, (4 * 4 + 4) * 3 * 2 + 2 * (4 + 4 + 1) * 3 * 2);
    }
}

/// Invalid and unusual modules: an error value or a correct link, never a
/// panic, a hang or a stack overflow.
#[cfg(test)]
mod robustness {
    use super::*;
    use crate::testing::{assemble_text, disassemble, glsl, optimize, patch, self_referential_vector};
    use crate::{assemble, parse, validate, TargetEnv};

    const VS: &str = "#version 450\nlayout(location=0) out vec4 a;\nvoid main() { gl_Position = vec4(0); a = vec4(float(gl_VertexIndex)); }\n";
    const FS: &str =
        "#version 450\nlayout(location=0) in vec4 a;\nlayout(location=0) out vec4 o;\nvoid main() { o = a; }\n";

    /// Links the pair, expecting `want`, and checks that both modules are
    /// left as they were.
    fn refused(producer: &[u32], consumer: &[u32], env: &LinkEnv, want: LinkError) {
        let (mut p, mut c) = (parse(producer).unwrap(), parse(consumer).unwrap());
        let before = (assemble(&p), assemble(&c));
        assert_eq!(link_with(&mut p, &mut c, Level::Full, env), Err(want));
        assert!((assemble(&p), assemble(&c)) == before, "an error changed the modules");
    }

    /// The pair compiled from GLSL and linked at `level`; both results
    /// validate (see [`valid`]).
    fn linked(vs: &str, fs: &str, level: Level) -> (Module, Module, Report) {
        let (mut p, mut c) = (parse(&glsl(vs, "vert").unwrap()).unwrap(), parse(&glsl(fs, "frag").unwrap()).unwrap());
        let r = link(&mut p, &mut c, level).unwrap();
        valid(&p, &c);
        (p, c, r)
    }

    /// Unoptimized SPIR-V keeps every declared input in the interface, and
    /// reads an input into a value nothing uses (`vec3 v = normalize(b);`
    /// with `v` unused): neither is a read, so the producer's outputs for
    /// them are dead. Control: compared as spelled, both stay.
    #[test]
    fn inputs_declared_or_read_into_dead_values_are_unread() {
        let vs = "#version 450\nlayout(location = 0) out vec4 a;\nlayout(location = 1) out vec3 b;\n\
                  layout(location = 2) out vec2 c;\n\
                  void main() { a = vec4(gl_VertexIndex); b = a.xyz * 2.0; c = a.xy; gl_Position = a; }";
        let fs = "#version 450\nlayout(location = 0) in vec4 a;\nlayout(location = 1) in vec3 b;\n\
                  layout(location = 2) in vec2 c;\nlayout(location = 0) out vec4 o;\n\
                  void main() { vec3 v = normalize(b); float w = length(v) * 2.0; o = a; }";
        let (_, _, r) = linked(vs, fs, Level::Safe);
        assert_eq!(r.removed_dead, vec![1, 2], "{r:?}");
        assert_eq!(r.locations_after, 1, "{r:?}");
        let (mut p, mut c) = (parse(&glsl(vs, "vert").unwrap()).unwrap(), parse(&glsl(fs, "frag").unwrap()).unwrap());
        let spelled = LinkEnv { as_spelled: true, ..Default::default() };
        let r = link_with(&mut p, &mut c, Level::Safe, &spelled).unwrap();
        assert!(r.removed_dead.is_empty(), "as spelled: {r:?}");
    }

    /// The same pair links to the same modules every time: dead outputs are
    /// made private in id order (a hash set's order differs between sets,
    /// and the new pointer types' ids followed it). Four dead outputs, 24
    /// links in one process: one result.
    #[test]
    fn a_pair_links_the_same_every_time() {
        let vs = "#version 450\nlayout(location = 0) out vec4 a;\nlayout(location = 1) out vec3 b;\n\
                  layout(location = 2) out vec2 c;\nlayout(location = 3) out float d;\n\
                  layout(location = 4) out vec4 e;\n\
                  void main() { a = vec4(gl_VertexIndex); b = a.xyz; c = a.xy; d = a.w; e = a * 3.0; gl_Position = a; }";
        let fs = "#version 450\nlayout(location = 0) in vec4 a;\nlayout(location = 0) out vec4 o;\n\
                  void main() { o = a; }";
        let once = || {
            let (p, c, r) = linked(vs, fs, Level::Full);
            assert_eq!(r.removed_dead, vec![1, 2, 3, 4], "{r:?}");
            (assemble(&p), assemble(&c))
        };
        let first = once();
        for _ in 0..23 {
            assert!(once() == first, "a link of the same pair differs");
        }
    }

    /// The issue's example, as glslang emits it without `-O`: two outputs
    /// assigned from one local variable are stored from two different loads,
    /// yet they are one value and are merged.
    #[test]
    fn outputs_assigned_from_one_local_variable_are_deduplicated() {
        let vs = "#version 450\nlayout(location = 0) out vec2 d1;\nlayout(location = 1) out vec2 d2;\n\
                  void main() { vec2 q = vec2(gl_VertexIndex) * 0.5; d1 = q; d2 = q; gl_Position = vec4(q, 0, 1); }";
        let fs = "#version 450\nlayout(location = 0) in vec2 d1;\nlayout(location = 1) in vec2 d2;\n\
                  layout(location = 0) out vec4 o;\nvoid main() { o = vec4(d1, d2); }";
        // As compiled, the two stores write different ids (the control: the
        // linker cannot have merged them by comparing ids as written).
        let raw = parse(&glsl(vs, "vert").unwrap()).unwrap();
        let outputs: Vec<Word> = raw
            .types_global_values
            .iter()
            .filter(|i| {
                i.class.opcode == Op::Variable
                    && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Output))
            })
            .filter_map(|i| i.result_id)
            .collect();
        let stored: Vec<Vec<Word>> =
            outputs.iter().filter_map(|o| stored_values(&raw, *o)).filter(|v| !v.is_empty()).collect();
        assert!(stored.len() >= 2 && stored[0] != stored[1], "{stored:?}");
        let (_, _, r) = linked(vs, fs, Level::Safe);
        // (the second location, the first it now reads)
        assert_eq!(r.deduplicated, vec![(1, 0)], "{r:?}");
    }

    /// A local variable stored twice (its initial value, then in a branch)
    /// is not one value: the output it feeds is not a constant.
    #[test]
    fn a_variable_stored_in_a_branch_is_not_forwarded() {
        let vs = "#version 450\nlayout(location = 0) flat out int v;\n\
                  void main() { int a = 0; if (gl_VertexIndex > 1) { a = gl_VertexIndex; } v = a; gl_Position = vec4(0); }";
        let fs = "#version 450\nlayout(location = 0) flat in int v;\nlayout(location = 0) out vec4 o;\n\
                  void main() { o = vec4(float(v)); }";
        let (_, _, r) = linked(vs, fs, Level::Safe);
        assert!(r.propagated_constants.is_empty(), "{r:?}");
        assert_eq!(r.locations_after, 1, "{r:?}");
    }

    /// Both modules validate (a failure shows the module's disassembly).
    fn valid(p: &Module, c: &Module) {
        for (what, m) in [("producer", p), ("consumer", c)] {
            let w = assemble(m);
            validate(&w, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{what}: {e}\n{}", disassemble(&w)));
        }
    }

    /// The reproducer: this overflowed the stack (`scalar_kind` followed the
    /// vector's component type forever) and aborted the process.
    #[test]
    fn a_self_referential_type_is_an_error_not_a_stack_overflow() {
        let (vs, fs) = (glsl(VS, "vert").unwrap(), glsl(FS, "frag").unwrap());
        let mut bad = vs.clone();
        let v = self_referential_vector(&mut bad);
        assert!(validate(&bad, TargetEnv::Vulkan1_1).is_err());
        let want = LinkError::Malformed("producer", Malformed::ForwardReference(v));
        refused(&bad, &fs, &LinkEnv::default(), want);
        let mut bad = fs.clone();
        let v = self_referential_vector(&mut bad);
        refused(&vs, &bad, &LinkEnv::default(), LinkError::Malformed("consumer", Malformed::ForwardReference(v)));
    }

    #[test]
    fn a_self_referential_constant_is_an_error() {
        let vs = "#version 450\nlayout(location=0) flat out vec4 a;\nvoid main() { gl_Position = vec4(0); a = vec4(1, 2, 3, 4); }\n";
        let fs = "#version 450\nlayout(location=0) flat in vec4 a;\nlayout(location=0) out vec4 o;\nvoid main() { o = a; }\n";
        let mut bad = glsl(vs, "vert").unwrap();
        // %c = OpConstantComposite %v4float %c ...
        let c = patch(
            &mut bad,
            Op::ConstantComposite,
            |w| w.len() == 7,
            |w| {
                w[3] = w[2];
                w[2]
            },
        );
        let want = LinkError::Malformed("producer", Malformed::ForwardReference(c));
        refused(&bad, &glsl(fs, "frag").unwrap(), &LinkEnv::default(), want);
    }

    #[test]
    fn an_undefined_id_is_an_error() {
        let mut bad = glsl(VS, "vert").unwrap();
        // One more id in the bound, stored to `a` without a definition.
        let undefined = bad[3];
        bad[3] += 1;
        patch(&mut bad, Op::Store, |_| true, |w| w[2] = undefined);
        let want = LinkError::Malformed("producer", Malformed::Undefined(undefined));
        refused(&bad, &glsl(FS, "frag").unwrap(), &LinkEnv::default(), want);
    }

    /// Invalid SSA: a value computed from itself, met while following a
    /// uniform expression through the producer's code.
    #[test]
    fn a_cycle_in_a_uniform_expression_is_an_error() {
        let vs = "#version 450\nlayout(push_constant) uniform P { vec4 tint; float k; } pc;\nlayout(location=0) flat out vec4 a;\nvoid main() { gl_Position = vec4(0); a = pc.tint * pc.k; }\n";
        let fs = "#version 450\nlayout(location=0) flat in vec4 a;\nlayout(location=0) out vec4 o;\nvoid main() { o = a; }\n";
        let mut bad = optimize(&glsl(vs, "vert").unwrap());
        let product = patch(
            &mut bad,
            Op::VectorTimesScalar,
            |_| true,
            |w| {
                w[3] = w[2];
                w[2]
            },
        );
        let all = LinkEnv { all_visible: true, ..Default::default() };
        let want = LinkError::Malformed("producer", Malformed::Cyclic(product));
        refused(&bad, &glsl(fs, "frag").unwrap(), &all, want);
    }

    /// A producer whose output is an array of arrays `depth` deep (valid).
    fn nested_arrays(depth: usize, length: u32) -> Vec<u32> {
        let mut text = format!(
            "OpCapability Shader\nOpMemoryModel Logical GLSL450\nOpEntryPoint Vertex %main \"main\" %out\nOpDecorate %out Location 0\n%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%float = OpTypeFloat 32\n%uint = OpTypeInt 32 0\n%n = OpConstant %uint {length}\n%a0 = OpTypeArray %float %n\n"
        );
        for k in 1..depth {
            text += &format!("%a{k} = OpTypeArray %a{} %n\n", k - 1);
        }
        text += &format!("%ptr = OpTypePointer Output %a{}\n%out = OpVariable %ptr Output\n%main = OpFunction %void None %fn\n%l = OpLabel\nOpReturn\nOpFunctionEnd\n", depth - 1);
        assemble_text(&text).unwrap()
    }

    #[test]
    fn deep_and_huge_interface_types_are_refused() {
        let fs = glsl(FS, "frag").unwrap();
        let deep = nested_arrays(200, 1);
        validate(&deep, TargetEnv::Vulkan1_1).unwrap();
        let p = parse(&deep).unwrap();
        let ty = var_type(&p, interface_var(&p)).unwrap();
        refused(&deep, &fs, &LinkEnv::default(), LinkError::Malformed("producer", Malformed::TooDeep(ty)));
        let huge = nested_arrays(2, 1 << 16);
        refused(&huge, &fs, &LinkEnv::default(), LinkError::Oversized { side: "producer", location: 0 });
        // Shallow and small: linked.
        let (mut p, mut c) = (parse(&nested_arrays(2, 2)).unwrap(), parse(&fs).unwrap());
        link(&mut p, &mut c, Level::Safe).unwrap();
    }

    fn interface_var(m: &Module) -> Word {
        m.types_global_values.iter().rev().find(|i| i.class.opcode == Op::Variable).and_then(|i| i.result_id).unwrap()
    }

    /// An input array across two locations where the producer writes one:
    /// compaction moved the next input into the array's second location
    /// (found by the fuzz harness: "conflicting input location assignment").
    #[test]
    fn an_input_wider_than_its_output_moves_as_one_group() {
        let vs = "#version 450\nlayout(location=0) out vec4 a;\nlayout(location=3) out vec4 b;\nvoid main() { gl_Position = vec4(0); a = vec4(float(gl_VertexIndex)); b = a * 2.0; }\n";
        let fs = "#version 450\nlayout(location=0) in vec4 a[2];\nlayout(location=3) in vec4 b;\nlayout(location=0) out vec4 o;\nvoid main() { o = a[0] + a[1] + b; }\n";
        let (_, _, r) = linked(vs, fs, Level::Safe);
        assert_eq!(r.relocated, vec![(3, 2)], "{r:?}");
    }

    /// An int output read as a float input (each module valid on its own):
    /// the int constant became the float input's initialiser (found by the
    /// fuzz harness: "Initializer type must match the data type").
    #[test]
    fn constants_do_not_cross_a_type_mismatch() {
        let vs = "#version 450\nlayout(location=0) flat out int e;\nvoid main() { gl_Position = vec4(0); e = 5; }\n";
        let fs = "#version 450\nlayout(location=0) flat in float e;\nlayout(location=0) out vec4 o;\nvoid main() { o = vec4(e); }\n";
        let (_, _, r) = linked(vs, fs, Level::Full);
        assert!(r.propagated_constants.is_empty(), "{r:?}");
        assert!(r.notes.iter().any(|n| n == "location 0: input and output differ in type; left as is"), "{r:?}");
    }

    /// Mediump arithmetic moved to the producer left its `RelaxedPrecision`
    /// decorations on ids the consumer no longer defines (found by the fuzz
    /// harness, through a name of a removed id).
    #[test]
    fn names_and_decorations_of_removed_instructions_go_too() {
        let vs = "#version 450\nlayout(location=0) out vec4 a;\nlayout(location=1) out vec4 b;\nvoid main() { float x = float(gl_VertexIndex); gl_Position = vec4(x); a = vec4(x, 1, 2, 3); b = vec4(2, x, 4, x); }\n";
        let fs = "#version 450\nlayout(location=0) in mediump vec4 a;\nlayout(location=1) in mediump vec4 b;\nlayout(location=0) out mediump vec4 o;\nvoid main() { o = (a + b) * 0.5; }\n";
        let (_, _, r) = linked(vs, fs, Level::Full);
        assert_eq!(r.moved_sums, vec![(0, 1)], "{r:?}");
        assert_eq!(r.moved_constant_ops, vec![0], "{r:?}");
    }

    /// A dead invariant output became a private variable still decorated
    /// `Invariant`, which only Input and Output variables may be (found by
    /// the fuzz harness).
    #[test]
    fn dead_outputs_lose_every_interface_decoration() {
        let vs = "#version 450\ninvariant layout(location=0) out vec4 a;\nlayout(location=1) out vec4 b;\nvoid main() { gl_Position = vec4(0); a = vec4(float(gl_VertexIndex)); b = a * 2.0; }\n";
        let fs =
            "#version 450\nlayout(location=1) in vec4 b;\nlayout(location=0) out vec4 o;\nvoid main() { o = b; }\n";
        let (_, _, r) = linked(vs, fs, Level::Safe);
        assert_eq!(r.removed_dead, vec![0], "{r:?}");
    }

    /// A constant index past the end of a vector input (valid SPIR-V, reading
    /// nothing defined) narrowed the vector to no component at all: an
    /// `OpTypeVector %float 0` (found by the fuzz harness).
    #[test]
    fn an_index_past_a_vector_does_not_narrow_it() {
        let vs = "#version 450\nlayout(location=0) out vec4 b;\nvoid main() { gl_Position = vec4(0); b = vec4(float(gl_VertexIndex)); }\n";
        let fs = "#version 450\nlayout(location=0) in vec4 b;\nlayout(location=0) out vec4 o;\nvoid main() { o = vec4(b.w); }\n";
        let mut words = glsl(fs, "frag").unwrap();
        // b[3] becomes b[4]: the index constant 3 (of uint) becomes 4.
        patch(&mut words, Op::Constant, |w| w[3] == 3, |w| w[3] = 4);
        validate(&words, TargetEnv::Vulkan1_1).unwrap();
        let (mut p, mut c) = (parse(&glsl(vs, "vert").unwrap()).unwrap(), parse(&words).unwrap());
        let r = link(&mut p, &mut c, Level::Safe).unwrap();
        assert!(r.narrowed.is_empty(), "{r:?}");
        valid(&p, &c);
    }

    /// Two variables sharing a location, at components 0 and 1: each output
    /// pairs with the input at its own component (the constant `a` was
    /// propagated into `b` when inputs were looked up by location alone).
    #[test]
    fn variables_sharing_a_location_pair_by_component() {
        let vs = "#version 450\nlayout(location=0, component=0) flat out int a;\nlayout(location=0, component=1) flat out int b;\nvoid main() { gl_Position = vec4(0); a = 7; b = gl_VertexIndex; }\n";
        let fs = "#version 450\nlayout(location=0, component=0) flat in int a;\nlayout(location=0, component=1) flat in int b;\nlayout(location=0) out vec4 o;\nvoid main() { o = vec4(a, b, 0, 1); }\n";
        let (p, c, r) = linked(vs, fs, Level::Safe);
        assert_eq!(r.propagated_constants, vec![0], "{r:?}");
        let text = disassemble(&assemble(&c));
        assert!(text.contains("%a = OpVariable %_ptr_Private_int Private %int_7"), "{text}");
        assert!(text.contains("%b = OpVariable %_ptr_Input_int Input"), "{text}");
        super::tests::interface_matches(&p, &c);
    }
}
