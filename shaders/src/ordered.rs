//! The `ordered` interlock strategy: critical sections in primitive order on
//! GPUs without interlock, for fragment shaders that declare an ordered mode.
//!
//! A lock gives mutual exclusion but not order, and no fragment can learn
//! from its own primitive which earlier primitives cover its pixel. So the
//! layer records every ordered draw twice with the same state ("count, then
//! run"): in the *count* draw each fragment appends its key — (instance
//! index, primitive id), a total order on the primitives of a draw — to the
//! cell of every pixel it covers and terminates; after a barrier, the *run*
//! draw is the application's. Its fragments look their key up in their cells
//! once (the rank: how many keys are smaller), and each critical section
//! waits until every smaller key has left (a bit per rank in the cell), then
//! takes the cells' mutexes. Fragments that never reach the section (a
//! discard, a demote, a return) mark their rank done without waiting, so no
//! invocation waits for one that will not come; the last one of a draw to
//! finish with a cell resets it. Waits are bounded: an expired one enters
//! under the mutex and is counted in a buffer the layer reads. Order across
//! draws comes from the barriers between them, which the layer records.
//!
//! The protocol is GLSL (`shaders/glsl/ordered.frag`), compiled once per
//! memory model and linked into the module ([`crate::library`]); this pass
//! declares what it reads and rewires the module around its functions:
//!
//! - at the entry: the inputs (the fragment's area — the coarse fragment's
//!   pixels when a shading rate can apply — its key, whether it is a
//!   helper), then `if (ovl_begin()) terminate;` (the count draw);
//! - every section: the spinlock's retry loop (`crate::spinlock`), entered by
//!   `ovl_try_enter()` and left by `ovl_leave()`, which also runs before a
//!   kill or demote inside it;
//! - `ovl_finish()` before every kill, terminate and demote, and before the
//!   entry point returns (it runs once; a demoted invocation is a helper
//!   from then on).
//!
//! The instance index reaches the fragment shader through a flat input at a
//! location the layer reserves, written by every vertex shader
//! ([`add_instance_output`]); reading `PrimitiveId` needs the `Geometry`
//! capability.

use crate::interlock::{modes, remove_interlock_declarations, Mode};
use crate::ir;
use crate::library::{self, LinkError};
use crate::spinlock::{self, block, find_op, inst, Guard, Ids, Unsupported as SpinUnsupported};
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{self, BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel, Op, StorageClass, Word};
use std::sync::OnceLock;

/// The protocol's builds (`shaders/glsl/generate`): the general one, and
/// for modules without a shading rate, whose area is one pixel or sample,
/// one cell an area (`ONE_CELL`: its loops over the area run once and it
/// keeps no per-cell arrays), and that again reading the parts
/// `debug_ordered_without` leaves out (`MEASURE`, measurement only), or
/// making its lookup at the first section rather than the entry
/// (`LATE_LOOKUP`, measurement only: `debug_ordered_without=early_lookup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    General,
    OneCell,
    Measure,
    Late,
}

impl Build {
    /// The defines it is compiled with.
    pub fn defines(self) -> &'static [&'static str] {
        match self {
            Build::General => &[],
            Build::OneCell => &["-DONE_CELL"],
            Build::Measure => &["-DONE_CELL", "-DMEASURE"],
            Build::Late => &["-DONE_CELL", "-DLATE_LOOKUP"],
        }
    }
}

/// The protocol, compiled by `shaders/glsl/generate`: (memory model, SPIR-V
/// version, build, words), the builds four entries apart.
pub const LIBRARIES: [(&str, &str, Build, &[u8]); 16] = [
    ("glsl450", "1.0", Build::General, include_bytes!("generated/ordered-glsl450-1.0.spv")),
    ("glsl450", "1.3", Build::General, include_bytes!("generated/ordered-glsl450-1.3.spv")),
    ("vulkan", "1.0", Build::General, include_bytes!("generated/ordered-vulkan-1.0.spv")),
    ("vulkan", "1.3", Build::General, include_bytes!("generated/ordered-vulkan-1.3.spv")),
    ("glsl450", "1.0", Build::OneCell, include_bytes!("generated/ordered-glsl450-1.0-one.spv")),
    ("glsl450", "1.3", Build::OneCell, include_bytes!("generated/ordered-glsl450-1.3-one.spv")),
    ("vulkan", "1.0", Build::OneCell, include_bytes!("generated/ordered-vulkan-1.0-one.spv")),
    ("vulkan", "1.3", Build::OneCell, include_bytes!("generated/ordered-vulkan-1.3-one.spv")),
    ("glsl450", "1.0", Build::Measure, include_bytes!("generated/ordered-glsl450-1.0-measure.spv")),
    ("glsl450", "1.3", Build::Measure, include_bytes!("generated/ordered-glsl450-1.3-measure.spv")),
    ("vulkan", "1.0", Build::Measure, include_bytes!("generated/ordered-vulkan-1.0-measure.spv")),
    ("vulkan", "1.3", Build::Measure, include_bytes!("generated/ordered-vulkan-1.3-measure.spv")),
    ("glsl450", "1.0", Build::Late, include_bytes!("generated/ordered-glsl450-1.0-late.spv")),
    ("glsl450", "1.3", Build::Late, include_bytes!("generated/ordered-glsl450-1.3-late.spv")),
    ("vulkan", "1.0", Build::Late, include_bytes!("generated/ordered-vulkan-1.0-late.spv")),
    ("vulkan", "1.3", Build::Late, include_bytes!("generated/ordered-vulkan-1.3-late.spv")),
];

/// The control block's `mode` values (`ovl_ctl.mode`).
pub const MODE_COUNT: u32 = 0;
pub const MODE_RUN: u32 = 1;
pub const MODE_UNORDERED: u32 = 2;
/// The count draw where equal keys share a slot (per-sample shading, lines
/// and points: several invocations of one primitive in one cell).
pub const MODE_COUNT_MERGED: u32 = 3;
/// Bindings of the reserved set the protocol reads.
pub const BINDING_CELLS: u32 = 1;
pub const BINDING_CONTROL: u32 = 2;
pub const BINDING_COUNTERS: u32 = 3;
/// The counters buffer: overflowed cells, expired waits, keys not found,
/// keys out of range (an instance index of 2^24 or more, or of 2^20 or
/// more where pixels a grid apart share cells).
pub const COUNTERS: usize = 4;
/// Words of a cell's header; each slot holds a key of two words. (Each
/// header word and each pair of slots is a plane of its own over all
/// cells: `shaders/glsl/ordered.frag`.)
pub const CELL_HEADER: u32 = 8;
/// A cell's slots are bits of two words.
pub const MAX_SLOTS: u32 = 64;

