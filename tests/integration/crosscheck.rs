//! `oscost crosscheck` end to end on stub anchors: shell scripts on PATH that print what
//! perf, hackbench, cyclictest and hyperfine really print, with known figures, so the
//! conversions can be checked exactly. oscost's side is measured for real; nothing here
//! asserts agreement or any timing, only structure and the anchors' converted figures.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::oscost;

fn stub(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// perf 6.1's output with 5.000000 usecs/op for a process round trip, 4.000000 for a
/// thread one, and 0.166000 usecs/op for a glibc getppid.
const PERF: &str = r#"case "$*" in
  --version) echo "perf version 6.1.stub" ;;
  "bench sched pipe -T -l "*)
    printf '# Running %s benchmark:\n# Executed 20000 pipe operations between two threads\n\n     Total time: 0.080 [sec]\n\n       4.000000 usecs/op\n         250000 ops/sec\n' "'sched/pipe'" ;;
  "bench sched pipe -l "*)
    printf '# Running %s benchmark:\n# Executed 20000 pipe operations between two processes\n\n     Total time: 0.100 [sec]\n\n       5.000000 usecs/op\n         200000 ops/sec\n' "'sched/pipe'" ;;
  "bench syscall basic -l "*)
    printf '# Running %s benchmark:\n# Executed 200000 getppid() calls\n     Total time: 0.033 [sec]\n\n       0.166000 usecs/op\n        6024096 ops/sec\n' "'syscall/basic'" ;;
  *) echo "unexpected arguments: $*" >&2; exit 129 ;;
esac
"#;

const HACKBENCH: &str = r#"echo "Running in process mode with 2 groups using 40 file descriptors each (== 80 tasks)"
echo "Each sender will pass 100 messages of 100 bytes"
echo "Time: 0.250"
"#;

const CYCLICTEST: &str = r#"echo "T: 0 ( 7455) P: 0 I:1000 C:    200 Min:  67808 Act:   84393 Avg:   98462 Max: 3495957"
"#;

/// Writes hyperfine's export with a median of 0.0005 s to the file after --export-json.
const HYPERFINE: &str = r#"out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--export-json" ]; then out="$2"; fi
  shift
done
[ -n "$out" ] || { echo "no --export-json" >&2; exit 1; }
printf '{"results": [{"command": "x", "mean": 0.0006, "stddev": 0.0001, "median": 0.0005, "min": 0.0004, "max": 0.0009, "times": [0.0005, 0.0005], "exit_codes": [0, 0]}]}\n' > "$out"
"#;

fn stubs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    stub(dir.path(), "perf", PERF);
    stub(dir.path(), "hackbench", HACKBENCH);
    stub(dir.path(), "cyclictest", CYCLICTEST);
    stub(dir.path(), "hyperfine", HYPERFINE);
    dir
}

fn crosscheck(path: &Path, args: &[&str]) -> std::process::Output {
    oscost().arg("crosscheck").args(args).env("PATH", path).output().expect("run oscost")
}

fn entry<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["anchors"].as_array().unwrap().iter().find(|e| e["anchor"] == name).unwrap_or_else(|| panic!("{name}: {doc}"))
}

/// Every pair's anchor figure is `expected`, the summary too, and oscost's side has a
/// positive figure for each pair.
fn assert_compared(doc: &serde_json::Value, name: &str, expected: f64) {
    let e = entry(doc, name);
    assert_eq!(e["status"], "compared", "{e}");
    let pairs = e["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{e}");
    for p in pairs {
        assert_eq!(p["anchor"].as_f64().unwrap(), expected, "{e}");
        assert!(p["oscost"].as_f64().unwrap() > 0.0, "{e}");
    }
    assert!((e["anchor_figure"].as_f64().unwrap() / expected - 1.0).abs() < 1e-12, "{e}");
    let r = &e["ratio"];
    assert!(r["low"].as_f64().unwrap() <= r["ratio"].as_f64().unwrap(), "{e}");
    assert!(r["ratio"].as_f64().unwrap() <= r["high"].as_f64().unwrap(), "{e}");
    assert!(!e["note"].as_str().unwrap().is_empty(), "{e}");
}

