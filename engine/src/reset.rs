//! Putting a rule's instance back into the state a fresh instance of its
//! module starts in, so that an [`crate::Evaluator`] can evaluate the same
//! rule again without instantiating it anew. Instantiation (a pooled slot,
//! the instance's context, registering it with the store) is most of what
//! a short evaluation costs; a plug-in host such as Extism avoids it by
//! keeping one instance across calls, and so every call sees what the last
//! one left. Here the instance is reset first, so no evaluation can see
//! anything of an earlier one: the sandbox's invariant holds as it does
//! for a fresh instance.
//!
//! An instance of a core module keeps state in four places: its linear
//! memory (size and bytes), its mutable globals, its tables, and which of
//! its segments are dropped. A module is **resettable** when the last two
//! cannot change: no instruction writes a table (`table.set`, `table.grow`,
//! `table.fill`, `table.copy`, `table.init`) or drops or reads a passive
//! segment (`elem.drop`, `data.drop`, `memory.init`), and no mutable global
//! holds a reference. Its memory and globals are then put back by the host
//! ([`ResetPlan::restore`]): every byte of the memory zeroed and the active
//! data segments copied in again, in order, and every mutable global set
//! to its constant initial value. A module without a start function (the
//! engine refuses those) runs no code at instantiation, so that is all a
//! fresh instance has. An instance whose memory grew is never reused, as
//! memory cannot shrink.
//!
//! The host reaches the globals because the module the engine compiles is
//! the rule's module with one more export per mutable global
//! ([`Resettable::exporting_globals`]); nothing else about it changes, and
//! the rule's identity stays the sha256 of the bytes it was published as.
//! A module that is not resettable is compiled as it is and evaluated in a
//! fresh instance every time.

use wasmparser::{ConstExpr, DataKind, ExternalKind, Operator, Parser, Payload, ValType};
use wasmtime::{AsContextMut, Global, Memory, Module, ModuleExport, V128, Val};

/// The prefix of the export names the engine adds for a module's mutable
/// globals. A module that already exports a name with it is not reset.
const GLOBAL_EXPORT_PREFIX: &str = "pitfall.reset.global.";

/// What it takes to return an instance of one module to its fresh state.
pub(crate) struct ResetPlan {
    /// Bytes of linear memory a fresh instance has.
    pub(crate) memory_bytes: usize,
    /// The active data segments, in order: where each is copied, its bytes.
    data: Vec<(usize, Vec<u8>)>,
    /// Each mutable global: the name it is exported under, its initial value.
    pub(crate) globals: Vec<(String, Val)>,
    /// Those exports in the compiled module, in the same order
    /// ([`ResetPlan::linked`]).
    pub(crate) exports: Vec<ModuleExport>,
}

/// A resettable module: its plan, and the bytes to compile.
pub(crate) struct Resettable {
    pub(crate) plan: ResetPlan,
    /// The module with its mutable globals exported; `None` when it has none
    /// (the rule's own bytes are compiled).
    pub(crate) exporting_globals: Option<Vec<u8>>,
}

impl ResetPlan {
    /// The plan with its globals' exports found in `module`, compiled from
    /// [`Resettable::exporting_globals`]; `None` when one is missing (none
    /// is expected: the compiled-code cache holds only code compiled here),
    /// and the module is then not reset.
    pub(crate) fn linked(mut self, module: &Module) -> Option<ResetPlan> {
        self.exports = self
            .globals
            .iter()
            .map(|(name, _)| module.get_export_index(name))
            .collect::<Option<_>>()?;
        Some(self)
    }

    /// Puts back the memory and globals of an instance whose memory is
    /// still [`ResetPlan::memory_bytes`] long (the caller checks: an
    /// instance whose memory grew is not reused). `globals` are the
    /// instance's exports of [`ResetPlan::globals`], in the same order.
    pub(crate) fn restore(
        &self,
        mut store: impl AsContextMut,
        memory: Memory,
        globals: &[Global],
    ) -> wasmtime::Result<()> {
        let bytes = memory.data_mut(&mut store);
        if bytes.len() != self.memory_bytes {
            return Err(wasmtime::Error::msg("a reused instance's memory changed size"));
        }
        bytes.fill(0);
        for (offset, segment) in &self.data {
            // In bounds: `plan` kept only segments that fit the initial memory.
            bytes[*offset..*offset + segment.len()].copy_from_slice(segment);
        }
        for (global, (_, initial)) in globals.iter().zip(&self.globals) {
            global.set(&mut store, *initial)?;
        }
        Ok(())
    }
}

