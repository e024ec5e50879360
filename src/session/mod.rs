//! Executes a run: checks everything that can be checked before measuring (database,
//! placement, privileges), calibrates, then measures in rounds: R passes over the
//! selected benchmarks, each benchmark's round in a fresh worker process
//! (`worker`), so every benchmark is seen at R moments spread over the whole run,
//! interleaved with the others. A benchmark's rows are merged over its rounds
//! (`rounds`) and stored the moment its last round finishes. A stop signal (Ctrl-C,
//! SIGTERM, SIGHUP, SIGXCPU) is passed on to the worker, which stops between samples;
//! every round that finished stays, merged and stored.
//!
//! Measured figures are never lost: a run is marked `interrupted` or `failed` on
//! every path that can run code (a guard marks it `failed` if the run ends any other
//! way, panics included), and when storing fails the benchmark's figures are printed
//! and written, importable, to a JSON file beside the database before the run stops.
//!
//! [`execute`] reads as the run's steps, each in a file of its own: `prepare` (checks,
//! calibration, the conditions' arms, the announcement), `rounds` (the interleaved
//! rounds and what each reply means), `store` (the run's lifecycle in the store),
//! `rescue` (what the store refused, written to a file), `suite` (a suite's
//! simulations) and `noise` (the between-run spreads `--precision` judges with). A
//! round is run only through a [`RoundExecutor`], so the steps can be driven without
//! measuring anything (this module's tests answer every round with canned replies).

mod executor;
pub mod grounding;
mod noise;
pub mod plan;
mod prepare;
mod rescue;
mod rounds;
mod store;
mod suite;
mod tally;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::bench::{BenchDef, BenchOptions, RoundPlan, Scope};
use crate::clock::Calibration;
use crate::model::Skipped;
use crate::report;
use crate::runner::MeasureConfig;
use crate::store::Store;
use crate::worker::Executor;

pub use executor::RoundExecutor;
pub use noise::{judge_precision, machine_noise};
pub use rounds::arm_order;
pub use store::{Recorded, record};
pub use suite::execute_suite;

use prepare::{Setup, prepare};
use rescue::rescue_all;
use rounds::{Running, measure_rounds, round_caps};
use store::{Begin, begin, final_status, finish, keep_unfinished};
use suite::add_suite_simulations;
use tally::Tally;

/// Rounds per run unless `--rounds` says otherwise: enough for an interval from the
/// rounds' spread (Student's t with 9 degrees of freedom is within 15% of the normal),
/// few enough that the default suite stays under 15 s on 2 cores.
pub const DEFAULT_ROUNDS: usize = 10;

/// Rounds of a `--quick` run.
pub const QUICK_ROUNDS: usize = 5;

/// What starting a worker and passing its request and reply costs (measured: 2 ms to
/// exec, the rest reading and encoding), for the estimate.
pub const WORKER_START: Duration = Duration::from_millis(8);

