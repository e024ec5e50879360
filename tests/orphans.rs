//! Hardening, third pass, defect 3 and part of 8: what a coordinator killed with
//! SIGKILL leaves. Under `seccomp:notify`, children a worker forked kept a copy of the
//! listener and waited for ever for an answer; nothing ended them later, and scratch
//! folders of killed runs stayed in the temp folder for good.

mod common;

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use oscost::leftovers::GroupMarker;
use oscost::store::Owner;

/// Trials of the kill -9 test: `OSCOST_ORPHAN_TRIALS`, 3 unless set (20 by hand).
fn trials() -> usize {
    std::env::var("OSCOST_ORPHAN_TRIALS").ok().and_then(|t| t.parse().ok()).unwrap_or(3)
}

fn notify_available() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
        .is_ok_and(|a| a.split_whitespace().any(|w| w == "user_notif"))
}

#[test]
fn kill_9_under_seccomp_notify_leaves_no_task_of_the_run() {
    if !notify_available() {
        eprintln!("skipped: kill_9_under_seccomp_notify_leaves_no_task_of_the_run needs seccomp user notification");
        return;
    }
    let db = temp_db();
    let mut left = Vec::new();
    for trial in 0..trials() {
        let mark = new_mark();
        let mut child = oscost()
            .args(["run", "spawn.fork_exit", "--condition", "seccomp:notify", "--quick", "--db"])
            .arg(&db.path)
            .env(MARK, &mark)
            .env("TMPDIR", db.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start oscost");
        // Once a worker runs (the coordinator and a worker are two marked processes),
        // at a moment that moves from trial to trial while it forks.
        wait_marked(&mark, 2, &mut child);
        std::thread::sleep(Duration::from_millis(300 + 397 * trial as u64 % 1200));
        child.kill().unwrap();
        child.wait().unwrap();
        let still = wait_unmarked(&mark);
        if !still.is_empty() {
            left.push((trial, still.clone()));
            for pid in still {
                oscost::sys::kill_hard(pid as i32);
            }
        }
    }
    assert!(left.is_empty(), "tasks of the run outlived it (trial, pids): {left:?}");
}

/// A process in a process group of its own, as a worker's is.
fn spawn_group_leader(mark: &str) -> Child {
    Command::new("sleep").arg("600").env(MARK, mark).process_group(0).spawn().expect("start sleep")
}

/// Waits for `child` to end (up to [`HANG`]); how it ended, if it did.
fn ended_within(child: &mut Child) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < HANG {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A scratch folder named as `files::private_dir` names them, created by `pid`.
fn scratch(dir: &std::path::Path, kind: &str, (pid, start): (i32, u64), mode: u32) -> std::path::PathBuf {
    let path = dir.join(format!("{kind}{pid}.{start}-Xq3vZ9"));
    std::fs::DirBuilder::new().mode(0o700).create(&path).unwrap();
    std::fs::write(path.join("target"), b"oscost\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn a_later_run_ends_the_groups_and_removes_the_scratch_folders_a_killed_run_left() {
    let db = temp_db();
    let temp = tempfile::tempdir().unwrap();
    // A coordinator that is gone: a process that ran and was reaped.
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let me = Owner::current().expect("/proc says who this process is");
    let dead = Owner { pid: gone.id() as i32, start_ticks: 1, ..me.clone() };
    let mark = new_mark();
    let (mut orphan, mut kept) = (spawn_group_leader(&mark), spawn_group_leader(&mark));
    let orphan_marker = GroupMarker::record_in(temp.path(), &dead, orphan.id() as i32).unwrap().leave();
    let kept_marker = GroupMarker::record_in(temp.path(), &me, kept.id() as i32).unwrap().leave();
    let dead_creator = (dead.pid, 12345);
    let mine = (me.pid, me.start_ticks);
    let left = scratch(temp.path(), "oscost-target-", dead_creator, 0o700);
    let in_use = scratch(temp.path(), "oscost-journal-", mine, 0o700);
    let rescue = scratch(temp.path(), "oscost-rescue-", dead_creator, 0o700);
    let open = scratch(temp.path(), "oscost-read-", dead_creator, 0o755);
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("precious"), b"x").unwrap();
    let link = temp.path().join(format!("oscost-target-{}.{}-Lnk0001", dead_creator.0, dead_creator.1));
    std::os::unix::fs::symlink(elsewhere.path(), &link).unwrap();

    let out = oscost()
        .args(["run", "syscall.getppid", "--quick", "--rounds", "1", "--db"])
        .arg(&db.path)
        .env("TMPDIR", temp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");

    let status = ended_within(&mut orphan);
    assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGKILL), "the orphan group was ended: {err}");
    assert!(err.contains("ended 1 process(es) left running by an oscost that was killed"), "{err}");
    assert!(!orphan_marker.exists(), "its marker is gone");
    assert!(kept.try_wait().unwrap().is_none(), "a group of a live coordinator is left alone");
    assert!(kept_marker.exists());
    kept.kill().unwrap();
    kept.wait().unwrap();

    assert!(!left.exists(), "the scratch folder of a dead run is removed: {err}");
    for (path, why) in
        [(&in_use, "its creator runs"), (&rescue, "a rescue folder is kept for the user"), (&open, "not mode 0700")]
    {
        assert!(path.join("target").exists(), "{}: {why}", path.display());
    }
    assert!(link.symlink_metadata().is_ok(), "a link is never removed nor followed");
    assert!(elsewhere.path().join("precious").exists());
    assert_eq!(wait_unmarked(&mark), Vec::<u32>::new());
}