#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The reserved descriptor set.
    pub set: u32,
    /// The location of the flat instance-index input ([`add_instance_output`]
    /// writes it); the module's own inputs must stay below it.
    pub location: u32,
    /// Read `ShadingRateKHR`: a fragment covers the pixels of its coarse
    /// fragment (only where the application enabled a fragment shading
    /// rate feature, which the built-in needs).
    pub shading_rate: bool,
    /// `discard` before a section becomes finish, demote and carry on as a
    /// helper (the device has `shaderDemoteToHelperInvocation`): see
    /// [`demote_kills`].
    pub demote: bool,
    /// Measurement only: link a one-cell build made for measuring (not
    /// with a shading rate, whose modules keep the general build).
    pub measure: Option<Measure>,
}

/// The measurement builds of [`Config::measure`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// The build that reads the parts `debug_ordered_without` leaves out
    /// ([`Build::Measure`]).
    Parts,
    /// The build whose lookup is made at the first section
    /// (`debug_ordered_without=early_lookup`, [`Build::Late`]).
    LateLookup,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub modes: Vec<Mode>,
    pub sections: usize,
    pub spilled_values: usize,
    /// The module asks for early fragment tests: its depth and stencil
    /// writes (and sample counts) would happen in the count draw too, so the
    /// layer does not order its draws.
    pub early_fragment_tests: bool,
    /// Sample interlock in a module that reads `SampleId`: one cell per
    /// sample (declaring it would force sample shading).
    pub per_sample_cells: bool,
    /// The module reads `SampleId`: it runs per sample, so a primitive has
    /// several invocations per pixel (the layer merges their keys).
    pub per_sample: bool,
    /// Kills turned into finish + demote + carry on ([`demote_kills`]).
    pub kills_demoted: usize,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Unsupported {
    #[error("the module declares no ordered interlock mode")]
    NotOrdered,
    #[error("the module has {0} fragment entry points (one is handled)")]
    EntryPoints(usize),
    #[error("the module uses input location {0}, which the layer reserves")]
    Location(u32),
    #[error(transparent)]
    Section(#[from] SpinUnsupported),
    #[error("linking the protocol: {0}")]
    Link(#[from] LinkError),
    #[error("the protocol library does not parse")]
    Library,
    #[error("malformed module: {0}")]
    Malformed(#[from] crate::Malformed),
}

/// The library for a module's memory model and SPIR-V version: storage
/// buffers as `BufferBlock` before 1.3, `StorageBuffer` from 1.3 on (1.4
/// and later forbid `BufferBlock`).
fn library(vulkan_mm: bool, version: u32, build: Build) -> Option<&'static Module> {
    static PARSED: [OnceLock<Option<Module>>; LIBRARIES.len()] = [const { OnceLock::new() }; LIBRARIES.len()];
    let k = build as usize * 4 + usize::from(vulkan_mm) * 2 + usize::from(version >= 0x0001_0300);
    PARSED[k].get_or_init(|| crate::parse_bytes(LIBRARIES[k].3).ok()).as_ref()
}

fn uses_vulkan_memory_model(m: &Module) -> bool {
    matches!(
        m.memory_model.as_ref().and_then(|mm| mm.operands.get(1)),
        Some(Operand::MemoryModel(spirv::MemoryModel::Vulkan))
    )
}

fn version(m: &Module) -> u32 {
    m.header.as_ref().map(|h| h.version).unwrap_or(0x0001_0000)
}

use crate::ir::{add_capability, add_extension, has_capability};

/// An integer fragment input (a built-in too) must be flat.
fn ensure_flat(m: &mut Module, var: Word) {
    if !ir::decorations_of(m, var).iter().any(|d| d.operands.get(1) == Some(&Operand::Decoration(Decoration::Flat))) {
        ir::decorate(m, var, Decoration::Flat, vec![]);
    }
}

/// The protocol's entry points into the linked library.
struct Protocol {
    begin: Word,
    try_enter: Word,
    leave: Word,
    finish: Word,
    origin: Word,
    size: Word,
    key: Word,
    helper: Word,
}

struct OrderedGuard<'a> {
    p: &'a Protocol,
}

impl Guard for OrderedGuard<'_> {
    fn try_enter(&mut self, ids: &mut Ids, b: &mut Vec<Instruction>) -> Word {
        let bool_t = ids.bool();
        let r = ids.fresh();
        b.push(inst(Op::FunctionCall, Some(bool_t), Some(r), vec![Operand::IdRef(self.p.try_enter)]));
        r
    }

    fn leave(&self, ids: &mut Ids) -> Vec<Instruction> {
        let void = ids.global(Op::TypeVoid, None, vec![]);
        let r = ids.fresh();
        vec![inst(Op::FunctionCall, Some(void), Some(r), vec![Operand::IdRef(self.p.leave)])]
    }
}

