//! The one-call primitives the system-call family measures, each a raw `syscall`
//! instruction (no C library between us and the kernel) unless its name says `libc`.
//! All are hot: raw results, `#[inline(always)]`.

use std::ffi::CStr;
use std::os::fd::RawFd;

use super::arch;

/// A system call number no kernel implements: entering with it costs the bare
/// entry/exit path and returns -ENOSYS.
pub const UNUSED_SYSCALL_NR: i64 = 1023;

macro_rules! raw_noarg {
    ($(#[$doc:meta] $name:ident => $nr:expr;)*) => {$(
        #[$doc]
        #[inline(always)]
        pub fn $name() -> i64 {
            // SAFETY: this call takes no arguments, touches no memory of ours and
            // neither forks nor exits.
            unsafe { arch::syscall0($nr) }
        }
    )*};
}

raw_noarg! {
    /// Raw `getppid`.
    raw_getppid => libc::SYS_getppid;
    /// Raw `getuid`.
    raw_getuid => libc::SYS_getuid;
    /// Raw `gettid`.
    raw_gettid => libc::SYS_gettid;
    /// Raw `getpid`.
    raw_getpid => libc::SYS_getpid;
    /// Raw `sched_yield`.
    raw_sched_yield => libc::SYS_sched_yield;
    /// An unimplemented system call number: returns -ENOSYS.
    raw_enosys => UNUSED_SYSCALL_NR;
}

/// `getpid` through the C library's wrapper (which some C libraries cache).
#[inline(always)]
pub fn libc_getpid() -> i64 {
    // SAFETY: getpid has no preconditions.
    i64::from(unsafe { libc::getpid() })
}

/// Raw `clock_gettime(CLOCK_MONOTONIC)`: a kernel entry, unlike the vDSO.
#[inline(always)]
pub fn raw_clock_gettime() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let r = unsafe {
        arch::syscall4(libc::SYS_clock_gettime, i64::from(libc::CLOCK_MONOTONIC), &mut ts as *mut _ as i64, 0, 0)
    };
    std::hint::black_box(&ts);
    r
}

/// Raw `gettimeofday`: a kernel entry, unlike the vDSO.
#[inline(always)]
pub fn raw_gettimeofday() -> i64 {
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    // SAFETY: `tv` is a valid, writable timeval; a null timezone is allowed.
    let r = unsafe { arch::syscall4(libc::SYS_gettimeofday, &mut tv as *mut _ as i64, 0, 0, 0) };
    std::hint::black_box(&tv);
    r
}

/// Raw `openat(AT_FDCWD, path, O_RDONLY|O_CLOEXEC)` then `close`: returns the open's
/// or the close's raw result, whichever failed, else 0.
#[inline(always)]
pub fn raw_open_close(path: &CStr) -> i64 {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let fd = unsafe {
        arch::syscall4(
            libc::SYS_openat,
            i64::from(libc::AT_FDCWD),
            path.as_ptr() as i64,
            i64::from(libc::O_RDONLY | libc::O_CLOEXEC),
            0,
        )
    };
    if fd < 0 {
        return fd;
    }
    // SAFETY: `fd` was just opened by us and is closed exactly once.
    unsafe { arch::syscall4(libc::SYS_close, fd, 0, 0, 0) }
}

/// Raw `newfstatat(AT_FDCWD, path, &st, 0)`.
#[inline(always)]
pub fn raw_stat(path: &CStr) -> i64 {
    // SAFETY: an all-zero `stat` is a valid value of the plain-data struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    #[cfg(target_arch = "x86_64")]
    let nr = libc::SYS_newfstatat;
    #[cfg(not(target_arch = "x86_64"))]
    let nr = libc::SYS_fstatat;
    // SAFETY: `path` is NUL-terminated, `st` is writable and large enough.
    let r = unsafe { arch::syscall4(nr, i64::from(libc::AT_FDCWD), path.as_ptr() as i64, &mut st as *mut _ as i64, 0) };
    std::hint::black_box(&st);
    r
}

/// Raw `read(fd, buf, buf.len())`.
#[inline(always)]
pub fn raw_read(fd: RawFd, buf: &mut [u8]) -> i64 {
    // SAFETY: `buf` is writable for `buf.len()` bytes; a bad fd only yields -EBADF.
    unsafe { arch::syscall4(libc::SYS_read, i64::from(fd), buf.as_mut_ptr() as i64, buf.len() as i64, 0) }
}

/// Raw `write(fd, buf, buf.len())`.
#[inline(always)]
pub fn raw_write(fd: RawFd, buf: &[u8]) -> i64 {
    // SAFETY: `buf` is readable for `buf.len()` bytes; a bad fd only yields -EBADF.
    unsafe { arch::syscall4(libc::SYS_write, i64::from(fd), buf.as_ptr() as i64, buf.len() as i64, 0) }
}

/// Raw `write` of one u64 (eventfd's unit). Returns the raw result.
#[inline(always)]
pub fn raw_write_u64(fd: RawFd, value: u64) -> i64 {
    raw_write(fd, &value.to_ne_bytes())
}

/// Raw `read` of one u64 into `out`. Returns the raw result.
#[inline(always)]
pub fn raw_read_u64(fd: RawFd, out: &mut u64) -> i64 {
    let mut b = [0u8; 8];
    let r = raw_read(fd, &mut b);
    *out = u64::from_ne_bytes(b);
    r
}
