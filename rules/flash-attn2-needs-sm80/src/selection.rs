//! Whether vLLM was told to use FlashAttention-2, and how (the workload's
//! `attention_backend`, the `VLLM_ATTENTION_BACKEND` variable, or both).
//! `flash-attn2-head-dim-max-256` (B4) includes this file by path, so the
//! two rules read the selection, cite it and pick its remedy alike; both
//! order their remedies: 0 workload, 1 variable, 2 both.

use pitfall_sdk::prelude::*;

const ENV: &str = "VLLM_ATTENTION_BACKEND";
const ENV_PATH: &str = "env.VLLM_ATTENTION_BACKEND";
const BACKEND_PATH: &str = "workload.attention_backend";

fn is_flash_attn(value: &str) -> bool {
    let v = value.trim();
    // FLASH_ATTN_VLLM_V1 is the V1 engine's older name for the same backend.
    ["FLASH_ATTN", "FLASH-ATTN", "FLASH_ATTN_VLLM_V1"]
        .iter()
        .any(|name| v.eq_ignore_ascii_case(name))
}

/// Where FlashAttention was selected.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Selection {
    by_workload: bool,
    by_env: bool,
}

impl Selection {
    /// The selection, or `None` when FlashAttention was not selected. The
    /// variable is vLLM's; it selects nothing when vLLM is not installed.
    pub(crate) fn of(m: &Manifest) -> Option<Selection> {
        let by_workload = m.workload().attention_backend().is_some_and(|b| is_flash_attn(&b));
        let by_env = m.package("vllm").is_some() && m.env(ENV).is_some_and(|b| is_flash_attn(&b));
        (by_workload || by_env).then_some(Selection { by_workload, by_env })
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
        let (via, remedy) = match (self.by_workload, self.by_env) {
            (true, true) => ("workload.attention_backend and VLLM_ATTENTION_BACKEND", 2),
            (true, false) => ("workload.attention_backend", 0),
            _ => ("VLLM_ATTENTION_BACKEND", 1),
        };
        outcome.param("via", via).remedy(remedy)
    }
}
