//! The reporting side end to end with nothing timed: a test-only family of benchmarks
//! that emit known rows goes through `session` → store → show (table, CSV, Markdown,
//! JSON) → compare → export → import → HTML report, and the outputs are checked against
//! snapshots in `tests/snapshots/` (`UPDATE_SNAPSHOTS=1 cargo test --test pipeline`
//! rewrites them). A second test-only benchmark runs a counting probe through the real
//! runner and checks what the row says against the calls the probe saw.
//!
//! The values that belong to the moment and machine of the run (its start time, host,
//! kernel, CPU, calibration) are replaced by placeholders before comparing.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use oscost::bench::{BenchDef, BenchOptions, Cost, Ctx, Family, Output, RoundPlan, Scope, Warmup, no_check, rows_from};
use oscost::model::{Count, Flag, FlagCode, Method, ResultRow, RunDocument, Skipped};
use oscost::report;
use oscost::runner::{BenchError, MeasureConfig, Probe, Watch};
use oscost::session::{self, RunRequest};
use oscost::store::Store;
use oscost::tracepass::measure;
use oscost::worker::Executor;

/// The fixed family's figures are scaled by this (per mille) in the next run.
static SCALE_PERMILLE: AtomicU64 = AtomicU64::new(1000);
/// Calls the counting probe saw in its last run.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Known rows: a batch row with its counts, a per-call row with percentiles and a
/// flag, a workload rate, and one skipped variant.
fn fixed_rows(_: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let k = SCALE_PERMILLE.load(Ordering::SeqCst) as f64 / 1000.0;
    let batch: Vec<f64> = (0..40).map(|i| k * (100.0 + f64::from(i % 7))).collect();
    let mut b = ResultRow::from_samples("test.fixed", Method::Batch, "ns/call", batch, 40 * 1024).unwrap();
    b = b.with_param("variant", "a").with_param("batch_size", 1024u64);
    b.counts.insert(Count::Switches, 40.0);
    b.counts.insert(Count::CountedOps, 40.0 * 1024.0);
    b.counts.insert(Count::SwitchesPerOp, 40.0 / (40.0 * 1024.0));
    let per_call: Vec<f64> = (0..1000).map(|i| k * (90.0 + f64::from(i % 50))).collect();
    let mut p = ResultRow::from_samples("test.fixed", Method::PerCall, "ns/call", per_call, 1000).unwrap();
    p = p.with_param("variant", "a");
    p.flag(Flag::new(FlagCode::MethodsDisagree, "synthetic: the two methods differ | on purpose"));
    let rate: Vec<f64> = (0..10).map(|i| (50_000.0 + f64::from(i) * 10.0) / k).collect();
    let w =
        ResultRow::from_samples("test.fixed", Method::Workload, "msg/s", rate, 10).unwrap().with_param("variant", "b");
    out.extend([b, p, w]);
    out.skip("test.fixed", "variant=c", "not available on this machine (synthetic)");
    Ok(())
}

/// Counts its calls; the row must say no more iterations than there were calls.
struct Counting;
impl Probe for Counting {
    fn once(&mut self) -> i64 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        0
    }
}

fn counting(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let m = measure(&mut Counting, ctx.cfg, ctx.calib, &Watch::default())?;
    out.extend(rows_from("test.counting", &m, oscost::unit::Unit::NsPerCall, 1.0, ctx.calib));
    Ok(())
}

fn one(_: Scope, _: &BenchOptions, _: &MeasureConfig) -> Cost {
    Cost::probes(1)
}

/// A test benchmark whose rows are given by `run`, measured in every round.
const fn given(
    id: &'static str,
    summary: &'static str,
    run: fn(&Ctx, &mut Output) -> Result<(), BenchError>,
) -> BenchDef {
    timed(id, summary, "none: the rows are given", run)
}

