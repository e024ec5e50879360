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

/// This process's resident memory, KiB, by kind (from /proc/self/status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resident {
    /// VmRSS: everything resident.
    pub total: u64,
    /// RssAnon: private anonymous memory, which fork must copy (as page tables and
    /// copy-on-write pages).
    pub anon: u64,
    /// RssFile: file-backed memory (the binary, libraries), shared, not copied.
    pub file: u64,
}

/// This process's resident memory, if readable.
pub fn resident() -> Option<Resident> {
    let s = read_status("/proc/self/status")?;
    let kib = |name: &str| status_field(&s, name)?.parse().ok();
    Some(Resident { total: kib("VmRSS:")?, anon: kib("RssAnon:")?, file: kib("RssFile:")? })
}

/// The first value of a `Name:` line of a /proc status file.
fn status_field(status: &str, name: &str) -> Option<String> {
    status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next().map(str::to_string))
}

/// What a process inherits that changes what a system call costs: its seccomp mode and
/// filters (a container's profile, a unit's `SystemCallFilter=`: every call runs them
/// first), no_new_privs, and the speculation controls it runs with (what
/// `PR_GET_SPECULATION_CTRL` reports, as /proc/PID/status writes it). Each field is
/// None where the kernel does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessControls {
    /// 0 none, 1 strict, 2 filter.
    pub seccomp_mode: Option<u32>,
    pub seccomp_filters: Option<u32>,
    pub no_new_privs: Option<bool>,
    /// Speculative store bypass (`Speculation_Store_Bypass:`).
    pub store_bypass: Option<String>,
    /// Indirect branch speculation (`SpeculationIndirectBranch:`).
    pub indirect_branch: Option<String>,
}

impl ProcessControls {
    /// The controls a /proc status file's text states.
    pub fn parse(status: &str) -> Self {
        let whole = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string());
        let number = |name: &str| status_field(status, name).and_then(|v| v.parse::<u32>().ok());
        ProcessControls {
            seccomp_mode: number("Seccomp:"),
            seccomp_filters: number("Seccomp_filters:"),
            no_new_privs: number("NoNewPrivs:").map(|n| n != 0),
            store_bypass: whole("Speculation_Store_Bypass:").filter(|v| !v.is_empty()),
            indirect_branch: whole("SpeculationIndirectBranch:").filter(|v| !v.is_empty()),
        }
    }

    /// This thread's controls (/proc/thread-self/status: seccomp and no_new_privs are
    /// a thread's own, and what the threads it starts inherit).
    pub fn read() -> Self {
        read_status("/proc/thread-self/status").map(|s| Self::parse(&s)).unwrap_or_default()
    }

    /// The controls in one line: `seccomp filter (2 filters), no_new_privs, store
    /// bypass: thread vulnerable, indirect branch: conditional enabled`.
    pub fn text(&self) -> String {
        let seccomp = match (self.seccomp_mode, self.seccomp_filters) {
            (Some(0), _) => "no seccomp".to_string(),
            (Some(1), _) => "seccomp strict".to_string(),
            (Some(2), Some(n)) => format!("seccomp filter ({n} {})", if n == 1 { "filter" } else { "filters" }),
            (Some(m), _) => format!("seccomp mode {m}"),
            (None, _) => "seccomp unknown".to_string(),
        };
        let mut parts = vec![seccomp];
        match self.no_new_privs {
            Some(true) => parts.push("no_new_privs".into()),
            Some(false) => {}
            None => parts.push("no_new_privs unknown".into()),
        }
        let said = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
        parts.push(format!("store bypass: {}", said(&self.store_bypass)));
        parts.push(format!("indirect branch: {}", said(&self.indirect_branch)));
        parts.join(", ")
    }

    /// The filters inherited, when the process runs under any.
    pub fn filters(&self) -> Option<u32> {
        (self.seccomp_mode == Some(2)).then(|| self.seccomp_filters.unwrap_or(1))
    }
}

/// A /proc status file, read up to 64 KiB (they are a few KiB).
fn read_status(path: &str) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path).ok()?.take(64 * 1024).read_to_string(&mut text).ok()?;
    Some(text)
}

