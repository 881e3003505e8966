//! The cloud instance table (`data/instances.json`): which GPUs, how many,
//! and which CPU architecture an instance type has, so a manifest that
//! names only `g5g.xlarge` knows it has one T4G on aarch64.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::source::parse;

const TABLE_JSON: &str = include_str!("../data/instances.json");

/// One instance type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// `aws`, `azure` or `gcp`.
    pub provider: String,
    /// As the provider spells it: `g5g.xlarge`, `Standard_NC24ads_A100_v4`.
    pub instance_type: String,
    /// A GPU table model or variant name: `T4G`, `A100 80GB`.
    pub accelerator: String,
    /// How many.
    pub count: u32,
    /// `x86_64` or `aarch64`, where the source states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_arch: Option<String>,
    /// Where it was read.
    pub source: String,
}

#[derive(Deserialize)]
struct TableFile {
    #[allow(dead_code)]
    format: u32,
    instances: Vec<Instance>,
}

struct Table {
    instances: Vec<Instance>,
    /// Lower-cased instance type → index.
    by_type: HashMap<String, usize>,
}

fn loaded() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let instances = parse::<TableFile>("instances.json", TABLE_JSON).instances;
        let by_type = instances
            .iter()
            .enumerate()
            .map(|(i, x)| (x.instance_type.to_lowercase(), i))
            .collect();
        Table { instances, by_type }
    })
}

/// Every instance type of the table.
pub fn table() -> &'static [Instance] {
    &loaded().instances
}

/// The instance type `name` (case does not count).
pub fn lookup(name: &str) -> Option<&'static Instance> {
    let table = loaded();
    table.by_type.get(&name.trim().to_lowercase()).map(|&i| &table.instances[i])
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::gpus::{Resolution, resolve};
    use crate::source::starts_citable;

    #[test]
    fn every_instance_names_a_known_gpu_and_a_source() {
        let mut types = HashSet::new();
        for x in table() {
            assert!(types.insert(x.instance_type.to_lowercase()), "{} twice", x.instance_type);
            assert!(
                matches!(resolve(&x.accelerator, None), Resolution::Found(_)),
                "{}: accelerator {:?} is not in the GPU table",
                x.instance_type,
                x.accelerator
            );
            assert!(x.count >= 1, "{}", x.instance_type);
            assert!(x.host_arch.as_deref().is_none_or(|a| a == "x86_64" || a == "aarch64"));
            assert!(starts_citable(&x.source), "{}: {}", x.instance_type, x.source);
        }
        assert!(table().len() >= 100);
    }

    #[test]
    fn g5g_has_one_t4g_on_aarch64() {
        let x = lookup("G5G.xlarge").expect("in the table");
        assert_eq!((x.accelerator.as_str(), x.count), ("T4G", 1));
        assert_eq!(x.host_arch.as_deref(), Some("aarch64"));
        assert!(lookup("p4d.24xlarge").is_some_and(|x| x.count == 8));
        assert!(lookup("m5.large").is_none());
    }
}
