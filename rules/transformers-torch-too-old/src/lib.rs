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
#![no_std]

use pitfall_sdk::prelude::*;

const DISABLED: &str =
    "it disables its PyTorch backend and every model class raises that PyTorch is missing";
const DISABLED_THEN_PYTREE: &str = "it disables its PyTorch backend and every model class raises that PyTorch is missing (and torch 2.1.x, which passes that check, fails at import: these releases call torch.utils._pytree.register_pytree_node, which torch has from 2.2)";
const COMPILER: &str = "it checks no torch version, but importing its model classes (transformers.modeling_utils) fails with AttributeError: module 'torch' has no attribute 'compiler', which torch has from 2.1";
const PYTREE: &str = "its own check (torch >= 2.1) lets it through, but `import transformers` fails with AttributeError: module 'torch.utils._pytree' has no attribute 'register_pytree_node', which torch has from 2.2";

/// (transformers releases, torch versions that fail as a PEP 440 bound,
/// the floor to print, the torch release that fixes it, what happens).
const FLOORS: [(&str, &str, &str, &str, &str); 8] = [
    (">=4.50.0,<4.52.1", "<2.1.0", "2.1", "2.1.0", COMPILER),
    (">=4.52.1,<4.56.0", "<2.1.0", "2.1", "2.1.0", DISABLED),
    (">=4.56.0,<5.0.0", "<2.1.0", "2.1", "2.2.0", DISABLED_THEN_PYTREE),
    (">=4.56.0,<5.0.0", "<2.2.0", "2.2", "2.2.0", PYTREE),
    (">=5.0.0,<5.1.0", "<2.2.0", "2.2", "2.2.0", DISABLED),
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
