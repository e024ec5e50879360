//! Intervals from blocks of consecutive rounds (batch means), for long runs on a
//! machine that moves.
//!
//! Why: a run's rounds are not independent draws when the machine drifts over minutes
//! (another tenant, the host's frequency). Rounds close in time share that moment's
//! speed, so an interval that resamples them as independent is too narrow for what a
//! run a few minutes later will see. Cutting the rounds, in the order they ran, into
//! blocks and taking the Student-t interval of the blocks' means (the batch-means
//! method of simulation output analysis) holds every variation faster than a block,
//! including the drift between blocks that a short run would see as drift between
//! runs. Variation slower than the run itself no block can show.
//!
//! How long a block is: [`BLOCK_ROUNDS`], the rounds of a default run, unless the
//! blocks' means are still correlated. A block of ten rounds spans a default run's
//! minute when every benchmark of the suite takes its turn between rounds, but about
//! a second when a cheap benchmark runs alone for minutes under `--precision`; then
//! neighbouring blocks share the machine's moment, and their means' spread understates
//! the mean's (on this project's VM, ten-round blocks of a 60 s fork run gave ±10–13%
//! where eighty-round blocks gave ±19–40%). So the length doubles while the lag-1
//! correlation of the block means is positive beyond chance (one-sided 5%, with at
//! least [`TEST_BLOCKS`] blocks to test), as in Fishman and Yarberry's LBATCH; a
//! correlation still beyond chance at the length chosen widens the interval by
//! √((1+ρ)/(1−ρ)), the factor a first-order autoregression puts on the variance of a
//! mean (a chance correlation does not: widening for it would call figures within
//! reach out of it).
//!
//! On synthetic rounds (tested): independent rounds keep ten-round blocks and their
//! width (coverage about 95%); rounds whose level wanders with a correlation time of
//! about 30 rounds, 640 of them, are covered about 55% of the time by ten-round blocks
//! and about 86% by the chosen blocks; a level that jumps every 7 rounds beside round
//! noise about 93%.

use super::nested::t975;

/// Rounds in a block, at the least: those of a default run (`--rounds 10`), so a
/// block's spread is comparable with the spread between default runs that `oscost
/// noise` measures.
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

/// Fewest block means the lag-1 correlation is tested on before the block length is
/// doubled (so doubled blocks still number at least six).
pub const TEST_BLOCKS: usize = 12;

/// The largest lag-1 correlation the interval is widened for (a widening of 3).
const MAX_CORRELATION: f64 = 0.8;

/// The lag-1 autocorrelation of `xs` (None with fewer than three values or none that
/// differ).
pub fn lag1(xs: &[f64]) -> Option<f64> {
    if xs.len() < 3 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    let cov: f64 = xs.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    (var > 0.0).then(|| cov / var)
}

/// Whether `means` are positively correlated at lag 1 beyond chance: above the
/// estimator's mean under independence (−1/B) by 1.645 of its standard error (1/√B).
fn correlated(means: &[f64]) -> bool {
    let b = means.len() as f64;
    lag1(means).is_some_and(|r| r > -1.0 / b + 1.645 / b.sqrt())
}

/// The block length the interval of `xs` is drawn from: [`BLOCK_ROUNDS`], doubled while
/// there are [`TEST_BLOCKS`] blocks or more and their means are correlated.
pub fn block_length(xs: &[f64]) -> usize {
    let mut length = BLOCK_ROUNDS;
    while xs.len() / length >= TEST_BLOCKS && correlated(&block_means(xs, length)) {
        length *= 2;
    }
    length
}

/// How a run's consecutive rounds spread as blocks, at the length [`block_length`]
/// chooses: what the interval of their mean and the rounds a target needs come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockSpread {
    /// Rounds in a block.
    pub length: usize,
    /// Whole blocks (a trailing partial block is left out).
    pub blocks: usize,
    /// The standard deviation of the block means.
    pub sd: f64,
    /// √((1+ρ)/(1−ρ)) for the lag-1 correlation ρ left between the block means, where
    /// it is beyond chance (its estimator's bias −1/B added back); 1 otherwise.
    pub widening: f64,
}

impl BlockSpread {
    /// The spread of `xs` as blocks; None with fewer than [`MIN_BLOCKS`] blocks of
    /// [`BLOCK_ROUNDS`].
    pub fn of(xs: &[f64]) -> Option<BlockSpread> {
        let length = block_length(xs);
        let means = block_means(xs, length);
        let blocks = means.len();
        if blocks < MIN_BLOCKS {
            return None;
        }
        let sd = super::summarize(&means)?.stddev;
        // Widened only for a correlation beyond chance: widening every block mean's
        // chance correlation would call figures within reach out of it.
        let rho = match lag1(&means) {
            Some(r) if correlated(&means) => (r + 1.0 / blocks as f64).clamp(0.0, MAX_CORRELATION),
            _ => 0.0,
        };
        Some(BlockSpread { length, blocks, sd, widening: ((1.0 + rho) / (1.0 - rho)).sqrt() })
    }

    /// The half-width of the 95% interval of the mean, t₀.₉₇₅,B−1·sd·widening/√B.
    pub fn half_width(&self) -> f64 {
        t975(self.blocks - 1) * self.sd * self.widening / (self.blocks as f64).sqrt()
    }

