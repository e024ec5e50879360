//! Helpers shared by the integration tests: running the real binary on a temp database.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The bound on every wait for the machine to do something (a process to start, a row
/// to be stored, a stop to finish): one that only catches a hang. The tests wait for
/// the event itself; nothing they wait for takes a tenth of this, even with both CPUs
/// saturated by other work.
pub const HANG: std::time::Duration = std::time::Duration::from_secs(600);

/// Waits for `child` to end, killing it and failing the test after [`HANG`].
pub fn wait_or_hang(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for a child") {
            return status;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} hung: still running after {HANG:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub fn oscost() -> Command {
    Command::new(env!("CARGO_BIN_EXE_oscost"))
}

pub struct TempDb {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

/// A small simulation on a fitted profile with no sensitivity sweep: a sim run in a
/// second or two, for tests about runs and paths rather than the simulator.
pub const SMALL_SIM: &[&str] =
    &["sim", "--policy", "o1", "--workload", "travis", "--no-sensitivity", "--tasks", "2", "--profile", "pentium200"];

/// Travis's table on his own profile: two policies, six sizes, no sensitivity sweep.
pub const TRAVIS_SIM: &[&str] = &[
    "sim",
    "--policy",
    "linux-2.0,linux-2.0-yieldfix",
    "--workload",
    "travis",
    "--no-sensitivity",
    "--profile",
    "pentium200",
];

pub fn temp_db() -> TempDb {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("results.db");
    TempDb { dir, path }
}

pub fn run_ok(args: &[&str], db: &Path) -> Output {
    let out = oscost().args(args).arg("--db").arg(db).output().expect("run oscost");
    assert!(
        out.status.success(),
        "oscost {args:?} failed: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs oscost on `db` and asserts it refused with exit 2, saying `says`.
pub fn refused(db: &Path, args: &[&str], says: &str) {
    let out = oscost().args(args).arg("--db").arg(db).output().expect("run oscost");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

pub fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Rows of a JSON document with the given benchmark id.
pub fn rows<'a>(doc: &'a serde_json::Value, id: &str) -> Vec<&'a serde_json::Value> {
    doc["results"].as_array().expect("results").iter().filter(|r| r["benchmark"] == id).collect()
}

/// Whether a row of `show --json` is a figure's twin of rounds on a shared core, which
/// a real run has or not by what the host ran beside it.
pub fn is_shared_core_twin(row: &serde_json::Value) -> bool {
    row["params"]["core"] == "shared"
}

pub fn has_flag(row: &serde_json::Value, flag: &str) -> bool {
    row["flags"].as_array().is_some_and(|f| f.iter().any(|x| x["flag"] == flag))
}

/// Every figure of every row is finite and positive where it is a duration median.
pub fn assert_sane_rows(doc: &serde_json::Value) {
    for r in doc["results"].as_array().expect("results") {
        for k in ["min", "median", "mean", "ci_low", "ci_high"] {
            assert!(r[k].as_f64().is_some_and(f64::is_finite), "{k} of {r}");
        }
        assert!(r["n"].as_u64().unwrap() >= 1, "{r}");
        if r["method"] == "batch" {
            assert!(r["median"].as_f64().unwrap() > 0.0, "batch median must be positive: {r}");
        }
        if r["method"] == "per_call" {
            assert!(r["percentiles"].is_object(), "per-call rows carry percentiles: {r}");
        }
    }
}

/// Waits until the database at `db` holds at least one result row (up to [`HANG`]).
pub fn wait_for_stored_result(db: &Path) {
    let deadline = std::time::Instant::now() + HANG;
    loop {
        assert!(std::time::Instant::now() < deadline, "no benchmark was stored: hung");
        std::thread::sleep(std::time::Duration::from_millis(100));
        if let Ok(c) = rusqlite::Connection::open(db)
            && c.query_row("SELECT COUNT(*) FROM results", [], |r| r.get::<_, i64>(0)).unwrap_or(0) > 0
        {
            return;
        }
    }
}

/// The environment variable that marks the processes of one test: everything a run
/// starts (workers, their children) inherits it, whatever its process group.
pub const MARK: &str = "OSCOST_TEST_MARK";

/// A marker no other test uses.
pub fn new_mark() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst))
}

