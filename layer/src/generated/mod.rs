//! Generated code (see `layer/gen/`); a test fails when it is stale.
//! `dispatch_rows.rs` (from `layer/gen/boundary.py`) and
//! `dynamic_state_capture.rs` (from `layer/gen/dynamic_state.py`) are not
//! modules: `dispatch.rs` and `fdm/capture.rs` include them where their
//! macros are defined.

/// The device commands' argument types (`layer/gen/boundary.py`, from
/// `layer/gen/dispatch.json` and the registry; `dispatch::tests` checks it is
/// current). Not every accessor has a reader yet.
#[rustfmt::skip]
#[allow(clippy::all, dead_code)]
pub mod args;
#[rustfmt::skip]
#[allow(clippy::all)]
pub mod struct_sizes;
/// From the registry (`layer/gen/newer_struct_sizes.py`, not rerun in CI:
/// its layout computation is checked against ash's by a unit test).
#[rustfmt::skip]
#[allow(clippy::all)]
pub mod newer_struct_sizes;
/// The settings table (`layer/gen/settings.py`, from `layer/gen/settings.json`;
/// `settings::tests` checks it is current).
#[rustfmt::skip]
#[allow(clippy::all)]
pub mod settings;

/// Tests: `layer/gen/<script> --check` passes, i.e. what it writes is
/// current; otherwise the test fails with the script's output.
#[cfg(test)]
pub fn assert_current(script: &str) {
    let path = format!("{}/gen/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3").arg(&path).arg("--check").output().expect("python3");
    assert!(
        out.status.success(),
        "{script}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
