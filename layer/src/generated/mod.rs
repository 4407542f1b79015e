//! Generated code (see `layer/gen/`); a test fails when it is stale.

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
