//! Identifiers never reach a manifest: GPU UUIDs and serial numbers, PCI bus
//! ids, host names, IP and MAC addresses, user names and home folders.
//!
//! The parsers already read only non-identifying fields; [`scrub`] is the
//! second line: it walks the finished manifest and redacts anything that
//! still looks like an identifier, whatever field it came through.

use pitfall_contract::Manifest;
use serde_json::Value;

/// What replaces a redacted identifier.
pub const REDACTED: &str = "[redacted]";

/// Words known to identify this machine or its user (host name, user name),
/// matched as whole words.
#[derive(Debug, Clone, Default)]
pub struct Identifiers {
    words: Vec<String>,
}

impl Identifiers {
    /// Identifiers from `words`; empty ones are ignored.
    pub fn new(words: impl IntoIterator<Item = String>) -> Identifiers {
        let mut words: Vec<String> =
            words.into_iter().map(|w| w.trim().to_owned()).filter(|w| !w.is_empty()).collect();
        words.sort();
        words.dedup();
        Identifiers { words }
    }

    /// Adds one more identifier.
    pub fn add(&mut self, word: &str) {
        let word = word.trim();
        if !word.is_empty() && !self.words.iter().any(|w| w == word) {
            self.words.push(word.to_owned());
        }
    }
}

/// Whether `text` holds an identifier: a known word, an IPv4/IPv6 or MAC
/// address, a GPU/MIG UUID, a PCI bus id, or a home folder path.
pub fn has_identifier(text: &str, ids: &Identifiers) -> bool {
    redact(text, ids, true) != text
}

/// `text` with every identifier replaced by [`REDACTED`], for text that
/// is not a manifest field (a note quoting a pasted line).
pub fn redact_text(text: &str, ids: &Identifiers) -> String {
    redact(text, ids, true)
}

/// `text` with identifiers replaced by [`REDACTED`]. `addresses` also
/// redacts dotted-quad IPv4 addresses; package versions (`9.19.0.56`) look
/// like one, so [`scrub`] leaves version fields out of that check.
fn redact(text: &str, ids: &Identifiers, addresses: bool) -> String {
    // Tokens: runs of characters that can make up an identifier.
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest.find(|c: char| is_token_char(c)).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
        let token = &rest[..end];
        rest = &rest[end..];
        out.push_str(&redact_token(token, ids, addresses));
    }
    home_paths(&out)
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':' | '_')
}

fn redact_token(token: &str, ids: &Identifiers, addresses: bool) -> String {
    let bare = token.trim_matches(|c| c == '.' || c == ':');
    let identifying = is_uuid_like(bare)
        || is_mac(bare)
        || is_pci_bus_id(bare)
        || is_ipv6(bare)
        || (addresses && has_ipv4(bare));
    if identifying {
        return REDACTED.to_owned();
    }
    // Known words, as whole words (a host named `vm` must not hit `llvmlite`).
    let mut token = token.to_owned();
    for word in &ids.words {
        token = replace_word(&token, word);
    }
    token
}

