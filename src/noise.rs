//! This machine's own noise between runs (`oscost noise`), as a threshold per figure
//! for `compare`'s verdicts.
//!
//! Why: `compare` names a change only when the 95% interval of B/A clears a threshold.
//! One run's interval holds what varied within that run; what a machine does between
//! runs (another tenant, the host's frequency, where memory landed) it does not hold,
//! and the default 3% guesses it for every figure alike. Figures drift by their own
//! amounts: on the 2-vCPU VM this was built on, getppid drifts by about 1% between
//! runs and a same-CPU hand-off by about 10%. So `oscost noise` runs the same
//! benchmarks N times back to back (ordinary runs, stored as kind `noise`), and for
//! each figure takes the differences of log medians between consecutive runs. Their
//! root mean square σ is the spread of an A/A pair's log ratio. The threshold is
//! exp(t₀.₉₇₅,ₖ·σ) − 1 with k pairs: the ratio an A/A pair exceeds 5% of the time,
//! widened for few pairs as a Student-t prediction bound is. It is never below
//! [`MIN_THRESHOLD`].
//!
//! The noise runs are the stored model: `compare` derives the thresholds from the
//! noise runs whose machine has side A's comparability key, so a kernel, microcode or
//! quota change makes them stale, and then they no longer apply.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{ResultRow, RunDocument, RunKind, RunStatus};
use crate::stats::nested::t975;

/// The smallest threshold noise runs may set: below it a verdict would hang on the
/// timer's resolution and the runs' rounding.
pub const MIN_THRESHOLD: f64 = 0.005;

/// Runs `oscost noise` makes unless told: five consecutive pairs.
pub const DEFAULT_RUNS: usize = 6;

/// A figure's name across runs: benchmark, variant and method.
type Figure = (String, String, String);

fn figure_of(r: &ResultRow) -> Figure {
    (r.benchmark.clone(), r.variant_label(), r.method.as_str().to_string())
}

/// One figure's noise between runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureNoise {
    pub benchmark: String,
    pub variant: String,
    pub method: String,
    pub unit: crate::unit::Unit,
    /// Consecutive pairs of runs that both measured it.
    pub pairs: usize,
    /// The root mean square of the pairs' log ratios.
    pub sigma: f64,
    /// The threshold it sets, relative (0.04 = 4%).
    pub threshold: f64,
}

/// The threshold `pairs` A/A pairs of spread `sigma` set.
pub fn threshold_of(sigma: f64, pairs: usize) -> f64 {
    ((t975(pairs) * sigma).exp() - 1.0).max(MIN_THRESHOLD)
}

/// The noise of every figure measured by at least two of `runs` (oldest first), in the
/// order figures first appear.
pub fn figure_noise(runs: &[RunDocument]) -> Vec<FigureNoise> {
    let mut order: Vec<(Figure, &ResultRow)> = Vec::new();
    let mut diffs: BTreeMap<Figure, Vec<f64>> = BTreeMap::new();
    let medians = |d: &RunDocument| -> BTreeMap<Figure, f64> {
        d.results.iter().filter(|r| r.median.is_finite() && r.median > 0.0).map(|r| (figure_of(r), r.median)).collect()
    };
    for doc in runs {
        for r in &doc.results {
            let f = figure_of(r);
            if !order.iter().any(|(g, _)| *g == f) {
                order.push((f, r));
            }
        }
    }
    for pair in runs.windows(2) {
        let (a, b) = (medians(&pair[0]), medians(&pair[1]));
        for (f, ma) in &a {
            if let Some(mb) = b.get(f) {
                diffs.entry(f.clone()).or_default().push((mb / ma).ln());
            }
        }
    }
    order
        .into_iter()
        .filter_map(|(f, r)| {
            let d = diffs.get(&f)?;
            let sigma = (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt();
            Some(FigureNoise {
                benchmark: f.0,
                variant: f.1,
                method: f.2,
                unit: r.unit.clone(),
                pairs: d.len(),
                sigma,
                threshold: threshold_of(sigma, d.len()),
            })
        })
        .collect()
}

/// The noise runs that speak for a machine of comparability key `key`: complete runs
/// of kind `noise` on a machine with that key, oldest first.
pub fn applicable(runs: Vec<RunDocument>, key: &[(String, String)]) -> Vec<RunDocument> {
    let mut runs: Vec<RunDocument> = runs
        .into_iter()
        .filter(|d| d.run.kind == RunKind::Noise && d.run.status == RunStatus::Complete)
        .filter(|d| d.machine.comparability_key() == key)
        .collect();
    runs.sort_by(|a, b| a.run.started_at.cmp(&b.run.started_at).then(a.run.id.cmp(&b.run.id)));
    runs
}

/// Where per-figure thresholds came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    pub runs: usize,
    pub first: String,
    pub last: String,
}

