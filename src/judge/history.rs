//! A figure's history: its run medians over the stored runs, in the order they were
//! measured, split where the level moved (`stats::changepoint`), each change
//! annotated with its size, its interval and the comparability-key fields that
//! changed with it (a kernel, microcode, a mitigation, a governor, a new oscost).
//!
//! A figure is a benchmark, its variant (the parameters that tell variants apart)
//! and its method, as `compare` matches them. Only complete measured runs count: an
//! interrupted run's figures are partial, and simulated or traced runs are not
//! measurements of the same kind. The noise that sets the penalty is the series' own
//! run-to-run noise, raised to what the runs' own intervals say a median can resolve
//! when the series is quieter than that (by chance, or too short to tell).

use serde::Serialize;

use crate::machine::{KeyChange, Machine, key_changes};
use crate::model::{FigureKey, ResultRow, RunDocument, RunKind, RunStatus};
use crate::stats::changepoint;
use crate::unit::Unit;

/// How runs are split into separate series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Stratum {
    /// One series per host.
    Host,
    /// One series per comparability key: no series mixes kernels, settings or
    /// machines, so its changes are the ones the key does not explain.
    Key,
}

/// One run's figure in a series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub run_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_uuid: Option<String>,
    pub started_at: String,
    pub host: String,
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Whether a flag of the run doubts this figure.
    pub flagged: bool,
    /// The run's first flag on this figure that withholds a verdict
    /// (`FlagCode::withholds_verdict`): a change beside it is not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doubt: Option<&'static str>,
}

/// Where a series' level moved: the first run of the new segment, the segments'
/// medians either side, their ratio with its interval, and what changed in the
/// comparability key between the two segments' runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Index of the first point of the new segment.
    pub index: usize,
    pub run_id: i64,
    pub started_at: String,
    pub runs_before: usize,
    pub runs_after: usize,
    pub median_before: f64,
    pub median_after: f64,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub key_changes: Vec<KeyChange>,
    /// A flag on the run just before the change or the first after it that doubts
    /// the figure there: the change is shown, and no gate fails on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doubted: Option<&'static str>,
}

/// A figure's series in one stratum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    #[serde(flatten)]
    pub key: FigureKey,
    pub unit: Unit,
    /// The stratum's name (`host=…`, `key 2: kernel=…`), when runs were split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stratum: Option<String>,
    pub points: Vec<Point>,
    /// The run-to-run noise that set the penalty (a standard deviation of log
    /// medians), or None when the series is too short to measure it.
    pub noise: Option<f64>,
    pub changes: Vec<Change>,
}

impl Series {
    /// The figure's name: benchmark, variant and method.
    pub fn figure(&self) -> String {
        self.key.figure()
    }

    /// The changes among the newest `recent` runs (all of them when None).
    pub fn recent_changes(&self, recent: Option<usize>) -> impl Iterator<Item = &Change> {
        let from = recent.map_or(0, |r| self.points.len().saturating_sub(r));
        self.changes.iter().filter(move |c| c.index >= from)
    }
}

/// The runs a history reads: complete measured runs, oldest first.
pub fn eligible(runs: Vec<RunDocument>) -> Vec<RunDocument> {
    complete_of(runs, &[RunKind::Measure])
}

/// The complete runs of `kinds`, oldest first.
pub fn complete_of(mut runs: Vec<RunDocument>, kinds: &[RunKind]) -> Vec<RunDocument> {
    runs.retain(|d| kinds.contains(&d.run.kind) && d.run.status == RunStatus::Complete);
    runs.sort_by(|a, b| a.run.started_at.cmp(&b.run.started_at).then(a.run.id.cmp(&b.run.id)));
    runs
}

/// The series of every figure `wanted` accepts, over `runs` (oldest first), split by
/// `by`, in the order figures first appear.
pub fn build(runs: &[RunDocument], by: Option<Stratum>, wanted: impl Fn(&ResultRow) -> bool) -> Vec<Series> {
    let strata = strata(runs, by);
    let mut out: Vec<Series> = Vec::new();
    let mut machines: Vec<Vec<&Machine>> = Vec::new();
    for (doc, stratum) in runs.iter().zip(&strata) {
        for r in doc.results.iter().filter(|r| wanted(r) && r.median.is_finite() && r.median > 0.0) {
            let key = r.key();
            let at = out.iter().position(|s| s.key == key && s.stratum == *stratum);
            let i = at.unwrap_or_else(|| {
                out.push(Series {
                    key,
                    unit: r.unit.clone(),
                    stratum: stratum.clone(),
                    points: Vec::new(),
                    noise: None,
                    changes: Vec::new(),
                });
                machines.push(Vec::new());
                out.len() - 1
            });
            out[i].points.push(point(doc, r));
            machines[i].push(&doc.machine);
        }
    }
    for (s, m) in out.iter_mut().zip(&machines) {
        annotate(s, m);
    }
    out
}

