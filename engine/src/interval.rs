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

    /// Appends the tags of the ranges that contain `v`.
    pub(crate) fn stab(&self, v: &Version, out: &mut Vec<u32>) {
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
        for q in 0..55 {
            for probe in [format!("0.{q}"), format!("0.{q}rc1"), format!("0.{q}.1")] {
                let probe = v(&probe);
                let mut got = Vec::new();
                tree.stab(&probe, &mut got);
                got.sort_unstable();
                let want: Vec<u32> = ranges
                    .iter()
                    .filter(|(r, _)| r.contains(&probe))
                    .map(|(_, t)| *t)
                    .collect();
                assert_eq!(got, want, "at {probe}");
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
