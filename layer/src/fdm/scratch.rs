//! Scratch targets: per [`Key`] (everything they are made from: the
//! attachments by position, the render pass, the fragment area, the extent
//! and layers), images `1/area` the size of the framebuffer that a replay
//! renders into and, for a render pass, the framebuffer naming them (made
//! before anything is recorded, cached until a view or the render pass they
//! were made from is destroyed),
//! and the transfers between them and the real attachments: layout
//! transitions and nearest-filter blits over the rectangle pairs the plan
//! gives ([`super::replay_plan::scaled_regions`]); for a multisampled
//! attachment, which no blit takes, copies through an intermediate image
//! made with its scratch target ([`super::replay_plan::scaled_copies`]).

use super::bins::Rect;
use super::model::integer;
use super::model::{Att, Begin};
use super::replay_plan::{scaled_copies, CopyRegion};
use super::{memory_type, Fdm};
use crate::device::DeviceCore;
use ash::vk;
use std::collections::HashMap;

/// Scratch targets, per [`Key`]: one or more sets, each claimed by the
/// command buffer that records replays into it.
///
/// **Claims.** A set is used by one command buffer at a time: the one that
/// recorded replays into it holds it until it is begun again or freed (then
/// no recording of it can be pending: VUID-vkBeginCommandBuffer-commandBuffer-00049,
/// VUID-vkFreeCommandBuffers-pCommandBuffers-00047). Another command buffer
/// replaying a pass of the same key takes a free set or makes one more. So
/// two command buffers that may execute at once — on two queues, say —
/// never share scratch targets, whatever queues they are submitted to;
/// within one command buffer, passes run in order and its own barriers
/// order their use. The cost is memory: as many sets of a key as command
/// buffers holding replays of it at once (typically the frames in flight
/// that render to the same attachments; swapchain images differ per frame,
/// and so do their keys).
#[derive(Default)]
pub struct ScratchCache {
    sets: HashMap<Key, Vec<Claimed>>,
    /// `debug_fdm_without=scratch_per_command_buffer`: one set per key,
    /// shared by every command buffer (part 1's rule; a control).
    pub shared: bool,
}

struct Claimed {
    set: ScratchSet,
    holder: Option<vk::CommandBuffer>,
}

/// Which set of a key `cb` uses: the one it holds, else a free one (`None`:
/// one more is to be made). `shared`: the first, whoever holds it.
fn claim<T: Copy + PartialEq>(holders: &[Option<T>], cb: T, shared: bool) -> Option<usize> {
    if shared {
        return (!holders.is_empty()).then_some(0);
    }
    holders.iter().position(|h| *h == Some(cb)).or_else(|| holders.iter().position(Option::is_none))
}

/// Everything a [`ScratchSet`] is made from: a set is reused only for a
/// pass that would make the same one, and it goes when any of these objects
/// is destroyed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    /// By position: for a render pass, every attachment of the framebuffer
    /// (`Some`; scratched or not, the density map's and unused ones
    /// included: the cached framebuffer names them all); for dynamic
    /// rendering, the attachments the replay scratches (`Some`) in the order
    /// the begin is retargeted.
    views: Vec<Option<vk::ImageView>>,
    /// Which positions the replay scratches.
    scratched: Vec<bool>,
    /// Which positions are scaled by copies (multisampled, loaded or
    /// stored): they get an intermediate image too.
    copied: Vec<bool>,
    /// The render pass the framebuffer was made for (null for dynamic
    /// rendering, which has no framebuffer).
    render_pass: vk::RenderPass,
    area: (u32, u32),
    extent: (u32, u32),
    layers: u32,
}

impl Key {
    fn new(begin: &Begin, atts: &[Option<Att>], area: (u32, u32), extent: (u32, u32), layers: u32) -> Key {
        let scratched = atts.iter().map(Option::is_some).collect();
        let copied = atts.iter().map(|a| a.as_ref().is_some_and(copied)).collect();
        let (views, render_pass) = match begin {
            Begin::RenderPass { render_pass, fb, views, .. } => {
                let real = if fb.imageless { views } else { &fb.views };
                (real.iter().map(|v| Some(*v)).collect(), *render_pass)
            }
            Begin::Rendering { .. } => {
                (atts.iter().map(|a| a.as_ref().map(|a| a.view)).collect(), vk::RenderPass::null())
            }
        };
        Key { views, scratched, copied, render_pass, area, extent, layers }
    }

