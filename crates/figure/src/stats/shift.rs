//! A shift every figure shares: whether one side of a comparison sits dearer (or
//! cheaper) than the other across the board, beyond what rows moving each on its own
//! would show.
//!
//! Why: a comparison judges each row against its own interval, and with one run a side
//! those intervals hold only what varied inside each run. When the whole machine moves
//! between two runs (a shared host whose other guests load the core: on the 2-vCPU VM
//! oscost was built on, a plain C loop of getppid read 166 ns and 249 ns ten seconds
//! apart, with no steal time counted), every figure moves together and many rows clear
//! their intervals at once. A change that touches every kernel entry (a seccomp filter,
//! a mitigation) looks the same. One run a side cannot tell the two apart; what it can
//! do is say that the rows moved as one, which rows moving each on its own almost never
//! do, and name what tells the causes apart.
//!
//! The test is the sign test on the rows' log ratios, oriented so that positive is
//! dearer: under rows that move independently around no common shift, the number on
//! one side of zero is Binomial(n, ½). A shift is named when that count is past the
//! binomial's 1 − [`SHIFT_ALPHA`] point and the rows' median ratio is past the
//! comparison's threshold.

use serde::Serialize;
use statrs::distribution::{Binomial, DiscreteCDF};

/// The sign test's false-alarm rate for rows with no shared shift.
pub const SHIFT_ALPHA: f64 = 0.001;

/// Fewer rows than this say nothing about the board: ten rows all on one side is the
/// fewest whose chance (2⁻¹⁰) is under [`SHIFT_ALPHA`].
pub const MIN_ROWS: usize = 10;

/// Rows that moved as one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CommonShift {
    /// Rows judged (a finite, oriented log ratio each).
    pub rows: usize,
    /// Rows on the shift's side of no change.
    pub moved: usize,
    /// The rows' median ratio, oriented: above 1 dearer, below 1 cheaper.
    pub median_ratio: f64,
    /// The sign test's one-sided p-value for `moved` of `rows`.
    pub p: f64,
}

impl CommonShift {
    /// Whether the shared shift made the second side dearer.
    pub fn dearer(&self) -> bool {
        self.median_ratio > 1.0
    }
}

/// The shift `oriented` (each row's ln(B/A), signed so that positive is dearer) share,
/// when at least [`MIN_ROWS`] rows moved as one past `threshold` (a fraction: 0.03 for
/// 3%); None otherwise.
pub fn common_shift(oriented: &[f64], threshold: f64) -> Option<CommonShift> {
    let rows: Vec<f64> = oriented.iter().copied().filter(|x| x.is_finite()).collect();
    let n = rows.len();
    if n < MIN_ROWS {
        return None;
    }
    let median = super::median(&rows);
    if median.abs() < (1.0 + threshold).ln() {
        return None;
    }
    let moved = rows.iter().filter(|x| x.signum() == median.signum() && **x != 0.0).count();
    let p = sign_p(moved, n)?;
    (p < SHIFT_ALPHA).then_some(CommonShift { rows: n, moved, median_ratio: median.exp(), p })
}

/// P(X ≥ k) for X ~ Binomial(n, ½): the chance that `k` or more of `n` rows moving
/// each on its own land on one given side.
fn sign_p(k: usize, n: usize) -> Option<f64> {
    if k == 0 {
        return Some(1.0);
    }
    let b = Binomial::new(0.5, n as u64).ok()?;
    Some(b.sf(k as u64 - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix64;
    use crate::stats::nested::normal;

    fn rows(rng: &mut SplitMix64, n: usize, shift: f64, sd: f64) -> Vec<f64> {
        (0..n).map(|_| shift + sd * normal(rng)).collect()
    }

    #[test]
    fn the_sign_test_reads_the_binomial_tail() {
        assert_eq!(sign_p(0, 10), Some(1.0));
        assert!((sign_p(10, 10).unwrap() - 1.0 / 1024.0).abs() < 1e-12);
        assert!((sign_p(9, 10).unwrap() - 11.0 / 1024.0).abs() < 1e-12);
        assert!((sign_p(5, 10).unwrap() - 638.0 / 1024.0).abs() < 1e-12);
    }

    #[test]
    fn rows_moving_each_on_its_own_are_not_a_shift() {
        // A/A: 40 or 58 rows, each with its own noise of 5% to 20% and no shared
        // shift; the sign test at 0.001 and the median past 3% rarely agree.
        let mut rng = SplitMix64::new(11);
        for (n, sd) in [(40, 0.05), (58, 0.1), (20, 0.2), (10, 0.1)] {
            let fired = (0..2000).filter(|_| common_shift(&rows(&mut rng, n, 0.0, sd), 0.03).is_some()).count();
            assert!(fired <= 4, "{n} rows, sd {sd}: {fired} of 2000");
        }
    }

    #[test]
    fn rows_that_moved_as_one_are_a_shift() {
        // The whole board 15% dearer, each row with 10% of its own noise: named
        // nearly always, with its size; and the same 15% cheaper.
        let mut rng = SplitMix64::new(12);
        let mut sizes = Vec::new();
        let fired = (0..1000)
            .filter_map(|_| common_shift(&rows(&mut rng, 40, 1.15f64.ln(), 0.1), 0.03))
            .inspect(|s| sizes.push(s.median_ratio))
            .count();
        assert!(fired >= 990, "{fired} of 1000");
        let mid = crate::stats::median(&sizes);
        assert!((1.10..1.20).contains(&mid), "median ratio {mid}");
        let cheaper = common_shift(&rows(&mut rng, 40, -(1.15f64.ln()), 0.1), 0.03).expect("a shift");
        assert!(!cheaper.dearer() && cheaper.moved >= 30, "{cheaper:?}");
    }

    #[test]
    fn a_split_board_or_a_shift_inside_the_threshold_is_not_one() {
        // Half the rows 20% dearer and half 20% cheaper: every row moved, not as one.
        let split: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { 0.2f64 } else { -0.2 }).collect();
        assert_eq!(common_shift(&split, 0.03), None);
        // Every row 1% dearer: one direction, but inside a 3% threshold.
        assert_eq!(common_shift(&[0.01; 40], 0.03), None);
        // Too few rows to say anything of the board.
        assert_eq!(common_shift(&[0.3; MIN_ROWS - 1], 0.03), None);
        assert!(common_shift(&[0.3; MIN_ROWS], 0.03).is_some());
    }
}
