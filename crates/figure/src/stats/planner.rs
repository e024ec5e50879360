//! How many runs, rounds and samples a requested precision needs: the repetition
//! planner of Kalibera and Jones ("Rigorous benchmarking in reasonable time", ISMM
//! 2013), for oscost's three levels: samples (batches) within a round, rounds (fresh
//! worker processes) within a run, runs (separate invocations, spread over time).
//!
//! From a balanced experiment (n₃ runs × n₂ rounds × n₁ samples) the biased level
//! variances S²ᵢ are the variances of the level-i means within their parent; the
//! paper's unbiased estimators subtract what the level below carries,
//! T²₁ = S²₁ and T²ᵢ = S²ᵢ − S²ᵢ₋₁/nᵢ₋₁. With cᵢ the cost of one more repetition at
//! level i (beyond the levels below), the cheapest design for a given precision
//! repeats each lower level nᵢ = ⌈√(cᵢ₊₁·T²ᵢ / (cᵢ·T²ᵢ₊₁))⌉ times, and the top level as
//! often as the precision needs: the grand mean's variance is
//! T²₃/n₃ + T²₂/(n₃n₂) + T²₁/(n₃n₂n₁).

use serde::Serialize;

use super::Z975;

/// The variance each level adds (the paper's T²; clamped at 0, since an estimate of a
/// component that is truly near 0 can come out negative), from the lowest level up.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Components {
    pub samples: f64,
    pub rounds: f64,
    pub runs: f64,
    /// The grand mean the variances belong to.
    pub mean: f64,
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The variance of `xs` around their mean, with n − 1.
fn var(xs: &[f64]) -> f64 {
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() as f64 - 1.0)
}

/// An experiment's samples: `data[run][round][sample]`.
pub type Experiment = Vec<Vec<Vec<f64>>>;

/// The components of a balanced experiment (at least two runs, two rounds a run and
/// two samples a round); None when it is not balanced or too small.
pub fn components(data: &[Vec<Vec<f64>>]) -> Option<Components> {
    let n3 = data.len();
    let n2 = data.first()?.len();
    let n1 = data.first()?.first()?.len();
    if n3 < 2 || n2 < 2 || n1 < 2 || data.iter().any(|r| r.len() != n2 || r.iter().any(|w| w.len() != n1)) {
        return None;
    }
    let s1 = mean(&data.iter().flatten().map(|w| var(w)).collect::<Vec<_>>());
    let round_means: Vec<Vec<f64>> = data.iter().map(|r| r.iter().map(|w| mean(w)).collect()).collect();
    let s2 = mean(&round_means.iter().map(|r| var(r)).collect::<Vec<_>>());
    let run_means: Vec<f64> = round_means.iter().map(|r| mean(r)).collect();
    let s3 = var(&run_means);
    Some(Components {
        samples: s1.max(0.0),
        rounds: (s2 - s1 / n1 as f64).max(0.0),
        runs: (s3 - s2 / n2 as f64).max(0.0),
        mean: mean(&run_means),
    })
}

/// What one more repetition at each level costs (seconds), beyond the levels below:
/// one sample, starting one round (a worker process), starting one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Costs {
    pub sample: f64,
    pub round: f64,
    pub run: f64,
}

/// A design: how many of each level, what precision it reaches and what it costs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Plan {
    pub runs: usize,
    pub rounds: usize,
    pub samples: usize,
    /// The 95% interval's half-width relative to the mean.
    pub precision: f64,
    /// Seconds.
    pub cost: f64,
}

/// The paper's optimal count at a lower level: ⌈√(c_upper·T²_lower / (c_lower·T²_upper))⌉,
/// at least 1; unbounded variance above with none here means one repetition, none
/// above with some here means `cap`.
fn optimal(c_lower: f64, t_lower: f64, c_upper: f64, t_upper: f64, cap: usize) -> usize {
    if t_lower <= 0.0 {
        return 1;
    }
    if t_upper <= 0.0 || c_lower <= 0.0 {
        return cap;
    }
    ((c_upper * t_lower / (c_lower * t_upper)).sqrt().ceil() as usize).clamp(1, cap)
}

/// The relative 95% half-width of the grand mean under a design.
pub fn precision(c: &Components, runs: usize, rounds: usize, samples: usize) -> f64 {
    let (n3, n2, n1) = (runs as f64, rounds as f64, samples as f64);
    let v = c.runs / n3 + c.rounds / (n3 * n2) + c.samples / (n3 * n2 * n1);
    Z975 * v.sqrt() / c.mean.abs()
}