#[test]
fn stub_anchors_are_converted_exactly_and_set_beside_oscost() {
    let dir = stubs();
    let anchors = ["perf-pipe", "perf-pipe-threads", "perf-syscall", "hackbench", "cyclictest", "hyperfine"];
    let mut args = vec!["--quick", "--pairs", "2", "--json"];
    args.extend(anchors);
    let out = crosscheck(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}\n{}", out.status, String::from_utf8_lossy(&out.stdout));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["pairs"], 2);
    assert_eq!(doc["anchors"].as_array().unwrap().len(), anchors.len());

    // A perf round trip is two hand-offs: 5 µs/op is 2500 ns per hand-off.
    assert_compared(&doc, "perf-pipe", 2500.0);
    assert_compared(&doc, "perf-pipe-threads", 2000.0);
    let pipe = entry(&doc, "perf-pipe");
    assert_eq!(pipe["unit"], "ns/hand-off");
    assert_eq!(pipe["oscost_row"], "ctx.pipe mode=process placement=same_cpu");
    assert_eq!(entry(&doc, "perf-pipe-threads")["oscost_row"], "ctx.pipe mode=thread placement=same_cpu");
    let command = pipe["command"].as_str().unwrap();
    assert!(command.starts_with("perf bench sched pipe -l 20000 [CPU "), "{command}");
    // The gap perf's C library calls make is named with oscost's own figure of it.
    assert_eq!(pipe["gaps"][0]["what"], "glibc read+write", "{pipe}");
    assert!(pipe["gaps"][0]["figure"].as_f64().unwrap().is_finite(), "{pipe}");
    // perf times its whole loop; oscost's figure is a median, its row's mean beside it.
    assert_eq!(pipe["gaps"][1]["what"], "whole-loop time", "{pipe}");
    assert!(pipe["rest"]["ratio"].as_f64().unwrap() > 0.0, "{pipe}");

    // perf bench syscall basic times glibc's syscall(): µs/op × 1000, beside the raw
    // row plus the wrapper oscost measures.
    assert_compared(&doc, "perf-syscall", 166.0);
    let syscall = entry(&doc, "perf-syscall");
    assert_eq!(syscall["oscost_row"], "syscall.getppid");
    assert_eq!(syscall["gaps"][0]["what"], "glibc syscall()");

    // hackbench: 2 groups × 20 senders × 20 receivers × 100 messages in 0.25 s.
    let hb = entry(&doc, "hackbench");
    assert_eq!(hb["status"], "no_equivalent", "{hb}");
    assert_eq!(hb["figures"][0].as_f64().unwrap(), 320_000.0);
    assert!(hb["note"].as_str().unwrap().contains("load.chat"), "{hb}");

    assert_compared(&doc, "cyclictest", 98462.0);
    assert_eq!(entry(&doc, "cyclictest")["oscost_row"], "load.wakeup hogs=0");
    assert_compared(&doc, "hyperfine", 0.0005 * 1e9);
    let hf = entry(&doc, "hyperfine");
    assert_eq!(hf["oscost_row"], "spawn.posix_spawn phase=full_cycle");
    assert!(hf["command"].as_str().unwrap().contains("-N --runs 30"), "{hf}");
    assert!(hf["command"].as_str().unwrap().contains("oscost-noop"), "{hf}");
}

#[test]
fn lines_fit_and_a_missing_anchor_is_named_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    stub(dir.path(), "perf", PERF);
    let out = crosscheck(dir.path(), &["--quick", "--pairs", "2", "perf-syscall", "hackbench"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}: {}\n{text}", out.status, String::from_utf8_lossy(&out.stderr));
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "wider than 100 columns: {line}");
    }
    let line = text.lines().find(|l| l.starts_with("perf-syscall")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("166.0 ns"), "{line}");
    assert!(line.contains(" x"), "a ratio: {line}");
    assert!(text.contains("    ran: perf bench syscall basic -l 200000"), "{text}");
    let skipped = text.lines().find(|l| l.starts_with("hackbench")).unwrap_or_else(|| panic!("{text}"));
    assert!(skipped.contains("skipped: hackbench is not installed"), "{skipped}");
}

#[test]
fn a_failing_or_garbled_anchor_is_reported_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    stub(
        dir.path(),
        "perf",
        r#"case "$*" in
  --version) echo "perf version 6.1.stub" ;;
  "bench sched pipe"*) echo "perf: no pipes today" >&2; exit 3 ;;
  *) echo "nothing to read here" ;;
esac
"#,
    );
    let out = crosscheck(dir.path(), &["--quick", "--pairs", "2", "--json", "perf-pipe", "perf-syscall"]);
    assert_eq!(out.status.code(), Some(1), "an anchor failed: {}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pipe = entry(&doc, "perf-pipe");
    assert_eq!(pipe["status"], "failed");
    assert!(pipe["why"].as_str().unwrap().contains("perf: no pipes today"), "{pipe}");
    let syscall = entry(&doc, "perf-syscall");
    assert_eq!(syscall["status"], "failed");
    assert!(syscall["why"].as_str().unwrap().contains("usecs/op"), "{syscall}");
}

