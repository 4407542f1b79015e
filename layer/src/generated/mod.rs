//! Generated code (see `layer/gen/`); a test fails when it is stale.

#[rustfmt::skip]
#[allow(clippy::all)]
pub mod struct_sizes;
