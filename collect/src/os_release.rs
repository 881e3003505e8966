//! `/etc/os-release`: the distribution id and version.

use pitfall_contract::manifest::Os;

/// `ID=` and `VERSION_ID=`, unquoted; `None` when neither is there. Other
/// lines (the fixtures' `os.txt` also holds `uname -a` and `nvcc --version`)
/// are ignored.
pub(crate) fn parse(text: &str) -> Option<Os> {
    let value = |key: &str| {
        text.lines().find_map(|line| {
            let rest = line.trim().strip_prefix(key)?.strip_prefix('=')?;
            let unquoted = rest.trim().trim_matches(|c| c == '"' || c == '\'');
            (!unquoted.is_empty()).then(|| unquoted.to_owned())
        })
    };
    let os = Os {
        id: value("ID").map(|id| id.to_lowercase()),
        version: value("VERSION_ID"),
        ..Os::default()
    };
    (os.id.is_some() || os.version.is_some()).then_some(os)
}

/// The os-release id and version from a distribution's display name, as
/// `collect_env` prints it (`Ubuntu 24.04.3 LTS (x86_64)`): the name's id
/// under os-release's spelling, and the version as os-release gives it
/// (Ubuntu `24.04`, Debian `12`).
pub(crate) fn from_pretty_name(pretty: &str) -> Option<Os> {
    const NAMES: &[(&str, &str, usize)] = &[
        ("ubuntu", "ubuntu", 2),
        ("debian", "debian", 1),
        ("red hat enterprise linux", "rhel", 2),
        ("rocky linux", "rocky", 2),
        ("almalinux", "almalinux", 2),
        ("centos", "centos", 1),
        ("fedora", "fedora", 1),
        ("amazon linux", "amzn", 1),
        ("opensuse", "opensuse-leap", 2),
        ("sles", "sles", 2),
        ("arch linux", "arch", 0),
        // Not os-release systems: `collect_env` prints Windows' caption
        // (`Microsoft Windows 11 Pro`) and `macOS 14.4.1 (arm64)`; the
        // rules about them compare `windows` and `macos`.
        ("microsoft windows", "windows", 1),
        ("windows", "windows", 1),
        ("macos", "macos", 2),
    ];
    let lower = pretty.trim().to_lowercase();
    let (_, id, parts) = NAMES.iter().find(|(name, _, _)| lower.starts_with(name))?;
    let version = lower
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .map(|w| w.split('.').take(*parts).collect::<Vec<_>>().join("."))
        .filter(|v| !v.is_empty());
    Some(Os { id: Some((*id).to_owned()), version, ..Os::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_keys() {
        let text = "PRETTY_NAME=\"Ubuntu 24.04.3 LTS\"\nVERSION_ID=\"24.04\"\nID=ubuntu\nID_LIKE=debian\n\nLinux vm 6.8.0 #1 SMP x86_64 GNU/Linux\n";
        let os = parse(text).expect("found");
        assert_eq!((os.id.as_deref(), os.version.as_deref()), (Some("ubuntu"), Some("24.04")));
        assert_eq!(parse("nothing here"), None);
    }

    #[test]
    fn windows_and_macos_names() {
        let os = |s| {
            from_pretty_name(s).map(|o| (o.id.unwrap_or_default(), o.version.unwrap_or_default()))
        };
        assert_eq!(os("Microsoft Windows 11 Pro"), Some(("windows".into(), "11".into())));
        assert_eq!(os("Microsoft Windows 10 Home"), Some(("windows".into(), "10".into())));
        assert_eq!(os("macOS 14.4.1 (arm64)"), Some(("macos".into(), "14.4".into())));
        assert_eq!(os("Windows"), Some(("windows".into(), String::new())));
    }

    #[test]
    fn pretty_names() {
        let os = |s| {
            from_pretty_name(s).map(|o| (o.id.unwrap_or_default(), o.version.unwrap_or_default()))
        };
        assert_eq!(os("Ubuntu 24.04.3 LTS (x86_64)"), Some(("ubuntu".into(), "24.04".into())));
        assert_eq!(
            os("Debian GNU/Linux 12 (bookworm) (aarch64)"),
            Some(("debian".into(), "12".into()))
        );
        assert_eq!(
            os("Amazon Linux 2023.6.20250107 (aarch64)"),
            Some(("amzn".into(), "2023".into()))
        );
        assert_eq!(
            os("Rocky Linux 9.4 (Blue Onyx) (x86_64)"),
            Some(("rocky".into(), "9.4".into()))
        );
        assert_eq!(os("Could not collect"), None);
    }
}
