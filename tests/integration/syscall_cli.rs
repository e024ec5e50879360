//! End-to-end: the system-call family through the real binary, the store, and the CLI's
//! error paths.

use crate::common;
use common::*;

#[test]
fn syscall_family_runs_stores_and_shows() {
    let db = temp_db();
    let out = run_ok(&["run", "syscall", "--quick", "--json"], &db.path);
    let doc = json_of(&out);
    assert_eq!(doc["schema_version"], 1);
    assert!(doc["machine"]["kernel_release"].is_string());
    assert!(doc["machine"]["calibration"]["ticks_per_ns"].as_f64().unwrap() > 0.0);
    assert_sane_rows(&doc);
    for id in [
        "syscall.enosys",
        "syscall.getppid",
        "syscall.getuid",
        "syscall.gettid",
        "syscall.getpid",
        "syscall.clock_gettime",
        "syscall.gettimeofday",
        "syscall.open_close",
        "syscall.stat",
        "syscall.read",
        "syscall.write",
        "syscall.sched_yield",
    ] {
        let r = rows(&doc, id);
        assert!(r.iter().any(|x| x["method"] == "batch"), "{id} has a batch row");
        assert!(r.iter().any(|x| x["method"] == "per_call"), "{id} has a per-call row");
    }
    // vDSO rows are always flagged; raw rows never carry the vDSO flag.
    for id in ["syscall.clock_gettime", "syscall.gettimeofday"] {
        for r in rows(&doc, id) {
            assert_eq!(has_flag(r, "vdso"), r["params"]["via"] == "vdso", "{r}");
        }
    }
    // Batch rows carry the kernel's switch counts for their timed region.
    for r in doc["results"].as_array().unwrap().iter().filter(|r| r["method"] == "batch") {
        assert!(r["counts"]["switches"].is_number(), "{r}");
    }

    // `show` reprints the same run from the database.
    let shown = json_of(&run_ok(&["show", "--json"], &db.path));
    assert_eq!(shown["run"]["id"], doc["run"]["id"]);
    assert_eq!(shown["results"], doc["results"]);
    let table = run_ok(&["show"], &db.path);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("syscall.getppid") && text.contains("p99"), "{text}");
    // `-v` prints the full table, p99.9 included.
    let full = String::from_utf8(run_ok(&["show", "-v"], &db.path).stdout).unwrap();
    assert!(full.contains("syscall.getppid") && full.contains("p99.9"), "{full}");
    // The fitted table leaves per-call p50 and max to --wide.
    let wide = String::from_utf8(run_ok(&["show", "--wide"], &db.path).stdout).unwrap();
    assert!(wide.contains("syscall.getppid") && wide.contains("per-call p50") && wide.contains("max"), "{wide}");
    let runs = run_ok(&["runs"], &db.path);
    let listed = String::from_utf8_lossy(&runs.stdout);
    assert!(listed.contains("complete"));
    assert!(listed.lines().next().unwrap_or_default().contains("started (UTC)"), "runs has a header: {listed}");
}

#[test]
fn unknown_benchmark_suggests_and_exits_2() {
    let db = temp_db();
    let out = oscost().args(["run", "syscall.getppdi", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean \"syscall.getppid\""), "{err}");
    assert!(!db.path.exists(), "nothing is created for a bad selection");
}