/// Lowers `module` for the ordered strategy (see the module documentation).
pub fn lower(module: &mut Module, cfg: &Config) -> Result<Report, Unsupported> {
    let found = modes(module);
    if !found.iter().any(|m| m.ordered) {
        return Err(Unsupported::NotOrdered);
    }
    crate::check(module)?;
    let fragment = ir::entry_functions(module, Some(ExecutionModel::Fragment));
    if fragment.len() != 1 {
        return Err(Unsupported::EntryPoints(fragment.len()));
    }
    let entry = fragment[0];
    if let Some(l) = ir::max_location(module, StorageClass::Input).filter(|l| *l >= cfg.location) {
        return Err(Unsupported::Location(l));
    }
    let vulkan_mm = uses_vulkan_memory_model(module);
    let build = match (cfg.shading_rate, cfg.measure) {
        (true, _) => Build::General,
        (false, None) => Build::OneCell,
        (false, Some(Measure::Parts)) => Build::Measure,
        (false, Some(Measure::LateLookup)) => Build::Late,
    };
    let lib = library(vulkan_mm, version(module), build).ok_or(Unsupported::Library)?;
    let early_fragment_tests = module
        .execution_modes
        .iter()
        .any(|i| i.operands.get(1) == Some(&Operand::ExecutionMode(ExecutionMode::EarlyFragmentTests)));
    // Work on a copy so that an unsupported shape leaves the module intact.
    let mut m = module.clone();
    remove_interlock_declarations(&mut m);
    let app_functions = m.functions.len();
    let linked = library::link(&mut m, lib, cfg.set)?;
    let function = |n: &str| linked.functions.get(n).copied().ok_or(Unsupported::Library);
    let global = |n: &str| linked.globals.get(n).copied().ok_or(Unsupported::Library);
    let p = Protocol {
        begin: function("ovl_begin")?,
        try_enter: function("ovl_try_enter")?,
        leave: function("ovl_leave")?,
        finish: function("ovl_finish")?,
        origin: global("ovl_origin")?,
        size: global("ovl_size")?,
        key: global("ovl_key")?,
        helper: global("ovl_helper")?,
    };
    let per_sample = ir::builtin_target(module, BuiltIn::SampleId).is_some();
    let per_sample_cells = per_sample && found.iter().all(|f| f.granularity == crate::interlock::Granularity::Sample);
    let mut report = Report { modes: found, early_fragment_tests, per_sample_cells, per_sample, ..Default::default() };
    let mut ids = Ids { m: &mut m };

    // The sections, in the application's functions.
    let mut functions = std::mem::take(&mut ids.m.functions);
    for f in functions.iter_mut().take(app_functions) {
        while let Some((bi, ii)) = find_op(&f.blocks, 0, Op::BeginInvocationInterlockEXT) {
            let spilled = spinlock::lower_section(&mut ids, &mut f.blocks, bi, ii, &mut OrderedGuard { p: &p })?;
            report.sections += 1;
            report.spilled_values += spilled;
        }
        if find_op(&f.blocks, 0, Op::EndInvocationInterlockEXT).is_some() {
            return Err(SpinUnsupported::Unpaired.into());
        }
    }
    // Leaving without a section: finish before every kill, terminate and
    // demote, and before the entry point returns.
    let void = ids.global(Op::TypeVoid, None, vec![]);
    let t_true = ids.bool_const(true);
    for f in functions.iter_mut().take(app_functions) {
        let is_entry = f.def.as_ref().and_then(|d| d.result_id) == Some(entry);
        for b in &mut f.blocks {
            let mut k = 0;
            while k < b.instructions.len() {
                let op = b.instructions[k].class.opcode;
                let leaves = matches!(op, Op::Kill | Op::TerminateInvocation | Op::DemoteToHelperInvocation)
                    || (is_entry && matches!(op, Op::Return | Op::ReturnValue));
                if leaves {
                    let r = ids.fresh();
                    b.instructions
                        .insert(k, inst(Op::FunctionCall, Some(void), Some(r), vec![Operand::IdRef(p.finish)]));
                    k += 1;
                    if op == Op::DemoteToHelperInvocation {
                        // A helper from now on: it takes part in nothing.
                        b.instructions.insert(
                            k + 1,
                            inst(Op::Store, None, None, vec![Operand::IdRef(p.helper), Operand::IdRef(t_true)]),
                        );
                        k += 1;
                    }
                }
                k += 1;
            }
        }
    }
    ids.m.functions = functions;
    if cfg.demote {
        report.kills_demoted = demote_kills(&mut ids, app_functions, &p);
    }
    prologue(&mut ids, entry, cfg, &p, per_sample_cells)?;
    *module = m;
    Ok(report)
}

/// On SIMT hardware the lanes of a subgroup that take different paths run
/// one path after the other, and a lane that waits in a section's retry
/// loop for a predecessor of its own subgroup stalls it if that predecessor
/// is on a path that never comes back to the loop: a `discard` before the
/// section (measured on an H100: the waits ran into their bound). So a kill
/// (`OpKill`, `OpTerminateInvocation`) from whose selection a section can
/// still be reached becomes: finish, demote, and branch to the selection's
/// merge — the lane comes back as a helper invocation (its stores, atomics
/// and outputs have no effect, which is what a discarded invocation's
/// remaining code would have had) and meets the others at the loop, where
/// helpers pass straight through. Kills in other shapes (a loop's or a
/// switch's blocks) stay. Returns how many were turned.
fn demote_kills(ids: &mut Ids, app_functions: usize, p: &Protocol) -> usize {
    let t_true = ids.bool_const(true);
    let mut turned = 0;
    let mut functions = std::mem::take(&mut ids.m.functions);
    for f in functions.iter_mut().take(app_functions) {
        let labels: std::collections::HashMap<Word, usize> =
            f.blocks.iter().enumerate().map(|(i, b)| (ir::label_of(b), i)).collect();
        // Blocks from which a section's retry loop is reachable.
        let has_loop = |b: &rspirv::dr::Block| {
            b.instructions
                .iter()
                .any(|i| i.class.opcode == Op::FunctionCall && i.operands.first() == Some(&Operand::IdRef(p.try_enter)))
        };
        let reaches = |from: Word| -> bool {
            let mut seen = std::collections::HashSet::new();
            let mut stack = vec![from];
            while let Some(l) = stack.pop() {
                let Some(&bi) = labels.get(&l) else { continue };
                if !seen.insert(l) {
                    continue;
                }
                if has_loop(&f.blocks[bi]) {
                    return true;
                }
                stack.extend(ir::successors(&f.blocks[bi]));
            }
            false
        };
        let mut edits = Vec::new();
        for (bi, b) in f.blocks.iter().enumerate() {
            let Some(last) = b.instructions.last() else { continue };
            if !matches!(last.class.opcode, Op::Kill | Op::TerminateInvocation) {
                continue;
            }
            let kill = ir::label_of(b);
            // The selection whose conditional branch leads here.
            let header = f.blocks.iter().find_map(|h| {
                let n = h.instructions.len();
                let (merge, branch) = (h.instructions.get(n.checked_sub(2)?)?, h.instructions.last()?);
                if merge.class.opcode != Op::SelectionMerge || branch.class.opcode != Op::BranchConditional {
                    return None;
                }
                let targets = &branch.operands[1..3];
                match merge.operands.first() {
                    Some(Operand::IdRef(m)) if targets.contains(&Operand::IdRef(kill)) && *m != kill => Some(*m),
                    _ => None,
                }
            });
            if let Some(merge) = header.filter(|m| reaches(*m)) {
                edits.push((bi, kill, merge));
            }
        }
        for (bi, kill, merge) in edits {
            let b = &mut f.blocks[bi];
            b.instructions.pop();
            b.instructions.push(inst(Op::DemoteToHelperInvocation, None, None, vec![]));
            b.instructions.push(inst(Op::Store, None, None, vec![Operand::IdRef(p.helper), Operand::IdRef(t_true)]));
            b.instructions.push(inst(Op::Branch, None, None, vec![Operand::IdRef(merge)]));
            // The merge has a new predecessor: its phis get an undefined value from it.
            let mi = labels[&merge];
            let phis: Vec<(usize, Word)> = f.blocks[mi]
                .instructions
                .iter()
                .enumerate()
                .filter(|(_, i)| i.class.opcode == Op::Phi)
                .filter_map(|(k, i)| Some((k, i.result_type?)))
                .collect();
            for (k, ty) in phis {
                let undef = ids.global(Op::Undef, Some(ty), vec![]);
                let phi = &mut f.blocks[mi].instructions[k];
                phi.operands.push(Operand::IdRef(undef));
                phi.operands.push(Operand::IdRef(kill));
            }
            turned += 1;
        }
    }
    ids.m.functions = functions;
    if turned > 0 {
        add_capability(ids.m, Capability::DemoteToHelperInvocation);
        if version(ids.m) < 0x0001_0600 {
            add_extension(ids.m, "SPV_EXT_demote_to_helper_invocation");
        }
    }
    turned
}

