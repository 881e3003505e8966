//! The five rule shapes of sdk/README.md's "Patterns" (and the
//! quantization floor built with `below_capability_floor`), as written
//! there, each run natively (the SDK's harness, the engine's host semantics) on a
//! manifest it matches, one it clears and one it cannot decide: a sketch a
//! contributor copies has to work.

use pitfall_contract::cases::Evaluation;
use pitfall_contract::meta::RuleMeta;
use pitfall_contract::{Prepared, manifest_from_value};
use pitfall_sdk::prelude::*;
use serde_json::{Value, json};

type Rule = fn(&Manifest) -> Result<Outcome, Outcome>;

fn capability_floor(m: &Manifest) -> Result<Outcome, Outcome> {
    const FLOORS: &[(&str, ComputeCapability)] = &[
        (">=0.7.0,<0.10.2", ComputeCapability::new(8, 0)),
        (">=0.10.2", ComputeCapability::new(7, 0)),
    ];

    let Some(vllm) = m.package("vllm") else { return Ok(Outcome::clear()) };
    let mut floor = None;
    for (range, cc) in FLOORS {
        if vllm.need_version_in(range)? {
            floor = Some(*cc);
            break;
        }
    }
    let Some(floor) = floor else { return Ok(Outcome::clear()) };
    let (gpu, cc) = m.need_weakest_nvidia_gpu()?; // clear without an NVIDIA GPU
    if cc >= floor {
        return Ok(Outcome::clear());
    }
    let (mut have, mut need) = ([0u8; 24], [0u8; 24]);
    Ok(Outcome::matched()
        .evidence(vllm.version_path().as_str())
        .evidence(gpu.field_path("compute_capability").as_str())
        .param_field("version", vllm.version_path().as_str())
        .param("cc", cc.write_to(&mut have))
        .param("floor", floor.write_to(&mut need)))
}

fn wheel_arch_list(m: &Manifest) -> Result<Outcome, Outcome> {
    const LIST: &str = "packages.torch.cuda_arch_list";

    if m.package("torch").is_none() {
        return Ok(Outcome::clear());
    }
    let (gpu, cc) = m.need_weakest_nvidia_gpu()?;
    let n = m.len(LIST).ok_or_else(|| Outcome::needs(LIST))?;
    let covered = (0..n)
        .filter_map(|i| m.text(Path::new(LIST).index(i).as_str()))
        .filter_map(|t| ComputeCapability::parse(t.trim_end_matches("+PTX")).ok())
        .any(|arch| arch.major == cc.major && arch.minor <= cc.minor);
    if covered {
        return Ok(Outcome::clear());
    }
    Ok(Outcome::matched().evidence(LIST).evidence(gpu.field_path("compute_capability").as_str()))
}

fn driver_floor(m: &Manifest) -> Result<Outcome, Outcome> {
    const FLOOR: &str = "570.124.06";

    if !m.nvidia_gpus().any(|g| g.compute_capability().is_some_and(|cc| cc.major >= 10)) {
        return Ok(Outcome::clear());
    }
    let text = m.need("drivers.nvidia")?; // needs: missing
    let Ok(driver) = Dotted::parse(&text) else {
        return Err(Outcome::unreadable("drivers.nvidia")); // there, not a driver version
    };
    if dotted_ge(driver.as_str(), FLOOR) == Some(true) {
        return Ok(Outcome::clear());
    }
    Ok(Outcome::matched()
        .evidence("drivers.nvidia")
        .param_field("driver", "drivers.nvidia")
        .param("floor", FLOOR))
}

fn vram_estimate(m: &Manifest) -> Result<Outcome, Outcome> {
    let w = m.workload();
    let Some(params_b) = w.parameters_b().filter(|p| *p > 0.0) else {
        return Ok(Outcome::clear());
    };
    let (bytes, precision) = w.weight_precision();
    let shards = f64::from(w.tensor_parallel_size().unwrap_or(1).max(1));
    let Some(gpu) = m.nvidia_gpus().next() else { return Ok(Outcome::clear()) };
    let mib =
        gpu.memory_mib().ok_or_else(|| Outcome::needs(gpu.field_path("memory_mib").as_str()))?;
    let utilization = w.gpu_memory_utilization().unwrap_or(0.9);
    let need_gb = params_b * bytes / shards; // 1e9 parameters * bytes = GB
    let have_gb = mib * utilization * 1_048_576.0 / 1e9;
    if need_gb <= have_gb {
        return Ok(Outcome::clear());
    }
    Ok(Outcome::matched()
        .evidence("workload.parameters_b")
        .evidence(gpu.field_path("memory_mib").as_str())
        .param_decimal("need_gb", need_gb, 1)
        .param_decimal("have_gb", have_gb, 1)
        .param("precision", precision))
}