    fn uses_view(&self, view: vk::ImageView) -> bool {
        self.views.contains(&Some(view))
    }
}

/// Whether a replay scales `a` by copies through an intermediate image
/// ([`super::replay_plan::scaled_copies`]): it is multisampled (no blit
/// takes it) and it loads or stores.
pub(super) fn copied(a: &Att) -> bool {
    a.samples != vk::SampleCountFlags::TYPE_1 && (a.load || a.store)
}

struct ScratchSet {
    images: Vec<Option<(vk::Image, vk::DeviceMemory, vk::ImageView)>>,
    /// Per attachment scaled by copies: its intermediate image (x at the
    /// framebuffer's size, y at the scratch target's; no view).
    mids: Vec<Option<(vk::Image, vk::DeviceMemory, vk::ImageView)>>,
    framebuffer: vk::Framebuffer,
}

impl ScratchCache {
    /// Destroys every scratch target.
    ///
    /// # Safety
    /// `d` is the device they were made on, and it is idle (being destroyed).
    pub unsafe fn destroy_all(&mut self, d: &ash::Device) {
        for s in self.sets.drain().flat_map(|(_, v)| v) {
            // SAFETY: the device is idle (the caller's guarantee): no work
            // using the set is pending.
            unsafe { destroy_set(d, s.set) };
        }
    }

    /// `cb` is begun again or freed: the sets it held are free (no
    /// recording of it is pending any more).
    pub fn release(&mut self, cb: vk::CommandBuffer) {
        for c in self.sets.values_mut().flatten().filter(|c| c.holder == Some(cb)) {
            c.holder = None;
        }
    }

    /// How many sets are made for keys naming `view` (for the tests' log).
    fn count_with(&self, view: vk::ImageView) -> usize {
        self.sets.iter().filter(|(k, _)| k.uses_view(view)).map(|(_, v)| v.len()).sum()
    }

    /// Destroys the scratch targets made with `view` in any position
    /// (scratched or not: the density map's, an unused attachment's).
    ///
    /// # Safety
    /// `d` is the device they were made on, and `view` is being destroyed by
    /// a valid `vkDestroyImageView`: every submitted command that refers to
    /// it has completed (VUID-vkDestroyImageView-imageView-01026). Every
    /// replay into these targets was recorded for a pass that named `view`,
    /// so none of it is pending either.
    pub unsafe fn forget_view(&mut self, d: &ash::Device, view: vk::ImageView) {
        for s in self.take(|k| k.uses_view(view)) {
            // SAFETY: VUID-vkDestroyImageView-imageView-01026 (the caller's
            // guarantee): no pending work uses the set.
            unsafe { destroy_set(d, s) };
        }
    }

    /// Destroys the scratch targets made for `pass` (their framebuffer).
    ///
    /// # Safety
    /// `d` is the device they were made on, and `pass` is being destroyed by
    /// a valid `vkDestroyRenderPass`: every submitted command that refers to
    /// it has completed (VUID-vkDestroyRenderPass-renderPass-00873). Every
    /// replay into these targets was recorded for a pass begun with `pass`,
    /// so none of it is pending either.
    pub unsafe fn forget_render_pass(&mut self, d: &ash::Device, pass: vk::RenderPass) {
        if pass == vk::RenderPass::null() {
            return;
        }
        for s in self.take(|k| k.render_pass == pass) {
            // SAFETY: VUID-vkDestroyRenderPass-renderPass-00873 (the caller's
            // guarantee): no pending work uses the set.
            unsafe { destroy_set(d, s) };
        }
    }

    /// Removes the sets whose key matches.
    fn take(&mut self, matches: impl Fn(&Key) -> bool) -> Vec<ScratchSet> {
        let keys: Vec<Key> = self.sets.keys().filter(|k| matches(k)).cloned().collect();
        keys.iter().filter_map(|k| self.sets.remove(k)).flatten().map(|c| c.set).collect()
    }
}

