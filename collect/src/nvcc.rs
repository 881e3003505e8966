//! `nvcc --version`: the CUDA toolkit's compiler.

/// `Cuda compilation tools, release 13.0, V13.0.88` → `13.0.88` (the
/// release, `13.0`, when the V-number is missing). `None` without that line.
pub(crate) fn version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("Cuda compilation tools"))?;
    let full = line.split(',').map(str::trim).find_map(|part| part.strip_prefix('V'));
    let release = line.split(',').map(str::trim).find_map(|part| part.strip_prefix("release "));
    full.or(release).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    #[test]
    fn nvcc_output() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nBuilt on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n";
        assert_eq!(super::version(text).as_deref(), Some("13.0.88"));
        assert_eq!(
            super::version("Cuda compilation tools, release 12.8\n").as_deref(),
            Some("12.8")
        );
        assert_eq!(super::version("ID=ubuntu"), None);
    }
}
