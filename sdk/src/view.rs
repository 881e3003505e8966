//! A typed view of the manifest for rules. Every accessor is a host call
//! (see [`crate::abi`]); nothing is parsed from JSON inside the rule.
//!
//! Accessors return `Option`: `None` means the client did not send the
//! field (and the hardware table could not fill it in). A rule that needs a
//! field it does not get should answer [`Outcome::needs`] with its path, so
//! the client learns what to collect.

use alloc::string::String;
use alloc::vec::Vec;

use crate::abi;
use crate::outcome::Outcome;
use crate::version::{ArchEntry, ComputeCapability, Dotted, Version, arch_entries};

/// Builds a field path from parts without `core::fmt`.
#[derive(Debug, PartialEq, Eq)]
pub struct Path(String);

/// Room for a typical full path (`accelerators.0.shared_memory_per_block_kib`),
/// so that appending segments neither reallocates nor copies.
const PATH_ROOM: usize = 64;

impl Clone for Path {
    /// A copy with the same spare room, so that a segment appended to the
    /// copy does not reallocate (a derived clone has none).
    fn clone(&self) -> Path {
        let mut s = String::with_capacity(self.0.capacity().max(PATH_ROOM));
        s.push_str(&self.0);
        Path(s)
    }
}

impl Path {
    /// A path of one segment.
    pub fn new(root: &str) -> Path {
        // Room for a typical full path up front: no reallocation (and no
        // copy) as segments are appended.
        let mut s = String::with_capacity(root.len().max(PATH_ROOM - 8) + 8);
        s.push_str(root);
        Path(s)
    }

    /// Appends `.key`.
    pub fn key(mut self, key: &str) -> Path {
        self.0.reserve(key.len() + 1);
        self.0.push('.');
        self.0.push_str(key);
        self
    }

    /// Appends `.index`.
    pub fn index(mut self, index: usize) -> Path {
        self.0.push('.');
        crate::text::push_int(&mut self.0, index as i64);
        self
    }

    /// This path with `.key` appended, in one allocation of the exact size.
    pub(crate) fn child(&self, key: &str) -> Path {
        let mut s = String::with_capacity(self.0.len() + 1 + key.len());
        s.push_str(&self.0);
        s.push('.');
        s.push_str(key);
        Path(s)
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The manifest under evaluation. Obtain it as the argument of the rule's
/// `evaluate` function.
#[derive(Debug)]
pub struct Manifest {
    _private: (),
}

/// A CUDA arch list read from the manifest ([`Manifest::arch_list`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchList {
    /// The entries that parse, in order.
    pub entries: Vec<ArchEntry>,
    /// Their text as listed, joined with `, ` (for messages).
    pub text: String,
}

impl ArchList {
    /// Whether any entry's code runs on a GPU of compute capability `device`.
    pub fn covers(&self, device: ComputeCapability) -> bool {
        self.entries.iter().any(|e| e.runs_on(device))
    }
}

impl Manifest {
    #[doc(hidden)]
    pub const fn __new() -> Manifest {
        Manifest { _private: () }
    }

    /// A scalar field as text (`"7.5"`, `"true"`, `"15360"`).
    pub fn text(&self, path: &str) -> Option<String> {
        abi::field_str(path)
    }

    /// A number field (or a numeric string).
    pub fn number(&self, path: &str) -> Option<f64> {
        abi::field_num(path)
    }

    /// Whether the scalar at `path` contains `needle`, ASCII letters
    /// compared without case; `None` when there is no scalar there. The
    /// host looks (`abi::text_contains`): prefer this to reading the text
    /// when the rule only asks whether it mentions something (a model
    /// family in a model id), since the registry can then reuse the rule's
    /// outcome for every text with the same answers.
    pub fn text_contains(&self, path: &str, needle: &str) -> Option<bool> {
        match abi::text_contains(path, needle) {
            1 => Some(true),
            0 => Some(false),
            _ => None,
        }
    }