/// How many tasks (threads, which RLIMIT_NPROC counts) this user runs now.
pub fn count_user_tasks() -> usize {
    let own = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| status_field(&s, "Uid:"));
    own.and_then(|uid| uid.parse().ok()).map_or(0, count_tasks_of)
}

/// How many tasks (threads included) processes of real user `uid` hold now.
pub fn count_tasks_of(uid: u32) -> usize {
    let uid = uid.to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter(|s| status_field(s, "Uid:").as_deref() == Some(uid.as_str()))
        .map(|s| status_field(&s, "Threads:").and_then(|t| t.parse::<usize>().ok()).unwrap_or(1))
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

/// Where this process's real-time budget is zero, if it is: the kernel-wide
/// `sched_rt_runtime_us`, or `cpu.rt_runtime_us` of its cgroup (v1 cpu controller, or
/// a v2 hierarchy that exposes it) or of any cgroup above it.
pub fn zero_rt_budget() -> Option<String> {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|t| t.trim().to_string());
    if read("/proc/sys/kernel/sched_rt_runtime_us").as_deref() == Some("0") {
        return Some("kernel.sched_rt_runtime_us = 0".into());
    }
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let mounts: &[&str] = if controllers.split(',').any(|c| c == "cpu") {
            &["/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"]
        } else if controllers.is_empty() {
            &["/sys/fs/cgroup"]
        } else {
            continue;
        };
        for mount in mounts {
            let mut dir = std::path::PathBuf::from(format!("{mount}{path}"));
            loop {
                let file = dir.join("cpu.rt_runtime_us");
                if read(&file.to_string_lossy()).as_deref() == Some("0") {
                    return Some(format!("{} = 0", file.display()));
                }
                if dir.as_os_str().len() <= mount.len() || !dir.pop() {
                    break;
                }
            }
        }
    }
    None
}

/// This process's cgroup directory for `controller` (v1: the hierarchy that has it;
/// v2: the unified one), where it is mounted at the usual place.
fn cgroup_dir(controller: &str) -> Option<std::path::PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut unified = None;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == controller) {
            let dir = std::path::PathBuf::from(format!("/sys/fs/cgroup/{controllers}{path}"));
            if dir.is_dir() {
                return Some(dir);
            }
        } else if controllers.is_empty() {
            unified = Some(std::path::PathBuf::from(format!("/sys/fs/cgroup{path}")));
        }
    }
    unified.filter(|d| d.is_dir())
}

/// The CPU limits this process's cgroups set: `cpu.max=QUOTA PERIOD` (in cgroup v2's
/// words whatever the version; `max` when there is no quota), `cpu.weight=N` (v1:
/// `cpu.shares=N`) and `cpuset=LIST` (the CPUs it may use); the fields the kernel does
/// not expose are left out.
pub fn cgroup_cpu_limits() -> String {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok().map(|t| t.trim().to_string());
    let mut out = Vec::new();
    if let Some(dir) = cgroup_dir("cpu") {
        let v2 = read(dir.join("cpu.max"));
        let v1 = || {
            let quota = read(dir.join("cpu.cfs_quota_us"))?;
            let period = read(dir.join("cpu.cfs_period_us"))?;
            Some(format!("{} {period}", if quota == "-1" { "max" } else { &quota }))
        };
        if let Some(max) = v2.or_else(v1) {
            out.push(format!("cpu.max={max}"));
        }
        // The share against sibling groups: v2's weight (default 100), else v1's
        // shares (default 1024), each in its own words.
        if let Some(weight) = read(dir.join("cpu.weight")) {
            out.push(format!("cpu.weight={weight}"));
        } else if let Some(shares) = read(dir.join("cpu.shares")) {
            out.push(format!("cpu.shares={shares}"));
        }
    }
    if let Some(dir) = cgroup_dir("cpuset")
        && let Some(cpus) = read(dir.join("cpuset.cpus.effective")).or_else(|| read(dir.join("cpuset.cpus")))
    {
        out.push(format!("cpuset={cpus}"));
    }
    if out.is_empty() { "none exposed".into() } else { out.join(" ") }
}

/// Time idle and idle entries since boot, summed over some CPUs' cpuidle states.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleTotals {
    /// Time in any idle state, µs (the states' `time`).
    pub time_us: u64,
    /// Entries into any idle state (the states' `usage`).
    pub entries: u64,
}

