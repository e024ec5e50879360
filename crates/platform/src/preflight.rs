//! The preflight: before anything is measured, the machine's states that are known to
//! bend figures, each named with its reason and what to do. They are recorded in the
//! run (the fingerprint's `preflight`), printed, shown by `show` and the report, and
//! `run --strict` refuses to measure while any holds.
//!
//! The checks are pure functions of a [`Snapshot`] (what the kernel said, read once,
//! and each allowed CPU's busy share over a short window while oscost itself sleeps),
//! so each is tested on constructed states; `snapshot` is the only part that reads the
//! machine.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long the preflight watches the CPUs for other work.
pub const WINDOW: Duration = Duration::from_millis(150);
/// A CPU busier than this over the window (with oscost asleep) has other work.
pub const BUSY_SHARE: f64 = 0.25;
/// Steal above this share over the window: the hypervisor is running other guests
/// on our CPUs.
pub const STEAL_SHARE: f64 = 0.02;
/// The kernel's default timer slack for a task (ns).
pub const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;

/// A state of the machine that bends figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrapCode {
    Governor,
    Boost,
    SmtSiblings,
    BusyCpu,
    BusySibling,
    Steal,
    Clocksource,
    IsolcpusOneCpu,
    NarrowAffinity,
    CgroupLimit,
    PerfParanoid,
    ThpAlways,
    TimerSlack,
    InheritedNice,
    InheritedPolicy,
    CgroupWeight,
    InheritedSeccomp,
    HaltingIdle,
}

impl TrapCode {
    /// Whether the trap says other work kept the run's CPUs busy as it started: a
    /// change between runs measured so is as likely that work's as the system's.
    pub fn is_busy(self) -> bool {
        matches!(self, TrapCode::BusyCpu | TrapCode::BusySibling)
    }
}

/// One trap found: which, why it matters here, and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trap {
    pub code: TrapCode,
    pub reason: String,
    pub advice: String,
}

impl Trap {
    fn new(code: TrapCode, reason: String, advice: &str) -> Trap {
        Trap { code, reason, advice: advice.to_string() }
    }
}

/// What the preflight looks at, read once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub governor: Option<String>,
    pub boost: Option<String>,
    pub smt_active: Option<bool>,
    pub online: Vec<usize>,
    pub allowed: Vec<usize>,
    /// CPUs the kernel keeps out of load balancing (isolcpus=, the `isolated` file).
    pub isolated: Vec<usize>,
    /// Each online CPU's SMT siblings (itself excluded).
    pub siblings: Vec<(usize, Vec<usize>)>,
    /// Each online CPU's busy share over the window, and the steal share of all.
    pub busy: Vec<(usize, f64)>,
    pub steal: Option<f64>,
    pub clocksource: Option<String>,
    pub cgroup_limits: String,
    pub perf_paranoid: Option<i32>,
    pub root: bool,
    pub thp: Option<String>,
    pub timer_slack_ns: Option<u64>,
    /// The nice value oscost was started with (inherited from its parent).
    pub nice: Option<i32>,
    /// The scheduling policy oscost was started with.
    pub policy: Option<crate::placement::Policy>,
    /// Seccomp, no_new_privs and speculation controls oscost was started with.
    pub controls: crate::procfs::ProcessControls,
    /// The cpuidle driver (`current_driver`).
    pub cpuidle_driver: Option<String>,
    /// The haltpoll governor's guest halt-poll window (`guest_halt_poll_ns`), where
    /// that module is loaded.
    pub guest_halt_poll_ns: Option<u64>,
}

/// Every trap the snapshot shows, in a fixed order.
pub fn check(s: &Snapshot) -> Vec<Trap> {
    [cpu_frequency, smt, busy, steal, clock, idle, affinity, scheduling, cgroup, counters, memory_and_timers, inherited]
        .iter()
        .flat_map(|f| f(s))
        .collect()
}

fn cpu_frequency(s: &Snapshot) -> Vec<Trap> {
    let mut out = Vec::new();
    if let Some(g) = s.governor.as_deref().filter(|g| *g != "performance") {
        out.push(Trap::new(
            TrapCode::Governor,
            format!("the frequency governor is {g}: the clock rate follows the load, so a figure depends on what ran just before"),
            "set the performance governor (cpupower frequency-set -g performance)",
        ));
    }
    if s.boost.as_deref() == Some("on") {
        out.push(Trap::new(
            TrapCode::Boost,
            "frequency boost (turbo) is on: the clock rate depends on temperature and on how many cores are busy".into(),
            "turn boost off for repeatable figures (echo 0 > /sys/devices/system/cpu/cpufreq/boost, or intel_pstate/no_turbo = 1)",
        ));
    }
    out
}

