//! Placement and priority: the runner options every benchmark honours (`--cpu`,
//! `--nice`, `--policy`), checked before anything is measured, and the watchdog that
//! bounds real-time scheduling.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::sys;

/// A scheduling policy a user may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    #[default]
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
        }
    }

    fn raw(self) -> libc::c_int {
        match self {
            Policy::Other => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
        }
    }

    /// The policy the kernel numbers `raw` (None for one oscost does not name).
    pub fn from_raw(raw: libc::c_int) -> Option<Policy> {
        [Policy::Other, Policy::Batch, Policy::Idle, Policy::Fifo, Policy::Rr].into_iter().find(|p| p.raw() == raw)
    }

    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
}

/// The user's placement and priority request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub cpu: Option<usize>,
    /// The two CPUs a run is held to (`--cpus A,B`): a cross-CPU figure's pair, a
    /// same-CPU figure on the higher (as `taskset -c A,B` would, recorded in the row).
    #[serde(default)]
    pub pair: Option<[usize; 2]>,
    pub nice: Option<i32>,
    pub policy: Policy,
}

/// Why a placement cannot be honoured.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlacementError {
    #[error("--cpu {cpu}: this process may run only on CPUs {}", sys::cpu_list_text(allowed))]
    CpuAbsent { cpu: usize, allowed: Vec<usize> },
    #[error("--cpus {}: two different CPUs this process may run on ({}) are needed", .pair.map(|c| c.to_string()).join(","), sys::cpu_list_text(allowed))]
    PairAbsent { pair: [usize; 2], allowed: Vec<usize> },
    #[error("--nice {0}: nice values run from -20 to 19")]
    NiceRange(i32),
    #[error("--nice {nice}: {reason}")]
    Nice { nice: i32, reason: String },
    #[error("--policy {policy}: {reason}")]
    Policy { policy: &'static str, reason: String },
    #[error("pinning to CPU {cpu} failed: {reason}")]
    Pin { cpu: usize, reason: String },
}

/// Why a nice value could not be set, with what would allow it.
fn nice_failure(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "{e}; a nice value below the present one needs root, CAP_SYS_NICE, or an RLIMIT_NICE (ulimit -e) that allows it"
        ),
        _ => e.to_string(),
    }
}

/// Why a scheduling policy could not be set, with what would allow it. Refused to
/// root, a real-time policy usually means a real-time budget of zero (the cgroup's
/// `cpu.rt_runtime_us`, or the kernel's `sched_rt_runtime_us`), not privilege.
fn policy_failure(policy: Policy, e: &std::io::Error) -> String {
    let denied = matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM));
    if !denied {
        return e.to_string();
    }
    if !sys::is_root() {
        return format!("{e}; real-time and lowered-nice runs need root or CAP_SYS_NICE");
    }
    if !policy.is_realtime() {
        return format!("{e}, although this process is root (a security module or seccomp policy may forbid it)");
    }
    let budget = crate::procfs::zero_rt_budget()
        .map(|at| format!("the real-time budget is 0 ({at}); give this cgroup a budget to measure under {}", policy.as_str()))
        .unwrap_or_else(|| {
            "the kernel refused it although this process is root: a real-time budget of 0 (a cgroup's cpu.rt_runtime_us) or a security policy forbids it".into()
        });
    format!("{e}; {budget}")
}

impl Placement {
    /// Checks the request against this machine without changing anything.
    pub fn validate(&self, allowed: &[usize]) -> Result<(), PlacementError> {
        if let Some(cpu) = self.cpu
            && !allowed.contains(&cpu)
        {
            return Err(PlacementError::CpuAbsent { cpu, allowed: allowed.to_vec() });
        }
        if let Some(pair) = self.pair
            && (pair[0] == pair[1] || !pair.iter().all(|c| allowed.contains(c)))
        {
            return Err(PlacementError::PairAbsent { pair, allowed: allowed.to_vec() });
        }
        if let Some(n) = self.nice
            && !(-20..=19).contains(&n)
        {
            return Err(PlacementError::NiceRange(n));
        }
        Ok(())
    }

    /// Applies pinning and nice to the calling thread (inherited by the threads and
    /// processes it starts). The policy is applied per benchmark by [`PolicyGuard`].
    pub fn apply_static(&self) -> Result<(), PlacementError> {
        if let Some(cpu) = self.cpu {
            sys::set_affinity(&[cpu]).map_err(|e| PlacementError::Pin { cpu, reason: e.to_string() })?;
        }
        if let Some(pair) = self.pair {
            sys::set_affinity(&pair).map_err(|e| PlacementError::Pin { cpu: pair[0], reason: e.to_string() })?;
        }
        if let Some(nice) = self.nice {
            sys::set_nice(nice).map_err(|e| PlacementError::Nice { nice, reason: nice_failure(&e) })?;
        }
        Ok(())
    }

    /// Checks that the policy can be set, by setting it and setting it back.
    pub fn probe_policy(&self) -> Result<(), PlacementError> {
        if self.policy == Policy::Other {
            return Ok(());
        }
        let guard = PolicyGuard::enter(self.policy, Duration::from_secs(1))?;
        drop(guard);
        Ok(())
    }

    /// Short description stored with each row's parameters.
    pub fn label(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(c) = self.cpu {
            parts.push(format!("cpu={c}"));
        }
        if let Some([a, b]) = self.pair {
            parts.push(format!("cpus={}+{}", a.min(b), a.max(b)));
        }
        if let Some(n) = self.nice {
            parts.push(format!("nice={n}"));
        }
        // The policy is a parameter of its own (`policy`), tagged by the session.
        (!parts.is_empty()).then(|| parts.join(","))
    }
}