const fn timed(
    id: &'static str,
    summary: &'static str,
    timing_model: &'static str,
    run: fn(&Ctx, &mut Output) -> Result<(), BenchError>,
) -> BenchDef {
    BenchDef {
        id: oscost::key::BenchId::new(id),
        family: Family::Syscall,
        summary,
        timing_model,
        warmup: Warmup::None("a test benchmark's rows are given"),
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run,
    }
}

static FIXED: BenchDef = given("test.fixed", "known rows (test only)", fixed_rows);

static COUNTING: BenchDef =
    timed("test.counting", "a probe that counts its calls (test only)", "one call of a counter", counting);

fn options() -> BenchOptions {
    BenchOptions::smallest(Err("not used".into()), 1)
}

fn run(db: &Path, def: &'static BenchDef, save: Option<&str>) -> i64 {
    let req = RunRequest {
        selected: vec![(def, Scope::Full)],
        quick: true,
        rounds: Some(3),
        executor: Executor::InProcess,
        perf_counters: false,
        trace: false,
        options: options(),
        db: db.to_path_buf(),
        save: save.map(str::to_string),
        command_line: "oscost run (pipeline test)".into(),
        progress: false,
        strict: false,
        precision: None,
        quiet: true,
        conditions: Vec::new(),
        timeout: None,
        kind: oscost::model::RunKind::Measure,
    };
    let outcome = session::execute(req).expect("the session runs");
    assert!(!outcome.interrupted() && outcome.failures.is_empty() && outcome.storage_error.is_none());
    outcome.run_id
}

/// Replaces what belongs to the moment and machine of a run with placeholders.
fn normalise(text: &str, docs: &[&RunDocument]) -> String {
    let mut t = text.to_string();
    for d in docs {
        let m = &d.machine;
        for (value, token) in [
            (d.run.started_at.as_str(), "<started>"),
            (m.hostname.as_str(), "<host>"),
            (m.kernel_release.as_str(), "<kernel>"),
            (m.cpu_model.as_str(), "<cpu>"),
            (m.virtualization.as_str(), "<virt>"),
        ] {
            if !value.is_empty() {
                t = t.replace(value, token);
            }
        }
    }
    t
}

/// The rows with the wall-clock timings each round records (how long the round and the
/// run's setup took, which `plan` reads) taken out, after checking they are there: they
/// belong to the moment of the run, like its start time.
fn without_timings(results: &mut serde_json::Value) -> &serde_json::Value {
    let take = |counts: &mut serde_json::Value, whose: &str| {
        let counts = counts.as_object_mut().unwrap_or_else(|| panic!("{whose} has counts"));
        for key in ["round_seconds", "run_setup_seconds"] {
            let v = counts.remove(key).and_then(|v| v.as_f64());
            assert!(v.is_some_and(|s| s >= 0.0), "{key} recorded with {whose}: {v:?}");
        }
    };
    for row in results.as_array_mut().expect("results are a list") {
        take(&mut row["counts"], "each row");
        for round in row["rounds"].as_array_mut().expect("each row has rounds") {
            take(&mut round["counts"], "each round");
        }
    }
    results
}

/// Compares `actual` with the snapshot `name`, or writes it when asked to.
fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("snapshot {} is missing ({e}); run with UPDATE_SNAPSHOTS=1", path.display()));
    if expected != actual {
        let first = expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "snapshot {name} differs from line {}:\n--- expected\n{}\n--- actual\n{}",
            first + 1,
            expected.lines().skip(first).take(5).collect::<Vec<_>>().join("\n"),
            actual.lines().skip(first).take(5).collect::<Vec<_>>().join("\n"),
        );
    }
}

fn load(store: &Store, id: i64) -> (RunDocument, Vec<Skipped>) {
    store.load_run(id).expect("a stored run loads")
}

