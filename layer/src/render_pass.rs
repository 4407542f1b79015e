//! What the create infos of `vkCreateRenderPass` and `vkCreateRenderPass2`
//! share, read once for both: the capabilities that change render passes
//! (the density map's translation, the ordered strategy's dependencies)
//! are written once, generic over [`RenderPassInfo`].

use crate::ffi::slice;
use crate::generated::args;
use ash::vk;

/// The arguments of `vkCreateRenderPass` and `vkCreateRenderPass2` alike (a
/// handler of both rows is written once, generic over it).
pub(crate) trait CreateArgs<'a>: Copy {
    type Info: RenderPassInfo + 'a;
    /// The application's create info.
    fn info(&self) -> &'a Self::Info;
    /// The rest of the chain, with `info` in place of the application's.
    fn next_with(self, info: &Self::Info) -> vk::Result;
    /// The rest of the chain with these arguments.
    fn down_chain(self) -> vk::Result;
    /// The device, the allocator and the output pointer.
    fn parts(&self) -> (vk::Device, *const vk::AllocationCallbacks<'a>, *mut vk::RenderPass);
    /// The render pass the command made.
    ///
    /// # Safety
    /// The command succeeded.
    unsafe fn written(&self) -> vk::RenderPass;
}

macro_rules! create_args {
    ($($args:ident $info:ident;)*) => {$(
        impl<'a> CreateArgs<'a> for args::$args<'a> {
            type Info = vk::$info<'a>;
            fn info(&self) -> &'a vk::$info<'a> {
                self.create_info()
            }
            fn next_with(self, info: &vk::$info<'a>) -> vk::Result {
                self.with_create_info(info).next()
            }
            fn down_chain(self) -> vk::Result {
                self.next()
            }
            fn parts(&self) -> (vk::Device, *const vk::AllocationCallbacks<'a>, *mut vk::RenderPass) {
                (self.device(), self.p_allocator(), self.p_render_pass())
            }
            unsafe fn written(&self) -> vk::RenderPass {
                // SAFETY: the caller's guarantee.
                unsafe { self.written_render_pass() }
            }
        }
    )*};
}

create_args! {
    CreateRenderPass RenderPassCreateInfo;
    CreateRenderPass2 RenderPassCreateInfo2;
}

/// A render pass create info of either version.
pub(crate) trait RenderPassInfo: Copy {
    const COMMAND: &'static str;
    type Attachment: Copy;
    type Subpass: Copy;
    type Dependency: Copy;
    fn p_next(&self) -> *const std::ffi::c_void;
    fn flags(&self) -> vk::RenderPassCreateFlags;
    /// The attachments, subpasses and dependencies.
    ///
    /// # Safety
    /// `self` is a valid create info (its arrays hold their counts).
    unsafe fn arrays(&self) -> (&[Self::Attachment], &[Self::Subpass], &[Self::Dependency]);
    /// A copy pointing at other arrays and chain.
    fn with(
        &self,
        flags: vk::RenderPassCreateFlags,
        next: *const std::ffi::c_void,
        arrays: (&[Self::Attachment], &[Self::Subpass], &[Self::Dependency]),
    ) -> Self;
    /// Per subpass, whether it renders several views.
    ///
    /// # Safety
    /// `self` is a valid create info (a valid chain and arrays).
    unsafe fn multiview(&self) -> Vec<bool>;
    /// The union of the subpasses' view masks (0 without multiview).
    ///
    /// # Safety
    /// `self` is a valid create info (a valid chain and arrays).
    unsafe fn view_mask(&self) -> u32;
    /// `d` as a dependency of this version, to be added to a pass in which
    /// some subpass is multiview (`multiview`); `None` where none may be
    /// added (version 1: a multiview pass ties its dependency count to its
    /// view offsets).
    fn added_dependency(d: vk::SubpassDependency, multiview: bool) -> Option<Self::Dependency>;
}

