//! The host side of the ABI's calls, shared by the engine (behind wasmtime)
//! and by the SDK's native test harness (behind plain function calls), so a
//! rule sees the same answers in `cargo test` as in the registry.

use std::borrow::Cow;
use std::sync::Arc;

use super::fields::{FieldKind, FieldMap};

/// Status codes of `field_str` and `field_len` (negative results).
pub mod status {
    /// The field does not exist.
    pub const MISSING: i32 = -1;
    /// The field exists but has the wrong kind for this call.
    pub const WRONG_KIND: i32 = -2;
}

/// The bytes `ptr..ptr + len` of a guest's memory, with both read as the
/// unsigned 32-bit numbers wasm passes; `None` when the range is not all
/// inside `memory` (the host then traps the rule with an ABI violation).
pub fn guest_range(memory: &[u8], ptr: i32, len: i32) -> Option<&[u8]> {
    let start = ptr as u32 as usize;
    memory.get(start..start.checked_add(len as u32 as usize)?)
}

/// [`guest_range`] for writing: where the host copies a field's text.
pub fn guest_range_mut(memory: &mut [u8], ptr: i32, len: usize) -> Option<&mut [u8]> {
    let start = ptr as u32 as usize;
    memory.get_mut(start..start.checked_add(len)?)
}

/// What a rule reported through the host calls during one evaluation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawOutput {
    /// Field paths offered as evidence.
    pub evidence: Vec<String>,
    /// Field paths the rule needed and did not find.
    pub missing: Vec<String>,
    /// Message and remedy parameters, in call order (later wins).
    pub params: Vec<(String, String)>,
    /// Indices of the metadata's remedies that apply; empty means all.
    pub remedies: Vec<u32>,
    /// Bytes reported so far (paths, keys, values, 4 per remedy index).
    pub bytes: usize,
}

/// Why a rule's output was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// More than the output budget.
    #[error("output exceeds {limit} bytes")]
    TooLarge {
        /// The budget.
        limit: usize,
    },
    /// Text that is not UTF-8.
    #[error("{what} is not valid UTF-8")]
    NotUtf8 {
        /// Which argument.
        what: &'static str,
    },
}

/// One evaluation's view of the manifest and its output so far.
#[derive(Debug)]
pub struct Session {
    fields: Arc<FieldMap>,
    output: RawOutput,
    output_limit: usize,
}

impl Session {
    /// A session over `fields` whose output may not exceed `output_limit` bytes.
    pub fn new(fields: Arc<FieldMap>, output_limit: usize) -> Session {
        Session { fields, output: RawOutput::default(), output_limit }
    }

    /// `field_kind`: the kind of the field at `path` (0 when missing).
    pub fn field_kind(&self, path: &[u8]) -> i32 {
        self.lookup(path).map_or(FieldKind::Missing as i32, |f| f.kind as i32)
    }

    /// `field_len`: elements of an array or members of an object.
    pub fn field_len(&self, path: &[u8]) -> i32 {
        match self.lookup(path) {
            None => status::MISSING,
            Some(f) if matches!(f.kind, FieldKind::Array | FieldKind::Object) => {
                i32::try_from(f.len).unwrap_or(i32::MAX)
            }
            Some(_) => status::WRONG_KIND,
        }
    }

    /// `field_num`: a number field, or a string that is a decimal number
    /// (`"7.5"`); NaN otherwise.
    pub fn field_num(&self, path: &[u8]) -> f64 {
        match self.lookup(path) {
            Some(f) => f.number.or_else(|| f.text.as_deref().and_then(|t| t.trim().parse().ok())).unwrap_or(f64::NAN),
            None => f64::NAN,
        }
    }

    /// `field_str`: a scalar as text, or the status for missing / not scalar.
    pub fn field_str(&self, path: &[u8]) -> Result<Cow<'_, str>, i32> {
        match self.lookup(path) {
            None => Err(status::MISSING),
            Some(f) => f.text.ok_or(status::WRONG_KIND),
        }
    }

    /// `evidence`: offer the field at `path` as evidence.
    pub fn evidence(&mut self, path: &[u8]) -> Result<(), OutputError> {
        let path = self.text(path, "evidence path")?;
        self.output.evidence.push(path);
        Ok(())
    }

    /// `missing`: name a field the rule needed.
    pub fn missing(&mut self, path: &[u8]) -> Result<(), OutputError> {
        let path = self.text(path, "missing path")?;
        self.output.missing.push(path);
        Ok(())
    }

    /// `param`: set a message/remedy parameter.
    pub fn param(&mut self, key: &[u8], value: &[u8]) -> Result<(), OutputError> {
        let key = self.text(key, "param key")?;
        let value = self.text(value, "param value")?;
        self.output.params.push((key, value));
        Ok(())
    }

    /// `remedy`: select a metadata remedy by index.
    pub fn remedy(&mut self, index: u32) -> Result<(), OutputError> {
        self.charge(4)?;
        self.output.remedies.push(index);
        Ok(())
    }

    /// The output so far, leaving an empty one.
    pub fn take_output(&mut self) -> RawOutput {
        std::mem::take(&mut self.output)
    }

    fn lookup(&self, path: &[u8]) -> Option<super::fields::Field<'_>> {
        self.fields.get_bytes(path)
    }

    fn text(&mut self, bytes: &[u8], what: &'static str) -> Result<String, OutputError> {
        self.charge(bytes.len())?;
        std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| OutputError::NotUtf8 { what })
    }

    fn charge(&mut self, bytes: usize) -> Result<(), OutputError> {
        self.output.bytes = self.output.bytes.saturating_add(bytes);
        if self.output.bytes > self.output_limit {
            return Err(OutputError::TooLarge { limit: self.output_limit });
        }
        Ok(())
    }
}
