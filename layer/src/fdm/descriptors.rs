//! Descriptor shadowing: what the layer knows of descriptor set layouts and
//! sets, so that a replay into scratch targets can bind a copy of a set
//! whose input attachments read the scratch views instead of the real
//! attachments. Only plain layouts (no flags, no binding flags) and sets
//! not updated through a template can be copied; the copies' pools are
//! freed with the command buffer's next reset.

use super::commands::InputSubst;
use super::fallback::Fallback;
use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::generated::args;
use ash::vk;
use std::sync::Arc;

/// `set`, or a copy of it whose input attachments name the replay's scratch
/// views (made once per set and replay target, before anything of the
/// replays is recorded, freed with the command buffer's next reset);
/// `Err(why)` when a copy is needed and cannot be made (its layout was
/// destroyed, or out of memory): the pass then renders at 1x1.
///
/// # Safety
/// `set` is a valid descriptor set of the device, bound in the command
/// buffer being recorded (so neither freed nor updated meanwhile without
/// invalidating it: VUID-vkFreeDescriptorSets-pDescriptorSets-00309), and
/// the caller holds the command buffer (its external synchronization).
pub(super) unsafe fn shadow_set(
    dev: &DeviceCore,
    f: &Fdm,
    set: vk::DescriptorSet,
    inputs: &InputSubst,
) -> Result<vk::DescriptorSet, Fallback> {
    if let Some(s) = inputs.shadows.borrow().get(&set) {
        return Ok(*s);
    }
    let Some(info) = f.sets.lock().get(&set).cloned() else { return Ok(set) };
    if !info.inputs.iter().any(|(_, view, _)| inputs.views.contains_key(view)) {
        return Ok(set);
    }
    // Held until the copy is written: a destroy of the layout (which marks it first, under this lock) waits, so
    // the layout is alive for the allocation and the copy (VUID-VkCopyDescriptorSet-srcSet-parameter).
    let _layouts = f.set_layouts.lock();
    // A layout destroyed since the set was bound: the set cannot be copied from, and the original would read the
    // real attachments instead of the scratch ones.
    let Some(layout) = info.layout.clone().filter(|l| l.alive()) else {
        return Err(Fallback::DestroyedSetLayout);
    };
    let d = &f.below;
    let fail = |command| crate::guard::injected_failure(&dev.settings().debug_fail, command);
    let oom = |what: &'static str, e: vk::Result| Fallback::ShadowSet(what, e);
    let mut sizes: Vec<vk::DescriptorPoolSize> = Vec::new();
    for b in layout.bindings.iter().filter(|b| b.count > 0) {
        match sizes.iter_mut().find(|s| s.ty == b.ty) {
            Some(s) => s.descriptor_count += b.count,
            None => sizes.push(vk::DescriptorPoolSize { ty: b.ty, descriptor_count: b.count }),
        }
    }
    fail("vkCreateDescriptorPool").map_err(|e| oom("pool", e))?;
    // SAFETY: a create info built here from a live Vec; `below` is the next
    // layer's table for this device.
    let pool = unsafe {
        d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None)
    }
    .map_err(|e| oom("pool", e))?;
    inputs.pools.borrow_mut().push(pool);
    let layouts = [layout.layout];
    fail("vkAllocateDescriptorSets").map_err(|e| oom("set", e))?;
    // SAFETY: the pool is the layer's own, just made with room for this layout's descriptors; `layout.layout` is
    // the layout the application allocated `set` with, not destroyed (checked above, under the lock a destroy takes).
    let shadow = unsafe {
        d.allocate_descriptor_sets(
            &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts),
        )
    }
    .map_err(|e| oom("set", e))?;
    let shadow = shadow[0];
    // Everything as the application wrote it, then the input attachments.
    let copies: Vec<vk::CopyDescriptorSet> = layout
        .bindings
        .iter()
        .filter(|b| b.count > 0 && info.written.contains(&b.binding))
        .map(|b| {
            vk::CopyDescriptorSet::default()
                .src_set(set)
                .src_binding(b.binding)
                .dst_set(shadow)
                .dst_binding(b.binding)
                .descriptor_count(b.count)
        })
        .collect();
    let images: Vec<[vk::DescriptorImageInfo; 1]> = info
        .inputs
        .iter()
        .map(|(_, view, layout)| {
            [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view: *inputs.views.get(view).unwrap_or(view),
                image_layout: *layout,
            }]
        })
        .collect();
    let writes: Vec<vk::WriteDescriptorSet> = info
        .inputs
        .iter()
        .zip(&images)
        .map(|((at, _, _), img)| {
            vk::WriteDescriptorSet::default()
                .dst_set(shadow)
                .dst_binding(at.0)
                .dst_array_element(at.1)
                .descriptor_type(vk::DescriptorType::INPUT_ATTACHMENT)
                .image_info(img)
        })
        .collect();
    // Copies are applied after writes within one call: two calls.
    // SAFETY: `shadow` is the layer's own set, in no command buffer yet (VUID-vkUpdateDescriptorSets-None-03047
    // cannot apply); `set` is valid (the caller's guarantee); the views are the application's input attachments or
    // the replay's scratch views, alive while the command buffer is recording; the arrays are live Vecs.
    unsafe {
        d.update_descriptor_sets(&[], &copies);
        d.update_descriptor_sets(&writes, &[]);
    }
    inputs.shadows.borrow_mut().insert(set, shadow);
    Ok(shadow)
}

