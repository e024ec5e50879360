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

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::bench::{BenchDef, BenchOptions, RoundPlan, Scope};
use crate::clock::Calibration;
use crate::model::{ResultRow, RunDocument, RunInfo, RunStatus, Skipped};
use crate::placement::Placement;
use crate::runner::{BenchError, MeasureConfig};
use crate::store::Store;
use crate::worker::{Executor, RoundJob, run_round};
use crate::{machine, report, rounds, sys};

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

/// A run being recorded: marked `failed` when dropped unless finished (so an error
/// return or a panic never leaves it `running`).
struct OpenRun {
    store: Option<Store>,
    id: i64,
    /// The database, to open again when the run's end cannot be written through the
    /// connection that failed (see [`mark_finished`]).
    db: Option<std::path::PathBuf>,
}

impl OpenRun {
    fn store(&mut self) -> &mut Store {
        self.store.as_mut().expect("the store stays until the run is finished")
    }

    fn finish(mut self, status: RunStatus) -> Result<Store> {
        let store = self.store.take().expect("a run finishes once");
        Ok(mark_finished(store, self.db.as_deref(), self.id, status)?)
    }
}

impl Drop for OpenRun {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            let _ = mark_finished(store, self.db.as_deref(), self.id, RunStatus::Failed);
        }
    }
}

