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

/// The generated argument types do what `layer/gen/boundary.py` promises:
/// slices as long as their counts, `None` for a null optional array, `with_*`
/// replacing an array with its count, outputs counted by a member of an info,
/// `next()` seeing what a handler changed.
#[cfg(test)]
mod args_tests {
    use super::args;
    use ash::vk;
    use ash::vk::Handle;

    #[test]
    fn slices_follow_their_counts_and_null_optional_arrays_are_none() {
        let buffers = [vk::Buffer::from_raw(1), vk::Buffer::from_raw(2)];
        let offsets = [0u64, 64];
        let strides = [16u64, 32];
        // SAFETY: two valid items in each non-null array, alive for the test.
        let a = unsafe {
            args::CmdBindVertexBuffers2::new(
                vk::CommandBuffer::null(),
                3,
                2,
                buffers.as_ptr(),
                offsets.as_ptr(),
                std::ptr::null(),
                strides.as_ptr(),
            )
        };
        assert_eq!(a.first_binding(), 3);
        assert_eq!(a.buffers(), &buffers);
        assert_eq!(a.offsets(), &offsets);
        assert!(a.sizes().is_none());
        assert_eq!(a.strides(), Some(&strides[..]));
    }

    #[test]
    fn with_replaces_an_array_and_its_own_count() {
        let copies = [vk::CopyDescriptorSet::default()];
        // SAFETY: no writes, one valid copy.
        let a = unsafe { args::UpdateDescriptorSets::new(vk::Device::null(), 0, std::ptr::null(), 1, copies.as_ptr()) };
        let writes =
            [vk::WriteDescriptorSet::default().dst_binding(4), vk::WriteDescriptorSet::default().dst_binding(5)];
        let b = a.with_descriptor_writes(&writes);
        assert_eq!(b.descriptor_write_count(), 2);
        assert_eq!(b.descriptor_writes().iter().map(|w| w.dst_binding).collect::<Vec<_>>(), [4, 5]);
        assert_eq!(b.descriptor_copies().len(), 1);
        assert_eq!(a.descriptor_writes().len(), 0);
    }

    #[test]
    fn outputs_are_counted_by_the_info_member_that_counts_them() {
        let layouts = [vk::DescriptorSetLayout::null(); 3];
        let info = vk::DescriptorSetAllocateInfo::default().set_layouts(&layouts);
        let mut out = [vk::DescriptorSet::from_raw(7); 5];
        // SAFETY: a valid info; `out` holds more than `descriptorSetCount` handles.
        let a = unsafe { args::AllocateDescriptorSets::new(vk::Device::null(), &info, out.as_mut_ptr()) };
        // SAFETY: as if the command had succeeded: the handles are initialized.
        assert_eq!(unsafe { a.written_descriptor_sets() }.len(), 3);
    }

    #[test]
    fn next_sees_the_arguments_a_handler_changed() {
        let info = vk::ImageCreateInfo::default().extent(vk::Extent3D { width: 8, height: 8, depth: 1 });
        let mut out = vk::Image::null();
        let seen = std::cell::Cell::new(0);
        let chain = |a: args::CreateImage<'_>| {
            seen.set(a.create_info().extent.width);
            vk::Result::SUCCESS
        };
        // SAFETY: a valid info and output.
        let a =
            unsafe { args::CreateImage::new(vk::Device::null(), &info, std::ptr::null(), &mut out) }.chained(&chain);
        let copy = vk::ImageCreateInfo { extent: vk::Extent3D { width: 32, ..info.extent }, ..info };
        assert_eq!(a.with_create_info(&copy).next(), vk::Result::SUCCESS);
        assert_eq!(seen.get(), 32);
        assert_eq!(a.next(), vk::Result::SUCCESS);
        assert_eq!(seen.get(), 8);
    }

    #[test]
    #[should_panic(expected = "vkCreateImage: arguments without a chain")]
    fn arguments_without_a_chain_refuse_next() {
        let info = vk::ImageCreateInfo::default();
        let mut out = vk::Image::null();
        // SAFETY: a valid info and output.
        let a = unsafe { args::CreateImage::new(vk::Device::null(), &info, std::ptr::null(), &mut out) };
        let _ = a.next();
    }

    /// Strided arrays get no slice accessor (their items are not adjacent),
    /// only the raw pointer; the control: a plain array gets one.
    #[test]
    fn strided_arrays_have_no_slice_accessor() {
        let source = include_str!("args.rs");
        let multi = &source[source.find("pub struct CmdDrawMultiEXT<").unwrap()..];
        let multi = &multi[..multi[1..].find("pub struct ").map_or(multi.len(), |i| i + 1)];
        assert!(multi.contains("pub fn p_vertex_info(&self)"));
        assert!(!multi.contains("pub fn vertex_info(&self)"));
        assert!(source.contains("pub fn viewports(&self) -> &'a [vk::Viewport]"));
    }
}
