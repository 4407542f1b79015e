//! Replay planning: the bin plans ([`super::bins`]) of recent passes, by map
//! contents and pass shape.

use super::bins::{self, Rect};
use super::map_readback::MapTexels;
use parking_lot::Mutex;
use std::sync::Arc;

/// Plans made recently, by map contents and pass shape: a program that
/// re-records the same pass every frame plans it once (a 1080p map of 8x8
/// texels has 32,400 bins).
#[derive(Default)]
pub struct PlanCache(Mutex<Vec<(PlanKey, Vec<bins::Replay>)>>);

struct PlanKey {
    map: Arc<MapTexels>,
    render_area: Rect,
    texel: (u32, u32),
    layers: Vec<u32>,
    vertex_cost: f64,
}

impl PlanCache {
    const ENTRIES: usize = 8;

    /// The plan for `map` and `(render area, texel size, map layers, vertex
    /// cost)`, made by `plan` unless a recent pass had the same.
    pub fn get_or_plan(
        &self,
        map: &Arc<MapTexels>,
        (render_area, texel, layers, vertex_cost): (Rect, (u32, u32), &[u32], f64),
        plan: impl FnOnce() -> Vec<bins::Replay>,
    ) -> Vec<bins::Replay> {
        let same = |k: &PlanKey| {
            k.render_area == render_area
                && k.texel == texel
                && k.layers == layers
                && k.vertex_cost == vertex_cost
                && (Arc::ptr_eq(&k.map, map)
                    || (k.map.width, k.map.height, k.map.layers) == (map.width, map.height, map.layers)
                        && k.map.texels == map.texels)
        };
        {
            let mut plans = self.0.lock();
            if let Some(i) = plans.iter().position(|(k, _)| same(k)) {
                let hit = plans.remove(i);
                let replays = hit.1.clone();
                plans.insert(0, hit);
                return replays;
            }
        }
        let replays = plan();
        let key = PlanKey { map: map.clone(), render_area, texel, layers: layers.to_vec(), vertex_cost };
        let mut plans = self.0.lock();
        plans.insert(0, (key, replays.clone()));
        plans.truncate(Self::ENTRIES);
        replays
    }
}
