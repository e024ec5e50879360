//! x86_64 pieces: the raw `syscall` instruction and the time-stamp counter.
//!
//! Everything architecture-specific that the timing depends on sits behind these few
//! functions. Other architectures get `arch_other.rs`, which provides the same names
//! through the C library and the monotonic clock; an aarch64 module (`svc #0`,
//! `cntvct_el0`) would be a third file with these names and one `cfg` line in `sys`.

use core::arch::asm;

/// Issues `syscall` with no arguments and returns the raw result (`-errno` on failure).
///
/// Safety: the caller guarantees that system call `nr` with no arguments cannot break
/// memory safety (it takes no pointers and does not fork, exit or map memory).
#[inline(always)]
pub(super) unsafe fn syscall0(nr: i64) -> i64 {
    let ret: i64;
    // SAFETY: `syscall` clobbers rcx and r11 only; the kernel preserves the rest.
    unsafe {
        asm!("syscall", inlateout("rax") nr => ret, lateout("rcx") _, lateout("r11") _,
             options(nostack, preserves_flags));
    }
    ret
}

/// `syscall` with up to four arguments. Safety: as for [`syscall0`], and every pointer
/// argument is valid for what the call does with it.
#[inline(always)]
pub(super) unsafe fn syscall4(nr: i64, a1: i64, a2: i64, a3: i64, a4: i64) -> i64 {
    let ret: i64;
    // SAFETY: see syscall0; arguments travel in rdi, rsi, rdx, r10 as the ABI says.
    unsafe {
        asm!("syscall", inlateout("rax") nr => ret,
             in("rdi") a1, in("rsi") a2, in("rdx") a3, in("r10") a4,
             lateout("rcx") _, lateout("r11") _, options(nostack, preserves_flags));
    }
    ret
}

/// Reads the time-stamp counter at the start of a timed region.
///
/// `lfence; rdtsc` keeps earlier instructions from drifting into the region (Intel's
/// recommended opening bracket; AMD makes lfence dispatch-serialising under the same
/// mitigations that Linux enables).
#[inline(always)]
pub fn cycles_begin() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: lfence and rdtsc read no memory and are available on every x86_64 CPU.
    unsafe {
        asm!("lfence", "rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Reads the time-stamp counter at the end of a timed region.
///
/// `rdtscp` waits for earlier instructions to finish; the trailing `lfence` keeps later
/// ones from starting before the read.
#[inline(always)]
pub fn cycles_end() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: rdtscp (checked by `counter_status`) and lfence read no memory.
    unsafe {
        asm!("rdtscp", "lfence", out("eax") lo, out("edx") hi, out("ecx") _,
             options(nomem, nostack, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Why the cycle counter cannot time intervals here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoCounter {
    #[error("CPUID does not report the extended leaves for rdtscp/invariant TSC")]
    NoExtendedLeaves,
    #[error("the CPU has no rdtscp instruction")]
    NoRdtscp,
    #[error("the TSC is not invariant (its rate follows CPU frequency)")]
    NotInvariant,
}

/// Whether the cycle counter can time intervals: present, with `rdtscp`, and invariant
/// (ticks at a constant rate across frequency and sleep states).
pub fn counter_status() -> Result<&'static str, NoCounter> {
    // CPUID is unprivileged and side-effect free on x86_64.
    let ext_max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    if ext_max < 0x8000_0007 {
        return Err(NoCounter::NoExtendedLeaves);
    }
    let rdtscp = core::arch::x86_64::__cpuid(0x8000_0001).edx & (1 << 27) != 0;
    let invariant = core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0;
    match (rdtscp, invariant) {
        (true, true) => Ok("tsc (invariant, rdtscp)"),
        (false, _) => Err(NoCounter::NoRdtscp),
        (true, false) => Err(NoCounter::NotInvariant),
    }
}
