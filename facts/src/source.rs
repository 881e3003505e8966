//! Where a table's fact was read, and how every table file is loaded.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// One source of an entry: where it was read and what it gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// An `https://` address, or a named document of this repository
    /// (`KNOWLEDGE.md part C`) where no address exists.
    pub url: String,
    /// Which of the entry's facts it gives, and how (`compute capability`,
    /// `DERIVED: ...` where a value was computed rather than read).
    #[serde(rename = "for")]
    pub what: String,
}

/// Named documents a source may cite instead of an address.
const NAMED_DOCUMENTS: &[&str] = &["KNOWLEDGE.md", "shared/KNOWLEDGE.md", "field report A"];

/// Whether `url` is an `https://` address or names a known document.
pub fn is_citable(url: &str) -> bool {
    let address = url.strip_prefix("https://").is_some_and(|rest| {
        !rest.is_empty() && !rest.starts_with('/') && !rest.contains(char::is_whitespace)
    });
    address || NAMED_DOCUMENTS.iter().any(|d| url.starts_with(d))
}

/// Whether a free-text source (`URL (what it gives); URL ...`) starts with
/// a citable address or document.
pub fn starts_citable(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    is_citable(first.trim_end_matches([';', ',']))
        || NAMED_DOCUMENTS.iter().any(|d| text.starts_with(d))
}

/// Parses an embedded table; a failure is a build bug, which each table's
/// unit test catches before it ships.
pub(crate) fn parse<T: DeserializeOwned>(name: &str, text: &str) -> T {
    serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("facts/data/{name} is embedded and must parse: {e}"))
}

/// Names as lookups compare them: lowercase words, with spaces, `-`, `_`
/// and `/` unified, and a trailing `...` (nvidia-smi's table truncates
/// long names) dropped.
pub(crate) fn words(name: &str) -> Vec<String> {
    let name = name.trim().trim_end_matches('…').trim_end_matches("...");
    name.split(|c: char| c.is_whitespace() || matches!(c, '-' | '_' | '/' | ','))
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_addresses_or_named_documents() {
        assert!(is_citable("https://developer.nvidia.com/cuda-gpus"));
        assert!(is_citable("KNOWLEDGE.md part C"));
        for bad in ["sdk/data/hardware.json", "http://x.org/a", "https://", "https:///x", ""] {
            assert!(!is_citable(bad), "{bad}");
        }
    }
}
