//! The text `nvidia-smi` prints (its table), as pasted into bug reports:
//! the header line with the driver and the newest CUDA it supports, and one
//! row per GPU with its name, followed by a row with its memory. Bus ids,
//! serials and process lines are never read.

/// What the table's header line says.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Header {
    pub(crate) driver: Option<String>,
    /// The newest CUDA the driver supports.
    pub(crate) cuda: Option<String>,
}

/// `| NVIDIA-SMI 535.54.03   Driver Version: 535.54.03   CUDA Version: 12.2 |`.
pub(crate) fn header(line: &str) -> Option<Header> {
    let at = line.find("NVIDIA-SMI ")?;
    let rest = &line[at..];
    let after = |label: &str| {
        let at = rest.find(label)?;
        let word = rest[at + label.len()..].split_whitespace().next()?;
        let word = word.trim_end_matches('|');
        let ok = word.starts_with(|c: char| c.is_ascii_digit()) && !word.ends_with('.');
        ok.then(|| word.to_owned())
    };
    Some(Header { driver: after("Driver Version:"), cuda: after("CUDA Version:") })
}

/// `|   0  NVIDIA A100-PCIE-40GB     Off | 00000000:3F:00.0 Off |` → the
/// name. A name nvidia-smi cut (`Tesla V100S-PCI...`) comes without its dots.
pub(crate) fn gpu_row(line: &str) -> Option<String> {
    let cell = line.trim_start().strip_prefix('|')?.split('|').next()?;
    let words: Vec<&str> = cell.split_whitespace().collect();
    let [index, name @ .., mode] = words.as_slice() else { return None };
    let is_row = index.bytes().all(|b| b.is_ascii_digit())
        && matches!(*mode, "On" | "Off" | "WDDM" | "TCC")
        && !name.is_empty();
    if !is_row {
        return None;
    }
    let name = name.join(" ");
    // nvidia-smi cuts long names to its column (`Tesla V100S-PCI...`): the
    // cut word is only part of one, so it goes (`Tesla V100S`).
    let name = match name.strip_suffix("...") {
        Some(cut) => cut.rsplit_once(['-', ' ']).map_or(cut, |(whole, _)| whole),
        None => &name,
    };
    let name = name.trim();
    name.bytes().any(|b| b.is_ascii_alphabetic()).then(|| name.to_owned())
}

/// `| N/A 37C P0 25W / 250W |  4MiB / 32768MiB | 0% Default |` → 32768.
pub(crate) fn memory_total(line: &str) -> Option<u64> {
    line.split('|').find_map(|cell| {
        let (used, total) = cell.split_once('/')?;
        if !used.trim_end().ends_with("MiB") {
            return None;
        }
        total.trim().strip_suffix("MiB")?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_rows_and_memory() {
        let h = header("| NVIDIA-SMI 535.54.03              Driver Version: 535.54.03    CUDA Version: 12.2     |")
            .expect("header");
        assert_eq!(h.driver.as_deref(), Some("535.54.03"));
        assert_eq!(h.cuda.as_deref(), Some("12.2"));
        let cut =
            header("| NVIDIA-SMI 470.86       Driver Version: 470.86       CUDA Version: 11.")
                .expect("header");
        assert_eq!(cut.cuda, None, "a cut version is no version");
        assert_eq!(
            gpu_row("|   0  NVIDIA A100-PCIE-40GB          Off | 00000000:3F:00.0 Off |                    0 |").as_deref(),
            Some("NVIDIA A100-PCIE-40GB")
        );
        assert_eq!(
            gpu_row(
                "   |   1  Tesla V100S-PCI...  Off  | 00000000:B5:00.0 Off |                    0 |"
            )
            .as_deref(),
            Some("Tesla V100S")
        );
        assert_eq!(gpu_row("|    0   N/A  N/A      1234      C   python    1000MiB |"), None);
        assert_eq!(gpu_row("| GPU  Name        Persistence-M| Bus-Id        Disp.A |"), None);
        assert_eq!(
            memory_total(
                "| N/A   37C    P0    25W / 250W |      4MiB / 32768MiB |      0%      Default |"
            ),
            Some(32768)
        );
        assert_eq!(memory_total("| N/A   37C    P0    25W / 250W |"), None);
    }
}