    /// Whether the scalar at `path` contains any of `needles` (ASCII letters
    /// without case), asked one at a time in order until one does: the
    /// question [`Manifest::text_contains`] asks, for a list of spellings.
    /// `None` when there is no scalar there (`Some(false)` for no needles,
    /// which asks nothing).
    pub fn text_contains_any(&self, path: &str, needles: &[&str]) -> Option<bool> {
        for needle in needles {
            if self.text_contains(path, needle)? {
                return Some(true);
            }
        }
        Some(false)
    }

    /// Whether the field at `path` is a PEP 440 version the specifier
    /// `spec` contains, asked of the host (`abi::version_in`), or why the
    /// question has no answer: the field is missing, is not a version, or
    /// is not a scalar. See [`Package::version_answer`].
    pub fn version_in(&self, path: &str, spec: &str) -> Result<bool, Unanswered> {
        Unanswered::of(abi::version_in(path, spec))
    }

    /// A boolean field.
    pub fn boolean(&self, path: &str) -> Option<bool> {
        if abi::field_kind(path) != abi::kind::BOOL {
            return None;
        }
        self.text(path).map(|t| t == "true")
    }

    /// Elements of an array field, or members of an object field.
    pub fn len(&self, path: &str) -> Option<usize> {
        abi::field_len(path)
    }

    /// The CUDA arch list at `path` (`packages.torch.cuda_arch_list`,
    /// `build.torch_cuda_arch_list`; an item may hold several archs,
    /// `"8.0;9.0"`), or `None` when there is no list or nothing in it
    /// parses (a list of names cannot be judged). Which GPUs it runs on is
    /// [`ArchList::covers`], by PyTorch's rules ([`ArchEntry::runs_on`]).
    pub fn arch_list(&self, path: &str) -> Option<ArchList> {
        let n = self.len(path)?;
        let mut list = ArchList { entries: Vec::new(), text: String::new() };
        for i in 0..n {
            let Some(item) = self.text(Path::new(path).index(i).as_str()) else { continue };
            for (part, entry) in arch_entries(&item) {
                if !list.text.is_empty() {
                    list.text.push_str(", ");
                }
                list.text.push_str(part);
                list.entries.push(entry);
            }
        }
        (!list.entries.is_empty()).then_some(list)
    }

    /// Whether the field exists (and is not null).
    pub fn has(&self, path: &str) -> bool {
        !matches!(abi::field_kind(path), abi::kind::MISSING | abi::kind::NULL)
    }

    /// The text at `path`, or the undetermined outcome naming it: use with `?`
    /// in an `evaluate` that returns `Result<Outcome, Outcome>`.
    pub fn need(&self, path: &str) -> Result<String, Outcome> {
        self.text(path).ok_or_else(|| Outcome::needs(path))
    }

    /// The number at `path`, or the undetermined outcome naming it.
    pub fn need_number(&self, path: &str) -> Result<f64, Outcome> {
        self.number(path).ok_or_else(|| Outcome::needs(path))
    }

    /// `host.arch`, normalised (`aarch64`, `x86_64`).
    pub fn arch(&self) -> Option<String> {
        self.text("host.arch")
    }

    /// `host.arch`, normalised, or the outcome naming it when the
    /// manifest does not state it (a rule about one CPU's wheels:
    /// `if m.need_arch()? != "x86_64" { return Ok(Outcome::clear()); }`).
    pub fn need_arch(&self) -> Result<String, Outcome> {
        self.arch().ok_or_else(|| Outcome::needs("host.arch"))
    }

    /// `host.cpu_model`.
    pub fn cpu_model(&self) -> Option<String> {
        self.text("host.cpu_model")
    }

    /// `host.cpu_flags` (the flags of `/proc/cpuinfo`), trimmed and lower
    /// case, or `None` when the manifest lists none.
    pub fn cpu_flags(&self) -> Option<Vec<String>> {
        const FLAGS: &str = "host.cpu_flags";
        let n = self.len(FLAGS).filter(|n| *n > 0)?;
        let flags = (0..n)
            .filter_map(|i| self.text(Path::new(FLAGS).index(i).as_str()))
            .map(|f| f.trim().to_ascii_lowercase())
            .collect();
        Some(flags)
    }

