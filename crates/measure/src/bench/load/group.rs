//! Whether a group of N tasks fits this user's process, file and memory limits; the
//! lifecycle of the group itself is [`crate::tasks`].

use crate::tasks::Mode;
use oscost_platform::sys;

/// Why a group of tasks would not fit this user's limits; each names the group's size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("{n} {what} would exceed the task limit (RLIMIT_NPROC {limit}, {in_use} tasks already run by this user)")]
    Tasks { n: usize, what: &'static str, limit: u64, in_use: usize },
    #[error("{n} {what} need about {need} file descriptors; the limit (RLIMIT_NOFILE) is {nofile}")]
    Files { n: usize, what: &'static str, need: u64, nofile: u64 },
    #[error("{n} {what} need about {mib} MiB; too close to the memory available")]
    Memory { n: usize, what: &'static str, mib: u64 },
}

/// Refuses a group that the task, file or memory limits could not hold. Threads
/// count against RLIMIT_NPROC as processes do (the kernel counts tasks); root is not
/// bound by it. The arithmetic saturates, so an absurd size is refused, not wrapped.
pub fn check_limits(mode: Mode, n: usize, fds_per_task: usize) -> Result<(), LimitError> {
    let what = if mode == Mode::Thread { "threads" } else { "processes" };
    if let Some(limit) = sys::nproc_limit()
        && !sys::is_root()
    {
        let in_use = oscost_platform::procfs::count_user_tasks();
        if in_use.saturating_add(n).saturating_add(16) as u64 > limit {
            return Err(LimitError::Tasks { n, what, limit, in_use });
        }
    }
    let nofile = sys::nofile_limit();
    let need = n.saturating_mul(fds_per_task).saturating_add(64) as u64;
    if need > nofile {
        return Err(LimitError::Files { n, what, need, nofile });
    }
    let mem_needed = (n as u64).saturating_mul(if mode == Mode::Thread { 128 << 10 } else { 1 << 20 });
    if mem_needed > sys::available_memory_bytes() / 2 {
        return Err(LimitError::Memory { n, what, mib: mem_needed >> 20 });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_sizes_are_refused_not_wrapped() {
        for n in [usize::MAX, 1 << 63, 50_000_000] {
            let e = check_limits(Mode::Thread, n, 4).unwrap_err().to_string();
            assert!(e.contains(&n.to_string()), "{e}");
            assert!(check_limits(Mode::Process, n, 2).is_err());
        }
        assert!(check_limits(Mode::Thread, 2, 0).is_ok());
    }
}
