//! Isolation a worker enters for a condition (`condition`): a seccomp filter, new
//! namespaces, a speculation control, a timer slack. Each is a set-up call made once,
//! before anything is timed, and each is undone by the kernel when the worker exits.

use std::io;

/// One instruction of a classic BPF program, as `seccomp(2)` reads it.
pub type BpfInstruction = libc::sock_filter;

/// Installs `program` as a seccomp filter on the calling thread and the threads and
/// processes it starts afterwards, after setting no_new_privs (which an unprivileged
/// filter requires, and which only forbids gaining privileges through exec).
pub fn install_seccomp_filter(program: &[BpfInstruction]) -> io::Result<()> {
    rustix::thread::set_no_new_privs(true)?;
    let len = u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
    let prog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut() };
    // SAFETY: `prog` points at `len` initialised instructions that outlive the call;
    // the kernel copies the program and keeps no pointer into our memory.
    let r =
        unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog as *const libc::sock_fprog) };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Namespaces to leave, as `unshare(2)` flags.
pub use rustix::thread::UnshareFlags as NamespaceFlags;

/// Gives the calling process the new namespaces `flags` names. A new PID namespace
/// holds the children started afterwards, not the caller (see `unshare(2)`).
pub fn unshare_namespaces(flags: NamespaceFlags) -> io::Result<()> {
    if flags.contains(NamespaceFlags::FILES) {
        // Not a namespace, and the one flag that makes the call unsound here.
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: FILES is refused above, so the descriptor table stays shared between
    // threads, and the hazard `unshare_unsafe` names cannot arise; the other flags
    // change only which namespaces the caller belongs to.
    unsafe { rustix::thread::unshare_unsafe(flags) }.map_err(io::Error::from)
}

/// Speculation features a process can control.
pub use rustix::process::{SpeculationFeature, SpeculationFeatureControl, SpeculationFeatureState};

/// Force-disables speculation feature `feature` for this process (and, by
/// inheritance, what it starts); it cannot be enabled again.
pub fn force_disable_speculation(feature: SpeculationFeature) -> io::Result<()> {
    rustix::process::control_speculative_feature(feature, SpeculationFeatureControl::FORCE_DISABLE)
        .map_err(io::Error::from)
}

/// The state of speculation feature `feature` for this process.
pub fn speculation_state(feature: SpeculationFeature) -> io::Result<Option<SpeculationFeatureState>> {
    rustix::process::speculative_feature_state(feature).map_err(io::Error::from)
}

/// Sets the calling thread's timer slack (inherited by threads it starts); 0 restores
/// the default.
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(ns)).map_err(io::Error::from)
}

/// The calling thread's timer slack, in nanoseconds.
pub fn timer_slack() -> io::Result<u64> {
    rustix::thread::current_timer_slack().map_err(io::Error::from)
}
