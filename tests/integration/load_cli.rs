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
