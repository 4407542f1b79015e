//! The `spinlock` interlock strategy: a per-pixel (or per-sample) lock in a
//! storage image the layer owns, for GPUs without interlock.
//!
//! Each critical section — `OpBeginInvocationInterlockEXT` to the next
//! `OpEndInvocationInterlockEXT` of the same function, which must enclose a
//! single-entry single-exit region — becomes
//!
//! ```text
//! X:     ...before begin...              ; branches to H
//! H:     OpLoopMerge Yt C                ; while (!done)
//! Body:  old = atomicCompSwap(lock[p], 0, 1)   (acquire)
//!        if (old == 0 || helper) {
//!   S0 ...section...                    ; kills inside first release
//!   Yx     atomicStore(lock[p], 0)      (release)
//!        }
//! SM:    done = phi(true from Yx, false from Body)
//! C:     if (done) break                ; to Yt, else back to H
//! Yt:    ...after end...
//! ```
//!
//! A lane never spins on a lock held by a lane of its own subgroup: a lane
//! that fails to acquire leaves the body and retries on the next iteration,
//! after the holder has finished and released (the deadlock that a naive
//! `while (!acquire) {}` has on SIMT hardware). Helper invocations do not take
//! the lock (their atomics have no effect, so they pass straight through), an
//! invocation demoted or killed inside the section releases first. Entering
//! has acquire and leaving release semantics for uniform (buffer) and image
//! memory, at device scope (queue-family scope and MakeVisible/MakeAvailable
//! under the Vulkan memory model). The lock coordinate is the pixel
//! (x·8 + sample for per-sample locks, used only where the shader already
//! reads `SampleId`, since declaring it would force sample shading) wrapped
//! to the lock image's size: two pixels sharing a lock only contend. Where a
//! shading rate can apply, the pixel coordinate is first divided by the
//! largest fragment size (`Config::block`): a coarse fragment lies in one
//! aligned block of that size, so it shares the lock with every fragment in
//! the pixels it covers (pixel, sample and shading-rate interlock alike).
//!
//! A lock gives mutual exclusion, not primitive order: ordered modes are
//! reported (`Report::ordered`) so the layer can warn.
//!
//! Values computed in the section and used after it are passed through
//! function variables, since the section no longer dominates what follows.

use crate::interlock::{modes, remove_interlock_declarations, Granularity, Mode};
use crate::ir::{self, id_operands, label_of, successors};
use rspirv::dr::{Block, Instruction, Module, Operand};
use rspirv::spirv::{self, BuiltIn, Decoration, Op, StorageClass, Word};
use std::collections::{HashMap, HashSet, VecDeque};

/// Where the layer binds the lock image, and its size.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub set: u32,
    pub binding: u32,
    /// The lock image is `size` × `size` R32_UINT texels (a power of two).
    pub size: u32,
    /// log2 of the lock block (width, height): one lock per aligned block of
    /// `1 << block.0` × `1 << block.1` pixels. (0, 0) without a shading rate;
    /// with one, the largest fragment size, so that a coarse fragment and
    /// every fragment in the pixels it covers share the lock.
    pub block: (u32, u32),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub modes: Vec<Mode>,
    pub sections: usize,
    pub per_sample_locks: bool,
    /// Values carried out of a section through function variables.
    pub spilled_values: usize,
}

