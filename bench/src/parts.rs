//! The work a `/v1/check` request does around the check itself, next to
//! the echo endpoint's whole work, on the bodies the HTTP phases send:
//! the echo parses a body into a JSON value and writes it back; a check
//! digests its text for the result cache, reads it into the manifest's types,
//! and prepares it for the rules (normalised, enriched, flattened). Timed
//! in this process on one thread's CPU clock, without HTTP, so the ratio
//! between the HTTP phases can be taken apart (BENCHMARKS.md, "What limits
//! it"). The slow path of reading (through a JSON value, which names the
//! field at fault) is timed too: what the one-pass reader saves.

use pitfall_contract::{Prepared, manifest_from_slice, manifest_from_value};
use pitfall_server::result_cache::text_digest;
use serde_json::Value;

use crate::scale::thread_cpu_time;
use crate::stats::median;

/// Passes over the bodies; each part's figure is the median pass.
const PASSES: usize = 5;

/// Microseconds of one thread's CPU per body, each the median of
/// [`PASSES`] passes over all the bodies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parts {
    /// How many bodies each pass went over.
    pub bodies: usize,
    /// The echo endpoint's work: text to a JSON value and back to text.
    pub echo_us: f64,
    /// Text into the manifest's types, one pass (`manifest_from_slice`).
    pub read_us: f64,
    /// Text into a JSON value, then into the types (the path that names
    /// a bad field).
    pub read_through_value_us: f64,
    /// The result cache's key (`text_digest`, of the body as sent).
    pub digest_us: f64,
    /// Normalise, enrich, flatten (`Prepared::new`), from a read manifest.
    pub prepare_us: f64,
}

/// Times the parts on `bodies` (valid manifests).
pub fn measure(bodies: &[Vec<u8>]) -> anyhow::Result<Parts> {
    let manifests = bodies
        .iter()
        .map(|b| {
            manifest_from_slice(b)
                .ok_or_else(|| anyhow::anyhow!("a fleet body the fast reader declines"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let n = bodies.len().max(1) as f64;
    // `f` does one body's work; its result is dropped inside the timing,
    // as a request's is.
    let per_body = |f: &mut dyn FnMut(usize)| -> f64 {
        let passes: Vec<f64> = (0..PASSES)
            .map(|_| {
                let start = thread_cpu_time();
                for i in 0..bodies.len() {
                    f(i);
                }
                (thread_cpu_time() - start).as_secs_f64() * 1e6 / n
            })
            .collect();
        median(&passes)
    };
    let mut sink = 0usize;
    let echo_us = per_body(&mut |i| {
        let value: Value = serde_json::from_slice(&bodies[i]).unwrap_or(Value::Null);
        sink ^= serde_json::to_vec(&value).map_or(0, |t| t.len());
    });
    let read_us =
        per_body(&mut |i| sink ^= manifest_from_slice(&bodies[i]).map_or(0, |m| m.packages.len()));
    let read_through_value_us = per_body(&mut |i| {
        let value: Value = serde_json::from_slice(&bodies[i]).unwrap_or(Value::Null);
        sink ^= manifest_from_value(value).map_or(0, |m| m.packages.len());
    });
    let digest_us = per_body(&mut |i| sink ^= usize::from(text_digest(&bodies[i])[0]));
    let prepare_us =
        per_body(&mut |i| sink ^= Prepared::new(manifests[i].clone()).manifest.packages.len());
    // Keeps the work from being optimised away.
    std::hint::black_box(sink);
    // `prepare_us` includes cloning the read manifest; the request moves it
    // instead. The clone is timed apart and taken off.
    let clone_us = per_body(&mut |i| sink ^= manifests[i].clone().packages.len());
    std::hint::black_box(sink);
    Ok(Parts {
        bodies: bodies.len(),
        echo_us,
        read_us,
        read_through_value_us,
        digest_us,
        prepare_us: (prepare_us - clone_us).max(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_is_timed_on_fleet_bodies() {
        let bodies: Vec<Vec<u8>> =
            crate::fleet::fleet(8, 1000, 3).iter().map(|m| m.to_string().into_bytes()).collect();
        let parts = measure(&bodies).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parts.bodies, 8);
        for (name, us) in [
            ("echo", parts.echo_us),
            ("read", parts.read_us),
            ("through value", parts.read_through_value_us),
            ("digest", parts.digest_us),
        ] {
            assert!(us.is_finite() && us > 0.0, "{name}: {us}");
        }
    }

    #[test]
    fn a_body_the_reader_declines_is_an_error() {
        let err = measure(&[b"{\"manifest_version\": 2}".to_vec()]).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("declines")));
    }
}
