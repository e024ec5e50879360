//! Interactivity and fairness under CPU hogs.
//!
//! `load.wakeup` — timing model: cyclictest's. Each sleeper thread, pinned to one CPU
//! with K spinning hogs at a given nice level, sleeps to absolute deadlines a fixed
//! interval apart (clock_nanosleep on CLOCK_MONOTONIC with TIMER_ABSTIME); the sample
//! is how late it read the clock after each deadline. A wake later than a whole
//! interval skips the deadlines it missed, as cyclictest does. The sleepers' timer
//! slack is set to 1 ns, so the figure is the scheduler's delay, not the 50 µs of
//! timer coalescing every task has by default (`ctx.sleep0` shows that one). No
//! warm-up: every wake is a sample, as every cycle is one of cyclictest's, and the
//! first deadline is set after the hogs are running.
//!
//! The knobs are cyclictest's ([`WakeupOptions`]): the interval (`-i`), a SCHED_FIFO
//! priority for the sleepers (`-p`), and the number of sleepers (`-t N -d 0`: one
//! interval for all, all on the one CPU); a row pools every sleeper's wakes.
//!
//! `load.fairness` — K spinning tasks with given nice levels share one CPU for a fixed
//! time; each task's share of the CPU time (from `/proc/<pid>/task/<tid>/schedstat`) is
//! compared with the share the kernel's load weights promise.

use std::time::Duration;

use crate::bench::{Ctx, OptionError, Output};
use crate::runner::BenchError;
use crate::tasks::Mode;
use crate::tasks::PeerPlacement;
use crate::tasks::{Member, TaskGroup};
use oscost_figure::model::{Count, Flag, FlagCode, Method, ResultRow};
use oscost_platform::sys;

/// The CPU hogs beside the sleeper (the crosscheck picks the row without any).
pub const HOGS: oscost_figure::key::Param<u64> = oscost_figure::key::Param::new("hogs");
/// The hogs' nice level.
pub const HOG_NICE: oscost_figure::key::Param<i64> = oscost_figure::key::Param::new("hog_nice");
/// The sleepers' interval, ns, when not the default 1 ms.
pub const INTERVAL: oscost_figure::key::Param<u64> = oscost_figure::key::Param::new("interval_ns");
/// The sleepers, when more than one.
pub const THREADS: oscost_figure::key::Param<u64> = oscost_figure::key::Param::new("threads");
/// The sleepers' SCHED_FIFO priority, when they run real-time.
pub const PRIORITY: oscost_figure::key::Param<u64> = oscost_figure::key::Param::new("priority");

/// The fewest wakes a sleeper takes, whatever the budget.
const MIN_WAKES: usize = 20;
/// The most wakes a sleeper takes in one pass.
const MAX_WAKES: usize = 4096;
/// The shortest and longest interval taken: below 10 µs a sleeper is a spinner with
/// extra steps; above 100 ms its twenty wakes outlast any budget.
pub const INTERVAL_RANGE: std::ops::RangeInclusive<Duration> = Duration::from_micros(10)..=Duration::from_millis(100);
/// The most sleepers taken.
pub const MAX_THREADS: usize = 64;

/// cyclictest's knobs, as `load.wakeup` takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WakeupOptions {
    /// The time between a sleeper's deadlines (`-i`).
    pub interval: Duration,
    /// The sleepers' SCHED_FIFO priority (`-p`); None: SCHED_OTHER, cyclictest's `-p 0`.
    pub priority: Option<u8>,
    /// Sleepers, all on one CPU with one interval (`-t N -d 0`).
    pub threads: usize,
}

impl Default for WakeupOptions {
    fn default() -> Self {
        Self { interval: Duration::from_millis(1), priority: None, threads: 1 }
    }
}

impl WakeupOptions {
    /// The wall time of one pass of the sleepers under a budget: the budget, or the
    /// fewest wakes at a longer interval.
    pub fn pass(&self, budget: Duration) -> Duration {
        budget.max(self.interval * MIN_WAKES as u32)
    }
}

/// Refuses an interval, a sleeper count or a priority `load.wakeup` cannot take, and
/// a priority this process may not set (neither root nor an RLIMIT_RTPRIO that high).
pub fn check(o: &WakeupOptions) -> Result<(), OptionError> {
    if !INTERVAL_RANGE.contains(&o.interval) {
        return Err(OptionError::WakeupInterval(o.interval));
    }
    if o.threads == 0 || o.threads > MAX_THREADS {
        return Err(OptionError::WakeupThreads(o.threads));
    }
    super::group::check_limits(Mode::Thread, o.threads + 4, 0)
        .map_err(|source| OptionError::Limits { option: format!("--wakeup-threads {}", o.threads), source })?;
    if let Some(p) = o.priority {
        let max = sys::max_priority(libc::SCHED_FIFO);
        if p == 0 || i32::from(p) > max {
            return Err(OptionError::WakeupPriority { priority: p, max });
        }
        let limit = sys::rtprio_soft_limit();
        if !sys::is_root() && limit.is_some_and(|l| l < u64::from(p)) {
            return Err(OptionError::RealTimeRefused { priority: p, limit: limit.unwrap_or(0) });
        }
    }
    Ok(())
}

