//! `/proc/meminfo`: the host's memory.

/// `MemTotal` in MiB.
pub(crate) fn total_mib(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next().unwrap_or("kB") {
        "kB" => Some(n / 1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn mem_total() {
        assert_eq!(super::total_mib("MemTotal:       32768000 kB\nMemFree: 1 kB\n"), Some(32000));
        assert_eq!(super::total_mib("MemFree: 1 kB\n"), None);
    }
}
