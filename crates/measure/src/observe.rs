//! The live observer: samples the system's run-queue length (procs_running) and its
//! context-switch counter from /proc/stat at a fixed interval, and summarises how long
//! the run queue really is. It answers the question behind the run-queue sweep: which
//! N matters on this machine in real life.

use std::time::Duration;

use oscost_figure::model::{Count, Method, ResultRow};
use oscost_figure::stats;
use oscost_platform::sys;

/// What a trace says.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TraceStats {
    pub samples: usize,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub frac_above_10: f64,
    pub frac_above_20: f64,
    pub switches_per_s: f64,
}

/// Summarises run-queue samples and the switches counted over `seconds`.
pub fn summarize_trace(running: &[f64], switches: u64, seconds: f64) -> Option<TraceStats> {
    let p = stats::percentiles(running)?;
    let n = running.len();
    let share = |keep: &dyn Fn(f64) -> bool| running.iter().filter(|&&x| keep(x)).count() as f64 / n as f64;
    Some(TraceStats {
        samples: n,
        mean: running.iter().sum::<f64>() / n as f64,
        p50: p.p50,
        p90: p.p90,
        p99: p.p99,
        max: p.max,
        frac_above_10: share(&|x| x > 10.0),
        frac_above_20: share(&|x| x >= 20.0),
        switches_per_s: if seconds > 0.0 { switches as f64 / seconds } else { f64::NAN },
    })
}

/// A recorded trace: run-queue lengths (the observer itself excluded) and per-interval
/// switch rates.
pub struct Trace {
    pub running: Vec<f64>,
    pub rates: Vec<f64>,
    pub switches: u64,
    pub seconds: f64,
}

/// /proc/stat, which every sample reads, could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cannot read /proc/stat")]
pub struct Unreadable;

/// Samples for `duration` every `interval`; stops early (keeping the trace) on Ctrl-C.
pub fn record(duration: Duration, interval: Duration) -> Result<Trace, Unreadable> {
    let (first, _) = oscost_platform::procfs::proc_stat().ok_or(Unreadable)?;
    let start = sys::monotonic_raw_ns();
    let (mut prev_ctxt, mut prev_t) = (first, start);
    let mut t = Trace { running: Vec::new(), rates: Vec::new(), switches: 0, seconds: 0.0 };
    while sys::monotonic_raw_ns() - start < duration.as_nanos() as u64 && !sys::interrupted() {
        std::thread::sleep(interval);
        let (ctxt, running) = oscost_platform::procfs::proc_stat().ok_or(Unreadable)?;
        let now = sys::monotonic_raw_ns();
        // procs_running counts the observer, which is running while it reads.
        t.running.push(running.saturating_sub(1) as f64);
        t.rates.push((ctxt - prev_ctxt) as f64 / ((now - prev_t) as f64 / 1e9));
        t.switches = ctxt - first;
        t.seconds = (now - start) as f64 / 1e9;
        (prev_ctxt, prev_t) = (ctxt, now);
    }
    Ok(t)
}

/// The ids of the rows `observe` stores (beside the benchmarks' ids).
pub const IDS: [&str; 2] = ["observe.runqueue", "observe.switches"];

/// The trace as result rows, stored like a run.
pub fn rows(t: &Trace, interval: Duration) -> Vec<ResultRow> {
    let mut out = Vec::new();
    let iv = interval.as_nanos() as u64;
    if let (Some(s), Some(mut r)) = (
        summarize_trace(&t.running, t.switches, t.seconds),
        ResultRow::from_samples(IDS[0], Method::Workload, "tasks", t.running.clone(), t.running.len() as u64),
    ) {
        r.percentiles = stats::percentiles(&t.running);
        r.counts.insert(Count::FracAbove10, s.frac_above_10);
        r.counts.insert(Count::FracAbove20, s.frac_above_20);
        r.counts.insert(Count::Seconds, t.seconds);
        out.push(r.with_param("interval_ns", iv));
    }
    if let Some(mut r) = ResultRow::from_samples(IDS[1], Method::Workload, "switches/s", t.rates.clone(), t.switches) {
        r.counts.insert(Count::Switches, t.switches as f64);
        r.counts.insert(Count::SwitchesPerSOverall, t.switches as f64 / t.seconds.max(1e-9));
        out.push(r.with_param("interval_ns", iv));
    }
    out
}

/// The trace's statistics in one line, for the terminal.
pub fn summary_line(s: &TraceStats) -> String {
    format!(
        "run queue (excluding the observer): mean {:.2}, p50 {:.0}, p90 {:.0}, p99 {:.0}, max {:.0}; above 10: {:.2}% of the time, 20 or more: {:.2}%; {:.0} switches/s",
        s.mean,
        s.p50,
        s.p90,
        s.p99,
        s.max,
        s.frac_above_10 * 100.0,
        s.frac_above_20 * 100.0,
        s.switches_per_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_statistics_on_a_synthetic_trace() {
        // 100 samples: 80 at 1, 10 at 12, 5 at exactly 20 (counted as 20 or more), 5 at 25.
        let mut v = vec![1.0; 80];
        v.extend(vec![12.0; 10]);
        v.extend(vec![20.0; 5]);
        v.extend(vec![25.0; 5]);
        let s = summarize_trace(&v, 5_000, 2.0).unwrap();
        assert_eq!(s.samples, 100);
        assert!((s.mean - (80.0 + 120.0 + 100.0 + 125.0) / 100.0).abs() < 1e-12);
        assert_eq!(s.p50, 1.0);
        assert_eq!(s.max, 25.0);
        assert!((s.frac_above_10 - 0.2).abs() < 1e-12);
        assert!((s.frac_above_20 - 0.1).abs() < 1e-12);
        assert_eq!(s.switches_per_s, 2_500.0);
        assert!(summarize_trace(&[], 0, 1.0).is_none());
    }

    #[test]
    fn a_short_recording_has_samples() {
        let t = record(Duration::from_millis(50), Duration::from_millis(5)).unwrap();
        assert!(!t.running.is_empty());
        assert_eq!(t.running.len(), t.rates.len());
        assert_eq!(rows(&t, Duration::from_millis(5)).len(), 2);
    }
}
