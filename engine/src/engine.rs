//! The narrow host: wasmtime configured for rules and nothing else, as
//! Spin's `core` narrows wasmtime to what Spin needs. One [`Engine`] per
//! process; it loads modules and evaluates them, each evaluation from a
//! fresh instance's state with its own fuel, deadline and output budget.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::Instant;

use pitfall_contract::Prepared;
use pitfall_contract::cases::{CaseResult, Evaluation, run_cases};
use pitfall_contract::report::RawOutcome;
use pitfall_contract::session::{RawOutput, Session};

use crate::observe::{Read, ReadLog};
use wasmtime::{
    Config, Global, Instance, InstanceAllocationStrategy, Linker, Memory, Module, OptLevel,
    PoolingAllocationConfig, Store, Trap, TypedFunc,
};

use crate::abi::{EVALUATE_EXPORT, MEMORY_EXPORT};
use crate::cache::{CompiledCache, digest_hex};
use crate::error::{EngineError, LoadError};
use crate::host::{self, GrowthLimiter, HostState};
use crate::inspect::inspect;
use crate::limits::{EPOCH_TICK, KEEP_RESIDENT_BYTES, Limits, MAX_TABLE_ELEMENTS};
use crate::memo::{MemoBudget, MemoStats, Outcome};
use crate::render::rendered;
use crate::reset;
use crate::rule::{Linked, Rule};
use crate::tuning::Tuning;

/// Runs rule modules in the sandbox.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("limits", &self.inner.limits).finish_non_exhaustive()
    }
}