    /// The rounds whose interval would be within `half`, at this length, spread and
    /// widening; None past `cap` rounds.
    pub fn rounds_needed(&self, half: f64, cap: usize) -> Option<usize> {
        blocks_needed(self.sd * self.widening, half, cap / self.length).map(|b| b * self.length)
    }
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
            blocks_cover += (mean.abs() <= BlockSpread::of(&xs).unwrap().half_width()) as usize;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
            rounds_cover += (mean.abs() <= t975(n - 1) * sd / (n as f64).sqrt()) as usize;
        }
        assert!((900..=980).contains(&blocks_cover), "blocks cover {blocks_cover} of {trials}");
        assert!(rounds_cover < 800, "independent rounds cover only {rounds_cover} of {trials}");
    }

    /// `trials` runs of `n` rounds whose log level follows a first-order autoregression
    /// with coefficient `phi` (innovations of sd `step`) beside independent round noise
    /// of sd `noise`, its long-run mean 0: how often the fixed ten-round blocks and the
    /// chosen blocks cover 0, and the median ratio of their widths.
    fn coverage(seed: u64, trials: usize, n: usize, (phi, step, noise): (f64, f64, f64)) -> (usize, usize, f64) {
        let mut rng = SplitMix64::new(seed);
        let (mut fixed, mut chosen, mut ratios) = (0, 0, Vec::new());
        for _ in 0..trials {
            let mut level = step / (1.0 - phi * phi).sqrt() * normal(&mut rng);
            let xs: Vec<f64> = (0..n)
                .map(|_| {
                    level = phi * level + step * normal(&mut rng);
                    level + noise * normal(&mut rng)
                })
                .collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let ten = half_width(&xs, BLOCK_ROUNDS).unwrap();
            let spread = BlockSpread::of(&xs).unwrap();
            fixed += (mean.abs() <= ten) as usize;
            chosen += (mean.abs() <= spread.half_width()) as usize;
            ratios.push(spread.half_width() / ten);
        }
        ratios.sort_by(f64::total_cmp);
        (fixed, chosen, ratios[trials / 2])
    }

    /// On independent rounds the chosen blocks are the ten-round blocks, near enough:
    /// their coverage and width match the ten-round blocks'.
    #[test]
    fn independent_rounds_keep_ten_round_blocks() {
        let (fixed, chosen, ratio) = coverage(0x1d, 400, 640, (0.0, 0.0, 0.05));
        assert!((360..=395).contains(&fixed), "ten-round blocks cover {fixed} of 400");
        assert!((360..=395).contains(&chosen), "chosen blocks cover {chosen} of 400");
        assert!((0.95..=1.1).contains(&ratio), "median width ratio {ratio}");
        let mut rng = SplitMix64::new(5);
        let iid: Vec<f64> = (0..640).map(|_| normal(&mut rng)).collect();
        assert_eq!(block_length(&iid), BLOCK_ROUNDS);
    }

    /// A level that wanders with a correlation time of about 30 rounds (one second of
    /// a cheap benchmark run alone): ten-round blocks share it and cover the long-run
    /// mean little more than half the time; the chosen blocks about 86%.
    #[test]
    fn correlated_blocks_lengthen_and_widen_until_they_cover() {
        let (fixed, chosen, ratio) = coverage(0xa7, 400, 640, (0.97, 0.02, 0.05));
        assert!(fixed < 280, "ten-round blocks cover {fixed} of 400");
        assert!(chosen >= 330, "chosen blocks cover {chosen} of 400");
        assert!(ratio > 1.5, "median width ratio {ratio}");
    }

    #[test]
    fn block_length_doubles_on_known_values() {
        // A level of +1 for 160 rounds, then −1 for 160, twice: blocks of ten, twenty
        // and forty run in long streaks (lag-1 correlations 57/64, 25/32, 9/16), and
        // there are too few eighty-round blocks to test again.
        let xs: Vec<f64> = (0..640).map(|k| if (k / 160) % 2 == 0 { 1.0 } else { -1.0 }).collect();
        assert!((lag1(&block_means(&xs, 10)).unwrap() - 57.0 / 64.0).abs() < 1e-12);
        assert!((lag1(&block_means(&xs, 40)).unwrap() - 9.0 / 16.0).abs() < 1e-12);
        assert_eq!(block_length(&xs), 80);
        let s = BlockSpread::of(&xs).unwrap();
        assert_eq!((s.length, s.blocks), (80, 8));
        // Eight block means + + − − + + − −: lag-1 1/8, within chance for eight
        // (below −1/8 + 1.645/√8): nothing to widen for.
        assert_eq!(s.widening, 1.0);
        assert!((s.half_width() - t975(7) * s.sd * s.widening / 8f64.sqrt()).abs() < 1e-12);
        // Independent blocks of ten: kept, and nothing to widen for.
        let alternating: Vec<f64> = (0..640).map(|k| if (k / 10) % 2 == 0 { 1.0 } else { -1.0 }).collect();
        assert_eq!(block_length(&alternating), 10);
        assert_eq!(BlockSpread::of(&alternating).unwrap().widening, 1.0);
        assert_eq!(s.rounds_needed(s.half_width(), 10_000), Some(640));
        assert_eq!(lag1(&[1.0, 1.0, 1.0]), None);
        assert_eq!(lag1(&[1.0, 2.0]), None);
        // Two blocks of ten are too few for an interval.
        assert_eq!(BlockSpread::of(&xs[..29]), None);
    }
}
