//! A static centred interval tree over versions: which of many ranges
//! contain one version, in time that grows with the answer (plus the
//! tree's depth), not with the number of ranges. The candidate index uses
//! it for version and compute-capability selectors, so a registry of
//! thousands of rules about old vLLM releases costs a current vLLM nothing.

use pitfall_version::Version;

/// A range of versions, both ends inclusive, `None` for unbounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Range {
    pub(crate) lower: Option<Version>,
    pub(crate) upper: Option<Version>,
}

impl Range {
    fn above_lower(&self, v: &Version) -> bool {
        self.lower.as_ref().is_none_or(|l| l <= v)
    }

    fn below_upper(&self, v: &Version) -> bool {
        self.upper.as_ref().is_none_or(|u| v <= u)
    }

    #[cfg(test)]
    fn contains(&self, v: &Version) -> bool {
        self.above_lower(v) && self.below_upper(v)
    }
}

#[derive(Debug, Clone)]
struct Node {
    center: Version,
    /// The ranges that contain `center`, by ascending lower end (unbounded first).
    by_lower: Vec<(Range, u32)>,
    /// The same ranges by descending upper end (unbounded first).
    by_upper: Vec<(Range, u32)>,
    left: Option<usize>,
    right: Option<usize>,
}

/// Ranges tagged with a `u32` (a rule's position), built once.
#[derive(Debug, Clone, Default)]
pub(crate) struct IntervalTree {
    nodes: Vec<Node>,
    root: Option<usize>,
    /// Every tag, for queries that cannot be decided.
    all: Vec<u32>,
    /// The same tree over packed keys, when every end packs
    /// ([`Version::packed_public`]) and none has a local label: a stab of a
    /// version that packs compares integers in one array, where the
    /// nodes' lists hold a pair of `Version`s (a few hundred bytes) per
    /// range, scanned in order: a check stabs a tree for each package it
    /// has rules about, each tree among thousands out of the caches.
    packed: Option<PackedTree>,
    /// The ranges, scanned one by one, when built without a tree
    /// ([`crate::Tuning::interval_tree`] off).
    linear: Vec<(Range, u32)>,
}

/// A [`Node`] over packed keys: the tags of the ranges unbounded at an
/// end (which come first in the node's list for that end), then the
/// others as (key, tag), in the node's order.
#[derive(Debug, Clone)]
struct PackedNode {
    center: u128,
    /// Tags of ranges here without a lower end.
    lower_unbounded: Vec<u32>,
    /// The others, by ascending lower end.
    by_lower: Vec<(u128, u32)>,
    /// Tags of ranges here without an upper end.
    upper_unbounded: Vec<u32>,
    /// The others, by descending upper end.
    by_upper: Vec<(u128, u32)>,
    left: Option<usize>,
    right: Option<usize>,
}

/// A range end's packed key, if it has one and no local label.
fn packed_end(end: &Version) -> Option<u128> {
    end.local().is_none().then(|| end.packed_public()).flatten()
}

/// A node's list of ends, in order, as the tags of its unbounded ends and
/// the (key, tag) of the others; `None` if an end does not pack.
type SplitEnds = (Vec<u32>, Vec<(u128, u32)>);

fn split_ends<'v>(ends: impl Iterator<Item = (Option<&'v Version>, u32)>) -> Option<SplitEnds> {
    let (mut unbounded, mut bounded) = (Vec::new(), Vec::new());
    for (end, tag) in ends {
        match end {
            None => unbounded.push(tag),
            Some(v) => bounded.push((packed_end(v)?, tag)),
        }
    }
    Some((unbounded, bounded))
}

