//! A cache hint for the engines' hot loops.
//!
//! At thousands of flows the simulator's per-event work is dominated by cache misses on the
//! state of the flow the next event belongs to (its delay line's head, its sender, its metrics
//! bins). The event loop knows that flow one event ahead, so it asks for those lines early and
//! the misses overlap the current event's work. A hint changes no result.

/// Asks the CPU to bring the cache line holding `r` closer; a no-op off x86-64.
#[inline(always)]
pub fn prefetch<T: ?Sized>(r: &T) {
    prefetch_addr((r as *const T).cast::<u8>());
}

/// Cache lines are 64 bytes on every x86-64 part the engines run on.
const LINE: usize = 64;

/// Asks for the cache lines of the first `bytes` bytes from `r` (a value spanning several
/// lines; `bytes` at most its size). Each line's address is `r`'s plus a constant, so no hint
/// waits on a load.
#[inline(always)]
pub fn prefetch_bytes<T: ?Sized>(r: &T, bytes: usize) {
    debug_assert!(bytes <= std::mem::size_of_val(r));
    let start = (r as *const T).cast::<u8>();
    let mut off = 0;
    while off < bytes {
        // wrapping_add: the address is only a hint, never dereferenced here.
        prefetch_addr(start.wrapping_add(off));
        off += LINE;
    }
    // The last line, which the steps miss when `r` does not start on a line boundary.
    if start as usize % LINE != 0 && bytes > 0 {
        prefetch_addr(start.wrapping_add(bytes - 1));
    }
}

/// The one place the hint is issued.
#[inline(always)]
fn prefetch_addr(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 never faults, whatever the address, and has no architectural
    // effect; SSE, which defines it, is part of x86-64's baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