struct Inner {
    wasm: wasmtime::Engine,
    linker: Linker<HostState>,
    limits: Limits,
    cache: CompiledCache,
    ticker_stop: Arc<AtomicBool>,
    /// Checks running now (see [`Engine::check_started`]).
    checks_in_flight: AtomicUsize,
    /// The memo of evaluations' budget and counters (`crate::memo`).
    memo: Arc<MemoBudget>,
    /// Evaluations in the sandbox that instantiated their rule.
    instantiations: AtomicU64,
    /// Evaluations in the sandbox that reused an instance, reset.
    reuses: AtomicU64,
    tuning: Tuning,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// Builds the wasmtime configuration for rules.
fn wasmtime_config(limits: &Limits) -> Config {
    let mut config = Config::new();
    config
        .consume_fuel(true)
        .epoch_interruption(true)
        .max_wasm_stack(limits.max_wasm_stack)
        // Determinism: a rule is a pure function of the manifest. (Threads
        // are not even compiled in: wasmtime's `threads` feature is off.)
        .wasm_relaxed_simd(false)
        .cranelift_nan_canonicalization(true)
        // Nothing a rule needs, so nothing a rule gets.
        .wasm_multi_memory(false)
        .wasm_memory64(false)
        .cranelift_opt_level(OptLevel::Speed)
        // No `.eh_frame` for rule code: only native unwinders (a panic
        // crossing wasm frames, which wasmtime rules out by catching a host
        // function's panic at the call and raising it again outside wasm,
        // or a profiler) read it, and registering it is per
        // module, at every compile and every load of 10,000 rules. Traps
        // and their wasm backtraces do not use it.
        .native_unwind_info(false)
        // Rules are small; we compile many at once on our own threads.
        .parallel_compilation(false)
        // No copy-on-write memory images: each would be a memfd per module
        // (10,000 file descriptors at 10,000 rules), and an instance slot
        // that last held another module must re-map the image, which a
        // check cycling through thousands of modules does nearly every
        // time. Without images an instantiation copies the module's data
        // segments (a rule's are 0.4-1.7 KB) into the slot's resident page,
        // the same for every module and every slot.
        .memory_init_cow(false);
    let mut pool = PoolingAllocationConfig::new();
    pool.total_core_instances(limits.max_instances)
        .total_memories(limits.max_instances)
        .total_tables(limits.max_instances)
        .max_memories_per_module(1)
        .max_tables_per_module(1)
        .table_elements(MAX_TABLE_ELEMENTS)
        .max_memory_size(limits.max_memory_bytes)
        .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
        // Not `pagemap_scan` (Linux 6.7+'s PAGEMAP_SCAN, resetting only the
        // pages an instance dirtied): measured, the empty-module floor did not
        // move and the bundled rules got slower (ratio to the floor 1.24 ->
        // 1.52-1.59 in back-to-back runs): the ioctl costs more than the
        // memset of a rule's one resident page.
        // No slot is kept for the module that last held it. With
        // copy-on-write images off, such affinity saves nothing, and it
        // costs the CPU's caches: a check runs dozens of modules, each
        // once, and with every free slot kept for its module each
        // instantiation took that
        // module's own slot or a never-used one, memory last touched one
        // check or more ago, so the memset and the copy of data segments
        // missed the caches. With none kept, an instantiation takes the
        // least recently freed of the slots its thread's shard has used,
        // as many as ever ran there at once (a few: one check per core,
        // one evaluation per thread), which stay in the caches. A
        // 10,000-rule check's CPU time went 1,608 -> 981-1,015 us when
        // measured.
        .max_unused_warm_slots(0)
        .table_keep_resident(4096);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

impl Engine {
    /// An engine with these limits and an in-memory compiled-code cache.
    pub fn new(limits: Limits) -> Result<Engine, EngineError> {
        Engine::build(limits, None, Tuning::default())
    }

    /// [`Engine::new`] with some of its speed-ups off (`crate::tuning`),
    /// for a benchmark that prices them.
    pub fn tuned(limits: Limits, tuning: Tuning) -> Result<Engine, EngineError> {
        Engine::build(limits, None, tuning)
    }

    /// Which speed-ups this engine has on.
    pub fn tuning(&self) -> Tuning {
        self.inner.tuning
    }

    /// An engine that also caches compiled code in `dir` (created with mode
    /// 0700 if needed), when `dir` is owned by this user and writable by no
    /// one else; otherwise it runs without it and
    /// [`Engine::disk_cache_refused`] says why.
    pub fn with_cache_dir(limits: Limits, dir: PathBuf) -> Result<Engine, EngineError> {
        Engine::build(limits, Some(dir), Tuning::default())
    }

    fn build(
        limits: Limits,
        cache_dir: Option<PathBuf>,
        tuning: Tuning,
    ) -> Result<Engine, EngineError> {
        let wasm = wasmtime::Engine::new(&wasmtime_config(&limits))
            .map_err(|e| EngineError(e.to_string()))?;
        let mut linker = Linker::new(&wasm);
        host::define(&mut linker).map_err(|e| EngineError(e.to_string()))?;
        let cache = CompiledCache::new(cache_dir, &wasm);
        let ticker_stop = Arc::new(AtomicBool::new(false));
        spawn_epoch_ticker(wasm.clone(), ticker_stop.clone())
            .map_err(|e| EngineError(e.to_string()))?;
        let memo = Arc::new(MemoBudget::new(limits.memo_bytes, &tuning));
        Ok(Engine {
            inner: Arc::new(Inner {
                wasm,
                linker,
                limits,
                cache,
                ticker_stop,
                checks_in_flight: AtomicUsize::new(0),
                memo,
                instantiations: AtomicU64::new(0),
                reuses: AtomicU64::new(0),
                tuning,
            }),
        })
    }

    /// Counts a check as running until the guard drops, and says whether
    /// it should fan its candidates out over the thread pool: only while
    /// the pool has two threads for each check running besides this one. A
    /// server answering many checks at once keeps its cores busy with whole
    /// checks, and handing every check's candidates around the pool then
    /// only costs (stolen jobs, wake-ups, another core's caches): on two
    /// cores under load, fanning out whenever fewer checks ran than threads
    /// served 3,100-3,700 distinct checks a second, this 3,600-3,750 (one
    /// bench run each, back to back).
    pub fn check_started(&self) -> (CheckGuard<'_>, bool) {
        let running = self.inner.checks_in_flight.fetch_add(1, Ordering::Relaxed);
        (CheckGuard(&self.inner.checks_in_flight), running * 2 < rayon::current_num_threads())
    }

    /// The engine's limits.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// How the memo of evaluations did so far.
    pub fn memo_stats(&self) -> MemoStats {
        self.inner.memo.stats()
    }

    /// How the evaluations in the sandbox got their instance so far (each
    /// evaluator's counted when it is dropped).
    pub fn instance_stats(&self) -> InstanceStats {
        InstanceStats {
            instantiations: self.inner.instantiations.load(Ordering::Relaxed),
            reuses: self.inner.reuses.load(Ordering::Relaxed),
        }
    }

    /// Why the compiled-code cache directory asked for is not used (not
    /// owned by this user, writable by others, an unreadable or exposed
    /// key), if it is not: callers say so, since rules then compile afresh
    /// at each start.
    pub fn disk_cache_refused(&self) -> Option<&str> {
        self.inner.cache.refused()
    }

    /// Checks, compiles (or takes from the cache) and links a module.
    /// Does not run its tests: see [`Engine::run_tests`].
    pub fn load(&self, bytes: &[u8]) -> Result<Rule, LoadError> {
        let info = inspect(bytes, &self.inner.limits)?;
        let rule = Rule::new(info, digest_hex(bytes), bytes.len())?;
        let linked = self.compile_and_link(bytes, &rule.sha256)?;
        let _ = rule.linked.set(Ok(linked));
        Ok(rule)
    }

    /// Checks a module and reads its metadata now; compiles and links it
    /// when it is first evaluated (or [`Engine::link`]ed). For modules
    /// that already passed [`Engine::load`] once, such as a registry's
    /// approved rules at start-up: a later compile failure (an engine
    /// upgrade that tightened a limit) becomes that rule's failure.
    pub fn load_deferred(&self, bytes: Arc<[u8]>) -> Result<Rule, LoadError> {
        let info = inspect(&bytes, &self.inner.limits)?;
        let rule = Rule::new(info, digest_hex(&bytes), bytes.len())?;
        *rule.bytes.lock().unwrap_or_else(|p| p.into_inner()) = Some(bytes);
        Ok(rule)
    }

    /// Compiles (or takes from the cache) and links a deferred rule, once;
    /// a no-op for a linked one. Returns the link error, if any.
    pub fn link(&self, rule: &Rule) -> Result<(), String> {
        self.linked(rule).map(|_| ())
    }

    fn linked<'r>(&self, rule: &'r Rule) -> Result<&'r Linked, String> {
        rule.linked
            .get_or_init(|| {
                let bytes = rule.bytes.lock().unwrap_or_else(|p| p.into_inner()).take();
                let bytes = bytes.ok_or_else(|| "the module's bytes are gone".to_owned())?;
                self.compile_and_link(&bytes, &rule.sha256).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    fn compile_and_link(&self, bytes: &[u8], sha256: &str) -> Result<Linked, LoadError> {
        // What is compiled is the module with its mutable globals exported
        // when it is resettable (`crate::reset`), so an evaluator can call it
        // again; the cache holds that code under the rule's own digest.
        let resettable = reset::resettable(bytes);
        let module = match self.inner.cache.get(&self.inner.wasm, sha256) {
            Some(m) => m,
            None => {
                let compiled = resettable
                    .as_ref()
                    .and_then(|r| r.exporting_globals.as_deref())
                    .unwrap_or(bytes);
                let m = self.compile_bounded(compiled)?;
                self.inner.cache.put(sha256, &m);
                m
            }
        };
        let pre = self
            .inner
            .linker
            .instantiate_pre(&module)
            .map_err(|e| LoadError::Import(e.to_string()))?;
        let evaluate_export = module
            .get_export_index(EVALUATE_EXPORT)
            .ok_or_else(|| LoadError::Export(format!("missing export `{EVALUATE_EXPORT}`")))?;
        let memory_export = module
            .get_export_index(MEMORY_EXPORT)
            .ok_or_else(|| LoadError::Export(format!("missing export `{MEMORY_EXPORT}`")))?;
        let reset = resettable.and_then(|r| r.plan.linked(&module));
        Ok(Linked { pre, evaluate_export, memory_export, reset })
    }

    /// Compiles off the calling thread and gives up after the time bound
    /// (the compile thread then finishes in the background, its result
    /// dropped; module size and complexity limits bound that work).
    fn compile_bounded(&self, bytes: &[u8]) -> Result<Module, LoadError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let wasm = self.inner.wasm.clone();
        let owned = bytes.to_vec();
        thread::Builder::new()
            .name("pitfall-compile".into())
            .spawn(move || {
                let _ = tx.send(Module::from_binary(&wasm, &owned));
            })
            .map_err(|e| LoadError::Compile(format!("could not start the compile thread: {e}")))?;
        match rx.recv_timeout(self.inner.limits.compile_timeout) {
            Ok(Ok(module)) => Ok(module),
            Ok(Err(e)) => Err(LoadError::Compile(format!("{e:#}"))),
            Err(_) => Err(LoadError::CompileTimeout(self.inner.limits.compile_timeout)),
        }
    }

    /// Evaluations that share one wasmtime store, each from a fresh
    /// instance's state ([`Evaluator`]: a rule evaluated again reuses its
    /// instance, reset): what a check uses for its candidates, and a rule's
    /// tests for its cases.
    pub fn evaluator(&self) -> Evaluator<'_> {
        Evaluator {
            engine: self,
            store: None,
            instances: 0,
            parked: Vec::new(),
            reused: 0,
            instantiated: 0,
        }
    }

    /// Evaluates `rule` on a prepared manifest in a fresh instance of a
    /// fresh store, and renders its finding when it matched.
    pub fn evaluate(&self, rule: &Rule, prepared: &Prepared) -> Evaluation {
        self.evaluator().evaluate(rule, prepared)
    }

    /// The outcome `rule`'s memo predicts for this manifest: `Some` when
    /// the rule would read what one recorded evaluation read, and so
    /// conclude the same (`crate::memo`; a check asks this first, then
    /// [`Evaluator::evaluate_recorded`]). `None` with `memo_bytes` 0. Counts
    /// a hit or a miss.
    pub fn replay(&self, rule: &Rule, prepared: &Prepared) -> Option<Evaluation> {
        let evaluation = self.replay_uncounted(rule, prepared);
        let hit = usize::from(evaluation.is_some());
        self.count_replays(hit, 1 - hit);
        evaluation
    }

    /// [`Engine::replay`] without counting: a check counts its candidates'
    /// hits and misses itself, and adds them once ([`Engine::count_replays`]).
    pub(crate) fn replay_uncounted(&self, rule: &Rule, prepared: &Prepared) -> Option<Evaluation> {
        if !self.inner.memo.enabled() {
            return None;
        }
        rule.memo.replay(&rule.info.meta, &prepared.fields)
    }

    /// Adds a check's memo hits and misses to [`Engine::memo_stats`], and
    /// keeps them as this thread's last ([`take_last_replays`]).
    pub(crate) fn count_replays(&self, hits: usize, misses: usize) {
        if self.inner.memo.enabled() {
            self.inner.memo.count(hits as u64, misses as u64);
            LAST_REPLAYS.with(|last| last.set(Some((hits as u64, misses as u64))));
        }
    }

    /// The sandboxed part of one evaluation, in a fresh store
    /// ([`Evaluator::run_sandboxed`]).
    pub fn run_sandboxed(&self, rule: &Rule, prepared: &Prepared) -> Sandboxed {
        self.evaluator().run_sandboxed(rule, prepared)
    }

    fn new_store(&self) -> Store<HostState> {
        let limits = &self.inner.limits;
        let state = HostState {
            session: Session::recording(Arc::default(), 0, None),
            memory: None,
            limiter: GrowthLimiter {
                max_memory_bytes: limits.max_memory_bytes,
                max_table_elements: MAX_TABLE_ELEMENTS,
                refused_memory: false,
                refused_table: false,
            },
        };
        let mut store = Store::new(&self.inner.wasm, state);
        store.limiter(|state| &mut state.limiter);
        store.epoch_deadline_trap();
        store
    }

    /// A fresh instance's two exports, bound for calls.
    fn bind(
        &self,
        linked: &Linked,
        store: &mut Store<HostState>,
        instance: Instance,
    ) -> wasmtime::Result<Parked> {
        let mut store = store;
        let memory = instance
            .get_module_export(&mut store, &linked.memory_export)
            .and_then(|e| e.into_memory())
            .ok_or_else(|| wasmtime::Error::msg("the rule's memory export is not a memory"))?;
        let evaluate = instance
            .get_module_export(&mut store, &linked.evaluate_export)
            .and_then(|e| e.into_func())
            .ok_or_else(|| wasmtime::Error::msg("the rule's evaluate export is not a function"))?
            .typed::<(), i32>(&store)?;
        Ok(Parked {
            module: linked.pre.module().clone(),
            instance,
            evaluate,
            memory,
            globals: None,
        })
    }

    /// Calls an instance's `pitfall_evaluate` and reads what it reported.
    fn call(&self, store: &mut Store<HostState>, bound: &Parked) -> wasmtime::Result<Sandboxed> {
        store.data_mut().memory = Some(bound.memory);
        let code = bound.evaluate.call(&mut *store, ())?;
        let raw = store.data_mut().session.take_output();
        Ok(match RawOutcome::from_code(code) {
            Some(RawOutcome::Clear) => Sandboxed::Done(Evaluation::Clear),
            Some(RawOutcome::Undetermined) => {
                Sandboxed::Done(Evaluation::Undetermined(raw.missing))
            }
            Some(RawOutcome::Matched) => Sandboxed::Matched(Box::new(raw)),
            None => Sandboxed::Done(Evaluation::Failed(format!(
                "malformed output: {EVALUATE_EXPORT} returned {code}, not 0, 1 or 2"
            ))),
        })
    }

    /// Runs the rule's embedded test cases in this engine.
    ///
    /// The wall clock is the one limit a loaded machine can trip without
    /// the rule's fault (fuel bounds its work the same on every machine),
    /// so a case stopped by the deadline is run again, up to
    /// [`DEADLINE_RETRIES`] times, before it counts as failed: a server
    /// starting on a busy host must not refuse its own bundled rules.
    pub fn run_tests(&self, rule: &Rule) -> Vec<CaseResult> {
        let mut evaluator = self.evaluator();
        run_cases(&rule.selectors, &rule.info.tests, &mut |prepared| {
            let mut evaluation = evaluator.evaluate(rule, prepared);
            for _ in 0..DEADLINE_RETRIES {
                if !past_deadline(&evaluation) {
                    break;
                }
                evaluation = evaluator.evaluate(rule, prepared);
            }
            evaluation
        })
    }

    /// Times one evaluation (for benchmarks and publish-time cost reports).
    pub fn evaluate_timed(
        &self,
        rule: &Rule,
        prepared: &Prepared,
    ) -> (Evaluation, std::time::Duration) {
        let start = Instant::now();
        let e = self.evaluate(rule, prepared);
        (e, start.elapsed())
    }
}

/// A run of evaluations in one wasmtime store.
///
/// Every evaluation starts from the state of a fresh instance: its own
/// linear memory, globals and table as the module defines them. The first
/// evaluation of a rule instantiates it, in a slot zeroed since its last
/// use; a later evaluation of the same rule through the same evaluator
/// reuses that instance when the rule's module is resettable, after
/// putting its memory and mutable globals back as they were at
/// instantiation (`crate::reset`: a resettable module cannot change its
/// tables or segments, so that is its whole state). Nothing an evaluation
/// wrote is reachable from the next: a rule imports nothing but the host
/// functions, and those reach only the running instance's memory and the
/// session of the evaluation under way, replaced before each call.
/// Reusing the instance is what saves the instantiation: measured, a
/// repeated call of a bench template costs about half a fresh one
/// (BENCHMARKS.md); a check, whose candidates are different rules, shares
/// only the store's bookkeeping (0-10 %).
///
/// The store is dropped, releasing its instances' slots, after
/// [`Evaluator::INSTANCES_PER_STORE`] instantiations, after a failed
/// evaluation (a trap leaves nothing worth keeping), and after an instance
/// grew its memory past the resident part of a slot (so an evaluator pins
/// at most one large memory); an instance whose memory grew at all is not
/// reused. When the pool has no free slot while this store holds some, it
/// releases them and tries once more.
pub struct Evaluator<'e> {
    engine: &'e Engine,
    store: Option<Store<HostState>>,
    instances: u32,
    /// The store's instances that can be reset for their rule's next
    /// evaluation (at most one per module).
    parked: Vec<Parked>,
    /// Evaluations that reused a parked instance.
    reused: u64,
    /// Evaluations that instantiated their rule.
    instantiated: u64,
}

