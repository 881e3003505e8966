//! `nvidia-smi topo -m`: which GPUs are joined by NVLink (`NV#` cells).

use crate::error::{Result, fail};

/// The GPU-to-GPU part of the topology matrix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Topology {
    /// GPU columns in the matrix.
    pub(crate) gpus: usize,
    /// Pairs `(i, j)`, `i < j`, joined by a bonded set of NVLinks.
    pub(crate) nvlink_pairs: Vec<(usize, usize)>,
}

impl Topology {
    /// Whether two of `members` (GPU indices) are joined by NVLink.
    pub(crate) fn nvlink_within(&self, members: &[usize]) -> bool {
        self.nvlink_pairs.iter().any(|(a, b)| members.contains(a) && members.contains(b))
    }
}

/// Parses the matrix (terminal escapes, a leading indent as in
/// `vllm collect-env`, NIC columns and the legend are all fine).
pub(crate) fn parse(text: &str) -> Result<Topology> {
    let lines: Vec<String> = text.lines().map(strip_escapes).collect();
    let Some(header_at) =
        lines.iter().position(|l| l.split_whitespace().next().is_some_and(is_device))
    else {
        fail!("no matrix header (a line starting with GPU0)");
    };
    // Device columns (GPU0, GPU1, NIC0, ...) come first; `CPU Affinity` etc. follow.
    let columns: Vec<&str> =
        lines[header_at].split_whitespace().take_while(|c| is_device(c)).collect();
    let gpu_index = |name: &str| name.strip_prefix("GPU").and_then(|n| n.parse::<usize>().ok());
    let gpus = columns.iter().filter(|c| gpu_index(c).is_some()).count();
    let mut nvlink_pairs = Vec::new();
    for line in &lines[header_at + 1..] {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let Some(row) = cells.first().and_then(|c| gpu_index(c)) else {
            continue;
        };
        for (column, cell) in columns.iter().zip(&cells[1..]) {
            let Some(col) = gpu_index(column) else { continue };
            let nvlink = cell
                .strip_prefix("NV")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if nvlink && row != col {
                let pair = (row.min(col), row.max(col));
                if !nvlink_pairs.contains(&pair) {
                    nvlink_pairs.push(pair);
                }
            }
        }
    }
    nvlink_pairs.sort_unstable();
    Ok(Topology { gpus, nvlink_pairs })
}

fn is_device(cell: &str) -> bool {
    ["GPU", "NIC"].iter().any(|p| {
        cell.strip_prefix(p).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Drops ANSI escape sequences (`ESC [ ... letter`): the header is underlined.
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvlink_pair_from_the_real_x2_capture() {
        let text = "\t\u{1b}[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\u{1b}[0m\n\
                    GPU0\t X \tNV18\t0-31\t0\t\tN/A\n\
                    GPU1\tNV18\t X \t0-31\t0\t\tN/A\n\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n";
        let topo = parse(text).expect("parses");
        assert_eq!(topo, Topology { gpus: 2, nvlink_pairs: vec![(0, 1)] });
        assert!(topo.nvlink_within(&[0, 1]));
        assert!(!topo.nvlink_within(&[0]));
    }

    #[test]
    fn pcie_only_with_nics() {
        let text = "\tGPU0\tGPU1\tGPU2\tNIC0\tCPU Affinity\tNUMA Affinity\n\
                    GPU0\t X \tPHB\tSYS\tNV4\t0-15\t0\n\
                    GPU1\tPHB\t X \tNODE\tSYS\t0-15\t0\n\
                    GPU2\tSYS\tNODE\t X \tSYS\t16-31\t1\n\
                    NIC0\tNV4\tSYS\tSYS\t X \n";
        let topo = parse(text).expect("parses");
        assert_eq!(topo, Topology { gpus: 3, nvlink_pairs: vec![] }, "a NIC column is not a GPU");
    }

    #[test]
    fn single_gpu_and_indented_matrix() {
        let one = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-15\t0\t\tN/A\n";
        assert_eq!(parse(one).expect("parses"), Topology { gpus: 1, nvlink_pairs: vec![] });
        let indented = "  \tGPU0\tGPU1\n  GPU0\t X \tNV12\n  GPU1\tNV12\t X \n";
        assert_eq!(parse(indented).expect("parses").nvlink_pairs, vec![(0, 1)]);
    }

    #[test]
    fn not_a_matrix() {
        assert!(parse("command not found").is_err());
    }
}
