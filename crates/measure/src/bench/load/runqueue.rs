//! Switch time against the number of runnable tasks, all pinned to one CPU, in the two
//! classic designs: (a) N tasks looping on sched_yield (the measuring task is one of
//! them), (b) a token passed around a ring of N tasks through N pipes (lmbench
//! lat_ctx). Figures are per switch the kernel counted, so a design whose loop did not
//! switch cannot report a fast "switch".

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use super::group::check_limits;
use crate::bench::ctx::channel;
use crate::bench::{Ctx, Output, rows_from};
use crate::runner::{BenchError, MeasureConfig, NoArg, Probe, Watch};
use crate::tasks::Mode;
use crate::tasks::{AffinityGuard, PeerPlacement};
use crate::tasks::{ExitWatch, Member, TaskGroup};
use crate::tracepass::measure;
use oscost_figure::key::{BenchId, FigureKey, Param, Params, Text};
use oscost_figure::model::{Count, Flag, FlagCode, Method, ResultRow};
use oscost_figure::stats;
use oscost_platform::sys;

/// The benchmark's id.
pub const ID: BenchId = BenchId::new("load.runqueue");
/// The design of a point (`yield`, `ring`).
pub const DESIGN: Param<Text> = Param::new("design");
/// The runnable tasks of a point.
pub const TASKS: Param<u64> = Param::new("tasks");

/// The two classic designs the sweep measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// N tasks looping on sched_yield.
    Yield,
    /// A token passed around a ring of N tasks through N pipes.
    Ring,
}

impl Design {
    pub fn as_str(self) -> &'static str {
        match self {
            Design::Yield => "yield",
            Design::Ring => "ring",
        }
    }
}

/// The key of the sweep's batch row at `tasks` runnable tasks of `design` in `mode`:
/// how a reader (the simulator's `live` profile) asks for a point, not by its text.
pub fn point_key(tasks: u64, mode: Mode, design: Design) -> FigureKey {
    FigureKey::new(ID, Method::Batch, point_params(tasks, mode, design))
}

/// The parameters every row of a point carries: how a reader selects a point's rows,
/// whatever their method.
pub fn point_params(tasks: u64, mode: Mode, design: Design) -> Params {
    Params::new().with(DESIGN, design.as_str()).with(Mode::PARAM, mode.as_str()).with(TASKS, tasks)
}

const TOKEN: u8 = 1;
const POISON: u8 = 0xff;

/// The measuring task's lap of the ring: pass the token on, wait for it to come round.
struct RingLap {
    to_next: RawFd,
    from_last: RawFd,
    buf: [u8; 1],
}

impl Probe for RingLap {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        self.buf[0] = TOKEN;
        let w = channel::one_byte(sys::raw_write(self.to_next, &self.buf));
        if w != 0 {
            return w;
        }
        let r = channel::one_byte(sys::raw_read(self.from_last, &mut self.buf));
        if r != 0 {
            return r;
        }
        if self.buf[0] == TOKEN { 0 } else { channel::POISONED }
    }
    fn describe(&self, code: i64) -> String {
        channel::describe(code)
    }
}

/// A ring member: receive, forward; on stop forward once more and leave. Raw calls only.
fn ring_member(m: &Member, fds: &[(RawFd, RawFd)]) -> i32 {
    let (rd, wr) = fds[m.index()];
    let mut buf = [0u8; 1];
    loop {
        if sys::raw_read(rd, &mut buf) != 1 {
            return 1;
        }
        if buf[0] == POISON {
            sys::raw_write(wr, &buf);
            return 4;
        }
        let stop = m.stop_requested();
        if sys::raw_write(wr, &buf) != 1 {
            return 2;
        }
        if stop {
            return 0;
        }
    }
}

/// A yielding member: sched_yield until asked to stop.
fn yield_member(m: &Member) -> i32 {
    while !m.stop_requested() {
        sys::raw_sched_yield();
    }
    0
}

