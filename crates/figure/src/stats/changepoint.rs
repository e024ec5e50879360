//! Change points in a series of run medians: where a figure's level moved across runs
//! spread over days or machines, and by how much.
//!
//! The series is the logarithm of each run's median (a step is a ratio, the same
//! size at 1 µs and at 1 ms). The method is binary segmentation with a robust cost:
//! a segment costs the squared deviations of its runs from the segment's median,
//! each truncated at `TRUNCATE_SIGMAS`·σ (the biweight loss of Fearnhead and Rigaill,
//! "Changepoint detection in the presence of outliers", JASA 2019), so one odd run,
//! or two, cannot open a segment of their own. A split is kept when it lowers the
//! cost by more than the penalty β = `PENALTY_PER_LN_N`·ln(n)·σ² and leaves at least
//! `MIN_SEGMENT` runs on each side; each side is then searched again.
//!
//! σ is the run-to-run noise of the series itself, measured on the machine that ran
//! it (`run_to_run_sigma`: successive differences, which a step touches once), never
//! a constant: a quiet figure's penalty is small, a noisy one's large. The caller may
//! raise σ to a floor (the runs' own intervals) but never lower it.
//!
//! Calibration (the tests below, on this project's 2-vCPU VM's noise: run-to-run
//! standard deviation of log medians 2.2% for the median figure over 11 quiet
//! back-to-back default runs): a 10% step with five or more runs a side is found and
//! placed within one run in ≥ 90% of seeded trials; series of 30 runs without a step
//! raise a change in ≤ 5%, also when one run in twenty is 15% slow.

use super::{Z975, median};

/// Fewest runs a segment may hold.
pub const MIN_SEGMENT: usize = 2;
/// Deviations beyond this many σ cost no more than this many σ.
pub const TRUNCATE_SIGMAS: f64 = 3.0;
/// The penalty per split, in units of σ²·ln(n).
pub const PENALTY_PER_LN_N: f64 = 4.0;
/// The smallest noise a series is credited with (0.01% in log terms): a series of
/// identical values must not make every later wobble a change.
pub const SIGMA_FLOOR: f64 = 1e-4;

/// The run-to-run noise of a series of log medians: the median absolute successive
/// difference, scaled to a normal standard deviation (×1.4826/√2). A step between
/// two runs touches one difference of n−1, so the estimate holds across the very
/// changes it is used to find. None for fewer than three points.
pub fn run_to_run_sigma(logs: &[f64]) -> Option<f64> {
    if logs.len() < 3 {
        return None;
    }
    let diffs: Vec<f64> = logs.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    Some(1.4826 * median(&diffs) / std::f64::consts::SQRT_2)
}

/// A segment's robust cost: squared deviations from its median, truncated.
fn cost(seg: &[f64], sigma: f64) -> f64 {
    let m = median(seg);
    let cap = (TRUNCATE_SIGMAS * sigma).powi(2);
    seg.iter().map(|y| (y - m).powi(2).min(cap)).sum()
}

