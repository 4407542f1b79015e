//! Every message id the layer logs, in one place (docs/settings.md's list of
//! messages matches these). Ids are stable: programs and tests match them.

/// A create info holds a structure the layer cannot copy; it goes down unchanged.
pub const CREATE_INFO_UNKNOWN: &str = "OVERLAP-Create-Info-Unknown";
/// What the layer does on a device, and which hooks it installs there.
pub const DEVICE_PLAN: &str = "OVERLAP-Device-Plan";
/// The device was lost in the layer's own density-map read; later submissions and waits return it.
pub const FDM_DEVICE_LOST: &str = "OVERLAP-FDM-Device-Lost";
/// A secondary command buffer of a density-map pass recorded what cannot be replayed.
pub const FDM_DROPPED: &str = "OVERLAP-FDM-Dropped";
/// A density-map pass is rendered once at 1x1, and why.
pub const FDM_FALLBACK: &str = "OVERLAP-FDM-Fallback";
/// The bins and replays planned for a density-map pass.
pub const FDM_PLAN: &str = "OVERLAP-FDM-Plan";
/// A secondary command buffer inside a density-map pass.
pub const FDM_SECONDARY: &str = "OVERLAP-FDM-Secondary";
/// Per-area pipeline variants made (or not) for a density-map pass.
pub const FDM_VARIANTS: &str = "OVERLAP-FDM-Variants";
/// Subsampled images stored at full resolution from now on: a path the
/// layer cannot follow to the bin table, and which.
pub const FDM_SUBSAMPLED: &str = "OVERLAP-FDM-Subsampled";
/// A multiview pipeline whose vertex shader cannot write the viewport index
/// (the density map's per-view viewports), and why.
pub const FDM_PER_VIEW: &str = "OVERLAP-FDM-Per-View";
/// A pipeline whose vertex shader cannot write a viewport mask (the density
/// map's replays of one area as viewports), and why.
pub const FDM_VIEWPORT_MASK: &str = "OVERLAP-FDM-Viewport-Mask";
/// A multiview pipeline the multiview flush (lavapipe) cannot cover, and why.
pub const FDM_MULTIVIEW_FLUSH: &str = "OVERLAP-FDM-Multiview-Flush";
/// The application asked for a feature the layer does not provide.
pub const FEATURE_NOT_PRESENT: &str = "OVERLAP-Feature-Not-Present";
/// The layer is active on an instance (with its version).
pub const INSTANCE_CREATED: &str = "OVERLAP-Instance-Created";
/// A pipeline asks for ordered interlock that the strategy does not order.
pub const INTERLOCK_ORDER: &str = "OVERLAP-Interlock-Order";
/// An ordered-interlock pipeline or draw runs with mutual exclusion only
/// (the ordered strategy's fallback), and why.
pub const INTERLOCK_ORDER_FALLBACK: &str = "OVERLAP-Interlock-Order-Fallback";
/// The GPU reported sections the ordered strategy could not order: cells
/// that overflowed, waits that expired, keys not found.
pub const INTERLOCK_ORDER_LOST: &str = "OVERLAP-Interlock-Order-Lost";
/// The ordered strategy's cells: made, cleared, or not made.
pub const INTERLOCK_ORDERED_CELLS: &str = "OVERLAP-Interlock-Ordered-Cells";
/// `serialized` on a driver that does not shade in primitive order.
pub const INTERLOCK_SERIALIZED_INEXACT: &str = "OVERLAP-Interlock-Serialized-Inexact";
/// A panic inside the layer, contained; the call fell back to the next layer.
pub const INTERNAL_PANIC: &str = "OVERLAP-Internal-Panic";
/// A layout uses the descriptor set reserved for interlock locks.
pub const LAYOUT_TOO_MANY_SETS: &str = "OVERLAP-Layout-Too-Many-Sets";
/// A device limit reported differently (a set reserved, an architecture's value).
pub const LIMIT_ADJUSTED: &str = "OVERLAP-Limit-Adjusted";
/// The varying linker's cache on disk cannot be read or written, or holds a
/// damaged entry (ignored: linked again).
pub const LINK_CACHE: &str = "OVERLAP-Link-Cache";
/// The loader's link information is missing from a create info.
pub const LOADER_LINK: &str = "OVERLAP-Loader-Link";
/// An architecture profile value the driver cannot honour was clamped.
pub const PROFILE_ADJUSTED: &str = "OVERLAP-Profile-Adjusted";
/// The architecture or profile file cannot be used.
pub const PROFILE_INVALID: &str = "OVERLAP-Profile-Invalid";
/// The settings file cannot be read.
pub const SETTING_FILE: &str = "OVERLAP-Setting-File";
/// A setting's value is not one it accepts.
pub const SETTING_INVALID: &str = "OVERLAP-Setting-Invalid";
/// A setting the layer does not know.
pub const SETTING_UNKNOWN: &str = "OVERLAP-Setting-Unknown";
/// Rewritten shaders cannot be written to `dump_shaders`.
pub const SHADER_DUMP: &str = "OVERLAP-Shader-Dump";
/// A module the layer made was validated (debug: what, and how long it took).
pub const SHADER_CHECKED: &str = "OVERLAP-Shader-Checked";
/// The application's module is itself invalid; it goes down unchanged.
pub const SHADER_INVALID_INPUT: &str = "OVERLAP-Shader-Invalid-Input";
/// A rewritten module fails validation; the application's goes down.
pub const SHADER_INVALID_OUTPUT: &str = "OVERLAP-Shader-Invalid-Output";
/// A module rewritten for interlock (debug: timings).
pub const SHADER_REWRITTEN: &str = "OVERLAP-Shader-Rewritten";
/// A module the layer cannot rewrite goes down unchanged.
pub const SHADER_SKIPPED: &str = "OVERLAP-Shader-Skipped";
/// The validator is unavailable; rewritten modules go down unvalidated.
pub const SHADER_UNVALIDATED: &str = "OVERLAP-Shader-Unvalidated";
/// An interlock pipeline keeps its shading rate (its chain cannot be copied).
pub const SHADING_RATE_NOT_FORCED: &str = "OVERLAP-Shading-Rate-Not-Forced";
/// The spinlock's resources cannot be created; device creation fails.
pub const SPINLOCK_INIT: &str = "OVERLAP-Spinlock-Init";
/// The spinlock locks per lane, not per quad (no subgroup ballots in
/// fragment shaders, or `debug_spinlock_per_lane`): derivatives inside a
/// critical section are undefined where a quad's lanes contend.
pub const SPINLOCK_PER_LANE: &str = "OVERLAP-Spinlock-Per-Lane";
/// A call on a handle the layer has not seen.
pub const UNKNOWN_HANDLE: &str = "OVERLAP-Unknown-Handle";
/// A pipeline's stages were linked (debug: what changed, timings).
pub const VARYINGS_LINKED: &str = "OVERLAP-Varyings-Linked";
/// A pair of stages left unlinked, and why.
pub const VARYINGS_SKIPPED: &str = "OVERLAP-Varyings-Skipped";

#[cfg(test)]
mod id_tests {
    /// No message id is spelled outside this module.
    #[test]
    fn ids_are_named_in_one_place() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut stack = vec![std::path::PathBuf::from(root)];
        let mut offenders = Vec::new();
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    if !path.ends_with("bin") {
                        stack.push(path);
                    }
                } else if path.extension().is_some_and(|x| x == "rs") && !path.ends_with("id.rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    if text.contains("\"OVERLAP-") {
                        offenders.push(path.display().to_string());
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "message ids spelled outside crate::id: {offenders:?}");
    }
}
