//! Compiler flags for instruction sets the CPU lacks break custom builds on
//! Graviton2 (KNOWLEDGE.md A10). Graviton2 is Arm Neoverse N1: Armv8.2-A
//! (with dot product, fp16, RCpc), no SVE, no BF16/I8MM, none of the
//! Armv8.3-A complex-number/JavaScript-conversion instructions.
//!
//! Flagged: `-march=` Armv8.3-A or later, Armv9, SVE/SME/BF16/I8MM
//! extensions, `-mcpu=` (or Rust `target-cpu=`) of a newer core, Rust
//! `target-feature=+sve...`, and x86 options on any aarch64 CPU. Not
//! flagged: `-march=native`/`-mcpu=native` (the build machine's own CPU)
//! and `-mtune=` (scheduling only, no new instructions).
#![no_std]

use pitfall_sdk::prelude::*;

/// The variables through which build flags reach compilers.
const FLAG_VARS: &[&str] = &[
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "NVCC_APPEND_FLAGS",
    "NVCC_PREPEND_FLAGS",
    "CMAKE_C_FLAGS",
    "CMAKE_CXX_FLAGS",
    "CMAKE_CUDA_FLAGS",
    "CMAKE_ARGS",
    "RUSTFLAGS",
];

/// Extensions Neoverse N1 lacks (prefix match: `sve2-aes` is SVE).
const MISSING_EXTENSIONS: &[&str] =
    &["sve", "sme", "bf16", "i8mm", "f32mm", "f64mm", "memtag", "ls64", "mops", "fcma", "jscvt"];

/// Cores newer than Neoverse N1 (GCC/Clang/Rust names).
const NEWER_CORES: &[&str] = &[
    "neoverse-v1",
    "neoverse-v2",
    "neoverse-v3",
    "neoverse-n2",
    "neoverse-n3",
    "neoverse-512tvb",
    "a64fx",
    "grace",
    "cortex-x2",
    "cortex-x3",
    "cortex-x4",
    "cortex-x925",
    "cortex-a510",
    "cortex-a520",
    "cortex-a710",
    "cortex-a715",
    "cortex-a720",
    "cortex-a725",
    "apple-",
];

/// `-march=` names of x86 targets.
const X86_ARCHES: &[&str] = &[
    "x86-64",
    "i686",
    "haswell",
    "broadwell",
    "skylake",
    "cascadelake",
    "icelake",
    "sapphirerapids",
    "znver",
    "core-avx",
];

/// x86-only `-m` options (prefix match).
const X86_OPTIONS: &[&str] = &["-mavx", "-msse", "-mfma", "-mf16c", "-mbmi", "-mpopcnt", "-mlzcnt"];

/// Why a flag is a problem.
enum Problem {
    /// Instructions Neoverse N1 lacks: a problem on Graviton2 only.
    BeyondN1(String),
    /// An x86 option: a problem on every aarch64 CPU.
    X86(String),
}

fn missing_extension(ext: &str) -> Option<&'static str> {
    MISSING_EXTENSIONS.iter().copied().find(|m| ext.starts_with(m))
}

/// `armv8.N-a` with N >= 3, or `armv9*`.
fn beyond_armv82(base: &str) -> bool {
    if base.starts_with("armv9") {
        return true;
    }
    let Some(rest) = base.strip_prefix("armv8.") else {
        return false;
    };
    let digits: &str = rest.split(|c: char| !c.is_ascii_digit()).next().unwrap_or("");
    digits.parse::<u32>().is_ok_and(|n| n >= 3)
}

fn check_extensions<'a>(mut exts: impl Iterator<Item = &'a str>) -> Option<Problem> {
    exts.find_map(|e| missing_extension(e.trim_start_matches('+'))).map(|ext| {
        let mut why = String::from("enables ");
        why.push_str(ext);
        why.push_str(" instructions, which Neoverse N1 lacks");
        Problem::BeyondN1(why)
    })
}

fn check_march(value: &str) -> Option<Problem> {
    let mut parts = value.split('+');
    let base = parts.next().unwrap_or("");
    if X86_ARCHES.iter().any(|x| base.starts_with(x)) {
        return Some(Problem::X86(String::from(
            "names an x86 target, which aarch64 compilers reject",
        )));
    }
    if beyond_armv82(base) {
        let mut why = String::from("targets ");
        why.push_str(base);
        why.push_str(", beyond the Armv8.2-A of Neoverse N1");
        return Some(Problem::BeyondN1(why));
    }
    check_extensions(parts)
}

