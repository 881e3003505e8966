//! transformers turns its PyTorch backend off when torch is older than its
//! floor, and then every PyTorch model class raises. Read in
//! transformers/utils/import_utils.py in the PyPI wheels (bisected over the
//! releases; each boundary read on both sides):
//! - 4.51.3 has no floor; 4.52.1 .. 4.57.x: torch >= 2.1;
//! - 5.0.0: >= 2.2; 5.1.0 .. 5.14.1: >= 2.4; 5.15.0 .. 5.19.0: >= 2.5;
//!   5.20.0 .. 5.25.0 (the newest read): >= 2.6.
//!
//! The log line is "Disabling PyTorch because PyTorch >= X is required but
//! found Y"; loading a model then fails with "... requires the PyTorch
//! library but it was not found in your environment" (5.x newer wording:
//! "requires PyTorch >= X, but PyTorch was not found or an older version is
//! installed").
//!
//! 4.56.0 .. 4.57.x need torch 2.2 although their floor says 2.1: their
//! utils/generic.py calls `torch.utils._pytree.register_pytree_node` at
//! import without the version check 4.38.0 .. 4.55.4 had (read in the wheels
//! of 4.55.0, 4.55.4, 4.56.0, 4.56.2, 4.57.0, 4.57.6), and torch has that
//! function from 2.2.0 (torch/utils/_pytree.py: 2.1.2 has only
//! `_register_pytree_node`). With torch 2.1.x `import transformers` fails
//! with "AttributeError: module 'torch.utils._pytree' has no attribute
//! 'register_pytree_node'".
//!
//! 4.50.0 .. 4.51.3 check no torch version but need torch 2.1: their
//! integrations/flex_attention.py (imported by modeling_utils.py) applies
//! `@torch.compiler.disable(recursive=False)` at module level (read in every
//! wheel from 4.50.0 to 4.51.3; absent in 4.48.3 and 4.49.0), and
//! torch has `torch.compiler` from 2.1.0 (the 2.0.1 wheel has no
//! torch/compiler). With torch 2.0.x importing a model class fails with
//! "AttributeError: module 'torch' has no attribute 'compiler'".
//!
//! 5.10.1 .. 5.10.4 (there is no 5.10.3 on PyPI) need torch 2.7 although
//! their floor says 2.4: integrations/finegrained_fp8.py sets
//! `_UE8M0_SF_DTYPE = torch.float8_e8m0fnu` at module level, and
//! modeling_utils.py imports that module at its top (read in the wheels:
//! absent in 5.10.0, present in 5.10.1, 5.10.2, 5.10.4; 5.11.0 reads it
//! through `_get_ue8m0_dtype()` behind `hasattr`, as do 5.14.1 and 5.25.0).
//! torch has `float8_e8m0fnu` from 2.7.0 (torch/_C/__init__.pyi and
//! c10/core/ScalarType.h of the 2.7.0 wheel; absent in 2.6.0). With torch
//! 2.4 .. 2.6 importing any model class, processor or pipeline fails with
//! "AttributeError: module 'torch' has no attribute 'float8_e8m0fnu'".
//! NVIDIA's 2.7.0a0 builds lacking it are not matched (PEP 440 `<2.7.0`
//! excludes 2.7.0's pre-releases).
#![no_std]

use pitfall_sdk::prelude::*;

const DISABLED: &str =
    "it disables its PyTorch backend and every model class raises that PyTorch is missing";
const DISABLED_THEN_PYTREE: &str = "it disables its PyTorch backend and every model class raises that PyTorch is missing (and torch 2.1.x, which passes that check, fails at import: these releases call torch.utils._pytree.register_pytree_node, which torch has from 2.2)";
const COMPILER: &str = "it checks no torch version, but importing its model classes (transformers.modeling_utils) fails with AttributeError: module 'torch' has no attribute 'compiler', which torch has from 2.1";
const DISABLED_THEN_E8M0: &str = "it disables its PyTorch backend and every model class raises that PyTorch is missing (and torch 2.4 to 2.6, which pass that check, fail at import: these releases read torch.float8_e8m0fnu at module level, which torch has from 2.7)";
const E8M0: &str = "its own check (torch >= 2.4) lets it through, but importing its model classes (transformers.modeling_utils, hence AutoProcessor and pipeline too) fails with AttributeError: module 'torch' has no attribute 'float8_e8m0fnu', which torch has from 2.7 (transformers 5.11.0 no longer reads it at import)";
const PYTREE: &str = "its own check (torch >= 2.1) lets it through, but `import transformers` fails with AttributeError: module 'torch.utils._pytree' has no attribute 'register_pytree_node', which torch has from 2.2";

/// (transformers releases, torch versions that fail as a PEP 440 bound,
/// the floor to print, the torch release that fixes it, what happens).
const FLOORS: [(&str, &str, &str, &str, &str); 10] = [
    (">=4.50.0,<4.52.1", "<2.1.0", "2.1", "2.1.0", COMPILER),
    (">=4.52.1,<4.56.0", "<2.1.0", "2.1", "2.1.0", DISABLED),
    (">=4.56.0,<5.0.0", "<2.1.0", "2.1", "2.2.0", DISABLED_THEN_PYTREE),
    (">=4.56.0,<5.0.0", "<2.2.0", "2.2", "2.2.0", PYTREE),
    (">=5.0.0,<5.1.0", "<2.2.0", "2.2", "2.2.0", DISABLED),
    (">=5.10.1,<5.11.0", "<2.4.0", "2.4", "2.7.0", DISABLED_THEN_E8M0),
    (">=5.10.1,<5.11.0", "<2.7.0", "2.7", "2.7.0", E8M0),
    (">=5.1.0,<5.15.0", "<2.4.0", "2.4", "2.4.0", DISABLED),
    (">=5.15.0,<5.20.0", "<2.5.0", "2.5", "2.5.0", DISABLED),
    (">=5.20.0", "<2.6.0", "2.6", "2.6.0", DISABLED),
];

fn evaluate(m: &Manifest) -> Outcome {
    let (Some(tf), Some(torch)) = (m.package("transformers"), m.package("torch")) else {
        return Outcome::clear();
    };
    for (tf_range, torch_below, floor, fix, effect) in FLOORS {
        match tf.version_in(tf_range) {
            None => return Outcome::needs(tf.version_path().as_str()),
            Some(false) => continue,
            Some(true) => {}
        }
        match torch.version_in(torch_below) {
            None => return Outcome::needs(torch.version_path().as_str()),
            // The next row for the same releases may still hold.
            Some(false) => continue,
            Some(true) => {
                return Outcome::matched()
                    .evidence(tf.version_path().as_str())
                    .evidence(torch.version_path().as_str())
                    .param_field("transformers", tf.version_path().as_str())
                    .param_field("torch", torch.version_path().as_str())
                    .param("floor", floor)
                    .param("fix", fix)
                    .param("effect", effect);
            }
        }
    }
    Outcome::clear()
}

pitfall_sdk::export_rule!(evaluate);
