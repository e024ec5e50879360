//! `seccomp:allow=N` and `seccomp:default`: a seccomp filter on every system call of
//! the worker and everything it starts.
//!
//! `allow=N` is N rules that each load an argument and compare it with a value no call
//! passes, then allow: it allows every call, and costs N rules on each. The rules read
//! arguments on purpose: since Linux 5.11 the kernel caches, per system call number, a
//! filter's verdict when it depends on the number alone, and skips such a filter
//! altogether, so N rules on numbers alone would measure the cache, not the rules.
//!
//! `default` is an allow-list shaped like a container runtime's default profile,
//! written for this project: the calls ordinary programs make are allowed by number
//! (cached, as above), `clone` is allowed unless it asks for new namespaces (an
//! argument test, never cached), `clone3` answers ENOSYS (so the C library falls back
//! to `clone`, which can be inspected), and every other call (namespaces, mounts,
//! kernel modules, perf events, BPF, keyrings, reboot) fails with EPERM.
//!
//! `notify` sends every call to a supervisor in user space (SECCOMP_RET_USER_NOTIF),
//! as sandboxes that emulate or vet calls do, and the supervisor, a thread of the worker
//! started before the filter (so not itself filtered), lets each go on unchanged
//! (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the cost of the round trip alone.
//!
//! The program is built here, instruction by instruction, because its shape is the
//! measurement: a filter compiler would reorder the tests or jump on the number first.

use serde::{Deserialize, Serialize};

use super::{Act, Condition, EnterError, Entered, Kind, Malformed, Setup, Unavailable, state_of};
use oscost_platform::sys::BpfInstruction;

pub const KIND: Kind =
    Kind { name: "seccomp", parse, forms: "seccomp:allow=N (1–1024), seccomp:default, seccomp:notify" };

/// The most rules an `allow=N` filter has (3 instructions each, within the kernel's
/// 4096).
pub const MAX_RULES: u16 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Filter {
    /// N argument rules that never match, then allow.
    AllowAll { rules: u16 },
    /// The container-style allow-list.
    Default,
    /// Every call to a supervisor in user space, which lets it go on.
    Notify,
}

/// The condition: the filter installed in the worker.
struct Seccomp(Filter);

impl std::fmt::Display for Seccomp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "seccomp:{}", self.0)
    }
}

impl Act for Seccomp {
    fn prepare(&self, _: &crate::bench::BenchOptions) -> Result<Setup, Unavailable> {
        Setup::in_worker(&check(&self.0)?)
    }

    fn enter(&self, state: &serde_json::Value) -> Result<Entered, EnterError> {
        enter(&state_of(state)?)
    }
}

fn parse(rest: &str) -> Result<Condition, Malformed> {
    match rest {
        "default" => return Ok(Condition::new(Seccomp(Filter::Default))),
        "notify" => return Ok(Condition::new(Seccomp(Filter::Notify))),
        _ => {}
    }
    let n = rest.strip_prefix("allow=").ok_or(Malformed::Incomplete { hint: "give allow=N or default" })?;
    let rules: u16 = n.parse().map_err(|_| Malformed::NotOneOf { given: n.into(), expected: "a rule count" })?;
    if !(1..=MAX_RULES).contains(&rules) {
        return Err(Malformed::Range { what: "allow=N", low: 1, high: MAX_RULES.into(), of: " rules" });
    }
    Ok(Condition::new(Seccomp(Filter::AllowAll { rules })))
}

impl std::fmt::Display for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Filter::AllowAll { rules } => write!(f, "allow={rules}"),
            Filter::Default => write!(f, "default"),
            Filter::Notify => write!(f, "notify"),
        }
    }
}

// Classic BPF as seccomp runs it (linux/filter.h, linux/seccomp.h).
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JGT_K: u16 = 0x25;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg_high(i: u32) -> u32 {
    16 + 8 * i + 4
}
/// The x32 ABI's bit in the call number: such calls are refused.
const X32_BIT: u32 = 0x4000_0000;
/// The high word no argument of ours has: user pointers on x86_64 are below
/// 0x0000_8000_0000_0000, and sizes, flags and descriptors are small.
const NEVER: u32 = 0x5ecc_0000;

const fn insn(code: u16, jt: u8, jf: u8, k: u32) -> BpfInstruction {
    BpfInstruction { code, jt, jf, k }
}

