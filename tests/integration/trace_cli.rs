//! The trace pass and `oscost trace`, against the real kernel. Recording the
//! scheduler's tracepoints needs root (or CAP_PERFMON): without it these tests check
//! that oscost says why and what to run instead, and skip the rest with a message.

use crate::common;

use common::*;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The tracefs mounts and instances now, to check nothing is left behind.
fn tracing_state() -> (Vec<String>, Vec<String>) {
    let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains("tracefs") || l.contains("debugfs"))
        .map(String::from)
        .collect();
    let instances = ["/sys/kernel/tracing/instances", "/sys/kernel/debug/tracing/instances"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path().display().to_string())
        .collect();
    (mounts, instances)
}

/// Whether this process may record the tracepoints; the reason when not.
fn tracing_allowed() -> Result<(), String> {
    oscost_trace_probe()
}

fn oscost_trace_probe() -> Result<(), String> {
    let db = temp_db();
    let out = oscost().args(["trace", "--for", "10ms", "--json", "--db"]).arg(&db.path).output().unwrap();
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
}

#[test]
fn a_same_cpu_pipe_ping_pong_traced_shows_its_hand_offs() {
    if let Err(why) = tracing_allowed() {
        eprintln!("skipped: the trace pass needs the sched tracepoints: {why}");
        return;
    }
    let before = tracing_state();
    let db = temp_db();
    let mark = new_mark();
    let out = oscost()
        .args(["run", "ctx.pipe", "--quick", "--rounds", "2", "--json", "--db"])
        .arg(&db.path)
        .env(MARK, &mark)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = json_of(&out);
    let row = rows(&doc, "ctx.pipe")
        .into_iter()
        .find(|r| r["method"] == "batch" && r["params"]["placement"] == "same_cpu" && r["params"]["mode"] == "thread")
        .expect("a same-CPU thread row");
    let t = &row["trace"];
    assert!(t.is_object(), "the row carries its trace pass: {row}");
    let ops = t["ops"].as_u64().unwrap();
    let switches = t["switch_outs"].as_u64().unwrap();
    assert!(ops >= 64, "{t}");
    assert!(switches as f64 >= 0.99 * ops as f64, "at least one switch per hand-off on one CPU: {t}");
    let handoffs = t["handoffs"].as_u64().unwrap();
    let direct = t["direct"].as_u64().unwrap();
    assert!(handoffs > 0 && direct <= handoffs, "{t}");
    let l = &t["wake_to_run"];
    assert!(l["n"].as_u64().unwrap() > 0 && l["p50"].as_f64().unwrap() <= l["p99"].as_f64().unwrap(), "{t}");
    assert!(l["p99"].as_f64().unwrap() <= l["max"].as_f64().unwrap(), "{t}");
    // The events' switch count and /proc's over the same window agree within 1%.
    let proc = t["proc_switches"].as_u64().expect("a /proc count") as f64;
    let outer = t["switch_outs_outer"].as_u64().unwrap() as f64;
    assert!(proc >= switches as f64 * 0.99 - 2.0 && proc <= outer * 1.01 + 2.0, "{t}");
    assert!(!has_flag(row, "trace_disagrees"), "{row}");
    assert!(t["lost"].is_u64(), "lost records are counted: {t}");
    assert!(t["traced_ns_per_op"].as_f64().unwrap() > 0.0);
    // Stored: `show -v` prints the trace table.
    let shown = run_ok(&["show", "latest", "-v"], &db.path);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("trace pass") && text.contains("wake→run"), "{text}");
    // Nothing left: no process of the run (their perf descriptors die with them), no
    // mount, no tracefs instance.
    assert_eq!(wait_unmarked(&mark), Vec::<u32>::new());
    assert_eq!(tracing_state(), before, "tracefs left as found");
}

#[test]
fn trace_run_queue_holds_the_yielders_of_a_storm() {
    if let Err(why) = tracing_allowed() {
        eprintln!("skipped: oscost trace needs the sched tracepoints: {why}");
        return;
    }
    let before = tracing_state();
    let mean_of = |extra: &[&str]| {
        let db = temp_db();
        let out = oscost().args(["trace", "--for", "1s", "--json", "--db"]).arg(&db.path).args(extra).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let doc = json_of(&out);
        assert_eq!(doc["run"]["kind"], "trace");
        let rq = rows(&doc, "trace.runqueue");
        assert_eq!(rq.len(), 1, "{doc}");
        assert!(rq[0]["counts"]["switches"].as_f64().unwrap() > 0.0);
        rq[0]["mean"].as_f64().unwrap()
    };
    // Four tasks that only yield, for longer than the bound (they are killed at it):
    // runnable from their start to the end, they are in the runnable set at nearly
    // every switch (most switches are theirs), whatever else the machine runs; other
    // work only adds to the count, so no idle figure is set beside it (a busy machine
    // can make an idle window read as long as a quiet storm).
    let storm = mean_of(&[
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4; do python3 -c 'import os\nwhile True: os.sched_yield()' & done; wait",
    ]);
    assert!(storm >= 3.0, "the four yielders are in the run queue at the storm's switches: mean {storm}");
    assert_eq!(tracing_state(), before, "tracefs left as found");
    // The storm's yielders were killed with their group at the bound.
    let left = std::process::Command::new("pgrep").args(["-f", "os.sched_yield"]).output().unwrap();
    assert!(left.stdout.is_empty(), "yielders left: {}", String::from_utf8_lossy(&left.stdout));
}

#[test]
fn without_privilege_trace_says_why_and_what_to_run() {
    let db = temp_db();
    let mut cmd = if is_root() {
        // As root, drop to nobody for this check (setpriv, util-linux).
        if std::process::Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("skipped: no setpriv to run oscost trace without privilege");
            return;
        }
        std::fs::set_permissions(db.dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_oscost")]);
        c
    } else {
        oscost()
    };
    let perms = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
    if perms.trim().parse::<i32>().is_ok_and(|p| p < 1) {
        eprintln!("skipped: perf_event_paranoid {} lets anyone trace", perms.trim());
        return;
    }
    let out = cmd.args(["trace", "--for", "100ms", "--db"]).arg(&db.path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("needs the scheduler's tracepoints") && err.contains("oscost observe"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
