//! What Overlap does on a given driver: the one decision shared by the layer
//! (at `vkCreateDevice`, to switch its hooks on or off) and by `overlap info`.
//!
//! Each capability is `Native` (the driver has it: pure pass-through),
//! `Emulated` (the layer provides it, naming how), or `Off` (not provided,
//! with the reason). A device gets the layer's hooks only when something is
//! `Emulated` or `force_enable` is set.

use crate::profile::Profile;
use crate::settings::Settings;
use ash::vk;
use std::ffi::CStr;
use std::fmt;

/// What the layer needs to know about a physical device.
#[derive(Clone, Debug)]
pub struct DriverFacts {
    pub device_name: String,
    pub vendor_id: u32,
    pub api_version: u32,
    /// `None` when the driver cannot report it (Vulkan 1.0 without
    /// `VK_KHR_driver_properties`).
    pub driver_id: Option<vk::DriverId>,
    pub driver_name: String,
    pub extensions: Vec<String>,
}

impl DriverFacts {
    /// Asks `instance` (the next layer, or the loader in the CLI) about `pd`.
    /// Uses `vkGetPhysicalDeviceProperties2` only where the instance's API
    /// version allows it, so nothing invalid is sent down.
    ///
    /// # Safety
    /// `pd` must belong to `instance`.
    pub unsafe fn query(instance: &ash::Instance, instance_api: u32, pd: vk::PhysicalDevice) -> DriverFacts {
        // SAFETY: `pd` belongs to `instance` (the caller's guarantee;
        // VUID-vkGetPhysicalDeviceProperties-physicalDevice-parameter); ash
        // passes its own valid output pointers.
        let props = unsafe { instance.get_physical_device_properties(pd) };
        // SAFETY: as above (VUID-vkEnumerateDeviceExtensionProperties-physicalDevice-parameter).
        let extensions: Vec<String> = unsafe { instance.enumerate_device_extension_properties(pd) }
            .unwrap_or_default()
            .iter()
            .map(|e| e.extension_name_as_c_str().unwrap_or(c"").to_string_lossy().into_owned())
            .collect();
        let has = |n: &str| extensions.iter().any(|e| e == n);
        let mut driver_id = None;
        let mut driver_name = String::new();
        let effective = instance_api.min(props.api_version);
        if vk::api_version_minor(effective) >= 2
            || (vk::api_version_minor(effective) >= 1 && has("VK_KHR_driver_properties"))
        {
            let mut driver = vk::PhysicalDeviceDriverProperties::default();
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
            // SAFETY: as above; instance and device are at least 1.1 here, so
            // the core command exists, and VkPhysicalDeviceDriverProperties is
            // core in 1.2 or the device has VK_KHR_driver_properties
            // (VUID-VkPhysicalDeviceProperties2-pNext-pNext).
            unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
            driver_id = Some(driver.driver_id);
            driver_name = driver.driver_name_as_c_str().unwrap_or(c"").to_string_lossy().into_owned();
        }
        DriverFacts {
            // SAFETY: `deviceName` is a null-terminated UTF-8 string in its
            // fixed-size array (VkPhysicalDeviceProperties, filled by the driver).
            device_name: unsafe { CStr::from_ptr(props.device_name.as_ptr()) }.to_string_lossy().into_owned(),
            vendor_id: props.vendor_id,
            api_version: props.api_version,
            driver_id,
            driver_name,
            extensions,
        }
    }

    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.iter().any(|e| e == name)
    }

    /// llvmpipe (lavapipe), by driver id or, without one, by Mesa's vendor id
    /// and device name.
    pub fn is_llvmpipe(&self) -> bool {
        match self.driver_id {
            Some(id) => id == vk::DriverId::MESA_LLVMPIPE,
            None => self.vendor_id == 0x10005 && self.device_name.starts_with("llvmpipe"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Capability {
    /// The driver provides it; the layer stays out of the way.
    Native,
    /// The layer provides it, this way.
    Emulated(How),
    /// Not provided, for this reason.
    Off(&'static str),
    /// Not exposed: the emulated architecture's profile does not have it.
    Hidden(String),
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Native => write!(f, "native (pass-through)"),
            Capability::Emulated(how) => write!(f, "emulated ({how})"),
            Capability::Off(why) => write!(f, "not provided ({why})"),
            Capability::Hidden(why) => write!(f, "hidden ({why})"),
        }
    }
}

/// The decision for one device.
#[derive(Clone, Debug)]
pub struct Plan {
    pub interlock: Capability,
    /// `VK_KHR_fragment_shading_rate`: never emulated, only exposed or hidden.
    pub shading_rate: Capability,
    pub fdm: Capability,
    /// `VK_VALVE_fragment_density_map_layered` is listed with the emulated
    /// FDM: the driver has what it depends on (Vulkan 1.4 or
    /// `VK_KHR_maintenance5`).
    pub fdm_layered: bool,
    pub varyings: Capability,
    pub force_hooks: bool,
    /// The emulated architecture, where one is set.
    pub profile: Option<std::sync::Arc<Profile>>,
    /// Extensions the driver lists that the profile hides.
    pub hidden_extensions: Vec<&'static str>,
    /// What the profile could not have, and why (for the log and `overlap info`).
    pub clamped: Vec<String>,
}

pub const SHADING_RATE_EXTENSION: &str = "VK_KHR_fragment_shading_rate";
pub const FDM_EXTENSION: &str = "VK_EXT_fragment_density_map";
pub const FDM_EXTENSION_NAME: &CStr = c"VK_EXT_fragment_density_map";
/// Listed with the emulated FDM.
pub const FDM2_EXTENSION_NAME: &CStr = c"VK_EXT_fragment_density_map2";
/// Listed with the emulated FDM: density offsets at the end of a pass.
pub const FDM_OFFSET_EXTENSION_NAME: &CStr = c"VK_EXT_fragment_density_map_offset";
/// Its Qualcomm original (render pass 2 only), the same structures.
pub const FDM_OFFSET_QCOM_EXTENSION_NAME: &CStr = c"VK_QCOM_fragment_density_map_offset";

/// How the layer provides a capability (the strategy, mode or level its
/// setting chose); shown in the plan's log line by its setting value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Interlock(InterlockStrategy),
    Fdm(FdmMode),
    Varyings(overlap_shaders::varyings::Level),
}

impl fmt::Display for How {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            How::Interlock(InterlockStrategy::Serialized) => "serialized",
            How::Interlock(InterlockStrategy::Spinlock) => "spinlock",
            How::Interlock(InterlockStrategy::Ordered) => "ordered",
            How::Fdm(FdmMode::Baseline) => "baseline",
            How::Fdm(FdmMode::Binned) => "binned",
            How::Varyings(overlap_shaders::varyings::Level::Safe) => "safe",
            How::Varyings(overlap_shaders::varyings::Level::Full) => "full",
        })
    }
}

