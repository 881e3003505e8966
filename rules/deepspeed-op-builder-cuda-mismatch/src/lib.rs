//! DeepSpeed's op builder refuses to compile its ops when the CUDA of the
//! toolkit (`$CUDA_HOME/bin/nvcc -V`, torch's `CUDA_HOME`) differs from
//! `torch.version.cuda` (`assert_no_cuda_mismatch` in
//! op_builder/builder.py), read at the tags:
//! - 0.3.1: any difference in major.minor raises `Exception: Installed CUDA
//!   version X.Y does not match the version torch was compiled with A.B,
//!   unable to compile cuda/cpp extensions without a matching cuda version.`
//! - 0.3.8: nvcc 11.1 with a CUDA 11.0 torch is accepted;
//! - 0.4.0: a table `cuda_minor_mismatch_ok` of minors accepted together
//!   (10.0 to 10.2 and 11.0 to 11.3), grown to 11.4 (0.5.2), 11.5 (0.5.7),
//!   11.6 (0.6.1), 11.7 (0.7.1), 11.8 (0.7.4), 12.0 and 12.1 (0.9.3), 12.3
//!   (0.12.1), 12.5 (0.14.3), 12.6 (0.15.3), 12.8 (0.16.4), 12.9 (0.17.2,
//!   unchanged to 0.19.5); a different major, and CUDA 13, always refuse;
//! - 0.8.1: the message gains `>- DeepSpeed Op Builder: `;
//! - 0.9.1 to 0.12.3: every caller catches `BaseException` and builds the
//!   op for the CPU instead, so nothing is refused (not judged here);
//! - 0.9.3: `DS_SKIP_CUDA_CHECK=1` accepts the mismatch with a warning;
//! - 0.12.4: `CUDAMismatchException`, no longer caught (only
//!   `MissingCUDAException` is); the JIT path of CUDA ops (from 0.12.3) no
//!   longer runs the check, the install-time build (`DS_BUILD_OPS=1`) and
//!   the CPU ops (cpu_adam, cpu_adagrad, cpu_lion, ...) still do.
#![no_std]

use pitfall_sdk::prelude::*;
use pitfall_sdk::text::push_int;
use pitfall_sdk::torch_cuda::{Cuda, TORCH_CUDA, TorchCuda, push_cuda, torch_cuda};

const NVCC: &str = "build.tools.nvcc";
const SKIP: &str = "DS_SKIP_CUDA_CHECK";

const REMEDY_NVCC: u32 = 0;
const REMEDY_TORCH: u32 = 1;
const REMEDY_SKIP: u32 = 2;

/// How one range of DeepSpeed releases checks.
struct Era {
    /// `cuda_minor_mismatch_ok`: per major, a bit for each minor accepted
    /// together with any other of the same major.
    table: &'static [(u64, u32)],
    /// 0.3.8 to 0.3.16: nvcc 11.1 with a CUDA 11.0 torch passes.
    cuda_11_1_over_11_0: bool,
    /// The text before `Installed CUDA version`.
    prefix: &'static str,
    /// Whether `DS_SKIP_CUDA_CHECK=1` exists (0.9.3 and later).
    skip: bool,
    /// When the check runs.
    when: &'static str,
}

const ALL_OPS: &str =
    "whenever it builds a CUDA op (at first use, JIT, or at install with DS_BUILD_OPS=1)";
const BUILD_AND_CPU_OPS: &str = "when it pre-compiles ops at install (DS_BUILD_OPS=1 or DS_BUILD_<OP>=1) and when it JIT-builds a CPU op (cpu_adam, cpu_adagrad, cpu_lion: ZeRO-Offload's DeepSpeedCPUAdam)";
const OLD: &str = "Exception: ";
const PREFIXED: &str = "Exception: >- DeepSpeed Op Builder: ";
const CLASS: &str = "CUDAMismatchException: >- DeepSpeed Op Builder: ";

const M10: (u64, u32) = (10, 0b111);
const fn upto(major: u64, last: u32) -> (u64, u32) {
    (major, (1 << (last + 1)) - 1)
}
/// 12.0 to 12.6, 12.8 (no CUDA 12.7 toolkit).
const M12_8: (u64, u32) = (12, 0b1_0111_1111);
const M12_9: (u64, u32) = (12, 0b11_0111_1111);

const fn era(table: &'static [(u64, u32)], prefix: &'static str, new: bool) -> Era {
    Era {
        table,
        cuda_11_1_over_11_0: false,
        prefix,
        skip: new,
        when: if new { BUILD_AND_CPU_OPS } else { ALL_OPS },
    }
}

