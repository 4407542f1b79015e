//! `debug_fdm_steps`: the GPU time of a planned pass's steps, for
//! measuring only. Each pass planned on the GPU writes a timestamp before
//! its plan and after each step (the plan, each area's downscales and
//! render pass instance, the upscales, the final transitions; each step
//! ends in the layer's full barrier or an instance's end, so a timestamp at
//! the bottom of the pipe closes it); the next planned pass logs the
//! previous one's (debug level) where its work has completed, with one
//! layer query pool per device (a pass overwrites the previous one's).

use super::Fdm;
use ash::vk;
use parking_lot::Mutex;

/// Timestamps a pass writes at most.
const QUERIES: u32 = 16;

#[derive(Default)]
pub struct Steps {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    pool: vk::QueryPool,
    /// Nanoseconds a tick.
    period: f64,
    /// The steps the last pass wrote, after its first timestamp.
    written: Vec<String>,
}

impl Steps {
    /// At a planned pass's start (`cb` recording, outside a render pass):
    /// the previous pass's step times if they are there (microseconds, as
    /// `name time` pairs), and the pool reset and the first timestamp
    /// written; `None` also where no pool can be made.
    ///
    /// # Safety
    /// `cb` is a recording command buffer of `f`'s device, outside a render pass, on a queue with timestamps.
    pub(super) unsafe fn start(&self, f: &Fdm, cb: vk::CommandBuffer, period: f32) -> Option<String> {
        let mut inner = self.inner.lock();
        let d = &f.below;
        if inner.pool == vk::QueryPool::null() {
            let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(QUERIES);
            // SAFETY: a create info built here; the pool is the layer's own, destroyed with the device.
            inner.pool = unsafe { d.create_query_pool(&info, None) }.ok()?;
            inner.period = period as f64;
        }
        let mut report = None;
        let n = inner.written.len() + 1;
        if n > 1 {
            let mut ticks = vec![0u64; n];
            // SAFETY: the pool's first `n` queries, written by the previous pass (no wait: not ready is an error).
            let r = unsafe { d.get_query_pool_results(inner.pool, 0, &mut ticks, vk::QueryResultFlags::TYPE_64) };
            if r.is_ok() {
                let us = |k: usize| ticks[k + 1].wrapping_sub(ticks[k]) as f64 * inner.period / 1000.0;
                let steps: Vec<String> =
                    inner.written.iter().enumerate().map(|(k, name)| format!("{name} {:.1}", us(k))).collect();
                let total = ticks[n - 1].wrapping_sub(ticks[0]) as f64 * inner.period / 1000.0;
                report = Some(format!("{} (total {total:.1})", steps.join(", ")));
            }
        }
        inner.written.clear();
        // SAFETY: the caller's guarantee; the pool is the layer's own.
        unsafe {
            d.cmd_reset_query_pool(cb, inner.pool, 0, QUERIES);
            d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, inner.pool, 0);
        }
        report
    }

    /// The end of step `name`: a timestamp at the bottom of the pipe.
    ///
    /// # Safety
    /// As [`Steps::start`], after it in `cb`.
    pub(super) unsafe fn mark(&self, f: &Fdm, cb: vk::CommandBuffer, name: String) {
        let mut inner = self.inner.lock();
        let k = inner.written.len() as u32 + 1;
        if inner.pool == vk::QueryPool::null() || k >= QUERIES {
            return;
        }
        inner.written.push(name);
        // SAFETY: the caller's guarantee; query `k` was reset by `start`.
        unsafe { f.below.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, inner.pool, k) };
    }

    /// # Safety
    /// The device is idle.
    pub(super) unsafe fn destroy(&self, f: &Fdm) {
        let pool = std::mem::take(&mut self.inner.lock().pool);
        if pool != vk::QueryPool::null() {
            // SAFETY: the layer's own pool; the device is idle (the caller's guarantee).
            unsafe { f.below.destroy_query_pool(pool, None) };
        }
    }
}