/// # Safety
/// The set's objects were made on `d` by the layer, and no submitted work
/// that uses them is still executing.
unsafe fn destroy_set(d: &ash::Device, s: ScratchSet) {
    // Null handles (a step that failed) are ignored by these commands.
    // SAFETY: the layer's own objects, unused by pending work (the caller's guarantee):
    // VUID-vkDestroyFramebuffer-framebuffer-00892, VUID-vkDestroyImageView-imageView-01026,
    // VUID-vkDestroyImage-image-01000, VUID-vkFreeMemory-memory-00677.
    unsafe {
        if s.framebuffer != vk::Framebuffer::null() {
            d.destroy_framebuffer(s.framebuffer, None);
        }
        for (i, m, v) in s.images.into_iter().chain(s.mids).flatten() {
            d.destroy_image_view(v, None);
            d.destroy_image(i, None);
            d.free_memory(m, None);
        }
    }
}

/// `SAMPLED` for a colour or depth scratch target the GPU plan's upscale
/// can read (`gpu_plan.rs`): its format can be sampled, at its sample
/// count.
pub(super) fn sampled(f: &Fdm, a: &Att) -> vk::ImageUsageFlags {
    let colour = a.range.aspect_mask == vk::ImageAspectFlags::COLOR;
    let depth = a.range.aspect_mask.contains(vk::ImageAspectFlags::DEPTH);
    let counts = if colour { f.sampled_color_samples } else { f.sampled_depth_samples };
    if (colour && !integer(a.format) || depth)
        && (a.samples == vk::SampleCountFlags::TYPE_1 || counts.contains(a.samples))
        && f.format_features(a.format).contains(vk::FormatFeatureFlags::SAMPLED_IMAGE)
    {
        vk::ImageUsageFlags::SAMPLED
    } else {
        vk::ImageUsageFlags::empty()
    }
}

fn scaled(n: u32, a: u32) -> u32 {
    n.div_ceil(a).max(1)
}

/// The extent of the scratch targets at `area` of a framebuffer of `extent`.
pub(super) fn scratch_extent(extent: (u32, u32), area: (u32, u32)) -> [u32; 2] {
    [scaled(extent.0, area.0), scaled(extent.1, area.1)]
}

/// A replay's scratch targets: per attachment (`None` where the pass's is),
/// the image and its view; and the framebuffer of a render pass.
#[derive(Clone)]
pub(super) struct Targets {
    pub(super) views: Vec<Option<vk::ImageView>>,
    pub(super) images: Vec<Option<vk::Image>>,
    /// The intermediate images of the attachments scaled by copies.
    pub(super) mids: Vec<Option<vk::Image>>,
    pub(super) framebuffer: vk::Framebuffer,
}

impl ScratchSet {
    fn targets(&self) -> Targets {
        Targets {
            views: self.images.iter().map(|x| x.map(|x| x.2)).collect(),
            images: self.images.iter().map(|x| x.map(|x| x.0)).collect(),
            mids: self.mids.iter().map(|x| x.map(|x| x.0)).collect(),
            framebuffer: self.framebuffer,
        }
    }
}

