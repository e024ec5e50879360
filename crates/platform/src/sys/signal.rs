//! Stop requests as a flag the benchmarks poll between samples, and the signal
//! settings of children (default handling, death with the parent).
//!
//! SIGINT, SIGTERM, SIGHUP and SIGXCPU all ask oscost to stop: finish nothing new,
//! keep what finished, reap every child, and exit with 128 + the signal's number.
//! SIGXFSZ is ignored, so a write past the file-size limit fails with EFBIG (and the
//! figures it held are saved elsewhere) instead of killing the process.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals that ask for a stop.
pub const STOP_SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGXCPU];

/// The first stop signal received, or 0.
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    let _ = STOP_SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

fn set_action(sig: libc::c_int, handler: libc::sighandler_t) -> io::Result<()> {
    // SAFETY: an all-zero sigaction is valid; we fill the handler and an empty mask.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler;
    // SAFETY: `sa.sa_mask` is writable; handlers here only store to an atomic.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: `sa` is a fully initialised sigaction; the old action is not asked for.
    super::check(unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) })?;
    Ok(())
}

/// Installs the stop handlers (they only raise the flag) and ignores SIGXFSZ. They
/// are installed without SA_RESTART so a blocking wait returns EINTR and the benchmark
/// can stop.
pub fn install_interrupt_flag() -> io::Result<()> {
    for sig in STOP_SIGNALS {
        set_action(sig, on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t)?;
    }
    set_action(libc::SIGXFSZ, libc::SIG_IGN)
}

/// Ignores SIGXFSZ from the start, so that a write past the file-size limit fails
/// with EFBIG (an error oscost reports) wherever it happens, even while the database
/// is being created, instead of killing the process.
pub fn ignore_file_size_signal() -> io::Result<()> {
    set_action(libc::SIGXFSZ, libc::SIG_IGN)
}

/// True once a stop signal has arrived.
pub fn interrupted() -> bool {
    STOP_SIGNAL.load(Ordering::SeqCst) != 0
}

/// The stop signal that arrived first, if any.
pub fn stop_signal() -> Option<i32> {
    Some(STOP_SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Restores default handling of the stop signals; forked children call it so that
/// Ctrl-C or a SIGTERM to the group ends them.
#[inline(always)]
pub fn default_signals() {
    for sig in STOP_SIGNALS {
        // SAFETY: signal() with SIG_DFL is async-signal-safe in practice on Linux.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// Makes a program `cmd` starts die (SIGKILL) when the thread that started it ends, so
/// an outside program oscost runs never outlives it, kill -9 included; a child whose
/// starter is gone before the signal is armed exits at once. The thread that spawns
/// must therefore also wait for the child.
pub fn command_dies_with_starter(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = super::getpid();
    // SAFETY: the hook runs in the child between fork and exec and only makes system
    // calls (prctl, getppid, _exit), which are async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            die_with_parent(Some(parent));
            Ok(())
        })
    };
}

/// Makes the calling child process receive SIGKILL when its parent dies, so no
/// benchmark child outlives oscost; then, since a parent that died before the signal
/// was armed sends none, exits at once if its parent is no longer `parent` (it was
/// reparented). Async-signal-safe: forked children call it before anything else.
#[inline(always)]
pub fn die_with_parent(parent: Option<libc::pid_t>) {
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if let Some(parent) = parent
        && rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get()) != parent
    {
        super::exit_now(0);
    }
}

/// The death signal of a worker ([`die_with_parent_taking_group`]); no benchmark uses it.
const GROUP_DEATH_SIGNAL: libc::c_int = libc::SIGUSR2;

extern "C" fn on_parent_death(_: libc::c_int) {
    // SAFETY: getpid, getpgrp and kill are async-signal-safe; the group is killed only
    // when this process leads it (a worker's own group), never its parent's.
    unsafe {
        if libc::getpgrp() == libc::getpid() {
            libc::kill(0, libc::SIGKILL);
        }
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
}

/// As [`die_with_parent`], for a process that leads a process group of its own (a
/// worker): when its parent dies, it kills its whole group, itself and everything it
/// started that stayed in the group (forked children have no death signal of their
/// own), instead of itself alone.
pub fn die_with_parent_taking_group(parent: Option<libc::pid_t>) -> io::Result<()> {
    set_action(GROUP_DEATH_SIGNAL, on_parent_death as extern "C" fn(libc::c_int) as libc::sighandler_t)?;
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::USR2))?;
    if let Some(parent) = parent
        && rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get()) != parent
    {
        super::exit_now(0);
    }
    Ok(())
}