impl Report {
    /// The shader asked for primitive order, which a lock does not give.
    pub fn ordered(&self) -> bool {
        self.modes.iter().any(|m| m.ordered)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Unsupported {
    #[error("the module declares no interlock execution mode")]
    NoMode,
    #[error("OpBeginInvocationInterlockEXT without a following OpEndInvocationInterlockEXT in the same function")]
    Unpaired,
    #[error("the critical section is not a single-entry single-exit region")]
    NotSese,
    #[error("a critical section starts or ends in a loop header block")]
    LoopHeader,
    #[error("a value of a type that cannot live in a function variable ({0:?}) is used after its critical section")]
    Unspillable(Op),
    #[error("a lock block of 2^{0:?} pixels (fragment sizes stop at 4x4)")]
    Block((u32, u32)),
    #[error("the module has no fragment entry point")]
    NoEntryPoint,
    #[error("malformed module: {0}")]
    Malformed(#[from] crate::Malformed),
}

/// The module being lowered, with the types and constants the lowering
/// declares (deduplicated, see [`ir::find_or_add`]).
pub(crate) struct Ids<'m> {
    pub(crate) m: &'m mut Module,
}

impl Ids<'_> {
    pub(crate) fn fresh(&mut self) -> Word {
        ir::fresh(self.m)
    }

    /// A type or constant, reusing an identical declaration.
    pub(crate) fn global(&mut self, op: Op, result_type: Option<Word>, operands: Vec<Operand>) -> Word {
        ir::find_or_add(self.m, op, result_type, operands)
    }

    pub(crate) fn uint(&mut self) -> Word {
        self.global(Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(0)])
    }
    pub(crate) fn int(&mut self) -> Word {
        self.global(Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(1)])
    }
    pub(crate) fn bool(&mut self) -> Word {
        self.global(Op::TypeBool, None, vec![])
    }
    pub(crate) fn uint_const(&mut self, v: u32) -> Word {
        let t = self.uint();
        ir::constant(self.m, t, v)
    }
    pub(crate) fn bool_const(&mut self, v: bool) -> Word {
        let t = self.bool();
        self.global(if v { Op::ConstantTrue } else { Op::ConstantFalse }, Some(t), vec![])
    }
    pub(crate) fn pointer(&mut self, class: StorageClass, pointee: Word) -> Word {
        ir::pointer_type(self.m, class, pointee)
    }

    /// The input variable decorated with `builtin` and the type it holds,
    /// declared if missing.
    pub(crate) fn builtin_input(
        &mut self,
        builtin: BuiltIn,
        pointee: impl FnOnce(&mut Self) -> Word,
    ) -> Result<(Word, Word), crate::Malformed> {
        if let Some(var) = ir::builtin_target(self.m, builtin) {
            // A global variable (of a pointer type), not anything else decorated so.
            let pointee = ir::var_type(self.m, var).ok_or(crate::Malformed::Unexpected(var))?;
            return Ok((var, pointee));
        }
        let t = pointee(self);
        let ptr = self.pointer(StorageClass::Input, t);
        let var = self.fresh();
        self.m.types_global_values.push(Instruction::new(
            Op::Variable,
            Some(ptr),
            Some(var),
            vec![Operand::StorageClass(StorageClass::Input)],
        ));
        ir::decorate(self.m, var, Decoration::BuiltIn, vec![Operand::BuiltIn(builtin)]);
        // Flat-ness is implied for integer and boolean built-ins: nothing to add.
        Ok((var, t))
    }
}

pub(crate) fn inst(op: Op, result_type: Option<Word>, result_id: Option<Word>, operands: Vec<Operand>) -> Instruction {
    Instruction::new(op, result_type, result_id, operands)
}

pub(crate) fn label(id: Word) -> Instruction {
    inst(Op::Label, None, Some(id), vec![])
}

pub(crate) fn block(id: Word, instructions: Vec<Instruction>) -> Block {
    Block { label: Some(label(id)), instructions }
}

/// Splits block `bi` before instruction `at`, dropping that instruction; the
/// head keeps the label and branches to the new tail, which keeps the rest.
/// Phis that named the block as predecessor now name the tail.
pub(crate) fn split(ids: &mut Ids, blocks: &mut Vec<Block>, bi: usize, at: usize) -> Word {
    let old = label_of(&blocks[bi]);
    let tail_id = ids.fresh();
    let mut rest = blocks[bi].instructions.split_off(at);
    rest.remove(0);
    blocks[bi].instructions.push(inst(Op::Branch, None, None, vec![Operand::IdRef(tail_id)]));
    for b in blocks.iter_mut() {
        for i in b.instructions.iter_mut().filter(|i| i.class.opcode == Op::Phi) {
            for pair in i.operands.chunks_mut(2) {
                if pair.len() == 2 && pair[1] == Operand::IdRef(old) {
                    pair[1] = Operand::IdRef(tail_id);
                }
            }
        }
    }
    blocks.insert(bi + 1, block(tail_id, rest));
    tail_id
}

pub(crate) fn find_op(blocks: &[Block], from: usize, op: Op) -> Option<(usize, usize)> {
    blocks
        .iter()
        .enumerate()
        .skip(from)
        .find_map(|(bi, b)| b.instructions.iter().position(|i| i.class.opcode == op).map(|ii| (bi, ii)))
}

struct Lock {
    block: (u32, u32),
    /// Id of the lock image variable, and the pointer type for texels.
    var: Word,
    texel_ptr: Word,
    frag_coord: (Word, Word),
    helper: Word,
    sample_id: Option<(Word, Word)>,
    scope: Word,
    acquire: Word,
    release: Word,
    relaxed: Word,
    size_mask: Word,
}

