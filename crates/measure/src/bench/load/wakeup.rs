//! Interactivity and fairness under CPU hogs.
//!
//! `load.wakeup` — timing model: one clock_nanosleep of 1 ms by a task pinned to one
//! CPU; the sample is how much later than 1 ms it returned, while K spinning hogs share
//! its CPU at a given nice level. The sleeper's timer slack is set to 1 ns, so the
//! figure is the scheduler's delay, not the 50 µs of timer coalescing every task has
//! by default (`ctx.sleep0` shows that one).
//!
//! `load.fairness` — K spinning tasks with given nice levels share one CPU for a fixed
//! time; each task's share of the CPU time (from `/proc/<pid>/task/<tid>/schedstat`) is
//! compared with the share the kernel's load weights promise.

use crate::bench::{Ctx, Output};
use crate::runner::BenchError;
use crate::tasks::Mode;
use crate::tasks::{AffinityGuard, PeerPlacement};
use crate::tasks::{Member, TaskGroup};
use oscost_figure::model::{Count, Flag, FlagCode, Method, ResultRow};
use oscost_platform::sys;

const PERIOD_NS: u64 = 1_000_000;
/// The CPU hogs beside the sleeper (the crosscheck picks the row without any).
pub const HOGS: oscost_figure::key::Param<u64> = oscost_figure::key::Param::new("hogs");

fn hog(m: &Member) -> i32 {
    let mut x = 0u64;
    while !m.stop_requested() {
        for i in 0..1000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
    }
    0
}

fn lateness_samples(budget_ns: u64) -> Result<Vec<f64>, BenchError> {
    let start = sys::monotonic_raw_ns();
    let mut out = Vec::with_capacity(4096);
    while out.len() < 20 || (sys::monotonic_raw_ns() - start < budget_ns && out.len() < 4096) {
        let t0 = sys::monotonic_raw_ns();
        let r = sys::sleep_ns(PERIOD_NS);
        let t1 = sys::monotonic_raw_ns();
        if r != 0 {
            return Err(if sys::interrupted() {
                BenchError::Interrupted
            } else {
                BenchError::Failed(format!("clock_nanosleep: {}", std::io::Error::from_raw_os_error(-r as i32)))
            });
        }
        out.push((t1 - t0) as f64 - PERIOD_NS as f64);
    }
    Ok(out)
}

pub fn run_wakeup(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let allowed = sys::allowed_cpus().map_err(|e| BenchError::setup("reading CPU affinity", e))?;
    let (cpu, _) = PeerPlacement::SameCpu.cpus(&allowed)?;
    let _pin = AffinityGuard::pin(&cpu)?;
    let _slack = sys::TimerSlack::set(1).map_err(|e| BenchError::setup("setting the timer slack", e))?;
    let budget = (ctx.cfg.batch_budget + ctx.cfg.per_call_budget).as_nanos() as u64;
    let variants: [(usize, i32); 5] = [(0, 0), (1, 0), (4, 0), (1, 19), (4, 19)];
    for (k, nice) in variants {
        let group = if k > 0 { Some(TaskGroup::start(Mode::Thread, k, &cpu, Some(nice), hog)?) } else { None };
        let samples = lateness_samples(budget);
        let mut watched = vec![crate::kcounts::Task::current()];
        watched.extend(group.iter().flat_map(|g| g.tasks.iter().copied()));
        let trace = crate::tracepass::trace_window(ctx.cfg, &watched, || {
            lateness_samples(crate::tracepass::TRACE_WINDOW.as_nanos() as u64)
                .map(|s| s.len() as u64)
                .map_err(Into::into)
        });
        if let Some(g) = group {
            g.finish(|| {})?;
        }
        let samples = samples?;
        let n = samples.len() as u64;
        let mut row =
            ResultRow::from_samples("load.wakeup", Method::PerCall, oscost_figure::unit::Unit::NsLate, samples, n)
                .ok_or_else(|| BenchError::Failed("no wake-ups".into()))?
                .with(HOGS, k as u64)
                .with_param("hog_nice", nice)
                .with_param("period_ns", PERIOD_NS);
        crate::bench::attach_trace(&mut row, trace);
        out.push(row);
    }
    Ok(())
}

