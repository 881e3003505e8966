//! The cost model: what a change asks of the person who makes it.
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

use std::cmp::Ordering;

use pitfall_contract::Manifest;
use pitfall_contract::actions::Action;
use pitfall_version::Version;
use pitfall_version::name::package_key;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How expensive one change is (see the module's documentation).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// A flag, a workload setting, an environment variable.
    FlagOrEnv,
    /// A pin or upgrade within the installed major release.
    SameMajor,
    /// Any other package change.
    Package,
    /// The container image, the driver or the OS.
    Platform,
    /// Another accelerator or host.
    Hardware,
}

impl Tier {
    /// Every tier, cheapest first.
    pub const ALL: [Tier; 5] =
        [Tier::FlagOrEnv, Tier::SameMajor, Tier::Package, Tier::Platform, Tier::Hardware];

    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::FlagOrEnv => "flag or environment",
            Tier::SameMajor => "version within the same major release",
            Tier::Package => "package change",
            Tier::Platform => "image, OS or driver",
            Tier::Hardware => "hardware",
        }
    }
}

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

/// What a plan costs: its changes per tier, their number, and how far its
/// versions are from the lowest its remedies name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Cost {
    /// Flags, workload settings and environment variables.
    pub flag_or_env: u32,
    /// Pins and upgrades within the installed major release.
    pub same_major: u32,
    /// Other package changes.
    pub package: u32,
    /// Image, OS or driver changes.
    pub platform: u32,
    /// Hardware changes (only in the "on other hardware" answer).
    pub hardware: u32,
    /// Every change.
    pub changes: u32,
    /// How many release steps above the lowest version each remedy names
    /// the plan's versions are (0: every version is the lowest named).
    pub version_steps: u32,
}

impl Cost {
    /// Adds one change of `tier`.
    pub fn add(&mut self, tier: Tier) {
        *self.slot(tier) += 1;
        self.changes += 1;
    }

    fn slot(&mut self, tier: Tier) -> &mut u32 {
        match tier {
            Tier::FlagOrEnv => &mut self.flag_or_env,
            Tier::SameMajor => &mut self.same_major,
            Tier::Package => &mut self.package,
            Tier::Platform => &mut self.platform,
            Tier::Hardware => &mut self.hardware,
        }
    }

    /// The changes of `tier`.
    pub fn of(&self, tier: Tier) -> u32 {
        match tier {
            Tier::FlagOrEnv => self.flag_or_env,
            Tier::SameMajor => self.same_major,
            Tier::Package => self.package,
            Tier::Platform => self.platform,
            Tier::Hardware => self.hardware,
        }
    }

    /// This cost plus `other`.
    pub fn plus(&self, other: &Cost) -> Cost {
        Cost {
            flag_or_env: self.flag_or_env + other.flag_or_env,
            same_major: self.same_major + other.same_major,
            package: self.package + other.package,
            platform: self.platform + other.platform,
            hardware: self.hardware + other.hardware,
            changes: self.changes + other.changes,
            version_steps: self.version_steps + other.version_steps,
        }
    }

    /// One line for people: `2 flag or environment, 1 package change`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = Tier::ALL
            .iter()
            .rev()
            .filter(|t| self.of(**t) > 0)
            .map(|t| format!("{} {}", self.of(*t), t.describe()))
            .collect();
        if parts.is_empty() { "no change".to_owned() } else { parts.join(", ") }
    }
}

impl Ord for Cost {
    fn cmp(&self, other: &Cost) -> Ordering {
        Tier::ALL
            .iter()
            .rev()
            .map(|t| self.of(*t).cmp(&other.of(*t)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then(self.changes.cmp(&other.changes))
            .then(self.version_steps.cmp(&other.version_steps))
    }
}

impl PartialOrd for Cost {
    fn partial_cmp(&self, other: &Cost) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
