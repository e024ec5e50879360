//! Paired rounds: a condition against its baseline, both measured in each round back
//! to back (`run --condition`).
//!
//! The unit that varies is the round: each round is a fresh pair of workers at one
//! moment of the run, and what the machine does at that moment (a neighbour VM, the
//! host's frequency) touches both arms of the pair alike. So each round gives one
//! difference, d = ln(condition's round median / baseline's round median), and the
//! rounds' differences are the sample: the ratio is exp(mean d), its 95% interval the
//! percentile interval of exp(mean d) over resampled rounds (pairs kept together),
//! widened for few rounds as `nested` widens a one-sided interval (Student's t over
//! k−1 degrees of freedom, and the bootstrap's k/(k−1) bias). Samples within a round
//! are never resampled on their own: they are one window and not independent.

use super::nested::small_sample_factor;
use super::{SplitMix64, quantile_sorted};

/// A paired ratio with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedRatio {
    /// exp(mean of the rounds' log differences): the condition over the baseline.
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The rounds paired.
    pub pairs: usize,
}

/// One side's rounds: each round's number in the run, and its samples.
pub type NumberedRounds<'a> = Vec<(usize, &'a [f64])>;

/// The rounds' log differences: the condition's round n against the baseline's round n
/// (the pair measured together), for every round number both have; a round without
/// samples or with a median that is not positive gives none.
pub fn log_differences(baseline: &[(usize, &[f64])], condition: &[(usize, &[f64])]) -> Vec<f64> {
    differences(&paired_medians(baseline, condition))
}

/// The paired rounds' medians, (baseline, condition), for every round number both
/// have whose log difference is finite: the inputs of [`log_differences`].
pub fn paired_medians(baseline: &[(usize, &[f64])], condition: &[(usize, &[f64])]) -> Vec<(f64, f64)> {
    baseline
        .iter()
        .filter_map(|(n, b)| condition.iter().find(|(m, _)| m == n).map(|(_, c)| (*b, *c)))
        .filter(|(b, c)| !b.is_empty() && !c.is_empty())
        .map(|(b, c)| (super::median(b), super::median(c)))
        .filter(|(b, c)| (c / b).ln().is_finite())
        .collect()
}

/// The log differences ln(condition / baseline) of paired medians.
pub fn differences(pairs: &[(f64, f64)]) -> Vec<f64> {
    pairs.iter().map(|(b, c)| (c / b).ln()).collect()
}

/// Each arm's geometric mean of its paired rounds' medians, (baseline, condition):
/// the ratio's own inputs, whose quotient is exp(mean d).
pub fn paired_means(pairs: &[(f64, f64)]) -> (f64, f64) {
    let k = pairs.len().max(1) as f64;
    let (b, c) = pairs.iter().fold((0.0, 0.0), |(sb, sc), (b, c)| (sb + b.ln(), sc + c.ln()));
    ((b / k).exp(), (c / k).exp())
}

/// The paired ratio of log differences `d`, its interval from `resamples` resamples of
/// the pairs; None with fewer than two pairs.
pub fn ratio(d: &[f64], resamples: usize, seed: u64) -> Option<PairedRatio> {
    let k = d.len();
    if k < 2 {
        return None;
    }
    let mean = d.iter().sum::<f64>() / k as f64;
    let mut rng = SplitMix64::new(seed);
    let mut means: Vec<f64> =
        (0..resamples.max(1)).map(|_| (0..k).map(|_| d[rng.below(k)]).sum::<f64>() / k as f64).collect();
    means.sort_by(f64::total_cmp);
    let f = small_sample_factor(k);
    let lo = mean - f * (mean - quantile_sorted(&means, 0.025)).max(0.0);
    let hi = mean + f * (quantile_sorted(&means, 0.975) - mean).max(0.0);
    Some(PairedRatio { ratio: mean.exp(), ci_low: lo.exp(), ci_high: hi.exp(), pairs: k })
}

#[cfg(test)]
mod tests {
    use super::super::nested::normal;
    use super::*;

