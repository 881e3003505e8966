//! `pitfall-bench [--quick]`: see the crate docs and BENCHMARKS.md.
//!
//! `--quick` (under a minute) prints `ratio_to_floor=R` and
//! `check_10k_p50_us=N` on lines of their own, then a summary. The full
//! mode measures everything of issue 7 in one run and writes the plot.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, Subcommand};

/// The server's allocator (`server/src/main.rs`), so the `serve-child`
/// measured here is the server as it ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use pitfall_bench::ablation::{Configuration, Mechanism};
use pitfall_bench::scale::ScalePoint;
use pitfall_bench::stats::{Summary, median};
use pitfall_bench::{
    compare, corpus, explain, fix, fleet, floor, http, parts, plot, publish, scale, startup,
};
use pitfall_contract::{Manifest, Prepared, manifest_from_value, parse_manifest};
use pitfall_engine::{Engine, Limits, Rule};

/// The seed of every corpus and fleet (change it to draw others).
const SEED: u64 = 7;
/// The registry size of the start-up, RSS and HTTP measurements.
const SERVER_RULES: usize = 10_000;
/// Rounds of the HTTP phases (echo, distinct checks, repeated checks).
const HTTP_ROUNDS: usize = 3;

#[derive(Debug, Parser)]
#[command(about = "Pitfall's benchmarks (BENCHMARKS.md). Without --quick: the full suite.")]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Under a minute: ratio_to_floor and the 10,000-rule check only.
    #[arg(long)]
    quick: bool,
    /// Where results, the plot and the server's registry go.
    #[arg(long, default_value = "target/pitfall-bench")]
    out: PathBuf,
    /// Corpus sizes of the full mode.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    sizes: Vec<usize>,
    /// Distinct manifests of the fleet the engine checks are timed on.
    #[arg(long, default_value_t = 100)]
    fleet: usize,
    /// Requests per HTTP phase (each phase also stops after 30 s).
    #[arg(long, default_value_t = 4000)]
    requests: usize,
    /// Connections of the HTTP load.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Just-started servers the HTTP measurement takes (at least 1), one
    /// after another over the same registry, each a restart with the
    /// compiled-code cache: one start is one sample of a noisy figure
    /// (the distinct ratio moves by a tenth or more from one start of the
    /// same build to the next), so the summary reports the median over
    /// the starts.
    #[arg(long, default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    starts: usize,
    /// Keep the server section's registry (and its compiled-code cache)
    /// under `--out`, for `--sections http` to reuse.
    #[arg(long)]
    keep_registry: bool,
    /// Parts of the full mode to run (e.g. `--sections compare` after
    /// building with `--features extism`). `http` (not in the default
    /// list) runs only the HTTP phases, against the registry a
    /// `--sections server --keep-registry` run left.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "floor,scale,explain,compare,publish,fix,enrich,watch,server,plot"
    )]
    sections: Vec<String>,
    /// Instead of the sections: price each engine mechanism (`ablation`),
    /// one engine with all on, then one with each off in turn, then all
    /// on again, each through floor, scale at `--sizes`, compare's engine
    /// columns and fix at 10,000 rules.
    #[arg(long)]
    ablate: bool,
    /// The mechanisms `--ablate` turns off (default: all).
    #[arg(long, value_delimiter = ',')]
    mechanisms: Vec<String>,
    /// Rounds of `--ablate` (each all on, then each mechanism off).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
}

