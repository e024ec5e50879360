//! Channels between tasks: pipes, eventfd counters, socket pairs, futexes on shared
//! words, and pidfds to watch a child without reaping it. The futex calls are hot
//! (raw results); the rest is set-up through rustix.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64};

use super::arch;

/// A pipe: (read end, write end), both close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// An eventfd counter starting at 0, close-on-exec, blocking.
pub fn eventfd() -> io::Result<OwnedFd> {
    Ok(rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)?)
}

/// A connected AF_UNIX stream socket pair, close-on-exec.
pub fn unix_socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    Ok(rustix::net::socketpair(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None)?)
}

/// `pidfd_open(pid)`: a descriptor that becomes readable when process `pid` exits.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?)
}

/// Waits until one of `fds` is readable (or hung up); returns its index. Blocks
/// without a timeout; EINTR is retried.
pub fn wait_readable_any<Fd: AsFd>(fds: &[Fd]) -> io::Result<usize> {
    use rustix::event::{PollFd, PollFlags};
    let mut polls: Vec<PollFd> = fds.iter().map(|fd| PollFd::new(fd, PollFlags::IN)).collect();
    loop {
        match rustix::event::poll(&mut polls, None) {
            Ok(n) if n > 0 => return Ok(polls.iter().position(|p| !p.revents().is_empty()).unwrap_or(0)),
            Ok(_) | Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// FUTEX_WAIT on `word` while it holds `expected`, for at most `timeout` (None: no
/// timeout, so the kernel arms no timer). Returns the raw result: 0 woken, -EAGAIN
/// value changed, -ETIMEDOUT, -EINTR.
#[inline(always)]
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<&libc::timespec>, shared: bool) -> i64 {
    let op = if shared { libc::FUTEX_WAIT } else { libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG };
    let timeout = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live aligned u32 and `timeout` null or a valid relative timespec.
    unsafe {
        arch::syscall4(
            libc::SYS_futex,
            word.as_ptr() as i64,
            i64::from(op),
            i64::from(expected),
            timeout as *const _ as i64,
        )
    }
}

/// FUTEX_WAKE up to `n` waiters on `word`. Returns the raw result (woken count).
#[inline(always)]
pub fn futex_wake(word: &AtomicU32, n: i32, shared: bool) -> i64 {
    let op = if shared { libc::FUTEX_WAKE } else { libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG };
    // SAFETY: `word` is a live aligned u32; FUTEX_WAKE reads nothing else.
    unsafe { arch::syscall4(libc::SYS_futex, word.as_ptr() as i64, i64::from(op), i64::from(n), 0) }
}

/// An anonymous shared mapping that survives fork: both processes see the same words.
pub struct SharedWords {
    ptr: *mut AtomicU64,
    len: usize,
}

// SAFETY: the mapping holds only atomics; sharing them across threads is their purpose.
unsafe impl Send for SharedWords {}
// SAFETY: as above: every access goes through an atomic.
unsafe impl Sync for SharedWords {}

impl SharedWords {
    /// Maps `len` zeroed 64-bit words shared with future children.
    pub fn new(len: usize) -> io::Result<Self> {
        let bytes = len.max(1) * 8;
        // SAFETY: an anonymous mapping with no address hint has no preconditions.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { ptr: p.cast(), len: len.max(1) })
    }

    /// The `i`-th 64-bit word.
    pub fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.len, "shared word index out of range");
        // SAFETY: in bounds of a live mapping of zero-initialised atomics.
        unsafe { &*self.ptr.add(i) }
    }

    /// The low 32 bits of the `i`-th word, as a futex word.
    pub fn futex_word(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.len, "shared word index out of range");
        // SAFETY: a u64 slot holds two aligned u32s; we use the first only.
        unsafe { &*(self.ptr.add(i) as *const AtomicU32) }
    }

    /// Words `start..start + len` as a slice (for working-set walks).
    pub fn slice(&self, start: usize, len: usize) -> &[AtomicU64] {
        assert!(start + len <= self.len, "shared word range out of bounds");
        // SAFETY: in bounds of a live mapping of initialised atomics.
        unsafe { std::slice::from_raw_parts(self.ptr.add(start), len) }
    }
}

impl Drop for SharedWords {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping we made; no references outlive `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.len * 8) };
    }
}

/// Segments a TCP socket has sent: every one (pure ACKs included) and those that
/// carried data, from `TCP_INFO` (Linux 4.6 and later; zeros from an older kernel,
/// which writes a shorter struct).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpSegments {
    pub sent: u64,
    pub data_sent: u64,
}

/// The segment counters of the TCP socket `fd`.
pub fn tcp_segments<Fd: AsFd>(fd: Fd) -> io::Result<TcpSegments> {
    use std::os::fd::AsRawFd;
    let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the buffer, which is `len`
    // bytes long, and stores the length written back into `len`.
    super::check(unsafe {
        libc::getsockopt(fd.as_fd().as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, info.as_mut_ptr().cast(), &mut len)
    })?;
    // SAFETY: the struct started zeroed and the kernel filled a prefix of it; every
    // field is a plain integer, valid at any value.
    let info = unsafe { info.assume_init() };
    Ok(TcpSegments { sent: u64::from(info.tcpi_segs_out), data_sent: u64::from(info.tcpi_data_segs_out) })
}
