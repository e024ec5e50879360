//! Processes: fork (only through wrappers whose child never returns into our code),
//! exec, posix_spawn, vfork and clone probes, waiting and reaping.
//!
//! The child's rules, stated once: after `fork` in a possibly multi-threaded parent the
//! child holds a copy of memory in which other threads may have held locks. It may
//! make system calls and touch memory it owns; anything that takes a lock (allocation
//! included) can deadlock it, which the creator's deadline then ends with SIGKILL. It
//! must never return into the frames of the code that forked (their destructors would
//! run twice, once per process): every wrapper here ends the child with `_exit`.

use std::ffi::CString;
use std::io;
#[cfg(target_arch = "x86_64")]
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// The outcome of `fork` as seen by the caller.
enum Fork {
    Child,
    Parent(libc::pid_t),
}

/// `fork` through the C library.
///
/// # Safety
/// The caller follows the child's rules of the module doc: in the child it ends with
/// [`exit_now`] and never returns into frames that existed before the fork.
#[inline(always)]
unsafe fn fork() -> io::Result<Fork> {
    // SAFETY: the caller upholds the child's rules (see above).
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Fork::Child),
        pid => Ok(Fork::Parent(pid)),
    }
}

/// fork, with the child exiting at once with status 0. Returns the child's pid.
#[inline(always)]
pub fn fork_exit() -> io::Result<libc::pid_t> {
    // SAFETY: the child calls only _exit.
    match unsafe { fork() }? {
        Fork::Child => exit_now(0),
        Fork::Parent(pid) => Ok(pid),
    }
}

/// fork + execve of `args` in the child (which exits 127 if exec fails).
#[inline(always)]
pub fn fork_exec(args: &ExecArgs) -> io::Result<libc::pid_t> {
    // SAFETY: the child calls only execve (arguments prepared before the fork, so no
    // allocation) and _exit.
    match unsafe { fork() }? {
        Fork::Child => {
            execve(args);
            exit_now(127)
        }
        Fork::Parent(pid) => Ok(pid),
    }
}

/// forks a child that runs `body` and exits with its return value (101 if it
/// panics). The body is bound by the child's rules of the module doc: raw system calls
/// and memory it owns; anything else may deadlock the child (not the parent).
pub fn fork_child<F: FnOnce() -> i32>(body: F) -> io::Result<libc::pid_t> {
    // SAFETY: the child never returns from this block: it runs `body` (a panic is
    // caught, not unwound through the parent's frames) and ends with _exit.
    match unsafe { fork() }? {
        Fork::Child => {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101);
            exit_now(code)
        }
        Fork::Parent(pid) => Ok(pid),
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
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    }
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
    /// `path` to execute with `args` (`argv[0]` included) and an empty environment.
    pub fn new(path: &str, args: &[&str]) -> io::Result<Self> {
        let nul = |s: &str| CString::new(s).map_err(|_| io::Error::other(format!("NUL byte in {s:?}")));
        let path_c = nul(path)?;
        let strings = args.iter().map(|a| nul(a)).collect::<io::Result<Vec<_>>>()?;
        let mut argv: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        argv.push(std::ptr::null());
        Ok(Self { path: path_c, _strings: strings, argv, envp: vec![std::ptr::null()] })
    }
}

/// Replaces the child's image; returns only on failure.
#[inline(always)]
fn execve(args: &ExecArgs) {
    // SAFETY: path, argv and envp are NUL-terminated and outlive the call.
    unsafe { libc::execve(args.path.as_ptr(), args.argv.as_ptr(), args.envp.as_ptr()) };
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

/// Issues the process-creating call `nr` (vfork or clone) whose child runs nothing
/// but `exit(0)`, inside this asm block, before any code of ours; the parent gets the
/// child's pid.
///
/// # Safety
/// `flags` and `stack_top` must be valid arguments of `nr` (vfork ignores them), and a
/// child that shares our memory must have a stack of its own or the parent suspended.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn create_exiting_child(nr: i64, flags: i64, stack_top: i64) -> io::Result<libc::pid_t> {
    let ret: i64;
    // SAFETY: the child executes only the `exit` system call inside this block, so it
    // never touches the caller's frames; the parent continues with its registers
    // intact (syscall clobbers rcx and r11 only). The caller vouches for the arguments.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov eax, 60",
            "xor edi, edi",
            "syscall",
            "2:",
            inlateout("rax") nr => ret,
            inlateout("rdi") flags => _,
            in("rsi") stack_top,
            in("rdx") 0i64, in("r10") 0i64, in("r8") 0i64,
            lateout("rcx") _, lateout("r11") _,
        );
    }
    if ret < 0 { Err(io::Error::from_raw_os_error(-ret as i32)) } else { Ok(ret as libc::pid_t) }
}

/// `vfork` whose child exits at once with status 0, before any code of ours runs in it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn vfork_exit() -> io::Result<libc::pid_t> {
    // SAFETY: vfork takes no arguments and suspends the parent while the child, on the
    // parent's stack, runs only `exit`.
    unsafe { create_exiting_child(libc::SYS_vfork, 0, 0) }
}

/// The stack of [`clone_vm_exit`] children. They run only the `exit` call, but a
/// signal delivered before it would push a frame (several KiB with large vector
/// state) here, so it is a real stack, not a token one. One child exists at a time:
/// the creator reaps each before making the next.
#[cfg(target_arch = "x86_64")]
static CLONE_STACK: [AtomicU64; 8192] = [const { AtomicU64::new(0) }; 8192];

