//! What precision a row of `run --precision` has reached, and whether more rounds of
//! this run can still reach a target.
//!
//! Why not just the row's interval: that interval resamples its rounds as independent,
//! and on a machine that drifts over minutes they are not (`stats::blocks`). A run
//! that promises ±2% promises it for the next run too. So a row's precision is judged
//! the way its evidence allows:
//! - with [`BLOCK_ROUNDS`]·[`MIN_BLOCKS`] rounds or more, from the blocks of its
//!   consecutive rounds (batch means, longer blocks while neighbouring ones are still
//!   correlated: `stats::blocks`), which hold the drift the run lived through, and
//!   never narrower than its own interval;
//! - with fewer, from its own interval;
//! - either way, where this machine's noise runs measured the figure (`oscost noise`),
//!   with their between-run spread σ_b in quadrature on the log scale: the spread a run
//!   shows beyond its rounds. Rounds of one run share what a run settles once (its
//!   calibrated batch sizes, where its processes and pages landed), so no number of
//!   them narrows that part: here whole 3 s runs of `ctx.pipe` spread by about 10%
//!   where blocks of its rounds lasting as long spread by about 3%, and a run's ±1.2–1.9%
//!   from 170 rounds held the mean of the whole runs around it for only 4 of 10
//!   figures. A figure whose bound from σ_b alone is past the target needs runs, not rounds
//!   ([`Standing::NeedsRuns`]), and stops adding rounds at once.
//!
//! Whether more rounds can help is projected from the row's own blocks: the spread of
//! their means gives the blocks, hence rounds, that the target needs (what σ_b leaves
//! of it, in quadrature). A row that would need more than its benchmark's cap is out
//! of reach and stops adding rounds. The cap is time, not a count: the rounds its
//! benchmark's pace so far (every benchmark interleaved with it counted in) fits
//! before `--max-time`, within a ceiling ([`rounds_in_time`]); a cheap benchmark may
//! take hundreds of rounds where a costly one fits dozens. Before it has blocks a row
//! is only condemned by σ_b alone: its interval of a few rounds cannot say whether it
//! drifts within reach.
//! A row without per-round samples (a fitted figure) cannot be judged by rounds at all.

use serde::Serialize;

use crate::judge::noise::RunNoise;
use crate::model::{FigureKey, ResultRow};
use crate::rounds::{precision_of, round_log_medians as round_logs};
use crate::stats::blocks::{BLOCK_ROUNDS, BlockSpread, MIN_BLOCKS};

/// Where a row stands against a precision target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "standing", rename_all = "snake_case")]
pub enum Standing {
    /// Within the target.
    Reached,
    /// Not yet: more rounds should narrow it within the cap.
    Short,
    /// More rounds than the cap would be needed: about this many, where the projection
    /// can say (None: more than [`PROJECTION_ROUNDS`]).
    OutOfReach { rounds_needed: Option<usize> },
    /// Short, and no round of it holds samples (a fitted figure): rounds cannot be
    /// judged for it, so it does not hold the benchmark's rounds.
    NoRounds,
    /// The bound this machine's noise runs put on its spread between runs alone
    /// (relative, exp(t₀.₉₇₅,ₖ·σ_b) − 1 over `pairs` consecutive pairs) is past the
    /// target: rounds of one run cannot narrow it (the judgement never drops it), so
    /// they stop; more noise runs can narrow the bound, and runs spread over time the
    /// figure (`oscost plan`).
    NeedsRuns { between: f64, pairs: usize },
    /// Measured in one round (a benchmark measured once by design, or a run cut
    /// short), and no noise runs measured its figure: its interval holds that one
    /// window, which says nothing of the next, so it is not called reached.
    OneWindow,
}

/// What a row's precision was judged from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The blocks of its rounds (the drift the run saw).
    Blocks,
    /// The blocks of its rounds with this machine's spread between runs, in quadrature.
    BlocksAndBetweenRuns,
    /// Its interval with this machine's spread between runs, in quadrature.
    BetweenRuns,
    /// Its own interval alone (no noise runs measured the figure).
    OwnInterval,
}

/// One row's judgement, as `run --precision` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureJudgement {
    #[serde(flatten)]
    pub key: FigureKey,
    /// Relative half-width; None without an interval.
    pub precision: Option<f64>,
    pub basis: Basis,
    pub rounds: usize,
    /// The most rounds its benchmark could have run (the cap `OutOfReach` is judged
    /// against).
    pub cap: usize,
    #[serde(flatten)]
    pub standing: Standing,
    /// Why a short row did not get there (`rounds::why_short`); None otherwise.
    pub why: Option<&'static str>,
}

