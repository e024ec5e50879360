//! Statistics on samples: summaries, percentiles, a distribution-free confidence
//! interval for the median of one window, outlier classification, least-squares fits,
//! (`nested`) intervals and ratios from the levels of the experiment that vary, and
//! (`blocks`) intervals from blocks of consecutive rounds, and (`modes`) whether rounds
//! sit at two levels, and (`shift`) whether the rows of a comparison moved as one, and
//! (`rank`) the shift between two sets of rounds from their ranks.
//!
//! Everything here is pure and deterministic (the bootstrap uses a seeded generator),
//! so it is tested on known values.

use serde::{Deserialize, Serialize};

/// The normal distribution's 97.5% point: the z of a two-sided 95% interval.
pub const Z975: f64 = 1.959_964;

pub mod blocks;
pub mod changepoint;
pub mod modes;
pub mod nested;
pub mod paired;
pub mod planner;
pub mod power;
pub mod rank;
pub mod shift;
pub mod student;
pub mod verdict;

/// The summary of one set of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    /// 95% confidence interval of the median (order statistics, no normality assumed).
    pub ci_low: f64,
    pub ci_high: f64,
    pub outliers: Outliers,
}

/// Samples outside Tukey's fences, counted (never dropped).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outliers {
    pub low_severe: usize,
    pub low_mild: usize,
    pub high_mild: usize,
    pub high_severe: usize,
}

impl Outliers {
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }
}

/// Sorted copy of finite samples.
fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The `q`-quantile (0..=1) of sorted data by linear interpolation between closest ranks.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

/// The `q`-quantile of unsorted samples.
pub fn quantile(samples: &[f64], q: f64) -> f64 {
    quantile_sorted(&sorted(samples), q)
}

/// Median of unsorted samples.
pub fn median(samples: &[f64]) -> f64 {
    quantile_sorted(&sorted(samples), 0.5)
}

/// Summarises samples. Returns None for an empty set.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let s = sorted(samples);
    let n = s.len();
    if n == 0 {
        return None;
    }
    let mean = s.iter().sum::<f64>() / n as f64;
    let var = if n > 1 { s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
    let median = quantile_sorted(&s, 0.5);
    let (ci_low, ci_high) = median_ci_sorted(&s);
    Some(Summary {
        n,
        min: s[0],
        max: s[n - 1],
        median,
        mean,
        stddev: var.sqrt(),
        ci_low,
        ci_high,
        outliers: classify_outliers_sorted(&s),
    })
}

/// 95% confidence interval for the median from order statistics: the ranks
/// n/2 ± 1.96·√n/2 (normal approximation to the binomial), clamped to the data.
pub fn median_ci_sorted(sorted: &[f64]) -> (f64, f64) {
    let n = sorted.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let half = 1.96 * (n as f64).sqrt() / 2.0;
    let centre = n as f64 / 2.0;
    let lo = ((centre - half).floor().max(1.0) as usize).min(n) - 1;
    let hi = ((centre + half).ceil() as usize).clamp(1, n) - 1;
    (sorted[lo], sorted[hi])
}

/// Tukey's fences: mild beyond 1.5 IQR from the quartiles, severe beyond 3 IQR.
pub fn classify_outliers_sorted(sorted: &[f64]) -> Outliers {
    let q1 = quantile_sorted(sorted, 0.25);
    let q3 = quantile_sorted(sorted, 0.75);
    let iqr = q3 - q1;
    let mut o = Outliers::default();
    for &x in sorted {
        if x < q1 - 3.0 * iqr {
            o.low_severe += 1;
        } else if x < q1 - 1.5 * iqr {
            o.low_mild += 1;
        } else if x > q3 + 3.0 * iqr {
            o.high_severe += 1;
        } else if x > q3 + 1.5 * iqr {
            o.high_mild += 1;
        }
    }
    o
}

/// The per-call percentiles oscost reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// p50/p90/p99/p99.9/max of samples; None for an empty set.
pub fn percentiles(samples: &[f64]) -> Option<Percentiles> {
    let s = sorted(samples);
    if s.is_empty() {
        return None;
    }
    Some(Percentiles {
        p50: quantile_sorted(&s, 0.5),
        p90: quantile_sorted(&s, 0.9),
        p99: quantile_sorted(&s, 0.99),
        p999: quantile_sorted(&s, 0.999),
        max: s[s.len() - 1],
    })
}

/// A least-squares line y = intercept + slope·x.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinearFit {
    pub slope: f64,
    pub intercept: f64,
    /// Coefficient of determination (1 = the line explains all variance).
    pub r_squared: f64,
    /// Standard error of the slope (NaN with two points or fewer).
    pub slope_stderr: f64,
}