/// The scratch targets for `atts` at `area` that `cb` records its replays
/// into, claimed for it ([`ScratchCache`]; created when none is free).
///
/// # Safety
/// `begin` and `atts` describe a pass being recorded on the device of `f`
/// into `cb`: its render pass and the views of `atts` (and, for a render
/// pass, of its framebuffer) are valid.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scratch_targets(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    begin: &Begin,
    atts: &[Option<Att>],
    area: (u32, u32),
    extent: (u32, u32),
    layers: u32,
) -> Result<Targets, vk::Result> {
    let key = Key::new(begin, atts, area, extent, layers);
    let mut cache = f.scratch.lock();
    let shared = cache.shared;
    if let Some(claimed) = cache.sets.get_mut(&key) {
        let holders: Vec<Option<vk::CommandBuffer>> = claimed.iter().map(|c| c.holder).collect();
        if let Some(i) = claim(&holders, cb, shared) {
            if !shared {
                claimed[i].holder = Some(cb);
            }
            return Ok(claimed[i].set.targets());
        }
    }
    let d = &f.below;
    let [w, h] = scratch_extent(extent, area);
    // One attachment's scratch image, memory and view; nothing is left
    // behind when a step fails (handles not made yet are null, which
    // vkDestroy*/vkFreeMemory ignore).
    let make = |a: &Att,
                (w, h): (u32, u32),
                view: bool|
     -> Result<(vk::Image, vk::DeviceMemory, vk::ImageView), vk::Result> {
        let mut made = (vk::Image::null(), vk::DeviceMemory::null(), vk::ImageView::null());
        // SAFETY: every create info is built here from locals and the attachment's own format, samples, usage and
        // view type (valid for an image the application made: the caller's guarantee); every handle used is one made
        // just above by the layer.
        let r = (|| unsafe {
            crate::guard::injected_failure(&dev.settings().debug_fail, "vkCreateImage")?;
            made.0 = d.create_image(
                &vk::ImageCreateInfo::default()
                    .image_type(vk::ImageType::TYPE_2D)
                    .format(a.format)
                    .extent(vk::Extent3D { width: w, height: h, depth: 1 })
                    .mip_levels(1)
                    .array_layers(a.range.layer_count)
                    .samples(a.samples)
                    .usage(
                        (a.usage & !vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT)
                            | vk::ImageUsageFlags::TRANSFER_SRC
                            | vk::ImageUsageFlags::TRANSFER_DST
                            | sampled(f, a),
                    ),
                None,
            )?;
            let req = d.get_image_memory_requirements(made.0);
            let ty = memory_type(f, req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)
                .ok_or(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)?;
            crate::guard::injected_failure(&dev.settings().debug_fail, "vkAllocateMemory")?;
            made.1 = d.allocate_memory(
                &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty),
                None,
            )?;
            d.bind_image_memory(made.0, made.1, 0)?;
            if !view {
                return Ok(());
            }
            let range = vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range };
            crate::guard::injected_failure(&dev.settings().debug_fail, "vkCreateImageView")?;
            made.2 = d.create_image_view(
                &vk::ImageViewCreateInfo::default()
                    .image(made.0)
                    .view_type(a.view_type)
                    .format(a.format)
                    .subresource_range(range),
                None,
            )?;
            Ok(())
        })();
        match r {
            Ok(()) => Ok(made),
            Err(e) => {
                // SAFETY: the objects just made by the layer, never used.
                unsafe {
                    destroy_set(
                        d,
                        ScratchSet { images: vec![Some(made)], mids: Vec::new(), framebuffer: vk::Framebuffer::null() },
                    )
                };
                Err(e)
            }
        }
    };
    let mut images = Vec::new();
    let mut mids = Vec::new();
    for a in atts {
        let made = a.as_ref().map(|a| make(a, (w, h), true)).transpose().and_then(|x| {
            images.push(x);
            // The intermediate of a copied attachment: x in framebuffer space, y in scratch space.
            a.as_ref().filter(|a| copied(a)).map(|a| make(a, (extent.0.max(1), h), false)).transpose()
        });
        match made {
            Ok(x) => mids.push(x),
            Err(e) => {
                // SAFETY: the objects just made by the layer, never used.
                unsafe { destroy_set(d, ScratchSet { images, mids, framebuffer: vk::Framebuffer::null() }) };
                return Err(e);
            }
        }
    }
    let mut framebuffer = vk::Framebuffer::null();
    if let Begin::RenderPass { render_pass, fb, views, .. } = begin {
        let real = if fb.imageless { views.clone() } else { fb.views.clone() };
        let all: Vec<vk::ImageView> = images.iter().zip(&real).map(|(s, r)| s.map(|s| s.2).unwrap_or(*r)).collect();
        // SAFETY: the application's render pass and views of the pass being
        // recorded (valid: the caller's guarantee), with the layer's scratch
        // views in place of the scratched attachments; a live Vec of them.
        let made =
            crate::guard::injected_failure(&dev.settings().debug_fail, "vkCreateFramebuffer").and_then(|()| unsafe {
                d.create_framebuffer(
                    &vk::FramebufferCreateInfo::default()
                        .render_pass(*render_pass)
                        .attachments(&all)
                        .width(w)
                        .height(h)
                        .layers(layers),
                    None,
                )
            });
        match made {
            Ok(fb) => framebuffer = fb,
            Err(e) => {
                // SAFETY: the objects just made by the layer, never used.
                unsafe { destroy_set(d, ScratchSet { images, mids, framebuffer: vk::Framebuffer::null() }) };
                return Err(e);
            }
        }
    }
    let set = ScratchSet { images, mids, framebuffer };
    let out = set.targets();
    cache.sets.entry(key).or_default().push(Claimed { set, holder: (!shared).then_some(cb) });
    Ok(out)
}

