//! An image's NVIDIA_REQUIRE_CUDA newer than the host driver's CUDA: the
//! NVIDIA Container Toolkit refuses to start the container (`nvidia-container-cli:
//! requirement error: unsatisfied condition: cuda>=12.8`; tabbyAPI issue 324).
//!
//! Syntax (toolkit docs, docker-specialized.md): alternatives separated by
//! spaces are ORed, conditions separated by commas are ANDed. Conditions on
//! `brand` or `arch` cannot be decided here; an alternative that only they
//! could fail is assumed to hold, so the rule stays silent.
#![no_std]

use pitfall_sdk::prelude::*;

/// Drivers known to support at least this CUDA (major, minor): the GA
/// drivers bundled with CUDA 12.4 and 12.9 (NVIDIA's runfile names), and
/// 580.126.09 reporting CUDA 13.0 (NVIDIA/nvbandwidth issue 61). Ascending.
const DRIVER_CUDA: [(&str, u64, u64); 3] =
    [("550.54.14", 12, 4), ("575.51.03", 12, 9), ("580.126.09", 13, 0)];

/// The CUDA the driver supports: drivers.cuda_driver, or what the driver
/// version guarantees, whichever is newer (both are lower bounds of the truth).
fn driver_cuda(m: &Manifest) -> Option<(u64, u64)> {
    let given = m
        .text("drivers.cuda_driver")
        .and_then(|t| Dotted::parse(&t).ok())
        .map(|d| (d.major(), d.minor()));
    let derived = m.nvidia_driver().and_then(|driver| {
        DRIVER_CUDA.iter().rev().find_map(|(floor, major, minor)| {
            let floor = Dotted::parse(floor).ok()?;
            (driver >= floor).then_some((*major, *minor))
        })
    });
    match (given, derived) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Holds {
    Yes,
    /// A brand/arch condition or an unknown form: cannot be decided.
    Unknown,
    NeedCuda,
    NeedDriver,
    No,
}

/// Splits `cuda>=12.8` into (`cuda`, `>=`, `12.8`).
fn split(cond: &str) -> Option<(&str, &str, &str)> {
    let start = cond.find(['<', '>', '='])?;
    let rest = &cond[start..];
    let op_len = rest.bytes().take_while(|b| matches!(*b, b'<' | b'>' | b'=')).count();
    Some((cond[..start].trim(), &rest[..op_len], rest[op_len..].trim()))
}

fn compare<T: PartialOrd>(op: &str, have: &T, want: &T) -> Option<bool> {
    Some(match op {
        ">=" => have >= want,
        ">" => have > want,
        "<=" => have <= want,
        "<" => have < want,
        "=" | "==" => have == want,
        _ => return None,
    })
}

/// Whether one alternative (`cuda>=12.8` or `brand=tesla,driver>=535,driver<536`) holds.
fn alternative(alt: &str, cuda: Option<(u64, u64)>, driver: Option<&Dotted>) -> Holds {
    let mut holds = Holds::Yes;
    for cond in alt.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let verdict = match split(cond) {
            Some(("cuda", op, value)) => match (cuda, Dotted::parse(value)) {
                (Some(have), Ok(want)) => match compare(op, &have, &(want.major(), want.minor())) {
                    Some(true) => Holds::Yes,
                    Some(false) => Holds::No,
                    None => Holds::Unknown,
                },
                (None, Ok(_)) => Holds::NeedCuda,
                _ => Holds::Unknown,
            },
            Some(("driver", op, value)) => match (driver, Dotted::parse(value)) {
                (Some(have), Ok(want)) => match compare(op, have, &want) {
                    Some(true) => Holds::Yes,
                    Some(false) => Holds::No,
                    None => Holds::Unknown,
                },
                (None, Ok(_)) => Holds::NeedDriver,
                _ => Holds::Unknown,
            },
            _ => Holds::Unknown,
        };
        // One false condition sinks the alternative; otherwise keep the
        // least decided state (Yes < Unknown < NeedCuda < NeedDriver < No).
        if verdict > holds {
            holds = verdict;
        }
    }
    holds
}