    /// An installed package, looked up by its PEP 503 name (`flash_attn` finds `flash-attn`).
    pub fn package(&self, name: &str) -> Option<Package> {
        // `packages.<key>` built in place: one allocation, no separate key.
        let mut path = String::with_capacity(PATH_ROOM);
        path.push_str("packages.");
        push_package_key(&mut path, name);
        let path = Path(path);
        if abi::field_kind(path.as_str()) == abi::kind::OBJECT {
            Some(Package { path })
        } else {
            None
        }
    }

    /// The version text of an installed package.
    pub fn package_version(&self, name: &str) -> Option<String> {
        self.package(name).and_then(|p| p.version_text())
    }

    /// The accelerators, in manifest order.
    pub fn accelerators(&self) -> impl Iterator<Item = Accelerator> + use<> {
        let n = self.len("accelerators").unwrap_or(0);
        (0..n).map(|i| Accelerator { path: Path::new("accelerators").index(i) })
    }

    /// The NVIDIA accelerators (vendor `nvidia`, or unknown vendor with a CUDA compute capability).
    pub fn nvidia_gpus(&self) -> impl Iterator<Item = Accelerator> + use<> {
        self.accelerators().filter(Accelerator::is_nvidia)
    }

    /// The NVIDIA GPU with the lowest compute capability: the one a build
    /// must support. `None` if no NVIDIA GPU states (or was enriched with) one.
    pub fn weakest_nvidia_gpu(&self) -> Option<(Accelerator, ComputeCapability)> {
        self.nvidia_gpus()
            .filter_map(|g| g.compute_capability().map(|cc| (g, cc)))
            .min_by(|a, b| a.1.cmp(&b.1))
    }

    /// [`Manifest::weakest_nvidia_gpu`], or the outcome when there is none:
    /// undetermined naming the first NVIDIA GPU's `compute_capability` when
    /// a GPU is present but no capability is known, clear when there is no
    /// NVIDIA GPU at all. For rules about a GPU's compute capability:
    ///
    /// ```ignore
    /// let (gpu, cc) = match m.need_weakest_nvidia_gpu() { Ok(x) => x, Err(o) => return o };
    /// ```
    pub fn need_weakest_nvidia_gpu(&self) -> Result<(Accelerator, ComputeCapability), Outcome> {
        if let Some(found) = self.weakest_nvidia_gpu() {
            return Ok(found);
        }
        Err(match self.nvidia_gpus().next() {
            Some(gpu) => Outcome::needs(gpu.field_path("compute_capability").as_str()),
            None => Outcome::clear(),
        })
    }

    /// The first NVIDIA GPU whose compute capability `wanted` accepts
    /// (a Hopper GPU for a rule about Hopper): `Ok(None)` when none does
    /// and every NVIDIA GPU states its capability (or there is none),
    /// undetermined naming the first GPU without one otherwise.
    pub fn need_nvidia_gpu_where(
        &self,
        wanted: impl Fn(ComputeCapability) -> bool,
    ) -> Result<Option<(Accelerator, ComputeCapability)>, Outcome> {
        let found = self
            .nvidia_gpus()
            .find_map(|g| g.compute_capability().filter(|cc| wanted(*cc)).map(|cc| (g, cc)));
        if found.is_some() {
            return Ok(found);
        }
        match self.nvidia_gpus().find(|g| g.compute_capability().is_none()) {
            Some(g) => Err(Outcome::needs(g.field_path("compute_capability").as_str())),
            None => Ok(None),
        }
    }

    /// The first of `names` installed with a version in the PEP 440
    /// `spec`, with its index in `names` (the NCCL of a pip wheel or of
    /// conda); undetermined naming the version of one installed without
    /// it.
    pub fn first_package_in(
        &self,
        names: &[&str],
        spec: &str,
    ) -> Result<Option<(usize, Package)>, Outcome> {
        for (i, name) in names.iter().enumerate() {
            if let Some(p) = self.package(name)
                && p.need_version_in(spec)?
            {
                return Ok(Some((i, p)));
            }
        }
        Ok(None)
    }

