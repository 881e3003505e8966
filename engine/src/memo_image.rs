//! A rule's memo tree laid out in one allocation, replayed and grown in
//! place.
//!
//! A check replays some fifty rules' trees, each one among thousands and
//! touched once a check. Kept as nodes, each with its path, its branch
//! list and its branches' texts in heap blocks of their own, a replay
//! waited on memory at each: the path, the branch list, every branch's
//! text it compared, the next node's path, and so on (measured: replays
//! took three times as long as the same replays asked again at once).
//! The image holds the tree as bytes: a node's path and its branches' keys
//! and texts side by side, a trace's nodes one after another, so a replay
//! reads a few consecutive cache lines, and a leaf that concluded clear
//! (most of them) is answered from the image alone.
//!
//! A recording appends: the new trace's nodes from where it leaves the
//! tree go at the end, and the node it leaves from gets a new block of
//! branches there, linked from its last block (the one patch in place).
//! So recording costs what it adds, not the tree's size (rewriting the
//! whole image at each recording cost 5 % of a check). A node that
//! meets many values (a version read on every machine of a fleet) gathers
//! a chain of one-branch blocks that way, spread over the image; every so
//! often ([`compact`]) the image is written again with each node's
//! branches in one block, so a replay reads one table per node.
//!
//! A block starts with a table of its branches: each key's fingerprint
//! (a hash of what it records, [`fingerprint`]) and where the key is. A
//! replay hashes the field it sees once and scans the table, and compares
//! a key only where the fingerprints agree; a scan that compared every
//! key's text was a tenth of a check.
//!
//! Layout (little-endian; every offset counts from the image's start;
//! a child's and a block's point past the place that holds them, so a
//! walk only goes forward):
//! - a read: [`READ`], the path's length (u32), the path, then its first
//!   block of branches.
//! - a block: the number of branches in it (u32), the next block's offset
//!   (u32, 0 for none), each branch's entry (its key's fingerprint, u32,
//!   and the key's offset, u32), then the keys: the kind seen (u8),
//!   whether a text and a number were seen ([`HAS_TEXT`], [`HAS_NUMBER`])
//!   or the kind alone ([`KIND_ONLY`]),
//!   the length seen (u64), the number's bits (u64), the child's offset
//!   (u32), the text's length (u32) and the text.
//! - a leaf that concluded clear: [`CLEAR`].
//! - a leaf that matched with scalar evidence: [`MATCHED`], its index in
//!   the memo's outcomes (u32), the number of evidence fields (u32), then
//!   each: the path's length (u32), the path, the source seen (u8), the
//!   kind (u8), whether a text was seen (u8), the text's length (u32) and
//!   the text. A replay checks them here, beside the trace it walked,
//!   rather than in the outcome's evidence values, each in blocks of its
//!   own.
//! - any other leaf: [`OUTCOME`], its index in the memo's outcomes (u32).

use std::hash::{BuildHasher, Hasher};

use crate::observe::{Observed, Read, observe};
use foldhash::fast::FixedState;
use pitfall_contract::fields::{Field, FieldKind, FieldMap, Source};

const READ: u8 = 0;
const CLEAR: u8 = 1;
const OUTCOME: u8 = 2;
const MATCHED: u8 = 3;

const HAS_TEXT: u8 = 1;
const HAS_NUMBER: u8 = 2;
/// The key records the kind alone (`Observed::is_kind_only`): its length,
/// number and text are not compared.
const KIND_ONLY: u8 = 4;

/// Nodes the search of a replay may visit before it gives up. A node can
/// hold two keys one field matches, its exact value's and its kind's
/// (traces that asked the path's kind alone), and the first may lead
/// where the manifest's other reads do not: a replay whose walk along
/// first matches finds no leaf searches the tree, trying the other too.
/// Each node has at most two such keys, so a hostile tree could make the
/// search exponential in its depth; past this bound the replay is a miss,
/// as it would be without the second key.
const REPLAY_VISITS: u32 = 256;

/// A branch key's fixed part: kind, flags, length, number, child, text length.
const KEY: usize = 1 + 1 + 8 + 8 + 4 + 4;
/// Where in a key the child's offset and the text's length are.
const KEY_CHILD: usize = 18;
const KEY_TEXT_LEN: usize = 22;
/// A block's header: branch count, next block.
const BLOCK: usize = 4 + 4;
/// A branch's entry in its block's table: fingerprint, key's offset.
const ENTRY: usize = 4 + 4;
/// A read node's header before its first block: tag, path length.
const READ_HEADER: usize = 1 + 4;
/// The largest leaf.
const LEAF: usize = 1 + 4;

/// A trace's end, as a recording gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leaf<'a> {
    /// The rule concluded clear.
    Clear,
    /// The outcome at this index.
    Outcome(u32),
    /// A finding, the outcome at this index, with its evidence fields as
    /// [`evidence_key`] wrote them.
    Matched { index: u32, evidence: &'a [u8] },
}

/// Where a replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// A leaf that concluded clear.
    Clear,
    /// The leaf with the outcome at this index.
    Outcome(u32),
    /// A finding's leaf, and whether every evidence field is as it was
    /// when the finding was rendered (same source, kind and text, so
    /// the same evidence; otherwise the finding is rendered again).
    Matched { index: u32, evidence_holds: bool },
}

