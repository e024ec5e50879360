//! The measuring: R passes over the selected benchmarks, each pass measuring every
//! benchmark's arms (the baseline and each condition) in alternating order, so drift
//! over the run touches every benchmark and arm alike. Each round is run by the
//! run's [`RoundExecutor`] (a fresh worker process in a real run), its reply kept, and
//! a benchmark marked finished after its planned rounds or, under `--precision`, once
//! its figures reach the target or are out of reach.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use super::executor::RoundExecutor;
use super::prepare::{Arm, Setup};
use super::store::{OpenRun, store_benchmark, store_when_done};
use super::tally::{Progress, Tally};
use super::{ADAPTIVE_MIN_ROUNDS, RunRequest, estimate_of, seconds};
use crate::bench::{BenchDef, BenchOptions, RoundPlan, Scope};
use crate::model::{ResultRow, Skipped};
use crate::rounds;
use crate::runner::{BenchError, MeasureConfig};
use crate::worker::RoundJob;

/// The real-time watchdog's and the round's bound for a benchmark under `cfg`.
pub(super) fn bound_of(def: &BenchDef, scope: Scope, opts: &BenchOptions, cfg: &MeasureConfig) -> Duration {
    let cost = (def.cost)(scope, opts, cfg);
    cfg.hard_limit * cost.probes.max(1) as u32 + cost.fixed * 4 + Duration::from_secs(10)
}

/// The order a round measures its arms in: forward in even rounds, backward in odd
/// ones (A B, B A, A B…), so drift over a round touches every arm alike.
pub fn arm_order(arms: usize, round: usize) -> Vec<usize> {
    if round.is_multiple_of(2) { (0..arms).collect() } else { (0..arms).rev().collect() }
}

impl Tally {
    pub(super) fn new(req: &RunRequest, setup: &Setup) -> Self {
        let rounds = setup.rounds;
        let arms = setup.arms.len();
        let measured = setup.arms.iter().filter(|a| !matches!(a, Arm::Unavailable(..))).count();
        let jobs: usize =
            req.selected.iter().map(|(d, _)| if d.rounds == RoundPlan::Once { 1 } else { rounds }).sum::<usize>()
                * measured;
        let mut progress: Vec<Progress> = (0..req.selected.len() * arms).map(|_| Progress::default()).collect();
        for (i, (def, _)) in req.selected.iter().enumerate() {
            for (a, arm) in setup.arms.iter().enumerate() {
                if let Arm::Unavailable(c, why) = arm {
                    let p = &mut progress[i * arms + a];
                    p.skip_once(Skipped {
                        benchmark: def.id.clone(),
                        params: condition_params(&c.to_string()).into(),
                        reason: why.clone(),
                    });
                    p.finished = true;
                }
            }
        }
        Tally {
            progress,
            failures: Vec::new(),
            unstored: Vec::new(),
            bar: req.progress.then(|| progress_bar(jobs as u64, estimate_of(req, &setup.cfg))),
            evidence_said: vec![false; arms],
        }
    }

    /// A line said above the progress bar.
    pub(super) fn say(&self, msg: &str) {
        let msg = crate::report::fit::for_stderr_terminal(msg);
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{msg}")),
            None => eprintln!("{msg}"),
        }
    }
}

/// What the rounds work with: the request and the setup they read, the run they
/// store into, the bookkeeping they keep, and what runs each round.
pub(super) struct Running<'a> {
    pub(super) req: &'a RunRequest,
    pub(super) setup: &'a Setup,
    pub(super) run: &'a mut OpenRun,
    pub(super) tally: &'a mut Tally,
    pub(super) executor: &'a mut dyn RoundExecutor,
}

/// Every round of every selected benchmark, interleaved (round 1 of each, then round
/// 2 of each…), until all are done, a stop signal, or the store fails.
pub(super) fn measure_rounds(ctx: &mut Running) {
    let (req, setup) = (ctx.req, ctx.setup);
    for round in 0..setup.max_rounds {
        if ctx.tally.progress.iter().all(|p| p.finished) {
            return;
        }
        for (i, (def, scope)) in req.selected.iter().enumerate() {
            for arm in arm_order(setup.arms.len(), round) {
                let at = Slot { round, bench: i, arm };
                if ctx.executor.interrupted() || measure_round(ctx, at, (def, *scope)).is_break() {
                    return;
                }
            }
            if let Err(e) = store_when_done(ctx.run, setup, ctx.tally, i, &def.id) {
                // Nothing new is measured once the store fails; what finished is kept.
                ctx.tally.unstored.push(e);
                return;
            }
        }
    }
}