/// The idle time and entries of `cpus` so far, from sysfs's cpuidle states (exact to
/// the µs, where /proc/stat's idle counts whole ticks); None where a CPU has no
/// cpuidle states to read.
pub fn cpuidle_totals(cpus: &[usize]) -> Option<IdleTotals> {
    cpuidle_totals_in(std::path::Path::new("/sys/devices/system/cpu"), cpus)
}

/// [`cpuidle_totals`] under `root` (a tree laid out as /sys/devices/system/cpu).
fn cpuidle_totals_in(root: &std::path::Path, cpus: &[usize]) -> Option<IdleTotals> {
    let number = |path: std::path::PathBuf| -> Option<u64> { read_status(path.to_str()?)?.trim().parse().ok() };
    let mut totals = IdleTotals::default();
    for cpu in cpus {
        let dir = root.join(format!("cpu{cpu}/cpuidle"));
        let mut states = 0;
        while let (Some(time), Some(usage)) =
            (number(dir.join(format!("state{states}/time"))), number(dir.join(format!("state{states}/usage"))))
        {
            totals.time_us += time;
            totals.entries += usage;
            states += 1;
        }
        if states == 0 {
            return None;
        }
    }
    Some(totals)
}

/// Time spent since boot, in clock ticks, by all CPUs together or by one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// Neither idle nor waiting for I/O.
    pub busy: u64,
    /// Taken by the hypervisor for other guests.
    pub steal: u64,
    pub total: u64,
}

/// /proc/stat's `cpu` lines: the sum over CPUs (None) and each CPU (Some(n)).
pub fn cpu_ticks() -> Vec<(Option<usize>, CpuTicks)> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .filter_map(|l| {
            let (name, fields) = l.split_once(' ')?;
            let cpu = match name.strip_prefix("cpu")? {
                "" => None,
                n => Some(n.parse::<usize>().ok()?),
            };
            // user nice system idle iowait irq softirq steal guest guest_nice: guest
            // time is already inside user and nice.
            let t: Vec<u64> = fields.split_whitespace().filter_map(|v| v.parse().ok()).collect();
            let total: u64 = t.iter().take(8).sum();
            let idle = t.get(3).copied().unwrap_or(0) + t.get(4).copied().unwrap_or(0);
            Some((cpu, CpuTicks { busy: total - idle, steal: t.get(7).copied().unwrap_or(0), total }))
        })
        .collect()
}

/// The share of CPU time the hypervisor stole since boot, or None where the kernel
/// does not count it.
pub fn steal_share() -> Option<f64> {
    let all = cpu_ticks().into_iter().find(|(cpu, _)| cpu.is_none())?.1;
    (all.total > 0).then(|| all.steal as f64 / all.total as f64)
}

/// The address space this process maps now (VmSize), in bytes: what a worker, a copy
/// of this binary, starts from before it allocates anything.
pub fn mapped_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// Frequency boost: the cpufreq `boost` switch, else intel_pstate's `no_turbo`.
pub fn boost() -> Option<String> {
    let read_trim = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
    read_trim("/sys/devices/system/cpu/cpufreq/boost")
        .map(|b| on_off(b == "1"))
        .or_else(|| read_trim("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|t| on_off(t == "0")))
}

/// The level-1 data cache of CPU 0, in bytes, from sysfs's cache description (the
/// index whose level is 1 and type Data); None where sysfs does not describe it.
pub fn l1d_bytes() -> Option<usize> {
    use std::io::Read;
    let read = |p: std::path::PathBuf| {
        let mut text = String::new();
        std::fs::File::open(p).ok()?.take(64).read_to_string(&mut text).ok()?;
        Some(text.trim().to_string())
    };
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    (0..8).find_map(|i| {
        let dir = base.join(format!("index{i}"));
        (read(dir.join("level"))? == "1" && read(dir.join("type"))? == "Data")
            .then(|| parse_cache_size(&read(dir.join("size"))?))?
    })
}

/// A sysfs cache size ("32K", "1024K", "2M", "48") in bytes.
pub fn parse_cache_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: usize = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        _ => return None,
    };
    n.checked_mul(scale).filter(|b| *b > 0)
}

