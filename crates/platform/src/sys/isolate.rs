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

/// Installs `program` as a seccomp filter that may answer `SECCOMP_RET_USER_NOTIF`, and
/// returns the listener on which a supervisor receives those calls. As
/// [`install_seccomp_filter`], after setting no_new_privs.
pub fn install_seccomp_listener(program: &[BpfInstruction]) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    rustix::thread::set_no_new_privs(true)?;
    let len = u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
    let prog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut() };
    // SAFETY: as in `install_seccomp_filter`; with NEW_LISTENER the call returns a new
    // descriptor, which only this function wraps.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `r` is a descriptor the kernel just opened for us and nothing else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(r as i32) })
}

/// Takes descriptor `raw` into a descriptor table of the calling thread's own: the
/// thread leaves the process's shared table for a private copy of it (unshare
/// CLONE_FILES), in which the returned descriptor is `raw`. The caller then closes `raw`
/// in the shared table, so that what the other threads fork later never inherits it.
/// The calling thread must use no other descriptor it does not own from then on (its
/// copies of the others stay open until it exits, whatever the other threads close).
pub fn take_into_private_table(raw: std::os::fd::RawFd) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: only the calling thread's table changes; it is a copy of the shared one,
    // so every descriptor the thread's code holds stays valid in it. The hazard
    // `unshare_unsafe` names (code on this thread closing a descriptor that other
    // threads still see open, or the reverse) is the caller's to avoid, as stated above.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) }?;
    // SAFETY: F_GETFD only reads the (now private) table's entry for `raw`.
    super::check(unsafe { libc::fcntl(raw, libc::F_GETFD) })?;
    // SAFETY: `raw` is open in this thread's private table (checked above), which no
    // other thread sees, and the caller hands it over: nothing else here owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) })
}

/// Waits for the next call on a seccomp `listener` and lets it go on unchanged
/// (SECCOMP_USER_NOTIF_FLAG_CONTINUE). Ok(true) when a call was answered (or ended
/// before it could be: interrupted, its task gone), Ok(false) when the filter has no
/// task left.
pub fn continue_next_call(listener: std::os::fd::BorrowedFd<'_>) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero seccomp_notif is what RECV requires.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `notif` is a writable seccomp_notif, the size RECV's number encodes.
        let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) };
        if r == 0 {
            break;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            // The call ended (a signal) before it was received.
            Some(libc::ENOENT) => return Ok(true),
            Some(libc::EBADF) | Some(libc::ENOTTY) => return Ok(false),
            _ => return Err(io::Error::last_os_error()),
        }
    }
    let mut resp = libc::seccomp_notif_resp {
        id: notif.id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    // SAFETY: `resp` is an initialised seccomp_notif_resp, the size SEND's number encodes.
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
    if r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
        Ok(true)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Brings the loopback interface up (a new network namespace starts with it down), so
/// benchmarks that talk to 127.0.0.1 can.
pub fn bring_loopback_up() -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let sock = rustix::net::socket(rustix::net::AddressFamily::INET, rustix::net::SocketType::DGRAM, None)?;
    // SAFETY: an all-zero ifreq is valid (a name of zeros, flags 0).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: `req` is a writable ifreq naming "lo", the argument SIOCGIFFLAGS takes.
    super::check(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) })?;
    // SAFETY: SIOCGIFFLAGS just filled the flags member of the union.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    // SAFETY: as above; SIOCSIFFLAGS reads the name and the flags.
    super::check(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &mut req) })?;
    Ok(())
}

/// Gives the calling process's mount namespace a /proc of its own PID namespace: the
/// mounts below / are made private (so nothing reaches the parent namespace) and a
/// fresh proc is mounted on /proc. Call it as process 1 of a new PID namespace, in a
/// mount namespace of its own.
pub fn remount_proc() -> io::Result<()> {
    use rustix::mount::{MountFlags, MountPropagationFlags, mount, mount_change};
    mount_change("/", MountPropagationFlags::REC | MountPropagationFlags::PRIVATE)?;
    mount("proc", "/proc", "proc", MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC, None)?;
    Ok(())
}