#[test]
fn known_rows_read_back_identically_through_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("pipeline.db");
    SCALE_PERMILLE.store(1000, Ordering::SeqCst);
    let a = run(&db, &FIXED, Some("base"));
    SCALE_PERMILLE.store(1200, Ordering::SeqCst);
    let b = run(&db, &FIXED, None);
    let store = Store::open(&db).unwrap();
    let (mut da, sa) = load(&store, a);
    let (mut db_doc, _) = load(&store, b);
    // The figures are fixed; whether other work kept the CPUs busy as the runs started
    // belongs to the moment (compare would call no change between busy runs).
    da.machine.preflight.clear();
    db_doc.machine.preflight.clear();
    assert_eq!(store.resolve("base").unwrap(), a);
    assert_eq!(da.run.status, oscost::model::RunStatus::Complete);
    let docs = [&da, &db_doc];

    let fitted = report::table::Width::Fit(report::table::DEFAULT_WIDTH);
    snapshot("table.txt", &normalise(&report::text::render_results(&da.results, &sa, fitted), &docs));
    let wide = report::table::Width::Wide;
    snapshot("table-wide.txt", &normalise(&report::text::render_results(&da.results, &sa, wide), &docs));
    snapshot("run.csv", &normalise(&report::export::csv::to_csv(std::slice::from_ref(&da)), &docs));
    snapshot("run.md", &normalise(&report::export::markdown::to_markdown(&da), &docs));
    let mut json: serde_json::Value =
        serde_json::from_str(&report::json::render_run(&da, &sa, false, &[], (None, &[]))).unwrap();
    snapshot("results.json", &serde_json::to_string_pretty(&without_timings(&mut json["results"])).unwrap());
    snapshot("skipped.json", &serde_json::to_string_pretty(&json["skipped"]).unwrap());

    // B is A scaled by 1.2: every time figure slower, the rate lower (slower too).
    let rows = report::compare::compare(std::slice::from_ref(&da), std::slice::from_ref(&db_doc), 0.02, 2000);
    let verdicts: Vec<String> =
        rows.iter().map(|c| format!("{} {} {:.3} {}", c.key.bench, c.key.method, c.ratio, c.verdict)).collect();
    snapshot("compare.txt", &(verdicts.join("\n") + "\n"));
    assert!(rows.iter().all(|c| c.verdict == "slower"), "{verdicts:?}");

    // Export, import into a fresh database: the same runs, byte for byte in every
    // rendering, the HTML report included.
    let exported = report::export::json::to_json(&[(da.clone(), sa.clone()), (db_doc.clone(), vec![])]);
    let runs = report::import::from_json(&exported, &|_| true).expect("an export imports");
    let mut fresh = Store::open(&dir.path().join("imported.db")).unwrap();
    let ids = fresh.import(&runs).unwrap();
    assert!(ids.iter().all(|i| matches!(i, oscost::store::Imported::Added(_))));
    let (ia, isa) = load(&fresh, ids[0].id());
    let (ib, _) = load(&fresh, ids[1].id());
    assert_eq!(ia.results, da.results);
    assert_eq!(ia.run.uuid, da.run.uuid, "a run keeps its UUID wherever it is copied");
    // Importing the same runs again adds nothing: they are known by their UUIDs.
    let again = fresh.import(&runs).unwrap();
    assert_eq!(again, ids.iter().map(|i| oscost::store::Imported::AlreadyHeld(i.id())).collect::<Vec<_>>());
    assert_eq!(isa, sa);
    assert_eq!(
        report::export::csv::to_csv(std::slice::from_ref(&ia)),
        report::export::csv::to_csv(std::slice::from_ref(&da))
    );
    let html = |x: &RunDocument, sx: &[Skipped], y: &RunDocument| {
        let cmp = report::compare::compare(std::slice::from_ref(x), std::slice::from_ref(y), 0.02, 2000);
        report::html::render(
            &[(x.clone(), sx.to_vec()), (y.clone(), vec![])],
            Some(&report::html::ComparisonSection { rows: &cmp, between_runs: None }),
            &oscost::views::report_views(),
        )
    };
    let original = html(&da, &sa, &db_doc);
    assert_eq!(html(&ia, &isa, &ib), original, "the report of imported runs is the original's");
    for needle in ["test.fixed", "variant=a", "methods_disagree", "not available on this machine (synthetic)", "<svg"] {
        assert!(original.contains(needle), "the report shows {needle}");
    }
}