/// The filter's program.
pub fn program(f: &Filter) -> Vec<BpfInstruction> {
    let mut p =
        vec![insn(LD_W_ABS, 0, 0, ARCH), insn(JEQ_K, 1, 0, AUDIT_ARCH_X86_64), insn(RET_K, 0, 0, RET_KILL_PROCESS)];
    match f {
        Filter::Notify => p.push(insn(RET_K, 0, 0, RET_USER_NOTIF)),
        Filter::AllowAll { rules } => {
            for i in 0..u32::from(*rules) {
                p.push(insn(LD_W_ABS, 0, 0, arg_high(i % 6)));
                p.push(insn(JEQ_K, 0, 1, NEVER | i));
                p.push(insn(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32));
            }
            p.push(insn(RET_K, 0, 0, RET_ALLOW));
        }
        Filter::Default => {
            p.push(insn(LD_W_ABS, 0, 0, NR));
            p.push(insn(JGE_K, 0, 1, X32_BIT));
            p.push(insn(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32));
            // A number past every call the profile knows answers ENOSYS, as container
            // runtimes do, so a program probing for a newer call falls back.
            p.push(insn(JGT_K, 0, 1, LAST_KNOWN));
            p.push(insn(RET_K, 0, 0, RET_ERRNO | libc::ENOSYS as u32));
            let namespaces = (libc::CLONE_NEWNS
                | libc::CLONE_NEWUSER
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWNET
                | libc::CLONE_NEWUTS
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWCGROUP) as u32;
            // clone: allowed unless it asks for a namespace (flags are argument 0).
            p.push(insn(JEQ_K, 0, 4, libc::SYS_clone as u32));
            p.push(insn(LD_W_ABS, 0, 0, 16));
            p.push(insn(JSET_K, 0, 1, namespaces));
            p.push(insn(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32));
            p.push(insn(RET_K, 0, 0, RET_ALLOW));
            p.push(insn(JEQ_K, 0, 1, libc::SYS_clone3 as u32));
            p.push(insn(RET_K, 0, 0, RET_ERRNO | libc::ENOSYS as u32));
            for nr in DEFAULT_ALLOWED {
                p.push(insn(JEQ_K, 0, 1, *nr as u32));
                p.push(insn(RET_K, 0, 0, RET_ALLOW));
            }
            p.push(insn(RET_K, 0, 0, RET_ERRNO | libc::EPERM as u32));
        }
    }
    p
}

/// The highest call number the default profile names (clone3 and the list below):
/// numbers past it are calls newer than the profile.
const LAST_KNOWN: u32 = highest(DEFAULT_ALLOWED, libc::SYS_clone3 as u32);

const fn highest(list: &[libc::c_long], mut at_least: u32) -> u32 {
    let mut i = 0;
    while i < list.len() {
        if list[i] as u32 > at_least {
            at_least = list[i] as u32;
        }
        i += 1;
    }
    at_least
}