fn replace_word(text: &str, word: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        if boundary(before) && boundary(after) {
            out.push_str(REDACTED);
        } else {
            out.push_str(word);
        }
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// `GPU-…`/`MIG-…` UUIDs and bare 8-4-4-4-12 UUIDs.
fn is_uuid_like(token: &str) -> bool {
    let body = token.strip_prefix("GPU-").or_else(|| token.strip_prefix("MIG-")).unwrap_or(token);
    let groups: Vec<&str> = body.split('-').collect();
    let uuid = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    uuid || (body.len() != token.len()
        && body.len() >= 8
        && body.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'))
}

/// `aa:bb:cc:dd:ee:ff`.
fn is_mac(token: &str) -> bool {
    let groups: Vec<&str> = token.split([':', '-']).collect();
    groups.len() == 6
        && groups.iter().all(|g| g.len() == 2 && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `00000000:00:06.0` (nvidia-smi) or `0000:3b:00.0` (lspci).
fn is_pci_bus_id(token: &str) -> bool {
    let Some((head, function)) = token.rsplit_once('.') else { return false };
    let parts: Vec<&str> = head.split(':').collect();
    let hex = |s: &str, lens: &[usize]| {
        lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
    };
    function.len() == 1
        && function.bytes().all(|b| b.is_ascii_digit())
        && match parts.as_slice() {
            [domain, bus, device] => hex(domain, &[4, 8]) && hex(bus, &[2]) && hex(device, &[2]),
            _ => false,
        }
}

/// Colon-separated hex groups, at least three (`fe80::1`, `2001:db8::2:1`).
fn is_ipv6(token: &str) -> bool {
    let groups: Vec<&str> = token.split(':').collect();
    groups.len() >= 3
        && groups.iter().all(|g| g.len() <= 4 && g.bytes().all(|b| b.is_ascii_hexdigit()))
        && groups.iter().filter(|g| !g.is_empty()).count() >= 2
}

/// Four dot-separated numbers 0-255 anywhere in the token (`10.1.2.3:29500`).
fn has_ipv4(token: &str) -> bool {
    token.split(|c: char| !(c.is_ascii_digit() || c == '.')).any(|part| {
        let octets: Vec<&str> = part.split('.').collect();
        octets.len() == 4
            && octets
                .iter()
                .all(|o| !o.is_empty() && o.len() <= 3 && o.parse::<u16>().is_ok_and(|n| n <= 255))
    })
}

/// `/home/NAME/...`, `/Users/NAME/...` → `~/...`; `/root/...` → `~/...`.
fn home_paths(text: &str) -> String {
    let mut out = text.to_owned();
    for prefix in ["/home/", "/Users/"] {
        while let Some(at) = out.find(prefix) {
            let name_end =
                out[at + prefix.len()..].find('/').map_or(out.len(), |n| at + prefix.len() + n);
            out.replace_range(at..name_end, "~");
        }
    }
    if let Some(rest) = out.strip_prefix("/root/") {
        out = format!("~/{rest}");
    } else if out == "/root" {
        out = "~".to_owned();
    }
    out
}

/// Redacts every identifier left in `manifest`. Version fields (packages,
/// drivers, build tools) are dotted numbers by nature and skip the IPv4 check.
pub fn scrub(manifest: Manifest, ids: &Identifiers) -> Manifest {
    let Ok(mut value) = serde_json::to_value(&manifest) else {
        return manifest;
    };
    walk(&mut value, &mut Vec::new(), ids);
    serde_json::from_value(value).unwrap_or(manifest)
}

fn walk(value: &mut Value, path: &mut Vec<String>, ids: &Identifiers) {
    match value {
        Value::String(s) => {
            let versions =
                matches!(path.first().map(String::as_str), Some("packages" | "drivers" | "build"));
            let clean = redact(s, ids, !versions);
            if clean != *s {
                *s = clean;
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, path, ids);
            }
        }
        Value::Object(map) => {
            // An environment variable that held an identifier goes entirely.
            if path.len() == 1 && path[0] == "env" {
                map.retain(|_, v| v.as_str().is_none_or(|s| !has_identifier(s, ids)));
            }
            for (key, item) in map.iter_mut() {
                path.push(key.clone());
                walk(item, path, ids);
                path.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> Identifiers {
        Identifiers::new(["vm".to_owned(), "alice".to_owned()])
    }

    #[test]
    fn identifiers_are_found() {
        for text in [
            "GPU-00000000-1111-2222-3333-444444444444",
            "MIG-2d1c7a3e-0000-1111-2222-333333333333",
            "00000000:00:06.0",
            "0000:3b:00.0",
            "10.0.12.7",
            "tcp://10.0.12.7:29500",
            "fe80::1c2d:3eff:fe4f:5a6b",
            "02:42:ac:11:00:02",
            "/home/alice/models/llama",
            "/Users/bob/models",
            "node vm",
            "alice",
        ] {
            assert!(has_identifier(text, &ids()), "{text}");
        }
    }

    #[test]
    fn ordinary_values_are_left_alone() {
        for text in [
            "Intel(R) Xeon(R) Processor",
            "llvmlite",
            "6.18.44-fc-v657-gpu",
            "google/gemma-4-E2B-it",
            "expandable_segments:True",
            "FLASH_ATTN",
            "0,1",
            "eth0",
            "2.11.0+cu130",
            "12:00",
        ] {
            assert!(!has_identifier(text, &ids()), "{text}");
        }
    }

    #[test]
    fn scrub_redacts_but_keeps_four_part_versions() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "manifest_version": 1,
            "host": { "cpu_model": "Xeon on vm" },
            "packages": [{ "name": "nvidia-cudnn-cu13", "version": "9.19.0.56", "ecosystem": "pypi" }],
            "env": { "NCCL_COMM_ID": "10.0.0.1:29500", "NCCL_DEBUG": "INFO" },
            "workload": { "model": "/home/alice/models/llama-3" }
        }))
        .expect("manifest");
        let out = serde_json::to_string(&scrub(manifest, &ids())).expect("json");
        assert!(out.contains("9.19.0.56"), "{out}");
        assert!(out.contains("\"Xeon on [redacted]\""), "{out}");
        assert!(out.contains("\"~/models/llama-3\""), "{out}");
        assert!(!out.contains("NCCL_COMM_ID") && out.contains("NCCL_DEBUG"), "{out}");
    }
}
