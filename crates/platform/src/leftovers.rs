//! What an oscost killed with SIGKILL leaves behind, found and ended by a later run.
//!
//! A coordinator killed with SIGKILL cleans nothing up. Its workers take their process
//! groups with them when it dies (their death signal kills the group), but a worker that
//! cannot run its handler (stopped, or killed first) leaves the children it forked, and
//! a child a benchmark forked has no death signal of its own. So each worker's group is
//! recorded while it runs: a marker file names the coordinator (pid, start time, boot)
//! and the group (its id, its leader's start time, its session), and is removed once the
//! group is reaped. A later run reads the markers of coordinators that are gone and
//! kills what is left of their groups: only processes of the user it runs as, in that
//! group and that session, started no earlier than the group's leader, each checked
//! through a pidfd so that a reused pid is never killed. A group whose id now names
//! another leader, or a marker of another boot, is dropped without killing anything.
//!
//! Scratch folders ([`crate::files::private_dir`]) carry their creator's pid and start
//! time in their names ([`crate::files::scratch_prefix`]). A later run removes those a killed oscost
//! left: real folders (never a link), owned by the user it runs as, mode 0700, of a
//! scratch kind ([`SCRATCH_KINDS`]; a rescue folder is kept for the user), whose
//! creator is gone. Anything else is left alone.

use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::procfs::Owner;

/// The kinds of scratch folder a later run may remove: what a run creates for itself
/// and drops when it ends.
pub const SCRATCH_KINDS: [&str; 3] = ["oscost-target-", "oscost-journal-", "oscost-read-"];

/// The longest marker file read.
const MAX_MARKER: u64 = 4096;

/// Why the groups of workers could not be recorded or checked.
#[derive(Debug, thiserror::Error)]
pub enum LeftoverError {
    #[error("{path}: {cause}")]
    Io { path: PathBuf, cause: io::Error },
    #[error("{0} is not a private folder of this user (a real folder, mode 0700): worker groups are not recorded")]
    NotOurs(PathBuf),
    #[error("/proc does not say who process {0} is")]
    NoIdentity(i32),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> LeftoverError + '_ {
    move |cause| LeftoverError::Io { path: path.to_path_buf(), cause }
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Where worker groups are recorded, under the temp folder `temp`: one folder a user.
pub fn markers_dir(temp: &Path) -> PathBuf {
    temp.join(format!("oscost-groups-{}", euid()))
}

/// Whether `m` is a real folder (not a link) of this user, mode 0700.
fn is_private_dir(m: &std::fs::Metadata) -> bool {
    m.file_type().is_dir() && m.uid() == euid() && m.mode() & 0o777 == 0o700
}

/// The markers' folder, made if it is missing; refused unless it is this user's own.
fn own_markers_dir(temp: &Path) -> Result<PathBuf, LeftoverError> {
    let dir = markers_dir(temp);
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_at(&dir)(e)),
    }
    let m = std::fs::symlink_metadata(&dir).map_err(io_at(&dir))?;
    if !is_private_dir(&m) {
        return Err(LeftoverError::NotOurs(dir));
    }
    Ok(dir)
}

/// A process as its stat line shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    zombie: bool,
    pgrp: i32,
    session: i32,
    start: u64,
}

fn stat_of(pid: i32) -> Option<Stat> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&s)
}

