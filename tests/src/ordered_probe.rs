//! The ordered-interlock probe (issue 34, item 1: "measure first"):
//! `overlap-testapp ordered-probe [sizes=W,…] [layers=N,…] [reps=R]
//! [only=WORD,…] [alu=N] [allocs=N] [devices=N]`. No layer is needed (it measures the driver): each
//! variant of `tests/shaders/ordered_probe.frag` (specialization constants)
//! draws `layers` instanced full-screen quads, as the interlock bench and
//! the full OIT scene do, and the GPU time of the draw comes from timestamp
//! queries written outside the render pass (a full barrier before each
//! draw; the first of `reps + 1` draws is a warm-up; the median is kept).
//!
//! Printed: one `probe=… size=… layers=… gpu_ns=… ns_per_fragment=…` line a
//! measurement, then the table of ns per fragment (markdown) and the same
//! less the `none` variant (the draw without memory traffic) of its column.
//!
//! The variants (see the shader for the layouts and operations): `none`;
//! `dense`/`linear`/`rec288`/`rec544` `.kK.OP` — K dependent accesses to the
//! pixel's word(s) then one plain store; `count.*` — the count draw: a
//! trivial shader or the whole module (the OIT insert, `oit`, or the insert
//! after a material's ALU loop, `heavy`) terminating after its accesses, one
//! atomicAdd into a dense plane or today's append into the records;
//! `run.*` — the module's body alone (the application's own draw); and
//! item 3's `record.dense-add-16B` (a dense counter, then 16 bytes of
//! inputs in one uvec4 plane a slot) and `record.dense-add-words` (the same
//! in four word planes a slot; `-keyed`: with the key), and `resolve.oit` /
//! `resolve.oit-words` (drawn once: each pixel runs the OIT insert on its
//! `layers` records), `resolve.oit-sorted` (sorting them by key first) and
//! `resolve.oit-checked` (sorting only where their keys are out of order). Results: docs/design/ordered-interlock.md §9.

use crate::render::Gpu;
use ash::vk;

const NONE: u32 = 0;
const DENSE: u32 = 1;
const RECORDS: u32 = 2;
const LINEAR: u32 = 3;
const IMAGE: u32 = 4;
const PLANES: u32 = 5;

const LOAD: u32 = 0;
const ADD: u32 = 1;
const CAS: u32 = 2;
const ACQUIRE: u32 = 3;
const ACQUIRE_CAS: u32 = 4;
const FENCE: u32 = 5;
const APPEND: u32 = 6;
const RECORD: u32 = 7;
const RECORD_WORDS: u32 = 8;
const RECORD_KEYED: u32 = 9;
const RECORD_CHECKED: u32 = 10;
/// Planes of the record variant (`ordered_probe.frag`'s RECORD_PLANES).
const RECORD_PLANES: u32 = 8;

#[derive(Clone, Debug)]
struct Variant {
    name: String,
    layout: u32,
    /// Words per record (72: 288 bytes, 136: 544 bytes).
    stride: u32,
    k: u32,
    op: u32,
    store: bool,
    /// 0 none, 1 the OIT insert, 2 the insert after the ALU loop, 3 the
    /// resolve (one instance; each pixel reads `layers` records).
    body: u32,
    /// With a body: 0 the count draw (accesses, then discard), 1 the body.
    mode: u32,
}

impl Variant {
    fn new(name: &str, layout: u32, stride: u32, k: u32, op: u32, store: bool) -> Variant {
        Variant { name: name.to_string(), layout, stride, k, op, store, body: 0, mode: 0 }
    }
}

impl Variant {
    /// Words of the cells buffer a pixel needs.
    fn words(&self) -> u32 {
        match (self.layout, self.op) {
            (RECORDS, _) => self.stride,
            (PLANES, _) => self.k + 1,
            (_, RECORD | RECORD_WORDS | RECORD_KEYED | RECORD_CHECKED) => 1 + 4 * RECORD_PLANES,
            _ => 1,
        }
    }
}

fn op_name(op: u32) -> &'static str {
    [
        "load",
        "add",
        "cas",
        "acquire",
        "acquire-cas",
        "fence",
        "append",
        "record",
        "record-words",
        "record-keyed",
        "record-checked",
    ][op as usize]
}