/// The entry's prologue: the protocol's inputs, then `if (ovl_begin())
/// terminate;`, before any of the application's code.
fn prologue(ids: &mut Ids, entry: Word, cfg: &Config, p: &Protocol, per_sample_cells: bool) -> Result<(), Unsupported> {
    let uint = ids.uint();
    let int = ids.int();
    let bool_t = ids.bool();
    let float = ids.global(Op::TypeFloat, None, vec![Operand::LiteralBit32(32)]);
    let v4float = ids.global(Op::TypeVector, None, vec![Operand::IdRef(float), Operand::LiteralBit32(4)]);
    let v2uint = ids.global(Op::TypeVector, None, vec![Operand::IdRef(uint), Operand::LiteralBit32(2)]);
    let one = ids.uint_const(1);
    let two = ids.uint_const(2);
    let three = ids.uint_const(3);

    let t = PrologueTypes { uint, int, bool_t, float, v2uint, one, two, three };
    let inputs = prologue_inputs(ids, cfg, v4float, bool_t, int)?;
    let (code, counting) = prologue_code(ids, &t, &inputs, p, per_sample_cells)?;
    insert_prologue(ids, entry, code, counting)
}

/// The types and constants of the prologue's code.
struct PrologueTypes {
    uint: Word,
    int: Word,
    bool_t: Word,
    float: Word,
    v2uint: Word,
    one: Word,
    two: Word,
    three: Word,
}

/// The prologue's inputs: each a variable and the type it holds (the
/// instance index is an `int`).
struct PrologueInputs {
    frag_coord: (Word, Word),
    helper: (Word, Word),
    primitive: (Word, Word),
    instance: Word,
    /// `ShadingRateKHR` (`cfg.shading_rate`).
    rate: Option<(Word, Word)>,
}

/// Declares the prologue's inputs (or finds the built-ins the shader
/// declares): `FragCoord`, `HelperInvocation` (volatile where it must be),
/// `PrimitiveId`, the instance index at `cfg.location`, and the shading
/// rate where `cfg` asks for it.
fn prologue_inputs(
    ids: &mut Ids,
    cfg: &Config,
    v4float: Word,
    bool_t: Word,
    int: Word,
) -> Result<PrologueInputs, Unsupported> {
    let frag_coord = ids.builtin_input(BuiltIn::FragCoord, |_| v4float)?;
    ir::add_io_to_interface(ids.m, frag_coord.0);
    let helper = ids.builtin_input(BuiltIn::HelperInvocation, |_| bool_t)?;
    ir::add_io_to_interface(ids.m, helper.0);
    if version(ids.m) >= 0x0001_0600
        && !uses_vulkan_memory_model(ids.m)
        && !ir::decorations_of(ids.m, helper.0)
            .iter()
            .any(|d| d.operands.get(1) == Some(&Operand::Decoration(Decoration::Volatile)))
    {
        ir::decorate(ids.m, helper.0, Decoration::Volatile, vec![]);
    }
    if ![Capability::Geometry, Capability::Tessellation, Capability::MeshShadingNV, Capability::MeshShadingEXT]
        .iter()
        .any(|c| has_capability(ids.m, *c))
    {
        add_capability(ids.m, Capability::Geometry);
    }
    let primitive = ids.builtin_input(BuiltIn::PrimitiveId, |_| int)?;
    ir::add_io_to_interface(ids.m, primitive.0);
    ensure_flat(ids.m, primitive.0);
    let int_in = ids.pointer(StorageClass::Input, int);
    let instance = ids.fresh();
    ids.m.types_global_values.push(inst(
        Op::Variable,
        Some(int_in),
        Some(instance),
        vec![Operand::StorageClass(StorageClass::Input)],
    ));
    ir::decorate(ids.m, instance, Decoration::Location, vec![Operand::LiteralBit32(cfg.location)]);
    ir::decorate(ids.m, instance, Decoration::Flat, vec![]);
    ir::add_io_to_interface(ids.m, instance);
    ids.m.debug_names.push(inst(
        Op::Name,
        None,
        None,
        vec![Operand::IdRef(instance), Operand::LiteralString("ovl_instance".into())],
    ));
    let rate = if cfg.shading_rate {
        add_capability(ids.m, Capability::FragmentShadingRateKHR);
        add_extension(ids.m, "SPV_KHR_fragment_shading_rate");
        let r = ids.builtin_input(BuiltIn::ShadingRateKHR, |_| int)?;
        ir::add_io_to_interface(ids.m, r.0);
        ensure_flat(ids.m, r.0);
        Some(r)
    } else {
        None
    };

    Ok(PrologueInputs { frag_coord, helper, primitive, instance, rate })
}