/// Lowers `module` for the spinlock strategy.
pub fn lower(module: &mut Module, cfg: &Config) -> Result<Report, Unsupported> {
    if cfg.block.0 > 2 || cfg.block.1 > 2 {
        return Err(Unsupported::Block(cfg.block));
    }
    let found = modes(module);
    if found.is_empty() {
        return Err(Unsupported::NoMode);
    }
    if module.entry_points.is_empty() {
        return Err(Unsupported::NoEntryPoint);
    }
    crate::check(module)?;
    // Work on a copy so that an unsupported shape leaves the module intact.
    let mut m = module.clone();
    let uses_sample_id = ir::builtin_target(&m, BuiltIn::SampleId).is_some();
    let per_sample = uses_sample_id && found.iter().any(|f| f.granularity == Granularity::Sample);
    let vulkan_mm = matches!(
        m.memory_model.as_ref().and_then(|mm| mm.operands.get(1)),
        Some(Operand::MemoryModel(spirv::MemoryModel::Vulkan))
    );
    remove_interlock_declarations(&mut m);
    let mut ids = Ids { m: &mut m };

    // Globals: lock image, built-ins, constants.
    let uint = ids.uint();
    let int = ids.int();
    let bool_t = ids.bool();
    let image_t = ids.global(
        Op::TypeImage,
        None,
        vec![
            Operand::IdRef(uint),
            Operand::Dim(spirv::Dim::Dim2D),
            Operand::LiteralBit32(0),
            Operand::LiteralBit32(0),
            Operand::LiteralBit32(0),
            Operand::LiteralBit32(2),
            Operand::ImageFormat(spirv::ImageFormat::R32ui),
        ],
    );
    let image_ptr = ids.pointer(StorageClass::UniformConstant, image_t);
    let var = ids.fresh();
    ids.m.types_global_values.push(inst(
        Op::Variable,
        Some(image_ptr),
        Some(var),
        vec![Operand::StorageClass(StorageClass::UniformConstant)],
    ));
    ir::decorate(ids.m, var, Decoration::DescriptorSet, vec![Operand::LiteralBit32(cfg.set)]);
    ir::decorate(ids.m, var, Decoration::Binding, vec![Operand::LiteralBit32(cfg.binding)]);
    ir::add_to_interface(ids.m, var);
    let texel_ptr = ids.pointer(StorageClass::Image, uint);
    let frag_coord = ids.builtin_input(BuiltIn::FragCoord, |ids| {
        let f = ids.global(Op::TypeFloat, None, vec![Operand::LiteralBit32(32)]);
        ids.global(Op::TypeVector, None, vec![Operand::IdRef(f), Operand::LiteralBit32(4)])
    })?;
    ir::add_io_to_interface(ids.m, frag_coord.0);
    let (helper, _) = ids.builtin_input(BuiltIn::HelperInvocation, |ids| ids.bool())?;
    ir::add_io_to_interface(ids.m, helper);
    let sample_id = if per_sample {
        let s = ids.builtin_input(BuiltIn::SampleId, |ids| ids.int())?;
        ir::add_io_to_interface(ids.m, s.0);
        Some(s)
    } else {
        None
    };
    let (scope, mut acq, mut rel) = if vulkan_mm {
        (5u32, 0x2 | 0x40 | 0x800, 0x4 | 0x40 | 0x800)
    } else {
        (1u32, 0x2 | 0x40 | 0x800, 0x4 | 0x40 | 0x800)
    };
    if vulkan_mm {
        acq |= 0x4000; // MakeVisible
        rel |= 0x2000; // MakeAvailable
    }
    let lock = Lock {
        block: cfg.block,
        var,
        texel_ptr,
        frag_coord,
        helper,
        sample_id,
        scope: ids.uint_const(scope),
        acquire: ids.uint_const(acq),
        release: ids.uint_const(rel),
        relaxed: ids.uint_const(0),
        size_mask: ids.uint_const(cfg.size - 1),
    };
    let _ = (int, bool_t);

    let mut report = Report { modes: found, per_sample_locks: per_sample, ..Default::default() };
    let mut functions = std::mem::take(&mut ids.m.functions);
    for f in &mut functions {
        while let Some((bi, ii)) = find_op(&f.blocks, 0, Op::BeginInvocationInterlockEXT) {
            let spilled = lower_section(&mut ids, &mut f.blocks, bi, ii, &mut LockGuard { lock: &lock, ptr: 0 })?;
            report.sections += 1;
            report.spilled_values += spilled;
        }
        if find_op(&f.blocks, 0, Op::EndInvocationInterlockEXT).is_some() {
            return Err(Unsupported::Unpaired);
        }
    }
    ids.m.functions = functions;
    *module = m;
    Ok(report)
}

