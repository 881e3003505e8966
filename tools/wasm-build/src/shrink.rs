//! Post-link clean-up of a rule module: what the linker leaves in that the
//! engine would pay for at every evaluation and nothing can use.
//!
//! `wasm-ld` defines a funcref table whenever an input object referred to
//! `__indirect_function_table`, even when, after garbage collection, no
//! `call_indirect`, no element segment and no export is left to use it
//! (the usual case once core's panic formatting is gone). Such a table is
//! only null entries, yet the pooling allocator hands every instance a
//! table slot for it and zeroes a page of it afterwards. Dropping it is
//! sound exactly when the module still validates without it: every use of
//! a defined table (an instruction, a segment, an export) names its index,
//! which no longer exists.

use wasmparser::{Parser, Payload, Validator, WasmFeatures};

/// The id of the table section in the binary format.
const TABLE_SECTION: u8 = 4;

/// `wasm` without its table section when nothing uses the table, else
/// `None` (no table, a table in use, or bytes that are not a valid module).
pub fn drop_unused_table(wasm: &[u8]) -> Option<Vec<u8>> {
    let has_defined_table = Parser::new(0)
        .parse_all(wasm)
        .any(|p| matches!(p, Ok(Payload::TableSection(r)) if r.count() > 0));
    if !has_defined_table || !validates(wasm) {
        return None;
    }
    let stripped = without_section(wasm, TABLE_SECTION)?;
    validates(&stripped).then_some(stripped)
}

fn validates(wasm: &[u8]) -> bool {
    Validator::new_with_features(WasmFeatures::default()).validate_all(wasm).is_ok()
}

/// The module with every section of id `id` left out, copied byte for byte
/// otherwise. `None` if the bytes are not a sequence of sections.
fn without_section(wasm: &[u8], id: u8) -> Option<Vec<u8>> {
    let (header, mut rest) = wasm.split_at_checked(8)?;
    let mut out = Vec::with_capacity(wasm.len());
    out.extend_from_slice(header);
    while let Some((&section_id, after_id)) = rest.split_first() {
        let (size, size_len) = leb128_u32(after_id)?;
        let end = 1usize.checked_add(size_len)?.checked_add(usize::try_from(size).ok()?)?;
        let section = rest.get(..end)?;
        if section_id != id {
            out.extend_from_slice(section);
        }
        rest = &rest[end..];
    }
    Some(out)
}

/// An unsigned LEB128 `u32` and the number of bytes it took.
fn leb128_u32(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (i, &b) in bytes.iter().enumerate().take(5) {
        value |= u32::from(b & 0x7f).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections(wasm: &[u8]) -> Vec<&'static str> {
        Parser::new(0)
            .parse_all(wasm)
            .filter_map(|p| match p.expect("parses") {
                Payload::TableSection(_) => Some("table"),
                Payload::ElementSection(_) => Some("elem"),
                Payload::CodeSectionStart { .. } => Some("code"),
                Payload::DataSection(_) => Some("data"),
                Payload::CustomSection(_) => Some("custom"),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_unused_table_is_dropped_and_nothing_else_changes() {
        let wasm = wat::parse_str(
            r#"(module
                 (table 1 1 funcref)
                 (memory (export "memory") 1)
                 (data (i32.const 16) "kept")
                 (func (export "pitfall_evaluate") (result i32) (i32.const 0))
                 (@custom "pitfall.abi" "1"))"#,
        )
        .expect("parses");
        let stripped = drop_unused_table(&wasm).expect("the table is unused");
        assert_eq!(sections(&stripped), ["code", "data", "custom"]);
        assert!(validates(&stripped));
        // Everything but the table section is byte for byte the same.
        // id, size, count, element type, limits flag, minimum, maximum
        assert_eq!(wasm.len() - stripped.len(), 7, "the table section is all that went");
        assert_eq!(drop_unused_table(&stripped), None, "idempotent");
    }

    #[test]
    fn a_table_in_use_is_kept() {
        let uses = [
            // an indirect call
            r#"(type $t (func (result i32)))
               (func (export "f") (result i32) (call_indirect (type $t) (i32.const 0)))"#,
            // an element segment
            r#"(func $g) (elem (i32.const 0) $g)"#,
            // an export
            r#"(export "t" (table 0))"#,
            // a table instruction
            r#"(func (export "f") (result i32) (table.size 0))"#,
        ];
        for body in uses {
            let wasm =
                wat::parse_str(format!("(module (table 1 1 funcref) {body})")).expect("parses");
            assert_eq!(drop_unused_table(&wasm), None, "{body}");
        }
    }

    #[test]
    fn no_table_or_not_wasm_is_left_alone() {
        let wasm = wat::parse_str(r#"(module (memory 1))"#).expect("parses");
        assert_eq!(drop_unused_table(&wasm), None);
        assert_eq!(drop_unused_table(b"\0asm\x01\0\0\0\x04\x99"), None);
        assert_eq!(drop_unused_table(b"nonsense"), None);
    }

    #[test]
    fn leb128() {
        assert_eq!(leb128_u32(&[0x05]), Some((5, 1)));
        assert_eq!(leb128_u32(&[0x80, 0x80, 0x02]), Some((32768, 3)));
        assert_eq!(leb128_u32(&[0x80, 0x80]), None);
        assert_eq!(leb128_u32(&[0xff, 0xff, 0xff, 0xff, 0x7f]), Some((0xffff_ffff, 5)));
    }
}
