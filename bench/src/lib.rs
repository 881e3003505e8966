//! # pitfall-bench
//!
//! The benchmark suite of issue 7: synthetic registries of 1,000 to
//! 100,000 rules ([`corpus`]), a fleet of realistic manifests ([`fleet`]),
//! and the measurements the binary runs in one process so that every
//! comparison is a ratio measured in the same run: the engine against its
//! empty-module floor ([`floor`]), check latency at scale ([`scale`]), the
//! same rule logic compiled into the host ([`native`]) and hosted by Extism
//! (`extism`, behind the feature of that name) side by side ([`compare`]),
//! publish cost ([`publish`]), cold start and RSS of a server process with
//! 10,000 rules ([`startup`]), HTTP throughput against a bare echo endpoint
//! ([`http`]) with the work a request does around the check next to the
//! echo's ([`parts`]), `pitfall fix` on the G5g fixture ([`fix`]), and
//! the plot ([`plot`]), and watches over 100,000 stored manifests
//! ([`watch`]). `BENCHMARKS.md` reports them.

pub mod ablation;
pub mod compare;
pub mod corpus;
pub mod enrichment;
pub mod explain;
#[cfg(feature = "extism")]
pub mod extism;
pub mod fix;
pub mod fleet;
pub mod floor;
pub mod http;
pub mod native;
pub mod parts;
pub mod plot;
pub mod publish;
pub mod rng;
pub mod scale;
pub mod startup;
pub mod stats;
pub mod watch;
