//! The shift between two samples from their ranks: the Hodges–Lehmann estimate (the
//! median of every difference b − a) with the distribution-free interval Moses drew
//! from the Mann–Whitney statistic (Hollander & Wolfe, "Nonparametric Statistical
//! Methods", §4.3).
//!
//! Why: the rounds of a figure are fresh processes, and on a shared VM most land at one
//! level while a few land far above it (on this project's 2-vCPU VM, one getppid round
//! in five or ten read 35–40% dearer than the rest). A mean and Student's t take those
//! rounds at full weight: ten rounds of getppid whose usual ones agree within 1% gave
//! a ratio interval ±6–8% wide, so two default runs could tell only changes of about
//! 20%. The median of the pairwise differences gives each far round the weight of one
//! rank. Under a shift between two spreads of any shape the interval holds its 95%
//! exactly (it rests on the ranks alone); on a normal spread it is as tight as
//! Student's t with about 5% more rounds (asymptotic relative efficiency 3/π).
//!
//! Its limit is few units: with m and n units the interval's ends are order statistics
//! of the m·n differences, and they are coarse. Three and three have none far enough
//! out for 95% (the most extreme ordering is 1 in 20 each way); four and four only the
//! span of all sixteen differences (97% held, wider than Student's t). Below five a
//! side, callers take the means.

use super::student;

/// Units a side needs for the rank interval; fewer take Student's t on the means.
pub const MIN_UNITS: usize = 5;

/// Past this many differences the Mann–Whitney count is read from its normal
/// approximation (with continuity correction), which there misses the exact count by
/// at most one difference; below it the exact distribution is counted.
const EXACT_PAIRS: usize = 900;

/// How many of the smallest (and of the largest) differences a 95% interval leaves
/// out: the Mann–Whitney critical value, the largest c with P(U ≤ c) ≤ 2.5% under no
/// shift, where U counts the pairs with b below a. The interval runs from the
/// (c+1)-th smallest difference to the (c+1)-th largest. None when even U = 0 is
/// likelier than 2.5% (too few units).
pub fn excluded(m: usize, n: usize) -> Option<usize> {
    if m == 0 || n == 0 {
        return None;
    }
    if m * n <= EXACT_PAIRS { exact_excluded(m, n) } else { normal_excluded(m, n) }
}

/// [`excluded`] from the exact null distribution of U: the number of orderings of m
/// a's among n b's with U = u satisfies N(m, n, u) = N(m−1, n, u−n) + N(m, n−1, u).
fn exact_excluded(m: usize, n: usize) -> Option<usize> {
    let max = m * n;
    // counts[j][u] = N(i, j, u) for the current i; f64 holds C(60, 30) exactly enough.
    let mut counts: Vec<Vec<f64>> = (0..=n).map(|_| vec![0.0; max + 1]).collect();
    for row in counts.iter_mut() {
        row[0] = 1.0; // N(0, j, 0) = 1
    }
    for _ in 1..=m {
        let mut next: Vec<Vec<f64>> = (0..=n).map(|_| vec![0.0; max + 1]).collect();
        next[0][0] = 1.0; // N(i, 0, 0) = 1
        for j in 1..=n {
            for u in 0..=max {
                let from_a = if u >= j { counts[j][u - j] } else { 0.0 };
                next[j][u] = from_a + next[j - 1][u];
            }
        }
        counts = next;
    }
    let total: f64 = counts[n].iter().sum();
    let mut cumulative = 0.0;
    // The count of values u with P(U ≤ u) ≤ 2.5%: one more than the critical value.
    let mut within = 0;
    while within <= max {
        cumulative += counts[n][within];
        if cumulative / total > 0.025 {
            break;
        }
        within += 1;
    }
    within.checked_sub(1)
}

/// [`excluded`] from the normal approximation of U.
fn normal_excluded(m: usize, n: usize) -> Option<usize> {
    let (mf, nf) = (m as f64, n as f64);
    let sd = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
    // P(U ≤ c) ≈ Φ((c + ½ − mn/2)/sd) ≤ 2.5%.
    let c = (mf * nf / 2.0 - super::Z975 * sd - 0.5).floor();
    (c >= 0.0).then_some(c as usize)
}

/// The Hodges–Lehmann shift of `b` from `a` with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// The median of every difference b − a.
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// The degrees of freedom of the Student t with the same sides (m + n − 2): what
    /// a p-value or power read off this interval takes, treating its half-width as
    /// that many standard errors.
    pub df: f64,
}

/// The shift of `b` from `a`. None when a side has fewer than [`MIN_UNITS`] values or
/// a value is not finite.
pub fn shift(a: &[f64], b: &[f64]) -> Option<Shift> {
    let (m, n) = (a.len(), b.len());
    if m < MIN_UNITS || n < MIN_UNITS || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let c = excluded(m, n)?;
    let mut d: Vec<f64> = a.iter().flat_map(|x| b.iter().map(move |y| y - x)).collect();
    d.sort_by(f64::total_cmp);
    Some(Shift { estimate: super::median(&d), low: d[c], high: d[d.len() - 1 - c], df: (m + n - 2) as f64 })
}