/// How interlock is emulated (`interlock_strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterlockStrategy {
    /// The critical section's begin and end are removed: exact where the
    /// rasterizer shades overlapping fragments in primitive order (llvmpipe).
    Serialized,
    /// A per-pixel (or per-sample) lock in a storage image the layer owns.
    Spinlock,
    /// Fragment shaders that declare an ordered mode enter their sections in
    /// primitive order (count, then run: `overlap_shaders::ordered`); those
    /// that declare only unordered modes get the spinlock.
    Ordered,
}

impl InterlockStrategy {
    /// The strategy needs the spinlock capability's reserved set.
    pub fn locks(self) -> bool {
        matches!(self, InterlockStrategy::Spinlock | InterlockStrategy::Ordered)
    }
}

impl fmt::Display for InterlockStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        How::Interlock(*self).fmt(f)
    }
}

/// How the density map is emulated (`fdm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdmMode {
    /// Every pass at 1x1.
    Baseline,
    /// Capture and replay per fragment area.
    Binned,
}

pub const INTERLOCK_EXTENSION: &CStr = c"VK_EXT_fragment_shader_interlock";

/// How interlock is provided: `interlock_strategy`, and on `auto` the driver.
fn interlock(settings: &Settings, facts: &DriverFacts) -> Capability {
    let native = facts.has_extension(INTERLOCK_EXTENSION.to_str().unwrap());
    match settings.interlock_strategy {
        "native" if native => Capability::Native,
        "native" => Capability::Off("interlock_strategy=native, and the driver lacks it"),
        "serialized" => Capability::Emulated(How::Interlock(InterlockStrategy::Serialized)),
        "spinlock" => Capability::Emulated(How::Interlock(InterlockStrategy::Spinlock)),
        "ordered" => Capability::Emulated(How::Interlock(InterlockStrategy::Ordered)),
        _ if native => Capability::Native,
        _ if facts.is_llvmpipe() => Capability::Emulated(How::Interlock(InterlockStrategy::Serialized)),
        _ => Capability::Emulated(How::Interlock(InterlockStrategy::Ordered)),
    }
}

