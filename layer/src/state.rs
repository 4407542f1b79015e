//! Per-instance, per-physical-device and per-device state, in maps keyed by
//! the dispatch key (instances, devices) or the handle (physical devices),
//! guarded with `parking_lot` locks.
//!
//! Device lookups are on every hooked `vkCmd*` call, so a thread keeps the
//! last device it looked up in a thread-local cache, validated by a global
//! generation number that changes whenever a device is destroyed.

use crate::device::DeviceCore;
pub use crate::instance::{InstanceData, InstanceExtFns};
use crate::plan::{DriverFacts, Plan};
use ash::vk;
use parking_lot::RwLock;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

/// A device as the registry holds it: the core every capability may use,
/// and the state of each capability the device runs (`None` where it does
/// not). Only the dispatch table (`dispatch.rs`, above the registry) hands a
/// capability its state.
pub struct DeviceData {
    pub core: DeviceCore,
    /// `Some` when the layer provides interlock on this device.
    pub interlock: Option<crate::interlock::DeviceInterlock>,
    /// The varying linker, where it runs: the SPIR-V of every module, kept
    /// from vkCreateShaderModule for linking at pipeline creation.
    pub varyings: Option<crate::link::Linker>,
    /// 1x1 shading rate for interlock pipelines, where the architecture asks.
    pub shading_rate: Option<crate::shading_rate::ForceOneByOne>,
    /// The density-map emulation, where the application enabled it.
    pub fdm: Option<crate::fdm::Fdm>,
    /// The locked strategies' (spinlock, ordered) reserved set and what binds it, where one runs.
    pub reserved: Option<crate::interlock::reserved::ReservedSet>,
    /// Image views destroyed while a set holds them, kept (lavapipe).
    pub views: Option<crate::deferred_views::DeferredViews>,
}

impl std::ops::Deref for DeviceData {
    type Target = DeviceCore;
    fn deref(&self) -> &DeviceCore {
        &self.core
    }
}

impl DeviceData {
    /// Whether SPIR-V reaching the driver must go through the layer: the
    /// application enabled a capability the layer emulates in shaders.
    pub fn rewrites_shaders(&self) -> bool {
        self.interlock.is_some() || self.varyings.is_some()
    }

    /// The device hooks in place, for the log.
    pub fn hooks_description(&self) -> &'static str {
        match (self.rewrites_shaders(), self.plan.force_hooks) {
            (_, true) => "all (force_enable)",
            _ if self.fdm.as_ref().is_some_and(|f| f.is_binned()) => {
                "resources, pipelines, barriers, render passes and the commands inside them (fragment density map, binned)"
            }
            _ if self.fdm.is_some() => "resources, pipelines, barriers and render passes (fragment density map, baseline)",
            _ if self.shading_rate.is_some() => {
                "shader and pipeline creation, pipeline binds, shading rate (1x1 with interlock)"
            }
            _ if self.reserved.is_some() => "shader creation, pipeline layouts, pipeline binds and draws (spinlock)",
            _ if self.interlock.is_none() => {
                "shader, layout and pipeline creation (varying linking); commands go straight to the driver"
            }
            (true, false) => "shader creation",
            (false, false) => "none (pass-through)",
        }
    }
}

static INSTANCES: LazyLock<RwLock<HashMap<usize, Arc<InstanceData>>>> = LazyLock::new(Default::default);
static PHYSICAL_DEVICES: LazyLock<RwLock<HashMap<u64, Arc<PhysicalDeviceData>>>> = LazyLock::new(Default::default);
static DEVICES: LazyLock<RwLock<HashMap<usize, Arc<DeviceData>>>> = LazyLock::new(Default::default);
static DEVICE_GENERATION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (dispatch key, generation, device) of this thread's last lookup.
    static LAST_DEVICE: Cell<(usize, u64, *const DeviceData)> = const { Cell::new((0, 0, std::ptr::null())) };
}

pub fn insert_instance(key: usize, data: Arc<InstanceData>) {
    INSTANCES.write().insert(key, data);
}

/// Frees an empty map's table. The loader unloads the layer when the last
/// instance is destroyed; a table left allocated in a static would leak on
/// every load/unload cycle.
fn release_if_empty<K, V>(map: &mut HashMap<K, V>) {
    if map.is_empty() {
        *map = HashMap::new();
    }
}

