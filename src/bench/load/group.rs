//! Whether a group of N tasks fits this user's process, file and memory limits; the
//! lifecycle of the group itself is [`crate::tasks`].

use crate::sys;
use crate::tasks::Mode;

/// Refuses a group that the process or file limits could not hold.
pub fn check_limits(mode: Mode, n: usize, fds_per_task: usize) -> Result<(), String> {
    if mode == Mode::Process
        && let Some(limit) = sys::nproc_limit()
        && !sys::is_root()
    {
        let in_use = crate::procfs::count_user_processes();
        if in_use + n + 16 > limit as usize {
            return Err(format!(
                "{n} processes would exceed the process limit (RLIMIT_NPROC {limit}, {in_use} already in use by this user)"
            ));
        }
    }
    let nofile = sys::nofile_limit();
    let need = n * fds_per_task + 64;
    if need as u64 > nofile {
        return Err(format!("{n} tasks need about {need} file descriptors; the limit (RLIMIT_NOFILE) is {nofile}"));
    }
    let mem_needed = (n as u64) * if mode == Mode::Thread { 128 << 10 } else { 1 << 20 };
    if mem_needed > sys::available_memory_bytes() / 2 {
        return Err(format!("{n} tasks need about {} MiB; too close to the memory available", mem_needed >> 20));
    }
    Ok(())
}