fn env_flag_conflict(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(vllm) = m.package("vllm") else { return Ok(Outcome::clear()) };
    let by_flag = m.workload().attention_backend().as_deref() == Some("XFORMERS");
    let by_env =
        m.env("VLLM_ATTENTION_BACKEND").is_some_and(|v| v.trim().eq_ignore_ascii_case("XFORMERS"));
    if !(by_flag || by_env) || !vllm.need_version_in(">=0.12.0")? {
        return Ok(Outcome::clear());
    }
    let path = if by_flag { "workload.attention_backend" } else { "env.VLLM_ATTENTION_BACKEND" };
    Ok(Outcome::matched()
        .evidence(path)
        .evidence(vllm.version_path().as_str())
        .param_field("version", vllm.version_path().as_str()))
}

/// README's capability-floor shape for a quantization scheme, through
/// `below_capability_floor` (the lines before the sketch find what it uses).
fn quantization_floor(m: &Manifest) -> Result<Outcome, Outcome> {
    const SM75: ComputeCapability = ComputeCapability::new(7, 5);
    const SM80: ComputeCapability = ComputeCapability::new(8, 0);
    const REMEDY_GPU: u32 = 0;
    let Some(vllm) = m.package("vllm") else { return Ok(Outcome::clear()) };
    let (gpu, cc) = m.need_weakest_nvidia_gpu()?;
    let scheme = m.need("workload.quantization_scheme")?;

    let min = if vllm.need_version_in(">=0.16.0")? { SM75 } else { SM80 };
    if cc >= min {
        return Ok(Outcome::clear());
    }
    Ok(below_capability_floor("workload.quantization_scheme", &vllm, &gpu, cc, min)
        .param("scheme", &scheme)
        .remedy(REMEDY_GPU))
}

/// The helper alone, for a manifest whose vLLM states no version.
fn method_floor_any_release(m: &Manifest) -> Result<Outcome, Outcome> {
    let Some(vllm) = m.package("vllm") else { return Ok(Outcome::clear()) };
    let (gpu, cc) = m.need_weakest_nvidia_gpu()?;
    let min = ComputeCapability::new(8, 9);
    Ok(below_capability_floor("workload.quantization", &vllm, &gpu, cc, min).param("scheme", "fp8"))
}

fn meta() -> RuleMeta {
    meta_saying("matched")
}

fn meta_saying(message: &str) -> RuleMeta {
    serde_json::from_value(json!({
        "id": "pattern", "version": "1.0.0", "title": "a pattern of sdk/README.md",
        "severity": "warning", "summary": "one of the five shapes rules take",
        "message": message, "remedies": [{"summary": "s", "actions": []}],
        "references": [{"title": "sdk/README.md"}], "author": "tests"
    }))
    .expect("metadata")
}

/// The outcome of `rule` on `manifest` (`manifest_version` added), as
/// `clear`, `matched` or `undetermined, missing P` / `unreadable P`.
fn outcome(rule: Rule, manifest: Value) -> String {
    let mut manifest = manifest;
    manifest["manifest_version"] = json!(1);
    let prepared = Prepared::new(manifest_from_value(manifest).expect("a manifest"));
    let evaluation = pitfall_sdk::testing::evaluate_native(&meta(), &prepared, &|| {
        pitfall_sdk::__private::run(rule)
    });
    match evaluation {
        Evaluation::Undetermined(named) => {
            let u = pitfall_contract::report::Undetermined::explain(
                String::new(),
                named,
                &prepared.fields,
            );
            format!("undetermined, {u}")
        }
        Evaluation::Matched(_) => "matched".into(),
        other => other.to_string(),
    }
}

