//! cuDNN from NVIDIA's pip wheels. Every nvidia-cudnn-cu11, -cu12 and
//! -cu13 wheel installs `nvidia/cudnn/lib/libcudnn.so.<major>` (read in
//! the wheels' RECORDs; `torch-cudnn-version-incompatible` cites them):
//! wheels of one major overwrite each other's library, so the one
//! installed last is what loads, and a wheel of another major is another
//! library. torch and XLA (JAX, TensorFlow) refuse a cuDNN of their
//! build's major whose minor is lower than the build's; the patch is not
//! compared.

use crate::outcome::Outcome;
use crate::view::Package;

/// The pip wheels of cuDNN, one per CUDA major.
pub const WHEELS: [&str; 3] = ["nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13"];

/// A version's first two numbers (`9.1.0.70` → `(9, 1)`).
pub fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Of the cuDNN `wheels` (name and package), those of major `major`: the
/// first of them when every one is older in minor than `minor`, so that
/// whichever was installed last the library loaded is too old. `None`
/// when no wheel is of that major (the cuDNN comes from elsewhere, or is
/// another library) or one is new enough (which was installed last is not
/// known). A wheel without a version, or with one that is not a version,
/// makes the answer undetermined, the field named, whatever its major.
pub fn all_older_than<'a>(
    wheels: impl IntoIterator<Item = (&'a str, Package)>,
    major: u32,
    minor: u32,
) -> Result<Option<(&'a str, Package)>, Outcome> {
    let mut first = None;
    let mut new_enough = false;
    for (name, wheel) in wheels {
        let Some(text) = wheel.version_text() else {
            return Err(Outcome::needs(wheel.version_path().as_str()));
        };
        let Some((wheel_major, wheel_minor)) = major_minor(&text) else {
            return Err(Outcome::unreadable(wheel.version_path().as_str()));
        };
        if wheel_major != major {
            continue;
        }
        new_enough |= wheel_minor >= minor;
        if first.is_none() {
            first = Some((name, wheel));
        }
    }
    Ok(if new_enough { None } else { first })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_gives_its_first_two_numbers() {
        assert_eq!(major_minor("9.1.0.70"), Some((9, 1)));
        assert_eq!(major_minor(" 8.9 "), Some((8, 9)));
        assert_eq!(major_minor("9"), None);
        assert_eq!(major_minor("nine.1"), None);
    }
}