/// The standard error a [`Shift`]'s interval implies, read as Student's t.
pub fn standard_error(s: &Shift) -> f64 {
    (s.high - s.low) / (2.0 * student::quantile(0.975, s.df))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix64;
    use crate::stats::nested::normal;

    /// The critical values of the two-sided 5% Mann–Whitney test as tables print them
    /// (the largest U rejected).
    #[test]
    fn the_exact_counts_match_the_published_critical_values() {
        for (m, n, critical) in [(5, 5, 2), (6, 6, 5), (8, 8, 13), (10, 10, 23), (5, 10, 8), (20, 20, 127)] {
            assert_eq!(excluded(m, n), Some(critical), "{m}×{n}");
        }
        // Four and four: the most extreme ordering alone is 1/70 each way, 2.9% in all,
        // so only the whole span holds 95%; three and three, 1/20 each way: nothing does.
        assert_eq!(excluded(4, 4), Some(0));
        assert_eq!(excluded(3, 3), None);
    }

    #[test]
    fn the_normal_approximation_meets_the_exact_count_where_it_takes_over() {
        for (m, n) in [(30, 30), (25, 36), (20, 45)] {
            let (e, a) = (exact_excluded(m, n).unwrap() as i64, normal_excluded(m, n).unwrap() as i64);
            assert!((e - a).abs() <= 1, "{m}×{n}: exact {e}, normal {a}");
        }
    }

    #[test]
    fn known_differences_give_the_known_shift() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b: Vec<f64> = a.iter().map(|x| x + 10.0).collect();
        let s = shift(&a, &b).unwrap();
        assert_eq!(s.estimate, 10.0);
        // 5×5 leaves out the 2 smallest and 2 largest of 25 differences.
        assert_eq!((s.low, s.high), (7.0, 13.0));
        assert_eq!(shift(&a[..4], &b), None);
    }

    /// Rounds as the VM gives them: most at one level, each one with `far` chance of
    /// landing 38% dearer, beside 1% round noise; logs.
    fn rounds(rng: &mut SplitMix64, k: usize, level: f64, far: f64) -> Vec<f64> {
        (0..k)
            .map(|_| {
                let jump = if ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < far { 1.38f64.ln() } else { 0.0 };
                level + jump + 0.01 * normal(rng)
            })
            .collect()
    }

    /// Coverage of a true shift of 5%, over 2000 trials: 95% ± 1.5% both for normal
    /// rounds and for rounds with far ones.
    #[test]
    fn the_interval_covers_a_known_shift_at_its_nominal_rate() {
        let truth = 1.05f64.ln();
        for far in [0.0, 0.15] {
            let mut rng = SplitMix64::new(52);
            let trials = 2000;
            let covered = (0..trials)
                .filter(|_| {
                    let a = rounds(&mut rng, 10, 0.0, far);
                    let b = rounds(&mut rng, 10, truth, far);
                    let s = shift(&a, &b).unwrap();
                    s.low <= truth && truth <= s.high
                })
                .count();
            let rate = covered as f64 / trials as f64;
            assert!((0.935..=0.975).contains(&rate), "far {far}: coverage {rate}");
        }
    }

    /// Where one round in ten lands far, the rank interval is several times tighter
    /// than Student's t on the means of the same rounds; on normal rounds about as
    /// tight.
    #[test]
    fn far_rounds_widen_the_means_interval_and_not_the_ranks() {
        let widths = |far: f64| {
            let mut rng = SplitMix64::new(7);
            let (mut rank, mut mean) = (Vec::new(), Vec::new());
            for _ in 0..400 {
                let a = rounds(&mut rng, 10, 0.0, far);
                let b = rounds(&mut rng, 10, 0.0, far);
                let s = shift(&a, &b).unwrap();
                rank.push(s.high - s.low);
                let moments = |x: &[f64]| {
                    let m = x.iter().sum::<f64>() / x.len() as f64;
                    (m, x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64 / x.len() as f64)
                };
                let ((_, va), (_, vb)) = (moments(&a), moments(&b));
                mean.push(2.0 * student::quantile(0.975, 18.0) * (va + vb).sqrt());
            }
            (crate::stats::median(&rank), crate::stats::median(&mean))
        };
        let (rank, mean) = widths(0.1);
        assert!(rank * 3.0 < mean, "far rounds: rank {rank}, mean {mean}");
        let (rank, mean) = widths(0.0);
        assert!(rank < mean * 1.25 && mean < rank * 1.25, "normal rounds: rank {rank}, mean {mean}");
    }
}