/// How many scratch sets are made for keys naming `view` (the debug log's
/// figure, which the tests read).
pub(super) fn sets_with(f: &Fdm, view: vk::ImageView) -> usize {
    f.scratch.lock().count_with(view)
}

fn offsets(r: Rect) -> [vk::Offset3D; 2] {
    [
        vk::Offset3D { x: r.x as i32, y: r.y as i32, z: 0 },
        vk::Offset3D { x: (r.x + r.w) as i32, y: (r.y + r.h) as i32, z: 1 },
    ]
}

pub(super) struct Transition {
    pub(super) image: vk::Image,
    pub(super) range: vk::ImageSubresourceRange,
    pub(super) old: vk::ImageLayout,
    pub(super) new: vk::ImageLayout,
}

/// Records the layout transitions `t` (and a full memory barrier).
///
/// # Safety
/// `cb` is a command buffer of the device in the recording state, held by
/// the caller (its external synchronization), outside a render pass; the
/// images are valid and in the `old` layouts when the barrier executes.
pub(super) unsafe fn barrier(f: &Fdm, cb: vk::CommandBuffer, t: &[Transition]) {
    // SAFETY: the caller's guarantee.
    unsafe { barrier_to(f, cb, t, false) }
}

/// [`barrier`], and with `host` the host's reads after it too (what the
/// work before it wrote, once it completes).
///
/// # Safety
/// As [`barrier`].
pub(super) unsafe fn barrier_to(f: &Fdm, cb: vk::CommandBuffer, t: &[Transition], host: bool) {
    let all = vk::PipelineStageFlags::ALL_COMMANDS;
    let rw = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
    let dst =
        if host { Side(all | vk::PipelineStageFlags::HOST, rw | vk::AccessFlags::HOST_READ) } else { Side(all, rw) };
    // SAFETY: the caller's guarantee.
    unsafe { barrier_between(f, cb, t, Side::EVERYTHING, dst) }
}

/// One side of a barrier: the stages of the work it waits for (source) or
/// that waits for it (destination), and the accesses whose writes it makes
/// available (source) or visible (destination).
#[derive(Clone, Copy, Debug)]
pub(super) struct Side(pub(super) vk::PipelineStageFlags, pub(super) vk::AccessFlags);

impl Side {
    /// Every command before, whatever it wrote: the application's work
    /// around a replaced pass, of stages the layer cannot know.
    pub(super) const EVERYTHING: Side = Side(vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_WRITE);
}

/// The sides of the barriers inside a replaced pass (issue 33 item 2): each names the work it orders. Only the
/// first waits for everything before ([`Side::EVERYTHING`]) and only the last is waited for by everything after —
/// the application's work around the pass, of stages the layer cannot know; between them each barrier's source
/// stages meet the previous one's destination stages, so the chain orders the application's work before every
/// step.
pub(super) mod sync {
    use super::Side;
    use ash::vk::{AccessFlags as A, PipelineStageFlags as S};

    /// The plan step's transfers: the map's copy, the table's update, the fills.
    pub(in crate::fdm) fn transfers() -> Side {
        Side(S::TRANSFER, A::TRANSFER_READ | A::TRANSFER_WRITE)
    }

    /// The plan shader: reads the map's copy and the table, or-s into the asked word and the masks.
    pub(in crate::fdm) fn plan_shader() -> Side {
        Side(S::COMPUTE_SHADER, A::SHADER_READ | A::SHADER_WRITE)
    }

