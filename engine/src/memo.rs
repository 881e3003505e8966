//! The memo of evaluations: what a rule concluded, keyed by what it read.
//!
//! A rule is a pure function of the answers its host calls get (a fresh
//! instance each time; no clock, no randomness, no threads; NaNs
//! canonicalised; fuel and memory limits the same every time). Its first
//! read is the same on every manifest, and each read after that depends
//! only on what the earlier ones saw. So one rule's evaluations form a
//! decision tree: a node is the path read next, a branch is what was seen
//! there ([`Observed`]), a leaf the outcome. Replaying the tree on a new
//! manifest costs one field lookup per read; if every read sees what a
//! recorded evaluation saw, the rule would conclude the same and need not
//! run. A fleet's machines differ in their hostnames, models, general
//! packages and versions, but a rule about vLLM on pre-Ampere GPUs reads a
//! vLLM version and a compute capability: a handful of distinct traces.
//! Fewer still when it asks the host whether the version is in a range
//! (`version_in`) rather than reading it: the trace records the answer, so
//! every release inside the range replays one trace, and a finding quotes
//! the version through a parameter bound to the field (`param_field`),
//! filled in at render, which the rule never reads.
//!
//! Only clean outcomes are kept (clear, undetermined, matched and
//! rendered). A failure is never replayed: a deadline depends on the
//! machine's load, and a trap is rare enough to run again. A matched
//! rule's finding also quotes evidence, which the host reads when it
//! renders (with the field's source, which the rule cannot see), and its
//! bound parameters: a replay reuses the rendered finding (its JSON text,
//! shared) only when every evidence value and bound field is the same
//! again, and renders afresh from the recorded output otherwise. A leaf
//! that serves a version range meets many versions, so the texts it
//! rendered afresh are kept too, a few per leaf keyed by the shown
//! fields' values ([`Renderings`]): a fleet's common releases are
//! rendered once each, not on every replay.
//!
//! Each tree is one allocation (`crate::memo_image`), replayed in place
//! and grown by appending, so a rule touched once a check costs a few
//! cache lines rather than a heap block per node, branch and text.
//!
//! Bounded twice: a rule keeps at most [`MAX_LEAVES_PER_RULE`] outcomes
//! (a full tree is dropped and regrown, so it follows the fleet), and all
//! trees together at most the engine's `memo_bytes`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use pitfall_contract::cases::Evaluation;
use pitfall_contract::fields::FieldMap;
use pitfall_contract::meta::RuleMeta;
use pitfall_contract::report::{Evidence, LazyFinding, evidence_holds};
use pitfall_contract::session::RawOutput;

use crate::observe::Read;

use crate::memo_image::{self, Found, Leaf};
use crate::render::rendered;
use crate::tuning::Tuning;

/// Outcomes one rule keeps before its tree is dropped and regrown.
///
/// 512, not 64: a rule that reads a version and a
/// capability (or an environment variable besides) has hundreds of traces
/// on a fleet (60 releases by 6 capabilities), and at 64 its tree filled
/// and was dropped again and again, each time losing what it knew. In the
/// bench's HTTP phases the memo answered 82.9 % of a new server's
/// candidates instead of 81.4 %, and 93.2 % instead of 89.2 % after
/// 8,000 machines, holding 21.8 MiB of its 32 then. A replay scans a node's table of key fingerprints, so a rule that
/// reads something new on every machine first pays for at most this many
/// integer comparisons before it runs, well under a microsecond.
pub const MAX_LEAVES_PER_RULE: usize = 512;

/// A tree is written again with each node's branches in one block
/// (`memo_image::compact`) once this many branches, or a quarter of its
/// leaves if more, were appended to it since it last was. Each appended
/// branch is a block of its own, linked from the last, so a node that met
/// many values would be a chain of blocks across the image; compacting is
/// a copy of the image, so at most every quarter of its leaves it costs a
/// few copies of each byte over the tree's life.
const COMPACT_AFTER: usize = 8;

/// Texts a finding's leaf keeps of its renderings on other values than
/// the first (a ring: the oldest goes). A fleet runs a few recent
/// releases of each package, so a handful covers most replays; the
/// bench's fleet draws head packages from ten releases, skewed to the
/// newest.
pub const RENDERINGS_PER_LEAF: usize = 16;

