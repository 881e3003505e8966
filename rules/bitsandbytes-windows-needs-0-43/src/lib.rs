//! bitsandbytes has Windows wheels on PyPI from 0.43.0 only. Checked with
//! pip (win_amd64, Python 3.11): 0.41.1 to 0.42.0 resolve to one
//! py3-none-any wheel holding Linux `.so` libraries only
//! (libbitsandbytes_cpu.so, libbitsandbytes_cuda110..123.so); 0.43.0 is the
//! first py3-none-win_amd64 wheel (libbitsandbytes_cpu.dll,
//! libbitsandbytes_cuda117..123.dll). The loader agrees: at 0.42.0
//! bitsandbytes/cuda_setup/main.py names `libbitsandbytes_*.so` and passes
//! a `Path` to `ctypes.cdll.LoadLibrary` (ctypes on Windows before Python
//! 3.12 raises "argument of type 'WindowsPath' is not iterable"; a `.so`
//! path fails with WinError 193), so the library is None and cextension.py
//! raises "CUDA Setup failed despite GPU being available" (or warns
//! "compiled without GPU support"); at 0.43.0 it picks `.dll` on Windows
//! and loads `str(binary_path)`. The maintainers announced official
//! Windows support with `pip install bitsandbytes>=0.43.0`
//! (bitsandbytes issues 942 and 800). Builds from source and packages from
//! other indexes (community Windows wheels) are not judged.
#![no_std]

use pitfall_sdk::prelude::*;

const BNB: &str = "bitsandbytes";
const OS_ID: &str = "host.os.id";
const BEFORE_WINDOWS_WHEELS: &str = "<0.43.0";

fn evaluate(m: &Manifest) -> Outcome {
    let Some(bnb) = m.package(BNB) else {
        return Outcome::clear();
    };
    if m.built_from_source(BNB) || bnb.ecosystem().is_some_and(|e| e != "pypi") {
        return Outcome::clear();
    }
    let os = m.text(OS_ID);
    let windows = match os.as_deref() {
        Some(id) if id.trim().eq_ignore_ascii_case("windows") => true,
        Some(_) => return Outcome::clear(),
        None => false,
    };
    let old = match bnb.version_in(BEFORE_WINDOWS_WHEELS) {
        Some(old) => old,
        None if windows => return Outcome::needs(bnb.version_path().as_str()),
        None => {
            return Outcome::needs(OS_ID).missing(bnb.version_path().as_str());
        }
    };
    if !old {
        return Outcome::clear();
    }
    if !windows {
        return Outcome::needs(OS_ID);
    }
    Outcome::matched()
        .evidence(OS_ID)
        .evidence(bnb.version_path().as_str())
        .param_field("version", bnb.version_path().as_str())
}

pitfall_sdk::export_rule!(evaluate);
