//! Enrichment: the facts a manifest left out, filled from the sourced
//! tables of `pitfall-facts`, each recorded with its table, the key it was
//! looked up by, and the source it was read from.
//!
//! - `host.cloud.instance_type` → the instance's GPUs (when the manifest
//!   lists none) and `host.arch`;
//! - `accelerators[].model` → vendor, compute capability or `gfx` target,
//!   architecture, shared memory, and (when the variant is known) memory
//!   and bandwidth;
//! - each package of the release table → its `torch`, `cuda` and
//!   `cuda_arch_list`; then `drivers.cuda_runtime` (the CUDA the stack
//!   runs) from torch's build, else vLLM's; and `drivers.cuda_driver` (the
//!   newest CUDA the driver runs) from the driver version;
//! - `workload.model` → the model's architecture facts.
//!
//! A value the client sent is never replaced. A name no table resolves is
//! reported as unresolved, never guessed.

use std::collections::BTreeSet;

use pitfall_facts::gpus::{self, Found, Gpu, Resolution};
use pitfall_facts::source::Source;
use pitfall_facts::{instances, models, releases};
use serde::{Deserialize, Serialize};

use super::manifest::{Accelerator, Drivers, Manifest};
use super::normalize::package_key;

/// One value a table supplied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnrichedFrom {
    /// The field it filled, e.g. `accelerators.0.compute_capability`.
    pub path: String,
    /// `gpus`, `instances`, `models` or `releases`.
    pub table: String,
    /// What the table was asked: the name, id or release it resolved.
    pub key: String,
    /// Where the table's value was read (a URL or a named document).
    pub reference: String,
}

/// A value the tables could not resolve: nothing was filled from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unresolved {
    /// The field whose value was looked up, e.g. `accelerators.0.model`.
    pub path: String,
    /// Its value.
    pub value: String,
    /// The table asked.
    pub table: String,
    /// Why nothing came of it.
    pub reason: String,
}

/// Which values came from the tables rather than the client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Enrichment {
    /// Flattened field paths, e.g. `accelerators.0.compute_capability`.
    pub paths: BTreeSet<String>,
    /// Each filled value's table and source, in the order filled.
    pub entries: Vec<EnrichedFrom>,
    /// What the tables could not resolve.
    pub unresolved: Vec<Unresolved>,
}

impl Enrichment {
    /// Whether the value at `path` came from a table.
    pub fn contains(&self, path: &str) -> bool {
        self.paths.contains(path)
    }

    /// Whether nothing was filled.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The record of the value at `path`, if a table filled it.
    pub fn entry(&self, path: &str) -> Option<&EnrichedFrom> {
        self.entries.iter().find(|e| e.path == path)
    }

    fn filled(&mut self, path: String, table: &str, key: &str, reference: &str) {
        if self.paths.insert(path.clone()) {
            self.entries.push(EnrichedFrom {
                path,
                table: table.to_owned(),
                key: key.to_owned(),
                reference: reference.to_owned(),
            });
        }
    }

    fn unresolved(&mut self, path: String, value: &str, table: &str, reason: String) {
        self.unresolved.push(Unresolved {
            path,
            value: value.to_owned(),
            table: table.to_owned(),
            reason,
        });
    }
}

/// Sets `field` to `value` when the client left it out; says whether it did.
fn fill<T>(field: &mut Option<T>, value: Option<T>) -> bool {
    if field.is_none()
        && let Some(value) = value
    {
        *field = Some(value);
        return true;
    }
    false
}

/// The source among `sources` that gives `what` (its `for` mentions it),
/// else the first.
fn reference<'s>(sources: &'s [Source], what: &str) -> &'s str {
    sources
        .iter()
        .find(|s| s.what.to_lowercase().contains(what))
        .or_else(|| sources.first())
        .map_or("", |s| s.url.as_str())
}

/// Fills what the tables know of `manifest`, which is already normalised.
pub fn enrich(manifest: &mut Manifest, enrichment: &mut Enrichment) {
    instance(manifest, enrichment);
    for index in 0..manifest.accelerators.len() {
        accelerator(index, &mut manifest.accelerators[index], enrichment);
    }
    packages(manifest, enrichment);
    drivers(manifest, enrichment);
    model(manifest, enrichment);
}

