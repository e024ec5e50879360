//! What a condition changes outside its worker, recorded before it is changed, so it is
//! put back on every path: by [`Restore`]'s drop on every path that runs code (an
//! error, Ctrl-C, SIGTERM, a panic), and by the next run's [`recover`] when the run that
//! changed it was killed (kill -9, a crash, a power cut leaves nothing to restore:
//! cgroups and sysfs values do not survive a reboot, and neither does `/run`).
//!
//! The record is one small file per change in a folder of the user's own (`/run/oscost`
//! for root, else `$XDG_RUNTIME_DIR/oscost`), created `O_EXCL|O_NOFOLLOW` through
//! `files`; it names the process that made the change (its pid and start time, so a
//! reused pid is not mistaken for it) and how to undo it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How to undo one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Undo {
    /// Write `value` back to the settings file `path` (sysfs).
    Write { path: PathBuf, value: String },
    /// Remove the cgroup folder `dir`, moving any task left in it to its parent.
    RemoveCgroup { dir: PathBuf },
}

impl Undo {
    fn apply(&self) -> Result<(), String> {
        match self {
            Undo::Write { path, value } => {
                std::fs::write(path, value).map_err(|e| format!("writing {value:?} back to {}: {e}", path.display()))
            }
            Undo::RemoveCgroup { dir } => remove_cgroup(dir),
        }
    }

    fn describe(&self) -> String {
        match self {
            Undo::Write { path, value } => format!("{} set back to {value}", path.display()),
            Undo::RemoveCgroup { dir } => format!("cgroup {} removed", dir.display()),
        }
    }
}

/// Removes a cgroup folder; tasks still in it (a worker's children being reaped) are
/// moved to the parent first.
fn remove_cgroup(dir: &Path) -> Result<(), String> {
    if !dir.exists() {
        return Ok(());
    }
    for _ in 0..50 {
        if std::fs::remove_dir(dir).is_ok() {
            return Ok(());
        }
        if let (Some(parent), Ok(procs)) = (dir.parent(), std::fs::read_to_string(dir.join("cgroup.procs"))) {
            for pid in procs.split_whitespace() {
                let _ = std::fs::write(parent.join("cgroup.procs"), pid);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::remove_dir(dir).map_err(|e| format!("removing cgroup {}: {e}", dir.display()))
}

/// One recorded change, as its file holds it.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    pid: i32,
    /// The process's start time (clock ticks after boot, /proc/PID/stat field 22).
    started: u64,
    undo: Undo,
}

/// The folder the records live in, made safe (the user's own, not writable by others).
pub fn folder() -> Result<PathBuf, String> {
    let (root, dir) = if crate::sys::is_root() {
        (PathBuf::from("/run"), PathBuf::from("/run/oscost"))
    } else {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .ok_or("no folder to record settings in before changing them (XDG_RUNTIME_DIR is not set)")?;
        (xdg.clone(), xdg.join("oscost"))
    };
    crate::files::ensure_own_dir(&root, &dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// Process `pid`'s start time, if it is running.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// A change made and recorded: undone, and its record removed, when dropped.
#[derive(Debug)]
pub struct Restore {
    record: PathBuf,
    undo: Undo,
}

impl Restore {
    /// The change was never made (it failed): the record goes, nothing is undone.
    pub fn abandon(self) {
        let _ = std::fs::remove_file(&self.record);
        std::mem::forget(self);
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        match self.undo.apply() {
            Ok(()) => {
                let _ = std::fs::remove_file(&self.record);
            }
            // The record stays, so the next run tries again.
            Err(e) => eprintln!("warning: {e}; the next oscost run will try again"),
        }
    }
}

/// Records `undo` before the change it undoes is made; the change must follow at
/// once. The record's name is new and random, never a path another user could plant.
pub fn record(undo: Undo) -> Result<Restore, String> {
    let dir = folder()?;
    let pid = crate::sys::getpid();
    let started = start_time(pid).ok_or("reading this process's start time")?;
    let text = serde_json::to_vec(&Entry { pid, started, undo: undo.clone() }).map_err(|e| e.to_string())?;
    let record = dir.join(format!("{pid}-{}.json", uuid::Uuid::new_v4()));
    crate::files::write_new(&record, &text, 0o600).map_err(|e| format!("recording {}: {e}", record.display()))?;
    Ok(Restore { record, undo })
}

/// Undoes every change recorded by a process that is gone (it was killed before it
/// could): what was put back, one line each, and what could not be, with why.
pub fn recover() -> Vec<String> {
    let Ok(dir) = folder() else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut said = Vec::new();
    for path in entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")) {
        let Ok(text) = std::fs::read(&path) else { continue };
        let Ok(entry) = serde_json::from_slice::<Entry>(&text) else { continue };
        if start_time(entry.pid) == Some(entry.started) {
            continue; // its maker is still running and will undo it
        }
        match entry.undo.apply() {
            Ok(()) => {
                let _ = std::fs::remove_file(&path);
                said.push(format!("{}, left by oscost process {} that was killed", entry.undo.describe(), entry.pid));
            }
            Err(e) => said.push(format!("could not restore what oscost process {} left: {e}", entry.pid)),
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_records_start_time_is_read_from_proc() {
        let me = crate::sys::getpid();
        assert!(start_time(me).is_some());
        assert_eq!(start_time(i32::MAX), None);
    }

    #[test]
    fn a_write_is_undone_when_dropped_and_a_dead_processes_change_by_the_next_run() {
        let Ok(dir) = folder() else {
            eprintln!("skipping: no folder for records here (not root and no XDG_RUNTIME_DIR)");
            return;
        };
        let scratch = crate::files::private_dir("oscost-journal-").unwrap();
        let setting = scratch.path().join("setting");
        std::fs::write(&setting, "old").unwrap();
        {
            let _r = record(Undo::Write { path: setting.clone(), value: "old".into() }).unwrap();
            std::fs::write(&setting, "new").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "old");
        // A record left by a process that no longer runs (pid 1 with a start time it
        // never had) is undone by the next recover, and its record removed.
        std::fs::write(&setting, "changed").unwrap();
        let left =
            Entry { pid: 1, started: u64::MAX, undo: Undo::Write { path: setting.clone(), value: "old".into() } };
        let file = dir.join(format!("1-{}.json", uuid::Uuid::new_v4()));
        crate::files::write_new(&file, &serde_json::to_vec(&left).unwrap(), 0o600).unwrap();
        let said = recover();
        assert!(said.iter().any(|s| s.contains("set back to old")), "{said:?}");
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "old");
        assert!(!file.exists());
    }
}