impl Args {
    fn runs(&self, section: &str) -> bool {
        self.sections.iter().any(|s| s == section)
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The server process of the start-up and HTTP measurements (internal).
    #[command(hide = true)]
    ServeChild {
        #[command(flatten)]
        config: pitfall_server::Config,
    },
}

fn fixture(name: &str) -> anyhow::Result<Manifest> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/manifests")
        .join(name);
    let bytes = std::fs::read(&path).with_context(|| path.display().to_string())?;
    parse_manifest(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn machines(n: usize, rules: usize, seed: u64) -> anyhow::Result<Vec<Manifest>> {
    fleet::fleet(n, rules, seed)
        .into_iter()
        .map(|v| manifest_from_value(v).map_err(|e| anyhow::anyhow!("fleet: {e:?}")))
        .collect()
}

/// Key=value lines, printed and kept for the results file.
#[derive(Debug, Default)]
struct Report {
    lines: Vec<String>,
}

impl Report {
    fn line(&mut self, text: impl Into<String>) {
        let text = text.into();
        println!("{text}");
        self.lines.push(text);
    }
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn summary_line(key: &str, s: &Summary) -> String {
    format!("{key}_p50_us={:.1} {key}_p99_us={:.1}", s.p50, s.p99)
}

fn scale_line(p: &ScalePoint) -> String {
    format!(
        "check rules={} synthetic={} p50_us={:.1} p99_us={:.1} mean_us={:.1} cpu_p50_us={:.1} cpu_p99_us={:.1} first_check_p50_us={:.1} candidates_median={} candidates_max={} per_candidate_us={:.2} index_p50_us={:.2} prepare_p50_us={:.1} findings_median={} linked={} load_s={:.2}",
        p.rules_total,
        p.synthetic,
        p.check.p50,
        p.check.p99,
        p.check.mean,
        p.check_cpu.p50,
        p.check_cpu.p99,
        p.first_check.p50,
        p.candidates_median,
        p.candidates_max,
        p.check.p50 / p.candidates_median.max(1.0),
        p.candidates.p50,
        p.prepare.p50,
        p.findings_median,
        p.linked,
        p.load.as_secs_f64(),
    ) + &format!(
        "\ncheck_memo rules={} unseen_machines p50_us={:.1} p99_us={:.1} cpu_p50_us={:.1} cpu_p99_us={:.1} hit_rate={:.3} memo_mib={:.1} over_sandboxed_p50={:.2}",
        p.rules_total,
        p.memo_check.p50,
        p.memo_check.p99,
        p.memo_check_cpu.p50,
        p.memo_check_cpu.p99,
        p.memo_hit_rate,
        p.memo_bytes as f64 / (1 << 20) as f64,
        p.memo_check.p50 / p.check.p50,
    ) + &format!(
        "\ncheck_parts rules={} unseen_machines={} one_thread_cpu_us: prepare={:.1} candidates={:.1} replays={:.1} replays_again={:.1} misses={:.1} | candidates={:.1} run_in_sandbox={:.1} replay_cold_over_warm={:.2}",
        p.rules_total,
        p.parts.machines,
        p.parts.prepare_us,
        p.parts.candidates_us,
        p.parts.replays_us,
        p.parts.replays_again_us,
        p.parts.misses_us,
        p.parts.candidates,
        p.parts.missed,
        p.parts.replays_us / p.parts.replays_again_us.max(f64::MIN_POSITIVE),
    )
}

fn main() -> anyhow::Result<()> {
    // As the server does: the child below is the server, and the engine's
    // figures are taken under the same allocator settings.
    pitfall_server::allocator::no_transparent_huge_pages();
    let mut args = Args::parse();
    if let Some(Command::ServeChild { config }) = args.command.take() {
        // The server's own runtime, so the child is the server as shipped.
        let runtime = pitfall_server::runtime::build()?;
        return runtime.block_on(startup::serve_child(config));
    }
    let started = Instant::now();
    std::fs::create_dir_all(&args.out).with_context(|| args.out.display().to_string())?;
    if args.ablate {
        return ablate(&args, started);
    }
    let engine = Engine::new(Limits::default()).context("engine")?;
    let bundled: Vec<Arc<Rule>> = pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| engine.load(m.wasm).map(Arc::new).with_context(|| m.crate_name.to_owned()))
        .collect::<anyhow::Result<_>>()?;
    let g5g = Prepared::new(fixture("g5g-gemma4-vllm0271.json")?);
    let mut report = Report::default();

    if args.quick {
        args.sections = vec!["floor".into(), "scale".into()];
    }
    // 1. The floor and the bundled rules, as the engine benchmark measures them.
    let floor_rule = engine.load(&floor::floor_module()).context("the floor module")?;
    let ratio =
        args.runs("floor").then(|| floor::measure(&engine, &floor_rule, &bundled, &g5g, 2000, 20));
    if let Some(ratio) = &ratio {
        report.line(format!("ratio_to_floor={:.2}", ratio.ratio));
    }

    // 2. Check latency at each corpus size, over a fleet of distinct machines.
    let sizes: Vec<usize> = match (args.quick, args.runs("scale")) {
        (_, false) => Vec::new(),
        (true, true) => vec![10_000],
        (false, true) => args.sizes.clone(),
    };
    let mut points = Vec::new();
    for &size in &sizes {
        let specs = corpus::specs(size, SEED);
        let fleet = machines(args.fleet, size, SEED + 1)?;
        let unseen = machines(args.fleet, size, SEED + 2)?;
        let probe = machines(args.fleet, size, SEED + 3)?;
        let point = scale::measure(
            &engine,
            &bundled,
            &specs,
            &fleet,
            &unseen,
            &probe,
            if args.quick { 5 } else { 10 },
        );
        if size == 10_000 {
            report.line(format!("check_10k_p50_us={:.0}", point.check.p50));
        }
        points.push(point);
    }

    // 2b. explain of a 200-line log against 10,000 rules' signatures, as a
    // ratio to one check on the same rule set.
    if args.runs("explain") {
        let specs = corpus::specs(SERVER_RULES, SEED);
        let mut rules = bundled.clone();
        rules.extend(scale::load(&engine, &specs));
        let fleet = machines(20, SERVER_RULES, SEED + 1)?;
        let p = explain::measure(&engine, rules, &fleet, if args.quick { 10 } else { 50 });
        let met = p.explain.p50 <= 2000.0 && p.explain.p99 <= 10_000.0;
        report.line(format!(
            "explain rules={} signatures={} log_lines={} causes={} top={} build_ms={:.1} explain_p50_us={:.1} explain_p99_us={:.1} check_p50_us={:.1} check_p99_us={:.1} explain_over_check_p50={:.3} target p50<=2000us p99<=10000us {}",
            p.rules,
            p.signatures,
            p.log_lines,
            p.causes,
            p.top,
            p.build_ms,
            p.explain.p50,
            p.explain.p99,
            p.check.p50,
            p.check.p99,
            p.explain.p50 / p.check.p50.max(f64::MIN_POSITIVE),
            verdict(met)
        ));
        // The explainer alone at each corpus size: its cost must not grow
        // with the registry.
        let bundled_meta: Vec<_> = bundled.iter().map(|r| r.meta().clone()).collect();
        for &size in &[1_000, 10_000, 100_000] {
            let a = explain::alone(&corpus::specs(size, SEED), &bundled_meta, 2_000);
            report.line(format!(
                "explain_alone rules={} signatures={} build_ms={:.1} explain_p50_us={:.1} explain_p99_us={:.1}",
                a.rules, a.signatures, a.build_ms, a.explain.p50, a.explain.p99
            ));
        }
    }

    println!();
    println!("== summary ==");
    if let Some(ratio) = &ratio {
        report.line(format!(
            "floor_us={:.2} bundled_rules={} ratio_to_floor={:.2} target<=1.5 {}",
            ratio.floor_us,
            ratio.rules.len(),
            ratio.ratio,
            verdict(ratio.ratio <= 1.5)
        ));
    }
    for p in &points {
        report.line(scale_line(p));
    }
    if let Some(p) = points.iter().find(|p| p.synthetic == 10_000) {
        report.line(format!(
            "check_10k p50_us={:.1} target<=1000 {} p99_us={:.1} target<=5000 {} (one thread, CPU time: p50_us={:.1} {} p99_us={:.1} {})",
            p.check.p50,
            verdict(p.check.p50 <= 1000.0),
            p.check.p99,
            verdict(p.check.p99 <= 5000.0),
            p.check_cpu.p50,
            verdict(p.check_cpu.p50 <= 1000.0),
            p.check_cpu.p99,
            verdict(p.check_cpu.p99 <= 5000.0),
        ));
    }
    let at = |n: usize| points.iter().find(|p| p.synthetic == n);
    if let (Some(a), Some(b)) = (at(10_000), at(100_000)) {
        let growth = b.check.p50 / a.check.p50;
        report.line(format!(
            "growth_100k_over_10k p50_ratio={growth:.2} target<=2 {} cpu_p50_ratio={:.2} candidates_ratio={:.2} index_ratio={:.2}",
            verdict(growth <= 2.0),
            b.check_cpu.p50 / a.check_cpu.p50,
            b.candidates_median / a.candidates_median.max(1.0),
            b.candidates.p50 / a.candidates.p50,
        ));
    }
    if !args.quick {
        full(&args, &engine, &bundled, &points, &mut report)?;
    }
    report.line(format!("elapsed_s={:.1}", started.elapsed().as_secs_f64()));
    let name = match (args.quick, args.sections.len()) {
        (true, _) => "quick".to_owned(),
        (false, 6) => "full".to_owned(),
        (false, _) => args.sections.join("-"),
    };
    let path = args.out.join(format!("{name}.txt"));
    std::fs::write(&path, report.lines.join("\n") + "\n")
        .with_context(|| path.display().to_string())?;
    println!("(written to {})", path.display());
    Ok(())
}

/// The rest of the full mode: sandbox price, Extism, publish, start-up,
/// RSS, HTTP, the plot.
fn full(
    args: &Args,
    engine: &Engine,
    bundled: &[Arc<Rule>],
    points: &[ScalePoint],
    report: &mut Report,
) -> anyhow::Result<()> {
    let specs = corpus::specs(1000, SEED);
    if args.runs("compare") {
        compare_hosts(engine, &specs, report)?;
    }
    if args.runs("publish") {
        publish_cost(&specs, report)?;
    }
    if args.runs("fix") {
        fix_cost(engine, bundled, report)?;
    }
    if args.runs("enrich") {
        enrich_cost(report)?;
    }
    if args.runs("watch") {
        watch_cost(report)?;
    }
    if args.runs("server") {
        server(args, bundled.len(), report)?;
    }
    if args.runs("http") {
        http_only(args, report)?;
    }
    if args.runs("plot") && !points.is_empty() {
        let png = args.out.join("check-latency.png");
        let data: Vec<plot::Point> =
            points.iter().map(|p| (p.rules_total, p.check.p50, p.check.p99)).collect();
        plot::check_latency(&png, &data)?;
        report.line(format!("plot={}", png.display()));
    }
    Ok(())
}

/// The figures of one configuration of `--ablate`, by name, in report order.
type Figures = Vec<(String, f64)>;

/// Runs one configuration's measurements and prints its line.
fn ablation_run(
    args: &Args,
    name: &str,
    config: &Configuration,
    report: &mut Report,
) -> anyhow::Result<Figures> {
    config.apply_process_wide();
    let engine = Engine::tuned(config.limits.clone(), config.tuning).context("engine")?;
    let bundled: Vec<Arc<Rule>> = pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| engine.load(m.wasm).map(Arc::new).with_context(|| m.crate_name.to_owned()))
        .collect::<anyhow::Result<_>>()?;
    let g5g = fixture("g5g-gemma4-vllm0271.json")?;
    let mut figures: Figures = Vec::new();
    let floor_rule = engine.load(&floor::floor_module()).context("the floor module")?;
    let ratio =
        floor::measure(&engine, &floor_rule, &bundled, &Prepared::new(g5g.clone()), 2000, 20);
    figures.push(("floor_ratio".into(), ratio.ratio));
    let mut p50s = Vec::new();
    for &size in &args.sizes {
        let specs = corpus::specs(size, SEED);
        let p = scale::measure(
            &engine,
            &bundled,
            &specs,
            &machines(args.fleet, size, SEED + 1)?,
            &machines(args.fleet, size, SEED + 2)?,
            &machines(args.fleet, size, SEED + 3)?,
            5,
        );
        let k = size / 1000;
        figures.push((format!("check{k}k_p50_us"), p.check.p50));
        figures.push((format!("check{k}k_p99_us"), p.check.p99));
        figures.push((format!("check{k}k_cpu_p50_us"), p.check_cpu.p50));
        figures.push((format!("served{k}k_p50_us"), p.memo_check.p50));
        figures.push((format!("served{k}k_cpu_p50_us"), p.memo_check_cpu.p50));
        figures.push((format!("index{k}k_p50_us"), p.candidates.p50));
        p50s.push((size, p.check.p50));
    }
    if let (Some((_, a)), Some((_, b))) =
        (p50s.iter().find(|(n, _)| *n == 10_000), p50s.iter().find(|(n, _)| *n == 100_000))
    {
        figures.push(("growth_100k_over_10k".into(), b / a));
    }
    let rows = compare::measure(
        &engine,
        &compare::pick(&corpus::specs(1000, SEED)),
        compare::Peers::default(),
        4000,
        20,
    )?;
    figures.push((
        "engine_reused_call_us".into(),
        median(&rows.iter().map(|r| r.engine_reused_us).collect::<Vec<_>>()),
    ));
    let synthetic = scale::load(&engine, &corpus::specs(SERVER_RULES, SEED));
    let rules = bundled.iter().cloned().chain(synthetic).collect();
    let fix = fix::measure(&engine, rules, &g5g, 20);
    figures.push(("fix10k_p50_ms".into(), fix.steady.p50 / 1e3));
    figures.push(("fix10k_p99_ms".into(), fix.steady.p99 / 1e3));
    let text: Vec<String> = figures.iter().map(|(k, v)| format!("{k}={v:.2}")).collect();
    report.line(format!("ablation config={name} {}", text.join(" ")));
    Ok(figures)
}

/// `--ablate`: `--repeats` rounds, each all on then each mechanism off
/// in turn, in one process; then each mechanism's median figures over the
/// all-on runs' medians (a figure's spread over the all-on runs says what
/// a ratio's noise is).
fn ablate(args: &Args, started: Instant) -> anyhow::Result<()> {
    let mechanisms: Vec<Mechanism> = if args.mechanisms.is_empty() {
        Mechanism::ALL.to_vec()
    } else {
        args.mechanisms
            .iter()
            .map(|m| Mechanism::parse(m).with_context(|| format!("no mechanism {m}")))
            .collect::<anyhow::Result<_>>()?
    };
    let mut report = Report::default();
    let on = Configuration::without(&[]);
    let mut on_runs: Vec<Figures> = Vec::new();
    let mut off_runs: Vec<Vec<Figures>> = vec![Vec::new(); mechanisms.len()];
    for _ in 0..args.repeats {
        on_runs.push(ablation_run(args, "all_on", &on, &mut report)?);
        for (m, runs) in mechanisms.iter().zip(&mut off_runs) {
            let config = Configuration::without(&[*m]);
            runs.push(ablation_run(args, &format!("{}_off", m.name()), &config, &mut report)?);
        }
    }
    on.apply_process_wide();
    // Each figure's median over a configuration's runs.
    let medians = |runs: &[Figures]| -> Vec<(String, f64)> {
        runs[0]
            .iter()
            .enumerate()
            .map(|(i, (k, _))| {
                (k.clone(), median(&runs.iter().map(|r| r[i].1).collect::<Vec<_>>()))
            })
            .collect()
    };
    let baseline = medians(&on_runs);
    let spread: Vec<String> = baseline
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let values: Vec<f64> = on_runs.iter().map(|r| r[i].1).collect();
            let (lo, hi) =
                values.iter().fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
            format!("{k}={v:.2}[{lo:.2}..{hi:.2}]")
        })
        .collect();
    report.line(format!(
        "ablation all_on median[min..max] runs={} {}",
        on_runs.len(),
        spread.join(" ")
    ));
    for (m, runs) in mechanisms.iter().zip(&off_runs) {
        let ratios: Vec<String> = medians(runs)
            .iter()
            .zip(&baseline)
            .map(|((k, v), (_, on))| format!("{k}={:.2}", v / on))
            .collect();
        report.line(format!("ablation off_over_on mechanism={} {}", m.name(), ratios.join(" ")));
    }
    report.line(format!("elapsed_s={:.1}", started.elapsed().as_secs_f64()));
    let path = args.out.join("ablation.txt");
    std::fs::write(&path, report.lines.join("\n") + "\n")
        .with_context(|| path.display().to_string())?;
    println!("(written to {})", path.display());
    Ok(())
}

