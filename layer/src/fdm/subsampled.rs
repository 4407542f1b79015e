//! Subsampled images stored packed (`VK_IMAGE_CREATE_SUBSAMPLED_BIT_EXT`).
//!
//! A subsampled image is read only through combined image samplers whose
//! immutable sampler is subsampled (copies, blits and resolves reject it),
//! so the layer may keep it in a layout of its own: where a density-map pass
//! planned on the host composites its colour attachment, the composite
//! writes each coarse rectangle's texels 1:1 at the rectangle's origin
//! (*packed*: `ideal` pixels written, not the whole frame) and records the
//! image's *bin table* (`overlap_shaders::subsampled`: a word per 8x8 cell,
//! its area and offset; zero is the identity). Every other pass that writes
//! the image stores it at full resolution and sets its table to the
//! identity.
//!
//! The shaders find the table through a hidden binding: every descriptor
//! set layout with a subsampled immutable sampler gets, per such binding, a
//! uniform texel buffer binding after the application's, which the layer writes
//! wherever the application writes the sampler's image (descriptor writes,
//! copies, update templates); pools grow by a texel buffer per combined
//! image sampler; every pipeline made with such a layout samples those
//! bindings through the table (`overlap_shaders::subsampled::rewrite`).
//! Where a path cannot be followed (push descriptors, descriptor buffers,
//! a variable count, a shader the rewrite refuses, shader objects), packing
//! is switched off for the device, with a warning: images stay at full
//! resolution, as before.

use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::generated::args;
use crate::id;
use ash::vk;
use overlap_shaders::subsampled::{Binding, Config};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The table's cell: the smallest density-map texel the layer reports, so
/// every bin edge of a pass without offsets is a cell edge.
pub(super) const CELL: u32 = super::MIN_TEXEL;

/// What the rewrite needs of a subsampled sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SamplerFacts {
    pub linear: bool,
    pub border: (bool, bool),
}

/// A subsampled binding of a set layout and its hidden table binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hidden {
    pub binding: u32,
    pub table: u32,
    pub count: u32,
    pub sampler: SamplerFacts,
}

/// A subsampled image's bin table: `cols × rows` words, read as a uniform
/// texel buffer (`R32_UINT`) through `view`.
pub(super) struct Table {
    pub buffer: vk::Buffer,
    pub view: vk::BufferView,
    memory: vk::DeviceMemory,
    pub cols: u32,
    pub rows: u32,
}

/// An update template's entry that writes a subsampled binding.
#[derive(Clone, Copy, Debug)]
struct TemplateEntry {
    first: u32,
    count: u32,
    offset: usize,
    stride: usize,
    table: u32,
}

#[derive(Default)]
pub(super) struct State {
    /// Subsampled attachments may be stored packed on this device (`fdm_subsampled`); off, nothing here runs.
    pub on: bool,
    samplers: Mutex<HashMap<vk::Sampler, SamplerFacts>>,
    layouts: Mutex<HashMap<vk::DescriptorSetLayout, Arc<Vec<Hidden>>>>,
    pipeline_layouts: Mutex<HashMap<vk::PipelineLayout, Arc<Vec<(u32, Hidden)>>>>,
    /// Sets of layouts with hidden bindings, with their pool.
    sets: Mutex<HashMap<vk::DescriptorSet, (vk::DescriptorPool, Arc<Vec<Hidden>>)>>,
    templates: Mutex<HashMap<vk::DescriptorUpdateTemplate, Vec<TemplateEntry>>>,
    tables: Mutex<HashMap<vk::Image, Arc<Table>>>,
    /// Tables of destroyed images: a set may still name them (freed with the device).
    retired: Mutex<Vec<Arc<Table>>>,
    /// Packing switched off for the device (a path the layer cannot follow).
    off: AtomicBool,
    /// A subsampled image was made on the device.
    pub any: AtomicBool,
}

impl State {
    /// Packing may be used for passes recorded from now on.
    pub(super) fn packs(&self) -> bool {
        self.on && !self.off.load(Ordering::Acquire)
    }

    fn switch_off(&self, dev: &DeviceCore, why: &str) {
        if !self.off.swap(true, Ordering::AcqRel) {
            dev.log().warn(
                id::FDM_SUBSAMPLED,
                &format!("subsampled images are stored at full resolution from now on: {why}"),
            );
        }
    }

    /// The hidden bindings of pipeline layout `layout` (set, binding).
    pub(super) fn pipeline_hidden(&self, layout: vk::PipelineLayout) -> Option<Arc<Vec<(u32, Hidden)>>> {
        self.pipeline_layouts.lock().get(&layout).cloned()
    }

    /// The table of `image`, if made.
    pub(super) fn table(&self, image: vk::Image) -> Option<Arc<Table>> {
        self.tables.lock().get(&image).cloned()
    }
}

/// The words of `sampler`'s facts where it is subsampled.
pub(super) fn sampler_facts(ci: &vk::SamplerCreateInfo) -> Option<SamplerFacts> {
    ci.flags.contains(vk::SamplerCreateFlags::SUBSAMPLED_EXT).then_some(SamplerFacts {
        linear: ci.mag_filter == vk::Filter::LINEAR,
        border: (
            ci.address_mode_u == vk::SamplerAddressMode::CLAMP_TO_BORDER,
            ci.address_mode_v == vk::SamplerAddressMode::CLAMP_TO_BORDER,
        ),
    })
}