/// The kernel's load weight of a nice level (sched_prio_to_weight).
pub fn nice_weight(nice: i32) -> f64 {
    const W: [f64; 40] = [
        88761.0, 71755.0, 56483.0, 46273.0, 36291.0, 29154.0, 23254.0, 18705.0, 14949.0, 11916.0, 9548.0, 7620.0,
        6100.0, 4904.0, 3906.0, 3121.0, 2501.0, 1991.0, 1586.0, 1277.0, 1024.0, 820.0, 655.0, 526.0, 423.0, 335.0,
        272.0, 215.0, 172.0, 137.0, 110.0, 87.0, 70.0, 56.0, 45.0, 36.0, 29.0, 23.0, 18.0, 15.0,
    ];
    W[(nice.clamp(-20, 19) + 20) as usize]
}

/// The CPU shares the weights promise to tasks of the given nice levels.
pub fn promised_shares(nices: &[i32]) -> Vec<f64> {
    let total: f64 = nices.iter().map(|&n| nice_weight(n)).sum();
    nices.iter().map(|&n| nice_weight(n) / total).collect()
}

/// Nice levels for the fairness run: raising nice needs no privilege.
const FAIRNESS_NICES: [i32; 4] = [0, 0, 5, 10];

pub fn run_fairness(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let allowed = sys::allowed_cpus().map_err(|e| BenchError::setup("reading CPU affinity", e))?;
    let (cpu, _) = PeerPlacement::SameCpu.cpus(&allowed)?;
    let nices = FAIRNESS_NICES;
    let promised = promised_shares(&nices);
    // One group per nice level (a group shares one nice value).
    let mut groups = Vec::new();
    for &n in &nices {
        groups.push(TaskGroup::start(Mode::Thread, 1, &cpu, Some(n), hog)?);
    }
    let tasks: Vec<_> = groups.iter().map(|g| g.tasks[0]).collect();
    let window = (ctx.cfg.batch_budget + ctx.cfg.per_call_budget) * 3;
    let rounds = 5;
    let mut shares: Vec<Vec<f64>> = vec![Vec::new(); nices.len()];
    let read =
        || tasks.iter().map(|t| oscost_platform::procfs::task_cpu_ns(t.pid, t.tid).unwrap_or(0)).collect::<Vec<_>>();
    let mut before = read();
    for _ in 0..rounds {
        std::thread::sleep(window / rounds);
        if sys::interrupted() {
            return Err(BenchError::Interrupted);
        }
        let after = read();
        let d: Vec<f64> = after.iter().zip(&before).map(|(a, b)| a.saturating_sub(*b) as f64).collect();
        let total: f64 = d.iter().sum();
        if total > 0.0 {
            for (i, x) in d.iter().enumerate() {
                shares[i].push(x / total);
            }
        }
        before = after;
    }
    let trace = crate::tracepass::trace_window(ctx.cfg, &tasks, || {
        std::thread::sleep(crate::tracepass::TRACE_WINDOW);
        Ok(1)
    });
    for g in groups {
        g.finish(|| {})?;
    }
    let mut trace = Some(trace);
    let mut worst = 0.0f64;
    let mut rows = Vec::new();
    for (i, s) in shares.into_iter().enumerate() {
        let Some(mut row) = ResultRow::from_samples(
            "load.fairness",
            Method::Workload,
            oscost_figure::unit::Unit::Share,
            s,
            rounds as u64,
        ) else {
            return Err(BenchError::Failed("no CPU time was observed".into()));
        };
        let dev = row.median - promised[i];
        worst = worst.max(dev.abs());
        // The group's one trace pass goes with its first row.
        crate::bench::attach_trace(&mut row, trace.take().flatten());
        row.counts.insert(Count::PromisedShare, promised[i]);
        row.counts.insert(Count::Deviation, dev);
        if dev.abs() > 0.05 {
            row.flag(Flag::new(
                FlagCode::Unfair,
                format!("got {:.1}% of the CPU, the weights promise {:.1}%", row.median * 100.0, promised[i] * 100.0),
            ));
        }
        rows.push(row.with_param("task", i as u64).with_param("nice", nices[i]));
    }
    if let Some(last) = rows.last_mut() {
        last.counts.insert(Count::LargestDeviation, worst);
    }
    out.extend(rows);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_and_promised_shares() {
        assert_eq!(nice_weight(0), 1024.0);
        assert_eq!(nice_weight(19), 15.0);
        assert_eq!(nice_weight(-20), 88761.0);
        let p = promised_shares(&[0, 0]);
        assert_eq!(p, vec![0.5, 0.5]);
        let p = promised_shares(&[0, 5]);
        assert!((p[0] - 1024.0 / 1359.0).abs() < 1e-12);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
