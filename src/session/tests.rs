//! The run's coordination driven through a mock executor that measures nothing: each
//! round's reply is canned (rows, an error, or a stop signal arriving mid-round), so
//! what the session does with replies (their order, what is stored, how the run ends,
//! what is rescued when the store fails) is checked exactly, on any machine, as root or
//! not, and in no time. The setup is settled as `prepare` settles it, with a made-up
//! calibration and fingerprint instead of the machine's.

use std::path::Path;

use super::executor::RoundExecutor;
use super::prepare::settle;
use super::{PrecisionGoal, RunOutcome, RunRequest, conduct};
use crate::bench::{BenchDef, BenchOptions, Cost, Ctx, Family, Output, RoundPlan, Scope, no_check};
use crate::clock::{Calibration, PerCallSource};
use crate::key::BenchId;
use crate::model::{Method, ResultRow, RunDocument, RunKind, RunStatus, Skipped};
use crate::runner::{BenchError, MeasureConfig};
use crate::store::Store;
use crate::worker::{Executor, RoundJob, RoundReply};

/// What the mock answers to one round.
enum Canned {
    /// The round measured these rows and ended well.
    Rows(Vec<ResultRow>),
    /// The round ended with this error, having measured nothing.
    Error(BenchError),
    /// A stop signal arrived during the round, which reports what it measured before
    /// it stopped.
    Stop(Vec<ResultRow>),
}

/// One round as the mock was asked for it: the benchmark, and whether its arm is a
/// condition's (the baseline's is not).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Asked {
    bench: BenchId,
    condition: bool,
}

/// An executor that measures nothing: `answer` gives each round's reply from the
/// benchmark's id and how many rounds of that benchmark's arm it was asked for before.
struct Mock<F> {
    answer: F,
    asked: Vec<Asked>,
    stopped: Option<i32>,
}

impl<F: FnMut(&str, usize) -> Canned> Mock<F> {
    fn new(answer: F) -> Self {
        Mock { answer, asked: Vec::new(), stopped: None }
    }

    /// How many rounds of benchmark `id` (any arm) the mock was asked for.
    fn rounds_of(&self, id: &str) -> usize {
        self.asked.iter().filter(|a| a.bench.as_str() == id).count()
    }
}

impl<F: FnMut(&str, usize) -> Canned> RoundExecutor for Mock<F> {
    fn run_round(&mut self, job: &RoundJob) -> RoundReply {
        let asked = Asked { bench: job.def.id.clone(), condition: job.condition.is_some() };
        let before = self.asked.iter().filter(|a| **a == asked).count();
        self.asked.push(asked);
        match (self.answer)(job.def.id.as_str(), before) {
            Canned::Rows(rows) => RoundReply { rows, ..RoundReply::empty(Ok(())) },
            Canned::Error(e) => RoundReply::empty(Err(e)),
            Canned::Stop(rows) => {
                self.stopped = Some(libc::SIGINT);
                RoundReply { rows, ..RoundReply::empty(Err(BenchError::Interrupted)) }
            }
        }
    }

    fn stop_signal(&self) -> Option<i32> {
        self.stopped
    }
}

fn one_probe(_: Scope, _: &BenchOptions, _: &MeasureConfig) -> Cost {
    Cost::probes(1)
}

/// What a benchmark would measure; the mock never asks for it.
fn not_run(_: &Ctx, _: &mut Output) -> Result<(), BenchError> {
    Err(BenchError::Setup("the mock executor measures nothing".into()))
}

const fn bench(id: &'static str, rounds: RoundPlan) -> BenchDef {
    BenchDef {
        id: crate::key::BenchId::new(id),
        family: Family::Syscall,
        summary: "a benchmark the mock executor answers for (test only)",
        timing_model: "none: the rows are canned",
        warmup: crate::bench::Warmup::None("a mock measures nothing"),
        in_default_suite: false,
        rounds,
        cost: one_probe,
        check: no_check,
        run: not_run,
    }
}

static A: BenchDef = bench("test.a", RoundPlan::Spread);
static B: BenchDef = bench("test.b", RoundPlan::Spread);
static C: BenchDef = bench("test.c", RoundPlan::Spread);
static ONCE: BenchDef = bench("test.once", RoundPlan::Once);

