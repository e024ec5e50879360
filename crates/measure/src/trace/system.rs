//! `oscost trace`: the whole machine's (or one command's) scheduling, recorded for a
//! bounded time: per-task switch counts, wake→run latencies, and the run-queue length
//! seen at *every* switch.
//!
//! The runnable set is followed from the events: a task joins it when it is woken
//! (sched_waking, sched_wakeup_new) or is seen running, and leaves it when it switches
//! out asleep. Its size just after each switch, the running tasks included and the
//! idle tasks not, is the run-queue length the 1999 article's web-server study
//! counted at each schedule(); `oscost observe` only samples /proc every 10 ms.
//! Tasks that stay runnable without any event during the window are missed until
//! they do something, so the first moments read low.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::TraceError;
use super::event::{Comm, Event, EventKind};
use super::recorder::{self, BufferSizes, Recorder};
use super::tracefs::TraceSpec;
use oscost_figure::model::{Count, LatencySummary, Method, ResultRow};

/// One task's part of the recording.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TaskStat {
    pub pid: i32,
    pub comm: String,
    /// Switch-outs (each ends one stay on a CPU).
    pub switches: u64,
    pub wake_to_run: Option<LatencySummary>,
}

/// What a recording says.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemTrace {
    pub seconds: f64,
    /// Every traced switch (idle's included).
    pub switches: u64,
    /// The runnable tasks just after each switch.
    pub runqueue: Vec<f64>,
    /// Wake→run latencies of the tasks in scope, ns.
    pub wake_to_run: Vec<u64>,
    /// The tasks in scope with a switch, most switches first.
    pub tasks: Vec<TaskStat>,
    pub lost: u64,
    pub cpus: usize,
}

/// Reads time-ordered events. `scope`: the root task of a command (its descendants
/// join as they are forked); None for every task.
pub fn analyze(events: &[Event], (from, to): (u64, u64), scope: Option<i32>, lost: u64, cpus: usize) -> SystemTrace {
    let mut in_scope: HashSet<i32> = scope.into_iter().collect();
    let wanted = |s: &HashSet<i32>, p: i32| p != 0 && (scope.is_none() || s.contains(&p));
    let mut runnable: HashSet<i32> = HashSet::new();
    let mut woken_at: HashMap<i32, u64> = HashMap::new();
    let mut comms: HashMap<i32, Comm> = HashMap::new();
    let mut per_task: HashMap<i32, (u64, Vec<u64>)> = HashMap::new();
    let mut t = SystemTrace {
        seconds: to.saturating_sub(from) as f64 / 1e9,
        switches: 0,
        runqueue: Vec::new(),
        wake_to_run: Vec::new(),
        tasks: Vec::new(),
        lost,
        cpus,
    };
    for e in events.iter().filter(|e| e.time >= from && e.time <= to) {
        match e.kind {
            EventKind::Waking { pid, .. } => {
                runnable.insert(pid);
                woken_at.entry(pid).or_insert(e.time);
            }
            EventKind::WakeupNew { pid, .. } => {
                runnable.insert(pid);
                if in_scope.contains(&(e.tid as i32)) {
                    in_scope.insert(pid);
                }
            }
            EventKind::Migrate { .. } => {}
            EventKind::Switch { prev_pid, prev_comm, prev_state, next_pid, next_comm } => {
                t.switches += 1;
                comms.insert(prev_pid, prev_comm);
                comms.insert(next_pid, next_comm);
                if prev_pid != 0 {
                    if Event::left_runnable(prev_state) {
                        runnable.insert(prev_pid);
                    } else {
                        runnable.remove(&prev_pid);
                    }
                    if wanted(&in_scope, prev_pid) {
                        per_task.entry(prev_pid).or_default().0 += 1;
                    }
                }
                if next_pid != 0 {
                    runnable.insert(next_pid);
                    if let Some(w) = woken_at.remove(&next_pid)
                        && wanted(&in_scope, next_pid)
                    {
                        t.wake_to_run.push(e.time - w);
                        per_task.entry(next_pid).or_default().1.push(e.time - w);
                    }
                }
                t.runqueue.push(runnable.len() as f64);
            }
        }
        // A task seen acting is running (a switch-in the kernel did not trace).
        if !matches!(e.kind, EventKind::Switch { .. }) && e.tid != 0 && (e.tid as i32) > 0 {
            runnable.insert(e.tid as i32);
            woken_at.remove(&(e.tid as i32));
        }
    }
    let mut tasks: Vec<TaskStat> = per_task
        .into_iter()
        .map(|(pid, (switches, mut lat))| TaskStat {
            pid,
            comm: comms.get(&pid).map(|c| c.as_str().into_owned()).unwrap_or_default(),
            switches,
            wake_to_run: super::handoff::latency(&mut lat),
        })
        .collect();
    tasks.sort_by(|a, b| b.switches.cmp(&a.switches).then(a.pid.cmp(&b.pid)));
    t.tasks = tasks;
    t
}