impl Plan {
    pub fn new(settings: &Settings, facts: &DriverFacts, profile: Option<std::sync::Arc<Profile>>) -> Plan {
        let interlock = interlock(settings, facts);
        let fdm = if facts.has_extension(FDM_EXTENSION) {
            Capability::Native
        } else if settings.fdm == "off" {
            Capability::Off("fdm=off")
        } else if settings.fdm == "baseline" {
            Capability::Emulated(How::Fdm(FdmMode::Baseline))
        } else {
            Capability::Emulated(How::Fdm(FdmMode::Binned))
        };
        let shading_rate = if facts.has_extension(SHADING_RATE_EXTENSION) {
            Capability::Native
        } else {
            Capability::Off("the driver lacks it")
        };
        let varyings = match settings.varyings {
            "off" => Capability::Off("varyings=off"),
            "full" => Capability::Emulated(How::Varyings(overlap_shaders::varyings::Level::Full)),
            _ => Capability::Emulated(How::Varyings(overlap_shaders::varyings::Level::Safe)),
        };
        let mut plan = Plan {
            interlock,
            shading_rate,
            fdm_layered: crate::vk_newer::fdm_layered_available(facts.api_version, |e| facts.has_extension(e)),
            fdm,
            varyings,
            force_hooks: settings.force_enable,
            profile: None,
            hidden_extensions: Vec::new(),
            clamped: Vec::new(),
        };
        if let Some(p) = profile {
            plan.apply_profile(&p);
            plan.profile = Some(p);
        }
        plan
    }

    /// Intersects each governed capability with the profile: what the
    /// profile lacks is hidden; what it has but cannot be honoured here is
    /// recorded in `clamped`.
    fn apply_profile(&mut self, p: &Profile) {
        let arch = p.arch.clone();
        for (name, cap) in [
            (INTERLOCK_EXTENSION.to_str().unwrap(), &mut self.interlock),
            (SHADING_RATE_EXTENSION, &mut self.shading_rate),
            (FDM_EXTENSION, &mut self.fdm),
        ] {
            let listed = p.has_extension(name);
            match (&*cap, listed) {
                (Capability::Native, false) => {
                    self.hidden_extensions.push(name);
                    *cap = Capability::Hidden(format!("the {arch} profile does not have {name}"));
                }
                (Capability::Emulated(_), false) => {
                    *cap = Capability::Hidden(format!("the {arch} profile does not have {name}"))
                }
                (Capability::Off(why), true) => {
                    self.clamped.push(format!("{name}: in the {arch} profile, but not available here ({why})"))
                }
                _ => {}
            }
        }
        // FDM2 extends FDM: hidden with it.
        if self.hidden_extensions.contains(&FDM_EXTENSION) {
            self.hidden_extensions.push("VK_EXT_fragment_density_map2");
            self.hidden_extensions.push("VK_EXT_fragment_density_map_offset");
            self.hidden_extensions.push("VK_QCOM_fragment_density_map_offset");
            self.hidden_extensions.push("VK_VALVE_fragment_density_map_layered");
        }
    }

    /// Interlock pipelines run at a 1x1 shading rate, and the driver has VRS
    /// for it to matter: the architecture says so (GFX10.3:
    /// `fragmentShadingRateWithFragmentShaderInterlock` false). Emulated
    /// interlock covers coarse fragments (the spinlock locks aligned blocks
    /// of the largest fragment size, the ordered strategy every pixel of a
    /// coarse fragment), so it forces nothing by itself.
    pub fn forces_one_by_one_with_interlock(&self) -> bool {
        if !(self.exposes(SHADING_RATE_EXTENSION) && self.exposes("VK_EXT_fragment_shader_interlock")) {
            return false;
        }
        self.profile_forbids_rates_with_interlock()
    }

