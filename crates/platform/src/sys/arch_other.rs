//! Fallback for architectures without a wired-up cycle counter or raw syscall path:
//! system calls go through the C library's `syscall(2)` (still a real kernel entry) and
//! the per-call bracket uses the monotonic clock.

/// Safety: as for the x86_64 version.
#[inline(always)]
pub(super) unsafe fn syscall0(nr: i64) -> i64 {
    // SAFETY: the caller guarantees the call is memory-safe.
    let r = unsafe { libc::syscall(nr as libc::c_long) };
    if r == -1 { -i64::from(super::errno()) } else { r }
}

/// Safety: as for the x86_64 version.
#[inline(always)]
pub(super) unsafe fn syscall4(nr: i64, a1: i64, a2: i64, a3: i64, a4: i64) -> i64 {
    // SAFETY: the caller guarantees the pointers are valid.
    let r = unsafe { libc::syscall(nr as libc::c_long, a1, a2, a3, a4) };
    if r == -1 { -i64::from(super::errno()) } else { r }
}

#[inline(always)]
pub fn cycles_begin() -> u64 {
    super::clock::monotonic_raw_ns()
}

#[inline(always)]
pub fn cycles_end() -> u64 {
    super::clock::monotonic_raw_ns()
}

/// Why the cycle counter cannot time intervals here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoCounter {
    #[error("no cycle counter is wired up for this architecture yet")]
    NotWired,
}

pub fn counter_status() -> Result<&'static str, NoCounter> {
    Err(NoCounter::NotWired)
}
