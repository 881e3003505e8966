//! Static checks of a rule module, before any of its code is compiled or
//! run: size, wasm validity under the engine's feature set, ABI version,
//! imports, exports, memory, complexity bounds, and the embedded metadata
//! and test cases.

use pitfall_contract::lint::decode_meta_section;
use pitfall_contract::meta::{
    RuleMeta, TestCase, decode_abi_section, decode_tests_section, read_meta_section, sections,
};
use wasmparser::{
    ConstExpr, DataKind, ElementItems, ElementKind, ExternalKind, FuncType, FunctionBody, Operator,
    Parser, Payload, TypeRef, Validator, WasmFeatures,
};

use crate::abi::{EVALUATE_EXPORT, HOST_FUNCTIONS, MEMORY_EXPORT, SUPPORTED_ABI_VERSIONS};
use crate::error::LoadError;
use crate::limits::{
    HOST_MODULE, Limits, MAX_FUNCTION_BODY_BYTES, MAX_FUNCTIONS, MAX_LOCALS_PER_FUNCTION,
    MAX_NESTING_DEPTH, MAX_TABLE_ELEMENTS,
};

/// What a module says about itself, read without running it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleInfo {
    /// The ABI version of section `pitfall.abi`.
    pub abi_version: u32,
    /// The metadata of section `pitfall.meta`.
    pub meta: RuleMeta,
    /// The test cases of section `pitfall.tests`.
    pub tests: Vec<TestCase>,
}

/// The wasm features rules may use: WebAssembly 2.0, nothing
/// nondeterministic (no threads, no relaxed SIMD) and nothing heavy.
pub(crate) fn features() -> WasmFeatures {
    WasmFeatures::WASM2
}

