//! Evaluations to count instructions of under callgrind, which gives
//! repeatable figures where wall time on a shared 2-core machine does not
//! (BENCHMARKS.md, "How to run").
//!
//! Each module is evaluated `N` times through `Engine::run_sandboxed` (the
//! per-rule evaluation of the target: instantiate, read fields, return; the
//! render of a matched finding is not included) on the prepared G5g manifest, inside a function of its own (`eval_floor`,
//! `rNN::eval` for the NN-th bundled rule, in crate-name order), after
//! one untimed warm-up evaluation each. Run it with
//!
//! ```sh
//! cargo build --release -p pitfall-engine --example instructions
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     target/release/examples/instructions
//! callgrind_annotate --inclusive=yes /tmp/cg.out | grep eval
//! ```
//!
//! and divide each function's inclusive count by `N` (printed, with the
//! rule ids in order). Run natively it does the same in a few seconds.
//!
//! `PITFALL_CACHE_DIR=DIR` keeps the compiled code in `DIR` (the engine's
//! own cache): run natively once, then under valgrind, which then skips
//! minutes of compiling.
//!
//! With a directory as its argument it evaluates the `.wasm` files there
//! (in file-name order) instead of the bundled rules, so that two builds of
//! the rules can be compared under the same engine.
//!
//! The synthetic modules (`eval_synthetic`, one `sNN::eval` each, names
//! printed) each add one cost to the floor: a table, imports, globals, a
//! data segment, host calls. Their counts minus the floor's price the parts a
//! rule module is made of.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use pitfall_contract::{Prepared, parse_manifest};
use pitfall_engine::{Engine, Limits, Rule};

/// Evaluations per module.
const N: usize = 100;

/// The floor of the benchmark (engine/benches/engine.rs): one page of
/// memory, `pitfall_evaluate` returns 0 at once.
const FLOOR: &str = r#"(module
  (memory (export "memory") 1)
  (func (export "pitfall_evaluate") (result i32) (i32.const 0))
  (@custom "pitfall.abi" "1")
  (@custom "pitfall.meta" "{\"id\":\"bench-floor-1p\",\"version\":\"1.0.0\",\"title\":\"benchmark module\",\"severity\":\"info\",\"summary\":\"A synthetic module; returns clear.\",\"message\":\"never matches\",\"remedies\":[{\"summary\":\"none\",\"actions\":[{\"kind\":\"unset_env\",\"name\":\"X\"}]}],\"references\":[{\"title\":\"engine/examples/instructions.rs\"}],\"author\":\"benchmarks\"}")
  (@custom "pitfall.tests" "[]"))"#;

#[inline(never)]
fn eval_floor(engine: &Engine, rule: &Rule, prepared: &Prepared) {
    for _ in 0..N {
        black_box(engine.run_sandboxed(rule, black_box(prepared)));
    }
}