/// Rounds of the fix measurement after its first request.
const FIX_ROUNDS: usize = 50;

/// `pitfall fix` on the G5g fixture: the bundled corpus, then it and a
/// synthetic registry of 10,000 rules.
fn fix_cost(engine: &Engine, bundled: &[Arc<Rule>], report: &mut Report) -> anyhow::Result<()> {
    let g5g = fixture("g5g-gemma4-vllm0271.json")?;
    let synthetic = scale::load(engine, &corpus::specs(SERVER_RULES, SEED));
    for rules in [bundled.to_vec(), bundled.iter().cloned().chain(synthetic).collect()] {
        let p = fix::measure(engine, rules, &g5g, FIX_ROUNDS);
        report.line(format!(
            "fix rules={} fixture=g5g status={} steps={} evaluations={} first_ms={:.1} p50_ms={:.2} p99_ms={:.2} target_p50_ms=50 {}",
            p.rules_total,
            p.status,
            p.steps,
            p.evaluations,
            p.first.as_secs_f64() * 1e3,
            p.steady.p50 / 1e3,
            p.steady.p99 / 1e3,
            verdict(p.steady.p50 <= 50_000.0),
        ));
    }
    Ok(())
}

/// The same rule logic in our engine, natively and (with the feature) in Extism.
fn compare_hosts(
    engine: &Engine,
    specs: &[corpus::RuleSpec],
    report: &mut Report,
) -> anyhow::Result<()> {
    let rules = compare::pick(specs);
    #[cfg(feature = "extism")]
    let (mut reused, mut fresh) = {
        use pitfall_bench::extism::{ExtismHost, Isolation};
        (
            ExtismHost::new(&rules, Isolation::Reused)?,
            ExtismHost::new(&rules, Isolation::FreshPerCall)?,
        )
    };
    #[cfg(feature = "extism")]
    let peers = compare::Peers { reused: Some(&mut reused), fresh: Some(&mut fresh) };
    #[cfg(not(feature = "extism"))]
    let peers = compare::Peers::default();
    let rows = compare::measure(engine, &rules, peers, 4000, 20)?;
    for r in &rows {
        let extism = match (r.extism_us, r.extism_fresh_us) {
            (Some(x), Some(f)) => format!(
                "extism_us={x:.2} extism_over_engine_reused={:.2} target>=3 {} extism_over_engine={:.2} extism_over_engine_one_shot={:.2} extism_fresh_us={f:.1} extism_fresh_over_engine={:.1}",
                x / r.engine_reused_us,
                verdict(x / r.engine_reused_us >= 3.0),
                x / r.engine_us,
                x / r.engine_one_shot_us,
                f / r.engine_us,
            ),
            _ => "extism_us=- (build with --features extism)".to_owned(),
        };
        report.line(format!(
            "per_call rule={} outcome={} engine_reused_us={:.2} engine_us={:.2} engine_one_shot_us={:.2} native_us={:.3} sandbox_price={:.1}x {extism}",
            r.rule,
            r.outcome,
            r.engine_reused_us,
            r.engine_us,
            r.engine_one_shot_us,
            r.native_us,
            r.engine_us / r.native_us
        ));
    }

    Ok(())
}

