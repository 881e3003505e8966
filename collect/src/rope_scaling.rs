//! The scaling type of a RoPE scaling dict, as vLLM takes it
//! (`--rope-scaling '{"rope_type": "llama3", "factor": 8.0}'`, JSON) and
//! prints it (`rope_scaling={'type': 'dynamic', 'factor': 2.0}` in its
//! engine start-up line, a Python dict). vLLM puts the dict in place of the
//! checkpoint's `rope_scaling` (transformers_utils/config.py `get_config`
//! in the 0.5.3 sdist: `config.update({key: value})`), so its type is the
//! one the model runs with.

/// `rope_type`, else the older key `type`; `None` when the text names
/// neither as a quoted string member.
pub(crate) fn rope_scaling_type(dict: &str) -> Option<String> {
    ["rope_type", "type"].into_iter().find_map(|key| quoted_member(dict, key))
}

/// The string value of member `key` (quoted with `"` or `'`), the first
/// one written.
fn quoted_member(dict: &str, key: &str) -> Option<String> {
    ['"', '\''].into_iter().find_map(|quote| {
        let name = format!("{quote}{key}{quote}");
        let after = &dict[dict.find(&name)? + name.len()..];
        let value = after.trim_start().strip_prefix(':')?.trim_start();
        let open = value.chars().next().filter(|c| matches!(c, '"' | '\''))?;
        let value = &value[1..];
        let text = value[..value.find(open)?].trim();
        (!text.is_empty()).then(|| text.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_of_json_and_python_dicts() {
        for (dict, want) in [
            (r#"{"rope_type": "llama3", "factor": 8.0}"#, Some("llama3")),
            (r#"{"type":"dynamic","factor":2.0}"#, Some("dynamic")),
            ("{'type': 'dynamic', 'factor': 2.0}", Some("dynamic")),
            ("{'factor': 8.0, 'rope_type': 'llama3', 'type': 'llama3'}", Some("llama3")),
            ("{'rope_type': 'yarn', 'type': 'yarn', 'beta_fast': None}", Some("yarn")),
            (r#"{"factor": 8.0}"#, None),
            ("None", None),
            (r#"{"type": ""}"#, None),
            (r#"{"type": 2}"#, None),
            (r#"{"type": "unterminated}"#, None),
        ] {
            assert_eq!(rope_scaling_type(dict).as_deref(), want, "{dict}");
        }
    }
}