#[test]
fn a_counted_row_claims_no_more_iterations_than_were_made() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("counting.db");
    CALLS.store(0, Ordering::SeqCst);
    let id = run(&db, &COUNTING, None);
    let calls = CALLS.load(Ordering::SeqCst);
    let store = Store::open(&db).unwrap();
    let (doc, skipped) = load(&store, id);
    assert!(skipped.is_empty());
    let batch = doc.results.iter().find(|r| r.method == Method::Batch).expect("a batch row");
    let per_call = doc.results.iter().find(|r| r.method == Method::PerCall).expect("a per-call row");
    let counted = batch.counts[&Count::CountedOps];
    // Warm-up calls are made but not timed, so the timed iterations are fewer than
    // the calls; batch and single calls together are exactly what was counted.
    assert!(counted as u64 <= calls && counted > 0.0, "{counted} counted of {calls} calls");
    assert_eq!(counted as u64, batch.iterations + per_call.iterations);
    assert_eq!(per_call.n as u64, per_call.iterations);
    // Three rounds, each a whole number of batches: the samples are the rounds' own.
    assert_eq!(batch.rounds.len(), 3);
    assert_eq!(batch.rounds.iter().map(|r| r.samples).sum::<usize>(), batch.samples.len());
    assert!(batch.rounds.iter().all(|r| r.counts[&Count::CountedOps] > 0.0));
}

/// Rounds the noisy benchmarks have run (each call of their `run` is one round).
static NOISY_ROUND: AtomicU64 = AtomicU64::new(0);

/// One round of a figure around 100 whose rounds move by up to 2% (a fixed pattern)
/// and whose samples spread ±0.5% within a round.
fn noisy_rows(_: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let k = NOISY_ROUND.fetch_add(1, Ordering::SeqCst) as f64;
    let level = 100.0 * (1.0 + 0.02 * (k * 2.1).sin());
    let samples: Vec<f64> = (0..20).map(|i| level * (1.0 + 0.005 * (f64::from(i) * 0.9).sin())).collect();
    out.extend(ResultRow::from_samples("test.noisy", Method::Batch, "ns/call", samples, 20));
    Ok(())
}

/// One round of a figure that is 100 in even rounds and 200 in odd ones: no number
/// of rounds makes its interval narrow.
static SPLIT_ROUND: AtomicU64 = AtomicU64::new(0);

fn split_rows(_: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let k = SPLIT_ROUND.fetch_add(1, Ordering::SeqCst);
    let level = if k.is_multiple_of(2) { 100.0 } else { 200.0 };
    let samples: Vec<f64> = (0..20).map(|i| level + f64::from(i % 3)).collect();
    out.extend(ResultRow::from_samples("test.split", Method::Batch, "ns/call", samples, 20));
    Ok(())
}

static NOISY: BenchDef = given("test.noisy", "rounds that move by up to 2% (test only)", noisy_rows);

static DRIFTING_ROUND: AtomicU64 = AtomicU64::new(0);

/// One round of a figure whose level steps between 100·e^0.08 and 100·e^−0.08 every ten
/// rounds, as a machine that drifts over minutes would move it, beside rounds that move
/// by up to 3% (a fixed pattern).
fn drifting_rows(_: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let k = DRIFTING_ROUND.fetch_add(1, Ordering::SeqCst);
    let step = if (k / 10).is_multiple_of(2) { 0.08 } else { -0.08 };
    let level = 100.0 * (step + 0.03 * (k as f64 * 2.1).sin()).exp();
    let samples: Vec<f64> = (0..20).map(|i| level * (1.0 + 0.001 * f64::from(i % 5))).collect();
    out.extend(ResultRow::from_samples("test.drifting", Method::Batch, "ns/call", samples, 20));
    Ok(())
}