/// The growth of a curve, in words a reader can use.
#[derive(Debug, Clone, PartialEq)]
pub struct Growth {
    /// `flat`, `log`, `linear`, or `unclear` (no trend the data support).
    pub kind: &'static str,
    /// The better fit's slope: ns per added task (y~N) or per doubling (y~log2 N).
    pub slope: f64,
    /// The slope's 95% interval (Student t over the points' residuals).
    pub ci: (f64, f64),
    pub statement: String,
}

/// How much of the points' spread a fit must explain before its trend is stated.
pub const MIN_R_SQUARED: f64 = 0.5;

/// Classifies y against N: flat when the largest value is within 25% of the smallest;
/// else a trend along whichever of y~N and y~log2 N fits better, stated only when the
/// slope's interval excludes zero and the fit explains at least half the spread,
/// otherwise "no clear trend". The slope and its interval are kept either way.
pub fn classify_growth(ns: &[f64], ys: &[f64]) -> Option<Growth> {
    if ns.len() < 3 || ns.len() != ys.len() {
        return None;
    }
    let (lo, hi) = ys.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &y| (a.min(y), b.max(y)));
    let (n0, n1) = (ns[0], ns[ns.len() - 1]);
    let range = format!("{lo:.0}–{hi:.0} ns per switch from {n0} to {n1} runnable tasks");
    let lin = stats::linear_fit(ns, ys)?;
    let logs: Vec<f64> = ns.iter().map(|n| n.log2()).collect();
    let log = stats::linear_fit(&logs, ys)?;
    let (kind, fit, per) = if lin.r_squared >= log.r_squared {
        ("linear", lin, "for each added task")
    } else {
        ("log", log, "per doubling of tasks")
    };
    let half = stats::nested::t975(ns.len() - 2) * fit.slope_stderr;
    let ci = (fit.slope - half, fit.slope + half);
    let slope = format!("{:+.2} ns per switch {per} [{:+.2}, {:+.2}]", fit.slope, ci.0, ci.1);
    let (kind, statement) = if hi <= 1.25 * lo {
        ("flat", format!("flat: {range}"))
    } else if (ci.0 > 0.0 || ci.1 < 0.0) && fit.r_squared >= MIN_R_SQUARED {
        let verb = if fit.slope >= 0.0 { "grows" } else { "shrinks" };
        let how = if kind == "linear" { "linearly" } else { "with log N" };
        (kind, format!("{verb} {how}: {slope} (r² {:.2}; {range})", fit.r_squared))
    } else {
        (
            "unclear",
            format!("no clear trend: {range} (the better fit, {kind}, explains r² {:.2}: {slope})", fit.r_squared),
        )
    };
    Some(Growth { kind, slope: fit.slope, ci, statement })
}

/// Sweep budgets: each point is short; there are many.
fn sweep_config(cfg: &MeasureConfig) -> MeasureConfig {
    MeasureConfig {
        batch_budget: cfg.batch_budget / 2,
        per_call_budget: cfg.per_call_budget / 2,
        min_batches: 5,
        ..cfg.clone()
    }
}

fn pipes(n: usize) -> Result<Vec<(OwnedFd, OwnedFd)>, BenchError> {
    (0..n).map(|_| sys::pipe().map_err(|e| BenchError::setup("ring pipes", e))).collect()
}

