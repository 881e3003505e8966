//! `nvidia-smi --query-gpu=index,name,compute_cap,memory.total,driver_version
//! --format=csv`: the fallback when the XML is missing, and the only source
//! of compute capability. Columns are found by their header, so any order and
//! extra columns work; columns other than those are never read (the captures
//! have `pci.bus_id`).

use crate::error::{Result, fail};

use crate::gpu::{Gpu, NvidiaSmi, parse_mib};
use crate::nvidia_xml::is_not_available;

/// The query the live scan runs (`--format=csv`, units included).
pub(crate) const QUERY: &str = "index,name,compute_cap,memory.total,driver_version";

/// Parses the CSV (with its header line; with or without units).
pub(crate) fn parse(csv: &str) -> Result<NvidiaSmi> {
    let mut lines = csv.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(header) = lines.next() else {
        fail!("empty: expected a header line such as `name, compute_cap, memory.total [MiB]`");
    };
    // `memory.total [MiB]` → `memory.total`.
    let columns: Vec<String> = header
        .split(',')
        .map(|c| c.split('[').next().unwrap_or_default().trim().to_ascii_lowercase())
        .collect();
    let column = |name: &str| columns.iter().position(|c| c == name);
    let Some(name_col) = column("name") else {
        fail!("no `name` column in the header {header:?}");
    };
    let (index_col, cc_col, memory_col, driver_col) =
        (column("index"), column("compute_cap"), column("memory.total"), column("driver_version"));

    let mut rows: Vec<(Option<u32>, Gpu)> = Vec::new();
    let mut driver = None;
    for (n, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != columns.len() {
            fail!("line {}: {} values for {} columns", n + 2, cells.len(), columns.len());
        }
        let cell = |i: Option<usize>| i.map(|i| cells[i]).filter(|v| !is_not_available(v));
        driver = driver.or_else(|| cell(driver_col).map(str::to_owned));
        rows.push((
            cell(index_col).and_then(|i| i.parse().ok()),
            Gpu {
                name: cell(Some(name_col)).map(str::to_owned),
                memory_mib: cell(memory_col).and_then(parse_mib),
                compute_capability: cell(cc_col).map(str::to_owned),
            },
        ));
    }
    // nvidia-smi prints in index order; sort anyway when the index is there.
    rows.sort_by_key(|(index, _)| *index);
    Ok(NvidiaSmi { driver, cuda: None, gpus: rows.into_iter().map(|(_, gpu)| gpu).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_captures() {
        let one = "name, compute_cap, memory.total [MiB], driver_version, pci.bus_id, clocks.max.memory [MHz]\n\
                   NVIDIA H200, 9.0, 143771 MiB, 580.159.04, 00000000:00:06.0, 3201 MHz\n";
        let smi = parse(one).expect("parses");
        assert_eq!(smi.driver.as_deref(), Some("580.159.04"));
        assert_eq!(
            smi.gpus,
            vec![Gpu {
                name: Some("NVIDIA H200".into()),
                memory_mib: Some(143_771),
                compute_capability: Some("9.0".into())
            }]
        );
    }

    #[test]
    fn nounits_any_order_and_index_sorting() {
        let csv = "memory.total [MiB], index, name, compute_cap\n81920, 1, NVIDIA A100-SXM4-80GB, 8.0\n23034, 0, NVIDIA L4, [N/A]\n";
        let smi = parse(csv).expect("parses");
        assert_eq!(smi.gpus[0].name.as_deref(), Some("NVIDIA L4"));
        assert_eq!(smi.gpus[0].compute_capability, None);
        assert_eq!(smi.gpus[1].memory_mib, Some(81_920));
        assert_eq!(smi.driver, None);
    }

    #[test]
    fn malformed_csv_is_an_error() {
        assert!(parse("").is_err());
        assert!(parse("index, memory.total\n0, 1 MiB\n").is_err(), "no name column");
        assert!(parse("name, compute_cap\nNVIDIA L4\n").is_err(), "short row");
    }
}