/// Holds the calling thread under a scheduling policy; restores SCHED_OTHER on drop.
/// A real-time policy is bounded twice: a watchdog thread at the top real-time
/// priority demotes every thread of the process once `bound` passes, and
/// RLIMIT_RTTIME lets the kernel end a real-time loop that never blocks.
pub struct PolicyGuard {
    watchdog: Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
    fired: Arc<AtomicBool>,
    /// The soft RLIMIT_RTTIME to put back (Some when this guard changed it).
    saved_rttime: Option<Option<u64>>,
}

impl PolicyGuard {
    pub fn enter(policy: Policy, bound: Duration) -> Result<Self, PlacementError> {
        let perr =
            |e: std::io::Error| PlacementError::Policy { policy: policy.as_str(), reason: policy_failure(policy, &e) };
        // Built first so that every early return below undoes what was done (Drop).
        let mut guard = Self { watchdog: None, fired: Arc::new(AtomicBool::new(false)), saved_rttime: None };
        if policy.is_realtime() {
            // The kernel's bound comes after the watchdog's: the watchdog demotes and
            // the run reports it; SIGXCPU (a stop signal to oscost: the run ends
            // between samples) is the last resort.
            let previous = sys::rttime_soft_limit();
            let bound_us = bound.as_micros().min(u128::from(u64::MAX / 2)) as u64;
            if sys::set_rttime_soft_limit(Some(bound_us + 5_000_000)).is_ok() {
                guard.saved_rttime = Some(previous);
            }
            guard.watchdog = Some(start_watchdog(bound, guard.fired.clone()).map_err(perr)?);
        }
        let prio = if policy.is_realtime() { 1 } else { 0 };
        sys::set_policy(policy.raw(), prio).map_err(perr)?;
        Ok(guard)
    }

    /// True if the watchdog had to demote the benchmark.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

/// Starts the watchdog at the top real-time priority; returns once it runs there.
fn start_watchdog(
    bound: Duration,
    fired: Arc<AtomicBool>,
) -> std::io::Result<(mpsc::Sender<()>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel::<()>();
    let (ready_tx, ready_rx) = mpsc::channel::<std::io::Result<()>>();
    let handle = std::thread::Builder::new().name("oscost-rt-watchdog".into()).spawn(move || {
        let r = sys::set_policy(libc::SCHED_FIFO, sys::max_priority(libc::SCHED_FIFO));
        let ok = r.is_ok();
        let _ = ready_tx.send(r);
        if ok && let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(bound) {
            fired.store(true, Ordering::SeqCst);
            demote_all_threads();
        }
    })?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok((tx, handle)),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(e)
        }
        Err(_) => {
            let _ = handle.join();
            Err(std::io::Error::other("watchdog thread did not start"))
        }
    }
}

impl Drop for PolicyGuard {
    fn drop(&mut self) {
        let _ = sys::set_policy(libc::SCHED_OTHER, 0);
        if let Some((tx, h)) = self.watchdog.take() {
            let _ = tx.send(());
            let _ = h.join();
        }
        if let Some(previous) = self.saved_rttime.take() {
            let _ = sys::set_rttime_soft_limit(previous);
        }
    }
}

/// Puts every thread of this process, and every child process, back under SCHED_OTHER.
fn demote_all_threads() {
    for pid in crate::procfs::live_children() {
        let _ = sys::set_policy_of(pid, libc::SCHED_OTHER, 0);
    }
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<libc::pid_t>().ok())
                && tid != sys::gettid()
            {
                let _ = sys::set_policy_of(tid, libc::SCHED_OTHER, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_cpu_is_refused() {
        let p = Placement { cpu: Some(99), ..Default::default() };
        let e = p.validate(&[0, 1]).unwrap_err();
        assert!(e.to_string().contains("--cpu 99"), "{e}");
        assert!(Placement { cpu: Some(1), ..Default::default() }.validate(&[0, 1]).is_ok());
        assert!(Placement { nice: Some(40), ..Default::default() }.validate(&[0]).is_err());
        let pair = |a, b| Placement { pair: Some([a, b]), ..Default::default() };
        assert!(pair(1, 0).validate(&[0, 1]).is_ok());
        assert!(matches!(pair(1, 1).validate(&[0, 1]), Err(PlacementError::PairAbsent { .. })));
        assert!(matches!(pair(0, 7).validate(&[0, 1]), Err(PlacementError::PairAbsent { .. })));
        assert_eq!(pair(3, 2).label().as_deref(), Some("cpus=2+3"));
    }

    #[test]
    fn realtime_policy_is_applied_and_undone_or_refused_clearly() {
        match PolicyGuard::enter(Policy::Fifo, Duration::from_secs(5)) {
            Ok(g) => {
                // Privileged: the thread really runs under SCHED_FIFO, and leaving the
                // guard puts it back under SCHED_OTHER.
                assert_eq!(sys::current_policy().unwrap(), libc::SCHED_FIFO);
                drop(g);
                assert_eq!(sys::current_policy().unwrap(), libc::SCHED_OTHER);
            }
            Err(e) => {
                eprintln!("skipping real-time check (no privilege): {e}");
                assert!(e.to_string().contains("--policy fifo"));
            }
        }
    }

    #[test]
    fn watchdog_demotes_after_bound_when_privileged() {
        let Ok(g) = PolicyGuard::enter(Policy::Fifo, Duration::from_millis(50)) else {
            eprintln!("skipping watchdog check: real-time policy not permitted here");
            return;
        };
        std::thread::sleep(Duration::from_millis(200));
        assert!(g.fired());
    }
}
