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
//! Body:  entered = try to enter          ; per lane, or per quad (below)
//!        if (entered) {
//!   S0 ...section...                    ; kills inside first leave
//!   Yx     leave                        (release)
//!        }
//! SM:    done = phi(true from Yx, false from Body)
//! C:     if (done) break                ; to Yt, else back to H
//! Yt:    ...after end...
//! ```
//!
//! A lane never spins on a lock held by a lane of its own subgroup: a lane
//! that fails to acquire leaves the body and retries on the next iteration,
//! after the holder has finished and released (the deadlock that a naive
//! `while (!acquire) {}` has on SIMT hardware). Entering has acquire and
//! leaving release semantics for uniform (buffer) and image memory, at device
//! scope (queue-family scope and MakeVisible/MakeAvailable under the Vulkan
//! memory model). The lock coordinate is the pixel divided by the lock block
//! (below), wrapped to the lock image's size: two blocks sharing a lock only
//! contend. Where a shading rate can apply, the block is built on the largest
//! fragment size (`Config::block`): a coarse fragment lies in one aligned
//! block of that size, so it shares the lock with every fragment in the
//! pixels it covers (pixel, sample and shading-rate interlock alike).
//!
//! **Quad locks** (`Config::quad`, the default where the device has subgroup
//! ballots in fragment shaders). Derivatives (`dFdx`, implicit-LOD sampling)
//! inside a section need the four lanes of a quad to run it together, helpers
//! included; lanes that each take their own lock enter in different
//! iterations whenever they contend (always at a coarse rate, where a quad's
//! fragments share a lock). So a quad enters as a unit:
//!
//! - The lock block is a quad's area: 2x2 pixels, or twice the largest
//!   fragment size (quads are 2x2 fragments aligned to even fragment
//!   coordinates, and fragment sizes are powers of two, so every quad of any
//!   fragment size lies in one aligned block and all its lanes name one lock).
//!   Per-sample locks are not used: a quad's lanes need not share a sample.
//!   The locks fill the left half of the lock image; the right half holds a
//!   scratch texel per pixel, which is never written.
//! - One try: a ballot of `!HelperInvocation` gives the active non-helper
//!   lanes of the quad (the quad is `SubgroupLocalInvocationId / 4`, as for
//!   the quad group operations); the lowest of them, the leader, swaps the
//!   lock from 0 to their number `n`. The other lanes swap their own scratch
//!   texel, comparing with a value it never holds: straight-line code, and no
//!   second atomic on the lock's address (with every lane's atomics on the
//!   lock, the H100's interlock bench took 1.5-1.6 times as long). A second
//!   ballot of "the leader took it" tells the quad; every active lane of the
//!   quad, helpers included, then runs the section in that iteration. A quad of helpers only enters at
//!   once (their atomics have no effect).
//! - The lock is a count of the lanes inside. Leaving — at the exit, or
//!   before a kill or demote inside the section — is a ballot of the lanes
//!   there that still count; the lowest subtracts their number from the lock
//!   (release), the others subtract 0 from their scratch texel, and all count
//!   no more (a function variable: a demoted lane, a helper from then on,
//!   does not subtract again at the exit). The last subtraction frees the
//!   lock, so neither a killed leader nor a killed non-leader leaves the rest
//!   of its quad unprotected or the lock held.
//! - Lanes of one quad that reach the section on different paths (control
//!   flow that diverges inside a quad) are separate ballots, each with its
//!   own leader and count: still exclusive, as each takes the lock; their
//!   derivatives are undefined there anyway. The deadlock argument is
//!   unchanged: a quad that fails goes round, no lane waits inside a try,
//!   and a holder leaves within its iteration.
//! - Memory order: the lock's acquire and release are the leader's and the
//!   leaving lane's; the quad's other lanes are ordered with them only as far
//!   as the hardware's fences act for the whole subgroup, which the Vulkan
//!   memory model (per invocation; a ballot does not synchronize) does not
//!   promise. The race detector judges it on the GPU (`ci/gpu-ordered`,
//!   `ci/gpu-nvidia`: no word lost on the H100).
//!
//! The cost: more contention (a lock per 2x2 pixels instead of per pixel;
//! at a coarse rate per 2x2 coarse fragments) and three ballots per
//! section. Without ballots the per-lane lowering stays: each lane takes its
//! own lock (x·8 + sample for per-sample locks, used only where the shader
//! already reads `SampleId`, since declaring it would force sample shading),
//! helper invocations pass straight through, and an invocation demoted or
//! killed inside the section releases first: derivatives inside a section
//! are then undefined where lanes of a quad contend.
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
    /// `1 << block.0` × `1 << block.1` pixels, at most 8x8. (0, 0) without a shading rate;
    /// with one, the largest fragment size, so that a coarse fragment and
    /// every fragment in the pixels it covers share the lock. With quad locks
    /// the block is twice as wide and high (a quad's 2x2 fragments).
    pub block: (u32, u32),
    /// Quads (see the module documentation): sections that need a quad's
    /// lanes together enter as a quad. With `block` (0, 0) the locks stay per
    /// pixel and only those sections enter per quad, taking their lanes'
    /// locks in quad order; under a shading rate every section takes a lock
    /// per quad's block. Needs subgroup ballots in fragment shaders (SPIR-V
    /// 1.3, which the lowering declares); without, each lane takes its own
    /// lock.
    pub quad: bool,
    /// Test-and-test-and-set for quad block locks: the leader reads the lock
    /// first and swaps it only where it reads it free; where it is held, the
    /// leader's swap goes to its scratch texel as the other lanes' do, so a
    /// contended lock word sees reads, not atomic swaps.
    pub ttas: bool,
    /// The locks are words of a storage buffer (`size`² of them, 8x8 words
    /// of neighbouring pixels contiguous) rather than texels of an R32UI
    /// storage image; the same coordinates address both.
    pub buffer: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub modes: Vec<Mode>,
    pub sections: usize,
    pub per_sample_locks: bool,
    /// Quad block locks: a lock per quad's block, every section entered per
    /// quad ([`Config::quad`] under a shading rate).
    pub quad_locks: bool,
    /// Sections a quad enters as a unit: every one with quad block locks;
    /// on per-pixel locks, those that need a quad's lanes together.
    pub quad_sections: usize,
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
    #[error("a lock block of 2^{0:?} pixels (quads of the largest fragment size, 4x4, stop at 8x8)")]
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

    /// Appends `%r = op t args...` (every operand an id) to `b`; returns `%r`.
    pub(crate) fn op(&mut self, b: &mut Vec<Instruction>, op: Op, t: Word, args: &[Word]) -> Word {
        let r = self.fresh();
        b.push(inst(op, Some(t), Some(r), args.iter().map(|a| Operand::IdRef(*a)).collect()));
        r
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
    /// log2 of the lock block actually used (twice the configured one with
    /// quad locks).
    block: (u32, u32),
    /// `SubgroupLocalInvocationId` and its type, where sections enter per
    /// quad: all of them with quad block locks, those that need it on
    /// per-pixel locks ([`LockGuard::section`]).
    quad: Option<(Word, Word)>,
    /// Quad block locks ([`Config::quad`] under a shading rate): a lock per
    /// quad's block, every section entered per quad.
    blocks: bool,
    /// The functions that (through their calls too) hold an instruction
    /// that needs a quad's lanes together ([`needs_quad`]).
    quad_functions: HashSet<Word>,
    /// Id of the lock image (or buffer) variable, and the pointer type for
    /// its texels (words).
    var: Word,
    texel_ptr: Word,
    /// The locks are words of a storage buffer ([`Config::buffer`]).
    buffer: bool,
    frag_coord: (Word, Word),
    helper: Word,
    sample_id: Option<(Word, Word)>,
    scope: Word,
    acquire: Word,
    release: Word,
    relaxed: Word,
    size_mask: Word,
    /// The lock image's side.
    size: u32,
    /// [`Config::ttas`].
    ttas: bool,
}

