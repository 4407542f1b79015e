//! The stale-view scene (issue 36): a set with two storage-image bindings,
//! both written; the application destroys the second view and its image
//! (and frees its memory) — legal, since no pipeline uses that binding —
//! then draws with a pipeline that uses neither binding, the set bound,
//! many times. lavapipe 22.3 reads every image descriptor of a bound set
//! when the draw executes, so it reads the freed view: to make that read a
//! crash rather than luck, the scene first refills the freed heap chunks
//! with a byte pattern (`spray`: host allocations of every small size,
//! written with 0xA5, in the thread that freed them). Through Overlap with
//! `defer_view_destruction` the view is not destroyed yet and the draws are
//! safe; the picture is checked.

use crate::render::{Gpu, RenderPath, Target};
use ash::vk;

/// Host allocations of 16..=2048 bytes, a few of each size, filled with a
/// pattern: they take the heap chunks the driver just freed in this thread.
fn spray() -> Vec<Vec<u8>> {
    let mut keep = Vec::new();
    for size in (16..=2048).step_by(16) {
        for _ in 0..8 {
            keep.push(vec![0xA5u8; size]);
        }
    }
    keep
}

/// How the scene writes its set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// `vkUpdateDescriptorSets` writes.
    Writes,
    /// `vkUpdateDescriptorSetWithTemplate` (as vkd3d-proton and DXVK write theirs).
    Template,
}

/// Runs the scene: `Ok(pixel)` of the target's first pixel after `draws`
/// submissions of one draw each.
pub fn run(gpu: &Gpu, draws: u32, update: Update) -> Result<[u8; 4], String> {
    let d = &gpu.device;
    let target = Target::new(gpu, RenderPath::RenderPass, 64, 64);
    unsafe {
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..2)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::FRAGMENT)
            })
            .collect();
        let set_layout = d
            .create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None)
            .map_err(|e| format!("vk:{e:?}"))?;
        let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_IMAGE, descriptor_count: 2 }];
        let pool = d
            .create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None)
            .map_err(|e| format!("vk:{e:?}"))?;
        let layouts = [set_layout];
        let set = d
            .allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts),
            )
            .map_err(|e| format!("vk:{e:?}"))?[0];
        let usage = vk::ImageUsageFlags::STORAGE;
        let kept = gpu.image_2d(vk::Format::R32_UINT, (16, 16), vk::SampleCountFlags::TYPE_1, usage);
        let gone = gpu.image_2d(vk::Format::R32_UINT, (16, 16), vk::SampleCountFlags::TYPE_1, usage);
        // Both images in GENERAL layout (what a storage descriptor names).
        gpu.one_time_submit(|cb| {
            let barriers: Vec<vk::ImageMemoryBarrier> = [kept.0, gone.0]
                .iter()
                .map(|i| {
                    vk::ImageMemoryBarrier::default()
                        .image(*i)
                        .old_layout(vk::ImageLayout::UNDEFINED)
                        .new_layout(vk::ImageLayout::GENERAL)
                        .subresource_range(crate::render::color_range())
                })
                .collect();
            d.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                vk::PipelineStageFlags::FRAGMENT_SHADER,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &barriers,
            );
        });
        let infos = [kept.2, gone.2].map(|v| {
            [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view: v,
                image_layout: vk::ImageLayout::GENERAL,
            }]
        });
        let writes: Vec<vk::WriteDescriptorSet> = (0..2)
            .map(|b| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(b as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                    .image_info(&infos[b])
            })
            .collect();
        match update {
            Update::Writes => d.update_descriptor_sets(&writes, &[]),
            Update::Template => {
                let stride = std::mem::size_of::<vk::DescriptorImageInfo>();
                let entries: Vec<vk::DescriptorUpdateTemplateEntry> = (0..2)
                    .map(|b| vk::DescriptorUpdateTemplateEntry {
                        dst_binding: b,
                        dst_array_element: 0,
                        descriptor_count: 1,
                        descriptor_type: vk::DescriptorType::STORAGE_IMAGE,
                        offset: b as usize * stride,
                        stride,
                    })
                    .collect();
                let template = d
                    .create_descriptor_update_template(
                        &vk::DescriptorUpdateTemplateCreateInfo::default()
                            .descriptor_update_entries(&entries)
                            .template_type(vk::DescriptorUpdateTemplateType::DESCRIPTOR_SET)
                            .descriptor_set_layout(set_layout),
                        None,
                    )
                    .map_err(|e| format!("vk:{e:?}"))?;
                let data = [infos[0][0], infos[1][0]];
                d.update_descriptor_set_with_template(set, template, data.as_ptr() as *const std::ffi::c_void);
                d.destroy_descriptor_update_template(template, None);
            }
        }
        // Legal: no pipeline uses binding 1 from here on.
        gpu.destroy_image(gone);
        let sprayed = spray();
        let layout = d
            .create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts), None)
            .map_err(|e| format!("vk:{e:?}"))?;
        let vert = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
        let frag = &include_bytes!(concat!(env!("OUT_DIR"), "/stale_view.frag.spv"))[..];
        let pipeline = target.pipeline_with(gpu, layout, vert, frag, true);
        for i in 0..draws.max(1) {
            gpu.one_time_submit(|cb| {
                target.begin(gpu, cb);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
                d.cmd_draw(cb, 3, 1, 0, 0);
                target.end(gpu, cb);
                if i + 1 == draws.max(1) {
                    target.record_copy_out(gpu, cb);
                }
            });
        }
        drop(sprayed);
        let picture = target.read(gpu);
        let pixel = [picture.rgba[0], picture.rgba[1], picture.rgba[2], picture.rgba[3]];
        d.destroy_pipeline(pipeline, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        gpu.destroy_image(kept);
        target.destroy(gpu);
        Ok(pixel)
    }
}
