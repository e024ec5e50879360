//! The scheduler laboratory's charts in a report: each published curve of the
//! founding texts on one chart with the simulated ones (every profile of the run) and,
//! where this machine can measure it, today's kernel. A view, since it names the
//! simulator's workloads, a family's benchmark and their parameters.

use crate::key::{BenchId, Param, Params};
use crate::model::{Method, ResultRow};
use crate::report::charts::{Point, Series, XAxis, line_chart};
use crate::sim::run::{FIGURE, MODE, POLICY, SIMULATED};
use crate::sim::{PolicyKind, WorkloadKind};
use crate::tasks::Mode;
use crate::unit::Unit;

/// The series of a sweep: `id`'s batch rows grouped by the name `key` gives, each
/// point at the x `key` gives, with its interval and flags.
fn series_by<F: Fn(&ResultRow) -> Option<(String, f64)>>(rows: &[ResultRow], id: &BenchId, key: F) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for r in rows.iter().filter(|r| r.benchmark == *id && r.method == Method::Batch) {
        let Some((name, x)) = key(r) else { continue };
        let p = Point::of_row(x, r);
        match out.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(p),
            None => out.push(Series { name, points: vec![p] }),
        }
    }
    out
}

/// The simulated rows' profiles, as their rows name them (`profile NAME`), in order.
fn sim_profiles(results: &[ResultRow]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in results.iter().filter(|r| crate::sim::run::is_simulated(r)) {
        let p = r.params.get(crate::sim::run::SIMULATED).unwrap_or_default().to_string();
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Which simulated rows a series takes: a policy's, and where given one mode's (a
/// missing mode is process, as the simulator leaves it) and one figure's.
struct Want<'a> {
    policy: PolicyKind,
    mode: Option<Mode>,
    figure: Option<&'a str>,
}

impl Want<'_> {
    /// The parameters a row must carry.
    fn params(&self) -> Params {
        let mut p = Params::new().with(POLICY, self.policy.name());
        if let Some(m) = self.mode {
            p.set(MODE, m.as_str());
        }
        if let Some(f) = self.figure {
            p.set(FIGURE, f);
        }
        p
    }
}

/// A simulated series of `workload` under `profile`, against the parameter `x`, for
/// the rows `want` takes.
fn sim_series(results: &[ResultRow], workload: WorkloadKind, profile: &str, x: Param<u64>, want: Want) -> Vec<Point> {
    let id = workload.id();
    let (want, defaults) = (want.params(), crate::sim::run::unwritten_defaults());
    let mut pts: Vec<Point> = results
        .iter()
        .filter(|r| r.benchmark == id && r.params.get(SIMULATED).unwrap_or_default() == profile)
        .filter(|r| r.params.matches_with_defaults(&want, &defaults))
        .filter_map(|r| Some(Point::of_row(r.params.get(x)? as f64, r)))
        .collect();
    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    pts
}

/// The laboratory's charts: each published curve on one chart with the simulated ones
/// (every profile of the run) and, where this machine can measure it, today's kernel.
pub fn charts(results: &[ResultRow]) -> String {
    let mut h = String::new();
    let profiles = sim_profiles(results);
    let has = |w: WorkloadKind| results.iter().any(|r| r.benchmark == w.id());
    if has(WorkloadKind::Travis) {
        for (row, policy, mode) in [
            ("Linux before change process switch", PolicyKind::Linux20, Mode::Process),
            ("Linux before change thread switch", PolicyKind::Linux20, Mode::Thread),
            ("Linux after change process switch", PolicyKind::Linux20YieldFix, Mode::Process),
            ("Linux after change thread switch", PolicyKind::Linux20YieldFix, Mode::Thread),
        ] {
            let published =
                crate::published::table2_row(row).into_iter().map(|(n, us)| Point::bare(n, us * 1000.0)).collect();
            let mut series = vec![Series { name: "published (Appleton 1999)".into(), points: published }];
            for p in &profiles {
                let want = Want { policy, mode: Some(mode), figure: Some("time per switch") };
                let pts = sim_series(results, WorkloadKind::Travis, p, crate::sim::run::TASKS, want);
                if !pts.is_empty() {
                    series.push(Series { name: format!("simulated, {p}"), points: pts });
                }
            }
            if policy == PolicyKind::Linux20 {
                let here = series_by(results, &crate::bench::load::runqueue::ID, |r| {
                    use crate::bench::load::runqueue::{DESIGN, Design, TASKS};
                    (r.params.get(DESIGN) == Some(Design::Yield.as_str())
                        && r.params.get(Mode::PARAM) == Some(mode.as_str()))
                    .then(|| Some(("measured here (today's kernel)".to_string(), r.params.get(TASKS)? as f64)))
                    .flatten()
                });
                series.extend(here);
            }
            h.push_str(&line_chart(
                &format!("Table 2, {row}: time per switch against contexts"),
                "contexts in the run queue",
                &Unit::NsPerSwitch,
                XAxis::Linear,
                &series,
            ));
        }
    }
    if has(WorkloadKind::LoopYield) {
        for (label, policy, column) in
            [("old scheduler (2.4)", PolicyKind::Linux24, "old"), ("O(1)", crate::sim::suites::MOLNAR_O1, "O(1)")]
        {
            let published =
                [(2.0, "2-CPU", "4 instances of ./loop_yield"), (8.0, "8-CPU", "16 instances of ./loop_yield")]
                    .iter()
                    .filter_map(|&(cpus, system, row)| {
                        let v = crate::published::mean_of_runs("molnar02 loop_yield", system, row, column)?;
                        Some(Point::bare(cpus, v))
                    })
                    .collect();
            let mut series = vec![Series { name: "published (Molnar 2002)".into(), points: published }];
            for p in &profiles {
                let want = Want { policy, mode: None, figure: None };
                let pts = sim_series(results, WorkloadKind::LoopYield, p, crate::sim::run::CPUS, want);
                if !pts.is_empty() {
                    series.push(Series { name: format!("simulated, {p}"), points: pts });
                }
            }
            h.push_str(&line_chart(
                &format!("loop_yield, {label}: context switches per second against CPUs"),
                "CPUs",
                &Unit::SwitchesPerSecond,
                XAxis::Log2Count,
                &series,
            ));
        }
    }
    h
}