/// The share of the memo's budget the kept renderings may take (a
/// quarter): they are a convenience of replay, the trees its substance,
/// and texts must never leave a new rule's trace without room.
const RENDERINGS_SHARE: usize = 4;

/// The engine-wide byte budget of all rules' trees, and what they hold now.
#[derive(Debug)]
pub(crate) struct MemoBudget {
    limit: usize,
    used: AtomicUsize,
    /// Of `used`, what kept renderings hold ([`RENDERINGS_SHARE`]).
    renderings: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    /// [`Tuning::memo_fingerprints`].
    fingerprints: bool,
    /// [`Tuning::memo_compaction`].
    compaction: bool,
}

/// How the memo did so far (for metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoStats {
    /// Evaluations answered from the memo.
    pub hits: u64,
    /// Evaluations that ran in the sandbox (with the memo on).
    pub misses: u64,
    /// Bytes the trees hold.
    pub bytes: usize,
}

impl MemoBudget {
    pub(crate) fn new(limit: usize, tuning: &Tuning) -> MemoBudget {
        MemoBudget {
            fingerprints: tuning.memo_fingerprints,
            compaction: tuning.memo_compaction,
            limit,
            used: AtomicUsize::new(0),
            renderings: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.limit > 0
    }

    pub(crate) fn stats(&self) -> MemoStats {
        MemoStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            bytes: self.used.load(Ordering::Relaxed),
        }
    }

    /// Adds a check's (or one lookup's) hits and misses. A check counts
    /// its own and adds them once: every core's checks share these two
    /// counters, and an atomic add per candidate moved their cache line
    /// between cores dozens of times a check.
    pub(crate) fn count(&self, hits: u64, misses: u64) {
        if hits > 0 {
            self.hits.fetch_add(hits, Ordering::Relaxed);
        }
        if misses > 0 {
            self.misses.fetch_add(misses, Ordering::Relaxed);
        }
    }

    /// Takes `bytes` from the budget if they fit.
    fn reserve(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Takes `bytes` for a kept rendering if they fit both the budget and
    /// the renderings' share of it.
    fn reserve_rendering(&self, bytes: usize) -> bool {
        let share = self.limit / RENDERINGS_SHARE;
        let fits_share = self
            .renderings
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(bytes).filter(|&total| total <= share)
            })
            .is_ok();
        if fits_share && !self.reserve(bytes) {
            self.renderings.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        fits_share
    }

    fn release_rendering(&self, bytes: usize) {
        self.renderings.fetch_sub(bytes, Ordering::Relaxed);
        self.release(bytes);
    }
}

/// What one evaluation concluded, as the memo keeps it.
#[derive(Debug)]
pub(crate) enum Outcome {
    Clear,
    Undetermined(Vec<String>),
    Matched {
        /// What the rule reported, to render afresh when evidence differs.
        raw: RawOutput,
        /// The finding's evidence, to see whether it holds again (empty
        /// when its leaf holds the evidence fields, `memo_image::evidence_key`).
        evidence: Vec<Evidence>,
        /// The finding rendered for this trace, as its JSON text, shared
        /// with every answer that replays it: a replay copies no part of
        /// the finding, and the server's answer copies the text instead of
        /// serialising the finding again (`LazyFinding`).
        json: Arc<str>,
        /// The texts rendered afresh on other values of the shown fields.
        others: Mutex<Renderings>,
    },
}

/// A finding leaf's texts rendered on values other than its first, each
/// with the shown fields' values it was rendered on (as
/// `memo_image::evidence_key` writes them: source, kind and text, so
/// equal keys render equal texts). At most [`RENDERINGS_PER_LEAF`].
#[derive(Debug, Default)]
pub(crate) struct Renderings {
    texts: Vec<(Box<[u8]>, Arc<str>)>,
    /// The slot the next text replaces once the ring is full.
    next: usize,
    /// What the budget counts for them.
    bytes: usize,
}

impl Renderings {
    fn find(&self, key: &[u8]) -> Option<&Arc<str>> {
        self.texts.iter().find(|(k, _)| **k == *key).map(|(_, json)| json)
    }