    /// Whether the job uses two or more GPUs: the accelerators' count, or
    /// tensor or pipeline parallelism of 2 or more (what NCCL is used for).
    pub fn uses_several_gpus(&self) -> bool {
        let w = self.workload();
        self.device_count() >= 2
            || w.tensor_parallel_size().is_some_and(|n| n >= 2)
            || w.pipeline_parallel_size().is_some_and(|n| n >= 2)
    }

    /// Whether the NVIDIA GPUs are joined only by PCIe: `Ok(Some(first))`
    /// when every one reports `pcie`, `Ok(None)` when one reports another
    /// interconnect (or there is no NVIDIA GPU), `Err(gpu)` naming the first
    /// GPU that does not say (so the rule can ask for its `interconnect`).
    pub fn nvidia_pcie_only(&self) -> Result<Option<Accelerator>, Accelerator> {
        let mut first = None;
        for gpu in self.nvidia_gpus() {
            match gpu.interconnect().as_deref() {
                Some("pcie") => {}
                Some(_) => return Ok(None),
                None => return Err(gpu),
            }
            first.get_or_insert(gpu);
        }
        Ok(first)
    }

    /// Total number of accelerator devices (an entry without `count` counts 1).
    pub fn device_count(&self) -> u32 {
        self.accelerators().map(|a| a.count().unwrap_or(1)).sum()
    }

    /// `drivers.nvidia` as a dotted version.
    pub fn nvidia_driver(&self) -> Option<Dotted> {
        self.text("drivers.nvidia").and_then(|t| Dotted::parse(&t).ok())
    }

    /// `drivers.cuda` as a dotted version.
    pub fn cuda(&self) -> Option<Dotted> {
        self.text("drivers.cuda").and_then(|t| Dotted::parse(&t).ok())
    }

    /// `container.image`.
    pub fn image(&self) -> Option<String> {
        self.text("container.image")
    }

    /// The container's shared memory: its IPC mode and /dev/shm size.
    pub fn container_shm(&self) -> ContainerShm {
        ContainerShm {
            ipc: self.text("container.ipc"),
            size_mib: self.number("container.shm_size_mib"),
        }
    }

    /// An environment variable.
    pub fn env(&self, name: &str) -> Option<String> {
        self.text(Path::new("env").key(name).as_str())
    }

    /// The workload.
    pub fn workload(&self) -> Workload<'_> {
        Workload { m: self }
    }

    /// Whether `package` is listed in `build.from_source`.
    pub fn built_from_source(&self, package: &str) -> bool {
        let key = package_key(package);
        let n = self.len("build.from_source").unwrap_or(0);
        (0..n).any(|i| {
            self.text(Path::new("build.from_source").index(i).as_str())
                .is_some_and(|p| package_key(&p) == key)
        })
    }

    /// `build.torch_cuda_arch_list`, parsed; entries that do not parse are skipped.
    pub fn torch_cuda_arch_list(&self) -> Vec<ComputeCapability> {
        let n = self.len("build.torch_cuda_arch_list").unwrap_or(0);
        (0..n)
            .filter_map(|i| self.text(Path::new("build.torch_cuda_arch_list").index(i).as_str()))
            .filter_map(|t| ComputeCapability::parse(t.trim_end_matches("+PTX")).ok())
            .collect()
    }

    /// The compute capabilities a CUDA build compiles for: the arch list
    /// when there is one, else, for a build from source, the local NVIDIA
    /// GPUs' (what PyTorch's extension builder targets without a list);
    /// empty when nothing is built.
    pub fn cuda_build_targets(&self) -> Vec<ComputeCapability> {
        let list = self.torch_cuda_arch_list();
        if !list.is_empty() || self.len("build.from_source").unwrap_or(0) == 0 {
            return list;
        }
        self.nvidia_gpus().filter_map(|g| g.compute_capability()).collect()
    }

