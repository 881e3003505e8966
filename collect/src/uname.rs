//! `uname -a`: the kernel release and the machine architecture. The second
//! word is the host name: it is read only so that it can be kept out.

use pitfall_contract::normalize::canonical_arch;

/// What `uname -a` tells (the host name only to scrub it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Uname {
    /// Kernel release, e.g. `6.8.0-1015-aws`.
    pub(crate) kernel: Option<String>,
    /// Normalised machine architecture, e.g. `x86_64`.
    pub(crate) arch: Option<String>,
    /// The node name: never copied into a manifest.
    pub(crate) hostname: Option<String>,
}

const ARCHES: &[&str] =
    &["x86_64", "aarch64", "arm64", "ppc64le", "s390x", "riscv64", "armv7l", "i686", "amd64"];

/// Finds the `uname -a` line (`Linux <host> <release> #...`) in `text` and
/// parses it; `None` when there is none.
pub(crate) fn parse(text: &str) -> Option<Uname> {
    text.lines().find_map(parse_line)
}

fn parse_line(line: &str) -> Option<Uname> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < 4 || words[0] != "Linux" || !words[3..].iter().any(|w| w.starts_with('#')) {
        return None;
    }
    // `#1 SMP PREEMPT_DYNAMIC <date>` has a varying number of words, and GNU
    // uname drops `unknown` fields: the machine is the last known arch word.
    let arch = words[3..].iter().rev().find(|w| ARCHES.contains(w)).map(|w| canonical_arch(w));
    Some(Uname { kernel: Some(words[2].to_owned()), arch, hostname: Some(words[1].to_owned()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_line() {
        let u = parse("ID=ubuntu\n\nLinux vm 6.18.44-fc-v657-gpu #1 SMP PREEMPT_DYNAMIC @0 x86_64 x86_64 x86_64 GNU/Linux\n").expect("found");
        assert_eq!(u.kernel.as_deref(), Some("6.18.44-fc-v657-gpu"));
        assert_eq!(u.arch.as_deref(), Some("x86_64"));
        assert_eq!(u.hostname.as_deref(), Some("vm"));
    }

    #[test]
    fn arm_with_unknown_fields_dropped() {
        let u = parse("Linux ip-10-0-0-1 6.8.0-1015-aws #16-Ubuntu SMP Mon Aug 19 19:38:17 UTC 2024 aarch64 GNU/Linux").expect("found");
        assert_eq!(u.arch.as_deref(), Some("aarch64"));
        assert_eq!(u.kernel.as_deref(), Some("6.8.0-1015-aws"));
        assert_eq!(parse("Linux is a kernel"), None);
    }
}