/// One round's row of benchmark `id`: 20 samples around `level`, spread by 0.4%.
fn rows(id: &str, level: f64) -> Vec<ResultRow> {
    let samples: Vec<f64> = (0..20).map(|i| level * (1.0 + 0.001 * f64::from(i % 5))).collect();
    vec![ResultRow::from_samples(id, Method::Batch, "ns/call", samples, 20).expect("samples make a row")]
}

/// Every round of every benchmark at 100.
fn steady(id: &str, _: usize) -> Canned {
    Canned::Rows(rows(id, 100.0))
}

/// A calibration as a machine with no cycle counter would give, made up.
fn calibration() -> Calibration {
    Calibration {
        per_call_source: PerCallSource::Monotonic,
        counter: "none (test)".into(),
        ticks_per_ns: 1.0,
        rate_spread: 0.0,
        bracket_ticks: 20.0,
        bracket_ns: 20.0,
        clock_read_ns: 20.0,
        clock_resolution_ns: 1.0,
        min_batch_ns: 20_000.0,
        warnings: Vec::new(),
        quantum_ns: Some(1.0),
    }
}

fn request(db: &Path, selected: &[&'static BenchDef], rounds: usize) -> RunRequest {
    RunRequest {
        selected: selected.iter().map(|d| (*d, Scope::Full)).collect(),
        quick: true,
        rounds: Some(rounds),
        // Not used: the tests hand the run their mock.
        executor: Executor::InProcess,
        perf_counters: false,
        trace: false,
        options: BenchOptions::smallest(Err("not used".into()), 1),
        db: db.to_path_buf(),
        save: None,
        command_line: "oscost run (session test)".into(),
        progress: false,
        quiet: true,
        strict: false,
        precision: None,
        conditions: Vec::new(),
        timeout: None,
        kind: RunKind::Measure,
    }
}

/// Conducts the run `req` asks for with `mock` running its rounds.
fn conduct_with(req: &RunRequest, mock: &mut dyn RoundExecutor) -> RunOutcome {
    let store = Store::open(&req.db).expect("the test database opens");
    let setup = settle(req, &store, MeasureConfig::quick(), calibration(), crate::machine::Machine::example());
    conduct(req, setup, store, mock, None).expect("the run is conducted")
}

/// The run as stored, read back through a connection of its own.
fn stored(db: &Path, id: i64) -> (RunDocument, Vec<Skipped>) {
    Store::open_existing(db).expect("the database is there").load_run(id).expect("the run is stored")
}

/// The stored rows of benchmark `id`.
fn rows_of<'a>(doc: &'a RunDocument, id: &str) -> Vec<&'a ResultRow> {
    doc.results.iter().filter(|r| r.benchmark.as_str() == id).collect()
}

/// A condition that needs nothing and changes nothing; the part its worker would enter
/// is what tells its rounds from the baseline's.
struct Marked;

impl std::fmt::Display for Marked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("test:marked")
    }
}

impl crate::condition::Act for Marked {
    fn prepare(&self, _: &BenchOptions) -> Result<crate::condition::Setup, crate::condition::Unavailable> {
        crate::condition::Setup::in_worker(&"marked")
    }
}

#[test]
fn rounds_interleave_benchmarks_and_alternate_arms_and_every_row_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("interleaved.db");
    let mut req = request(&db, &[&A, &B], 3);
    req.conditions = vec![crate::condition::Condition::new(Marked)];
    let mut mock = Mock::new(steady);
    let outcome = conduct_with(&req, &mut mock);

    // Round r of A's arms, then round r of B's, for every round; the arms forward
    // (baseline, condition) in even rounds and backward in odd ones.
    let (forward, backward) = ([false, true], [true, false]);
    let mut expected = Vec::new();
    for arms in [forward, backward, forward] {
        for id in ["test.a", "test.b"] {
            expected.extend(arms.map(|condition| Asked { bench: id.into(), condition }));
        }
    }
    assert_eq!(mock.asked, expected);
    assert!(outcome.stopped_by.is_none() && outcome.failures.is_empty() && outcome.storage_error.is_none());
    let (doc, skipped) = stored(&db, outcome.run_id);
    assert_eq!(doc.run.status, RunStatus::Complete);
    assert!(skipped.is_empty(), "{skipped:?}");
    for id in ["test.a", "test.b"] {
        let rows = rows_of(&doc, id);
        assert_eq!(rows.len(), 2, "{id}: the baseline's row and the condition's");
        assert_eq!(rows[0].params.raw(crate::condition::PARAM.name()), None, "{id}: the baseline's row comes first");
        let labelled = rows[1].params.raw(crate::condition::PARAM.name()).and_then(|v| v.as_str());
        assert_eq!(labelled, Some("test:marked"), "{id}: the condition's row is labelled");
        assert!(rows.iter().all(|r| r.round_count() == 3), "{id}: every round is merged");
    }
}

