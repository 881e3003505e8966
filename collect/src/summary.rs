//! `pitfall scan --format text`: a short summary of the manifest for people.

use std::fmt::Write as _;

use crate::Scan;

/// A few lines: what was read, host, GPUs, drivers, container, key
/// packages, env, workload, then the scan's notes.
pub fn render(scan: &Scan) -> String {
    let (manifest, notes) = (&scan.manifest, &scan.notes);
    let mut out = String::new();
    if !scan.formats.is_empty() {
        let read: Vec<&str> = scan.formats.iter().map(|f| f.command()).collect();
        let _ = writeln!(out, "Read:       {}", read.join(", "));
    }
    let or_unknown = |v: Option<&str>| v.unwrap_or("?").to_owned();
    if let Some(host) = &manifest.host {
        let os = host.os.as_ref().map(|os| {
            format!("{} {}", or_unknown(os.id.as_deref()), or_unknown(os.version.as_deref()))
        });
        let mut parts = vec![or_unknown(host.arch.as_deref())];
        parts.extend(host.cpu_model.clone());
        parts.extend(host.memory_mib.map(|m| format!("{m} MiB")));
        parts.extend(os);
        parts.extend(host.kernel.as_ref().map(|k| format!("kernel {k}")));
        let _ = writeln!(out, "Host:       {}", parts.join(", "));
    }
    if manifest.accelerators.is_empty() {
        let _ = writeln!(out, "GPUs:       none found");
    }
    for (i, a) in manifest.accelerators.iter().enumerate() {
        let mut facts = Vec::new();
        facts.extend(a.compute_capability.as_ref().map(|cc| format!("compute capability {cc}")));
        facts.extend(a.memory_mib.map(|m| format!("{m} MiB")));
        facts.extend(a.interconnect.clone());
        let _ = writeln!(
            out,
            "{}{} × {} {}{}",
            if i == 0 { "GPUs:       " } else { "            " },
            a.count.unwrap_or(1),
            or_unknown(a.vendor.as_deref()),
            or_unknown(a.model.as_deref()),
            if facts.is_empty() { String::new() } else { format!(" ({})", facts.join(", ")) }
        );
    }
    if let Some(d) = &manifest.drivers {
        let mut parts = Vec::new();
        parts.extend(d.nvidia.as_ref().map(|v| format!("nvidia {v}")));
        parts.extend(d.cuda_driver.as_ref().map(|v| format!("driver supports CUDA {v}")));
        parts.extend(d.cuda_runtime.as_ref().map(|v| format!("stack built with CUDA {v}")));
        parts.extend(d.cuda.as_ref().map(|v| format!("CUDA {v}")));
        let _ = writeln!(out, "Drivers:    {}", parts.join(", "));
    }
    if let Some(c) = &manifest.container {
        let shm = c.shm_size_mib.map_or_else(|| "?".to_owned(), |s| s.to_string());
        let _ = writeln!(out, "Container:  yes, /dev/shm {shm} MiB");
    }
    if !manifest.packages.is_empty() {
        let key = ["python", "torch", "vllm", "transformers", "flash-attn", "sglang", "triton"];
        let shown: Vec<String> = key
            .iter()
            .filter_map(|k| manifest.packages.iter().find(|p| p.name.eq_ignore_ascii_case(k)))
            .map(|p| format!("{} {}", p.name, p.version.as_deref().unwrap_or("?")))
            .collect();
        let _ = writeln!(out, "Packages:   {} ({})", manifest.packages.len(), shown.join(", "));
    }
    if let Some(b) = &manifest.build {
        let tools: Vec<String> = b
            .tools
            .iter()
            .map(|(k, v)| format!("{k} {}", v.as_deref().unwrap_or("absent")))
            .collect();
        if !tools.is_empty() {
            let _ = writeln!(out, "Tools:      {}", tools.join(", "));
        }
    }
    if !manifest.env.is_empty() {
        let names: Vec<&str> = manifest.env.keys().map(String::as_str).collect();
        let _ = writeln!(out, "Env:        {}", names.join(", "));
    }
    if let Some(w) = &manifest.workload {
        let mut parts = Vec::new();
        parts.extend(w.engine.clone());
        parts.extend(w.model.clone());
        parts.extend(w.dtype.clone());
        parts.extend(w.tensor_parallel_size.map(|tp| format!("tp {tp}")));
        parts.extend(w.pipeline_parallel_size.map(|pp| format!("pp {pp}")));
        parts.extend(w.max_model_len.map(|n| format!("max_model_len {n}")));
        parts.extend(w.quantization.as_ref().map(|q| format!("quantization {q}")));
        let _ = writeln!(out, "Workload:   {}", parts.join(", "));
    }
    for note in notes {
        let _ = writeln!(out, "Note:       {note}");
    }
    let _ = writeln!(out, "\n`pitfall scan --format json | pitfall check -` checks this machine.");
    out
}