static DRIFTING: BenchDef =
    given("test.drifting", "rounds whose level steps by ±8% every ten, and moves by 3% (test only)", drifting_rows);

static SPLIT: BenchDef = given("test.split", "rounds at 100 and 200 in turn (test only)", split_rows);

/// One round of a figure of 100 whose samples spread by 0.4% (no state between rounds,
/// so tests running at once may share it).
fn steady_rows(_: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let samples: Vec<f64> = (0..20).map(|i| 100.0 + 0.1 * f64::from(i % 5)).collect();
    out.extend(ResultRow::from_samples("test.steady", Method::Batch, "ns/call", samples, 20));
    Ok(())
}

static STEADY: BenchDef = given("test.steady", "rounds at 100 (test only)", steady_rows);

/// The adaptive runs' ceiling on rounds, below the command line's so that the run that
/// goes to it stays short.
const ADAPTIVE_CEILING: usize = 300;

fn adaptive_run(db: &Path, def: &'static BenchDef, target: f64) -> RunDocument {
    // An hour: these runs are not about time, and a busy machine must not cut them short.
    let outcome = adaptive_outcome(db, def, target, std::time::Duration::from_secs(3600));
    outcome.store.load_run(outcome.run_id).unwrap().0
}

fn adaptive_outcome(
    db: &Path,
    def: &'static BenchDef,
    target: f64,
    max_time: std::time::Duration,
) -> session::RunOutcome {
    let req = RunRequest {
        selected: vec![(def, Scope::Full)],
        quick: true,
        rounds: None,
        executor: Executor::InProcess,
        perf_counters: false,
        trace: false,
        options: options(),
        db: db.to_path_buf(),
        save: None,
        command_line: "oscost run --precision (pipeline test)".into(),
        progress: false,
        strict: false,
        precision: Some(session::PrecisionGoal { target, detect: None, max_time, max_rounds: ADAPTIVE_CEILING }),
        quiet: true,
        conditions: Vec::new(),
        timeout: None,
        kind: oscost::model::RunKind::Measure,
    };
    session::execute(req).expect("the session runs")
}

/// A benchmark's cap on rounds is the rounds that fit in the time: never below those
/// it ran nor above the ceiling, and, once the time is spent, the rounds it ran.
#[test]
fn an_adaptive_runs_cap_is_the_rounds_that_fit_in_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("adaptive-cap.db");
    let outcome = adaptive_outcome(&db, &STEADY, 0.01, std::time::Duration::from_secs(60));
    let rounds = outcome.store.load_run(outcome.run_id).unwrap().0.results[0].round_count();
    let cap = outcome.round_caps["test.steady"];
    assert!((rounds..=ADAPTIVE_CEILING).contains(&cap), "cap {cap} after {rounds} rounds");
    // No time at all: one round, and a cap of one.
    let outcome = adaptive_outcome(&db, &STEADY, 0.01, std::time::Duration::ZERO);
    assert_eq!(outcome.store.load_run(outcome.run_id).unwrap().0.results[0].round_count(), 1);
    assert_eq!(outcome.round_caps["test.steady"], 1);
}

