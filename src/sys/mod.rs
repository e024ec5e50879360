//! Thin, safe wrappers over the system calls oscost measures and the ones it needs to
//! set benchmarks up. This is the only module of the crate allowed `unsafe`; each
//! wrapper does one call, checks nothing it need not, and says why it is sound.
//!
//! Hot wrappers (the ones called inside timed loops) return the raw result as an
//! integer instead of `io::Result`, so a timed loop costs the call and a compare, and
//! are `#[inline(always)]` so no call frame of ours sits around the primitive.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

#[cfg(target_arch = "x86_64")]
#[path = "arch_x86_64.rs"]
mod arch;
#[cfg(not(target_arch = "x86_64"))]
#[path = "arch_other.rs"]
mod arch;

pub use arch::{counter_status, cycles_begin, cycles_end};

/// The errno of the last failed libc call on this thread.
pub fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

/// Converts a raw kernel result (`-errno` on failure) into 0 on success or the errno.
#[inline(always)]
pub fn status_of(raw: i64) -> i64 {
    if (-4095..0).contains(&raw) { -raw } else { 0 }
}

// ---------------------------------------------------------------------------------
// Clocks
// ---------------------------------------------------------------------------------

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
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// clock_gettime(CLOCK_MONOTONIC) through the C library (normally the vDSO, no kernel
/// entry). Returns 0 or the errno.
#[inline(always)]
pub fn libc_clock_gettime() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    std::hint::black_box(&ts);
    if r == 0 { 0 } else { i64::from(errno()) }
}

/// gettimeofday through the C library (normally the vDSO). Returns 0 or the errno.
#[inline(always)]
pub fn libc_gettimeofday() -> i64 {
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    // SAFETY: `tv` is a valid, writable timeval; the timezone argument may be null.
    let r = unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    std::hint::black_box(&tv);
    if r == 0 { 0 } else { i64::from(errno()) }
}

// ---------------------------------------------------------------------------------
// Raw system calls (one kernel entry each, no C library in between)
// ---------------------------------------------------------------------------------

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

/// `nanosleep` with a zero interval (what `sleep(0)` does). Returns 0 or the errno.
#[inline(always)]
pub fn nanosleep_zero() -> i64 {
    let ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec; the remainder pointer may be null.
    let r = unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
    if r == 0 { 0 } else { i64::from(errno()) }
}

// ---------------------------------------------------------------------------------
// File descriptors: pipes, eventfd, socket pairs
// ---------------------------------------------------------------------------------

fn owned(fd: libc::c_int) -> OwnedFd {
    // SAFETY: callers pass a descriptor the kernel just returned to us, owned by no one.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A pipe: (read end, write end), both close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok((owned(fds[0]), owned(fds[1])))
}

/// An eventfd counter starting at 0, close-on-exec, blocking.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd takes no pointers.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) })?;
    Ok(owned(fd))
}

/// A connected AF_UNIX stream socket pair.
pub fn unix_socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors.
    check(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) })?;
    Ok((owned(fds[0]), owned(fds[1])))
}

// ---------------------------------------------------------------------------------
// Futexes and shared memory
// ---------------------------------------------------------------------------------

/// FUTEX_WAIT on `word` while it holds `expected`, for at most `timeout`.
/// Returns the raw result: 0 woken, -EAGAIN value changed, -ETIMEDOUT, -EINTR.
#[inline(always)]
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: &libc::timespec, shared: bool) -> i64 {
    let op = if shared { libc::FUTEX_WAIT } else { libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG };
    // SAFETY: `word` is a live aligned u32 and `timeout` a valid relative timespec.
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
}

impl Drop for SharedWords {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping we made; no references outlive `self`.
        unsafe { libc::munmap(self.ptr.cast(), self.len * 8) };
    }
}

/// Advises the kernel whether to back `buf` with transparent huge pages.
pub fn advise_huge_pages(buf: &mut [u8], huge: bool) -> io::Result<()> {
    let page = page_size();
    let start = (buf.as_mut_ptr() as usize).div_ceil(page) * page;
    let end = (buf.as_mut_ptr() as usize + buf.len()) / page * page;
    if end <= start {
        return Ok(());
    }
    let advice = if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
    // SAFETY: the range is page-aligned and inside `buf`; madvise changes no contents.
    check(unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) })?;
    Ok(())
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf takes no pointers.
    let r = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if r > 0 { r as usize } else { 4096 }
}

