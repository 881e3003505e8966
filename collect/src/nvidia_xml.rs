//! `nvidia-smi -q -x`: driver and CUDA versions, and per GPU its name and
//! memory. Reads only those elements: serial numbers, UUIDs, PCI bus ids and
//! part numbers are in the same document and are never looked at.

use crate::error::{Context, Result, fail};

use crate::gpu::{Gpu, NvidiaSmi};

/// Parses the XML document `nvidia-smi -q -x` prints.
///
/// The XML has no compute capability; [`crate::nvidia_csv`] supplies it.
pub(crate) fn parse(xml: &str) -> Result<NvidiaSmi> {
    // The document starts with a DOCTYPE naming nvidia-smi's DTD; roxmltree
    // refuses DTDs unless asked, and never fetches the external one.
    let options =
        roxmltree::ParsingOptions { allow_dtd: true, ..roxmltree::ParsingOptions::default() };
    let doc =
        roxmltree::Document::parse_with_options(xml, options).context("not well-formed XML")?;
    let root = doc.root_element();
    if root.tag_name().name() != "nvidia_smi_log" {
        fail!("the root element is <{}>, not <nvidia_smi_log>", root.tag_name().name());
    }
    let text = |node: roxmltree::Node<'_, '_>, name: &str| -> Option<String> {
        node.children()
            .find(|c| c.has_tag_name(name))
            .and_then(|c| c.text())
            .map(str::trim)
            .filter(|t| !is_not_available(t))
            .map(str::to_owned)
    };
    let gpus = root
        .children()
        .filter(|c| c.has_tag_name("gpu"))
        .map(|gpu| Gpu {
            name: text(gpu, "product_name"),
            memory_mib: gpu
                .children()
                .find(|c| c.has_tag_name("fb_memory_usage"))
                .and_then(|fb| text(fb, "total"))
                .and_then(|total| crate::gpu::parse_mib(&total)),
            compute_capability: None,
        })
        .collect();
    Ok(NvidiaSmi { driver: text(root, "driver_version"), cuda: text(root, "cuda_version"), gpus })
}

/// nvidia-smi's ways of saying "no value".
pub(crate) fn is_not_available(value: &str) -> bool {
    let v = value.trim().trim_start_matches('[').trim_end_matches(']');
    v.is_empty() || v.eq_ignore_ascii_case("N/A") || v.eq_ignore_ascii_case("Not Supported")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_driver_cuda_and_gpus() {
        let xml = r#"<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">
<nvidia_smi_log>
  <driver_version>570.124.06</driver_version>
  <cuda_version>12.8</cuda_version>
  <gpu id="00000000:00:1E.0">
    <product_name>NVIDIA T4G</product_name>
    <serial>1234</serial>
    <fb_memory_usage><total>15360 MiB</total><used>0 MiB</used></fb_memory_usage>
    <bar1_memory_usage><total>256 MiB</total></bar1_memory_usage>
  </gpu>
  <gpu id="00000000:00:1F.0">
    <product_name>NVIDIA T4G</product_name>
    <fb_memory_usage><total>N/A</total></fb_memory_usage>
  </gpu>
</nvidia_smi_log>"#;
        let smi = parse(xml).expect("parses");
        assert_eq!(smi.driver.as_deref(), Some("570.124.06"));
        assert_eq!(smi.cuda.as_deref(), Some("12.8"));
        assert_eq!(smi.gpus.len(), 2);
        assert_eq!(smi.gpus[0].name.as_deref(), Some("NVIDIA T4G"));
        assert_eq!(smi.gpus[0].memory_mib, Some(15360), "fb memory, not BAR1");
        assert_eq!(smi.gpus[1].memory_mib, None);
    }

    #[test]
    fn real_h200_capture() {
        let xml = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../shared/fixtures/machines/h200x2-nvlink/nvidia-smi-q.xml"
        ))
        .expect("capture");
        let smi = parse(&xml).expect("parses");
        assert_eq!(smi.driver.as_deref(), Some("580.159.04"));
        assert_eq!(smi.cuda.as_deref(), Some("13.0"));
        assert_eq!(smi.gpus.len(), 2);
        for gpu in &smi.gpus {
            assert_eq!(gpu.name.as_deref(), Some("NVIDIA H200"));
            assert_eq!(gpu.memory_mib, Some(143_771));
        }
    }

    #[test]
    fn rejects_other_documents() {
        assert!(parse("<html></html>").is_err());
        assert!(parse("<nvidia_smi_log><gpu>").is_err());
        assert!(parse("driver 570").is_err());
    }
}
