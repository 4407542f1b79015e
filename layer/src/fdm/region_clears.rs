//! The GPU plan's region clears as one instanced draw per area
//! (`shaders/glsl/fdm_clear.vert`, `fdm_clear.frag`).
//!
//! A pass planned on the GPU begins each area's render pass instance without
//! clearing (the render pass's twin, [`super::PassInfo::unclearing`]) and
//! clears only the regions that chose the area. Done as a
//! `vkCmdClearAttachments` under each (region, area) predicate, that is 3
//! commands per region and area (192 for 64 regions at 3 areas; on the H200
//! host 60–140 µs of a few-draw pass's recording, 24 µs of its GPU time).
//! Here it is one draw per area, its instance `r` covering region `r` of
//! the scratch target where the plan chose the area (the predicate, read by
//! the vertex shader), writing the clear colours, the clear depth (the
//! vertex's depth under an `ALWAYS` test) and the clear stencil (`REPLACE`
//! with the reference set by the layer).
//!
//! The pipeline is made per application render pass at the first pass that
//! needs it (compatible with the twin: subpass 0) and goes with the render
//! pass. Not drawn — the clears under predicates stay — for dynamic
//! rendering, an integer colour attachment, a subpass that clears some
//! colour attachments and loads others, a depth clear value outside
//! [0, 1], a subpass of no attachment, or more than 8 colour attachments.

use super::gpu_objects::{graphics_pipeline, words, Drawn, Objects};
use super::model::integer;
use super::Fdm;
use ash::vk;

/// Words of clear values in the plan buffer: 8 colours of 4 words, then the depth.
pub const CLEAR_WORDS: u32 = 33;

/// The plan buffer's clear values for `clears` (`vkCmdClearAttachments`
/// attachments): colour slot `k` at words `4k..4k+4`, the depth at 32.
pub fn clear_words(clears: &[vk::ClearAttachment]) -> [u32; CLEAR_WORDS as usize] {
    let mut w = [0u32; CLEAR_WORDS as usize];
    for c in clears {
        // SAFETY: reading the union as the member its aspect names (colours as float bits; the draw is made only
        // for float formats).
        unsafe {
            if c.aspect_mask.contains(vk::ImageAspectFlags::COLOR) && c.color_attachment < 8 {
                let k = c.color_attachment as usize * 4;
                w[k..k + 4].copy_from_slice(&c.clear_value.color.uint32);
            }
            if c.aspect_mask.contains(vk::ImageAspectFlags::DEPTH) {
                w[32] = c.clear_value.depth_stencil.depth.to_bits();
            }
        }
    }
    w
}

/// The stencil reference of `clears` (its clear value) where they clear the stencil.
pub fn stencil(clears: &[vk::ClearAttachment]) -> Option<u32> {
    clears
        .iter()
        .find(|c| c.aspect_mask.contains(vk::ImageAspectFlags::STENCIL))
        // SAFETY: a stencil clear's value is its depth_stencil member.
        .map(|c| unsafe { c.clear_value.depth_stencil.stencil })
}

/// The clear pipeline of application render pass `render_pass` for `clears`
/// (what its twin's instance must clear), made at the first call; `None`
/// where the draw cannot do them (module doc).
///
/// # Safety
/// `d` is `f`'s device (`raw`); `o` is `f`'s table with its common objects made.
pub(super) unsafe fn pipeline(
    f: &Fdm,
    d: &ash::Device,
    o: &mut Objects,
    render_pass: vk::RenderPass,
    clears: &[vk::ClearAttachment],
) -> Option<vk::Pipeline> {
    // The clear depth is the vertices' depth: it must lie in the viewport's [0, 1] (checked at each begin, the
    // values being the begin's).
    let in_range = clears.iter().filter(|c| c.aspect_mask.contains(vk::ImageAspectFlags::DEPTH)).all(|c| {
        // SAFETY: a depth clear's value is its depth_stencil member.
        (0.0..=1.0).contains(&unsafe { c.clear_value.depth_stencil.depth })
    });
    if !in_range {
        return None;
    }
    if let Some(&p) = o.clears.get(&render_pass) {
        return (p != vk::Pipeline::null()).then_some(p);
    }
    let made = f.passes.lock().get(&render_pass).cloned().and_then(|info| {
        // SAFETY: the caller's guarantee.
        unsafe { make(d, o, render_pass, &info, clears) }
    });
    // Null: tried and not drawable; the clears under predicates stay for this render pass.
    o.clears.insert(render_pass, made.unwrap_or_default());
    made
}

