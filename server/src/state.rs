//! What every handler shares: the registry, bounds, caches, rate limiters
//! and evaluation slots ([`AppState`]), and a request's deadline.

use std::sync::Arc;
use std::time::Instant;

use crate::bundle::Bundles;
use crate::config::ServerLimits;
use crate::error::AppError;
use crate::metrics::Metrics;
use crate::rate_limit::RateLimiter;
use crate::registry::Registry;
use crate::result_cache::ResultCache;

/// What every handler shares (cheap to clone).
#[derive(Debug, Clone)]
pub struct AppState {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    registry: Arc<Registry>,
    limits: ServerLimits,
    cache: ResultCache,
    metrics: Metrics,
    bundles: Bundles,
    check_rate: RateLimiter,
    publish_rate: RateLimiter,
    /// Checks evaluating at once, at most one per core
    /// ([`crate::runtime`]); the rest wait their turn here, as futures. More
    /// at once gained no throughput and cost memory: each thread that
    /// evaluates keeps its own allocator heap (measured: 545 → 639 MiB at
    /// 16 connections).
    check_slots: tokio::sync::Semaphore,
    /// The watch evaluator and deliverer, when this process runs one.
    watcher: std::sync::OnceLock<Arc<crate::watch::Watcher>>,
}

impl AppState {
    /// The check endpoints' rate limiter.
    pub(crate) fn check_rate(&self) -> &RateLimiter {
        &self.inner.check_rate
    }

    /// The publish endpoint's rate limiter.
    pub(crate) fn publish_rate(&self) -> &RateLimiter {
        &self.inner.publish_rate
    }

    /// State over a registry, with these bounds, signing bundles with a
    /// fresh key (in-process uses; a server signs with its configured key,
    /// see [`AppState::with_signer`]).
    pub fn new(registry: Arc<Registry>, limits: ServerLimits) -> AppState {
        let signer = crate::signing::generate()
            .unwrap_or_else(|_| pitfall_api::BundleSigner::from_seed(&[0; 32]));
        AppState::with_signer(registry, limits, signer)
    }

    /// State over a registry, with these bounds, signing bundles with `signer`.
    pub fn with_signer(
        registry: Arc<Registry>,
        limits: ServerLimits,
        signer: pitfall_api::BundleSigner,
    ) -> AppState {
        let cache = ResultCache::new(limits.result_cache_entries, limits.result_cache_bytes);
        let bundles = Bundles::new(signer, limits.bundle_validity());
        let check_rate = RateLimiter::new(limits.rate_check_per_ip, limits.rate_check_per_token);
        let publish_rate =
            RateLimiter::new(limits.rate_publish_per_ip, limits.rate_publish_per_token);
        AppState {
            inner: Arc::new(Shared {
                registry,
                limits,
                cache,
                metrics: Metrics::default(),
                bundles,
                check_rate,
                publish_rate,
                check_slots: tokio::sync::Semaphore::new(crate::runtime::evaluation_slots()),
                watcher: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The registry (store, engine, served rules).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// The request bounds.
    pub fn limits(&self) -> &ServerLimits {
        &self.inner.limits
    }

    /// Waits for one of the evaluation slots (one per core; see
    /// [`crate::runtime`]).
    pub async fn check_slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>, AppError> {
        // Nothing closes the semaphore; if something ever did, say so.
        self.inner
            .check_slots
            .acquire()
            .await
            .map_err(|e| AppError::Internal(anyhow::anyhow!("evaluation slots: {e}")))
    }

    /// The check answer cache.
    pub fn cache(&self) -> &ResultCache {
        &self.inner.cache
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Hands the state the process's watcher (once).
    pub fn set_watcher(&self, watcher: Arc<crate::watch::Watcher>) {
        let _ = self.inner.watcher.set(watcher);
    }

    /// The process's watcher, if it runs one.
    pub fn watcher(&self) -> Option<&Arc<crate::watch::Watcher>> {
        self.inner.watcher.get()
    }

    /// The signed bundles of the served rules.
    pub fn bundles(&self) -> &Bundles {
        &self.inner.bundles
    }
}

/// When a request's time is up: [`ServerLimits::request_timeout`] after its
/// body was read. The middleware answers 503 then at the latest, but only
/// where the handler waits; a check evaluates on the worker that serves its
/// request, without waiting (`crate::runtime`), so it is handed this
/// instant and stops there itself.
#[derive(Debug, Clone, Copy)]
pub struct RequestDeadline(pub Instant);