#[test]
fn rounds_stop_at_the_rounds_asked_for_and_a_once_only_benchmark_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rounds.db");
    let req = request(&db, &[&A, &ONCE], 4);
    let mut mock = Mock::new(steady);
    let outcome = conduct_with(&req, &mut mock);

    assert_eq!(mock.rounds_of("test.a"), 4);
    assert_eq!(mock.rounds_of("test.once"), 1);
    let (doc, _) = stored(&db, outcome.run_id);
    assert_eq!(doc.run.status, RunStatus::Complete);
    assert_eq!(rows_of(&doc, "test.a")[0].round_count(), 4);
    assert_eq!(rows_of(&doc, "test.once")[0].round_count(), 1);
    assert!(outcome.round_caps.is_empty(), "caps are judged under --precision only");
}

#[test]
fn a_failing_benchmark_fails_the_run_and_the_others_rows_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("failing.db");
    let req = request(&db, &[&A, &B, &C], 3);
    let mut mock = Mock::new(|id: &str, round| match (id, round) {
        ("test.b", 1) => Canned::Error(BenchError::Failed("the mock's canned failure".into())),
        _ => Canned::Rows(rows(id, 100.0)),
    });
    let outcome = conduct_with(&req, &mut mock);

    assert_eq!(mock.rounds_of("test.b"), 2, "a failed benchmark is asked for no more rounds");
    assert_eq!((mock.rounds_of("test.a"), mock.rounds_of("test.c")), (3, 3), "the others run on");
    assert_eq!(outcome.failures.len(), 1, "{:?}", outcome.failures);
    assert_eq!(outcome.failures[0].benchmark.as_str(), "test.b");
    assert!(outcome.failures[0].reason.contains("the mock's canned failure"), "{}", outcome.failures[0].reason);
    let (doc, skipped) = stored(&db, outcome.run_id);
    assert_eq!(doc.run.status, RunStatus::Failed);
    for id in ["test.a", "test.c"] {
        assert_eq!(rows_of(&doc, id).len(), 1, "{id}");
        assert_eq!(rows_of(&doc, id)[0].round_count(), 3, "{id}");
    }
    assert_eq!(rows_of(&doc, "test.b").len(), 1, "the round it measured before it failed is kept");
    assert!(skipped.iter().any(|s| s.benchmark.as_str() == "test.b" && s.reason.starts_with("failed:")), "{skipped:?}");
}

#[test]
fn a_stop_mid_run_keeps_what_was_measured_and_marks_the_run_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("stopped.db");
    let req = request(&db, &[&A, &B], 4);
    // The stop arrives during B's third round, which reports a row at 200 first.
    let mut mock = Mock::new(|id: &str, round| match (id, round) {
        ("test.b", 2) => Canned::Stop(rows(id, 200.0)),
        _ => Canned::Rows(rows(id, 100.0)),
    });
    let outcome = conduct_with(&req, &mut mock);

    assert_eq!(mock.asked.len(), 6, "nothing is asked for after the stop: {:?}", mock.asked);
    assert_eq!(outcome.stopped_by, Some(libc::SIGINT));
    assert!(outcome.interrupted() && outcome.failures.is_empty() && outcome.storage_error.is_none());
    let (doc, _) = stored(&db, outcome.run_id);
    assert_eq!(doc.run.status, RunStatus::Interrupted);
    assert_eq!(rows_of(&doc, "test.a")[0].round_count(), 3, "A's three finished rounds are kept");
    let b = rows_of(&doc, "test.b")[0];
    assert_eq!(b.round_count(), 3, "B's two rounds and the stopped one's row are kept");
    assert!(b.samples.iter().any(|&s| s >= 200.0), "the stopped round's samples are B's");
}