impl Fdm {
    pub(super) fn note_sampler(&self, sampler: vk::Sampler, ci: &vk::SamplerCreateInfo) {
        match sampler_facts(ci) {
            Some(s) => self.subsampled.samplers.lock().insert(sampler, s),
            None => self.subsampled.samplers.lock().remove(&sampler),
        };
    }

    /// Whether set layout `layout` has hidden table bindings.
    pub(super) fn subsampled_layout(&self, layout: vk::DescriptorSetLayout) -> bool {
        self.subsampled.layouts.lock().contains_key(&layout)
    }

    /// Packing off for the device, with a warning naming `why`.
    pub(super) fn subsampled_off(&self, dev: &DeviceCore, why: &str) {
        self.subsampled.switch_off(dev, why);
    }

    /// vkDestroySampler: the handle may come back for another sampler.
    pub fn forget_sampler(&self, sampler: vk::Sampler) {
        self.subsampled.samplers.lock().remove(&sampler);
    }

    /// After vkCreatePipelineLayout: the hidden bindings of its sets.
    ///
    /// # Safety
    /// `ci` is the create info of `layout`.
    pub unsafe fn note_pipeline_layout(&self, ci: &vk::PipelineLayoutCreateInfo, layout: vk::PipelineLayout) {
        // SAFETY: VUID-VkPipelineLayoutCreateInfo-pSetLayouts-parameter.
        let sets = unsafe { slice(ci.p_set_layouts, ci.set_layout_count) };
        let known = self.subsampled.layouts.lock();
        let hidden: Vec<(u32, Hidden)> = sets
            .iter()
            .enumerate()
            .flat_map(|(i, l)| known.get(l).into_iter().flat_map(move |h| h.iter().map(move |h| (i as u32, *h))))
            .collect();
        drop(known);
        let mut layouts = self.subsampled.pipeline_layouts.lock();
        if hidden.is_empty() {
            layouts.remove(&layout);
        } else {
            layouts.insert(layout, Arc::new(hidden));
        }
    }

    pub fn forget_pipeline_layout(&self, layout: vk::PipelineLayout) {
        self.subsampled.pipeline_layouts.lock().remove(&layout);
    }

    /// After vkCreateDescriptorUpdateTemplate: its entries that write a
    /// subsampled binding.
    ///
    /// # Safety
    /// `ci` is the create info of `template`.
    pub unsafe fn note_template(
        &self,
        ci: &vk::DescriptorUpdateTemplateCreateInfo,
        template: vk::DescriptorUpdateTemplate,
    ) {
        let layouts = self.subsampled.layouts.lock();
        let Some(hidden) = (ci.template_type == vk::DescriptorUpdateTemplateType::DESCRIPTOR_SET)
            .then(|| layouts.get(&ci.descriptor_set_layout).cloned())
            .flatten()
        else {
            drop(layouts);
            self.subsampled.templates.lock().remove(&template);
            return;
        };
        drop(layouts);
        // SAFETY: VUID-VkDescriptorUpdateTemplateCreateInfo-pDescriptorUpdateEntries-parameter.
        let entries = unsafe { slice(ci.p_descriptor_update_entries, ci.descriptor_update_entry_count) };
        let found = entries
            .iter()
            .filter_map(|e| {
                let h = hidden.iter().find(|h| h.binding == e.dst_binding)?;
                Some(TemplateEntry {
                    first: e.dst_array_element,
                    count: e.descriptor_count.min(h.count.saturating_sub(e.dst_array_element)),
                    offset: e.offset,
                    stride: e.stride,
                    table: h.table,
                })
            })
            .collect();
        self.subsampled.templates.lock().insert(template, found);
    }

    pub fn forget_template(&self, template: vk::DescriptorUpdateTemplate) {
        self.subsampled.templates.lock().remove(&template);
    }

    /// vkDestroyImage: its table is retired (a set may still name it).
    pub(super) fn retire_table(&self, image: vk::Image) {
        if let Some(t) = self.subsampled.tables.lock().remove(&image) {
            self.subsampled.retired.lock().push(t);
        }
    }