/// Physical memory available for new allocations, from sysconf.
pub fn available_memory_bytes() -> u64 {
    // SAFETY: sysconf takes no pointers.
    let pages = unsafe { libc::sysconf(libc::_SC_AVPHYS_PAGES) };
    (pages.max(0) as u64) * page_size() as u64
}

// ---------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------

/// The outcome of `fork` as seen by the caller.
pub enum Fork {
    /// We are the child. Only async-signal-safe work may follow (no allocation, no locks).
    Child,
    /// We are the parent; the child's pid.
    Parent(libc::pid_t),
}

/// `fork` through the C library.
///
/// The child of a multi-threaded process may only call async-signal-safe functions:
/// every caller runs raw system calls in the child and ends it with [`exit_now`].
#[inline(always)]
pub fn fork() -> io::Result<Fork> {
    // SAFETY: see the doc comment: children run only async-signal-safe code.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Fork::Child),
        pid => Ok(Fork::Parent(pid)),
    }
}

/// Ends the calling process at once with `code`, running no destructors or atexit hooks.
#[inline(always)]
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit is async-signal-safe and always allowed.
    unsafe { libc::_exit(code) }
}

/// How a waited-for child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Exited(i32),
    Signaled(i32),
}

impl ExitStatus {
    fn from_raw(status: libc::c_int) -> Self {
        if libc::WIFEXITED(status) {
            ExitStatus::Exited(libc::WEXITSTATUS(status))
        } else {
            ExitStatus::Signaled(libc::WTERMSIG(status))
        }
    }

    /// True for a normal exit with status 0.
    pub fn success(self) -> bool {
        self == ExitStatus::Exited(0)
    }
}

/// Blocks until child `pid` ends and reaps it.
#[inline(always)]
pub fn wait_child(pid: libc::pid_t) -> io::Result<ExitStatus> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int to write.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(ExitStatus::from_raw(status));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Reaps child `pid` if it has ended; Ok(None) if it still runs.
pub fn try_wait_child(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    let mut status = 0;
    // SAFETY: `status` is a valid int to write.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    match r {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        _ => Ok(Some(ExitStatus::from_raw(status))),
    }
}

/// Reaps child `pid`, waiting until `deadline` for it to end by itself, then killing
/// it (SIGKILL) and reaping it.
pub fn reap_by(pid: libc::pid_t, deadline: std::time::Instant) -> io::Result<ExitStatus> {
    loop {
        match try_wait_child(pid)? {
            Some(s) => return Ok(s),
            None if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_micros(200)),
            None => {
                kill_hard(pid);
                return wait_child(pid);
            }
        }
    }
}

/// Sends SIGKILL to process `pid` (errors such as "already gone" are ignored).
pub fn kill_hard(pid: libc::pid_t) {
    // SAFETY: kill takes no pointers; a stale pid yields ESRCH, which we ignore.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Lists the pids of this process's children that still exist (zombies included),
/// from /proc/self/task/*/children.
pub fn live_children() -> Vec<libc::pid_t> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()));
            }
        }
    }
    out
}

/// Arguments for `execve`/`posix_spawn`, prepared before any fork so the child does no
/// allocation.
pub struct ExecArgs {
    path: CString,
    _strings: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

impl ExecArgs {
    /// `path` to execute with `args` (argv[0] included) and an empty environment.
    pub fn new(path: &str, args: &[&str]) -> io::Result<Self> {
        let nul = |s: &str| CString::new(s).map_err(|_| io::Error::other(format!("NUL byte in {s:?}")));
        let path_c = nul(path)?;
        let strings = args.iter().map(|a| nul(a)).collect::<io::Result<Vec<_>>>()?;
        let mut argv: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        argv.push(std::ptr::null());
        Ok(Self { path: path_c, _strings: strings, argv, envp: vec![std::ptr::null()] })
    }
}

/// Replaces the child's image; returns only on failure, with the errno.
#[inline(always)]
pub fn execve(args: &ExecArgs) -> i32 {
    // SAFETY: path, argv and envp are NUL-terminated and outlive the call.
    unsafe { libc::execve(args.path.as_ptr(), args.argv.as_ptr(), args.envp.as_ptr()) };
    errno()
}

/// `posix_spawn` of `args` with no file actions and default attributes.
#[inline(always)]
pub fn posix_spawn(args: &ExecArgs) -> io::Result<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    // SAFETY: all pointers are valid and NUL-terminated; null actions/attrs are allowed.
    let r = unsafe {
        libc::posix_spawn(
            &mut pid,
            args.path.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            args.argv.as_ptr() as *const *mut libc::c_char,
            args.envp.as_ptr() as *const *mut libc::c_char,
        )
    };
    if r == 0 { Ok(pid) } else { Err(io::Error::from_raw_os_error(r)) }
}

