//! This machine's own noise between runs (`oscost noise`): how far a figure moves from
//! one run to the next beyond what a run's own rounds show, which `compare` adds to the
//! interval of a side that is one run.
//!
//! Why: one run's interval holds what varied within that run. What a machine does
//! between runs (another tenant, the host's frequency, where memory landed) it does not
//! hold, and on a shared VM that is much of the noise: on the 2-vCPU VM this was built
//! on, 19 of 21 figures of a 60-round run came out 0.5–5% faster in another such run two
//! minutes later, all the same way, which independent noise in each figure would not
//! do. So `oscost noise` runs the same benchmarks N times back
//! to back (ordinary runs, stored as kind `noise`), and for each figure takes the log
//! ratios d of consecutive runs' medians and the within-run variances w of those pairs
//! (from each run's own interval). Their means give the between-run variance of one
//! run, σ_b² = (mean d² − mean w) / 2, floored at 0 (Kalibera & Jones's estimator of a
//! level's variance: what the level above shows, less what the level below explains).
//!
//! `compare` then widens the log-ratio interval of a figure by t₀.₉₇₅,ₖ·σ_b for each
//! side that is a single run, σ_b from that side's own machine, in quadrature with the
//! interval's own half-width, so its verdict stands on the level that varies. A side of
//! several runs needs nothing: its runs show that level themselves. The threshold stays
//! what it says, the smallest change worth naming, and does not carry the noise
//! too. `run --precision` judges a row with it until the row has blocks of rounds
//! of its own (`precision`).
//!
//! The noise runs are the stored model: a side reads the noise runs whose machine has
//! its comparability key, so a kernel, microcode or quota change makes them stale, and
//! then they no longer apply. Reading them from a store is the session's
//! (`session::machine_noise`); this module only computes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{BenchId, FigureKey, Method, ResultRow, RunDocument, RunKind, RunStatus};
use crate::stats::nested::t975;

/// Runs `oscost noise` makes unless told: five consecutive pairs.
pub const DEFAULT_RUNS: usize = 6;

/// A figure's name across runs: benchmark, variant and method.
type Figure = (BenchId, String, Method);

fn figure_of(r: &ResultRow) -> Figure {
    (r.benchmark.clone(), r.variant_label(), r.method)
}

/// One figure's noise between runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureNoise {
    #[serde(flatten)]
    pub key: FigureKey,
    pub unit: crate::unit::Unit,
    /// Consecutive pairs of runs that both measured it.
    pub pairs: usize,
    /// The root mean square of the pairs' log ratios: an A/A pair's whole spread.
    pub sigma: f64,
    /// The root mean square of the pairs' within-run standard errors (each pair's two
    /// runs' intervals, in quadrature): what the runs' rounds explain of `sigma`.
    pub within: f64,
    /// The between-run standard deviation of one run's log median, σ_b.
    pub between: f64,
    /// The least half-width this gives a comparison of one run a side, relative
    /// (0.04 = 4%): exp(t₀.₉₇₅,ₖ·σ_b·√2) − 1 (it is added in quadrature).
    pub widening: f64,
    /// For a per-call figure, one step of the bracket's clock relative to the figure
    /// (`Calibration::quantum_ns` over the median): a spread below it is below what
    /// the figure resolves, not zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<f64>,
}

impl FigureNoise {
    /// Whether its between-run spread can stand as the machine's drift (at most
    /// [`MAX_BETWEEN`]); otherwise it is refused.
    pub fn is_model(&self) -> bool {
        self.between.is_finite() && self.between <= MAX_BETWEEN
    }

    /// A spread as a percentage, or `<R%` where it is below the figure's resolution.
    pub fn percent(&self, spread: f64) -> String {
        match self.resolution {
            Some(r) if spread < r => format!("<{:.1}%", r * 100.0),
            _ => format!("{:.1}%", spread * 100.0),
        }
    }
}

/// One step of a per-call figure's bracket clock, relative to its median.
fn resolution(doc: &RunDocument, r: &ResultRow) -> Option<f64> {
    let q = doc.machine.calibration.as_ref()?.quantum_ns?;
    (r.method == crate::model::Method::PerCall && r.median > 0.0 && r.unit.is_time()).then(|| q / r.median)
}