    /// The table of subsampled-readable `image` (`extent` its size), made
    /// (zeroed: the identity) where missing; `None` where it cannot be.
    pub(super) fn table_for(&self, image: vk::Image, extent: (u32, u32)) -> Option<Arc<Table>> {
        if let Some(t) = self.subsampled.tables.lock().get(&image) {
            return Some(t.clone());
        }
        let d = self.raw.as_ref()?;
        let (cols, rows) = (extent.0.div_ceil(CELL).max(1), extent.1.div_ceil(CELL).max(1));
        let size = (cols as u64) * (rows as u64) * 4;
        // SAFETY: create infos built here; the objects are the layer's own, destroyed on failure.
        let made = unsafe {
            (|| {
                let usage = vk::BufferUsageFlags::UNIFORM_TEXEL_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
                let buffer = d.create_buffer(&vk::BufferCreateInfo::default().size(size).usage(usage), None)?;
                let req = d.get_buffer_memory_requirements(buffer);
                let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
                let ty = crate::ffi::memory_type(
                    &self.memory,
                    req.memory_type_bits,
                    host | vk::MemoryPropertyFlags::DEVICE_LOCAL,
                )
                .or_else(|| crate::ffi::memory_type(&self.memory, req.memory_type_bits, host));
                let Some(ty) = ty else {
                    d.destroy_buffer(buffer, None);
                    return Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
                };
                let memory = match d.allocate_memory(
                    &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty),
                    None,
                ) {
                    Ok(m) => m,
                    Err(e) => {
                        d.destroy_buffer(buffer, None);
                        return Err(e);
                    }
                };
                let zeroed = d.bind_buffer_memory(buffer, memory, 0).and_then(|()| {
                    let p = d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())?;
                    std::ptr::write_bytes(p as *mut u8, 0, req.size as usize);
                    d.unmap_memory(memory);
                    Ok(())
                });
                let view = zeroed.and_then(|()| {
                    d.create_buffer_view(
                        &vk::BufferViewCreateInfo::default()
                            .buffer(buffer)
                            .format(vk::Format::R32_UINT)
                            .range(vk::WHOLE_SIZE),
                        None,
                    )
                });
                match view {
                    Ok(view) => Ok(Table { buffer, view, memory, cols, rows }),
                    Err(e) => {
                        d.destroy_buffer(buffer, None);
                        d.free_memory(memory, None);
                        Err(e)
                    }
                }
            })()
        };
        let t = Arc::new(made.ok()?);
        Some(self.subsampled.tables.lock().entry(image).or_insert(t).clone())
    }

    /// The table of the image `view` was made from (made where missing).
    fn table_of_view(&self, view: vk::ImageView) -> Option<Arc<Table>> {
        let image = self.views.lock().get(&view)?.image;
        let extent = self.images.lock().get(&image).map(|i| (i.extent.width, i.extent.height))?;
        self.table_for(image, extent)
    }

    /// vkDestroyDevice: every table goes.
    pub(super) unsafe fn destroy_tables(&self) {
        let Some(d) = self.raw.as_ref() else { return };
        let tables: Vec<Arc<Table>> = self
            .subsampled
            .tables
            .lock()
            .drain()
            .map(|(_, t)| t)
            .chain(self.subsampled.retired.lock().drain(..))
            .collect();
        for t in tables {
            // SAFETY: the layer's own objects; the device is idle at its destruction.
            unsafe {
                d.destroy_buffer_view(t.view, None);
                d.destroy_buffer(t.buffer, None);
                d.free_memory(t.memory, None);
            }
        }
    }
}

/// `vkCreateDescriptorSetLayout`: a uniform texel buffer binding after the
/// application's for each binding whose immutable samplers are subsampled.
pub fn create_descriptor_set_layout(dev: &DeviceCore, f: &Fdm, a: args::CreateDescriptorSetLayout) -> vk::Result {
    if !f.subsampled.on {
        return a.next();
    }
    let ci = a.create_info();
    // SAFETY: VUID-VkDescriptorSetLayoutCreateInfo-pBindings-parameter.
    let bindings = unsafe { slice(ci.p_bindings, ci.binding_count) };
    let samplers = f.subsampled.samplers.lock();
    let subsampled: Vec<(usize, SamplerFacts)> = bindings
        .iter()
        .enumerate()
        .filter(|(_, b)| {
            b.descriptor_type == vk::DescriptorType::COMBINED_IMAGE_SAMPLER && !b.p_immutable_samplers.is_null()
        })
        .filter_map(|(i, b)| {
            // SAFETY: VUID-VkDescriptorSetLayoutBinding-descriptorType-00282: `descriptorCount` samplers.
            let s = unsafe { slice(b.p_immutable_samplers, b.descriptor_count) };
            s.iter().find_map(|s| samplers.get(s).copied()).map(|facts| (i, facts))
        })
        .collect();
    drop(samplers);
    if subsampled.is_empty() {
        return a.next();
    }
    let push = vk::DescriptorSetLayoutCreateFlags::PUSH_DESCRIPTOR_KHR;
    let descriptor_buffer = vk::DescriptorSetLayoutCreateFlags::from_raw(0x10); // DESCRIPTOR_BUFFER_BIT_EXT
    if ci.flags.intersects(push | descriptor_buffer) {
        f.subsampled.switch_off(dev, "a push-descriptor or descriptor-buffer set layout holds a subsampled sampler");
        return a.next();
    }
    // SAFETY: VUID-VkDescriptorSetLayoutCreateInfo-pNext-pNext: a valid chain.
    let flags_info = unsafe { crate::pnext::find::<vk::DescriptorSetLayoutBindingFlagsCreateInfo>(ci.p_next) };
    // SAFETY: its `pBindingFlags` holds `bindingCount` flags where non-null.
    let flags: Vec<vk::DescriptorBindingFlags> =
        flags_info.map(|b| unsafe { slice(b.p_binding_flags, b.binding_count) }.to_vec()).unwrap_or_default();
    // A variable count must be the last binding's; update after bind would need the texel buffers' own feature.
    let unfollowed =
        vk::DescriptorBindingFlags::VARIABLE_DESCRIPTOR_COUNT | vk::DescriptorBindingFlags::UPDATE_AFTER_BIND;
    if subsampled.iter().any(|(i, _)| flags.get(*i).is_some_and(|f| f.intersects(unfollowed))) {
        f.subsampled.switch_off(dev, "a subsampled sampler binding has a variable count or is updated after bind");
        return a.next();
    }
    let mut next_binding = bindings.iter().map(|b| b.binding + 1).max().unwrap_or(0);
    let mut all: Vec<vk::DescriptorSetLayoutBinding> = bindings.to_vec();
    let mut all_flags = flags.clone();
    let mut hidden = Vec::new();
    for (i, facts) in &subsampled {
        let b = bindings[*i];
        all.push(
            vk::DescriptorSetLayoutBinding::default()
                .binding(next_binding)
                .descriptor_type(vk::DescriptorType::UNIFORM_TEXEL_BUFFER)
                .descriptor_count(b.descriptor_count)
                .stage_flags(b.stage_flags),
        );
        if !flags.is_empty() {
            all_flags.push(flags.get(*i).copied().unwrap_or_default());
        }
        hidden.push(Hidden { binding: b.binding, table: next_binding, count: b.descriptor_count, sampler: *facts });
        next_binding += 1;
    }
    let mut copy = *ci;
    copy.binding_count = all.len() as u32;
    copy.p_bindings = all.as_ptr();
    let mut chain;
    if flags_info.is_some() {
        // SAFETY: VUID-VkDescriptorSetLayoutCreateInfo-pNext-pNext: a valid chain.
        chain = match unsafe { crate::pnext::Chain::copy(ci.p_next) } {
            Ok(c) => c,
            Err(_) => {
                f.subsampled.switch_off(dev, "a subsampled sampler's set layout has a structure the layer cannot copy");
                return a.next();
            }
        };
        if let Some(b) = chain.get_mut::<vk::DescriptorSetLayoutBindingFlagsCreateInfo>() {
            b.binding_count = all_flags.len() as u32;
            b.p_binding_flags = all_flags.as_ptr();
        }
        copy.p_next = chain.head();
    }
    let r = a.with_create_info(&copy).next();
    if r == vk::Result::SUCCESS {
        // SAFETY: the command succeeded.
        let layout = unsafe { a.written_set_layout() };
        f.subsampled.layouts.lock().insert(layout, Arc::new(hidden));
    }
    r
}