/// A run's rows judged against a target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunJudgement {
    pub target: f64,
    pub reached: usize,
    pub figures: Vec<FigureJudgement>,
}

impl RunJudgement {
    /// The judgement of a run's `figures` against `target`.
    pub fn of(target: f64, figures: Vec<FigureJudgement>) -> RunJudgement {
        let reached = figures.iter().filter(|f| f.standing == Standing::Reached).count();
        RunJudgement { target, reached, figures }
    }

    /// Rows judged on `basis`.
    pub fn judged_on(&self, basis: Basis) -> usize {
        self.figures.iter().filter(|f| f.basis == basis).count()
    }
}

/// The longest projection an out-of-reach row is given a number for.
pub const PROJECTION_ROUNDS: usize = 100_000;

/// The most rounds a benchmark may run when `done` of its rounds took `spent` since the
/// run began measuring and `left` remains before its deadline: its pace so far carried
/// to the deadline, within `ceiling`. Its pace counts every benchmark interleaved with
/// it, so the cap grows as others finish.
pub fn rounds_in_time(done: usize, spent: std::time::Duration, left: std::time::Duration, ceiling: usize) -> usize {
    if spent.is_zero() {
        return ceiling;
    }
    // A float cast to an integer saturates; the ceiling bounds it anyway.
    let more = (done as f64 * left.as_secs_f64() / spent.as_secs_f64()).floor() as usize;
    ceiling.min(done.saturating_add(more))
}

/// Judges rows against a target (relative half-width) with their benchmark's cap on
/// rounds and this machine's between-run spreads.
pub struct Judge<'a> {
    pub target: f64,
    pub max_rounds: usize,
    pub noise: &'a RunNoise,
}

impl Judge<'_> {
    /// Row `r`'s precision (relative half-width) as the module doc says; None without
    /// an interval.
    pub fn precision(&self, r: &ResultRow) -> Option<f64> {
        let within = precision_of(r)?;
        let own = match BlockSpread::of(&round_logs(r)) {
            Some(s) => within.max(s.half_width().exp() - 1.0),
            None => within,
        };
        Some((1.0 + own).ln().hypot((1.0 + self.noise.between_alone(r)).ln()).exp() - 1.0)
    }

    /// Whether the precision came from blocks of rounds (else from the row's own
    /// interval); the machine's between-run spread stands beside either where the
    /// noise runs measured the figure.
    pub fn from_blocks(&self, r: &ResultRow) -> bool {
        round_logs(r).len() >= BLOCK_ROUNDS * MIN_BLOCKS
    }

    /// Rounds the target would need, from the spread of the row's own blocks' means
    /// and what the machine's spread between runs leaves of the target (row `r`'s
    /// figure's); None past `cap`, or when that spread leaves nothing.
    fn rounds_needed(&self, r: &ResultRow, logs: &[f64], cap: usize) -> Option<usize> {
        let (target, between) = ((1.0 + self.target).ln(), (1.0 + self.noise.between_alone(r)).ln());
        let left = (target * target - between * between).max(0.0).sqrt();
        BlockSpread::of(logs)?.rounds_needed(left, cap)
    }

    /// What row `r`'s precision is judged from.
    pub fn basis(&self, r: &ResultRow) -> Basis {
        match (self.from_blocks(r), self.noise.of(r).is_some()) {
            (true, false) => Basis::Blocks,
            (true, true) => Basis::BlocksAndBetweenRuns,
            (false, true) => Basis::BetweenRuns,
            (false, false) => Basis::OwnInterval,
        }
    }

    /// Row `r` judged.
    pub fn figure(&self, r: &ResultRow) -> FigureJudgement {
        let standing = self.standing(r);
        FigureJudgement {
            key: r.key(),
            precision: self.precision(r),
            basis: self.basis(r),
            rounds: r.round_count(),
            cap: self.max_rounds,
            standing,
            why: (standing == Standing::Short).then(|| crate::rounds::why_short(r, self.target)),
        }
    }

    /// Every row judged, in order, against this one cap.
    pub fn judge(&self, rows: &[ResultRow]) -> RunJudgement {
        RunJudgement::of(self.target, rows.iter().map(|r| self.figure(r)).collect())
    }

    /// Whether a figure is short whatever its merged row's own interval, from its
    /// rounds' log medians `logs` and any of its rows `r` (for its name): with blocks,
    /// their half-width and the machine's between-run spread together past the target
    /// while the cap is still within reach, and that spread alone not past it. Then
    /// [`Judge::standing`] says `Short` of the merged row (its precision is never
    /// narrower), so an adaptive run asks this first and merges (and pays for the
    /// merged row's bootstrap) only when it cannot decide. Before blocks it never can.
    pub fn short_regardless(&self, r: &ResultRow, logs: &[f64]) -> bool {
        let between = self.noise.between_alone(r);
        logs.len() >= BLOCK_ROUNDS * MIN_BLOCKS
            && between < self.target
            && BlockSpread::of(logs)
                .is_some_and(|s| s.half_width().hypot((1.0 + between).ln()) > (1.0 + self.target).ln())
            && self.rounds_needed(r, logs, self.max_rounds).is_some()
    }

    /// Where row `r` stands.
    pub fn standing(&self, r: &ResultRow) -> Standing {
        let logs = round_logs(r);
        if logs.len() == 1 && self.noise.of(r).is_none() {
            return Standing::OneWindow;
        }
        if self.precision(r).is_some_and(|p| p <= self.target) {
            return Standing::Reached;
        }
        if logs.is_empty() && r.rounds.iter().all(|x| x.samples == 0) && !r.rounds.is_empty() {
            return Standing::NoRounds;
        }
        let between = self.noise.between_alone(r);
        if between >= self.target {
            return Standing::NeedsRuns { between, pairs: self.noise.of(r).map_or(0, |b| b.pairs) };
        }
        if logs.len() < BLOCK_ROUNDS * MIN_BLOCKS || self.rounds_needed(r, &logs, self.max_rounds).is_some() {
            return Standing::Short;
        }
        Standing::OutOfReach { rounds_needed: self.rounds_needed(r, &logs, PROJECTION_ROUNDS) }
    }
}

