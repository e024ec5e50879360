//! Uncertainty from the level of the experiment that varies.
//!
//! A row's samples come in rounds, each measured by a fresh worker process at its own
//! moment of the run; `compare` may also pool several runs per side. Samples of one
//! round share that moment's machine (CPU steal, frequency, what else ran), so they
//! are not independent draws of the figure: their spread says nothing about how the
//! figure moves from one moment, or one run, to the next. Treating them as independent
//! gives intervals several times too narrow on a shared machine.
//!
//! So intervals come from the hierarchical bootstrap (Kalibera & Jones, "Rigorous
//! benchmarking in reasonable time", ISMM 2013; Davison & Hinkley 1997, §3.8): resample
//! the runs with replacement, within each drawn run its rounds, within each drawn round
//! its samples, and take the median of the pooled draw. The headline figure stays the
//! median of all samples.
//!
//! Two corrections, both widening:
//! - *Few top-level units.* A bootstrap over k units underestimates the spread (its
//!   variance carries a factor (k−1)/k, and its percentiles ignore that the spread is
//!   itself estimated). The percentile interval's half-widths are scaled by
//!   t(k−1, 0.975)/z(0.975)·√(k/(k−1)), the factor that turns a normal interval with
//!   the biased variance into Student's t interval. With one unit nothing varies at
//!   the top level; the interval then covers that one window only, and callers say so.
//! - *Resolution.* A median is not known finer than the step between sample values
//!   (the counter's tick): intervals are widened by half a step each side, so they
//!   never have zero width.
//!
//! Each round is thinned to at most [`THIN`] evenly spaced order statistics before
//! resampling, which bounds the cost and only overstates the within-round spread.

use super::{RatioEstimate, SplitMix64, quantile_sorted};

/// The most order statistics kept per round for resampling.
pub const THIN: usize = 128;