fn point(doc: &RunDocument, r: &ResultRow) -> Point {
    let (ci_low, ci_high) = r.interval().unwrap_or((f64::NAN, f64::NAN));
    Point {
        run_id: doc.run.id,
        run_uuid: doc.run.uuid.clone(),
        started_at: doc.run.started_at.clone(),
        host: doc.machine.hostname.clone(),
        median: r.median,
        ci_low,
        ci_high,
        flagged: r.flags.iter().any(|f| f.flag.doubts_figure()),
        doubt: r.flags.iter().map(|f| f.flag).find(|f| f.withholds_verdict()).map(|f| f.as_str()),
    }
}

/// Each run's stratum name under `by`.
fn strata(runs: &[RunDocument], by: Option<Stratum>) -> Vec<Option<String>> {
    match by {
        None => vec![None; runs.len()],
        Some(Stratum::Host) => runs.iter().map(|d| Some(format!("host={}", d.machine.hostname))).collect(),
        Some(Stratum::Key) => {
            let mut keys: Vec<Vec<(String, String)>> = Vec::new();
            let first = runs.first().map(|d| &d.machine);
            runs.iter()
                .map(|d| {
                    let key = d.machine.comparability_key();
                    let n = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                        keys.push(key);
                        keys.len() - 1
                    });
                    // Named by how it differs from the first run's key.
                    let differs: Vec<String> = first
                        .map(|f| key_changes(&[f], &[&d.machine]))
                        .unwrap_or_default()
                        .into_iter()
                        .map(|c| format!("{}={}", c.field, c.after.join("|")))
                        .collect();
                    let what = if differs.is_empty() { "the first run's".to_string() } else { differs.join(", ") };
                    Some(format!("key {}: {what}", n + 1))
                })
                .collect()
        }
    }
}

/// The series' noise and changes.
fn annotate(s: &mut Series, machines: &[&Machine]) {
    let logs: Vec<f64> = s.points.iter().map(|p| p.median.ln()).collect();
    let Some(between) = changepoint::run_to_run_sigma(&logs) else { return };
    let sigma = between.max(resolvable(&s.points));
    s.noise = Some(sigma);
    let cps = changepoint::change_points(&logs, sigma);
    let bounds: Vec<usize> = std::iter::once(0).chain(cps.iter().copied()).chain([logs.len()]).collect();
    s.changes = bounds
        .windows(3)
        .map(|w| {
            let (before, after) = (w[0]..w[1], w[1]..w[2]);
            let shift = changepoint::shift(&logs[before.clone()], &logs[after.clone()], sigma);
            let at = &s.points[w[1]];
            Change {
                index: w[1],
                run_id: at.run_id,
                started_at: at.started_at.clone(),
                runs_before: before.len(),
                runs_after: after.len(),
                median_before: crate::stats::median(&logs[before.clone()]).exp(),
                median_after: crate::stats::median(&logs[after.clone()]).exp(),
                ratio: shift.ratio,
                ci_low: shift.ci_low,
                ci_high: shift.ci_high,
                key_changes: key_changes(&machines[before], &machines[after]),
                doubted: s.points[w[1] - 1].doubt.or(at.doubt),
            }
        })
        .collect();
}

/// What the runs' own 95% intervals say one median can resolve, as a standard
/// deviation of its log (the median over runs; 0 when no run has an interval): the
/// run-to-run noise cannot be smaller than the noise inside each run.
fn resolvable(points: &[Point]) -> f64 {
    let widths: Vec<f64> = points.iter().filter_map(|p| crate::stats::power::log_se(p.ci_low, p.ci_high)).collect();
    if widths.is_empty() { 0.0 } else { crate::stats::median(&widths) }
}