/// Lowers `module` for the spinlock strategy.
pub fn lower(module: &mut Module, cfg: &Config) -> Result<Report, Unsupported> {
    // Quad block locks under a shading rate: a quad's 2x2 fragments, each at
    // most the largest fragment size (4x4). Without one, per-pixel locks.
    let blocks = cfg.quad && cfg.block != (0, 0);
    let block = if blocks { (cfg.block.0 + 1, cfg.block.1 + 1) } else { cfg.block };
    if block.0 > 3 || block.1 > 3 {
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
    // Not with quad locks: a quad's lanes need not share a sample index.
    let per_sample = !cfg.quad && uses_sample_id && found.iter().any(|f| f.granularity == Granularity::Sample);
    let vulkan_mm = matches!(
        m.memory_model.as_ref().and_then(|mm| mm.operands.get(1)),
        Some(Operand::MemoryModel(spirv::MemoryModel::Vulkan))
    );
    remove_interlock_declarations(&mut m);
    let mut ids = Ids { m: &mut m };

    // Globals: lock image, built-ins, constants.
    let int = ids.int();
    let bool_t = ids.bool();
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
    let quad_functions = if cfg.quad { quad_functions(ids.m) } else { HashSet::new() };
    let quad = if blocks || !quad_functions.is_empty() {
        for c in [spirv::Capability::GroupNonUniform, spirv::Capability::GroupNonUniformBallot] {
            if !ids.m.capabilities.iter().any(|i| i.operands.first() == Some(&Operand::Capability(c))) {
                ids.m.capabilities.push(inst(Op::Capability, None, None, vec![Operand::Capability(c)]));
            }
        }
        // Group operations are SPIR-V 1.3 (Vulkan 1.1, which the layer checks).
        if let Some(h) = ids.m.header.as_mut() {
            if h.version() < (1, 3) {
                h.set_version(1, 3);
            }
        }
        let s = ids.builtin_input(BuiltIn::SubgroupLocalInvocationId, |ids| ids.uint())?;
        ir::add_io_to_interface(ids.m, s.0);
        // An integer input of a fragment shader, built-in or not, is Flat.
        if !ir::decorations_of(ids.m, s.0)
            .iter()
            .any(|d| d.operands.get(1) == Some(&Operand::Decoration(Decoration::Flat)))
        {
            ir::decorate(ids.m, s.0, Decoration::Flat, vec![]);
        }
        Some(s)
    } else {
        None
    };
    let (var, texel_ptr) = declare_locks(&mut ids, cfg);
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
        block,
        quad,
        blocks,
        quad_functions,
        var,
        texel_ptr,
        buffer: cfg.buffer,
        frag_coord,
        helper,
        sample_id,
        scope: ids.uint_const(scope),
        acquire: ids.uint_const(acq),
        release: ids.uint_const(rel),
        relaxed: ids.uint_const(0),
        size_mask: ids.uint_const(cfg.size - 1),
        size: cfg.size,
        ttas: cfg.ttas,
    };
    let _ = (int, bool_t);

    let mut report = Report { modes: found, per_sample_locks: per_sample, quad_locks: blocks, ..Default::default() };
    let mut functions = std::mem::take(&mut ids.m.functions);
    for f in &mut functions {
        while let Some((bi, ii)) = find_op(&f.blocks, 0, Op::BeginInvocationInterlockEXT) {
            let mut guard =
                LockGuard { lock: &lock, ptr: 0, held: None, turn: None, quad: None, per_quad: false, release: None };
            let spilled = lower_section(&mut ids, &mut f.blocks, bi, ii, &mut guard)?;
            report.sections += 1;
            report.quad_sections += usize::from(lock.blocks || guard.per_quad);
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

/// Declares the locks' variable (the lock image, or with [`Config::buffer`]
/// a storage buffer of words) at the reserved set and binding; returns it
/// and the pointer type of one lock. Called after the module's version is
/// final: a buffer is a `StorageBuffer` block from SPIR-V 1.3, a `Uniform`
/// `BufferBlock` before.
fn declare_locks(ids: &mut Ids, cfg: &Config) -> (Word, Word) {
    let uint = ids.uint();
    let (var_ptr, class, texel_ptr) = if cfg.buffer {
        let storage_buffer = ids.m.header.as_ref().is_some_and(|h| h.version() >= (1, 3));
        // Fresh aggregate types: an identical one of the module's may carry
        // decorations of its own.
        let (array, block) = (ids.fresh(), ids.fresh());
        ids.m.types_global_values.push(inst(Op::TypeRuntimeArray, None, Some(array), vec![Operand::IdRef(uint)]));
        ids.m.types_global_values.push(inst(Op::TypeStruct, None, Some(block), vec![Operand::IdRef(array)]));
        ir::decorate(ids.m, array, Decoration::ArrayStride, vec![Operand::LiteralBit32(4)]);
        ids.m.annotations.push(inst(
            Op::MemberDecorate,
            None,
            None,
            vec![
                Operand::IdRef(block),
                Operand::LiteralBit32(0),
                Operand::Decoration(Decoration::Offset),
                Operand::LiteralBit32(0),
            ],
        ));
        let (class, decoration) = if storage_buffer {
            (StorageClass::StorageBuffer, Decoration::Block)
        } else {
            (StorageClass::Uniform, Decoration::BufferBlock)
        };
        ir::decorate(ids.m, block, decoration, vec![]);
        (ids.pointer(class, block), class, ids.pointer(class, uint))
    } else {
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
        (
            ids.pointer(StorageClass::UniformConstant, image_t),
            StorageClass::UniformConstant,
            ids.pointer(StorageClass::Image, uint),
        )
    };
    let var = ids.fresh();
    ids.m.types_global_values.push(inst(Op::Variable, Some(var_ptr), Some(var), vec![Operand::StorageClass(class)]));
    ir::decorate(ids.m, var, Decoration::DescriptorSet, vec![Operand::LiteralBit32(cfg.set)]);
    ir::decorate(ids.m, var, Decoration::Binding, vec![Operand::LiteralBit32(cfg.binding)]);
    ir::add_to_interface(ids.m, var);
    (var, texel_ptr)
}

impl Lock {
    /// Appends to `b` the pointer to the lock at (`x`, `y`) (signed
    /// integers, within the image's side): an image texel, or the buffer's
    /// word of 8x8 words ordered like the pixels they lock.
    fn pointer(&self, ids: &mut Ids, b: &mut Vec<Instruction>, x: Word, y: Word) -> Word {
        let zero = ids.uint_const(0);
        if !self.buffer {
            let int = ids.int();
            let v2int = ids.global(Op::TypeVector, None, vec![Operand::IdRef(int), Operand::LiteralBit32(2)]);
            let coord = ids.op(b, Op::CompositeConstruct, v2int, &[x, y]);
            return ids.op(b, Op::ImageTexelPointer, self.texel_ptr, &[self.var, coord, zero]);
        }
        let uint = ids.uint();
        let (three, seven, blocks) = (ids.uint_const(3), ids.uint_const(7), ids.uint_const(self.size >> 3));
        let six = ids.uint_const(6);
        let ux = ids.op(b, Op::Bitcast, uint, &[x]);
        let uy = ids.op(b, Op::Bitcast, uint, &[y]);
        // ((y / 8) * (size / 8) + x / 8) * 64 + (y % 8) * 8 + x % 8
        let by = ids.op(b, Op::ShiftRightLogical, uint, &[uy, three]);
        let bx = ids.op(b, Op::ShiftRightLogical, uint, &[ux, three]);
        let row = ids.op(b, Op::IMul, uint, &[by, blocks]);
        let block = ids.op(b, Op::IAdd, uint, &[row, bx]);
        let base = ids.op(b, Op::ShiftLeftLogical, uint, &[block, six]);
        let iy = ids.op(b, Op::BitwiseAnd, uint, &[uy, seven]);
        let iy8 = ids.op(b, Op::ShiftLeftLogical, uint, &[iy, three]);
        let ix = ids.op(b, Op::BitwiseAnd, uint, &[ux, seven]);
        let inner = ids.op(b, Op::BitwiseOr, uint, &[iy8, ix]);
        let index = ids.op(b, Op::BitwiseOr, uint, &[base, inner]);
        ids.op(b, Op::AccessChain, self.texel_ptr, &[self.var, zero, index])
    }
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
    /// Function variables the guard uses (declared in the function's first
    /// block), asked for after the section is lowered.
    fn locals(&mut self) -> Vec<Instruction> {
        Vec::new()
    }
    /// The section found (`section`: the labels of its blocks), before the
    /// first try is made.
    fn section(&mut self, _blocks: &[Block], _section: &HashSet<Word>) {}
    /// What a failed try does before going round (asked for after
    /// `try_enter`; empty: nothing, and no block for it).
    fn failed(&mut self, _ids: &mut Ids) -> Vec<Instruction> {
        Vec::new()
    }
}

/// One lock image texel per pixel (or sample, or block).
struct LockGuard<'a> {
    lock: &'a Lock,
    /// The texel pointer of this section, made by `try_enter`.
    ptr: Word,
    /// Quad locks: the function variable that says this lane still counts
    /// in the lock (a non-helper lane in the section), and its declaration.
    held: Option<(Word, Instruction)>,
    /// A quad entering on per-pixel locks: the function variable that says
    /// this lane may swap its lock in the next try (every lane below it
    /// holds its own), true outside sections.
    turn: Option<(Word, Instruction)>,
    /// Quad locks: the ids of the try that leaving uses.
    quad: Option<Quad>,
    /// On per-pixel locks: this section needs a quad's lanes together, so
    /// the quad enters as a unit ([`LockGuard::try_enter_prefix`]).
    per_quad: bool,
    /// A quad entering on per-pixel locks: the bool that says a failed try
    /// gives this lane's lock back.
    release: Option<Word>,
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
        let fc = ids.fresh();
        b.push(inst(Op::Load, Some(lock.frag_coord.1), Some(fc), vec![Operand::IdRef(lock.frag_coord.0)]));
        let (fx, fy) = (ids.fresh(), ids.fresh());
        b.push(inst(Op::CompositeExtract, Some(float), Some(fx), vec![Operand::IdRef(fc), Operand::LiteralBit32(0)]));
        b.push(inst(Op::CompositeExtract, Some(float), Some(fy), vec![Operand::IdRef(fc), Operand::LiteralBit32(1)]));
        let (mut ux, mut uy) = (ids.fresh(), ids.fresh());
        b.push(inst(Op::ConvertFToU, Some(uint), Some(ux), vec![Operand::IdRef(fx)]));
        b.push(inst(Op::ConvertFToU, Some(uint), Some(uy), vec![Operand::IdRef(fy)]));
        let pixel = (ux, uy);
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
        let (lx, ly, ix, iy) = (ids.fresh(), ids.fresh(), ids.fresh(), ids.fresh());
        b.push(inst(
            Op::BitwiseAnd,
            Some(uint),
            Some(lx),
            vec![Operand::IdRef(x_word), Operand::IdRef(lock.size_mask)],
        ));
        b.push(inst(Op::BitwiseAnd, Some(uint), Some(ly), vec![Operand::IdRef(uy), Operand::IdRef(lock.size_mask)]));
        b.push(inst(Op::Bitcast, Some(int), Some(ix), vec![Operand::IdRef(lx)]));
        b.push(inst(Op::Bitcast, Some(int), Some(iy), vec![Operand::IdRef(ly)]));
        let ptr = lock.pointer(ids, b, ix, iy);
        self.ptr = ptr;
        match lock.quad {
            Some(sid) if lock.blocks => return self.try_enter_quad(ids, b, sid, pixel, (ux, ly)),
            Some(sid) if self.per_quad => return self.try_enter_prefix(ids, b, sid),
            _ => {}
        }
        let helper = ids.op(b, Op::Load, bool_t, &[lock.helper]);
        let old = ids.op(b, Op::AtomicCompareExchange, uint, &[ptr, lock.scope, lock.acquire, lock.relaxed, one, zero]);
        let free = ids.op(b, Op::IEqual, bool_t, &[old, zero]);
        ids.op(b, Op::LogicalOr, bool_t, &[free, helper])
    }

    fn leave(&self, ids: &mut Ids) -> Vec<Instruction> {
        let zero = ids.uint_const(0);
        if let (Some((held, _)), Some(q)) = (&self.held, &self.quad) {
            // Quad locks: the lanes here that still count leave together —
            // the lowest of them subtracts their number from the lock (the
            // last subtraction frees it), the others their scratch texel's 0
            // — and count no more.
            let (uint, bool_t) = (ids.uint(), ids.bool());
            let f = ids.bool_const(false);
            let mut b = Vec::new();
            let h = ids.fresh();
            b.push(inst(Op::Load, Some(bool_t), Some(h), vec![Operand::IdRef(*held)]));
            let here = Self::quad_bits(ids, &mut b, &q.lanes, h);
            let first = Self::lowest(ids, &mut b, &q.lanes, here);
            let ptr = self.texel(ids, &mut b, q, first);
            let (n, dec, left) = (ids.fresh(), ids.fresh(), ids.fresh());
            b.push(inst(Op::BitCount, Some(uint), Some(n), vec![Operand::IdRef(here)]));
            b.push(inst(
                Op::Select,
                Some(uint),
                Some(dec),
                vec![Operand::IdRef(first), Operand::IdRef(n), Operand::IdRef(zero)],
            ));
            b.push(inst(
                Op::AtomicISub,
                Some(uint),
                Some(left),
                vec![
                    Operand::IdRef(ptr),
                    Operand::IdRef(self.lock.scope),
                    Operand::IdRef(self.lock.release),
                    Operand::IdRef(dec),
                ],
            ));
            b.push(inst(Op::Store, None, None, vec![Operand::IdRef(*held), Operand::IdRef(f)]));
            return b;
        }
        let mut b = vec![inst(
            Op::AtomicStore,
            None,
            None,
            vec![
                Operand::IdRef(self.ptr),
                Operand::IdRef(self.lock.scope),
                Operand::IdRef(self.lock.release),
                Operand::IdRef(zero),
            ],
        )];
        // A quad entering on per-pixel locks: this lane holds its lock no more.
        if let Some((held, _)) = &self.held {
            let f = ids.bool_const(false);
            b.push(inst(Op::Store, None, None, vec![Operand::IdRef(*held), Operand::IdRef(f)]));
        }
        b
    }

    fn locals(&mut self) -> Vec<Instruction> {
        [self.held.take(), self.turn.take()].into_iter().flatten().map(|(_, decl)| decl).collect()
    }

    fn section(&mut self, blocks: &[Block], section: &HashSet<Word>) {
        self.per_quad = self.lock.quad.is_some()
            && !self.lock.blocks
            && blocks
                .iter()
                .filter(|b| section.contains(&label_of(b)))
                .flat_map(|b| &b.instructions)
                .any(|i| needs_quad(i, &self.lock.quad_functions));
    }

    /// A quad entering on per-pixel locks gives back the locks of lanes
    /// above one that missed its own (a compare-swap from 1 to 0 where it
    /// gives back, from a value the lock never holds elsewhere).
    fn failed(&mut self, ids: &mut Ids) -> Vec<Instruction> {
        let Some(release) = self.release else { return Vec::new() };
        let uint = ids.uint();
        let (zero, one, never) = (ids.uint_const(0), ids.uint_const(1), ids.uint_const(u32::MAX));
        let mut b = Vec::new();
        let expected = ids.op(&mut b, Op::Select, uint, &[release, one, never]);
        let l = self.lock;
        ids.op(&mut b, Op::AtomicCompareExchange, uint, &[self.ptr, l.scope, l.release, l.relaxed, zero, expected]);
        b
    }
}

/// The function variable of type bool kept in `slot` (with its declaration,
/// for [`Guard::locals`]), made on first use starting as `init`.
fn bool_variable_in(slot: &mut Option<(Word, Instruction)>, ids: &mut Ids, init: bool) -> Word {
    let (v, _) = slot.get_or_insert_with(|| {
        let bool_t = ids.bool();
        let c = ids.bool_const(init);
        let ptr_t = ids.pointer(StorageClass::Function, bool_t);
        let v = ids.fresh();
        let class = Operand::StorageClass(StorageClass::Function);
        (v, inst(Op::Variable, Some(ptr_t), Some(v), vec![class, Operand::IdRef(c)]))
    });
    *v
}

/// Whether `i` needs the lanes of its quad to run it together: a
/// derivative, an implicit-LOD sample or LOD query, a group operation, or a
/// call of a function in `functions` (those that hold one).
fn needs_quad(i: &Instruction, functions: &HashSet<Word>) -> bool {
    let op = i.class.opcode;
    if op == Op::FunctionCall {
        return matches!(i.operands.first(), Some(Operand::IdRef(f)) if functions.contains(f));
    }
    let name = i.class.opname;
    op == Op::ImageQueryLod
        || name.starts_with("DPd")
        || name.starts_with("Fwidth")
        || name.contains("ImplicitLod")
        || name.starts_with("GroupNonUniform")
        || name.starts_with("Subgroup")
        || name.starts_with("Group") && name.ends_with("AMD")
}

/// The functions of `m` that hold an instruction that needs a quad's lanes
/// together ([`needs_quad`]), directly or through the functions they call.
fn quad_functions(m: &Module) -> HashSet<Word> {
    let mut found = HashSet::new();
    loop {
        let more: Vec<Word> = m
            .functions
            .iter()
            .filter_map(|f| Some((f.def.as_ref()?.result_id?, f)))
            .filter(|(id, f)| {
                !found.contains(id) && f.blocks.iter().flat_map(|b| &b.instructions).any(|i| needs_quad(i, &found))
            })
            .map(|(id, _)| id)
            .collect();
        if more.is_empty() {
            return found;
        }
        found.extend(more);
    }
}

/// This lane's word of a ballot, the shift to its quad's 4 bits, and its
/// own bit among them.
struct Lanes {
    word: Word,
    shift: Word,
    me: Word,
}

impl Lanes {
    /// This lane's place in the ballots (`sid`: `SubgroupLocalInvocationId`).
    fn of(ids: &mut Ids, b: &mut Vec<Instruction>, sid: (Word, Word)) -> Lanes {
        let uint = ids.uint();
        let (one, three, five, quad_base) =
            (ids.uint_const(1), ids.uint_const(3), ids.uint_const(5), ids.uint_const(28));
        let raw = ids.op(b, Op::Load, sid.1, &[sid.0]);
        let lane = if sid.1 == uint { raw } else { ids.op(b, Op::Bitcast, uint, &[raw]) };
        let word = ids.op(b, Op::ShiftRightLogical, uint, &[lane, five]);
        let shift = ids.op(b, Op::BitwiseAnd, uint, &[lane, quad_base]);
        let within = ids.op(b, Op::BitwiseAnd, uint, &[lane, three]);
        let me = ids.op(b, Op::ShiftLeftLogical, uint, &[one, within]);
        Lanes { word, shift, me }
    }
}

/// A quad's lanes and where they point (quad block locks).
struct Quad {
    lanes: Lanes,
    /// The lock's texel, and this lane's scratch texel (never written): x, y.
    lock: (Word, Word),
    scratch: (Word, Word),
}

impl LockGuard<'_> {
    /// The 4 bits of this lane's quad in a ballot of `pred`.
    fn quad_bits(ids: &mut Ids, b: &mut Vec<Instruction>, q: &Lanes, pred: Word) -> Word {
        let uint = ids.uint();
        let v4uint = ids.global(Op::TypeVector, None, vec![Operand::IdRef(uint), Operand::LiteralBit32(4)]);
        let subgroup = ids.uint_const(spirv::Scope::Subgroup as u32);
        let fifteen = ids.uint_const(15);
        let (ballot, w, shifted, bits) = (ids.fresh(), ids.fresh(), ids.fresh(), ids.fresh());
        b.push(inst(
            Op::GroupNonUniformBallot,
            Some(v4uint),
            Some(ballot),
            vec![Operand::IdRef(subgroup), Operand::IdRef(pred)],
        ));
        b.push(inst(
            Op::VectorExtractDynamic,
            Some(uint),
            Some(w),
            vec![Operand::IdRef(ballot), Operand::IdRef(q.word)],
        ));
        b.push(inst(
            Op::ShiftRightLogical,
            Some(uint),
            Some(shifted),
            vec![Operand::IdRef(w), Operand::IdRef(q.shift)],
        ));
        b.push(inst(Op::BitwiseAnd, Some(uint), Some(bits), vec![Operand::IdRef(shifted), Operand::IdRef(fifteen)]));
        bits
    }

    /// Whether this lane is the lowest of `bits` (none: false).
    fn lowest(ids: &mut Ids, b: &mut Vec<Instruction>, q: &Lanes, bits: Word) -> Word {
        let (uint, bool_t) = (ids.uint(), ids.bool());
        let (negated, low, is) = (ids.fresh(), ids.fresh(), ids.fresh());
        b.push(inst(Op::SNegate, Some(uint), Some(negated), vec![Operand::IdRef(bits)]));
        b.push(inst(Op::BitwiseAnd, Some(uint), Some(low), vec![Operand::IdRef(bits), Operand::IdRef(negated)]));
        b.push(inst(Op::IEqual, Some(bool_t), Some(is), vec![Operand::IdRef(low), Operand::IdRef(q.me)]));
        is
    }

    /// The texel pointer of the lock, or of this lane's scratch texel.
    fn texel(&self, ids: &mut Ids, b: &mut Vec<Instruction>, q: &Quad, on_lock: Word) -> Word {
        let int = ids.int();
        // Per component: a vector select needs a vector condition before SPIR-V 1.4.
        let (x, y) = (ids.fresh(), ids.fresh());
        for (r, l, s) in [(x, q.lock.0, q.scratch.0), (y, q.lock.1, q.scratch.1)] {
            b.push(inst(
                Op::Select,
                Some(int),
                Some(r),
                vec![Operand::IdRef(on_lock), Operand::IdRef(l), Operand::IdRef(s)],
            ));
        }
        self.lock.pointer(ids, b, x, y)
    }

    /// One try of a quad (see the module documentation): the lowest active
    /// non-helper lane of the quad swaps the lock from 0 to the number of
    /// active non-helper lanes; the others swap their scratch texel, which
    /// never holds the value they compare with (so no branch, and no second
    /// atomic on the lock's address). A second ballot tells the quad.
    /// `pixel`: this lane's pixel; `lock`: the lock's x and y (y wrapped).
    fn try_enter_quad(
        &mut self,
        ids: &mut Ids,
        b: &mut Vec<Instruction>,
        sid: (Word, Word),
        pixel: (Word, Word),
        lock_xy: (Word, Word),
    ) -> Word {
        let lock = self.lock;
        let (uint, int, bool_t) = (ids.uint(), ids.int(), ids.bool());
        let half = lock.size / 2;
        let (zero, never, half_mask) = (ids.uint_const(0), ids.uint_const(u32::MAX), ids.uint_const(half - 1));
        let half_c = ids.uint_const(half);
        // Locks in the left half of the image, scratch texels in the right.
        let lx = ids.op(b, Op::BitwiseAnd, uint, &[lock_xy.0, half_mask]);
        let (ix, iy) = (ids.op(b, Op::Bitcast, int, &[lx]), ids.op(b, Op::Bitcast, int, &[lock_xy.1]));

        let sx = ids.op(b, Op::BitwiseAnd, uint, &[pixel.0, half_mask]);
        let sx = ids.op(b, Op::IAdd, uint, &[sx, half_c]);
        let sy = ids.op(b, Op::BitwiseAnd, uint, &[pixel.1, lock.size_mask]);
        let (jx, jy) = (ids.op(b, Op::Bitcast, int, &[sx]), ids.op(b, Op::Bitcast, int, &[sy]));

        let lanes = Lanes::of(ids, b, sid);
        let helper = ids.op(b, Op::Load, bool_t, &[lock.helper]);
        let counts = ids.op(b, Op::LogicalNot, bool_t, &[helper]);
        let q = Quad { lanes, lock: (ix, iy), scratch: (jx, jy) };
        let active = Self::quad_bits(ids, b, &q.lanes, counts);
        let leader = Self::lowest(ids, b, &q.lanes, active);
        // Test and test-and-set: the leader swaps only a lock it reads free
        // (a relaxed read; the swap's acquire orders the section).
        let leader = if lock.ttas {
            let seen = self.texel(ids, b, &q, leader);
            let now = ids.op(b, Op::AtomicLoad, uint, &[seen, lock.scope, lock.relaxed]);
            let idle = ids.op(b, Op::IEqual, bool_t, &[now, zero]);
            ids.op(b, Op::LogicalAnd, bool_t, &[leader, idle])
        } else {
            leader
        };
        let ptr = self.texel(ids, b, &q, leader);
        let n = ids.op(b, Op::BitCount, uint, &[active]);
        let expected = ids.op(b, Op::Select, uint, &[leader, zero, never]);
        let old =
            ids.op(b, Op::AtomicCompareExchange, uint, &[ptr, lock.scope, lock.acquire, lock.relaxed, n, expected]);
        let free = ids.op(b, Op::IEqual, bool_t, &[old, zero]);
        let took = ids.op(b, Op::LogicalAnd, bool_t, &[leader, free]);
        let taken = Self::quad_bits(ids, b, &q.lanes, took);
        let quad_took = ids.op(b, Op::INotEqual, bool_t, &[taken, zero]);
        // A quad of helpers only takes no lock (its atomics have no effect).
        let helpers_only = ids.op(b, Op::IEqual, bool_t, &[active, zero]);
        let entered = ids.op(b, Op::LogicalOr, bool_t, &[quad_took, helpers_only]);
        let held = self.held_variable(ids);
        b.push(inst(Op::Store, None, None, vec![Operand::IdRef(held), Operand::IdRef(counts)]));
        self.quad = Some(q);
        entered
    }

    /// The function variable that says this lane holds (quad block locks:
    /// counts in) its lock; false at the function's start (and again after
    /// every section: leaving clears it).
    fn held_variable(&mut self, ids: &mut Ids) -> Word {
        bool_variable_in(&mut self.held, ids, false)
    }

    /// One try of a quad on per-pixel locks. A lane keeps its pixel's lock
    /// only while every active lane below it in the quad holds its own, and
    /// the quad enters when all of them hold theirs. The first try swaps
    /// every lane's lock at once; a failed try gives back the locks above
    /// the first lane that missed ([`Guard::failed`]), and from then on only
    /// a lane whose lower lanes all hold swaps its own: one lock a try, in
    /// quad order. Quads that share pixels are laid out alike (a quad's lanes
    /// are its 2x2 fragments in a fixed order), so every quad takes the
    /// contended locks in the same order: a quad waits only for a lock
    /// above every one it holds, and the holder of the highest awaited lock
    /// waits for nothing, so some quad always gets on. (Were every lane to
    /// swap at every try, two quads of one subgroup could each take a lock
    /// of the other's and give it back, try after try, for ever.)
    fn try_enter_prefix(&mut self, ids: &mut Ids, b: &mut Vec<Instruction>, sid: (Word, Word)) -> Word {
        let lock = self.lock;
        let (uint, bool_t) = (ids.uint(), ids.bool());
        let (zero, one, never) = (ids.uint_const(0), ids.uint_const(1), ids.uint_const(u32::MAX));
        let lanes = Lanes::of(ids, b, sid);
        let helper = ids.op(b, Op::Load, bool_t, &[lock.helper]);
        let counts = ids.op(b, Op::LogicalNot, bool_t, &[helper]);
        let turn_var = bool_variable_in(&mut self.turn, ids, true);
        let turn = ids.op(b, Op::Load, bool_t, &[turn_var]);
        let expected = ids.op(b, Op::Select, uint, &[turn, zero, never]);
        let old = ids.op(
            b,
            Op::AtomicCompareExchange,
            uint,
            &[self.ptr, lock.scope, lock.acquire, lock.relaxed, one, expected],
        );
        let free = ids.op(b, Op::IEqual, bool_t, &[old, zero]);
        let got = ids.op(b, Op::LogicalAnd, bool_t, &[free, counts]);
        let got = ids.op(b, Op::LogicalAnd, bool_t, &[got, turn]);
        let held = self.held_variable(ids);
        let had = ids.op(b, Op::Load, bool_t, &[held]);
        let have = ids.op(b, Op::LogicalOr, bool_t, &[had, got]);
        let active = Self::quad_bits(ids, b, &lanes, counts);
        let holding = Self::quad_bits(ids, b, &lanes, have);
        // A quad of helpers only enters at once (both ballots empty).
        let all = ids.op(b, Op::IEqual, bool_t, &[holding, active]);
        let below = ids.op(b, Op::ISub, uint, &[lanes.me, one]);
        let lower = ids.op(b, Op::BitwiseAnd, uint, &[active, below]);
        let lower_held = ids.op(b, Op::BitwiseAnd, uint, &[lower, holding]);
        let keep = ids.op(b, Op::IEqual, bool_t, &[lower_held, lower]);
        let kept = ids.op(b, Op::LogicalAnd, bool_t, &[have, keep]);
        let give_back = ids.op(b, Op::LogicalNotEqual, bool_t, &[have, kept]);
        b.push(inst(Op::Store, None, None, vec![Operand::IdRef(held), Operand::IdRef(kept)]));
        // Every lane below holds its lock after this try: this lane's turn
        // next (true for every lane where the quad enters).
        b.push(inst(Op::Store, None, None, vec![Operand::IdRef(turn_var), Operand::IdRef(keep)]));
        self.release = Some(give_back);
        all
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
    let s = find_section(ids, blocks, bi, ii)?;
    guard.section(blocks, &s.blocks);
    let (h, body, sel_merge, cont) = (ids.fresh(), ids.fresh(), ids.fresh(), ids.fresh());
    let bool_t = ids.bool();
    let t_true = ids.bool_const(true);
    let t_false = ids.bool_const(false);

    // Body: one try to enter.
    let mut b = Vec::new();
    let acquired = guard.try_enter(ids, &mut b);
    // What a failed try does, in a block of its own on the way round.
    let fail = Some(guard.failed(ids)).filter(|f| !f.is_empty()).map(|mut f| {
        let id = ids.fresh();
        f.push(inst(Op::Branch, None, None, vec![Operand::IdRef(sel_merge)]));
        block(id, f)
    });
    let not_entered = fail.as_ref().map_or(body, label_of);
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
        vec![Operand::IdRef(acquired), Operand::IdRef(s.s0), Operand::IdRef(fail.as_ref().map_or(sel_merge, label_of))],
    ));
    release_on_leaving(ids, blocks, &s, guard, sel_merge);
    // X enters the loop.
    let xb = &mut blocks[s.labels[&s.x]];
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
                vec![Operand::IdRef(s.yt), Operand::IdRef(cont), Operand::LoopControl(spirv::LoopControl::NONE)],
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
                vec![
                    Operand::IdRef(t_true),
                    Operand::IdRef(s.exit_id),
                    Operand::IdRef(t_false),
                    Operand::IdRef(not_entered),
                ],
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
            vec![Operand::IdRef(done), Operand::IdRef(s.yt), Operand::IdRef(h)],
        )],
    );
    let body_blk = block(body, b);

    // Values defined in the section and used after it go through variables.
    let spilled = spill_escaping(ids, blocks, &s.blocks, s.yt)?;
    reorder(blocks, &s, [h_blk, body_blk], fail.into_iter().chain([sm_blk, c_blk]))?;
    let locals = guard.locals();
    for (k, v) in locals.into_iter().enumerate() {
        blocks[0].instructions.insert(k, v);
    }
    Ok(spilled)
}