/// `run --precision` stops at the first round whose merged rows are within the
/// target, and a figure it reports as reached is within it; a figure that cannot get
/// there is reported short or out of reach, never reached.
#[test]
fn an_adaptive_run_stops_at_the_target_and_never_claims_what_it_did_not_reach() {
    use oscost::judge::noise::RunNoise;
    use oscost::judge::precision::{Judge, Standing};
    use oscost::rounds::merge;
    use oscost::stats::blocks::{BLOCK_ROUNDS, MIN_BLOCKS};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("adaptive.db");
    let target = 0.01;
    let none = RunNoise::none();
    let judge = Judge { target, max_rounds: ADAPTIVE_CEILING, noise: &none };
    let doc = adaptive_run(&db, &NOISY, target);
    let row = &doc.results[0];
    let rounds = row.round_count();
    assert!((session::ADAPTIVE_MIN_ROUNDS..ADAPTIVE_CEILING).contains(&rounds), "{rounds} rounds");
    assert_eq!(judge.standing(row), Standing::Reached);
    assert!(judge.precision(row).unwrap() <= target, "{:?}", judge.precision(row));
    // The same rounds, merged one fewer at a time: the round before the last was
    // still short of the target (or below the minimum to judge).
    let per_round: Vec<Vec<ResultRow>> = row
        .round_slices()
        .iter()
        .map(|s| {
            vec![ResultRow::from_samples("test.noisy", Method::Batch, "ns/call", s.to_vec(), s.len() as u64).unwrap()]
        })
        .collect();
    assert_eq!(merge(&per_round)[0].median, row.median, "the rounds rebuild the stored row");
    if rounds > session::ADAPTIVE_MIN_ROUNDS {
        assert_ne!(
            judge.standing(&merge(&per_round[..rounds - 1])[0]),
            Standing::Reached,
            "it ran a round past the target"
        );
    }
    // Rounds at 100 and 200 in turn: their blocks agree, so rounds go on to the ceiling,
    // and the row is reported short, not reached.
    let doc = adaptive_run(&db, &SPLIT, target);
    let row = &doc.results[0];
    assert_eq!(row.round_count(), ADAPTIVE_CEILING);
    assert_eq!(judge.standing(row), Standing::Short, "reported short, not reached");
    // A level that steps by ±8% every ten rounds: once three blocks show it, ±1% is
    // out of reach of the cap, and the benchmark stops there.
    let doc = adaptive_run(&db, &DRIFTING, target);
    let row = &doc.results[0];
    assert_eq!(row.round_count(), BLOCK_ROUNDS * MIN_BLOCKS);
    assert!(
        matches!(judge.standing(row), Standing::OutOfReach { rounds_needed: Some(n) } if n > 1000),
        "{:?}",
        judge.standing(row)
    );
}

/// Under `--precision`, this machine's noise runs stand for what a run's rounds cannot
/// show: a figure whose spread between runs alone is past the target needs runs and
/// adds no rounds; one whose spread leaves room is reached with it counted in.
#[test]
fn an_adaptive_run_judges_its_target_with_this_machines_noise() {
    use oscost::judge::precision::{Judge, Standing};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("adaptive-noise.db");
    // A first run gives the machine; noise runs of it whose test.noisy medians
    // alternate by ±5% in log terms are stored beside it.
    let first = adaptive_run(&db, &NOISY, 0.01);
    let runs: Vec<(RunDocument, Vec<Skipped>)> = (0..6)
        .map(|i| {
            let m = 100.0 * if i % 2 == 0 { 0.05f64 } else { -0.05 }.exp();
            let row = ResultRow::from_samples("test.noisy", Method::Batch, "ns/call", vec![m; 3], 3).unwrap();
            let mut d = RunDocument::for_tests(100 + i, first.machine.clone(), vec![row]);
            d.run.kind = oscost::model::RunKind::Noise;
            d.run.started_at = format!("2026-11-24T00:00:{i:02}Z");
            (d, Vec::new())
        })
        .collect();
    Store::open(&db).unwrap().import(&runs).unwrap();
    let noise = session::machine_noise(&Store::open(&db).unwrap(), &first.machine.comparability_key()).unwrap();
    assert_eq!(noise.len(), 1);
    // Pairs of ±10% over five pairs: that spread alone is past ±1%, which rounds of
    // one run cannot narrow, so the run stops at the first round it judges, and says
    // the figure needs runs.
    let doc = adaptive_run(&db, &NOISY, 0.01);
    let row = &doc.results[0];
    assert_eq!(row.round_count(), session::ADAPTIVE_MIN_ROUNDS, "no rounds added where rounds cannot help");
    let judge = Judge { target: 0.01, max_rounds: ADAPTIVE_CEILING, noise: &noise };
    assert!(
        matches!(judge.standing(row), Standing::NeedsRuns { between, pairs: 5 } if between > 0.1),
        "{:?}",
        judge.standing(row)
    );
    assert!(!judge.from_blocks(row));
    // At 30% the same spread leaves room: reached with the spread counted in.
    let doc = adaptive_run(&db, &NOISY, 0.3);
    let row = &doc.results[0];
    let judge = Judge { target: 0.3, max_rounds: ADAPTIVE_CEILING, noise: &noise };
    assert_eq!(judge.standing(row), Standing::Reached);
    assert!(!judge.from_blocks(row));
    assert!(judge.precision(row).unwrap() > 2.0 * oscost::rounds::precision_of(row).unwrap());
}