/// Whether `r` is one of the figures `spec` names: a benchmark id or family (`ctx`,
/// `ctx.pipe`), then any of its `key=value` parameters.
pub fn matches(spec: &str, r: &ResultRow) -> bool {
    let mut words = spec.split_whitespace();
    let Some(id) = words.next() else { return true };
    let family = r.benchmark.split('.').next().unwrap_or_default();
    let params = r.variant_params();
    (r.benchmark == id || family == id) && words.all(|w| params.iter().any(|p| p == w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Method;
    use crate::stats::SplitMix64;
    use crate::stats::nested::normal;

    fn run(id: i64, median: f64, kernel: &str, host: &str) -> RunDocument {
        let mut m = Machine::example();
        m.kernel_release = kernel.into();
        m.hostname = host.into();
        let r = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", vec![median; 5], 5).unwrap();
        let mut d = RunDocument::for_tests(id, m, vec![r]);
        d.run.started_at = format!("2026-11-{:02}T03:00:00Z", id);
        d
    }

    /// Twenty runs with 2% noise, 10% slower from the eleventh, when the kernel
    /// changed.
    fn stepped() -> Vec<RunDocument> {
        let mut rng = SplitMix64::new(5);
        (1..=20)
            .map(|i| {
                let level = if i > 10 { 110.0 } else { 100.0 };
                run(i, level * (0.02 * normal(&mut rng)).exp(), if i > 10 { "6.2.0" } else { "6.1.0" }, "h")
            })
            .collect()
    }

    #[test]
    fn a_step_is_found_where_it_is_and_named_by_what_changed() {
        let series = build(&stepped(), None, |_| true);
        assert_eq!(series.len(), 1);
        let s = &series[0];
        assert_eq!(s.points.len(), 20);
        assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
        let c = &s.changes[0];
        assert!(c.index.abs_diff(10) <= 1, "{c:?}");
        assert!(c.ratio > 1.05 && c.ratio < 1.15 && c.ci_low < c.ratio && c.ratio < c.ci_high, "{c:?}");
        let fields: Vec<&str> = c.key_changes.iter().map(|k| k.field.as_str()).collect();
        assert_eq!(fields, ["kernel"]);
        assert_eq!(s.recent_changes(Some(5)).count(), 0, "the change is older than the newest five runs");
        assert_eq!(s.recent_changes(Some(11)).count(), 1);
    }

    /// A change beside a run the tool doubts (intruded hand-offs on the first run of
    /// the new level) is still found, and marked doubted; the same step with clean
    /// runs is not.
    #[test]
    fn a_change_beside_a_doubted_run_is_marked_doubted() {
        let clean = build(&stepped(), None, |_| true);
        assert!(clean[0].changes.iter().all(|c| c.doubted.is_none()), "{:?}", clean[0].changes);
        let mut runs = stepped();
        let at = clean[0].changes[0].index;
        runs[at].results[0].flag(crate::model::Flag::new(crate::model::FlagCode::Intruded, "synthetic"));
        let s = &build(&runs, None, |_| true)[0];
        assert_eq!(s.changes.len(), 1);
        assert_eq!(s.changes[0].doubted, Some("intruded"));
    }

    #[test]
    fn strata_split_the_series_and_a_key_stratum_holds_no_key_change() {
        let mut runs = stepped();
        for d in runs.iter_mut().skip(15) {
            d.machine.hostname = "other".into();
        }
        let by_host = build(&runs, Some(Stratum::Host), |_| true);
        assert_eq!(by_host.len(), 2);
        assert_eq!(by_host[1].stratum.as_deref(), Some("host=other"));
        assert_eq!(by_host[1].points.len(), 5);
        let by_key = build(&runs, Some(Stratum::Key), |_| true);
        assert_eq!(by_key.len(), 2, "the host is not in the key: two kernels, two series");
        assert_eq!(by_key[1].stratum.as_deref(), Some("key 2: kernel=6.2.0"));
        assert!(by_key.iter().all(|s| s.changes.iter().all(|c| c.key_changes.is_empty())));
    }

    #[test]
    fn only_complete_measured_runs_count_and_in_time_order() {
        let mut runs = stepped();
        runs[3].run.status = RunStatus::Interrupted;
        runs[4].run.kind = RunKind::Sim;
        runs.swap(0, 19);
        let kept = eligible(runs);
        assert_eq!(kept.len(), 18);
        assert!(kept.windows(2).all(|w| w[0].run.started_at <= w[1].run.started_at));
    }

    #[test]
    fn short_series_get_no_noise_and_no_changes() {
        let runs: Vec<RunDocument> = (1..=2).map(|i| run(i, 100.0 * i as f64, "6.1.0", "h")).collect();
        let s = &build(&runs, None, |_| true)[0];
        assert_eq!(s.noise, None);
        assert!(s.changes.is_empty());
    }

    #[test]
    fn figures_are_named_by_id_family_and_parameters() {
        let r = ResultRow::from_samples("ctx.pipe", Method::Batch, "ns/switch", vec![1.0], 1)
            .unwrap()
            .with_param("mode", "process")
            .with_param("placement", "same_cpu");
        assert!(matches("ctx.pipe", &r) && matches("ctx", &r) && matches("ctx.pipe mode=process", &r));
        assert!(!matches("ctx.pipe mode=thread", &r) && !matches("syscall", &r) && !matches("ctx.pip", &r));
    }
}