const ERAS: &[(&str, Era)] = &[
    (">=0.3.1,<0.3.8", era(&[], OLD, false)),
    (
        ">=0.3.8,<0.4.0",
        Era { table: &[], cuda_11_1_over_11_0: true, prefix: OLD, skip: false, when: ALL_OPS },
    ),
    (">=0.4.0,<0.5.2", era(&[M10, upto(11, 3)], OLD, false)),
    (">=0.5.2,<0.5.7", era(&[M10, upto(11, 4)], OLD, false)),
    (">=0.5.7,<0.6.1", era(&[M10, upto(11, 5)], OLD, false)),
    (">=0.6.1,<0.7.1", era(&[M10, upto(11, 6)], OLD, false)),
    (">=0.7.1,<0.7.4", era(&[M10, upto(11, 7)], OLD, false)),
    (">=0.7.4,<0.8.1", era(&[M10, upto(11, 8)], OLD, false)),
    (">=0.8.1,<0.9.1", era(&[M10, upto(11, 8)], PREFIXED, false)),
    (">=0.12.4,<0.14.3", era(&[M10, upto(11, 8), upto(12, 3)], CLASS, true)),
    (">=0.14.3,<0.15.3", era(&[M10, upto(11, 8), upto(12, 5)], CLASS, true)),
    (">=0.15.3,<0.16.4", era(&[M10, upto(11, 8), upto(12, 6)], CLASS, true)),
    (">=0.16.4,<0.17.2", era(&[M10, upto(11, 8), M12_8], CLASS, true)),
    (">=0.17.2", era(&[M10, upto(11, 8), M12_9], CLASS, true)),
];

impl Era {
    fn accepts(&self, nvcc: Cuda, torch: Cuda) -> bool {
        if nvcc == torch || (self.cuda_11_1_over_11_0 && nvcc == (11, 1) && torch == (11, 0)) {
            return true;
        }
        let listed = |(major, minor): Cuda| {
            minor < 32 && self.table.iter().any(|(m, bits)| *m == major && bits & (1 << minor) != 0)
        };
        nvcc.0 == torch.0 && listed(nvcc) && listed(torch)
    }
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(ds) = m.package("deepspeed") else {
        return Outcome::clear();
    };
    let Some(torch) = m.package("torch") else {
        return Outcome::clear();
    };
    let mut found = None;
    for (range, era) in ERAS {
        match ds.need_version_in(range) {
            Ok(true) => {
                found = Some(era);
                break;
            }
            Ok(false) => {}
            Err(undetermined) => return undetermined,
        }
    }
    // Before 0.3.1 there is no check; 0.9.1 to 0.12.3 swallow it.
    let Some(era) = found else {
        return Outcome::clear();
    };
    let version = torch.version();
    if version.is_none() && torch.version_text().is_some() {
        return Outcome::unreadable(torch.version_path().as_str());
    }
    let torch_cuda = match torch_cuda(m, version.as_ref()) {
        TorchCuda::Known(cuda, from_label) => Some((cuda, from_label)),
        TorchCuda::None => return Outcome::clear(),
        TorchCuda::Unknown => None,
    };
    let nvcc = match m.build_tool("nvcc") {
        // No toolkit: CUDA_HOME missing is another error (or, from 0.12.4,
        // a CPU-only build), not this one.
        Some(None) => return Outcome::clear(),
        Some(Some(text)) => match Dotted::parse(&text) {
            Ok(nvcc) => Some(nvcc),
            Err(_) => return Outcome::unreadable(NVCC),
        },
        None => None,
    };
    let (Some((cuda, from_label)), Some(nvcc)) = (torch_cuda, nvcc.as_ref()) else {
        let mut outcome = Outcome::undetermined();
        if torch_cuda.is_none() {
            if version.is_none() {
                outcome = outcome.missing(torch.version_path().as_str());
            }
            outcome = outcome.missing(TORCH_CUDA);
        }
        if nvcc.is_none() {
            outcome = outcome.missing(NVCC);
        }
        return outcome;
    };
    let installed = (nvcc.major(), nvcc.minor());
    if era.accepts(installed, cuda) {
        return Outcome::clear();
    }
    if era.skip && m.env(SKIP).as_deref() == Some("1") {
        return Outcome::clear();
    }
    let mut have = String::with_capacity(8);
    push_cuda(&mut have, installed);
    let mut built = String::with_capacity(8);
    push_cuda(&mut built, cuda);
    let mut error = String::with_capacity(220);
    error.push_str(era.prefix);
    error.push_str("Installed CUDA version ");
    error.push_str(&have);
    error.push_str(" does not match the version torch was compiled with ");
    error.push_str(&built);
    error.push_str(", unable to compile cuda/cpp extensions without a matching cuda version.");
    let mut outcome = Outcome::matched()
        .evidence(ds.version_path().as_str())
        .evidence(NVCC)
        .evidence(if from_label { torch.version_path() } else { Path::new(TORCH_CUDA) }.as_str())
        .param_field("deepspeed", ds.version_path().as_str())
        .param("nvcc", nvcc.as_str())
        .param("nvcc_cuda", &have)
        .param("torch_cuda", &built)
        .param("when", era.when)
        .param("error", &error)
        .remedy(REMEDY_NVCC);
    if let Some(release) = version.as_ref().map(Version::without_local) {
        // The same torch release built for the toolkit's CUDA.
        let mut fix = String::with_capacity(24);
        fix.push_str(release.as_str());
        fix.push_str("+cu");
        push_int(&mut fix, installed.0 as i64);
        push_int(&mut fix, installed.1 as i64);
        outcome = outcome
            .param_field("torch", torch.version_path().as_str())
            .param("torch_fix", &fix)
            .remedy(REMEDY_TORCH);
    } else {
        outcome = outcome.param("torch", "(version not stated)");
    }
    if era.skip {
        outcome = outcome.remedy(REMEDY_SKIP);
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