fn variants() -> Vec<Variant> {
    let mut v = vec![Variant::new("none", NONE, 72, 0, LOAD, false)];
    let layouts: [(&str, u32, u32); 6] = [
        ("dense", DENSE, 1),
        ("linear", LINEAR, 1),
        ("rec288", RECORDS, 72),
        ("rec544", RECORDS, 136),
        ("image", IMAGE, 1),
        ("planes", PLANES, 1),
    ];
    // (b), (c): plain dependent loads and a store; (d) atomics; (e) acquire
    // loads, acquire CAS, a fence.
    for (layout, ks, ops) in [
        ("dense", &[0u32, 1, 2, 4, 8][..], &[LOAD][..]),
        ("linear", &[4][..], &[LOAD][..]),
        ("rec288", &[0, 1, 2, 4, 8][..], &[LOAD][..]),
        ("rec544", &[1, 2, 4, 8][..], &[LOAD][..]),
        ("dense", &[1, 2, 4, 8][..], &[ADD, ACQUIRE][..]),
        ("rec288", &[1, 2, 4, 8][..], &[ADD, ACQUIRE][..]),
        ("rec544", &[4][..], &[ADD, ACQUIRE][..]),
        ("dense", &[1, 4][..], &[CAS, ACQUIRE_CAS, FENCE][..]),
        ("rec288", &[1, 4][..], &[CAS, ACQUIRE_CAS, FENCE][..]),
        // The spinlock's lock image against the dense buffer plane.
        ("image", &[0, 1, 4][..], &[LOAD, ADD, CAS, ACQUIRE_CAS][..]),
        ("dense", &[1, 4][..], &[CAS, ACQUIRE_CAS][..]),
        // The ordered strategy's planes walked slot by slot.
        ("planes", &[4, 8, 24][..], &[LOAD, ADD][..]),
    ] {
        let (_, l, stride) = *layouts.iter().find(|x| x.0 == layout).unwrap();
        for &op in ops {
            for &k in ks {
                let name = if k == 0 { format!("{layout}.k0.store") } else { format!("{layout}.k{k}.{}", op_name(op)) };
                if !v.iter().any(|x: &Variant| x.name == name) {
                    v.push(Variant::new(&name, l, stride, k, op, true));
                }
            }
        }
    }
    // (f) the count draw: a trivial shader or the whole module, one atomic
    // into a dense plane or today's append into the 288-byte records.
    for (body, bname) in [(0, "trivial"), (1, "oit"), (2, "heavy")] {
        for (layout, stride, op, lname) in [(DENSE, 1, ADD, "dense-add"), (RECORDS, 72, APPEND, "rec288-append")] {
            let mut x = Variant::new(&format!("count.{bname}.{lname}"), layout, stride, 1, op, false);
            x.body = body;
            v.push(x);
        }
    }
    // Item 3's run draw: one atomicAdd on a dense per-pixel counter, then the
    // section's inputs (16 bytes) stored into plane `n mod 8` of the pixel.
    // The same inputs as four word planes a record slot (each store dense).
    v.push(Variant::new("record.dense-add-16B", DENSE, 1, 1, RECORD, false));
    v.push(Variant::new("record.dense-add-words", DENSE, 1, 1, RECORD_WORDS, false));
    v.push(Variant::new("record.dense-add-keyed", DENSE, 1, 1, RECORD_KEYED, false));
    // Its resolve, drawn once: each pixel runs the OIT insert on its
    // `layers` records (no sort).
    // With the key recorded, the resolve sorts first.
    for (name, op) in [
        ("resolve.oit", RECORD),
        ("resolve.oit-words", RECORD_WORDS),
        ("resolve.oit-sorted", RECORD_KEYED),
        ("resolve.oit-checked", RECORD_CHECKED),
    ] {
        let mut x = Variant::new(name, DENSE, 1, 1, op, false);
        x.body = 3;
        x.mode = 1;
        v.push(x);
    }
    for (body, bname) in [(1, "oit"), (2, "heavy")] {
        let mut x = Variant::new(&format!("run.{bname}"), NONE, 72, 0, LOAD, false);
        x.body = body;
        x.mode = 1;
        v.push(x);
    }
    v
}

fn list<T: std::str::FromStr + Clone>(args: &[String], key: &str, default: &[T]) -> Result<Vec<T>, String> {
    match args.iter().find_map(|a| a.strip_prefix(key).and_then(|v| v.strip_prefix('='))) {
        None => Ok(default.to_vec()),
        Some(v) => v.split(',').map(|s| s.parse().map_err(|_| format!("{key}={v}: not a list"))).collect(),
    }
}