/// `clone(CLONE_VM | SIGCHLD)`: a new process sharing our address space (the kernel
/// half of thread creation), whose child exits at once with status 0.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn clone_vm_exit() -> io::Result<libc::pid_t> {
    let stack_top = CLONE_STACK.as_ptr() as i64 + (CLONE_STACK.len() as i64 * 8) - 16;
    // SAFETY: the child gets its own 64 KiB stack (16-byte aligned top) in our memory.
    unsafe { create_exiting_child(libc::SYS_clone, i64::from(libc::CLONE_VM | libc::SIGCHLD), stack_top) }
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

/// Sends `sig` to every process of the group `pgid` (errors such as "already gone"
/// are ignored): how a worker and every child it started are stopped together.
pub fn signal_group(pgid: libc::pid_t, sig: libc::c_int) {
    if let (Some(p), Some(s)) = (rustix::process::Pid::from_raw(pgid), rustix::process::Signal::from_named_raw(sig)) {
        let _ = rustix::process::kill_process_group(p, s);
    }
}

/// Makes this process the reaper of its descendants' orphans: a worker killed with
/// its group leaves its tasks to us rather than to init, so [`reap_group`] can wait
/// for every one of them (a container's init may reap nothing).
pub fn become_subreaper() -> io::Result<()> {
    rustix::process::set_child_subreaper(rustix::process::Pid::from_raw(super::getpid()))?;
    Ok(())
}

/// Reaps every child of ours in process group `pgid` (a dead worker's tasks, handed
/// to us as their subreaper), until none is left or `deadline` passes; returns how
/// many were reaped.
pub fn reap_group(pgid: libc::pid_t, deadline: std::time::Instant) -> usize {
    let Some(group) = rustix::process::Pid::from_raw(pgid) else { return 0 };
    let mut reaped = 0;
    loop {
        match rustix::process::waitpgid(group, rustix::process::WaitOptions::NOHANG) {
            Ok(Some(_)) => reaped += 1,
            Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Err(rustix::io::Errno::INTR) => {}
            // None left (ECHILD), or the deadline passed.
            _ => return reaped,
        }
    }
}

/// The largest resident set of any child this process has waited for (and of their
/// waited-for descendants), in bytes: what a test reads to bound a command's memory.
pub fn children_peak_rss() -> io::Result<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage into the buffer it is given, which is large
    // enough for it.
    super::check(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) })?;
    // SAFETY: getrusage succeeded, so it filled the struct (which started zeroed).
    let usage = unsafe { usage.assume_init() };
    Ok((usage.ru_maxrss.max(0) as u64) << 10)
}

/// Takes ownership of descriptor `raw`, inherited from the parent process across
/// exec, after checking that it is open; it is made close-on-exec again.
pub fn adopt_inherited_fd(raw: std::os::fd::RawFd) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    if raw < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: F_GETFD only reads the descriptor table entry of `raw`.
    super::check(unsafe { libc::fcntl(raw, libc::F_GETFD) })?;
    // SAFETY: `raw` is open (checked above) and was passed to this process for it to
    // own: the parent names it in the worker's request and nothing else here uses it.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    Ok(fd)
}

/// Gives the calling thread a mount namespace of its own, so mounts it makes are seen
/// by no other thread or process, and vanish when the thread exits.
pub fn unshare_mount_namespace() -> io::Result<()> {
    // SAFETY: only NEWNS (which implies FS: the thread's root and working directory) is
    // unshared; the descriptor table stays shared, so the hazard `unshare_unsafe`
    // names (threads seeing different descriptor tables) cannot arise.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }.map_err(io::Error::from)
}

/// Forks a child that goes on as this program: Ok(None) in the child (which dies with
/// its parent); in the parent, waits for the child, ignoring stop signals meanwhile
/// (they reach the child through the process group), and gives Ok(Some(code)), its
/// exit code (128 + the signal that ended it). Refused unless the calling process has
/// one thread: only then may the child go on beyond the child's rules.
pub fn fork_and_wait() -> io::Result<Option<i32>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    if !status.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Threads:", "1"]) {
        return Err(io::Error::other("forking to go on needs a single-threaded process"));
    }
    let parent = super::getpid();
    // SAFETY: the process has one thread (checked above), so the child's copy of every
    // lock and allocator is consistent and it may go on as an ordinary program.
    match unsafe { fork() }? {
        Fork::Child => {
            // Not `die_with_parent(Some(parent))`: in a new PID namespace the parent
            // lies outside it, and getppid() reads 0. The parent only waits, so it
            // cannot die before the signal is armed unless it is killed, and then the
            // coordinator kills this child's process group too.
            let _ = parent;
            super::die_with_parent(None);
            Ok(None)
        }
        Fork::Parent(pid) => {
            if let Err(e) = super::install_interrupt_flag() {
                // The child would go on measuring beside a parent that returns an error.
                kill_hard(pid);
                let _ = wait_child(pid);
                return Err(e);
            }
            Ok(Some(match wait_child(pid)? {
                ExitStatus::Exited(code) => code,
                ExitStatus::Signaled(sig) => 128 + sig,
            }))
        }
    }
}

/// A handle on process `pid` (a pidfd) that keeps naming that process even after its
/// number is reused: what is checked through /proc after opening it is what
/// [`kill_process_handle`] then kills.
pub fn process_handle(pid: libc::pid_t) -> io::Result<std::os::fd::OwnedFd> {
    let pid = rustix::process::Pid::from_raw(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    Ok(rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?)
}

/// Sends SIGKILL to the process a [`process_handle`] names (an error once it is gone).
pub fn kill_process_handle(handle: &std::os::fd::OwnedFd) -> io::Result<()> {
    Ok(rustix::process::pidfd_send_signal(handle, rustix::process::Signal::KILL)?)
}
