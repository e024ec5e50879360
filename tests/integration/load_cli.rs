//! End-to-end: the scheduler-under-load family at small sizes, its input checks, the
//! observer, and cleanup after Ctrl-C.

use crate::common;
use common::*;

#[test]
fn load_family_runs_at_small_sizes_and_proves_its_counts() {
    let db = temp_db();
    let doc = json_of(&run_ok(
        &[
            "run",
            "load",
            "--quick",
            "--json",
            "--tasks",
            "2,4,8",
            "--storm-tasks",
            "2,4",
            "--rooms",
            "1",
            "--messages",
            "10",
        ],
        &db.path,
    ));
    assert_sane_rows(&doc);
    let rq = rows(&doc, "load.runqueue");
    for design in ["yield", "ring"] {
        for mode in ["thread", "process"] {
            let points: Vec<_> = rq
                .iter()
                .filter(|r| r["params"]["design"] == design && r["params"]["mode"] == mode && r["method"] == "batch")
                .collect();
            assert_eq!(points.len(), 3, "{design} {mode}");
            for p in points {
                let n = p["params"]["tasks"].as_f64().unwrap();
                let per_iter = p["counts"]["switches_per_iteration"].as_f64().unwrap();
                assert!(per_iter > 0.0);
                if design == "ring" {
                    // A lap of N tasks on one CPU switches at least N times.
                    assert!(per_iter >= n * 0.9, "ring of {n}: {per_iter} switches per lap");
                }
            }
            assert!(rq.iter().any(|r| r["method"] == "fit"
                && r["params"]["design"] == design
                && r["params"]["mode"] == mode
                && r["params"]["statement"].is_string()));
        }
    }
    // Chat: every message counted at its receiver, exactly.
    for r in rows(&doc, "load.chat") {
        let expected = r["counts"]["expected_per_run"].as_f64().unwrap();
        assert_eq!(expected, (20 * 10 * 19) as f64);
        let delivered = r["counts"]["delivered"].as_f64().unwrap();
        assert_eq!(delivered % expected, 0.0, "{r}");
        assert!(delivered >= expected);
    }
    assert_eq!(rows(&doc, "load.chat").len(), 2, "nice 0 and nice 19");
    let shares: f64 = rows(&doc, "load.fairness").iter().map(|r| r["median"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 0.1, "shares add up to the CPU: {shares}");
    assert_eq!(rows(&doc, "load.wakeup").len(), 5);
    assert_eq!(rows(&doc, "load.yield_storm").len(), 2);
}

#[test]
fn oversized_sweeps_are_refused_up_front() {
    let db = temp_db();
    let out = oscost().args(["run", "load.runqueue", "--tasks", "2,50000000", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tasks") && err.contains("limit"), "{err}");
    let out = oscost().args(["run", "load.chat", "--rooms", "0", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn observer_stores_a_trace() {
    let db = temp_db();
    let doc = json_of(&run_ok(&["observe", "--for", "300ms", "--interval", "10ms", "--json"], &db.path));
    let rq = rows(&doc, "observe.runqueue");
    assert_eq!(rq.len(), 1);
    assert!(rq[0]["n"].as_u64().unwrap() >= 5);
    assert!(rq[0]["counts"]["frac_above_10"].is_number());
    assert_eq!(rows(&doc, "observe.switches").len(), 1);
    let out = oscost().args(["observe", "--for", "ten", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn wakeup_takes_cyclictests_knobs_and_draws_its_histogram() {
    let db = temp_db();
    let args = ["run", "load.wakeup", "--quick", "--wakeup-interval", "200us", "--wakeup-threads", "2"];
    let out = run_ok(&[&args[..], &["--wakeup-histogram", "40"]].concat(), &db.path);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("# Histogram")).unwrap_or_else(|| panic!("no histogram:\n{text}"));
    // cyclictest's -h layout: a line a µs, a column a row, then the totals.
    for (us, line) in lines[at + 1..at + 41].iter().enumerate() {
        let cells: Vec<&str> = line.split([' ', '\t']).collect();
        assert_eq!(cells.len(), 6, "{line}");
        assert_eq!(cells[0], format!("{us:06}"));
    }
    assert!(lines[at + 41].starts_with("# Total: "), "{}", lines[at + 41]);
    let shown = json_of(&run_ok(&["show", "--json"], &db.path));
    let wakes = rows(&shown, "load.wakeup");
    assert_eq!(wakes.len(), 5);
    let totals: Vec<u64> = lines[at + 41]["# Total: ".len()..].split(' ').map(|t| t.parse().unwrap()).collect();
    for (row, total) in wakes.iter().zip(&totals) {
        assert_eq!(row["params"]["interval_ns"], 200_000, "{row}");
        assert_eq!(row["params"]["threads"], 2, "{row}");
        assert!(row["params"].get("priority").is_none(), "{row}");
        // Both sleepers' wakes are pooled, at least the fewest each takes.
        assert!(row["n"].as_u64().unwrap() >= 40, "{row}");
        assert_eq!(row["n"].as_u64(), Some(*total), "the histogram counts every wake of its row");
    }
}

#[test]
fn wakeup_knobs_are_refused_before_anything_is_measured() {
    let db = temp_db();
    let refused = |args: &[&str], says: &str| refused(&db.path, args, says);
    refused(&["run", "load.wakeup", "--wakeup-interval", "200"], "no unit");
    refused(&["run", "load.wakeup", "--wakeup-interval", "5us"], "outside 10us to 100ms");
    refused(&["run", "load.wakeup", "--wakeup-threads", "0"], "--wakeup-threads");
    refused(&["run", "load.wakeup", "--wakeup-priority", "100"], "--wakeup-priority");
    refused(&["run", "syscall.getppid", "--wakeup-histogram", "10"], "load.wakeup is not among");
    assert!(!db.path.exists(), "nothing was stored");
}

#[test]
fn a_real_time_sleeper_runs_with_privilege_and_is_refused_without() {
    let db = temp_db();
    let args = ["run", "load.wakeup", "--quick", "--json", "--wakeup-priority", "50"];
    if !rustix::process::geteuid().is_root() {
        let out = oscost().args(args).arg("--db").arg(&db.path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(2) => assert!(err.contains("needs privilege"), "{err}"),
            // RLIMIT_RTPRIO allows it: the rows carry the priority, as below.
            _ => assert!(out.status.success(), "{err}"),
        }
        eprintln!("skipped the privileged half: not root");
        return;
    }
    let doc = json_of(&run_ok(&args, &db.path));
    let wakes = rows(&doc, "load.wakeup");
    if wakes.is_empty() {
        // A root without CAP_SYS_NICE (a container): the run says why, measures nothing.
        let skipped = doc["skipped"].to_string();
        assert!(skipped.contains("SCHED_FIFO priority 50"), "{doc}");
        return;
    }
    assert_eq!(wakes.len(), 5);
    for row in wakes {
        assert_eq!(row["params"]["priority"], 50, "{row}");
        assert!(row["params"].get("interval_ns").is_none(), "the default interval is left unwritten: {row}");
    }
}
