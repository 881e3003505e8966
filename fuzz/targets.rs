//! The bodies of the fuzz targets, one function each. The libFuzzer
//! binaries of `fuzz_targets/` call them, and the engine's test binary
//! includes this file (`#[path]`) to replay the committed corpus on stable
//! (`fuzz_regressions_replay`), so a finding stays fixed. Depends only on
//! `pitfall-sdk` and `serde_json`. A panic is a finding.

#![allow(dead_code, unreachable_pub)] // each includer uses what it needs

use std::sync::{Arc, OnceLock};

use pitfall_contract::cases::{Evaluation, failure_report, run_cases};
use pitfall_contract::fields::FieldMap;
use pitfall_contract::lint::decode_meta_section;
use pitfall_contract::meta::{RuleMeta, decode_abi_section, decode_tests_section};
use pitfall_contract::report::{RawOutcome, render};
use pitfall_contract::selector::Selector;
use pitfall_contract::session::{RawOutput, Session};
use pitfall_contract::{Prepared, parse_manifest};
use pitfall_engine::guest::{guest_range, guest_range_mut};

/// `manifest`: parse, normalise, enrich and flatten a client's bytes; what
/// the host hands rules must serialise and parse again.
pub fn manifest(data: &[u8]) {
    let Ok(parsed) = parse_manifest(data) else { return };
    let prepared = Prepared::new(parsed);
    let json = serde_json::to_vec(&*prepared.manifest).expect("a normalised manifest serialises");
    let again = parse_manifest(&json).unwrap_or_else(|e| {
        panic!("a normalised manifest no longer parses: {e}: {}", String::from_utf8_lossy(&json))
    });
    let twice = Prepared::new(again);
    // The field map answers lookups of any path, present or not.
    for path in [
        "host.arch",
        "accelerators.0.compute_capability",
        "packages.vllm.version",
        "workload.head_dims.1",
        "",
    ] {
        let _ = (prepared.fields.get(path), twice.fields.get(path));
    }
    for selector in [
        "package:vllm<0.27.2rc0",
        "capability:<8.0",
        "accelerator:nvidia",
        "arch:aarch64",
        "container",
    ] {
        let selector = Selector::parse(selector).expect("a fixed selector parses");
        let _ = selector.holds(&prepared.manifest);
    }
}

/// The manifest every `abi_output` run reads.
const ABI_MANIFEST: &str = r#"{"manifest_version":1,
  "host":{"arch":"arm64","cloud":{"instance_type":"g5g.4xlarge"}},
  "accelerators":[{"vendor":"nvidia","model":"T4G","count":1}],
  "packages":[{"name":"vllm","version":"0.27.1"},{"name":"torch","version":"2.12.0"}],
  "env":{"A":"b"},"container":{"image":"vllm/vllm-openai:v0.27.1"},
  "workload":{"dtype":"bfloat16","head_dims":[256,512],"max_model_len":8192}}"#;

/// The metadata every `abi_output` finding is rendered with: placeholders
/// in the message, remedy summaries and actions of several kinds.
const ABI_META: &str = r#"{"id":"fuzz-abi-output","version":"1.0.0","title":"fuzzing the ABI output",
  "severity":"warning","summary":"A rule whose output is whatever the fuzzer wrote.",
  "message":"{a} and {b}","author":"fuzz","references":[{"title":"fuzz"}],
  "remedies":[
    {"summary":"set {a}","actions":[{"kind":"set_env","name":"{a}","value":"{b}"}]},
    {"summary":"workload","actions":[{"kind":"set_workload","field":"max_model_len","value":"{a}"}]},
    {"summary":"flag","actions":[{"kind":"add_flag","tool":"vllm","flag":"--dtype","value":"{b}"}]}]}"#;

/// Output budget in `abi_output`: small, so the fuzzer reaches it.
const ABI_OUTPUT_LIMIT: usize = 4096;

/// Bytes per host call in an `abi_output` input: an opcode and four i32.
const CALL_BYTES: usize = 17;