/// One point: N tasks of `design` in `mode`, all on `cpu`.
fn point(ctx: &Ctx, design: Design, mode: Mode, n: usize, cpu: &[usize]) -> Result<ResultRow, BenchError> {
    let cfg = sweep_config(ctx.cfg);
    let watch_peers =
        |g: &TaskGroup| Watch { peers: g.tasks.clone(), hardware: false, per_call: false, one_cpu: false };
    let m = if design == Design::Ring {
        // pipe[i] feeds task i; the measuring task is task 0.
        let p = pipes(n)?;
        let fds: Arc<Vec<(RawFd, RawFd)>> =
            Arc::new((1..n).map(|i| (p[i].0.as_raw_fd(), p[(i + 1) % n].1.as_raw_fd())).collect());
        let group = TaskGroup::start(mode, n - 1, cpu, None, move |m| ring_member(m, &fds))?;
        let poison_fd = p[0].1.try_clone().map_err(|e| BenchError::setup("dup", e))?;
        let _watch = ExitWatch::start(&group.pids(), move || {
            sys::raw_write(poison_fd.as_raw_fd(), &[POISON]);
        });
        let mut lap = RingLap { to_next: p[1 % n].1.as_raw_fd(), from_last: p[0].0.as_raw_fd(), buf: [0] };
        let measured = measure(&mut lap, &cfg, ctx.calib, &watch_peers(&group));
        let to_next = p[1 % n].1.as_raw_fd();
        let stopped = group.finish(|| {
            sys::raw_write(to_next, &[TOKEN]);
        });
        let m = measured?;
        stopped?;
        m
    } else {
        let group = TaskGroup::start(mode, n - 1, cpu, None, yield_member)?;
        let measured = measure(&mut NoArg(sys::raw_sched_yield), &cfg, ctx.calib, &watch_peers(&group));
        let stopped = group.finish(|| {});
        let m = measured?;
        stopped?;
        m
    };
    let switches = m.counts.get(&Count::Switches).copied().unwrap_or(0.0);
    let per_iter = switches / m.counted_iterations.max(1) as f64;
    if per_iter <= 0.0 {
        return Err(BenchError::Failed(format!(
            "no switches observed with {n} tasks ({}, {})",
            design.as_str(),
            mode.as_str()
        )));
    }
    let mut rows = rows_from(&ID, &m, oscost_figure::unit::Unit::NsPerSwitch, per_iter, ctx.calib);
    let mut row = rows.remove(0);
    row.counts.insert(Count::SwitchesPerIteration, per_iter);
    if design == Design::Ring && per_iter < 0.9 * n as f64 {
        row.flag(Flag::new(
            FlagCode::TooFewSwitches,
            format!("a lap of {n} tasks on one CPU needs {n} switches; {per_iter:.1} were observed"),
        ));
    }
    for (name, value) in &point_params(n as u64, mode, design) {
        row.params.insert(name.clone(), value.clone());
    }
    Ok(row)
}

pub fn run(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let allowed = sys::allowed_cpus().map_err(|e| BenchError::setup("reading CPU affinity", e))?;
    let (cpu, _) = PeerPlacement::SameCpu.cpus(&allowed)?;
    let _pin = AffinityGuard::pin(&cpu)?;
    let sizes: Vec<usize> = ctx.opts.tasks.iter().copied().filter(|&n| n >= 2).collect();
    for design in [Design::Yield, Design::Ring] {
        for mode in [Mode::Thread, Mode::Process] {
            let mut curve = Vec::new();
            for &n in &sizes {
                if let Err(why) = check_limits(mode, n, if design == Design::Ring { 2 } else { 0 }) {
                    out.skip(
                        &ID,
                        &format!("design={} mode={} tasks={n}", design.as_str(), mode.as_str()),
                        why.to_string(),
                    );
                    continue;
                }
                let row = point(ctx, design, mode, n, &cpu)?;
                curve.push((n as f64, row.median));
                out.push(row);
            }
            let (ns, ys): (Vec<f64>, Vec<f64>) = curve.into_iter().unzip();
            if let Some(g) = classify_growth(&ns, &ys)
                && let Some(mut fit) = ResultRow::from_samples(
                    &ID,
                    Method::Fit,
                    oscost_figure::unit::Unit::NsPerSwitch,
                    vec![g.slope],
                    ns.len() as u64,
                )
            {
                fit.samples.clear();
                fit.n = ns.len();
                (fit.ci_low, fit.ci_high) = g.ci;
                let mut fit =
                    fit.with(DESIGN, design.as_str()).with(Mode::PARAM, mode.as_str()).with_param("growth", g.kind);
                fit.params.set(oscost_figure::key::STATEMENT, g.statement);
                out.push(fit);
            }
        }
    }
    Ok(())
}

