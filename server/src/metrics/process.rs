//! The process's own metrics, under the names Prometheus's client
//! libraries use (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_open_fds`, `process_max_fds`), read from Linux's `/proc/self` at
//! each scrape. Elsewhere, or when `/proc` is not mounted, they are left out.

use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

/// Adds what `/proc/self` tells of this process to `registry`.
pub(super) fn register(registry: &mut Registry) {
    if let Some(seconds) = cpu_seconds() {
        registry.register(
            "process_cpu_seconds",
            "User and system CPU time spent, in seconds",
            ConstCounter::new(seconds),
        );
    }
    if let Some(bytes) = resident_bytes() {
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory size, in bytes",
            ConstGauge::new(bytes),
        );
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        // Less the descriptor that reads the directory.
        let open = fds.count().saturating_sub(1) as i64;
        registry.register("process_open_fds", "Open file descriptors", ConstGauge::new(open));
    }
    if let Some(max) = max_fds() {
        registry.register(
            "process_max_fds",
            "Most file descriptors the process may open (its soft limit)",
            ConstGauge::new(max),
        );
    }
}

/// `utime + stime` of `/proc/self/stat`, in seconds.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, in parentheses, may hold spaces: count after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf takes a constant, touches no memory and cannot fail
    // in a way that matters here (a non-positive answer is refused below).
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime + stime) as f64 / ticks as f64)
}

/// The second field of `/proc/self/statm` (resident pages), in bytes.
fn resident_bytes() -> Option<i64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: i64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (page > 0).then(|| pages * page as i64)
}

/// The soft limit on open files, from `/proc/self/limits`.
fn max_fds() -> Option<i64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_self_is_read() {
        let rss = resident_bytes().expect("statm");
        assert!(rss > 1 << 20, "{rss}");
        assert!(cpu_seconds().expect("stat") >= 0.0);
        assert!(max_fds().expect("limits") > 0);
    }
}