    /// Keeps `json` as rendered on `key`, if the budget has room.
    fn keep(&mut self, key: Vec<u8>, json: &Arc<str>, budget: &MemoBudget) {
        if self.find(&key).is_some() {
            // Another replay rendered it meanwhile.
            return;
        }
        let bytes = Self::bytes_of(&key, json);
        if !budget.reserve_rendering(bytes) {
            return;
        }
        self.bytes += bytes;
        let entry = (key.into_boxed_slice(), Arc::clone(json));
        if self.texts.len() < RENDERINGS_PER_LEAF {
            self.texts.push(entry);
            return;
        }
        let slot = self.next % RENDERINGS_PER_LEAF;
        self.next = slot + 1;
        let old = std::mem::replace(&mut self.texts[slot], entry);
        let freed = Self::bytes_of(&old.0, &old.1);
        self.bytes -= freed;
        budget.release_rendering(freed);
    }

    /// One kept text's cost: its key, its text, the entry and the
    /// text's reference counts.
    fn bytes_of(key: &[u8], json: &str) -> usize {
        key.len() + json.len() + std::mem::size_of::<(Box<[u8]>, Arc<str>)>() + 16
    }
}

/// The fields a finding's text shows: its evidence and the fields its
/// parameters are bound to (`param_field`), which the rule did not read
/// and its trace does not hold. Each once: a rule that offers its version
/// as evidence and quotes it names it twice, and every replay of the leaf
/// would compare it twice. A rendered finding's evidence is exactly its
/// output's (`render` fails on a missing one), so the recorded output says
/// which they are.
fn shown_fields(raw: &RawOutput) -> Vec<&str> {
    let mut shown: Vec<&str> = Vec::new();
    for path in raw.evidence.iter().map(String::as_str).chain(raw.param_fields()) {
        if !shown.contains(&path) {
            shown.push(path);
        }
    }
    shown
}

impl Outcome {
    /// The outcome of an evaluation, if it is one the memo keeps.
    pub(crate) fn of(evaluation: &Evaluation, raw: Option<RawOutput>) -> Option<Outcome> {
        match (evaluation, raw) {
            (Evaluation::Clear, _) => Some(Outcome::Clear),
            (Evaluation::Undetermined(missing), _) => Some(Outcome::Undetermined(missing.clone())),
            (Evaluation::Matched(finding), Some(raw)) => Some(Outcome::Matched {
                raw,
                evidence: finding.evidence.clone(),
                // Written here once; the evaluation's answer shares it.
                json: Arc::clone(finding.json()),
                others: Mutex::default(),
            }),
            _ => None,
        }
    }

    fn evaluation(&self, meta: &RuleMeta, fields: &FieldMap) -> Evaluation {
        match self {
            Outcome::Clear => Evaluation::Clear,
            Outcome::Undetermined(missing) => Evaluation::Undetermined(missing.clone()),
            Outcome::Matched { raw, evidence, json, .. } => {
                // Bound parameters are checked only in a leaf's evidence
                // key (`Memo::record`): without one, render afresh.
                if raw.param_fields().next().is_none()
                    && evidence.iter().all(|e| evidence_holds(fields, e))
                {
                    // A rendered finding's id and severity are its rule's.
                    let finding =
                        LazyFinding::from_json(meta.severity, meta.id.clone(), Arc::clone(json));
                    return Evaluation::Matched(Box::new(finding));
                }
                rendered(meta, raw, fields)
            }
        }
    }