/// Writes how run `id` ended; the store to go on with. When a full disk (or a file-size
/// limit) made the store fail, the connection's write-ahead log may be what cannot
/// grow: the connection is closed (which folds the log into the database and removes
/// it) and the database opened again, where the one-row update fits. Else the run
/// would stay `running`, and read as `abandoned` once this process is gone, though
/// it failed.
fn mark_finished(
    mut store: Store,
    db: Option<&Path>,
    id: i64,
    status: RunStatus,
) -> Result<Store, crate::store::StoreError> {
    let first = match store.finish_run(id, &report::now_rfc3339(), status) {
        Ok(()) => return Ok(store),
        Err(e) => e,
    };
    let Some(db) = db else { return Err(first) };
    drop(store);
    let mut again = Store::open(db).map_err(|_| first)?;
    again.finish_run(id, &report::now_rfc3339(), status)?;
    Ok(again)
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

/// Checks the placement before anything is measured: the workers apply it, the
/// coordinator only tries it (pinning and nice on a scratch thread, the policy set and
/// set back), so it never competes for the measured CPU at a changed priority.
fn check_placement(p: &Placement) -> Result<()> {
    let allowed = sys::allowed_cpus().context("reading this process's CPU affinity")?;
    p.validate(&allowed)?;
    std::thread::scope(|s| s.spawn(|| p.apply_static()).join())
        .map_err(|_| anyhow::anyhow!("checking the placement failed"))??;
    std::thread::scope(|s| s.spawn(|| p.probe_policy()).join())
        .map_err(|_| anyhow::anyhow!("checking the policy failed"))??;
    Ok(())
}

/// A benchmark's progress through the run's rounds.
#[derive(Default)]
struct Progress {
    /// Each finished round's rows.
    rounds: Vec<Vec<ResultRow>>,
    skipped: Vec<Skipped>,
    /// No more rounds: it failed, was skipped, or (once-only) ran.
    finished: bool,
    stored: bool,
    /// Under `--precision`, its cap on rounds at its last judgement.
    cap: Option<usize>,
}

impl Progress {
    fn skip_once(&mut self, s: Skipped) {
        if !self.skipped.iter().any(|k| k.benchmark == s.benchmark && k.params == s.params) {
            self.skipped.push(s);
        }
    }
}

/// The real-time watchdog's and the round's bound for a benchmark under `cfg`.
fn bound_of(def: &BenchDef, scope: Scope, opts: &BenchOptions, cfg: &MeasureConfig) -> Duration {
    let cost = (def.cost)(scope, opts, cfg);
    cfg.hard_limit * cost.probes.max(1) as u32 + cost.fixed * 4 + Duration::from_secs(10)
}

/// The tracepoints for the run's trace passes; None (said once, with what to run
/// instead) when none of the selected benchmarks is traced, tracing is off, or the
/// tracepoints cannot be opened.
fn trace_spec_for(req: &RunRequest) -> Option<crate::trace::TraceSpec> {
    if !req.trace || !req.selected.iter().any(|(d, _)| d.family.is_traced()) {
        return None;
    }
    match crate::trace::prepare() {
        Ok(spec) => Some(spec),
        Err(why) => {
            crate::report::fit::say(&format!("note: no trace pass: {why}; {}", crate::trace::UNAVAILABLE_HINT));
            None
        }
    }
}

/// Runs the request. Errors before the first measurement are returned as errors;
/// failures of single benchmarks are reported in the outcome and the run goes on.
pub fn execute(req: RunRequest) -> Result<RunOutcome> {
    execute_then(req, None)
}

/// [`execute`] for a suite: its simulations (the texts' experiments under the period
/// and `live` profiles) are added to the run once the benchmarks are done, before the
/// run is marked finished.
pub fn execute_suite(req: RunRequest, suite: &str) -> Result<RunOutcome> {
    execute_then(req, Some(suite))
}

/// The run's lifecycle: begun, measured, `suite`'s simulations added, finished.
fn execute_then(req: RunRequest, suite: Option<&str>) -> Result<RunOutcome> {
    if req.executor == crate::worker::Executor::Workers {
        crate::leftovers::clean_up_after_killed_runs();
    }
    let entered = Instant::now();
    let store = Store::open(&req.db)?;
    let mut setup = prepare(&req)?;
    setup.set_up_in = entered.elapsed();
    let started_at = report::now_rfc3339();
    let what = Begin { command_line: &req.command_line, save: req.save.clone(), kind: req.kind };
    let mut run = begin(what, store, &setup.machine, &started_at)?;
    run.db = Some(req.db.clone());
    let mut tally = Tally::new(&req, &setup);
    measure_rounds(&req, &setup, &mut run, &mut tally);
    keep_unfinished(&mut run, &req, &mut tally.progress, &mut tally.unstored);
    let storage_error =
        (!tally.unstored.is_empty()).then(|| rescue_all(&req, &setup.machine, run.id, &started_at, &tally.unstored));
    if let Some(b) = tally.bar.take() {
        b.finish_and_clear();
    }
    if let Some(suite) = suite.filter(|_| storage_error.is_none()) {
        add_suite_simulations(suite, &mut run, &req.db)?;
    }
    let stopped_by = sys::stop_signal();
    let status = final_status(storage_error.is_some(), stopped_by.is_some(), !tally.failures.is_empty());
    let id = run.id;
    let store = finish(run, status, storage_error.as_deref())?;
    let round_caps = round_caps(&req, setup.arms.len(), &tally.progress);
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

/// A suite's simulations, added to its run: the texts' experiments under the period
/// profile and under `live` (its switch costs from this very run, else from the newest
/// run stored in `db` that has them). Said on standard error, as the run's notes are.
fn add_suite_simulations(suite: &str, run: &mut OpenRun, db: &Path) -> Result<()> {
    let id = run.id;
    let (doc, _) = run.store().load_run(id)?;
    let source = crate::stored_profiles::StoredProfiles::reading(db);
    let Some(chosen) = crate::sim::profile_source::suite_profiles(suite, &doc, &source) else { return Ok(()) };
    for note in &chosen.notes {
        eprintln!("note: {note}");
    }
    let names: Vec<&str> = chosen.profiles.iter().map(|p| p.name.as_str()).collect();
    eprintln!("simulating the suite's experiments ({}) …", names.join(", "));
    let rows = crate::sim::suites::rows(suite, &chosen.profiles, sys::interrupted);
    run.store().add_benchmark(id, &rows, &[])?;
    Ok(())
}

/// What a run measures with, settled before it begins.
struct Setup {
    /// Benchmarks measured once; and each round of the others.
    cfg: MeasureConfig,
    per_round: MeasureConfig,
    calib: Calibration,
    machine: machine::Machine,
    trace_spec: Option<crate::trace::TraceSpec>,
    /// Rounds a benchmark runs (their budgets split the standard budgets).
    rounds: usize,
    /// Rounds a benchmark may run: `rounds`, or more under `--precision`.
    max_rounds: usize,
    /// When the run's setup was settled (the clocks calibrated), from which an adaptive
    /// run's pace is counted, and when it stops adding rounds.
    started: Instant,
    deadline: Option<Instant>,
    /// What the run spent before its first round (the store opened, the preflight, the
    /// clocks calibrated): recorded with its rows, for `oscost plan`.
    set_up_in: Duration,
    /// Under `--precision`, this machine's between-run spreads (`oscost noise`), which
    /// stand beside a row's interval or blocks when it is judged.
    noise: crate::noise::RunNoise,
    /// The run's arms: the baseline, then each condition as prepared (or why it cannot
    /// be measured here). Dropped after the last round: what they hold is undone.
    arms: Vec<Arm>,
}

/// One arm of a paired run: what its rounds measure under.
enum Arm {
    Baseline,
    Condition(crate::condition::Prepared),
    Unavailable(crate::condition::Condition, String),
}

impl Arm {
    fn condition(&self) -> Option<String> {
        match self {
            Arm::Baseline => None,
            Arm::Condition(p) => Some(p.condition.to_string()),
            Arm::Unavailable(c, _) => Some(c.to_string()),
        }
    }
}

/// The order a round measures its arms in: forward in even rounds, backward in odd
/// ones (A B, B A, A B…), so drift over a round touches every arm alike.
pub fn arm_order(arms: usize, round: usize) -> Vec<usize> {
    if round.is_multiple_of(2) { (0..arms).collect() } else { (0..arms).rev().collect() }
}

/// Checks what can be checked before anything runs, installs the signal handlers,
/// calibrates the clocks and announces the run.
fn prepare(req: &RunRequest) -> Result<Setup> {
    recover_left_settings();
    check_placement(&req.options.placement)?;
    sys::install_interrupt_flag().context("installing the signal handlers")?;
    sys::release_free_memory();
    let cfg = MeasureConfig {
        perf_software_counters: req.perf_counters,
        ..if req.quick { MeasureConfig::quick() } else { MeasureConfig::standard() }
    };
    // Before calibrating: the preflight watches the CPUs while oscost itself sleeps.
    let traps = preflight(req)?;
    let calib = calibrate(req.quick);
    let mut machine = announce(req, &cfg, &calib);
    machine.preflight = traps;
    if let Some(warning) = crate::worker::fault_warning() {
        crate::report::fit::say(&warning);
    }
    let rounds = rounds_of(req);
    let per_round = cfg.per_round(rounds);
    let max_rounds = req.precision.map_or(rounds, |g| g.max_rounds.max(rounds));
    let started = Instant::now();
    let deadline = req.precision.map(|g| started + g.max_time);
    let noise = precision_noise(req, &machine);
    let arms = prepare_arms(req);
    Ok(Setup {
        trace_spec: trace_spec_for(req),
        cfg,
        per_round,
        calib,
        machine,
        rounds,
        max_rounds,
        started,
        deadline,
        set_up_in: Duration::ZERO,
        noise,
        arms,
    })
}

/// A machine's between-run spreads from `store`: its noise runs of comparability key
/// `key` (a machine's `comparability_key`), oldest first.
pub fn machine_noise(
    store: &Store,
    key: &[(String, String)],
) -> Result<crate::noise::RunNoise, crate::store::StoreError> {
    let listed = store.list_runs(&crate::store::RunFilter::default())?;
    let docs = listed
        .iter()
        .filter(|l| l.kind == crate::model::RunKind::Noise)
        .map(|l| store.load_run(l.id).map(|(d, _)| d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(crate::noise::RunNoise::from_noise(&crate::noise::applicable(docs, key)))
}

/// A `--precision` run's figures judged against `target` (see
/// `precision::judge_run`), with this machine's noise runs in the run's database
/// beside; noise runs that cannot be read leave each figure judged within the run,
/// with a warning.
pub fn judge_precision(outcome: &RunOutcome, doc: &RunDocument, target: f64) -> crate::precision::RunJudgement {
    let noise = machine_noise(&outcome.store, &doc.machine.comparability_key()).unwrap_or_else(|e| {
        eprintln!("warning: this machine's noise runs could not be read ({e}); precision is judged within the run");
        crate::noise::RunNoise::none()
    });
    crate::precision::judge_run(&doc.results, target, &noise, &outcome.round_caps, ADAPTIVE_MAX_ROUNDS)
}

/// Under `--precision`, this machine's between-run spreads from its noise runs in the
/// run's database: what runs add, no round of one run can show, so a target is judged
/// with it. None without `--precision` or noise runs.
fn precision_noise(req: &RunRequest, machine: &machine::Machine) -> crate::noise::RunNoise {
    if req.precision.is_none() {
        return crate::noise::RunNoise::none();
    }
    let read = Store::open_existing(&req.db).and_then(|store| machine_noise(&store, &machine.comparability_key()));
    match read {
        Ok(noise) => {
            if let (false, Some(src)) = (req.quiet, &noise.source) {
                eprintln!(
                    "precision: its spread between runs stands beside its interval (and its blocks of rounds), for the {} figures this machine's {} noise runs measured ({} to {}); a figure whose spread alone is past the target needs runs, not rounds",
                    noise.len(),
                    src.runs,
                    src.first,
                    src.last
                );
            }
            noise
        }
        // A new database holds no noise runs; that is no error.
        Err(_) if !req.db.exists() => crate::noise::RunNoise::none(),
        Err(e) => {
            eprintln!(
                "warning: this machine's noise runs could not be read ({e}); precision is judged within this run"
            );
            crate::noise::RunNoise::none()
        }
    }
}

/// The baseline and each condition, prepared for the run; one that cannot be measured
/// here is said once and skipped, and the baseline still runs.
fn prepare_arms(req: &RunRequest) -> Vec<Arm> {
    let mut arms = vec![Arm::Baseline];
    for c in &req.conditions {
        arms.push(match crate::condition::prepare(c, &req.options) {
            Ok(p) => Arm::Condition(p),
            Err(crate::condition::Unavailable(why)) => {
                eprintln!("note: condition {c} skipped: {why}");
                Arm::Unavailable(c.clone(), why)
            }
        });
    }
    arms
}

/// Puts back what killed runs left changed (a cgroup, a sysfs setting), said once each.
fn recover_left_settings() {
    for line in crate::condition::journal::recover() {
        eprintln!("restored: {line}");
    }
}

/// The preflight's traps, each printed as a warning; with `--strict`, any of them
/// stops the run before anything is measured.
fn preflight(req: &RunRequest) -> Result<Vec<crate::preflight::Trap>> {
    let traps = crate::preflight::check(&crate::preflight::snapshot(crate::preflight::WINDOW));
    if req.strict && !traps.is_empty() {
        return Err(crate::preflight::Refused(traps).into());
    }
    for t in &traps {
        crate::report::fit::say(&format!("preflight: {} ({})", t.reason, t.advice));
    }
    Ok(traps)
}

/// What a run is begun as.
struct Begin<'a> {
    command_line: &'a str,
    save: Option<String>,
    kind: crate::model::RunKind,
}

/// The run begun in the store, owned by this process.
fn begin(what: Begin<'_>, mut store: Store, machine: &machine::Machine, started_at: &str) -> Result<OpenRun> {
    let owner = crate::store::Owner::current();
    let start = crate::store::RunStart {
        started_at: started_at.to_string(),
        command_line: what.command_line.to_string(),
        save_name: what.save,
        uuid: crate::store::new_uuid(),
        kind: what.kind,
    };
    let id = store.begin_run(&start, machine, owner.as_ref())?;
    Ok(OpenRun { store: Some(store), id, db: None })
}

/// A run recorded rather than measured by the benchmarks (`observe`, `trace`, `sim`).
pub struct Recorded {
    pub run_id: i64,
    pub store: Store,
    /// The stop signal that ended the recording early, if one did.
    pub stopped_by: Option<i32>,
}

/// Records a run of `kind` with the lifecycle of a measured one: begun in the store
/// as this process's, filled with the rows `record` gives (and its other output,
/// handed back), finished `complete`, or `interrupted` by a stop signal; marked
/// `failed` on every early return, a failed recording included.
pub fn record<T, E: std::fmt::Display + std::fmt::Debug + Send + Sync + 'static>(
    db: &Path,
    kind: crate::model::RunKind,
    command_line: &str,
    record: impl FnOnce() -> Result<(Vec<ResultRow>, T), E>,
) -> Result<(Recorded, T)> {
    let store = Store::open(db)?;
    sys::install_interrupt_flag().context("installing the signal handlers")?;
    let machine = machine::fingerprint(command_line, None);
    let mut run = begin(Begin { command_line, save: None, kind }, store, &machine, &report::now_rfc3339())?;
    let (rows, other) = record().map_err(anyhow::Error::msg)?;
    let run_id = run.id;
    run.store().add_benchmark(run_id, &rows, &[])?;
    let stopped_by = sys::stop_signal();
    let store = run.finish(if stopped_by.is_some() { RunStatus::Interrupted } else { RunStatus::Complete })?;
    Ok((Recorded { run_id, store, stopped_by }, other))
}

/// The run's bookkeeping while it measures.
struct Tally {
    /// One per benchmark and arm: benchmark i's arm a at `i * arms + a`.
    progress: Vec<Progress>,
    failures: Vec<Skipped>,
    unstored: Vec<Unstored>,
    bar: Option<indicatif::ProgressBar>,
    /// Arms whose evidence was said (once per arm).
    evidence_said: Vec<bool>,
}

impl Tally {
    fn new(req: &RunRequest, setup: &Setup) -> Self {
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
    fn say(&self, msg: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{msg}")),
            None => eprintln!("{msg}"),
        }
    }
}

/// Every round of every selected benchmark, interleaved (round 1 of each, then round
/// 2 of each…), until all are done, a stop signal, or the store fails.
fn measure_rounds(req: &RunRequest, setup: &Setup, run: &mut OpenRun, tally: &mut Tally) {
    for round in 0..setup.max_rounds {
        if tally.progress.iter().all(|p| p.finished) {
            return;
        }
        for (i, (def, scope)) in req.selected.iter().enumerate() {
            for arm in arm_order(setup.arms.len(), round) {
                let at = Slot { round, bench: i, arm };
                if sys::interrupted() || measure_round(req, setup, at, (def, *scope), run, tally).is_break() {
                    return;
                }
            }
            if let Err(e) = store_when_done(run, setup, tally, i, &def.id) {
                // Nothing new is measured once the store fails; what finished is kept.
                tally.unstored.push(e);
                return;
            }
        }
    }
}

/// Where a round stands: its number, the benchmark's index and the arm's.
#[derive(Debug, Clone, Copy)]
struct Slot {
    round: usize,
    bench: usize,
    arm: usize,
}

/// A skip's parameters under a condition.
fn condition_params(condition: &str) -> String {
    format!("{}={condition}", crate::condition::PARAM.name())
}

/// Stores benchmark `i` once every arm of it has finished: the arms in order, so the
/// baseline's rows come first whatever order the last round ran them in.
fn store_when_done(
    run: &mut OpenRun,
    setup: &Setup,
    tally: &mut Tally,
    i: usize,
    id: &crate::key::BenchId,
) -> Result<(), Unstored> {
    let arms = setup.arms.len();
    let slots = &mut tally.progress[i * arms..(i + 1) * arms];
    if slots.iter().any(|p| !p.finished) || slots.iter().all(|p| p.stored) {
        return Ok(());
    }
    for p in slots.iter_mut().filter(|p| !p.stored) {
        store_benchmark(run, p, id)?;
    }
    Ok(())
}

/// One round of one benchmark's arm in a fresh worker, its rows kept (labelled with
/// the arm's condition), and the benchmark stored once it has finished. Breaks when
/// the run must stop.
fn measure_round(
    req: &RunRequest,
    setup: &Setup,
    at: Slot,
    (def, scope): (&BenchDef, Scope),
    run: &mut OpenRun,
    tally: &mut Tally,
) -> std::ops::ControlFlow<()> {
    use std::ops::ControlFlow::{Break, Continue};
    let slot = at.bench * setup.arms.len() + at.arm;
    if tally.progress[slot].finished {
        return Continue(());
    }
    if let Some(b) = &tally.bar {
        b.set_message(format!("{} (round {}/{})", def.id, at.round + 1, setup.rounds));
    }
    let reply = run_arm(req, setup, at, (def, scope), tally);
    if keep_reply(tally, slot, def, &setup.arms[at.arm], reply).is_break() {
        return Break(());
    }
    end_round(req, setup, at, (def, slot), run, tally)
}

/// Runs the round of one arm: its settings, what its condition holds around the
/// worker, the worker, and what shows the condition was in effect and acted.
fn run_arm(
    req: &RunRequest,
    setup: &Setup,
    at: Slot,
    (def, scope): (&BenchDef, Scope),
    tally: &mut Tally,
) -> crate::worker::RoundReply {
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
            let mut reply = run_round(&job, req.executor);
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
            say_evidence(tally, at.arm, &p.condition.to_string(), &reply.evidence);
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
fn stamp_times(rows: &mut [ResultRow], round: Duration, set_up: Duration) {
    use crate::model::Count;
    for row in rows {
        row.counts.insert(Count::RoundSeconds, round.as_secs_f64());
        row.counts.insert(Count::RunSetupSeconds, set_up.as_secs_f64());
    }
}

/// Keeps a round's rows and skips in its slot and records how it ended; breaks on a
/// stop signal.
fn keep_reply(
    tally: &mut Tally,
    slot: usize,
    def: &BenchDef,
    arm: &Arm,
    reply: crate::worker::RoundReply,
) -> std::ops::ControlFlow<()> {
    let ended = classify(def, reply.outcome, &reply.rows, &reply.skipped);
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
fn end_round(
    req: &RunRequest,
    setup: &Setup,
    at: Slot,
    (def, slot): (&BenchDef, usize),
    run: &mut OpenRun,
    tally: &mut Tally,
) -> std::ops::ControlFlow<()> {
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
        && let Err(e) = store_benchmark(run, p, &def.id)
    {
        // Nothing new is measured once the store fails; what finished is kept.
        tally.unstored.push(e);
        return std::ops::ControlFlow::Break(());
    }
    std::ops::ControlFlow::Continue(())
}

/// The budgets and options an arm's round runs with: the run's, with the trace pass in
/// the baseline's first round of a traced benchmark, and as the condition adjusts them.
fn arm_settings(req: &RunRequest, setup: &Setup, at: Slot, def: &BenchDef, arm: &Arm) -> (MeasureConfig, BenchOptions) {
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
fn label_arm(reply: &mut crate::worker::RoundReply, arm: &Arm) {
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
fn say_evidence(tally: &mut Tally, arm: usize, condition: &str, evidence: &[String]) {
    if tally.evidence_said[arm] || evidence.is_empty() {
        return;
    }
    tally.evidence_said[arm] = true;
    tally.say(&format!("condition {condition} in effect: {}", evidence.join("; ")));
}

/// Under `--precision`, the most rounds a benchmark whose round `round` just ran may
/// run: its pace so far carried to the deadline, within the ceiling
/// (`precision::rounds_in_time`).
fn round_cap(setup: &Setup, round: usize) -> Option<usize> {
    // A deadline exactly under --precision.
    let deadline = setup.deadline?;
    let now = Instant::now();
    let left = deadline.saturating_duration_since(now);
    Some(crate::precision::rounds_in_time(round + 1, now - setup.started, left, setup.max_rounds))
}

/// Each benchmark's last cap on rounds, by its name (the largest over its `arms`).
fn round_caps(req: &RunRequest, arms: usize, progress: &[Progress]) -> BTreeMap<String, usize> {
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
fn last_round(req: &RunRequest, setup: &Setup, round: usize, p: &Progress) -> bool {
    let Some(goal) = &req.precision else { return round + 1 == setup.rounds };
    let cap = p.cap.unwrap_or(setup.max_rounds);
    round + 1 >= setup.max_rounds
        || setup.deadline.is_some_and(|d| std::time::Instant::now() >= d)
        || (round + 1 >= ADAPTIVE_MIN_ROUNDS && {
            let judge = crate::precision::Judge { target: goal.target, max_rounds: cap, noise: &setup.noise };
            // A figure short whatever its interval needs no merge: that check first, and
            // the merged rows (whose bootstrap grows with every round) only when it
            // cannot decide. Both say the same (`precision::Judge::short_regardless`).
            !rounds::log_medians_by_figure(&p.rounds).iter().any(|(r, logs)| judge.short_regardless(r, logs))
                && rounds::merge(&p.rounds).iter().all(|r| judge.standing(r) != crate::precision::Standing::Short)
        })
}

/// How the run ended: a store that failed or a failed benchmark fails it; a stop
/// signal interrupts it.
fn final_status(storage_failed: bool, stopped: bool, benchmark_failed: bool) -> RunStatus {
    match (storage_failed, stopped) {
        (true, _) => RunStatus::Failed,
        (false, true) => RunStatus::Interrupted,
        // A benchmark that failed (not skipped) means the run did not do its job.
        (false, false) if benchmark_failed => RunStatus::Failed,
        (false, false) => RunStatus::Complete,
    }
}

/// The run marked finished with `status`; when the store fails again, whatever was
/// rescued is still said.
fn finish(run: OpenRun, status: RunStatus, storage_error: Option<&str>) -> Result<Store> {
    run.finish(status).inspect_err(|_| {
        if let Some(m) = storage_error {
            eprintln!("error: {m}");
        }
    })
}

/// A benchmark's merged rows that were not stored, and why (the store's error, or
/// None: the store had already failed for another benchmark).
struct Unstored {
    benchmark: crate::key::BenchId,
    rows: Vec<ResultRow>,
    skipped: Vec<Skipped>,
    error: Option<String>,
}

/// Merges a benchmark's rounds and stores the rows with its skips.
fn store_benchmark(run: &mut OpenRun, p: &mut Progress, benchmark: &crate::key::BenchId) -> Result<(), Unstored> {
    p.stored = true;
    let rows = rounds::merge(&p.rounds);
    let id = run.id;
    run.store().add_benchmark(id, &rows, &p.skipped).map_err(|e| Unstored {
        benchmark: benchmark.clone(),
        rows,
        skipped: p.skipped.clone(),
        error: Some(e.to_string()),
    })
}

/// A stop or a store failure leaves benchmarks with some of their rounds: each is
/// merged and stored, or, once the store has failed, set aside for the rescue file.
fn keep_unfinished(run: &mut OpenRun, req: &RunRequest, progress: &mut [Progress], unstored: &mut Vec<Unstored>) {
    let arms = progress.len() / req.selected.len().max(1);
    for (slot, p) in progress.iter_mut().enumerate() {
        if p.stored || (p.rounds.is_empty() && p.skipped.is_empty()) {
            continue;
        }
        let benchmark = &req.selected[slot / arms.max(1)].0.id;
        if unstored.is_empty() {
            if let Err(e) = store_benchmark(run, p, benchmark) {
                unstored.push(e);
            }
        } else {
            p.stored = true;
            unstored.push(Unstored {
                benchmark: benchmark.clone(),
                rows: rounds::merge(&p.rounds),
                skipped: p.skipped.clone(),
                error: None,
            });
        }
    }
}

/// Every benchmark the store refused, printed and rescued in one importable file, or,
/// when that file cannot be written (a file-size limit, a nearly full disk), in one
/// file a benchmark, so that whatever fits is saved. Each file is a run of its own (a
/// new UUID): the stored part of the run already holds the run's, and an import would
/// take the file for it and add nothing.
fn rescue_all(
    req: &RunRequest,
    machine: &machine::Machine,
    id: i64,
    started_at: &str,
    unstored: &[Unstored],
) -> String {
    let rows: Vec<ResultRow> = unstored.iter().flat_map(|u| u.rows.iter().cloned()).collect();
    let skipped: Vec<Skipped> = unstored.iter().flat_map(|u| u.skipped.iter().cloned()).collect();
    print!("{}", report::table::render_results(&rows, &skipped, report::table::Width::Wide));
    let names = unstored.iter().map(|u| u.benchmark.as_str()).collect::<Vec<_>>().join(", ");
    let error = unstored.iter().find_map(|u| u.error.clone()).unwrap_or_default();
    let doc = |rows: &[ResultRow]| unsaved_document(req, machine, (id, &crate::store::new_uuid()), started_at, rows);
    let saved = match write_rescue(&req.db, &doc(&rows), &skipped, "") {
        Some(p) => format!("printed above and saved to {} (oscost import reads it)", p.display()),
        None => {
            let (mut files, mut lost) = (Vec::new(), Vec::new());
            for u in unstored {
                match write_rescue(&req.db, &doc(&u.rows), &u.skipped, &format!("-{}", u.benchmark)) {
                    Some(p) => files.push(p.display().to_string()),
                    None => lost.push(u.benchmark.as_str()),
                }
            }
            let mut said = format!(
                "printed above and, as one file could not be written, saved one benchmark a file: {} (oscost import reads each)",
                if files.is_empty() { "none".to_string() } else { files.join(", ") }
            );
            if !lost.is_empty() {
                said.push_str(&format!("; no file could be written for {}", lost.join(", ")));
            }
            said
        }
    };
    format!("storing {names} failed ({error}); their figures are {saved}; the run stopped there")
}

/// The figures a benchmark measured but could not store, as a run document.
fn unsaved_document(
    req: &RunRequest,
    machine: &machine::Machine,
    (id, uuid): (i64, &str),
    started_at: &str,
    rows: &[ResultRow],
) -> RunDocument {
    RunDocument {
        schema_version: crate::model::SCHEMA_VERSION,
        run: RunInfo {
            id,
            started_at: started_at.to_string(),
            command_line: req.command_line.clone(),
            save_name: None,
            status: RunStatus::Failed,
            uuid: Some(uuid.to_string()),
            kind: req.kind,
        },
        machine: machine.clone(),
        results: rows.to_vec(),
    }
}

/// Writes a rescue document as an importable export: a new file (never through a link,
/// never over another file) beside the database, else in a private folder of the temp
/// folder that is kept for the user. `suffix` tells apart one benchmark's file.
fn write_rescue(db: &Path, doc: &RunDocument, skipped: &[Skipped], suffix: &str) -> Option<std::path::PathBuf> {
    let json = report::export::json::to_json(&[(doc.clone(), skipped.to_vec())]);
    let name = format!(
        "{}.unsaved-run{}-{}{suffix}.json",
        db.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "oscost".into()),
        doc.run.id,
        std::process::id()
    );
    let beside = db.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).join(&name);
    crate::files::write_new(&beside, json.as_bytes(), 0o600).map(|()| beside).ok().or_else(|| {
        // The folder is kept only when the file could be written in it.
        let dir = crate::files::private_dir("oscost-rescue-").ok()?;
        let p = dir.path().join(&name);
        crate::files::write_new(&p, json.as_bytes(), 0o600).ok()?;
        let _ = dir.keep();
        Some(p)
    })
}

/// Fingerprints the machine and says, before anything is measured, what the run
/// cannot report and how long it will take.
fn announce(req: &RunRequest, cfg: &MeasureConfig, calib: &Calibration) -> machine::Machine {
    for w in &calib.warnings {
        crate::report::fit::say(&format!("warning: {w}"));
    }
    // Whether hardware counters work is part of the fingerprint (`oscost info`, the
    // stored machine); it is not repeated on every run.
    let machine = machine::fingerprint(&req.command_line, Some(calib.clone()));
    let n = req.selected.len();
    let r = rounds_of(req);
    if let (false, Some(g)) = (req.quiet, &req.precision) {
        eprintln!(
            "running {n} benchmark{} until each figure is within ±{:.1}% ({ADAPTIVE_MIN_ROUNDS} rounds or more, as many as fit in {} and at most {})",
            if n == 1 { "" } else { "s" },
            g.target * 100.0,
            seconds(g.max_time),
            g.max_rounds
        );
    } else if !req.quiet {
        let arms = match req.conditions.len() {
            0 => String::new(),
            k => format!(", each beside {k} condition{} in alternating order", if k == 1 { "" } else { "s" }),
        };
        eprintln!(
            "running {n} benchmark{} in {r} round{}{arms}, about {}",
            if n == 1 { "" } else { "s" },
            if r == 1 { "" } else { "s" },
            seconds(estimate_of(req, cfg))
        );
    }
    machine
}

/// How one benchmark ended, for the run's bookkeeping.
enum Ended {
    Done,
    Interrupted,
    Skipped(String),
    Failed(Skipped),
}

fn classify(def: &BenchDef, result: Result<(), BenchError>, rows: &[ResultRow], skipped: &[Skipped]) -> Ended {
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
        Err(_) if interrupt_arriving() => Ended::Interrupted,
        Err(BenchError::Skipped(why)) => Ended::Skipped(why),
        Err(other) => failed(format!("failed: {other}")),
    }
}

/// Whether a Ctrl-C is being delivered: the group's signal may reach the children (and
/// fail the benchmark) a moment before it reaches us.
fn interrupt_arriving() -> bool {
    for _ in 0..10 {
        if sys::interrupted() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// The bar shows time spent against the announced estimate: the benchmarks differ
/// too much in length for a rate-based time left to mean anything.
fn progress_bar(len: u64, estimate: Duration) -> indicatif::ProgressBar {
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
