//! Descriptor shadowing: what the layer knows of descriptor set layouts and
//! sets, so that a replay into scratch targets can bind a copy of a set
//! whose input attachments read the scratch views instead of the real
//! attachments. Only plain layouts (no flags, no binding flags) and sets
//! not updated through a template can be copied; the copies' pools are
//! freed with the command buffer's next reset.

use super::commands::InputSubst;
use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use ash::vk;
use std::sync::Arc;

/// `set`, or a copy of it whose input attachments name the replay's scratch
/// views (made once per set and replay target, freed with the command
/// buffer's next reset).
pub(super) unsafe fn shadow_set(f: &Fdm, set: vk::DescriptorSet, inputs: &InputSubst) -> vk::DescriptorSet {
    if let Some(s) = inputs.shadows.borrow().get(&set) {
        return *s;
    }
    let Some(info) = f.sets.lock().get(&set).cloned() else { return set };
    if !info.inputs.iter().any(|(_, view, _)| inputs.views.contains_key(view)) {
        return set;
    }
    let Some(layout) = f.set_layouts.lock().get(&info.layout).cloned() else { return set };
    let d = &f.below;
    let mut sizes: Vec<vk::DescriptorPoolSize> = Vec::new();
    for b in layout.iter().filter(|b| b.count > 0) {
        match sizes.iter_mut().find(|s| s.ty == b.ty) {
            Some(s) => s.descriptor_count += b.count,
            None => sizes.push(vk::DescriptorPoolSize { ty: b.ty, descriptor_count: b.count }),
        }
    }
    let Ok(pool) =
        d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None)
    else {
        return set;
    };
    inputs.pools.borrow_mut().push(pool);
    let layouts = [info.layout];
    let Ok(shadow) = d.allocate_descriptor_sets(
        &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts),
    ) else {
        return set;
    };
    let shadow = shadow[0];
    // Everything as the application wrote it, then the input attachments.
    let copies: Vec<vk::CopyDescriptorSet> = layout
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
    d.update_descriptor_sets(&[], &copies);
    d.update_descriptor_sets(&writes, &[]);
    inputs.shadows.borrow_mut().insert(set, shadow);
    shadow
}

/// Destroys the shadow-set pools of a command buffer whose recording can no
/// longer be pending.
pub(super) unsafe fn free_shadow_pools(f: &Fdm, pools: &mut Vec<vk::DescriptorPool>) {
    for p in pools.drain(..) {
        f.below.destroy_descriptor_pool(p, None);
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

/// What the layer knows of a descriptor set, for shadow copies.
#[derive(Clone, Debug, Default)]
pub struct SetInfo {
    pub layout: vk::DescriptorSetLayout,
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
        if ci.flags.is_empty() && ci.p_next.is_null() {
            let b = slice(ci.p_bindings, ci.binding_count)
                .iter()
                .map(|b| LayoutBinding { binding: b.binding, ty: b.descriptor_type, count: b.descriptor_count })
                .collect();
            self.set_layouts.lock().insert(layout, Arc::new(b));
        }
    }
}

pub unsafe fn allocate_descriptor_sets(
    _: &DeviceCore,
    f: &Fdm,
    device: vk::Device,
    info: *const vk::DescriptorSetAllocateInfo<'_>,
    out: *mut vk::DescriptorSet,
) -> vk::Result {
    let next = move || (f.below.fp_v1_0().allocate_descriptor_sets)(device, info, out);
    let r = next();
    if r == vk::Result::SUCCESS {
        let ci = &*info;
        let mut sets = f.sets.lock();
        let layouts = slice(ci.p_set_layouts, ci.descriptor_set_count);
        for (set, layout) in slice(out, ci.descriptor_set_count).iter().zip(layouts) {
            sets.insert(*set, SetInfo { layout: *layout, ..Default::default() });
        }
    }
    r
}

pub unsafe fn update_descriptor_sets(
    _: &DeviceCore,
    f: &Fdm,
    device: vk::Device,
    nw: u32,
    writes: *const vk::WriteDescriptorSet<'_>,
    nc: u32,
    copies: *const vk::CopyDescriptorSet<'_>,
) {
    let next = move || (f.below.fp_v1_0().update_descriptor_sets)(device, nw, writes, nc, copies);
    {
        let mut sets = f.sets.lock();
        for w in slice(writes, nw) {
            let Some(info) = sets.get_mut(&w.dst_set) else { continue };
            info.written.insert(w.dst_binding);
            if w.descriptor_type == vk::DescriptorType::INPUT_ATTACHMENT {
                for (i, img) in slice(w.p_image_info, w.descriptor_count).iter().enumerate() {
                    let at = (w.dst_binding, w.dst_array_element + i as u32);
                    info.put_input(at, img.image_view, img.image_layout);
                }
            }
        }
        for c in slice(copies, nc) {
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
    next()
}

pub unsafe fn update_descriptor_set_with_template(
    _: &DeviceCore,
    f: &Fdm,
    device: vk::Device,
    set: vk::DescriptorSet,
    template: vk::DescriptorUpdateTemplate,
    data: *const std::ffi::c_void,
) {
    let next = move || (f.below.fp_v1_1().update_descriptor_set_with_template)(device, set, template, data);
    if let Some(info) = f.sets.lock().get_mut(&set) {
        info.opaque = true;
    }
    next()
}