#[test]
fn unknown_flag_exits_2() {
    let out = oscost().args(["run", "--qiuck"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--quick"));
}

#[test]
fn unwritable_database_fails_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out =
        oscost().args(["run", "syscall.getppid", "--quick", "--db"]).arg(file.join("results.db")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a-file"), "{err}");
    assert!(!err.contains("running"), "must fail before measuring: {err}");
}

#[test]
fn absent_cpu_is_a_clear_error() {
    let db = temp_db();
    let out = oscost().args(["run", "syscall.getppid", "--cpu", "4096", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cpu 4096"));
}

#[test]
fn pinned_run_records_its_placement() {
    let db = temp_db();
    let doc = json_of(&run_ok(&["run", "syscall.getppid", "--quick", "--json", "--cpu", "0"], &db.path));
    for r in doc["results"].as_array().unwrap() {
        assert_eq!(r["params"]["runner"], "cpu=0", "{r}");
    }
}

#[test]
fn realtime_without_permission_is_refused_or_bounded() {
    let db = temp_db();
    let out = oscost()
        .args(["run", "syscall.getppid", "--quick", "--policy", "fifo", "--json", "--db"])
        .arg(&db.path)
        .output()
        .unwrap();
    if out.status.success() {
        // Privileged: the run happened under the policy and says so.
        let doc = json_of(&out);
        assert!(rows(&doc, "syscall.getppid").iter().all(|r| r["params"]["policy"] == "fifo"));
    } else {
        eprintln!("no real-time privilege here; checking the refusal");
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--policy fifo"));
    }
}

#[test]
fn list_names_every_benchmark_with_its_timing_model() {
    let out = oscost().arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("syscall.enosys") && text.contains("timing:"));
}

#[test]
fn info_prints_fingerprint_and_calibration() {
    let out = oscost().args(["info", "--json"]).output().unwrap();
    assert!(out.status.success());
    let m = json_of(&out);
    for k in [
        "cpu_model",
        "kernel_release",
        "virtualization",
        "mitigations",
        "libc",
        "git_commit",
        "command_line",
        "calibration",
    ] {
        assert!(!m[k].is_null(), "info lacks {k}");
    }
}

#[test]
fn ctrl_c_keeps_finished_benchmarks_and_exits_130() {
    let db = temp_db();
    let mut child = oscost()
        .args(["run", "syscall", "--db"])
        .arg(&db.path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_stored_result(&db.path);
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130));
    let c = rusqlite::Connection::open(&db.path).unwrap();
    let (status, rows): (String, i64) = c
        .query_row("SELECT status, (SELECT COUNT(*) FROM results) FROM runs ORDER BY id DESC LIMIT 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(status, "interrupted");
    assert!(rows > 0);
}

/// One method to a figure: every row's percentiles come from its own samples, so its
/// p99 is at least its median (the per-call p50 is the per-call median), in the JSON
/// as in the table's per-call column; and the calibration records the bracket's step.
#[test]
fn every_rows_tail_is_of_its_own_method_and_never_below_its_median() {
    let db = temp_db();
    let doc = json_of(&run_ok(&["run", "syscall", "ctx.pipe", "--quick", "--rounds", "2", "--json"], &db.path));
    let quantum = doc["machine"]["calibration"]["quantum_ns"].as_f64().expect("the bracket's step is recorded");
    assert!(quantum > 0.0, "{quantum}");
    let mut checked = 0;
    for r in doc["results"].as_array().unwrap() {
        let Some(p) = r["percentiles"].as_object() else { continue };
        let (median, p50, p99) =
            (r["median"].as_f64().unwrap(), p["p50"].as_f64().unwrap(), p["p99"].as_f64().unwrap());
        assert!(p99 >= median, "{}: p99 {p99} below its median {median}", r["benchmark"]);
        assert!(
            (p50 - median).abs() <= 1e-9 * median.abs().max(1.0),
            "{}: p50 {p50} is not the median {median}",
            r["benchmark"]
        );
        checked += 1;
    }
    assert!(checked > 10, "{checked} rows with percentiles");
    // The shared-core probe is read in every round of a figure measured on one CPU, and
    // in none of a pair across CPUs, where one CPU's reading would not speak for both.
    for r in doc["results"].as_array().unwrap() {
        let placement = r["params"]["placement"].as_str();
        let one_cpu = match r["benchmark"].as_str().unwrap() {
            "syscall.getppid" | "syscall.getuid" => true,
            "ctx.pipe" if placement == Some("same_cpu") && r["params"]["mode"] != "self" => true,
            "ctx.pipe" if matches!(placement, Some("cross_cpu" | "unpinned")) => false,
            _ => continue,
        };
        for round in r["rounds"].as_array().unwrap() {
            let (share, ratio) = (&round["counts"]["shared_core_share"], &round["counts"]["shared_core_ratio"]);
            if one_cpu {
                assert!(share.as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{}: {round}", r["benchmark"]);
                assert!(ratio.as_f64().is_some_and(|q| q > 0.0), "{}: {round}", r["benchmark"]);
            } else {
                assert!(share.is_null() && ratio.is_null(), "{} {placement:?}: {round}", r["benchmark"]);
            }
        }
    }
    let table = String::from_utf8(run_ok(&["show", "--wide"], &db.path).stdout).unwrap();
    assert!(table.contains("per-call p50"), "{table}");
}