    /// `build.tools.<tool>` as a version: `Ok(Some)` when listed with one,
    /// `Ok(None)` when listed as absent (`null`), else (not listed, or a
    /// version that does not parse) the undetermined outcome naming it.
    pub fn need_tool_version(&self, tool: &str) -> Result<Option<Dotted>, Outcome> {
        let path = Path::new("build.tools").key(tool);
        match self.build_tool(tool) {
            Some(None) => Ok(None),
            Some(Some(text)) => {
                Dotted::parse(&text).map(Some).map_err(|_| Outcome::needs(path.as_str()))
            }
            None => Err(Outcome::needs(path.as_str())),
        }
    }

    /// `build.tools.<tool>`: `Some(None)` when listed as absent (`null`),
    /// `None` when not listed at all.
    pub fn build_tool(&self, tool: &str) -> Option<Option<String>> {
        let path = Path::new("build.tools").key(tool);
        match abi::field_kind(path.as_str()) {
            abi::kind::MISSING => None,
            abi::kind::NULL => Some(None),
            _ => Some(self.text(path.as_str())),
        }
    }
}

/// One installed package.
#[derive(Debug, Clone)]
pub struct Package {
    path: Path,
}

impl Package {
    /// The version as installed.
    pub fn version_text(&self) -> Option<String> {
        abi::field_str(self.path.child("version").as_str())
    }

    /// The version, parsed as PEP 440.
    pub fn version(&self) -> Option<Version> {
        self.version_text().and_then(|t| Version::parse(&t).ok())
    }

    /// The ecosystem (`pypi`, `conda`, ...).
    pub fn ecosystem(&self) -> Option<String> {
        abi::field_str(self.path.child("ecosystem").as_str())
    }

    /// The path of its version field, for evidence.
    pub fn version_path(&self) -> Path {
        self.path.child("version")
    }

    /// Whether its version is one the specifier `spec` contains (PEP 440,
    /// as in `applies_to`: `">=0.25,<0.27.2rc0"`); `None` when it has no
    /// version or one that is not PEP 440. The host compares
    /// (`abi::version_in`): prefer this to [`Package::version`] when the
    /// rule only needs the answer, since the registry can then reuse the
    /// rule's outcome for every version with the same answer. Quote the
    /// version with `Outcome::param_field(key, version_path)`, which
    /// reads nothing.
    /// A `spec` that does not parse fails the evaluation, natively as in
    /// the registry, so the rule's own test cases catch it.
    pub fn version_in(&self, spec: &str) -> Option<bool> {
        self.version_answer(spec).ok()
    }

    /// [`Package::version_in`], saying why there is no answer: the
    /// package has no version ([`Unanswered::Missing`]), or one that is
    /// not PEP 440 ([`Unanswered::NotAVersion`]). A rule that cannot
    /// decide without it answers [`Unanswered::outcome`], which names the
    /// field as needed only when it is missing.
    pub fn version_answer(&self, spec: &str) -> Result<bool, Unanswered> {
        Unanswered::of(abi::version_in(self.version_path().as_str(), spec))
    }

    /// [`Package::version_answer`], or the undetermined outcome to return
    /// (`needs` for a missing version, `unreadable` for one that is not
    /// PEP 440): use with `?` in an `evaluate` that returns
    /// `Result<Outcome, Outcome>`.
    pub fn need_version_in(&self, spec: &str) -> Result<bool, Outcome> {
        self.version_answer(spec).map_err(|why| why.outcome(self.version_path().as_str()))
    }
}

/// Why a question about a field has no answer, as the ABI tells them
/// apart (`version_in`'s `-1`, `-2`, `-3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unanswered {
    /// The field is not in the manifest: the client can collect it.
    Missing,
    /// The field is null, an array or an object, where a value belongs.
    WrongKind,
    /// The field's text is not a PEP 440 version (`banana`, `<2`).
    NotAVersion,
}