/// How a critical section is entered and left: the spinlock's lock, or the
/// ordered strategy's protocol (`crate::ordered`).
pub(crate) trait Guard {
    /// Appends one try to enter to `b` (the retry loop's body); returns the
    /// id of the bool that says it entered (helper invocations always do).
    fn try_enter(&mut self, ids: &mut Ids, b: &mut Vec<Instruction>) -> Word;
    /// What leaves the section: at its exit, and before a kill or demote
    /// inside it (the ids of `try_enter` dominate both).
    fn leave(&self, ids: &mut Ids) -> Vec<Instruction>;
}

/// One lock image texel per pixel (or sample, or block).
struct LockGuard<'a> {
    lock: &'a Lock,
    /// The texel pointer of this section, made by `try_enter`.
    ptr: Word,
}

impl Guard for LockGuard<'_> {
    fn try_enter(&mut self, ids: &mut Ids, b: &mut Vec<Instruction>) -> Word {
        let lock = self.lock;
        let uint = ids.uint();
        let int = ids.int();
        let bool_t = ids.bool();
        let zero = ids.uint_const(0);
        let one = ids.uint_const(1);
        let eight = ids.uint_const(8);
        let float = ids.global(Op::TypeFloat, None, vec![Operand::LiteralBit32(32)]);
        let v2int = ids.global(Op::TypeVector, None, vec![Operand::IdRef(int), Operand::LiteralBit32(2)]);
        let fc = ids.fresh();
        b.push(inst(Op::Load, Some(lock.frag_coord.1), Some(fc), vec![Operand::IdRef(lock.frag_coord.0)]));
        let (fx, fy) = (ids.fresh(), ids.fresh());
        b.push(inst(Op::CompositeExtract, Some(float), Some(fx), vec![Operand::IdRef(fc), Operand::LiteralBit32(0)]));
        b.push(inst(Op::CompositeExtract, Some(float), Some(fy), vec![Operand::IdRef(fc), Operand::LiteralBit32(1)]));
        let (mut ux, mut uy) = (ids.fresh(), ids.fresh());
        b.push(inst(Op::ConvertFToU, Some(uint), Some(ux), vec![Operand::IdRef(fx)]));
        b.push(inst(Op::ConvertFToU, Some(uint), Some(uy), vec![Operand::IdRef(fy)]));
        // One lock per aligned block of the largest fragment size.
        for (v, shift) in [(&mut ux, lock.block.0), (&mut uy, lock.block.1)] {
            if shift > 0 {
                let (k, shifted) = (ids.uint_const(shift), ids.fresh());
                b.push(inst(
                    Op::ShiftRightLogical,
                    Some(uint),
                    Some(shifted),
                    vec![Operand::IdRef(*v), Operand::IdRef(k)],
                ));
                *v = shifted;
            }
        }
        let mut x_word = ux;
        if let Some((sid_var, sid_t)) = lock.sample_id {
            let sid = ids.fresh();
            b.push(inst(Op::Load, Some(sid_t), Some(sid), vec![Operand::IdRef(sid_var)]));
            let sidu = if sid_t == uint {
                sid
            } else {
                let c = ids.fresh();
                b.push(inst(Op::Bitcast, Some(uint), Some(c), vec![Operand::IdRef(sid)]));
                c
            };
            let (scaled, sum) = (ids.fresh(), ids.fresh());
            b.push(inst(Op::IMul, Some(uint), Some(scaled), vec![Operand::IdRef(ux), Operand::IdRef(eight)]));
            b.push(inst(Op::IAdd, Some(uint), Some(sum), vec![Operand::IdRef(scaled), Operand::IdRef(sidu)]));
            x_word = sum;
        }
        let (lx, ly, ix, iy, coord) = (ids.fresh(), ids.fresh(), ids.fresh(), ids.fresh(), ids.fresh());
        b.push(inst(
            Op::BitwiseAnd,
            Some(uint),
            Some(lx),
            vec![Operand::IdRef(x_word), Operand::IdRef(lock.size_mask)],
        ));
        b.push(inst(Op::BitwiseAnd, Some(uint), Some(ly), vec![Operand::IdRef(uy), Operand::IdRef(lock.size_mask)]));
        b.push(inst(Op::Bitcast, Some(int), Some(ix), vec![Operand::IdRef(lx)]));
        b.push(inst(Op::Bitcast, Some(int), Some(iy), vec![Operand::IdRef(ly)]));
        b.push(inst(Op::CompositeConstruct, Some(v2int), Some(coord), vec![Operand::IdRef(ix), Operand::IdRef(iy)]));
        let ptr = ids.fresh();
        b.push(inst(
            Op::ImageTexelPointer,
            Some(lock.texel_ptr),
            Some(ptr),
            vec![Operand::IdRef(lock.var), Operand::IdRef(coord), Operand::IdRef(zero)],
        ));
        self.ptr = ptr;
        let (helper, old, free, acquired) = (ids.fresh(), ids.fresh(), ids.fresh(), ids.fresh());
        b.push(inst(Op::Load, Some(bool_t), Some(helper), vec![Operand::IdRef(lock.helper)]));
        b.push(inst(
            Op::AtomicCompareExchange,
            Some(uint),
            Some(old),
            vec![
                Operand::IdRef(ptr),
                Operand::IdRef(lock.scope),
                Operand::IdRef(lock.acquire),
                Operand::IdRef(lock.relaxed),
                Operand::IdRef(one),
                Operand::IdRef(zero),
            ],
        ));
        b.push(inst(Op::IEqual, Some(bool_t), Some(free), vec![Operand::IdRef(old), Operand::IdRef(zero)]));
        b.push(inst(Op::LogicalOr, Some(bool_t), Some(acquired), vec![Operand::IdRef(free), Operand::IdRef(helper)]));
        acquired
    }

    fn leave(&self, ids: &mut Ids) -> Vec<Instruction> {
        let zero = ids.uint_const(0);
        vec![inst(
            Op::AtomicStore,
            None,
            None,
            vec![
                Operand::IdRef(self.ptr),
                Operand::IdRef(self.lock.scope),
                Operand::IdRef(self.lock.release),
                Operand::IdRef(zero),
            ],
        )]
    }
}

