//! What the kernel says happened: per-task switch and migration counts from
//! `/proc/<pid>/task/<tid>/sched` (or `status`), and perf_event_open counters where the
//! system allows them. These are read only outside timed regions.
//!
//! A figure called "per switch" is only honest next to the number of switches that
//! really happened; this module supplies that number.

use std::collections::BTreeMap;

use oscost_figure::model::Count;
use oscost_platform::sys::{self, PerfCounter, PerfEvent};

/// A task (thread or process) whose counts a benchmark watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    pub pid: libc::pid_t,
    pub tid: libc::pid_t,
}

impl Task {
    /// The calling thread.
    pub fn current() -> Self {
        Self { pid: sys::getpid(), tid: sys::gettid() }
    }

    /// The main thread of process `pid`.
    pub fn process(pid: libc::pid_t) -> Self {
        Self { pid, tid: pid }
    }
}

/// Switch and migration counts of one task at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskCounts {
    pub voluntary: u64,
    pub involuntary: u64,
    pub migrations: Option<u64>,
}

impl TaskCounts {
    pub fn switches(&self) -> u64 {
        self.voluntary + self.involuntary
    }
}

/// Parses `/proc/.../sched` text (present with CONFIG_SCHED_DEBUG).
pub fn parse_sched(text: &str) -> Option<TaskCounts> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok()).flatten()
        })
    };
    Some(TaskCounts {
        voluntary: field("nr_voluntary_switches")?,
        involuntary: field("nr_involuntary_switches")?,
        migrations: field("se.nr_migrations"),
    })
}

/// Parses `/proc/.../status` text (always present; no migration count).
pub fn parse_status(text: &str) -> Option<TaskCounts> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim_start_matches(':').trim().parse::<u64>().ok()))
    };
    Some(TaskCounts {
        voluntary: field("voluntary_ctxt_switches")?,
        involuntary: field("nonvoluntary_ctxt_switches")?,
        migrations: None,
    })
}

/// Reads a task's counts now; None if the task is gone.
pub fn read_task(task: Task) -> Option<TaskCounts> {
    let base = format!("/proc/{}/task/{}", task.pid, task.tid);
    if let Ok(t) = std::fs::read_to_string(format!("{base}/sched"))
        && let Some(c) = parse_sched(&t)
    {
        return Some(c);
    }
    std::fs::read_to_string(format!("{base}/status")).ok().and_then(|t| parse_status(&t))
}

/// Counters of a set of tasks over one region: start before it, finish after it.
pub struct Watcher {
    tasks: Vec<Task>,
    before: Vec<Option<TaskCounts>>,
    perf: Vec<(Count, PerfCounter)>,
}

impl Watcher {
    /// Prepares to watch `tasks`; with `hardware`, also instructions and cycles of the
    /// calling thread (the one that runs the timed loop); with `perf_software`, also
    /// per-task perf switch and migration counters.
    pub fn new(tasks: &[Task], hardware: bool, perf_software: bool) -> Self {
        let mut perf = Vec::new();
        // Per-task perf counters are opt-in: an active perf event on a task makes every
        // switch of that task dearer (measured here: +1.7 µs per pipe hand-off on a
        // 2-core VM), which would inflate the very figure they are meant to prove.
        // The /proc counts are the kernel's own and cost nothing extra.
        let per_task_perf = if perf_software && tasks.len() <= 4 { tasks } else { &[] };
        for t in per_task_perf {
            for (key, ev) in [
                (Count::PerfContextSwitches, PerfEvent::ContextSwitches),
                (Count::PerfCpuMigrations, PerfEvent::CpuMigrations),
            ] {
                if let Ok(c) = PerfCounter::open(ev, t.tid) {
                    perf.push((key, c));
                }
            }
        }
        if hardware {
            for (key, ev) in [(Count::Instructions, PerfEvent::Instructions), (Count::Cycles, PerfEvent::Cycles)] {
                // Unavailable counters are reported once, in the machine fingerprint.
                if let Ok(c) = PerfCounter::open(ev, 0) {
                    perf.push((key, c));
                }
            }
        }
        Self { tasks: tasks.to_vec(), before: Vec::new(), perf }
    }

    /// Snapshots the tasks and starts the perf counters.
    pub fn start(&mut self) {
        self.before = self.tasks.iter().map(|&t| read_task(t)).collect();
        for (_, c) in &self.perf {
            let _ = c.start();
        }
    }

    /// Stops the counters and returns the deltas, summed over the tasks:
    /// `voluntary_switches`, `involuntary_switches`, `switches`, `migrations` (when the
    /// kernel exposes them), and the perf counters that could be opened.
    pub fn finish(&mut self) -> BTreeMap<Count, f64> {
        for (_, c) in &self.perf {
            let _ = c.stop();
        }
        let mut out = BTreeMap::new();
        let (mut vol, mut invol, mut mig, mut mig_known, mut seen) = (0u64, 0u64, 0u64, true, 0);
        for (t, b) in self.tasks.iter().zip(&self.before) {
            let (Some(b), Some(a)) = (b, read_task(*t)) else { continue };
            seen += 1;
            vol += a.voluntary.saturating_sub(b.voluntary);
            invol += a.involuntary.saturating_sub(b.involuntary);
            match (a.migrations, b.migrations) {
                (Some(x), Some(y)) => mig += x.saturating_sub(y),
                _ => mig_known = false,
            }
        }
        if seen > 0 {
            out.insert(Count::VoluntarySwitches, vol as f64);
            out.insert(Count::InvoluntarySwitches, invol as f64);
            out.insert(Count::Switches, (vol + invol) as f64);
            if mig_known {
                out.insert(Count::Migrations, mig as f64);
            }
        }
        for (key, c) in &self.perf {
            if let Ok(v) = c.value() {
                *out.entry(*key).or_insert(0.0) += v as f64;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sched_and_status() {
        let sched = "se.nr_migrations                             :                    3\n\
                     nr_switches                                  :                   12\n\
                     nr_voluntary_switches                        :                   10\n\
                     nr_involuntary_switches                      :                    2\n";
        assert_eq!(parse_sched(sched), Some(TaskCounts { voluntary: 10, involuntary: 2, migrations: Some(3) }));
        let status = "Name:\tx\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t1\n";
        assert_eq!(parse_status(status), Some(TaskCounts { voluntary: 7, involuntary: 1, migrations: None }));
        assert_eq!(parse_status("Name: x\n"), None);
    }

    #[test]
    fn watching_a_sleep_sees_a_voluntary_switch() {
        let me = Task::current();
        let mut w = Watcher::new(&[me], false, false);
        w.start();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let c = w.finish();
        assert!(c[&Count::VoluntarySwitches] >= 1.0, "{c:?}");
    }
}
