//! A lavapipe workaround: image views destroyed while a descriptor set still
//! holds them are destroyed later (`defer_view_destruction`, `auto`: on
//! llvmpipe where the layer emulates something).
//!
//! lavapipe 22.3 reads every image descriptor of a set when a command buffer
//! that binds the set executes — also those of bindings no pipeline uses.
//! Vulkan lets an application destroy an image view (and its image) that a
//! set still names, as long as nothing uses that binding any more; lavapipe
//! then reads the freed view and image on its queue thread, and crashes when
//! the memory was reused (nvpro's OIT sample, switching from its spinlock
//! algorithm to any other: `docs/investigations/issue-36-oit-crash.md`).
//!
//! The layer keeps, per descriptor set, the image views its image bindings
//! hold (writes, copies, template updates), and:
//! - `vkDestroyImageView` of a view a live set still holds is not sent down
//!   yet: the view is kept (a *deferred* view);
//! - `vkDestroyImage` of an image a deferred view was made from is kept too;
//! - when the last set holding a deferred view lets it go (the binding is
//!   written again, the set freed, its pool reset or destroyed), the view
//!   goes down, and its image after it where the application destroyed that
//!   too; `vkDestroyDevice` sends down whatever is left, before the device.
//!
//! Sets are not in use by pending work when the application writes, frees or
//! resets them (the spec's rule), so nothing the GPU still reads is
//! destroyed early. Memory the application frees is not kept: lavapipe does
//! not read an image's memory for a binding no shader uses.

use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::generated::args;
use ash::vk;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};

/// A binding element of a set: (binding, array element).
type Slot = (u32, u32);

#[derive(Default)]
struct State {
    /// The image of each live view (from vkCreateImageView).
    view_image: HashMap<vk::ImageView, vk::Image>,
    /// Per set, the views its image bindings hold.
    sets: HashMap<vk::DescriptorSet, HashMap<Slot, vk::ImageView>>,
    /// Per pool, its sets the layer tracks.
    pools: HashMap<vk::DescriptorPool, HashSet<vk::DescriptorSet>>,
    /// How many set elements hold each view.
    holders: HashMap<vk::ImageView, u32>,
    /// Per image, how many of its views a set holds (a deferred view is
    /// always a held one: it goes when the last holder lets it go).
    held_views: HashMap<vk::Image, u32>,
    /// Views the application destroyed while a set held them.
    deferred: HashSet<vk::ImageView>,
    /// Images the application destroyed while a deferred view was made from them.
    deferred_images: HashSet<vk::Image>,
    /// Template entries that write image descriptors: (binding, first element,
    /// count, offset, stride), by template (`vkCreateDescriptorUpdateTemplate`).
    templates: HashMap<vk::DescriptorUpdateTemplate, Vec<(u32, u32, u32, usize, usize)>>,
}

/// What to send down after a change: views, then images.
#[derive(Default)]
struct Released {
    views: Vec<vk::ImageView>,
    images: Vec<vk::Image>,
}

impl State {
    fn hold(&mut self, set: vk::DescriptorSet, slot: Slot, view: Option<vk::ImageView>, out: &mut Released) {
        let slots = self.sets.entry(set).or_default();
        let old = match view {
            Some(v) => slots.insert(slot, v),
            None => slots.remove(&slot),
        };
        if let Some(v) = view {
            let n = self.holders.entry(v).or_default();
            *n += 1;
            if *n == 1 {
                if let Some(image) = self.view_image.get(&v) {
                    *self.held_views.entry(*image).or_default() += 1;
                }
            }
        }
        if let Some(o) = old {
            self.release(o, out);
        }
    }

    /// One holder of `view` fewer: where it was the last and the view is
    /// deferred, the view (and its deferred image) go down.
    fn release(&mut self, view: vk::ImageView, out: &mut Released) {
        let Some(n) = self.holders.get_mut(&view) else { return };
        *n -= 1;
        if *n > 0 {
            return;
        }
        self.holders.remove(&view);
        if let Some(image) = self.view_image.get(&view) {
            if let Some(k) = self.held_views.get_mut(image) {
                *k -= 1;
                if *k == 0 {
                    self.held_views.remove(image);
                }
            }
        }
        if self.deferred.remove(&view) {
            out.views.push(view);
            if let Some(image) = self.view_image.remove(&view) {
                self.release_image(image, out);
            }
        }
    }