/// The cost of a design.
pub fn cost(k: &Costs, runs: usize, rounds: usize, samples: usize) -> f64 {
    runs as f64 * (k.run + rounds as f64 * (k.round + samples as f64 * k.sample))
}

/// The cheapest design whose interval's half-width is at most `target` (relative),
/// with samples and rounds at the paper's optimum (each capped) and as many runs as
/// the target needs (capped at `max_runs`; the plan then says what it reaches).
pub fn plan(c: &Components, k: &Costs, target: f64, caps: (usize, usize, usize)) -> Plan {
    let (max_samples, max_rounds, max_runs) = caps;
    let samples = optimal(k.sample, c.samples, k.round, c.rounds, max_samples);
    let rounds = optimal(k.round, c.rounds, k.run, c.runs, max_rounds);
    let (n2, n1) = (rounds as f64, samples as f64);
    let per_run = c.runs + c.rounds / n2 + c.samples / (n2 * n1);
    let needed = (Z975 * Z975 * per_run / (target * c.mean).powi(2)).ceil();
    let runs = (needed.max(1.0) as usize).min(max_runs);
    Plan { runs, rounds, samples, precision: precision(c, runs, rounds, samples), cost: cost(k, runs, rounds, samples) }
}

/// The most rounds and runs a design the command line runs may have (`--rounds`
/// takes 1 to 100, `noise --runs` 3 to 100).
pub const MAX_ROUNDS: usize = 100;
pub const MAX_RUNS: usize = 100;

/// How many samples a round of a run of `rounds` rounds takes, when a run of any
/// rounds takes about `per_run` in all: the run's budgets are split among its rounds,
/// with a floor of three batches a round (`MeasureConfig::per_round`). No flag sets
/// samples a round; this is what a `--rounds` gives.
pub fn samples_at(per_run: usize, rounds: usize) -> usize {
    per_run.div_ceil(rounds.max(1)).max(3)
}