/// Where a round stands: its number, the benchmark's index and the arm's.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub(super) round: usize,
    pub(super) bench: usize,
    pub(super) arm: usize,
}

/// A skip's parameters under a condition.
pub(super) fn condition_params(condition: &str) -> String {
    format!("{}={condition}", crate::condition::PARAM.name())
}

/// One round of one benchmark's arm in a fresh worker, its rows kept (labelled with
/// the arm's condition), and the benchmark stored once it has finished. Breaks when
/// the run must stop.
pub(super) fn measure_round(
    ctx: &mut Running,
    at: Slot,
    (def, scope): (&BenchDef, Scope),
) -> std::ops::ControlFlow<()> {
    use std::ops::ControlFlow::{Break, Continue};
    let setup = ctx.setup;
    let slot = at.bench * setup.arms.len() + at.arm;
    if ctx.tally.progress[slot].finished {
        return Continue(());
    }
    if let Some(b) = &ctx.tally.bar {
        b.set_message(format!("{} (round {}/{})", def.id, at.round + 1, setup.rounds));
    }
    let reply = run_arm(ctx, at, (def, scope));
    if keep_reply(ctx, slot, def, &setup.arms[at.arm], reply).is_break() {
        return Break(());
    }
    end_round(ctx, at, (def, slot))
}

/// Runs the round of one arm: its settings, what its condition holds around the
/// worker, the worker, and what shows the condition was in effect and acted.
pub(super) fn run_arm(ctx: &mut Running, at: Slot, (def, scope): (&BenchDef, Scope)) -> crate::worker::RoundReply {
    let (req, setup) = (ctx.req, ctx.setup);
    let arm = &setup.arms[at.arm];
    let (cfg, opts) = arm_settings(req, setup, at, def, arm);
    let prepared = match arm {
        Arm::Condition(p) => Some(p),
        _ => None,
    };
    let job = RoundJob {
        def,
        scope,
        cfg: &cfg,
        calib: &setup.calib,
        opts: &opts,
        bound: bound_of(def, scope, &opts, &cfg),
        condition: prepared.and_then(|p| p.in_worker()),
    };
    let mut reply = match prepared.map(|p| p.hold_round(&opts)).transpose() {
        Ok(hold) => {
            let began = Instant::now();
            let mut reply = ctx.executor.run_round(&job);
            stamp_times(&mut reply.rows, began.elapsed(), setup.set_up_in);
            if let (Some(p), Some(hold)) = (prepared, &hold) {
                let report = crate::condition::RoundReport { peers_moved: reply.peers_moved, rows: &reply.rows };
                let seen = p.evidence(hold, &report);
                reply.evidence.extend(seen);
            }
            drop(hold);
            reply
        }
        Err(why) => crate::worker::RoundReply::empty(Err(BenchError::Setup(why.to_string()))),
    };
    if let Some(p) = prepared {
        if !req.quiet {
            say_evidence(ctx.tally, at.arm, &p.condition.to_string(), &reply.evidence);
        }
        let report = crate::condition::RoundReport { peers_moved: reply.peers_moved, rows: &reply.rows };
        // Only a round that ended well can show the condition did not act: a worker
        // killed or stopped reported no count, and its failure is its own.
        if let (Ok(()), Err(why)) = (&reply.outcome, p.acted(&report)) {
            reply.rows.clear();
            reply.outcome = Err(BenchError::Skipped(why.to_string()));
        }
    }
    label_arm(&mut reply, arm);
    reply
}

/// Records on each row of a round how long the round took (worker started to reaped)
/// and how long the run took to set up: what one more round and one more run cost,
/// which `oscost plan` reads back.
pub(super) fn stamp_times(rows: &mut [ResultRow], round: Duration, set_up: Duration) {
    use crate::model::Count;
    for row in rows {
        row.counts.insert(Count::RoundSeconds, round.as_secs_f64());
        row.counts.insert(Count::RunSetupSeconds, set_up.as_secs_f64());
    }
}

