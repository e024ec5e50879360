//! Thin wrappers over the system calls oscost measures and the ones it needs to set
//! benchmarks up. This is the only module of the crate allowed `unsafe`; each wrapper
//! does one call, checks nothing it need not, and says why it is sound.
//!
//! One errno convention, by kind of call:
//! - *Hot* wrappers, called inside timed loops, return the kernel's raw result as an
//!   `i64`: the value on success, `-errno` on failure (wrappers over the C library
//!   translate its `-1`/errno to the same form). [`status_of`] turns that into 0 or
//!   the errno for a probe. They are `#[inline(always)]` so no call frame of ours sits
//!   around the primitive.
//! - *Set-up* wrappers return `io::Result`; most are rustix's own calls.
//!
//! Layout, by subsystem: `arch` (raw `syscall`, cycle counter), `clock`, `calls` (the
//! measured one-call primitives), `ipc` (pipes, eventfd, sockets, futexes, shared
//! words, pidfd), `process` (fork, exec, wait), `thread`, `sched` (affinity, nice,
//! policies, limits, identities), `perf`, `signal`. Parsers of `/proc` text are safe
//! code and live in [`crate::procfs`].

use std::io;

#[cfg(target_arch = "x86_64")]
#[path = "arch_x86_64.rs"]
mod arch;
#[cfg(not(target_arch = "x86_64"))]
#[path = "arch_other.rs"]
mod arch;

mod argv;
mod calls;
mod clock;
mod ipc;
mod isolate;
mod perf;
mod process;
mod sched;
mod signal;
mod thread;

pub use arch::{NoCounter, counter_status, cycles_begin, cycles_end};
pub use argv::*;
pub use calls::*;
pub use clock::*;
pub use ipc::*;
pub use isolate::*;
pub use perf::*;
pub use process::*;
pub use sched::*;
pub use signal::*;
pub use thread::*;

/// The errno of the last failed C library call on this thread.
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A C library result (`-1` and errno on failure) in the raw kernel form.
#[inline(always)]
fn raw_of_libc(ret: libc::c_int) -> i64 {
    if ret == -1 { -i64::from(errno()) } else { i64::from(ret) }
}

/// A C library result (`-1` and errno on failure) as `io::Result`.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

/// Converts a raw kernel result (`-errno` on failure) into 0 on success or the errno.
#[inline(always)]
pub fn status_of(raw: i64) -> i64 {
    if (-4095..0).contains(&raw) { -raw } else { 0 }
}

/// A raw kernel result as `io::Result` (set-up paths).
pub fn result_of(raw: i64) -> io::Result<i64> {
    match status_of(raw) {
        0 => Ok(raw),
        e => Err(io::Error::from_raw_os_error(e as i32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_as_the_kernel_writes_them() {
        assert_eq!(cpu_list_text(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(cpu_list_text(&[1]), "1");
        assert_eq!(cpu_list_text(&[0, 2]), "0,2");
        assert_eq!(cpu_list_text(&[]), "");
    }

    #[test]
    fn raw_results_convert_one_way() {
        assert_eq!(status_of(0), 0);
        assert_eq!(status_of(42), 0);
        assert_eq!(status_of(-i64::from(libc::ENOSYS)), i64::from(libc::ENOSYS));
        assert_eq!(result_of(-i64::from(libc::EBADF)).unwrap_err().raw_os_error(), Some(libc::EBADF));
        assert_eq!(result_of(7).unwrap(), 7);
    }

    #[test]
    fn every_hot_wrapper_reports_failure_as_a_negative_errno() {
        // SAFETY: closing an invalid descriptor touches nothing; it only sets errno.
        let r = raw_of_libc(unsafe { libc::close(-1) });
        assert_eq!(status_of(r), i64::from(libc::EBADF));
        assert_eq!(status_of(raw_read(-1, &mut [0u8; 1])), i64::from(libc::EBADF));
        assert_eq!(status_of(libc_clock_gettime()), 0);
    }
}