/// The cheapest design the command line can run: `rounds` from 1 to [`MAX_ROUNDS`],
/// the samples a round that many rounds give ([`samples_at`]), and one run or 3 to
/// [`MAX_RUNS`] (a noise series; two runs become three). Of the designs reaching
/// `target` the cheapest; when none does, the most precise (the plan then says what
/// it reaches).
pub fn runnable(c: &Components, k: &Costs, target: f64, samples_per_run: usize) -> Plan {
    let design = |rounds: usize| {
        let samples = samples_at(samples_per_run, rounds);
        let (n2, n1) = (rounds as f64, samples as f64);
        let per_run = c.runs + c.rounds / n2 + c.samples / (n2 * n1);
        let needed = (Z975 * Z975 * per_run / (target * c.mean).powi(2)).ceil().max(1.0) as usize;
        let runs = match needed {
            1 => 1,
            n => n.clamp(3, MAX_RUNS),
        };
        Plan {
            runs,
            rounds,
            samples,
            precision: precision(c, runs, rounds, samples),
            cost: cost(k, runs, rounds, samples),
        }
    };
    (2..=MAX_ROUNDS).map(design).fold(design(1), |best, d| {
        let (d_ok, best_ok) = (d.precision <= target, best.precision <= target);
        let better = match (d_ok, best_ok) {
            (true, true) => d.cost < best.cost,
            (true, false) => true,
            (false, true) => false,
            (false, false) => d.precision < best.precision,
        };
        if better { d } else { best }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix64;
    use crate::stats::nested::normal;

    /// A balanced experiment around 100 with level standard deviations (runs,
    /// rounds, samples).
    fn experiment(rng: &mut SplitMix64, shape: (usize, usize, usize), sd: (f64, f64, f64)) -> Vec<Vec<Vec<f64>>> {
        let (n3, n2, n1) = shape;
        (0..n3)
            .map(|_| {
                let run = 100.0 + sd.0 * normal(rng);
                (0..n2)
                    .map(|_| {
                        let round = run + sd.1 * normal(rng);
                        (0..n1).map(|_| round + sd.2 * normal(rng)).collect()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_components_recover_known_variances() {
        let mut rng = SplitMix64::new(3);
        let (mut runs, mut rounds, mut samples) = (0.0, 0.0, 0.0);
        let trials = 400;
        for _ in 0..trials {
            let c = components(&experiment(&mut rng, (8, 6, 10), (3.0, 2.0, 5.0))).unwrap();
            runs += c.runs;
            rounds += c.rounds;
            samples += c.samples;
        }
        let t = trials as f64;
        // Unbiased: their means come within a few percent of 9, 4 and 25.
        assert!((runs / t - 9.0).abs() < 0.7, "runs {}", runs / t);
        assert!((rounds / t - 4.0).abs() < 0.25, "rounds {}", rounds / t);
        assert!((samples / t - 25.0).abs() < 0.5, "samples {}", samples / t);
        // The plain variance of round means would have carried the samples' share.
        assert_eq!(components(&[vec![vec![1.0, 2.0]]]), None, "one run is not enough");
    }

    #[test]
    fn the_plan_is_the_papers_optimum() {
        let c = Components { samples: 25.0, rounds: 4.0, runs: 9.0, mean: 100.0 };
        let k = Costs { sample: 0.001, round: 0.05, run: 0.5 };
        let p = plan(&c, &k, 0.01, (10_000, 100, 1000));
        // n₁ = ⌈√(0.05·25 / (0.001·4))⌉ = ⌈17.68⌉, n₂ = ⌈√(0.5·4 / (0.05·9))⌉ = ⌈2.11⌉.
        assert_eq!((p.samples, p.rounds), (18, 3));
        // n₃ = ⌈1.96²·(9 + 4/3 + 25/54) / 1²⌉ = ⌈41.5⌉.
        assert_eq!(p.runs, 42);
        assert!(p.precision <= 0.01 && precision(&c, p.runs - 1, 3, 18) > 0.01);
        assert!((p.cost - 42.0 * (0.5 + 3.0 * (0.05 + 18.0 * 0.001))).abs() < 1e-9);
        // The paper's rule rounds up a continuous optimum: on a grid of integer
        // designs of the same precision, none is more than 5% cheaper.
        let mut cheapest = f64::INFINITY;
        for n2 in 1..8 {
            for n1 in [1, 5, 10, 15, 18, 20, 30, 60] {
                let per = 9.0 + 4.0 / n2 as f64 + 25.0 / (n2 * n1) as f64;
                let n3 = (Z975 * Z975 * per).ceil() as usize;
                cheapest = cheapest.min(cost(&k, n3, n2, n1));
            }
        }
        assert!(p.cost <= 1.05 * cheapest, "{} against {cheapest}", p.cost);
    }

    #[test]
    fn a_runnable_design_is_one_the_flags_can_ask_for() {
        let c = Components { samples: 25.0, rounds: 4.0, runs: 9.0, mean: 100.0 };
        let k = Costs { sample: 0.001, round: 0.05, run: 0.5 };
        for target in [0.001, 0.01, 0.05, 0.5] {
            let p = runnable(&c, &k, target, 60);
            assert!((1..=MAX_ROUNDS).contains(&p.rounds), "{p:?}");
            assert!(p.runs == 1 || (3..=MAX_RUNS).contains(&p.runs), "{p:?}");
            assert_eq!(p.samples, samples_at(60, p.rounds), "samples follow the rounds");
            assert!(p.precision <= target || p.runs == MAX_RUNS, "{target}: {p:?}");
        }
        // With run-to-run variance a 1% target needs many runs; a loose one, one run.
        assert!(runnable(&c, &k, 0.01, 60).runs >= 3);
        assert_eq!(runnable(&c, &k, 0.5, 60).runs, 1);
        assert_eq!(samples_at(60, 7), 9);
        assert_eq!(samples_at(10, 100), 3, "three batches a round at the least");
    }

    #[test]
    fn a_level_without_variance_is_not_repeated_and_caps_hold() {
        let c = Components { samples: 0.0, rounds: 4.0, runs: 0.0, mean: 100.0 };
        let k = Costs { sample: 0.001, round: 0.05, run: 0.5 };
        let p = plan(&c, &k, 0.01, (1000, 50, 3));
        assert_eq!(p.samples, 1, "no sample noise: one sample a round");
        assert_eq!(p.rounds, 50, "no run-to-run noise: rounds carry it all, up to the cap");
        assert!(p.runs <= 3);
        assert!(p.precision > 0.0);
    }
}
