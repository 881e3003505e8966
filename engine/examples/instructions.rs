//! Evaluations to count instructions of under callgrind, which gives
//! repeatable figures where wall time on a shared 2-core machine does not
//! (BENCHMARKS.md, "How to run").
//!
//! Each module is evaluated `N` times through `Engine::evaluate` on the
//! prepared G5g manifest, inside a function of its own (`eval_floor`,
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

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use pitfall_engine::{Engine, Limits, Rule};
use pitfall_sdk::model::{Prepared, parse_manifest};

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
        black_box(engine.evaluate(rule, black_box(prepared)));
    }
}

type Eval = fn(&Engine, &Rule, &Prepared);

/// One module per rule index, each with its own `eval` (a distinct symbol
/// that callgrind counts apart; the name in its body keeps the compiler
/// from merging the identical functions).
macro_rules! evals {
    ($($m:ident)*) => {
        $(mod $m {
            use super::*;
            #[inline(never)]
            pub(crate) fn eval(engine: &Engine, rule: &Rule, prepared: &Prepared) {
                black_box(stringify!($m));
                for _ in 0..N {
                    black_box(engine.evaluate(rule, black_box(prepared)));
                }
            }
        })*
        const TABLE: &[Eval] = &[$($m::eval),*];
    };
}

evals!(
    r00 r01 r02 r03 r04 r05 r06 r07 r08 r09 r10 r11 r12 r13 r14 r15 r16 r17 r18 r19
    r20 r21 r22 r23 r24 r25 r26 r27 r28 r29 r30 r31 r32 r33 r34 r35 r36 r37 r38 r39
    r40 r41 r42 r43 r44 r45 r46 r47
);

fn main() {
    // Valgrind cannot reserve the address space of 256 pooled memories (4 GiB
    // each with guards); a pool of 2 does the same work per evaluation. And
    // compiling under valgrind is many times slower than the load-time bound
    // allows. Neither changes what one evaluation does.
    let limits = Limits { max_instances: 2, compile_timeout: Duration::from_secs(3600), ..Limits::default() };
    let engine = Engine::new(limits).expect("engine starts");
    let floor = engine.load(&wat::parse_str(FLOOR).expect("floor parses")).expect("floor loads");
    let rules: Vec<Rule> = pitfall_bundled_rules::MODULES
        .iter()
        .map(|m| engine.load(m.wasm).unwrap_or_else(|e| panic!("{}: {e}", m.crate_name)))
        .collect();
    assert!(rules.len() <= TABLE.len(), "more rules than eval functions");
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let prepared = Prepared::new(parse_manifest(&bytes).expect("fixture parses"));

    println!("N={N}");
    black_box(engine.evaluate(&floor, &prepared));
    eval_floor(&engine, &floor, &prepared);
    for (i, rule) in rules.iter().enumerate() {
        black_box(engine.evaluate(rule, &prepared));
        TABLE[i](&engine, rule, &prepared);
        println!("r{i:02}::eval {}", rule.id());
    }
}