/// The calls the default profile allows by number.
const DEFAULT_ALLOWED: &[libc::c_long] = {
    use libc::*;
    &[
        SYS_read,
        SYS_write,
        SYS_open,
        SYS_openat,
        SYS_openat2,
        SYS_close,
        SYS_close_range,
        SYS_stat,
        SYS_fstat,
        SYS_lstat,
        SYS_newfstatat,
        SYS_statx,
        SYS_poll,
        SYS_ppoll,
        SYS_lseek,
        SYS_mmap,
        SYS_mprotect,
        SYS_munmap,
        SYS_brk,
        SYS_rt_sigaction,
        SYS_rt_sigprocmask,
        SYS_rt_sigreturn,
        SYS_rt_sigpending,
        SYS_rt_sigtimedwait,
        SYS_rt_sigqueueinfo,
        SYS_rt_sigsuspend,
        SYS_sigaltstack,
        SYS_ioctl,
        SYS_pread64,
        SYS_pwrite64,
        SYS_readv,
        SYS_writev,
        SYS_preadv,
        SYS_pwritev,
        SYS_access,
        SYS_faccessat,
        SYS_faccessat2,
        SYS_pipe,
        SYS_pipe2,
        SYS_select,
        SYS_pselect6,
        SYS_sched_yield,
        SYS_mremap,
        SYS_msync,
        SYS_mincore,
        SYS_madvise,
        SYS_dup,
        SYS_dup2,
        SYS_dup3,
        SYS_pause,
        SYS_nanosleep,
        SYS_clock_nanosleep,
        SYS_getitimer,
        SYS_setitimer,
        SYS_alarm,
        SYS_getpid,
        SYS_sendfile,
        SYS_socket,
        SYS_connect,
        SYS_accept,
        SYS_accept4,
        SYS_sendto,
        SYS_recvfrom,
        SYS_sendmsg,
        SYS_recvmsg,
        SYS_sendmmsg,
        SYS_recvmmsg,
        SYS_shutdown,
        SYS_bind,
        SYS_listen,
        SYS_getsockname,
        SYS_getpeername,
        SYS_socketpair,
        SYS_setsockopt,
        SYS_getsockopt,
        SYS_fork,
        SYS_vfork,
        SYS_execve,
        SYS_execveat,
        SYS_exit,
        SYS_exit_group,
        SYS_wait4,
        SYS_waitid,
        SYS_kill,
        SYS_tgkill,
        SYS_tkill,
        SYS_uname,
        SYS_fcntl,
        SYS_flock,
        SYS_fsync,
        SYS_fdatasync,
        SYS_truncate,
        SYS_ftruncate,
        SYS_getdents64,
        SYS_getcwd,
        SYS_chdir,
        SYS_fchdir,
        SYS_rename,
        SYS_renameat,
        SYS_renameat2,
        SYS_mkdir,
        SYS_mkdirat,
        SYS_rmdir,
        SYS_unlink,
        SYS_unlinkat,
        SYS_link,
        SYS_linkat,
        SYS_symlink,
        SYS_symlinkat,
        SYS_readlink,
        SYS_readlinkat,
        SYS_chmod,
        SYS_fchmod,
        SYS_fchmodat,
        SYS_chown,
        SYS_fchown,
        SYS_fchownat,
        SYS_lchown,
        SYS_umask,
        SYS_gettimeofday,
        SYS_getrlimit,
        SYS_setrlimit,
        SYS_prlimit64,
        SYS_getrusage,
        SYS_sysinfo,
        SYS_times,
        SYS_getuid,
        SYS_getgid,
        SYS_geteuid,
        SYS_getegid,
        SYS_setuid,
        SYS_setgid,
        SYS_setreuid,
        SYS_setregid,
        SYS_setresuid,
        SYS_getresuid,
        SYS_setresgid,
        SYS_getresgid,
        SYS_setfsuid,
        SYS_setfsgid,
        SYS_getgroups,
        SYS_setgroups,
        SYS_setpgid,
        SYS_getppid,
        SYS_getpgrp,
        SYS_setsid,
        SYS_getpgid,
        SYS_getsid,
        SYS_capget,
        SYS_capset,
        SYS_statfs,
        SYS_fstatfs,
        SYS_getpriority,
        SYS_setpriority,
        SYS_sched_setparam,
        SYS_sched_getparam,
        SYS_sched_setscheduler,
        SYS_sched_getscheduler,
        SYS_sched_get_priority_max,
        SYS_sched_get_priority_min,
        SYS_sched_rr_get_interval,
        SYS_sched_setaffinity,
        SYS_sched_getaffinity,
        SYS_sched_setattr,
        SYS_sched_getattr,
        SYS_mlock,
        SYS_mlock2,
        SYS_munlock,
        SYS_mlockall,
        SYS_munlockall,
        SYS_prctl,
        SYS_arch_prctl,
        SYS_gettid,
        SYS_futex,
        SYS_futex_waitv,
        SYS_set_tid_address,
        SYS_set_robust_list,
        SYS_get_robust_list,
        SYS_clock_gettime,
        SYS_clock_getres,
        SYS_restart_syscall,
        SYS_epoll_create,
        SYS_epoll_create1,
        SYS_epoll_ctl,
        SYS_epoll_wait,
        SYS_epoll_pwait,
        SYS_epoll_pwait2,
        SYS_eventfd,
        SYS_eventfd2,
        SYS_timerfd_create,
        SYS_timerfd_settime,
        SYS_timerfd_gettime,
        SYS_timer_create,
        SYS_timer_settime,
        SYS_timer_gettime,
        SYS_timer_delete,
        SYS_timer_getoverrun,
        SYS_signalfd,
        SYS_signalfd4,
        SYS_inotify_init1,
        SYS_inotify_add_watch,
        SYS_inotify_rm_watch,
        SYS_getrandom,
        SYS_memfd_create,
        SYS_membarrier,
        SYS_rseq,
        SYS_copy_file_range,
        SYS_pidfd_open,
        SYS_pidfd_send_signal,
        SYS_pidfd_getfd,
        SYS_shmget,
        SYS_shmat,
        SYS_shmctl,
        SYS_shmdt,
        SYS_semget,
        SYS_semop,
        SYS_semtimedop,
        SYS_semctl,
        SYS_msgget,
        SYS_msgsnd,
        SYS_msgrcv,
        SYS_msgctl,
        SYS_mq_open,
        SYS_mq_unlink,
        SYS_mq_timedsend,
        SYS_mq_timedreceive,
        SYS_mq_notify,
        SYS_mq_getsetattr,
        SYS_splice,
        SYS_tee,
        SYS_vmsplice,
        SYS_sync,
        SYS_syncfs,
        SYS_sync_file_range,
        SYS_fadvise64,
        SYS_fallocate,
        SYS_utimensat,
        SYS_futimesat,
        SYS_utime,
        SYS_utimes,
        SYS_getxattr,
        SYS_lgetxattr,
        SYS_fgetxattr,
        SYS_listxattr,
        SYS_llistxattr,
        SYS_flistxattr,
        SYS_setxattr,
        SYS_fsetxattr,
        SYS_lsetxattr,
        SYS_removexattr,
        SYS_fremovexattr,
        SYS_lremovexattr,
        SYS_getcpu,
        SYS_ioprio_get,
        SYS_ioprio_set,
        SYS_personality,
        SYS_process_vm_readv,
        SYS_process_vm_writev,
        SYS_mbind,
        SYS_get_mempolicy,
        SYS_set_mempolicy,
        SYS_io_setup,
        SYS_io_destroy,
        SYS_io_submit,
        SYS_io_cancel,
        SYS_io_getevents,
    ]
};

