//! The host module `pitfall`: what a rule can call. Every call reads the
//! manifest through the per-check session (`pitfall_contract::session::Session`) (no JSON parsing in rules),
//! checks the guest's pointers, and pays for its work in fuel so a loop
//! around host calls runs out as surely as any other loop.

use pitfall_contract::session::{OutputError, SpecifierError};
use wasmtime::{Caller, Linker, Memory};

use crate::limits::{HOST_CALL_FUEL, HOST_MODULE};

use crate::guest::{guest_range, guest_range_mut};
use crate::observe::EvalSession;

/// What one evaluation's store holds.
#[derive(Debug)]
pub(crate) struct HostState {
    pub(crate) session: EvalSession,
    /// The rule's exported memory, set right after instantiation.
    pub(crate) memory: Option<Memory>,
    pub(crate) limiter: GrowthLimiter,
}

/// Refuses memory and table growth past the limits, and remembers that it
/// did, so a trap that follows (an allocator aborting) is reported as what
/// it is: the rule ran out of memory.
#[derive(Debug)]
pub(crate) struct GrowthLimiter {
    pub(crate) max_memory_bytes: usize,
    pub(crate) max_table_elements: usize,
    /// A `memory.grow` was refused.
    pub(crate) refused_memory: bool,
    /// A `table.grow` was refused.
    pub(crate) refused_table: bool,
}

impl wasmtime::ResourceLimiter for GrowthLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let ok = desired <= self.max_memory_bytes;
        self.refused_memory |= !ok;
        Ok(ok)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let ok = desired <= self.max_table_elements;
        self.refused_table |= !ok;
        Ok(ok)
    }
}

