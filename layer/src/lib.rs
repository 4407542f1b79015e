//! Overlap: a Vulkan layer that emulates fragment shader interlock, fragment
//! density maps and cross-stage varying optimization on drivers that lack
//! them. See `docs/ARCHITECTURE.md` for the design; this crate is the
//! Vulkan-facing part (the SPIR-V passes live in `overlap-shaders`).
//!
//! The shared library exports only the loader interface (see `exports.map`).

// The library must be named libVkLayer_overlap.so, as the manifest says.
#![allow(non_snake_case)]
// Every unsafe operation sits in an `unsafe` block with a `SAFETY` comment
// naming the rule it relies on, inside unsafe fns too.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod architecture;
pub mod deferred_views;
pub mod device;
pub mod disk_cache;
pub mod dispatch;
pub mod entry;
pub mod fdm;
pub mod ffi;
mod generated;
pub mod guard;
pub mod id;
pub mod instance;
pub mod interlock;
pub mod link;
pub mod log;
pub mod manifest;
pub mod plan;
pub mod pnext;
pub mod profile;
pub mod render_pass;
pub mod settings;
pub mod shader;
pub mod shading_rate;
pub mod spirv;
pub mod state;
pub mod vk_newer;