/// Modules that each add one thing to the floor (see the module docs).
fn synthetic() -> Vec<(&'static str, String)> {
    let imports: String = pitfall_engine::abi::HOST_FUNCTIONS
        .iter()
        .map(|f| {
            let params = f.params.iter().map(|p| format!(" {p}")).collect::<String>();
            let results = f.results.iter().map(|r| format!(" {r}")).collect::<String>();
            format!(r#"(import "pitfall" "{}" (func (param{params}) (result{results})))"#, f.name)
        })
        .collect();
    let path = "accelerators.0.compute_capability";
    let with = |body: &str| FLOOR.replacen("(module", &format!("(module {body}"), 1);
    vec![
        ("floor + a 1-entry funcref table", with("(table 1 1 funcref)")),
        ("floor + the 8 host imports, unused", with(&imports)),
        (
            "floor + wasm-ld's 3 globals (stack pointer, exported __heap_base and __data_end)",
            with(
                r#"(global (mut i32) (i32.const 32768)) (global (export "__heap_base") i32 (i32.const 33792))
                   (global (export "__data_end") i32 (i32.const 33792))"#,
            ),
        ),
        ("floor + a 1 KiB data segment", with(&format!(r#"(data (i32.const 32768) "{}")"#, "x".repeat(1024)))),
        (
            "floor + 10 field_str calls",
            with(r#"(import "pitfall" "field_str" (func $s (param i32 i32 i32 i32) (result i32)))"#).replacen(
                r#"(func (export "pitfall_evaluate") (result i32) (i32.const 0))"#,
                &format!(
                    r#"(data (i32.const 0) "{path}")
                       (func (export "pitfall_evaluate") (result i32) (local $i i32)
                         (loop $again
                           (drop (call $s (i32.const 0) (i32.const {len}) (i32.const 1024) (i32.const 64)))
                           (local.set $i (i32.add (local.get $i) (i32.const 1)))
                           (br_if $again (i32.lt_u (local.get $i) (i32.const 10))))
                         (i32.const 0))"#,
                    len = path.len()
                ),
                1,
            ),
        ),
    ]
}

type Eval = fn(&Engine, &Rule, &Prepared);

/// One module per index, each with its own `eval` (a distinct symbol that
/// callgrind counts apart; the name in its body keeps the compiler from
/// merging the identical functions), gathered in the table `$table`.
macro_rules! evals {
    ($table:ident: $($m:ident)*) => {
        $(mod $m {
            use super::*;
            #[inline(never)]
            pub(crate) fn eval(engine: &Engine, rule: &Rule, prepared: &Prepared) {
                black_box(stringify!($m));
                for _ in 0..N {
                    black_box(engine.run_sandboxed(rule, black_box(prepared)));
                }
            }
        })*
        const $table: &[Eval] = &[$($m::eval),*];
    };
}

evals!(SYNTHETIC: s00 s01 s02 s03 s04 s05 s06 s07);

evals!(TABLE:
    r00 r01 r02 r03 r04 r05 r06 r07 r08 r09 r10 r11 r12 r13 r14 r15 r16 r17 r18 r19
    r20 r21 r22 r23 r24 r25 r26 r27 r28 r29 r30 r31 r32 r33 r34 r35 r36 r37 r38 r39
    r40 r41 r42 r43 r44 r45 r46 r47
);

fn main() {
    // Valgrind cannot reserve the address space of 256 pooled memories (4 GiB
    // each with guards); a pool of 2 does the same work per evaluation. And
    // compiling under valgrind is many times slower than the load-time bound
    // allows. Neither changes what one evaluation does.
    let limits = Limits {
        max_instances: 2,
        compile_timeout: Duration::from_secs(3600),
        ..Limits::default()
    };
    // Compiling under valgrind takes minutes; with a cache directory, a
    // native run compiles once and the run under valgrind loads the code
    // this engine compiled itself (what the cache is for).
    let engine = match std::env::var_os("PITFALL_CACHE_DIR") {
        Some(dir) => Engine::with_cache_dir(limits, dir.into()),
        None => Engine::new(limits),
    }
    .expect("engine starts");
    let floor = engine.load(&wat::parse_str(FLOOR).expect("floor parses")).expect("floor loads");
    let modules: Vec<(String, Vec<u8>)> = match std::env::args_os().nth(1) {
        Some(dir) => {
            let mut paths: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&dir).display()))
                .map(|e| e.expect("a directory entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
                .collect();
            paths.sort();
            paths
                .into_iter()
                .map(|p| {
                    let bytes =
                        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                    (p.display().to_string(), bytes)
                })
                .collect()
        }
        None => pitfall_bundled_rules::MODULES
            .iter()
            .map(|m| (m.crate_name.to_owned(), m.wasm.to_vec()))
            .collect(),
    };
    let rules: Vec<Rule> = modules
        .iter()
        .map(|(name, wasm)| engine.load(wasm).unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect();
    let synthetic: Vec<(&str, Rule)> = synthetic()
        .into_iter()
        .map(|(name, text)| {
            let wasm = wat::parse_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, engine.load(&wasm).unwrap_or_else(|e| panic!("{name}: {e}")))
        })
        .collect();
    assert!(synthetic.len() <= SYNTHETIC.len(), "more synthetic modules than eval functions");
    assert!(rules.len() <= TABLE.len(), "more rules than eval functions");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let prepared = Prepared::new(parse_manifest(&bytes).expect("fixture parses"));

    println!("N={N}");
    black_box(engine.run_sandboxed(&floor, &prepared));
    eval_floor(&engine, &floor, &prepared);
    for (i, (name, module)) in synthetic.iter().enumerate() {
        black_box(engine.run_sandboxed(module, &prepared));
        SYNTHETIC[i](&engine, module, &prepared);
        println!("s{i:02}::eval {name}");
    }
    for (i, rule) in rules.iter().enumerate() {
        black_box(engine.run_sandboxed(rule, &prepared));
        TABLE[i](&engine, rule, &prepared);
        println!("r{i:02}::eval {}", rule.id());
    }
}