fn smt(s: &Snapshot) -> Vec<Trap> {
    let mut out = Vec::new();
    if s.smt_active == Some(true) {
        out.push(Trap::new(
            TrapCode::SmtSiblings,
            "SMT is on: a CPU shares its core with a sibling, whose work slows it".into(),
            "pin to one thread per core (--cpu), or switch SMT off (echo off > /sys/devices/system/cpu/smt/control)",
        ));
    }
    let busy_siblings: Vec<usize> = s
        .siblings
        .iter()
        .filter(|(cpu, _)| s.allowed.contains(cpu))
        .flat_map(|(_, sib)| sib.iter().copied())
        .filter(|sib| !s.allowed.contains(sib) && busy_share(s, *sib) > BUSY_SHARE)
        .collect();
    if !busy_siblings.is_empty() {
        out.push(Trap::new(
            TrapCode::BusySibling,
            format!("the SMT sibling CPU {} of a CPU the run uses is busy", crate::sys::cpu_list_text(&busy_siblings)),
            "stop the work on the sibling, or allow the run only CPUs whose siblings are idle",
        ));
    }
    out
}

impl Snapshot {
    /// The allowed CPUs other work kept busy over the window (past [`BUSY_SHARE`]).
    pub fn busy_cpus(&self) -> Vec<usize> {
        self.allowed.iter().copied().filter(|&c| busy_share(self, c) > BUSY_SHARE).collect()
    }
}

fn busy_share(s: &Snapshot, cpu: usize) -> f64 {
    s.busy.iter().find(|(c, _)| *c == cpu).map_or(0.0, |(_, b)| *b)
}

fn busy(s: &Snapshot) -> Vec<Trap> {
    let busy: Vec<String> = s
        .allowed
        .iter()
        .filter_map(|&c| {
            let b = busy_share(s, c);
            (b > BUSY_SHARE).then(|| format!("{c} ({:.0}%)", b * 100.0))
        })
        .collect();
    if busy.is_empty() {
        return Vec::new();
    }
    vec![Trap::new(
        TrapCode::BusyCpu,
        format!("other work kept CPU {} busy while oscost waited to start", busy.join(", ")),
        "stop the other work (top, ps -eo pid,psr,pcpu,comm) or measure on CPUs that are idle",
    )]
}

fn steal(s: &Snapshot) -> Vec<Trap> {
    match s.steal {
        Some(st) if st > STEAL_SHARE => vec![Trap::new(
            TrapCode::Steal,
            format!("the hypervisor stole {:.1}% of the CPUs' time while oscost waited to start", st * 100.0),
            "measure on a dedicated host or instance; compare only runs with the same steal",
        )],
        _ => Vec::new(),
    }
}

fn clock(s: &Snapshot) -> Vec<Trap> {
    match s.clocksource.as_deref() {
        Some(c) if c != "tsc" => vec![Trap::new(
            TrapCode::Clocksource,
            format!("the clocksource is {c}, not tsc: every clock read may enter the kernel and costs more"),
            "use the tsc clocksource where the CPU's TSC is stable (clocksource=tsc tsc=reliable)",
        )],
        _ => Vec::new(),
    }
}

/// A guest whose idle vCPUs halt at once: a wake-up aimed at an idle CPU waits for
/// the host to run that vCPU again. The haltpoll driver with its window at 0 is the
/// one state read that says so; another driver in a guest may or may not halt (the
/// host's own halt polling is not visible from inside), so it raises nothing.
fn idle(s: &Snapshot) -> Vec<Trap> {
    if s.cpuidle_driver.as_deref() != Some("haltpoll") || s.guest_halt_poll_ns != Some(0) {
        return Vec::new();
    }
    vec![Trap::new(
        TrapCode::HaltingIdle,
        "idle vCPUs halt at once (haltpoll, guest halt-poll window 0 ns): waking an idle CPU waits for the host, so cross-CPU hand-offs and creations are mostly the host's".into(),
        "echo 200000 > /sys/module/haltpoll/parameters/guest_halt_poll_ns shows the guest's own hand-off; compare runs of one cpuidle only",
    )]
}