/// Destroys the shadow-set pools of a command buffer whose recording can no
/// longer be pending.
///
/// # Safety
/// The pools are the layer's own and no submitted work that uses their sets
/// is still executing (VUID-vkDestroyDescriptorPool-descriptorPool-00303):
/// the command buffer that recorded them is being reset, freed or begun
/// again, which the application may only do once it is not pending
/// (VUID-vkResetCommandBuffer-commandBuffer-00045,
/// VUID-vkFreeCommandBuffers-pCommandBuffers-00047,
/// VUID-vkBeginCommandBuffer-commandBuffer-00049).
pub(super) unsafe fn free_shadow_pools(f: &Fdm, pools: &mut Vec<vk::DescriptorPool>) {
    for p in pools.drain(..) {
        // SAFETY: VUID-vkDestroyDescriptorPool-descriptorPool-00303: the
        // caller's guarantee that no work using the pool is pending.
        unsafe {
            if let Some(raw) = &f.raw {
                f.gpu_plan.lock().release(raw, p);
            }
            f.below.destroy_descriptor_pool(p, None)
        };
    }
}

/// One binding of a descriptor set layout.
#[derive(Clone, Copy, Debug)]
pub struct LayoutBinding {
    pub binding: u32,
    pub ty: vk::DescriptorType,
    pub count: u32,
}

impl SetInfo {
    /// Records the input attachment at (binding, element).
    fn put_input(&mut self, at: (u32, u32), view: vk::ImageView, layout: vk::ImageLayout) {
        self.inputs.retain(|(a, _, _)| *a != at);
        self.inputs.push((at, view, layout));
    }
}

/// A plain descriptor set layout: its handle and bindings, and whether the
/// application destroyed it (the spec allows that while sets made from it
/// are in use, but those sets can then no longer be copied from: the
/// validation layer rejects such a copy, VUID-VkCopyDescriptorSet-srcSet-parameter,
/// so they are not shadowed and a pass that needs it goes live at 1x1).
#[derive(Debug)]
pub struct LayoutInfo {
    pub layout: vk::DescriptorSetLayout,
    pub bindings: Vec<LayoutBinding>,
    pub destroyed: std::sync::atomic::AtomicBool,
}

