//! `oscost plan` on stored runs with known figures: a plan per figure that reaches
//! the precision asked, read from every run, each printed as a command oscost's own
//! parser takes; the costs read from the runs' own timings (or said to be missing);
//! the table fitted to the terminal; too few runs and a bad precision refused.

use crate::common;
use clap::Parser;
use common::*;
use oscost::cli::Cli;

/// Every command `plan` printed, as text and in JSON, parses as an oscost command
/// line with clap's own parser (what the shell would hand it).
fn assert_commands_parse(plans: &serde_json::Value, text: &str) {
    let mut commands: Vec<String> =
        plans.as_array().unwrap().iter().map(|p| p["command"].as_str().unwrap().to_string()).collect();
    commands.extend(text.lines().filter_map(|l| l.split_once("] oscost ")).map(|(_, c)| format!("oscost {c}")));
    assert!(!commands.is_empty(), "no command printed: {text}");
    for c in &commands {
        let argv: Vec<&str> = c.split_whitespace().collect();
        assert!(Cli::try_parse_from(&argv).is_ok(), "{c:?} does not parse: {:?}", Cli::try_parse_from(&argv).err());
        assert!(c.starts_with("oscost run ") || c.starts_with("oscost noise "), "{c}");
    }
}

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
    // The runs differ by 2%: ±0.5% takes many runs, as a noise series.
    assert!(p["plan"]["precision"].as_f64().unwrap() <= 0.005, "{p}");
    assert!(p["command"].as_str().unwrap().starts_with("oscost noise syscall.getppid --runs "), "{p}");
    // The runs differ by 2% and the rounds not at all: runs carry the variance.
    let c = &p["components"];
    assert!(c["runs"].as_f64().unwrap() > c["rounds"].as_f64().unwrap(), "{c}");
    // Rounds without timings (as stored before rounds were timed): the round's cost
    // is said to be an estimate, not passed off as measured.
    assert_eq!(p["round_cost"], "no_stored_timing", "{p}");
    let text =
        String::from_utf8_lossy(&run_ok(&["plan", "syscall", "--precision", "0.5"], &db.path).stdout).into_owned();
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("syscall.getppid") && words.contains("no stored timing"), "{text}");
    assert_commands_parse(&plans, &text);
}

#[test]
fn costs_come_from_the_runs_own_timings_and_the_table_fits() {
    let db = temp_db();
    for _ in 0..2 {
        run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "3"], &db.path);
    }
    let plans = json_of(&run_ok(&["plan", "--json"], &db.path));
    for p in plans.as_array().unwrap() {
        assert_eq!(p["round_cost"], "stored", "{p}");
        assert_eq!(p["run_cost"], "stored", "{p}");
        assert!(p["command"].as_str().unwrap().ends_with(" --quick"), "the runs were quick: {p}");
        let rounds = p["plan"]["rounds"].as_u64().unwrap();
        assert!((1..=100).contains(&rounds), "{p}");
        let runs = p["plan"]["runs"].as_u64().unwrap();
        assert!(runs == 1 || (3..=100).contains(&runs), "{p}");
    }
    for columns in ["80", "100"] {
        let out = oscost().args(["plan", "--db"]).arg(&db.path).env("COLUMNS", columns).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let limit: usize = columns.parse().unwrap();
        assert!(text.lines().all(|l| l.chars().count() <= limit), "wider than {columns}:\n{text}");
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("measured from the stored runs"), "{text}");
        assert_commands_parse(&plans, &text);
    }
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

#[test]
fn detect_sizes_a_run_for_a_change_and_refuses_one_inside_the_threshold() {
    let db = temp_db();
    let refused = |args: &[&str], says: &str| refused(&db.path, args, says);
    refused(&["run", "syscall.getppid", "--detect", "3%"], "past its 3% threshold");
    refused(&["run", "syscall.getppid", "--detect", "5%", "--rounds", "4"], "--rounds");
    refused(&["run", "syscall.getppid", "--max-time", "5s"], "--max-time");
    assert!(!db.path.exists(), "nothing was measured");
    let out = run_ok(&["run", "syscall.getppid", "--quick", "--detect", "5%", "--max-time", "2s"], &db.path);
    let err = String::from_utf8_lossy(&out.stderr).split_whitespace().collect::<Vec<_>>().join(" ");
    // 5% at compare's 3% threshold: each figure within about ±0.95%.
    assert!(err.contains("within ±0.95%") && err.contains("tell a change of 5.0%"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("precision ±0.95%") || text.contains("precision ±1.0%"), "{text}");
}