/// Publish cost: the bundled rules and 200 synthetic ones.
fn publish_cost(specs: &[corpus::RuleSpec], report: &mut Report) -> anyhow::Result<()> {
    let bundled_bytes: Vec<&[u8]> = pitfall_bundled_rules::MODULES.iter().map(|m| m.wasm).collect();
    let synthetic: Vec<Vec<u8>> = specs.iter().take(200).map(corpus::module).collect();
    for (name, modules) in
        [("bundled", bundled_bytes), ("synthetic", synthetic.iter().map(Vec::as_slice).collect())]
    {
        let c = publish::measure(&modules)?;
        report.line(format!(
            "publish set={name} modules={} bytes_median={:.0} {} {} {} {}",
            c.modules,
            c.bytes_median,
            summary_line("validate", &c.validate),
            summary_line("compile", &c.compile),
            summary_line("tests", &c.tests),
            summary_line("total", &c.total),
        ));
    }

    Ok(())
}

/// A server process with 10,000 rules: first start, restart without the
/// compiled-code cache, restart with it; then HTTP against the last one,
/// the first of [`Args::starts`] just-started servers.
fn server(args: &Args, bundled: usize, report: &mut Report) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    let dir = startup::registry_dir(&args.out, SERVER_RULES);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let seeded =
        runtime.block_on(startup::seed_registry(&dir, &corpus::specs(SERVER_RULES, SEED)))?;
    report.line(format!(
        "registry synthetic_rules={seeded} (plus the bundled rules, seeded by the server)"
    ));
    let mut server = None;
    for (label, cache) in
        [("first_start", false), ("restart_without_cache", false), ("restart_with_cache", true)]
    {
        let s = startup::start(&exe, &dir, cache, SERVER_RULES + bundled)?;
        report.line(format!(
            "startup {label}{} rules={} cold_start_ms={:.0} target<=2000 {} all_served_ms={:.0} warm_ms={:.0} rss_mib={:.0} peak_rss_mib={:.0} target<=512 {}",
            if cache { " start=1" } else { "" },
            SERVER_RULES + bundled,
            s.cold_start.as_secs_f64() * 1e3,
            verdict(s.cold_start <= Duration::from_secs(2)),
            s.all_served.as_secs_f64() * 1e3,
            s.warm.as_secs_f64() * 1e3,
            s.rss_bytes as f64 / (1 << 20) as f64,
            s.peak_rss_bytes as f64 / (1 << 20) as f64,
            verdict(s.peak_rss_bytes <= 512 << 20),
        ));
        if cache {
            server = Some(s);
        } else {
            s.stop()?;
        }
    }
    let server = server.context("the last server")?;
    http_starts(&runtime, server, &dir, args, SERVER_RULES + bundled, report)?;
    if !args.keep_registry {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}