impl PackedNode {
    /// The node's packed form; `None` if any of its ends does not pack.
    fn of(node: &Node) -> Option<PackedNode> {
        let center = packed_end(&node.center)?;
        let (lower_unbounded, by_lower) =
            split_ends(node.by_lower.iter().map(|(r, t)| (r.lower.as_ref(), *t)))?;
        let (upper_unbounded, by_upper) =
            split_ends(node.by_upper.iter().map(|(r, t)| (r.upper.as_ref(), *t)))?;
        Some(PackedNode {
            center,
            lower_unbounded,
            by_lower,
            upper_unbounded,
            by_upper,
            left: node.left,
            right: node.right,
        })
    }
}

/// A packed tree in one array of `u32` words, its nodes in the tree's
/// preorder (a node's left child right after its lists), each node its
/// [`HEADER`] words then its lists: the tags of its lower-unbounded
/// ranges; its other ranges' lower keys (four words each), then their
/// tags; the same two for the upper ends. A stab reads each node it
/// passes in one run of words, where nodes with a list per field cost a
/// cache miss per list among thousands of trees.
#[derive(Debug, Clone)]
struct PackedTree {
    words: Box<[u32]>,
}

/// A node's header: its centre's key (four words), the lengths of its four
/// lists, and the offsets of its children ([`NO_CHILD`] for none).
const HEADER: usize = 10;
const NO_CHILD: u32 = u32::MAX;

/// A key's words, low first.
fn key_words(key: u128) -> [u32; 4] {
    [key as u32, (key >> 32) as u32, (key >> 64) as u32, (key >> 96) as u32]
}

fn key_at(words: &[u32], at: usize) -> u128 {
    let w = &words[at..at + 4];
    u128::from(w[0]) | u128::from(w[1]) << 32 | u128::from(w[2]) << 64 | u128::from(w[3]) << 96
}

/// How many of `n` keys from word `at` on come before the first for
/// which `keep` fails (the lists are sorted so that they all do, then none).
fn keys_while(words: &[u32], at: usize, n: usize, keep: impl Fn(u128) -> bool) -> usize {
    (0..n).take_while(|&i| keep(key_at(words, at + 4 * i))).count()
}

impl PackedNode {
    fn words(&self) -> usize {
        HEADER
            + self.lower_unbounded.len()
            + 5 * self.by_lower.len()
            + self.upper_unbounded.len()
            + 5 * self.by_upper.len()
    }
}

impl PackedTree {
    /// Nodes given in preorder (as [`IntervalTree::build`] pushes them);
    /// `None` if an end does not pack or the tree passes `u32` offsets.
    fn of(nodes: &[Node]) -> Option<PackedTree> {
        let packed: Vec<PackedNode> = nodes.iter().map(PackedNode::of).collect::<Option<_>>()?;
        let mut offsets = Vec::with_capacity(packed.len());
        let mut total = 0usize;
        for node in &packed {
            offsets.push(u32::try_from(total).ok().filter(|&o| o != NO_CHILD)?);
            total += node.words();
        }
        let link = |child: Option<usize>| child.map_or(NO_CHILD, |c| offsets[c]);
        let mut words = Vec::with_capacity(total);
        let len = |n: usize| u32::try_from(n).ok();
        for node in &packed {
            words.extend(key_words(node.center));
            words.extend([
                len(node.lower_unbounded.len())?,
                len(node.by_lower.len())?,
                len(node.upper_unbounded.len())?,
                len(node.by_upper.len())?,
                link(node.left),
                link(node.right),
            ]);
            for (unbounded, bounded) in
                [(&node.lower_unbounded, &node.by_lower), (&node.upper_unbounded, &node.by_upper)]
            {
                words.extend_from_slice(unbounded);
                words.extend(bounded.iter().flat_map(|(key, _)| key_words(*key)));
                words.extend(bounded.iter().map(|(_, tag)| *tag));
            }
        }
        Some(PackedTree { words: words.into_boxed_slice() })
    }