/// Checks `bytes` and reads its metadata.
pub fn inspect(bytes: &[u8], limits: &Limits) -> Result<ModuleInfo, LoadError> {
    if bytes.len() > limits.max_module_bytes {
        return Err(LoadError::TooLarge { size: bytes.len(), limit: limits.max_module_bytes });
    }
    Validator::new_with_features(features())
        .validate_all(bytes)
        .map_err(|e| LoadError::InvalidWasm(e.to_string()))?;

    let mut types: Vec<FuncType> = Vec::new();
    let mut func_types: Vec<u32> = Vec::new();
    let mut abi = None;
    let mut meta = None;
    let mut tests = None;
    let mut evaluate_export = None;
    let mut memory_exported = false;
    let mut memories = 0u32;
    // Initial sizes, to refuse segments that could never be placed.
    let mut memory_bytes = 0u64;
    let mut table_sizes: Vec<u64> = Vec::new();
    let mut functions = 0u32;
    // Imports come first in the function index space; only functions are
    // importable (check_import refuses the rest).
    let mut imported_functions = 0u32;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
        match payload {
            Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    types.push(ty.map_err(|e| LoadError::InvalidWasm(e.to_string()))?);
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
                    check_import(&import, &types)?;
                    imported_functions += 1;
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    func_types.push(ty.map_err(|e| LoadError::InvalidWasm(e.to_string()))?);
                    functions += 1;
                }
                if functions > MAX_FUNCTIONS {
                    return Err(LoadError::TooComplex(format!(
                        "{functions} functions (at most {MAX_FUNCTIONS})"
                    )));
                }
            }
            Payload::TableSection(reader) => {
                for table in reader {
                    let table = table.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
                    table_sizes.push(table.ty.initial);
                    if table.ty.initial > MAX_TABLE_ELEMENTS as u64 {
                        return Err(LoadError::TooComplex(format!(
                            "a table of {} elements (at most {MAX_TABLE_ELEMENTS})",
                            table.ty.initial
                        )));
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    let memory = memory.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
                    memories += 1;
                    let initial_bytes = memory.initial.saturating_mul(65536);
                    memory_bytes = initial_bytes;
                    if initial_bytes > limits.max_memory_bytes as u64 {
                        return Err(LoadError::Limits(format!(
                            "initial memory of {initial_bytes} bytes exceeds the limit of {}",
                            limits.max_memory_bytes
                        )));
                    }
                }
            }
            Payload::StartSection { .. } => {
                return Err(LoadError::Abi(
                    "a start function is not allowed: rules run only when evaluated".into(),
                ));
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
                    match (export.name, export.kind) {
                        (EVALUATE_EXPORT, ExternalKind::Func) => {
                            evaluate_export = Some(export.index)
                        }
                        (MEMORY_EXPORT, ExternalKind::Memory) => memory_exported = true,
                        (EVALUATE_EXPORT | MEMORY_EXPORT, kind) => {
                            return Err(LoadError::Export(format!(
                                "`{}` is exported as a {kind:?}",
                                export.name
                            )));
                        }
                        _ => {}
                    }
                }
            }
            Payload::DataSection(reader) => {
                for (i, data) in reader.into_iter().enumerate() {
                    let data = data.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
                    if let DataKind::Active { offset_expr, .. } = data.kind {
                        check_placement(
                            "data",
                            i,
                            &offset_expr,
                            data.data.len() as u64,
                            memory_bytes,
                            "bytes of memory",
                        )?;
                    }
                }
            }
            Payload::ElementSection(reader) => {
                for (i, element) in reader.into_iter().enumerate() {
                    let element = element.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
                    if let ElementKind::Active { table_index, offset_expr } = element.kind {
                        let count = match &element.items {
                            ElementItems::Functions(r) => r.count(),
                            ElementItems::Expressions(_, r) => r.count(),
                        };
                        let size = table_sizes
                            .get(table_index.unwrap_or(0) as usize)
                            .copied()
                            .unwrap_or(0);
                        check_placement(
                            "element",
                            i,
                            &offset_expr,
                            u64::from(count),
                            size,
                            "table elements",
                        )?;
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                check_body(&body)?;
                let mut locals = 0u32;
                let reader =
                    body.get_locals_reader().map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
                for local in reader {
                    let (count, _) = local.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
                    locals = locals.saturating_add(count);
                }
                if locals > MAX_LOCALS_PER_FUNCTION {
                    return Err(LoadError::TooComplex(format!(
                        "a function with {locals} locals (at most {MAX_LOCALS_PER_FUNCTION})"
                    )));
                }
            }
            Payload::CustomSection(section) => {
                let slot = match section.name() {
                    sections::ABI => &mut abi,
                    sections::META => &mut meta,
                    sections::TESTS => &mut tests,
                    _ => continue,
                };
                if slot.replace(section.data()).is_some() {
                    return Err(LoadError::Metadata(format!(
                        "section `{}` appears twice",
                        section.name()
                    )));
                }
            }
            _ => {}
        }
    }

    let abi_version = parse_abi(abi)?;
    if memories != 1 || !memory_exported {
        return Err(LoadError::Export(format!(
            "a rule defines and exports one memory named `{MEMORY_EXPORT}`"
        )));
    }
    let index = evaluate_export
        .ok_or_else(|| LoadError::Export(format!("missing export `{EVALUATE_EXPORT}`")))?;
    let ty = index
        .checked_sub(imported_functions)
        .and_then(|defined| func_types.get(defined as usize))
        .and_then(|t| types.get(*t as usize))
        .ok_or_else(|| {
            LoadError::Export(format!("`{EVALUATE_EXPORT}` must be a defined function"))
        })?;
    if !ty.params().is_empty() || ty.results() != [wasmparser::ValType::I32] {
        return Err(LoadError::Export(format!(
            "`{EVALUATE_EXPORT}` must have type () -> i32, found {ty}"
        )));
    }
    let meta = meta.ok_or_else(|| {
        LoadError::Metadata(format!("missing custom section `{}`", sections::META))
    })?;
    let meta = decode_meta_section(meta).map_err(LoadError::Metadata)?;
    let tests = tests
        .ok_or_else(|| LoadError::Tests(format!("missing custom section `{}`", sections::TESTS)))?;
    let tests = decode_tests_section(tests).map_err(LoadError::Tests)?;
    Ok(ModuleInfo { abi_version, meta, tests })
}