/// `abi_output`: decoding what a rule reports at the ABI boundary. The
/// input is a guest memory (a u16 length, then the bytes) and a sequence
/// of host calls with raw i32 arguments, run against a [`Session`] as the
/// engine's host functions do (bounds with [`guest_range`], text checks,
/// the output budget); a failing call ends the "evaluation" as a trap
/// would. Then the outcome code, and a matched outcome rendered.
pub fn abi_output(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<2>() else { return };
    let len = usize::from(u16::from_le_bytes(*len)) % 8192;
    let (mem, calls) = rest.split_at(len.min(rest.len()));
    let mut memory = vec![0u8; len];
    memory[..mem.len()].copy_from_slice(mem);

    // Parsed once per process: the fixed inputs are not what is fuzzed,
    // and parsing them each time cost 90% of a run.
    static FIXED: OnceLock<(Prepared, RuleMeta)> = OnceLock::new();
    let (prepared, meta) = FIXED.get_or_init(|| {
        let prepared = Prepared::new(
            parse_manifest(ABI_MANIFEST.as_bytes()).expect("the fixed manifest parses"),
        );
        (prepared, serde_json::from_str(ABI_META).expect("the fixed metadata parses"))
    });
    let mut session = Session::new(Arc::clone(&prepared.fields), ABI_OUTPUT_LIMIT);
    let mut code = 1;
    for call in calls.chunks_exact(CALL_BYTES) {
        let arg = |i: usize| {
            i32::from_le_bytes([call[1 + 4 * i], call[2 + 4 * i], call[3 + 4 * i], call[4 + 4 * i]])
        };
        let (a, b, c, d) = (arg(0), arg(1), arg(2), arg(3));
        let ok = match call[0] % 9 {
            0 => guest_range(&memory, a, b).map(|p| session.field_kind(p)).is_some(),
            1 => guest_range(&memory, a, b).map(|p| session.field_len(p)).is_some(),
            2 => guest_range(&memory, a, b).map(|p| session.field_num(p)).is_some(),
            3 => field_str(&session, &mut memory, a, b, c, d),
            4 => guest_range(&memory, a, b).is_some_and(|p| session.evidence(p).is_ok()),
            5 => guest_range(&memory, a, b).is_some_and(|p| session.missing(p).is_ok()),
            6 => match (guest_range(&memory, a, b), guest_range(&memory, c, d)) {
                (Some(k), Some(v)) => session.param(k, v).is_ok(),
                _ => false,
            },
            7 => session.remedy(a as u32).is_ok(),
            _ => {
                code = a;
                break;
            }
        };
        if !ok {
            return; // a trap: the rule's error, nothing to decode
        }
    }
    let raw = session.take_output();
    assert!(raw.bytes <= ABI_OUTPUT_LIMIT, "the output budget let {} bytes through", raw.bytes);
    if matches!(RawOutcome::from_code(code), Some(RawOutcome::Matched)) {
        render_and_serialise(meta, &raw, &prepared.fields);
    }
}

/// `field_str` as the host runs it: the text is copied only when it fits.
fn field_str(session: &Session, memory: &mut [u8], ptr: i32, len: i32, buf: i32, cap: i32) -> bool {
    let Some(path) = guest_range(memory, ptr, len) else { return false };
    let Ok(text) = session.field_str(path) else { return true };
    let text = text.as_bytes().to_vec();
    if text.len() > cap as u32 as usize {
        return true;
    }
    match guest_range_mut(memory, buf, text.len()) {
        Some(dest) => {
            dest.copy_from_slice(&text);
            true
        }
        None => false,
    }
}

fn render_and_serialise(meta: &RuleMeta, raw: &RawOutput, fields: &FieldMap) {
    if let Ok(finding) = render(meta, raw, fields) {
        serde_json::to_string(&finding).expect("a rendered finding serialises");
    }
}

/// `metadata`: the three custom sections of a rule (`pitfall.abi`,
/// `pitfall.meta`, `pitfall.tests`, separated by a 0xFF byte, which UTF-8
/// text never holds) decoded as the engine does at load; when they are
/// accepted, the selectors parse and the case runner runs every case
/// (fixed cases apply their remedies' actions) against a stand-in rule.
pub fn metadata(data: &[u8]) {
    let mut parts = data.splitn(3, |b| *b == 0xFF);
    let (abi, meta, tests) = (parts.next().unwrap_or_default(), parts.next(), parts.next());
    let _ = decode_abi_section(abi, &[1]);
    let (Some(meta), Some(tests)) = (meta, tests) else { return };
    let (Ok(meta), Ok(tests)) = (decode_meta_section(meta), decode_tests_section(tests)) else {
        return;
    };
    let selectors: Vec<Selector> = meta
        .applies_to
        .iter()
        .map(|s| {
            Selector::parse(s)
                .unwrap_or_else(|e| panic!("the lint passed a selector that does not parse: {e}"))
        })
        .collect();
    for s in &selectors {
        let _ = (s.admits_nothing(), s.to_string());
    }
    // A stand-in rule: matches wherever the first byte is odd (rendering the
    // metadata's message and remedies with no parameters), else clear.
    let matches = abi.first().is_some_and(|b| b % 2 == 1);
    let results = run_cases(&selectors, &tests, &mut |prepared| {
        if !matches {
            return Evaluation::Clear;
        }
        match render(&meta, &RawOutput::default(), &prepared.fields) {
            Ok(finding) => Evaluation::Matched(Box::new(finding.into())),
            Err(e) => Evaluation::Failed(e.to_string()),
        }
    });
    let _ = failure_report(&meta.id, &results);
}