#[test]
fn bad_input_is_refused_with_exit_2() {
    let out = oscost().args(["crosscheck", "perf"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown anchor `perf`"));
    let out = oscost().args(["crosscheck", "--pairs", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The raw loop oscost builds runs as an anchor (where it is built: x86_64).
#[test]
fn the_raw_loop_runs_beside_oscost() {
    let out = oscost()
        .args(["crosscheck", "--quick", "--pairs", "2", "--json", "raw-getppid", "raw-enosys", "raw-pipe"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for name in ["raw-getppid", "raw-enosys", "raw-pipe"] {
        let e = entry(&doc, name);
        if !cfg!(target_arch = "x86_64") {
            assert_eq!(e["status"], "skipped", "{e}");
            continue;
        }
        assert_eq!(e["status"], "compared", "{e}");
        for p in e["pairs"].as_array().unwrap() {
            assert!(p["anchor"].as_f64().unwrap() > 0.0 && p["oscost"].as_f64().unwrap() > 0.0, "{e}");
        }
    }
    assert!(entry(&doc, "raw-pipe")["command"].as_str().unwrap().starts_with("oscost-rawloop pipe 20000 [CPU "));
}

/// Every anchor installed here (CI installs perf, rt-tests and hyperfine) runs end to
/// end: each is compared, set apart as having no equivalent, or skipped as not
/// installed, never failed; the figures are positive and in their comparison's unit.
#[test]
fn every_installed_anchor_runs_end_to_end() {
    let out = oscost().args(["crosscheck", "--quick", "--pairs", "2", "--json"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}: {}\n{stdout}", out.status, String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let units = [
        ("perf-pipe", "ns/hand-off"),
        ("perf-pipe-threads", "ns/hand-off"),
        ("perf-syscall", "ns/call"),
        ("hackbench", "messages/s"),
        ("cyclictest", "ns late"),
        ("hyperfine", "ns/exec"),
        ("raw-getppid", "ns/call"),
        ("raw-enosys", "ns/call"),
        ("raw-pipe", "ns/hand-off"),
    ];
    assert_eq!(doc["anchors"].as_array().unwrap().len(), units.len(), "{doc}");
    for (name, unit) in units {
        let e = entry(&doc, name);
        assert_eq!(e["unit"], unit, "{e}");
        match e["status"].as_str().unwrap() {
            "compared" => {
                assert!(e["anchor_figure"].as_f64().unwrap() > 0.0, "{e}");
                assert!(e["oscost_figure"].as_f64().unwrap() > 0.0, "{e}");
                assert_eq!(e["pairs"].as_array().unwrap().len(), 2, "{e}");
            }
            "no_equivalent" => assert!(e["anchor_figure"].as_f64().unwrap() > 0.0, "{e}"),
            "skipped" => println!("skipped: {name}: {}", e["why"]),
            other => panic!("{name} {other}: {e}"),
        }
    }
}

/// Whether process `pid` is gone (or a zombie its new parent has yet to reap).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Starts a crosscheck whose perf hangs, and returns it with the hanging anchor's pid.
fn hanging_anchor(dir: &Path) -> (std::process::Child, u32) {
    let pidfile = dir.join("anchor.pid");
    stub(
        dir,
        "perf",
        &format!(
            "case \"$*\" in\n  --version) echo \"perf version 6.1.stub\" ;;\n  *) echo $$ > {}; exec sleep 1000 ;;\nesac\n",
            pidfile.display()
        ),
    );
    let mut child = oscost()
        .args(["crosscheck", "--quick", "--pairs", "2", "perf-syscall"])
        // The stub first; sleep from the system's folders.
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Liveness, not speed: the anchor starts within a generous bound.
    for _ in 0..400 {
        if let Some(pid) = std::fs::read_to_string(&pidfile).ok().and_then(|s| s.trim().parse().ok()) {
            return (child, pid);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the stub anchor never started");
}

fn wait_gone(pid: u32) {
    for _ in 0..400 {
        if gone(pid) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the anchor {pid} outlived oscost");
}

/// An anchor never outlives oscost: Ctrl-C ends it and the run (exit 130), and so does
/// kill -9 of oscost itself (the anchor dies with the thread that started it).
#[test]
fn an_anchor_dies_with_oscost() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pid) = hanging_anchor(dir.path());
    assert!(!gone(pid));
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::INT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    wait_gone(pid);

    let dir = tempfile::tempdir().unwrap();
    let (mut child, pid) = hanging_anchor(dir.path());
    child.kill().unwrap();
    child.wait().unwrap();
    wait_gone(pid);
}
