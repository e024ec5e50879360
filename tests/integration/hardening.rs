//! The hardening pass: each test reproduces one defect's scenario and checks it is
//! closed. Tests that need root to act as another user say what they skip otherwise.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::*;

const NOBODY: u32 = 65534;

/// The pids the next processes will most likely get: the last one handed out and the
/// few thousand after it.
fn next_pids(count: u32) -> impl Iterator<Item = u32> {
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1000);
    let max: u32 =
        std::fs::read_to_string("/proc/sys/kernel/pid_max").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(32768);
    (0..count).map(move |i| 300 + (last + i) % (max - 300))
}

/// A symlink at `at` pointing to `to`, owned by `nobody` as another user's would be.
fn plant_link(to: &Path, at: &Path) {
    let _ = std::os::unix::fs::symlink(to, at);
    std::os::unix::fs::lchown(at, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// Defect 1: root wrote through another user's symlink (the open/stat target file, the
/// export's temporary, the rescue file). Another user (`nobody`) fills a sticky,
/// world-writable TMPDIR and the export's folder with links, named as every earlier
/// oscost named its files for the next few thousand pids, all aimed at a root-only
/// file; a run of the file probes and an export must leave that file as it was.
#[test]
fn symlink_farm_in_a_sticky_tmpdir_changes_no_file() {
    if !oscost::sys::is_root() {
        eprintln!("skipped: symlink_farm_in_a_sticky_tmpdir_changes_no_file needs root (it plants links as nobody)");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let victim = base.path().join("victim");
    std::fs::write(&victim, b"root's secret\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Sticky and world-writable, like /tmp. Where fs.protected_symlinks is 1 the kernel
    // itself refuses such links in a sticky folder, so the folder is made non-sticky
    // there: the test must be able to fail on a writer that follows links.
    let protected = std::fs::read_to_string("/proc/sys/fs/protected_symlinks").is_ok_and(|s| s.trim() != "0");
    let tmp = base.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(if protected { 0o777 } else { 0o1777 })).unwrap();
    let db_dir = base.path().join("db");
    std::fs::create_dir(&db_dir).unwrap();
    let db = db_dir.join("results.db");

    let mut planted: Vec<PathBuf> = Vec::new();
    for pid in next_pids(3000) {
        for name in [
            format!("oscost-target-{pid}"),
            format!(".out.json.tmp.{pid}"),
            format!("results.db.unsaved-run1-{pid}.json"),
        ] {
            let at = tmp.join(name);
            plant_link(&victim, &at);
            planted.push(at);
        }
    }

    let out = oscost()
        .env("TMPDIR", &tmp)
        .args(["run", "syscall.open_close", "syscall.stat", "--rounds", "2", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = json_of(&out);
    assert!(!rows(&doc, "syscall.open_close").is_empty(), "{doc}");
    assert!(!rows(&doc, "syscall.stat").is_empty(), "{doc}");
    let exported = tmp.join("out.json");
    let out = oscost()
        .env("TMPDIR", &tmp)
        .args(["export", "latest", "--format", "json", "-o"])
        .arg(&exported)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    assert_eq!(std::fs::read(&victim).unwrap(), b"root's secret\n", "root wrote through a planted link");
    assert_eq!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&exported).unwrap().contains("syscall.stat"));
    // Every planted link is still a link: none was replaced, truncated or followed, and
    // the probes' scratch folder is gone.
    for p in &planted {
        assert!(std::fs::symlink_metadata(p).unwrap().file_type().is_symlink(), "{}", p.display());
    }
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_type().unwrap().is_symlink() && e.path() != exported)
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "oscost left files in TMPDIR: {left:?}");
}

/// `oscost runs` with the default database: HOME as given, XDG_DATA_HOME as given or unset.
fn runs_with_default_db(home: &Path, xdg: Option<&str>, cwd: &Path) -> std::process::Output {
    let mut c = oscost();
    c.current_dir(cwd).env("HOME", home).env_remove("OSCOST_DB").arg("runs");
    match xdg {
        Some(x) => c.env("XDG_DATA_HOME", x),
        None => c.env_remove("XDG_DATA_HOME"),
    };
    c.output().unwrap()
}

/// Defect 1, the default folder: root with another user's HOME (as `sudo` keeps it)
/// must not follow a link planted at `~/.local/share/oscost`, nor use a folder that
/// user owns; a relative XDG_DATA_HOME is ignored (the XDG specification).
#[test]
fn default_folder_planted_as_a_link_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".local/share")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), home.path().join(".local/share/oscost")).unwrap();
    let out = runs_with_default_db(home.path(), None, home.path());
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("symbolic link") && err.contains("--db"), "{err}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0, "something was written through the link");

    // A relative XDG_DATA_HOME falls back to HOME's folder, created 0700.
    let home2 = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = runs_with_default_db(home2.path(), Some("relative/data"), cwd.path());
    assert!(out.status.success() || out.status.code() == Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!cwd.path().join("relative").exists(), "a relative XDG_DATA_HOME was used");
    let dir = home2.path().join(".local/share/oscost");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);

    if oscost::sys::is_root() {
        // Root with a HOME whose folders belong to another user: refused.
        let home3 = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home3.path().join(".local/share")).unwrap();
        for p in [home3.path().join(".local"), home3.path().join(".local/share")] {
            std::os::unix::fs::chown(&p, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        let out = runs_with_default_db(home3.path(), None, home3.path());
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("belongs to uid 65534"));
    } else {
        eprintln!("skipped: the foreign-owned HOME case of default_folder_planted_as_a_link_is_refused needs root");
    }
}