/// vkDestroyDescriptorSetLayout.
pub(super) fn forget_set_layout(f: &Fdm, layout: vk::DescriptorSetLayout) {
    f.subsampled.layouts.lock().remove(&layout);
}

/// `vkCreateDescriptorPool`: a uniform texel buffer descriptor more per combined
/// image sampler (each may be a subsampled one with its hidden table).
pub fn create_descriptor_pool(_: &DeviceCore, f: &Fdm, a: args::CreateDescriptorPool) -> vk::Result {
    if !f.subsampled.on {
        return a.next();
    }
    let ci = a.create_info();
    // SAFETY: VUID-VkDescriptorPoolCreateInfo-pPoolSizes-parameter.
    let sizes = unsafe { slice(ci.p_pool_sizes, ci.pool_size_count) };
    let samplers: u32 =
        sizes.iter().filter(|s| s.ty == vk::DescriptorType::COMBINED_IMAGE_SAMPLER).map(|s| s.descriptor_count).sum();
    if samplers == 0 {
        return a.next();
    }
    let mut all = sizes.to_vec();
    all.push(vk::DescriptorPoolSize { ty: vk::DescriptorType::UNIFORM_TEXEL_BUFFER, descriptor_count: samplers });
    let mut copy = *ci;
    copy.pool_size_count = all.len() as u32;
    copy.p_pool_sizes = all.as_ptr();
    a.with_create_info(&copy).next()
}

/// After vkAllocateDescriptorSets: the sets with hidden bindings.
pub(super) fn note_sets(
    f: &Fdm,
    pool: vk::DescriptorPool,
    layouts: &[vk::DescriptorSetLayout],
    sets: &[vk::DescriptorSet],
) {
    let known = f.subsampled.layouts.lock();
    let found: Vec<(vk::DescriptorSet, Arc<Vec<Hidden>>)> =
        sets.iter().zip(layouts).filter_map(|(s, l)| known.get(l).map(|h| (*s, h.clone()))).collect();
    drop(known);
    if found.is_empty() {
        return;
    }
    let mut all = f.subsampled.sets.lock();
    for (s, h) in found {
        all.insert(s, (pool, h));
    }
}

pub(super) fn forget_sets(f: &Fdm, sets: &[vk::DescriptorSet]) {
    let mut all = f.subsampled.sets.lock();
    for s in sets {
        all.remove(s);
    }
}

pub(super) fn forget_pool_sets(f: &Fdm, pool: vk::DescriptorPool) {
    f.subsampled.sets.lock().retain(|_, (p, _)| *p != pool);
}

/// The table descriptors the application's writes and copies imply: per
/// element written to a subsampled binding, its image's table; per copy of
/// one, the copy of its hidden elements.
pub(super) fn hidden_updates(
    f: &Fdm,
    writes: &[vk::WriteDescriptorSet],
    copies: &[vk::CopyDescriptorSet],
) -> (Vec<(vk::DescriptorSet, u32, u32, vk::BufferView)>, Vec<vk::CopyDescriptorSet<'static>>) {
    if !f.subsampled.on {
        return (Vec::new(), Vec::new());
    }
    let sets = f.subsampled.sets.lock();
    if sets.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut out = Vec::new();
    for w in writes {
        let Some((_, hidden)) = sets.get(&w.dst_set) else { continue };
        let Some(h) = hidden.iter().find(|h| h.binding == w.dst_binding) else { continue };
        if w.descriptor_type != vk::DescriptorType::COMBINED_IMAGE_SAMPLER || w.p_image_info.is_null() {
            continue;
        }
        // SAFETY: VUID-VkWriteDescriptorSet-descriptorType-00323: `descriptorCount` image infos.
        let infos = unsafe { slice(w.p_image_info, w.descriptor_count) };
        for (k, info) in infos.iter().enumerate() {
            let element = w.dst_array_element + k as u32;
            if element >= h.count || info.image_view == vk::ImageView::null() {
                continue;
            }
            if let Some(t) = f.table_of_view(info.image_view) {
                out.push((w.dst_set, h.table, element, t.view));
            }
        }
    }
    let mut more = Vec::new();
    for c in copies {
        let (Some((_, src)), Some((_, dst))) = (sets.get(&c.src_set), sets.get(&c.dst_set)) else { continue };
        let (Some(s), Some(d)) =
            (src.iter().find(|h| h.binding == c.src_binding), dst.iter().find(|h| h.binding == c.dst_binding))
        else {
            continue;
        };
        let count = c
            .descriptor_count
            .min(s.count.saturating_sub(c.src_array_element))
            .min(d.count.saturating_sub(c.dst_array_element));
        if count > 0 {
            more.push(
                vk::CopyDescriptorSet::default()
                    .src_set(c.src_set)
                    .src_binding(s.table)
                    .src_array_element(c.src_array_element)
                    .dst_set(c.dst_set)
                    .dst_binding(d.table)
                    .dst_array_element(c.dst_array_element)
                    .descriptor_count(count),
            );
        }
    }
    (out, more)
}