    /// What the plan step wrote: the plan shader's predicates, masks and words, the transfers' buffer words.
    pub(in crate::fdm) fn plan_written() -> Side {
        Side(S::COMPUTE_SHADER | S::TRANSFER, A::SHADER_WRITE | A::TRANSFER_WRITE)
    }

    /// The plan buffer's readers — the predicates (conditional rendering), the masks (vertex input), the region
    /// clears' and the upscales' shaders, the asked word's copy — and the downscales' blits.
    pub(in crate::fdm) fn plan_readers() -> Side {
        Side(
            S::TRANSFER
                | S::CONDITIONAL_RENDERING_EXT
                | S::VERTEX_INPUT
                | S::VERTEX_SHADER
                | S::FRAGMENT_SHADER
                | S::COMPUTE_SHADER,
            A::TRANSFER_READ
                | A::TRANSFER_WRITE
                | A::CONDITIONAL_RENDERING_READ_EXT
                | A::VERTEX_ATTRIBUTE_READ
                | A::SHADER_READ
                | A::UNIFORM_READ,
        )
    }

    /// The downscales' blits and copies into the scratch targets.
    pub(in crate::fdm) fn transferred() -> Side {
        Side(S::TRANSFER, A::TRANSFER_WRITE)
    }

    /// The areas' render pass instances into the scratch targets: the application's draws, the region clears.
    pub(in crate::fdm) fn rendering() -> Side {
        Side(
            S::ALL_GRAPHICS,
            A::COLOR_ATTACHMENT_READ
                | A::COLOR_ATTACHMENT_WRITE
                | A::DEPTH_STENCIL_ATTACHMENT_READ
                | A::DEPTH_STENCIL_ATTACHMENT_WRITE
                | A::INPUT_ATTACHMENT_READ
                | A::SHADER_READ,
        )
    }

    /// What the upscales or composites read and overwrite: the scratch targets the instances stored, the real
    /// attachments the downscales read and the direct replays wrote, the composite's words (updated).
    pub(in crate::fdm) fn rendered() -> Side {
        Side(
            S::COLOR_ATTACHMENT_OUTPUT | S::EARLY_FRAGMENT_TESTS | S::LATE_FRAGMENT_TESTS | S::TRANSFER,
            A::COLOR_ATTACHMENT_WRITE | A::DEPTH_STENCIL_ATTACHMENT_WRITE | A::TRANSFER_WRITE,
        )
    }

    /// The upscales or composites: drawn (sampling the scratch targets, writing colour or depth) or dispatched
    /// (storage writes).
    pub(in crate::fdm) fn upscaling() -> Side {
        Side(
            S::VERTEX_SHADER
                | S::FRAGMENT_SHADER
                | S::COMPUTE_SHADER
                | S::EARLY_FRAGMENT_TESTS
                | S::LATE_FRAGMENT_TESTS
                | S::COLOR_ATTACHMENT_OUTPUT,
            A::SHADER_READ
                | A::SHADER_WRITE
                | A::COLOR_ATTACHMENT_READ
                | A::COLOR_ATTACHMENT_WRITE
                | A::DEPTH_STENCIL_ATTACHMENT_READ
                | A::DEPTH_STENCIL_ATTACHMENT_WRITE,
        )
    }
}

/// Records the layout transitions `t` (and a global memory barrier)
/// between the work of `src` before and the work of `dst` after.
///
/// # Safety
/// As [`barrier`]; the stages and accesses are enabled on the device and
/// each access is one its side's stages perform.
pub(super) unsafe fn barrier_between(f: &Fdm, cb: vk::CommandBuffer, t: &[Transition], src: Side, dst: Side) {
    let imgs: Vec<vk::ImageMemoryBarrier> = t
        .iter()
        .map(|t| {
            vk::ImageMemoryBarrier::default()
                .old_layout(t.old)
                .new_layout(t.new)
                .src_access_mask(src.1)
                .dst_access_mask(dst.1)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .image(t.image)
                .subresource_range(t.range)
        })
        .collect();
    let mem = [vk::MemoryBarrier::default().src_access_mask(src.1).dst_access_mask(dst.1)];
    // SAFETY: the caller's guarantee (a recording command buffer outside a
    // render pass, valid images); the arrays are live Vecs.
    unsafe { f.below.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &mem, &[], &imgs) };
}

