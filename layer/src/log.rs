//! Logging with stable message ids (`OVERLAP-…`).
//!
//! Each message goes to stderr when its severity passes `log_level`, and to
//! every `VK_EXT_debug_utils` messenger the application created on the
//! instance (and, during `vkCreateInstance`/`vkDestroyInstance`, to the
//! messengers chained in `VkInstanceCreateInfo::pNext`), filtered by each
//! messenger's own severity mask. Callbacks are called without any layer lock
//! held.

use crate::settings::LogLevel;
use ash::vk;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::ffi::{c_void, CString};

/// An application messenger, as created.
#[derive(Clone, Copy)]
pub struct Messenger {
    pub handle: vk::DebugUtilsMessengerEXT,
    pub severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    pub types: vk::DebugUtilsMessageTypeFlagsEXT,
    pub callback: unsafe extern "system" fn(
        vk::DebugUtilsMessageSeverityFlagsEXT,
        vk::DebugUtilsMessageTypeFlagsEXT,
        *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
        *mut c_void,
    ) -> vk::Bool32,
    pub user_data: *mut c_void,
}

// SAFETY: the callback and user data belong to the application, which by
// creating the messenger allows it to be called from any thread that calls
// Vulkan on the instance.
unsafe impl Send for Messenger {}
// SAFETY: as for `Send`: the layer only copies the fields and calls the callback.
unsafe impl Sync for Messenger {}

impl Messenger {
    /// # Safety
    /// `info.pfnUserCallback` must be valid (VUID-VkDebugUtilsMessengerCreateInfoEXT-pfnUserCallback-parameter).
    pub unsafe fn from_create_info(
        info: &vk::DebugUtilsMessengerCreateInfoEXT,
        handle: vk::DebugUtilsMessengerEXT,
    ) -> Option<Messenger> {
        Some(Messenger {
            handle,
            severity: info.message_severity,
            types: info.message_type,
            callback: info.pfn_user_callback?,
            user_data: info.p_user_data,
        })
    }
}

/// The messengers chained to a create-info `pNext`.
///
/// # Safety
/// `p_next` must be a valid `pNext` chain.
pub unsafe fn chained_messengers(mut p_next: *const c_void) -> Vec<Messenger> {
    let mut out = Vec::new();
    while !p_next.is_null() {
        // SAFETY: every structure of a valid pNext chain starts with the
        // VkBaseInStructure header (the caller's guarantee;
        // VUID-VkInstanceCreateInfo-pNext-pNext).
        let base = unsafe { &*(p_next as *const vk::BaseInStructure) };
        if base.s_type == vk::StructureType::DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT {
            // SAFETY: a structure of this sType is a
            // VkDebugUtilsMessengerCreateInfoEXT, whose pfnUserCallback is
            // valid (VUID-VkDebugUtilsMessengerCreateInfoEXT-pfnUserCallback-parameter).
            let m = unsafe {
                let info = &*(p_next as *const vk::DebugUtilsMessengerCreateInfoEXT);
                Messenger::from_create_info(info, vk::DebugUtilsMessengerEXT::null())
            };
            out.extend(m);
        }
        p_next = base.p_next as *const c_void;
    }
    out
}

/// One instance's log: its level, its messengers and the ids already said once.
pub struct Logger {
    level: LogLevel,
    messengers: Mutex<Vec<Messenger>>,
    said: Mutex<HashSet<String>>,
}

fn severity_bit(level: LogLevel) -> vk::DebugUtilsMessageSeverityFlagsEXT {
    match level {
        LogLevel::Off | LogLevel::Error => vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
        LogLevel::Warn => vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
        LogLevel::Info => vk::DebugUtilsMessageSeverityFlagsEXT::INFO,
        LogLevel::Debug => vk::DebugUtilsMessageSeverityFlagsEXT::VERBOSE,
    }
}

/// A stable 32-bit number for a message id (FNV-1a), for `messageIdNumber`.
pub fn id_number(id: &str) -> i32 {
    id.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193)) as i32
}

impl Logger {
    pub fn new(level: LogLevel, messengers: Vec<Messenger>) -> Logger {
        Logger { level, messengers: Mutex::new(messengers), said: Mutex::new(HashSet::new()) }
    }

    pub fn level(&self) -> LogLevel {
        self.level
    }

    pub fn enabled(&self, level: LogLevel) -> bool {
        level <= self.level || self.messengers.lock().iter().any(|m| m.severity.contains(severity_bit(level)))
    }

    pub fn add_messenger(&self, m: Messenger) {
        self.messengers.lock().push(m);
    }

    pub fn remove_messenger(&self, handle: vk::DebugUtilsMessengerEXT) {
        self.messengers.lock().retain(|m| m.handle != handle);
    }

    /// Logs `message` under `id`.
    pub fn log(&self, level: LogLevel, id: &str, message: &str) {
        if level == LogLevel::Off {
            return;
        }
        if level <= self.level {
            eprintln!("[overlap] {:5} {id}: {message}", level.name().to_uppercase());
        }
        let bit = severity_bit(level);
        let targets: Vec<Messenger> =
            self.messengers.lock().iter().filter(|m| m.severity.contains(bit)).copied().collect();
        if targets.is_empty() {
            return;
        }
        let (Ok(c_id), Ok(c_msg)) = (CString::new(id), CString::new(message.replace('\0', " "))) else {
            return;
        };
        let data = vk::DebugUtilsMessengerCallbackDataEXT {
            p_message_id_name: c_id.as_ptr(),
            message_id_number: id_number(id),
            p_message: c_msg.as_ptr(),
            ..Default::default()
        };
        let ty = if id.contains("Performance") {
            vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE
        } else {
            vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
        };
        for m in targets.iter().filter(|m| m.types.contains(ty)) {
            // SAFETY: the application supplied this callback for exactly this
            // call (VUID-VkDebugUtilsMessengerCreateInfoEXT-pfnUserCallback-parameter);
            // no layer lock is held while it runs.
            unsafe { (m.callback)(bit, ty, &data, m.user_data) };
        }
    }

    /// Logs once per `id` + `key` for the lifetime of the instance.
    pub fn log_once(&self, level: LogLevel, id: &str, key: &str, message: &str) {
        if self.said.lock().insert(format!("{id}\0{key}")) {
            self.log(level, id, message);
        }
    }

    pub fn error(&self, id: &str, message: &str) {
        self.log(LogLevel::Error, id, message)
    }
    pub fn warn(&self, id: &str, message: &str) {
        self.log(LogLevel::Warn, id, message)
    }
    pub fn info(&self, id: &str, message: &str) {
        self.log(LogLevel::Info, id, message)
    }
    pub fn debug(&self, id: &str, message: &str) {
        self.log(LogLevel::Debug, id, message)
    }
}

/// The log used where no instance is known (the process environment's level,
/// stderr only).
pub fn global() -> &'static Logger {
    static GLOBAL: std::sync::OnceLock<Logger> = std::sync::OnceLock::new();
    GLOBAL.get_or_init(|| Logger::new(crate::settings::Settings::from_environment().0.log_level, Vec::new()))
}