/// Sends down the table writes `writes` (set, binding, element, buffer) and `copies`.
///
/// # Safety
/// The sets are alive and not in use by pending work (the application's own update's rule).
pub(super) unsafe fn send_hidden(
    f: &Fdm,
    writes: &[(vk::DescriptorSet, u32, u32, vk::BufferView)],
    copies: &[vk::CopyDescriptorSet],
) {
    if writes.is_empty() && copies.is_empty() {
        return;
    }
    let infos: Vec<[vk::BufferView; 1]> = writes.iter().map(|w| [w.3]).collect();
    let ws: Vec<vk::WriteDescriptorSet> = writes
        .iter()
        .zip(&infos)
        .map(|(w, i)| {
            vk::WriteDescriptorSet::default()
                .dst_set(w.0)
                .dst_binding(w.1)
                .dst_array_element(w.2)
                .descriptor_type(vk::DescriptorType::UNIFORM_TEXEL_BUFFER)
                .texel_buffer_view(i)
        })
        .collect();
    // SAFETY: the caller's guarantee; the buffers are the layer's live tables.
    unsafe { f.below.update_descriptor_sets(&ws, copies) };
}

/// After vkUpdateDescriptorSetWithTemplate: the table writes its data implies.
///
/// # Safety
/// `data` is the application's valid data for `template` (VUID-vkUpdateDescriptorSetWithTemplate-pData-01685).
pub(super) unsafe fn template_writes(
    f: &Fdm,
    set: vk::DescriptorSet,
    template: vk::DescriptorUpdateTemplate,
    data: *const std::ffi::c_void,
) {
    if !f.subsampled.on {
        return;
    }
    let Some(entries) = f.subsampled.templates.lock().get(&template).cloned() else { return };
    let mut writes = Vec::new();
    for e in entries {
        for k in 0..e.count as usize {
            // SAFETY: the caller's guarantee: an image info at offset + k × stride for each element (read
            // unaligned: the spec does not align the application's data).
            let info = unsafe {
                std::ptr::read_unaligned(
                    (data as *const u8).add(e.offset + k * e.stride) as *const vk::DescriptorImageInfo
                )
            };
            if info.image_view == vk::ImageView::null() {
                continue;
            }
            if let Some(t) = f.table_of_view(info.image_view) {
                writes.push((set, e.table, e.first + k as u32, t.view));
            }
        }
    }
    // SAFETY: the caller's guarantee (the application's update's rule).
    unsafe { send_hidden(f, &writes, &[]) };
}

/// The stages of a pipeline made with `layout`, each module that samples a
/// subsampled binding replaced by its rewrite (made through the next layer,
/// its facts registered like the application's modules): the stages, and
/// the modules to destroy after the pipeline is made. `None`: nothing to
/// rewrite (or packing is off).
///
/// # Safety
/// `stages` are a valid pipeline's stages.
pub(super) unsafe fn rewrite_stages<'a>(
    dev: &DeviceCore,
    f: &Fdm,
    layout: vk::PipelineLayout,
    stages: &[vk::PipelineShaderStageCreateInfo<'a>],
) -> Option<(Vec<vk::PipelineShaderStageCreateInfo<'a>>, Vec<vk::ShaderModule>)> {
    let hidden = f.subsampled.pipeline_hidden(layout)?;
    if !f.subsampled.packs() || f.controls.without_subsampled_reads {
        return None;
    }
    let bindings: Vec<Binding> = hidden
        .iter()
        .map(|(set, h)| Binding {
            set: *set,
            binding: h.binding,
            table: h.table,
            linear: h.sampler.linear,
            border: h.sampler.border,
        })
        .collect();
    let cfg = Config { bindings: &bindings, cell: (CELL, CELL) };
    let mut out = stages.to_vec();
    let mut made = Vec::new();
    for s in out.iter_mut() {
        if s.module == vk::ShaderModule::null() {
            f.subsampled.switch_off(dev, "a pipeline stage with its code inline may sample a subsampled binding");
            break;
        }
        let Some(facts) = f.modules.lock().get(&s.module).cloned() else { continue };
        let Some(words) = facts.sampled.clone() else { continue };
        let rewritten = overlap_shaders::parse(&words).map_err(|e| e.to_string()).and_then(|mut m| {
            let r = overlap_shaders::subsampled::rewrite(&mut m, &cfg).map_err(|e| e.to_string())?;
            Ok((r.samples, overlap_shaders::assemble(&m)))
        });
        let w = match rewritten {
            Ok((0, _)) => continue,
            Ok((_, w)) => w,
            Err(e) => {
                f.subsampled.switch_off(dev, &format!("a shader's subsampled reads cannot be rewritten ({e})"));
                break;
            }
        };
        if !crate::spirv::checked_output(dev, "the subsampled-image rewrite", &words, &w) {
            f.subsampled.switch_off(dev, "a shader's subsampled rewrite failed validation");
            break;
        }
        // The density lowering and the interlock route see the rewrite as they would the application's module.
        // SAFETY: a create info built here from the validated words.
        let module = match unsafe { super::create_module_below(dev, f, &w) } {
            Ok(m) => m,
            Err(_) => {
                f.subsampled.switch_off(dev, "a rewritten module could not be made");
                break;
            }
        };
        made.push(module);
        s.module = module;
    }
    if !f.subsampled.packs() {
        // SAFETY: the modules just made, used by nothing.
        unsafe { destroy_modules(f, &made) };
        return None;
    }
    (!made.is_empty()).then_some((out, made))
}

