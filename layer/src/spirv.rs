//! The SPIR-V gate: how a module's words are read from a create info, which
//! environment the device validates for, and the one check every rewritten
//! module passes before it is sent down (dumped when `dump_shaders` asks,
//! validated unless `validate_shaders=false`). Every capability that
//! rewrites SPIR-V (interlock, density-map lowering, the varying linker)
//! calls it; it calls no capability.

use crate::device::DeviceCore;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;
use overlap_shaders::TargetEnv;

/// The SPIR-V words of `code_size` bytes at `p_code`.
///
/// # Safety
/// VUID-VkShaderModuleCreateInfo-pCode-parameter: `p_code` points at
/// `code_size / 4` aligned words (it is a `const uint32_t *`), and the caller
/// picks `'a` no longer than the create info that holds them lives.
pub(crate) unsafe fn words<'a>(p_code: *const u32, code_size: usize) -> &'a [u32] {
    if p_code.is_null() || code_size < 4 {
        &[]
    } else {
        // SAFETY: VUID-VkShaderModuleCreateInfo-pCode-parameter (the caller's
        // guarantee): `p_code` is non-null and points at `code_size / 4`
        // valid, aligned `u32`s that live for `'a`.
        unsafe { std::slice::from_raw_parts(p_code, code_size / 4) }
    }
}

pub(crate) fn target_env(dev: &DeviceCore) -> TargetEnv {
    let v = dev.facts.api_version.min(dev.instance.api_version.max(vk::API_VERSION_1_0));
    match vk::api_version_minor(v) {
        0 => TargetEnv::Vulkan1_0,
        1 => TargetEnv::Vulkan1_1,
        2 => TargetEnv::Vulkan1_2,
        _ => TargetEnv::Vulkan1_3,
    }
}

fn fnv(words: &[u32]) -> u64 {
    words.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, w| (h ^ *w as u64).wrapping_mul(0x100_0000_01b3))
}

/// Writes `input` and `output` to `dump_shaders`, where set.
pub(crate) fn dump(dev: &DeviceCore, input: &[u32], output: &[u32]) {
    let Some(dir) = &dev.settings().dump_shaders else {
        return;
    };
    let name = format!("{:016x}", fnv(input));
    let write = |suffix: &str, w: &[u32]| {
        let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::create_dir_all(dir).and_then(|_| std::fs::write(dir.join(format!("{name}.{suffix}.spv")), bytes))
    };
    if let Err(e) = write("in", input).and_then(|_| write("out", output)) {
        dev.log().log_once(
            LogLevel::Warn,
            id::SHADER_DUMP,
            &dir.display().to_string(),
            &format!("cannot write shaders to {}: {e}", dir.display()),
        );
    }
}

/// Dumps a rewritten module (`dump_shaders`) and validates it
/// (`validate_shaders`): false, logged, when it must not be sent down
/// (`what` names the rewrite in the message).
pub(crate) fn checked_output(dev: &DeviceCore, what: &str, input: &[u32], output: &[u32]) -> bool {
    dump(dev, input, output);
    if !dev.settings().validate_shaders {
        return true;
    }
    let log = dev.log();
    let started = std::time::Instant::now();
    let checked = overlap_shaders::validate(output, target_env(dev));
    if log.enabled(LogLevel::Debug) {
        log.debug(id::SHADER_CHECKED, &format!("{what}: validate_us={}", started.elapsed().as_micros()));
    }
    match checked {
        Ok(()) => true,
        Err(overlap_shaders::Error::ValidatorUnavailable(e)) => {
            log.log_once(
                LogLevel::Warn,
                id::SHADER_UNVALIDATED,
                "",
                &format!("rewritten shaders are sent unvalidated: {e} (set validate_shaders=false to silence this)"),
            );
            true
        }
        Err(e) => {
            let input_valid = overlap_shaders::validate(input, target_env(dev)).is_ok();
            let id = if input_valid { id::SHADER_INVALID_OUTPUT } else { id::SHADER_INVALID_INPUT };
            log.error(
                id,
                &format!(
                    "{what} of a module fails validation ({e}); the application's module{} is passed down unchanged",
                    if input_valid { "" } else { ", itself invalid," }
                ),
            );
            false
        }
    }
}