    /// [`IntervalTree::stab`] over packed keys: the same walk, comparing
    /// integers, from the root (the first node) on.
    fn stab(&self, v: u128, out: &mut Vec<u32>) {
        let words = &self.words[..];
        let mut at = if words.is_empty() { NO_CHILD } else { 0 };
        while at != NO_CHILD {
            let node = at as usize;
            let count = |i: usize| words[node + 4 + i] as usize;
            let (lower_unbounded, by_lower, upper_unbounded, by_upper) =
                (count(0), count(1), count(2), count(3));
            let lower = node + HEADER;
            let lower_keys = lower + lower_unbounded;
            let lower_tags = lower_keys + 4 * by_lower;
            match v.cmp(&key_at(words, node)) {
                std::cmp::Ordering::Less => {
                    let k = keys_while(words, lower_keys, by_lower, |lower| lower <= v);
                    out.extend_from_slice(&words[lower..lower_keys]);
                    out.extend_from_slice(&words[lower_tags..lower_tags + k]);
                    at = words[node + 8];
                }
                std::cmp::Ordering::Greater => {
                    let upper = lower_tags + by_lower;
                    let upper_keys = upper + upper_unbounded;
                    let upper_tags = upper_keys + 4 * by_upper;
                    let k = keys_while(words, upper_keys, by_upper, |upper| v <= upper);
                    out.extend_from_slice(&words[upper..upper_keys]);
                    out.extend_from_slice(&words[upper_tags..upper_tags + k]);
                    at = words[node + 9];
                }
                std::cmp::Ordering::Equal => {
                    out.extend_from_slice(&words[lower..lower_keys]);
                    out.extend_from_slice(&words[lower_tags..lower_tags + by_lower]);
                    at = NO_CHILD;
                }
            }
        }
    }
}

impl IntervalTree {
    /// Builds the tree. Every range must have at least one finite end
    /// (the caller keeps unbounded ones elsewhere: they contain everything).
    #[cfg(test)]
    pub(crate) fn new(ranges: Vec<(Range, u32)>) -> IntervalTree {
        IntervalTree::tuned(ranges, true, true)
    }

    /// [`IntervalTree::new`], or without the tree (`tree` false: a stab
    /// scans every range), or without its packed form (`packed` false).
    pub(crate) fn tuned(ranges: Vec<(Range, u32)>, tree: bool, packed: bool) -> IntervalTree {
        let mut built = IntervalTree {
            all: ranges.iter().map(|(_, t)| *t).collect(),
            ..IntervalTree::default()
        };
        if !tree {
            built.linear = ranges;
            return built;
        }
        built.root = built.build(ranges);
        // The node lists keep their order (unbounded ends first, then by
        // end), so the packed lists are the same lists.
        debug_assert!(built.root.is_none_or(|root| root == 0), "the root is the first node pushed");
        if packed {
            built.packed = PackedTree::of(&built.nodes);
        }
        built
    }