impl LayoutInfo {
    /// The application's layout is alive: sets made from it can be shadowed.
    pub fn alive(&self) -> bool {
        !self.destroyed.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// What the layer knows of a descriptor set, for shadow copies.
#[derive(Clone, Debug, Default)]
pub struct SetInfo {
    /// The set's layout where it is plain (`None`: the set is not shadowed).
    pub layout: Option<Arc<LayoutInfo>>,
    /// The pool it came from (forgotten with it).
    pub pool: vk::DescriptorPool,
    /// Input attachments written: ((binding, element), view, layout).
    pub inputs: Vec<((u32, u32), vk::ImageView, vk::ImageLayout)>,
    /// Bindings written at least once (only those are copied).
    pub written: std::collections::HashSet<u32>,
    /// Updated through a template: contents unknown to the layer.
    pub opaque: bool,
}

impl Fdm {
    /// After vkCreateDescriptorSetLayout: what a shadow copy needs (only
    /// plain layouts can be shadowed: no flags, no binding flags).
    ///
    /// # Safety
    /// `ci` is the create info of `layout` (VUID-vkCreateDescriptorSetLayout-pCreateInfo-parameter).
    pub unsafe fn note_set_layout(&self, ci: &vk::DescriptorSetLayoutCreateInfo, layout: vk::DescriptorSetLayout) {
        // A chain of nothing but binding flags that are all empty (what some programs, the CTS among them, always
        // pass) is as plain as none.
        // SAFETY: VUID-VkDescriptorSetLayoutCreateInfo-pNext-pNext: a valid chain; the binding flags structure's
        // `pBindingFlags` holds `bindingCount` flags (VUID-VkDescriptorSetLayoutBindingFlagsCreateInfo-pBindingFlags-parameter).
        let plain_chain = ci.p_next.is_null()
            || unsafe {
                let base = &*(ci.p_next as *const vk::BaseInStructure);
                base.p_next.is_null()
                    && crate::pnext::find::<vk::DescriptorSetLayoutBindingFlagsCreateInfo>(ci.p_next)
                        .is_some_and(|b| slice(b.p_binding_flags, b.binding_count).iter().all(|f| f.is_empty()))
            };
        if ci.flags.is_empty() && plain_chain {
            // SAFETY: VUID-VkDescriptorSetLayoutCreateInfo-pBindings-parameter:
            // `pBindings` holds `bindingCount` valid bindings.
            let bindings = unsafe { slice(ci.p_bindings, ci.binding_count) }
                .iter()
                .map(|b| LayoutBinding { binding: b.binding, ty: b.descriptor_type, count: b.descriptor_count })
                .collect();
            let info = LayoutInfo { layout, bindings, destroyed: Default::default() };
            self.set_layouts.lock().insert(layout, Arc::new(info));
        }
    }

    /// vkDestroyDescriptorSetLayout: the handle may come back for another
    /// layout; sets made from it are no longer shadowed.
    pub fn forget_set_layout(&self, layout: vk::DescriptorSetLayout) {
        if let Some(l) = self.set_layouts.lock().remove(&layout) {
            l.destroyed.store(true, std::sync::atomic::Ordering::Release);
        }
        super::subsampled::forget_set_layout(self, layout);
    }

    /// vkResetDescriptorPool, vkDestroyDescriptorPool: the pool's sets are gone.
    pub fn forget_pool(&self, pool: vk::DescriptorPool) {
        self.sets.lock().retain(|_, i| i.pool != pool);
        super::subsampled::forget_pool_sets(self, pool);
    }
}

/// `vkFreeDescriptorSets`: the freed sets are forgotten.
pub fn free_descriptor_sets(_: &DeviceCore, f: &Fdm, a: args::FreeDescriptorSets) -> vk::Result {
    {
        let mut known = f.sets.lock();
        for s in a.descriptor_sets() {
            known.remove(s);
        }
    }
    super::subsampled::forget_sets(f, a.descriptor_sets());
    // SAFETY: the next layer's command, with the application's arguments.
    unsafe { a.call(f.below.fp_v1_0().free_descriptor_sets) }
}

/// `vkAllocateDescriptorSets`: the new sets' layouts are remembered.
pub fn allocate_descriptor_sets(_: &DeviceCore, f: &Fdm, a: args::AllocateDescriptorSets) -> vk::Result {
    // SAFETY: the next layer's command, with the application's arguments.
    let r = unsafe { a.call(f.below.fp_v1_0().allocate_descriptor_sets) };
    if r == vk::Result::SUCCESS {
        let info = a.allocate_info();
        // SAFETY: VUID-VkDescriptorSetAllocateInfo-pSetLayouts-parameter: `descriptorSetCount` handles; the
        // command succeeded (it wrote as many sets).
        let (layouts, new) =
            unsafe { (slice(info.p_set_layouts, info.descriptor_set_count), a.written_descriptor_sets()) };
        let pool = info.descriptor_pool;
        let known = f.set_layouts.lock();
        let new: Vec<(vk::DescriptorSet, SetInfo)> = new
            .iter()
            .zip(layouts)
            .map(|(set, layout)| (*set, SetInfo { layout: known.get(layout).cloned(), pool, ..Default::default() }))
            .collect();
        drop(known);
        let mut sets = f.sets.lock();
        for (set, info) in new {
            sets.insert(set, info);
        }
        drop(sets);
        // SAFETY: as above.
        super::subsampled::note_sets(f, pool, layouts, unsafe { a.written_descriptor_sets() });
    }
    r
}

/// `vkUpdateDescriptorSets`: which bindings are written, and the input
/// attachments, are remembered.
pub fn update_descriptor_sets(_: &DeviceCore, f: &Fdm, a: args::UpdateDescriptorSets) {
    {
        let mut sets = f.sets.lock();
        for w in a.descriptor_writes() {
            let Some(info) = sets.get_mut(&w.dst_set) else { continue };
            info.written.insert(w.dst_binding);
            if w.descriptor_type == vk::DescriptorType::INPUT_ATTACHMENT {
                // SAFETY: VUID-VkWriteDescriptorSet-descriptorType-00322: an
                // input attachment write's `pImageInfo` holds `descriptorCount` infos.
                let images = unsafe { slice(w.p_image_info, w.descriptor_count) };
                for (i, img) in images.iter().enumerate() {
                    let at = (w.dst_binding, w.dst_array_element + i as u32);
                    info.put_input(at, img.image_view, img.image_layout);
                }
            }
        }
        for c in a.descriptor_copies() {
            let Some(src) = sets.get(&c.src_set).cloned() else { continue };
            let Some(dst) = sets.get_mut(&c.dst_set) else { continue };
            dst.written.insert(c.dst_binding);
            dst.opaque |= src.opaque;
            let range = c.src_array_element..c.src_array_element + c.descriptor_count;
            for ((b, e), view, layout) in src.inputs {
                if b == c.src_binding && range.contains(&e) {
                    let at = (c.dst_binding, c.dst_array_element + (e - c.src_array_element));
                    dst.put_input(at, view, layout);
                }
            }
        }
    }
    let (tables, copies) = super::subsampled::hidden_updates(f, a.descriptor_writes(), a.descriptor_copies());
    // SAFETY: the next layer's command, with the application's arguments; then the tables of the subsampled
    // images written (the same sets, under the same rule).
    unsafe {
        a.call(f.below.fp_v1_0().update_descriptor_sets);
        super::subsampled::send_hidden(f, &tables, &copies);
    }
}

/// `vkUpdateDescriptorSetWithTemplate`: the set's contents become unknown
/// to the layer (it is not shadowed).
pub fn update_descriptor_set_with_template(_: &DeviceCore, f: &Fdm, a: args::UpdateDescriptorSetWithTemplate) {
    if let Some(info) = f.sets.lock().get_mut(&a.descriptor_set()) {
        info.opaque = true;
    }
    let (set, template, data) = (a.descriptor_set(), a.descriptor_update_template(), a.p_data());
    // SAFETY: the next layer's command, with the application's arguments; then the tables its data names.
    unsafe {
        a.call(f.below.fp_v1_1().update_descriptor_set_with_template);
        super::subsampled::template_writes(f, set, template, data);
    }
}
