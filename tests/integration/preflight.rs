//! The preflight on states the tests construct on this machine: an affinity that
//! narrows the run, a busy CPU, a cgroup CPU quota. Each trap is recorded in the run
//! and makes `--strict` refuse (exit 2, nothing measured); without the state, that
//! trap is absent. (Busy CPUs are not asserted absent: CI may load the other CPU.)

use crate::common;
use common::*;

use std::process::{Child, Command};

fn traps(doc: &serde_json::Value) -> Vec<String> {
    doc["machine"]["preflight"]
        .as_array()
        .map(|a| a.iter().map(|t| t["code"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn online_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// A measured run's JSON, oscost started through `prefix` (taskset …, sh -c …).
fn run_json(prefix: &[&str], db: &TempDb, extra: &[&str]) -> std::process::Output {
    let exe = env!("CARGO_BIN_EXE_oscost");
    let mut args: Vec<&str> = prefix.to_vec();
    args.extend([exe, "run", "syscall.getppid", "--quick", "--rounds", "1", "--json", "--db"]);
    args.push(db.path.to_str().unwrap());
    args.extend(extra);
    Command::new(args[0]).args(&args[1..]).output().unwrap()
}

#[test]
fn a_narrowed_affinity_is_named_and_refused_under_strict() {
    if online_cpus() < 2 || !have("taskset") {
        eprintln!("skipped a_narrowed_affinity_is_named_and_refused_under_strict: needs 2 CPUs and taskset");
        return;
    }
    let db = temp_db();
    let out = run_json(&["taskset", "-c", "0"], &db, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(traps(&json_of(&out)).contains(&"narrow_affinity".to_string()));
    let out = run_json(&[], &db, &[]);
    assert!(!traps(&json_of(&out)).contains(&"narrow_affinity".to_string()), "quiet without the affinity");
    let out = run_json(&["taskset", "-c", "0"], &db, &["--strict"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("may use CPU 0 of the"));
    assert_eq!(json_of(&run_ok(&["runs", "--json"], &db.path)).as_array().unwrap().len(), 2, "nothing stored");
}

/// A busy loop pinned to one CPU, killed and reaped when dropped.
struct BusyLoop(Child);

impl Drop for BusyLoop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_busy_cpu_is_named_and_refused_under_strict() {
    if online_cpus() < 2 || !have("taskset") {
        eprintln!("skipped a_busy_cpu_is_named_and_refused_under_strict: needs 2 CPUs and taskset");
        return;
    }
    let _busy = BusyLoop(Command::new("taskset").args(["-c", "1", "sh", "-c", "while :; do :; done"]).spawn().unwrap());
    std::thread::sleep(std::time::Duration::from_millis(100));
    let db = temp_db();
    let out = run_json(&[], &db, &["--strict"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("other work kept CPU") && err.contains("1 ("), "{err}");
    let out = run_json(&[], &db, &[]);
    assert!(out.status.success());
    assert!(traps(&json_of(&out)).contains(&"busy_cpu".to_string()));
}

/// A cgroup made for the test (cgroup v1's cpu hierarchy or v2), removed when dropped.
struct TestCgroup(std::path::PathBuf);

impl TestCgroup {
    fn with_quota() -> Option<Self> {
        let name = format!("oscost-test-{}", std::process::id());
        for (root, quota) in [
            ("/sys/fs/cgroup/cpu", vec![("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", "50000")]),
            ("/sys/fs/cgroup", vec![("cpu.max", "50000 100000")]),
        ] {
            let dir = std::path::Path::new(root).join(&name);
            if !std::path::Path::new(root).join("cgroup.procs").exists() || std::fs::create_dir(&dir).is_err() {
                continue;
            }
            let cg = TestCgroup(dir);
            if quota.iter().all(|(f, v)| std::fs::write(cg.0.join(f), v).is_ok()) {
                return Some(cg);
            }
        }
        None
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_cgroup_quota_is_named_and_refused_under_strict() {
    let Some(cg) = TestCgroup::with_quota() else {
        eprintln!(
            "skipped a_cgroup_quota_is_named_and_refused_under_strict: no writable cgroup cpu controller (needs root)"
        );
        return;
    };
    let db = temp_db();
    let enter = format!("echo $$ > {}/cgroup.procs && exec \"$@\"", cg.0.display());
    let out = run_json(&["sh", "-c", &enter, "sh"], &db, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = json_of(&out);
    assert!(traps(&doc).contains(&"cgroup_limit".to_string()), "{}", doc["machine"]);
    assert!(doc["machine"]["cgroup_limits"].as_str().unwrap().contains("cpu.max=50000 100000"));
    let out = run_json(&["sh", "-c", &enter, "sh"], &db, &["--strict"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CPU quota"));
    let out = run_json(&[], &db, &[]);
    assert!(!traps(&json_of(&out)).contains(&"cgroup_limit".to_string()), "quiet outside the quota");
}

/// An inherited nice value (`nice -n 19 oscost run`) is named and recorded, as an
/// inherited affinity is; started at nice 0 the trap is absent.
#[test]
fn an_inherited_nice_is_named_and_recorded() {
    if !have("nice") {
        eprintln!("skipped an_inherited_nice_is_named_and_recorded: needs nice(1)");
        return;
    }
    let db = temp_db();
    let out = run_json(&["nice", "-n", "19"], &db, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(traps(&json_of(&out)).contains(&"inherited_nice".to_string()), "{:?}", traps(&json_of(&out)));
    if oscost::sys::nice().ok() == Some(0) {
        let out = run_json(&[], &db, &[]);
        assert!(!traps(&json_of(&out)).contains(&"inherited_nice".to_string()), "quiet at nice 0");
    }
}
