//! Scheduling and the process's limits and identity: CPU affinity, nice values,
//! scheduling policies, resource limits, ids, memory facts, and the allocator's
//! release of free memory before fork measurements.

use std::ffi::CStr;
use std::io;

use rustix::process::{Resource, Rlimit};
use rustix::thread::CpuSet;

use super::check;

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    let set = rustix::thread::sched_getaffinity(None)?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

/// CPU numbers in the kernel's list format (`0-3,6`), for people to read.
pub fn cpu_list_text(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i { format!("{}-{}", cpus[i], cpus[j]) } else { cpus[i].to_string() });
        i = j + 1;
    }
    parts.join(",")
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        if c >= CpuSet::MAX_CPU {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        set.set(c);
    }
    Ok(rustix::thread::sched_setaffinity(None, &set)?)
}

/// Sets the nice value of the calling thread (Linux applies PRIO_PROCESS with who=0 to
/// the calling thread only).
pub fn set_nice(nice: i32) -> io::Result<()> {
    Ok(rustix::process::setpriority_process(None, nice)?)
}

/// The calling thread's nice value (inherited from whatever started the process).
pub fn nice() -> io::Result<i32> {
    Ok(rustix::process::getpriority_process(None)?)
}

/// Sets thread `tid`'s (0: the calling thread's) scheduling policy and static priority.
pub fn set_policy_of(tid: libc::pid_t, policy: libc::c_int, priority: i32) -> io::Result<()> {
    let p = libc::sched_param { sched_priority: priority };
    // SAFETY: `p` is a valid sched_param that outlives the call.
    check(unsafe { libc::sched_setscheduler(tid, policy, &p) })?;
    Ok(())
}

/// Sets the calling thread's scheduling policy and static priority.
pub fn set_policy(policy: libc::c_int, priority: i32) -> io::Result<()> {
    set_policy_of(0, policy, priority)
}

/// The calling thread's scheduling policy (SCHED_OTHER, SCHED_FIFO, …).
pub fn current_policy() -> io::Result<libc::c_int> {
    // SAFETY: takes an integer (0: the calling thread), no pointers.
    check(unsafe { libc::sched_getscheduler(0) })
}

/// The highest static priority of a policy.
pub fn max_priority(policy: libc::c_int) -> i32 {
    // SAFETY: takes an integer, no pointers.
    unsafe { libc::sched_get_priority_max(policy) }
}

/// The soft RLIMIT_RTTIME (microseconds of CPU a real-time thread may use without
/// blocking before SIGXCPU); None if unlimited.
pub fn rttime_soft_limit() -> Option<u64> {
    rustix::process::getrlimit(Resource::Rttime).current
}

/// Sets the soft RLIMIT_RTTIME (None: unlimited), kept within the hard limit, which
/// is never touched: lowering it could not be undone without privilege, and every
/// later real-time benchmark of the run would inherit the lower bound.
pub fn set_rttime_soft_limit(soft_us: Option<u64>) -> io::Result<()> {
    let now = rustix::process::getrlimit(Resource::Rttime);
    let current = match (soft_us, now.maximum) {
        (Some(v), Some(m)) => Some(v.min(m)),
        (None, m) => m,
        (v, None) => v,
    };
    Ok(rustix::process::setrlimit(Resource::Rttime, Rlimit { current, maximum: now.maximum })?)
}

/// The soft RLIMIT_RTPRIO: the highest real-time priority an unprivileged thread may
/// take; None if unlimited.
pub fn rtprio_soft_limit() -> Option<u64> {
    rustix::process::getrlimit(Resource::Rtprio).current
}

/// The soft limit on this user's processes (RLIMIT_NPROC); None if unlimited.
pub fn nproc_limit() -> Option<u64> {
    rustix::process::getrlimit(Resource::Nproc).current
}

/// Sets the soft RLIMIT_NPROC (tests use it to induce fork failures).
pub fn set_nproc_limit(soft: u64) -> io::Result<()> {
    let lim = rustix::process::getrlimit(Resource::Nproc);
    let current = Some(lim.maximum.map_or(soft, |m| soft.min(m)));
    Ok(rustix::process::setrlimit(Resource::Nproc, Rlimit { current, ..lim })?)
}

/// The soft limit on open files (RLIMIT_NOFILE); `u64::MAX` if unlimited.
pub fn nofile_limit() -> u64 {
    rustix::process::getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// The soft address-space limit (`ulimit -v`, RLIMIT_AS) in bytes, if there is one.
pub fn address_space_limit() -> Option<u64> {
    rustix::process::getrlimit(Resource::As).current
}

/// Raises the soft open-file limit to the hard limit (large run-queue sweeps hold
/// thousands of pipe ends). Failure leaves the limit as it was.
pub fn raise_nofile_limit() {
    let lim = rustix::process::getrlimit(Resource::Nofile);
    let target = lim.maximum.unwrap_or(u64::MAX).min(1 << 20);
    if lim.current.is_some_and(|c| c < target) {
        let _ = rustix::process::setrlimit(Resource::Nofile, Rlimit { current: Some(target), ..lim });
    }
}

/// The real user id.
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Whether the effective user is root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The kernel's thread id of the caller.
pub fn gettid() -> libc::pid_t {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// The process id of the caller.
pub fn getpid() -> libc::pid_t {
    rustix::process::getpid().as_raw_nonzero().get()
}

/// The running C library's version string (glibc's gnu_get_libc_version).
#[cfg(target_env = "gnu")]
pub fn libc_version() -> String {
    // SAFETY: takes no arguments and returns a pointer to a static NUL-terminated string.
    let p = unsafe { libc::gnu_get_libc_version() };
    // SAFETY: glibc guarantees a valid static C string that lives as long as the process.
    format!("glibc {}", unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

#[cfg(not(target_env = "gnu"))]
pub fn libc_version() -> String {
    "unknown (not glibc)".into()
}

/// uname(2) fields: (sysname, nodename, release, version, machine).
pub fn uname() -> (String, String, String, String, String) {
    let u = rustix::system::uname();
    let f = |s: &CStr| s.to_string_lossy().into_owned();
    (f(u.sysname()), f(u.nodename()), f(u.release()), f(u.version()), f(u.machine()))
}

/// The system page size.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// Physical memory free for new allocations now (sysinfo's free RAM).
pub fn available_memory_bytes() -> u64 {
    let s = rustix::system::sysinfo();
    (s.freeram as u64).saturating_mul(u64::from(s.mem_unit.max(1)))
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
    // SAFETY: the range is page-aligned and inside `buf`; this advice changes no contents.
    check(unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) })?;
    Ok(())
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
