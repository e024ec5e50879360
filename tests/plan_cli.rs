//! `oscost plan` on stored runs with known figures: a plan per figure that reaches
//! the precision asked, read from every run; too few runs and a bad precision refused.

mod common;
use common::*;

#[test]
fn a_plan_reaches_the_precision_from_the_stored_levels() {
    let db = temp_db();
    let kernels = vec!["6.1.0-test"; 20];
    let file = history_export(db.dir.path(), &twenty_medians(false), &kernels);
    run_ok(&["import", file.to_str().unwrap()], &db.path);
    let plans = json_of(&run_ok(&["plan", "--precision", "0.5", "--json"], &db.path));
    let p = &plans.as_array().unwrap()[0];
    assert_eq!(p["figure"], "syscall.getppid");
    assert_eq!(p["read_from"], serde_json::json!([20, 6, 10]));
    assert!(p["plan"]["precision"].as_f64().unwrap() <= 0.005, "{p}");
    // The runs differ by 2% and the rounds not at all: runs carry the variance.
    let c = &p["components"];
    assert!(c["runs"].as_f64().unwrap() > c["rounds"].as_f64().unwrap(), "{c}");
    let text = String::from_utf8_lossy(&run_ok(&["plan", "syscall"], &db.path).stdout).into_owned();
    assert!(text.contains("syscall.getppid") && text.contains("assumed"), "{text}");
}

#[test]
fn too_few_runs_or_a_bad_precision_are_refused() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "2"], &db.path);
    let out = oscost().args(["plan", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("two or more"));
    let out = oscost().args(["plan", "--precision", "0", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