/// What the user asked a run to do.
pub struct RunRequest {
    pub selected: Vec<(&'static BenchDef, Scope)>,
    pub quick: bool,
    /// Rounds per benchmark (None: the default for the budgets).
    pub rounds: Option<usize>,
    /// Where the rounds run: fresh worker processes, except in pipeline tests.
    pub executor: Executor,
    /// Also count switches with per-task perf software counters.
    pub perf_counters: bool,
    /// Follow the timed pass of the traced families with a trace pass, where the
    /// tracepoints can be opened.
    pub trace: bool,
    pub options: BenchOptions,
    pub db: PathBuf,
    pub save: Option<String>,
    pub command_line: String,
    /// Draw a progress bar (only on a terminal, never with --json).
    pub progress: bool,
    /// Announce nothing (`--quiet`): warnings and errors only.
    pub quiet: bool,
    /// Refuse to measure when the preflight finds a trap (`--strict`).
    pub strict: bool,
    /// Keep adding rounds until every figure reaches this precision (`--precision`).
    pub precision: Option<PrecisionGoal>,
    /// Conditions measured beside the baseline in the same rounds (`--condition`).
    pub conditions: Vec<crate::condition::Condition>,
    /// How long one measurement may run before it is abandoned (None: the budgets'
    /// default, `MeasureConfig::hard_limit`); a worker's bound follows from it.
    pub timeout: Option<std::time::Duration>,
    /// What the run is stored as: a measurement, or one of `oscost noise`'s A/A runs.
    pub kind: crate::model::RunKind,
}

/// `run --precision`: rounds are added to each benchmark, in fresh workers and
/// interleaved as usual, until every row's 95% interval is within `target` (relative
/// half-width) or out of reach of the rounds that fit before `max_time`, `max_rounds`
/// rounds have run, or `max_time` is spent.
#[derive(Debug, Clone, Copy)]
pub struct PrecisionGoal {
    pub target: f64,
    /// The change two runs like this one are to tell (`--detect`), which set `target`.
    pub detect: Option<f64>,
    pub max_time: std::time::Duration,
    /// The ceiling on one benchmark's rounds (`ADAPTIVE_MAX_ROUNDS` from the command
    /// line).
    pub max_rounds: usize,
}

/// Fewest rounds before an adaptive run judges a benchmark's precision: an interval
/// from fewer rounds says too little about the next.
pub const ADAPTIVE_MIN_ROUNDS: usize = 3;

/// Most rounds an adaptive run gives one benchmark, whatever time is left: a bound on
/// the coordinator's memory and on each judgement's cost (every round's samples are
/// kept and merged), not the cap that matters. That is time: a figure is out of reach
/// when its blocks need more rounds than fit before `--max-time` at its benchmark's
/// pace (`precision::rounds_in_time`). A thousand rounds are a minute or two of the
/// cheapest benchmarks.
pub const ADAPTIVE_MAX_ROUNDS: usize = 1000;

/// How a run ended.
pub struct RunOutcome {
    pub run_id: i64,
    /// The stop signal that ended the run early, if one did.
    pub stopped_by: Option<i32>,
    pub failures: Vec<Skipped>,
    /// Why the run stopped because it could not store a benchmark (its figures were
    /// printed and saved as the message says).
    pub storage_error: Option<String>,
    pub store: Store,
    pub elapsed: Duration,
    /// Under `--precision`, each benchmark's cap on rounds at its last judgement (the
    /// rounds its pace fitted before the deadline): what its figures' `OutOfReach` was
    /// judged against.
    pub round_caps: BTreeMap<String, usize>,
}

impl RunOutcome {
    pub fn interrupted(&self) -> bool {
        self.stopped_by.is_some()
    }
}

/// The estimated duration of the selected benchmarks measured in `rounds` rounds
/// under the run's budgets `cfg`.
pub fn estimate(selected: &[(&BenchDef, Scope)], opts: &BenchOptions, cfg: &MeasureConfig, rounds: usize) -> Duration {
    let per_round = cfg.per_round(rounds);
    let work = selected
        .iter()
        .map(|(b, s)| match b.rounds {
            RoundPlan::Spread => ((b.cost)(*s, opts, &per_round).time(&per_round) + WORKER_START) * rounds as u32,
            RoundPlan::Once => (b.cost)(*s, opts, cfg).time(cfg) + WORKER_START,
        })
        .sum::<Duration>();
    cfg.startup + work
}

/// The rounds a run uses.
pub fn rounds_of(req: &RunRequest) -> usize {
    req.rounds.unwrap_or(if req.quick { QUICK_ROUNDS } else { DEFAULT_ROUNDS }).max(1)
}

/// The run's estimate, from its benchmarks and options.
fn estimate_of(req: &RunRequest, cfg: &MeasureConfig) -> Duration {
    // Each condition is one more arm of every round.
    estimate(&req.selected, &req.options, cfg, rounds_of(req)) * (1 + req.conditions.len()) as u32
}

/// A duration as users read an estimate: whole seconds, or minutes and seconds.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64().ceil() as u64;
    if s >= 120 { format!("{} min {} s", s / 60, s % 60) } else { format!("{s} s") }
}