impl Drop for Evaluator<'_> {
    fn drop(&mut self) {
        // Counted here, once per evaluator, rather than on the engine's
        // shared counters at every evaluation.
        let inner = &self.engine.inner;
        inner.instantiations.fetch_add(self.instantiated, Ordering::Relaxed);
        inner.reuses.fetch_add(self.reused, Ordering::Relaxed);
    }
}

/// How an engine's evaluations in the sandbox got their instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstanceStats {
    /// Evaluations that instantiated their rule.
    pub instantiations: u64,
    /// Evaluations that reused an earlier instance of their rule, reset.
    pub reuses: u64,
}

/// An instance bound for calls, kept for its rule's next evaluation.
struct Parked {
    /// Its module; holding it keeps the module's identity from passing to
    /// another one while the instance is kept.
    module: Module,
    instance: Instance,
    evaluate: TypedFunc<(), i32>,
    memory: Memory,
    /// The exports of its mutable globals, in the reset plan's order:
    /// looked up at its first reuse, so an instance used once (a check's
    /// candidates are different rules) costs nothing more.
    globals: Option<Vec<Global>>,
}

impl Parked {
    /// Resets the instance to its fresh state (`reset.rs`).
    fn reset(&mut self, store: &mut Store<HostState>, linked: &Linked) -> wasmtime::Result<()> {
        let plan = linked
            .reset
            .as_ref()
            .ok_or_else(|| wasmtime::Error::msg("internal: parked but not resettable"))?;
        if self.globals.is_none() {
            let globals = plan
                .exports
                .iter()
                .map(|export| {
                    self.instance
                        .get_module_export(&mut *store, export)
                        .and_then(|e| e.into_global())
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    wasmtime::Error::msg("internal: a mutable global's export is missing")
                })?;
            self.globals = Some(globals);
        }
        plan.restore(&mut *store, self.memory, self.globals.as_deref().unwrap_or_default())
    }
}