    /// Synthetic paired rounds: every round shares a drift of relative size `drift`
    /// (both arms), each arm adds its own round noise `noise`, samples `sample_sd`;
    /// the condition costs `truth` times the baseline.
    fn paired_rounds(rng: &mut SplitMix64, rounds: usize, truth: f64, drift: f64, noise: f64) -> Vec<f64> {
        let (mut base, mut cond) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let m = 1000.0 * (1.0 + drift * normal(rng)).max(0.2);
            let sample = |rng: &mut SplitMix64, centre: f64| -> Vec<f64> {
                let c = centre * (1.0 + noise * normal(rng));
                (0..50).map(|_| c * (1.0 + 0.05 * normal(rng))).collect()
            };
            base.push(sample(rng, m));
            cond.push(sample(rng, m * truth));
        }
        let b: NumberedRounds = base.iter().enumerate().map(|(i, r)| (i, &r[..])).collect();
        let c: NumberedRounds = cond.iter().enumerate().map(|(i, r)| (i, &r[..])).collect();
        log_differences(&b, &c)
    }

    #[test]
    fn known_differences_give_the_known_ratio() {
        let d = [1.1f64.ln(); 5];
        let r = ratio(&d, 200, 1).unwrap();
        assert!((r.ratio - 1.1).abs() < 1e-12 && (r.ci_low - 1.1).abs() < 1e-12 && (r.ci_high - 1.1).abs() < 1e-12);
        assert_eq!(r.pairs, 5);
        assert_eq!(ratio(&[0.1], 200, 1), None);
        // Rounds pair by number, not position: a round one side lacks pairs with
        // nothing; empty rounds are left out.
        let (b1, b2, c1): (&[f64], &[f64], &[f64]) = (&[10.0, 10.0], &[20.0], &[15.0]);
        assert_eq!(log_differences(&[(0, b1), (1, b2)], &[(0, c1)]), vec![1.5f64.ln()]);
        assert_eq!(log_differences(&[(0, b1), (1, b2)], &[(1, c1)]), vec![0.75f64.ln()]);
        assert_eq!(log_differences(&[(0, b1), (1, &[])], &[(0, c1), (1, c1)]), vec![1.5f64.ln()]);
    }

    /// The paired interval has its nominal coverage on synthetic paired data, even
    /// when the drift shared by a round's pair is five times the arms' own noise.
    #[test]
    fn the_paired_interval_covers_the_truth_at_its_nominal_rate() {
        for (rounds, drift, noise) in [(10, 0.10, 0.02), (5, 0.05, 0.03), (20, 0.15, 0.01)] {
            let mut rng = SplitMix64::new(0x9a17 + rounds as u64);
            let trials = 1000;
            let covered = (0..trials)
                .filter(|t| {
                    let d = paired_rounds(&mut rng, rounds, 1.05, drift, noise);
                    let r = ratio(&d, 1000, *t as u64).unwrap();
                    r.ci_low <= 1.05 && 1.05 <= r.ci_high
                })
                .count();
            assert!((925..=980).contains(&covered), "{rounds} rounds, drift {drift}: covered {covered} of {trials}");
        }
    }

    /// An A/A condition (the baseline measured twice) gets a direction at the default
    /// threshold in at most 5% of trials, however much the rounds drift.
    #[test]
    fn an_a_a_condition_rarely_gets_a_verdict() {
        use crate::stats::verdict::{Direction, Verdict, verdict};
        for (rounds, drift, noise) in [(10, 0.10, 0.02), (10, 0.02, 0.02), (5, 0.05, 0.01)] {
            let mut rng = SplitMix64::new(0xaa + rounds as u64);
            let called = (0..1000)
                .filter(|t| {
                    let r = ratio(&paired_rounds(&mut rng, rounds, 1.0, drift, noise), 1000, *t as u64).unwrap();
                    matches!(
                        verdict(r.ci_low, r.ci_high, 0.03, Direction::LowerIsBetter),
                        Verdict::Faster | Verdict::Slower
                    )
                })
                .count();
            assert!(called <= 50, "{rounds} rounds, drift {drift}, noise {noise}: {called} of 1000 A/A pairs called");
        }
    }

    /// Pairing cancels the drift: the paired interval is far narrower than the drift.
    #[test]
    fn pairing_cancels_the_drift_shared_by_a_round() {
        let mut rng = SplitMix64::new(7);
        let d = paired_rounds(&mut rng, 10, 1.0, 0.10, 0.01);
        let r = ratio(&d, 1000, 1).unwrap();
        assert!(r.ci_high / r.ci_low < 1.05, "{r:?}");
    }
}