/// The metadata and test cases a module carries, parsed but not linted,
/// with no other check: what the reviewer's lint (`pitfall rule lint`, the
/// publish pipeline's first step) reads. A section that is missing, twice
/// present or not JSON is an error of its step.
pub fn embedded(bytes: &[u8]) -> Result<(RuleMeta, Vec<TestCase>), LoadError> {
    let mut meta = None;
    let mut tests = None;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
        if let Payload::CustomSection(section) = payload {
            let slot = match section.name() {
                sections::META => &mut meta,
                sections::TESTS => &mut tests,
                _ => continue,
            };
            if slot.replace(section.data()).is_some() {
                return Err(LoadError::Metadata(format!(
                    "section `{}` appears twice",
                    section.name()
                )));
            }
        }
    }
    let meta = meta.ok_or_else(|| {
        LoadError::Metadata(format!("missing custom section `{}`", sections::META))
    })?;
    let meta: RuleMeta = read_meta_section(meta).map_err(LoadError::Metadata)?;
    let tests = tests
        .ok_or_else(|| LoadError::Tests(format!("missing custom section `{}`", sections::TESTS)))?;
    let tests = decode_tests_section(tests).map_err(LoadError::Tests)?;
    Ok((meta, tests))
}

/// Refuses an active segment that cannot fit its memory or table as the
/// module declares it: instantiation would fail on every evaluation, so
/// the module is broken, not a rule that fails sometimes. Only constant
/// offsets are decidable here (WebAssembly 2.0 allows nothing else in a
/// module without imported globals).
fn check_placement(
    kind: &str,
    index: usize,
    offset: &ConstExpr<'_>,
    len: u64,
    capacity: u64,
    unit: &str,
) -> Result<(), LoadError> {
    let mut ops = offset.get_operators_reader();
    let start = match (ops.read(), ops.read()) {
        (Ok(Operator::I32Const { value }), Ok(Operator::End)) => u64::from(value as u32),
        _ => return Ok(()),
    };
    let end = start.saturating_add(len);
    if end > capacity {
        return Err(LoadError::Limits(format!(
            "{kind} segment {index} covers {start}..{end}, beyond the initial {capacity} {unit}: it can never be placed"
        )));
    }
    Ok(())
}

/// The per-function bounds that keep compile time bounded: body size and
/// nesting depth (the module is already validated, so the operators parse).
fn check_body(body: &FunctionBody<'_>) -> Result<(), LoadError> {
    let size = body.range().len();
    if size > MAX_FUNCTION_BODY_BYTES {
        return Err(LoadError::TooComplex(format!(
            "a function body of {size} bytes (at most {MAX_FUNCTION_BODY_BYTES})"
        )));
    }
    let mut ops = body.get_operators_reader().map_err(|e| LoadError::InvalidWasm(e.to_string()))?;
    let mut depth = 0u32;
    while !ops.eof() {
        match ops.read().map_err(|e| LoadError::InvalidWasm(e.to_string()))? {
            Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } => {
                depth += 1;
                if depth > MAX_NESTING_DEPTH {
                    return Err(LoadError::TooComplex(format!(
                        "blocks nested more than {MAX_NESTING_DEPTH} deep in one function"
                    )));
                }
            }
            Operator::End => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

fn parse_abi(section: Option<&[u8]>) -> Result<u32, LoadError> {
    let data = section
        .ok_or_else(|| LoadError::Abi(format!("missing custom section `{}`", sections::ABI)))?;
    decode_abi_section(data, SUPPORTED_ABI_VERSIONS).map_err(LoadError::Abi)
}

fn check_import(import: &wasmparser::Import<'_>, types: &[FuncType]) -> Result<(), LoadError> {
    if import.module != HOST_MODULE {
        return Err(LoadError::Import(format!(
            "`{}.{}`: rules may import only from `{HOST_MODULE}`",
            import.module, import.name
        )));
    }
    let (TypeRef::Func(index) | TypeRef::FuncExact(index)) = import.ty else {
        return Err(LoadError::Import(format!(
            "`{HOST_MODULE}.{}`: only functions are imported",
            import.name
        )));
    };
    let host = HOST_FUNCTIONS.iter().find(|f| f.name == import.name).ok_or_else(|| {
        LoadError::Import(format!("`{HOST_MODULE}.{}` is not a host function", import.name))
    })?;
    let ty = types
        .get(index as usize)
        .ok_or_else(|| LoadError::InvalidWasm(format!("import `{}` has no type", import.name)))?;
    if ty.params() != host.params || ty.results() != host.results {
        return Err(LoadError::Import(format!(
            "`{HOST_MODULE}.{}` has type {ty}, the host's is {}",
            import.name,
            FuncType::new(host.params.iter().copied(), host.results.iter().copied())
        )));
    }
    Ok(())
}
