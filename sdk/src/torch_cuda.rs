//! The CUDA release a torch build was made for, as extension builders
//! (torch's `cpp_extension`, DeepSpeed's op builder) compare it with the
//! CUDA toolkit: its `+cuXYZ` label, else `packages.torch.cuda`, which
//! enrichment fills for PyPI's default builds.

use alloc::string::String;

use crate::text::push_int;
use crate::version::{Version, cuda_tag};
use crate::view::Manifest;

/// The field stating torch's CUDA when its version has no label.
pub const TORCH_CUDA: &str = "packages.torch.cuda";

/// A CUDA release as (major, minor).
pub type Cuda = (u64, u64);

/// What a manifest says of torch's CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TorchCuda {
    /// From its `+cuXYZ` label (true) or [`TORCH_CUDA`] (false).
    Known(Cuda, bool),
    /// A CPU, ROCm or XPU build: no CUDA to compare.
    None,
    /// Not stated.
    Unknown,
}

/// torch's CUDA, from the local label of `version` (torch's) or
/// [`TORCH_CUDA`].
pub fn torch_cuda(m: &Manifest, version: Option<&Version>) -> TorchCuda {
    if let Some(local) = version.and_then(Version::local) {
        if let Some(cuda) = cuda_tag(local) {
            return TorchCuda::Known(cuda, true);
        }
        let l = local.to_ascii_lowercase();
        if ["cpu", "rocm", "xpu"].iter().any(|p| l.starts_with(p)) {
            return TorchCuda::None;
        }
    }
    match m.text(TORCH_CUDA).as_deref().and_then(cuda_release) {
        Some(cuda) => TorchCuda::Known(cuda, false),
        None => TorchCuda::Unknown,
    }
}

/// A CUDA release's major and minor from text (`12.1`, `12.1.105`, `12`).
pub fn cuda_release(text: &str) -> Option<Cuda> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

/// Appends `12.1` for (12, 1).
pub fn push_cuda(out: &mut String, cuda: Cuda) {
    push_int(out, cuda.0 as i64);
    out.push('.');
    push_int(out, cuda.1 as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_read_and_written() {
        assert_eq!(cuda_release("12.1.105"), Some((12, 1)));
        assert_eq!(cuda_release("13"), Some((13, 0)));
        assert_eq!(cuda_release("cu121"), None);
        let mut out = String::new();
        push_cuda(&mut out, (11, 8));
        assert_eq!(out, "11.8");
    }
}