/// The sweep's chart: time per switch against runnable tasks, a series per design and
/// mode (the parameters this module writes on every row).
pub const SWEEP: oscost_figure::sweep::SweepSpec = oscost_figure::sweep::SweepSpec {
    benchmark: ID,
    title: "Run-queue sweep: time per switch against runnable tasks",
    x_title: "runnable tasks (log scale)",
    x_axis: oscost_figure::sweep::XAxis::Log2Count,
    unit: oscost_figure::unit::Unit::NsPerSwitch,
    place: |r| {
        let x = r.params.get(TASKS)? as f64;
        Some((format!("{} {}", r.params.get(DESIGN).unwrap_or(""), r.params.get(Mode::PARAM).unwrap_or("")), x))
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_classified_on_synthetic_curves() {
        let ns = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0];
        let flat: Vec<f64> = ns.iter().map(|_| 1000.0).collect();
        assert_eq!(classify_growth(&ns, &flat).unwrap().kind, "flat");
        let lin: Vec<f64> = ns.iter().map(|n| 1000.0 + 3.0 * n).collect();
        let g = classify_growth(&ns, &lin).unwrap();
        assert_eq!(g.kind, "linear");
        assert!((g.slope - 3.0).abs() < 1e-6);
        assert!(g.ci.0 <= g.slope && g.slope <= g.ci.1);
        let log: Vec<f64> = ns.iter().map(|n| 1000.0 + 200.0 * n.log2()).collect();
        let g = classify_growth(&ns, &log).unwrap();
        assert_eq!(g.kind, "log");
        assert!((g.slope - 200.0).abs() < 1e-6);
        assert!(g.statement.contains("doubling"));
        assert!(classify_growth(&ns[..2], &lin[..2]).is_none());
    }

    /// A trend is stated only where the data support it: noise around a level (r² 0.12
    /// here) gives "no clear trend", not "grows linearly", with the slope's interval
    /// reaching zero; a real slope under the same noise is still found.
    #[test]
    fn no_trend_is_stated_on_noise_and_a_real_one_is_found_through_it() {
        let ns = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0];
        let noise = [0.0, 300.0, -250.0, 280.0, -300.0, 260.0, -280.0, 240.0, -260.0, 290.0];
        let level: Vec<f64> = noise.iter().map(|e| 1000.0 + e).collect();
        let g = classify_growth(&ns, &level).unwrap();
        assert_eq!(g.kind, "unclear", "{}", g.statement);
        assert!(g.statement.starts_with("no clear trend") && g.ci.0 < 0.0 && g.ci.1 > 0.0, "{g:?}");
        let rising: Vec<f64> = ns.iter().zip(&noise).map(|(n, e)| 1000.0 + 5.0 * n + e).collect();
        let g = classify_growth(&ns, &rising).unwrap();
        assert_eq!(g.kind, "linear", "{}", g.statement);
        assert!(g.ci.0 > 0.0 && g.statement.starts_with("grows linearly"), "{g:?}");
    }

    #[test]
    fn a_dead_ring_member_fails_the_lap_and_is_reaped() {
        let n = 4;
        let p = pipes(n).unwrap();
        let fds: Arc<Vec<(RawFd, RawFd)>> =
            Arc::new((1..n).map(|i| (p[i].0.as_raw_fd(), p[(i + 1) % n].1.as_raw_fd())).collect());
        let cpus = sys::allowed_cpus().unwrap();
        let group = TaskGroup::start(Mode::Process, n - 1, &cpus, None, move |m| ring_member(m, &fds)).unwrap();
        let poison_fd = p[0].1.try_clone().unwrap();
        let watch = ExitWatch::start(&group.pids(), move || {
            sys::raw_write(poison_fd.as_raw_fd(), &[POISON]);
        });
        let mut lap = RingLap { to_next: p[1].1.as_raw_fd(), from_last: p[0].0.as_raw_fd(), buf: [0] };
        assert_eq!(lap.once(), 0);
        let pids = group.pids();
        sys::kill_hard(pids[1]);
        assert_ne!(lap.once(), 0, "a lap through a dead member fails instead of hanging");
        drop(watch);
        assert!(group.finish(|| {}).is_err());
        let left = oscost_platform::procfs::live_children();
        assert!(pids.iter().all(|p| !left.contains(p)), "all members reaped");
    }
}