/// The members that read the same fields of both create infos.
macro_rules! common_fields {
    ($command:literal) => {
        const COMMAND: &'static str = $command;
        fn p_next(&self) -> *const std::ffi::c_void {
            self.p_next
        }
        fn flags(&self) -> vk::RenderPassCreateFlags {
            self.flags
        }
        unsafe fn arrays(&self) -> (&[Self::Attachment], &[Self::Subpass], &[Self::Dependency]) {
            // SAFETY: the caller's guarantee (the -pAttachments-parameter,
            // -pSubpasses-parameter and -pDependencies-parameter VUIDs of
            // either create info).
            unsafe {
                (
                    slice(self.p_attachments, self.attachment_count),
                    slice(self.p_subpasses, self.subpass_count),
                    slice(self.p_dependencies, self.dependency_count),
                )
            }
        }
        fn with(
            &self,
            flags: vk::RenderPassCreateFlags,
            next: *const std::ffi::c_void,
            (attachments, subpasses, dependencies): (&[Self::Attachment], &[Self::Subpass], &[Self::Dependency]),
        ) -> Self {
            let mut c = *self;
            c.flags = flags;
            c.p_next = next;
            c.attachment_count = attachments.len() as u32;
            c.p_attachments = attachments.as_ptr();
            c.subpass_count = subpasses.len() as u32;
            c.p_subpasses = subpasses.as_ptr();
            c.dependency_count = dependencies.len() as u32;
            c.p_dependencies = dependencies.as_ptr();
            c
        }
    };
}

impl<'a> RenderPassInfo for vk::RenderPassCreateInfo<'a> {
    type Attachment = vk::AttachmentDescription;
    type Subpass = vk::SubpassDescription<'a>;
    type Dependency = vk::SubpassDependency;
    common_fields!("vkCreateRenderPass");
    unsafe fn multiview(&self) -> Vec<bool> {
        // SAFETY: the caller's guarantee (VUID-VkRenderPassCreateInfo-pNext-pNext).
        let multiview = unsafe { crate::pnext::find::<vk::RenderPassMultiviewCreateInfo>(self.p_next) }
            .is_some_and(|m| m.subpass_count > 0);
        vec![multiview; self.subpass_count as usize]
    }
    unsafe fn view_mask(&self) -> u32 {
        // SAFETY: the caller's guarantee (VUID-VkRenderPassCreateInfo-pNext-pNext,
        // VUID-VkRenderPassMultiviewCreateInfo-pViewMasks-parameter).
        unsafe { crate::pnext::find::<vk::RenderPassMultiviewCreateInfo>(self.p_next) }
            .map(|m| unsafe { slice(m.p_view_masks, m.subpass_count) }.iter().fold(0, |a, b| a | b))
            .unwrap_or(0)
    }
    fn added_dependency(d: vk::SubpassDependency, multiview: bool) -> Option<Self::Dependency> {
        (!multiview).then_some(d)
    }
}