/// Reads whether `bytes` (a module [`crate::inspect::inspect`] accepted)
/// is resettable, and if so what resetting it takes. `None` for anything
/// it cannot decide, which only costs the module its reuse.
pub(crate) fn resettable(bytes: &[u8]) -> Option<Resettable> {
    let mut memory_bytes = None;
    let mut data = Vec::new();
    let mut mutable_globals: Vec<(u32, Val)> = Vec::new();
    let mut imported_globals = 0u32;
    let mut defined_globals = 0u32;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.ok()? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    if matches!(import.ok()?.ty, wasmparser::TypeRef::Global(_)) {
                        imported_globals += 1;
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    let memory = memory.ok()?;
                    if memory_bytes.is_some() {
                        return None;
                    }
                    memory_bytes = Some(usize::try_from(memory.initial.checked_mul(65536)?).ok()?);
                }
            }
            Payload::GlobalSection(reader) => {
                for global in reader {
                    let global = global.ok()?;
                    let index = imported_globals + defined_globals;
                    defined_globals += 1;
                    if global.ty.mutable {
                        mutable_globals
                            .push((index, constant(global.ty.content_type, &global.init_expr)?));
                    }
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    if export.ok()?.name.starts_with(GLOBAL_EXPORT_PREFIX) {
                        return None;
                    }
                }
            }
            Payload::DataSection(reader) => {
                for segment in reader {
                    let segment = segment.ok()?;
                    if let DataKind::Active { memory_index: 0, offset_expr } = segment.kind {
                        let offset = i32_constant(&offset_expr)? as u32 as usize;
                        data.push((offset, segment.data.to_vec()));
                    } else if let DataKind::Active { .. } = segment.kind {
                        return None;
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                let mut ops = body.get_operators_reader().ok()?;
                while !ops.eof() {
                    if changes_tables_or_segments(&ops.read().ok()?) {
                        return None;
                    }
                }
            }
            Payload::StartSection { .. } => return None,
            _ => {}
        }
    }
    let memory_bytes = memory_bytes?;
    if data
        .iter()
        .any(|(offset, bytes)| offset.checked_add(bytes.len()).is_none_or(|end| end > memory_bytes))
    {
        return None;
    }
    let exported: Vec<(u32, String)> = mutable_globals
        .iter()
        .map(|(index, _)| (*index, format!("{GLOBAL_EXPORT_PREFIX}{index}")))
        .collect();
    let exporting_globals =
        if exported.is_empty() { None } else { Some(with_global_exports(bytes, &exported)?) };
    let globals = exported
        .into_iter()
        .zip(mutable_globals)
        .map(|((_, name), (_, initial))| (name, initial))
        .collect();
    Some(Resettable {
        plan: ResetPlan { memory_bytes, data, globals, exports: Vec::new() },
        exporting_globals,
    })
}

/// Whether an instruction changes state a reset does not put back.
fn changes_tables_or_segments(op: &Operator<'_>) -> bool {
    matches!(
        op,
        Operator::TableSet { .. }
            | Operator::TableGrow { .. }
            | Operator::TableFill { .. }
            | Operator::TableCopy { .. }
            | Operator::TableInit { .. }
            | Operator::ElemDrop { .. }
            | Operator::DataDrop { .. }
            | Operator::MemoryInit { .. }
    )
}