    fn build(&mut self, ranges: Vec<(Range, u32)>) -> Option<usize> {
        let mut ends: Vec<&Version> =
            ranges.iter().flat_map(|(r, _)| r.lower.iter().chain(r.upper.iter())).collect();
        if ends.is_empty() {
            return None;
        }
        ends.sort_unstable();
        let center = ends[ends.len() / 2].clone();
        let (mut left, mut right, mut here) = (Vec::new(), Vec::new(), Vec::new());
        for (range, tag) in ranges {
            if !range.below_upper(&center) {
                // Its upper end is below the centre: entirely to the left.
                left.push((range, tag));
            } else if !range.above_lower(&center) {
                right.push((range, tag));
            } else {
                here.push((range, tag));
            }
        }
        // `center` is an end of some range, and a range holds its own ends
        // (an empty one, lower > upper, is never built: see the index), so
        // `here` is not empty and each child has fewer ranges than this node.
        let mut by_lower = here.clone();
        by_lower.sort_by(|(a, _), (b, _)| a.lower.cmp(&b.lower));
        let mut by_upper = here;
        by_upper.sort_by(|(a, _), (b, _)| match (&a.upper, &b.upper) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => y.cmp(x),
        });
        let at = self.nodes.len();
        self.nodes.push(Node { center, by_lower, by_upper, left: None, right: None });
        let left = self.build(left);
        let right = self.build(right);
        self.nodes[at].left = left;
        self.nodes[at].right = right;
        Some(at)
    }

    /// Appends the tags of the ranges that contain `v`, a version without
    /// a local label (ranges bound public versions).
    pub(crate) fn stab(&self, v: &Version, out: &mut Vec<u32>) {
        if !self.linear.is_empty() {
            let holds = |r: &Range| r.above_lower(v) && r.below_upper(v);
            return out.extend(self.linear.iter().filter(|(r, _)| holds(r)).map(|(_, t)| *t));
        }
        if let (Some(packed), Some(key)) = (&self.packed, packed_end(v)) {
            return packed.stab(key, out);
        }
        let mut at = self.root;
        while let Some(i) = at {
            let node = &self.nodes[i];
            match v.cmp(&node.center) {
                std::cmp::Ordering::Less => {
                    out.extend(
                        node.by_lower.iter().take_while(|(r, _)| r.above_lower(v)).map(|(_, t)| *t),
                    );
                    at = node.left;
                }
                std::cmp::Ordering::Greater => {
                    out.extend(
                        node.by_upper.iter().take_while(|(r, _)| r.below_upper(v)).map(|(_, t)| *t),
                    );
                    at = node.right;
                }
                std::cmp::Ordering::Equal => {
                    out.extend(node.by_lower.iter().map(|(_, t)| *t));
                    at = None;
                }
            }
        }
    }

    /// [`IntervalTree::stab`] on the tree without its packed form (tests
    /// hold the two to each other).
    #[cfg(test)]
    fn stab_unpacked(&self, v: &Version, out: &mut Vec<u32>) {
        IntervalTree { packed: None, ..self.clone() }.stab(v, out)
    }

    /// Every tag (for a version that cannot be decided).
    pub(crate) fn all(&self) -> &[u32] {
        &self.all
    }

    /// Whether the tree holds no range.
    pub(crate) fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}

