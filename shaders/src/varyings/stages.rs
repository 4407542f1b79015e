//! Every adjacent stage pair (issue 13, item 4): the pair driver and the
//! per-stage interface rules the pair linker ([`super::link_with`]) asks for.
//!
//! A graphics pipeline's stages form a chain — vertex, [tessellation control,
//! tessellation evaluation], [geometry], fragment — and [`link_stages`] links
//! each adjacent pair with the pair linker, **last pair first**, as the seed
//! (`nir-opt-varyings.md`) orders it: when a pair is linked, the consumer's
//! outputs that its own consumer does not read have already become private,
//! so the values they were computed from are dead, and so are the inputs
//! that only fed them ([`live_inputs`]); the earlier pair then removes the
//! producer's outputs that fed those inputs. One pass back to front carries
//! a dead varying from the fragment shader to the vertex shader.
//!
//! Per stage ([`Stage`]): tessellation control inputs and outputs,
//! tessellation evaluation inputs and geometry inputs are arrays over the
//! patch's or primitive's vertices ([`per_vertex_inputs`],
//! [`per_vertex_outputs`]): their footprint is their element's, and only
//! whole-array constants cross (every vertex stores the same value, which a
//! vertex shader's output constant is). `Patch` variables are not arrays;
//! a tessellation evaluation shader's patch inputs are convergent (the same
//! for the whole patch), so, as nothing is interpolated before a fragment
//! shader, constants and uniform expressions cross into them exactly as into
//! flat fragment inputs. The seed's other rules, applied by the pair linker:
//!
//! - a tessellation control output that the shader reads back ([`reads_back`]:
//!   other invocations' vertices, after a barrier) stays an output even when
//!   the evaluation shader does not read it, and is placed after the outputs
//!   it does read;
//! - a varying indexed with a non-constant slot index ([`indirectly_indexed`];
//!   the vertex index of a per-vertex array does not count) keeps its
//!   location and is neither propagated, merged nor narrowed — it is still
//!   removed whole when the other side does not use it;
//! - transform-feedback outputs are never removed; those the consumer does
//!   not read are placed after the others;
//! - built-ins (position, point size, clip and cull distances, tessellation
//!   levels) carry no `Location` and are never touched.
//!
//! Code motion (`full`) stays between a fragment shader and its producer.

use super::{link_with, Level, LinkEnv, LinkError, Report};
use crate::ir::code;
use crate::MAX_DEPTH;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{ExecutionModel, Op, StorageClass, Word};
use std::collections::{HashMap, HashSet};

/// A graphics stage the linker links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    Vertex,
    TessellationControl,
    TessellationEvaluation,
    Geometry,
    Fragment,
}

impl Stage {
    /// Short name, for reports and logs.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Vertex => "vertex",
            Stage::TessellationControl => "tess control",
            Stage::TessellationEvaluation => "tess evaluation",
            Stage::Geometry => "geometry",
            Stage::Fragment => "fragment",
        }
    }

    /// Whether `next` may follow this stage in a pipeline.
    fn feeds(self, next: Stage) -> bool {
        use Stage::*;
        matches!(
            (self, next),
            (Vertex, TessellationControl | Geometry | Fragment)
                | (TessellationControl, TessellationEvaluation)
                | (TessellationEvaluation, Geometry | Fragment)
                | (Geometry, Fragment)
        )
    }
}

/// The stage of a module: the execution model its entry points share
/// (`side` names the module in errors).
pub fn stage_of(m: &Module, side: &'static str) -> Result<Stage, LinkError> {
    let mut stage = None;
    for e in &m.entry_points {
        let s = match e.operands.first() {
            Some(Operand::ExecutionModel(ExecutionModel::Vertex)) => Stage::Vertex,
            Some(Operand::ExecutionModel(ExecutionModel::TessellationControl)) => Stage::TessellationControl,
            Some(Operand::ExecutionModel(ExecutionModel::TessellationEvaluation)) => Stage::TessellationEvaluation,
            Some(Operand::ExecutionModel(ExecutionModel::Geometry)) => Stage::Geometry,
            Some(Operand::ExecutionModel(ExecutionModel::Fragment)) => Stage::Fragment,
            _ => return Err(LinkError::Stage(side, "an entry point of no graphics stage the linker links")),
        };
        if stage.is_some_and(|x| x != s) {
            return Err(LinkError::Stage(side, "entry points of several stages"));
        }
        stage = Some(s);
    }
    stage.ok_or(LinkError::NoEntryPoint(side))
}

