//! The checked-in JSON Schema of manifest v1 is generated from the types;
//! this test fails when they drift. `cargo xtask schema` (or
//! `PITFALL_BLESS=1`) rewrites it.

use std::path::Path;

#[test]
fn checked_in_manifest_schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/manifest-v1.schema.json");
    let generated = serde_json::to_string_pretty(&pitfall_contract::manifest_schema())
        .expect("serialises")
        + "\n";
    if std::env::var_os("PITFALL_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("schema written");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "contract/schema/manifest-v1.schema.json is stale: run `cargo xtask schema` and commit the result"
    );
}

#[test]
fn schema_names_every_contract_field() {
    let schema = pitfall_contract::manifest_schema();
    let text = schema.to_string();
    for field in [
        "manifest_version",
        "cpu_model",
        "memory_mib",
        "instance_type",
        "compute_capability",
        "memory_bandwidth_gbps",
        "shared_memory_per_block_kib",
        "interconnect",
        "shm_size_mib",
        "ipc",
        "ecosystem",
        "from_source",
        "torch_cuda_arch_list",
        "parameters_b",
        "head_dims",
        "num_attention_heads",
        "tensor_parallel_size",
        "max_model_len",
        "gpu_memory_utilization",
        "attention_backend",
        "quantization",
        "num_kv_heads",
        "pipeline_parallel_size",
        "max_num_seqs",
        "disable_custom_all_reduce",
        "kv_cache_dtype",
        "quantization_scheme",
        "quantization_symmetric",
        "rope_scaling_type",
        "engine_build_tensorrt",
        "engine_version_compatible",
        "verifies_output",
    ] {
        assert!(text.contains(&format!("\"{field}\"")), "schema lacks {field}");
    }
}

/// `set_workload` (and the lint of its actions) accepts exactly the
/// workload fields of the contract.
#[test]
fn set_workload_knows_every_workload_field() {
    let schema = pitfall_contract::manifest_schema();
    let mut in_schema: Vec<&str> = schema["$defs"]["Workload"]["properties"]
        .as_object()
        .expect("the workload's properties")
        .keys()
        .map(String::as_str)
        .collect();
    let mut settable = pitfall_contract::actions::WORKLOAD_FIELDS.to_vec();
    in_schema.sort_unstable();
    settable.sort_unstable();
    assert_eq!(settable, in_schema);
}

#[test]
fn shared_fixture_manifests_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/manifests");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures beside the repo").flatten() {
        if entry.path().extension().is_some_and(|e| e == "json") {
            let bytes = std::fs::read(entry.path()).expect("readable");
            pitfall_contract::parse_manifest(&bytes)
                .unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
            n += 1;
        }
    }
    assert!(n >= 3);
}