impl Unanswered {
    /// The answer of a host call that returns 1, 0 or a status.
    fn of(code: i32) -> Result<bool, Unanswered> {
        match code {
            1 => Ok(true),
            0 => Ok(false),
            abi::status::MISSING => Err(Unanswered::Missing),
            abi::status::NOT_A_VERSION => Err(Unanswered::NotAVersion),
            _ => Err(Unanswered::WrongKind),
        }
    }

    /// The undetermined outcome for the field at `path`:
    /// [`Outcome::needs`] when it is missing, [`Outcome::unreadable`]
    /// when it is there but unusable.
    pub fn outcome(self, path: &str) -> Outcome {
        match self {
            Unanswered::Missing => Outcome::needs(path),
            Unanswered::WrongKind | Unanswered::NotAVersion => Outcome::unreadable(path),
        }
    }
}

/// One accelerator entry.
#[derive(Debug, Clone)]
pub struct Accelerator {
    path: Path,
}

impl Accelerator {
    /// The path of one of its fields (`accelerators.0.<field>`), for evidence.
    pub fn field_path(&self, field: &str) -> Path {
        self.path.child(field)
    }

    fn text(&self, field: &str) -> Option<String> {
        abi::field_str(self.field_path(field).as_str())
    }

    fn number(&self, field: &str) -> Option<f64> {
        abi::field_num(self.field_path(field).as_str())
    }

    /// `vendor`.
    pub fn vendor(&self) -> Option<String> {
        self.text("vendor")
    }

    /// `model`, canonical when the hardware table knows it (`T4G`).
    pub fn model(&self) -> Option<String> {
        self.text("model")
    }

    /// Whether it is an NVIDIA device.
    pub fn is_nvidia(&self) -> bool {
        match self.vendor() {
            Some(v) => v == "nvidia",
            None => self.compute_capability().is_some(),
        }
    }

    /// `count` (how many of this model).
    pub fn count(&self) -> Option<u32> {
        self.number("count").map(|n| n as u32)
    }

    /// `compute_capability`.
    pub fn compute_capability(&self) -> Option<ComputeCapability> {
        self.text("compute_capability").and_then(|t| ComputeCapability::parse(&t).ok())
    }

    /// `memory_mib` (device memory).
    pub fn memory_mib(&self) -> Option<f64> {
        self.number("memory_mib")
    }

    /// `memory_bandwidth_gbps`.
    pub fn memory_bandwidth_gbps(&self) -> Option<f64> {
        self.number("memory_bandwidth_gbps")
    }

    /// `shared_memory_per_block_kib`.
    pub fn shared_memory_per_block_kib(&self) -> Option<f64> {
        self.number("shared_memory_per_block_kib")
    }

    /// `interconnect` (`nvlink`, `pcie`).
    pub fn interconnect(&self) -> Option<String> {
        self.text("interconnect")
    }
}

/// The `workload` section.
#[derive(Debug)]
pub struct Workload<'m> {
    m: &'m Manifest,
}