    /// The architecture's `fragmentShadingRateWithFragmentShaderInterlock`
    /// is false.
    pub fn profile_forbids_rates_with_interlock(&self) -> bool {
        let Some(p) = &self.profile else { return false };
        p.property("VkPhysicalDeviceFragmentShadingRatePropertiesKHR", "fragmentShadingRateWithFragmentShaderInterlock")
            == Some(&serde_json::Value::Bool(false))
    }

    /// Whether the application may see `extension` (a governed one).
    pub fn exposes(&self, extension: &str) -> bool {
        let cap = match extension {
            "VK_EXT_fragment_shader_interlock" => &self.interlock,
            SHADING_RATE_EXTENSION => &self.shading_rate,
            FDM_EXTENSION => &self.fdm,
            _ => return true,
        };
        matches!(cap, Capability::Native | Capability::Emulated(_))
    }

    /// Whether an emulated *extension* is on offer (varying linking is an
    /// optimisation, not an extension).
    pub fn emulates_anything(&self) -> bool {
        [&self.interlock, &self.fdm].iter().any(|c| matches!(c, Capability::Emulated(_)))
    }

    /// The varying linker's level, where it runs.
    pub fn varyings_level(&self) -> Option<overlap_shaders::varyings::Level> {
        match self.varyings {
            Capability::Emulated(How::Varyings(level)) => Some(level),
            _ => None,
        }
    }

    /// The interlock strategy the layer runs, if it provides interlock.
    pub fn interlock_strategy(&self) -> Option<InterlockStrategy> {
        match self.interlock {
            Capability::Emulated(How::Interlock(s)) => Some(s),
            _ => None,
        }
    }

    /// The density-map mode the layer runs, if it provides the extension.
    pub fn fdm_mode(&self) -> Option<FdmMode> {
        match self.fdm {
            Capability::Emulated(How::Fdm(mode)) => Some(mode),
            _ => None,
        }
    }

