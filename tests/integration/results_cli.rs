//! End-to-end: exports, imports, comparisons, formats and the classic suites.

use crate::common;
use common::*;

#[test]
fn export_then_import_preserves_every_stored_field() {
    let a = temp_db();
    run_ok(&["run", "syscall.getppid", "ctx.pipe", "--quick", "--save", "base", "--cpu", "0"], &a.path);
    let file = a.dir.path().join("export.json");
    run_ok(&["export", "base", "--format", "json", "-o", file.to_str().unwrap()], &a.path);
    let b = temp_db();
    let out = run_ok(&["import", file.to_str().unwrap()], &b.path);
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 1 run"));
    let orig = json_of(&run_ok(&["show", "base", "--json", "--samples"], &a.path));
    let back = json_of(&run_ok(&["show", "base", "--json", "--samples"], &b.path));
    assert_eq!(orig["results"], back["results"], "results, samples included, survive the round trip");
    assert_eq!(orig["machine"], back["machine"]);
    assert_eq!(orig["skipped"], back["skipped"]);
    for k in ["started_at", "command_line", "status", "save_name"] {
        assert_eq!(orig["run"][k], back["run"][k], "run.{k}");
    }
}

#[test]
fn malformed_or_hostile_imports_are_rejected_whole() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick"], &db.path);
    let bad = db.dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"schema_version":1,"runs":[{"schema_version":1,"run":{"id":1},"machine":{},"results":[]}]}"#,
    )
    .unwrap();
    let out = oscost().args(["import", bad.to_str().unwrap(), "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was imported"));
    // A valid export with one hostile row: the whole file is refused.
    let src = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick"], &src.path);
    let good = src.dir.path().join("good.json");
    run_ok(&["export", "-o", good.to_str().unwrap()], &src.path);
    let text = std::fs::read_to_string(&good).unwrap().replacen(
        "\"benchmark\":\"syscall.getppid\"",
        "\"benchmark\":\"<script>\"",
        1,
    );
    std::fs::write(&bad, text).unwrap();
    let out = oscost().args(["import", bad.to_str().unwrap(), "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let runs = run_ok(&["runs", "--json"], &db.path);
    assert_eq!(json_of(&runs).as_array().unwrap().len(), 1, "nothing half-imported: only the run made here");
}

#[test]
fn compare_formats_and_history() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "syscall.getuid", "--quick", "--save", "before"], &db.path);
    run_ok(&["run", "syscall.getppid", "syscall.getuid", "--quick"], &db.path);
    let c = json_of(&run_ok(&["compare", "--baseline", "before", "--json"], &db.path));
    let results = c["results"].as_array().unwrap();
    assert_eq!(figures(results).len(), 4, "two benchmarks × two methods");
    for r in results {
        assert!(r["ratio"].as_f64().unwrap() > 0.0);
        assert!(r["verdict"].is_string());
    }
    assert!(c["machines"].as_array().unwrap().iter().any(|m| m[0] == "kernel"));
    // The same run against itself: never faster or slower.
    let same = json_of(&run_ok(&["compare", "1", "1", "--json"], &db.path));
    for r in same["results"].as_array().unwrap() {
        assert!(!matches!(r["verdict"].as_str(), Some("faster" | "slower")), "{r}");
    }
    // Two databases (two machines).
    let other = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick"], &other.path);
    let cross =
        json_of(&run_ok(&["compare", "1", "latest", "--db-b", other.path.to_str().unwrap(), "--json"], &db.path));
    assert_eq!(figures(cross["results"].as_array().unwrap()).len(), 2);

    let csv = run_ok(&["show", "--format", "csv"], &db.path);
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert!(csv.starts_with("run_id,started_at,host"));
    assert_eq!(csv.lines().filter(|l| !l.contains(CSV_SHARED_TWIN)).count(), 5);
    let md = run_ok(&["show", "--format", "markdown"], &db.path);
    assert!(String::from_utf8_lossy(&md.stdout).contains("| benchmark | variant | method |"));
    let listed = json_of(&run_ok(&["runs", "--json", "--benchmark", "syscall.getuid"], &db.path));
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let none = json_of(&run_ok(&["runs", "--json", "--since", "2999-01-01"], &db.path));
    assert!(none.as_array().unwrap().is_empty());
    let exported = run_ok(&["export", "1", "2", "--format", "csv"], &db.path);
    assert_eq!(String::from_utf8_lossy(&exported.stdout).lines().filter(|l| !l.contains(CSV_SHARED_TWIN)).count(), 9);
}

