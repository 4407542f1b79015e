//! Why a density-map pass falls back to 1x1: one reason per case, each
//! with the text the log gives it.

use ash::vk;

/// Why a density-map pass renders once at a 1x1 fragment area instead of
/// being replayed at lower resolution (the spec allows 1x1 for any map):
/// what goes to the log, once per reason and pass.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Fallback {
    /// Not a fallback: mode `baseline` renders every pass at 1x1, unlogged.
    #[error("mode baseline")]
    Baseline,
    #[error("a query is active across it")]
    QueryActive,
    #[error("its begin info chains a structure the layer does not replay")]
    BeginChain,
    #[error("its rendering info chains a structure the layer does not replay")]
    RenderingChain,
    #[error("it is suspended or resumed")]
    SuspendedOrResumed,
    #[error("its contents are secondary command buffers")]
    SecondaryContents,
    /// A command recorded in the pass that the layer cannot replay (named).
    #[error("{0}")]
    Command(&'static str),
    #[error("a descriptor set it binds cannot be copied to read the scratch targets' input attachments")]
    UncopyableSet,
    #[error("a descriptor set with input attachments it binds cannot be copied (its layout is destroyed)")]
    DestroyedSetLayout,
    #[error("a shadow descriptor {0} cannot be made: {1:?}")]
    ShadowSet(&'static str, vk::Result),
    #[error("a pipeline bound in it was not created for a density-map pass")]
    UnknownPipeline,
    #[error("a pipeline bound in it writes storage or uses atomics")]
    SideEffects,
    #[error("a pipeline it binds lacks the per-area variant a replay needs")]
    PipelineVariants,
    /// A bound shader object the replays cannot honour (why).
    #[error("{0}")]
    ShaderObject(&'static str),
    #[error("its density map view is dynamic or deferred and the GPU plan has no conditional rendering (the driver lacks VK_EXT_conditional_rendering, or it is a Vulkan 1.0 application): the map is not read and the pass renders at 1x1 (density 1, which the spec allows for any map)")]
    DynamicWithoutConditionalRendering,
    #[error("its density map view is dynamic or deferred and it is recorded in a secondary command buffer (the GPU plan's upscale begins render passes, which a secondary may not): the map is not read and the pass renders at 1x1 (density 1, which the spec allows for any map)")]
    DynamicInSecondary,
    #[error("its density map view is dynamic or deferred and the application's conditional rendering is active around it (the GPU plan's may not nest in it): the map is not read and the pass renders at 1x1 (density 1, which the spec allows for any map)")]
    DynamicInAppConditional,
    /// What the GPU plan cannot cover in a pass with a dynamic or deferred
    /// map: `gpu_plan::unsupported`.
    #[error("its density map is dynamic or deferred and the GPU plan has no conditional rendering (the driver lacks VK_EXT_conditional_rendering, or it is a Vulkan 1.0 application)")]
    PlanWithoutConditionalRendering,
    #[error(
        "its density map is dynamic or deferred and its framebuffer is layered (without the per-layer density bit)"
    )]
    PlanLayered,
    #[error("its dynamic or deferred density map is in {0:?}, which the GPU plan cannot copy")]
    PlanMapLayout(vk::ImageLayout),
    #[error(
        "its density map is dynamic or deferred and a multisampled attachment loads or stores (debug_fdm_without=msaa)"
    )]
    PlanMultisampled,
    #[error("its density map is dynamic or deferred and a stencil attachment stores (the GPU plan's upscale writes colour and depth only)")]
    PlanStencilStore,
    #[error("its density map is dynamic or deferred and an attachment view is {0:?}")]
    PlanViewType(vk::ImageViewType),
    #[error("its density map is dynamic or deferred and {0:?} cannot be blitted")]
    PlanUnblittable(vk::Format),
    #[error("its density map is dynamic or deferred and {0:?} at {1:?} cannot be sampled and drawn by the GPU plan's upscale")]
    PlanUndrawable(vk::Format, vk::SampleCountFlags),
    #[error("its density map is dynamic or deferred and it reads input attachments")]
    PlanInputAttachments,
    #[error("its density map is dynamic or deferred and it has several subpasses")]
    PlanSubpasses,
    #[error("an empty render area")]
    EmptyRenderArea,
    #[error("the GPU plan has no device of the next layer")]
    NoRawDevice,
    #[error("the GPU plan's objects: {0:?}")]
    PlanObjects(vk::Result),
    #[error("the composite's objects: {0:?}")]
    CompositeObjects(vk::Result),
    #[error("scratch targets: {0:?}")]
    ScratchTargets(vk::Result),
    #[error("a multisampled attachment loads or stores (debug_fdm_without=msaa)")]
    Multisampled,
    #[error("{0:?} cannot be blitted")]
    Unblittable(vk::Format),
    #[error("an attachment image was not created with transfer usage")]
    NoTransferUsage,
    #[error("the framebuffer lacks the density map")]
    NoMapInFramebuffer,
    #[error("an attachment view the layer has not seen")]
    UnknownAttachmentView,
    #[error("a resolve view the layer has not seen")]
    UnknownResolveView,
    #[error("the density map view is unknown")]
    UnknownMapView,
    #[error("the density map image is unknown")]
    UnknownMapImage,
    #[error("the density map's format is {0:?}, not R8G8_UNORM")]
    MapFormat(vk::Format),
    #[error("the device is lost")]
    DeviceLost,
    #[error("no queue of the device can copy the map")]
    NoQueue,
    #[error("map read failed: {0:?}")]
    MapRead(vk::Result),
    #[error("cannot set up map reads: {0:?}")]
    MapReader(vk::Result),
}