/// Checks the kernel filters system calls and the filter fits; the filter to install.
fn check(f: &Filter) -> Result<Filter, Unavailable> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !status.lines().any(|l| l.starts_with("Seccomp:")) {
        return Err(Unavailable("this kernel has no seccomp (no Seccomp line in /proc/self/status)".into()));
    }
    if *f == Filter::Notify {
        let actions = std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail").unwrap_or_default();
        if !actions.split_whitespace().any(|a| a == "user_notif") {
            return Err(Unavailable(format!(
                "this kernel has no seccomp user notification (actions_avail: {})",
                actions.trim()
            )));
        }
        // Letting a call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE) came in Linux 5.5.
        let release = rustix::system::uname().release().to_string_lossy().into_owned();
        if kernel_before(&release, (5, 5)) {
            return Err(Unavailable(format!("kernel {release} cannot let a notified call go on (needs 5.5)")));
        }
    }
    if program(f).len() > 4096 {
        return Err(Unavailable(format!("the filter is longer than the kernel's 4096 instructions: {f}")));
    }
    Ok(*f)
}

/// Whether a kernel release ("6.1.0-18-amd64") is older than `major.minor`.
fn kernel_before(release: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = release.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => (a, b) < (major, minor),
        _ => false,
    }
}

/// Installs the filter in the worker and reads back that the kernel holds it.
fn enter(f: &Filter) -> Result<Entered, EnterError> {
    let answered = match f {
        Filter::Notify => Some(supervise(&program(f))?),
        Filter::AllowAll { .. } | Filter::Default => {
            oscost_platform::sys::install_seccomp_filter(&program(f))
                .map_err(EnterError::call("installing the seccomp filter"))?;
            None
        }
    };
    let status = std::fs::read_to_string("/proc/self/status").map_err(EnterError::call("/proc/self/status"))?;
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string()).unwrap_or_default()
    };
    let (mode, filters) = (field("Seccomp:"), field("Seccomp_filters:"));
    if mode != "2" {
        return Err(EnterError::NotInEffect(format!(
            "/proc/self/status says Seccomp: {mode:?} after the filter was installed"
        )));
    }
    let mut evidence = vec![format!(
        "seccomp mode {mode}, {filters} filter(s), {} instructions (/proc/self/status)",
        program(f).len()
    )];
    if let Some(n) = answered {
        let n = n.load(std::sync::atomic::Ordering::SeqCst);
        if n == 0 {
            return Err(EnterError::NotInEffect(
                "the supervisor answered no call after the filter was installed".into(),
            ));
        }
        evidence.push(format!("the supervisor has let {n} calls go on so far"));
    }
    Ok(Entered::Here { evidence })
}