impl Workload<'_> {
    /// `workload.engine` (`vllm`).
    pub fn engine(&self) -> Option<String> {
        self.m.text("workload.engine")
    }

    /// `workload.model`.
    pub fn model(&self) -> Option<String> {
        self.m.text("workload.model")
    }

    /// Whether `workload.model` mentions any of `needles` (ASCII letters
    /// without case; [`Manifest::text_contains_any`]): `None` without a
    /// model. Prefer it to [`Workload::model`] when the rule only asks
    /// which family a model id names.
    pub fn model_mentions(&self, needles: &[&str]) -> Option<bool> {
        self.m.text_contains_any("workload.model", needles)
    }

    /// `workload.parameters_b` (billions).
    pub fn parameters_b(&self) -> Option<f64> {
        self.m.number("workload.parameters_b")
    }

    /// `workload.dtype`, normalised (`bfloat16`, `float16`, `auto`).
    pub fn dtype(&self) -> Option<String> {
        self.m.text("workload.dtype")
    }

    /// `workload.quantization`.
    pub fn quantization(&self) -> Option<String> {
        self.m.text("workload.quantization")
    }

    /// `workload.quantization_scheme`, one spelling per scheme: lower case
    /// with `-` (`w8a8-int8` for llm-compressor's `W8A8` and `INT8`,
    /// `fp8-dynamic` for `FP8_DYNAMIC`, `nvfp4`, `nvfp4a16`, `w4a16`).
    pub fn quantization_scheme(&self) -> Option<String> {
        self.m.text("workload.quantization_scheme")
    }

    /// `workload.quantization_symmetric`: whether the checkpoint's weights
    /// are quantized symmetrically (asymmetric ones carry zero points).
    pub fn quantization_symmetric(&self) -> Option<bool> {
        self.m.boolean("workload.quantization_symmetric")
    }

    /// Whether `workload.quantization_scheme` is INT8 weights and
    /// activations: `w8a8-int8`, as the host spells `W8A8`, `INT8` and
    /// `w8a8_int8` (`w8a8_int8` and `int8` are taken too, any case, as
    /// hosts that only lower-cased it sent them); `None` without a scheme.
    pub fn scheme_is_int8_w8a8(&self) -> Option<bool> {
        let scheme = self.m.text("workload.quantization_scheme")?;
        let s = scheme.trim();
        Some(["w8a8-int8", "w8a8_int8", "int8"].iter().any(|n| s.eq_ignore_ascii_case(n)))
    }

    /// `workload.kv_cache_dtype`.
    pub fn kv_cache_dtype(&self) -> Option<String> {
        self.m.text("workload.kv_cache_dtype")
    }

    /// `workload.attention_backend`, upper case (`TRITON_ATTN`).
    pub fn attention_backend(&self) -> Option<String> {
        self.m.text("workload.attention_backend")
    }

    /// `workload.head_dims`.
    pub fn head_dims(&self) -> Vec<u32> {
        let n = self.m.len("workload.head_dims").unwrap_or(0);
        (0..n)
            .filter_map(|i| self.m.number(Path::new("workload.head_dims").index(i).as_str()))
            .map(|d| d as u32)
            .collect()
    }

    /// `workload.num_attention_heads`.
    pub fn num_attention_heads(&self) -> Option<u32> {
        self.m.number("workload.num_attention_heads").map(|n| n as u32)
    }

    /// `workload.num_kv_heads`.
    pub fn num_kv_heads(&self) -> Option<u32> {
        self.m.number("workload.num_kv_heads").map(|n| n as u32)
    }

    /// `workload.tensor_parallel_size`.
    pub fn tensor_parallel_size(&self) -> Option<u32> {
        self.m.number("workload.tensor_parallel_size").map(|n| n as u32)
    }

    /// `workload.pipeline_parallel_size`.
    pub fn pipeline_parallel_size(&self) -> Option<u32> {
        self.m.number("workload.pipeline_parallel_size").map(|n| n as u32)
    }

    /// `workload.max_model_len`.
    pub fn max_model_len(&self) -> Option<f64> {
        self.m.number("workload.max_model_len")
    }

    /// `workload.max_num_seqs`.
    pub fn max_num_seqs(&self) -> Option<f64> {
        self.m.number("workload.max_num_seqs")
    }

    /// `workload.gpu_memory_utilization`.
    pub fn gpu_memory_utilization(&self) -> Option<f64> {
        self.m.number("workload.gpu_memory_utilization")
    }

    /// Bytes per weight parameter and the precision's name, from
    /// `quantization` and `dtype` (see [`weight_precision`]).
    pub fn weight_precision(&self) -> (f64, &'static str) {
        weight_precision(self.quantization().as_deref(), self.dtype().as_deref())
    }

    /// `workload.disable_custom_all_reduce`.
    pub fn disable_custom_all_reduce(&self) -> Option<bool> {
        self.m.boolean("workload.disable_custom_all_reduce")
    }

    /// `workload.rope_scaling_type`, lower case (`llama3`, `yarn`): the
    /// checkpoint's `rope_scaling.rope_type` (else `type`), or the
    /// engine's override.
    pub fn rope_scaling_type(&self) -> Option<String> {
        self.m.text("workload.rope_scaling_type")
    }

    /// `workload.engine_build_tensorrt`: the TensorRT version that built a
    /// prebuilt engine (`8.6.1`).
    pub fn engine_build_tensorrt(&self) -> Option<String> {
        self.m.text("workload.engine_build_tensorrt")
    }

    /// `workload.engine_version_compatible`: whether a prebuilt TensorRT
    /// engine was built version-compatible.
    pub fn engine_version_compatible(&self) -> Option<bool> {
        self.m.boolean("workload.engine_version_compatible")
    }
}