/// The evidence fields at `paths` as a [`Leaf::Matched`] holds them, or
/// `None` when one is missing or an array or object (whose value the
/// outcome's evidence then compares).
pub(crate) fn evidence_key<'p>(
    fields: &FieldMap,
    paths: impl Iterator<Item = &'p str>,
) -> Option<Vec<u8>> {
    let mut key = Vec::new();
    let mut count = 0u32;
    for path in paths {
        let field = fields.get(path)?;
        if matches!(field.kind, FieldKind::Array | FieldKind::Object | FieldKind::Missing) {
            return None;
        }
        let text = field.text.as_deref();
        key.extend_from_slice(&u32::try_from(path.len()).ok()?.to_le_bytes());
        key.extend_from_slice(path.as_bytes());
        key.push(source_byte(field.source));
        key.push(field.kind as u8);
        key.push(u8::from(text.is_some()));
        key.extend_from_slice(&u32::try_from(text.map_or(0, str::len)).ok()?.to_le_bytes());
        key.extend_from_slice(text.unwrap_or_default().as_bytes());
        count = count.checked_add(1)?;
    }
    let mut out = count.to_le_bytes().to_vec();
    out.extend_from_slice(&key);
    Some(out)
}

fn source_byte(source: Source) -> u8 {
    match source {
        Source::Manifest => 0,
        Source::Enriched => 1,
    }
}

/// Whether the evidence written at `at` (by [`evidence_key`]) is seen
/// again in `fields`; `None` on bytes this module did not write.
fn evidence_holds(image: &[u8], at: usize, fields: &FieldMap) -> Option<bool> {
    let mut entries = EvidenceEntries::at(image, at)?;
    let mut holds = true;
    // Every entry is read through, so bad bytes answer `None`.
    while let Some(entry) = entries.next_entry()? {
        holds &= fields.get_bytes(entry.path).is_some_and(|f| {
            source_byte(f.source) == entry.source
                && f.kind as u8 == entry.kind
                && f.text.as_deref().map(str::as_bytes) == entry.has_text.then_some(entry.text)
        });
    }
    Some(holds)
}

/// Where the evidence written at `at` ends.
fn evidence_end(image: &[u8], at: usize) -> Option<usize> {
    let mut entries = EvidenceEntries::at(image, at)?;
    while entries.next_entry()?.is_some() {}
    Some(entries.at)
}

/// One evidence field as a matched leaf holds it.
struct EvidenceEntry<'a> {
    path: &'a [u8],
    source: u8,
    kind: u8,
    has_text: bool,
    text: &'a [u8],
}

/// The evidence fields of a matched leaf, in order.
struct EvidenceEntries<'a> {
    image: &'a [u8],
    at: usize,
    left: u32,
}

impl<'a> EvidenceEntries<'a> {
    fn at(image: &'a [u8], at: usize) -> Option<Self> {
        Some(EvidenceEntries { image, at: at + 4, left: u32_at(image, at)? })
    }

    /// The next field: `Some(None)` past the last, `None` on bytes this
    /// module did not write.
    fn next_entry(&mut self) -> Option<Option<EvidenceEntry<'a>>> {
        if self.left == 0 {
            return Some(None);
        }
        self.left -= 1;
        let (image, at) = (self.image, self.at);
        let path_len = u32_at(image, at)? as usize;
        let path = image.get(at + 4..at + 4 + path_len)?;
        let at = at + 4 + path_len;
        let (source, kind, has_text) =
            (*image.get(at)?, *image.get(at + 1)?, *image.get(at + 2)? != 0);
        let text_len = u32_at(image, at + 3)? as usize;
        let text = image.get(at + 7..at + 7 + text_len)?;
        self.at = at + 7 + text_len;
        Some(Some(EvidenceEntry { path, source, kind, has_text, text }))
    }
}

/// What one read of a trace adds to an image at most (its node and a
/// block with its branch), for the memo's budget.
pub(crate) fn bytes_of_read(path: &[u8], seen: &Observed) -> usize {
    READ_HEADER + path.len() + BLOCK + ENTRY + KEY + seen.text().map_or(0, str::len)
}

/// A hash of what a branch key records: the kind, the length, the number's
/// bits and the text, each with whether it was seen, so a field a key
/// matches (`key_matches`) always has the key's fingerprint. Only a
/// filter: keys whose fingerprints agree are still compared, so a
/// collision (a client can aim for one; the seed is fixed) costs a
/// comparison, never a wrong answer.
fn fingerprint(kind: u8, len: u64, number: Option<u64>, text: Option<&[u8]>) -> u32 {
    const SEED: u64 = 0x6d65_6d6f_5f66_7021;
    let mut h = FixedState::with_seed(SEED).build_hasher();
    h.write_u8(kind);
    h.write_u64(len);
    match number {
        Some(bits) => {
            h.write_u8(1);
            h.write_u64(bits);
        }
        None => h.write_u8(0),
    }
    match text {
        Some(text) => {
            h.write_u8(1);
            h.write(text);
        }
        None => h.write_u8(0),
    }
    h.finish() as u32
}

/// The fingerprint of the key a rule seeing `field` would match.
fn fingerprint_of_field(field: Option<&Field<'_>>) -> u32 {
    match field {
        None => fingerprint(FieldKind::Missing as u8, 0, None, None),
        Some(f) => fingerprint(
            f.kind as u8,
            f.len as u64,
            f.number.map(f64::to_bits),
            f.text.as_deref().map(str::as_bytes),
        ),
    }
}

