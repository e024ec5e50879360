//! Every kind of run oscost stores (measure, observe, trace, sim) round-trips through
//! its own JSON export: exported, imported into another database, shown there, it is
//! the run it was. (`import` once knew only the measuring families and `observe`.)

use crate::common;

use common::*;

/// Runs `args` into a fresh database, exports the run, imports it into a second one,
/// and checks that `show` prints the same run in both.
fn round_trips(kind: &str, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    run_ok(args, &a);
    let file = dir.path().join("run.json");
    run_ok(&["export", "latest", "--format", "json", "-o", file.to_str().unwrap()], &a);
    let out = oscost().args(["import"]).arg(&file).arg("--db").arg(&b).output().unwrap();
    assert!(out.status.success(), "{kind}: import refused its own export: {}", String::from_utf8_lossy(&out.stderr));
    let shown = |db: &std::path::Path| json_of(&run_ok(&["show", "latest", "--format", "json", "--samples"], db));
    let (here, there) = (shown(&a), shown(&b));
    // A measured run's kind is left out of the JSON (runs before kinds were measured).
    assert_eq!(here["run"]["kind"].as_str().unwrap_or("measure"), kind);
    assert_eq!(there["run"]["kind"], here["run"]["kind"], "{kind}");
    assert_eq!(there["run"]["uuid"], here["run"]["uuid"], "{kind}");
    assert_eq!(there["run"]["started_at"], here["run"]["started_at"], "{kind}");
    assert!(!here["results"].as_array().unwrap().is_empty(), "{kind}: the run stored rows");
    assert_eq!(there["results"], here["results"], "{kind}: the rows changed on the way");
    assert_eq!(there["skipped"], here["skipped"], "{kind}");
}

#[test]
fn a_measured_run_round_trips() {
    round_trips("measure", &["run", "syscall.getppid", "--quick", "--rounds", "1"]);
}

#[test]
fn an_observed_run_round_trips() {
    round_trips("observe", &["observe", "--for", "300ms", "--interval", "10ms"]);
}

#[test]
fn a_simulated_run_round_trips() {
    round_trips(
        "sim",
        &["sim", "--policy", "linux-2.0,o1", "--workload", "travis", "--no-sensitivity", "--tasks", "2,8"],
    );
}

#[test]
fn a_traced_run_round_trips() {
    if !oscost::sys::is_root() {
        eprintln!("skipped: a_traced_run_round_trips needs root (the scheduler's tracepoints)");
        return;
    }
    round_trips("trace", &["trace", "--for", "200ms"]);
}