/// Whether the stage's non-patch inputs are arrays over vertices.
pub(super) fn per_vertex_inputs(stage: Stage) -> bool {
    matches!(stage, Stage::TessellationControl | Stage::TessellationEvaluation | Stage::Geometry)
}

/// Whether the stage's non-patch outputs are arrays over vertices.
pub(super) fn per_vertex_outputs(stage: Stage) -> bool {
    stage == Stage::TessellationControl
}

/// What one pair's link did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairReport {
    pub producer: Stage,
    pub consumer: Stage,
    pub report: Report,
}

/// Links every adjacent pair of `modules` (a pipeline's stages in order),
/// the last pair first; `envs[i]` is what stage `i` may read for uniform
/// propagation (missing entries: nothing). The reports come in linking
/// order. On an error every module is left as it was.
pub fn link_stages(modules: &mut [Module], level: Level, envs: &[LinkEnv]) -> Result<Vec<PairReport>, LinkError> {
    let stages: Vec<Stage> = modules.iter().map(|m| stage_of(m, "stage")).collect::<Result<_, _>>()?;
    if let Some(w) = stages.windows(2).find(|w| !w[0].feeds(w[1])) {
        return Err(LinkError::Order(w[0].name(), w[1].name()));
    }
    let mut work: Vec<Module> = modules.to_vec();
    let none = LinkEnv::default();
    let mut reports = Vec::new();
    for i in (1..work.len()).rev() {
        let (head, tail) = work.split_at_mut(i);
        let env = envs.get(i).unwrap_or(&none);
        let report = link_with(&mut head[i - 1], &mut tail[0], level, env)?;
        reports.push(PairReport { producer: stages[i - 1], consumer: stages[i], report });
    }
    modules.clone_from_slice(&work);
    Ok(reports)
}

/// The global or function variable a pointer is rooted at (through access
/// chains, at most [`MAX_DEPTH`] of them).
fn root_of(defs: &HashMap<Word, &Instruction>, mut ptr: Word) -> Word {
    for _ in 0..MAX_DEPTH {
        match defs.get(&ptr) {
            Some(i) if matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain | Op::PtrAccessChain) => {
                match i.operands.first() {
                    Some(Operand::IdRef(base)) => ptr = *base,
                    _ => break,
                }
            }
            _ => break,
        }
    }
    ptr
}

/// Whether an instruction with a result has an effect beyond its result
/// (calls, atomics, extended instructions of sets other than GLSL.std.450).
fn has_effect(i: &Instruction, glsl: &HashSet<Word>) -> bool {
    match i.class.opcode {
        Op::FunctionCall => true,
        Op::ExtInst => !matches!(i.operands.first(), Some(Operand::IdRef(set)) if glsl.contains(set)),
        // OpAtomicLoad ..= OpAtomicXor, and the later atomics with a result.
        op => {
            (Op::AtomicLoad as u32..=Op::AtomicXor as u32).contains(&(op as u32))
                || matches!(op, Op::AtomicFlagTestAndSet | Op::AtomicFAddEXT | Op::AtomicFMinEXT | Op::AtomicFMaxEXT)
        }
    }
}