/// What a figure's twin of rounds on a shared core carries in its variant: whether a
/// real run has one depends on what the host ran beside it.
const SHARED_TWIN: &str = "core=shared";
/// The same in a CSV row's parameters (a JSON object, quotes doubled).
const CSV_SHARED_TWIN: &str = r#"""core"":""shared"""#;

/// A comparison's rows less the twins of rounds on a shared core.
fn figures(rows: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    rows.iter().filter(|r| !r["variant"].as_str().unwrap_or_default().contains(SHARED_TWIN)).collect()
}

#[test]
fn each_classic_suite_prints_its_table() {
    let db = temp_db();
    let listed = run_ok(&["list", "--suites"], &db.path);
    let listed = String::from_utf8_lossy(&listed.stdout);
    for (suite, marker) in [
        ("lmbench", "Simple syscall:"),
        ("travis98", "switch current thread · Linux sched_yield()"),
        ("bartz24", "System 2 · ping-pong fixed affinity · latency"),
        ("molnar02", "nice -n 19 ./chat_c 10 1000 · O(1) run 1"),
    ] {
        assert!(listed.contains(suite));
        let out = run_ok(&["run", "--suite", suite, "--quick", "--messages", "10"], &db.path);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(marker), "{suite}:\n{text}");
        // Every figure the suite measures here is printed: no measured line is n/a, and
        // no reprint cell lacks a row the run should have.
        assert!(!text.contains(": n/a"), "{suite} left figures out:\n{text}");
        assert!(!text.contains("the run has no such row"), "{suite} left figures out:\n{text}");
    }
    let out = oscost().args(["run", "--suite", "lmbenh", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean \"lmbench\""));
}

#[test]
fn names_and_dates_that_could_not_be_found_again_are_refused() {
    let db = temp_db();
    for bad in ["1", "latest", "", "  "] {
        let out =
            oscost().args(["run", "syscall.getppid", "--quick", "--save", bad, "--db"]).arg(&db.path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--save {bad:?}: {err}");
        assert!(err.contains("--save"), "{err}");
    }
    assert!(!db.path.exists(), "refused before anything was created");
    run_ok(&["run", "syscall.getppid", "--quick", "--save", "base-1"], &db.path);
    for bad in ["notadate", "2026-13-45"] {
        let out = oscost().args(["runs", "--since", bad, "--db"]).arg(&db.path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--since {bad}");
    }
    let listed = json_of(&run_ok(&["runs", "--since", "2000-01-01", "--json"], &db.path));
    assert_eq!(listed[0]["save_name"], "base-1");
}

#[test]
fn store_errors_say_their_cause_once_and_name_a_foreign_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "not a folder").unwrap();
    let out = oscost().args(["run", "syscall.getppid", "--quick", "--db"]).arg(file.join("sub/x.db")).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("Not a directory").count(), 1, "the cause once: {err}");
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, "x".repeat(4096)).unwrap();
    for args in [&["run", "syscall.getppid", "--quick"][..], &["show"][..]] {
        let out = oscost().args(args).arg("--db").arg(&junk).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is not an oscost results database") && !err.contains("not writable"), "{err}");
    }
    assert_eq!(std::fs::read(&junk).unwrap(), "x".repeat(4096).into_bytes(), "a foreign file is left as it was");
}

