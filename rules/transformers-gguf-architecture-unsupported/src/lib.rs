//! transformers reads a GGUF checkpoint's config (and, in transformers
//! itself, its tensors) with `load_gguf_checkpoint`
//! (modeling_gguf_pytorch_utils.py), which raises for a `general.architecture`
//! outside `GGUF_SUPPORTED_ARCHITECTURES`: "Architecture {arch} not
//! supported" (4.41 .. 4.47) and "GGUF model with architecture {arch} is not
//! supported yet." (from 4.48). vLLM 0.5.5 .. 0.23.x reads a GGUF model's
//! config through the same function, so the installed transformers decides.
//!
//! The first release accepting each architecture was read in the PyPI wheels
//! of every minor release 4.40.0 .. 4.57.0 and 5.0.0 .. 5.25.0 (the keys of
//! GGUF_TENSOR_MAPPING up to 4.47, of GGUF_CONFIG_MAPPING from 4.48, in
//! integrations/ggml.py, plus the renames in load_gguf_checkpoint: qwen2moe
//! -> qwen2_moe, qwen3moe -> qwen3_moe, gpt-oss -> gpt_oss, minimax-m2 ->
//! minimax_m2, llama named "mistral" -> mistral, t5 named "umt5" -> umt5).
//! The previous minor's last patch was read for each boundary.
//!
//! The manifest carries the HF `model_type`, not the GGUF architecture: the
//! table maps one to the other the way vLLM's GGUF loader does
//! (gguf_loader.py: cohere -> command-r, gemma3_text -> gemma3, deepseek_v2/v3
//! -> deepseek2, qwen2_moe/qwen3_moe drop the underscore, else the same name)
//! and llama.cpp's (Mistral is converted as `llama`); the GGUF names were
//! read in gguf-py 0.19.0's MODEL_ARCH_NAMES (PyPI wheel). Model types whose GGUF
//! architecture no release up to 5.25.0 accepts are listed only where a
//! report or the mapping names it; any other type is left clear.
//!
//! vLLM's own requirement on transformers (Requires-Dist of its PyPI
//! wheels) shapes the fix: none above from 0.5.5 to 0.11.0; `<5` from
//! 0.11.1 to 0.19.0; `!=5.0.*,...,!=5.4.*,!=5.5.0` from 0.19.1 to 0.23.0.
//! A fix in 5.x with vLLM 0.11.1 .. 0.19.0 therefore also upgrades vLLM to
//! 0.19.1, and a fix from 5.0.0 to 5.5.0 becomes 5.5.1 under vLLM 0.19.1+.
#![no_std]

use pitfall_sdk::prelude::*;

const TYPE_FIELD: &str = "workload.model_type";
const FORMAT_FIELD: &str = "workload.checkpoint_format";
const QUANT_FIELD: &str = "workload.quantization";
const MODEL_FIELD: &str = "workload.model";

/// The newest transformers release read.
const NEWEST_READ: &str = "<=5.25.0";

/// (HF model_type, GGUF `general.architecture`, first transformers release
/// whose GGUF loader accepts it).
const FIRST_RELEASE: [(&str, &str, &str); 24] = [
    ("llama", "llama", "4.41.0"),
    ("mistral", "llama", "4.41.0"),
    ("qwen2", "qwen2", "4.42.0"),
    ("qwen2_moe", "qwen2moe", "4.45.0"),
    ("phi3", "phi3", "4.45.0"),
    ("bloom", "bloom", "4.46.0"),
    ("falcon", "falcon", "4.46.0"),
    ("gpt2", "gpt2", "4.46.0"),
    ("stablelm", "stablelm", "4.46.0"),
    ("starcoder2", "starcoder2", "4.46.0"),
    ("mamba", "mamba", "4.47.0"),
    ("nemotron", "nemotron", "4.47.0"),
    ("t5", "t5", "4.47.0"),
    ("gemma2", "gemma2", "4.48.0"),
    ("gemma3", "gemma3", "4.52.1"),
    ("gemma3_text", "gemma3", "4.52.1"),
    ("qwen3", "qwen3", "4.54.0"),
    ("qwen3_moe", "qwen3moe", "4.55.0"),
    ("lfm2", "lfm2", "4.57.0"),
    ("umt5", "t5", "4.57.0"),
    ("minimax_m2", "minimax-m2", "5.4.0"),
    ("gpt_oss", "gpt-oss", "5.6.0"),
    ("gemma4", "gemma4", "5.11.0"),
    ("gemma4_text", "gemma4", "5.11.0"),
];