#[test]
fn a_store_that_fails_rescues_the_figures_in_a_file_and_keeps_what_was_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("refusing.db");
    let req = request(&db, &[&A, &B], 1);
    // From B's round on, the database refuses every row, as a full disk would.
    let refuse_rows = |db: &Path| {
        let conn = rusqlite::Connection::open(db).expect("a second connection opens");
        conn.execute_batch(
            "CREATE TRIGGER refuse_rows BEFORE INSERT ON results
             BEGIN SELECT RAISE(ABORT, 'database or disk is full (test)'); END;",
        )
        .expect("the trigger is created");
    };
    let mut mock = Mock::new(|id: &str, _| {
        if id == "test.b" {
            refuse_rows(&db);
        }
        Canned::Rows(rows(id, 100.0))
    });
    let outcome = conduct_with(&req, &mut mock);

    let error = outcome.storage_error.as_deref().expect("the storage failure is reported");
    assert!(error.contains("storing test.b failed") && error.contains("disk is full (test)"), "{error}");
    let (doc, _) = stored(&db, outcome.run_id);
    assert_eq!(doc.run.status, RunStatus::Failed);
    assert_eq!(rows_of(&doc, "test.a").len(), 1, "what was stored before stays");
    assert!(rows_of(&doc, "test.b").is_empty());
    let rescue = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".unsaved-run"))
        .expect("a rescue file beside the database");
    assert!(error.contains(&rescue.display().to_string()), "the message names the file: {error}");
    let mut rescued = Vec::new();
    crate::report::import::read_runs(std::fs::File::open(&rescue).unwrap(), &|_| true, &mut |d, _| {
        rescued.push(d);
        Ok(())
    })
    .expect("the rescue file is an importable export");
    assert_eq!(rescued.len(), 1);
    assert_eq!(rescued[0].run.status, RunStatus::Failed);
    assert_eq!(rows_of(&rescued[0], "test.b").len(), 1, "B's figures are in the file");
}

/// A `--precision` run of `def` answered by `answer`, with an hour to spend and at
/// most `max_rounds` rounds.
fn adaptive(
    db: &Path,
    def: &'static BenchDef,
    target: f64,
    max_rounds: usize,
    answer: fn(&str, usize) -> Canned,
) -> (RunOutcome, usize) {
    let mut req = request(db, &[def], 1);
    req.rounds = None;
    let max_time = std::time::Duration::from_secs(3600);
    req.precision = Some(PrecisionGoal { target, detect: None, max_time, max_rounds });
    let mut mock = Mock::new(answer);
    let outcome = conduct_with(&req, &mut mock);
    let asked = mock.rounds_of(&def.id);
    (outcome, asked)
}

#[test]
fn a_precision_target_reached_stops_adding_rounds_at_the_fewest_to_judge() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("reached.db");
    let (outcome, asked) = adaptive(&db, &A, 0.05, 100, steady);

    assert_eq!(asked, super::ADAPTIVE_MIN_ROUNDS, "identical rounds are within 5% as soon as they can be judged");
    let (doc, _) = stored(&db, outcome.run_id);
    assert_eq!(doc.run.status, RunStatus::Complete);
    assert_eq!(rows_of(&doc, "test.a")[0].round_count(), asked);
    assert!(outcome.round_caps.contains_key("test.a"), "{:?}", outcome.round_caps);
}

#[test]
fn a_precision_target_out_of_reach_never_goes_past_the_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ceiling.db");
    // Rounds at 100 and 300 in turn: a spread no handful of rounds brings within 0.1%.
    let (outcome, asked) = adaptive(&db, &A, 0.001, 8, |id, round| {
        Canned::Rows(rows(id, if round.is_multiple_of(2) { 100.0 } else { 300.0 }))
    });

    assert!((super::ADAPTIVE_MIN_ROUNDS..=8).contains(&asked), "{asked} rounds");
    let (doc, _) = stored(&db, outcome.run_id);
    assert_eq!(rows_of(&doc, "test.a")[0].round_count(), asked);
    let cap = outcome.round_caps["test.a"];
    assert!((asked..=8).contains(&cap), "cap {cap} after {asked} rounds");
}