/// The best split of `seg` (its index within `seg`) and how much it lowers the cost.
fn best_split(seg: &[f64], sigma: f64) -> Option<(usize, f64)> {
    let whole = cost(seg, sigma);
    (MIN_SEGMENT..=seg.len().saturating_sub(MIN_SEGMENT))
        .map(|k| (k, whole - cost(&seg[..k], sigma) - cost(&seg[k..], sigma)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The indices at which a new segment begins (sorted), for a series of log medians
/// with run-to-run noise `sigma`: binary segmentation, then a pass that moves each
/// change to its best place between its neighbours and drops any whose removal costs
/// less than the penalty (binary segmentation's greedy first split can leave a short
/// segment between two of the same level).
pub fn change_points(logs: &[f64], sigma: f64) -> Vec<usize> {
    let sigma = sigma.max(SIGMA_FLOOR);
    if logs.len() < 2 * MIN_SEGMENT || logs.iter().any(|y| !y.is_finite()) {
        return Vec::new();
    }
    let beta = PENALTY_PER_LN_N * (logs.len() as f64).ln() * sigma * sigma;
    let mut found = segment(logs, sigma, beta);
    // Each pass either moves a change to a strictly better place or drops one, so it
    // ends; the bound is a guard.
    for _ in 0..4 * logs.len() {
        if !(place_best(logs, sigma, &mut found) || drop_weakest(logs, sigma, beta, &mut found)) {
            break;
        }
    }
    found
}

/// Binary segmentation: split where the cost falls most, while it falls by more than
/// `beta`, then search each side.
fn segment(logs: &[f64], sigma: f64, beta: f64) -> Vec<usize> {
    let mut found = Vec::new();
    // The ranges still to search, starting with the whole series.
    let mut open: Vec<std::ops::Range<usize>> = Vec::new();
    open.push(0..logs.len());
    while let Some(r) = open.pop() {
        if let Some((k, gain)) = best_split(&logs[r.clone()], sigma)
            && gain > beta
        {
            let at = r.start + k;
            found.push(at);
            open.push(r.start..at);
            open.push(at..r.end);
        }
    }
    found.sort_unstable();
    found
}

/// The segment bounds around change `i` of `cps`: its neighbours, or the series' ends.
fn neighbours(cps: &[usize], i: usize, n: usize) -> (usize, usize) {
    (if i == 0 { 0 } else { cps[i - 1] }, cps.get(i + 1).copied().unwrap_or(n))
}

/// Moves one change to where the two segments it separates cost least; whether one
/// moved.
fn place_best(logs: &[f64], sigma: f64, cps: &mut [usize]) -> bool {
    for i in 0..cps.len() {
        let (lo, hi) = neighbours(cps, i, logs.len());
        let here = cost(&logs[lo..cps[i]], sigma) + cost(&logs[cps[i]..hi], sigma);
        if let Some((k, gain)) = best_split(&logs[lo..hi], sigma)
            && lo + k != cps[i]
            && cost(&logs[lo..hi], sigma) - gain < here - 1e-12
        {
            cps[i] = lo + k;
            return true;
        }
    }
    false
}

/// Drops the change whose removal raises the cost least, when that is below `beta`;
/// whether one was dropped.
fn drop_weakest(logs: &[f64], sigma: f64, beta: f64, cps: &mut Vec<usize>) -> bool {
    let rise = |i: usize| {
        let (lo, hi) = neighbours(cps, i, logs.len());
        cost(&logs[lo..hi], sigma) - cost(&logs[lo..cps[i]], sigma) - cost(&logs[cps[i]..hi], sigma)
    };
    let weakest = (0..cps.len()).map(|i| (i, rise(i))).min_by(|a, b| a.1.total_cmp(&b.1));
    match weakest {
        Some((i, r)) if r <= beta => {
            cps.remove(i);
            true
        }
        _ => false,
    }
}

/// A step between two adjacent segments: the ratio of their medians and its
/// interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Shift {
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// The step from `before` to `after` (log medians of runs): the ratio of their
/// medians, with a 95% interval from the run-to-run noise σ (the median of n runs
/// has a standard error of about 1.2533·σ/√n). The interval is conditional on where
/// the change was placed, which the data chose: read it as the size's precision, not
/// as evidence that there was a change.
pub fn shift(before: &[f64], after: &[f64], sigma: f64) -> Shift {
    let sigma = sigma.max(SIGMA_FLOOR);
    let d = median(after) - median(before);
    let se = 1.2533 * sigma * (1.0 / before.len() as f64 + 1.0 / after.len() as f64).sqrt();
    Shift { ratio: d.exp(), ci_low: (d - Z975 * se).exp(), ci_high: (d + Z975 * se).exp() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix64;
    use crate::stats::nested::normal;

    /// This machine's run-to-run noise (see the module note): 2.2% in log terms.
    const MACHINE_SIGMA: f64 = 0.022;

    fn noise(rng: &mut SplitMix64, n: usize, sigma: f64) -> Vec<f64> {
        (0..n).map(|_| sigma * normal(rng)).collect()
    }

    fn detect(y: &[f64]) -> Vec<usize> {
        change_points(y, run_to_run_sigma(y).unwrap())
    }

    #[test]
    fn the_noise_estimate_recovers_a_known_sigma_and_ignores_a_step() {
        let mut rng = SplitMix64::new(7);
        let y = noise(&mut rng, 4000, 0.03);
        let s = run_to_run_sigma(&y).unwrap();
        assert!((s - 0.03).abs() < 0.002, "{s}");
        let mut stepped = y.clone();
        stepped[2000..].iter_mut().for_each(|v| *v += 0.5);
        let s2 = run_to_run_sigma(&stepped).unwrap();
        assert!((s2 - s).abs() < 0.001, "a step moves one difference of 3999: {s} vs {s2}");
        assert_eq!(run_to_run_sigma(&[1.0, 2.0]), None);
    }

    #[test]
    fn a_ten_percent_step_is_found_and_placed_within_one_run() {
        let mut rng = SplitMix64::new(11);
        let trials = 600;
        let (mut found, mut placed) = (0, 0);
        for t in 0..trials {
            // Five to ten runs each side.
            let (n1, n2) = (5 + t % 6, 5 + (t / 6) % 6);
            let mut y = noise(&mut rng, n1 + n2, MACHINE_SIGMA);
            y[n1..].iter_mut().for_each(|v| *v += 1.1f64.ln());
            let cps = detect(&y);
            found += usize::from(!cps.is_empty());
            placed += usize::from(cps.iter().any(|&k| k.abs_diff(n1) <= 1));
        }
        eprintln!("10% step: found in {found}, placed within one run in {placed} of {trials} trials");
        assert!(found as f64 >= 0.9 * trials as f64, "found in {found} of {trials}");
        assert!(placed as f64 >= 0.9 * trials as f64, "placed in {placed} of {trials}");
    }

    #[test]
    fn series_without_a_step_raise_a_change_rarely_even_with_odd_runs() {
        let mut rng = SplitMix64::new(13);
        let trials = 1000;
        let (mut clean, mut odd) = (0, 0);
        for _ in 0..trials {
            let y = noise(&mut rng, 30, MACHINE_SIGMA);
            clean += usize::from(!detect(&y).is_empty());
            // One run in twenty 15% slow (a neighbour, a timer storm).
            let y: Vec<f64> = y.iter().map(|v| if rng.below(20) == 0 { v + 1.15f64.ln() } else { *v }).collect();
            odd += usize::from(!detect(&y).is_empty());
        }
        eprintln!("no step: {clean} of {trials} series raised a change ({odd} with odd runs)");
        assert!(clean as f64 <= 0.05 * trials as f64, "{clean} of {trials} A/A series raised a change");
        assert!(odd as f64 <= 0.05 * trials as f64, "{odd} of {trials} series with odd runs raised a change");
    }

    #[test]
    fn the_false_alarm_rate_does_not_depend_on_the_noise_level() {
        // σ is measured from the series, so the penalty scales with it.
        for sigma in [0.005, 0.08] {
            let mut rng = SplitMix64::new(17);
            let raised = (0..400).filter(|_| !detect(&noise(&mut rng, 30, sigma)).is_empty()).count();
            assert!(raised <= 20, "σ = {sigma}: {raised} of 400");
        }
    }

    #[test]
    fn two_steps_are_both_found_and_sizes_have_honest_intervals() {
        let y: Vec<f64> =
            (0..30).map(|i| if i < 10 { 0.0 } else if i < 20 { 0.2 } else { 0.1 } + 0.001 * (i % 3) as f64).collect();
        let cps = change_points(&y, 0.01);
        assert_eq!(cps, vec![10, 20]);
        let s = shift(&y[..10], &y[10..20], 0.01);
        assert!((s.ratio - 0.2f64.exp()).abs() < 0.01, "{s:?}");
        assert!(s.ci_low < s.ratio && s.ratio < s.ci_high);
        // Coverage on synthetic steps placed where they are: the true ratio inside
        // the interval in about 95% of trials.
        let mut rng = SplitMix64::new(19);
        let covered = (0..1000)
            .filter(|_| {
                let a = noise(&mut rng, 8, MACHINE_SIGMA);
                let b: Vec<f64> = noise(&mut rng, 8, MACHINE_SIGMA).iter().map(|v| v + 0.1).collect();
                let s = shift(&a, &b, MACHINE_SIGMA);
                s.ci_low <= 0.1f64.exp() && 0.1f64.exp() <= s.ci_high
            })
            .count();
        assert!((920..=985).contains(&covered), "{covered} of 1000");
    }

    #[test]
    fn short_or_broken_series_have_no_change_points() {
        assert!(change_points(&[0.0, 1.0, 1.0], 0.01).is_empty(), "too short for two segments of two");
        assert!(change_points(&[0.0, 0.0, f64::NAN, 1.0, 1.0], 0.01).is_empty());
        assert_eq!(change_points(&[0.0, 0.0, 1.0, 1.0], 0.01), vec![2]);
        // Identical runs: the floor keeps later rounding from reading as a change.
        assert!(change_points(&[0.0; 12], 0.0).is_empty());
    }
}