#[test]
fn messages_are_for_people_not_debug_dumps() {
    let db = temp_db();
    let out = run_ok(&["run", "syscall.getppid", "--quick"], &db.path);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("running 1 benchmark in 5 rounds, about "), "{err}");
    assert!(!err.contains("hardware counters"), "not repeated on every run: {err}");
    let info = String::from_utf8_lossy(&run_ok(&["info"], &db.path).stdout).into_owned();
    let html_path = db.dir.path().join("r.html");
    run_ok(&["report", "-o", html_path.to_str().unwrap()], &db.path);
    let html = std::fs::read_to_string(&html_path).unwrap();
    for text in [&info, &html] {
        for debug in ["Some(", "None", "CycleCounter", "Monotonic,"] {
            assert!(!text.contains(debug), "{debug:?} in {text}");
        }
    }
    for (args, says) in [(["--messages", "-1"], "--messages"), (["--rooms", "0"], "--rooms")] {
        let out = oscost().args(["run", "load.chat"]).args(args).arg("--db").arg(&db.path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2));
        assert!(err.contains(says) && err.contains("whole number") && !err.contains("unexpected argument"), "{err}");
    }
}

#[test]
fn a_database_of_the_previous_schema_migrates_in_place_and_prints_the_same_figures() {
    // Written by oscost at schema 3 (raw per-call samples): `run syscall.getppid
    // spawn.fork_exit --quick --rounds 2`, and that oscost's `show --format json`.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/main-v3.db"), &db).unwrap();
    let before: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/main-v3.show.json")).expect("the fixture's show output");
    let size_before = std::fs::metadata(&db).unwrap().len();
    let version = || -> i64 {
        rusqlite::Connection::open(&db).unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap()
    };
    // Reading migrates a private copy and leaves the file as it was (an older oscost
    // can still read it), printing the same figures.
    let bytes = std::fs::read(&db).unwrap();
    let read = json_of(&run_ok(&["show", "1", "--format", "json"], &db));
    assert_eq!(read["results"], before["results"], "read through the migrated copy");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "a reader changed the file");
    assert_eq!(version(), 3);
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1"], &db); // opening for writing migrates
    let size_after = std::fs::metadata(&db).unwrap().len();
    assert!(size_after < size_before / 2, "the re-encoded file gives its space back: {size_before} -> {size_after}");
    let c = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, 6);
    let kinds: Vec<String> = c
        .prepare("SELECT DISTINCT kind FROM runs")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["measure"], "runs stored before kinds existed were measured");
    let formats: Vec<(String, String)> = c
        .prepare("SELECT method, samples_format FROM results")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(formats.iter().all(|(m, f)| (m == "per_call") == (f == "hdr1")), "{formats:?}");
    drop(c);
    let after = json_of(&run_ok(&["show", "1", "--format", "json", "--samples"], &db));
    let (old, new) = (before["results"].as_array().unwrap(), after["results"].as_array().unwrap());
    assert_eq!(old.len(), new.len());
    for (o, n) in old.iter().zip(new) {
        // Everything `show` printed before, unchanged: figures, percentiles, counts, rounds.
        let mut printed = n.clone();
        printed.as_object_mut().unwrap().remove("samples");
        assert_eq!(o, &printed, "{} {}", o["benchmark"], o["method"]);
        assert_eq!(n["samples"].as_array().unwrap().len() as u64, n["n"].as_u64().unwrap(), "every sample is kept");
    }
    // The migrated samples resample as before: the run compared with itself.
    let cmp = json_of(&run_ok(&["compare", "1", "1", "--json"], &db));
    assert!(cmp["results"].as_array().unwrap().iter().all(|r| r["ratio"] == 1.0));
}