/// Calibrates with rounds sized to the run's precision.
pub fn calibrate(quick: bool) -> Calibration {
    crate::clock::calibrate(if quick { 10_000_000 } else { 40_000_000 })
}

/// Runs the request. Errors before the first measurement are returned as errors;
/// failures of single benchmarks are reported in the outcome and the run goes on.
pub fn execute(req: RunRequest) -> Result<RunOutcome> {
    execute_then(req, None)
}

/// The run's lifecycle: checked and prepared, then conducted by the executor the
/// request names.
fn execute_then(req: RunRequest, suite: Option<&str>) -> Result<RunOutcome> {
    if req.executor == Executor::Workers {
        crate::leftovers::clean_up_after_killed_runs();
    }
    let entered = Instant::now();
    let store = Store::open(&req.db)?;
    let mut setup = prepare(&req, &store)?;
    setup.set_up_in = entered.elapsed();
    let mut executor = req.executor;
    conduct(&req, setup, store, &mut executor, suite)
}

/// A prepared run from its beginning in the store to its end: begun, measured in
/// rounds by `executor`, what finished kept (stored, or rescued when the store
/// fails), `suite`'s simulations added, finished. The setup is dropped last: its
/// arms undo what their conditions hold.
fn conduct(
    req: &RunRequest,
    setup: Setup,
    store: Store,
    executor: &mut dyn RoundExecutor,
    suite: Option<&str>,
) -> Result<RunOutcome> {
    let started_at = report::now_rfc3339();
    let what = Begin { command_line: &req.command_line, save: req.save.clone(), kind: req.kind };
    let mut run = begin(what, store, &setup.machine, &started_at)?;
    run.db = Some(req.db.clone());
    let mut tally = Tally::new(req, &setup);
    measure_rounds(&mut Running { req, setup: &setup, run: &mut run, tally: &mut tally, executor: &mut *executor });
    keep_unfinished(&mut run, req, &mut tally.progress, &mut tally.unstored);
    let storage_error =
        (!tally.unstored.is_empty()).then(|| rescue_all(req, &setup.machine, run.id, &started_at, &tally.unstored));
    if let Some(b) = tally.bar.take() {
        b.finish_and_clear();
    }
    if let Some(suite) = suite.filter(|_| storage_error.is_none()) {
        let scale = if req.quick { crate::sim::suites::Scale::Quick } else { crate::sim::suites::Scale::Full };
        add_suite_simulations(suite, scale, &mut run)?;
    }
    let stopped_by = executor.stop_signal();
    let status = final_status(storage_error.is_some(), stopped_by.is_some(), !tally.failures.is_empty());
    let id = run.id;
    let store = finish(run, status, storage_error.as_deref())?;
    let round_caps = round_caps(req, setup.arms.len(), &tally.progress);
    let failures = tally.failures;
    Ok(RunOutcome {
        run_id: id,
        stopped_by,
        failures,
        storage_error,
        store,
        elapsed: setup.started.elapsed(),
        round_caps,
    })
}

/// Whether a selected benchmark runs the no-op helper (the exec probes): only then is
/// it opened, and one the user named and oscost refuses stops the run before anything
/// is measured.
pub fn runs_noop_helper(selected: &[(&BenchDef, Scope)]) -> bool {
    selected.iter().any(|(b, _)| crate::bench::spawn::RUNS_HELPER.contains(&b.id))
}

/// Fails clearly when a run selected nothing.
pub fn ensure_selected(selected: &[(&BenchDef, Scope)]) -> Result<()> {
    if selected.is_empty() {
        bail!("no benchmark selected");
    }
    Ok(())
}
