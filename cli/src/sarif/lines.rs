//! Where a manifest field is in the manifest's text: the line of each
//! member and element, by the field paths findings name as evidence
//! (`accelerators.0.compute_capability`, and packages by name as well as
//! by index: `packages.vllm.version`). SARIF results point there, since
//! code scanning shows a result at a line.

use std::collections::HashMap;

// Packages are named in field paths by the host's own key (PEP 503, a
// renamed package under its current name).
use pitfall_contract::normalize::package_key;

/// The line (1-based) of every field path in one JSON text.
#[derive(Debug, Default)]
pub(crate) struct FieldLines {
    lines: HashMap<String, usize>,
}

impl FieldLines {
    /// The lines of `text`'s fields; a text that is not JSON gives what was
    /// read before the fault (the manifest was parsed already, so this is
    /// only ever a partial map of a valid text).
    pub(crate) fn of(text: &[u8]) -> FieldLines {
        let mut reader = Reader { text, at: 0, line: 1, lines: HashMap::new() };
        reader.value("");
        FieldLines { lines: reader.lines }
    }

    /// The line of `path`, or of its nearest enclosing field that the text
    /// has (a value the registry filled in is not in the text; the object
    /// it belongs to is).
    pub(crate) fn line(&self, path: &str) -> Option<usize> {
        let mut path = path;
        loop {
            if let Some(line) = self.lines.get(path) {
                return Some(*line);
            }
            path = &path[..path.rfind('.')?];
        }
    }
}

struct Reader<'a> {
    text: &'a [u8],
    at: usize,
    line: usize,
    lines: HashMap<String, usize>,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        if byte == b'\n' {
            self.line += 1;
        }
        Some(byte)
    }

    fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.bump();
        }
    }

    /// A value at `path`; `None` at a fault.
    fn value(&mut self, path: &str) -> Option<()> {
        self.blanks();
        match self.peek()? {
            b'{' => self.object(path),
            b'[' => self.array(path),
            b'"' => self.string().map(drop),
            _ => {
                while self.peek().is_some_and(|b| !b",}] \t\r\n".contains(&b)) {
                    self.bump();
                }
                Some(())
            }
        }
    }

    fn object(&mut self, path: &str) -> Option<()> {
        self.bump();
        loop {
            self.blanks();
            match self.peek()? {
                b'}' => {
                    self.bump();
                    return Some(());
                }
                b',' => {
                    self.bump();
                }
                b'"' => {
                    let line = self.line;
                    let key = self.string()?;
                    let child = if path.is_empty() { key } else { format!("{path}.{key}") };
                    self.lines.entry(child.clone()).or_insert(line);
                    self.blanks();
                    if self.bump()? != b':' {
                        return None;
                    }
                    self.value(&child)?;
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, path: &str) -> Option<()> {
        self.bump();
        let mut index = 0usize;
        loop {
            self.blanks();
            match self.peek()? {
                b']' => {
                    self.bump();
                    return Some(());
                }
                b',' => {
                    self.bump();
                }
                _ => {
                    let child = format!("{path}.{index}");
                    self.lines.entry(child.clone()).or_insert(self.line);
                    let start = self.at;
                    self.value(&child)?;
                    if path == "packages" {
                        self.alias_package(&child, start);
                    }
                    index += 1;
                }
            }
        }
    }

    /// `packages.3.version` is also `packages.vllm.version`.
    fn alias_package(&mut self, element: &str, start: usize) {
        let text = std::str::from_utf8(&self.text[start..self.at]).unwrap_or_default();
        let Some(name) = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(package_key))
        else {
            return;
        };
        let by_name = format!("packages.{name}");
        let aliases: Vec<(String, usize)> = self
            .lines
            .iter()
            .filter_map(|(path, line)| {
                let rest = path.strip_prefix(element)?;
                (rest.is_empty() || rest.starts_with('.'))
                    .then(|| (format!("{by_name}{rest}"), *line))
            })
            .collect();
        for (path, line) in aliases {
            self.lines.entry(path).or_insert(line);
        }
    }

    /// A string's text (escapes kept as written: keys are plain names).
    fn string(&mut self) -> Option<String> {
        self.bump();
        let start = self.at;
        loop {
            match self.bump()? {
                b'"' => break,
                b'\\' => {
                    self.bump()?;
                }
                _ => {}
            }
        }
        Some(String::from_utf8_lossy(&self.text[start..self.at - 1]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_elements_and_packages_by_name_have_their_lines() {
        let text = br#"{
  "manifest_version": 1,
  "accelerators": [
    {"model": "T4G",
     "compute_capability": "7.5"}
  ],
  "packages": [
    {"name": "torch", "version": "2.12.0"},
    {
      "name": "Flash_Attn",
      "version": "2.8.3"
    },
    {"name": "flashinfer", "version": "0.1.6"}
  ]
}"#;
        let lines = FieldLines::of(text);
        assert_eq!(lines.line("manifest_version"), Some(2));
        assert_eq!(lines.line("accelerators.0"), Some(4));
        assert_eq!(lines.line("accelerators.0.compute_capability"), Some(5));
        assert_eq!(lines.line("accelerators.0.architecture"), Some(4), "the enclosing element");
        assert_eq!(lines.line("packages.torch.version"), Some(8));
        assert_eq!(lines.line("packages.flash-attn.version"), Some(11));
        assert_eq!(lines.line("packages.1"), Some(9));
        assert_eq!(
            lines.line("packages.flashinfer-python.version"),
            Some(13),
            "a renamed package by its current name"
        );
        assert_eq!(lines.line("drivers.nvidia"), None);
    }
}
