//! A rule's memo tree laid out in one allocation, for replay.
//!
//! `crate::memo` grows each rule's decision tree as nodes, each with its
//! path, its branches and their observed texts in heap blocks of their
//! own. A check replays some fifty rules' trees, each one among thousands
//! and touched once a check, so a replay that walked from block to block
//! waited on memory at each: the path, the branch list, every branch's
//! text it compared, the next node's path, and so on (round 12: replays
//! took three times as long as the same replays asked again at once).
//! The image holds the same tree as bytes: a node's path and its branches'
//! keys and texts side by side, each child after its parent, so a replay
//! reads a few consecutive cache lines, and a leaf that concluded clear
//! (most of them) is answered from the image alone.
//!
//! Layout (little-endian; a child's offset counts from the image's start
//! and is always past its parent's):
//! - a read: [`READ`], the path's length (u32), the path, the number of
//!   branches (u32), then each branch's key: the kind seen (u8), whether a
//!   text and a number were seen ([`HAS_TEXT`], [`HAS_NUMBER`]), the
//!   length seen (u64), the number's bits (u64), the child's offset (u32),
//!   the text's length (u32) and the text; then the children.
//! - a leaf that concluded clear: [`CLEAR`].
//! - any other leaf: [`OUTCOME`], its index in the memo's outcomes (u32).

use pitfall_sdk::model::fields::{Field, FieldKind, FieldMap};
use pitfall_sdk::model::session::Observed;

const READ: u8 = 0;
const CLEAR: u8 = 1;
const OUTCOME: u8 = 2;

const HAS_TEXT: u8 = 1;
const HAS_NUMBER: u8 = 2;

/// A branch key's fixed part: kind, flags, length, number, child, text length.
const KEY: usize = 1 + 1 + 8 + 8 + 4 + 4;
/// A read node's fixed part: tag, path length, branch count.
const READ_HEADER: usize = 1 + 4 + 4;
/// The largest leaf.
const LEAF: usize = 1 + 4;

/// A rule's decision tree, as `crate::memo` grows it: a node is the path
/// read next, a branch what was seen there, a leaf an index into the
/// memo's outcomes.
#[derive(Debug)]
pub(crate) enum Node {
    /// The rule reads `path` next; what it saw decides the branch.
    Read { path: Box<[u8]>, branches: Vec<(Observed, Node)> },
    /// The rule concluded: the outcome at this index.
    Leaf(u32),
}

/// Where a replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// A leaf that concluded clear.
    Clear,
    /// The leaf with the outcome at this index.
    Outcome(u32),
}

/// The image of the tree at `root`; `is_clear` tells which outcomes
/// concluded clear. `None` if the image would not fit u32 offsets (a tree
/// of gigabytes, which no memo budget admits).
pub(crate) fn encode(root: &Node, is_clear: &dyn Fn(u32) -> bool) -> Option<Box<[u8]>> {
    let mut out = Vec::new();
    write(root, is_clear, &mut out)?;
    Some(out.into_boxed_slice())
}

/// What one read of a trace adds to an image at most (its node and its
/// branch), and a leaf: for the memo's budget.
pub(crate) fn bytes_of_read(path: &[u8], seen: &Observed) -> usize {
    READ_HEADER + path.len() + KEY + seen.text().map_or(0, str::len)
}

/// What a trace's leaf adds to an image at most.
pub(crate) const BYTES_OF_LEAF: usize = LEAF;