/// Lowers the section that starts at instruction `ii` of block `bi` into the
/// retry loop of the module documentation, entered and left by `guard`;
/// returns how many values were spilled.
pub(crate) fn lower_section(
    ids: &mut Ids,
    blocks: &mut Vec<Block>,
    bi: usize,
    ii: usize,
    guard: &mut dyn Guard,
) -> Result<usize, Unsupported> {
    // The matching end: the first after the begin, in layout order.
    let (ei, ej) = {
        let same = blocks[bi].instructions[ii + 1..]
            .iter()
            .position(|i| i.class.opcode == Op::EndInvocationInterlockEXT)
            .map(|j| (bi, ii + 1 + j));
        same.or_else(|| find_op(blocks, bi + 1, Op::EndInvocationInterlockEXT)).ok_or(Unsupported::Unpaired)?
    };
    let has_loop_merge =
        |b: &Block, from: usize| b.instructions[from..].iter().any(|i| i.class.opcode == Op::LoopMerge);
    if has_loop_merge(&blocks[bi], ii) || has_loop_merge(&blocks[ei], ej) {
        return Err(Unsupported::LoopHeader);
    }
    // Split at the end first, then at the begin (indices before stay valid).
    let yt = split(ids, blocks, ei, ej);
    let x = label_of(&blocks[bi]);
    let s0 = split(ids, blocks, bi, ii);
    // The section's exit: the block that now branches to Yt.
    let exit = blocks
        .iter()
        .position(|b| {
            b.instructions.last().is_some_and(|t| t.class.opcode == Op::Branch && t.operands == [Operand::IdRef(yt)])
        })
        .ok_or(Unsupported::NotSese)?;
    let exit_id = label_of(&blocks[exit]);

    // The section: everything reachable from S0 up to the exit.
    let labels: HashMap<Word, usize> = blocks.iter().enumerate().map(|(i, b)| (label_of(b), i)).collect();
    let mut section: HashSet<Word> = HashSet::new();
    let mut queue = VecDeque::from([s0]);
    while let Some(l) = queue.pop_front() {
        if !section.insert(l) || l == exit_id {
            continue;
        }
        for s in successors(&blocks[labels[&l]]) {
            if labels.contains_key(&s) && !section.contains(&s) {
                queue.push_back(s);
            }
        }
    }
    if section.contains(&yt) || section.contains(&x) || !section.contains(&exit_id) {
        return Err(Unsupported::NotSese);
    }
    for b in blocks.iter().filter(|b| !section.contains(&label_of(b)) && label_of(b) != x) {
        if successors(b).iter().any(|s| section.contains(s)) {
            return Err(Unsupported::NotSese);
        }
    }

    let (h, body, sel_merge, cont) = (ids.fresh(), ids.fresh(), ids.fresh(), ids.fresh());
    let bool_t = ids.bool();
    let t_true = ids.bool_const(true);
    let t_false = ids.bool_const(false);

    // Body: one try to enter.
    let mut b = Vec::new();
    let acquired = guard.try_enter(ids, &mut b);
    b.push(inst(
        Op::SelectionMerge,
        None,
        None,
        vec![Operand::IdRef(sel_merge), Operand::SelectionControl(spirv::SelectionControl::NONE)],
    ));
    b.push(inst(
        Op::BranchConditional,
        None,
        None,
        vec![Operand::IdRef(acquired), Operand::IdRef(s0), Operand::IdRef(sel_merge)],
    ));

    // Release before leaving the section by kill or demotion.
    for blk in blocks.iter_mut().filter(|blk| section.contains(&label_of(blk))) {
        let mut k = 0;
        while k < blk.instructions.len() {
            if matches!(
                blk.instructions[k].class.opcode,
                Op::Kill | Op::TerminateInvocation | Op::DemoteToHelperInvocation
            ) {
                let leave = guard.leave(ids);
                let n = leave.len();
                blk.instructions.splice(k..k, leave);
                k += n;
            }
            k += 1;
        }
    }
    // The exit releases and joins the selection.
    let exit_blk = &mut blocks[exit];
    exit_blk.instructions.pop();
    exit_blk.instructions.extend(guard.leave(ids));
    exit_blk.instructions.push(inst(Op::Branch, None, None, vec![Operand::IdRef(sel_merge)]));
    // X enters the loop.
    let xi = labels[&x];
    let xb = &mut blocks[xi];
    xb.instructions.pop();
    xb.instructions.push(inst(Op::Branch, None, None, vec![Operand::IdRef(h)]));

    let done = ids.fresh();
    let h_blk = block(
        h,
        vec![
            inst(
                Op::LoopMerge,
                None,
                None,
                vec![Operand::IdRef(yt), Operand::IdRef(cont), Operand::LoopControl(spirv::LoopControl::NONE)],
            ),
            inst(Op::Branch, None, None, vec![Operand::IdRef(body)]),
        ],
    );
    let sm_blk = block(
        sel_merge,
        vec![
            inst(
                Op::Phi,
                Some(bool_t),
                Some(done),
                vec![Operand::IdRef(t_true), Operand::IdRef(exit_id), Operand::IdRef(t_false), Operand::IdRef(body)],
            ),
            inst(Op::Branch, None, None, vec![Operand::IdRef(cont)]),
        ],
    );
    let c_blk = block(
        cont,
        vec![inst(
            Op::BranchConditional,
            None,
            None,
            vec![Operand::IdRef(done), Operand::IdRef(yt), Operand::IdRef(h)],
        )],
    );
    let body_blk = block(body, b);

    // Values defined in the section and used after it go through variables.
    let spilled = spill_escaping(ids, blocks, &section, yt)?;

    // Reorder: ..., X, H, Body, section..., SM, C, Yt, the rest.
    let old = std::mem::take(blocks);
    let (mut before, mut sec, mut after) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen_x = false;
    for blk in old {
        let l = label_of(&blk);
        if section.contains(&l) {
            sec.push(blk);
        } else if !seen_x {
            seen_x = l == x;
            before.push(blk);
        } else {
            after.push(blk);
        }
    }
    let yt_pos = after.iter().position(|b| label_of(b) == yt).ok_or(Unsupported::NotSese)?;
    let yt_blk = after.remove(yt_pos);
    blocks.extend(before);
    blocks.push(h_blk);
    blocks.push(body_blk);
    blocks.extend(sec);
    blocks.push(sm_blk);
    blocks.push(c_blk);
    blocks.push(yt_blk);
    blocks.extend(after);
    Ok(spilled)
}