impl std::fmt::Debug for Evaluator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("instances", &self.instances)
            .field("parked", &self.parked.len())
            .field("reused", &self.reused)
            .finish_non_exhaustive()
    }
}

impl Evaluator<'_> {
    /// Instances one evaluator's store holds before it is dropped and a new
    /// one made. Each instance keeps its pooled slot until its store drops,
    /// so this bounds the slots an evaluator pins; a server runs a few
    /// evaluators at once (one per check or candidate shard on each core)
    /// against a pool of [`Limits::max_instances`] slots.
    pub const INSTANCES_PER_STORE: u32 = 4;

    /// How many evaluations so far reused an instance, reset, rather than
    /// instantiating their rule afresh.
    pub fn instances_reused(&self) -> u64 {
        self.reused
    }

    /// Evaluates `rule` on a prepared manifest from a fresh instance's
    /// state, and renders its finding when it matched:
    /// [`Evaluator::run_sandboxed`] then [`Sandboxed::render`].
    pub fn evaluate(&mut self, rule: &Rule, prepared: &Prepared) -> Evaluation {
        self.run_sandboxed(rule, prepared).render(rule, prepared)
    }

    /// [`Evaluator::evaluate`], recording what the rule read and concluded
    /// in its memo for later manifests (unless the memo is off or full).
    pub fn evaluate_recorded(&mut self, rule: &Rule, prepared: &Prepared) -> Evaluation {
        let engine = self.engine;
        let budget = &engine.inner.memo;
        if !budget.enabled() {
            return self.evaluate(rule, prepared);
        }
        let (sandboxed, reads) = self.sandbox(rule, prepared, true);
        // The matched output is kept for the memo, which renders from it
        // again when a later manifest's evidence differs.
        let (evaluation, raw) = match sandboxed {
            Sandboxed::Done(evaluation) => (evaluation, None),
            Sandboxed::Matched(raw) => {
                (rendered(&rule.info.meta, &raw, &prepared.fields), Some(*raw))
            }
        };
        if let (Some(reads), Some(outcome)) = (reads, Outcome::of(&evaluation, raw)) {
            rule.memo.record(reads, outcome, &prepared.fields, budget);
        }
        evaluation
    }

    /// The sandboxed part of an evaluation: the rule's code in an instance
    /// in its fresh state, its host calls, and what it reported, before the
    /// host turns that into a finding (which needs no instance and no
    /// limits).
    pub fn run_sandboxed(&mut self, rule: &Rule, prepared: &Prepared) -> Sandboxed {
        self.sandbox(rule, prepared, false).0
    }

    /// [`Evaluator::run_sandboxed`], and when `record`, the paths the rule
    /// read with what it saw (`None` if it failed or read too many).
    fn sandbox(
        &mut self,
        rule: &Rule,
        prepared: &Prepared,
        record: bool,
    ) -> (Sandboxed, Option<Vec<Read>>) {
        let engine = self.engine;
        let limits = &engine.inner.limits;
        let linked = match engine.linked(rule) {
            Ok(linked) => linked,
            Err(e) => {
                return (Sandboxed::Done(Evaluation::Failed(format!("could not load: {e}"))), None);
            }
        };
        let (store, result) = self.run(linked, prepared, record);
        match result {
            Ok(sandboxed) => {
                let reads =
                    store.data_mut().session.recorder_mut().take().and_then(ReadLog::into_reads);
                let size = store.data().memory.map_or(0, |m| m.data_size(&*store));
                if size > KEEP_RESIDENT_BYTES || self.instances >= Self::INSTANCES_PER_STORE {
                    self.retire();
                } else if linked.reset.as_ref().is_some_and(|plan| plan.memory_bytes != size) {
                    // Memory cannot shrink: an instance that grew is not
                    // what a fresh one would be.
                    self.parked.retain(|p| !Module::same(&p.module, linked.pre.module()));
                }
                (sandboxed, reads)
            }
            Err(e) => {
                let mut text = describe_failure(&e, limits);
                // A trap right after memory (or a table) ran out is the
                // allocator giving up (Rust aborts): name the cause, not
                // just the symptom.
                let limiter = &store.data().limiter;
                if limiter.refused_table {
                    text = format!(
                        "table growth refused (limit {MAX_TABLE_ELEMENTS} elements): {text}"
                    );
                }
                if limiter.refused_memory {
                    text = format!(
                        "out of memory (limit {} MiB): {text}",
                        limits.max_memory_bytes >> 20
                    );
                }
                self.retire();
                (Sandboxed::Done(Evaluation::Failed(text)), None)
            }
        }
    }

    /// Readies this evaluator's store (made if needed) for one evaluation:
    /// the evaluation's session, fuel and deadline, the limiter's flags.
    fn ready<'s>(
        engine: &Engine,
        store: &'s mut Option<Store<HostState>>,
        prepared: &Prepared,
        record: bool,
    ) -> wasmtime::Result<&'s mut Store<HostState>> {
        let limits = &engine.inner.limits;
        let store = store.get_or_insert_with(|| engine.new_store());
        let state = store.data_mut();
        state.session = Session::recording(
            prepared.fields.clone(),
            limits.max_output_bytes,
            record.then(ReadLog::default),
        );
        state.memory = None;
        state.limiter.refused_memory = false;
        state.limiter.refused_table = false;
        store.set_fuel(limits.fuel)?;
        store.set_epoch_deadline(limits.deadline_ticks());
        Ok(store)
    }

    /// Calls `linked` in this evaluator's store: in its parked instance,
    /// reset, if it has one, else in a fresh instance (parked afterwards
    /// when its module is resettable). Gives the store back for what the
    /// caller reads from it.
    fn run(
        &mut self,
        linked: &Linked,
        prepared: &Prepared,
        record: bool,
    ) -> (&mut Store<HostState>, wasmtime::Result<Sandboxed>) {
        let engine = self.engine;
        let reuse = engine.inner.limits.reuse_instances;
        if let Some(i) =
            self.parked.iter().position(|p| Module::same(&p.module, linked.pre.module()))
        {
            self.reused += 1;
            let parked = &mut self.parked[i];
            let result = Self::ready(engine, &mut self.store, prepared, record).and_then(|store| {
                parked.reset(store, linked).and_then(|()| engine.call(store, parked))
            });
            return (self.store.get_or_insert_with(|| engine.new_store()), result);
        }
        let instance = loop {
            let instantiated = Self::ready(engine, &mut self.store, prepared, record)
                .and_then(|store| linked.pre.instantiate(store));
            match instantiated {
                Ok(instance) => {
                    self.instances += 1;
                    self.instantiated += 1;
                    break instance;
                }
                // The slots this store holds may be what the pool lacks.
                Err(_) if self.instances > 0 => self.retire(),
                Err(e) => return (self.store.get_or_insert_with(|| engine.new_store()), Err(e)),
            }
        };
        let store = self.store.get_or_insert_with(|| engine.new_store());
        let result = engine.bind(linked, store, instance).and_then(|bound| {
            let result = engine.call(store, &bound);
            if reuse && linked.reset.is_some() {
                self.parked.push(bound);
            }
            result
        });
        (store, result)
    }

    /// Drops the store, so its instances' slots go back to the pool.
    fn retire(&mut self) {
        self.parked.clear();
        self.store = None;
        self.instances = 0;
    }
}