/// How often the buffers are drained while recording.
const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// A command run under the recording: started in its own process group, killed
/// with its group if it outlives the bound or the recording stops, and always reaped.
struct Command {
    child: std::process::Child,
}

impl Command {
    fn start(argv: &[String]) -> Result<Self, TraceError> {
        use std::os::unix::process::CommandExt;
        let (prog, args) = argv.split_first().ok_or_else(|| TraceError::Command("no command given after --".into()))?;
        let child = std::process::Command::new(prog)
            .args(args)
            .process_group(0)
            .spawn()
            .map_err(|e| TraceError::Command(format!("starting {prog}: {e}")))?;
        Ok(Self { child })
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for Command {
    fn drop(&mut self) {
        if !self.exited() {
            oscost_platform::sys::signal_group(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// Records for `bound` (or until the command ends, or a stop signal), then reads.
pub fn record(spec: &TraceSpec, bound: Duration, command: &[String]) -> Result<SystemTrace, TraceError> {
    let mut rec = Recorder::open(spec, &spec.cpus, BufferSizes::streaming())?;
    let mut events = Vec::new();
    rec.enable()?;
    let from = oscost_platform::sys::monotonic_raw_ns();
    let mut cmd = if command.is_empty() { None } else { Some(Command::start(command)?) };
    let root = cmd.as_ref().map(|c| c.child.id() as i32);
    let deadline = from + bound.as_nanos() as u64;
    while oscost_platform::sys::monotonic_raw_ns() < deadline && !oscost_platform::sys::interrupted() {
        std::thread::sleep(DRAIN_EVERY);
        rec.drain(&mut events);
        if cmd.as_mut().is_some_and(Command::exited) {
            break;
        }
    }
    let to = oscost_platform::sys::monotonic_raw_ns();
    drop(cmd);
    rec.disable();
    rec.drain(&mut events);
    let lost = rec.lost();
    drop(rec);
    recorder::sort(&mut events);
    Ok(analyze(&events, (from, to), root, lost, spec.cpus.len()))
}

/// The ids of the rows a recording is stored as.
pub const IDS: [&str; 3] = ["trace.runqueue", "trace.wake_to_run", "trace.task"];

/// Whether a row names one process (a `trace.task` row, by command and PID): an
/// export to a time-series store leaves it out, since its PID makes a new series at
/// every run.
pub fn names_a_process(r: &ResultRow) -> bool {
    r.benchmark == IDS[2]
}

/// Tasks stored with their own row.
const TASK_ROWS: usize = 10;
/// Samples kept in a stored row (a systematic subsample in time order past this; the
/// row's statistics are computed from all of them first).
const KEPT_SAMPLES: usize = 20_000;

/// The row with at most [`KEPT_SAMPLES`] samples. A row's `n` counts the samples it
/// carries (an import refuses a row whose counts disagree), so a thinned row's `n` is
/// the kept count and the observed one is kept as `samples_observed`.
fn thinned(mut r: ResultRow) -> ResultRow {
    if r.samples.len() > KEPT_SAMPLES {
        let step = r.samples.len().div_ceil(KEPT_SAMPLES);
        r.counts.insert(Count::SamplesObserved, r.samples.len() as f64);
        r.samples = r.samples.iter().step_by(step).copied().collect();
        r.n = r.samples.len();
    }
    r
}

/// The recording as result rows, stored like a run.
pub fn rows(t: &SystemTrace, command: &[String]) -> Vec<ResultRow> {
    let mut out = Vec::new();
    let scope = if command.is_empty() { "system".to_string() } else { command.join(" ") };
    if let (Some(s), Some(mut r)) = (
        crate::observe::summarize_trace(&t.runqueue, t.switches, t.seconds),
        ResultRow::from_samples(
            IDS[0],
            Method::Workload,
            oscost_figure::unit::Unit::Tasks,
            t.runqueue.clone(),
            t.switches,
        ),
    ) {
        r.percentiles = oscost_figure::stats::percentiles(&t.runqueue);
        r.counts.insert(Count::FracAbove10, s.frac_above_10);
        r.counts.insert(Count::FracAbove20, s.frac_above_20);
        r.counts.insert(Count::Seconds, t.seconds);
        r.counts.insert(Count::Switches, t.switches as f64);
        r.counts.insert(Count::SwitchesPerSOverall, s.switches_per_s);
        r.counts.insert(Count::LostEvents, t.lost as f64);
        out.push(thinned(r.with_param("at", "every switch")));
    }
    let lat: Vec<f64> = t.wake_to_run.iter().map(|&x| x as f64).collect();
    if let Some(mut r) =
        ResultRow::from_samples(IDS[1], Method::Workload, oscost_figure::unit::Unit::Ns, lat.clone(), lat.len() as u64)
    {
        r.percentiles = oscost_figure::stats::percentiles(&lat);
        out.push(thinned(r.with_param("tasks", scope.as_str())));
    }
    for task in t.tasks.iter().take(TASK_ROWS) {
        let Some(l) = &task.wake_to_run else { continue };
        let mut r = ResultRow::from_samples(IDS[2], Method::Workload, oscost_figure::unit::Unit::Ns, vec![l.p50], l.n)
            .expect("one finite sample")
            .with_param("task", format!("{}[{}]", task.comm, task.pid));
        r.percentiles = None;
        r.counts.insert(Count::Switches, task.switches as f64);
        r.counts.insert(Count::WakeToRunP99Ns, l.p99);
        out.push(r);
    }
    out
}

/// What the terminal says under the table.
pub fn summary(t: &SystemTrace) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(s) = crate::observe::summarize_trace(&t.runqueue, t.switches, t.seconds) {
        lines.push(format!(
            "run queue at every switch ({} switches in {:.2} s on {} CPUs, {} events lost): mean {:.2}, p50 {:.0}, p99 {:.0}, max {:.0}; more than 10: {:.2}% of switches, 20 or more: {:.2}%; {:.0} switches/s",
            t.switches, t.seconds, t.cpus, t.lost, s.mean, s.p50, s.p99, s.max,
            100.0 * s.frac_above_10, 100.0 * s.frac_above_20, s.switches_per_s
        ));
    }
    if let Some(l) = super::handoff::latency(&mut t.wake_to_run.clone()) {
        lines.push(format!(
            "wake→run: p50 {}, p99 {}, max {} over {} wake-ups",
            oscost_figure::unit::format_ns(l.p50),
            oscost_figure::unit::format_ns(l.p99),
            oscost_figure::unit::format_ns(l.max),
            l.n
        ));
    }
    for task in t.tasks.iter().take(TASK_ROWS) {
        lines.push(format!("  {:>8} switches  {}[{}]", task.switches, task.comm, task.pid));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording of more switches than a row keeps stores a subsample whose `n` is
    /// what it carries (as import checks), the observed count beside it, and the
    /// statistics of every sample.
    #[test]
    fn a_thinned_row_counts_what_it_carries() {
        let all: Vec<f64> = (0..21_660).map(|i| (i % 7) as f64).collect();
        let full =
            ResultRow::from_samples(IDS[0], Method::Workload, oscost_figure::unit::Unit::Tasks, all.clone(), 21_660)
                .expect("finite samples");
        let r = thinned(full.clone());
        assert!(r.samples.len() <= KEPT_SAMPLES);
        assert_eq!(r.n, r.samples.len());
        assert_eq!(r.counts.get(&Count::SamplesObserved), Some(&21_660.0));
        assert_eq!((r.median, r.mean), (full.median, full.mean));
        let small = thinned(
            ResultRow::from_samples(IDS[0], Method::Workload, oscost_figure::unit::Unit::Tasks, vec![1.0; 5], 5)
                .unwrap(),
        );
        assert_eq!((small.n, small.samples.len()), (5, 5));
        assert!(!small.counts.contains_key(&Count::SamplesObserved));
    }

    fn sw(time: u64, cpu: u32, prev: i32, state: i64, next: i32) -> Event {
        Event {
            time,
            cpu,
            tid: prev as u32,
            kind: EventKind::Switch {
                prev_pid: prev,
                prev_comm: Comm::new(&format!("t{prev}")),
                prev_state: state,
                next_pid: next,
                next_comm: Comm::new(&format!("t{next}")),
            },
        }
    }

    #[test]
    fn the_runnable_set_follows_wakes_and_sleeps() {
        let wake = |time, pid| Event { time, cpu: 0, tid: 0, kind: EventKind::Waking { pid, target_cpu: 0 } };
        let v = vec![
            wake(1, 5),
            sw(2, 0, 0, 0, 5), // {5}
            wake(3, 6),
            wake(4, 7),
            sw(5, 0, 5, 0, 6), // 5 preempted: {5, 6, 7}
            sw(6, 0, 6, 1, 7), // 6 sleeps: {5, 7}
            sw(7, 0, 7, 1, 5), // 7 sleeps: {5}
        ];
        let t = analyze(&v, (0, 10), None, 0, 1);
        assert_eq!(t.runqueue, vec![1.0, 3.0, 2.0, 1.0]);
        assert_eq!(t.switches, 4);
        assert_eq!(t.wake_to_run.len(), 3);
        let five = t.tasks.iter().find(|s| s.pid == 5).unwrap();
        assert_eq!((five.switches, five.comm.as_str()), (1, "t5"));
    }

    #[test]
    fn a_command_scope_follows_its_forks() {
        let new = |time, parent: u32, child| Event {
            time,
            cpu: 0,
            tid: parent,
            kind: EventKind::WakeupNew { pid: child, target_cpu: 0 },
        };
        let v =
            vec![new(1, 100, 101), new(2, 999, 500), sw(3, 0, 100, 1, 101), sw(4, 0, 101, 1, 500), sw(5, 0, 500, 1, 0)];
        let t = analyze(&v, (0, 10), Some(100), 0, 1);
        let pids: Vec<i32> = t.tasks.iter().map(|s| s.pid).collect();
        assert_eq!(pids, vec![100, 101], "500 was forked by another task");
        assert_eq!(t.switches, 3, "switches and run queue stay system-wide");
    }
}