fn write(node: &Node, is_clear: &dyn Fn(u32) -> bool, out: &mut Vec<u8>) -> Option<()> {
    match node {
        Node::Leaf(i) if is_clear(*i) => out.push(CLEAR),
        Node::Leaf(i) => {
            out.push(OUTCOME);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Node::Read { path, branches } => {
            out.push(READ);
            out.extend_from_slice(&u32::try_from(path.len()).ok()?.to_le_bytes());
            out.extend_from_slice(path);
            out.extend_from_slice(&u32::try_from(branches.len()).ok()?.to_le_bytes());
            let mut child_slots = Vec::with_capacity(branches.len());
            for (seen, _) in branches {
                let text = seen.text().unwrap_or_default();
                let flags = if seen.text().is_some() { HAS_TEXT } else { 0 }
                    | if seen.number_bits().is_some() { HAS_NUMBER } else { 0 };
                out.push(seen.kind() as u8);
                out.push(flags);
                out.extend_from_slice(&(seen.len() as u64).to_le_bytes());
                out.extend_from_slice(&seen.number_bits().unwrap_or(0).to_le_bytes());
                child_slots.push(out.len());
                out.extend_from_slice(&[0; 4]);
                out.extend_from_slice(&u32::try_from(text.len()).ok()?.to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            for ((_, child), slot) in branches.iter().zip(child_slots) {
                let at = u32::try_from(out.len()).ok()?;
                out[slot..slot + 4].copy_from_slice(&at.to_le_bytes());
                write(child, is_clear, out)?;
            }
        }
    }
    Some(())
}

fn u32_at(image: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(image.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(image: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(image.get(at..at + 8)?.try_into().ok()?))
}

/// The leaf a rule that reads `fields` would reach, if every read sees
/// what one recorded run saw there (`None` otherwise, or on an image this
/// module did not write).
pub(crate) fn replay(image: &[u8], fields: &FieldMap) -> Option<Found> {
    let mut at = 0;
    loop {
        match *image.get(at)? {
            CLEAR => return Some(Found::Clear),
            OUTCOME => return Some(Found::Outcome(u32_at(image, at + 1)?)),
            READ => {
                let path_len = u32_at(image, at + 1)? as usize;
                let path = image.get(at + 5..at + 5 + path_len)?;
                let mut key = at + 5 + path_len;
                let branches = u32_at(image, key)?;
                key += 4;
                let field = fields.get_bytes(path);
                let mut child = None;
                for _ in 0..branches {
                    let text_len = u32_at(image, key + 22)? as usize;
                    let text = image.get(key + KEY..key + KEY + text_len)?;
                    if key_matches(image, key, text, field.as_ref())? {
                        child = Some(u32_at(image, key + 18)? as usize);
                        break;
                    }
                    key += KEY + text_len;
                }
                // Children follow their parents: a walk only goes forward.
                at = child.filter(|&c| c > at)?;
            }
            _ => return None,
        }
    }
}

/// Whether a rule would see `field` as the branch key at `key` records it:
/// `Observed::matches`, over the image's bytes.
fn key_matches(image: &[u8], key: usize, text: &[u8], field: Option<&Field<'_>>) -> Option<bool> {
    let kind = *image.get(key)?;
    let Some(f) = field else { return Some(kind == FieldKind::Missing as u8) };
    let flags = *image.get(key + 1)?;
    let same_number = match f.number {
        Some(n) => flags & HAS_NUMBER != 0 && n.to_bits() == u64_at(image, key + 10)?,
        None => flags & HAS_NUMBER == 0,
    };
    let same_text = match f.text.as_deref() {
        Some(t) => flags & HAS_TEXT != 0 && t.as_bytes() == text,
        None => flags & HAS_TEXT == 0,
    };
    Some(f.kind as u8 == kind && f.len as u64 == u64_at(image, key + 2)? && same_number && same_text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::memo::insert;

    use pitfall_sdk::model::normalize::Enrichment;
    use pitfall_sdk::model::manifest_from_value;

    fn fields(json: serde_json::Value) -> FieldMap {
        let manifest = manifest_from_value(json).expect("valid manifest");
        FieldMap::new(Arc::new(manifest), &Enrichment::default())
    }

    fn seen(fields: &FieldMap, path: &str) -> Observed {
        Observed::of(fields.get(path).as_ref())
    }

    /// The walk the image stands for, over the nodes themselves.
    fn walk(mut node: &Node, fields: &FieldMap) -> Option<u32> {
        loop {
            match node {
                Node::Leaf(i) => return Some(*i),
                Node::Read { path, branches } => {
                    let field = fields.get_bytes(path);
                    node = &branches.iter().find(|(seen, _)| seen.matches(field.as_ref()))?.1;
                }
            }
        }
    }

    /// A tree grown from machines that differ where a rule looks (a text,
    /// a number, an array's length, a field that is missing or null) and
    /// the image of it replay every machine, and machines never seen, to
    /// the same leaf as a walk over the nodes, clear leaves told apart.
    #[test]
    fn an_image_replays_every_manifest_to_the_leaf_its_tree_does() {
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
        ];
        // Each machine's trace: the vLLM version (a text, or missing), then
        // (when there is one) the first GPU's capability, the number of
        // GPUs (an array's length) and the first one's memory (a number).
        let paths = ["packages.vllm.version", "accelerators.0.compute_capability", "accelerators", "accelerators.0.memory_mib"];
        let mut root: Option<Node> = None;
        for (leaf, m) in seen_machines.iter().enumerate() {
            let reads = if m.get("packages.vllm.version").is_some() { paths.len() } else { 1 };
            let trace = paths.iter().take(reads).map(|p| (p.as_bytes().into(), seen(m, p))).collect();
            assert!(insert(&mut root, trace, leaf as u32), "machine {leaf} is a new trace");
        }
        let root = root.expect("grown");
        let clear = |i: u32| i.is_multiple_of(2);
        let image = encode(&root, &clear).expect("fits");
        let unseen = [
            machine(Some("0.27.2"), "9.0", 1, 81920),
            machine(Some("0.27.1"), "9.0", 3, 81920),
            machine(Some("0.27.1"), "9.0", 1, 40960),
            machine(Some("0.26.0"), "8.0", 2, 81920),
            machine(None, "9.0", 1, 81920),
        ];
        let mut hits = 0;
        for m in seen_machines.iter().chain(&unseen) {
            let expected = walk(&root, m).map(|i| if clear(i) { Found::Clear } else { Found::Outcome(i) });
            assert_eq!(replay(&image, m), expected);
            hits += usize::from(expected.is_some());
        }
        assert_eq!(hits, seen_machines.len() + 1, "every machine seen, and the unseen one without vLLM");
        // Bytes this module did not write answer nothing, and never loop.
        assert_eq!(replay(&[], &seen_machines[0]), None);
        assert_eq!(replay(&image[..image.len() / 2], &seen_machines[0]), None);
        assert_eq!(replay(&[9, 0, 0], &seen_machines[0]), None);
    }
}
