//! `pitfall scan`: the command's glue (arguments → sources → manifest →
//! output).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use pitfall_collect::{OnBadSource, serve_args, summary};
use pitfall_contract::manifest::Workload;

use super::{from_collect_env, from_dir, live, read_text};

/// Output formats of `scan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ScanFormat {
    /// A short summary for people.
    Text,
    /// The manifest (v1), for `pitfall check -` or the API.
    Json,
}

/// `pitfall scan` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ScanArgs {
    /// Read captured command outputs from this folder instead of running them
    /// (nvidia-smi-q.xml, nvidia-smi-query.csv, nvidia-smi-topo.txt, os.txt,
    /// cpuinfo.txt, meminfo.txt, pip-list.json, collect_env.txt; any subset).
    #[arg(long, value_name = "DIR", conflicts_with = "from_collect_env")]
    from_dir: Option<PathBuf>,
    /// Read an environment paste: the output of `python -m torch.utils.collect_env`,
    /// `vllm collect-env`, `python3 -m sglang.check_env`, TGI's `--env`, `nvidia-smi`
    /// or `nvidia-smi -q` (whole or cut short; what is missing is named).
    #[arg(long, value_name = "FILE")]
    from_collect_env: Option<PathBuf>,
    /// The workload from a serve command line: "vllm serve MODEL --dtype bfloat16 -tp 2",
    /// "python3 -m sglang.launch_server --model-path MODEL --tp 2",
    /// "text-generation-launcher --model-id MODEL --num-shard 2" (or its `docker run`).
    #[arg(
        long,
        visible_alias = "from-serve-args",
        value_name = "COMMAND",
        allow_hyphen_values = true
    )]
    from_vllm_args: Option<String>,
    /// Also read a log the failing stack printed (server output, a
    /// traceback) for what it states about the machine: a GPU it names,
    /// vLLM's engine start-up line, a package's version. The paste's facts
    /// win; a log names the cause with `pitfall explain`.
    #[arg(long, value_name = "FILE")]
    from_log: Option<PathBuf>,
    /// The Python interpreter whose packages a live scan lists
    /// (default: $VIRTUAL_ENV/bin/python, else python3).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["from_dir", "from_collect_env"])]
    python: Option<PathBuf>,
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: ScanFormat,
    /// Write the output to this file instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// The workload, flag by flag (each overrides `--from-vllm-args`).
#[derive(Debug, clap::Args)]
#[group(id = "workload_flags", multiple = true)]
struct WorkloadArgs {
    /// Serving engine, e.g. vllm.
    #[arg(long)]
    engine: Option<String>,
    /// Model id, e.g. google/gemma-4-E2B-it.
    #[arg(long)]
    model: Option<String>,
    /// bfloat16, float16, auto, ...
    #[arg(long)]
    dtype: Option<String>,
    #[arg(long, value_name = "N")]
    tensor_parallel_size: Option<u32>,
    #[arg(long, value_name = "N")]
    pipeline_parallel_size: Option<u32>,
    #[arg(long, value_name = "TOKENS")]
    max_model_len: Option<u64>,
    #[arg(long, value_name = "N")]
    max_num_seqs: Option<u64>,
    /// Fraction of GPU memory the engine may use, e.g. 0.9.
    #[arg(long, value_name = "FRACTION")]
    gpu_memory_utilization: Option<f64>,
    /// fp8, awq, gptq, bitsandbytes, ...
    #[arg(long)]
    quantization: Option<String>,
    #[arg(long)]
    kv_cache_dtype: Option<String>,
    /// e.g. FLASH_ATTN, TRITON_ATTN.
    #[arg(long)]
    attention_backend: Option<String>,
}

impl WorkloadArgs {
    /// Lays the flags over `base`.
    fn apply(&self, base: &mut Workload) {
        let set = |field: &mut Option<String>, flag: &Option<String>| {
            if flag.is_some() {
                field.clone_from(flag);
            }
        };
        set(&mut base.engine, &self.engine);
        set(&mut base.model, &self.model);
        set(&mut base.dtype, &self.dtype);
        set(&mut base.quantization, &self.quantization);
        set(&mut base.kv_cache_dtype, &self.kv_cache_dtype);
        set(&mut base.attention_backend, &self.attention_backend);
        base.tensor_parallel_size = self.tensor_parallel_size.or(base.tensor_parallel_size);
        base.pipeline_parallel_size = self.pipeline_parallel_size.or(base.pipeline_parallel_size);
        base.max_model_len = self.max_model_len.or(base.max_model_len);
        base.max_num_seqs = self.max_num_seqs.or(base.max_num_seqs);
        base.gpu_memory_utilization = self.gpu_memory_utilization.or(base.gpu_memory_utilization);
    }
}

/// Runs `pitfall scan`.
pub(crate) fn run(args: &ScanArgs) -> anyhow::Result<ExitCode> {
    let (mut sources, on_bad) = match (&args.from_dir, &args.from_collect_env) {
        (Some(dir), _) => (from_dir(dir)?, OnBadSource::Fail),
        (None, Some(file)) => (from_collect_env(file)?, OnBadSource::Fail),
        (None, None) => (live::collect(args.python.as_deref()), OnBadSource::Note),
    };
    if let Some(path) = &args.from_log {
        sources.log = Some(read_text(path)?);
    }
    let serve = match &args.from_vllm_args {
        Some(command) => Some(serve_args::parse(command).context("--from-vllm-args")?),
        None => None,
    };
    let adjust = |w: &mut Workload| args.workload.apply(w);
    let mut scan = pitfall_collect::apply_serve(sources, serve, Some(&adjust), on_bad)?;
    if args.from_collect_env.is_some() {
        // A paste says what it says: name what rules will not see.
        scan.notes.extend(missing_notes(&scan.manifest));
    }
    let text = match args.format {
        ScanFormat::Json => {
            for note in &scan.notes {
                eprintln!("pitfall: note: {note}");
            }
            format!("{}\n", serde_json::to_string_pretty(&scan.manifest)?)
        }
        ScanFormat::Text => summary::render(&scan),
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// What the texts given did not say, one note each.
fn missing_notes(manifest: &pitfall_contract::Manifest) -> Vec<String> {
    pitfall_collect::missing(manifest)
        .into_iter()
        .map(|m| format!("missing {}: {}", m.path, m.hint))
        .collect()
}
