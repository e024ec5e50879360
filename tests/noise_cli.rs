//! `oscost noise`: A/A runs stored as kind `noise`, each figure's threshold from them,
//! and `compare` judging each figure by its machine's own threshold.

mod common;

use common::{json_of, run_ok, temp_db};

#[test]
fn noise_runs_set_thresholds_that_compare_uses() {
    let db = temp_db();
    let out = run_ok(&["noise", "syscall.getppid", "--runs", "3", "--quick", "--rounds", "2", "--json"], &db.path);
    let v = json_of(&out);
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    let figures = v["figures"].as_array().unwrap();
    assert_eq!(figures.len(), 2, "batch and per-call: {figures:?}");
    for f in figures {
        assert_eq!(f["benchmark"], "syscall.getppid");
        assert_eq!(f["pairs"], 2);
        let (sigma, threshold) = (f["sigma"].as_f64().unwrap(), f["threshold"].as_f64().unwrap());
        assert!(sigma >= 0.0 && threshold >= oscost::noise::MIN_THRESHOLD, "{f}");
        assert!((threshold - oscost::noise::threshold_of(sigma, 2)).abs() < 1e-12);
    }
    // Stored as noise runs, which a history of measured runs leaves out.
    let runs = json_of(&run_ok(&["runs", "--json"], &db.path));
    assert!(runs.as_array().unwrap().iter().all(|r| r["kind"] == "noise"), "{runs}");
    // Two measured runs: compare judges each figure by its own threshold, and says so.
    for _ in 0..2 {
        run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2", "--quiet"], &db.path);
    }
    let text = String::from_utf8_lossy(&run_ok(&["compare", "4", "5"], &db.path).stdout).into_owned();
    assert!(
        text.contains("thresholds: each figure's own for 2 of 2 figures, from this machine's 3 noise runs"),
        "{text}"
    );
    assert!(text.contains("┆ threshold"), "a threshold column: {text}");
    let json = json_of(&run_ok(&["compare", "4", "5", "--json"], &db.path));
    let own: Vec<f64> = figures.iter().map(|f| f["threshold"].as_f64().unwrap()).collect();
    for c in json["results"].as_array().unwrap() {
        assert!(own.iter().any(|t| (t - c["threshold"].as_f64().unwrap()).abs() < 1e-12), "{c}");
    }
    // An explicit threshold overrides them.
    let given =
        String::from_utf8_lossy(&run_ok(&["compare", "4", "5", "--threshold", "3"], &db.path).stdout).into_owned();
    assert!(!given.contains("thresholds: each figure's own") && !given.contains("┆ threshold"), "{given}");
    let history = String::from_utf8_lossy(&run_ok(&["history", "syscall.getppid"], &db.path).stdout).into_owned();
    assert!(history.contains("2 runs"), "history reads the measured runs only: {history}");
}

#[test]
fn noise_refuses_what_it_cannot_use() {
    let db = temp_db();
    for args in [&["noise", "--runs", "2"][..], &["noise", "--suite", "lmbench"], &["noise", "--save", "x"]] {
        let out = common::oscost().args(args).arg("--db").arg(&db.path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