/// A rule broke the ABI's contract (bad pointer, bad text, too much output):
/// raised as a trap and reported as that rule's error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AbiViolation {
    #[error("{call}: pointer range {ptr}..+{len} is outside the rule's memory")]
    OutOfBounds { call: &'static str, ptr: u32, len: u32 },
    #[error("{call}: {source}")]
    Output {
        call: &'static str,
        #[source]
        source: OutputError,
    },
    #[error("version_in: {0}")]
    Specifier(#[source] SpecifierError),
    #[error("{call}: called before the rule's memory was bound")]
    NoMemory { call: &'static str },
}

fn memory(caller: &Caller<'_, HostState>, call: &'static str) -> wasmtime::Result<Memory> {
    caller.data().memory.ok_or_else(|| wasmtime::Error::new(AbiViolation::NoMemory { call }))
}

fn slice<'a>(mem: &'a [u8], call: &'static str, ptr: i32, len: i32) -> wasmtime::Result<&'a [u8]> {
    guest_range(mem, ptr, len).ok_or_else(|| {
        wasmtime::Error::new(AbiViolation::OutOfBounds { call, ptr: ptr as u32, len: len as u32 })
    })
}

/// Charges a host call's price: a base plus one unit per byte moved.
fn charge(caller: &mut Caller<'_, HostState>, bytes: usize) -> wasmtime::Result<()> {
    let price = HOST_CALL_FUEL.saturating_add(bytes as u64);
    let fuel = caller.get_fuel()?;
    if fuel < price {
        caller.set_fuel(0)?;
        return Err(wasmtime::Trap::OutOfFuel.into());
    }
    caller.set_fuel(fuel - price)
}

fn output(call: &'static str) -> impl Fn(OutputError) -> wasmtime::Error {
    move |source| wasmtime::Error::new(AbiViolation::Output { call, source })
}

/// A call that passes two (pointer, length) ranges: charged for both,
/// then `f` on the session and the two byte ranges.
fn two_ranges<R>(
    caller: &mut Caller<'_, HostState>,
    call: &'static str,
    (a_ptr, a_len): (i32, i32),
    (b_ptr, b_len): (i32, i32),
    f: impl FnOnce(&mut EvalSession, &[u8], &[u8]) -> wasmtime::Result<R>,
) -> wasmtime::Result<R> {
    charge(caller, (a_len as u32 as usize).saturating_add(b_len as u32 as usize))?;
    let mem = memory(caller, call)?;
    let (data, state) = mem.data_and_store_mut(caller);
    f(&mut state.session, slice(data, call, a_ptr, a_len)?, slice(data, call, b_ptr, b_len)?)
}

/// Defines every function of [`crate::abi::HOST_FUNCTIONS`] in `linker`.
pub(crate) fn define(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        HOST_MODULE,
        "field_kind",
        |mut caller: Caller<'_, HostState>, ptr: i32, len: i32| {
            charge(&mut caller, len as u32 as usize)?;
            let mem = memory(&caller, "field_kind")?;
            let (data, state) = mem.data_and_store_mut(&mut caller);
            Ok(state.session.field_kind(slice(data, "field_kind", ptr, len)?))
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "field_len",
        |mut caller: Caller<'_, HostState>, ptr: i32, len: i32| {
            charge(&mut caller, len as u32 as usize)?;
            let mem = memory(&caller, "field_len")?;
            let (data, state) = mem.data_and_store_mut(&mut caller);
            Ok(state.session.field_len(slice(data, "field_len", ptr, len)?))
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "field_num",
        |mut caller: Caller<'_, HostState>, ptr: i32, len: i32| {
            charge(&mut caller, len as u32 as usize)?;
            let mem = memory(&caller, "field_num")?;
            let (data, state) = mem.data_and_store_mut(&mut caller);
            Ok(state.session.field_num(slice(data, "field_num", ptr, len)?))
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "field_str",
        |mut caller: Caller<'_, HostState>, ptr: i32, len: i32, buf: i32, cap: i32| {
            charge(&mut caller, len as u32 as usize)?;
            let mem = memory(&caller, "field_str")?;
            let (data, state) = mem.data_and_store_mut(&mut caller);
            let looked_up = state.session.field_str(slice(data, "field_str", ptr, len)?);
            let text = match looked_up {
                Ok(text) => text,
                Err(status) => return Ok(status),
            };
            let n = text.len();
            // Too small a buffer: report the size and copy nothing, so the
            // rule can retry with enough room.
            if n <= cap as u32 as usize {
                let dest = guest_range_mut(data, buf, n).ok_or_else(|| {
                    wasmtime::Error::new(AbiViolation::OutOfBounds {
                        call: "field_str",
                        ptr: buf as u32,
                        len: cap as u32,
                    })
                })?;
                dest.copy_from_slice(text.as_bytes());
            }
            let n = i32::try_from(n).unwrap_or(i32::MAX);
            charge(&mut caller, n as usize)?;
            Ok(n)
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "evidence",
        |mut caller: Caller<'_, HostState>, ptr: i32, len: i32| {
            charge(&mut caller, len as u32 as usize)?;
            let mem = memory(&caller, "evidence")?;
            let (data, state) = mem.data_and_store_mut(&mut caller);
            state.session.evidence(slice(data, "evidence", ptr, len)?).map_err(output("evidence"))
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "missing",
        |mut caller: Caller<'_, HostState>, ptr: i32, len: i32| {
            charge(&mut caller, len as u32 as usize)?;
            let mem = memory(&caller, "missing")?;
            let (data, state) = mem.data_and_store_mut(&mut caller);
            state.session.missing(slice(data, "missing", ptr, len)?).map_err(output("missing"))
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "param",
        |mut caller: Caller<'_, HostState>, kp: i32, kl: i32, vp: i32, vl: i32| {
            two_ranges(&mut caller, "param", (kp, kl), (vp, vl), |session, key, value| {
                session.param(key, value).map_err(output("param"))
            })
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "param_field",
        |mut caller: Caller<'_, HostState>, kp: i32, kl: i32, pp: i32, pl: i32| {
            two_ranges(&mut caller, "param_field", (kp, kl), (pp, pl), |session, key, path| {
                session.param_field(key, path).map_err(output("param_field"))
            })
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "version_in",
        |mut caller: Caller<'_, HostState>, pp: i32, pl: i32, sp: i32, sl: i32| {
            two_ranges(&mut caller, "version_in", (pp, pl), (sp, sl), |session, path, spec| {
                session
                    .version_in(path, spec)
                    .map_err(|e| wasmtime::Error::new(AbiViolation::Specifier(e)))
            })
        },
    )?;
    linker.func_wrap(
        HOST_MODULE,
        "text_contains",
        |mut caller: Caller<'_, HostState>, pp: i32, pl: i32, np: i32, nl: i32| {
            two_ranges(&mut caller, "text_contains", (pp, pl), (np, nl), |session, path, needle| {
                Ok(session.text_contains(path, needle))
            })
        },
    )?;
    linker.func_wrap(HOST_MODULE, "remedy", |mut caller: Caller<'_, HostState>, index: i32| {
        charge(&mut caller, 0)?;
        caller.data_mut().session.remedy(index as u32).map_err(output("remedy"))
    })?;
    Ok(())
}
