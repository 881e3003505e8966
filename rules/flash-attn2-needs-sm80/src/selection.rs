//! Whether FlashAttention-2 was selected, and how: vLLM's backend (the
//! workload's `attention_backend`, vLLM's `--attention-backend`, and/or the
//! `VLLM_ATTENTION_BACKEND` variable) or, without vLLM, transformers'
//! `attn_implementation="flash_attention_2"` (normalised to upper case as
//! `workload.attention_backend`; flash-attention issue 762 shows it selecting
//! the flash-attn package). `flash-attn2-head-dim-max-256` (B4) includes this
//! file by path, so the two rules read the selection, cite it and pick its
//! remedy alike; both order their remedies: 0 workload (vLLM), 1 variable,
//! 2 both, 3 workload without vLLM (SDPA).

use pitfall_sdk::prelude::*;

const ENV: &str = "VLLM_ATTENTION_BACKEND";
const ENV_PATH: &str = "env.VLLM_ATTENTION_BACKEND";
const BACKEND_PATH: &str = "workload.attention_backend";

fn is_flash_attn(value: &str) -> bool {
    let v = value.trim();
    // FLASH_ATTN_VLLM_V1 is the V1 engine's older name for the same backend
    // (vLLM 0.9.2 flash_attn.py get_name); FLASH_ATTENTION_2 is transformers'
    // attn_implementation, upper-cased by normalisation.
    ["FLASH_ATTN", "FLASH-ATTN", "FLASH_ATTN_VLLM_V1", "FLASH_ATTENTION_2"]
        .iter()
        .any(|name| v.eq_ignore_ascii_case(name))
}

/// Where FlashAttention was selected.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Selection {
    by_workload: bool,
    by_env: bool,
    vllm: bool,
}

impl Selection {
    /// The selection, or `None` when FlashAttention was not selected. The
    /// variable is vLLM's; it selects nothing when vLLM is not installed.
    pub(crate) fn of(m: &Manifest) -> Option<Selection> {
        let vllm = m.package("vllm").is_some();
        let by_workload = m.workload().attention_backend().is_some_and(|b| is_flash_attn(&b));
        let by_env = vllm && m.env(ENV).is_some_and(|b| is_flash_attn(&b));
        (by_workload || by_env).then_some(Selection { by_workload, by_env, vllm })
    }

    /// Adds the selecting fields as evidence, the `{via}` parameter and the
    /// remedy that undoes exactly this selection.
    pub(crate) fn cite(self, mut outcome: Outcome) -> Outcome {
        if self.by_workload {
            outcome = outcome.evidence(BACKEND_PATH);
        }
        if self.by_env {
            outcome = outcome.evidence(ENV_PATH);
        }
        let (via, remedy) = match (self.by_workload, self.by_env, self.vllm) {
            (true, true, _) => ("workload.attention_backend and VLLM_ATTENTION_BACKEND", 2),
            (true, false, true) => ("workload.attention_backend", 0),
            (true, false, false) => ("workload.attention_backend", 3),
            _ => ("VLLM_ATTENTION_BACKEND", 1),
        };
        outcome.param("via", via).remedy(remedy)
    }
}