/// Fields of a stat line (proc(5)): the command name (field 2) may hold spaces and
/// parentheses, so the fields are counted from the last ')'.
fn parse_stat(s: &str) -> Option<Stat> {
    let f: Vec<&str> = s[s.rfind(')')? + 1..].split_whitespace().collect();
    Some(Stat {
        zombie: matches!(*f.first()?, "Z" | "X"),
        pgrp: f.get(2)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// A worker's process group as recorded while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    coordinator: Owner,
    pgid: i32,
    leader_start: u64,
    session: i32,
}

impl Record {
    fn to_text(&self) -> String {
        let c = &self.coordinator;
        format!(
            "coordinator {} {} {}\ngroup {} {} {}\n",
            c.pid, c.start_ticks, c.boot_id, self.pgid, self.leader_start, self.session
        )
    }

    fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        let c: Vec<&str> = lines.next()?.split(' ').collect();
        let g: Vec<&str> = lines.next()?.split(' ').collect();
        match (c.as_slice(), g.as_slice()) {
            (["coordinator", pid, start, boot], ["group", pgid, leader, session]) => Some(Record {
                coordinator: Owner {
                    pid: pid.parse().ok()?,
                    start_ticks: start.parse().ok()?,
                    boot_id: boot.to_string(),
                },
                pgid: pgid.parse().ok().filter(|p| *p > 1)?,
                leader_start: leader.parse().ok()?,
                session: session.parse().ok()?,
            }),
            _ => None,
        }
    }
}

/// A worker's group, recorded for as long as this value lives: dropped once the group
/// is reaped, it removes its marker.
#[derive(Debug)]
pub struct GroupMarker {
    path: PathBuf,
}

impl GroupMarker {
    /// Records group `pgid` (a worker just started, leading it) of this process.
    pub fn record(pgid: i32) -> Result<Self, LeftoverError> {
        let me = Owner::current().ok_or(LeftoverError::NoIdentity(crate::sys::getpid()))?;
        Self::record_in(&std::env::temp_dir(), &me, pgid)
    }

    /// Records group `pgid` as started by `coordinator`, under the temp folder `temp`.
    pub fn record_in(temp: &Path, coordinator: &Owner, pgid: i32) -> Result<Self, LeftoverError> {
        let leader = stat_of(pgid).ok_or(LeftoverError::NoIdentity(pgid))?;
        let record =
            Record { coordinator: coordinator.clone(), pgid, leader_start: leader.start, session: leader.session };
        let text = record.to_text();
        // The folder goes when its last marker does: another run may remove it between
        // its making and the marker's, so that is tried twice.
        let mut attempt = 0;
        loop {
            let dir = own_markers_dir(temp)?;
            let path = dir.join(format!("{pgid}.{}", leader.start));
            match crate::files::write_new(&path, text.as_bytes(), 0o600) {
                Ok(()) => return Ok(GroupMarker { path }),
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempt == 0 => attempt += 1,
                Err(e) => return Err(io_at(&path)(e)),
            }
        }
    }

    /// Leaves the marker in place, as a coordinator killed with SIGKILL does; its path.
    pub fn leave(self) -> PathBuf {
        let path = self.path.clone();
        std::mem::forget(self);
        path
    }
}

impl Drop for GroupMarker {
    fn drop(&mut self) {
        remove_marker(&self.path);
    }
}

/// Removes a marker, and its folder once no marker is left in it (nothing of oscost
/// stays in the temp folder after a run that ended).
fn remove_marker(path: &Path) {
    let _ = std::fs::remove_file(path);
    if let Some(dir) = path.parent() {
        // Fails, as it should, while the folder holds another run's marker.
        let _ = std::fs::remove_dir(dir);
    }
}

/// A marker's text, read without following a link, if it is a small regular file of
/// this user.
fn read_marker(path: &Path) -> Option<String> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).ok()?;
    let m = file.metadata().ok()?;
    if !m.file_type().is_file() || m.uid() != euid() || m.len() > MAX_MARKER {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_MARKER).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The live processes of this user that belong to the recorded group.
fn members(r: &Record) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| belongs(pid, r))
        .collect()
}

fn belongs(pid: i32, r: &Record) -> bool {
    let ours = std::fs::symlink_metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == euid());
    ours && stat_of(pid)
        .is_some_and(|s| !s.zombie && s.pgrp == r.pgid && s.session == r.session && s.start >= r.leader_start)
}

/// Kills process `pid` if it still belongs to the group once a handle on it is held,
/// so a pid reused meanwhile is never killed.
fn kill_member(pid: i32, r: &Record) {
    if let Ok(handle) = crate::sys::process_handle(pid)
        && belongs(pid, r)
    {
        let _ = crate::sys::kill_process_handle(&handle);
    }
}

/// What became of one marker.
enum Verdict {
    /// Its coordinator runs: the marker stays.
    Alive,
    /// Nothing of the group is left (or it was never ours to judge): the marker goes.
    Gone,
    /// These processes were left in the group and were killed.
    Ended(usize),
}

fn judge(r: &Record) -> Verdict {
    let boot = crate::procfs::boot_id();
    if boot.as_deref() != Some(r.coordinator.boot_id.as_str()) {
        return Verdict::Gone;
    }
    if r.coordinator.alive() {
        return Verdict::Alive;
    }
    // A group id names one group while any member lives; a live leader of another
    // start time means the number was freed and reused: not ours.
    if stat_of(r.pgid).is_some_and(|s| s.start != r.leader_start) {
        return Verdict::Gone;
    }
    let left = members(r);
    for &pid in &left {
        kill_member(pid, r);
    }
    if left.is_empty() { Verdict::Gone } else { Verdict::Ended(left.len()) }
}

