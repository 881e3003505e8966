//! CUDA arch lists (`TORCH_CUDA_ARCH_LIST`, `torch.cuda.get_arch_list()`,
//! a wheel's cubins) and which GPUs their code runs on.
//!
//! The rules are PyTorch's own (`torch/cuda/__init__.py` at v2.15.0, its
//! `_check_capability` and arch-list comparison), as the bundled rules that
//! judge arch lists read them:
//! - a cubin for X.Y runs on X.Z with Z >= Y (same major);
//! - PTX (`8.0+PTX`, `compute_80`) runs on every GPU at or above its arch;
//! - arch-specific code (`9.0a`, `sm_100a`) runs on its own SM only;
//! - Jetson integrated GPUs (5.3, 6.2, 7.2, 8.7) run only code built for
//!   them;
//! - 10.1 was renamed 11.0 (Thor): code for either runs on both, and 10.0
//!   code does not run on 10.1.

use crate::ComputeCapability;

/// One entry of an arch list: `8.6`, `9.0+PTX`, `sm_90a`, `compute_90`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchEntry {
    /// The architecture the code was built for.
    pub cc: ComputeCapability,
    /// Whether the entry is PTX (JIT-compiled on newer GPUs), not a cubin.
    pub ptx: bool,
}

impl ArchEntry {
    /// Parses one entry; `None` for what is not one (a name, `all`).
    pub fn parse(text: &str) -> Option<ArchEntry> {
        let t = text.trim();
        let (body, ptx) = match t.strip_suffix("+PTX").or_else(|| t.strip_suffix("+ptx")) {
            Some(body) => (body, true),
            None => (t, t.starts_with("compute_")),
        };
        let cc = ComputeCapability::parse(body).ok()?;
        Some(ArchEntry { cc, ptx })
    }

    /// Whether this entry's code runs on a GPU of compute capability `device`.
    pub fn runs_on(&self, device: ComputeCapability) -> bool {
        let (code, dev) = (self.cc.sm(), device.sm());
        if matches!(code, 101 | 110) && matches!(dev, 101 | 110) {
            return true;
        }
        if is_integrated(dev) || self.cc.suffix().is_some() {
            return code == dev;
        }
        if self.ptx {
            return code <= dev;
        }
        self.cc.major == device.major
            && self.cc.minor <= device.minor
            && !(code == 100 && dev == 101)
    }
}

/// Jetson integrated GPUs: no other cubin runs on them.
fn is_integrated(sm: u32) -> bool {
    matches!(sm, 53 | 62 | 72 | 87)
}

/// The entries of one arch-list text, split on `;`, `,` and spaces
/// (`"8.0;9.0+PTX"`, `"sm_80 sm_90"`), what does not parse left out.
pub fn arch_entries(text: &str) -> impl Iterator<Item = (&str, ArchEntry)> {
    text.split([';', ' ', ','])
        .filter(|part| !part.is_empty())
        .filter_map(|part| ArchEntry::parse(part).map(|entry| (part, entry)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc(text: &str) -> ComputeCapability {
        ComputeCapability::parse(text).expect("a capability")
    }

    fn runs(entry: &str, device: &str) -> bool {
        ArchEntry::parse(entry).expect("an entry").runs_on(cc(device))
    }

    #[test]
    fn cubins_run_on_the_same_major_ptx_on_newer() {
        assert!(runs("8.0", "8.6"));
        assert!(!runs("8.6", "8.0"));
        assert!(!runs("8.0", "9.0"), "a cubin does not cross majors");
        assert!(runs("8.0+PTX", "9.0"));
        assert!(runs("compute_80", "12.0"));
        assert!(!runs("9.0+PTX", "7.5"));
    }

    #[test]
    fn arch_specific_jetson_and_thor_code() {
        assert!(runs("9.0a", "9.0"));
        assert!(!runs("10.0a", "10.3"));
        assert!(!runs("7.0", "7.2"), "Jetson Xavier runs only its own code");
        assert!(runs("8.7", "8.7"));
        assert!(runs("11.0", "10.1") && runs("10.1", "11.0"));
        assert!(!runs("10.0", "10.1"));
    }

    #[test]
    fn lists_split_on_any_separator() {
        let parts: alloc::vec::Vec<&str> =
            arch_entries("8.0;9.0+PTX sm_120, all").map(|(t, _)| t).collect();
        assert_eq!(parts, ["8.0", "9.0+PTX", "sm_120"]);
    }
}