/// The instance type's GPUs, when the manifest lists none, and its CPU
/// architecture.
fn instance(manifest: &mut Manifest, enrichment: &mut Enrichment) {
    let Some(name) =
        manifest.host.as_ref().and_then(|h| h.cloud.as_ref()).and_then(|c| c.instance_type.clone())
    else {
        return;
    };
    let Some(x) = instances::lookup(&name) else {
        // Most instance types have no GPU: only say so when none is listed.
        if manifest.accelerators.is_empty() {
            let reason = "not a GPU instance type the instances table knows".to_owned();
            enrichment.unresolved("host.cloud.instance_type".into(), &name, "instances", reason);
        }
        return;
    };
    if let Some(host) = &mut manifest.host
        && fill(&mut host.arch, x.host_arch.clone())
    {
        enrichment.filled("host.arch".into(), "instances", &name, &x.source);
    }
    if manifest.accelerators.is_empty() {
        let vendor = match gpus::resolve(&x.accelerator, None) {
            Resolution::Found(f) => Some(f.gpu.vendor.clone()),
            _ => None,
        };
        manifest.accelerators.push(Accelerator {
            vendor,
            model: Some(x.accelerator.clone()),
            count: Some(x.count),
            ..Accelerator::default()
        });
        for field in ["vendor", "model", "count"] {
            enrichment.filled(format!("accelerators.0.{field}"), "instances", &name, &x.source);
        }
    }
}

/// The GPU table's facts for one accelerator.
fn accelerator(index: usize, a: &mut Accelerator, enrichment: &mut Enrichment) {
    let Some(name) = a.model.clone() else { return };
    let path = |field: &str| format!("accelerators.{index}.{field}");
    let found = match gpus::resolve(&name, a.memory_mib) {
        Resolution::Found(found) => found,
        Resolution::Ambiguous(several) => {
            let names: Vec<&str> = several.iter().map(|g| g.model.as_str()).collect();
            let reason = format!("fits several GPUs ({}); none was chosen", names.join(", "));
            enrichment.unresolved(path("model"), &name, "gpus", reason);
            return;
        }
        Resolution::Unknown => {
            let reason = "not in the GPU table".to_owned();
            enrichment.unresolved(path("model"), &name, "gpus", reason);
            return;
        }
    };
    let Found { gpu, variant } = found;
    // A client that names another vendor means another device.
    if a.vendor.as_deref().is_some_and(|v| v != gpu.vendor) {
        let reason = format!("the table's {} is an {} GPU", gpu.model, gpu.vendor);
        enrichment.unresolved(path("model"), &name, "gpus", reason);
        return;
    }
    a.model = Some(variant.map_or(&gpu.model, |v| &v.name).clone());
    let record = |enrichment: &mut Enrichment, field: &str, reference: &str| {
        enrichment.filled(path(field), "gpus", &name, reference);
    };
    let by = |what: &str| reference(&gpu.sources, what);
    if fill(&mut a.vendor, Some(gpu.vendor.clone())) {
        record(enrichment, "vendor", by("compute capability"));
    }
    if fill(&mut a.compute_capability, gpu.compute_capability.clone()) {
        record(enrichment, "compute_capability", by("compute capability"));
    }
    if fill(&mut a.gfx_target, gpu.gfx_target.clone()) {
        record(enrichment, "gfx_target", by("gfx"));
    }
    if fill(&mut a.architecture, Some(gpu.architecture.clone())) {
        record(enrichment, "architecture", by("architecture"));
    }
    if fill(&mut a.shared_memory_per_block_kib, gpu.shared_memory_per_block_kib) {
        record(enrichment, "shared_memory_per_block_kib", by("shared"));
    }
    if let Some(v) = variant {
        if fill(&mut a.memory_mib, v.memory_mib) {
            record(enrichment, "memory_mib", &v.source);
        }
        if fill(&mut a.memory_bandwidth_gbps, v.memory_bandwidth_gbps) {
            record(enrichment, "memory_bandwidth_gbps", &v.source);
        }
    }
}

/// What the release table knows of each package's build.
fn packages(manifest: &mut Manifest, enrichment: &mut Enrichment) {
    let host_arch = manifest.host.as_ref().and_then(|h| h.arch.clone());
    // A package built from source has its own torch, CUDA and arch list.
    let from_source: Vec<String> = manifest
        .build
        .as_ref()
        .map(|b| b.from_source.iter().map(|p| package_key(p)).collect())
        .unwrap_or_default();
    for package in &mut manifest.packages {
        let Some(version) = package.version.clone() else { continue };
        // Built from source, or from another index than PyPI (a conda
        // build, an AMI's own torch): not the release's wheel.
        let other_index = package.ecosystem.as_deref().is_some_and(|e| e != "pypi");
        if other_index || from_source.contains(&package_key(&package.name)) {
            continue;
        }
        let Some((build, release)) =
            releases::build_of(&package.name, &version, host_arch.as_deref())
        else {
            continue;
        };
        let key = package_key(&package.name);
        let label = format!("{} {version}", release.package);
        let path = |field: &str| format!("packages.{key}.{field}");
        if key != "torch" && fill(&mut package.torch, build.torch) {
            enrichment.filled(
                path("torch"),
                "releases",
                &label,
                reference(&release.sources, "torch"),
            );
        }
        if fill(&mut package.cuda, build.cuda) {
            enrichment.filled(
                path("cuda"),
                "releases",
                &label,
                reference(&release.sources, "cuda"),
            );
        }
        if package.cuda_arch_list.is_empty() && !build.cuda_arch_list.is_empty() {
            package.cuda_arch_list = build.cuda_arch_list;
            let source = reference(&release.sources, "arch");
            enrichment.filled(path("cuda_arch_list"), "releases", &label, source);
        }
    }
}