/// Records nearest-filter blits from `src` to `dst` over `pairs`
/// (framebuffer rectangle, scratch rectangle), downscaling or, with `up`,
/// upscaling, in the attachment's layers `sub` (first and count relative to
/// its view; `None`: all of them).
///
/// # Safety
/// As [`barrier`]; `src` is in `TRANSFER_SRC_OPTIMAL` and `dst` in
/// `TRANSFER_DST_OPTIMAL`, both made with the transfer usages; `sub` lies
/// within the attachment's layers.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn blit(
    f: &Fdm,
    cb: vk::CommandBuffer,
    src: (vk::Image, &Att),
    dst: (vk::Image, &Att),
    pairs: &[(Rect, Rect)],
    up: bool,
    scratch_layers: bool,
    sub: Option<(u32, u32)>,
) {
    let (sa, da) = (src.1, dst.1);
    let (first, count) = sub.unwrap_or((0, sa.range.layer_count));
    let layers = |a: &Att, scratch: bool| vk::ImageSubresourceLayers {
        aspect_mask: a.range.aspect_mask,
        mip_level: if scratch { 0 } else { a.range.base_mip_level },
        base_array_layer: if scratch { 0 } else { a.range.base_array_layer } + first,
        layer_count: count,
    };
    let regions: Vec<vk::ImageBlit> = pairs
        .iter()
        .map(|(fb, sc)| {
            let (s, d) = if up { (*sc, *fb) } else { (*fb, *sc) };
            vk::ImageBlit {
                src_subresource: layers(sa, up && scratch_layers),
                src_offsets: offsets(s),
                dst_subresource: layers(da, !up && scratch_layers),
                dst_offsets: offsets(d),
            }
        })
        .collect();
    if regions.is_empty() {
        return;
    }
    // SAFETY: the caller's guarantee (a recording command buffer outside a
    // render pass, the images in the transfer layouts); the regions are a
    // live Vec.
    unsafe {
        f.below.cmd_blit_image(
            cb,
            src.0,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            dst.0,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &regions,
            vk::Filter::NEAREST,
        )
    };
}

