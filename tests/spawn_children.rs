//! The creation family leaves no child behind: after success, after a child that
//! starts failing mid-run, and (where the limit applies) after fork hits RLIMIT_NPROC.
//! One test function, so nothing else in this process forks meanwhile.

use std::os::unix::fs::PermissionsExt;

use oscost::bench::{self, BenchOptions, Ctx, Output, Scope};
use oscost::helper::Executable;
use oscost::placement::Placement;
use oscost::runner::{BenchError, MeasureConfig};
use oscost::sys;

fn options(noop: &std::path::Path) -> BenchOptions {
    BenchOptions {
        placement: Placement::default(),
        noop: Executable::open_verified(noop).map(std::sync::Arc::new).map_err(Into::into),
        parent_mem: vec![0, 8 << 20],
        footprint_sizes: vec![0],
        footprint_stride: 64,
        tasks: vec![2, 4],
        storm_tasks: vec![2],
        rooms: 1,
        messages: 5,
        wakeup: Default::default(),
    }
}

fn run(id: &str, opts: &BenchOptions, cfg: &MeasureConfig) -> (Result<(), BenchError>, Output) {
    let calib = oscost::clock::calibrate(2_000_000);
    let ctx = Ctx { cfg, calib: &calib, opts, scope: Scope::Full };
    let def = bench::registry().into_iter().find(|b| b.id == id).expect("known id");
    let mut out = Output::default();
    let r = (def.run)(&ctx, &mut out);
    (r, out)
}

#[test]
fn no_child_is_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let noop = dir.path().join("noop");
    std::fs::write(&noop, oscost::helper::NOOP_ELF).unwrap();
    std::fs::set_permissions(&noop, std::fs::Permissions::from_mode(0o755)).unwrap();
    let opts = options(&noop);
    let cfg = MeasureConfig::quick();

    // Success: every creation benchmark, each child's status checked.
    for def in bench::registry().into_iter().filter(|b| b.id.starts_with("spawn.")) {
        let (r, out) = run(&def.id, &opts, &cfg);
        r.unwrap_or_else(|e| panic!("{}: {e}", def.id));
        assert!(!out.rows().is_empty(), "{} produced rows", def.id);
        for row in out.rows() {
            assert!(row.median.is_finite() && row.n >= 1, "{row:?}");
        }
        assert!(
            oscost::procfs::live_children().is_empty(),
            "children left after {}: {:?}",
            def.id,
            oscost::procfs::live_children()
        );
    }

    // A helper that works for the check and the first runs, then fails mid-run.
    let counter = dir.path().join("count");
    std::fs::write(&counter, "0").unwrap();
    let flaky = dir.path().join("flaky");
    std::fs::write(
        &flaky,
        format!("#!/bin/sh\nn=$(cat {c})\necho $((n+1)) > {c}\n[ \"$n\" -lt 20 ]\n", c = counter.display()),
    )
    .unwrap();
    std::fs::set_permissions(&flaky, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (r, _) = run("spawn.fork_exec", &options(&flaky), &cfg);
    let err = r.expect_err("a child failing mid-run fails the benchmark");
    assert!(err.to_string().contains("exited with status 1"), "{err}");
    assert!(oscost::procfs::live_children().is_empty(), "children left after a mid-run failure");

    // A missing helper is an error naming its path.
    let missing = dir.path().join("no-such-helper");
    let (r, _) = run("spawn.fork_exec", &options(&missing), &cfg);
    assert!(r.unwrap_err().to_string().contains(&missing.display().to_string()));

    // Fork failing on the process limit (root is exempt from RLIMIT_NPROC).
    if sys::is_root() {
        eprintln!("skipping the RLIMIT_NPROC case: root is not bound by the process limit");
    } else {
        let before = sys::nproc_limit();
        sys::set_nproc_limit(1).unwrap();
        let (r, _) = run("spawn.fork_exit", &opts, &cfg);
        sys::set_nproc_limit(before.unwrap_or(u64::MAX)).unwrap();
        let err = r.expect_err("fork beyond the process limit fails");
        assert!(err.to_string().contains("Resource temporarily unavailable"), "{err}");
        assert!(oscost::procfs::live_children().is_empty());
    }
}