/// The stack's CUDA from its torch (else its vLLM), and the driver's CUDA
/// from the driver version.
fn drivers(manifest: &mut Manifest, enrichment: &mut Enrichment) {
    let stack = ["torch", "vllm", "sglang", "text-generation-inference"].iter().find_map(|name| {
        let package = manifest.packages.iter().find(|p| package_key(&p.name) == *name)?;
        let cuda = package.cuda.clone()?;
        let path = format!("packages.{name}.cuda");
        // Where the package's CUDA came from: its own label, or the table.
        let origin =
            enrichment.entry(&path).map(|e| (e.table.clone(), e.key.clone(), e.reference.clone()));
        let origin = origin.unwrap_or_else(|| {
            (
                "manifest".into(),
                format!("{name} {}", package.version.clone().unwrap_or_default()),
                path,
            )
        });
        Some((cuda, origin))
    });
    let driver = manifest.drivers.as_ref().and_then(|d| d.nvidia.clone());
    if stack.is_none() && driver.is_none() {
        return;
    }
    let drivers = manifest.drivers.get_or_insert_with(Drivers::default);
    if let Some((cuda, (table, key, reference))) = stack
        && fill(&mut drivers.cuda_runtime, Some(cuda))
    {
        enrichment.filled("drivers.cuda_runtime".into(), &table, &key, &reference);
    }
    if let Some(driver) = driver
        && drivers.cuda_driver.is_none()
    {
        match releases::newest_cuda_for_driver(&driver) {
            Some(row) => {
                drivers.cuda_driver = Some(row.cuda.clone());
                enrichment.filled("drivers.cuda_driver".into(), "releases", &driver, &row.source);
            }
            None => {
                let reason = "older than every CUDA release the table has".to_owned();
                enrichment.unresolved("drivers.nvidia".into(), &driver, "releases", reason);
            }
        }
    }
}

/// The model table's facts for `workload.model`.
fn model(manifest: &mut Manifest, enrichment: &mut Enrichment) {
    let Some(w) = &mut manifest.workload else { return };
    let Some(id) = w.model.clone() else { return };
    let Some(m) = models::lookup(&id) else {
        let reason = "not in the model table".to_owned();
        enrichment.unresolved("workload.model".into(), &id, "models", reason);
        return;
    };
    let mut record = |field: &str, what: &str| {
        enrichment.filled(format!("workload.{field}"), "models", &id, reference(&m.sources, what));
    };
    if fill(&mut w.parameters_b, m.parameters_b) {
        record("parameters_b", "param");
    }
    if fill(&mut w.active_parameters_b, m.active_parameters_b) {
        record("active_parameters_b", "param");
    }
    if fill(&mut w.num_hidden_layers, m.num_hidden_layers) {
        record("num_hidden_layers", "layers");
    }
    if fill(&mut w.num_attention_heads, m.num_attention_heads) {
        record("num_attention_heads", "heads");
    }
    if fill(&mut w.num_kv_heads, m.num_kv_heads) {
        record("num_kv_heads", "kv");
    }
    if w.head_dims.is_empty() && !m.head_dims.is_empty() {
        w.head_dims = m.head_dims.clone();
        record("head_dims", "head");
    }
    if fill(&mut w.hidden_size, m.hidden_size) {
        record("hidden_size", "hidden");
    }
    if fill(&mut w.max_context, m.max_context) {
        record("max_context", "context");
    }
    if fill(&mut w.model_dtype, m.dtype.clone()) {
        record("model_dtype", "dtype");
    }
    if fill(&mut w.quantization, m.quantization.clone()) {
        record("quantization", "quant");
    }
    if fill(&mut w.model_type, m.model_type.clone()) {
        record("model_type", "model_type");
    }
    if fill(&mut w.architecture, m.architecture.clone()) {
        record("architecture", "architecture");
    }
    if fill(&mut w.min_transformers, m.min_transformers.clone()) {
        record("min_transformers", "min_transformers");
    }
}

/// The canonical name of a GPU the table knows (for the summary pages).
pub fn gpu_model(name: &str) -> Option<&'static Gpu> {
    match gpus::resolve(name, None) {
        Resolution::Found(f) => Some(f.gpu),
        _ => None,
    }
}