fn affinity(s: &Snapshot) -> Vec<Trap> {
    let mut out = Vec::new();
    let all_isolated = s.allowed.len() > 1 && s.allowed.iter().all(|c| s.isolated.contains(c));
    if all_isolated {
        out.push(Trap::new(
            TrapCode::IsolcpusOneCpu,
            format!(
                "every CPU the run may use ({}) is isolated (isolcpus): the scheduler does not balance across them, so every thread stays on the CPU it started on",
                crate::sys::cpu_list_text(&s.allowed)
            ),
            "pin each task yourself (--cpu), or allow at least one CPU that is not isolated",
        ));
    }
    if !s.online.is_empty() && s.allowed.len() < s.online.len() && !all_isolated {
        out.push(Trap::new(
            TrapCode::NarrowAffinity,
            format!(
                "the run may use CPU {} of the {} online: an affinity set outside oscost (taskset, a cpuset) narrows it",
                crate::sys::cpu_list_text(&s.allowed),
                s.online.len()
            ),
            "run without the outer affinity, or read cross-CPU figures knowing which CPUs they had",
        ));
    }
    out
}

/// A nice value or policy oscost inherited (`nice -n 19 oscost run`, `chrt -b`): every
/// worker inherits it too, so each figure is measured at that priority, as an
/// inherited affinity pins it.
fn scheduling(s: &Snapshot) -> Vec<Trap> {
    let mut out = Vec::new();
    if let Some(n) = s.nice.filter(|n| *n != 0) {
        out.push(Trap::new(
            TrapCode::InheritedNice,
            format!("oscost was started at nice {n}, not 0: every worker inherits it, so other work on the CPUs takes their time first (or last)"),
            "start oscost at nice 0, or measure a priority on purpose with --condition nice:N beside the baseline",
        ));
    }
    if let Some(p) = s.policy.filter(|p| *p != crate::placement::Policy::Other) {
        out.push(Trap::new(
            TrapCode::InheritedPolicy,
            format!(
                "oscost was started under the {} scheduling policy, not other: every worker inherits it",
                p.as_str()
            ),
            "start oscost under SCHED_OTHER, or measure a policy on purpose with --condition policy:NAME",
        ));
    }
    out
}

fn cgroup(s: &Snapshot) -> Vec<Trap> {
    let field = |name: &str| s.cgroup_limits.split_whitespace().find_map(|f| f.strip_prefix(name));
    let mut out = Vec::new();
    // `cpu.max=QUOTA PERIOD`, where a quota other than `max` is a limit.
    if field("cpu.max=").is_some_and(|q| q != "max") {
        out.push(Trap::new(
            TrapCode::CgroupLimit,
            format!(
                "the run's cgroup has a CPU quota ({}): a task that spends it waits for the next period",
                s.cgroup_limits
            ),
            "run outside the quota, or compare only runs with the same cgroup limits",
        ));
    }
    // A weight other than the default (v2 100, v1 1024 shares) changes the run's share
    // against its sibling groups whenever they have work.
    let weight = field("cpu.weight=").filter(|w| *w != "100").or_else(|| field("cpu.shares=").filter(|w| *w != "1024"));
    if let Some(w) = weight {
        out.push(Trap::new(
            TrapCode::CgroupWeight,
            format!("the run's cgroup has a CPU weight of {w}, not the default: against busy sibling groups it gets a share to match"),
            "run in a cgroup of the default weight, or compare only runs with the same cgroup limits",
        ));
    }
    out
}

fn counters(s: &Snapshot) -> Vec<Trap> {
    match s.perf_paranoid {
        Some(level) if level > 1 && !s.root => vec![Trap::new(
            TrapCode::PerfParanoid,
            format!("kernel.perf_event_paranoid is {level}: no trace pass and no perf counters for this user"),
            "run as root, give oscost CAP_PERFMON, or set kernel.perf_event_paranoid to 1 or less",
        )],
        _ => Vec::new(),
    }
}

fn memory_and_timers(s: &Snapshot) -> Vec<Trap> {
    let mut out = Vec::new();
    if s.thp.as_deref().is_some_and(|t| t.contains("[always]")) {
        out.push(Trap::new(
            TrapCode::ThpAlways,
            "transparent hugepages are `always`: khugepaged may collapse pages during a run, and memory figures depend on it".into(),
            "set madvise (echo madvise > /sys/kernel/mm/transparent_hugepage/enabled) to measure pages as programs get them by default",
        ));
    }
    if let Some(slack) = s.timer_slack_ns.filter(|n| *n != DEFAULT_TIMER_SLACK_NS) {
        out.push(Trap::new(
            TrapCode::TimerSlack,
            format!("this process's timer slack is {slack} ns, not the default 50000: sleeps and timeouts end later or earlier than usual"),
            "start oscost from a shell with the default slack",
        ));
    }
    out
}