/// A critical section, single-entry and single-exit ([`find_section`]).
struct Section {
    /// The block before the section, which held the begin.
    x: Word,
    /// The section's first block.
    s0: Word,
    /// The block after the section, from the end on.
    yt: Word,
    /// The section's exit (index and label): the block that branches to `yt`.
    exit: usize,
    exit_id: Word,
    /// Block indices by label, as they were when found.
    labels: HashMap<Word, usize>,
    /// The labels of the section's blocks.
    blocks: HashSet<Word>,
}

/// The section that starts at instruction `ii` of block `bi`: the blocks
/// are split at its end, then at its begin, and it must be single-entry and
/// single-exit.
fn find_section(ids: &mut Ids, blocks: &mut Vec<Block>, bi: usize, ii: usize) -> Result<Section, Unsupported> {
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
    Ok(Section { x, s0, yt, exit, exit_id, labels, blocks: section })
}

/// `guard` releases before every way out of section `s`: a kill or a
/// demotion, and its exit, which then joins the selection at `sel_merge`.
fn release_on_leaving(ids: &mut Ids, blocks: &mut [Block], s: &Section, guard: &dyn Guard, sel_merge: Word) {
    // Release before leaving the section by kill or demotion.
    for blk in blocks.iter_mut().filter(|blk| s.blocks.contains(&label_of(blk))) {
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
    let exit_blk = &mut blocks[s.exit];
    exit_blk.instructions.pop();
    exit_blk.instructions.extend(guard.leave(ids));
    exit_blk.instructions.push(inst(Op::Branch, None, None, vec![Operand::IdRef(sel_merge)]));
}

/// Puts the blocks in order: ..., X, the `head` (H, Body), the section...,
/// the `tail` (the failed try's block if any, SM, C), Yt, the rest.
fn reorder(
    blocks: &mut Vec<Block>,
    s: &Section,
    head: [Block; 2],
    tail: impl IntoIterator<Item = Block>,
) -> Result<(), Unsupported> {
    let old = std::mem::take(blocks);
    let (mut before, mut sec, mut after) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen_x = false;
    for blk in old {
        let l = label_of(&blk);
        if s.blocks.contains(&l) {
            sec.push(blk);
        } else if !seen_x {
            seen_x = l == s.x;
            before.push(blk);
        } else {
            after.push(blk);
        }
    }
    let yt_pos = after.iter().position(|b| label_of(b) == s.yt).ok_or(Unsupported::NotSese)?;
    let yt_blk = after.remove(yt_pos);
    blocks.extend(before);
    blocks.extend(head);
    blocks.extend(sec);
    blocks.extend(tail);
    blocks.push(yt_blk);
    blocks.extend(after);
    Ok(())
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

    const CFG: Config =
        Config { set: 7, binding: 0, size: 2048, block: (0, 0), quad: false, ttas: false, buffer: false };
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
    /// beyond 8x8.
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
        assert_eq!(lower(&mut m, &Config { block: (4, 2), ..CFG }), Err(Unsupported::Block((4, 2))));
    }

    /// Buffer locks ([`Config::buffer`]): every lock the image variant
    /// addresses through a texel pointer is a word of the buffer instead,
    /// reached by an access chain on the reserved set's variable; a
    /// `BufferBlock` in a SPIR-V 1.0 module, a `StorageBuffer` block where
    /// the lowering declares SPIR-V 1.3 (quads); every module validates.
    #[test]
    fn buffer_locks_address_the_same_locks_as_the_image() {
        // A section that needs no quad, and one that does (derivatives).
        let bodies = [
            "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }",
            "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); vec2 d = dFdx(gl_FragCoord.xy); imageStore(img, p, uvec4(d.x)); endInvocationInterlockARB(); o = vec4(d, 0, 1); }",
        ];
        // SPIR-V 1.0 and 1.3 modules of each.
        let words: Vec<Vec<u32>> = bodies
            .iter()
            .flat_map(|body| {
                let src = format!("{HEAD}layout(pixel_interlock_ordered) in;\n{IMG}{body}\n");
                ["vulkan1.0", "vulkan1.1"].map(|env| crate::testing::glsl_for(&src, "frag", env).unwrap())
            })
            .collect();
        // The lowered module, and the accesses to the reserved set's variable by opcode.
        let lowered = |words: &[u32], cfg: &Config| {
            let mut m = parse(words).unwrap();
            lower(&mut m, cfg).unwrap();
            let out = assemble(&m);
            let text = disassemble(&out);
            validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let var = m
                .annotations
                .iter()
                .find(|a| a.operands[1..] == [Operand::Decoration(Decoration::DescriptorSet), Operand::LiteralBit32(7)])
                .and_then(|a| a.operands[0].id_ref_any())
                .unwrap();
            let uses = |op: Op| {
                m.functions
                    .iter()
                    .flat_map(|f| f.blocks.iter().flat_map(|b| b.instructions.iter()))
                    .filter(|i| i.class.opcode == op && i.operands.first() == Some(&Operand::IdRef(var)))
                    .count()
            };
            (uses(Op::ImageTexelPointer), uses(Op::AccessChain), text)
        };
        for (cfg, w) in [CFG, QUAD, QUAD_BLOCKS, Config { ttas: true, ..QUAD_BLOCKS }]
            .into_iter()
            .flat_map(|c| words.iter().map(move |w| (c, w)))
        {
            let (texels, chains, _) = lowered(w, &cfg);
            assert!(texels > 0 && chains == 0, "{cfg:?}");
            let (none, words_used, text) = lowered(w, &Config { buffer: true, ..cfg });
            assert_eq!((none, words_used), (0, texels), "{cfg:?}\n{text}");
            // SPIR-V 1.3 where the module was, or where quads are used.
            let v13 = text.contains("Version: 1.3");
            let (class, block) = if v13 { ("StorageBuffer", " Block") } else { ("Uniform", " BufferBlock") };
            assert!(text.contains(&format!("= OpVariable %_ptr_{class}_")), "{cfg:?}\n{text}");
            assert!(text.lines().any(|l| l.contains("OpDecorate") && l.ends_with(block)), "{cfg:?}\n{text}");
            // The application's image only.
            assert_eq!(text.matches("R32ui").count(), 1, "{cfg:?}\n{text}");
        }
    }

    const QUAD: Config = Config { quad: true, ..CFG };
    /// Under a 2x2 largest shading rate: quad block locks.
    const QUAD_BLOCKS: Config = Config { quad: true, block: (1, 1), ..CFG };

    fn lower_quad(mode: &str, body: &str) -> (Report, String) {
        lower_quad_with(&QUAD_BLOCKS, mode, body)
    }

    fn lower_quad_with(cfg: &Config, mode: &str, body: &str) -> (Report, String) {
        let src = format!("{HEAD}layout({mode}) in;\n{IMG}{body}\n");
        let mut m = parse(&glsl(&src, "frag").unwrap()).unwrap();
        let report = lower(&mut m, cfg).unwrap();
        let out = assemble(&m);
        let text = disassemble(&out);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{text}"));
        (report, text)
    }

    /// Test and test-and-set: the leader reads the lock (one atomic load)
    /// before the one compare-swap, whose texel is selected again by what it
    /// read; the module validates.
    #[test]
    fn ttas_reads_before_it_swaps() {
        let body = "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }";
        let src = format!("{HEAD}layout(pixel_interlock_ordered) in;\n{IMG}{body}\n");
        let mut m = parse(&glsl(&src, "frag").unwrap()).unwrap();
        lower(&mut m, &Config { ttas: true, ..QUAD_BLOCKS }).unwrap();
        let out = assemble(&m);
        let text = disassemble(&out);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(text.matches("OpAtomicLoad").count(), 1, "{text}");
        assert_eq!(text.matches("OpAtomicCompareExchange").count(), 1, "{text}");
        // The texel read, the texel swapped, the texel left.
        assert_eq!(text.matches("OpImageTexelPointer").count(), 4, "{text}");
    }

    /// Quad locks: one ballot to find the quad's leader, its compare-swap,
    /// one ballot to tell the quad; SPIR-V 1.3 with the group capabilities,
    /// the lock block twice the configured one (a quad of 2x2 fragments).
    #[test]
    fn quad_locks_ballot_and_count() {
        let body = "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); vec2 d = dFdx(gl_FragCoord.xy); endInvocationInterlockARB(); o = vec4(d, 0, 1); }";
        for mode in ["pixel_interlock_ordered", "sample_interlock_unordered"] {
            let (r, text) = lower_quad(mode, body);
            assert!(r.quad_locks && r.sections == 1 && r.quad_sections == 1, "{text}");
            // Two for the try, one for leaving.
            assert_eq!(text.matches("OpGroupNonUniformBallot").count(), 3, "{text}");
            assert!(text.contains("OpCapability GroupNonUniformBallot"), "{text}");
            assert!(text.contains("Version: 1.3"), "{text}");
            assert!(text.contains("BuiltIn SubgroupLocalInvocationId"), "{text}");
            assert_eq!(text.matches("OpAtomicCompareExchange").count(), 1, "{text}");
            // Released by a count: the lanes that leave take themselves off.
            assert_eq!(text.matches("OpAtomicISub").count(), 1, "{text}");
            assert!(!text.contains("OpAtomicStore"), "{text}");
            // Two for the block, beside the ballots' (by 5, and by the quad's first lane: three ballots).
            assert_eq!(text.matches("OpShiftRightLogical").count() - 4, 2, "{text}");
            // Every atomic on a texel the lock's or the lane's scratch: selected.
            assert_eq!(text.matches("OpImageTexelPointer").count(), 3, "{text}");
        }
        // No per-sample locks: a quad's lanes need not share a sample.
        let (r, _) = lower_quad(
            "sample_interlock_ordered",
            "void main() { ivec2 p = ivec2(gl_FragCoord.x * 4.0 + float(gl_SampleID), gl_FragCoord.y); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }",
        );
        assert!(r.quad_locks && !r.per_sample_locks);
        // The per-lane lowering has no group operation.
        let (r, text) = lower_glsl("pixel_interlock_ordered", body);
        assert!(!r.quad_locks);
        assert!(!text.contains("OpGroupNonUniform"), "{text}");
    }

    /// Without a shading rate the locks stay per pixel (no shift); under one,
    /// a quad's block: 8x8 at 4x4 fragments.
    #[test]
    fn quad_blocks_are_twice_the_fragment_size() {
        let src = format!("{HEAD}layout(pixel_interlock_ordered) in;\n{IMG}void main() {{ ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }}\n");
        let words = glsl(&src, "frag").unwrap();
        let shifts = |cfg: &Config| {
            let mut m = parse(&words).unwrap();
            lower(&mut m, cfg).unwrap();
            let out = assemble(&m);
            validate(&out, TargetEnv::Vulkan1_1).unwrap();
            let text = disassemble(&out);
            // Beside the ballots' (by 5 and by the quad's first lane).
            text.lines().filter(|l| l.contains("OpShiftRightLogical") && l.contains("uint_3")).count()
        };
        assert_eq!(shifts(&QUAD), 0);
        assert_eq!(shifts(&Config { block: (2, 2), ..QUAD }), 2);
        let mut m = parse(&words).unwrap();
        assert_eq!(lower(&mut m, &Config { block: (3, 2), ..QUAD }), Err(Unsupported::Block((3, 2))));
    }

    /// On per-pixel locks (no shading rate), only a section that needs a
    /// quad's lanes together enters per quad: a derivative, an implicit-LOD
    /// sample, a group operation, also inside a function the section calls.
    /// Such a try: each lane's compare-swap on its own lock, two ballots
    /// (who counts, who holds), and a failed try's give-back (a second
    /// compare-swap, in a block of its own); leaving is the per-lane store.
    #[test]
    fn per_pixel_locks_enter_per_quad_only_where_the_section_needs_it() {
        let tex = "layout(binding=1) uniform sampler2D t;\n";
        let needs = [
            "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); vec2 d = dFdx(gl_FragCoord.xy); endInvocationInterlockARB(); o = vec4(d, 0, 1); }",
            "vec2 slope(vec2 v) { return fwidth(v); }\nvoid main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); vec2 d = slope(gl_FragCoord.xy); imageStore(img, p, uvec4(d.x)); endInvocationInterlockARB(); o = vec4(d, 0, 1); }",
            &format!("{tex}void main() {{ ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); vec4 c = texture(t, gl_FragCoord.xy / 64.0); imageStore(img, p, uvec4(c * 255.0)); endInvocationInterlockARB(); o = c; }}"),
        ];
        for body in needs {
            let (r, text) = lower_quad_with(&QUAD, "pixel_interlock_ordered", body);
            assert!(!r.quad_locks && r.sections == 1 && r.quad_sections == 1, "{text}");
            assert_eq!(text.matches("OpGroupNonUniformBallot").count(), 2, "{text}");
            assert_eq!(text.matches("OpAtomicCompareExchange").count(), 2, "{text}");
            assert_eq!(text.matches("OpAtomicStore").count(), 1, "{text}");
            assert!(!text.contains("OpAtomicISub"), "{text}");
            // One lock a pixel: no block shift, one texel pointer.
            assert_eq!(text.matches("OpImageTexelPointer").count(), 1, "{text}");
        }
        // Derivatives, samples and group operations outside the section alone: per lane.
        let apart = [
            "void main() { vec2 d = dFdx(gl_FragCoord.xy); ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(d, 0, 1); }",
            &format!("{tex}void main() {{ ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = texture(t, gl_FragCoord.xy / 64.0); }}"),
        ];
        for body in apart {
            let (r, text) = lower_quad_with(&QUAD, "pixel_interlock_ordered", body);
            assert!(r.sections == 1 && r.quad_sections == 0, "{text}");
            assert!(!text.contains("OpGroupNonUniformBallot"), "{text}");
            assert_eq!(text.matches("OpAtomicCompareExchange").count(), 1, "{text}");
        }
        // A discard inside: the lane gives its lock back and holds it no more, then leaves.
        let (r, text) = lower_quad_with(
            &QUAD,
            "pixel_interlock_ordered",
            "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x; if (v > 5u) discard; imageStore(img, p, uvec4(v + 1u) + uvec4(dFdx(gl_FragCoord.x))); endInvocationInterlockARB(); o = vec4(1); }",
        );
        assert_eq!(r.quad_sections, 1);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let kill = lines.iter().position(|l| *l == "OpKill" || *l == "OpTerminateInvocation").expect("kill");
        assert!(lines[kill - 2].starts_with("OpAtomicStore"), "{text}");
        assert!(lines[kill - 1].starts_with("OpStore"), "{text}");
    }

    /// A discard or demote inside the section: the lane takes itself off the
    /// count first (the quad's other lanes still hold the lock), and counts
    /// no more (a demoted lane reaches the exit as a helper).
    #[test]
    fn quad_discard_and_demote_inside_the_section_leave_the_count_first() {
        let (_, text) = lower_quad(
            "pixel_interlock_ordered",
            "void main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x; if (v > 5u) discard; imageStore(img, p, uvec4(v + 1u)); endInvocationInterlockARB(); o = vec4(1); }",
        );
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let kill = lines.iter().position(|l| *l == "OpKill" || *l == "OpTerminateInvocation").expect("kill");
        assert!(lines[kill - 2].contains("OpAtomicISub"), "{text}");
        assert!(lines[kill - 1].starts_with("OpStore"), "{text}");
        assert_eq!(text.matches("OpAtomicISub").count(), 2, "{text}");
        let demote = format!(
            "#version 450\n#extension GL_ARB_fragment_shader_interlock : require\n#extension GL_EXT_demote_to_helper_invocation : require\nlayout(pixel_interlock_ordered) in;\n{IMG}void main() {{ ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x; if (v > 5u) demote; imageStore(img, p, uvec4(v + 1u)); endInvocationInterlockARB(); o = vec4(1); }}\n"
        );
        let mut m = parse(&glsl(&demote, "frag").unwrap()).unwrap();
        lower(&mut m, &QUAD_BLOCKS).unwrap();
        let out = assemble(&m);
        let text = disassemble(&out);
        validate(&out, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let d = lines.iter().position(|l| l.starts_with("OpDemoteToHelperInvocation")).expect("demote");
        assert!(lines[d - 2].contains("OpAtomicISub"), "{text}");
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

    const CFG: Config =
        Config { set: 7, binding: 0, size: 2048, block: (0, 0), quad: false, ttas: false, buffer: false };

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
