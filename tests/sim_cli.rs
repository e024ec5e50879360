//! `oscost sim` end to end: profiles, storage as a run of kind `sim`, determinism and
//! bad input.

mod common;

use common::*;

#[test]
fn a_simulation_is_stored_labelled_and_reproducible() {
    let db = temp_db();
    // The live profile takes its switch costs from a stored run.
    let out = oscost().args(["sim", "--policy", "o1", "--workload", "fork", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("oscost run load.runqueue"), "{err}");
    run_ok(&["run", "load.runqueue", "--tasks", "2", "--quick", "--rounds", "1"], &db.path);
    let sim = |seed: &str| {
        let out = run_ok(
            &[
                "sim",
                "--policy",
                "linux-2.0,linux-2.0-yieldfix,o1",
                "--workload",
                "travis",
                "--tasks",
                "2,4",
                "--seed",
                seed,
                "--json",
            ],
            &db.path,
        );
        json_of(&out)
    };
    let a = sim("5");
    assert_eq!(a["run"]["kind"], "sim");
    let rows = rows(&a, "sim.travis");
    assert_eq!(rows.len(), 3 * 2 * 2, "three policies, two sizes, two figures");
    for r in &rows {
        assert_eq!(r["params"]["simulated"], "profile live", "{r}");
        assert!(r["median"].as_f64().unwrap().is_finite());
    }
    let recalc = |pol: &str, n: u64| {
        rows.iter()
            .find(|r| {
                r["params"]["policy"] == pol
                    && r["params"]["tasks"] == n
                    && r["params"]["figure"] == "recalculations per yield"
            })
            .unwrap()["median"]
            .as_f64()
            .unwrap()
    };
    assert!((recalc("linux-2.0", 4) - 0.25).abs() < 0.01);
    assert!(recalc("linux-2.0-yieldfix", 4) < 0.02);
    assert_eq!(recalc("o1", 4), 0.0);
    // The live profile's scan costs are measured anew each time, so only the shape
    // repeats here; the same seed on a fixed profile repeats exactly (unit tests).
    let b = sim("5");
    assert_eq!(rows.len(), common::rows(&b, "sim.travis").len());
    let shown = run_ok(&["show", "latest"], &db.path);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("sim.travis"));
}

#[test]
fn profiles_and_sizes_are_checked() {
    let db = temp_db();
    let out = oscost()
        .args(["sim", "--policy", "o1", "--workload", "fork", "--profile", "pentium200", "--db"])
        .arg(&db.path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Table 2") && err.contains("--profile live"), "{err}");
    for bad in [["--cpus", "0"], ["--tasks", "0"], ["--tasks", "100000"]] {
        let out = oscost()
            .args(["sim", "--policy", "cfs", "--workload", "server"])
            .args(bad)
            .arg("--db")
            .arg(&db.path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = oscost().args(["sim", "--policy", "bfs", "--workload", "server", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
