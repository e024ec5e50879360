//! The yield storm: N threads looping on sched_yield across all CPUs for a fixed time.
//! Reports system-wide context switches per second (the /proc/stat counter behind
//! vmstat's `cs` column), yields per second per task, and how evenly tasks progressed.
//!
//! Timing model: a fixed wall-clock window cut into ten intervals; each interval's
//! system-wide switch rate is one sample. Each task counts its own yields in a word of
//! its own (one relaxed store per yield).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::group::check_limits;
use crate::bench::{Ctx, Output};
use crate::runner::BenchError;
use crate::runner::MeasureConfig;
use crate::tasks::Mode;
use crate::tasks::{Member, TaskGroup};
use oscost_figure::key::{BenchId, Param};
use oscost_figure::model::{Count, Flag, FlagCode, Method, ResultRow};
use oscost_figure::stats;
use oscost_platform::sys;

/// The benchmark's id.
pub const ID: BenchId = BenchId::new("load.yield_storm");
/// The yielding tasks of a row.
pub const TASKS: Param<u64> = Param::new("tasks");

fn yield_counting(m: &Member) -> i32 {
    let c = m.counter();
    let mut n = 0u64;
    while !m.stop_requested() {
        sys::raw_sched_yield();
        n += 1;
        c.store(n, Ordering::Relaxed);
    }
    0
}

/// Evenness of per-task progress: (min/max ratio, Jain's index).
pub fn evenness(per_task: &[f64]) -> (f64, f64) {
    let (lo, hi) = per_task.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    (if hi > 0.0 { lo / hi } else { f64::NAN }, stats::jain_index(per_task))
}

/// The storm's window per task count: twice the batch and per-call budgets.
pub fn window(cfg: &MeasureConfig) -> Duration {
    (cfg.batch_budget + cfg.per_call_budget) * 2
}

pub fn run(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let allowed = sys::allowed_cpus().map_err(|e| BenchError::setup("reading CPU affinity", e))?;
    for &n in &ctx.opts.storm_tasks {
        if let Err(why) = check_limits(Mode::Thread, n, 0) {
            out.skip("load.yield_storm", &format!("tasks={n}"), why.to_string());
            continue;
        }
        let group = TaskGroup::start(Mode::Thread, n, &allowed, None, yield_counting)?;
        let slice = window(ctx.cfg) / 10;
        let mut rates = Vec::with_capacity(10);
        let c0 = group.counters();
        let (mut prev, _) =
            oscost_platform::procfs::proc_stat().ok_or_else(|| BenchError::setup("/proc/stat", "unreadable"))?;
        let mut t_prev = sys::monotonic_raw_ns();
        for _ in 0..10 {
            std::thread::sleep(slice);
            if sys::interrupted() {
                return Err(BenchError::Interrupted);
            }
            let (ctxt, _) =
                oscost_platform::procfs::proc_stat().ok_or_else(|| BenchError::setup("/proc/stat", "unreadable"))?;
            let t = sys::monotonic_raw_ns();
            rates.push((ctxt - prev) as f64 / ((t - t_prev) as f64 / 1e9));
            prev = ctxt;
            t_prev = t;
        }
        let c1 = group.counters();
        let elapsed_s = window(ctx.cfg).as_secs_f64();
        let trace = crate::tracepass::trace_window(ctx.cfg, &group.tasks, || {
            let before: u64 = group.counters().iter().sum();
            std::thread::sleep(crate::tracepass::TRACE_WINDOW);
            Ok(group.counters().iter().sum::<u64>() - before)
        });
        group.finish(|| {})?;
        let per_task: Vec<f64> = c0.iter().zip(&c1).map(|(a, b)| (b - a) as f64 / elapsed_s).collect();
        let (ratio, jain) = evenness(&per_task);
        let total_yields: f64 = per_task.iter().sum::<f64>() * elapsed_s;
        let mut row = ResultRow::from_samples(
            ID,
            Method::Workload,
            oscost_figure::unit::Unit::SwitchesPerSecond,
            rates,
            total_yields as u64,
        )
        .ok_or_else(|| BenchError::Failed("no intervals measured".into()))?
        .with(TASKS, n as u64)
        .with_param("cpus", allowed.len() as u64);
        row.counts.insert(Count::YieldsPerSPerTask, per_task.iter().sum::<f64>() / n as f64);
        row.counts.insert(Count::MinMaxRatio, ratio);
        row.counts.insert(Count::JainIndex, jain);
        crate::bench::attach_trace(&mut row, trace);
        if ratio < 0.5 {
            row.flag(Flag::new(
                FlagCode::Uneven,
                format!("the slowest task made {:.0}% of the fastest one's yields", ratio * 100.0),
            ));
        }
        out.push(row);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evenness_on_known_shares() {
        let (r, j) = evenness(&[10.0, 10.0, 10.0, 10.0]);
        assert_eq!(r, 1.0);
        assert!((j - 1.0).abs() < 1e-12);
        let (r, j) = evenness(&[5.0, 10.0]);
        assert_eq!(r, 0.5);
        assert!((j - 0.9).abs() < 1e-12);
    }
}
