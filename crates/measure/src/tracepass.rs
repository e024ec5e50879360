//! The trace pass: after a timed pass, the same workload again, untimed by the row,
//! with the scheduler's tracepoints recorded (`trace`), so a figure carries what the
//! kernel's own events saw. It sits beside the runner, not inside it: the timed loops
//! (`runner`) know nothing of tracing, and a family asks for both through
//! [`measure`], or for a window over a workload that runs by itself through
//! [`trace_window`].

use std::time::Duration;

use crate::kcounts::{Task, Watcher};
use crate::runner::{BenchError, MeasureConfig, Measurement, Probe, Watch, measure_timed, time_batch};
use crate::trace::TraceError;
use oscost_figure::model::{Count, TraceSummary};
use oscost_platform::clock::Calibration;
use oscost_platform::sys;

/// The timed pass (`runner::measure_timed`), then the trace pass when the config
/// asks for one, over the same tasks.
pub fn measure<P: Probe>(
    probe: &mut P,
    cfg: &MeasureConfig,
    calib: &Calibration,
    watch: &Watch,
) -> Result<Measurement, BenchError> {
    let mut m = measure_timed(probe, cfg, calib, watch)?;
    if let Some(spec) = &cfg.trace {
        let mut tasks = vec![Task::current()];
        tasks.extend(watch.peers.iter().copied());
        m.trace = Some(trace_pass(probe, spec, &tasks, &m));
    }
    Ok(m)
}

/// The trace pass's recorder, kept for the process's later passes (see `trace_pass`).
static SHARED_RECORDER: std::sync::Mutex<Option<(crate::trace::TraceSpec, crate::trace::Recorder)>> =
    std::sync::Mutex::new(None);

/// How long a trace pass aims to run: long enough for thousands of hand-offs of a
/// fast primitive, short enough to add little to a family's time.
const TRACE_WINDOW_NS: f64 = 20e6;
/// Fewest iterations a trace pass runs, however slow the primitive.
const TRACE_MIN_ITERATIONS: f64 = 8.0;
/// Switch records a pass may leave in one CPU's buffer (`BufferSizes::pass` holds
/// about 20,000; the rest is margin for other tasks' switches).
const TRACE_RECORD_ROOM: f64 = 12_000.0;

/// The trace pass: the probe again, untimed by the row, for about `TRACE_WINDOW_NS`,
/// with the scheduler's tracepoints recorded on every allowed CPU and the watched
/// tasks' /proc counts taken over the same window. The buffers are read once the pass
/// has ended, so no reader runs beside the workload; the pass is sized from the timed
/// pass so its switches fit the buffers (what does not fit is counted as lost).
/// Timing model: one `time_batch` of n iterations inside the recorded window; its
/// time per iteration is the traced figure.
fn trace_pass<P: Probe>(
    probe: &mut P,
    spec: &crate::trace::TraceSpec,
    tasks: &[Task],
    m: &Measurement,
) -> Result<TraceSummary, TraceError> {
    let per_iteration = oscost_figure::stats::median(&m.batch_ns).max(1.0);
    let switches = m.counts.get(&Count::Switches).copied().unwrap_or(0.0) / m.counted_iterations.max(1) as f64;
    let room = TRACE_RECORD_ROOM / switches.max(1.0);
    let n = (TRACE_WINDOW_NS / per_iteration).max(TRACE_MIN_ITERATIONS).min(room).max(1.0) as u64;
    traced(spec, tasks, false, || match time_batch(probe, n) {
        (_, 0) => Ok(n),
        (_, code) => Err(format!("the traced pass failed: {}", probe.describe(code)).into()),
    })
}

/// A trace pass of a workload that runs by itself in its tasks (a storm, hogs): the
/// scheduler's events recorded over `window` while the calling thread `body` runs
/// (it may just sleep), which returns the operations it saw. None when the config
/// asks for no trace pass.
pub fn trace_window(
    cfg: &MeasureConfig,
    tasks: &[Task],
    body: impl FnOnce() -> Result<u64, WorkError>,
) -> Option<Result<TraceSummary, TraceError>> {
    cfg.trace.as_ref().map(|spec| traced(spec, tasks, false, body))
}

/// `trace_window` for a body that starts its own tasks (threads, children): what the
/// watched tasks create during the pass is watched too.
pub fn trace_window_following(
    cfg: &MeasureConfig,
    tasks: &[Task],
    body: impl FnOnce() -> Result<u64, WorkError>,
) -> Option<Result<TraceSummary, TraceError>> {
    cfg.trace.as_ref().map(|spec| traced(spec, tasks, true, body))
}

/// Why the work of a trace pass failed: whatever error the benchmark's own work has.
pub type WorkError = Box<dyn std::error::Error + Send + Sync>;

/// The window of a `trace_window` pass.
pub const TRACE_WINDOW: Duration = Duration::from_nanos(TRACE_WINDOW_NS as u64);

/// Runs `work` (returning its operation count) with the tracepoints recorded and the
/// watched tasks' /proc counts read around it, and reads the events.
fn traced(
    spec: &crate::trace::TraceSpec,
    tasks: &[Task],
    follow_children: bool,
    work: impl FnOnce() -> Result<u64, WorkError>,
) -> Result<TraceSummary, TraceError> {
    use crate::trace::{BufferSizes, Recorder, handoff, recorder};
    // Opened once per worker and kept (disabled) for its later passes: closing the
    // last perf user of a tracepoint waits for RCU grace periods (about 200 ms a
    // pass here), which would dominate the pass.
    let mut shared = SHARED_RECORDER.lock().unwrap_or_else(|e| e.into_inner());
    if shared.as_ref().is_none_or(|(s, _)| s != spec) {
        *shared = None;
        *shared = Some((spec.clone(), Recorder::open(spec, &spec.cpus, BufferSizes::pass())?));
    }
    let Some((_, rec)) = shared.as_mut() else { unreachable!("opened above") };
    let mut events = Vec::new();
    rec.drain(&mut events);
    events.clear();
    let lost_before = rec.lost();
    let mut watcher = Watcher::new(tasks, false, false);
    rec.enable()?;
    let outer0 = sys::monotonic_raw_ns();
    watcher.start();
    let t0 = sys::monotonic_raw_ns();
    let ops = work();
    let t1 = sys::monotonic_raw_ns();
    let counts = watcher.finish();
    let outer1 = sys::monotonic_raw_ns();
    rec.disable();
    let ops = ops.map_err(|e| TraceError::Workload(e.to_string()))?.max(1);
    rec.drain(&mut events);
    let lost = rec.lost() - lost_before;
    drop(shared);
    recorder::sort(&mut events);
    let tids: Vec<i32> = tasks.iter().map(|t| t.tid).collect();
    let facts = handoff::PassFacts {
        ops,
        traced_ns_per_op: (t1 - t0) as f64 / ops as f64,
        proc_switches: counts.get(&Count::Switches).map(|s| s.round() as u64).filter(|_| !follow_children),
        lost,
        cpus: spec.cpus.len(),
        outer: (outer0, outer1),
        follow_children,
    };
    Ok(handoff::summarize(&events, &tids, (t0, t1), facts))
}
