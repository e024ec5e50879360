//! Clocks and sleeps: the monotonic clock the batch loop reads, the vDSO clock reads
//! the system-call family measures, zero and short sleeps, and the timer slack.

use std::io;
use std::num::NonZeroU64;

use super::raw_of_libc;

/// CLOCK_MONOTONIC_RAW in nanoseconds, read through the vDSO.
#[inline(always)]
pub fn monotonic_raw_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; MONOTONIC_RAW always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The resolution the kernel reports for CLOCK_MONOTONIC_RAW, in nanoseconds.
pub fn monotonic_raw_resolution_ns() -> u64 {
    let ts = rustix::time::clock_getres(rustix::time::ClockId::MonotonicRaw);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// clock_gettime(CLOCK_MONOTONIC) through the C library (normally the vDSO, no kernel
/// entry). Raw result: 0 or `-errno`.
#[inline(always)]
pub fn libc_clock_gettime() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    std::hint::black_box(&ts);
    raw_of_libc(r)
}

/// gettimeofday through the C library (normally the vDSO). Raw result: 0 or `-errno`.
#[inline(always)]
pub fn libc_gettimeofday() -> i64 {
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    // SAFETY: `tv` is a valid, writable timeval; the timezone argument may be null.
    let r = unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    std::hint::black_box(&tv);
    raw_of_libc(r)
}

/// `nanosleep` with a zero interval (what `sleep(0)` does). Raw result: 0 or `-errno`.
#[inline(always)]
pub fn nanosleep_zero() -> i64 {
    let ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec; the remainder pointer may be null.
    raw_of_libc(unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) })
}

/// CLOCK_MONOTONIC in nanoseconds, read through the vDSO: the clock absolute sleeps
/// ([`sleep_until_ns`]) are set on, so a deadline and the reading after it share one
/// time base (CLOCK_MONOTONIC_RAW is not slewed by NTP and would drift from it).
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reads `deadline_ns` (clock_nanosleep with
/// TIMER_ABSTIME, as cyclictest sleeps). Raw result: 0 or `-errno`.
#[inline(always)]
pub fn sleep_until_ns(deadline_ns: u64) -> i64 {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is valid; a null remainder pointer is allowed (and unused with
    // TIMER_ABSTIME). clock_nanosleep returns the errno itself (not -1).
    -i64::from(unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) })
}

/// A relative timeout for futex waits.
pub fn timespec(d: std::time::Duration) -> libc::timespec {
    libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long }
}

/// The calling thread's timer slack in nanoseconds (PR_GET_TIMERSLACK).
pub fn timer_slack_ns() -> io::Result<u64> {
    Ok(rustix::thread::current_timer_slack()?)
}

/// The calling thread's timer slack, restored on drop.
pub struct TimerSlack(u64);

impl TimerSlack {
    /// Sets the timer slack to `ns` (PR_SET_TIMERSLACK; at least 1 ns, as 0 would mean
    /// "the default").
    pub fn set(ns: u64) -> io::Result<Self> {
        let old = timer_slack_ns()?;
        rustix::thread::set_current_timer_slack(NonZeroU64::new(ns.max(1)))?;
        Ok(Self(old))
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(self.0));
    }
}
