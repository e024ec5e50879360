//! Readers of the kernel's text files under /proc: safe code, kept out of `sys` (which
//! holds only the wrappers that need `unsafe`). Each returns None (or empty) when the
//! file is missing or unreadable rather than failing: callers treat these as facts
//! that may be absent.

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

/// This process's resident memory in KiB (VmRSS), if readable.
pub fn resident_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| l.strip_prefix("VmRSS:").and_then(|v| v.split_whitespace().next()?.parse().ok()))
}

/// How many tasks (threads, which RLIMIT_NPROC counts) this user runs now.
pub fn count_user_tasks() -> usize {
    let field = |status: &str, name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next().map(str::to_string))
    };
    let Some(uid) = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| field(&s, "Uid:")) else {
        return 0;
    };
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter(|s| field(s, "Uid:").as_deref() == Some(uid.as_str()))
        .map(|s| field(&s, "Threads:").and_then(|t| t.parse::<usize>().ok()).unwrap_or(1))
        .sum()
}

/// When process `pid` started, in clock ticks since boot (field 22 of its stat), which
/// together with the boot id names a process even after its pid is reused.
pub fn process_start_ticks(pid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This boot's random id (/proc/sys/kernel/random/boot_id).
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_named_by_its_start_and_the_boot() {
        let me = std::process::id() as i32;
        let start = process_start_ticks(me).expect("our own stat");
        assert_eq!(process_start_ticks(me), Some(start), "stable");
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let theirs = process_start_ticks(child.id() as i32).expect("the child's stat");
        assert!(theirs >= start);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(process_start_ticks(child.id() as i32), None, "a reaped process has no stat");
        assert_eq!(boot_id().map(|b| b.len()), Some(36));
    }
}