/// (HF model_type, GGUF architecture) that no release up to 5.25.0 accepts.
const NEVER: [(&str, &str); 11] = [
    ("olmo2", "olmo2"),
    // Olmo 3 GGUFs carry `olmo2` (vLLM issue 30691).
    ("olmo3", "olmo2"),
    ("exaone", "exaone"),
    ("qwen3_vl_moe", "qwen3vlmoe"),
    ("qwen3_vl", "qwen3vl"),
    ("qwen3_next", "qwen3next"),
    ("gemma", "gemma"),
    ("cohere", "command-r"),
    ("deepseek_v2", "deepseek2"),
    ("deepseek_v3", "deepseek2"),
    ("phi", "phi2"),
];

const REMEDY_UPGRADE: u32 = 0;
const REMEDY_OTHER_FORMAT: u32 = 1;
const REMEDY_UPGRADE_WITH_VLLM: u32 = 2;

/// vLLM releases whose requirements cap transformers below 5.
const VLLM_BELOW_5: &str = ">=0.11.1,<0.19.1";
/// vLLM releases (with GGUF) that exclude transformers 5.0 .. 5.5.0.
const VLLM_SKIPS_EARLY_5: &str = ">=0.19.1,<0.24.0";
/// The first transformers 5.x vLLM 0.19.1 .. 0.23.0 admit.
const FIRST_5_VLLM_ADMITS: &str = "5.5.1";

/// Whether the workload loads a GGUF checkpoint: the checkpoint format when
/// given, else a `gguf` quantization or a model id that names GGUF.
fn gguf_evidence(m: &Manifest) -> Option<&'static str> {
    if let Some(format) = m.text(FORMAT_FIELD) {
        return format.trim().eq_ignore_ascii_case("gguf").then_some(FORMAT_FIELD);
    }
    if m.workload().quantization().is_some_and(|q| q.trim().eq_ignore_ascii_case("gguf")) {
        return Some(QUANT_FIELD);
    }
    if m.workload().model_mentions(&["gguf"]) == Some(true) {
        return Some(MODEL_FIELD);
    }
    None
}

fn evaluate(m: &Manifest) -> Outcome {
    let Some(tf) = m.package("transformers") else {
        return Outcome::clear();
    };
    let Some(gguf) = gguf_evidence(m) else {
        return Outcome::clear();
    };
    // vLLM 0.24.0 and later load no GGUF at all (vllm-gguf-unsupported).
    if m.package("vllm").is_some_and(|vllm| vllm.version_in(">=0.24.0") == Some(true)) {
        return Outcome::clear();
    }
    let Some(model_type) = m.text(TYPE_FIELD) else {
        return Outcome::needs(TYPE_FIELD);
    };
    let model_type = model_type.trim();
    let base = |arch: &str| {
        Outcome::matched()
            .evidence(tf.version_path().as_str())
            .evidence(gguf)
            .evidence(TYPE_FIELD)
            .param_field("version", tf.version_path().as_str())
            .param("model_type", model_type)
            .param("gguf_arch", arch)
    };
    if let Some((_, arch, first)) = FIRST_RELEASE.iter().find(|(t, _, _)| *t == model_type) {
        let mut below = String::from("<");
        below.push_str(first);
        return match tf.version_in(&below) {
            None => Outcome::needs(tf.version_path().as_str()),
            Some(false) => Outcome::clear(),
            Some(true) => {
                let mut detail = String::from("its GGUF loader accepts that architecture from ");
                detail.push_str(first);
                let found = base(arch).param("detail", &detail);
                let is_5 = pep440_ge(first, "5.0.0") == Some(true);
                let early_5 = is_5 && pep440_lt(first, FIRST_5_VLLM_ADMITS) == Some(true);
                let vllm_in =
                    |spec: &str| m.package("vllm").and_then(|v| v.version_in(spec)) == Some(true);
                if is_5 && vllm_in(VLLM_BELOW_5) {
                    let fix = if early_5 { FIRST_5_VLLM_ADMITS } else { first };
                    return found
                        .evidence("packages.vllm.version")
                        .param("fix", fix)
                        .remedy(REMEDY_UPGRADE_WITH_VLLM);
                }
                let fix = if early_5 && vllm_in(VLLM_SKIPS_EARLY_5) {
                    FIRST_5_VLLM_ADMITS
                } else {
                    first
                };
                found.param("fix", fix).remedy(REMEDY_UPGRADE)
            }
        };
    }
    if let Some((_, arch)) = NEVER.iter().find(|(t, _)| *t == model_type) {
        return match tf.version_in(NEWEST_READ) {
            None => Outcome::needs(tf.version_path().as_str()),
            // Newer than the releases read: not known.
            Some(false) => Outcome::clear(),
            Some(true) => base(arch)
                .param("detail", "no transformers release up to 5.25.0 accepts that architecture")
                .remedy(REMEDY_OTHER_FORMAT),
        };
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