/// Live processes whose environment holds `MARK=mark` (zombies have none).
pub fn marked(mark: &str) -> Vec<u32> {
    let needle = format!("{MARK}={mark}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// Waits for the marked processes to end (up to [`HANG`]); returns any still there.
/// None is taken as none only when a second look 100 ms later finds none either: a
/// process in the middle of an exec has no readable environment for a moment.
pub fn wait_unmarked(mark: &str) -> Vec<u32> {
    let start = std::time::Instant::now();
    loop {
        let left = marked(mark);
        if left.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let again = marked(mark);
            if again.is_empty() || start.elapsed() >= HANG {
                return again;
            }
        } else if start.elapsed() >= HANG {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The ids of every benchmark whose id starts with `prefix` (`syscall.`), as `list` shows.
pub fn benchmark_ids(prefix: &str) -> std::collections::BTreeSet<String> {
    let out = oscost().arg("list").output().expect("run oscost list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|id| id.starts_with(prefix))
        .map(String::from)
        .collect()
}

/// Starts `oscost ARGS --db DB` with its processes marked `mark`, output discarded.
pub fn spawn_marked(args: &[&str], db: &Path, mark: &str) -> std::process::Child {
    oscost()
        .env(MARK, mark)
        .args(args)
        .arg("--db")
        .arg(db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start oscost")
}

/// Waits until at least `n` processes are marked `mark`, or `run` has ended (it will
/// start no more), or [`HANG`]; returns how many are marked.
pub fn wait_marked(mark: &str, n: usize, run: &mut std::process::Child) -> usize {
    let start = std::time::Instant::now();
    while marked(mark).len() < n && start.elapsed() < HANG {
        if run.try_wait().expect("wait for the run").is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    marked(mark).len()
}

/// A stored history with known figures: one run per entry of `medians` (a day
/// apart, oldest first), each of one batch figure (syscall.getppid) of six rounds
/// around its median (±1%), on a kernel named by `kernels` (one per run). The runs
/// are shaped on a real export (measured into a scratch database, which is then
/// dropped) so they import as any export does; returns the export's path in `dir`.
pub fn history_export(dir: &Path, medians: &[f64], kernels: &[&str]) -> PathBuf {
    let scratch = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1"], &scratch.path);
    let mut export = json_of(&run_ok(&["export", "latest", "--format", "json"], &scratch.path));
    let shape = export["runs"][0].clone();
    let runs: Vec<serde_json::Value> = medians
        .iter()
        .zip(kernels)
        .enumerate()
        .map(|(i, (m, kernel))| {
            let mut run = shape.clone();
            run["run"]["uuid"] = uuid::Uuid::new_v4().to_string().into();
            run["run"]["started_at"] = format!("2026-10-{:02}T03:00:00Z", i + 1).into();
            run["machine"]["kernel_release"] = (*kernel).into();
            let results = run["results"].as_array_mut().unwrap();
            results.retain(|r| r["method"] == "batch" && !is_shared_core_twin(r));
            results.truncate(1);
            known_rounds(&mut results[0], *m, 0.0);
            run
        })
        .collect();
    export["runs"] = runs.into();
    let file = dir.join("history.json");
    std::fs::write(&file, export.to_string()).unwrap();
    file
}

/// Sets a row to six rounds of ten samples within ±1% of `centre` (`phase` shifts
/// the pattern), its summary computed from them and no flag (the flags the measured
/// row raised, such as rounds on a shared core, judged samples it no longer holds).
pub fn known_rounds(row: &mut serde_json::Value, centre: f64, phase: f64) {
    let mut samples: Vec<f64> = (0..60).map(|i| centre * (1.0 + 0.01 * (i as f64 * 0.7 + phase).sin())).collect();
    row["samples"] = samples.clone().into();
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let sd = (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let median = (samples[n / 2 - 1] + samples[n / 2]) / 2.0;
    for (k, v) in [("min", samples[0]), ("median", median), ("mean", mean), ("stddev", sd)] {
        row[k] = v.into();
    }
    row["ci_low"] = (median * 0.995).into();
    row["ci_high"] = (median * 1.005).into();
    row["n"] = n.into();
    row["percentiles"] = serde_json::Value::Null;
    row["rounds"] = (0..6).map(|_| serde_json::json!({"samples": 10, "counts": {}})).collect();
    row["flags"] = serde_json::json!([]);
}

/// Twenty medians with 2% run-to-run noise (a fixed pseudo-random pattern), 10%
/// higher from the eleventh when `step`.
pub fn twenty_medians(step: bool) -> Vec<f64> {
    const NOISE: [f64; 20] =
        [0.4, -1.1, 0.9, -0.3, 1.6, -0.8, 0.1, -1.9, 1.2, -0.5, 0.7, -1.4, 0.2, 1.0, -0.6, 1.8, -0.2, -1.0, 0.5, -0.9];
    NOISE.iter().enumerate().map(|(i, z)| 100.0 * if step && i >= 10 { 1.1 } else { 1.0 } * (0.02 * z).exp()).collect()
}

/// Every run of `from` exported, its host renamed (and with `new_kernel` its kernel,
/// so the comparability key differs too), imported into `into`.
pub fn as_host(from: &Path, host: &str, new_kernel: bool, into: &Path) {
    let out = run_ok(&["export", "--format", "json"], from);
    let mut doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for run in doc["runs"].as_array_mut().unwrap() {
        // Another machine's run is another run: a UUID of its own.
        run["run"].as_object_mut().unwrap().remove("uuid");
        run["machine"]["hostname"] = host.into();
        if new_kernel {
            run["machine"]["kernel_release"] = format!("6.1-{host}").into();
        }
    }
    let file = into.with_extension("json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    run_ok(&["import", file.to_str().unwrap()], into);
}