/// The value of a constant expression of one numeric constant.
fn constant(ty: ValType, expr: &ConstExpr<'_>) -> Option<Val> {
    let mut ops = expr.get_operators_reader();
    let value = match (ty, ops.read().ok()?) {
        (ValType::I32, Operator::I32Const { value }) => Val::I32(value),
        (ValType::I64, Operator::I64Const { value }) => Val::I64(value),
        (ValType::F32, Operator::F32Const { value }) => Val::F32(value.bits()),
        (ValType::F64, Operator::F64Const { value }) => Val::F64(value.bits()),
        (ValType::V128, Operator::V128Const { value }) => {
            Val::V128(V128::from(value.i128() as u128))
        }
        // References (and anything else) are not put back: not resettable.
        _ => return None,
    };
    matches!(ops.read().ok()?, Operator::End).then_some(value)
}

fn i32_constant(expr: &ConstExpr<'_>) -> Option<i32> {
    match constant(ValType::I32, expr)? {
        Val::I32(value) => Some(value),
        _ => None,
    }
}

/// `bytes` with one more export per mutable global, every other section
/// copied as it is.
fn with_global_exports(bytes: &[u8], globals: &[(u32, String)]) -> Option<Vec<u8>> {
    let mut module = wasm_encoder::Module::new();
    let mut exported = false;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.ok()?;
        if let Payload::ExportSection(reader) = &payload {
            let mut section = wasm_encoder::ExportSection::new();
            for export in reader.clone() {
                let export = export.ok()?;
                section.export(export.name, export_kind(export.kind)?, export.index);
            }
            for (index, name) in globals {
                section.export(name, wasm_encoder::ExportKind::Global, *index);
            }
            module.section(&section);
            exported = true;
        } else if let Some((id, range)) = payload.as_section() {
            module.section(&wasm_encoder::RawSection { id, data: bytes.get(range)? });
        }
    }
    // Every rule exports its entry point, so the section is always there.
    exported.then(|| module.finish())
}

fn export_kind(kind: ExternalKind) -> Option<wasm_encoder::ExportKind> {
    Some(match kind {
        ExternalKind::Func => wasm_encoder::ExportKind::Func,
        ExternalKind::Table => wasm_encoder::ExportKind::Table,
        ExternalKind::Memory => wasm_encoder::ExportKind::Memory,
        ExternalKind::Global => wasm_encoder::ExportKind::Global,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundled rules (Rust, built by the SDK's toolchain) are what the
    /// reuse is for: each must be resettable, its rewritten module valid
    /// under the engine's features, and it must differ from the rule's own
    /// module only by the added exports.
    #[test]
    fn bundled_rules_are_resettable_and_only_gain_exports() {
        for m in pitfall_bundled_rules::MODULES {
            let r =
                resettable(m.wasm).unwrap_or_else(|| panic!("{} is not resettable", m.crate_name));
            assert!(r.plan.memory_bytes >= 65536, "{}", m.crate_name);
            let Some(rewritten) = &r.exporting_globals else {
                assert!(r.plan.globals.is_empty());
                continue;
            };
            wasmparser::Validator::new_with_features(crate::inspect::features())
                .validate_all(rewritten)
                .unwrap_or_else(|e| panic!("{}: {e}", m.crate_name));
            let sections = |bytes: &[u8]| -> Vec<(u8, Vec<u8>)> {
                Parser::new(0)
                    .parse_all(bytes)
                    .filter_map(|p| {
                        p.expect("parses")
                            .as_section()
                            .map(|(id, range)| (id, bytes[range].to_vec()))
                    })
                    .collect()
            };
            let (before, after) = (sections(m.wasm), sections(rewritten));
            assert_eq!(before.len(), after.len(), "{}", m.crate_name);
            for ((id, a), (id2, b)) in before.iter().zip(&after) {
                assert_eq!(id, id2);
                if *id != 7 {
                    assert_eq!(a, b, "{}: section {id} changed", m.crate_name);
                }
            }
            let names: Vec<String> = Parser::new(0)
                .parse_all(rewritten)
                .filter_map(|p| match p.expect("parses") {
                    Payload::ExportSection(r) => {
                        Some(r.into_iter().map(|e| e.expect("export").name.to_owned()))
                    }
                    _ => None,
                })
                .flatten()
                .collect();
            for (name, _) in &r.plan.globals {
                assert!(names.contains(name), "{}: {name} not exported", m.crate_name);
            }
        }
    }
}