/// The prologue's code: the pixel's cell (origin and size, per sample where
/// `per_sample_cells`), the ordering key and the helper flag stored into the
/// protocol's variables, then the call of `ovl_begin`, whose result it also
/// returns.
fn prologue_code(
    ids: &mut Ids,
    t: &PrologueTypes,
    inputs: &PrologueInputs,
    p: &Protocol,
    per_sample_cells: bool,
) -> Result<(Vec<Instruction>, Word), Unsupported> {
    let PrologueTypes { uint, int, bool_t, float, v2uint, one, two, three } = *t;
    let PrologueInputs { frag_coord, helper, primitive, instance, rate } = *inputs;
    let mut code = Vec::new();
    let mut emit = |ids: &mut Ids, op: Op, ty: Word, operands: Vec<Operand>| -> Word {
        let r = ids.fresh();
        code.push(inst(op, Some(ty), Some(r), operands));
        r
    };
    let id = Operand::IdRef;
    let fc = emit(ids, Op::Load, frag_coord.1, vec![id(frag_coord.0)]);
    let fxf = emit(ids, Op::CompositeExtract, float, vec![id(fc), Operand::LiteralBit32(0)]);
    let fyf = emit(ids, Op::CompositeExtract, float, vec![id(fc), Operand::LiteralBit32(1)]);
    let fx = emit(ids, Op::ConvertFToU, uint, vec![id(fxf)]);
    let fy = emit(ids, Op::ConvertFToU, uint, vec![id(fyf)]);
    let (ox, oy, sx, sy) = match rate {
        Some((var, ty)) => {
            // ShadingRateKHR: bits 0-1 log2 of the height, 2-3 of the width.
            let r = emit(ids, Op::Load, ty, vec![id(var)]);
            let ru = if ty == uint { r } else { emit(ids, Op::Bitcast, uint, vec![id(r)]) };
            let wl = emit(ids, Op::ShiftRightLogical, uint, vec![id(ru), id(two)]);
            let wl = emit(ids, Op::BitwiseAnd, uint, vec![id(wl), id(three)]);
            let hl = emit(ids, Op::BitwiseAnd, uint, vec![id(ru), id(three)]);
            let sx = emit(ids, Op::ShiftLeftLogical, uint, vec![id(one), id(wl)]);
            let sy = emit(ids, Op::ShiftLeftLogical, uint, vec![id(one), id(hl)]);
            // FragCoord is the coarse fragment's centre.
            let hx = emit(ids, Op::ShiftRightLogical, uint, vec![id(sx), id(one)]);
            let hy = emit(ids, Op::ShiftRightLogical, uint, vec![id(sy), id(one)]);
            let ox = emit(ids, Op::ISub, uint, vec![id(fx), id(hx)]);
            let oy = emit(ids, Op::ISub, uint, vec![id(fy), id(hy)]);
            (ox, oy, sx, sy)
        }
        None if per_sample_cells => {
            // One cell per sample: (2x + s % 2, 4y + s / 2), up to 8 samples
            // without sharing.
            let (sid_var, sid_t) = ids.builtin_input(BuiltIn::SampleId, |_| int)?;
            let sid = emit(ids, Op::Load, sid_t, vec![id(sid_var)]);
            let su = if sid_t == uint { sid } else { emit(ids, Op::Bitcast, uint, vec![id(sid)]) };
            let four = ids.uint_const(4);
            let low = emit(ids, Op::BitwiseAnd, uint, vec![id(su), id(one)]);
            let high = emit(ids, Op::ShiftRightLogical, uint, vec![id(su), id(one)]);
            let x2 = emit(ids, Op::IMul, uint, vec![id(fx), id(two)]);
            let y4 = emit(ids, Op::IMul, uint, vec![id(fy), id(four)]);
            let ox = emit(ids, Op::IAdd, uint, vec![id(x2), id(low)]);
            let oy = emit(ids, Op::IAdd, uint, vec![id(y4), id(high)]);
            (ox, oy, one, one)
        }
        None => (fx, fy, one, one),
    };
    let origin = emit(ids, Op::CompositeConstruct, v2uint, vec![id(ox), id(oy)]);
    let size = emit(ids, Op::CompositeConstruct, v2uint, vec![id(sx), id(sy)]);
    let inst_i = emit(ids, Op::Load, int, vec![id(instance)]);
    let inst_u = emit(ids, Op::Bitcast, uint, vec![id(inst_i)]);
    let prim = emit(ids, Op::Load, primitive.1, vec![id(primitive.0)]);
    let prim_u = if primitive.1 == uint { prim } else { emit(ids, Op::Bitcast, uint, vec![id(prim)]) };
    let key = emit(ids, Op::CompositeConstruct, v2uint, vec![id(inst_u), id(prim_u)]);
    let h = emit(ids, Op::Load, helper.1, vec![id(helper.0)]);
    code.push(inst(Op::Store, None, None, vec![id(p.origin), id(origin)]));
    code.push(inst(Op::Store, None, None, vec![id(p.size), id(size)]));
    code.push(inst(Op::Store, None, None, vec![id(p.key), id(key)]));
    code.push(inst(Op::Store, None, None, vec![id(p.helper), id(h)]));
    let counting = ids.fresh();
    code.push(inst(Op::FunctionCall, Some(bool_t), Some(counting), vec![id(p.begin)]));

    Ok((code, counting))
}

/// Puts `code` at the start of the entry function, after its variables,
/// followed by `if (counting) terminate;`.
fn insert_prologue(ids: &mut Ids, entry: Word, code: Vec<Instruction>, counting: Word) -> Result<(), Unsupported> {
    let id = Operand::IdRef;
    let terminate = if version(ids.m) >= 0x0001_0600
        || ids.m.extensions.iter().any(
            |e| matches!(e.operands.first(), Some(Operand::LiteralString(s)) if s == "SPV_KHR_terminate_invocation"),
        ) {
        Op::TerminateInvocation
    } else {
        Op::Kill
    };
    let (kill, rest) = (ids.fresh(), ids.fresh());
    let f = ids
        .m
        .functions
        .iter_mut()
        .find(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(entry))
        .ok_or(crate::Malformed::Undefined(entry))?;
    let first = f.blocks.first_mut().ok_or(crate::Malformed::Undefined(entry))?;
    let head_label = ir::label_of(first);
    let at = first.instructions.iter().take_while(|i| i.class.opcode == Op::Variable).count();
    let tail = first.instructions.split_off(at);
    first.instructions.extend(code);
    first.instructions.push(inst(
        Op::SelectionMerge,
        None,
        None,
        vec![id(rest), Operand::SelectionControl(spirv::SelectionControl::NONE)],
    ));
    first.instructions.push(inst(Op::BranchConditional, None, None, vec![id(counting), id(kill), id(rest)]));
    // Phis that named the entry block as a predecessor now name the rest.
    for b in f.blocks.iter_mut() {
        for i in b.instructions.iter_mut().filter(|i| i.class.opcode == Op::Phi) {
            for pair in i.operands.chunks_mut(2) {
                if pair.len() == 2 && pair[1] == Operand::IdRef(head_label) {
                    pair[1] = Operand::IdRef(rest);
                }
            }
        }
    }
    f.blocks.insert(1, block(kill, vec![inst(terminate, None, None, vec![])]));
    f.blocks.insert(2, block(rest, tail));
    Ok(())
}

/// What [`add_instance_output`] found in a vertex shader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VertexReport {
    /// The shader writes storage (buffers, images) or does atomics: running
    /// it twice (the count draw) would repeat them, so the layer does not
    /// order draws with it.
    pub side_effects: bool,
    /// The shader captures transform feedback (`Xfb`): likewise.
    pub transform_feedback: bool,
}