/// Records the scaling copies of a multisampled attachment from `src` to
/// `dst` over `pairs` (framebuffer rectangle, scratch rectangle), through
/// the intermediate image `mid` ([`scaled_copies`]: downscaling or, with
/// `up`, upscaling; every sample kept), in the attachment's layers `sub`
/// (first and count relative to its view; `None`: all of them); the
/// intermediate's contents are discarded first, and a barrier orders its two
/// stages.
///
/// # Safety
/// As [`blit`]; `mid` is the attachment's intermediate image made by
/// [`scratch_targets`] (idle but for the commands recorded before in `cb`,
/// which the barrier before the first stage orders).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn copy_scaled(
    f: &Fdm,
    cb: vk::CommandBuffer,
    src: vk::Image,
    dst: vk::Image,
    mid: vk::Image,
    a: &Att,
    pairs: &[(Rect, Rect)],
    area: (u32, u32),
    up: bool,
    sub: Option<(u32, u32)>,
) {
    let [first, second] = scaled_copies(pairs, area, up);
    if first.is_empty() {
        return;
    }
    let (base, count) = sub.unwrap_or((0, a.range.layer_count));
    let layers = |real: bool| vk::ImageSubresourceLayers {
        aspect_mask: a.range.aspect_mask,
        mip_level: if real { a.range.base_mip_level } else { 0 },
        base_array_layer: if real { a.range.base_array_layer } else { 0 } + base,
        layer_count: count,
    };
    let regions = |v: &[CopyRegion], src_real: bool, dst_real: bool| -> Vec<vk::ImageCopy> {
        v.iter()
            .map(|c| vk::ImageCopy {
                src_subresource: layers(src_real),
                src_offset: vk::Offset3D { x: c.src.0 as i32, y: c.src.1 as i32, z: 0 },
                dst_subresource: layers(dst_real),
                dst_offset: vk::Offset3D { x: c.dst.0 as i32, y: c.dst.1 as i32, z: 0 },
                extent: vk::Extent3D { width: c.extent.0, height: c.extent.1, depth: 1 },
            })
            .collect()
    };
    let range = vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range };
    let mid_to = |old| [Transition { image: mid, range, old, new: vk::ImageLayout::GENERAL }];
    let (src_layout, dst_layout) = (vk::ImageLayout::TRANSFER_SRC_OPTIMAL, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
    let g = vk::ImageLayout::GENERAL;
    // SAFETY: the caller's guarantee (a recording command buffer outside a render pass; `src` and `dst` in the
    // transfer layouts, `mid` made for this attachment at this area: the same format and samples, its layers, large
    // enough for the regions); the regions are live Vecs.
    unsafe {
        barrier(f, cb, &mid_to(vk::ImageLayout::UNDEFINED));
        f.below.cmd_copy_image(cb, src, src_layout, mid, g, &regions(&first, !up, false));
        barrier(f, cb, &mid_to(g));
        f.below.cmd_copy_image(cb, mid, g, dst, dst_layout, &regions(&second, false, up));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

    fn key(views: &[u64], scratched: &[bool], pass: u64) -> Key {
        Key {
            views: views.iter().map(|v| Some(vk::ImageView::from_raw(*v))).collect(),
            scratched: scratched.to_vec(),
            copied: vec![false; scratched.len()],
            render_pass: vk::RenderPass::from_raw(pass),
            area: (2, 2),
            extent: (256, 256),
            layers: 1,
        }
    }

    fn set() -> ScratchSet {
        ScratchSet { images: Vec::new(), mids: Vec::new(), framebuffer: vk::Framebuffer::null() }
    }

    /// Passes that share their scratched views but not the density map's
    /// view, or not the render pass, get sets of their own; a set goes with
    /// any view it was made from (the density map's included) and with its
    /// render pass.
    #[test]
    fn sets_are_keyed_and_forgotten_by_every_object_they_are_made_from() {
        let mut c = ScratchCache::default();
        // Colour 1 scratched, density map 2 or 3, render passes 10 and 11.
        c.sets.insert(key(&[1, 2], &[true, false], 10), vec![Claimed { set: set(), holder: None }]);
        c.sets.insert(key(&[1, 3], &[true, false], 10), vec![Claimed { set: set(), holder: None }]);
        c.sets.insert(key(&[1, 2], &[true, false], 11), vec![Claimed { set: set(), holder: None }]);
        assert_eq!(c.sets.len(), 3);
        assert_eq!(c.take(|k| k.uses_view(vk::ImageView::from_raw(3))).len(), 1);
        assert_eq!(c.take(|k| k.render_pass == vk::RenderPass::from_raw(11)).len(), 1);
        assert_eq!(c.take(|k| k.uses_view(vk::ImageView::from_raw(2))).len(), 1);
        assert!(c.sets.is_empty());
    }

    #[test]
    fn a_command_buffer_keeps_its_set_and_others_never_share_it() {
        // Nothing made yet: one is to be made.
        assert_eq!(claim::<u32>(&[], 1, false), None);
        // Its own set, wherever it is.
        assert_eq!(claim(&[Some(2), Some(1)], 1, false), Some(1));
        // Another command buffer's set is never taken; a free one is.
        assert_eq!(claim(&[Some(2)], 1, false), None);
        assert_eq!(claim(&[Some(2), None], 1, false), Some(1));
        // Shared (the control): the first, held or not.
        assert_eq!(claim(&[Some(2)], 1, true), Some(0));
        assert_eq!(claim::<u32>(&[], 1, true), None);
    }

    /// A command buffer's release frees its sets only.
    #[test]
    fn a_release_frees_the_sets_of_that_command_buffer() {
        let mut c = ScratchCache::default();
        let (a, b) = (vk::CommandBuffer::from_raw(7), vk::CommandBuffer::from_raw(8));
        c.sets.insert(
            key(&[1, 2], &[true, false], 10),
            vec![Claimed { set: set(), holder: Some(a) }, Claimed { set: set(), holder: Some(b) }],
        );
        c.release(a);
        let holders: Vec<_> = c.sets.values().flatten().map(|x| x.holder).collect();
        assert_eq!(holders, vec![None, Some(b)]);
    }
}