/// `vfork` whose child exits at once with status 0, before any code of ours runs in it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn vfork_exit() -> io::Result<libc::pid_t> {
    let ret: i64;
    // SAFETY: the child executes only the `exit` system call inside this asm block, so
    // it never touches the parent's stack or memory while the parent is suspended.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov eax, 60",
            "xor edi, edi",
            "syscall",
            "2:",
            inlateout("rax") libc::SYS_vfork => ret,
            lateout("rcx") _, lateout("r11") _, lateout("rdi") _,
        );
    }
    if ret < 0 { Err(io::Error::from_raw_os_error(-ret as i32)) } else { Ok(ret as libc::pid_t) }
}

/// A small stack for [`clone_vm_exit`] children, which use none of it.
#[cfg(target_arch = "x86_64")]
static CLONE_STACK: [AtomicU64; 64] = [const { AtomicU64::new(0) }; 64];

/// `clone(CLONE_VM | SIGCHLD)`: a new process sharing our address space (the kernel
/// half of thread creation), whose child exits at once with status 0.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn clone_vm_exit() -> io::Result<libc::pid_t> {
    let stack_top = CLONE_STACK.as_ptr() as i64 + (CLONE_STACK.len() as i64 * 8) - 16;
    let ret: i64;
    // SAFETY: the child runs only the `exit` system call inside this asm block on its own
    // (unused) stack; the parent continues with its registers intact.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov eax, 60",
            "xor edi, edi",
            "syscall",
            "2:",
            inlateout("rax") libc::SYS_clone => ret,
            inlateout("rdi") i64::from(libc::CLONE_VM | libc::SIGCHLD) => _,
            in("rsi") stack_top,
            in("rdx") 0i64, in("r10") 0i64, in("r8") 0i64,
            lateout("rcx") _, lateout("r11") _,
        );
    }
    if ret < 0 { Err(io::Error::from_raw_os_error(-ret as i32)) } else { Ok(ret as libc::pid_t) }
}

/// Not wired up on this architecture.
#[cfg(not(target_arch = "x86_64"))]
pub fn vfork_exit() -> io::Result<libc::pid_t> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "vfork probe is x86_64-only for now"))
}

/// Not wired up on this architecture.
#[cfg(not(target_arch = "x86_64"))]
pub fn clone_vm_exit() -> io::Result<libc::pid_t> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "clone probe is x86_64-only for now"))
}

// ---------------------------------------------------------------------------------
// Threads (pthreads directly: no closure boxing, no Arc, as a C program would)
// ---------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------
// Scheduling: affinity, nice, policy, counters
// ---------------------------------------------------------------------------------

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable and its size is passed.
    check(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    // SAFETY: CPU_ISSET reads a bit of `set`; every index is below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `c` is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is valid and its size is passed.
    check(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

/// Sets the nice value of the calling thread (Linux applies PRIO_PROCESS with who=0 to
/// the calling thread only).
pub fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: setpriority takes no pointers.
    check(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) })?;
    Ok(())
}

/// Sets the calling thread's scheduling policy and static priority.
pub fn set_policy(policy: libc::c_int, priority: i32) -> io::Result<()> {
    let p = libc::sched_param { sched_priority: priority };
    // SAFETY: `p` is a valid sched_param.
    check(unsafe { libc::sched_setscheduler(0, policy, &p) })?;
    Ok(())
}

/// Sets thread `tid`'s scheduling policy (used by the real-time watchdog).
pub fn set_policy_of(tid: libc::pid_t, policy: libc::c_int, priority: i32) -> io::Result<()> {
    let p = libc::sched_param { sched_priority: priority };
    // SAFETY: `p` is a valid sched_param.
    check(unsafe { libc::sched_setscheduler(tid, policy, &p) })?;
    Ok(())
}

/// The highest static priority of a policy.
pub fn max_priority(policy: libc::c_int) -> i32 {
    // SAFETY: takes no pointers.
    unsafe { libc::sched_get_priority_max(policy) }
}