    /// Whether a set holds a view of `image` (held or deferred).
    fn image_kept(&self, image: vk::Image) -> bool {
        self.held_views.contains_key(&image)
    }

    /// A deferred `image` goes down once no view of it is held or deferred.
    fn release_image(&mut self, image: vk::Image, out: &mut Released) {
        if !self.image_kept(image) && self.deferred_images.remove(&image) {
            out.images.push(image);
        }
    }

    fn forget_set(&mut self, set: vk::DescriptorSet, out: &mut Released) {
        for (_, v) in self.sets.remove(&set).unwrap_or_default() {
            self.release(v, out);
        }
    }
}

/// The device's record of the views its descriptor sets hold.
#[derive(Default)]
pub struct DeferredViews {
    state: Mutex<State>,
}

fn holds_view(t: vk::DescriptorType) -> bool {
    matches!(
        t,
        vk::DescriptorType::SAMPLED_IMAGE
            | vk::DescriptorType::STORAGE_IMAGE
            | vk::DescriptorType::COMBINED_IMAGE_SAMPLER
            | vk::DescriptorType::INPUT_ATTACHMENT
    )
}

impl DeferredViews {
    /// Where the setting asks for it (`auto`: llvmpipe, on a device where
    /// the layer emulates something).
    pub fn for_device(c: &crate::device::Creation, emulates: bool) -> Option<DeferredViews> {
        let on = crate::settings::switch(c.inst.settings.defer_view_destruction, emulates && c.facts.is_llvmpipe());
        on.then(DeferredViews::default)
    }

    /// Sends down what `released` holds: views first, then their images.
    fn send_down(core: &DeviceCore, released: Released) {
        for v in released.views {
            // SAFETY: a view the application destroyed (its call was deferred), which no live set holds any
            // more and no pending work uses (the sets that held it were written, freed or reset: not in use).
            unsafe { (core.fns.fp_v1_0().destroy_image_view)(core.handle, v, std::ptr::null()) };
        }
        for i in released.images {
            // SAFETY: as above, the image of such views, which the application destroyed too.
            unsafe { (core.fns.fp_v1_0().destroy_image)(core.handle, i, std::ptr::null()) };
        }
    }

    /// `vkCreateImageView` (created): the view's image.
    pub fn note_view(&self, info: &vk::ImageViewCreateInfo, view: vk::ImageView) {
        self.state.lock().view_image.insert(view, info.image);
    }

    /// `vkCreateDescriptorUpdateTemplate` (created): its image entries.
    ///
    /// # Safety
    /// `info` is a valid create info (its entries array holds its count).
    pub unsafe fn note_template(&self, info: &vk::DescriptorUpdateTemplateCreateInfo, t: vk::DescriptorUpdateTemplate) {
        // SAFETY: VUID-VkDescriptorUpdateTemplateCreateInfo-pDescriptorUpdateEntries-parameter.
        let entries = unsafe { slice(info.p_descriptor_update_entries, info.descriptor_update_entry_count) };
        let images = entries
            .iter()
            .filter(|e| holds_view(e.descriptor_type))
            .map(|e| (e.dst_binding, e.dst_array_element, e.descriptor_count, e.offset, e.stride))
            .collect();
        if info.template_type == vk::DescriptorUpdateTemplateType::DESCRIPTOR_SET {
            self.state.lock().templates.insert(t, images);
        }
    }

    pub fn forget_template(&self, t: vk::DescriptorUpdateTemplate) {
        self.state.lock().templates.remove(&t);
    }

