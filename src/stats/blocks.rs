//! Intervals from blocks of consecutive rounds (batch means), for long runs on a
//! machine that moves.
//!
//! Why: a run's rounds are not independent draws when the machine drifts over minutes
//! (another tenant, the host's frequency). Rounds close in time share that moment's
//! speed, so an interval that resamples them as independent is too narrow for what a
//! run a few minutes later will see. Cutting the rounds, in the order they ran, into
//! blocks of [`BLOCK_ROUNDS`] and taking the Student-t interval of the blocks' means
//! (the batch-means method of simulation output analysis) holds every variation faster
//! than a block, including the drift between blocks that a short run would see as
//! drift between runs. Variation slower than the run itself no block can show.
//!
//! On synthetic rounds whose level jumps every 7 rounds by 5% beside 7% round noise,
//! 100 rounds: the independent-rounds interval covers the long-run mean about 73% of
//! the time, the blocks' interval about 93% (tested; blocks longer than the drift's
//! steps would come closer to 95%).

use super::nested::t975;

/// Rounds in a block: those of a default run (`--rounds 10`), so a block's spread is
/// comparable with the spread between default runs that `oscost noise` measures.
pub const BLOCK_ROUNDS: usize = 10;

/// Fewest blocks an interval is drawn from.
pub const MIN_BLOCKS: usize = 3;

/// The means of consecutive blocks of `block` values, in order; a trailing partial
/// block is left out (it would weigh its few rounds as much as a whole block).
pub fn block_means(xs: &[f64], block: usize) -> Vec<f64> {
    if block == 0 {
        return Vec::new();
    }
    xs.chunks_exact(block).map(|c| c.iter().sum::<f64>() / block as f64).collect()
}

/// The standard deviation of the block means of `xs` (None with fewer than two blocks).
pub fn block_sd(xs: &[f64], block: usize) -> Option<f64> {
    super::summarize(&block_means(xs, block)).filter(|s| s.n >= 2).map(|s| s.stddev)
}

/// The half-width of the 95% interval of the mean of `xs` from its blocks of `block`
/// consecutive values, t₀.₉₇₅,B−1·sd/√B over B blocks; None with fewer than
/// [`MIN_BLOCKS`] blocks.
pub fn half_width(xs: &[f64], block: usize) -> Option<f64> {
    let b = xs.len() / block.max(1);
    if b < MIN_BLOCKS {
        return None;
    }
    Some(t975(b - 1) * block_sd(xs, block)? / (b as f64).sqrt())
}

/// The fewest blocks whose interval would be within `half` when blocks spread by `sd`:
/// the smallest B ≥ [`MIN_BLOCKS`] with t₀.₉₇₅,B−1·sd/√B ≤ half; None past `cap`.
pub fn blocks_needed(sd: f64, half: f64, cap: usize) -> Option<usize> {
    if !(sd.is_finite() && half > 0.0) {
        return None;
    }
    (MIN_BLOCKS..=cap.max(MIN_BLOCKS)).find(|&b| t975(b - 1) * sd / (b as f64).sqrt() <= half)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix64;
    use crate::stats::nested::normal;

    #[test]
    fn block_intervals_on_known_values() {
        let xs = [1.0, 3.0, 2.0, 4.0, 3.0, 5.0, 9.0];
        assert_eq!(block_means(&xs, 2), vec![2.0, 3.0, 4.0], "the trailing partial block is left out");
        assert_eq!(block_sd(&xs, 2), Some(1.0));
        assert!((half_width(&xs, 2).unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(half_width(&xs, 3), None, "two blocks are too few");
        assert_eq!(block_means(&xs, 0), Vec::<f64>::new());
        // t₀.₉₇₅,B−1/√B: 4 blocks give 3.182/2 = 1.591, 3 give 2.484.
        assert_eq!(blocks_needed(1.0, 1.6, 100), Some(4));
        assert_eq!(blocks_needed(1.0, 2.5, 100), Some(3));
        assert_eq!(blocks_needed(1.0, 0.01, 100), None, "past the cap");
        assert_eq!(blocks_needed(f64::NAN, 1.0, 100), None);
    }

    /// Rounds whose level jumps every 7 rounds by 5% (log) beside 7% round noise: the
    /// independent-rounds interval misses the long-run mean far more than 5% of the
    /// time, the blocks' interval about 5%.
    #[test]
    fn blocks_cover_a_drifting_machines_mean_where_independent_rounds_do_not() {
        let mut rng = SplitMix64::new(0xb10c);
        let (trials, n) = (1000, 100);
        let (mut blocks_cover, mut rounds_cover) = (0, 0);
        for _ in 0..trials {
            let mut level = 0.0;
            let xs: Vec<f64> = (0..n)
                .map(|r| {
                    if r % 7 == 0 {
                        level = 0.05 * normal(&mut rng);
                    }
                    level + 0.07 * normal(&mut rng)
                })
                .collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            // The true long-run mean is 0.
            blocks_cover += (mean.abs() <= half_width(&xs, BLOCK_ROUNDS).unwrap()) as usize;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
            rounds_cover += (mean.abs() <= t975(n - 1) * sd / (n as f64).sqrt()) as usize;
        }
        assert!((900..=980).contains(&blocks_cover), "blocks cover {blocks_cover} of {trials}");
        assert!(rounds_cover < 800, "independent rounds cover only {rounds_cover} of {trials}");
    }
}