/// `vkCreateComputePipelines`: a stage whose layout has a subsampled
/// sampler reads it through the bin table, as a graphics pipeline's.
pub fn create_compute_pipelines(dev: &DeviceCore, f: &Fdm, a: args::CreateComputePipelines) -> vk::Result {
    let infos = a.create_infos();
    if !infos.iter().any(|i| f.subsampled.pipeline_hidden(i.layout).is_some()) {
        return a.next();
    }
    let mut copies = infos.to_vec();
    let mut made = Vec::new();
    for c in copies.iter_mut() {
        // SAFETY: the stage of a valid create info.
        if let Some((stages, m)) = unsafe { rewrite_stages(dev, f, c.layout, std::slice::from_ref(&c.stage)) } {
            c.stage = stages[0];
            made.extend(m);
        }
    }
    let r = a.with_create_infos(&copies).next();
    // SAFETY: the pipelines are made: the rewritten modules are no longer needed.
    unsafe { destroy_modules(f, &made) };
    r
}

/// Destroys modules [`rewrite_stages`] made (and their facts).
///
/// # Safety
/// Nothing uses them any more (a pipeline made from them keeps its code).
pub(super) unsafe fn destroy_modules(f: &Fdm, modules: &[vk::ShaderModule]) {
    for m in modules {
        f.modules.lock().remove(m);
        // SAFETY: the caller's guarantee.
        unsafe { f.below.destroy_shader_module(*m, None) };
    }
}

/// The module facts' words to keep for the rewrite: where the module
/// declares a combined image sampler.
pub(super) fn sampled_words(code: &[u32]) -> Option<Arc<Vec<u32>>> {
    overlap_shaders::subsampled::declares_sampled_images(code).then(|| Arc::new(code.to_vec()))
}

/// The table words of a packed attachment of extent `extent`: per cell the
/// area and offset of the rectangle holding it (`draws`: per area its
/// rectangles); `None` where some rectangle does not start on a multiple
/// of its area and of the cell or does not end on a cell edge (or the
/// image's), or its offset does not fit the word.
pub(super) fn table_words(
    (cols, rows): (u32, u32),
    extent: (u32, u32),
    draws: &[((u32, u32), &[super::bins::Rect])],
) -> Option<Vec<u32>> {
    let mut words = vec![0u32; (cols * rows) as usize];
    for (area, rects) in draws {
        let (ax, ay) = *area;
        if !ax.is_power_of_two() || !ay.is_power_of_two() || ax > 4 || ay > 4 {
            return None;
        }
        for r in rects.iter() {
            let (x1, y1) = (r.x + r.w, r.y + r.h);
            let starts = r.x % ax == 0 && r.y % ay == 0 && r.x % CELL == 0 && r.y % CELL == 0;
            let ends = (x1 % CELL == 0 || x1 == extent.0) && (y1 % CELL == 0 || y1 == extent.1);
            let (ox, oy) = (r.x - r.x / ax, r.y - r.y / ay);
            if !starts || !ends || ox >= 1 << 14 || oy >= 1 << 14 || x1 > extent.0 || y1 > extent.1 {
                return None;
            }
            let word = ax.trailing_zeros() | (ay.trailing_zeros() << 2) | (ox << 4) | (oy << 18);
            for cy in r.y / CELL..y1.div_ceil(CELL) {
                for cx in r.x / CELL..x1.div_ceil(CELL) {
                    words[(cy * cols + cx) as usize] = word;
                }
            }
        }
    }
    Some(words)
}

/// Where rectangle `r` rendered at `area` is stored packed (framebuffer
/// `extent`): its texels from its origin, `⌈r.size / area⌉` of them (its
/// origin a multiple of the area).
pub(super) fn packed_rect(r: &super::bins::Rect, (ax, ay): (u32, u32), extent: (u32, u32)) -> super::bins::Rect {
    let (x1, y1) = ((r.x + r.w).min(extent.0), (r.y + r.h).min(extent.1));
    super::bins::Rect { x: r.x, y: r.y, w: x1.div_ceil(ax) - r.x / ax, h: y1.div_ceil(ay) - r.y / ay }
}

