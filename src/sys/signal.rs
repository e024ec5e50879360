//! Ctrl-C as a flag the benchmarks poll between samples, and the signal settings of
//! children (default SIGINT, death with the parent).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs a SIGINT handler that only raises a flag. It is installed without
/// SA_RESTART so a blocking wait returns EINTR and the benchmark can stop.
pub fn install_interrupt_flag() -> io::Result<()> {
    // SAFETY: an all-zero sigaction is valid; we fill the handler and an empty mask.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
    // SAFETY: `sa.sa_mask` is writable; the handler only stores to an atomic.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: `sa` is a fully initialised sigaction; the old action is not asked for.
    super::check(unsafe { libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut()) })?;
    Ok(())
}

/// True once SIGINT has arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Restores default SIGINT handling; forked children call it so Ctrl-C ends them.
#[inline(always)]
pub fn default_sigint() {
    // SAFETY: signal() with SIG_DFL is async-signal-safe in practice on Linux.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
}

/// Makes the calling child process receive SIGKILL when its parent dies, so no
/// benchmark child outlives oscost.
#[inline(always)]
pub fn die_with_parent() {
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
}
