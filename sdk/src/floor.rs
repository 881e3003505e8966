//! The finding of a quantization the GPU is too old for. vLLM's
//! quantization methods and compressed-tensors schemes each declare a
//! minimum compute capability (`get_min_capability`), and vLLM refuses a
//! GPU below it at start-up ("Quantization scheme is not supported for the
//! current GPU. Min capability: 80. Current capability: 75."). The rules
//! about those floors differ in which releases declare which floor and in
//! their remedies, not in what the finding shows: that is built here.

use alloc::string::String;

use crate::outcome::Outcome;
use crate::text::CapabilityText;
use crate::version::ComputeCapability;
use crate::view::{Accelerator, Package};

/// `matched`: the GPU `gpu`, of compute capability `cc`, is below `min`,
/// the minimum the installed `vllm` declares for the quantization named
/// by the field `quantization` (`workload.quantization` for a method,
/// `workload.quantization_scheme` for a scheme within one).
///
/// Evidence: that field, the GPU's compute capability and vLLM's version
/// (when the manifest states one). Parameters: `vllm` (the version, quoted
/// by the host without the rule reading it, or `(any release)` without
/// one), `gpu` (its model, else `GPU`), `cc` and `min`. The rule adds its
/// own parameters and its remedies.
pub fn below_capability_floor(
    quantization: &str,
    vllm: &Package,
    gpu: &Accelerator,
    cc: ComputeCapability,
    min: ComputeCapability,
) -> Outcome {
    let version = vllm.version_path();
    let stated = crate::abi::field_kind(version.as_str()) == crate::abi::kind::STRING;
    let outcome = Outcome::matched()
        .evidence(quantization)
        .evidence(gpu.field_path("compute_capability").as_str());
    let outcome = if stated {
        outcome.evidence(version.as_str()).param_field("vllm", version.as_str())
    } else {
        outcome.param("vllm", "(any release)")
    };
    let name = gpu.model().unwrap_or_else(|| String::from("GPU"));
    let (mut cc_text, mut min_text) = ([0u8; 24], [0u8; 24]);
    outcome
        .param("gpu", &name)
        .param("cc", cc.write_to(&mut cc_text))
        .param("min", min.write_to(&mut min_text))
}
