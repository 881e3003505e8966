//! The cost model: what a change asks of the person who makes it. Its
//! types ([`Cost`], [`Tier`]) are the answer's, so they live in
//! `pitfall-api`; which tier a change falls in is decided here.
//!
//! Every change falls in one tier, cheapest first:
//!
//! 1. [`Tier::FlagOrEnv`]: a command-line flag, a workload setting (each
//!    is a `vllm serve` flag), an environment variable, a health probe;
//! 2. [`Tier::SameMajor`]: a pin or upgrade of an installed package that
//!    stays within its major release (the first number of the version);
//! 3. [`Tier::Package`]: any other package change: across a major release,
//!    a package not installed yet, a removal, a build from source, a build
//!    tool, another CUDA for the wheels, another model checkpoint;
//! 4. [`Tier::Platform`]: the container image, the driver, the OS;
//! 5. [`Tier::Hardware`]: another accelerator or host. Never part of a
//!    plan: offered only as "or, on other hardware".
//!
//! Plans are compared tier by tier from the most expensive down (one image
//! change costs more than any number of flags), then by their number of
//! changes, then by how far their versions are from the lowest each
//! remedy names (so the lowest version that passes wins).

use pitfall_api::fix::Tier;
use pitfall_contract::Manifest;
use pitfall_contract::actions::Action;
use pitfall_contract::normalize::package_key;
use pitfall_version::Version;

/// The tier of `action`, which turned `before` into `after`.
pub(crate) fn tier(action: &Action, before: &Manifest, after: &Manifest) -> Tier {
    match action {
        Action::AddFlag { .. }
        | Action::SetEnv { .. }
        | Action::UnsetEnv { .. }
        | Action::ChangeHealthCheck { .. } => Tier::FlagOrEnv,
        // The model is a checkpoint to download, not a flag.
        Action::SetWorkload { field, .. } if field == "model" => Tier::Package,
        Action::SetWorkload { .. } => Tier::FlagOrEnv,
        Action::UpgradePackage { package, .. } | Action::PinPackage { package, .. } => {
            match (installed(before, package), installed(after, package)) {
                (Some(a), Some(b)) if a.release().first() == b.release().first() => Tier::SameMajor,
                _ => Tier::Package,
            }
        }
        Action::RemovePackage { .. }
        | Action::BuildFromSource { .. }
        | Action::InstallTool { .. }
        | Action::ChangeCuda { .. } => Tier::Package,
        Action::ChangeImage { .. } | Action::UpgradeDriver { .. } => Tier::Platform,
        Action::SetHost { field, .. } if field == "os" || field == "glibc" => Tier::Platform,
        Action::SetHost { .. } | Action::ChangeAccelerator { .. } => Tier::Hardware,
    }
}

/// The installed version of `package`, when it parses.
pub(crate) fn installed(manifest: &Manifest, package: &str) -> Option<Version> {
    let key = package_key(package);
    manifest
        .packages
        .iter()
        .find(|p| package_key(&p.name) == key)
        .and_then(|p| p.version.as_deref())
        .and_then(|v| Version::parse(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitfall_api::fix::Cost;

    fn manifest(json: &str) -> Manifest {
        serde_json::from_str(json).expect("test manifest parses")
    }

    #[test]
    fn a_higher_tier_outweighs_any_number_of_lower_ones() {
        let mut flags = Cost::default();
        for _ in 0..5 {
            flags.add(Tier::FlagOrEnv);
        }
        let mut image = Cost::default();
        image.add(Tier::Platform);
        assert!(flags < image);
        let mut one_flag = Cost::default();
        one_flag.add(Tier::FlagOrEnv);
        assert!(one_flag < flags, "fewer changes win within a tier");
    }

    #[test]
    fn version_moves_within_a_major_are_cheaper() {
        let at = |v: &str| {
            manifest(&format!(
                r#"{{"manifest_version":1,"packages":[{{"name":"torch","version":"{v}"}}]}}"#
            ))
        };
        let up = Action::UpgradePackage { package: "torch".into(), to: "2.7.0".into() };
        assert_eq!(tier(&up, &at("2.5.0"), &at("2.7.0")), Tier::SameMajor);
        assert_eq!(tier(&up, &at("2.5.0"), &at("3.0.0")), Tier::Package);
        let none = manifest(r#"{"manifest_version":1}"#);
        assert_eq!(tier(&up, &none, &at("2.7.0")), Tier::Package, "not installed before");
    }
}
