//! Panics never cross the C ABI.
//!
//! Every exported function and hook runs its body through [`entry`]: a panic
//! is caught, logged once per command as `OVERLAP-Internal-Panic`, and turned
//! into the command's fallback — calling the next layer unchanged (a
//! pass-through) where that is possible, otherwise an error code. A fallback
//! that panics as well yields [`OnPanic::on_panic`].

use crate::id;
use ash::vk;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a command returns when neither its body nor its fallback could run.
pub trait OnPanic {
    fn on_panic() -> Self;
}

impl OnPanic for () {
    fn on_panic() {}
}
impl OnPanic for vk::Result {
    fn on_panic() -> Self {
        vk::Result::ERROR_UNKNOWN
    }
}
impl<T> OnPanic for Option<T> {
    fn on_panic() -> Self {
        None
    }
}
impl OnPanic for vk::Bool32 {
    fn on_panic() -> Self {
        vk::FALSE
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs `body`; on a panic, logs it and runs `fallback`.
#[inline]
pub fn entry<R: OnPanic>(command: &'static str, body: impl FnOnce() -> R, fallback: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            let text = panic_text(&*payload);
            // Logging itself must not unwind out of here.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                crate::log::global().log_once(
                    crate::settings::LogLevel::Error,
                    id::INTERNAL_PANIC,
                    command,
                    &format!("internal error in {command}: {text}; the call falls back to the next layer"),
                )
            }));
            catch_unwind(AssertUnwindSafe(fallback)).unwrap_or_else(|_| R::on_panic())
        }
    }
}

/// Panics when the `debug_panic` setting names `command` (tests prove with it
/// that [`entry`] contains panics).
#[inline]
pub fn debug_panic(setting: &Option<String>, command: &str) {
    if let Some(name) = setting {
        if name == command {
            panic!("debug_panic setting asked {command} to panic");
        }
    }
}

/// `Err(ERROR_OUT_OF_DEVICE_MEMORY)` when the `debug_fail` setting names
/// `command`: the layer's own object creation fails there as if the device
/// were out of memory, so tests can prove every fallback (nothing is created;
/// the caller's fallback runs). `command:device_lost` makes it fail with
/// `ERROR_DEVICE_LOST` instead (the layer's own submissions and waits);
/// `command@N` fails only from the N-th of the layer's calls of it in this
/// process on (a failure after earlier ones succeeded).
#[inline]
pub fn injected_failure(setting: &Option<String>, command: &str) -> Result<(), vk::Result> {
    let Some(names) = setting else { return Ok(()) };
    for n in names.split(',') {
        let (name, how) = n.trim().split_once(':').unwrap_or((n.trim(), ""));
        let (name, from) = match name.split_once('@') {
            Some((name, nth)) => (name, nth.parse::<u64>().unwrap_or(1)),
            None => (name, 1),
        };
        if name == command && (from <= 1 || nth_call(command) >= from) {
            return Err(match how {
                "device_lost" => vk::Result::ERROR_DEVICE_LOST,
                _ => vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
            });
        }
    }
    Ok(())
}

/// How many times `command`'s injection point was reached, this one included.
fn nth_call(command: &str) -> u64 {
    static CALLS: std::sync::Mutex<Vec<(String, u64)>> = std::sync::Mutex::new(Vec::new());
    let mut calls = CALLS.lock().unwrap_or_else(|e| e.into_inner());
    match calls.iter_mut().find(|(c, _)| c == command) {
        Some((_, n)) => {
            *n += 1;
            *n
        }
        None => {
            calls.push((command.to_string(), 1));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::injected_failure;
    use ash::vk;

    #[test]
    fn injected_failures_name_their_command_and_code() {
        let s = Some("vkCreateImage, vkWaitForFences:device_lost".to_string());
        assert_eq!(injected_failure(&s, "vkCreateImage"), Err(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY));
        assert_eq!(injected_failure(&s, "vkWaitForFences"), Err(vk::Result::ERROR_DEVICE_LOST));
        assert_eq!(injected_failure(&s, "vkCreateBuffer"), Ok(()));
        assert_eq!(injected_failure(&None, "vkCreateImage"), Ok(()));
        // From the third call on (a name no other test uses: the count is per process).
        let third = Some("vkTestOnly@3".to_string());
        let got: Vec<bool> = (0..4).map(|_| injected_failure(&third, "vkTestOnly").is_err()).collect();
        assert_eq!(got, [false, false, true, true]);
    }
}
