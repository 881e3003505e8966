//! The model table (`data/models.json`): the architecture of the model ids
//! people serve, so a manifest that names `meta-llama/Llama-3.1-8B-Instruct`
//! knows its heads, KV heads, head sizes, layers, context and dtype.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::source::{Source, parse};

const TABLE_JSON: &str = include_str!("../data/models.json");

/// One model id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// The Hugging Face id: `meta-llama/Llama-3.1-8B-Instruct`.
    pub id: String,
    /// Earlier ids of the same checkpoint.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The family, e.g. `llama-3.1`.
    pub family: String,
    /// config.json `model_type`.
    pub model_type: Option<String>,
    /// config.json `architectures[0]`.
    pub architecture: Option<String>,
    /// Total parameters, billions.
    pub parameters_b: Option<f64>,
    /// Parameters read per token (MoE active, or effective), billions.
    pub active_parameters_b: Option<f64>,
    /// Transformer layers.
    pub num_hidden_layers: Option<u32>,
    /// Attention heads.
    pub num_attention_heads: Option<u32>,
    /// Key/value heads.
    pub num_kv_heads: Option<u32>,
    /// Every distinct head size across layer types.
    #[serde(default)]
    pub head_dims: Vec<u32>,
    /// Hidden size.
    pub hidden_size: Option<u32>,
    /// Maximum context (max_position_embeddings).
    pub max_context: Option<u64>,
    /// The checkpoint's dtype.
    pub dtype: Option<String>,
    /// Quantization method (config `quantization_config.quant_method`).
    pub quantization: Option<String>,
    /// Quantized weights' bits.
    pub quantization_bits: Option<u32>,
    /// The first transformers release that supports it.
    pub min_transformers: Option<String>,
    /// Where each fact was read.
    pub sources: Vec<Source>,
}

struct Table {
    models: Vec<Model>,
    /// Lower-cased id or alias → index.
    by_id: HashMap<String, usize>,
    /// Lower-cased name without the organisation (`llama-3.1-8b-instruct`)
    /// → indexes: a local path or a bare name resolves only when one fits.
    by_name: HashMap<String, Vec<usize>>,
}

fn loaded() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let models = parse::<Vec<Model>>("models.json", TABLE_JSON);
        let mut by_id = HashMap::new();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, m) in models.iter().enumerate() {
            for id in std::iter::once(&m.id).chain(&m.aliases) {
                let id = id.to_lowercase();
                let name = id.rsplit('/').next().unwrap_or(&id).to_owned();
                by_id.insert(id, i);
                let names = by_name.entry(name).or_default();
                if !names.contains(&i) {
                    names.push(i);
                }
            }
        }
        Table { models, by_id, by_name }
    })
}

/// Every model of the table.
pub fn table() -> &'static [Model] {
    &loaded().models
}

/// The model `id` names: its Hugging Face id or an earlier one (case does
/// not count), or a path or bare name whose last part is one model's
/// name (`/models/Llama-3.1-8B-Instruct`), when only one model has it.
pub fn lookup(id: &str) -> Option<&'static Model> {
    let table = loaded();
    let id = id.trim().trim_end_matches('/').to_lowercase();
    if let Some(&i) = table.by_id.get(&id) {
        return Some(&table.models[i]);
    }
    let name = id.rsplit(['/', '\\']).next()?;
    match table.by_name.get(name).map(Vec::as_slice) {
        Some([only]) => Some(&table.models[*only]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::source::is_citable;

    #[test]
    fn every_model_is_consistent_and_sourced() {
        let mut ids = HashSet::new();
        for m in table() {
            for id in std::iter::once(&m.id).chain(&m.aliases) {
                assert!(ids.insert(id.to_lowercase()), "{id} twice");
            }
            if let (Some(heads), Some(kv)) = (m.num_attention_heads, m.num_kv_heads) {
                assert!(kv > 0 && heads % kv == 0, "{}: {heads} heads, {kv} KV heads", m.id);
            }
            if let (Some(total), Some(active)) = (m.parameters_b, m.active_parameters_b) {
                assert!(active <= total * 1.0001, "{}: {active} active of {total}", m.id);
            }
            assert!(m.head_dims.iter().all(|&d| (32..=1024).contains(&d)), "{}", m.id);
            assert!(!m.sources.is_empty(), "{}: no source", m.id);
            for s in &m.sources {
                assert!(is_citable(&s.url), "{}: source {:?}", m.id, s.url);
            }
        }
        assert!(table().len() >= 150, "{} models", table().len());
    }

    #[test]
    fn ids_paths_and_bare_names_resolve() {
        let m = lookup("meta-llama/Llama-3.1-8B-Instruct").expect("in the table");
        assert_eq!((m.num_attention_heads, m.num_kv_heads), (Some(32), Some(8)));
        assert_eq!(lookup("META-LLAMA/llama-3.1-8b-instruct").map(|m| &m.id), Some(&m.id));
        assert_eq!(lookup("/models/Llama-3.1-8B-Instruct/").map(|m| &m.id), Some(&m.id));
        assert!(lookup("someone/never-heard-of-it-7B").is_none());
    }
}