/// The standard error of a row's run figure from its rounds: the spread of its
/// rounds' log medians over √k (the within-run variance Kalibera & Jones subtract);
/// 0 with fewer than two rounds (the between-run estimate then takes the whole pair's
/// spread, which overstates it).
fn within_se(r: &ResultRow) -> f64 {
    crate::stats::summarize(&crate::rounds::round_log_medians(r))
        .filter(|s| s.n >= 2)
        .map_or(0.0, |s| s.stddev / (s.n as f64).sqrt())
}

/// The largest between-run spread σ_b (log) a figure's noise runs may show and still
/// be taken as its machine's drift. Runs of one figure a factor of two apart as a
/// matter of course (σ_b = ln 2) describe a figure that is not one quantity (a
/// scheduler's choice, a level per process), not a machine's drift; and widening a
/// comparison by t₀.₉₇₅,ₖ·σ_b from a few such pairs gives a bound of thousands of
/// percent. Such a figure's noise is refused, and a one-run comparison that would need
/// it gives no verdict.
pub const MAX_BETWEEN: f64 = std::f64::consts::LN_2;

/// The between-run spread σ_b from pairs' log ratios `d` and within-run variances `w`.
pub fn between_of(d: &[f64], w: &[f64]) -> f64 {
    if d.is_empty() {
        return 0.0;
    }
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let d2: Vec<f64> = d.iter().map(|x| x * x).collect();
    ((mean(&d2) - if w.is_empty() { 0.0 } else { mean(w) }) / 2.0).max(0.0).sqrt()
}

/// The half-width (log) a one-run side of spread `between`, known from `pairs` pairs,
/// adds to a comparison's interval: t₀.₉₇₅,ₖ·σ_b, widened for few pairs as a Student-t
/// bound is.
pub fn side_widening(between: f64, pairs: usize) -> f64 {
    t975(pairs) * between
}

/// The noise of every figure measured by at least two of `runs` (oldest first), in the
/// order figures first appear.
pub fn figure_noise(runs: &[RunDocument]) -> Vec<FigureNoise> {
    let mut order: Vec<(Figure, &ResultRow, Option<f64>)> = Vec::new();
    // Per figure: the pairs' log ratios and their within-run variances.
    let mut pairs: BTreeMap<Figure, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let usable = |d: &'_ RunDocument| -> BTreeMap<Figure, (f64, f64)> {
        d.results
            .iter()
            .filter(|r| r.median.is_finite() && r.median > 0.0)
            .map(|r| (figure_of(r), (r.median, within_se(r))))
            .collect()
    };
    for doc in runs {
        for r in &doc.results {
            let f = figure_of(r);
            if !order.iter().any(|(g, _, _)| *g == f) {
                order.push((f, r, resolution(doc, r)));
            }
        }
    }
    for pair in runs.windows(2) {
        let (a, b) = (usable(&pair[0]), usable(&pair[1]));
        for (f, (ma, sa)) in &a {
            if let Some((mb, sb)) = b.get(f) {
                let e = pairs.entry(f.clone()).or_default();
                e.0.push((mb / ma).ln());
                e.1.push(sa * sa + sb * sb);
            }
        }
    }
    order
        .into_iter()
        .filter_map(|(f, r, resolution)| {
            let (d, w) = pairs.get(&f)?;
            let root_mean = |x: &[f64]| (x.iter().sum::<f64>() / x.len() as f64).sqrt();
            let between = between_of(d, w);
            Some(FigureNoise {
                key: r.key(),
                unit: r.unit.clone(),
                pairs: d.len(),
                sigma: root_mean(&d.iter().map(|x| x * x).collect::<Vec<_>>()),
                within: root_mean(w),
                between,
                widening: (side_widening(between, d.len()) * std::f64::consts::SQRT_2).exp() - 1.0,
                resolution,
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

/// Where the between-run spreads came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    pub runs: usize,
    pub first: String,
    pub last: String,
}

/// A figure's between-run spread and how many pairs measured it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Between {
    pub sigma: f64,
    pub pairs: usize,
}

/// This machine's between-run spreads, per figure, as `compare` applies them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunNoise {
    figures: BTreeMap<Figure, Between>,
    /// Figures whose spread is past [`MAX_BETWEEN`], with it.
    refused: BTreeMap<Figure, f64>,
    pub source: Option<Source>,
}

impl RunNoise {
    /// No model: intervals of one-run sides hold within-run variation only.
    pub fn none() -> Self {
        Self::default()
    }

    /// Each figure's spread from `runs` (the applicable noise runs, oldest first).
    pub fn from_noise(runs: &[RunDocument]) -> Self {
        let (mut figures, mut refused) = (BTreeMap::new(), BTreeMap::new());
        for n in figure_noise(runs) {
            let figure = (n.key.bench.clone(), n.key.variant().to_string(), n.key.method);
            if n.is_model() {
                figures.insert(figure, Between { sigma: n.between, pairs: n.pairs });
            } else {
                refused.insert(figure, n.between);
            }
        }
        let source = (!figures.is_empty()).then(|| Source {
            runs: runs.len(),
            first: runs.first().map(|d| d.run.started_at.clone()).unwrap_or_default(),
            last: runs.last().map(|d| d.run.started_at.clone()).unwrap_or_default(),
        });
        RunNoise { figures, refused, source }
    }

    /// Row `r`'s figure's between-run spread, where the noise runs measured it.
    pub fn of(&self, r: &ResultRow) -> Option<Between> {
        self.figures.get(&figure_of(r)).copied()
    }

    /// Whether the noise runs measured row `r`'s figure past any model of a machine's
    /// drift (see [`MAX_BETWEEN`]).
    pub fn refuses(&self, r: &ResultRow) -> bool {
        self.refused.contains_key(&figure_of(r))
    }

    /// Figures with a spread of their own.
    pub fn len(&self) -> usize {
        self.figures.len()
    }

    pub fn is_empty(&self) -> bool {
        self.figures.is_empty()
    }

    /// The relative half-width row `r`'s figure's between-run spread alone sets on the
    /// interval of one run, exp(t₀.₉₇₅,ₖ·σ_b) − 1 (however many rounds it has: what a
    /// run settles once its rounds share, `precision`). 0 where the noise runs did not
    /// measure the figure.
    pub fn between_alone(&self, r: &ResultRow) -> f64 {
        self.of(r).map_or(0.0, |b| side_widening(b.sigma, b.pairs).exp() - 1.0)
    }
}

/// One row's interval with its figure's spread between runs, as `show` and `run`
/// print a run on a machine whose noise runs measured the figure: the interval of one
/// run's rounds does not hold what the next run will do, and this one holds both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowBetween {
    #[serde(flatten)]
    pub key: FigureKey,
    /// The figure's between-run spread σ_b (log), and the consecutive pairs of noise
    /// runs it came from.
    pub between: f64,
    pub pairs: usize,
    /// The row's own interval with t₀.₉₇₅,ₖ·σ_b added in quadrature to each side, on the
    /// log scale.
    pub ci_low: f64,
    pub ci_high: f64,
}