/// Ends what workers of killed coordinators left in their groups (markers under the
/// temp folder `temp`); returns how many processes were killed. A group that still has
/// members 2 s after they were killed keeps its marker for the next run.
pub fn end_orphan_groups(temp: &Path) -> Result<usize, LeftoverError> {
    let dir = markers_dir(temp);
    let m = match std::fs::symlink_metadata(&dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_at(&dir)(e)),
    };
    if !is_private_dir(&m) {
        return Err(LeftoverError::NotOurs(dir));
    }
    let mut ended = 0;
    let mut pending = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(io_at(&dir))?.flatten() {
        let path = entry.path();
        let Some(record) = read_marker(&path).and_then(|t| Record::parse(&t)) else { continue };
        match judge(&record) {
            Verdict::Alive => {}
            Verdict::Gone => remove_marker(&path),
            Verdict::Ended(n) => {
                ended += n;
                pending.push((path, record));
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    for (path, record) in pending {
        while !members(&record).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if members(&record).is_empty() {
            remove_marker(&path);
        }
    }
    Ok(ended)
}

/// The creator (pid, start time) a scratch folder's name records, if it is one.
fn scratch_creator(name: &str) -> Option<(i32, u64)> {
    let rest = SCRATCH_KINDS.iter().find_map(|k| name.strip_prefix(k))?;
    let (who, random) = rest.split_once('-')?;
    let (pid, start) = who.split_once('.')?;
    if random.is_empty() {
        return None;
    }
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Removes the scratch folders killed oscosts left in the temp folder `temp` (see the
/// module doc for which); returns how many were removed.
pub fn sweep_scratch_dirs(temp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(temp) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(scratch_creator) else { continue };
        let path = entry.path();
        let Ok(m) = std::fs::symlink_metadata(&path) else { continue };
        if !is_private_dir(&m) || crate::procfs::process_start_ticks(pid) == Some(start) {
            continue;
        }
        // remove_dir_all never follows a link inside the folder: it removes the link.
        if std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// What a run does first: ends the groups and removes the scratch folders that killed
/// oscosts left, and says so when it found any.
pub fn clean_up_after_killed_runs() {
    let temp = std::env::temp_dir();
    match end_orphan_groups(&temp) {
        Ok(0) => {}
        Ok(n) => eprintln!("note: ended {n} process(es) left running by an oscost that was killed"),
        Err(e) => eprintln!("warning: {e}"),
    }
    let swept = sweep_scratch_dirs(&temp);
    if swept > 0 {
        eprintln!("note: removed {swept} scratch folder(s) left by an oscost that was killed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_from_its_last_parenthesis() {
        let line = "4242 (a (b) c) S 1 4242 4000 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1 2 3";
        assert_eq!(parse_stat(line), Some(Stat { zombie: false, pgrp: 4242, session: 4000, start: 98765 }));
        assert!(parse_stat("4242 (x) Z 1 7 8 0").is_none(), "a line cut short");
    }

    #[test]
    fn a_marker_reads_back_and_garbage_is_no_marker() {
        let r = Record {
            coordinator: Owner { pid: 10, start_ticks: 20, boot_id: "b".into() },
            pgid: 30,
            leader_start: 40,
            session: 50,
        };
        assert_eq!(Record::parse(&r.to_text()), Some(r));
        assert!(Record::parse("coordinator 1 2 b\ngroup 1 2 3\n").is_none(), "group 1 is init's");
        assert!(Record::parse("coordinator 1 2\n").is_none());
    }

    #[test]
    fn only_scratch_kinds_with_a_creator_are_candidates() {
        assert_eq!(scratch_creator("oscost-target-123.456-AbCdEf"), Some((123, 456)));
        assert_eq!(scratch_creator("oscost-read-1.2-x"), Some((1, 2)));
        assert_eq!(scratch_creator("oscost-rescue-123.456-AbCdEf"), None, "a rescue folder is the user's");
        assert_eq!(scratch_creator("oscost-target-AbCdEf"), None, "no creator recorded");
        assert_eq!(scratch_creator("oscost-target-123.456-"), None);
        assert_eq!(scratch_creator("other-123.456-x"), None);
    }
}