/// Parses a kernel CPU list ("0-3,6").
pub fn parse_cpu_list(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.trim().parse::<usize>().ok()),
        }
    }
    out
}

/// The process that owns a run: its pid, its start time since boot (clock ticks) and
/// the boot, which together name it even after its pid is reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: i32,
    pub start_ticks: u64,
    pub boot_id: String,
}

impl Owner {
    /// This process, if /proc says who it is.
    pub fn current() -> Option<Self> {
        let pid = std::process::id() as i32;
        Some(Self { pid, start_ticks: process_start_ticks(pid)?, boot_id: boot_id()? })
    }

    /// Whether this process still runs (on this machine, since this boot).
    pub fn alive(&self) -> bool {
        boot_id().as_deref() == Some(self.boot_id.as_str()) && process_start_ticks(self.pid) == Some(self.start_ticks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_read_as_sysfs_writes_them() {
        assert_eq!(parse_cache_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("48"), Some(48));
        for bad in ["", "K", "0K", "12Q", "-3K"] {
            assert_eq!(parse_cache_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn idle_totals_sum_every_state_of_every_cpu_asked() {
        // An unguessable folder of mode 0700 (tempfile), removed when dropped.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let state = |cpu: usize, k: usize, time: &str, usage: &str| {
            let d = root.join(format!("cpu{cpu}/cpuidle/state{k}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("time"), time).unwrap();
            std::fs::write(d.join("usage"), usage).unwrap();
        };
        state(0, 0, "150\n", "7\n");
        state(0, 1, "2000000\n", "93\n");
        state(1, 0, "50\n", "3\n");
        std::fs::create_dir_all(root.join("cpu2")).unwrap();
        let totals = cpuidle_totals_in(root, &[0, 1]);
        let no_states = cpuidle_totals_in(root, &[0, 2]);
        let one = cpuidle_totals_in(root, &[1]);
        assert_eq!(totals, Some(IdleTotals { time_us: 2_000_200, entries: 103 }));
        assert_eq!(no_states, None, "a CPU with no cpuidle states: no totals");
        assert_eq!(one, Some(IdleTotals { time_us: 50, entries: 3 }));
        // This machine's, where it has cpuidle: a second read never goes back.
        if let Some(before) = cpuidle_totals(&[0]) {
            let after = cpuidle_totals(&[0]).unwrap();
            assert!(after.time_us >= before.time_us && after.entries >= before.entries);
        }
    }

    #[test]
    fn this_users_tasks_include_this_process_s_threads() {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(3));
        let held: Vec<_> = (0..2)
            .map(|_| {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    b.wait();
                    b.wait();
                })
            })
            .collect();
        barrier.wait();
        // The test harness's threads count too: at least this one and the two held.
        assert!(count_user_tasks() >= 3);
        assert_eq!(count_tasks_of(u32::MAX - 1), 0, "a user nobody is");
        barrier.wait();
        held.into_iter().for_each(|h| h.join().unwrap());
    }

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

#[cfg(test)]
mod controls {
    use super::*;

    /// A container's process (Docker's default profile: one filter, no_new_privs set
    /// by the runtime) and a plain one, from their status files.
    #[test]
    fn process_controls_are_read_from_a_status_file() {
        let contained = "Name:\tsh\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\nSpeculation_Store_Bypass:\tthread force mitigated\nSpeculationIndirectBranch:\tconditional force disabled\nCpus_allowed:\t3\n";
        let c = ProcessControls::parse(contained);
        assert_eq!((c.seccomp_mode, c.seccomp_filters, c.no_new_privs), (Some(2), Some(1), Some(true)));
        assert_eq!(c.filters(), Some(1));
        assert_eq!(
            c.text(),
            "seccomp filter (1 filter), no_new_privs, store bypass: thread force mitigated, indirect branch: conditional force disabled"
        );
        let plain = ProcessControls::parse("Seccomp:\t0\nSeccomp_filters:\t0\nNoNewPrivs:\t0\n");
        assert_eq!(plain.filters(), None);
        assert_eq!(plain.text(), "no seccomp, store bypass: unknown, indirect branch: unknown");
        assert_eq!(ProcessControls::parse(""), ProcessControls::default());
    }
}
