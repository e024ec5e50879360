//! Runs under the limits users meet: a low task limit, the common `ulimit -n 1024` and
//! `ulimit -u 1000`, real-time policies, and option values that would measure nothing.
//! Each ends quickly with a clear message or completes; none hangs or leaves a task.
//!
//! RLIMIT_NPROC does not bind root, so as root these runs happen as `nobody` (uid
//! 65534) in a folder handed to it; as another user, as that user.

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use common::*;

const NOBODY: u32 = 65534;

/// A folder the user that runs `script` may write (handed to `nobody` under root).
fn shared_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    if oscost::sys::is_root() {
        std::os::unix::fs::chown(dir.path(), Some(NOBODY), Some(NOBODY)).expect("hand the folder to nobody");
    }
    dir
}

/// Runs `script` in bash (with `$OSCOST` set to the binary), as `nobody` under root;
/// fails the test, rather than hanging it, if the script outlives two minutes.
fn bash_as_user(script: &str) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).env("OSCOST", env!("CARGO_BIN_EXE_oscost")).env_remove("HOME");
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    if oscost::sys::is_root() {
        cmd.uid(NOBODY).gid(NOBODY);
    }
    let child = cmd.spawn().expect("run bash");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(HANG).is_err() {
        // The whole group: bash and what it started.
        let _ = Command::new("kill").arg("-9").arg(format!("-{pid}")).status();
        let _ = waiter.join();
        panic!("the script hung: {script}");
    }
    waiter.join().unwrap().expect("bash output")
}

/// Processes whose command line holds `text` (a test's unique temp path).
fn processes_naming(text: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(text) {
            found.push(pid);
        }
    }
    found
}

fn run_uid() -> u32 {
    if oscost::sys::is_root() { NOBODY } else { rustix::process::getuid().as_raw() }
}

#[test]
fn chat_under_a_low_task_limit_is_refused_and_leaves_nothing() {
    let uid = run_uid();
    let before = oscost::procfs::count_tasks_of(uid);
    // Room for what runs already, but not for a room of 80 threads.
    let limit = before + 60;
    let dir = shared_dir();
    let db = dir.path().join("r.db");
    let start = Instant::now();
    let out =
        bash_as_user(&format!("ulimit -u {limit} && exec \"$OSCOST\" run load.chat --quick --db '{}'", db.display()));
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("load.chat") && err.contains("RLIMIT_NPROC"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    eprintln!("refused in {took:?}");
    assert!(processes_naming(&db.to_string_lossy()).is_empty(), "no process of the run is left");
}

#[test]
fn the_default_suite_runs_under_common_descriptor_and_task_limits() {
    let dir = shared_dir();
    let db = dir.path().join("r.db");
    let out = bash_as_user(&format!(
        "ulimit -n 1024 && ulimit -u 1000 && \"$OSCOST\" run syscall.getppid --quick --db '{0}' >/dev/null && exec \"$OSCOST\" run --quick --json --db '{0}'",
        db.display()
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["run"]["status"], "complete");
    assert!(!rows(&doc, "syscall.getppid").is_empty());
    assert!(!rows(&doc, "ctx.pipe").is_empty(), "the default suite ran in full: {err}");
}

#[test]
fn a_fifo_wakeup_run_completes_within_its_own_bounds() {
    if oscost::sys::set_policy(libc::SCHED_FIFO, 1).is_err() {
        eprintln!("skipping the SCHED_FIFO load.wakeup run: real-time policy not permitted here");
        return;
    }
    oscost::sys::set_policy(libc::SCHED_OTHER, 0).expect("back to SCHED_OTHER");
    let db = temp_db();
    let out = oscost()
        .args(["run", "load.wakeup", "load.fairness", "--policy", "fifo", "--quick", "--json", "--db"])
        .arg(&db.path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "neither SIGXCPU nor SIGKILL: {:?} {err}", out.status);
    let doc = json_of(&out);
    assert_eq!(doc["run"]["status"], "complete");
    let wake = rows(&doc, "load.wakeup");
    assert_eq!(wake.len(), 5, "every hog count and nice level");
    assert!(wake.iter().all(|r| r["params"]["policy"] == "fifo"));
    assert_eq!(rows(&doc, "load.fairness").len(), 4);
}

#[test]
fn options_that_would_measure_nothing_are_refused_before_anything_runs() {
    let db = temp_db();
    let cases: [(&[&str], &str); 6] = [
        (&["load.runqueue", "--tasks", "0"], "--tasks"),
        (&["load.runqueue", "--tasks", "0,1"], "--tasks"),
        (&["load.yield_storm", "--storm-tasks", "0"], "--storm-tasks"),
        (&["ctx.footprint", "--sizes="], "--sizes"),
        (&["spawn.fork_mem", "--parent-mem="], "--parent-mem"),
        (&["load.runqueue", "--tasks", "9223372036854775808"], "--tasks"),
    ];
    for (args, flag) in cases {
        let out = oscost().arg("run").args(args).arg("--quick").arg("--db").arg(&db.path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag) && !err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(!db.path.exists(), "nothing was started, so no database either");
}

#[test]
fn a_database_in_a_folder_the_reader_cannot_write_is_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    run_ok(&["run", "syscall.getppid", "--quick"], &db);
    // Readable by all, writable by none of the readers (as root, the reader is nobody).
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let script = format!(
        "\"$OSCOST\" show --db '{0}' && \"$OSCOST\" runs --db '{0}' && \"$OSCOST\" export --db '{0}' >/dev/null",
        db.display()
    );
    let out = bash_as_user(&script);
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("syscall.getppid"));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("r.db")], "reading created nothing");
}
