//! Compiler flags for instruction sets the CPU lacks break custom builds on
//! Graviton2 (KNOWLEDGE.md A10). Graviton2 is Arm Neoverse N1, Armv8.2-A
//! with fp16, rcpc, dotprod and crypto, and none of SVE, BF16, I8MM, RNG,
//! SHA3/SM4, FCMA/JSCVT, FHM, FlagM, SB or pointer authentication (AWS
//! Graviton getting-started guide, README.md and runtime-feature-detection.md
//! HWCAP table, commit 83d74f4; archspec 0.2.7 microarchitectures.json
//! feature lists of neoverse_n1 and its successors).
//!
//! Flagged: `-march=` Armv8.3-A or later, Armv9, the extensions above,
//! `-mcpu=` (or Rust `target-cpu=`) of a newer core, Rust
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

/// Extensions Neoverse N1 lacks (prefix match: `sve2-aes` is SVE, `sme2` is
/// SME). Each is a feature Graviton2 does not report in AWS's HWCAP table
/// (sve, sve2, bf16, i8mm, svef32mm/svef64mm, mte, fcma, jscvt, rng, sha3,
/// sm4, asimdfhm = fp16fml, flagm, sb, paca/pacg = pauth); the spellings are
/// the compilers' `+ext` names (archspec gives `+sve`, `+sve2`, `+bf16`,
/// `+i8mm`, `+rng`, `+sme2`; the others are not verified, and a name no
/// compiler uses matches nothing).
const MISSING_EXTENSIONS: &[&str] = &[
    "sve", "sme", "bf16", "i8mm", "f32mm", "f64mm", "memtag", "fcma", "jscvt", "rng", "sha3",
    "sm4", "fp16fml", "flagm", "sb", "pauth",
];

/// Cores newer than Neoverse N1 (GCC/Clang/Rust names): the Graviton3/4/5
/// targets of AWS's c-c++.md (`neoverse-v1`, `neoverse-v2`, `neoverse-v3`,
/// `neoverse-512tvb`) and the archspec 0.2.7 targets built on a later
/// architecture or with SVE (`neoverse-n2` Armv9.0, `neoverse-v3ae` Armv9.2,
/// `zeus` = GCC 10.2's neoverse-v1, `a64fx` with SVE, `apple-m1` .. `m4`
/// Armv8.4 and later). Prefix match: `neoverse-v3` covers `neoverse-v3ae`.
const NEWER_CORES: &[&str] = &[
    "neoverse-v1",
    "neoverse-v2",
    "neoverse-v3",
    "neoverse-n2",
    "neoverse-512tvb",
    "zeus",
    "a64fx",
    "apple-m",
];

/// x86-only `-m` options (prefix match) that aarch64 GCC rejects as
/// "unrecognized command-line option", as real aarch64 build logs show
/// (`-mavx`, `-mavx2`, `-mfma`, `-mf16c`, `-msse3`: yvonwin/qwen2.cpp issue
/// 5; `-msse4.1`, `-mpclmul`: Mikewando/vsfpng issue 3; `-mavx2`:
/// saleyn/erlexec issue 175).
const X86_OPTIONS: &[&str] = &["-mavx", "-msse", "-mfma", "-mf16c", "-mpclmul"];

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
                || c.contains("neoverse n1"),
        );
    }
    let instance = m.text("host.cloud.instance_type")?.to_ascii_lowercase();
    let family = instance.split('.').next().unwrap_or("");
    // AWS's list of Graviton2 instances: M6g/M6gd, C6g/C6gd/C6gn, R6g/R6gd,
    // T4g, X2gd, G5g, I4g/Im4gn/Is4gen (aws-graviton-getting-started README).
    let graviton2 = ["g5g", "t4g", "x2gd", "i4g", "im4gn", "is4gen"].contains(&family)
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
                return report(m, var, &flag, &why, "aarch64 CPU");
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