impl RunNoise {
    /// Row `r`'s interval with its figure's spread between runs; None where the noise
    /// runs did not measure the figure or the row has no interval around a positive
    /// median.
    pub fn widen(&self, r: &ResultRow) -> Option<RowBetween> {
        let b = self.of(r)?;
        let (m, lo, hi) = (r.median, r.ci_low, r.ci_high);
        if !(m > 0.0 && lo > 0.0 && lo <= m && m <= hi && hi.is_finite()) {
            return None;
        }
        let extra = side_widening(b.sigma, b.pairs);
        let (down, up) = ((m / lo).ln().hypot(extra), (hi / m).ln().hypot(extra));
        Some(RowBetween {
            key: r.key(),
            between: b.sigma,
            pairs: b.pairs,
            ci_low: m / down.exp(),
            ci_high: m * up.exp(),
        })
    }

    /// A run as it prints with this machine's spreads between runs: a copy whose rows'
    /// intervals are widened where the noise runs measured their figure, and the rows
    /// widened. The stored run keeps its own intervals.
    pub fn widen_run(&self, doc: &RunDocument) -> (RunDocument, Vec<RowBetween>) {
        let mut shown = doc.clone();
        let mut widened = Vec::new();
        for r in &mut shown.results {
            if let Some(w) = self.widen(r) {
                (r.ci_low, r.ci_high) = (w.ci_low, w.ci_high);
                widened.push(w);
            }
        }
        (shown, widened)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A per-call figure's spread below one step of its clock prints as under that
    /// step, not as 0.0%; a figure without a step prints its spread as it is.
    #[test]
    fn a_spread_below_the_clocks_step_is_not_zero() {
        let mut n = FigureNoise {
            key: FigureKey::new("syscall.enosys".into(), Method::PerCall, crate::model::Params::new()),
            unit: "ns/call".into(),
            pairs: 3,
            sigma: 0.0,
            within: 0.0,
            between: 0.0,
            widening: 0.0,
            resolution: Some(10.0 / 80.1),
        };
        assert_eq!(n.percent(0.0), "<12.5%");
        assert_eq!(n.percent(0.2), "20.0%");
        n.resolution = None;
        assert_eq!(n.percent(0.0), "0.0%");
    }
    use crate::model::Method;
    use crate::stats::SplitMix64;
    use crate::stats::nested::{Nested, normal, synthetic};

    /// `n` noise runs of two figures without rounds whose medians drift between runs by
    /// `sd` and `10·sd` (relative).
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
                noise_run(i, vec![quiet, loud])
            })
            .collect()
    }

    fn noise_run(i: usize, rows: Vec<ResultRow>) -> RunDocument {
        let mut d = RunDocument::for_tests(i as i64 + 1, crate::machine::Machine::example(), rows);
        d.run.kind = RunKind::Noise;
        d.run.started_at = format!("2026-11-24T00:{i:02}:00Z");
        d
    }

    /// A row of 10 rounds with 5% round-to-round noise around `centre` moved by a
    /// between-run drift of `drift`, its interval from its rounds as a run draws it.
    fn row_in_rounds(rng: &mut SplitMix64, bench: &str, centre: f64, drift: f64) -> ResultRow {
        let centre = centre * (drift * normal(rng)).exp();
        let parts = synthetic(rng, centre, 10, 20, 0.05, 0.01);
        let all: Vec<f64> = parts.iter().flatten().copied().collect();
        let mut r = ResultRow::from_samples(bench, Method::Batch, "ns/call", all, 100).unwrap();
        r.rounds = parts
            .iter()
            .map(|p| crate::model::Round { samples: p.len(), at: None, counts: Default::default() })
            .collect();
        let slices: Vec<&[f64]> = parts.iter().map(|p| &p[..]).collect();
        (r.ci_low, r.ci_high) = Nested::from_rounds(&slices).unwrap().interval(400, 7);
        r
    }

    #[test]
    fn the_between_run_spread_follows_each_figures_own_drift() {
        // Point rows: nothing within a run, so a pair's spread is all between runs.
        let runs = noise_runs(41, 0.01, 3);
        let noise = figure_noise(&runs);
        assert_eq!(noise.len(), 2);
        let (quiet, loud) = (&noise[0], &noise[1]);
        assert_eq!((quiet.key.bench.as_str(), quiet.pairs), ("syscall.getppid", 40));
        assert!((quiet.sigma / (0.01 * 2f64.sqrt()) - 1.0).abs() < 0.25, "{quiet:?}");
        assert!((quiet.between / 0.01 - 1.0).abs() < 0.25, "{quiet:?}");
        assert!((loud.between / 0.1 - 1.0).abs() < 0.25, "{loud:?}");
        assert!(loud.widening > 5.0 * quiet.widening);
        // A bound from few pairs is wider.
        assert!(side_widening(0.01, 2) > side_widening(0.01, 30));
        assert_eq!(between_of(&[], &[]), 0.0);
        // What the rounds explain is not counted twice, and a spread never goes negative.
        assert!(between_of(&[0.05, -0.05], &[0.0025, 0.0025]) < 1e-6);
        assert!((between_of(&[0.05, -0.05], &[0.0009, 0.0009]) - 0.0016f64.sqrt() / 2f64.sqrt()).abs() < 1e-9);
        assert_eq!(between_of(&[0.01], &[0.01]), 0.0);
    }

    #[test]
    fn what_a_runs_rounds_explain_is_taken_out_of_the_between_run_spread() {
        // Two figures with the same 5% round noise; only the second drifts between
        // runs, by 4%. Averaged over seeds so the test judges the estimator, not a draw.
        let (mut steady, mut drifting, mut within) = (Vec::new(), Vec::new(), Vec::new());
        for seed in 0..20 {
            let mut rng = SplitMix64::new(seed);
            let runs: Vec<RunDocument> = (0..8)
                .map(|i| {
                    let rows = vec![
                        row_in_rounds(&mut rng, "syscall.getppid", 100.0, 0.0),
                        row_in_rounds(&mut rng, "ctx.pipe", 1500.0, 0.04),
                    ];
                    noise_run(i, rows)
                })
                .collect();
            let n = figure_noise(&runs);
            steady.push(n[0].between);
            drifting.push(n[1].between);
            within.push(n[0].within);
        }
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        // A run of 10 rounds at 5% knows its median to about 5%/√10 = 1.6%; a pair of
        // runs to √2 times that.
        assert!((mean(&within) / (0.05 / 10f64.sqrt() * 2f64.sqrt()) - 1.0).abs() < 0.35, "{within:?}");
        assert!(mean(&steady) < 0.01, "no drift, little between-run spread: {steady:?}");
        assert!((mean(&drifting) / 0.04 - 1.0).abs() < 0.3, "{drifting:?}");
    }

    #[test]
    fn the_bound_a_spread_sets_on_one_run_is_t_times_sigma() {
        // Five noise runs whose log medians alternate ±0.02: pairs of ±0.04, so
        // σ_b = 0.04/√2 and its bound exp(t₀.₉₇₅,₄·σ_b) − 1.
        let runs: Vec<RunDocument> = (0..5)
            .map(|i| {
                let m = 100.0 * if i % 2 == 0 { 0.02f64 } else { -0.02 }.exp();
                noise_run(
                    i,
                    vec![ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", vec![m; 3], 3).unwrap()],
                )
            })
            .collect();
        let model = RunNoise::from_noise(&runs);
        let row = &runs[0].results[0];
        let between = (2.776 * 0.04 / 2f64.sqrt()).exp() - 1.0;
        assert!((model.between_alone(row) - between).abs() < 1e-9, "{}", model.between_alone(row));
        assert_eq!(RunNoise::none().between_alone(row), 0.0);
    }

    #[test]
    fn spreads_apply_to_their_figures_and_their_machine_only() {
        let runs = noise_runs(6, 0.01, 1);
        let t = RunNoise::from_noise(&runs);
        assert_eq!(t.len(), 2);
        let source = t.source.clone().unwrap();
        assert_eq!((source.runs, source.first.as_str()), (6, "2026-11-24T00:00:00Z"));
        let other = ResultRow::from_samples("syscall.read", Method::Batch, "ns/call", vec![1.0], 1).unwrap();
        assert_eq!(t.of(&other), None);
        assert_eq!(t.of(&runs[0].results[0]).map(|b| b.pairs), Some(5));
        assert!(RunNoise::none().is_empty());
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

    /// A run's interval from its rounds misses the drift between runs; widened by the
    /// machine's spread from its noise runs it holds the figure's centre over many
    /// runs near its 95%, and a row the noise runs did not measure is left as is.
    #[test]
    fn a_runs_interval_with_the_spread_between_runs_holds_the_centre_of_runs() {
        let mut rng = SplitMix64::new(0xC0DE);
        let drift = 0.04;
        let noise: Vec<RunDocument> =
            (0..12).map(|i| noise_run(i, vec![row_in_rounds(&mut rng, "syscall.getppid", 100.0, drift)])).collect();
        let model = RunNoise::from_noise(&noise);
        let (mut own, mut widened, trials) = (0, 0, 400);
        for i in 0..trials {
            let doc = RunDocument::for_tests(
                100 + i,
                crate::machine::Machine::example(),
                vec![row_in_rounds(&mut rng, "syscall.getppid", 100.0, drift)],
            );
            let r = &doc.results[0];
            own += (r.ci_low <= 100.0 && 100.0 <= r.ci_high) as usize;
            let (shown, rows) = model.widen_run(&doc);
            assert_eq!(rows.len(), 1);
            let w = &shown.results[0];
            assert_eq!((w.ci_low, w.ci_high), (rows[0].ci_low, rows[0].ci_high));
            assert!(w.ci_low <= r.ci_low && w.ci_high >= r.ci_high && w.median == r.median);
            assert_eq!((doc.results[0].ci_low, doc.results[0].ci_high), (r.ci_low, r.ci_high), "the run keeps its own");
            widened += (w.ci_low <= 100.0 && 100.0 <= w.ci_high) as usize;
        }
        let (own, widened) = (own as f64 / trials as f64, widened as f64 / trials as f64);
        assert!(own < 0.7, "the rounds alone hold the centre of runs {own}");
        // One model, drawn from 11 pairs: its σ_b is itself an estimate, so the rate
        // sits near 95% rather than on it.
        assert!(widened >= 0.9, "with the spread between runs {widened}");
        let other = ResultRow::from_samples("syscall.read", Method::Batch, "ns/call", vec![1.0, 2.0], 2).unwrap();
        assert_eq!(model.widen(&other), None);
        assert_eq!(RunNoise::none().widen(&noise[0].results[0]), None);
    }
}
