//! Threads through pthreads directly (no closure boxing, no Arc, as a C program would),
//! for the thread-creation probes.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use super::arch::cycles_end;

extern "C" fn thread_noop(_: *mut libc::c_void) -> *mut libc::c_void {
    std::ptr::null_mut()
}

extern "C" fn thread_stamp(arg: *mut libc::c_void) -> *mut libc::c_void {
    let t = cycles_end();
    // SAFETY: `arg` points at the AtomicU64 the creator keeps alive until join.
    unsafe { (*(arg as *const AtomicU64)).store(t, Ordering::Release) };
    std::ptr::null_mut()
}

/// A created, not yet joined pthread.
pub struct PThread(libc::pthread_t);

fn pthread_spawn(
    f: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
) -> io::Result<PThread> {
    let mut t: libc::pthread_t = 0;
    // SAFETY: default attributes; `f` is a valid start routine; `arg` is either null or
    // outlives the thread (callers join before dropping it).
    let r = unsafe { libc::pthread_create(&mut t, std::ptr::null(), f, arg) };
    if r == 0 { Ok(PThread(t)) } else { Err(io::Error::from_raw_os_error(r)) }
}

impl PThread {
    /// Starts a thread that returns at once.
    #[inline(always)]
    pub fn spawn_noop() -> io::Result<Self> {
        pthread_spawn(thread_noop, std::ptr::null_mut())
    }

    /// Waits for the thread to end.
    #[inline(always)]
    pub fn join(self) -> io::Result<()> {
        // SAFETY: the thread was created by us and is joined exactly once (self moves).
        let r = unsafe { libc::pthread_join(self.0, std::ptr::null_mut()) };
        if r == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(r)) }
    }
}

/// Creates a thread that stores [`cycles_end`] into `slot` as its first action, then
/// joins it. The slot must be zero beforehand.
#[inline(always)]
pub fn thread_stamp_and_join(slot: &AtomicU64) -> io::Result<()> {
    let t = pthread_spawn(thread_stamp, slot as *const AtomicU64 as *mut libc::c_void)?;
    t.join()
}

/// The calling thread's context switches so far: (voluntary, involuntary), from
/// `getrusage(RUSAGE_THREAD)`. A voluntary switch is a sleep (a blocking read, a
/// futex wait); an involuntary one a preemption.
pub fn thread_switches() -> io::Result<(u64, u64)> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage into the buffer it is given, which is large
    // enough for it.
    super::check(unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) })?;
    // SAFETY: getrusage succeeded, so it filled the struct (which started zeroed).
    let usage = unsafe { usage.assume_init() };
    Ok((usage.ru_nvcsw.max(0) as u64, usage.ru_nivcsw.max(0) as u64))
}