/// Bytes per weight parameter as served, and the precision's name for
/// messages: 8-bit quantizations (`fp8*`, `int8*`, `w8a*`, `experts_int8`,
/// `modelopt`, `ptpc_fp8`) 1 byte; any other quantization (AWQ, GPTQ,
/// bitsandbytes, NVFP4, ...) 0.5, the optimistic 4-bit case; otherwise the
/// dtype: `float32` 4 bytes, anything else (`float16`, `bfloat16`, `auto`,
/// none given: vLLM's default is the checkpoint's 16-bit type) 2 bytes.
pub fn weight_precision(quantization: Option<&str>, dtype: Option<&str>) -> (f64, &'static str) {
    match quantization {
        Some(q) if !q.is_empty() && q != "none" => {
            let eight_bit = q.starts_with("fp8")
                || q.starts_with("int8")
                || q.starts_with("w8a")
                || q == "experts_int8"
                || q == "modelopt"
                || q == "ptpc_fp8";
            if eight_bit { (1.0, "8-bit quantization") } else { (0.5, "4-bit quantization") }
        }
        _ => match dtype {
            Some("float32") => (4.0, "float32"),
            Some("float16") => (2.0, "float16"),
            Some("bfloat16") => (2.0, "bfloat16"),
            _ => (2.0, "16-bit precision"),
        },
    }
}

pub(crate) use pitfall_version::name::push_package_key;
pub use pitfall_version::name::{package_key, package_key_cow};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_room_when_cloned() {
        let p = Path::new("accelerators").index(12);
        assert_eq!(p.as_str(), "accelerators.12");
        assert!(p.clone().0.capacity() >= PATH_ROOM);
        assert_eq!(p.child("model").as_str(), "accelerators.12.model");
        assert_eq!(p.clone().key("model"), p.child("model"));
    }
}

/// A container's shared memory as the manifest states it
/// (`container.ipc`, `container.shm_size_mib`), read the same way by every
/// rule about a /dev/shm too small for NCCL, DataLoader workers or vLLM.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerShm {
    /// `container.ipc` (`host`, `private`, `shareable`, `container:NAME`).
    pub ipc: Option<String>,
    /// `container.shm_size_mib`.
    pub size_mib: Option<f64>,
}

impl ContainerShm {
    /// The container shares the host's IPC namespace, so its /dev/shm is
    /// the host's and no container limit applies.
    pub fn shares_host(&self) -> bool {
        self.ipc.as_deref() == Some("host")
    }

    /// The undetermined outcome naming both fields, when neither is stated:
    /// a container whose IPC mode and /dev/shm size are unknown may have
    /// either.
    pub fn unknown(&self) -> Option<Outcome> {
        (self.ipc.is_none() && self.size_mib.is_none()).then(|| {
            Outcome::undetermined().missing("container.ipc").missing("container.shm_size_mib")
        })
    }

    /// `outcome` with the `ipc` and `shm` parameters (an unstated IPC mode
    /// is `unreported`; an unstated size is `default_mib`, the runtime's
    /// default) and the fields stated as evidence.
    pub fn annotate(&self, outcome: Outcome, default_mib: f64) -> Outcome {
        let outcome = match &self.ipc {
            Some(mode) => outcome.evidence("container.ipc").param("ipc", mode),
            None => outcome.param("ipc", "unreported"),
        };
        match self.size_mib {
            Some(mib) => outcome.evidence("container.shm_size_mib").param_int("shm", mib as i64),
            None => outcome.param_int("shm", default_mib as i64),
        }
    }
}