/// The thresholds a comparison judges by: each figure's own where noise runs measured
/// it, a default for the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    pub default: f64,
    figures: BTreeMap<Figure, f64>,
    pub source: Option<Source>,
}

impl Thresholds {
    /// One threshold for every figure.
    pub fn uniform(default: f64) -> Self {
        Thresholds { default, figures: BTreeMap::new(), source: None }
    }

    /// Each figure's threshold from `runs` (the applicable noise runs, oldest first),
    /// `default` for figures they did not measure.
    pub fn from_noise(default: f64, runs: &[RunDocument]) -> Self {
        let figures: BTreeMap<Figure, f64> =
            figure_noise(runs).into_iter().map(|n| ((n.benchmark, n.variant, n.method), n.threshold)).collect();
        let source = (!figures.is_empty()).then(|| Source {
            runs: runs.len(),
            first: runs.first().map(|d| d.run.started_at.clone()).unwrap_or_default(),
            last: runs.last().map(|d| d.run.started_at.clone()).unwrap_or_default(),
        });
        Thresholds { default, figures, source }
    }

    /// The threshold for row `r`'s figure.
    pub fn of(&self, r: &ResultRow) -> f64 {
        self.figures.get(&figure_of(r)).copied().unwrap_or(self.default)
    }

    /// Whether row `r`'s figure has a threshold of its own.
    pub fn measured(&self, r: &ResultRow) -> bool {
        self.figures.contains_key(&figure_of(r))
    }

    /// Figures with a threshold of their own.
    pub fn len(&self) -> usize {
        self.figures.len()
    }

    pub fn is_empty(&self) -> bool {
        self.figures.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Method;
    use crate::stats::SplitMix64;
    use crate::stats::nested::normal;

    /// `n` noise runs of two figures whose medians drift between runs by `sd` and
    /// `10·sd` (relative).
    fn noise_runs(n: usize, sd: f64, seed: u64) -> Vec<RunDocument> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|i| {
                let row = |id: &str, centre: f64, rng: &mut SplitMix64| {
                    let m = centre * (sd * normal(rng)).exp();
                    ResultRow::from_samples(id, Method::Batch, "ns/call", vec![m; 3], 3).unwrap()
                };
                let quiet = row("syscall.getppid", 100.0, &mut rng);
                let mut loud = row("ctx.pipe", 1500.0, &mut rng);
                loud.median = 1500.0 * (10.0 * sd * normal(&mut rng)).exp();
                let mut d = RunDocument::for_tests(i as i64 + 1, crate::machine::Machine::example(), vec![quiet, loud]);
                d.run.kind = RunKind::Noise;
                d.run.started_at = format!("2026-11-24T00:{i:02}:00Z");
                d
            })
            .collect()
    }

    #[test]
    fn thresholds_follow_each_figures_own_drift() {
        // Log-normal drift of σ per run: a pair's log ratio has spread σ·√2.
        let runs = noise_runs(41, 0.01, 3);
        let noise = figure_noise(&runs);
        assert_eq!(noise.len(), 2);
        let (quiet, loud) = (&noise[0], &noise[1]);
        assert_eq!((quiet.benchmark.as_str(), quiet.pairs), ("syscall.getppid", 40));
        assert!((quiet.sigma / (0.01 * 2f64.sqrt()) - 1.0).abs() < 0.25, "{quiet:?}");
        assert!((loud.sigma / (0.1 * 2f64.sqrt()) - 1.0).abs() < 0.25, "{loud:?}");
        assert!(loud.threshold > 5.0 * quiet.threshold);
        // A threshold is a prediction bound: few pairs widen it, and it has a floor.
        assert!(threshold_of(0.01, 2) > threshold_of(0.01, 30));
        assert_eq!(threshold_of(0.0, 5), MIN_THRESHOLD);
    }

    #[test]
    fn thresholds_apply_to_their_figures_and_the_default_to_the_rest() {
        let runs = noise_runs(6, 0.01, 1);
        let t = Thresholds::from_noise(0.03, &runs);
        assert_eq!(t.len(), 2);
        let source = t.source.clone().unwrap();
        assert_eq!((source.runs, source.first.as_str()), (6, "2026-11-24T00:00:00Z"));
        let other = ResultRow::from_samples("syscall.read", Method::Batch, "ns/call", vec![1.0], 1).unwrap();
        assert_eq!(t.of(&other), 0.03);
        assert!(!t.measured(&other) && t.measured(&runs[0].results[0]));
        assert!(Thresholds::uniform(0.03).is_empty());
        // Noise runs of another machine, or runs of another kind, do not apply.
        let key = runs[0].machine.comparability_key();
        assert_eq!(applicable(runs.clone(), &key).len(), 6);
        let mut other_key = key.clone();
        other_key[0].1 = "another CPU".into();
        assert!(applicable(runs.clone(), &other_key).is_empty());
        let mut measured = runs;
        measured[0].run.kind = RunKind::Measure;
        assert_eq!(applicable(measured, &key).len(), 5);
    }
}