#[test]
fn each_pattern_matches_clears_and_says_what_it_needs() {
    let t4 = json!([{"vendor": "nvidia", "model": "T4"}]);
    let b200 = json!([{"vendor": "nvidia", "model": "B200", "compute_capability": "10.0"}]);
    let cases: &[(&str, Rule, Value, &str)] = &[
        (
            "capability floor",
            capability_floor,
            json!({"accelerators": t4, "packages": [{"name": "vllm", "version": "0.8.0"}]}),
            "matched",
        ),
        (
            "capability floor",
            capability_floor,
            json!({"accelerators": t4, "packages": [{"name": "vllm", "version": "0.11.0"}]}),
            "clear",
        ),
        (
            "capability floor",
            capability_floor,
            json!({"accelerators": t4, "packages": [{"name": "vllm", "version": "banana"}]}),
            "undetermined, unreadable packages.vllm.version = \"banana\" (not a PEP 440 version)",
        ),
        (
            "wheel arch list",
            wheel_arch_list,
            json!({"accelerators": t4, "packages": [{"name": "torch", "version": "2.9.0", "cuda_arch_list": ["8.0", "9.0"]}]}),
            "matched",
        ),
        (
            "wheel arch list",
            wheel_arch_list,
            json!({"accelerators": t4, "packages": [{"name": "torch", "version": "2.9.0", "cuda_arch_list": ["7.5", "8.0"]}]}),
            "clear",
        ),
        (
            "driver floor",
            driver_floor,
            json!({"accelerators": b200, "drivers": {"nvidia": "560.35.03"}}),
            "matched",
        ),
        (
            "driver floor",
            driver_floor,
            json!({"accelerators": b200, "drivers": {"nvidia": "575.51.03"}}),
            "clear",
        ),
        (
            "driver floor",
            driver_floor,
            json!({"accelerators": b200}),
            "undetermined, missing drivers.nvidia",
        ),
        (
            "driver floor",
            driver_floor,
            json!({"accelerators": b200, "drivers": {"nvidia": "latest"}}),
            "undetermined, unreadable drivers.nvidia = \"latest\" (not a dotted version such as 570.124.06)",
        ),
        (
            "VRAM estimate",
            vram_estimate,
            json!({"accelerators": t4, "workload": {"parameters_b": 70, "dtype": "float16"}}),
            "matched",
        ),
        (
            "VRAM estimate",
            vram_estimate,
            json!({"accelerators": t4, "workload": {"parameters_b": 1, "dtype": "float16"}}),
            "clear",
        ),
        (
            "env/flag conflict",
            env_flag_conflict,
            json!({"packages": [{"name": "vllm", "version": "0.12.0"}], "env": {"VLLM_ATTENTION_BACKEND": "XFORMERS"}}),
            "matched",
        ),
        (
            "env/flag conflict",
            env_flag_conflict,
            json!({"packages": [{"name": "vllm", "version": "0.11.0"}], "env": {"VLLM_ATTENTION_BACKEND": "XFORMERS"}}),
            "clear",
        ),
        (
            "env/flag conflict",
            env_flag_conflict,
            json!({"packages": [{"name": "vllm"}], "workload": {"attention_backend": "xformers"}}),
            "undetermined, missing packages.vllm.version",
        ),
        (
            "quantization floor",
            quantization_floor,
            json!({"accelerators": t4, "packages": [{"name": "vllm", "version": "0.15.1"}], "workload": {"quantization_scheme": "nvfp4"}}),
            "matched",
        ),
        (
            "quantization floor",
            quantization_floor,
            json!({"accelerators": t4, "packages": [{"name": "vllm", "version": "0.16.0"}], "workload": {"quantization_scheme": "nvfp4"}}),
            "clear",
        ),
        (
            "quantization floor",
            quantization_floor,
            json!({"accelerators": t4, "packages": [{"name": "vllm", "version": "0.15.1"}]}),
            "undetermined, missing workload.quantization_scheme",
        ),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(name, rule, manifest, want)| {
            let got = outcome(*rule, manifest.clone());
            (got != *want).then(|| format!("{name} on {manifest}: {got}, not {want}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `below_capability_floor` shows what sdk/README.md says it does: the
/// quantization field, the GPU's capability and vLLM's version as
/// evidence, `{vllm}`, `{gpu}`, `{cc}` and `{min}` as parameters, and
/// `(any release)` (without its evidence) when no version is stated.
#[test]
fn the_capability_floor_finding_names_the_quantization_gpu_and_release() {
    let message =
        "vLLM {vllm} needs compute capability {min} for {scheme}, but the {gpu} has {cc}.";
    let t4 = json!([{"vendor": "nvidia", "model": "T4"}]);
    let cases: &[(Rule, Value, &str, &[&str])] = &[
        (
            quantization_floor,
            json!({"accelerators": t4, "packages": [{"name": "vllm", "version": "0.15.1"}], "workload": {"quantization_scheme": "NVFP4A16"}}),
            "vLLM 0.15.1 needs compute capability 8.0 for nvfp4a16, but the T4 has 7.5.",
            &[
                "workload.quantization_scheme",
                "accelerators.0.compute_capability",
                "packages.vllm.version",
            ],
        ),
        (
            method_floor_any_release,
            json!({"accelerators": [{"vendor": "nvidia", "compute_capability": "8.6"}], "packages": [{"name": "vllm"}], "workload": {"quantization": "fp8"}}),
            "vLLM (any release) needs compute capability 8.9 for fp8, but the GPU has 8.6.",
            &["workload.quantization", "accelerators.0.compute_capability"],
        ),
    ];
    for (rule, manifest, want_message, want_evidence) in cases {
        let mut manifest = manifest.clone();
        manifest["manifest_version"] = json!(1);
        let prepared = Prepared::new(manifest_from_value(manifest).expect("a manifest"));
        let rule = *rule;
        let evaluation =
            pitfall_sdk::testing::evaluate_native(&meta_saying(message), &prepared, &|| {
                pitfall_sdk::__private::run(rule)
            });
        let Evaluation::Matched(finding) = evaluation else {
            panic!("{want_message}: {evaluation}");
        };
        assert_eq!(finding.message, *want_message);
        let evidence: Vec<&str> = finding.evidence.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(evidence, *want_evidence, "{want_message}");
    }
}