/// A seccomp filter inherited from what started oscost (a container's profile, a
/// unit's `SystemCallFilter=`): every system call runs it before its own work.
fn inherited(s: &Snapshot) -> Vec<Trap> {
    let Some(n) = s.controls.filters() else { return Vec::new() };
    vec![Trap::new(
        TrapCode::InheritedSeccomp,
        format!(
            "this process runs under {n} inherited seccomp filter{} (a container's profile or a unit's SystemCallFilter=): every system call runs {} first, so the system call figures include {}",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it" } else { "them" }
        ),
        "measure outside the filter for the kernel's own cost, or keep it and compare only with runs under the same filter",
    )]
}

pub use crate::procfs::parse_cpu_list;

/// Reads the machine: the settings once, the CPUs' work over `window` (this thread
/// asleep meanwhile, so oscost's own work is not counted).
pub fn snapshot(window: Duration) -> Snapshot {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let before = crate::procfs::cpu_ticks();
    std::thread::sleep(window);
    let after = crate::procfs::cpu_ticks();
    let mut busy = Vec::new();
    let mut all = None;
    for (cpu, t1) in &after {
        let Some((_, t0)) = before.iter().find(|(c, _)| c == cpu) else { continue };
        let (db, ds, dt) =
            (t1.busy.saturating_sub(t0.busy), t1.steal.saturating_sub(t0.steal), t1.total.saturating_sub(t0.total));
        match cpu {
            Some(c) if dt > 0 => busy.push((*c, db as f64 / dt as f64)),
            None if dt > 0 => all = Some(ds as f64 / dt as f64),
            _ => {}
        }
    }
    let online = read("/sys/devices/system/cpu/online").map(|t| parse_cpu_list(&t)).unwrap_or_default();
    let siblings = online
        .iter()
        .map(|&c| {
            let list = read(&format!("/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"));
            (c, list.map(|l| parse_cpu_list(&l)).unwrap_or_default().into_iter().filter(|s| *s != c).collect())
        })
        .collect();
    Snapshot {
        governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        boost: crate::procfs::boost(),
        smt_active: read("/sys/devices/system/cpu/smt/active").map(|s| s == "1"),
        online,
        allowed: crate::sys::allowed_cpus().unwrap_or_default(),
        isolated: read("/sys/devices/system/cpu/isolated").map(|t| parse_cpu_list(&t)).unwrap_or_default(),
        siblings,
        busy,
        steal: all,
        clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        cgroup_limits: crate::procfs::cgroup_cpu_limits(),
        perf_paranoid: read("/proc/sys/kernel/perf_event_paranoid").and_then(|p| p.parse().ok()),
        root: rustix::process::geteuid().is_root(),
        thp: read("/sys/kernel/mm/transparent_hugepage/enabled"),
        timer_slack_ns: crate::sys::timer_slack_ns().ok(),
        nice: crate::sys::nice().ok(),
        policy: crate::sys::current_policy().ok().and_then(crate::placement::Policy::from_raw),
        controls: crate::procfs::ProcessControls::read(),
        cpuidle_driver: read("/sys/devices/system/cpu/cpuidle/current_driver"),
        guest_halt_poll_ns: read("/sys/module/haltpoll/parameters/guest_halt_poll_ns").and_then(|n| n.parse().ok()),
    }
}

/// Why `run --strict` measured nothing.
#[derive(Debug, thiserror::Error)]
#[error("--strict: the preflight found {} trap(s) on this machine, so nothing was measured: {}", .0.len(), .0.iter().map(|t| t.reason.as_str()).collect::<Vec<_>>().join("; "))]
pub struct Refused(pub Vec<Trap>);

#[cfg(test)]
mod tests {
    use super::*;