fn check_cpu(value: &str) -> Option<Problem> {
    let mut parts = value.split('+');
    let base = parts.next().unwrap_or("");
    if NEWER_CORES.iter().any(|c| base.starts_with(c)) {
        let mut why = String::from("targets ");
        why.push_str(base);
        why.push_str(", a newer core than Neoverse N1");
        return Some(Problem::BeyondN1(why));
    }
    check_extensions(parts)
}

/// The value after `key` in `token`, up to a separator in `stops`.
fn value_after<'t>(token: &'t str, key: &str, stops: &[char]) -> Option<&'t str> {
    let at = token.find(key)? + key.len();
    let rest = &token[at..];
    Some(rest.split(stops).next().unwrap_or(rest))
}

/// A flag prefix, the characters that end its value, and the check of the value.
type Check = (&'static str, &'static [char], fn(&str) -> Option<Problem>);

/// The first problematic flag in one variable's value: (flag as written, problem).
fn scan(value: &str) -> Option<(String, Problem)> {
    let lower = value.to_ascii_lowercase();
    for token in lower.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ';')) {
        let checks: [Check; 4] = [
            ("-march=", &[','], check_march),
            ("-mcpu=", &[','], check_cpu),
            ("target-cpu=", &[','], check_cpu),
            ("target-feature=", &[], |v| {
                check_extensions(v.split(',').filter(|f| f.starts_with('+')))
            }),
        ];
        for (key, stops, check) in checks {
            if let Some(v) = value_after(token, key, stops)
                && let Some(problem) = check(v)
            {
                let mut flag = String::from(key);
                flag.push_str(v);
                return Some((flag, problem));
            }
        }
        if X86_OPTIONS.iter().any(|x| token.starts_with(x)) {
            return Some((
                String::from(token),
                Problem::X86(String::from("is an x86 option, which aarch64 compilers reject")),
            ));
        }
    }
    None
}

/// Whether the host is a Graviton2 / Neoverse N1: `Some(true/false)`, or `None` if unknown.
fn is_neoverse_n1(m: &Manifest) -> Option<bool> {
    if let Some(cpu) = m.cpu_model() {
        let c = cpu.to_ascii_lowercase();
        return Some(
            c.contains("graviton2")
                || c.contains("graviton 2")
                || c.contains("neoverse-n1")
                || c.contains("neoverse n1")
                || c.contains("altra"),
        );
    }
    let instance = m.text("host.cloud.instance_type")?.to_ascii_lowercase();
    let family = instance.split('.').next().unwrap_or("");
    let graviton2 = ["g5g", "t4g", "x2gd", "im4gn", "is4gen"].contains(&family)
        || ["c6g", "m6g", "r6g"].iter().any(|f| family.starts_with(f));
    // Other instance families may be Graviton3/4 or x86: only a match is conclusive.
    graviton2.then_some(true)
}

fn evaluate(m: &Manifest) -> Outcome {
    if m.arch().as_deref() != Some("aarch64") {
        return Outcome::clear();
    }
    let mut beyond_n1: Option<(&str, String, String)> = None;
    for var in FLAG_VARS {
        let Some(value) = m.env(var) else { continue };
        match scan(&value) {
            Some((flag, Problem::X86(why))) => {
                return report(m, var, &flag, &why, "this aarch64 CPU");
            }
            Some((flag, Problem::BeyondN1(why))) if beyond_n1.is_none() => {
                beyond_n1 = Some((var, flag, why))
            }
            Some(_) | None => {}
        }
    }
    let Some((var, flag, why)) = beyond_n1 else {
        return Outcome::clear();
    };
    match is_neoverse_n1(m) {
        Some(true) => {
            let cpu = m.cpu_model().unwrap_or_else(|| String::from("Graviton2 (Neoverse N1)"));
            report(m, var, &flag, &why, &cpu)
        }
        Some(false) => Outcome::clear(),
        None => Outcome::needs("host.cpu_model"),
    }
}

fn report(m: &Manifest, var: &str, flag: &str, why: &str, cpu: &str) -> Outcome {
    let mut outcome =
        Outcome::matched().evidence("host.arch").evidence(Path::new("env").key(var).as_str());
    if m.cpu_model().is_some() {
        outcome = outcome.evidence("host.cpu_model");
    } else if m.has("host.cloud.instance_type") {
        outcome = outcome.evidence("host.cloud.instance_type");
    }
    outcome.param("var", var).param("flag", flag).param("why", why).param("cpu", cpu)
}

pitfall_sdk::export_rule!(evaluate);