/// Fits y = a + b·x by ordinary least squares. None with fewer than two distinct x.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> Option<LinearFit> {
    let n = xs.len().min(ys.len());
    if n < 2 {
        return None;
    }
    let mx = xs[..n].iter().sum::<f64>() / n as f64;
    let my = ys[..n].iter().sum::<f64>() / n as f64;
    let sxx: f64 = xs[..n].iter().map(|x| (x - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = xs[..n].iter().zip(&ys[..n]).map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_tot: f64 = ys[..n].iter().map(|y| (y - my).powi(2)).sum();
    let ss_res: f64 = xs[..n].iter().zip(&ys[..n]).map(|(x, y)| (y - intercept - slope * x).powi(2)).sum();
    let r_squared = if ss_tot == 0.0 { 1.0 } else { 1.0 - ss_res / ss_tot };
    let slope_stderr = if n > 2 { (ss_res / (n - 2) as f64 / sxx).sqrt() } else { f64::NAN };
    Some(LinearFit { slope, intercept, r_squared, slope_stderr })
}

/// SplitMix64: a tiny, seeded generator so bootstraps are reproducible.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform index below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// A ratio with its bootstrap confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioEstimate {
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The degrees of freedom of the Student t the 95% interval was drawn with: its
    /// half-width is t₀.₉₇₅,df standard errors (Welch's, or the smaller side's units
    /// less one for a widened bootstrap). A verdict's tail is read from the same t.
    pub df: f64,
}

fn thin(sorted: &[f64], max: usize) -> Vec<f64> {
    if sorted.len() <= max {
        return sorted.to_vec();
    }
    (0..max).map(|i| sorted[i * (sorted.len() - 1) / (max - 1)]).collect()
}

/// Jain's fairness index of shares: 1 when all equal, 1/n when one has everything.
pub fn jain_index(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 { f64::NAN } else { s * s / (xs.len() as f64 * s2) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(s.n, 5);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mean, 3.0);
        assert!((s.stddev - 2.5f64.sqrt()).abs() < 1e-12);
        assert!(s.ci_low <= s.median && s.median <= s.ci_high);
    }

    #[test]
    fn empty_and_nonfinite_are_handled() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN]).is_none());
        assert_eq!(summarize(&[f64::NAN, 2.0]).unwrap().n, 1);
    }

    #[test]
    fn quantiles_interpolate() {
        let s = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(quantile_sorted(&s, 0.0), 10.0);
        assert_eq!(quantile_sorted(&s, 1.0), 40.0);
        assert_eq!(quantile_sorted(&s, 0.5), 25.0);
        let p = percentiles(&(1..=1000).map(f64::from).collect::<Vec<_>>()).unwrap();
        assert!((p.p50 - 500.5).abs() < 1e-9);
        assert!((p.p99 - 990.01).abs() < 1e-9);
        assert_eq!(p.max, 1000.0);
    }

    #[test]
    fn median_ci_covers_central_ranks() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let (lo, hi) = median_ci_sorted(&v);
        // n=100: ranks 50 ± 9.8 → 41st and 60th values.
        assert_eq!((lo, hi), (40.0, 60.0));
    }

    #[test]
    fn outliers_are_classified() {
        let mut v: Vec<f64> = (0..100).map(|i| 10.0 + (i % 5) as f64).collect();
        v.push(100.0); // severe high
        v.push(17.5); // mild high: q3=13, iqr=2 → mild above 16, severe above 19
        let o = classify_outliers_sorted(&sorted(&v));
        assert_eq!(o.high_severe, 1);
        assert_eq!(o.high_mild, 1);
        assert_eq!(o.total(), 2);
    }

    #[test]
    fn linear_fit_recovers_line() {
        let xs = [0.0, 1.0, 2.0, 3.0];
        let ys = [1.0, 3.0, 5.0, 7.0];
        let f = linear_fit(&xs, &ys).unwrap();
        assert!((f.slope - 2.0).abs() < 1e-12);
        assert!((f.intercept - 1.0).abs() < 1e-12);
        assert!((f.r_squared - 1.0).abs() < 1e-12);
        assert!(f.slope_stderr.abs() < 1e-12);
        assert!(linear_fit(&[1.0, 1.0], &[2.0, 3.0]).is_none());
        // Noisy points: the standard error is positive and the slope stays close.
        let xs = [0.0, 0.0, 64.0, 64.0, 512.0, 512.0];
        let ys = [100.0, 110.0, 740.0, 760.0, 5_200.0, 5_000.0];
        let f = linear_fit(&xs, &ys).unwrap();
        assert!((f.slope - 9.6).abs() < 0.5, "{f:?}");
        assert!(f.slope_stderr > 0.0 && f.slope_stderr < 1.0);
    }

    #[test]
    fn jain_index_bounds() {
        assert!((jain_index(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    }

    proptest::proptest! {
        #[test]
        fn summary_orders_hold(v in proptest::collection::vec(-1e6f64..1e6, 1..200)) {
            let s = summarize(&v).unwrap();
            proptest::prop_assert!(s.min <= s.median && s.median <= s.max);
            proptest::prop_assert!(s.min <= s.mean + 1e-6 && s.mean <= s.max + 1e-6);
            proptest::prop_assert!(s.ci_low <= s.median && s.median <= s.ci_high);
            proptest::prop_assert!(s.stddev >= 0.0);
        }
    }
}
