//! Realistic manifests: a fleet of different machines, drawn from a seed.
//! GPUs from the hardware table (weighted towards what clouds rent now),
//! the head ML packages at mostly recent releases, a few dozen other ML
//! packages from the corpus's pool, a hundred or more general packages
//! that no rule concerns (a Python environment has 100-300 packages, of
//! which a few dozen are ML ones), a serving engine, now and then one of
//! the environment variables the GPU-family rules look for.

use serde_json::{Value, json};

use crate::corpus::{HEAD_PACKAGES, RELEASES, package_name, pool_size, release};
use crate::rng::{Rng, Zipf};

/// GPU models (hardware table names) and how common each is in the fleet.
const GPUS: &[(&str, f64)] = &[
    ("H100 SXM", 0.25),
    ("A100 80GB", 0.15),
    ("H200", 0.10),
    ("L4", 0.10),
    ("A10G", 0.10),
    ("T4", 0.10),
    ("L40S", 0.05),
    ("RTX 4090", 0.05),
    ("A100 40GB", 0.05),
    ("V100 16GB", 0.05),
];

/// ML packages from the corpus's pool per machine, besides the head ones.
pub const TAIL_PACKAGES: usize = 24;

/// General packages per machine (requests, numpy's neighbours, ...):
/// between these bounds. No rule concerns them; they are what the index
/// and the selectors must skip at no cost.
pub const GENERAL_PACKAGES: (usize, usize) = (80, 250);

/// The general packages machines draw from.
const GENERAL_POOL: usize = 3000;

/// The name of general package `k` (never a name of the corpus's pool).
pub fn general_package_name(k: usize) -> String {
    format!("general-pkg-{k:04}")
}

/// `n` distinct manifests for a registry of `rules` rules.
pub fn fleet(n: usize, rules: usize, seed: u64) -> Vec<Value> {
    let mut rng = Rng::new(seed);
    let tail = Zipf::new(pool_size(rules), crate::corpus::ZIPF_EXPONENT);
    let weights: Vec<f64> = GPUS.iter().map(|g| g.1).collect();
    (0..n)
        .map(|i| {
            // Most machines run recent releases of the head packages.
            let recent = |rng: &mut Rng| release(RELEASES - 1 - (10.0 * rng.unit().powi(2)) as usize);
            let mut packages = Vec::new();
            for name in HEAD_PACKAGES {
                if rng.unit() < 0.8 {
                    packages.push(json!({"name": name, "version": recent(&mut rng), "ecosystem": "pypi"}));
                }
            }
            let mut seen: Vec<usize> = Vec::new();
            // Half the Zipf draws land on the head (taken above) or repeat:
            // draw again, within a bound that a pool of 48 or more names
            // never reaches.
            for _ in 0..10_000 {
                if seen.len() == TAIL_PACKAGES {
                    break;
                }
                let k = tail.sample(&mut rng);
                if k < HEAD_PACKAGES.len() || seen.contains(&k) {
                    continue;
                }
                seen.push(k);
                let idx = ((RELEASES - 1) as f64 * rng.unit().powf(0.3)) as usize;
                packages.push(json!({"name": package_name(k), "version": release(idx), "ecosystem": "pypi"}));
            }
            let general = GENERAL_PACKAGES.0 + rng.below(GENERAL_PACKAGES.1 - GENERAL_PACKAGES.0 + 1);
            let first = rng.below(GENERAL_POOL);
            for j in 0..general {
                // A stride through the pool: distinct names, no search.
                let k = (first + j * 7) % GENERAL_POOL;
                packages.push(json!({"name": general_package_name(k), "version": release(rng.below(RELEASES)), "ecosystem": "pypi"}));
            }
            let gpu = GPUS[rng.weighted(&weights)].0;
            let count = [1, 2, 4, 8][rng.below(4)];
            let mut m = json!({
                "manifest_version": 1,
                "host": {"arch": if rng.unit() < 0.85 { "x86_64" } else { "aarch64" }, "memory_mib": 65536 * count},
                "accelerators": [{"vendor": "nvidia", "model": gpu, "count": count}],
                "drivers": {"nvidia": "570.124.06", "cuda": "12.8"},
                "packages": packages,
                // Distinct machines: the fleet never sends the same document twice.
                "workload": {"engine": "vllm", "model": format!("org/model-{i}"), "tensor_parallel_size": count},
            });
            if rng.unit() < 0.5 {
                m["container"] = json!({"image": "vllm/vllm-openai:latest", "shm_size_mib": 16384, "ipc": "host"});
            }
            if rng.unit() < 0.05 {
                let flag = format!("SYNTH_FLAG_{:02}", rng.below(50));
                m["env"] = Value::Object([(flag, Value::from("1"))].into_iter().collect());
            }
            m
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fleet_is_seeded_distinct_and_valid() {
        let a = fleet(50, 10_000, 3);
        assert_eq!(a, fleet(50, 10_000, 3));
        assert_ne!(a, fleet(50, 10_000, 4));
        for (i, m) in a.iter().enumerate() {
            assert!(a[..i].iter().all(|other| other != m), "manifest {i} repeats");
            pitfall_contract::manifest_from_value(m.clone()).unwrap_or_else(|e| panic!("{e:?}"));
            let packages = m["packages"].as_array().expect("packages");
            assert!((100..=300).contains(&packages.len()), "{} packages", packages.len());
            let ml = packages
                .iter()
                .filter(|p| !p["name"].as_str().is_some_and(|n| n.starts_with("general-pkg-")))
                .count();
            assert!(
                (TAIL_PACKAGES + 3..=TAIL_PACKAGES + HEAD_PACKAGES.len()).contains(&ml),
                "{ml} ML packages"
            );
        }
    }
}