    /// A pool reset or destroyed: its sets let their views go.
    fn forget_pool(&self, core: &DeviceCore, pool: vk::DescriptorPool) {
        let mut out = Released::default();
        {
            let mut st = self.state.lock();
            for set in st.pools.remove(&pool).unwrap_or_default() {
                st.forget_set(set, &mut out);
            }
        }
        DeferredViews::send_down(core, out);
    }

    /// `vkDestroyDevice`: every deferred view and image, before the device.
    pub fn destroy(&self, core: &DeviceCore) {
        let mut st = self.state.lock();
        let released = Released { views: st.deferred.drain().collect(), images: st.deferred_images.drain().collect() };
        drop(st);
        DeferredViews::send_down(core, released);
    }
}

/// `vkDestroyImageView`: deferred while a set holds the view; the view's
/// image goes down after it where its destruction was deferred.
pub fn destroy_image_view(core: &DeviceCore, s: &DeferredViews, a: args::DestroyImageView) {
    let view = a.image_view();
    let mut out = Released::default();
    {
        let mut st = s.state.lock();
        if st.holders.contains_key(&view) {
            st.deferred.insert(view);
            return;
        }
        if let Some(image) = st.view_image.remove(&view) {
            st.release_image(image, &mut out);
        }
    }
    a.next();
    DeferredViews::send_down(core, out);
}

/// `vkDestroyImage`: deferred while a view of it is held by a set or deferred.
pub fn destroy_image(_: &DeviceCore, s: &DeferredViews, a: args::DestroyImage) {
    let image = a.image();
    {
        let mut st = s.state.lock();
        if st.image_kept(image) {
            st.deferred_images.insert(image);
            return;
        }
    }
    a.next()
}

/// `vkResetDescriptorPool`: as [`free_descriptor_sets`] for all its sets.
pub fn reset_descriptor_pool(core: &DeviceCore, s: &DeferredViews, a: args::ResetDescriptorPool) -> vk::Result {
    let pool = a.descriptor_pool();
    let r = a.next();
    s.forget_pool(core, pool);
    r
}

/// `vkDestroyDescriptorPool`: as [`reset_descriptor_pool`].
pub fn destroy_descriptor_pool(core: &DeviceCore, s: &DeferredViews, a: args::DestroyDescriptorPool) {
    let pool = a.descriptor_pool();
    a.next();
    s.forget_pool(core, pool);
}

/// `vkAllocateDescriptorSets`: the sets of each pool.
pub fn allocate_descriptor_sets(_: &DeviceCore, s: &DeferredViews, a: args::AllocateDescriptorSets) -> vk::Result {
    let r = a.next();
    if r == vk::Result::SUCCESS {
        // SAFETY: the command succeeded.
        let sets = unsafe { a.written_descriptor_sets() };
        s.state.lock().pools.entry(a.allocate_info().descriptor_pool).or_default().extend(sets.iter().copied());
    }
    r
}

/// `vkFreeDescriptorSets`: their views let go.
pub fn free_descriptor_sets(core: &DeviceCore, s: &DeferredViews, a: args::FreeDescriptorSets) -> vk::Result {
    let r = a.next();
    let mut out = Released::default();
    {
        let mut st = s.state.lock();
        for set in a.descriptor_sets() {
            if let Some(p) = st.pools.get_mut(&a.descriptor_pool()) {
                p.remove(set);
            }
            st.forget_set(*set, &mut out);
        }
    }
    DeferredViews::send_down(core, out);
    r
}