/// A run of one batch figure whose samples are known: `rounds` rounds of ten samples
/// around `centre`, spread by ±1% (`phase` shifts the pattern), built on the shape of a
/// real export so it imports as one.
fn known_run(template: &serde_json::Value, centre: f64, phase: f64) -> serde_json::Value {
    let mut run = template.clone();
    run["run"]["uuid"] = uuid::Uuid::new_v4().to_string().into();
    // Known figures of a quiet machine: the template's own preflight (a busy CPU, when
    // other tests ran beside it) is not theirs.
    run["machine"]["preflight"] = serde_json::json!([]);
    let results = run["results"].as_array_mut().unwrap();
    results.retain(|r| r["method"] == "batch" && !is_shared_core_twin(r));
    known_rounds(&mut results[0], centre, phase);
    run
}

/// `compare --fail-on`, for CI jobs: an injected 20% slowdown exits 3 (named on
/// standard error), an A/A pair exits 0, and `change` also fails on a speed-up. The
/// figures are synthetic, so no machine's noise can turn the outcome.
#[test]
fn compare_fail_on_gates_an_injected_slowdown_and_passes_an_a_a_pair() {
    let db = temp_db();
    let template = json_of(&run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1", "--json"], &db.path));
    let mut export = json_of(&run_ok(&["export", "latest", "--format", "json"], &db.path));
    let shape = export["runs"][0].clone();
    assert_eq!(shape["run"]["id"], template["run"]["id"]);
    export["runs"] =
        vec![known_run(&shape, 100.0, 0.0), known_run(&shape, 120.0, 1.0), known_run(&shape, 100.0, 2.0)].into();
    let file = db.dir.path().join("known.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let g = temp_db();
    run_ok(&["import", file.to_str().unwrap()], &g.path);
    let code = |args: &[&str]| {
        let out = oscost().arg("compare").args(args).arg("--db").arg(&g.path).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (slowed, err) = code(&["1", "2", "--fail-on", "slower"]);
    assert_eq!(slowed, Some(3), "{err}");
    assert!(err.contains("syscall.getppid") && err.contains("slower"), "{err}");
    assert_eq!(code(&["1", "3", "--fail-on", "slower"]).0, Some(0), "an A/A pair passes");
    assert_eq!(code(&["1", "3", "--fail-on", "change"]).0, Some(0), "an A/A pair passes");
    assert_eq!(code(&["2", "1", "--fail-on", "slower"]).0, Some(0), "a speed-up is not slower");
    assert_eq!(code(&["2", "1", "--fail-on", "change"]).0, Some(3), "a speed-up is a change");
    assert_eq!(code(&["1", "2"]).0, Some(0), "without --fail-on a verdict is only printed");
    // A stated size: 20% fails a 5% gate and passes a 50% one; a bad size is bad input.
    assert_eq!(code(&["1", "2", "--fail-on", "slower:5%"]).0, Some(3));
    assert_eq!(code(&["1", "2", "--fail-on", "slower:50%"]).0, Some(0), "20% is below a 50% gate");
    assert_eq!(code(&["1", "3", "--fail-on", "slower:5%"]).0, Some(0), "an A/A pair passes");
    let (bad, err) = code(&["1", "2", "--fail-on", "slower:lots"]);
    assert_eq!(bad, Some(2), "{err}");
    assert!(err.contains("slower:N%"), "{err}");
}

/// No verdict on a row the tool doubts: two stored runs 20% apart, one of them with its
/// row flagged `intruded`, compare as `uncertain (intruded)` whichever side carries
/// the flag, and `--fail-on` names the row as not judged and exits 0; the same pair
/// without the flag fails the gate.
#[test]
fn compare_gives_no_verdict_on_a_row_flagged_on_either_side() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1"], &db.path);
    let mut export = json_of(&run_ok(&["export", "latest", "--format", "json"], &db.path));
    let shape = export["runs"][0].clone();
    let mut flagged = known_run(&shape, 120.0, 1.0);
    flagged["results"][0]["flags"] = serde_json::json!([{"flag": "intruded", "reason": "synthetic: third tasks ran"}]);
    export["runs"] = vec![known_run(&shape, 100.0, 0.0), flagged, known_run(&shape, 120.0, 2.0)].into();
    let file = db.dir.path().join("flagged.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let g = temp_db();
    run_ok(&["import", file.to_str().unwrap()], &g.path);
    let compare = |args: &[&str]| oscost().arg("compare").args(args).arg("--db").arg(&g.path).output().unwrap();
    for (a, b) in [("1", "2"), ("2", "1")] {
        let doc = json_of(&compare(&[a, b, "--json"]));
        let verdicts: Vec<&str> =
            doc["results"].as_array().unwrap().iter().map(|c| c["verdict"].as_str().unwrap()).collect();
        assert_eq!(verdicts, ["uncertain (intruded)"], "{a} against {b}");
        let out = compare(&[a, b, "--fail-on", "change"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("not judged") && err.contains("intruded"), "{err}");
    }
    assert_eq!(compare(&["1", "3", "--fail-on", "slower"]).status.code(), Some(3), "the clean pair fails");
}

/// Two runs of one fingerprint compare under one line naming the machine, with no
/// fingerprint table; `--machine` prints every field, the kernel command line whole,
/// and a field that differs is the only one printed without it.
#[test]
fn compare_of_one_machine_prints_one_line_for_it() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1"], &db.path);
    let mut export = json_of(&run_ok(&["export", "latest", "--format", "json"], &db.path));
    let shape = export["runs"][0].clone();
    let mut other_kernel = known_run(&shape, 100.0, 2.0);
    other_kernel["machine"]["kernel_release"] = "6.1.0-other".into();
    export["runs"] = vec![known_run(&shape, 100.0, 0.0), known_run(&shape, 100.0, 1.0), other_kernel].into();
    let file = db.dir.path().join("same.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let g = temp_db();
    run_ok(&["import", file.to_str().unwrap()], &g.path);
    // Its words one space apart: the machines line is wrapped to the width at spaces.
    let text = |args: &[&str]| {
        let out = String::from_utf8(run_ok(&[&["compare"], args].concat(), &g.path).stdout).unwrap();
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let same = text(&["1", "2"]);
    assert!(same.contains("machines: same (") && same.contains("compare --machine"), "{same}");
    assert!(!same.contains("kernel command line") && !same.contains('≠'), "{same}");
    let full = text(&["1", "2", "--machine"]);
    assert!(full.contains("kernel command line") && full.contains("microcode"), "{full}");
    let differ = text(&["1", "3"]);
    assert!(differ.contains("6.1.0-other") && differ.contains('≠'), "{differ}");
    assert!(!differ.contains("microcode") && !differ.contains("machines: same"), "{differ}");
}

/// A bad file imported into a database that is not there yet is refused (exit 2) and
/// leaves no database behind: the file is read once to check it before one is made.
#[test]
fn a_bad_import_into_no_database_creates_none() {
    let dir = tempfile::tempdir().unwrap();
    let (file, db) = (dir.path().join("bad.json"), dir.path().join("new.db"));
    std::fs::write(&file, r#"{"runs": [{"x": 1}], "schema_version": 6}"#).unwrap();
    let out = oscost().arg("import").arg(&file).arg("--db").arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing was imported"));
    assert!(!db.exists(), "an empty database was left");
}

/// `--quiet` prints nothing but warnings and errors, and `--export-json/-csv/-markdown`
/// write the run beside the table (here, instead of it): the JSON imports back, the
/// CSV and Markdown carry the run's rows. `export --format markdown` prints the same.
#[test]
fn a_quiet_run_writes_its_exports_and_prints_nothing() {
    let db = temp_db();
    let dir = db.dir.path();
    let (json, csv, md) = (dir.join("r.json"), dir.join("r.csv"), dir.join("r.md"));
    let out = oscost()
        .args(["run", "syscall.getppid", "--quick", "--rounds", "1", "-q", "--export-json"])
        .arg(&json)
        .arg("--export-csv")
        .arg(&csv)
        .arg("--export-markdown")
        .arg(&md)
        .arg("--db")
        .arg(&db.path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "quiet printed: {}", String::from_utf8_lossy(&out.stdout));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("running 1 benchmark"));
    let other = temp_db();
    run_ok(&["import", json.to_str().unwrap()], &other.path);
    let here = json_of(&run_ok(&["show", "latest", "--json"], &db.path));
    let there = json_of(&run_ok(&["show", "latest", "--json"], &other.path));
    assert_eq!(here["results"], there["results"], "the JSON export is the run");
    let rows = here["results"].as_array().unwrap().len();
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), rows + 1, "a header and a line a row");
    let md = std::fs::read_to_string(&md).unwrap();
    assert_eq!(md.lines().filter(|l| l.starts_with("| syscall.getppid")).count(), rows);
    let printed = run_ok(&["export", "latest", "--format", "markdown"], &db.path);
    assert_eq!(String::from_utf8_lossy(&printed.stdout), md);
}

/// What a user reads at the terminal: the default table fits 100 columns when the
/// output is not a terminal (and `COLUMNS` when set), `--wide` keeps every column;
/// `show --histogram ROW` prints the row's HDR percentile distribution; `--samples`
/// outside JSON is refused rather than ignored; errors under `--json` are JSON.
#[test]
fn output_fits_and_speaks_the_formats_asked_for() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "ctx.pipe", "--quick", "--rounds", "2"], &db.path);
    let table_lines = |out: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with(['│', '┌', '└', '╞', '├']))
            .map(str::to_string)
            .collect()
    };
    let fitted = table_lines(&oscost().args(["show", "--db"]).arg(&db.path).env_remove("COLUMNS").output().unwrap());
    assert!(!fitted.is_empty());
    assert!(fitted.iter().all(|l| l.chars().count() <= 100), "{}", fitted.join("\n"));
    let narrow = table_lines(&oscost().args(["show", "--db"]).arg(&db.path).env("COLUMNS", "80").output().unwrap());
    assert!(narrow.iter().all(|l| l.chars().count() <= 80), "{}", narrow.join("\n"));
    let wide = table_lines(&run_ok(&["show", "--wide"], &db.path));
    assert!(wide[1].contains("per-call p50") && wide[1].contains("max"), "{}", wide[1]);

    let dump = String::from_utf8(
        run_ok(&["show", "--histogram", "ctx.pipe mode=process placement=same_cpu"], &db.path).stdout,
    )
    .unwrap();
    assert!(dump.contains("Value     Percentile TotalCount 1/(1-Percentile)"), "{dump}");
    assert!(dump.contains("(per_call)") && dump.contains("#[Max"), "{dump}");
    let ambiguous = oscost().args(["show", "--histogram", "ctx.pipe", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&ambiguous.stderr).contains("matches"), "names the candidates");

    let samples = oscost().args(["show", "--samples", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(samples.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&samples.stderr).contains("--json"));

    let missing = oscost().args(["show", "99", "--json", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(missing.stdout.is_empty(), "stdout holds results only");
    let err: serde_json::Value = serde_json::from_slice(&missing.stderr).expect("the error is JSON");
    assert_eq!(err["error"]["exit_code"], 2);
    assert!(err["error"]["message"].as_str().unwrap().contains("99"), "{err}");
    let bad_flag = oscost().args(["show", "--json", "--bogus", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(bad_flag.status.code(), Some(2));
    let err: serde_json::Value = serde_json::from_slice(&bad_flag.stderr).expect("a usage error is JSON too");
    assert!(err["error"]["causes"][0].as_str().unwrap().contains("--bogus"), "{err}");
}