pub fn remove_instance(key: usize) -> Option<Arc<InstanceData>> {
    let data = {
        let mut map = INSTANCES.write();
        let data = map.remove(&key);
        release_if_empty(&mut map);
        data?
    };
    let mut pds = PHYSICAL_DEVICES.write();
    pds.retain(|_, pd| !Arc::ptr_eq(&pd.instance, &data));
    release_if_empty(&mut pds);
    Some(data)
}

pub fn instance(key: usize) -> Option<Arc<InstanceData>> {
    INSTANCES.read().get(&key).cloned()
}

/// A physical device and, computed once, what the layer does on it.
pub struct PhysicalDeviceData {
    pub handle: vk::PhysicalDevice,
    pub instance: Arc<InstanceData>,
    decided: std::sync::OnceLock<(DriverFacts, Plan)>,
}

impl PhysicalDeviceData {
    /// The driver's facts and the plan for them (asked once, on first use).
    pub fn decided(&self) -> &(DriverFacts, Plan) {
        self.decided.get_or_init(|| {
            // SAFETY: the handle was enumerated from this instance, which is alive
            // while this entry is in the map (`remove_instance` drops the
            // instance's physical devices with it), as DriverFacts::query requires.
            let facts = unsafe { DriverFacts::query(&self.instance.fns, self.instance.api_version, self.handle) };
            let plan = Plan::new(&self.instance.settings, &facts, self.instance.profile.clone());
            (facts, plan)
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.decided().1
    }
}

pub fn insert_physical_devices(inst: &Arc<InstanceData>, pds: &[vk::PhysicalDevice]) {
    let mut map = PHYSICAL_DEVICES.write();
    for pd in pds {
        map.entry(vk::Handle::as_raw(*pd)).or_insert_with(|| {
            Arc::new(PhysicalDeviceData { handle: *pd, instance: inst.clone(), decided: Default::default() })
        });
    }
}

pub fn physical_device(pd: vk::PhysicalDevice) -> Option<Arc<PhysicalDeviceData>> {
    PHYSICAL_DEVICES.read().get(&vk::Handle::as_raw(pd)).cloned()
}

pub fn insert_device(key: usize, data: Arc<DeviceData>) {
    DEVICES.write().insert(key, data);
}

pub fn remove_device(key: usize) -> Option<Arc<DeviceData>> {
    let mut map = DEVICES.write();
    let data = map.remove(&key);
    release_if_empty(&mut map);
    DEVICE_GENERATION.fetch_add(1, Ordering::AcqRel);
    data
}

/// The device a dispatch key belongs to.
///
/// The reference stays valid for the duration of the calling Vulkan command:
/// the device cannot be destroyed meanwhile, because `vkDestroyDevice`
/// requires external synchronization of `device` and the destruction of every
/// child object first (VUID-vkDestroyDevice-device-05137), so no command on
/// the device or its queues and command buffers can run concurrently.
pub fn device_by_key<'a>(key: usize) -> Option<&'a DeviceData> {
    let generation = DEVICE_GENERATION.load(Ordering::Acquire);
    let (k, g, p) = LAST_DEVICE.get();
    if k == key && g == generation {
        // SAFETY: see above; the generation proves no device was destroyed
        // since this pointer was taken from the map.
        return Some(unsafe { &*p });
    }
    let map = DEVICES.read();
    let arc = map.get(&key)?;
    let p = Arc::as_ptr(arc);
    LAST_DEVICE.set((key, generation, p));
    // SAFETY: as above; the map holds the Arc until vkDestroyDevice.
    Some(unsafe { &*p })
}

/// The device of any handle dispatched by a device (device, queue, command buffer).
#[inline]
pub fn device<'a, H: vk::Handle>(handle: H) -> &'a DeviceData {
    // SAFETY: every device command requires its first parameter to be a
    // valid handle (its "-parameter" valid usage, e.g.
    // VUID-vkCmdDraw-commandBuffer-parameter), and devices, queues and
    // command buffers are dispatchable (LoaderLayerInterface.md).
    let key = unsafe { crate::ffi::dispatch_key(handle) };
    device_by_key(key).expect("Overlap: a device command on a device the layer did not create")
}

pub fn device_arc(key: usize) -> Option<Arc<DeviceData>> {
    DEVICES.read().get(&key).cloned()
}