/// [`pipeline`]'s work.
///
/// # Safety
/// As [`pipeline`].
unsafe fn make(
    d: &ash::Device,
    o: &mut Objects,
    render_pass: vk::RenderPass,
    info: &super::PassInfo,
    clears: &[vk::ClearAttachment],
) -> Option<vk::Pipeline> {
    let (slots, depth_at) = &info.first_subpass;
    let cleared = |k: usize| {
        clears.iter().any(|c| c.aspect_mask.contains(vk::ImageAspectFlags::COLOR) && c.color_attachment as usize == k)
    };
    let used: Vec<usize> = (0..slots.len()).filter(|&k| slots[k].is_some()).collect();
    // Every colour attachment cleared, or none (one write mask for all: no independent blending needed).
    let colours = used.iter().filter(|&&k| cleared(k)).count();
    if slots.len() > 8 || colours != 0 && colours != used.len() {
        return None;
    }
    let desc = |a: u32| info.attachments.get(a as usize);
    if used.iter().any(|&k| slots[k].and_then(desc).is_none_or(|a| integer(a.format))) {
        return None;
    }
    let aspect = |flag| clears.iter().any(|c| c.aspect_mask.contains(flag));
    let (depth, stencil) = (aspect(vk::ImageAspectFlags::DEPTH), aspect(vk::ImageAspectFlags::STENCIL));
    let samples = used.iter().filter_map(|&k| slots[k]).chain(*depth_at).find_map(desc).map(|a| a.samples)?;
    // SAFETY: the caller's guarantee; create infos built here from locals and the layer's own objects.
    unsafe {
        if o.clear_modules.is_empty() {
            for code in std::iter::once(overlap_shaders::fdm::CLEAR_VERT).chain(overlap_shaders::fdm::CLEAR_FRAGS) {
                let w = words(code);
                match d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&w), None) {
                    Ok(m) => o.clear_modules.push(m),
                    Err(_) => {
                        for m in o.clear_modules.drain(..) {
                            d.destroy_shader_module(m, None);
                        }
                        return None;
                    }
                }
            }
        }
        let stages = [
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(o.clear_modules[0])
                .name(c"main"),
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(o.clear_modules[1 + slots.len()])
                .name(c"main"),
        ];
        let mask = if colours > 0 { vk::ColorComponentFlags::RGBA } else { vk::ColorComponentFlags::empty() };
        let blend = vec![vk::PipelineColorBlendAttachmentState::default().color_write_mask(mask); slots.len()];
        let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
        let msi = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(samples);
        let replace = vk::StencilOpState::default()
            .compare_op(vk::CompareOp::ALWAYS)
            .pass_op(vk::StencilOp::REPLACE)
            .depth_fail_op(vk::StencilOp::REPLACE)
            .fail_op(vk::StencilOp::REPLACE)
            .compare_mask(0xff)
            .write_mask(0xff);
        let dss = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(depth)
            .depth_write_enable(depth)
            .depth_compare_op(vk::CompareOp::ALWAYS)
            .stencil_test_enable(stencil)
            .front(replace)
            .back(replace);
        let dynamic = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR, vk::DynamicState::STENCIL_REFERENCE];
        let state = Drawn {
            stages: &stages,
            msi: &msi,
            blend: &cb,
            dss: depth_at.is_some().then_some(&dss),
            dynamic: &dynamic,
        };
        graphics_pipeline(d, &state, o.up_layout, render_pass).ok()
    }
}
