//! What precision a row of `run --precision` has reached, and whether more rounds of
//! this run can still reach a target.
//!
//! Why not just the row's interval: that interval resamples its rounds as independent,
//! and on a machine that drifts over minutes they are not (`stats::blocks`). A run
//! that promises ±2% promises it for the next run too. So a row's precision is judged
//! the way its evidence allows:
//! - with [`BLOCK_ROUNDS`]·[`MIN_BLOCKS`] rounds or more, from the blocks of its
//!   consecutive rounds (batch means), which hold the drift the run lived through, and
//!   never narrower than its own interval;
//! - with fewer, from its own interval with this machine's between-run spread σ_b
//!   (`oscost noise`) in quadrature on the log scale, the spread a run of default
//!   length shows beyond its rounds.
//!
//! Whether more rounds can help is projected from the same evidence: the spread of a
//! block of rounds (measured from the blocks, or from the round spread and σ_b before
//! there are blocks) gives the blocks, hence rounds, the target needs. A row that
//! would need more than the run's cap is out of reach and stops adding rounds; it is
//! judged only after a block's worth of rounds, so a few early rounds never condemn it.

use crate::model::ResultRow;
use crate::noise::RunNoise;
use crate::rounds::precision_of;
use crate::stats::blocks::{BLOCK_ROUNDS, MIN_BLOCKS, block_sd, blocks_needed, half_width};

/// Where a row stands against a precision target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Standing {
    /// Within the target.
    Reached,
    /// Not yet: more rounds should narrow it within the cap.
    Short,
    /// More rounds than the cap would be needed: about this many, where the projection
    /// can say (None: more than it looks at).
    OutOfReach { rounds_needed: Option<usize> },
}

/// The longest projection an out-of-reach row is given a number for.
const PROJECTION_ROUNDS: usize = 100_000;

/// Judges rows against a target (relative half-width) with a run's cap on rounds and
/// this machine's between-run spreads.
pub struct Judge<'a> {
    pub target: f64,
    pub max_rounds: usize,
    pub noise: &'a RunNoise,
}

/// The log of each round's median, in the order the rounds ran.
fn round_logs(r: &ResultRow) -> Vec<f64> {
    r.round_slices()
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| crate::stats::median(s))
        .filter(|m| *m > 0.0)
        .map(f64::ln)
        .collect()
}

/// The sample standard deviation of `xs` (None under two values).
fn sd(xs: &[f64]) -> Option<f64> {
    (xs.len() >= 2).then(|| {
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
    })
}