/// Keeps a round's rows and skips in its slot and records how it ended; breaks on a
/// stop signal.
pub(super) fn keep_reply(
    ctx: &mut Running,
    slot: usize,
    def: &BenchDef,
    arm: &Arm,
    reply: crate::worker::RoundReply,
) -> std::ops::ControlFlow<()> {
    let ended = classify(def, reply.outcome, (&reply.rows, &reply.skipped), &*ctx.executor);
    let tally = &mut *ctx.tally;
    let p = &mut tally.progress[slot];
    for s in reply.skipped {
        p.skip_once(s);
    }
    // Every round is kept, empty or not, so a round's place in the list is its number
    // (`Round::at`), the same for every arm.
    p.rounds.push(reply.rows);
    let params = arm.condition().map(|c| condition_params(&c)).unwrap_or_default();
    match ended {
        Ended::Done => {}
        Ended::Interrupted => return std::ops::ControlFlow::Break(()),
        Ended::Skipped(why) => {
            p.skip_once(Skipped { benchmark: def.id.clone(), params: params.into(), reason: why });
            p.finished = true;
        }
        Ended::Failed(mut f) => {
            f.params = params.into();
            p.skip_once(f.clone());
            p.finished = true;
            tally.say(&format!("error: {}: {}", def.id, f.reason.trim_start_matches("failed: ")));
            tally.failures.push(f);
        }
    }
    std::ops::ControlFlow::Continue(())
}

/// Marks a slot finished after its last round and, in a run without conditions, stores
/// the benchmark at once (paired runs store a benchmark's arms together).
pub(super) fn end_round(ctx: &mut Running, at: Slot, (def, slot): (&BenchDef, usize)) -> std::ops::ControlFlow<()> {
    let (req, setup, tally) = (ctx.req, ctx.setup, &mut *ctx.tally);
    let p = &mut tally.progress[slot];
    p.cap = round_cap(setup, at.round);
    if def.rounds == RoundPlan::Once || last_round(req, setup, at.round, p) {
        p.finished = true;
    }
    if let Some(b) = &tally.bar {
        b.inc(1);
    }
    let p = &mut tally.progress[slot];
    if setup.arms.len() == 1
        && p.finished
        && let Err(e) = store_benchmark(ctx.run, p, &def.id)
    {
        // Nothing new is measured once the store fails; what finished is kept.
        tally.unstored.push(e);
        return std::ops::ControlFlow::Break(());
    }
    std::ops::ControlFlow::Continue(())
}

/// The budgets and options an arm's round runs with: the run's, with the trace pass in
/// the baseline's first round of a traced benchmark, and as the condition adjusts them.
pub(super) fn arm_settings(
    req: &RunRequest,
    setup: &Setup,
    at: Slot,
    def: &BenchDef,
    arm: &Arm,
) -> (MeasureConfig, BenchOptions) {
    let mut cfg = if def.rounds == RoundPlan::Once { setup.cfg.clone() } else { setup.per_round.clone() };
    let mut opts = req.options.clone();
    if at.round == 0
        && matches!(arm, Arm::Baseline)
        && def.family.is_traced()
        && let Some(spec) = &setup.trace_spec
    {
        cfg.trace = Some(spec.clone());
    }
    if let Arm::Condition(p) = arm {
        p.adjust(&mut cfg, &mut opts);
    }
    (cfg, opts)
}

/// Gives every row and skip of a condition's round the condition as a parameter.
pub(super) fn label_arm(reply: &mut crate::worker::RoundReply, arm: &Arm) {
    let Some(condition) = arm.condition() else { return };
    for r in &mut reply.rows {
        r.params.set(crate::condition::PARAM, condition.clone());
    }
    for s in &mut reply.skipped {
        let extra = condition_params(&condition);
        s.params = if s.params.is_empty() { extra.into() } else { format!("{} {extra}", s.params).into() };
    }
}

/// Says once per arm how the worker knew its condition was in effect.
pub(super) fn say_evidence(tally: &mut Tally, arm: usize, condition: &str, evidence: &[String]) {
    if tally.evidence_said[arm] || evidence.is_empty() {
        return;
    }
    tally.evidence_said[arm] = true;
    tally.say(&format!("condition {condition} in effect: {}", evidence.join("; ")));
}

