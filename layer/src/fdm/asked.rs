//! The candidate areas of passes planned on the GPU (`fdm_dynamic_areas`),
//! and what each density map has asked for so far.
//!
//! A pass whose map is dynamic or deferred is recorded once per candidate
//! area (`gpu_plan.rs`): nine areas are nine emissions of every draw,
//! whatever the map asks when the pass executes. The spec lets a fragment
//! be smaller than its texels ask, so fewer candidates are always right;
//! they only shade finer where a map asks for an area that is not one.
//!
//! - `all`: the nine.
//! - `square`: 1x1, 2x2 and 4x4.
//! - `asked` (the default): the areas that executed plans found the map's
//!   texels asking for, learned per map image. Each plan or-s the bit of
//!   every area a region asked for (before the candidates bit) into a word
//!   of its buffer and copies it into this map's word of a small
//!   host-visible buffer of the layer's (then a barrier to the host); a pass
//!   recorded later takes the union of every value read there, and 1x1.
//!   Until a plan with the map has executed — a map's first frame, a
//!   command buffer recorded once and submitted many times — the value is 0
//!   and all nine are candidates, so the Khronos CTS's density-map cases
//!   (one map, one recording) see every area exactly as asked. A map whose
//!   set of areas is stable (a foveated renderer's rings moving with the
//!   eye) costs the emissions of the areas it uses; one that starts asking
//!   for a new area gets it one executed frame later, finer meanwhile.
//!
//! The host reads a word the GPU may be writing: it is only a hint, never
//! needed for a right result (a torn or stale value picks other candidates,
//! each right). A map's word is forgotten with the image; past [`WORDS`]
//! maps the oldest word is taken over. Where the words cannot be made (no
//! memory), every map keeps all nine.

use super::{memory_type, Fdm};
use ash::vk;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Every area of [`super::AREAS`], by bit.
pub const ALL: u32 = 0x1ff;
/// 1x1, 2x2 and 4x4.
pub const SQUARE: u32 = 1 | 1 << 4 | 1 << 8;
/// Maps whose asked areas are kept at once.
pub const WORDS: u32 = 1024;

/// `fdm_dynamic_areas`.
pub enum DynamicAreas {
    All,
    Square,
    Asked(Asked),
}

/// Where a plan copies the areas its regions asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AskedWord {
    pub buffer: vk::Buffer,
    pub offset: u64,
}

/// The learned areas of `fdm_dynamic_areas=asked`.
#[derive(Default)]
pub struct Asked {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The host-visible words (made at first use), mapped for good.
    words: Option<Words>,
    /// Per map image: its word and the union of what was read there.
    maps: HashMap<vk::Image, (u32, u32)>,
    /// Which image holds each word, and the next word to take.
    owners: Vec<Option<vk::Image>>,
    next: u32,
    /// The words could not be made: all nine from then on, not tried again each pass.
    failed: bool,
}

struct Words {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// The mapping's address (host-coherent, `WORDS` words).
    at: usize,
}

impl DynamicAreas {
    pub fn from_setting(value: &str) -> DynamicAreas {
        match value {
            "all" => DynamicAreas::All,
            "square" => DynamicAreas::Square,
            _ => DynamicAreas::Asked(Asked::default()),
        }
    }

    /// The candidate areas (bit `i`: area `i` of [`super::AREAS`]) of a
    /// pass planned on the GPU that reads density map `map`, and where its
    /// plan copies the areas asked (`asked` only; `None` also where the
    /// layer's words cannot be made: then all nine are candidates).
    pub(super) fn candidates(&self, f: &Fdm, map: vk::Image) -> (u32, Option<AskedWord>) {
        match self {
            DynamicAreas::All => (ALL, None),
            DynamicAreas::Square => (SQUARE, None),
            DynamicAreas::Asked(a) => a.candidates(f, map),
        }
    }

    /// Forgets a destroyed image's word.
    pub(super) fn forget(&self, image: vk::Image) {
        if let DynamicAreas::Asked(a) = self {
            let mut inner = a.inner.lock();
            if let Some((word, _)) = inner.maps.remove(&image) {
                inner.owners[word as usize] = None;
            }
        }
    }