/// Where the listener stands in its hand-over from the measuring thread to the
/// supervisor (see [`supervise`]).
const WAITING: u8 = 0;
/// The supervisor holds the listener in a descriptor table of its own: the measuring
/// thread closes its copy, and no process it forks inherits one.
const PRIVATE: u8 = 1;
/// The supervisor could not take a table of its own and serves the shared copy.
const SHARED: u8 = 2;
/// The filter could not be installed: the supervisor ends.
const ABANDONED: u8 = 3;

/// Starts the supervisor thread, then installs the filter with a listener and hands
/// the listener over; the count of calls the supervisor answered.
///
/// The hand-over is a spin on atomics, not a channel: once the filter is in place
/// every call of this thread (a futex wake included) waits for the supervisor, which
/// must not itself be waiting for this thread. Setting a word nobody waits on makes no
/// call.
///
/// The listener ends up in the supervisor's own descriptor table only: a process the
/// measured code forks carries the filter (by design) but no copy of the listener. So
/// when the worker dies, the listener dies with it, and a forked child still waiting
/// for an answer gets ENOSYS instead of waiting for ever on a copy it holds itself.
fn supervise(program: &[BpfInstruction]) -> Result<std::sync::Arc<std::sync::atomic::AtomicU64>, EnterError> {
    use std::os::fd::{AsFd, AsRawFd, IntoRawFd};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI32, AtomicU8, AtomicU64, Ordering};
    let (raw, state, answered) =
        (Arc::new(AtomicI32::new(-1)), Arc::new(AtomicU8::new(WAITING)), Arc::new(AtomicU64::new(0)));
    let (r, st, a) = (raw.clone(), state.clone(), answered.clone());
    std::thread::Builder::new()
        .name("oscost-seccomp".into())
        .spawn(move || {
            let fd = loop {
                match (r.load(Ordering::Acquire), st.load(Ordering::Acquire)) {
                    (_, ABANDONED) => return,
                    (fd, _) if fd >= 0 => break fd,
                    _ => std::hint::spin_loop(),
                }
            };
            let listener = match oscost_platform::sys::take_into_private_table(fd) {
                Ok(own) => {
                    st.store(PRIVATE, Ordering::Release);
                    own
                }
                // The shared descriptor, which the measuring thread gives up to us.
                Err(_) => match oscost_platform::sys::adopt_inherited_fd(fd) {
                    Ok(shared) => {
                        st.store(SHARED, Ordering::Release);
                        shared
                    }
                    Err(e) => {
                        eprintln!("oscost: the seccomp supervisor lost its listener ({e}); the worker ends");
                        std::process::abort();
                    }
                },
            };
            while let Ok(true) = oscost_platform::sys::continue_next_call(listener.as_fd()) {
                a.fetch_add(1, Ordering::SeqCst);
            }
            // Every call of the worker now waits for an answer that cannot come: end
            // it, rather than leave it hanging until its bound (this thread's own calls
            // are not filtered).
            eprintln!("oscost: the seccomp supervisor stopped; the worker ends");
            std::process::abort();
        })
        .map_err(EnterError::call("starting the supervisor"))?;
    let listener = match oscost_platform::sys::install_seccomp_listener(program) {
        Ok(listener) => listener,
        Err(e) => {
            state.store(ABANDONED, Ordering::Release);
            return Err(EnterError::call("installing the seccomp filter with a listener")(e));
        }
    };
    raw.store(listener.as_raw_fd(), Ordering::Release);
    let taken = loop {
        match state.load(Ordering::Acquire) {
            WAITING => std::hint::spin_loop(),
            s => break s,
        }
    };
    if taken == PRIVATE {
        // A call (close), answered by the supervisor, which holds its own copy now.
        drop(listener);
    } else {
        // The supervisor owns this very descriptor now.
        let _ = listener.into_raw_fd();
    }
    Ok(answered)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a program on one call, as the kernel would (the instructions used here).
    fn run(p: &[BpfInstruction], nr: u32, args: [u64; 6]) -> u32 {
        let word = |off: u32| -> u32 {
            match off {
                NR => nr,
                ARCH => AUDIT_ARCH_X86_64,
                o if o >= 16 => {
                    let a = args[((o - 16) / 8) as usize];
                    if (o - 16) % 8 == 0 { a as u32 } else { (a >> 32) as u32 }
                }
                _ => 0,
            }
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = p[pc];
            pc += 1;
            match i.code {
                LD_W_ABS => acc = word(i.k),
                RET_K => return i.k,
                JEQ_K | JGE_K | JGT_K | JSET_K => {
                    let hit = match i.code {
                        JEQ_K => acc == i.k,
                        JGE_K => acc >= i.k,
                        JGT_K => acc > i.k,
                        _ => acc & i.k != 0,
                    };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
                c => panic!("unexpected instruction {c:#x}"),
            }
        }
    }

    #[test]
    fn allow_all_allows_every_call_after_n_rules() {
        for rules in [1u16, 8, 64, MAX_RULES] {
            let p = program(&Filter::AllowAll { rules });
            assert_eq!(p.len(), 3 + 3 * usize::from(rules) + 1);
            assert!(p.len() <= 4096);
            for nr in [0u32, 39, 110, 450] {
                assert_eq!(run(&p, nr, [3, 0x7ffd_1234_5678, 4096, 0, u64::MAX, 1]), RET_ALLOW);
            }
            // Every rule is looked at: an argument with the rule's value is refused.
            let last = u64::from(NEVER | (u32::from(rules) - 1)) << 32;
            let mut args = [0u64; 6];
            args[usize::from(rules - 1) % 6] = last;
            assert_eq!(run(&p, 39, args), RET_ERRNO | libc::EPERM as u32);
        }
    }

    #[test]
    fn notify_sends_every_call_to_the_supervisor() {
        let p = program(&Filter::Notify);
        assert_eq!(p.len(), 4);
        for nr in [0u32, 39, 110, 450] {
            assert_eq!(run(&p, nr, [0; 6]), RET_USER_NOTIF);
        }
    }

    #[test]
    fn the_default_profile_allows_ordinary_calls_and_refuses_the_rest() {
        let p = program(&Filter::Default);
        assert!(p.len() <= 4096, "{}", p.len());
        let allow = |nr: libc::c_long, flags: u64| run(&p, nr as u32, [flags, 0, 0, 0, 0, 0]);
        for nr in [libc::SYS_getppid, libc::SYS_read, libc::SYS_write, libc::SYS_futex, libc::SYS_execve] {
            assert_eq!(allow(nr, 0), RET_ALLOW, "call {nr}");
        }
        assert_eq!(allow(libc::SYS_clone, libc::SIGCHLD as u64), RET_ALLOW);
        assert_eq!(allow(libc::SYS_clone, libc::CLONE_NEWUSER as u64), RET_ERRNO | libc::EPERM as u32);
        assert_eq!(allow(libc::SYS_clone3, 0), RET_ERRNO | libc::ENOSYS as u32);
        for nr in [libc::SYS_unshare, libc::SYS_mount, libc::SYS_perf_event_open, libc::SYS_bpf, libc::SYS_reboot] {
            assert_eq!(allow(nr, 0), RET_ERRNO | libc::EPERM as u32, "call {nr}");
        }
        assert_eq!(run(&p, X32_BIT | 39, [0; 6]), RET_ERRNO | libc::EPERM as u32);
        // A number no kernel has yet: ENOSYS, as for a call this kernel lacks.
        assert_eq!(allow(1023, 0), RET_ERRNO | libc::ENOSYS as u32);
        assert_eq!(LAST_KNOWN, libc::SYS_futex_waitv as u32, "the newest call the profile names");
        // A call just past the profile (fchmodat2) answers ENOSYS, so the C library falls back.
        assert_eq!(allow(LAST_KNOWN as libc::c_long + 3, 0), RET_ERRNO | libc::ENOSYS as u32);
        assert!(kernel_before("5.4.0-150-generic", (5, 5)) && !kernel_before("6.18.44-fc", (5, 5)));
    }
}