/// Records `words` into `table` (zeros where `None`); with `fenced`, after
/// every earlier reader and before every later one (a barrier each side),
/// else between barriers of the caller's that order it so.
///
/// # Safety
/// `cb` is recording outside a render pass; `table` is alive.
pub(super) unsafe fn record_table(f: &Fdm, cb: vk::CommandBuffer, table: &Table, words: Option<&[u32]>, fenced: bool) {
    let Some(d) = f.raw.as_ref() else { return };
    if !fenced {
        // SAFETY: the caller's guarantee.
        unsafe { write_table(d, cb, table, words) };
        return;
    }
    let whole = vk::BufferMemoryBarrier::default()
        .buffer(table.buffer)
        .offset(0)
        .size(vk::WHOLE_SIZE)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED);
    let before = whole.src_access_mask(vk::AccessFlags::SHADER_READ).dst_access_mask(vk::AccessFlags::TRANSFER_WRITE);
    let after = whole.src_access_mask(vk::AccessFlags::TRANSFER_WRITE).dst_access_mask(vk::AccessFlags::SHADER_READ);
    let all = vk::PipelineStageFlags::ALL_COMMANDS;
    let transfer = vk::PipelineStageFlags::TRANSFER;
    // SAFETY: the caller's guarantee.
    unsafe {
        d.cmd_pipeline_barrier(cb, all, transfer, vk::DependencyFlags::empty(), &[], &[before], &[]);
        write_table(d, cb, table, words);
        d.cmd_pipeline_barrier(cb, transfer, all, vk::DependencyFlags::empty(), &[], &[after], &[]);
    }
}

/// The transfers of [`record_table`].
///
/// # Safety
/// As [`record_table`].
unsafe fn write_table(d: &ash::Device, cb: vk::CommandBuffer, table: &Table, words: Option<&[u32]>) {
    // SAFETY: the caller's guarantee.
    unsafe {
        match words {
            None => d.cmd_fill_buffer(cb, table.buffer, 0, vk::WHOLE_SIZE, 0),
            Some(w) => {
                let bytes: Vec<u8> = w.iter().flat_map(|w| w.to_le_bytes()).collect();
                for (k, chunk) in bytes.chunks(65536).enumerate() {
                    d.cmd_update_buffer(cb, table.buffer, k as u64 * 65536, chunk);
                }
            }
        }
    }
}

/// After a density-map pass: the tables of its subsampled attachments that
/// it did not pack go back to the identity (it stored them at full
/// resolution).
///
/// # Safety
/// `cb` is recording outside a render pass.
pub(super) unsafe fn reset_unpacked(f: &Fdm, cb: vk::CommandBuffer, images: &[vk::Image], packed: &[vk::Image]) {
    for image in images {
        if packed.contains(image) {
            continue;
        }
        if let Some(t) = f.subsampled.table(*image) {
            // SAFETY: the caller's guarantee.
            unsafe { record_table(f, cb, &t, None, true) };
        }
    }
}

/// A packed attachment of a pass: its index, its image's table and the words to write there.
pub(super) struct Packed {
    pub attachment: usize,
    pub image: vk::Image,
    table: Arc<Table>,
    words: Vec<u32>,
}

/// The composites of a pass (its attachments `atts`, framebuffer `extent`,
/// `render_area`, single-view) whose attachments can be stored packed: a
/// subsampled image's only level and layer, single-sampled colour in a 2D
/// view, stored, not loaded, the render area and the framebuffer its whole
/// extent, every rectangle on the table's cells; packing on for the device.
pub(super) fn packable(
    f: &Fdm,
    composites: &[super::replay_plan::Composite],
    atts: &[Option<super::model::Att>],
    (extent, render_area, single_view): ((u32, u32), vk::Rect2D, bool),
) -> Vec<Packed> {
    if !single_view || !f.subsampled.packs() || f.controls.without_packed_subsampled {
        return Vec::new();
    }
    let whole = render_area.offset == vk::Offset2D::default()
        && (render_area.extent.width, render_area.extent.height) == extent;
    let mut out = Vec::new();
    for c in composites {
        let Some(a) = atts[c.attachment].as_ref() else { continue };
        let Some(info) = f.images.lock().get(&a.image).copied() else { continue };
        let fits = info.subsampled
            && !info.loaded
            && whole
            && (info.extent.width, info.extent.height) == extent
            && a.range.aspect_mask == vk::ImageAspectFlags::COLOR
            && a.samples == vk::SampleCountFlags::TYPE_1
            && a.view_type == vk::ImageViewType::TYPE_2D
            && a.range.base_array_layer == 0
            && a.range.base_mip_level == 0
            && a.store
            && !a.load
            && a.usage.contains(vk::ImageUsageFlags::TRANSFER_DST)
            && c.draws.iter().all(|d| d.layer.is_none());
        if !fits {
            continue;
        }
        let Some(table) = f.table_for(a.image, extent) else { continue };
        let draws: Vec<((u32, u32), &[super::bins::Rect])> = c.draws.iter().map(|d| (d.area, &d.rects[..])).collect();
        if let Some(words) = table_words((table.cols, table.rows), extent, &draws) {
            if let Some(i) = f.images.lock().get_mut(&a.image) {
                i.packed = true;
            }
            out.push(Packed { attachment: c.attachment, image: a.image, table, words });
        }
    }
    out
}