/// Whether a range admits at least one version (lower ≤ upper).
pub(crate) fn non_empty(range: &Range) -> bool {
    match (&range.lower, &range.upper) {
        (Some(l), Some(u)) => l <= u,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn range(lower: Option<&str>, upper: Option<&str>) -> Range {
        Range { lower: lower.map(v), upper: upper.map(v) }
    }

    #[test]
    fn a_stab_finds_exactly_the_ranges_that_contain_the_version() {
        // A deterministic spread of ranges, compared with a linear scan.
        let mut ranges = Vec::new();
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for tag in 0..500u32 {
            let a = next(40);
            let b = a + next(10);
            let r = match next(4) {
                0 => range(None, Some(&format!("0.{b}"))),
                1 => range(Some(&format!("0.{a}")), None),
                _ => range(Some(&format!("0.{a}")), Some(&format!("0.{b}"))),
            };
            ranges.push((r, tag));
        }
        let tree = IntervalTree::new(ranges.clone());
        assert_eq!(tree.all().len(), 500);
        assert!(tree.packed.is_some(), "every end of these ranges packs");
        // One end that does not pack (a segment past 16 bits): the tree
        // then answers from its versions alone.
        let mut wide = ranges.clone();
        wide.push((range(Some("0.70000"), None), 500));
        let wide = IntervalTree::new(wide);
        assert!(wide.packed.is_none());
        // Built without a tree, or without its packed form, as a tuned
        // engine builds it: the same answers.
        let linear = IntervalTree::tuned(ranges.clone(), false, true);
        let unpacked = IntervalTree::tuned(ranges.clone(), true, false);
        assert!(linear.root.is_none() && unpacked.packed.is_none());
        for q in 0..55 {
            for probe in [
                format!("0.{q}"),
                format!("0.{q}rc1"),
                format!("0.{q}.1"),
                format!("0.{q}.post2.dev1"),
                "0.80000".to_owned(),
            ] {
                let probe = v(&probe);
                let want: Vec<u32> =
                    ranges.iter().filter(|(r, _)| r.contains(&probe)).map(|(_, t)| *t).collect();
                let stabbed = |tree: &IntervalTree, packed: bool| {
                    let mut got = Vec::new();
                    if packed {
                        tree.stab(&probe, &mut got)
                    } else {
                        tree.stab_unpacked(&probe, &mut got)
                    }
                    got.sort_unstable();
                    got
                };
                assert_eq!(stabbed(&tree, true), want, "at {probe}");
                assert_eq!(stabbed(&tree, false), want, "at {probe}, unpacked");
                assert_eq!(stabbed(&linear, true), want, "at {probe}, scanned");
                assert_eq!(stabbed(&unpacked, true), want, "at {probe}, built unpacked");
                let mut wide_want = want.clone();
                if probe >= v("0.70000") {
                    wide_want.push(500);
                }
                assert_eq!(stabbed(&wide, true), wide_want, "at {probe}, one end unpacked");
            }
        }
    }

    /// Stabs `tree` at `probe` packed and unpacked, sorted.
    fn stab_both(tree: &IntervalTree, probe: &Version) -> (Vec<u32>, Vec<u32>) {
        let (mut packed, mut unpacked) = (Vec::new(), Vec::new());
        tree.stab(probe, &mut packed);
        tree.stab_unpacked(probe, &mut unpacked);
        packed.sort_unstable();
        unpacked.sort_unstable();
        (packed, unpacked)
    }

    #[test]
    fn the_one_array_tree_answers_like_its_nodes_at_every_shape() {
        // Shapes the spread above rarely makes: a lone range (the root
        // alone), many ranges through one centre (long lists in one node,
        // with equal keys), disjoint ranges (many nodes, each holding one
        // range), and ends at the probes themselves.
        let lone = vec![(range(Some("1.2"), Some("1.4")), 9)];
        let nested: Vec<_> = (0..40u32)
            .map(|i| (range(Some(&format!("1.{}", i % 7)), Some(&format!("3.{}", i % 5))), i))
            .collect();
        let chain: Vec<_> = (0..64u32)
            .map(|i| (range(Some(&format!("{i}.0")), Some(&format!("{i}.5"))), i))
            .collect();
        let one_sided: Vec<_> = (0..30u32)
            .map(|i| {
                if i % 2 == 0 {
                    (range(None, Some(&format!("2.{i}"))), i)
                } else {
                    (range(Some(&format!("2.{i}")), None), i)
                }
            })
            .collect();
        for ranges in [lone, nested, chain, one_sided] {
            let tree = IntervalTree::new(ranges.clone());
            let packed = tree.packed.as_ref().unwrap_or_else(|| panic!("every end packs"));
            assert_eq!(
                packed.words.len(),
                tree.nodes
                    .iter()
                    .map(|n| PackedNode::of(n).map_or(0, |p| p.words()))
                    .sum::<usize>()
            );
            for major in 0..66 {
                for minor in ["0", "1", "2", "4", "5", "5.1", "6", "30", "0rc1"] {
                    let probe = v(&format!("{major}.{minor}"));
                    let want: Vec<u32> = ranges
                        .iter()
                        .filter(|(r, _)| r.contains(&probe))
                        .map(|(_, t)| *t)
                        .collect();
                    let (packed, unpacked) = stab_both(&tree, &probe);
                    assert_eq!(packed, want, "packed, at {probe}");
                    assert_eq!(unpacked, want, "unpacked, at {probe}");
                }
            }
        }
    }

    #[test]
    fn empty_trees_and_ranges() {
        let tree = IntervalTree::new(Vec::new());
        let mut out = Vec::new();
        tree.stab(&v("1.0"), &mut out);
        assert!(out.is_empty() && tree.is_empty());
        assert!(!non_empty(&range(Some("2"), Some("1"))));
        assert!(non_empty(&range(Some("1"), Some("1"))));
    }
}
