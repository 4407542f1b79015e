//! Overlap's test harness: a headless renderer ([`render`]) used by the
//! child-process test program `overlap-testapp`, and the helpers
//! ([`harness`]) that start it on lavapipe with the layer loaded above the
//! Khronos validation layer.

pub mod composite_bench;
pub mod draw_kind;
pub mod fdm;
pub mod fdm_bench;
pub mod fdm_library;
pub mod fdm_msaa;
pub mod fdm_queues;
pub mod fdm_shader_objects;
pub mod fdm_subsampled;
pub mod harness;
pub mod interlock;
pub mod local_read;
pub mod oit;
pub mod oit_ordered;
pub mod ordered_probe;
pub mod render;
pub mod stale_view;
pub mod varyings;
pub mod viewport_mask_bench;
pub mod vrs;