/// The order rounds ran in, across every benchmark and arm.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// One row whose every sample is the round's place in the run's sequence (from 1).
fn sequenced_rows(_: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let at = SEQUENCE.fetch_add(1, Ordering::SeqCst) as f64 + 1.0;
    out.push(ResultRow::from_samples("test.sequence", Method::Batch, "ns/call", vec![at; 5], 5).unwrap());
    Ok(())
}

static SEQUENCED: BenchDef = given("test.sequence", "rows that say when their round ran (test only)", sequenced_rows);

/// A paired run measures every arm in every round, in alternating order (A B C, C B A,
/// …), labels each condition's rows, stores the baseline first, and pairs each
/// condition's rounds with the baseline's.
#[test]
fn a_paired_run_measures_each_arm_every_round_in_alternating_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("paired.db");
    let conditions: Vec<oscost::condition::Condition> =
        ["nice:0", "nice:1"].iter().map(|c| c.parse().unwrap()).collect();
    let req = RunRequest {
        selected: vec![(&SEQUENCED, Scope::Full)],
        quick: true,
        rounds: Some(4),
        executor: Executor::InProcess,
        perf_counters: false,
        trace: false,
        options: options(),
        db: db.clone(),
        save: None,
        command_line: "oscost run --condition nice:0 --condition nice:1 (pipeline test)".into(),
        progress: false,
        strict: false,
        precision: None,
        quiet: true,
        conditions,
        timeout: None,
        kind: oscost::model::RunKind::Measure,
    };
    let outcome = session::execute(req).expect("the session runs");
    let doc = outcome.store.load_run(outcome.run_id).unwrap().0;
    let arm = |condition: Option<&str>| {
        let r = doc
            .results
            .iter()
            .find(|r| r.params.raw("condition").and_then(|v| v.as_str()) == condition)
            .unwrap_or_else(|| panic!("no row for {condition:?}"));
        r.round_slices().iter().map(|s| s[0]).collect::<Vec<f64>>()
    };
    assert_eq!(doc.results.len(), 3);
    assert!(!doc.results[0].params.contains("condition"), "the baseline is stored first");
    assert_eq!(arm(None), vec![1.0, 6.0, 7.0, 12.0]);
    assert_eq!(arm(Some("nice:0")), vec![2.0, 5.0, 8.0, 11.0]);
    assert_eq!(arm(Some("nice:1")), vec![3.0, 4.0, 9.0, 10.0]);
    let pairs = oscost::judge::paired::pairs(&doc.results, 0.03, oscost::condition::params_changed_by);
    assert_eq!(pairs.len(), 2);
    assert!(pairs.iter().all(|p| p.pairs == 4 && p.key.variant().is_empty()), "{pairs:?}");
    assert_eq!(pairs.iter().map(|p| p.condition.as_str()).collect::<Vec<_>>(), ["nice:0", "nice:1"]);
}