    /// Device extensions the layer adds to the driver's list.
    pub fn added_extensions(&self) -> Vec<(&'static CStr, u32)> {
        let mut v = Vec::new();
        if self.interlock_strategy().is_some() {
            v.push((INTERLOCK_EXTENSION, 1));
        }
        if self.fdm_mode().is_some() {
            v.push((FDM_EXTENSION_NAME, 3));
            v.push((FDM2_EXTENSION_NAME, 1));
            v.push((FDM_OFFSET_EXTENSION_NAME, 1));
            v.push((FDM_OFFSET_QCOM_EXTENSION_NAME, 3));
            if self.fdm_layered {
                v.push((crate::vk_newer::EXTENSION, 1));
            }
        }
        v
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fragment shader interlock: {}; fragment shading rate: {}; fragment density map: {}; varying linking: {}",
            self.interlock, self.shading_rate, self.fdm, self.varyings
        )?;
        if let Some(p) = &self.profile {
            write!(f, "; architecture {}", p.arch)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Plan {
        fn new_test(s: &Settings, f: &DriverFacts) -> Plan {
            Plan::new(s, f, None)
        }
    }

    fn facts(exts: &[&str]) -> DriverFacts {
        DriverFacts {
            device_name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            vendor_id: 0x10005,
            api_version: vk::make_api_version(0, 1, 3, 230),
            driver_id: None,
            driver_name: String::new(),
            extensions: exts.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn native_extensions_pass_through() {
        let p = Plan::new_test(
            &Settings::defaults(),
            &facts(&["VK_EXT_fragment_shader_interlock", "VK_EXT_fragment_density_map"]),
        );
        assert_eq!(p.interlock, Capability::Native);
        assert_eq!(p.fdm, Capability::Native);
        assert!(!p.emulates_anything());
        assert!(p.added_extensions().is_empty());
    }

    #[test]
    fn interlock_strategy_by_driver_and_setting() {
        let llvmpipe = facts(&[]);
        let mut gpu = facts(&[]);
        gpu.vendor_id = 0x1002;
        gpu.device_name = "AMD Radeon".into();
        let nvidia = facts(&["VK_EXT_fragment_shader_interlock"]);
        let with = |strategy: &'static str| {
            let mut s = Settings::defaults();
            s.interlock_strategy = strategy;
            s
        };
        assert_eq!(Plan::new_test(&with("auto"), &llvmpipe).interlock_strategy(), Some(InterlockStrategy::Serialized));
        assert!(Plan::new_test(&with("auto"), &llvmpipe)
            .added_extensions()
            .iter()
            .any(|(n, _)| *n == INTERLOCK_EXTENSION));
        assert_eq!(Plan::new_test(&with("auto"), &nvidia).interlock, Capability::Native);
        assert!(!Plan::new_test(&with("auto"), &nvidia)
            .added_extensions()
            .iter()
            .any(|(n, _)| *n == INTERLOCK_EXTENSION));
        // Any other GPU without interlock: the ordered strategy (the spinlock
        // for unordered shaders).
        assert_eq!(Plan::new_test(&with("auto"), &gpu).interlock_strategy(), Some(InterlockStrategy::Ordered));
        assert_eq!(Plan::new_test(&with("spinlock"), &nvidia).interlock_strategy(), Some(InterlockStrategy::Spinlock));
        assert_eq!(Plan::new_test(&with("ordered"), &nvidia).interlock_strategy(), Some(InterlockStrategy::Ordered));
        assert_eq!(Plan::new_test(&with("ordered"), &llvmpipe).interlock_strategy(), Some(InterlockStrategy::Ordered));
        assert!(matches!(Plan::new_test(&with("native"), &llvmpipe).interlock, Capability::Off(_)));
        // A forced strategy replaces even a native implementation.
        assert_eq!(
            Plan::new_test(&with("serialized"), &nvidia).interlock_strategy(),
            Some(InterlockStrategy::Serialized)
        );
    }

    #[test]
    fn density_map_modes() {
        let with = |mode: &'static str| {
            let mut s = Settings::defaults();
            s.fdm = mode;
            Plan::new_test(&s, &facts(&[]))
        };
        assert_eq!(with("binned").fdm_mode(), Some(FdmMode::Binned));
        assert_eq!(with("baseline").fdm_mode(), Some(FdmMode::Baseline));
        assert!(with("binned").added_extensions().iter().any(|(n, _)| *n == FDM_EXTENSION_NAME));
        assert_eq!(with("off").fdm_mode(), None);
        assert!(!with("off").added_extensions().iter().any(|(n, _)| *n == FDM_EXTENSION_NAME));
    }

    #[test]
    fn the_layered_extension_follows_its_dependency_and_the_profile() {
        let names = |p: &Plan| p.added_extensions().iter().map(|(n, _)| *n).collect::<Vec<_>>();
        let layered = crate::vk_newer::EXTENSION;
        // lavapipe 22.3: Vulkan 1.3 without maintenance5.
        assert!(!names(&Plan::new_test(&Settings::defaults(), &facts(&[]))).contains(&layered));
        let m5 = Plan::new_test(&Settings::defaults(), &facts(&["VK_KHR_maintenance5"]));
        assert!(names(&m5).contains(&layered));
        let a6xx = Plan::new(
            &Settings::defaults(),
            &facts(&["VK_KHR_maintenance5"]),
            crate::profile::Profile::builtin("a6xx").map(std::sync::Arc::new),
        );
        // The profile keeps FDM, so the extension with it.
        assert!(names(&a6xx).contains(&layered));
    }

    #[test]
    fn force_enable_turns_hooks_on() {
        let mut s = Settings::defaults();
        s.force_enable = true;
        let p = Plan::new_test(&s, &facts(&[]));
        assert!(p.force_hooks);
    }

    #[test]
    fn llvmpipe_is_recognised_without_driver_properties() {
        assert!(facts(&[]).is_llvmpipe());
        let mut f = facts(&[]);
        f.vendor_id = 0x10de;
        assert!(!f.is_llvmpipe());
    }
}