/// The input variables whose values reach something the shader does: an
/// output or memory write, a branch, a call, an atomic. A store to a private
/// or function variable counts only when that variable is read by something
/// that counts. Conservative: anything it does not follow keeps its
/// operands alive. A worklist, no recursion.
pub(super) fn live_inputs(m: &Module) -> HashSet<Word> {
    let glsl: HashSet<Word> = m
        .ext_inst_imports
        .iter()
        .filter(|i| matches!(i.operands.first(), Some(Operand::LiteralString(s)) if s == "GLSL.std.450"))
        .filter_map(|i| i.result_id)
        .collect();
    let defs: HashMap<Word, &Instruction> = code(m).filter_map(|i| Some((i.result_id?, i))).collect();
    let class_of = |var: Word| -> Option<StorageClass> {
        let v = crate::ir::def(m, var).or_else(|| defs.get(&var).copied())?;
        match (v.class.opcode, v.operands.first()) {
            (Op::Variable, Some(Operand::StorageClass(c))) => Some(*c),
            _ => None,
        }
    };
    let local = |var: Word| matches!(class_of(var), Some(StorageClass::Private | StorageClass::Function));
    // Stores into local variables, by variable.
    let mut stores: HashMap<Word, Vec<&Instruction>> = HashMap::new();
    let mut work: Vec<&Instruction> = Vec::new();
    for i in code(m) {
        match (i.class.opcode, i.result_id) {
            (Op::Store, _) => match i.operands.first() {
                Some(Operand::IdRef(p)) if local(root_of(&defs, *p)) => {
                    stores.entry(root_of(&defs, *p)).or_default().push(i);
                }
                _ => work.push(i),
            },
            (Op::Variable | Op::Label, Some(_)) => {}
            (_, Some(_)) if !has_effect(i, &glsl) => {}
            _ => work.push(i),
        }
    }
    let mut live: HashSet<Word> = HashSet::new();
    while let Some(i) = work.pop() {
        for o in &i.operands {
            let Operand::IdRef(id) = o else { continue };
            if !live.insert(*id) {
                continue;
            }
            if let Some(d) = defs.get(id) {
                work.push(d);
            }
            // A local variable that is read: the stores into it count.
            if let Some(s) = stores.remove(id) {
                work.extend(s);
            }
        }
    }
    m.types_global_values
        .iter()
        .filter(|v| {
            v.class.opcode == Op::Variable && v.operands.first() == Some(&Operand::StorageClass(StorageClass::Input))
        })
        .filter_map(|v| v.result_id)
        .filter(|v| live.contains(v))
        .collect()
}

/// Whether the shader loads from output `var` (a tessellation control
/// shader reading back its vertices' outputs).
pub(super) fn reads_back(m: &Module, var: Word) -> bool {
    let defs: HashMap<Word, &Instruction> = code(m).filter_map(|i| Some((i.result_id?, i))).collect();
    code(m).any(|i| {
        let from = match i.class.opcode {
            Op::Load => i.operands.first(),
            Op::CopyMemory => i.operands.get(1),
            _ => None,
        };
        matches!(from, Some(Operand::IdRef(p)) if root_of(&defs, *p) == var)
    })
}

/// Whether interface variable `var` is indexed with a non-constant slot
/// index: an access chain on it whose index into an array or matrix (the
/// element's, for a per-vertex array: its vertex index does not count) is
/// not a constant.
pub(super) fn indirectly_indexed(m: &Module, var: Word, per_vertex: bool) -> bool {
    let Some(mut ty) = crate::ir::var_type(m, var) else { return false };
    if per_vertex {
        match crate::ir::def(m, ty).map(|t| (t.class.opcode, t.operands.first())) {
            Some((Op::TypeArray, Some(Operand::IdRef(e)))) => ty = *e,
            _ => return false,
        }
    }
    let slotted = crate::ir::def(m, ty).is_some_and(|t| matches!(t.class.opcode, Op::TypeArray | Op::TypeMatrix));
    if !slotted {
        return false;
    }
    let slot = usize::from(per_vertex) + 1;
    code(m).any(|i| {
        matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain)
            && i.operands.first() == Some(&Operand::IdRef(var))
            && matches!(i.operands.get(slot), Some(Operand::IdRef(x)) if !crate::ir::is_constant(m, *x))
    })
}

/// A constant of the per-vertex array type of input `var` with `element`
/// (a constant of its element type) for every vertex; `None` when the
/// types do not fit.
pub(super) fn every_vertex(m: &mut Module, var: Word, element: Word) -> Option<Word> {
    let array = crate::ir::var_type(m, var)?;
    let (elem_ty, len) = match crate::ir::def(m, array).map(|t| (t.class.opcode, t.operands.as_slice())) {
        Some((Op::TypeArray, [Operand::IdRef(e), Operand::IdRef(n)])) => (*e, *n),
        _ => return None,
    };
    if crate::ir::def(m, element)?.result_type != Some(elem_ty) {
        return None;
    }
    let n = match crate::ir::def(m, len).map(|c| (c.class.opcode, c.operands.first())) {
        Some((Op::Constant, Some(Operand::LiteralBit32(n)))) if *n <= 1024 => *n as usize,
        _ => return None,
    };
    Some(crate::ir::find_or_add(m, Op::ConstantComposite, Some(array), vec![Operand::IdRef(element); n]))
}