/// Defect 2: children armed their death signal after fork and never checked that their
/// parent was still there, so a kill -9 of the coordinator while a worker started
/// 1024 tasks left some of them running (real-time ones spinning for minutes). Ten
/// times, at different moments of the group's start, the coordinator is killed: no
/// task of the run may be left 2 s later. As root the tasks run SCHED_FIFO, as in the
/// report.
#[test]
fn kill_9_of_the_coordinator_during_a_group_start_leaves_no_task() {
    let policy: &[&str] = if oscost::sys::is_root() { &["--policy", "fifo"] } else { &[] };
    if policy.is_empty() {
        eprintln!(
            "note: kill_9_of_the_coordinator_during_a_group_start_leaves_no_task runs SCHED_OTHER tasks (SCHED_FIFO needs root)"
        );
    }
    for trial in 0..10u64 {
        let db = temp_db();
        let mark = new_mark();
        let args = [&["run", "load.runqueue", "--tasks", "1024", "--rounds", "1", "--no-trace"], policy].concat();
        let mut child = spawn_marked(&args, &db.path, &mark);
        // Wait for the group to be starting (some of its tasks exist), then a little
        // more, different each trial.
        wait_marked(&mark, 20, &mut child);
        std::thread::sleep(std::time::Duration::from_millis(trial * 40));
        let _ = child.kill();
        let _ = child.wait();
        let deadline = std::time::Instant::now() + HANG;
        let mut left = marked(&mark);
        while !left.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            left = marked(&mark);
        }
        if !left.is_empty() {
            // Clean up before failing, so one failure does not leave spinners behind.
            for pid in &left {
                let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
        assert!(left.is_empty(), "trial {trial}: {} tasks of the run outlived the coordinator", left.len());
    }
}

/// Defect 3: when one benchmark's rows could not be stored, the run left its round
/// loop and never stored the others' finished rounds, and the rescue file carried the
/// run's UUID, so importing it back added nothing. The database sits on a small tmpfs
/// (in a mount namespace of the test's own, gone with it; its root of mode 0700, a
/// folder of the user's as a database needs) that fills mid-run: every
/// benchmark of the family is then either stored or in the rescue file, and the rescue
/// file imports into the same database as a run of its own.
#[test]
fn disk_full_mid_run_loses_no_finished_round_and_the_rescue_file_imports_back() {
    if !oscost::sys::is_root() {
        eprintln!(
            "skipped: disk_full_mid_run_loses_no_finished_round_and_the_rescue_file_imports_back needs root (a small tmpfs in a mount namespace of its own)"
        );
        return;
    }
    let exe = env!("CARGO_BIN_EXE_oscost");
    let family = benchmark_ids("syscall.");
    let mut mid_run = false;
    for size in ["240k", "320k", "400k", "480k"] {
        let dir = tempfile::tempdir().unwrap();
        let (full, out, tmp) = (dir.path().join("full"), dir.path().join("out"), dir.path().join("tmp"));
        for d in [&full, &out, &tmp] {
            std::fs::create_dir(d).unwrap();
        }
        let db = full.join("results.db");
        let script = format!(
            "mount -t tmpfs -o size={size},mode=0700 tmpfs '{f}' && '{exe}' run syscall --rounds 2 --quick --db '{db}'; s=$?; cp -a '{f}/.' '{o}/'; exit $s",
            f = full.display(),
            db = db.display(),
            o = out.display()
        );
        let run = std::process::Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr).into_owned();
        let Some(saved) = err.split("saved to ").nth(1).and_then(|s| s.split(" (oscost import").next()) else {
            continue; // the database fitted, or did not even start: another size
        };
        let copied = out.join("results.db");
        let stored = json_of(&run_ok(&["show", "latest", "--json"], &copied));
        let stored_ids: std::collections::BTreeSet<String> = stored["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["benchmark"].as_str().unwrap().to_string())
            .collect();
        if stored_ids.is_empty() {
            continue; // full before the first benchmark: not mid-run
        }
        mid_run = true;
        assert_eq!(run.status.code(), Some(1), "{err}");
        let rescued: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
        let rescued_ids: std::collections::BTreeSet<String> = rescued["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["benchmark"].as_str().unwrap().to_string())
            .collect();
        let all: std::collections::BTreeSet<String> = stored_ids.union(&rescued_ids).cloned().collect();
        assert_eq!(all, family, "size {size}: stored {stored_ids:?}, rescued {rescued_ids:?}\n{err}");
        let imported = run_ok(&["import", saved], &copied);
        assert!(String::from_utf8_lossy(&imported.stdout).contains("imported 1 run"), "{imported:?}");
        break;
    }
    assert!(mid_run, "no tmpfs size made the database fill mid-run");
}

/// Defect 7, `--noop`: the helper was opened blocking, so a FIFO named there (or planted
/// where a user points it) hung oscost for ever, even with no exec benchmark selected.
/// It is opened non-blocking and refused as not a regular file; the run goes on.
#[test]
fn a_fifo_given_as_the_noop_helper_hangs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("noop");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let db = dir.path().join("r.db");
    let mut child = oscost()
        .args(["run", "syscall.getppid", "--quick", "--rounds", "1", "--noop"])
        .arg(&fifo)
        .arg("--db")
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + HANG;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("oscost hung opening a FIFO given as --noop");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(status.success(), "no exec benchmark was selected: the run completes");
    // With an exec benchmark selected, the refused helper stops the run up front
    // (exit 2), instead of failing that benchmark once it runs.
    let out = oscost()
        .args(["run", "spawn.fork_exec", "--quick", "--rounds", "1", "--noop"])
        .arg(&fifo)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--noop") && err.contains("regular file"), "{err}");
}

/// Defect 7, `ulimit -v`: a low address-space limit aborted the coordinator on a
/// failed allocation and lost every round not yet stored. It is refused up front.
#[test]
fn an_address_space_limit_too_low_to_run_is_refused_up_front() {
    let db = temp_db();
    let script = format!(
        "ulimit -v 20000 && exec '{}' run syscall.getppid --quick --rounds 1 --db '{}'",
        env!("CARGO_BIN_EXE_oscost"),
        db.path.display()
    );
    let out = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ulimit -v") && err.contains("19 MiB"), "{err}");
    assert!(!db.path.exists(), "nothing was created");
}

/// Defect 7, `observe --for`: no upper bound, while its samples stay in memory.
#[test]
fn observe_for_longer_than_ten_minutes_is_refused() {
    let db = temp_db();
    let out = oscost().args(["observe", "--for", "11m", "--db"]).arg(&db.path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 10 minutes"));
}

/// Defect 7: `--policy fifo` in a cgroup whose real-time budget is 0 was blamed on
/// privilege, as root. A fresh v1 cpu cgroup has `cpu.rt_runtime_us` 0: a run moved
/// into one is refused up front (exit 2), naming the budget and its file.
#[test]
fn fifo_under_a_zero_real_time_budget_names_the_budget() {
    let cpu = Path::new("/sys/fs/cgroup/cpu");
    if !oscost::sys::is_root() || !cpu.join("cpu.rt_runtime_us").exists() {
        eprintln!(
            "skipped: fifo_under_a_zero_real_time_budget_names_the_budget needs root and a v1 cpu cgroup with real-time group scheduling"
        );
        return;
    }
    let group = cpu.join(format!("oscost-test-rt-{}", std::process::id()));
    std::fs::create_dir(&group).unwrap();
    std::fs::write(group.join("cpu.rt_runtime_us"), "0").unwrap();
    let db = temp_db();
    let script = format!(
        "echo $$ > '{}/tasks' && exec '{}' run syscall.getppid --policy fifo --quick --rounds 1 --db '{}'",
        group.display(),
        env!("CARGO_BIN_EXE_oscost"),
        db.path.display()
    );
    let out = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
    // The shell and oscost have exited: the group is empty and goes.
    std::fs::remove_dir(&group).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("real-time budget is 0") && err.contains(&group.display().to_string()), "{err}");
    assert!(!err.contains("need root"), "blamed on privilege: {err}");
}

/// Defect 7, `report -o`: a write that fails part-way (a full disk) left a truncated
/// report. The report is written beside its name and renamed over it, so a failure
/// leaves the old file whole and no temporary behind. A file-size limit makes the
/// write fail part-way, as a full disk would, without root.
#[test]
fn a_report_that_cannot_be_written_whole_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    run_ok(&["sim", "--policy", "o1", "--workload", "travis", "--no-sensitivity", "--tasks", "2"], &db);
    let out = dir.path().join("report.html");
    std::fs::write(&out, "the old report").unwrap();
    let script = format!(
        "ulimit -f 8 && exec '{}' report -o '{}' --db '{}'",
        env!("CARGO_BIN_EXE_oscost"),
        out.display(),
        db.display()
    );
    let status = std::process::Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(!status.status.success(), "a 4 KB limit let the report through: {status:?}");
    let err = String::from_utf8_lossy(&status.stderr);
    assert!(err.contains("writing") && err.contains("report.html"), "it failed writing the report: {err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "the old report");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "a temporary was left: {names:?}");
}