/// The fingerprint of the key recording `seen`.
fn fingerprint_of_seen(seen: &Observed) -> u32 {
    if seen.is_kind_only() {
        return fingerprint_of_kind(seen.kind() as u8);
    }
    fingerprint(
        seen.kind() as u8,
        seen.len() as u64,
        seen.number_bits(),
        seen.text().map(str::as_bytes),
    )
}

/// The fingerprint of a key recording only the kind `kind`: a mix of its
/// byte, no hash, since a replay wants it at every node besides the
/// field's own. Equal to some full key's fingerprint now and then, which
/// costs a comparison.
fn fingerprint_of_kind(kind: u8) -> u32 {
    (u32::from(kind) + 1).wrapping_mul(0x9e37_79b1) ^ 0x6b69_6e64
}

/// What a trace's leaf adds to an image at most.
pub(crate) const BYTES_OF_LEAF: usize = LEAF;

fn u32_at(image: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(image.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(image: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(image.get(at..at + 8)?.try_into().ok()?))
}

fn put_u32(image: &mut [u8], at: usize, value: u32) {
    image[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// The leaf a rule that reads `fields` would reach, if every read sees
/// what one recorded run saw there (`None` otherwise, or on an image this
/// module did not write).
#[cfg(test)]
pub(crate) fn replay(image: &[u8], fields: &FieldMap) -> Option<Found> {
    replay_tuned(image, fields, true)
}

/// [`replay`], or (`fingerprints` false, [`crate::Tuning::memo_fingerprints`]
/// off) comparing every key of a node rather than those whose fingerprint
/// is the field's.
pub(crate) fn replay_tuned(image: &[u8], fields: &FieldMap, fingerprints: bool) -> Option<Found> {
    // First the walk that takes each node's first matching key: the one
    // that leads to the leaf whenever a node holds one key `fields` match,
    // as nearly every node does. Only where it ends without a leaf is the
    // search that tries a node's other matching key worth its cost (the
    // rule would run in the sandbox otherwise).
    if let Some(found) = walk(image, fields, fingerprints)? {
        return Some(found);
    }
    let mut visits = REPLAY_VISITS;
    replay_from(image, 0, fields, fingerprints, &mut visits)?
}

/// [`replay`] along each node's first matching key: `Some(None)` where a
/// node has none.
fn walk(image: &[u8], fields: &FieldMap, fingerprints: bool) -> Option<Option<Found>> {
    let mut at = 0;
    loop {
        match *image.get(at)? {
            READ => {
                let (field, mut keys) = read_node(image, at, fields, fingerprints)?;
                let Some(child) =
                    keys.next(|key, text| key_matches(image, key, text, field.as_ref()))?
                else {
                    return Some(None);
                };
                at = Some(child).filter(|&c| c > at)?;
            }
            _ => return Some(Some(leaf_at(image, at, fields)?)),
        }
    }
}

/// The read node at `at`: what a rule reading its path in `fields` sees
/// (a field, or the answer to a recorded `version_in`), and the node's
/// keys that may match it (by the fingerprint of its value or its kind).
fn read_node<'a, 'f>(
    image: &'a [u8],
    at: usize,
    fields: &'f FieldMap,
    fingerprints: bool,
) -> Option<(Option<Field<'f>>, Matches<'a>)> {
    let path_len = u32_at(image, at + 1)? as usize;
    let path = image.get(at + READ_HEADER..at + READ_HEADER + path_len)?;
    let field = observe(fields, path);
    let wanted = [
        fingerprint_of_field(field.as_ref()),
        fingerprint_of_kind(field.as_ref().map_or(FieldKind::Missing, |f| f.kind) as u8),
    ];
    let wanted = fingerprints.then_some(wanted);
    Some((field, Matches::new(image, at + READ_HEADER + path_len, wanted)))
}

/// The leaf at `at`: `None` if it is not one (or its bytes are not this
/// module's).
fn leaf_at(image: &[u8], at: usize, fields: &FieldMap) -> Option<Found> {
    match *image.get(at)? {
        CLEAR => Some(Found::Clear),
        OUTCOME => Some(Found::Outcome(u32_at(image, at + 1)?)),
        MATCHED => {
            let index = u32_at(image, at + 1)?;
            Some(Found::Matched { index, evidence_holds: evidence_holds(image, at + 5, fields)? })
        }
        _ => None,
    }
}

/// [`replay`] from the node at `at`: `Some(Some(leaf))`, `Some(None)` when
/// no recorded run read what `fields` hold from here (or the search's
/// bound ran out), `None` on bytes this module did not write.
fn replay_from(
    image: &[u8],
    at: usize,
    fields: &FieldMap,
    fingerprints: bool,
    visits: &mut u32,
) -> Option<Option<Found>> {
    match *image.get(at)? {
        READ => {
            let Some(left) = visits.checked_sub(1) else { return Some(None) };
            *visits = left;
            let (field, mut keys) = read_node(image, at, fields, fingerprints)?;
            // Usually one key matches and its subtree has the leaf; the
            // next is tried only when it has not.
            while let Some(child) =
                keys.next(|key, text| key_matches(image, key, text, field.as_ref()))?
            {
                let child = Some(child).filter(|&c| c > at)?;
                if let Some(found) = replay_from(image, child, fields, fingerprints, visits)? {
                    return Some(Some(found));
                }
            }
            Some(None)
        }
        _ => Some(Some(leaf_at(image, at, fields)?)),
    }
}

/// The keys of a node, from its first block, whose fingerprint is one of
/// `wanted` (any, without) and which a test accepts, in scan order: a replay takes the
/// first and resumes after it only if its subtree had no leaf.
struct Matches<'a> {
    chain: BlockChain<'a>,
    table: &'a [u8],
    wanted: Option<[u32; 2]>,
}

impl<'a> Matches<'a> {
    fn new(image: &'a [u8], block: usize, wanted: Option<[u32; 2]>) -> Matches<'a> {
        Matches { chain: BlockChain { image, next: Some(block) }, table: &[], wanted }
    }

    /// The next accepted key's child: `Some(None)` past the last block,
    /// `None` on bytes this module did not write.
    fn next(
        &mut self,
        mut accepts: impl FnMut(usize, &[u8]) -> Option<bool>,
    ) -> Option<Option<usize>> {
        let image = self.chain.image;
        loop {
            while let Some((entry, rest)) = self.table.split_first_chunk::<ENTRY>() {
                self.table = rest;
                let fingerprint = u32_at(entry, 0)?;
                if let Some(wanted) = self.wanted
                    && fingerprint != wanted[0]
                    && fingerprint != wanted[1]
                {
                    continue;
                }
                let key = u32_at(entry, 4)? as usize;
                let text_len = u32_at(image, key + KEY_TEXT_LEN)? as usize;
                let text = image.get(key + KEY..key + KEY + text_len)?;
                if accepts(key, text)? {
                    return Some(Some(u32_at(image, key + KEY_CHILD)? as usize));
                }
            }
            match self.chain.next_block()? {
                Some((_, table)) => self.table = table,
                None => return Some(None),
            }
        }
    }
}

/// Scans the blocks from `block` for a key with the fingerprint `wanted`
/// that `accepts`: `Some(Some(child))` when one does, `Some(None)` when none
/// does, `None` on bytes this module did not write.
fn find(
    image: &[u8],
    block: usize,
    wanted: u32,
    accepts: impl FnMut(usize, &[u8]) -> Option<bool>,
) -> Option<Option<usize>> {
    Matches::new(image, block, Some([wanted; 2])).next(accepts)
}

/// A node's blocks, from its first: each block's offset and its table of
/// entries, for the scan, the last block's link and the compaction alike.
struct BlockChain<'a> {
    image: &'a [u8],
    next: Option<usize>,
}

impl<'a> BlockChain<'a> {
    /// The next block: `Some(None)` past the last, `None` on bytes this
    /// module did not write.
    fn next_block(&mut self) -> Option<Option<(usize, &'a [u8])>> {
        let Some(block) = self.next else { return Some(None) };
        let image = self.image;
        let branches = u32_at(image, block)? as usize;
        let table = image.get(block + BLOCK..block + BLOCK + branches.checked_mul(ENTRY)?)?;
        self.next = match u32_at(image, block + 4)? as usize {
            0 => None,
            // Blocks are appended after the ones they continue.
            next => Some(Some(next).filter(|&n| n > block)?),
        };
        Some(Some((block, table)))
    }
}

/// Whether a rule would see `field` as the branch key at `key` records it
/// (for a kind-only key, of the same kind): `Observed::matches`, over the
/// image's bytes.
fn key_matches(image: &[u8], key: usize, text: &[u8], field: Option<&Field<'_>>) -> Option<bool> {
    let kind = *image.get(key)?;
    let Some(f) = field else { return Some(kind == FieldKind::Missing as u8) };
    let flags = *image.get(key + 1)?;
    if flags & KIND_ONLY != 0 {
        return Some(f.kind as u8 == kind);
    }
    let same_number = match f.number {
        Some(n) => flags & HAS_NUMBER != 0 && n.to_bits() == u64_at(image, key + 10)?,
        None => flags & HAS_NUMBER == 0,
    };
    let same_text = match f.text.as_deref() {
        Some(t) => flags & HAS_TEXT != 0 && t.as_bytes() == text,
        None => flags & HAS_TEXT == 0,
    };
    Some(
        f.kind as u8 == kind && f.len as u64 == u64_at(image, key + 2)? && same_number && same_text,
    )
}

/// Whether the key at `key` records exactly `seen` (`Observed`'s equality).
fn key_is(image: &[u8], key: usize, text: &[u8], seen: &Observed) -> Option<bool> {
    let flags = *image.get(key + 1)?;
    let number = (flags & HAS_NUMBER != 0).then(|| u64_at(image, key + 10)).flatten();
    let text = (flags & HAS_TEXT != 0).then_some(text);
    Some(
        (flags & KIND_ONLY != 0) == seen.is_kind_only()
            && *image.get(key)? == seen.kind() as u8
            && u64_at(image, key + 2)? == seen.len() as u64
            && number == seen.number_bits()
            && text == seen.text().map(str::as_bytes),
    )
}

/// Adds a trace to the image, ending in `leaf`: true if it was added,
/// false if it was there already (another thread recorded it first) or
/// does not fit the tree (the rule read another path after the same
/// observations, which determinism rules out), or the image would outgrow
/// u32 offsets (no memo budget admits one). Appends the trace's nodes from
/// where it leaves the tree, and links them with the one patch.
pub(crate) fn insert(image: &mut Vec<u8>, reads: &[Read], leaf: Leaf<'_>) -> bool {
    let start = image.len();
    let added = insert_at(image, reads, leaf).is_some_and(|added| added);
    if !added || u32::try_from(image.len()).is_err() {
        image.truncate(start);
        return false;
    }
    true
}

fn insert_at(image: &mut Vec<u8>, reads: &[Read], leaf: Leaf<'_>) -> Option<bool> {
    if image.is_empty() {
        write_chain(image, reads, leaf)?;
        return Some(true);
    }
    let mut at = 0;
    for (i, (path, seen)) in reads.iter().enumerate() {
        if *image.get(at)? != READ {
            return Some(false);
        }
        let path_len = u32_at(image, at + 1)? as usize;
        if image.get(at + READ_HEADER..at + READ_HEADER + path_len)? != &path[..] {
            return Some(false);
        }
        let first = at + READ_HEADER + path_len;
        let view: &[u8] = image;
        if let Some(child) =
            find(view, first, fingerprint_of_seen(seen), |key, text| key_is(view, key, text, seen))?
        {
            at = child;
            continue;
        }
        // A new branch: a block of one, appended, linked from the last block.
        let mut last = first;
        let mut chain = BlockChain { image: view, next: Some(first) };
        while let Some((block, _)) = chain.next_block()? {
            last = block;
        }
        let block = u32::try_from(image.len()).ok()?;
        write_branch(image, seen)?;
        write_chain(image, &reads[i + 1..], leaf)?;
        put_u32(image, last + 4, block);
        return Some(true);
    }
    // Every read was already there: the trace is known (or ends early).
    Some(false)
}

/// Writes a branch key for `seen` with its child's offset left 0; returns
/// where that offset goes.
fn write_key(image: &mut Vec<u8>, seen: &Observed) -> Option<usize> {
    let text = seen.text().unwrap_or_default();
    let flags = if seen.text().is_some() { HAS_TEXT } else { 0 }
        | if seen.number_bits().is_some() { HAS_NUMBER } else { 0 }
        | if seen.is_kind_only() { KIND_ONLY } else { 0 };
    image.push(seen.kind() as u8);
    image.push(flags);
    image.extend_from_slice(&(seen.len() as u64).to_le_bytes());
    image.extend_from_slice(&seen.number_bits().unwrap_or(0).to_le_bytes());
    let slot = image.len();
    image.extend_from_slice(&[0; 4]);
    image.extend_from_slice(&u32::try_from(text.len()).ok()?.to_le_bytes());
    image.extend_from_slice(text.as_bytes());
    Some(slot)
}

/// Writes a block of one branch, for `seen`, whose child is written next
/// (right after it).
fn write_branch(image: &mut Vec<u8>, seen: &Observed) -> Option<()> {
    image.extend_from_slice(&1u32.to_le_bytes());
    image.extend_from_slice(&0u32.to_le_bytes());
    image.extend_from_slice(&fingerprint_of_seen(seen).to_le_bytes());
    let key = u32::try_from(image.len() + 4).ok()?;
    image.extend_from_slice(&key.to_le_bytes());
    let slot = write_key(image, seen)?;
    let child = u32::try_from(image.len()).ok()?;
    put_u32(image, slot, child);
    Some(())
}

/// Writes the nodes of `reads`, each with one branch whose child follows
/// at once, and then the leaf.
fn write_chain(image: &mut Vec<u8>, reads: &[Read], leaf: Leaf<'_>) -> Option<()> {
    for (path, seen) in reads {
        image.push(READ);
        image.extend_from_slice(&u32::try_from(path.len()).ok()?.to_le_bytes());
        image.extend_from_slice(path);
        write_branch(image, seen)?;
    }
    match leaf {
        Leaf::Clear => image.push(CLEAR),
        Leaf::Outcome(i) => {
            image.push(OUTCOME);
            image.extend_from_slice(&i.to_le_bytes());
        }
        Leaf::Matched { index, evidence } => {
            image.push(MATCHED);
            image.extend_from_slice(&index.to_le_bytes());
            image.extend_from_slice(evidence);
        }
    }
    Some(())
}

/// The image written again with each node's branches in one block (in
/// the order a scan met them) and each subtree after its node's keys:
/// what replays see is unchanged, and a node's scan reads one table.
/// `None` on bytes this module did not write (the caller keeps them).
pub(crate) fn compact(image: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(image.len());
    if !image.is_empty() {
        copy_node(image, 0, &mut out, 0)?;
    }
    u32::try_from(out.len()).ok()?;
    Some(out)
}

/// Copies the node at `at`, and everything below it, to the end of `out`.
fn copy_node(image: &[u8], at: usize, out: &mut Vec<u8>, depth: usize) -> Option<()> {
    // A trace is at most `MAX_RECORDED_READS` reads long.
    if depth > crate::observe::MAX_RECORDED_READS {
        return None;
    }
    match *image.get(at)? {
        CLEAR => out.push(CLEAR),
        OUTCOME => out.extend_from_slice(image.get(at..at + LEAF)?),
        MATCHED => out.extend_from_slice(image.get(at..evidence_end(image, at + LEAF)?)?),
        READ => {
            let path_len = u32_at(image, at + 1)? as usize;
            let first = at + READ_HEADER + path_len;
            out.extend_from_slice(image.get(at..first)?);
            // Every branch's entry, block by block.
            let mut entries = Vec::new();
            let mut chain = BlockChain { image, next: Some(first) };
            while let Some((_, table)) = chain.next_block()? {
                entries.extend_from_slice(table);
            }
            let count = entries.len() / ENTRY;
            out.extend_from_slice(&u32::try_from(count).ok()?.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            let table = out.len();
            out.extend_from_slice(&entries);
            let mut children = Vec::with_capacity(count);
            for (i, entry) in entries.chunks_exact(ENTRY).enumerate() {
                let key = u32_at(entry, 4)? as usize;
                let text_len = u32_at(image, key + KEY_TEXT_LEN)? as usize;
                let moved = out.len();
                put_u32(out, table + i * ENTRY + 4, u32::try_from(moved).ok()?);
                out.extend_from_slice(image.get(key..key + KEY + text_len)?);
                let child = Some(u32_at(image, key + KEY_CHILD)? as usize).filter(|&c| c > at)?;
                children.push((moved + KEY_CHILD, child));
            }
            for (slot, child) in children {
                let moved = u32::try_from(out.len()).ok()?;
                put_u32(out, slot, moved);
                copy_node(image, child, out, depth + 1)?;
            }
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use pitfall_contract::manifest_from_value;
    use pitfall_contract::normalize::Enrichment;

    fn fields(json: serde_json::Value) -> FieldMap {
        let manifest = manifest_from_value(json).expect("valid manifest");
        FieldMap::new(Arc::new(manifest), &Enrichment::default())
    }

    fn seen(fields: &FieldMap, path: &str) -> Observed {
        Observed::of(fields.get(path).as_ref())
    }

    /// An image grown trace by trace, from machines that differ where a
    /// rule looks (a text, a missing field, an array's length, a number),
    /// replays every machine to the leaf of the one recorded trace whose
    /// every read it matches, and machines never seen to none; a trace
    /// recorded twice, or one that reads another path after the same
    /// observations, is refused and leaves the image as it was.
    #[test]
    fn an_image_replays_every_manifest_to_its_traces_leaf() {
        let machine = |vllm: Option<&str>, cc: &str, gpus: usize, memory_mib: u64| {
            let mut packages = vec![serde_json::json!({"name": "torch", "version": "2.5.1"})];
            if let Some(v) = vllm {
                packages.push(serde_json::json!({"name": "vllm", "version": v}));
            }
            let gpu = serde_json::json!({"vendor": "nvidia", "compute_capability": cc, "memory_mib": memory_mib});
            fields(serde_json::json!({
                "manifest_version": 1,
                "host": {"arch": "x86_64"},
                "accelerators": vec![gpu; gpus],
                "packages": packages,
            }))
        };
        let seen_machines = [
            machine(Some("0.27.1"), "9.0", 1, 81920),
            machine(Some("0.27.1"), "8.0", 1, 81920),
            machine(Some("0.26.0"), "9.0", 2, 81920),
            machine(None, "7.5", 1, 16384),
            machine(Some("0.27.1"), "9.0", 1, 16384),
            machine(Some("0.27.1"), "9.0", 4, 16384),
            machine(Some("0.26.0"), "9.0", 2, 40960),
        ];
        // Each machine's trace: the vLLM version (a text, or missing), then
        // (when there is one) the first GPU's capability, the number of
        // GPUs (an array's length) and the first one's memory (a number).
        let paths = [
            "packages.vllm.version",
            "accelerators.0.compute_capability",
            "accelerators",
            "accelerators.0.memory_mib",
        ];
        let trace = |m: &FieldMap| -> Vec<Read> {
            let reads = if m.get("packages.vllm.version").is_some() { paths.len() } else { 1 };
            paths.iter().take(reads).map(|p| (p.as_bytes().into(), seen(m, p))).collect()
        };
        let leaf =
            |i: usize| if i.is_multiple_of(2) { Leaf::Clear } else { Leaf::Outcome(i as u32) };
        let mut image = Vec::new();
        let mut traces = Vec::new();
        for (i, m) in seen_machines.iter().enumerate() {
            let t = trace(m);
            assert!(insert(&mut image, &t, leaf(i)), "machine {i} is a new trace");
            let before = image.clone();
            assert!(!insert(&mut image, &t, leaf(i)), "machine {i} again");
            let mut other_path = t.clone();
            other_path.last_mut().expect("a read").0 = b"host.arch".as_slice().into();
            assert!(!insert(&mut image, &other_path, leaf(i)), "machine {i} reading elsewhere");
            assert_eq!(image, before, "refused traces leave the image as it was");
            traces.push((t, leaf(i)));
        }
        let unseen = [
            machine(Some("0.27.2"), "9.0", 1, 81920),
            machine(Some("0.27.1"), "9.0", 3, 81920),
            machine(Some("0.27.1"), "9.0", 1, 40960),
            machine(Some("0.26.0"), "8.0", 2, 81920),
            machine(None, "9.0", 1, 81920),
        ];
        let mut hits = 0;
        for m in seen_machines.iter().chain(&unseen) {
            let expected = traces
                .iter()
                .find(|(t, _)| {
                    t.iter().all(|(path, seen)| seen.matches(m.get_bytes(path).as_ref()))
                })
                .map(|(_, leaf)| match leaf {
                    Leaf::Clear => Found::Clear,
                    Leaf::Outcome(i) => Found::Outcome(*i),
                    Leaf::Matched { .. } => unreachable!("no finding here"),
                });
            assert_eq!(replay(&image, m), expected);
            assert_eq!(replay_tuned(&image, m, false), expected, "without fingerprints");
            hits += usize::from(expected.is_some());
        }
        assert_eq!(
            hits,
            seen_machines.len() + 1,
            "every machine seen, and the unseen one without vLLM"
        );
        // Compacted, every node's branches in one block: the same answers,
        // fewer bytes, and compacting again changes nothing.
        let compacted = compact(&image).expect("an image this module wrote");
        assert!(compacted.len() < image.len(), "{} >= {}", compacted.len(), image.len());
        assert_eq!(compact(&compacted).as_deref(), Some(compacted.as_slice()));
        for m in seen_machines.iter().chain(&unseen) {
            assert_eq!(replay(&compacted, m), replay(&image, m));
            assert_eq!(replay_tuned(&compacted, m, false), replay(&image, m), "no fingerprints");
        }
        // It grows on as before: a new trace appended, the rest unchanged.
        let mut grown = compacted.clone();
        let new_trace = trace(&unseen[0]);
        assert!(insert(&mut grown, &new_trace, Leaf::Outcome(99)));
        assert_eq!(replay(&grown, &unseen[0]), Some(Found::Outcome(99)));
        for m in &seen_machines {
            assert_eq!(replay(&grown, m), replay(&image, m));
        }
        // A fingerprint is a filter, not an answer: with every entry of
        // the root's table given the first machine's fingerprint (as
        // colliding keys would have), that machine still reaches its own
        // leaf by comparing keys, and no machine reaches another's.
        let path_len = u32_at(&compacted, 1).expect("a root") as usize;
        let root_block = READ_HEADER + path_len;
        let branches = u32_at(&compacted, root_block).expect("a block") as usize;
        let first = fingerprint_of_field(seen_machines[0].get(paths[0]).as_ref());
        let mut collided = compacted.clone();
        for i in 0..branches {
            put_u32(&mut collided, root_block + BLOCK + i * ENTRY, first);
        }
        assert_eq!(replay(&collided, &seen_machines[0]), replay(&image, &seen_machines[0]));
        for m in seen_machines.iter().chain(&unseen) {
            let answer = replay(&collided, m);
            assert!(answer.is_none() || answer == replay(&image, m), "{answer:?}");
        }
        assert_eq!(compact(&compacted[..compacted.len() - 1]), None, "cut short");
        // Bytes this module did not write answer nothing, and never loop.
        assert_eq!(replay(&[], &seen_machines[0]), None);
        assert_eq!(replay(&image[..40], &seen_machines[0]), None, "cut inside the first key");
        assert_eq!(replay(&[9, 0, 0], &seen_machines[0]), None);
    }

    /// A key that records a kind alone matches every field of that kind;
    /// a node may hold it beside a key of the field's exact value, and a
    /// replay whose first matching key leads nowhere for its manifest
    /// tries the other (without that, the manifest would miss for good:
    /// its trace is in the tree, so recording it again adds nothing).
    #[test]
    fn a_kind_only_key_matches_its_kind_and_a_replay_tries_the_other_key() {
        let machine = |members: Option<bool>, engine: &str| {
            let mut packages = vec![serde_json::json!({"name": "torch", "version": "2.5.1"})];
            match members {
                Some(false) => {
                    packages.push(serde_json::json!({"name": "vllm", "version": "0.27.1"}))
                }
                Some(true) => packages.push(
                    serde_json::json!({"name": "vllm", "version": "0.9.0", "ecosystem": "pypi"}),
                ),
                None => {}
            }
            fields(serde_json::json!({
                "manifest_version": 1, "packages": packages, "workload": {"engine": engine},
            }))
        };
        let kind = |m: &FieldMap| Observed::kind_of(m.get("packages.vllm").as_ref());
        let read = |path: &str, seen: Observed| -> Read { (path.as_bytes().into(), seen) };
        let two = machine(Some(false), "a");
        // A: asked vLLM's kind, then the engine ("a"). B: the same first
        // call, then the engine ("b"), then vLLM's member count too.
        let a = vec![
            read("packages.vllm", kind(&two)),
            read("workload.engine", seen(&two, "workload.engine")),
        ];
        let two_b = machine(Some(false), "b");
        let b = vec![
            read("packages.vllm", seen(&two_b, "packages.vllm")),
            read("workload.engine", seen(&two_b, "workload.engine")),
        ];
        let mut image = Vec::new();
        assert!(insert(&mut image, &a, Leaf::Outcome(1)));
        assert!(
            insert(&mut image, &b, Leaf::Outcome(2)),
            "another key: the whole value, not the kind"
        );
        assert!(
            !insert(&mut image, &a, Leaf::Outcome(1)) && !insert(&mut image, &b, Leaf::Outcome(2))
        );
        let missing = vec![read("packages.vllm", Observed::kind_of(None))];
        assert!(insert(&mut image, &missing, Leaf::Clear), "missing, asked as a kind");
        let missing_full = vec![read("packages.vllm", Observed::of(None))];
        assert!(
            insert(&mut image, &missing_full, Leaf::Outcome(3)),
            "missing, seen whole: another key"
        );
        for image in [image.clone(), compact(&image).expect("written here")] {
            assert_eq!(replay(&image, &machine(Some(false), "a")), Some(Found::Outcome(1)));
            assert_eq!(
                replay(&image, &machine(Some(true), "a")),
                Some(Found::Outcome(1)),
                "other members, same kind"
            );
            assert_eq!(
                replay(&image, &machine(Some(false), "b")),
                Some(Found::Outcome(2)),
                "the second key, tried"
            );
            assert_eq!(replay(&image, &machine(Some(true), "b")), None, "B saw two members");
            assert_eq!(replay(&image, &machine(Some(false), "c")), None);
            assert!(matches!(
                replay(&image, &machine(None, "a")),
                Some(Found::Clear | Found::Outcome(3))
            ));
        }
    }

    /// A tree where every node holds two keys a manifest matches, and no
    /// leaf for it at the bottom, is searched within [`REPLAY_VISITS`]
    /// nodes, then missed; a manifest with a leaf is still found.
    #[test]
    fn a_replays_search_is_bounded() {
        let depth = 10;
        let paths: Vec<String> = (0..depth).map(|i| format!("env.P{i}")).collect();
        let machine = |last: &str| {
            let env: serde_json::Map<String, serde_json::Value> = paths
                .iter()
                .map(|p| (p["env.".len()..].to_owned(), serde_json::Value::from("x")))
                .collect();
            fields(
                serde_json::json!({"manifest_version": 1, "env": env, "workload": {"engine": last}}),
            )
        };
        let recorded = machine("a");
        let mut image = Vec::new();
        for mask in 0u32..1 << depth {
            let mut trace: Vec<Read> = paths
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let field = recorded.get(p);
                    let seen = if mask & (1 << i) != 0 {
                        Observed::kind_of(field.as_ref())
                    } else {
                        Observed::of(field.as_ref())
                    };
                    (p.as_bytes().into(), seen)
                })
                .collect();
            trace.push((b"workload.engine".as_slice().into(), seen(&recorded, "workload.engine")));
            assert!(insert(&mut image, &trace, Leaf::Outcome(mask)));
        }
        let mut visits = REPLAY_VISITS;
        assert_eq!(replay_from(&image, 0, &machine("b"), true, &mut visits), Some(None));
        assert_eq!(visits, 0, "gave up at the bound, not after 2^{depth} paths");
        assert!(matches!(replay(&image, &recorded), Some(Found::Outcome(_))));
    }

    /// A field and what a rule saw there have the same fingerprint, for
    /// every kind of field (missing, text, number, array, object, bool):
    /// a replay finds the key its field matches.
    #[test]
    fn a_field_and_its_observation_have_one_fingerprint() {
        let m = fields(serde_json::json!({
            "manifest_version": 1,
            "accelerators": [{"vendor": "nvidia", "compute_capability": "9.0", "memory_mib": 81920}],
            "packages": [{"name": "vllm", "version": "0.27.1"}],
            "env": {"FLAG": "1"},
            "workload": {"head_dims": [64, 128], "quantized": true},
        }));
        let paths = [
            "packages.vllm.version",
            "packages.vllm",
            "packages.torch.version",
            "accelerators",
            "accelerators.0.compute_capability",
            "accelerators.0.memory_mib",
            "env.FLAG",
            "workload.head_dims",
            "workload.quantized",
            "nothing.here",
        ];
        let mut fingerprints = std::collections::HashSet::new();
        for path in paths {
            let field = m.get(path);
            let fp = fingerprint_of_field(field.as_ref());
            assert_eq!(fp, fingerprint_of_seen(&Observed::of(field.as_ref())), "{path}");
            fingerprints.insert(fp);
        }
        assert!(
            fingerprints.len() >= paths.len() - 1,
            "distinct values, (nearly) distinct fingerprints"
        );
    }

    /// A matched leaf's evidence holds on a manifest whose evidence fields
    /// are seen with the same source, kind and text, and on no other; a
    /// missing field or one whose value is an array leaves the evidence
    /// to the outcome (no key).
    #[test]
    fn a_matched_leaf_checks_its_evidence_where_it_ends() {
        let machine = |vllm: &str, cc: serde_json::Value| {
            fields(serde_json::json!({
                "manifest_version": 1,
                "accelerators": [{"vendor": "nvidia", "compute_capability": cc}],
                "packages": [{"name": "vllm", "version": vllm}],
            }))
        };
        let recorded = machine("0.27.1", serde_json::json!("7.5"));
        let paths = ["packages.vllm.version", "accelerators.0.compute_capability"];
        let evidence = evidence_key(&recorded, paths.iter().copied()).expect("scalar evidence");
        let trace: Vec<Read> = vec![(
            b"packages.vllm.version".as_slice().into(),
            seen(&recorded, "packages.vllm.version"),
        )];
        let mut image = Vec::new();
        assert!(insert(&mut image, &trace, Leaf::Matched { index: 7, evidence: &evidence }));
        let holds = |m: &FieldMap| match replay(&image, m) {
            Some(Found::Matched { index: 7, evidence_holds }) => Some(evidence_holds),
            other => panic!("{other:?}"),
        };
        assert_eq!(holds(&recorded), Some(true));
        assert_eq!(holds(&machine("0.27.1", serde_json::json!("7.5"))), Some(true));
        assert_eq!(
            holds(&machine("0.27.1", serde_json::json!("8.0"))),
            Some(false),
            "another capability"
        );
        assert_eq!(
            replay(&image, &machine("0.27.2", serde_json::json!("7.5"))),
            None,
            "another trace"
        );
        assert!(evidence_key(&recorded, ["accelerators"].into_iter()).is_none(), "an array");
        assert!(evidence_key(&recorded, ["workload.engine"].into_iter()).is_none(), "missing");
        // Cut inside the evidence: no answer rather than a wrong one.
        assert_eq!(replay(&image[..image.len() - 2], &recorded), None);
    }
}