impl<'a> RenderPassInfo for vk::RenderPassCreateInfo2<'a> {
    type Attachment = vk::AttachmentDescription2<'a>;
    type Subpass = vk::SubpassDescription2<'a>;
    type Dependency = vk::SubpassDependency2<'a>;
    common_fields!("vkCreateRenderPass2");
    unsafe fn multiview(&self) -> Vec<bool> {
        // SAFETY: the caller's guarantee (VUID-VkRenderPassCreateInfo2-pSubpasses-parameter).
        unsafe { slice(self.p_subpasses, self.subpass_count) }.iter().map(|s| s.view_mask != 0).collect()
    }
    unsafe fn view_mask(&self) -> u32 {
        // SAFETY: as `multiview`.
        unsafe { slice(self.p_subpasses, self.subpass_count) }.iter().fold(0, |m, s| m | s.view_mask)
    }
    fn added_dependency(d: vk::SubpassDependency, multiview: bool) -> Option<Self::Dependency> {
        // Between multiview subpasses: view-local (the views match).
        let flags = if multiview { d.dependency_flags | vk::DependencyFlags::VIEW_LOCAL } else { d.dependency_flags };
        Some(
            vk::SubpassDependency2::default()
                .src_subpass(d.src_subpass)
                .dst_subpass(d.dst_subpass)
                .src_stage_mask(d.src_stage_mask)
                .dst_stage_mask(d.dst_stage_mask)
                .src_access_mask(d.src_access_mask)
                .dst_access_mask(d.dst_access_mask)
                .dependency_flags(flags),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(src: u32, dst: u32) -> vk::SubpassDependency {
        vk::SubpassDependency {
            src_subpass: src,
            dst_subpass: dst,
            dependency_flags: vk::DependencyFlags::BY_REGION,
            ..Default::default()
        }
    }

    /// Version 1: multiview is the whole pass's (a chained structure), and
    /// nothing may be added to a multiview pass; version 2: per subpass, and
    /// an added dependency is view-local in a multiview pass.
    #[test]
    fn multiview_and_added_dependencies_by_version() {
        let subs = [vk::SubpassDescription::default(); 2];
        let plain = vk::RenderPassCreateInfo::default().subpasses(&subs);
        // SAFETY: a valid create info built here.
        assert_eq!(unsafe { plain.multiview() }, [false, false]);
        let masks = [1u32, 3];
        let mut mv = vk::RenderPassMultiviewCreateInfo::default().view_masks(&masks);
        let multi = vk::RenderPassCreateInfo::default().subpasses(&subs).push_next(&mut mv);
        // SAFETY: as above.
        assert_eq!(unsafe { multi.multiview() }, [true, true]);
        // SAFETY: as above.
        assert_eq!(unsafe { (plain.view_mask(), multi.view_mask()) }, (0, 3));
        assert!(vk::RenderPassCreateInfo::added_dependency(dep(0, 0), true).is_none());
        assert_eq!(vk::RenderPassCreateInfo::added_dependency(dep(0, 1), false).map(|d| d.dst_subpass), Some(1));

        let subs2 = [vk::SubpassDescription2::default().view_mask(0), vk::SubpassDescription2::default().view_mask(3)];
        let two = vk::RenderPassCreateInfo2::default().subpasses(&subs2);
        // SAFETY: as above.
        assert_eq!(unsafe { two.multiview() }, [false, true]);
        // SAFETY: as above.
        assert_eq!(unsafe { two.view_mask() }, 3);
        let d = vk::RenderPassCreateInfo2::added_dependency(dep(0, 1), true).unwrap();
        assert_eq!((d.src_subpass, d.dst_subpass), (0, 1));
        assert_eq!(d.dependency_flags, vk::DependencyFlags::BY_REGION | vk::DependencyFlags::VIEW_LOCAL);
        let d = vk::RenderPassCreateInfo2::added_dependency(dep(1, 1), false).unwrap();
        assert_eq!(d.dependency_flags, vk::DependencyFlags::BY_REGION);
    }

    /// `with` points a copy at other arrays, counts included, and keeps the
    /// rest of the create info.
    #[test]
    fn with_points_at_the_new_arrays() {
        let subs = [vk::SubpassDescription::default(); 2];
        let ci = vk::RenderPassCreateInfo::default().subpasses(&subs);
        let deps = [dep(0, 0), dep(0, 1), dep(1, 1)];
        let copy = ci.with(RenderPassInfo::flags(&ci), RenderPassInfo::p_next(&ci), (&[], &subs, &deps));
        // SAFETY: the copy points at live arrays of its counts.
        let (a, s, d) = unsafe { copy.arrays() };
        assert_eq!((a.len(), s.len(), d.len()), (0, 2, 3));
        assert_eq!(d[1].dst_subpass, 1);
    }
}