/// `devices=N`: how many devices the test program runs the probe on, one
/// after another (at least 1).
pub fn devices(args: &[String]) -> usize {
    list(args, "devices", &[1usize]).map(|v| v[0]).unwrap_or(1).max(1)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// `ordered-probe [sizes=512,1024,2048] [layers=8,16,31] [reps=4] [only=WORD,…] [alu=16] [allocs=1]`.
pub fn main(gpu: &Gpu, args: &[String]) -> Result<(), String> {
    let sizes: Vec<u32> = list(args, "sizes", &[512, 1024, 2048])?;
    let layer_counts: Vec<u32> = list(args, "layers", &[8, 16, 31])?;
    let reps: usize = list(args, "reps", &[4usize])?[0].max(1);
    let alu: u32 = list(args, "alu", &[16u32])?[0];
    let only: Vec<String> = list(args, "only", &[])?;
    // `allocs=N`: every size measured on N cell buffers allocated one after
    // another in this process, each kept until the end (so each is a new
    // placement), a line each (`alloc=`): whether a speed belongs to the
    // allocation or to the process.
    let allocs: u32 = list(args, "allocs", &[1u32])?[0].max(1);
    if sizes.iter().any(|s| *s == 0 || s % 8 != 0) {
        return Err("sizes: multiples of 8".into());
    }
    let all = variants();
    let chosen: Vec<Variant> = all
        .into_iter()
        .filter(|v| v.name == "none" || only.is_empty() || only.iter().any(|o| v.name.contains(o.as_str())))
        .collect();
    let d = &gpu.device;
    let limits = gpu.properties.limits;
    let period = f64::from(limits.timestamp_period);
    println!("device={} timestamp_period_ns={period} alu={alu} reps={reps}", gpu.device_name);
    let props = unsafe { gpu.instance.get_physical_device_queue_family_properties(gpu.pd) };
    if props[gpu.queue_family as usize].timestamp_valid_bits == 0 {
        return Err("the queue has no timestamps".into());
    }

    unsafe {
        // The pipeline layout: the cells, the body's three buffers, the image.
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..5)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(if b == 4 {
                        vk::DescriptorType::STORAGE_IMAGE
                    } else {
                        vk::DescriptorType::STORAGE_BUFFER
                    })
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::FRAGMENT)
            })
            .collect();
        let (set_layout, pool, set) = gpu.descriptor_set(&bindings);
        let layouts = [set_layout];
        let push = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::FRAGMENT, offset: 0, size: 16 }];
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts).push_constant_ranges(&push),
                None,
            )
            .map_err(|e| format!("vk:{e:?}"))?;
        let att = [vk::AttachmentDescription::default()
            .format(vk::Format::R8G8B8A8_UNORM)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::DONT_CARE)
            .store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)];
        let refs = [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
        let sub = [vk::SubpassDescription::default().color_attachments(&refs)];
        let render_pass = d
            .create_render_pass(&vk::RenderPassCreateInfo::default().attachments(&att).subpasses(&sub), None)
            .map_err(|e| format!("vk:{e:?}"))?;
        let vs = gpu.shader(include_bytes!(concat!(env!("OUT_DIR"), "/ordered_probe.vert.spv")));
        let fs = gpu.shader(include_bytes!(concat!(env!("OUT_DIR"), "/ordered_probe.frag.spv")));
        let mut pipelines = Vec::new();
        for v in &chosen {
            let data: [u32; 7] = [v.layout, v.stride, v.k, v.op, v.store as u32, v.body, alu];
            let entries =
                [0u32, 1, 2, 3, 4, 5, 6].map(|i| vk::SpecializationMapEntry { constant_id: i, offset: i * 4, size: 4 });
            let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_ne_bytes()).collect();
            let spec = vk::SpecializationInfo::default().map_entries(&entries).data(&bytes);
            let stages = [
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::VERTEX)
                    .module(vs)
                    .name(c"main"),
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .module(fs)
                    .name(c"main")
                    .specialization_info(&spec),
            ];
            let p = gpu.pipeline(&stages, layout, vk::PrimitiveTopology::TRIANGLE_LIST, false, &[], |info| {
                d.create_graphics_pipelines(vk::PipelineCache::null(), &[info.render_pass(render_pass)], None)
            });
            pipelines.push(p.map_err(|(_, e)| format!("vk:{e:?}"))?[0]);
        }
        let queries = 2 * (reps as u32 + 1);
        let query_pool = d
            .create_query_pool(
                &vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(queries),
                None,
            )
            .map_err(|e| format!("vk:{e:?}"))?;
        let cmd_pool = d
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(gpu.queue_family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
            .map_err(|e| format!("vk:{e:?}"))?;
        let cb = d
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default().command_pool(cmd_pool).command_buffer_count(1),
            )
            .map_err(|e| format!("vk:{e:?}"))?[0];

        // results[variant][column] = ns per fragment; columns are (size, layers).
        let columns: Vec<(u32, u32)> = sizes.iter().flat_map(|&s| layer_counts.iter().map(move |&n| (s, n))).collect();
        let mut results = vec![vec![None::<f64>; columns.len()]; chosen.len()];
        let mut kept = Vec::new();
        for (alloc, &size) in (0..allocs).flat_map(|a| sizes.iter().map(move |s| (a, s))) {
            let pixels = u64::from(size) * u64::from(size);
            let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
            // The cells: as many words a pixel as the largest variant that
            // fits in one storage buffer needs.
            let fits = |v: &Variant| pixels * 4 * u64::from(v.words()) <= u64::from(limits.max_storage_buffer_range);
            let words = chosen.iter().filter(|v| fits(v)).map(Variant::words).max().unwrap_or(1);
            for v in chosen.iter().filter(|v| !fits(v)) {
                println!("probe={} size={size}: skipped (beyond maxStorageBufferRange)", v.name);
            }
            let cell_bytes = pixels * 4 * u64::from(words);
            let cells = gpu.buffer(cell_bytes, usage, false);
            let counts = gpu.buffer(pixels * 4, usage, false);
            let slots = gpu.buffer(pixels * 16, usage, false);
            let tail = gpu.buffer(pixels * 16, usage, false);
            let infos: Vec<[vk::DescriptorBufferInfo; 1]> = [&cells, &counts, &slots, &tail]
                .iter()
                .map(|b| [vk::DescriptorBufferInfo { buffer: b.buffer, offset: 0, range: vk::WHOLE_SIZE }])
                .collect();
            let writes: Vec<vk::WriteDescriptorSet> = infos
                .iter()
                .enumerate()
                .map(|(i, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(i as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
            let lock = gpu.image_2d(
                vk::Format::R32_UINT,
                (size, size),
                vk::SampleCountFlags::TYPE_1,
                vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::TRANSFER_DST,
            );
            let lock_info = [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view: lock.2,
                image_layout: vk::ImageLayout::GENERAL,
            }];
            d.update_descriptor_sets(
                &[vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(4)
                    .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                    .image_info(&lock_info)],
                &[],
            );
            gpu.one_time_submit(|cb| {
                for b in [&cells, &counts, &slots, &tail] {
                    gpu.zero_for_fragment_shaders(cb, b.buffer);
                }
                let range = vk::ImageSubresourceRange {
                    aspect_mask: vk::ImageAspectFlags::COLOR,
                    base_mip_level: 0,
                    level_count: 1,
                    base_array_layer: 0,
                    layer_count: 1,
                };
                let transfer = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
                gpu.image_from_undefined(cb, lock.0, range, vk::ImageLayout::GENERAL, transfer);
                d.cmd_clear_color_image(
                    cb,
                    lock.0,
                    vk::ImageLayout::GENERAL,
                    &vk::ClearColorValue { uint32: [0; 4] },
                    &[range],
                );
                let shaders = (
                    vk::PipelineStageFlags::FRAGMENT_SHADER,
                    vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                );
                gpu.image_barrier(
                    cb,
                    lock.0,
                    range,
                    (vk::ImageLayout::GENERAL, vk::ImageLayout::GENERAL),
                    transfer,
                    shaders,
                );
            });
            let (color, color_memory, color_view) = gpu.image_2d(
                vk::Format::R8G8B8A8_UNORM,
                (size, size),
                vk::SampleCountFlags::TYPE_1,
                vk::ImageUsageFlags::COLOR_ATTACHMENT,
            );
            let framebuffer = gpu.framebuffer(render_pass, &[color_view], (size, size));
            for (vi, v) in chosen.iter().enumerate() {
                if !fits(v) {
                    continue;
                }
                for &layers in &layer_counts {
                    let ns = time_draws(
                        gpu,
                        cb,
                        query_pool,
                        pipelines[vi],
                        layout,
                        set,
                        render_pass,
                        framebuffer,
                        size,
                        layers,
                        (v.body, v.mode),
                        reps,
                    )?;
                    let frags = pixels as f64 * f64::from(layers);
                    let per = ns * period / frags;
                    println!(
                        "probe={} size={size} layers={layers} alloc={alloc} gpu_ns={:.0} ns_per_fragment={per:.3}",
                        v.name,
                        ns * period
                    );
                    let col = columns.iter().position(|c| *c == (size, layers)).unwrap();
                    results[vi][col] = Some(per);
                }
            }
            d.destroy_framebuffer(framebuffer, None);
            gpu.destroy_image((color, color_memory, color_view));
            gpu.destroy_image(lock);
            kept.push(cells);
            for b in [counts, slots, tail] {
                gpu.destroy_buffer(b);
            }
        }
        for b in kept {
            gpu.destroy_buffer(b);
        }
        print_table("ns per fragment", &chosen, &columns, &results, None);
        print_table("ns per fragment less `none`", &chosen, &columns, &results, Some(0));

        d.destroy_command_pool(cmd_pool, None);
        d.destroy_query_pool(query_pool, None);
        for p in pipelines {
            d.destroy_pipeline(p, None);
        }
        d.destroy_shader_module(vs, None);
        d.destroy_shader_module(fs, None);
        d.destroy_render_pass(render_pass, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
    }
    Ok(())
}

fn print_table(
    title: &str,
    chosen: &[Variant],
    columns: &[(u32, u32)],
    results: &[Vec<Option<f64>>],
    less: Option<usize>,
) {
    println!("\n{title}\n");
    let head: Vec<String> = columns.iter().map(|(s, n)| format!("{s}² ×{n}")).collect();
    println!("| variant | {} |", head.join(" | "));
    println!("|---|{}", "---:|".repeat(columns.len()));
    for (vi, v) in chosen.iter().enumerate() {
        if less == Some(vi) {
            continue;
        }
        let cells: Vec<String> = (0..columns.len())
            .map(|c| match (results[vi][c], less.and_then(|b| results[b][c])) {
                (Some(x), Some(b)) => format!("{:.2}", x - b),
                (Some(x), None) if less.is_none() => format!("{x:.2}"),
                _ => "–".to_string(),
            })
            .collect();
        println!("| {} | {} |", v.name, cells.join(" | "));
    }
}

/// The median GPU time (in timestamp ticks) of `reps` draws of `layers`
/// full-screen instances, after one warm-up draw.
#[allow(clippy::too_many_arguments)]
unsafe fn time_draws(
    gpu: &Gpu,
    cb: vk::CommandBuffer,
    query_pool: vk::QueryPool,
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    set: vk::DescriptorSet,
    render_pass: vk::RenderPass,
    framebuffer: vk::Framebuffer,
    size: u32,
    layers: u32,
    (body, mode): (u32, u32),
    reps: usize,
) -> Result<f64, String> {
    let d = &gpu.device;
    let queries = 2 * (reps as u32 + 1);
    d.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty()).map_err(|e| format!("vk:{e:?}"))?;
    d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()).map_err(|e| format!("vk:{e:?}"))?;
    d.cmd_reset_query_pool(cb, query_pool, 0, queries);
    let extent = vk::Extent2D { width: size, height: size };
    let pc: [u32; 4] = [size, size, mode, layers];
    let instances = if body == 3 { 1 } else { layers };
    let pc_bytes: Vec<u8> = pc.iter().flat_map(|x| x.to_ne_bytes()).collect();
    for r in 0..=reps as u32 {
        // Every earlier draw done and its writes visible before the first timestamp.
        gpu.memory_barrier(
            cb,
            (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_WRITE),
            (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE),
        );
        d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, query_pool, 2 * r);
        d.cmd_begin_render_pass(
            cb,
            &vk::RenderPassBeginInfo::default()
                .render_pass(render_pass)
                .framebuffer(framebuffer)
                .render_area(vk::Rect2D { offset: vk::Offset2D::default(), extent }),
            vk::SubpassContents::INLINE,
        );
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
        d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
        d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::FRAGMENT, 0, &pc_bytes);
        d.cmd_set_viewport(
            cb,
            0,
            &[vk::Viewport { x: 0.0, y: 0.0, width: size as f32, height: size as f32, min_depth: 0.0, max_depth: 1.0 }],
        );
        d.cmd_set_scissor(cb, 0, &[vk::Rect2D { offset: vk::Offset2D::default(), extent }]);
        d.cmd_draw(cb, 6, instances, 0, 0);
        d.cmd_end_render_pass(cb);
        d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, query_pool, 2 * r + 1);
    }
    d.end_command_buffer(cb).map_err(|e| format!("vk:{e:?}"))?;
    gpu.submit_wait(&[cb]);
    let mut stamps = vec![0u64; queries as usize];
    d.get_query_pool_results(query_pool, 0, &mut stamps, vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT)
        .map_err(|e| format!("vk:{e:?}"))?;
    let times: Vec<f64> = (1..=reps).map(|r| stamps[2 * r + 1].wrapping_sub(stamps[2 * r]) as f64).collect();
    Ok(median(times))
}
