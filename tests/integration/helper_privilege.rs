//! The program the creation benchmarks exec can never be one another user planted or
//! can change: oscost needs no writable folder for its helper, ignores files planted
//! where earlier versions wrote it, and refuses a `--noop` program someone else could
//! rewrite. As root the planted files belong to `nobody`, as another user would own them.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::*;

const NOBODY: u32 = 65534;

/// A script that leaves `marker` behind when anyone executes it.
fn plant(path: &Path, marker: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\necho ran >> '{}'\n", marker.display())).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// Gives `path` and its parent folder to `nobody` with world-writable modes, when root.
fn give_to_another_user(path: &Path) {
    if oscost::sys::is_root() {
        for p in [path.parent().unwrap(), path] {
            std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }
    std::fs::set_permissions(path.parent().unwrap(), std::fs::Permissions::from_mode(0o777)).unwrap();
}

fn spawn_rows(out: &std::process::Output) -> usize {
    let doc = json_of(out);
    ["spawn.fork_exec", "spawn.posix_spawn", "spawn.shell"].iter().map(|id| rows(&doc, id).len()).sum()
}

#[test]
fn planted_helpers_are_never_executed() {
    let db = temp_db();
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("payload-ran");
    let name = format!("oscost-noop-{}-{}", env!("CARGO_PKG_VERSION"), oscost::helper::NOOP_ELF.len());
    let uid = oscost::sys::uid();
    // Every place a helper was ever written to: the shared temp folder, the per-user
    // fallback and the cache folder.
    let planted: Vec<PathBuf> = vec![
        tmp.path().join("oscost").join(&name),
        tmp.path().join(format!("oscost-{uid}")).join(&name),
        tmp.path().join("cache").join("oscost").join(&name),
    ];
    for p in &planted {
        plant(p, &marker);
        give_to_another_user(p);
    }
    // The other user keeps swapping their program in while oscost runs, as an attacker
    // racing an installer would.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, planted, marker) = (stop.clone(), planted.clone(), marker.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for p in &planted {
                    let tmp = p.with_extension("swap");
                    plant(&tmp, &marker);
                    give_to_another_user(&tmp);
                    let _ = std::fs::rename(&tmp, p);
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let out = oscost()
        .args(["run", "spawn.fork_exec", "spawn.posix_spawn", "spawn.shell", "--quick", "--json", "--db"])
        .arg(&db.path)
        .env_remove("HOME")
        .env("TMPDIR", tmp.path())
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .output()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(spawn_rows(&out), 3 * 3, "each exec row measured the embedded helper");
    assert!(!marker.exists(), "a planted program was executed");

    // Named explicitly, a program another user could rewrite is refused, not run: the
    // run stops before anything is measured (exit 2).
    let out = oscost()
        .args(["run", "spawn.fork_exec", "--quick", "--json", "--noop"])
        .arg(&planted[0])
        .arg("--db")
        .arg(&db.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("it is not executed"), "{err}");
    if oscost::sys::is_root() {
        assert!(err.contains("belongs to uid 65534"), "{err}");
    } else {
        assert!(err.contains("writable by anyone"), "{err}");
    }
    assert!(!marker.exists(), "a refused program was executed");
}

#[test]
fn no_writable_folder_is_needed_and_nothing_is_written() {
    let db = temp_db();
    let tmp = tempfile::tempdir().unwrap();
    let out = oscost()
        .args(["run", "spawn.fork_exec", "spawn.posix_spawn", "spawn.shell", "--quick", "--json", "--db"])
        .arg(&db.path)
        .env_remove("HOME")
        .env("XDG_CACHE_HOME", "/proc/oscost-cannot-write-here")
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(spawn_rows(&out), 3 * 3);
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "files written to the temp folder: {left:?}");
}
