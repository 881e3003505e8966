//! A static centred interval tree over versions: which of many ranges
//! contain one version, in time that grows with the answer (plus the
//! tree's depth), not with the number of ranges. The candidate index uses
//! it for version and compute-capability selectors, so a registry of
//! thousands of rules about old vLLM releases costs a current vLLM nothing.

use pitfall_sdk::version::Version;

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
    /// version that packs compares integers in flat lists, where the
    /// nodes' lists hold a pair of `Version`s (a few hundred bytes) per
    /// range, scanned in order: a check stabs a tree for each package it
    /// has rules about, each tree among thousands out of the caches.
    packed: Option<Vec<PackedNode>>,
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
        let (lower_unbounded, by_lower) = split_ends(node.by_lower.iter().map(|(r, t)| (r.lower.as_ref(), *t)))?;
        let (upper_unbounded, by_upper) = split_ends(node.by_upper.iter().map(|(r, t)| (r.upper.as_ref(), *t)))?;
        Some(PackedNode { center, lower_unbounded, by_lower, upper_unbounded, by_upper, left: node.left, right: node.right })
    }
}

impl IntervalTree {
    /// Builds the tree. Every range must have at least one finite end
    /// (the caller keeps unbounded ones elsewhere: they contain everything).
    pub(crate) fn new(ranges: Vec<(Range, u32)>) -> IntervalTree {
        let mut tree = IntervalTree {
            all: ranges.iter().map(|(_, t)| *t).collect(),
            ..IntervalTree::default()
        };
        tree.root = tree.build(ranges);
        // The node lists keep their order (unbounded ends first, then by
        // end), so the packed lists are the same lists.
        tree.packed = tree.nodes.iter().map(PackedNode::of).collect();
        tree
    }

    fn build(&mut self, ranges: Vec<(Range, u32)>) -> Option<usize> {
        let mut ends: Vec<&Version> = ranges
            .iter()
            .flat_map(|(r, _)| r.lower.iter().chain(r.upper.iter()))
            .collect();
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
        self.nodes.push(Node {
            center,
            by_lower,
            by_upper,
            left: None,
            right: None,
        });
        let left = self.build(left);
        let right = self.build(right);
        self.nodes[at].left = left;
        self.nodes[at].right = right;
        Some(at)
    }

    /// Appends the tags of the ranges that contain `v`, a version without
    /// a local label (ranges bound public versions).
    pub(crate) fn stab(&self, v: &Version, out: &mut Vec<u32>) {
        if let (Some(nodes), Some(key)) = (&self.packed, packed_end(v)) {
            return stab_packed(nodes, self.root, key, out);
        }
        let mut at = self.root;
        while let Some(i) = at {
            let node = &self.nodes[i];
            match v.cmp(&node.center) {
                std::cmp::Ordering::Less => {
                    out.extend(
                        node.by_lower
                            .iter()
                            .take_while(|(r, _)| r.above_lower(v))
                            .map(|(_, t)| *t),
                    );
                    at = node.left;
                }
                std::cmp::Ordering::Greater => {
                    out.extend(
                        node.by_upper
                            .iter()
                            .take_while(|(r, _)| r.below_upper(v))
                            .map(|(_, t)| *t),
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

/// [`IntervalTree::stab`] over packed keys: the same walk, comparing
/// integers.
fn stab_packed(nodes: &[PackedNode], root: Option<usize>, v: u128, out: &mut Vec<u32>) {
    let mut at = root;
    while let Some(i) = at {
        let node = &nodes[i];
        match v.cmp(&node.center) {
            std::cmp::Ordering::Less => {
                out.extend_from_slice(&node.lower_unbounded);
                out.extend(node.by_lower.iter().take_while(|(lower, _)| *lower <= v).map(|(_, t)| *t));
                at = node.left;
            }
            std::cmp::Ordering::Greater => {
                out.extend_from_slice(&node.upper_unbounded);
                out.extend(node.by_upper.iter().take_while(|(upper, _)| v <= *upper).map(|(_, t)| *t));
                at = node.right;
            }
            std::cmp::Ordering::Equal => {
                out.extend_from_slice(&node.lower_unbounded);
                out.extend(node.by_lower.iter().map(|(_, t)| *t));
                at = None;
            }
        }
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
        Range {
            lower: lower.map(v),
            upper: upper.map(v),
        }
    }

    #[test]
    fn a_stab_finds_exactly_the_ranges_that_contain_the_version() {
        // A deterministic spread of ranges, compared with a linear scan.
        let mut ranges = Vec::new();
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
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
        for q in 0..55 {
            for probe in [format!("0.{q}"), format!("0.{q}rc1"), format!("0.{q}.1"), format!("0.{q}.post2.dev1"), "0.80000".to_owned()] {
                let probe = v(&probe);
                let want: Vec<u32> = ranges
                    .iter()
                    .filter(|(r, _)| r.contains(&probe))
                    .map(|(_, t)| *t)
                    .collect();
                let stabbed = |tree: &IntervalTree, packed: bool| {
                    let mut got = Vec::new();
                    if packed { tree.stab(&probe, &mut got) } else { tree.stab_unpacked(&probe, &mut got) }
                    got.sort_unstable();
                    got
                };
                assert_eq!(stabbed(&tree, true), want, "at {probe}");
                assert_eq!(stabbed(&tree, false), want, "at {probe}, unpacked");
                let mut wide_want = want.clone();
                if probe >= v("0.70000") {
                    wide_want.push(500);
                }
                assert_eq!(stabbed(&wide, true), wide_want, "at {probe}, one end unpacked");
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
