//! Whether the scan runs inside a container, and how big its `/dev/shm` is.

/// The container runtime the marks point to, if any.
///
/// Marks: `/.dockerenv` (Docker), `/run/.containerenv` (Podman), or the
/// cgroup path of PID 1 naming a runtime (`/proc/1/cgroup`; on cgroup v2 a
/// container often shows only `0::/`, so the files are checked first).
pub fn detect(dockerenv: bool, containerenv: bool, cgroup: Option<&str>) -> Option<&'static str> {
    if dockerenv {
        return Some("docker");
    }
    if containerenv {
        return Some("podman");
    }
    let cgroup = cgroup?;
    [
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("libpod", "podman"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
    ]
    .iter()
    .find(|(mark, _)| {
        cgroup.lines().any(|l| l.rsplit(':').next().is_some_and(|path| path.contains(mark)))
    })
    .map(|(_, runtime)| *runtime)
}

/// A filesystem's size in MiB from its `statvfs` block count and size.
pub fn size_mib(blocks: u64, fragment_size: u64) -> u64 {
    blocks.saturating_mul(fragment_size) / (1024 * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks() {
        assert_eq!(detect(true, false, None), Some("docker"));
        assert_eq!(detect(false, true, None), Some("podman"));
        assert_eq!(
            detect(false, false, Some("12:pids:/kubepods/besteffort/pod1/abc\n0::/\n")),
            Some("kubernetes")
        );
        assert_eq!(
            detect(false, false, Some("0::/system.slice/docker-abc.scope\n")),
            Some("docker")
        );
        assert_eq!(detect(false, false, Some("0::/init.scope\n")), None);
        assert_eq!(detect(false, false, None), None);
    }

    #[test]
    fn shm_size() {
        assert_eq!(size_mib(16384, 4096), 64);
    }
}