/// Under `--precision`, the most rounds a benchmark whose round `round` just ran may
/// run: its pace so far carried to the deadline, within the ceiling
/// (`precision::rounds_in_time`).
pub(super) fn round_cap(setup: &Setup, round: usize) -> Option<usize> {
    // A deadline exactly under --precision.
    let deadline = setup.deadline?;
    let now = Instant::now();
    let left = deadline.saturating_duration_since(now);
    Some(crate::judge::precision::rounds_in_time(round + 1, now - setup.started, left, setup.max_rounds))
}

/// Each benchmark's last cap on rounds, by its name (the largest over its `arms`).
pub(super) fn round_caps(req: &RunRequest, arms: usize, progress: &[Progress]) -> BTreeMap<String, usize> {
    let mut caps = BTreeMap::new();
    for (i, p) in progress.iter().enumerate() {
        if let Some(cap) = p.cap {
            let slot = caps.entry(req.selected[i / arms].0.id.to_string()).or_insert(cap);
            *slot = cap.max(*slot);
        }
    }
    caps
}

/// Whether the round just run is a benchmark's last: the planned count, or under
/// `--precision` every row within the target or out of the reach of its cap
/// (`precision::Judge`, after `ADAPTIVE_MIN_ROUNDS`), the ceiling, or the time limit.
pub(super) fn last_round(req: &RunRequest, setup: &Setup, round: usize, p: &Progress) -> bool {
    let Some(goal) = &req.precision else { return round + 1 == setup.rounds };
    let cap = p.cap.unwrap_or(setup.max_rounds);
    round + 1 >= setup.max_rounds
        || setup.deadline.is_some_and(|d| std::time::Instant::now() >= d)
        || (round + 1 >= ADAPTIVE_MIN_ROUNDS && {
            let judge = crate::judge::precision::Judge { target: goal.target, max_rounds: cap, noise: &setup.noise };
            // A figure short whatever its interval needs no merge: that check first, and
            // the merged rows (whose bootstrap grows with every round) only when it
            // cannot decide. Both say the same (`precision::Judge::short_regardless`).
            !rounds::log_medians_by_figure(&p.rounds).iter().any(|(r, logs)| judge.short_regardless(r, logs))
                && rounds::merge(&p.rounds)
                    .iter()
                    .all(|r| judge.standing(r) != crate::judge::precision::Standing::Short)
        })
}

/// How one benchmark ended, for the run's bookkeeping.
pub(super) enum Ended {
    Done,
    Interrupted,
    Skipped(String),
    Failed(Skipped),
}

pub(super) fn classify(
    def: &BenchDef,
    result: Result<(), BenchError>,
    (rows, skipped): (&[ResultRow], &[Skipped]),
    executor: &dyn RoundExecutor,
) -> Ended {
    let failed =
        |reason: String| Ended::Failed(Skipped { benchmark: def.id.clone(), params: Default::default(), reason });
    match result {
        // A benchmark that measured nothing and said why not did not do its job.
        Ok(()) if rows.is_empty() && skipped.is_empty() => {
            failed("failed: it measured nothing (check the sizes and lists given to it)".into())
        }
        Ok(()) => Ended::Done,
        Err(BenchError::Interrupted) => Ended::Interrupted,
        // Ctrl-C reaches children first at times: their death is the symptom.
        Err(_) if interrupt_arriving(executor) => Ended::Interrupted,
        Err(BenchError::Skipped(why)) => Ended::Skipped(why),
        Err(other) => failed(format!("failed: {other}")),
    }
}

/// Whether a Ctrl-C is being delivered: the group's signal may reach the children (and
/// fail the benchmark) a moment before it reaches us.
pub(super) fn interrupt_arriving(executor: &dyn RoundExecutor) -> bool {
    for _ in 0..10 {
        if executor.interrupted() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// The bar shows time spent against the announced estimate: the benchmarks differ
/// too much in length for a rate-based time left to mean anything.
pub(super) fn progress_bar(len: u64, estimate: Duration) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    let template = format!("{{bar:30}} {{pos}}/{{len}} {{msg}} ({{elapsed}} of about {})", seconds(estimate));
    let style =
        indicatif::ProgressStyle::with_template(&template).unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}
