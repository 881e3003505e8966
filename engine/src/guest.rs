//! A guest's memory as the host reads and writes it: pointer and length
//! as wasm passes them (unsigned 32-bit), checked to lie inside memory.

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