    /// A finding whose evidence the image checked (`Found::Matched`):
    /// replayed as rendered when it holds, from the texts kept for other
    /// values when one was rendered on these, rendered afresh (and kept,
    /// within `budget`) when not.
    fn matched(
        &self,
        meta: &RuleMeta,
        fields: &FieldMap,
        evidence_holds: bool,
        budget: Option<&MemoBudget>,
    ) -> Evaluation {
        let shared = |json: &Arc<str>| {
            Evaluation::Matched(Box::new(LazyFinding::from_json(
                meta.severity,
                meta.id.clone(),
                Arc::clone(json),
            )))
        };
        match self {
            Outcome::Matched { json, .. } if evidence_holds => shared(json),
            Outcome::Matched { raw, others, .. } => {
                let Some(key) = memo_image::evidence_key(fields, shown_fields(raw).into_iter())
                else {
                    return rendered(meta, raw, fields);
                };
                if let Some(json) = others.lock().unwrap_or_else(|p| p.into_inner()).find(&key) {
                    return shared(json);
                }
                // Rendered outside the lock: replays of this leaf on
                // values already kept need not wait for it.
                let evaluation = rendered(meta, raw, fields);
                if let (Evaluation::Matched(finding), Some(budget)) = (&evaluation, budget) {
                    others.lock().unwrap_or_else(|p| p.into_inner()).keep(
                        key,
                        finding.json(),
                        budget,
                    );
                }
                evaluation
            }
            // Only a finding's leaf is written as matched.
            other => other.evaluation(meta, fields),
        }
    }

    /// What the budget counts for this outcome's kept renderings.
    fn renderings_bytes(&mut self) -> usize {
        match self {
            Outcome::Matched { others, .. } => {
                others.get_mut().unwrap_or_else(|p| p.into_inner()).bytes
            }
            _ => 0,
        }
    }

    /// Roughly the heap this outcome holds: its strings, once.
    fn heap_bytes(&self) -> usize {
        let base = std::mem::size_of::<Outcome>();
        match self {
            Outcome::Clear => base,
            Outcome::Undetermined(missing) => {
                base + missing.iter().map(|m| m.len() + 24).sum::<usize>()
            }
            Outcome::Matched { raw, evidence, json, .. } => {
                let raw_bytes = raw.bytes
                    + 24 * (raw.evidence.len() + raw.missing.len() + 2 * raw.params.len());
                // The evidence's JSON text's length: an estimate, short of
                // the heap of a JSON object value (BENCHMARKS.md, RSS).
                let mut counter = ByteCounter(0);
                let _ = serde_json::to_writer(&mut counter, evidence);
                base + raw_bytes + counter.0 + json.len()
            }
        }
    }
}

/// Counts what is written to it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// First in its memo, and the memo early in its rule (`Rule`'s layout):
/// the image a replay reads is on the rule's first cache line.
#[derive(Debug, Default)]
#[repr(C)]
struct Tree {
    /// The tree (`crate::memo_image`): replayed in place, grown by
    /// appending.
    image: Vec<u8>,
    /// The outcomes its leaves point to (a clear leaf points to none).
    outcomes: Vec<Outcome>,
    leaves: usize,
    /// Branches appended to the tree's nodes since it was last compacted.
    appended: usize,
    /// What the budget counts: the image's length and the outcomes' heap
    /// (the image's spare capacity, below its length, is not counted).
    /// Their kept renderings are counted apart (`Renderings::bytes`).
    bytes: usize,
}

impl Tree {
    /// Gives back to `budget` everything this tree holds, and empties it.
    fn release_all(&mut self, budget: &MemoBudget) {
        let renderings: usize = self.outcomes.iter_mut().map(Outcome::renderings_bytes).sum();
        budget.release_rendering(renderings);
        budget.release(std::mem::take(self).bytes);
    }
}

/// One rule's memo.
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct Memo {
    tree: RwLock<Tree>,
    /// The budget its bytes were taken from, given back when it drops (a
    /// rule leaving the served set).
    budget: OnceLock<Arc<MemoBudget>>,
}

impl Drop for Memo {
    fn drop(&mut self) {
        if let Some(budget) = self.budget.get() {
            self.tree.get_mut().unwrap_or_else(|p| p.into_inner()).release_all(budget);
        }
    }
}

impl Memo {
    /// The evaluation a recorded run predicts for these fields, if the
    /// rule would read what one recorded run read.
    pub(crate) fn replay(&self, meta: &RuleMeta, fields: &FieldMap) -> Option<Evaluation> {
        let tree = self.tree.read().unwrap_or_else(|p| p.into_inner());
        let fingerprints = self.budget.get().is_none_or(|b| b.fingerprints);
        match memo_image::replay_tuned(&tree.image, fields, fingerprints)? {
            Found::Clear => Some(Evaluation::Clear),
            Found::Outcome(i) => Some(tree.outcomes.get(i as usize)?.evaluation(meta, fields)),
            Found::Matched { index, evidence_holds } => {
                let budget = self.budget.get().map(Arc::as_ref);
                Some(tree.outcomes.get(index as usize)?.matched(
                    meta,
                    fields,
                    evidence_holds,
                    budget,
                ))
            }
        }
    }