impl Judge<'_> {
    /// Row `r`'s precision (relative half-width) as the module doc says; None without
    /// an interval.
    pub fn precision(&self, r: &ResultRow) -> Option<f64> {
        let within = precision_of(r)?;
        match half_width(&round_logs(r), BLOCK_ROUNDS) {
            Some(h) => Some(within.max(h.exp() - 1.0)),
            None => Some((1.0 + within).ln().hypot((1.0 + self.noise.between_alone(r)).ln()).exp() - 1.0),
        }
    }

    /// Whether the precision came from blocks of rounds (else from the row's interval
    /// and the machine's between-run spread).
    pub fn from_blocks(&self, r: &ResultRow) -> bool {
        round_logs(r).len() >= BLOCK_ROUNDS * MIN_BLOCKS
    }

    /// Rounds the target would need: from the blocks' spread once there are two, else
    /// from the rounds' spread over a block with the between-run spread beside it.
    /// None before a block's worth of rounds, or past `cap`.
    fn rounds_needed(&self, r: &ResultRow, cap: usize) -> Option<usize> {
        let logs = round_logs(r);
        if logs.len() < BLOCK_ROUNDS {
            return None;
        }
        let block = block_sd(&logs, BLOCK_ROUNDS).or_else(|| {
            let between = self.noise.of(r).map_or(0.0, |b| b.sigma);
            sd(&logs).map(|s| (s * s / BLOCK_ROUNDS as f64 + between * between).sqrt())
        })?;
        blocks_needed(block, (1.0 + self.target).ln(), cap / BLOCK_ROUNDS).map(|b| b * BLOCK_ROUNDS)
    }

    /// Where row `r` stands.
    pub fn standing(&self, r: &ResultRow) -> Standing {
        if self.precision(r).is_some_and(|p| p <= self.target) {
            return Standing::Reached;
        }
        if round_logs(r).len() < BLOCK_ROUNDS || self.rounds_needed(r, self.max_rounds).is_some() {
            return Standing::Short;
        }
        Standing::OutOfReach { rounds_needed: self.rounds_needed(r, PROJECTION_ROUNDS) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Method, Round, RunDocument, RunKind};
    use crate::stats::SplitMix64;
    use crate::stats::nested::{Nested, normal};

    /// A row of `n` rounds of 20 samples whose log level is `level(round)` plus `noise`
    /// per round, its interval drawn from its rounds as a run draws it.
    fn row(rng: &mut SplitMix64, n: usize, noise: f64, level: impl Fn(usize) -> f64) -> ResultRow {
        let parts: Vec<Vec<f64>> = (0..n)
            .map(|k| {
                let m = 100.0 * (level(k) + noise * normal(rng)).exp();
                (0..20).map(|i| m * (1.0 + 0.001 * f64::from(i))).collect()
            })
            .collect();
        let all: Vec<f64> = parts.iter().flatten().copied().collect();
        let mut r = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", all, 100).unwrap();
        r.rounds = parts.iter().map(|p| Round { samples: p.len(), at: None, counts: Default::default() }).collect();
        let slices: Vec<&[f64]> = parts.iter().map(|p| &p[..]).collect();
        (r.ci_low, r.ci_high) = Nested::from_rounds(&slices).unwrap().interval(400, 7);
        r
    }

    /// Noise runs that give getppid a between-run spread of about `sigma`.
    fn model(sigma: f64) -> RunNoise {
        let runs: Vec<RunDocument> = (0..6)
            .map(|i| {
                let m = 100.0 * if i % 2 == 0 { sigma / 2f64.sqrt() } else { -sigma / 2f64.sqrt() }.exp();
                let r = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", vec![m; 3], 3).unwrap();
                let mut d = RunDocument::for_tests(i + 1, crate::machine::Machine::example(), vec![r]);
                d.run.kind = RunKind::Noise;
                d.run.started_at = format!("2026-11-24T00:0{i}:00Z");
                d
            })
            .collect();
        RunNoise::from_noise(&runs)
    }

    #[test]
    fn a_short_row_carries_the_machines_spread_and_a_long_one_its_blocks() {
        let mut rng = SplitMix64::new(1);
        let none = RunNoise::none();
        let noisy = model(0.04);
        let judge = |noise, target| Judge { target, max_rounds: 300, noise };
        // Ten quiet rounds: their own interval is narrow; with a 4% between-run spread
        // beside it (t₀.₉₇₅,₅·4% ≈ 10%) they are far from 2%.
        let short = row(&mut rng, 10, 0.01, |_| 0.0);
        let own = precision_of(&short).unwrap();
        assert!((judge(&none, 0.02).precision(&short).unwrap() - own).abs() < 1e-12);
        assert!(judge(&noisy, 0.02).precision(&short).unwrap() > 0.09);
        assert!(!judge(&noisy, 0.02).from_blocks(&short));
        // Sixty rounds whose level swings by ±5% over twenty: the blocks show it, and the
        // precision is theirs, wider than the rounds' own interval.
        let swinging = row(&mut rng, 60, 0.01, |k| 0.05 * (std::f64::consts::TAU * k as f64 / 20.0).sin());
        let j = judge(&none, 0.02);
        assert!(j.from_blocks(&swinging));
        let blocks = half_width(&round_logs(&swinging), BLOCK_ROUNDS).unwrap().exp() - 1.0;
        assert!(blocks > 1.5 * precision_of(&swinging).unwrap(), "{blocks} {:?}", precision_of(&swinging));
        assert_eq!(j.precision(&swinging), Some(blocks));
    }

    #[test]
    fn rounds_are_added_while_they_can_help_and_stop_when_the_cap_cannot_be_enough() {
        let mut rng = SplitMix64::new(2);
        let none = RunNoise::none();
        // 5% round noise: ±2% needs about (2·5%/2%)² = 25 rounds, within the cap.
        let quiet = row(&mut rng, 10, 0.05, |_| 0.0);
        let j = Judge { target: 0.02, max_rounds: 300, noise: &none };
        assert_eq!(j.standing(&quiet), Standing::Short);
        // Fewer than a block's worth of rounds are never condemned.
        assert_eq!(j.standing(&row(&mut rng, 5, 0.5, |_| 0.0)), Standing::Short);
        // The same rows against a machine whose runs differ by 8%: ±2% would need
        // blocks of ten rounds whose means spread by 8%, about (2.1·8%/2%)² ≈ 70 of
        // them: out of reach of 300 rounds, with the projection said.
        let drifting = model(0.08);
        let j = Judge { target: 0.02, max_rounds: 300, noise: &drifting };
        match j.standing(&quiet) {
            Standing::OutOfReach { rounds_needed: Some(n) } => assert!((500..1000).contains(&n), "{n}"),
            other => panic!("{other:?}"),
        }
        // With blocks, their own spread decides: steady blocks reach the target.
        let long = row(&mut rng, 100, 0.05, |_| 0.0);
        assert_eq!(Judge { target: 0.02, max_rounds: 300, noise: &drifting }.standing(&long), Standing::Reached);
        // A row without an interval has shown no precision.
        let mut blank = quiet.clone();
        (blank.ci_low, blank.ci_high) = (f64::NAN, f64::NAN);
        assert_eq!(Judge { target: 0.5, max_rounds: 300, noise: &none }.standing(&blank), Standing::Short);
    }
}