/// The 97.5% quantile of Student's t with `df` degrees of freedom (df ≥ 1).
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        // Beyond the table, the first terms of the Cornish-Fisher expansion.
        d => {
            let z: f64 = 1.959_964;
            let d = d as f64;
            z + (z.powi(3) + z) / (4.0 * d) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

/// The step between one round's sample values: its smallest gap between distinct
/// values. Taken per round, because one round shares one calibration (runs converted
/// with slightly different rates put their grids a hair apart, and that hair is no
/// step); gaps below a billionth of the values are rounding, not steps.
fn step_of(sorted: &[f64]) -> Option<f64> {
    let scale = sorted.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    sorted.windows(2).map(|w| w[1] - w[0]).filter(|d| *d > 1e-9 * scale).reduce(f64::min)
}

/// How much a bootstrap interval over `k` top-level units is widened (1 for k ≤ 1).
pub fn small_sample_factor(k: usize) -> f64 {
    if k <= 1 {
        return 1.0;
    }
    let kf = k as f64;
    t975(k - 1) / 1.959_964 * (kf / (kf - 1.0)).sqrt()
}

/// The mean of `xs` with its 95% Student-t interval: (mean, low, high). None with
/// fewer than two finite values.
pub fn t_interval(xs: &[f64]) -> Option<(f64, f64, f64)> {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    let k = v.len();
    if k < 2 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / k as f64;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    let half = t975(k - 1) * (var / k as f64).sqrt();
    Some((mean, mean - half, mean + half))
}

/// The samples of one figure, grouped by the levels of the experiment.
#[derive(Debug, Clone)]
pub struct Nested {
    /// Runs of rounds of thinned, sorted samples.
    runs: Vec<Vec<Vec<f64>>>,
    /// The median of every sample, pooled.
    pub estimate: f64,
    /// The smallest and largest sample: no median of a resample lies outside them.
    pub min: f64,
    pub max: f64,
    /// The step between sample values: the median over rounds of each round's
    /// smallest gap between distinct values (0 if no round has two).
    pub step: f64,
}

impl Nested {
    /// Groups `runs`, each a list of rounds' samples. None without a finite sample.
    pub fn new(runs: &[Vec<&[f64]>]) -> Option<Self> {
        let mut pooled = Vec::new();
        let mut grouped = Vec::new();
        let mut steps = Vec::new();
        for run in runs {
            let mut rounds = Vec::new();
            for round in run {
                let s = super::sorted(round);
                if s.is_empty() {
                    continue;
                }
                steps.extend(step_of(&s));
                pooled.extend_from_slice(&s);
                rounds.push(super::thin(&s, THIN));
            }
            if !rounds.is_empty() {
                grouped.push(rounds);
            }
        }
        if pooled.is_empty() {
            return None;
        }
        pooled.sort_by(f64::total_cmp);
        Some(Self {
            runs: grouped,
            estimate: quantile_sorted(&pooled, 0.5),
            min: pooled[0],
            max: pooled[pooled.len() - 1],
            // No round with two values: the gaps between rounds are all there is.
            step: if steps.is_empty() { step_of(&pooled).unwrap_or(0.0) } else { super::median(&steps) },
        })
    }

    /// One run's rounds.
    pub fn from_rounds(rounds: &[&[f64]]) -> Option<Self> {
        Self::new(&[rounds.to_vec()])
    }

    /// The units at the top level that varies: runs when there are several, else the
    /// rounds of the one run.
    pub fn units(&self) -> usize {
        match self.runs.len() {
            1 => self.runs[0].len(),
            n => n,
        }
    }

    /// The median of one hierarchical resample.
    fn draw(&self, rng: &mut SplitMix64, buf: &mut Vec<f64>) -> f64 {
        buf.clear();
        let nr = self.runs.len();
        for _ in 0..nr {
            let run = &self.runs[if nr > 1 { rng.below(nr) } else { 0 }];
            for _ in 0..run.len() {
                let round = &run[rng.below(run.len())];
                for _ in 0..round.len() {
                    buf.push(round[rng.below(round.len())]);
                }
            }
        }
        let mid = buf.len() / 2;
        let (_, m, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
        *m
    }

    /// Sorted medians of `resamples` hierarchical resamples.
    fn draws(&self, resamples: usize, rng: &mut SplitMix64) -> Vec<f64> {
        let mut buf = Vec::new();
        let mut out: Vec<f64> = (0..resamples.max(1)).map(|_| self.draw(rng, &mut buf)).collect();
        out.sort_by(f64::total_cmp);
        out
    }

    /// The 95% interval of the median (see the module doc for the method).
    pub fn interval(&self, resamples: usize, seed: u64) -> (f64, f64) {
        let mut rng = SplitMix64::new(seed);
        let d = self.draws(resamples, &mut rng);
        let f = small_sample_factor(self.units());
        let e = self.estimate;
        // Widening never carries an end past the data: a median of these samples
        // cannot lie below the smallest or above the largest, and figures that are
        // never negative get no negative end.
        let lo = (e - f * (e - quantile_sorted(&d, 0.025)).max(0.0)).max(self.min) - self.step / 2.0;
        let hi = (e + f * (quantile_sorted(&d, 0.975) - e).max(0.0)).min(self.max) + self.step / 2.0;
        (if self.min >= 0.0 { lo.max(0.0) } else { lo }, hi)
    }
}

/// The ratio of medians b/a with its 95% interval from hierarchical resamples of both
/// sides, widened for the smaller side's number of units and for both resolutions.
/// None when a's median is zero.
pub fn ratio_interval(a: &Nested, b: &Nested, resamples: usize, seed: u64) -> Option<RatioEstimate> {
    if a.estimate == 0.0 || !a.estimate.is_finite() || !b.estimate.is_finite() {
        return None;
    }
    let ratio = b.estimate / a.estimate;
    let mut rng = SplitMix64::new(seed);
    let (mut ba, mut bb) = (Vec::new(), Vec::new());
    let mut ratios: Vec<f64> = (0..resamples.max(1))
        .filter_map(|_| {
            let x = a.draw(&mut rng, &mut ba);
            let y = b.draw(&mut rng, &mut bb);
            (x != 0.0).then(|| y / x)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let f = small_sample_factor(a.units().min(b.units()));
    let eps = a.step / (2.0 * a.estimate.abs()) + b.step / (2.0 * b.estimate.abs());
    // As for one side, never past the most extreme ratio the data allow.
    let (lowest, highest) = if a.min > 0.0 { (b.min / a.max, b.max / a.min) } else { (f64::MIN, f64::MAX) };
    let lo = (ratio - f * (ratio - quantile_sorted(&ratios, 0.025)).max(0.0)).max(lowest) * (1.0 - eps);
    let hi = (ratio + f * (quantile_sorted(&ratios, 0.975) - ratio).max(0.0)).min(highest) * (1.0 + eps);
    let df = (a.units().min(b.units()).max(2) - 1) as f64;
    Some(RatioEstimate { ratio, ci_low: lo, ci_high: hi, df })
}

/// The medians of the units at the top level that varies (runs when there are
/// several, else the rounds of the one run), from their thinned samples.
fn unit_medians(n: &Nested) -> Vec<f64> {
    let median_of = |rounds: &[&Vec<f64>]| {
        let mut pooled: Vec<f64> = rounds.iter().flat_map(|r| r.iter().copied()).collect();
        pooled.sort_by(f64::total_cmp);
        quantile_sorted(&pooled, 0.5)
    };
    match n.runs.len() {
        1 => n.runs[0].iter().map(|r| median_of(&[r])).collect(),
        _ => n.runs.iter().map(|run| median_of(&run.iter().collect::<Vec<_>>())).collect(),
    }
}

/// The logs of the units' medians ([`unit_medians`]); None when one is not positive.
fn unit_logs(n: &Nested) -> Option<Vec<f64>> {
    let m = unit_medians(n);
    m.iter().all(|x| *x > 0.0 && x.is_finite()).then(|| m.iter().map(|x| x.ln()).collect())
}

/// How far both sides' resolutions widen a ratio's interval, relative: half a step of
/// each side over its estimate (0 where an estimate is 0).
fn resolution(a: &Nested, b: &Nested) -> f64 {
    let eps = a.step / (2.0 * a.estimate.abs()) + b.step / (2.0 * b.estimate.abs());
    if eps.is_finite() { eps } else { 0.0 }
}

/// The ratio b/a of the two sides' geometric means of their units' medians, with a
/// 95% Welch t-interval on the difference of the logs, widened for both resolutions.
/// None when a side has fewer than two units or a unit's median is not positive
/// (callers then take [`ratio_interval`]).
///
/// Why not the ratio of pooled medians: a figure whose units sit at two levels (the
/// machine's moment or the process's, `modes`) has a pooled median that jumps between
/// the levels as their shares move, so its bootstrap spread is half again to twice the
/// spread of the units' mean, and every comparison of such figures could only tell
/// changes three times the size. The units are the level that varies; their mean is
/// what a replication estimates, and Student's t on the logs is exact for a
/// log-normal spread and conservative with Welch's degrees of freedom when the sides
/// differ in size or spread (Kalibera & Jones 2013 take the same unit means).
pub fn unit_ratio_interval(a: &Nested, b: &Nested) -> Option<UnitRatio> {
    let (la, lb) = (unit_logs(a).filter(|l| l.len() >= 2)?, unit_logs(b).filter(|l| l.len() >= 2)?);
    let moments = |xs: &[f64]| {
        let k = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / k;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0);
        (mean, var / k, k - 1.0)
    };
    let ((ma, sa, da), (mb, sb, db)) = (moments(&la), moments(&lb));
    let se2 = sa + sb;
    // Welch–Satterthwaite, rounded down (fewer degrees of freedom: a wider interval).
    let df = if se2 > 0.0 { se2 * se2 / (sa * sa / da + sb * sb / db) } else { da + db };
    let df = df.floor().max(1.0);
    let half = t975(df as usize) * se2.sqrt();
    let d = mb - ma;
    let ratio = d.exp();
    let eps = resolution(a, b);
    Some(UnitRatio {
        estimate: RatioEstimate {
            ratio,
            ci_low: (d - half).exp() * (1.0 - eps),
            ci_high: (d + half).exp() * (1.0 + eps),
            df,
        },
        a: ma.exp(),
        b: mb.exp(),
    })
}

/// The ratio b/a as the Hodges–Lehmann shift of the two sides' units' log medians
/// (`rank::shift`: the median of every pairwise log ratio), with Moses's rank
/// interval, widened for both resolutions; the centres are each side's median unit.
/// None below `rank::MIN_UNITS` units a side or with a unit's median not positive
/// (callers then take [`unit_ratio_interval`]).
///
/// Why not the means of [`unit_ratio_interval`]: a fresh process lands now and then
/// far above the usual level, and the mean takes such a unit at full weight, so one
/// far round in ten made two default runs' interval of getppid three times as wide
/// as their usual rounds' spread (`rank` has the figures). Ranks weigh it as one.
pub fn unit_shift_interval(a: &Nested, b: &Nested) -> Option<UnitRatio> {
    let (la, lb) = (unit_logs(a)?, unit_logs(b)?);
    let s = super::rank::shift(&la, &lb)?;
    let eps = resolution(a, b);
    Some(UnitRatio {
        estimate: RatioEstimate {
            ratio: s.estimate.exp(),
            ci_low: s.low.exp() * (1.0 - eps),
            ci_high: s.high.exp() * (1.0 + eps),
            df: s.df,
        },
        a: super::median(&la).exp(),
        b: super::median(&lb).exp(),
    })
}

/// [`unit_ratio_interval`]'s and [`unit_shift_interval`]'s answer: the ratio with its
/// interval, and the two sides' centres (geometric means, or median units) it compares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitRatio {
    pub estimate: RatioEstimate,
    pub a: f64,
    pub b: f64,
}

/// Normal deviates for synthetic data in tests (Box-Muller on SplitMix64).
pub fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Synthetic rounds for tests (this crate's and those of the layers that judge rounds):
/// `rounds` rounds of `n` samples around `centre`, each round shifted by a normal
/// deviate of relative size `round_sd`, each sample by `sample_sd`.
pub fn synthetic(
    rng: &mut SplitMix64,
    centre: f64,
    rounds: usize,
    n: usize,
    round_sd: f64,
    sample_sd: f64,
) -> Vec<Vec<f64>> {
    (0..rounds)
        .map(|_| {
            let m = centre * (1.0 + round_sd * normal(rng));
            (0..n).map(|_| m * (1.0 + sample_sd * normal(rng))).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(rounds: &[Vec<f64>]) -> Nested {
        let slices: Vec<&[f64]> = rounds.iter().map(|r| &r[..]).collect();
        Nested::from_rounds(&slices).unwrap()
    }

    #[test]
    fn t_quantiles_are_the_known_values() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(9), 2.262);
        assert!((t975(60) - 2.000).abs() < 0.002, "{}", t975(60));
        assert!((t975(1000) - 1.962).abs() < 0.002);
        assert_eq!(small_sample_factor(1), 1.0);
        assert!((small_sample_factor(10) - 2.262 / 1.959_964 * (10.0f64 / 9.0).sqrt()).abs() < 1e-12);
        let (m, lo, hi) = t_interval(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(m, 2.0);
        assert!((hi - m - 4.303 / 3f64.sqrt()).abs() < 1e-9 && (m - lo - (hi - m)).abs() < 1e-12);
        assert!(t_interval(&[1.0]).is_none());
    }

    #[test]
    fn an_interval_never_has_zero_width_and_covers_the_estimate() {
        // Every sample on one value: the interval is the step of the counter wide.
        let rounds = vec![vec![142.0; 50], vec![142.0; 50], vec![143.0; 1]];
        let n = nested(&rounds);
        assert_eq!(n.step, 1.0);
        let (lo, hi) = n.interval(200, 1);
        assert!(lo < 142.0 && hi > 142.0 && hi - lo >= 1.0, "{lo} {hi}");
    }

    #[test]
    fn the_interval_follows_the_round_spread_not_the_sample_count() {
        let mut rng = SplitMix64::new(7);
        // 10 rounds, 3% between rounds, 0.5% within, 1000 samples each: the interval
        // must be about the rounds' standard error wide, not the samples'.
        let rounds = synthetic(&mut rng, 100.0, 10, 1000, 0.03, 0.005);
        let n = nested(&rounds);
        let (lo, hi) = n.interval(1000, 3);
        let half = (hi - lo) / 2.0;
        // Standard error of the mean of 10 rounds: 3/√10 ≈ 0.95; t-interval ≈ ±2.1.
        assert!(half > 1.0 && half < 4.5, "half-width {half}");
        // Pooled as if independent, the samples would give about ±0.2.
    }

    #[test]
    fn a_true_shift_is_detected_and_no_shift_is_not() {
        // 10 rounds per side, 3% round noise: a 10% shift clears a 2% threshold in at
        // least 95% of seeded trials; equal sides get a verdict in at most 5%.
        let trials = 100;
        let (mut detected, mut false_verdicts) = (0, 0);
        for seed in 0..trials {
            let mut rng = SplitMix64::new(1000 + seed);
            let a = nested(&synthetic(&mut rng, 100.0, 10, 200, 0.03, 0.01));
            let b = nested(&synthetic(&mut rng, 110.0, 10, 200, 0.03, 0.01));
            let c = nested(&synthetic(&mut rng, 100.0, 10, 200, 0.03, 0.01));
            let shifted = ratio_interval(&a, &b, 500, seed).unwrap();
            if shifted.ci_low > 1.02 {
                detected += 1;
            }
            let same = ratio_interval(&a, &c, 500, seed).unwrap();
            if same.ci_low > 1.02 || same.ci_high < 0.98 {
                false_verdicts += 1;
            }
        }
        assert!(detected >= 95, "detected {detected} of {trials}");
        assert!(false_verdicts <= 5, "false verdicts {false_verdicts} of {trials}");
    }

    #[test]
    fn the_step_is_a_rounds_own_not_the_hair_between_two_runs_grids() {
        // Two runs on a 10 ns grid, converted with rates a hair apart.
        let a: Vec<f64> = [60.0, 70.0, 70.0, 80.0].iter().map(|x| x * 1.000_000_01).collect();
        let b = [60.0, 70.0, 80.0, 80.0];
        let n = Nested::new(&[vec![&a[..]], vec![&b[..]]]).unwrap();
        assert!((n.step - 10.0).abs() < 1e-6, "{}", n.step);
    }

    #[test]
    fn an_interval_stays_within_the_data() {
        // Rounds of two kinds (a bimodal figure): wide, but never below the fastest
        // sample, never negative.
        let rounds: Vec<Vec<f64>> = (0..10).map(|i| vec![if i < 3 { 0.5 } else { 16.0 }; 20]).collect();
        let (lo, hi) = nested(&rounds).interval(500, 1);
        assert!((0.0..=16.0).contains(&lo) && hi <= 16.0 + 15.5, "{lo} {hi}");
    }

    #[test]
    fn runs_are_the_top_level_when_there_are_several() {
        let a = [1.0, 2.0, 3.0];
        let one = Nested::new(&[vec![&a[..], &a[..]]]).unwrap();
        assert_eq!(one.units(), 2);
        let three = Nested::new(&[vec![&a[..]], vec![&a[..], &a[..]], vec![&a[..]]]).unwrap();
        assert_eq!(three.units(), 3);
        assert_eq!(three.estimate, 2.0);
    }

    #[test]
    fn the_same_seed_gives_the_same_interval() {
        let mut rng = SplitMix64::new(1);
        let n = nested(&synthetic(&mut rng, 50.0, 5, 300, 0.05, 0.02));
        assert_eq!(n.interval(300, 9), n.interval(300, 9));
    }

    fn two_sides(rng: &mut SplitMix64, shift: f64, round_sd: f64, bimodal: bool) -> (Nested, Nested) {
        let side = |rng: &mut SplitMix64, centre: f64| {
            let mut rounds = synthetic(rng, centre, 10, 20, round_sd, 0.04);
            if bimodal {
                // Each round at one of two levels 35% apart, half the time each.
                for r in &mut rounds {
                    if rng.below(2) == 1 {
                        r.iter_mut().for_each(|x| *x *= 1.35);
                    }
                }
            }
            nested(&rounds)
        };
        (side(rng, 100.0), side(rng, 100.0 * (1.0 + shift)))
    }

    #[test]
    fn the_unit_ratio_covers_alike_sides_and_tells_a_real_gap() {
        let mut rng = SplitMix64::new(52);
        for bimodal in [false, true] {
            let trials = 4000;
            let mut covered = 0;
            for _ in 0..trials {
                let (a, b) = two_sides(&mut rng, 0.0, 0.10, bimodal);
                let e = unit_ratio_interval(&a, &b).unwrap().estimate;
                covered += usize::from(e.ci_low <= 1.0 && 1.0 <= e.ci_high);
            }
            let share = covered as f64 / trials as f64;
            // 95% nominal; 4000 trials put the share within about ±0.7% of it (2σ).
            assert!((0.935..=0.965).contains(&share), "bimodal {bimodal}: covered {share}");
        }
        // A 15% gap with rounds spread by 3% is seen every time.
        for _ in 0..50 {
            let (a, b) = two_sides(&mut rng, 0.15, 0.03, false);
            let u = unit_ratio_interval(&a, &b).unwrap();
            let e = u.estimate;
            assert!((u.b / u.a - e.ratio).abs() < 1e-12, "the ratio is of the two centres");
            assert!(e.ci_low > 1.05 && e.ci_high < 1.25, "{e:?}");
        }
    }

    #[test]
    fn the_unit_ratio_is_narrower_than_the_pooled_median_where_units_sit_at_two_levels() {
        let mut rng = SplitMix64::new(7);
        let (mut unit, mut pooled) = (0.0, 0.0);
        for _ in 0..40 {
            let (a, b) = two_sides(&mut rng, 0.0, 0.02, true);
            let u = unit_ratio_interval(&a, &b).unwrap().estimate;
            let p = ratio_interval(&a, &b, 500, 1).unwrap();
            unit += (u.ci_high / u.ci_low).ln();
            pooled += (p.ci_high / p.ci_low).ln();
        }
        assert!(unit < pooled, "unit widths {unit} against pooled {pooled}");
        // Fewer than two units, or a unit at zero: no unit interval.
        let one = nested(&[vec![1.0, 2.0]]);
        assert!(unit_ratio_interval(&one, &one).is_none());
        let zero = nested(&[vec![0.0, 0.0], vec![1.0, 1.0]]);
        assert!(unit_ratio_interval(&zero, &zero).is_none());
    }
}