    /// Records that reading `reads` led to `outcome`, within `budget`.
    ///
    /// A finding's evidence fields, as `fields` has them, go in its leaf
    /// (`memo_image::evidence_key`) when they are all scalars.
    pub(crate) fn record(
        &self,
        reads: Vec<Read>,
        mut outcome: Outcome,
        fields: &FieldMap,
        budget: &Arc<MemoBudget>,
    ) {
        // A rule is evaluated by one engine, so the budget is always the same.
        let budget = self.budget.get_or_init(|| Arc::clone(budget));
        let evidence = match &outcome {
            Outcome::Matched { raw, .. } => {
                memo_image::evidence_key(fields, shown_fields(raw).into_iter())
            }
            _ => None,
        };
        // A finding whose leaf holds its evidence never reads the outcome's
        // `Evidence` values (`Outcome::matched`), and a clear leaf keeps no
        // outcome: neither is held, nor counted.
        if let (Some(_), Outcome::Matched { evidence, .. }) = (&evidence, &mut outcome) {
            *evidence = Vec::new();
        }
        let clear = matches!(outcome, Outcome::Clear);
        let held = if clear { 0 } else { outcome.heap_bytes() };
        let mut bytes = held
            + memo_image::BYTES_OF_LEAF
            + evidence.as_ref().map_or(0, Vec::len)
            + reads.iter().map(|(path, seen)| memo_image::bytes_of_read(path, seen)).sum::<usize>();
        let mut tree = self.tree.write().unwrap_or_else(|p| p.into_inner());
        if tree.leaves >= MAX_LEAVES_PER_RULE {
            tree.release_all(budget);
        }
        if !budget.reserve(bytes) {
            return;
        }
        let leaf = match u32::try_from(tree.outcomes.len()) {
            _ if clear => Leaf::Clear,
            Ok(index) => match &evidence {
                Some(evidence) => Leaf::Matched { index, evidence },
                None => Leaf::Outcome(index),
            },
            Err(_) => {
                budget.release(bytes);
                return;
            }
        };
        let before = tree.image.len();
        if !memo_image::insert(&mut tree.image, &reads, leaf) {
            budget.release(bytes);
            return;
        }
        if before > 0 {
            tree.appended += 1;
        }
        // The trace shared a prefix with the tree: only what it added is
        // held (the reservation was for every read's node).
        let added = tree.image.len() - before;
        let unused = (bytes - held).saturating_sub(added);
        budget.release(unused);
        bytes -= unused;
        if !clear {
            tree.outcomes.push(outcome);
        }
        tree.leaves += 1;
        tree.bytes += bytes;
        if budget.compaction && tree.appended >= COMPACT_AFTER.max(tree.leaves / 4) {
            tree.appended = 0;
            if let Some(compacted) = memo_image::compact(&tree.image) {
                // Fewer block headers: never longer.
                let saved = tree.image.len().saturating_sub(compacted.len());
                tree.image = compacted;
                tree.bytes -= saved;
                budget.release(saved);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a replay reads first of its rule, the memo's lock and the
    /// image's pointer, is on the rule's first cache line, beside the
    /// selectors a check reads just before (`Rule`'s layout).
    #[test]
    fn a_replays_first_reads_are_on_the_rules_first_cache_line() {
        let memo = Memo::default();
        let tree = memo.tree.read().expect("fresh lock");
        let image_end = (&tree.image as *const Vec<u8> as usize) + std::mem::size_of::<Vec<u8>>();
        let within_memo = image_end - (&memo as *const Memo as usize);
        let rule_offset = std::mem::offset_of!(crate::rule::Rule, memo);
        assert!(
            rule_offset + within_memo <= 64,
            "memo at {rule_offset}, its image ends {within_memo} bytes in"
        );
        assert_eq!(std::mem::align_of::<crate::rule::Rule>(), 64);
        assert!(std::mem::offset_of!(crate::rule::Rule, selectors) < rule_offset);
    }
}