/// `vkUpdateDescriptorSets`: the views each written or copied image element
/// holds; views let go where deferred and no longer held.
pub fn update_descriptor_sets(core: &DeviceCore, s: &DeferredViews, a: args::UpdateDescriptorSets) {
    a.next();
    let mut out = Released::default();
    {
        let mut st = s.state.lock();
        for w in a.descriptor_writes() {
            // A write of another type replaces what the elements held (only where the set holds views in that
            // binding: an inline uniform block's count is in bytes).
            let held = |st: &State| st.sets.get(&w.dst_set).is_some_and(|m| m.keys().any(|(b, _)| *b >= w.dst_binding));
            if !holds_view(w.descriptor_type) && !held(&st) {
                continue;
            }
            let images = if holds_view(w.descriptor_type) {
                // SAFETY: VUID-VkWriteDescriptorSet-descriptorType-00322 and -00326: image types take
                // `descriptorCount` image infos.
                Some(unsafe { slice(w.p_image_info, w.descriptor_count) })
            } else {
                None
            };
            for i in 0..w.descriptor_count {
                // Elements past the binding's count go on into the next binding: kept under this binding, a
                // stale record only defers a view longer (until the set goes).
                let view = images.and_then(|v| v.get(i as usize)).map(|info| info.image_view);
                let view = view.filter(|v| *v != vk::ImageView::null());
                st.hold(w.dst_set, (w.dst_binding, w.dst_array_element + i), view, &mut out);
            }
        }
        for c in a.descriptor_copies() {
            for i in 0..c.descriptor_count {
                let from = (c.src_binding, c.src_array_element + i);
                let view = st.sets.get(&c.src_set).and_then(|m| m.get(&from)).copied();
                st.hold(c.dst_set, (c.dst_binding, c.dst_array_element + i), view, &mut out);
            }
        }
    }
    DeferredViews::send_down(core, out);
}

/// `vkUpdateDescriptorSetWithTemplate`: as [`update_descriptor_sets`], for
/// the template's image entries.
pub fn update_descriptor_set_with_template(
    core: &DeviceCore,
    s: &DeferredViews,
    a: args::UpdateDescriptorSetWithTemplate,
) {
    a.next();
    let (set, data) = (a.descriptor_set(), a.p_data());
    let mut out = Released::default();
    {
        let mut st = s.state.lock();
        let entries = st.templates.get(&a.descriptor_update_template()).cloned().unwrap_or_default();
        for (binding, first, count, offset, stride) in entries {
            for i in 0..count {
                // SAFETY: VUID-vkUpdateDescriptorSetWithTemplate-pData-01685: `data` holds, for each image
                // entry, `descriptorCount` VkDescriptorImageInfo at `offset + i * stride`.
                let info = unsafe {
                    std::ptr::read_unaligned(
                        (data as *const u8).add(offset + i as usize * stride) as *const vk::DescriptorImageInfo
                    )
                };
                let view = Some(info.image_view).filter(|v| *v != vk::ImageView::null());
                st.hold(set, (binding, first + i), view, &mut out);
            }
        }
    }
    DeferredViews::send_down(core, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

    fn view(n: u64) -> vk::ImageView {
        vk::ImageView::from_raw(n)
    }

    /// A view a set holds is deferred; writing the binding again releases it
    /// and its image (destroyed by the application meanwhile), in order.
    #[test]
    fn deferred_until_the_binding_is_written_again() {
        let mut st = State::default();
        let (set, v1, v2, image) = (vk::DescriptorSet::from_raw(1), view(10), view(11), vk::Image::from_raw(20));
        st.view_image.insert(v1, image);
        let mut out = Released::default();
        st.hold(set, (3, 0), Some(v1), &mut out);
        assert!(out.views.is_empty());
        // The application destroys the view and its image.
        assert!(st.holders.contains_key(&v1));
        st.deferred.insert(v1);
        st.deferred_images.insert(image);
        st.hold(set, (3, 0), Some(v2), &mut out);
        assert_eq!(out.views, [v1]);
        assert_eq!(out.images, [image]);
        assert!(st.deferred.is_empty() && st.deferred_images.is_empty());
    }

    /// Two sets hold the view: it goes only when both let it go.
    #[test]
    fn every_holder_must_let_go() {
        let mut st = State::default();
        let (a, b, v) = (vk::DescriptorSet::from_raw(1), vk::DescriptorSet::from_raw(2), view(10));
        let mut out = Released::default();
        st.hold(a, (0, 0), Some(v), &mut out);
        st.hold(b, (0, 0), Some(v), &mut out);
        st.deferred.insert(v);
        st.forget_set(a, &mut out);
        assert!(out.views.is_empty());
        st.forget_set(b, &mut out);
        assert_eq!(out.views, [v]);
    }
}