/// Judges a `--precision` run's rows against `target`, each against its benchmark's
/// last cap on rounds (`caps`; `ceiling`, the most rounds a benchmark may run, for a
/// benchmark without one).
pub fn judge_run(
    rows: &[ResultRow],
    target: f64,
    noise: &RunNoise,
    caps: &std::collections::BTreeMap<String, usize>,
    ceiling: usize,
) -> RunJudgement {
    let cap = |r: &ResultRow| caps.get(r.benchmark.as_str()).copied().unwrap_or(ceiling);
    let figures = rows.iter().map(|r| Judge { target, max_rounds: cap(r), noise }.figure(r)).collect();
    RunJudgement::of(target, figures)
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
        noise_runs((0..6).map(|i| 100.0 * if i % 2 == 0 { sigma / 2f64.sqrt() } else { -sigma / 2f64.sqrt() }.exp()))
    }

    /// Noise runs whose getppid medians are `medians`, one run each, in order.
    fn noise_runs(medians: impl Iterator<Item = f64>) -> RunNoise {
        let runs: Vec<RunDocument> = medians
            .enumerate()
            .map(|(i, m)| {
                let r = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", vec![m; 3], 3).unwrap();
                let mut d = RunDocument::for_tests(i as i64 + 1, crate::machine::Machine::example(), vec![r]);
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
        let blocks = BlockSpread::of(&round_logs(&swinging)).unwrap().half_width().exp() - 1.0;
        assert!(blocks > 1.5 * precision_of(&swinging).unwrap(), "{blocks} {:?}", precision_of(&swinging));
        assert_eq!(j.precision(&swinging), Some(blocks));
    }

    #[test]
    fn rounds_are_added_while_they_can_help_and_stop_when_the_cap_cannot_be_enough() {
        let mut rng = SplitMix64::new(2);
        let none = RunNoise::none();
        let drifting = model(0.08);
        let judge = |noise, target| Judge { target, max_rounds: 300, noise };
        // Before blocks, a row is short however it looks, unless the machine's spread
        // between runs alone is past the target: then rounds cannot help.
        let quiet = row(&mut rng, 10, 0.05, |_| 0.0);
        assert_eq!(judge(&none, 0.02).standing(&quiet), Standing::Short);
        assert!(judge(&drifting, 0.02).precision(&quiet).unwrap() > 0.1);
        assert!(
            matches!(judge(&drifting, 0.02).standing(&quiet), Standing::NeedsRuns { between, pairs: 5 } if between > 0.1)
        );
        assert_eq!(judge(&drifting, 0.5).standing(&quiet), Standing::Reached, "with room, the spread counted in");
        assert_eq!(judge(&none, 0.02).standing(&row(&mut rng, 25, 0.5, |_| 0.0)), Standing::Short);
        // Forty rounds whose blocks alternate by ±8%: ±2% would need far more than 300
        // rounds, and the projection says how many.
        let stepping = row(&mut rng, 40, 0.01, |k| if (k / 10) % 2 == 0 { 0.08 } else { -0.08 });
        let expected = BlockSpread::of(&round_logs(&stepping)).unwrap().rounds_needed(1.02f64.ln(), 10_000);
        assert!(expected.unwrap() > 300);
        assert_eq!(judge(&none, 0.02).standing(&stepping), Standing::OutOfReach { rounds_needed: expected });
        // Steady blocks reach the target without the machine's spread, and with it
        // where it leaves room; where it alone is past the target, they need runs.
        let long = row(&mut rng, 100, 0.05, |_| 0.0);
        assert_eq!(judge(&none, 0.02).standing(&long), Standing::Reached);
        let calm = model(0.002);
        assert_eq!(judge(&calm, 0.02).standing(&long), Standing::Reached);
        assert!(matches!(judge(&drifting, 0.02).standing(&long), Standing::NeedsRuns { .. }));
        // A row without an interval has shown no precision.
        let mut blank = quiet.clone();
        (blank.ci_low, blank.ci_high) = (f64::NAN, f64::NAN);
        assert_eq!(judge(&none, 0.5).standing(&blank), Standing::Short);
        // A fitted row, its rounds without samples, is not judged by rounds.
        let mut fitted = quiet.clone();
        fitted.samples.clear();
        for x in &mut fitted.rounds {
            x.samples = 0;
        }
        assert_eq!(judge(&drifting, 0.02).standing(&fitted), Standing::NoRounds);
    }

    /// "Out of reach" is a flag that ends a figure's rounds: on rows whose rounds are
    /// only noise (7%, within reach of ±2% in about 60 rounds) it stays quiet, and on
    /// rows whose level steps by ±8% every ten rounds it fires.
    #[test]
    fn out_of_reach_stays_quiet_on_noise_and_fires_on_drift() {
        let mut rng = SplitMix64::new(3);
        let none = RunNoise::none();
        let judge = Judge { target: 0.02, max_rounds: 300, noise: &none };
        let out = |r: &ResultRow| matches!(judge.standing(r), Standing::OutOfReach { .. });
        let trials = 300;
        let quiet = (0..trials).filter(|_| out(&row(&mut rng, 30, 0.07, |_| 0.0))).count();
        let drift = (0..trials)
            .filter(|_| out(&row(&mut rng, 30, 0.07, |k| if (k / 10) % 2 == 0 { 0.08 } else { -0.08 })))
            .count();
        assert!(quiet <= trials / 20, "noise alone: {quiet} of {trials}");
        assert!(drift >= trials * 8 / 10, "a drifting level: {drift} of {trials}");
    }

    /// A run's judgement names each row's standing, basis and reason, and counts only
    /// the rows within the target as reached; its JSON says the standing by name.
    #[test]
    fn a_run_is_judged_row_by_row_and_says_so_in_json() {
        let mut rng = SplitMix64::new(3);
        let steady = row(&mut rng, 100, 0.05, |_| 0.0);
        let stepping = row(&mut rng, 40, 0.01, |k| if (k / 10) % 2 == 0 { 0.08 } else { -0.08 });
        let mut other = row(&mut rng, 10, 0.05, |_| 0.0);
        other.benchmark = "syscall.getuid".into();
        let quiet = row(&mut rng, 10, 0.05, |_| 0.0);
        let noise = model(0.003);
        let rows = [steady, stepping, quiet, other];
        let j = Judge { target: 0.02, max_rounds: 300, noise: &noise }.judge(&rows);
        assert_eq!(j.reached, 1);
        let standing: Vec<Standing> = j.figures.iter().map(|f| f.standing).collect();
        assert!(matches!(
            standing[..],
            [Standing::Reached, Standing::OutOfReach { .. }, Standing::Short, Standing::Short]
        ));
        let basis: Vec<Basis> = j.figures.iter().map(|f| f.basis).collect();
        assert_eq!(
            basis,
            [Basis::BlocksAndBetweenRuns, Basis::BlocksAndBetweenRuns, Basis::BetweenRuns, Basis::OwnInterval]
        );
        assert_eq!((j.judged_on(Basis::BlocksAndBetweenRuns), j.judged_on(Basis::BetweenRuns)), (2, 1));
        assert_eq!(j.figures.iter().map(|f| f.rounds).collect::<Vec<_>>(), [100, 40, 10, 10]);
        assert!(j.figures[2].why.is_some() && j.figures[0].why.is_none() && j.figures[1].why.is_none());
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["figures"][0]["standing"], "reached");
        assert_eq!(v["figures"][1]["standing"], "out_of_reach");
        assert!(v["figures"][1]["rounds_needed"].as_u64().unwrap() > 300, "{v}");
        assert_eq!(v["figures"][2]["basis"], "between_runs");
        assert_eq!(v["figures"][3]["benchmark"], "syscall.getuid");
        // A machine whose spread between runs alone is past ±2%: the figures it
        // measured need runs, and say by how much; the other is judged as before.
        let wide = model(0.04);
        let j = Judge { target: 0.02, max_rounds: 300, noise: &wide }.judge(&rows);
        let standing: Vec<Standing> = j.figures.iter().map(|f| f.standing).collect();
        assert!(matches!(
            standing[..],
            [Standing::NeedsRuns { .. }, Standing::NeedsRuns { .. }, Standing::NeedsRuns { .. }, Standing::Short]
        ));
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["figures"][0]["standing"], "needs_runs");
        assert!((v["figures"][0]["between"].as_f64().unwrap() - wide.between_alone(&rows[0])).abs() < 1e-12);
    }

    /// The cheap check never disagrees with the full judgement: a row it calls short
    /// (on its blocks, with the machine's spread beside) is `Short` whatever its own
    /// interval, and it does call some and leave some.
    #[test]
    fn short_regardless_implies_short() {
        let mut rng = SplitMix64::new(4);
        let none = RunNoise::none();
        let spreads = [model(0.004), model(0.01), model(0.03)];
        let (mut called, mut not_called) = (0, 0);
        for k in 0..300 {
            let n = 3 + k % 70;
            let step = 0.002 * (k % 25) as f64;
            let r = row(&mut rng, n, 0.01 + 0.001 * (k % 30) as f64, |i| if (i / 10) % 2 == 0 { step } else { -step });
            for target in [0.01, 0.02, 0.05] {
                for noise in [&none, &spreads[k % 3]] {
                    let judge = Judge { target, max_rounds: 300, noise };
                    if judge.short_regardless(&r, &round_logs(&r)) {
                        called += 1;
                        assert_eq!(judge.standing(&r), Standing::Short, "{n} rounds, step {step}, ±{target}");
                    } else {
                        not_called += 1;
                    }
                }
            }
        }
        assert!(called > 100 && not_called > 100, "{called} {not_called}");
        // Before blocks: never decided cheaply.
        let short = row(&mut rng, 29, 0.2, |_| 0.0);
        assert!(!Judge { target: 0.01, max_rounds: 300, noise: &none }.short_regardless(&short, &round_logs(&short)));
    }

    /// A row of one round (a benchmark measured once) has an interval of one window:
    /// never reached on it alone, however narrow; with the machine's spread between
    /// runs beside it, judged as any short row.
    #[test]
    fn one_window_is_not_reached_without_the_spread_between_runs() {
        let mut rng = SplitMix64::new(5);
        let once = row(&mut rng, 1, 0.0, |_| 0.0);
        assert!(precision_of(&once).is_some_and(|p| p < 0.01), "{:?}", precision_of(&once));
        let none = RunNoise::none();
        let alone = Judge { target: 0.05, max_rounds: 300, noise: &none };
        assert_eq!(alone.standing(&once), Standing::OneWindow);
        assert!(!alone.short_regardless(&once, &round_logs(&once)));
        let spread = model(0.01);
        assert_eq!(Judge { target: 0.2, max_rounds: 300, noise: &spread }.standing(&once), Standing::Reached);
        assert!(matches!(
            Judge { target: 0.01, max_rounds: 300, noise: &spread }.standing(&once),
            Standing::NeedsRuns { .. }
        ));
        let v = serde_json::to_value(alone.judge(std::slice::from_ref(&once))).unwrap();
        assert_eq!(v["figures"][0]["standing"], "one_window");
    }

    #[test]
    fn the_cap_is_the_pace_so_far_carried_to_the_deadline() {
        use std::time::Duration;
        let s = Duration::from_secs;
        // 40 rounds in 5 s, 55 s left: 440 more at that pace.
        assert_eq!(rounds_in_time(40, s(5), s(55), 10_000), 480);
        assert_eq!(rounds_in_time(40, s(5), s(55), 300), 300, "within the ceiling");
        // The deadline reached: the rounds done are the cap.
        assert_eq!(rounds_in_time(40, s(60), Duration::ZERO, 10_000), 40);
        assert_eq!(rounds_in_time(3, Duration::ZERO, s(60), 1000), 1000, "no pace yet");
        assert_eq!(rounds_in_time(usize::MAX, Duration::from_nanos(1), s(60), 1000), 1000);
        // A cheap benchmark whose blocks of ten alternate by ±5%: ±2% needs 36 blocks
        // (t₀.₉₇₅,₃₅·sd/6 ≤ ln 1.02), 360 rounds: out of reach of a cap of 300 rounds,
        // within reach of its time.
        let mut rng = SplitMix64::new(9);
        let none = RunNoise::none();
        let noisy = row(&mut rng, 40, 0.0, |k| if (k / 10) % 2 == 0 { 0.05 } else { -0.05 });
        let needed = match (Judge { target: 0.02, max_rounds: 300, noise: &none }).standing(&noisy) {
            Standing::OutOfReach { rounds_needed: Some(n) } => n,
            other => panic!("{other:?}"),
        };
        let cap = rounds_in_time(40, s(5), s(55), 10_000);
        assert_eq!(needed, 360);
        assert!(needed <= cap);
        let j = Judge { target: 0.02, max_rounds: cap, noise: &none }.judge(std::slice::from_ref(&noisy));
        assert_eq!((j.figures[0].standing, j.figures[0].cap), (Standing::Short, 480));
    }

    /// `runs` noise runs whose getppid medians drift between runs by `sigma` (log),
    /// drawn.
    fn drawn(rng: &mut SplitMix64, sigma: f64, runs: usize) -> RunNoise {
        let medians: Vec<f64> = (0..runs).map(|_| 100.0 * (sigma * normal(rng)).exp()).collect();
        noise_runs(medians.into_iter())
    }

    /// "Needs runs" stays quiet where six noise runs drew the machine's spread between
    /// runs from a quarter of the target (its 95% bound then rarely reaches ±2%), and
    /// fires where they drew it from the target itself.
    #[test]
    fn needs_runs_stays_quiet_on_a_small_spread_and_fires_on_a_large_one() {
        let mut rng = SplitMix64::new(6);
        let r = row(&mut rng, 40, 0.01, |_| 0.0);
        let trials = 400;
        let fires = |sigma: f64, rng: &mut SplitMix64| {
            (0..trials)
                .filter(|_| {
                    let noise = drawn(rng, sigma, 6);
                    matches!(
                        Judge { target: 0.02, max_rounds: 300, noise: &noise }.standing(&r),
                        Standing::NeedsRuns { .. }
                    )
                })
                .count()
        };
        let quiet = fires(0.005, &mut rng);
        let loud = fires(0.02, &mut rng);
        assert!(quiet <= trials / 10, "σ_b at a quarter of the target: {quiet} of {trials}");
        assert!(loud >= trials * 9 / 10, "σ_b at the target: {loud} of {trials}");
    }

    /// On independent rounds whose ±2% is within the cap, "out of reach" rarely fires:
    /// at 7% noise a round (about 25 of 300 rounds needed) at 30 to 120 rounds, and at
    /// 12% (about 140 needed, half the cap) once twelve blocks project it. (From three
    /// blocks, the 12% figure is called out of reach about a fifth of the time: their
    /// spread has two degrees of freedom.)
    #[test]
    fn out_of_reach_stays_quiet_on_independent_rounds_within_the_cap() {
        let mut rng = SplitMix64::new(7);
        let none = RunNoise::none();
        let judge = Judge { target: 0.02, max_rounds: 300, noise: &none };
        let trials = 300;
        let mut out = |noise: f64, n: usize| {
            (0..trials)
                .filter(|_| matches!(judge.standing(&row(&mut rng, n, noise, |_| 0.0)), Standing::OutOfReach { .. }))
                .count()
        };
        for n in [30, 60, 120] {
            let fired = out(0.07, n);
            assert!(fired <= trials / 20, "7% noise, {n} rounds: {fired} of {trials}");
        }
        let fired = out(0.12, 120);
        assert!(fired <= trials / 10, "12% noise, 120 rounds: {fired} of {trials}");
    }
}