/// Sets RLIMIT_RTTIME (microseconds of CPU a real-time thread may use without
/// blocking): the kernel's own bound on a runaway real-time loop.
pub fn set_rttime_limit(soft_us: u64, hard_us: u64) -> io::Result<()> {
    let lim = libc::rlimit { rlim_cur: soft_us, rlim_max: hard_us };
    // SAFETY: `lim` is a valid rlimit.
    check(unsafe { libc::setrlimit(libc::RLIMIT_RTTIME, &lim) })?;
    Ok(())
}

/// The soft limit on this user's processes (RLIMIT_NPROC); None if unlimited.
pub fn nproc_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is writable.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut lim) };
    (r == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// Sets the soft RLIMIT_NPROC (tests use it to induce fork failures).
pub fn set_nproc_limit(soft: u64) -> io::Result<()> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is writable/readable.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut lim) })?;
    lim.rlim_cur = soft.min(lim.rlim_max);
    check(unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &lim) })?;
    Ok(())
}

/// The real user id.
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// Whether the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The kernel's thread id of the caller.
pub fn gettid() -> libc::pid_t {
    raw_gettid() as libc::pid_t
}

/// The process id of the caller.
pub fn getpid() -> libc::pid_t {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// The running C library's version string (glibc's gnu_get_libc_version).
#[cfg(target_env = "gnu")]
pub fn libc_version() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    let p = unsafe { libc::gnu_get_libc_version() };
    // SAFETY: glibc guarantees a valid static C string.
    format!("glibc {}", unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

#[cfg(not(target_env = "gnu"))]
pub fn libc_version() -> String {
    "unknown (not glibc)".into()
}

/// uname(2) fields: (sysname, nodename, release, version, machine).
pub fn uname() -> (String, String, String, String, String) {
    // SAFETY: an all-zero utsname is valid; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is writable.
    unsafe { libc::uname(&mut u) };
    let f = |a: &[libc::c_char]| {
        let bytes: Vec<u8> = a.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (f(&u.sysname), f(&u.nodename), f(&u.release), f(&u.version), f(&u.machine))
}

// ---------------------------------------------------------------------------------
// perf_event_open counters
// ---------------------------------------------------------------------------------

/// The fields of `struct perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_FLAG_DISABLED: u64 = 1;
const PERF_FLAG_EXCLUDE_HV: u64 = 1 << 6;

/// The perf event kinds oscost counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfEvent {
    Instructions,
    Cycles,
    ContextSwitches,
    CpuMigrations,
}

impl PerfEvent {
    fn type_config(self) -> (u32, u64) {
        match self {
            PerfEvent::Instructions => (0, 1),    // PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS
            PerfEvent::Cycles => (0, 0),          // PERF_COUNT_HW_CPU_CYCLES
            PerfEvent::ContextSwitches => (1, 3), // PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES
            PerfEvent::CpuMigrations => (1, 4),   // PERF_COUNT_SW_CPU_MIGRATIONS
        }
    }
}

/// One perf counter attached to one task (thread or process), user and kernel counted.
pub struct PerfCounter(OwnedFd);

impl PerfCounter {
    /// Opens a disabled counter of `event` on task `tid` (0 = the calling thread).
    pub fn open(event: PerfEvent, tid: libc::pid_t) -> io::Result<Self> {
        let (type_, config) = event.type_config();
        let attr = PerfEventAttr {
            type_,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config,
            flags: PERF_FLAG_DISABLED | PERF_FLAG_EXCLUDE_HV,
            ..Default::default()
        };
        // SAFETY: `attr` is a valid VER0 perf_event_attr; no group fd, no flags.
        let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, tid, -1, -1, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self(owned(fd as libc::c_int)))
    }

    fn ioctl(&self, req: libc::c_ulong) -> io::Result<()> {
        // SAFETY: the enable/disable/reset ioctls take an integer argument of 0.
        check(unsafe { libc::ioctl(self.0.as_raw_fd(), req as _, 0) })?;
        Ok(())
    }

    /// Zeroes and starts the counter.
    pub fn start(&self) -> io::Result<()> {
        self.ioctl(0x2403)?; // PERF_EVENT_IOC_RESET
        self.ioctl(0x2400) // PERF_EVENT_IOC_ENABLE
    }

    /// Stops the counter.
    pub fn stop(&self) -> io::Result<()> {
        self.ioctl(0x2401) // PERF_EVENT_IOC_DISABLE
    }

    /// Reads the counter's value.
    pub fn value(&self) -> io::Result<u64> {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v`.
        let n = unsafe { libc::read(self.0.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
        if n == 8 { Ok(v) } else { Err(io::Error::last_os_error()) }
    }
}

// ---------------------------------------------------------------------------------
// Ctrl-C
// ---------------------------------------------------------------------------------

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
    check(unsafe { libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut()) })?;
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
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes an integer signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
}

// ---------------------------------------------------------------------------------
// Watching a child process without reaping it
// ---------------------------------------------------------------------------------

/// `pidfd_open(pid)`: a descriptor that becomes readable when process `pid` exits.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes two integers.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(owned(fd as libc::c_int))
}

/// Waits until one of `fds` is readable (or hung up); returns its index. Blocks
/// without a timeout; EINTR is retried.
pub fn wait_readable_any(fds: &[RawFd]) -> io::Result<usize> {
    let mut polls: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    loop {
        // SAFETY: `polls` is a valid array of pollfd of the given length.
        let n = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, -1) };
        if n > 0 {
            return Ok(polls.iter().position(|p| p.revents != 0).unwrap_or(0));
        }
        let e = io::Error::last_os_error();
        if n < 0 && e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
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

/// A relative timeout for futex waits.
pub fn timespec(d: Duration) -> libc::timespec {
    libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long }
}

impl SharedWords {
    /// Words `range` as a slice (for working-set walks).
    pub fn slice(&self, start: usize, len: usize) -> &[AtomicU64] {
        assert!(start + len <= self.len, "shared word range out of bounds");
        // SAFETY: in bounds of a live mapping of initialised atomics.
        unsafe { std::slice::from_raw_parts(self.ptr.add(start), len) }
    }
}

/// The soft limit on open files (RLIMIT_NOFILE).
pub fn nofile_limit() -> u64 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is writable.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    lim.rlim_cur
}

/// Raises the soft open-file limit to the hard limit (large run-queue sweeps hold
/// thousands of pipe ends). Failure leaves the limit as it was.
pub fn raise_nofile_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is writable, then read.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max.min(1 << 20);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// System-wide counters from /proc/stat: (context switches since boot, tasks runnable now).
pub fn proc_stat() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let field = |name: &str| s.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse::<u64>().ok()));
    Some((field("ctxt ")?, field("procs_running ")?))
}

/// CPU time (ns) task `tid` of process `pid` has run, from /proc/.../schedstat.
pub fn task_cpu_ns(pid: libc::pid_t, tid: libc::pid_t) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Sleeps `ns` nanoseconds with clock_nanosleep(CLOCK_MONOTONIC, relative).
/// Returns 0 or the errno.
#[inline(always)]
pub fn sleep_ns(ns: u64) -> i64 {
    let ts =
        libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long };
    // SAFETY: `ts` is valid; a null remainder pointer is allowed.
    i64::from(unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) })
}

/// The calling thread's timer slack, restored on drop.
pub struct TimerSlack(libc::c_ulong);

impl TimerSlack {
    /// Sets the timer slack to `ns` (PR_SET_TIMERSLACK).
    pub fn set(ns: u64) -> io::Result<Self> {
        // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the current slack.
        let old = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        if old < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: PR_SET_TIMERSLACK takes an integer.
        check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) })?;
        Ok(Self(old as libc::c_ulong))
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, self.0, 0, 0, 0) };
    }
}

/// Returns freed heap memory to the kernel and keeps large buffers out of the heap from
/// now on (a fixed mmap threshold: a freed large buffer is unmapped at once). fork's
/// cost grows with the parent's resident memory, so the creation family runs from a
/// parent that holds only what it uses.
#[cfg(target_env = "gnu")]
pub fn release_free_memory() {
    // SAFETY: mallopt and malloc_trim only adjust the allocator's own bookkeeping.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        libc::malloc_trim(0);
    }
}

#[cfg(not(target_env = "gnu"))]
pub fn release_free_memory() {}

/// This process's resident memory in KiB (VmRSS), if readable.
pub fn resident_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| l.strip_prefix("VmRSS:").and_then(|v| v.split_whitespace().next()?.parse().ok()))
}