    /// Destroys the words.
    ///
    /// # Safety
    /// The device is idle.
    pub(super) unsafe fn destroy(&self, f: &Fdm) {
        if let DynamicAreas::Asked(a) = self {
            if let Some(w) = a.inner.lock().words.take() {
                // SAFETY: the layer's own objects; the device is idle (the caller's guarantee).
                unsafe {
                    f.below.destroy_buffer(w.buffer, None);
                    f.below.free_memory(w.memory, None);
                }
            }
        }
    }
}

impl Asked {
    fn candidates(&self, f: &Fdm, map: vk::Image) -> (u32, Option<AskedWord>) {
        let mut inner = self.inner.lock();
        if inner.failed {
            return (ALL, None);
        }
        if inner.words.is_none() {
            match make_words(f) {
                Some(w) => {
                    inner.words = Some(w);
                    inner.owners = vec![None; WORDS as usize];
                }
                None => {
                    inner.failed = true;
                    return (ALL, None);
                }
            }
        }
        let at = inner.words.as_ref().map_or(0, |w| w.at) as *mut u32;
        let (word, learned) = match inner.maps.get(&map) {
            Some(&(word, learned)) => {
                // SAFETY: `word` < WORDS, inside the mapping; a volatile read of a word the GPU may be writing
                // (a hint: any value is a right set of candidates).
                let read = unsafe { std::ptr::read_volatile(at.add(word as usize)) } & ALL;
                (word, learned | read)
            }
            None => {
                let word = inner.next;
                inner.next = (word + 1) % WORDS;
                if let Some(old) = inner.owners[word as usize].replace(map) {
                    inner.maps.remove(&old);
                }
                // SAFETY: as above; the word starts at nothing asked.
                unsafe { std::ptr::write_volatile(at.add(word as usize), 0) };
                (word, 0)
            }
        };
        inner.maps.insert(map, (word, learned));
        let buffer = inner.words.as_ref().map_or(vk::Buffer::null(), |w| w.buffer);
        let mask = if learned == 0 { ALL } else { learned | 1 };
        (mask, Some(AskedWord { buffer, offset: word as u64 * 4 }))
    }
}

/// The host-visible, host-coherent buffer of [`WORDS`] words, mapped; `None`
/// where it cannot be made.
fn make_words(f: &Fdm) -> Option<Words> {
    let d = &f.below;
    let mut w = Words { buffer: vk::Buffer::null(), memory: vk::DeviceMemory::null(), at: 0 };
    // SAFETY: create infos built here from locals; the handles are the layer's own, destroyed on failure (null
    // ones are ignored); the mapping covers the whole allocation and stays until the words are destroyed.
    let r = (|| unsafe {
        w.buffer = d.create_buffer(
            &vk::BufferCreateInfo::default().size(WORDS as u64 * 4).usage(vk::BufferUsageFlags::TRANSFER_DST),
            None,
        )?;
        let req = d.get_buffer_memory_requirements(w.buffer);
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let ty = memory_type(f, req.memory_type_bits, host).ok_or(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)?;
        w.memory = d.allocate_memory(
            &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty),
            None,
        )?;
        d.bind_buffer_memory(w.buffer, w.memory, 0)?;
        let p = d.map_memory(w.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())? as *mut u32;
        std::ptr::write_bytes(p, 0, WORDS as usize);
        w.at = p as usize;
        Ok::<(), vk::Result>(())
    })();
    if r.is_err() {
        // SAFETY: the layer's own objects, just made, never used (freeing the memory unmaps it).
        unsafe {
            d.destroy_buffer(w.buffer, None);
            d.free_memory(w.memory, None);
        }
        return None;
    }
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_masks_name_the_areas() {
        let areas = |m: u32| -> Vec<(u32, u32)> {
            (0..9).filter(|i| m >> i & 1 == 1).map(|i| super::super::AREAS[i]).collect()
        };
        assert_eq!(areas(SQUARE), [(1, 1), (2, 2), (4, 4)]);
        assert_eq!(areas(ALL).len(), 9);
    }
}