    /// A quiet two-CPU machine: every setting as a careful benchmarker leaves it.
    fn quiet() -> Snapshot {
        Snapshot {
            governor: Some("performance".into()),
            boost: Some("off".into()),
            smt_active: Some(false),
            online: vec![0, 1],
            allowed: vec![0, 1],
            isolated: vec![],
            siblings: vec![(0, vec![]), (1, vec![])],
            busy: vec![(0, 0.01), (1, 0.03)],
            steal: Some(0.0),
            clocksource: Some("tsc".into()),
            cgroup_limits: "cpu.max=max 100000 cpu.shares=1024 cpuset=0-1".into(),
            perf_paranoid: Some(2),
            root: true,
            thp: Some("always [madvise] never".into()),
            timer_slack_ns: Some(DEFAULT_TIMER_SLACK_NS),
            nice: Some(0),
            policy: Some(crate::placement::Policy::Other),
            controls: crate::procfs::ProcessControls::parse("Seccomp:\t0\nNoNewPrivs:\t0\n"),
            cpuidle_driver: Some("haltpoll".into()),
            guest_halt_poll_ns: Some(200_000),
        }
    }

    fn codes(s: &Snapshot) -> Vec<TrapCode> {
        check(s).iter().map(|t| t.code).collect()
    }

    #[test]
    fn a_quiet_machine_raises_nothing() {
        assert!(check(&quiet()).is_empty(), "{:?}", check(&quiet()));
        // Facts the kernel does not expose are no traps.
        let unknown = Snapshot { allowed: vec![0], online: vec![], ..Snapshot::default() };
        assert!(check(&unknown).is_empty(), "{:?}", check(&unknown));
    }

    /// The CPUs handed to families that pin a pair: allowed ones past the busy share.
    #[test]
    fn the_busy_cpus_are_the_allowed_ones_other_work_kept_busy() {
        assert!(quiet().busy_cpus().is_empty());
        assert_eq!(Snapshot { busy: vec![(0, 0.01), (1, 0.97)], ..quiet() }.busy_cpus(), [1]);
        let elsewhere = Snapshot { busy: vec![(0, BUSY_SHARE), (2, 1.0)], ..quiet() };
        assert!(elsewhere.busy_cpus().is_empty(), "at the share, or not allowed: {:?}", elsewhere.busy_cpus());
    }

    #[test]
    fn each_trap_fires_on_its_state_alone() {
        let cases: Vec<(TrapCode, Snapshot)> = vec![
            (TrapCode::Governor, Snapshot { governor: Some("powersave".into()), ..quiet() }),
            (TrapCode::Boost, Snapshot { boost: Some("on".into()), ..quiet() }),
            (TrapCode::SmtSiblings, Snapshot { smt_active: Some(true), ..quiet() }),
            (TrapCode::BusyCpu, Snapshot { busy: vec![(0, 0.01), (1, 0.97)], ..quiet() }),
            (
                TrapCode::BusySibling,
                Snapshot {
                    online: vec![0, 1, 2, 3],
                    allowed: vec![0, 1, 2, 3],
                    siblings: vec![(0, vec![2]), (2, vec![0])],
                    ..quiet()
                },
            ),
            (TrapCode::Steal, Snapshot { steal: Some(0.08), ..quiet() }),
            (TrapCode::Clocksource, Snapshot { clocksource: Some("hpet".into()), ..quiet() }),
            (TrapCode::IsolcpusOneCpu, Snapshot { isolated: vec![0, 1], ..quiet() }),
            (TrapCode::NarrowAffinity, Snapshot { allowed: vec![0], ..quiet() }),
            (TrapCode::CgroupLimit, Snapshot { cgroup_limits: "cpu.max=50000 100000 cpuset=0-1".into(), ..quiet() }),
            (TrapCode::PerfParanoid, Snapshot { root: false, ..quiet() }),
            (TrapCode::ThpAlways, Snapshot { thp: Some("[always] madvise never".into()), ..quiet() }),
            (TrapCode::TimerSlack, Snapshot { timer_slack_ns: Some(1), ..quiet() }),
            (TrapCode::InheritedNice, Snapshot { nice: Some(19), ..quiet() }),
            (TrapCode::InheritedPolicy, Snapshot { policy: Some(crate::placement::Policy::Batch), ..quiet() }),
            (TrapCode::CgroupWeight, Snapshot { cgroup_limits: "cpu.max=max 100000 cpu.weight=50".into(), ..quiet() }),
            (TrapCode::CgroupWeight, Snapshot { cgroup_limits: "cpu.shares=512 cpuset=0-1".into(), ..quiet() }),
            (TrapCode::HaltingIdle, Snapshot { guest_halt_poll_ns: Some(0), ..quiet() }),
        ];
        for (code, s) in cases {
            if code == TrapCode::BusySibling {
                // A busy sibling outside the run's CPUs fires; inside them it is a busy CPU.
                let s = Snapshot { allowed: vec![0, 1], busy: vec![(0, 0.0), (1, 0.0), (2, 0.9)], ..s };
                assert_eq!(codes(&s), [TrapCode::BusySibling, TrapCode::NarrowAffinity], "{:?}", check(&s));
                continue;
            }
            assert_eq!(codes(&s), [code], "{code:?}: {:?}", check(&s));
        }
    }

