//! Enrichment alone: what filling a manifest from the sourced tables costs
//! (`pitfall_contract::enrich::enrich`: the hardware table by GPU name,
//! the instance table, the release table by package version, the model
//! table by model id), next to normalisation with it (`normalize`, what a
//! check runs before the rules). Timed on one thread's CPU clock, each
//! manifest many times over, so a figure is a per-call mean; p50 and p99
//! are taken over the manifests.

use pitfall_contract::Manifest;
use pitfall_contract::enrich::{Enrichment, enrich};
use pitfall_contract::normalize::normalize;

use crate::scale::thread_cpu_time;
use crate::stats::Summary;

/// Calls per manifest and figure: the mean of this many.
const CALLS: usize = 200;

/// Per-call CPU microseconds over a set of manifests.
#[derive(Debug, Clone)]
pub struct EnrichCost {
    /// How many manifests.
    pub manifests: usize,
    /// Fields the tables filled, over all manifests (one pass each).
    pub filled: usize,
    /// `enrich` alone (the manifest's clone taken off).
    pub enrich: Summary,
    /// `normalize`, which ends in `enrich`.
    pub normalize: Summary,
}

/// Times enrichment and normalisation on `manifests` as a client sends
/// them (the clone each call starts from is timed apart and taken off).
pub fn measure(manifests: &[Manifest]) -> EnrichCost {
    let per_call = |m: &Manifest, f: &dyn Fn(&mut Manifest) -> usize| -> f64 {
        let mut sink = 0usize;
        let start = thread_cpu_time();
        for _ in 0..CALLS {
            let mut copy = m.clone();
            sink ^= f(&mut copy);
        }
        let with = thread_cpu_time() - start;
        let start = thread_cpu_time();
        for _ in 0..CALLS {
            sink ^= std::hint::black_box(m.clone()).packages.len();
        }
        let clone = thread_cpu_time() - start;
        std::hint::black_box(sink);
        (with.as_secs_f64() - clone.as_secs_f64()).max(0.0) * 1e6 / CALLS as f64
    };
    let enrich_once = |m: &mut Manifest| {
        let mut filled = Enrichment::default();
        enrich(m, &mut filled);
        filled.entries.len()
    };
    let normalize_once = |m: &mut Manifest| normalize(m).entries.len();
    let filled = manifests.iter().map(|m| enrich_once(&mut m.clone())).sum();
    let enrich_us: Vec<f64> = manifests.iter().map(|m| per_call(m, &enrich_once)).collect();
    let normalize_us: Vec<f64> = manifests.iter().map(|m| per_call(m, &normalize_once)).collect();
    EnrichCost {
        manifests: manifests.len(),
        filled,
        enrich: Summary::of_us(&enrich_us),
        normalize: Summary::of_us(&normalize_us),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_g5g_manifest_is_enriched_and_timed() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json");
        let bytes = std::fs::read(&path).expect("the G5g fixture");
        let manifest = pitfall_contract::parse_manifest(&bytes).expect("a manifest");
        let cost = measure(&[manifest]);
        assert!(cost.filled > 0, "the T4G and the Gemma 4 model are in the tables");
        assert!(cost.enrich.p50 > 0.0 && cost.normalize.p50 >= 0.0);
    }
}