fn spill_escaping(
    ids: &mut Ids,
    blocks: &mut [Block],
    section: &HashSet<Word>,
    yt: Word,
) -> Result<usize, Unsupported> {
    let mut defined: HashMap<Word, Word> = HashMap::new(); // id -> type
    for b in blocks.iter().filter(|b| section.contains(&label_of(b))) {
        for i in &b.instructions {
            if let (Some(id), Some(t)) = (i.result_id, i.result_type) {
                defined.insert(id, t);
            }
        }
    }
    let mut escaping: Vec<Word> = Vec::new();
    for b in blocks.iter().filter(|b| !section.contains(&label_of(b))) {
        for i in &b.instructions {
            for u in id_operands(i) {
                if defined.contains_key(&u) && !escaping.contains(&u) {
                    escaping.push(u);
                }
            }
        }
    }
    if escaping.is_empty() {
        return Ok(0);
    }
    let mut replacement: HashMap<Word, Word> = HashMap::new();
    let mut loads = Vec::new();
    let mut vars = Vec::new();
    for v in &escaping {
        let t = defined[v];
        let op = ir::def(ids.m, t).map(|i| i.class.opcode).unwrap_or(Op::Nop);
        if matches!(op, Op::TypeImage | Op::TypeSampler | Op::TypeSampledImage | Op::TypePointer | Op::TypeRuntimeArray)
        {
            return Err(Unsupported::Unspillable(op));
        }
        let ptr_t = ids.pointer(StorageClass::Function, t);
        let var = ids.fresh();
        vars.push(inst(Op::Variable, Some(ptr_t), Some(var), vec![Operand::StorageClass(StorageClass::Function)]));
        // Store right after the definition (after the block's phis for a phi).
        for b in blocks.iter_mut().filter(|b| section.contains(&label_of(b))) {
            if let Some(pos) = b.instructions.iter().position(|i| i.result_id == Some(*v)) {
                let mut at = pos + 1;
                while at < b.instructions.len() && b.instructions[at].class.opcode == Op::Phi {
                    at += 1;
                }
                b.instructions.insert(at, inst(Op::Store, None, None, vec![Operand::IdRef(var), Operand::IdRef(*v)]));
            }
        }
        let loaded = ids.fresh();
        loads.push(inst(Op::Load, Some(t), Some(loaded), vec![Operand::IdRef(var)]));
        replacement.insert(*v, loaded);
    }
    for b in blocks.iter_mut().filter(|b| !section.contains(&label_of(b))) {
        for i in b.instructions.iter_mut() {
            for o in i.operands.iter_mut() {
                if let Operand::IdRef(id) = o {
                    if let Some(r) = replacement.get(id) {
                        *o = Operand::IdRef(*r);
                    }
                }
            }
        }
    }
    let yt_blk = blocks.iter_mut().find(|b| label_of(b) == yt).ok_or(Unsupported::NotSese)?;
    for (k, l) in loads.into_iter().enumerate() {
        yt_blk.instructions.insert(k, l);
    }
    let entry = &mut blocks[0];
    for (k, v) in vars.into_iter().enumerate() {
        entry.instructions.insert(k, v);
    }
    Ok(escaping.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assemble_text, disassemble, glsl};
    use crate::{assemble, parse, validate, TargetEnv};

    const CFG: Config = Config { set: 7, binding: 0, size: 2048, block: (0, 0) };
    const HEAD: &str = "#version 450\n#extension GL_ARB_fragment_shader_interlock : require\n";
    const IMG: &str = "layout(binding=0, r32ui) coherent uniform uimage2D img;\nlayout(location=0) out vec4 o;\n";

    fn lower_glsl(mode: &str, body: &str) -> (Report, String) {
        let src = format!("{HEAD}layout({mode}) in;\n{IMG}{body}\n");
        lower_words(&glsl(&src, "frag").unwrap_or_else(|e| panic!("{e}\n{src}")))
    }

    fn lower_words(words: &[u32]) -> (Report, String) {
        let mut m = parse(words).unwrap();
        let report = lower(&mut m, &CFG).unwrap();
        let out = assemble(&m);
        let text = disassemble(&out);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(!text.contains("Interlock"), "{text}");
        assert!(text.contains("OpAtomicCompareExchange"), "{text}");
        assert!(text.contains("OpLoopMerge"), "{text}");
        assert!(text.contains("DescriptorSet 7"), "{text}");
        (report, text)
    }

    #[test]
    fn shapes_by_mode_lower_to_valid_spir_v() {
        let shapes = [
            "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }",
            "layout(location=0) flat in int n;\nvoid main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x; for (int i = 0; i < n; i++) { if ((v & 1u) == 0u) v += 3u; else v -= 1u; } imageStore(img, p, uvec4(v)); endInvocationInterlockARB(); o = vec4(1); }",
            "void touch(ivec2 p) { imageStore(img, p, imageLoad(img, p) * 2u); }\nvoid main() { beginInvocationInterlockARB(); touch(ivec2(gl_FragCoord.xy)); endInvocationInterlockARB(); o = vec4(1); }",
        ];
        for mode in [
            "pixel_interlock_ordered",
            "pixel_interlock_unordered",
            "sample_interlock_ordered",
            "sample_interlock_unordered",
        ] {
            for body in shapes {
                let (r, _) = lower_glsl(mode, body);
                assert_eq!(r.sections, 1);
                assert_eq!(r.ordered(), mode.ends_with("_ordered"));
                assert!(!r.per_sample_locks);
            }
        }
    }

    /// Under a shading rate, one lock per aligned block of the largest
    /// fragment size: the pixel coordinates are shifted right first; refused
    /// beyond 4x4.
    #[test]
    fn block_locks_shift_the_coordinates() {
        let src = format!("{HEAD}layout(pixel_interlock_ordered) in;\n{IMG}void main() {{ ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }}\n");
        let words = glsl(&src, "frag").unwrap();
        let shifts = |cfg: &Config| {
            let mut m = parse(&words).unwrap();
            lower(&mut m, cfg).unwrap();
            let out = assemble(&m);
            validate(&out, TargetEnv::Vulkan1_1).unwrap();
            disassemble(&out).matches("OpShiftRightLogical").count()
        };
        assert_eq!(shifts(&CFG), 0);
        assert_eq!(shifts(&Config { block: (2, 2), ..CFG }), 2);
        assert_eq!(shifts(&Config { block: (1, 0), ..CFG }), 1);
        let mut m = parse(&words).unwrap();
        assert_eq!(lower(&mut m, &Config { block: (3, 2), ..CFG }), Err(Unsupported::Block((3, 2))));
    }

    #[test]
    fn value_used_after_the_section_is_spilled() {
        // In SSA form (spirv-opt -O), the value read in the section is used
        // directly after it.
        let src = format!("{HEAD}layout(pixel_interlock_unordered) in;\n{IMG}void main() {{ ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x + 1u; imageStore(img, p, uvec4(v)); endInvocationInterlockARB(); o = vec4(float(v)); }}\n");
        let words = crate::testing::optimize(&glsl(&src, "frag").unwrap());
        let (r, text) = lower_words(&words);
        assert!(r.spilled_values >= 1, "{text}");
        assert!(text.contains("Function"), "{text}");
    }

    #[test]
    fn discard_inside_the_section_releases_first() {
        let (_, text) = lower_glsl(
            "pixel_interlock_ordered",
            "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x; if (v > 5u) discard; imageStore(img, p, uvec4(v + 1u)); endInvocationInterlockARB(); o = vec4(1); }",
        );
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let kill = lines.iter().position(|l| *l == "OpKill" || *l == "OpTerminateInvocation").expect("kill");
        assert!(lines[kill - 1].starts_with("OpAtomicStore"), "{text}");
    }

    #[test]
    fn per_sample_locks_only_where_sample_id_is_read() {
        let (r, text) = lower_glsl(
            "sample_interlock_ordered",
            "void main() { ivec2 p = ivec2(gl_FragCoord.x * 4.0 + float(gl_SampleID), gl_FragCoord.y); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }",
        );
        assert!(r.per_sample_locks, "{text}");
        // Pixel interlock keeps per-pixel locks even when SampleId is read.
        let (r, _) = lower_glsl(
            "pixel_interlock_ordered",
            "void main() { ivec2 p = ivec2(gl_FragCoord.x * 4.0 + float(gl_SampleID), gl_FragCoord.y); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }",
        );
        assert!(!r.per_sample_locks);
    }

    #[test]
    fn vulkan_memory_model_gets_visibility_semantics() {
        let src = format!(
            "{HEAD}#pragma use_vulkan_memory_model\nlayout(pixel_interlock_ordered) in;\n{IMG}void main() {{ ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }}\n"
        );
        let words = glsl(&src, "frag").unwrap();
        let (_, text) = lower_words(&words);
        assert!(text.contains("OpMemoryModel Logical Vulkan"), "{text}");
    }

    #[test]
    fn divergent_pairs_become_two_sections() {
        let text = crate::testing::DIVERGENT_PAIRS;
        let (r, _) = lower_words(&assemble_text(text).unwrap());
        assert_eq!(r.sections, 2);
    }

    #[test]
    fn unsupported_shapes_leave_the_module_alone() {
        let words =
            glsl("#version 450\nlayout(location=0) out vec4 o;\nvoid main() { o = vec4(1); }\n", "frag").unwrap();
        let mut m = parse(&words).unwrap();
        assert_eq!(lower(&mut m, &CFG), Err(Unsupported::NoMode));
        assert_eq!(assemble(&m)[5..], words[5..]);
    }
}

#[cfg(test)]
mod robustness {
    use super::*;
    use crate::testing::{lowering_keeps_shader_declared, only_interlock_capability, self_referential_vector};
    use crate::{assemble, parse};

    const CFG: Config = Config { set: 7, binding: 0, size: 2048, block: (0, 0) };

    /// As for the serialized rewrite: `Shader`, implied by the interlock
    /// capability removed, stays declared.
    #[test]
    fn shader_stays_declared_when_interlock_was_the_only_capability() {
        lowering_keeps_shader_declared(|m| {
            let r = lower(m, &CFG).unwrap();
            assert_eq!(r.sections, 1);
        });
    }

    #[test]
    fn a_self_referential_type_is_an_error_and_leaves_the_module_alone() {
        let mut words = only_interlock_capability("pixel");
        let v = self_referential_vector(&mut words);
        let mut m = parse(&words).unwrap();
        assert_eq!(lower(&mut m, &CFG), Err(Unsupported::Malformed(crate::Malformed::ForwardReference(v))));
        assert_eq!(assemble(&m)[5..], words[5..]);
    }
}