    #[test]
    fn thresholds_hold_at_their_edges() {
        let just = Snapshot { busy: vec![(0, BUSY_SHARE), (1, 0.0)], steal: Some(STEAL_SHARE), ..quiet() };
        assert!(check(&just).is_empty(), "at the threshold is not past it");
        // A busy CPU the run may not use is not the run's problem.
        let elsewhere = Snapshot { online: vec![0, 1, 2], busy: vec![(2, 1.0)], ..quiet() };
        assert_eq!(codes(&elsewhere), [TrapCode::NarrowAffinity]);
        // One isolated CPU allowed is a pin, not a trap.
        let one = Snapshot { online: vec![0, 1], allowed: vec![1], isolated: vec![1], ..quiet() };
        assert_eq!(codes(&one), [TrapCode::NarrowAffinity]);
    }

    #[test]
    fn only_a_haltpoll_guest_with_no_window_is_named_halting() {
        let halting = |driver: Option<&str>, window: Option<u64>| {
            let s = Snapshot { cpuidle_driver: driver.map(str::to_string), guest_halt_poll_ns: window, ..quiet() };
            codes(&s) == [TrapCode::HaltingIdle]
        };
        assert!(halting(Some("haltpoll"), Some(0)));
        // Any window polls before it halts; a machine that says nothing raises nothing.
        assert!(!halting(Some("haltpoll"), Some(1)));
        assert!(!halting(Some("haltpoll"), None));
        assert!(!halting(None, Some(0)));
        // Another driver's window is not the one it idles by.
        assert!(!halting(Some("acpi_idle"), Some(0)));
        assert!(!halting(Some("intel_idle"), Some(0)));
    }

    #[test]
    fn cpu_lists_parse_in_the_kernels_form() {
        assert_eq!(parse_cpu_list("0-3,6\n"), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("5"), vec![5]);
    }

    #[test]
    fn a_snapshot_of_this_machine_reads_its_cpus() {
        let s = snapshot(Duration::from_millis(20));
        assert!(!s.online.is_empty() && !s.allowed.is_empty());
        assert!(s.allowed.iter().all(|c| s.online.contains(c)), "{s:?}");
        assert!(s.busy.iter().all(|(_, b)| (0.0..=1.0).contains(b)), "{s:?}");
    }
}

#[cfg(test)]
mod filtered {
    use super::*;
    use crate::procfs::ProcessControls;

    /// A real filtered task: a thread that installs an allow-all filter (as a
    /// container runtime does before it starts a program) reads back one filter and
    /// no_new_privs, and the preflight names the filter it would inherit; the test's
    /// other threads stay unfiltered (a filter is a thread's own).
    #[test]
    fn a_filtered_thread_reads_its_filter_and_the_preflight_names_it() {
        let allow = libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0x7fff_0000 };
        let inside =
            std::thread::spawn(move || crate::sys::install_seccomp_filter(&[allow]).map(|()| ProcessControls::read()))
                .join()
                .unwrap();
        let c = match inside {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: this kernel takes no seccomp filter here ({e})");
                return;
            }
        };
        assert_eq!((c.seccomp_mode, c.no_new_privs), (Some(2), Some(true)), "{c:?}");
        assert!(c.seccomp_filters.unwrap_or(1) >= 1, "{c:?}");
        let snapshot = Snapshot { controls: c, ..Default::default() };
        let traps = check(&snapshot);
        assert!(traps.iter().any(|t| t.code == TrapCode::InheritedSeccomp), "{traps:?}");
        let quiet = Snapshot { controls: ProcessControls::read(), ..Default::default() };
        if quiet.controls.filters().is_none() {
            assert!(!check(&quiet).iter().any(|t| t.code == TrapCode::InheritedSeccomp));
        }
    }
}