/// The HTTP phases alone, against a kept registry: [`Args::starts`]
/// restarts with its compiled-code cache, as the server section's last
/// start.
fn http_only(args: &Args, report: &mut Report) -> anyhow::Result<()> {
    let dir = startup::registry_dir(&args.out, SERVER_RULES);
    if !dir.join("pitfall.db").exists() {
        anyhow::bail!(
            "no registry at {}: run `--sections server --keep-registry` first",
            dir.display()
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let rules = SERVER_RULES + pitfall_bundled_rules::MODULES.len();
    let server = restart(&dir, rules, 1, report)?;
    http_starts(&runtime, server, &dir, args, rules, report)
}

/// Restarts the server over the registry in `dir` with its compiled-code
/// cache, and prints its start-up line (`start`: which of the HTTP
/// measurement's starts it is). Every such start begins with an empty
/// memo and result cache: a just-started server.
fn restart(
    dir: &std::path::Path,
    rules: usize,
    start: usize,
    report: &mut Report,
) -> anyhow::Result<startup::Server> {
    let exe = std::env::current_exe()?;
    let server = startup::start(&exe, dir, true, rules)?;
    report.line(format!(
        "startup restart_with_cache start={start} cold_start_ms={:.0} warm_ms={:.0} rss_mib={:.0} pid={}",
        server.cold_start.as_secs_f64() * 1e3,
        server.warm.as_secs_f64() * 1e3,
        server.rss_bytes as f64 / (1 << 20) as f64,
        server.pid(),
    ));
    Ok(server)
}

/// The HTTP measurement over [`Args::starts`] just-started servers in
/// turn: `first` (started by the caller over the registry in `dir`), then
/// restarts over it, each once the one before has stopped, so no two servers
/// share the machine. One start is one sample of a figure that moves from
/// one start to the next, so the summary is the median over the starts;
/// the warmed phases run once, on the last start's server.
fn http_starts(
    runtime: &tokio::runtime::Runtime,
    first: startup::Server,
    dir: &std::path::Path,
    args: &Args,
    rules: usize,
    report: &mut Report,
) -> anyhow::Result<()> {
    let bodies = HttpBodies::draw(args);
    // Before the load, with the first server idle.
    request_parts(&bodies, report)?;
    let mut next = Some(first);
    let mut starts = Vec::new();
    let mut warmed = None;
    for start in 1..=args.starts {
        // An error below returns at once: dropping `server` kills its
        // child, and no later start is made.
        let server = match next.take() {
            Some(server) => server,
            None => restart(dir, rules, start, report)?,
        };
        starts.push(just_started_phases(runtime, &server, &bodies, start, report)?);
        if start == args.starts {
            warmed = Some(last_start(runtime, &server, &bodies, args, start, report)?);
        }
        server.stop()?;
    }
    let (warmed, last) = (warmed.context("no last start")?, starts.last().context("no start")?);
    let per_start = |f: fn(&JustStarted) -> f64| -> (f64, String) {
        let values: Vec<f64> = starts.iter().map(f).collect();
        let text = values.iter().map(|v| format!("{v:.2}")).collect::<Vec<_>>();
        (median(&values), text.join("/"))
    };
    let (distinct, distinct_per_start) = per_start(|s| s.distinct);
    let (repeated, repeated_per_start) = per_start(|s| s.repeated);
    report.line(format!(
        "http check_distinct_over_echo={distinct:.2} per_start={distinct_per_start} check_repeated_over_echo={repeated:.2} repeated_per_start={repeated_per_start} (median over {} just-started servers of each one's median round) target>=0.5 distinct {} repeated {} server_rss_mib={:.0} peak_rss_mib={:.0} (the last start's)",
        starts.len(),
        verdict(distinct >= 0.5),
        verdict(repeated >= 0.5),
        last.rss_bytes as f64 / (1 << 20) as f64,
        last.peak_rss_bytes as f64 / (1 << 20) as f64,
    ));
    report.line(format!(
        "http check_distinct_warmed_over_echo={warmed:.2} (the last start's server after {} more distinct machines, unmeasured: a registry that has run a while; median of the rounds' ratios; the target's verdict stays the line above's)",
        warm_up_machines(args),
    ));
    Ok(())
}

/// `n` fleet manifests drawn from `seed`, as request bodies.
fn fleet_bodies(seed: u64, n: usize) -> Arc<Vec<Vec<u8>>> {
    Arc::new(
        fleet::fleet(n, SERVER_RULES, seed).iter().map(|m| m.to_string().into_bytes()).collect(),
    )
}

/// `HTTP_ROUNDS` rounds' shares of `n` bodies each, drawn from `seed`:
/// no body is in two rounds.
fn round_bodies(seed: u64, n: usize) -> Vec<Arc<Vec<Vec<u8>>>> {
    fleet_bodies(seed, n * HTTP_ROUNDS)
        .chunks(n)
        .take(HTTP_ROUNDS)
        .map(|c| Arc::new(c.to_vec()))
        .collect()
}

/// The bodies of the just-started phases, drawn once and sent alike to
/// every start: each server starts with an empty memo and result cache,
/// so a distinct manifest is new to each, and none is sent twice to one.
struct HttpBodies {
    /// One phase's load in one round.
    per_round: http::Load,
    /// Each round's echo bodies.
    echo: Vec<Arc<Vec<Vec<u8>>>>,
    /// Each round's distinct manifests (cache misses).
    distinct: Vec<Arc<Vec<Vec<u8>>>>,
    /// One manifest per connection, sent again and again (cache hits).
    repeated: Arc<Vec<Vec<u8>>>,
}

impl HttpBodies {
    /// Draws them for `args`' requests (split into the rounds) and
    /// connections.
    fn draw(args: &Args) -> HttpBodies {
        let per_round = http::Load {
            requests: (args.requests / HTTP_ROUNDS).max(1),
            concurrency: args.concurrency,
            deadline: Duration::from_secs(30),
        };
        HttpBodies {
            per_round,
            echo: round_bodies(100, per_round.requests),
            distinct: round_bodies(200, per_round.requests),
            repeated: fleet_bodies(300, args.concurrency),
        }
    }
}

/// Enrichment alone, on the fixtures (GPUs, releases and models the tables
/// know) and on a fleet of synthetic machines.
fn enrich_cost(report: &mut Report) -> anyhow::Result<()> {
    let mut manifests = Vec::new();
    for name in
        ["g5g-gemma4-vllm0271.json", "h100x8-llama70b-healthy.json", "a6000-llama70b-single.json"]
    {
        manifests.push(fixture(name)?);
    }
    manifests.extend(machines(1000, SERVER_RULES, SEED + 7)?);
    let c = pitfall_bench::enrichment::measure(&manifests);
    report.line(format!(
        "enrich manifests={} filled={} enrich_p50_us={:.2} enrich_p99_us={:.2} normalize_p50_us={:.2} normalize_p99_us={:.2} (one thread's CPU per call)",
        c.manifests, c.filled, c.enrich.p50, c.enrich.p99, c.normalize.p50, c.normalize.p99,
    ));
    Ok(())
}

/// Watches: one approval over 100,000 stored manifests, 1% admitted.
fn watch_cost(report: &mut Report) -> anyhow::Result<()> {
    let c = pitfall_bench::watch::measure(100_000)?;
    report.line(format!(
        "watch manifests={} evaluated={} events={} approval_to_enqueued_ms={:.0} pass_ms={:.0} target_ms=5000 {} index_build_ms={:.0} index_bytes_per_manifest={:.0} index_rss_bytes_per_manifest={:.0}",
        c.manifests,
        c.evaluated,
        c.events,
        c.approval_to_enqueued.as_secs_f64() * 1000.0,
        c.pass.as_secs_f64() * 1000.0,
        verdict(c.approval_to_enqueued.as_millis() <= 5000),
        c.index_build.as_secs_f64() * 1000.0,
        c.index_bytes_per_manifest,
        c.rss_bytes_per_manifest,
    ));
    Ok(())
}

/// The request's parts around the check, next to the echo's work, on the
/// distinct phase's bodies: one thread's CPU, no HTTP, so measured once
/// (with the first server idle), not per start.
fn request_parts(bodies: &HttpBodies, report: &mut Report) -> anyhow::Result<()> {
    let all_distinct: Vec<Vec<u8>> =
        bodies.distinct.iter().flat_map(|c| c.iter().cloned()).collect();
    let p = parts::measure(&all_distinct)?;
    report.line(format!(
        "http request_parts bodies={} echo_parse_write_us={:.1} read_us={:.1} read_through_value_us={:.1} digest_us={:.1} prepare_us={:.1} read_over_echo={:.2} read_digest_prepare_over_echo={:.2} (one thread's CPU per body, no HTTP)",
        p.bodies,
        p.echo_us,
        p.read_us,
        p.read_through_value_us,
        p.digest_us,
        p.prepare_us,
        p.read_us / p.echo_us,
        (p.read_us + p.digest_us + p.prepare_us) / p.echo_us,
    ));
    Ok(())
}

/// What one just-started server measured.
struct JustStarted {
    /// Distinct checks over the echo: the median round's ratio.
    distinct: f64,
    /// Repeated checks over the echo: the median round's ratio.
    repeated: f64,
    /// The server's RSS after the phases, bytes.
    rss_bytes: u64,
    /// Its peak RSS by then, bytes.
    peak_rss_bytes: u64,
}

/// The just-started phases against one server: echo, distinct manifests
/// (each sent once: cache misses) and repeated ones (cache hits), in
/// rounds of the three in turn, so a slower stretch of the machine lands
/// on every phase alike; each ratio is taken within a round, and the
/// median round kept. Prints the start's phase lines and ratios.
fn just_started_phases(
    runtime: &tokio::runtime::Runtime,
    server: &startup::Server,
    bodies: &HttpBodies,
    start: usize,
    report: &mut Report,
) -> anyhow::Result<JustStarted> {
    let names = ["echo", "check_distinct", "check_repeated"];
    let mut results: [Vec<http::LoadResult>; 3] = Default::default();
    // Each round's CPU per answered request: the server's, the load's.
    let mut cpu: [Vec<(f64, f64)>; 3] = Default::default();
    for round in 0..HTTP_ROUNDS {
        let phases = [
            ("/bench/echo", bodies.echo[round].clone()),
            ("/v1/check", bodies.distinct[round].clone()),
            ("/v1/check", bodies.repeated.clone()),
        ];
        for (phase, (path, sent)) in phases.into_iter().enumerate() {
            // On stderr, for a profiler attaching to the server's pid.
            eprintln!("phase {} starts (start {start}, round {round})", names[phase]);
            let (server_before, client_before) =
                (startup::cpu_time(server.pid())?, startup::cpu_time(std::process::id())?);
            let r = runtime.block_on(http::run(server.addr, path, sent, bodies.per_round))?;
            let server_cpu = startup::cpu_time(server.pid())? - server_before;
            let client_cpu = startup::cpu_time(std::process::id())? - client_before;
            cpu[phase].push((
                server_cpu.as_secs_f64() * 1e6 / r.ok.max(1) as f64,
                client_cpu.as_secs_f64() * 1e6 / r.ok.max(1) as f64,
            ));
            results[phase].push(r);
        }
    }
    for (phase, runs) in results.iter().enumerate() {
        let ok: usize = runs.iter().map(|r| r.ok).sum();
        let errors: usize = runs.iter().map(|r| r.errors).sum();
        let rps: Vec<f64> = runs.iter().map(http::LoadResult::throughput).collect();
        report.line(format!(
            "http phase={} start={start} ok={ok} errors={errors} rps_per_round={} server_cpu_us_per_request={} load_cpu_us_per_request={} p50_us={:.0} p99_us={:.0} concurrency={}",
            names[phase],
            rps.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>().join("/"),
            cpu[phase].iter().map(|c| format!("{:.0}", c.0)).collect::<Vec<_>>().join("/"),
            cpu[phase].iter().map(|c| format!("{:.0}", c.1)).collect::<Vec<_>>().join("/"),
            median(&runs.iter().map(|r| r.latency.p50).collect::<Vec<_>>()),
            median(&runs.iter().map(|r| r.latency.p99).collect::<Vec<_>>()),
            bodies.per_round.concurrency
        ));
    }
    let over_echo = |phase: usize| -> Vec<f64> {
        (0..HTTP_ROUNDS)
            .map(|i| results[phase][i].throughput() / results[0][i].throughput())
            .collect()
    };
    let (distinct, repeated) = (over_echo(1), over_echo(2));
    let joined = |r: &[f64]| r.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join("/");
    report.line(format!(
        "http start={start} distinct_over_echo={:.2} repeated_over_echo={:.2} (median round) distinct_per_round={} repeated_per_round={}",
        median(&distinct),
        median(&repeated),
        joined(&distinct),
        joined(&repeated),
    ));
    let (rss_bytes, peak_rss_bytes) = server.rss()?;
    Ok(JustStarted {
        distinct: median(&distinct),
        repeated: median(&repeated),
        rss_bytes,
        peak_rss_bytes,
    })
}

/// The last start's server after its just-started phases: its memo's
/// figures over those phases (read first, as the warmed phases change
/// them), then the warmed phases. Returns their ratio.
fn last_start(
    runtime: &tokio::runtime::Runtime,
    server: &startup::Server,
    bodies: &HttpBodies,
    args: &Args,
    start: usize,
    report: &mut Report,
) -> anyhow::Result<f64> {
    let hits = server.metric("pitfall_rule_memo_hits_total")?;
    let misses = server.metric("pitfall_rule_memo_misses_total")?;
    let reused = server.metric("pitfall_rule_instances_reused_total")?;
    let instantiated = server.metric("pitfall_rule_instantiations_total")?;
    let memo_bytes = server.metric("pitfall_rule_memo_bytes")?;
    let result_cache_bytes = server.metric("pitfall_result_cache_bytes")?;
    let warm_up = fleet_bodies(400, warm_up_machines(args));
    let fresh = round_bodies(500, bodies.per_round.requests);
    let warmed =
        warmed_phases(runtime, server, report, &bodies.echo, warm_up, &fresh, bodies.per_round)?;
    report.line(format!(
        "http rule_memo start={start} hit_rate={:.3} evaluations={:.0} sandboxed_reusing_an_instance={:.3} memo_mib={:.1} result_cache_mib={:.1} (the last start, over its just-started phases)",
        hits / (hits + misses).max(1.0),
        hits + misses,
        reused / (reused + instantiated).max(1.0),
        memo_bytes / (1 << 20) as f64,
        result_cache_bytes / (1 << 20) as f64,
    ));
    Ok(warmed)
}

/// Distinct machines the warmed phase sends first, unmeasured.
fn warm_up_machines(args: &Args) -> usize {
    2 * args.requests
}

/// The distinct phase again, against the memo the server has learned by
/// then: after the three phases' rounds, [`warm_up_machines`] more
/// distinct machines (unmeasured), then rounds of the echo and of machines
/// never sent before, each ratio within a round. The phases above measure
/// a server that has just started, its memo learning as it goes (its hit
/// rate still rising at the end); a registry that has run a while has
/// seen its fleet's packages and GPUs, and this is its figure. Returns the
/// median of the rounds' ratios.
fn warmed_phases(
    runtime: &tokio::runtime::Runtime,
    server: &startup::Server,
    report: &mut Report,
    echo_bodies: &[Arc<Vec<Vec<u8>>>],
    warm_up: Arc<Vec<Vec<u8>>>,
    fresh: &[Arc<Vec<Vec<u8>>>],
    per_round: http::Load,
) -> anyhow::Result<f64> {
    eprintln!("phase warm_up starts");
    let all = http::Load { requests: warm_up.len(), ..per_round };
    let warm_up = runtime.block_on(http::run(server.addr, "/v1/check", warm_up, all))?;
    let (hits, misses) = (
        server.metric("pitfall_rule_memo_hits_total")?,
        server.metric("pitfall_rule_memo_misses_total")?,
    );
    let mut ratios = Vec::new();
    let mut distinct_rps = Vec::new();
    for (round, (echo, fresh)) in echo_bodies.iter().zip(fresh).enumerate() {
        eprintln!("phase echo starts (warmed round {round})");
        let e = runtime.block_on(http::run(server.addr, "/bench/echo", echo.clone(), per_round))?;
        eprintln!("phase check_distinct_warmed starts (round {round})");
        let d = runtime.block_on(http::run(server.addr, "/v1/check", fresh.clone(), per_round))?;
        ratios.push(d.throughput() / e.throughput());
        distinct_rps.push(d.throughput());
    }
    let hits = server.metric("pitfall_rule_memo_hits_total")? - hits;
    let misses = server.metric("pitfall_rule_memo_misses_total")? - misses;
    report.line(format!(
        "http phase=check_distinct_warmed warm_up_ok={} rps_per_round={} ratio_per_round={} memo_hit_rate={:.3} memo_mib={:.1} server_rss_mib={:.0}",
        warm_up.ok,
        distinct_rps.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>().join("/"),
        ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join("/"),
        hits / (hits + misses).max(1.0),
        server.metric("pitfall_rule_memo_bytes")? / (1 << 20) as f64,
        server.rss()?.0 as f64 / (1 << 20) as f64,
    ));
    Ok(median(&ratios))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Args;

    fn starts(args: &[&str]) -> Option<usize> {
        let argv = std::iter::once("pitfall-bench").chain(args.iter().copied());
        Args::try_parse_from(argv).ok().map(|a| a.starts)
    }

    /// No start would leave the HTTP summary a median of nothing.
    #[test]
    fn starts_below_one_is_refused() {
        assert_eq!(starts(&[]), Some(3));
        assert_eq!(starts(&["--starts", "1"]), Some(1));
        assert_eq!(starts(&["--starts", "0"]), None);
    }
}