/// A render pass without a density map begins on `views` (made only when
/// the device has a subsampled image; recording `cb`,
/// outside a render pass): a subsampled image among them is written at full
/// resolution, so it is never packed from now on, and where a pass recorded
/// before stored it packed its table goes back to the identity before this
/// pass (what this pass loads of it is read as stored: a warning).
///
/// # Safety
/// `cb` is recording outside a render pass; the views are alive.
pub(super) unsafe fn plain_pass(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    views: impl FnOnce() -> Vec<vk::ImageView>,
) {
    // Every render pass without a map comes here: nothing is looked up on a device without subsampled images.
    if !f.subsampled.any.load(Ordering::Acquire) {
        return;
    }
    let views = views();
    let images: Vec<vk::Image> = {
        let known = f.views.lock();
        views.iter().filter_map(|v| known.get(v).map(|v| v.image)).collect()
    };
    for image in images {
        let was_packed = {
            let mut all = f.images.lock();
            let Some(i) = all.get_mut(&image).filter(|i| i.subsampled) else { continue };
            i.loaded = true;
            std::mem::take(&mut i.packed)
        };
        if !was_packed {
            continue;
        }
        dev.log().log_once(
            crate::settings::LogLevel::Warn,
            id::FDM_SUBSAMPLED,
            "plain",
            "a render pass without a density map renders to a subsampled image a density-map pass stored packed: \
             its table goes back to the identity, what the pass loads of it is read as stored (packing is off for \
             that image from now on)",
        );
        if let Some(t) = f.subsampled.table(image) {
            // SAFETY: the caller's guarantee.
            unsafe { record_table(f, cb, &t, None, true) };
        }
    }
}

/// A density-map pass that loads subsampled attachments (`atts`): they are
/// never packed from now on; where a pass recorded before stored one packed,
/// this pass's downscales read it as stored (a warning: the layer has no
/// unpacking step; a framebuffer made with a loading render pass marks its
/// images before any pass, dynamic rendering only when a loading pass is
/// recorded).
pub(super) fn note_loads(dev: &DeviceCore, f: &Fdm, atts: &[Option<super::model::Att>]) {
    let mut images = f.images.lock();
    for a in atts.iter().flatten().filter(|a| a.load) {
        let Some(i) = images.get_mut(&a.image).filter(|i| i.subsampled) else { continue };
        i.loaded = true;
        if i.packed {
            dev.log().log_once(
                crate::settings::LogLevel::Warn,
                id::FDM_SUBSAMPLED,
                "loaded",
                "a density-map pass loads a subsampled attachment an earlier pass stored packed: its loaded contents \
                 are read as stored (packing is off for that image from now on)",
            );
        }
    }
}

/// The debug line of a pass that stored `packed` attachments packed.
pub(super) fn log_packed(dev: &DeviceCore, packed: &[usize]) {
    if !packed.is_empty() {
        dev.log().debug(
            id::FDM_PLAN,
            &format!(
                "{} subsampled attachment(s) stored packed: each rectangle's texels 1:1 at its origin, the bin table written",
                packed.len()
            ),
        );
    }
}

/// Records the tables of `packed`, between the replays' first barrier
/// (every earlier command, the table's earlier readers among them, before
/// it) and their last (everything after it waits for it).
///
/// # Safety
/// `cb` is recording outside a render pass, between those barriers.
pub(super) unsafe fn record_packed(f: &Fdm, cb: vk::CommandBuffer, packed: &[Packed]) {
    for p in packed {
        // SAFETY: the caller's guarantee; the table is alive (held).
        unsafe { record_table(f, cb, &p.table, Some(&p.words), false) };
    }
}

/// At the end of density-map pass `pass` (recording `cb` outside a render
/// pass): the tables of the subsampled attachments it stored but did not
/// pack go back to the identity.
///
/// # Safety
/// `cb` is recording outside a render pass; the pass's attachments are alive.
pub(super) unsafe fn after_pass(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, pass: &super::model::Pass) {
    if !f.subsampled.any.load(Ordering::Acquire) {
        return;
    }
    let Ok((atts, ..)) = super::model::attachments(f, &pass.begin) else { return };
    note_loads(dev, f, &atts);
    if f.subsampled.tables.lock().is_empty() {
        return;
    }
    let images: Vec<vk::Image> = atts.iter().flatten().filter(|a| a.store).map(|a| a.image).collect();
    // SAFETY: the caller's guarantee.
    unsafe { reset_unpacked(f, cb, &images, &pass.packed) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fdm::bins::Rect;

    fn r(x: u32, y: u32, w: u32, h: u32) -> Rect {
        Rect { x, y, w, h }
    }

    #[test]
    fn the_table_names_each_cells_area_and_offset() {
        // A 32x16 image: the left half at 1x1, the right half at 4x2.
        let one = [r(0, 0, 16, 16)];
        let coarse = [r(16, 0, 16, 16)];
        let e = |w, h| (w, h);
        let words = table_words((4, 2), (32, 16), &[(e(1, 1), &one), (e(4, 2), &coarse)]).unwrap();
        // 4x2 at x 16: log2 (2, 1), offset (16 − 4, 0 − 0) = (12, 0).
        let w = 2 | (1 << 2) | (12 << 4);
        assert_eq!(words, vec![0, 0, w, w, 0, 0, w, w]);
    }

    #[test]
    fn rectangles_off_the_cells_cannot_be_packed() {
        let e = |w, h| (w, h);
        assert!(table_words((4, 2), (32, 16), &[(e(2, 2), &[r(4, 0, 12, 16)])]).is_none());
        assert!(table_words((4, 2), (32, 16), &[(e(2, 2), &[r(8, 0, 12, 16)])]).is_none());
        // Ending at the image's edge is fine.
        assert!(table_words((4, 2), (30, 16), &[(e(2, 2), &[r(8, 0, 22, 16)])]).is_some());
    }
}