/// What [`Evaluator::run_sandboxed`] gives.
#[derive(Debug)]
pub enum Sandboxed {
    /// Clear, undetermined or failed: nothing left to do.
    Done(Evaluation),
    /// Matched: what the rule reported, still to be rendered into a finding.
    Matched(Box<RawOutput>),
}

impl Sandboxed {
    /// The evaluation: a matched rule's finding rendered from its metadata
    /// and the manifest's values (placeholders, remedies, evidence).
    pub fn render(self, rule: &Rule, prepared: &Prepared) -> Evaluation {
        match self {
            Sandboxed::Done(evaluation) => evaluation,
            Sandboxed::Matched(raw) => rendered(&rule.info.meta, &raw, &prepared.fields),
        }
    }
}

/// How many times [`Engine::run_tests`] runs again a case the wall-clock
/// deadline stopped.
pub const DEADLINE_RETRIES: usize = 2;

/// How a failure by the wall-clock deadline begins.
const PAST_DEADLINE: &str = "exceeded the wall-clock deadline";

/// Whether `evaluation` failed by the wall-clock deadline.
fn past_deadline(evaluation: &Evaluation) -> bool {
    matches!(evaluation, Evaluation::Failed(m) if m.starts_with(PAST_DEADLINE))
}

/// A failed evaluation (trap or host error), for people.
fn describe_failure(e: &wasmtime::Error, limits: &Limits) -> String {
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return match trap {
            Trap::OutOfFuel => format!("exceeded its CPU budget ({} fuel units)", limits.fuel),
            Trap::Interrupt => format!("{PAST_DEADLINE} of {:?}", limits.deadline),
            Trap::StackOverflow => {
                format!("stack overflow (limit {} KiB)", limits.max_wasm_stack / 1024)
            }
            Trap::UnreachableCodeReached => {
                "trap: unreachable (a panic or abort in the rule)".into()
            }
            Trap::MemoryOutOfBounds => "trap: out-of-bounds memory access".into(),
            Trap::AllocationTooLarge => {
                format!("out of memory (limit {} MiB)", limits.max_memory_bytes >> 20)
            }
            other => format!("trap: {other}"),
        };
    }
    if let Some(v) = e.downcast_ref::<host::AbiViolation>() {
        return format!("ABI violation: {v}");
    }
    let text = format!("{e:#}");
    if text.contains("concurrent") || text.contains("limit") {
        // Pool exhaustion or a memory limit at instantiation.
        return format!("could not instantiate: {text}");
    }
    format!("failed: {text}")
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until `stop` is set.
fn spawn_epoch_ticker(wasm: wasmtime::Engine, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    thread::Builder::new().name("pitfall-epoch".into()).spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            thread::sleep(EPOCH_TICK);
            wasm.increment_epoch();
        }
    })?;
    Ok(())
}

/// A running check, counted by [`Engine::check_started`].
#[derive(Debug)]
pub struct CheckGuard<'a>(&'a AtomicUsize);

impl Drop for CheckGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

thread_local! {
    /// The memo hits and misses of the last check counted on this thread.
    static LAST_REPLAYS: std::cell::Cell<Option<(u64, u64)>> = const { std::cell::Cell::new(None) };
}

/// The memo hits and misses of the last check that ran on this thread
/// (`RuleSet::check_on_this_thread` runs a check on the caller's thread),
/// taken: a server's per-check hit rate, which [`Engine::memo_stats`]'
/// totals over every thread cannot give. `None` when no check counted
/// since the last take, or the memo is off.
pub fn take_last_replays() -> Option<(u64, u64)> {
    LAST_REPLAYS.with(std::cell::Cell::take)
}
