//! Container image references, `[registry/]repository[:tag][@digest]`
//! (`container.image`): which image a manifest runs and the release its
//! tag names. Rules about an engine's official image (TGI, Ollama, vLLM's
//! CPU images) judge the release by the tag, as its maintainers publish
//! one image per release.

use alloc::string::String;

use crate::outcome::Outcome;
use crate::version::{Version, pep440_ge, pep440_lt};
use crate::view::{Manifest, Package};

/// The manifest field of the image reference.
pub const IMAGE: &str = "container.image";

/// The reference without its digest (`repo:tag@sha256:...` is `repo:tag`).
fn without_digest(reference: &str) -> &str {
    reference.split('@').next().unwrap_or(reference)
}

/// The repository, registry included, without tag or digest
/// (`ghcr.io/huggingface/text-generation-inference:2.2.0` gives
/// `ghcr.io/huggingface/text-generation-inference`; a registry's port,
/// `localhost:5000/app`, is kept).
pub fn repository(reference: &str) -> &str {
    let reference = without_digest(reference.trim());
    match reference.rsplit_once(':') {
        // A colon before the last `/` is a registry's port, not a tag.
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => reference,
    }
}

/// The tag when the reference writes one (`2.2.0-rocm`); `None` for a
/// bare repository (Docker's `latest`) or a digest alone.
pub fn tag(reference: &str) -> Option<&str> {
    let reference = without_digest(reference.trim());
    let (_, tag) = reference.rsplit_once(':')?;
    (!tag.contains('/') && !tag.is_empty()).then_some(tag)
}

/// Whether the reference is of `repository` (`ollama/ollama`) in any
/// registry: `ollama/ollama:0.5.4` and `docker.io/ollama/ollama` are,
/// `myorg/ollama/ollama-fork` is not.
pub fn is_of(reference: &str, repository_name: &str) -> bool {
    let repo = repository(reference);
    repo == repository_name
        || repo.strip_suffix(repository_name).is_some_and(|registry| registry.ends_with('/'))
}

/// The release the tag names, for version comparisons: the tag when it is
/// a version (`0.12.6-rc1` is 0.12.6rc1 by PEP 440), else its part
/// before the first `-` (`2.2.0-rocm` and `v0.18.0-x86_64` give `2.2.0`
/// and `v0.18.0`) when that is one; `None` for `latest`, `sha-1a2b`, a
/// digest alone, or no tag.
pub fn release(reference: &str) -> Option<&str> {
    let tag = tag(reference)?;
    if Version::parse(tag).is_ok() {
        return Some(tag);
    }
    let release = tag.split('-').next()?;
    Version::parse(release).is_ok().then_some(release)
}

/// Where a rule reads an engine's release: the installed package, or the
/// tag of the engine's official image (`ollama/ollama:0.5.4`).
#[derive(Debug, Clone)]
pub enum Release {
    /// The package, its version stated.
    Package(Package),
    /// The image reference, of the engine's repository; its tag may name
    /// no release (`latest`), which [`Release::need_in`] asks about.
    Image(String),
}

impl Release {
    /// The release of `package` when the manifest states its version,
    /// else of the image when it is of `repository`; `None` when neither
    /// (the package without a version, another image or none).
    pub fn of(m: &Manifest, package: &str, repository: &str) -> Option<Release> {
        if let Some(p) = m.package(package).filter(|p| p.version_text().is_some()) {
            return Some(Release::Package(p));
        }
        m.image().filter(|image| is_of(image, repository)).map(Release::Image)
    }

    /// Whether the release is at least `lo` and below `hi` (PEP 440);
    /// `Err` with the undetermined outcome naming the field when it
    /// cannot be read (an image tag naming no release).
    pub fn need_in(&self, lo: &str, hi: &str) -> Result<bool, Outcome> {
        match self {
            Release::Package(p) => {
                let mut spec = String::with_capacity(lo.len() + hi.len() + 4);
                spec.push_str(">=");
                spec.push_str(lo);
                spec.push_str(",<");
                spec.push_str(hi);
                p.need_version_in(&spec)
            }
            Release::Image(image) => {
                match release(image).map(|r| (pep440_ge(r, lo), pep440_lt(r, hi))) {
                    Some((Some(ge), Some(lt))) => Ok(ge && lt),
                    _ => Err(Outcome::needs(IMAGE)),
                }
            }
        }
    }

    /// The first of `windows` whose range `[lo, hi)` (`range` gives its
    /// ends) holds the release: a rule's table of release windows, each
    /// with what those releases do. `Err` as [`Release::need_in`].
    pub fn window<'w, W>(
        &self,
        windows: &'w [W],
        range: impl Fn(&W) -> (&'static str, &'static str),
    ) -> Result<Option<&'w W>, Outcome> {
        for w in windows {
            let (lo, hi) = range(w);
            if self.need_in(lo, hi)? {
                return Ok(Some(w));
            }
        }
        Ok(None)
    }

    /// `outcome` with the release as evidence and as its parameter `key`:
    /// a package's version filled in by the host
    /// ([`Outcome::param_field`], so the registry can reuse the outcome
    /// for other versions in the range), an image's tag as written
    /// (`latest` when it has none).
    pub fn cite(&self, outcome: Outcome, key: &str) -> Outcome {
        match self {
            Release::Package(p) => {
                let field = p.version_path();
                outcome.evidence(field.as_str()).param_field(key, field.as_str())
            }
            Release::Image(image) => {
                outcome.evidence(IMAGE).param(key, tag(image).unwrap_or("latest"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_repository_tag_and_digest() {
        let tgi = "ghcr.io/huggingface/text-generation-inference:2.2.0-rocm";
        assert_eq!(repository(tgi), "ghcr.io/huggingface/text-generation-inference");
        assert_eq!(tag(tgi), Some("2.2.0-rocm"));
        assert_eq!(release(tgi), Some("2.2.0"));
        let pinned = "ollama/ollama:0.5.4@sha256:0123abcd";
        assert_eq!(repository(pinned), "ollama/ollama");
        assert_eq!(release(pinned), Some("0.5.4"));
        assert_eq!(tag("ollama/ollama@sha256:0123abcd"), None);
        assert_eq!(repository("localhost:5000/app"), "localhost:5000/app");
        assert_eq!(tag("localhost:5000/app"), None);
        assert_eq!(tag("localhost:5000/app:1.2"), Some("1.2"));
    }

    #[test]
    fn a_tag_without_a_release_gives_none() {
        assert_eq!(release("vllm/vllm-openai"), None);
        assert_eq!(release("vllm/vllm-openai:latest"), None);
        assert_eq!(release("ghcr.io/huggingface/text-generation-inference:sha-1a2b3c4"), None);
        assert_eq!(
            release("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.18.0-x86_64"),
            Some("v0.18.0")
        );
        assert_eq!(release("x:0.8.5.post1"), Some("0.8.5.post1"));
        assert_eq!(release("ollama/ollama:0.12.6-rc1"), Some("0.12.6-rc1"));
    }

    #[test]
    fn an_image_is_of_its_repository_in_any_registry() {
        assert!(is_of("ollama/ollama", "ollama/ollama"));
        assert!(is_of("docker.io/ollama/ollama:0.5.4", "ollama/ollama"));
        assert!(!is_of("myorg/ollama/ollama-fork:1", "ollama/ollama"));
        assert!(!is_of("notollama/ollama", "ollama/ollama"));
    }
}