fn hog(m: &Member) -> i32 {
    let mut x = 0u64;
    while !m.stop_requested() {
        for i in 0..1000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
    }
    0
}

/// One sleeper: pinned to `cpu`, at the options' policy, sleeping to deadlines an
/// interval apart for `pass_ns` (and at least [`MIN_WAKES`] wakes); how late each
/// wake read the clock, ns.
fn sleeper(cpu: &[usize], o: &WakeupOptions, pass_ns: u64) -> Result<Vec<f64>, BenchError> {
    sys::set_affinity(cpu).map_err(|e| BenchError::setup("pinning a sleeper", e))?;
    let _slack = sys::TimerSlack::set(1).map_err(|e| BenchError::setup("setting the timer slack", e))?;
    if let Some(p) = o.priority {
        sys::set_policy(libc::SCHED_FIFO, i32::from(p))
            .map_err(|e| BenchError::setup(&format!("taking SCHED_FIFO priority {p}"), e))?;
    }
    let interval = o.interval.as_nanos() as u64;
    // Room for every wake the loop can take (the deadlines in the pass, and one more),
    // so no sample's store reallocates between two sleeps.
    let mut out = Vec::with_capacity(((pass_ns / interval) as usize + 1).clamp(MIN_WAKES, MAX_WAKES));
    let start = sys::monotonic_ns();
    let mut next = start + interval;
    while out.len() < MIN_WAKES || (next - start <= pass_ns && out.len() < MAX_WAKES) {
        let r = sys::sleep_until_ns(next);
        let now = sys::monotonic_ns();
        if r != 0 {
            if sys::interrupted() {
                return Err(BenchError::Interrupted);
            }
            if -r == i64::from(libc::EINTR) {
                continue;
            }
            return Err(BenchError::Failed(format!(
                "clock_nanosleep: {}",
                std::io::Error::from_raw_os_error(-r as i32)
            )));
        }
        out.push(now.saturating_sub(next) as f64);
        next += interval;
        while next <= now {
            next += interval;
        }
    }
    Ok(out)
}

/// Every sleeper's wakes over one pass, pooled; each sleeper is a thread of its own,
/// so the worker's own policy and slack are left as they were.
fn sleepers(cpu: &[usize], o: &WakeupOptions, pass_ns: u64) -> Result<Vec<f64>, BenchError> {
    std::thread::scope(|s| {
        let running: Vec<_> = (0..o.threads).map(|_| s.spawn(|| sleeper(cpu, o, pass_ns))).collect();
        let mut all = Vec::new();
        for r in running {
            all.extend(r.join().map_err(|_| BenchError::Failed("a sleeper thread panicked".into()))??);
        }
        Ok(all)
    })
}

/// Whether this thread may take the options' real-time priority, tried on a thread of
/// its own: the check before measuring reads the limits, but a root without
/// CAP_SYS_NICE (a container) is refused all the same.
fn priority_refused(o: &WakeupOptions) -> Option<String> {
    let p = o.priority?;
    let tried = std::thread::spawn(move || sys::set_policy(libc::SCHED_FIFO, i32::from(p))).join();
    match tried {
        Ok(Ok(())) => None,
        Ok(Err(e)) => {
            Some(format!("SCHED_FIFO priority {p} was refused ({e}): it needs CAP_SYS_NICE or RLIMIT_RTPRIO ≥ {p}"))
        }
        Err(_) => Some("the thread trying the priority panicked".into()),
    }
}

pub fn run_wakeup(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let o = ctx.opts.wakeup;
    if let Some(why) = priority_refused(&o) {
        out.skip("load.wakeup", &format!("priority={}", o.priority.unwrap_or(0)), why);
        return Ok(());
    }
    let allowed = sys::allowed_cpus().map_err(|e| BenchError::setup("reading CPU affinity", e))?;
    let (cpu, _) = PeerPlacement::SameCpu.cpus(&allowed)?;
    let pass = o.pass(ctx.cfg.batch_budget + ctx.cfg.per_call_budget).as_nanos() as u64;
    let variants: [(usize, i32); 5] = [(0, 0), (1, 0), (4, 0), (1, 19), (4, 19)];
    for (k, nice) in variants {
        let group = if k > 0 { Some(TaskGroup::start(Mode::Thread, k, &cpu, Some(nice), hog)?) } else { None };
        let samples = sleepers(&cpu, &o, pass);
        let mut watched = vec![crate::kcounts::Task::current()];
        watched.extend(group.iter().flat_map(|g| g.tasks.iter().copied()));
        let trace = crate::tracepass::trace_window_following(ctx.cfg, &watched, || {
            sleepers(&cpu, &o, crate::tracepass::TRACE_WINDOW.as_nanos() as u64)
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
                .with(HOG_NICE, i64::from(nice));
        // cyclictest's defaults are left unwritten (as absent parameters match them),
        // so the default rows read as short as they always did.
        if o.interval != WakeupOptions::default().interval {
            row = row.with(INTERVAL, o.interval.as_nanos() as u64);
        }
        if o.threads > 1 {
            row = row.with(THREADS, o.threads as u64);
        }
        if let Some(p) = o.priority {
            row = row.with(PRIORITY, u64::from(p));
        }
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