/// The `cuda>=X` value of the first alternative that has one.
fn required_cuda(require: &str) -> Option<&str> {
    require.split_whitespace().flat_map(|alt| alt.split(',')).find_map(|cond| {
        match split(cond.trim()) {
            Some(("cuda", ">=", value)) => Some(value),
            _ => None,
        }
    })
}

fn push_cuda(out: &mut String, (major, minor): (u64, u64)) {
    pitfall_sdk::text::push_int(out, major as i64);
    out.push('.');
    pitfall_sdk::text::push_int(out, minor as i64);
}

fn evaluate(m: &Manifest) -> Outcome {
    // Selectors `container` and `accelerator:nvidia`.
    if m.image().is_none() || !m.accelerators().any(|a| a.vendor().as_deref() == Some("nvidia")) {
        return Outcome::clear();
    }
    let Some(require) = m.env("NVIDIA_REQUIRE_CUDA") else {
        return Outcome::clear();
    };
    // strconv.ParseBool's true values (cuda_image.go, HasDisableRequire).
    if m.env("NVIDIA_DISABLE_REQUIRE")
        .is_some_and(|v| matches!(v.trim(), "1" | "t" | "T" | "TRUE" | "true" | "True"))
    {
        return Outcome::clear();
    }
    let Some(required) = required_cuda(&require).and_then(|v| Dotted::parse(v).ok()) else {
        return Outcome::clear();
    };
    let required = (required.major(), required.minor());
    let cuda = driver_cuda(m);
    let driver = m.nvidia_driver();
    let mut worst = Holds::Yes;
    let mut any_unknown = false;
    let mut all_no = true;
    for alt in require.split_whitespace() {
        match alternative(alt, cuda, driver.as_ref()) {
            Holds::Yes => return Outcome::clear(),
            Holds::No => {}
            Holds::Unknown => {
                any_unknown = true;
                all_no = false;
            }
            need => {
                all_no = false;
                if need > worst {
                    worst = need;
                }
            }
        }
    }
    if !all_no {
        if worst == Holds::NeedDriver {
            return Outcome::needs("drivers.nvidia");
        }
        if worst == Holds::NeedCuda {
            return Outcome::needs("drivers.cuda_driver");
        }
        // Only undecidable brand/arch alternatives are left: stay silent.
        if any_unknown {
            return Outcome::clear();
        }
    }
    let Some(have) = cuda else {
        return Outcome::needs("drivers.cuda_driver");
    };
    let mut required_text = String::new();
    push_cuda(&mut required_text, required);
    let mut have_text = String::new();
    push_cuda(&mut have_text, have);
    let driver_to = DRIVER_CUDA
        .iter()
        .find(|(_, major, minor)| (*major, *minor) >= required)
        .map_or(DRIVER_CUDA[DRIVER_CUDA.len() - 1].0, |(d, _, _)| *d);
    let mut outcome = Outcome::matched()
        .evidence("env.NVIDIA_REQUIRE_CUDA")
        .param("required", &required_text)
        .param("driver_cuda", &have_text)
        .param("driver_to", driver_to);
    if m.has("drivers.cuda_driver") {
        outcome = outcome.evidence("drivers.cuda_driver");
    }
    outcome = if m.has("drivers.nvidia") {
        outcome.evidence("drivers.nvidia").param_field("driver", "drivers.nvidia")
    } else {
        outcome.param("driver", "version not reported")
    };
    outcome = outcome.remedy(0);
    // Skipping the check only helps within one CUDA major release (minor-version
    // compatibility); across majors the container would start and CUDA fail.
    if have.0 == required.0 {
        outcome = outcome.remedy(1);
    }
    outcome
}

pitfall_sdk::export_rule!(evaluate);
