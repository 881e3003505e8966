//! `/proc/cpuinfo`: the CPU model, and the architecture when nothing better
//! (uname) says it.

use crate::error::{Result, fail};

/// What cpuinfo tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CpuInfo {
    /// `model name` on x86; on Arm, the core named from the implementer
    /// and part numbers (`Neoverse-N1`), since Arm cpuinfo has no model name.
    pub(crate) model: Option<String>,
    /// `x86_64` or `aarch64`, guessed from the fields present.
    pub(crate) arch: Option<String>,
}

/// Arm cores by (implementer, part), as `lscpu` names them.
const ARM_CORES: &[(u32, u32, &str)] = &[
    (0x41, 0xd0c, "Neoverse-N1"),
    (0x41, 0xd40, "Neoverse-V1"),
    (0x41, 0xd49, "Neoverse-N2"),
    (0x41, 0xd4f, "Neoverse-V2"),
    (0x41, 0xd8e, "Neoverse-N3"),
    (0x41, 0xd84, "Neoverse-V3"),
    (0x41, 0xd0b, "Cortex-A76"),
    (0x41, 0xd08, "Cortex-A72"),
    (0x41, 0xd03, "Cortex-A53"),
    (0x61, 0x000, "Apple"),
];

/// Parses `/proc/cpuinfo` (the first processor's block is enough).
pub(crate) fn parse(text: &str) -> Result<CpuInfo> {
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim().eq_ignore_ascii_case(name) && !value.trim().is_empty())
                .then(|| value.trim().to_owned())
        })
    };
    if field("processor").is_none() && field("model name").is_none() {
        fail!("no `processor` line: not the text of /proc/cpuinfo");
    }
    let hex = |name: &str| {
        field(name).and_then(|v| u32::from_str_radix(v.trim_start_matches("0x"), 16).ok())
    };
    let arm = hex("CPU implementer").map(|implementer| (implementer, hex("CPU part")));
    let model = field("model name").or_else(|| {
        let (implementer, part) = arm?;
        ARM_CORES
            .iter()
            .find(|(i, p, _)| *i == implementer && (Some(*p) == part || *p == 0))
            .map(|(_, _, name)| (*name).to_owned())
    });
    let arch = if arm.is_some() {
        Some("aarch64")
    } else if field("vendor_id").is_some_and(|v| v == "GenuineIntel" || v == "AuthenticAMD")
        && field("flags").is_some_and(|f| f.split_whitespace().any(|flag| flag == "lm"))
    {
        Some("x86_64")
    } else {
        None
    };
    Ok(CpuInfo { model, arch: arch.map(str::to_owned) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_model_name() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu vme lm avx512f\n\nprocessor\t: 1\n";
        let cpu = parse(text).expect("parses");
        assert_eq!(cpu.model.as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(cpu.arch.as_deref(), Some("x86_64"));
    }

    #[test]
    fn graviton2_has_no_model_name() {
        let text = "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes pmull\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n";
        let cpu = parse(text).expect("parses");
        assert_eq!(cpu.model.as_deref(), Some("Neoverse-N1"));
        assert_eq!(cpu.arch.as_deref(), Some("aarch64"));
    }

    #[test]
    fn other_text_is_refused() {
        assert!(parse("PRETTY_NAME=\"Ubuntu\"\n").is_err());
    }
}