/// Whether SPIR-V `words` declare a vertex entry point: a scan of the
/// leading instructions (up to the first function), so that other modules
/// are never parsed.
pub fn declares_vertex_entry(words: &[u32]) -> bool {
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let (count, op) = ((first >> 16) as usize, first & 0xffff);
        if count == 0 {
            return false;
        }
        match op {
            15 if words.get(at + 1) == Some(&0) => return true, // OpEntryPoint Vertex
            54 => return false,                                 // OpFunction
            _ => at += count,
        }
    }
    false
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VertexUnsupported {
    #[error("the module uses output location {0}, which the layer reserves")]
    Location(u32),
    #[error("malformed module: {0}")]
    Malformed(#[from] crate::Malformed),
}

/// Gives every vertex entry point of `module` a flat `int` output at
/// `location` holding `InstanceIndex`, stored before anything else (the
/// ordered fragment shader's key). `None`: not a vertex shader (left alone).
/// An output nothing reads is harmless; the varying linker removes it.
pub fn add_instance_output(module: &mut Module, location: u32) -> Result<Option<VertexReport>, VertexUnsupported> {
    let entries: Vec<Word> = ir::entry_functions(module, Some(ExecutionModel::Vertex));
    if entries.is_empty() {
        return Ok(None);
    }
    crate::check(module)?;
    if let Some(l) = ir::max_location(module, StorageClass::Output).filter(|l| *l >= location) {
        return Err(VertexUnsupported::Location(l));
    }
    let side_effects = writes_storage(module);
    let transform_feedback =
        module.execution_modes.iter().any(|i| i.operands.get(1) == Some(&Operand::ExecutionMode(ExecutionMode::Xfb)));
    let mut m = module.clone();
    let mut ids = Ids { m: &mut m };
    let int = ids.int();
    let (index, index_t) = ids.builtin_input(BuiltIn::InstanceIndex, |_| int)?;
    let int_out = ids.pointer(StorageClass::Output, int);
    let var = ids.fresh();
    ids.m.types_global_values.push(inst(
        Op::Variable,
        Some(int_out),
        Some(var),
        vec![Operand::StorageClass(StorageClass::Output)],
    ));
    ir::decorate(ids.m, var, Decoration::Location, vec![Operand::LiteralBit32(location)]);
    ir::decorate(ids.m, var, Decoration::Flat, vec![]);
    ids.m.debug_names.push(inst(
        Op::Name,
        None,
        None,
        vec![Operand::IdRef(var), Operand::LiteralString("ovl_instance".into())],
    ));
    // Listed by the vertex entry points only (another stage's entry point
    // must not get an output at that location).
    for ep in ids.m.entry_points.iter_mut() {
        if ep.operands.first() == Some(&Operand::ExecutionModel(ExecutionModel::Vertex)) {
            for v in [index, var] {
                if !ep.operands.iter().skip(3).any(|o| *o == Operand::IdRef(v)) {
                    ep.operands.push(Operand::IdRef(v));
                }
            }
        }
    }
    for f in entries {
        let (loaded, converted) = (ir::fresh(ids.m), ir::fresh(ids.m));
        let mut code = vec![inst(Op::Load, Some(index_t), Some(loaded), vec![Operand::IdRef(index)])];
        let value = if index_t == int {
            loaded
        } else {
            code.push(inst(Op::Bitcast, Some(int), Some(converted), vec![Operand::IdRef(loaded)]));
            converted
        };
        code.push(inst(Op::Store, None, None, vec![Operand::IdRef(var), Operand::IdRef(value)]));
        if !ir::prepend_to_function(ids.m, f, code) {
            return Err(crate::Malformed::Undefined(f).into());
        }
    }
    *module = m;
    Ok(Some(VertexReport { side_effects, transform_feedback }))
}

/// Whether the module writes memory other than its own invocation's
/// (function, private and output variables) or does atomics.
fn writes_storage(m: &Module) -> bool {
    // Each value's type; a pointer type names its storage class.
    let types: std::collections::HashMap<Word, Word> =
        ir::code(m).chain(&m.types_global_values).filter_map(|i| Some((i.result_id?, i.result_type?))).collect();
    let pointer_class = |value: Word| -> Option<StorageClass> {
        match ir::def(m, *types.get(&value)?).map(|t| t.operands.first()) {
            Some(Some(Operand::StorageClass(c))) => Some(*c),
            _ => None,
        }
    };
    ir::code(m).any(|i| match i.class.opcode {
        Op::ImageWrite => true,
        Op::AtomicStore
        | Op::AtomicExchange
        | Op::AtomicCompareExchange
        | Op::AtomicCompareExchangeWeak
        | Op::AtomicIIncrement
        | Op::AtomicIDecrement
        | Op::AtomicIAdd
        | Op::AtomicISub
        | Op::AtomicSMin
        | Op::AtomicUMin
        | Op::AtomicSMax
        | Op::AtomicUMax
        | Op::AtomicAnd
        | Op::AtomicOr
        | Op::AtomicXor
        | Op::AtomicFAddEXT
        | Op::AtomicFMinEXT
        | Op::AtomicFMaxEXT
        | Op::AtomicFlagTestAndSet
        | Op::AtomicFlagClear => true,
        Op::Store | Op::CopyMemory | Op::CopyMemorySized => match i.operands.first() {
            Some(Operand::IdRef(p)) => !matches!(
                pointer_class(*p),
                Some(StorageClass::Function | StorageClass::Private | StorageClass::Output | StorageClass::Workgroup)
            ),
            _ => false,
        },
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{disassemble, disassemble_bytes, glsl, glsl_for};
    use crate::{assemble, parse, validate, TargetEnv};

    const CFG: Config = Config { set: 7, location: 31, shading_rate: false, demote: false, measure: None };
    const HEAD: &str = "#version 450\n#extension GL_ARB_fragment_shader_interlock : require\n";
    const IMG: &str = "layout(binding=0, r32ui) coherent uniform uimage2D img;\nlayout(location=0) out vec4 o;\n";

    fn lower_words(words: &[u32], cfg: &Config, env: TargetEnv) -> (Report, String) {
        let mut m = parse(words).unwrap();
        let report = lower(&mut m, cfg).unwrap();
        let out = assemble(&m);
        let text = disassemble(&out);
        validate(&out, env).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(!text.contains("Interlock"), "{text}");
        for f in ["ovl_begin", "ovl_try_enter", "ovl_leave", "ovl_finish"] {
            assert!(
                text.contains(&format!("OpFunctionCall %bool %{f}")) || text.contains(&format!("%{f}")),
                "{f}\n{text}"
            );
        }
        assert!(text.contains("DescriptorSet 7"), "{text}");
        assert!(text.contains("BuiltIn PrimitiveId") && text.contains("Location 31"), "{text}");
        (report, text)
    }

    fn lower_glsl(mode: &str, body: &str) -> (Report, String) {
        let ext = if mode.starts_with("shading_rate") { "#extension GL_NV_shading_rate_image : require\n" } else { "" };
        let src = format!("{HEAD}{ext}layout({mode}) in;\n{IMG}{body}\n");
        lower_words(&glsl(&src, "frag").unwrap_or_else(|e| panic!("{e}\n{src}")), &CFG, TargetEnv::Vulkan1_1)
    }

    const SHAPES: [&str; 5] = [
        "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }",
        "layout(location=0) flat in int n;\nvoid main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x; for (int i = 0; i < n; i++) { if ((v & 1u) == 0u) v += 3u; else v -= 1u; } imageStore(img, p, uvec4(v)); endInvocationInterlockARB(); o = vec4(1); }",
        "void touch(ivec2 p) { imageStore(img, p, imageLoad(img, p) * 2u); }\nvoid main() { beginInvocationInterlockARB(); touch(ivec2(gl_FragCoord.xy)); endInvocationInterlockARB(); o = vec4(1); }",
        // Discard before, inside and after the section (the CTS's killOdd).
        "void main() { ivec2 p = ivec2(gl_FragCoord.xy); if (p.y < 4 && (p.x & 1) != 0) discard; beginInvocationInterlockARB(); if ((p.x & 1) != 0) discard; imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); discard; }",
        // A return from main after the section (GLSL allows none before it).
        "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); if (p.x == 3) { o = vec4(0); return; } o = vec4(1); }",
    ];

    #[test]
    fn shapes_of_ordered_modes_lower_to_valid_spir_v() {
        for mode in ["pixel_interlock_ordered", "sample_interlock_ordered", "shading_rate_interlock_ordered"] {
            for body in SHAPES {
                let (r, text) = lower_glsl(mode, body);
                assert_eq!(r.sections, 1);
                assert!(!r.early_fragment_tests);
                // The count draw terminates right after the prologue.
                assert!(text.contains("OpKill"), "{text}");
            }
        }
    }

    /// Every way out of the shader finishes first: each kill (and the
    /// entry's returns) is preceded by a call of ovl_finish.
    #[test]
    fn every_exit_finishes_first() {
        for body in [SHAPES[3], SHAPES[4]] {
            let (_, text) = lower_glsl("pixel_interlock_ordered", body);
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            let main = lines.iter().position(|l| l.contains("%main = OpFunction")).unwrap();
            let end = main + lines[main..].iter().position(|l| *l == "OpFunctionEnd").unwrap();
            let mut kills = 0;
            for k in main..end {
                if lines[k] == "OpKill" || lines[k] == "OpReturn" {
                    kills += 1;
                    // The prologue's kill (the count draw) is the one after the begin call.
                    let before = lines[k - 1];
                    let prologue = lines[..k].iter().rev().take(3).any(|l| l.contains("OpBranchConditional"))
                        && lines[k - 1].starts_with('%')
                        && lines[k - 1].contains("OpLabel");
                    assert!(
                        before.contains("%ovl_finish") || prologue,
                        "{} is not preceded by ovl_finish:\n{text}",
                        lines[k]
                    );
                }
            }
            assert!(kills >= 2, "{text}");
        }
    }

    /// A discard before the section becomes finish, demote and a branch to
    /// the selection's merge; the discard after it stays a kill.
    #[test]
    fn discards_before_the_section_are_demoted() {
        let src = format!("{HEAD}layout(pixel_interlock_ordered) in;\n{IMG}{}\n", SHAPES[3]);
        for env in ["vulkan1.1", "vulkan1.3"] {
            let words = glsl_for(&src, "frag", env).unwrap();
            let target = if env == "vulkan1.1" { TargetEnv::Vulkan1_1 } else { TargetEnv::Vulkan1_3 };
            let mut m = parse(&words).unwrap();
            let r = lower(&mut m, &Config { demote: true, ..CFG }).unwrap();
            let out = assemble(&m);
            let text = disassemble(&out);
            validate(&out, target).unwrap_or_else(|e| panic!("{e}\n{text}"));
            // Before the section and inside it; not the final one.
            assert_eq!(r.kills_demoted, 2, "{text}");
            assert!(text.contains("OpDemoteToHelperInvocation"), "{text}");
        }
    }

    #[test]
    fn unordered_modes_are_not_for_this_strategy() {
        let src = format!("{HEAD}layout(pixel_interlock_unordered) in;\n{IMG}{}\n", SHAPES[0]);
        let words = glsl(&src, "frag").unwrap();
        let mut m = parse(&words).unwrap();
        assert_eq!(lower(&mut m, &CFG), Err(Unsupported::NotOrdered));
    }

    #[test]
    fn spir_v_versions_and_memory_models() {
        for (env, target, vmm) in [
            ("vulkan1.0", TargetEnv::Vulkan1_0, false),
            ("vulkan1.2", TargetEnv::Vulkan1_2, false),
            ("vulkan1.2", TargetEnv::Vulkan1_2, true),
            ("vulkan1.3", TargetEnv::Vulkan1_3, true),
        ] {
            let pragma = if vmm { "#pragma use_vulkan_memory_model\n" } else { "" };
            let src = format!("{HEAD}{pragma}layout(pixel_interlock_ordered) in;\n{IMG}{}\n", SHAPES[3]);
            let words = glsl_for(&src, "frag", env).unwrap_or_else(|e| panic!("{e}"));
            let (_, text) = lower_words(&words, &CFG, target);
            assert_eq!(text.contains("OpMemoryModel Logical Vulkan"), vmm, "{text}");
            if env == "vulkan1.3" {
                assert!(text.contains("OpTerminateInvocation"), "{text}");
            }
        }
    }

    #[test]
    fn demote_finishes_and_becomes_a_helper() {
        let src = format!(
            "{HEAD}#extension GL_EXT_demote_to_helper_invocation : require\nlayout(pixel_interlock_ordered) in;\n{IMG}void main() {{ ivec2 p = ivec2(gl_FragCoord.xy); if (p.x == 1) demote; beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }}\n"
        );
        let words = glsl_for(&src, "frag", "vulkan1.2").unwrap();
        let (_, text) = lower_words(&words, &CFG, TargetEnv::Vulkan1_2);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let d = lines.iter().position(|l| l.starts_with("OpDemoteToHelperInvocation")).unwrap();
        assert!(lines[d - 1].contains("%ovl_finish"), "{text}");
        assert!(lines[d + 1].starts_with("OpStore %ovl_helper %true"), "{text}");
    }

    #[test]
    fn shading_rate_reads_the_coarse_fragment() {
        let src = format!("{HEAD}#extension GL_NV_shading_rate_image : require\nlayout(shading_rate_interlock_ordered) in;\n{IMG}{}\n", SHAPES[0]);
        let words = glsl_for(&src, "frag", "vulkan1.2").unwrap();
        let cfg = Config { shading_rate: true, ..CFG };
        let (_, text) = lower_words(&words, &cfg, TargetEnv::Vulkan1_2);
        assert!(
            text.contains("BuiltIn ShadingRateKHR") && text.contains("OpCapability FragmentShadingRateKHR"),
            "{text}"
        );
        let (_, plain) = lower_words(&words, &CFG, TargetEnv::Vulkan1_2);
        assert!(!plain.contains("ShadingRateKHR"), "{plain}");
        // The general library keeps the state of up to 16 cells an area;
        // without a shading rate the one-cell library keeps none.
        assert!(text.contains("ovl_smaller_more"), "{text}");
        assert!(!plain.contains("ovl_smaller_more"), "{plain}");
    }

    /// Sample interlock in a module that reads SampleId gets a cell per
    /// sample; pixel interlock keeps pixel cells (its samples' invocations
    /// merge in one slot at run time).
    #[test]
    fn per_sample_cells_only_for_sample_interlock_reading_sample_id() {
        let body = "void main() { ivec2 p = ivec2(gl_FragCoord.x * 4.0 + float(gl_SampleID), gl_FragCoord.y); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }";
        let (r, text) = lower_glsl("sample_interlock_ordered", body);
        assert!(r.per_sample_cells && r.per_sample, "{text}");
        let (r, _) = lower_glsl("pixel_interlock_ordered", body);
        assert!(!r.per_sample_cells && r.per_sample);
        let (r, _) = lower_glsl("sample_interlock_ordered", SHAPES[0]);
        assert!(!r.per_sample_cells && !r.per_sample);
    }

    #[test]
    fn early_fragment_tests_are_reported() {
        let src = format!(
            "{HEAD}layout(early_fragment_tests) in;\nlayout(pixel_interlock_ordered) in;\n{IMG}{}\n",
            SHAPES[0]
        );
        let (r, _) = lower_words(&glsl(&src, "frag").unwrap(), &CFG, TargetEnv::Vulkan1_1);
        assert!(r.early_fragment_tests);
    }

    #[test]
    fn a_reserved_input_location_is_refused() {
        let src = format!(
            "{HEAD}layout(pixel_interlock_ordered) in;\n{IMG}layout(location=31) flat in int mine;\nvoid main() {{ beginInvocationInterlockARB(); imageStore(img, ivec2(0), uvec4(mine)); endInvocationInterlockARB(); o = vec4(1); }}\n"
        );
        let words = glsl(&src, "frag").unwrap();
        let mut m = parse(&words).unwrap();
        assert_eq!(lower(&mut m, &CFG), Err(Unsupported::Location(31)));
        assert_eq!(assemble(&m)[5..], words[5..]);
    }

    #[test]
    fn vertex_shaders_get_the_instance_output() {
        let plain = "#version 450\nlayout(location=0) out vec2 uv;\nvoid main() { uv = vec2(gl_VertexIndex); gl_Position = vec4(0); }\n";
        let storing = "#version 450\nlayout(binding=0) buffer B { uint n; } b;\nvoid main() { atomicAdd(b.n, 1u); gl_Position = vec4(0); }\n";
        for (src, side_effects, env, target) in [
            (plain, false, "vulkan1.0", TargetEnv::Vulkan1_0),
            (plain, false, "vulkan1.3", TargetEnv::Vulkan1_3),
            (storing, true, "vulkan1.1", TargetEnv::Vulkan1_1),
        ] {
            let words = glsl_for(src, "vert", env).unwrap();
            let mut m = parse(&words).unwrap();
            assert!(declares_vertex_entry(&words));
            let r = add_instance_output(&mut m, 31).unwrap().unwrap();
            assert_eq!(r.side_effects, side_effects);
            let out = assemble(&m);
            let text = disassemble(&out);
            validate(&out, target).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert!(text.contains("BuiltIn InstanceIndex") && text.contains("Location 31"), "{text}");
        }
        // A fragment shader is left alone.
        let frag =
            glsl("#version 450\nlayout(location=0) out vec4 o;\nvoid main() { o = vec4(1); }\n", "frag").unwrap();
        let mut m = parse(&frag).unwrap();
        assert!(!declares_vertex_entry(&frag));
        assert_eq!(add_instance_output(&mut m, 31), Ok(None));
        // The reserved location taken.
        let taken = glsl(
            "#version 450\nlayout(location=31) out vec4 x;\nvoid main() { x = vec4(1); gl_Position = vec4(0); }\n",
            "vert",
        )
        .unwrap();
        let mut m = parse(&taken).unwrap();
        assert_eq!(add_instance_output(&mut m, 31), Err(VertexUnsupported::Location(31)));
        // Taken by a matrix that starts below it (found by the fuzzer: the
        // start location alone let a mat2 at 30 collide with the output).
        let spanned = glsl(
            "#version 450\nlayout(location=30) out mat2 x;\nvoid main() { x = mat2(1); gl_Position = vec4(0); }\n",
            "vert",
        )
        .unwrap();
        let mut m = parse(&spanned).unwrap();
        assert_eq!(add_instance_output(&mut m, 31), Err(VertexUnsupported::Location(31)));
    }

    /// Only the measurement build reads the control block's `skip` (member
    /// 6): the others carry no check of `debug_ordered_without`'s parts.
    #[test]
    fn only_the_measurement_build_reads_the_parts_left_out() {
        for (model, version, build, bytes) in LIBRARIES {
            let text = disassemble_bytes(bytes);
            let reads = text.matches("%ovl_ctl %int_6").count();
            assert_eq!(reads > 0, build == Build::Measure, "{model} {version} {build:?}: {reads}");
        }
    }

    /// Where each build looks the key up: at the entry (`ovl_begin`) in
    /// every build but the late one, whose only call of the lookup is in
    /// `ovl_resolve`, made at the first section or the finish.
    #[test]
    fn only_the_late_build_looks_up_at_the_section() {
        for (model, version, build, bytes) in LIBRARIES {
            let text = disassemble_bytes(bytes);
            // The body of the function `name` (its OpFunction to its OpFunctionEnd).
            let body = |name: &str| -> String {
                let from = text.find(&format!("%{name} = OpFunction ")).map(|i| &text[i..]).unwrap_or("");
                from[..from.find("OpFunctionEnd").unwrap_or(0)].to_string()
            };
            let calls = |name: &str| body(name).contains("OpFunctionCall %void %ovl_lookup_");
            assert_eq!(calls("ovl_begin_"), build != Build::Late, "{model} {version} {build:?}");
            assert_eq!(calls("ovl_resolve_"), build == Build::Late, "{model} {version} {build:?}");
        }
    }

    /// The embedded library is what `shaders/glsl/generate` makes of
    /// `shaders/glsl/ordered.frag` today.
    #[test]
    fn generated_library_is_up_to_date() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("glsl");
        for (model, version, build, embedded) in LIBRARIES {
            let define = (model == "vulkan").then_some("-DVULKAN_MM");
            let env = if version == "1.0" { "vulkan1.0" } else { "vulkan1.1" };
            let out = std::env::temp_dir()
                .join(format!("overlap-ordered-{}-{model}-{version}-{build:?}.spv", std::process::id()));
            let status = std::process::Command::new("glslangValidator")
                .args(["-V", "--target-env", env])
                .args(define)
                .args(build.defines())
                .arg("-o")
                .arg(&out)
                .arg(dir.join("ordered.frag"))
                .output()
                .unwrap();
            assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stdout));
            let fresh = std::fs::read(&out).unwrap();
            let _ = std::fs::remove_file(&out);
            assert!(fresh == embedded, "run shaders/glsl/generate ({model} {version}, {build:?})");
        }
    }
}
