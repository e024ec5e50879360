//! What a condition changes outside its worker, recorded before it is changed, so it is
//! put back on every path: by [`Restore`]'s drop on every path that runs code (an
//! error, Ctrl-C, SIGTERM, a panic), and by the next run's [`recover`] when the run that
//! changed it was killed (kill -9, a crash, a power cut leaves nothing to restore:
//! cgroups and sysfs values do not survive a reboot, and neither does `/run`).
//!
//! The record is one small file per change in a folder of the user's own (`/run/oscost`
//! for root, else `$XDG_RUNTIME_DIR/oscost`), created `O_EXCL|O_NOFOLLOW` through
//! `files` under a name recovery passes over and renamed into place once whole; it names the process that made the change (its pid and start time, so a
//! reused pid is not mistaken for it) and how to undo it.
//!
//! A setting of the whole system (the THP setting) has one owner at a time: the run
//! that changes it takes an exclusive lock on a file beside the records ([`claim`]) and
//! holds it for its life, so a second run cannot read the first's value as "the
//! original" and leave it behind. The lock goes with the process (kill -9 included).
//! A record of a setting names the value found and the value oscost wrote; it is put
//! back only while the setting still holds what oscost wrote: a change made since by
//! someone else (an administrator) wins, and is said.
//!
//! Records are read as untrusted: a record must be a regular file of this user's, small,
//! named for the process it names, and may name only what oscost changes (the THP
//! setting, a cgroup control file, a cgroup folder `oscost-PID-N` of that process, all
//! under the cgroup mounts with no link on the way). One that is not is said once and
//! moved aside (`NAME.refused`), never applied. A valid record whose undo fails in the
//! next run is said once and moved aside too (`NAME.unapplied`), not retried on every
//! run for ever: what stands in the way (a cgroup that holds a task) does not go by
//! itself, and a warning repeated on every run is one nobody reads; the record stays
//! in the folder for whoever mends it by hand.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Where the cgroup hierarchies are mounted: the only place a record may name a cgroup.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// statfs(2) `f_type` of a cgroup v1 and a cgroup v2 file system.
const CGROUP_MAGICS: [u64; 2] = [0x0027_e0eb, 0x6367_7270];
/// The cgroup control files a record may name.
const CGROUP_FILES: &[&str] =
    &["cpu.max", "cpu.weight", "cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpuset.cpus", "cpuset.mems"];
/// The largest record oscost writes is a few hundred bytes.
const MAX_RECORD: u64 = 4096;
/// The longest value a setting's record may hold.
const MAX_VALUE: usize = 256;
/// The most a settings file is read (THP's is 25 bytes).
const MAX_SETTING: u64 = 4096;

/// How to undo one change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Undo {
    /// Write `original` back to the settings file `path`, if it still holds `wrote`.
    Write { path: PathBuf, original: String, wrote: String },
    /// Remove the cgroup folder `dir`, moving any task left in it to its parent.
    RemoveCgroup { dir: PathBuf },
}

/// What undoing a change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undone {
    /// Put back.
    Done,
    /// Nothing to do: the setting reads its original value, or the cgroup is gone.
    AlreadyBack,
    /// The setting reads `now`, neither what oscost found nor what it wrote: someone
    /// changed it since, and their value stays.
    LeftChanged { now: String },
}

/// Why a change could not be undone.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error("reading {}: {cause}", .path.display())]
    Read { path: PathBuf, cause: io::Error },
    #[error("writing {value:?} back to {}: {cause}", .path.display())]
    Write { path: PathBuf, value: String, cause: io::Error },
    #[error("{} reads {now} after {value:?} was written back", .path.display())]
    NotBack { path: PathBuf, value: String, now: String },
    #[error("removing cgroup {}: {cause}", .dir.display())]
    RemoveCgroup { dir: PathBuf, cause: io::Error },
}

/// Why a change could not be recorded (and so is not made).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Folder(FolderError),
    #[error("not recording the change: {0}")]
    Refused(#[from] Refusal),
    #[error("reading this process's start time from /proc")]
    StartTime,
    #[error("encoding the record: {0}")]
    Encode(serde_json::Error),
    #[error("recording {}: {cause}", .path.display())]
    Write { path: PathBuf, cause: io::Error },
}

/// Why a record is not applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refusal {
    #[error("it is not a regular file of this user's (a link, another kind of file, or another user's)")]
    NotOwnFile,
    #[error("it is larger than any record oscost writes ({MAX_RECORD} bytes)")]
    TooLarge,
    #[error("reading it: {0}")]
    Read(String),
    #[error("it is not a record oscost writes ({0})")]
    Malformed(String),
    #[error("its name is not PID-UUID.json of the process it names")]
    Name,
    #[error("{} is not a setting oscost changes", .0.display())]
    UnknownSetting(PathBuf),
    #[error("{value:?} is not a value oscost reads from or writes to {}", .path.display())]
    BadValue { path: PathBuf, value: String },
    #[error("{} is not a cgroup folder oscost makes (oscost-PID-N of the process that recorded it, under {CGROUP_ROOT})", .0.display())]
    NotOurCgroup(PathBuf),
    #[error("{} has a link, `..` or `.` on its way", .0.display())]
    Indirect(PathBuf),
    #[error("{} is not on a cgroup file system", .0.display())]
    NotCgroupFs(PathBuf),
}

/// The values a setting oscost changes outside a cgroup may hold, by its path.
fn known_setting(path: &Path) -> Option<&'static [&'static str]> {
    super::settings::KNOWN.into_iter().find(|(p, _)| Path::new(p) == path).map(|(_, v)| v)
}

impl Undo {
    /// Whether the record names only what oscost changes (a record is read as
    /// untrusted: see the module's doc); `maker` is the process that recorded it.
    pub fn validate(&self, maker: i32) -> Result<(), Refusal> {
        match self {
            Undo::Write { path, original, wrote } => {
                for value in [original, wrote] {
                    check_value(path, value)?;
                }
                match known_setting(path) {
                    Some(_) => Ok(()),
                    None if is_cgroup_file(path) => check_in_cgroup_fs(path),
                    None => Err(Refusal::UnknownSetting(path.clone())),
                }
            }
            Undo::RemoveCgroup { dir } => {
                let ours = dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix("oscost-"))
                    .is_some_and(|rest| {
                        rest.split_once('-').is_some_and(|(pid, n)| {
                            pid.parse::<i32>() == Ok(maker) && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
                        })
                    });
                if !ours || !dir.starts_with(CGROUP_ROOT) {
                    return Err(Refusal::NotOurCgroup(dir.clone()));
                }
                check_in_cgroup_fs(dir)
            }
        }
    }

    /// Undoes the change (see [`Undone`]).
    pub fn apply(&self) -> Result<Undone, UndoError> {
        self.apply_over(&[])
    }

    /// Undoes the change, taking a setting that reads one of `also` (values the same
    /// run wrote to it under another of its conditions) as oscost's too.
    fn apply_over(&self, also: &[String]) -> Result<Undone, UndoError> {
        match self {
            Undo::Write { path, original, wrote } => {
                let now = read_setting(path).map_err(|cause| UndoError::Read { path: path.clone(), cause })?;
                if now == *original {
                    return Ok(Undone::AlreadyBack);
                }
                if now != *wrote && !also.contains(&now) {
                    return Ok(Undone::LeftChanged { now });
                }
                write_setting(path, original).map_err(|cause| UndoError::Write {
                    path: path.clone(),
                    value: original.clone(),
                    cause,
                })?;
                match read_setting(path) {
                    Ok(back) if back == *original => Ok(Undone::Done),
                    other => Err(UndoError::NotBack {
                        path: path.clone(),
                        value: original.clone(),
                        now: format!("{other:?}"),
                    }),
                }
            }
            Undo::RemoveCgroup { dir } => remove_cgroup(dir),
        }
    }

    /// What undoing it did, in words; `who` is the process that changed it.
    fn describe(&self, undone: &Undone, who: &str) -> String {
        match (self, undone) {
            (Undo::Write { path, original, .. }, Undone::Done | Undone::AlreadyBack) => {
                format!("{} set back to {original}, left by {who}", path.display())
            }
            (Undo::Write { path, original, wrote }, Undone::LeftChanged { now }) => format!(
                "{} reads {now}, not the {wrote} {who} wrote: someone changed it since, so it is left as it is ({original}, the value oscost found, is not put back)",
                path.display()
            ),
            (Undo::RemoveCgroup { dir }, _) => format!("cgroup {} removed, left by {who}", dir.display()),
        }
    }

    /// The settings file this undo writes, if it writes one.
    fn setting(&self) -> Option<&Path> {
        match self {
            Undo::Write { path, .. } => Some(path),
            Undo::RemoveCgroup { .. } => None,
        }
    }
}

fn check_value(path: &Path, value: &str) -> Result<(), Refusal> {
    let allowed = match known_setting(path) {
        Some(values) => values.contains(&value),
        None => value.len() <= MAX_VALUE && value.bytes().all(|b| b.is_ascii_graphic() || b == b' '),
    };
    if allowed { Ok(()) } else { Err(Refusal::BadValue { path: path.to_path_buf(), value: value.to_string() }) }
}

/// A control file of a cgroup (by its name), under the cgroup mounts.
fn is_cgroup_file(path: &Path) -> bool {
    path.starts_with(CGROUP_ROOT)
        && path.file_name().and_then(|n| n.to_str()).is_some_and(|n| CGROUP_FILES.contains(&n))
}

/// `path` lies below the cgroup mounts with no link, `..` or `.` on its way, and its
/// folder is on a cgroup file system (so removing a folder there removes a cgroup and
/// nothing else).
fn check_in_cgroup_fs(path: &Path) -> Result<(), Refusal> {
    let plain = path.is_absolute()
        && !path.as_os_str().as_encoded_bytes().windows(2).any(|w| w == b"/." || w == b"//")
        && path.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain {
        return Err(Refusal::Indirect(path.to_path_buf()));
    }
    let mut at = PathBuf::new();
    for part in path.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(Refusal::Indirect(path.to_path_buf())),
            Ok(_) => {}
            // What is not there yet (a cgroup about to be made) has no link in it.
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(e) => return Err(Refusal::Read(format!("{}: {e}", at.display()))),
        }
    }
    let parent = path.parent().unwrap_or(path);
    match rustix::fs::statfs(parent) {
        Ok(s) if CGROUP_MAGICS.contains(&(s.f_type as u64)) => Ok(()),
        _ => Err(Refusal::NotCgroupFs(path.to_path_buf())),
    }
}

/// A settings file's value: the bracketed word of a choice (`always [madvise] never`),
/// else its text trimmed.
pub fn read_setting(path: &Path) -> io::Result<String> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)?;
    let mut text = String::new();
    file.take(MAX_SETTING).read_to_string(&mut text)?;
    let chosen = text.find('[').and_then(|s| text[s..].find(']').map(|e| text[s + 1..s + e].to_string()));
    Ok(chosen.unwrap_or_else(|| text.trim().to_string()))
}

/// Writes `value` to an existing settings file (never creating one, never through a link).
pub fn write_setting(path: &Path, value: &str) -> io::Result<()> {
    let mut file =
        std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)?;
    file.write_all(value.as_bytes())
}

/// Removes a cgroup folder; tasks still in it (a worker's children being reaped) are
/// moved to the parent first.
fn remove_cgroup(dir: &Path) -> Result<Undone, UndoError> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(Undone::AlreadyBack);
    }
    for _ in 0..50 {
        if std::fs::remove_dir(dir).is_ok() {
            return Ok(Undone::Done);
        }
        if let (Some(parent), Ok(procs)) = (dir.parent(), std::fs::read_to_string(dir.join("cgroup.procs"))) {
            for pid in procs.split_whitespace() {
                let _ = std::fs::write(parent.join("cgroup.procs"), pid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_dir(dir)
        .map(|()| Undone::Done)
        .map_err(|cause| UndoError::RemoveCgroup { dir: dir.to_path_buf(), cause })
}

/// One recorded change, as its file holds it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    pid: i32,
    /// The process's start time (clock ticks after boot, /proc/PID/stat field 22).
    started: u64,
    undo: Undo,
}

/// Why there is no folder to record a change in before it is made.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("no folder to record settings in before changing them (XDG_RUNTIME_DIR is not set)")]
    NoRuntimeDir,
    #[error(
        "{0} (a system setting is recorded there before it is changed: give the folder to the user oscost runs as, mode 0700, or point XDG_RUNTIME_DIR at a folder of yours)"
    )]
    Unsafe(oscost_platform::files::UnsafeDir),
}

/// The folder the records live in, made safe (the user's own, not writable by others).
pub fn folder() -> Result<PathBuf, FolderError> {
    let (root, dir) = if oscost_platform::sys::is_root() {
        (PathBuf::from("/run"), PathBuf::from("/run/oscost"))
    } else {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .ok_or(FolderError::NoRuntimeDir)?;
        (xdg.clone(), xdg.join("oscost"))
    };
    oscost_platform::files::ensure_own_dir(&root, &dir).map_err(FolderError::Unsafe)?;
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
            Ok(undone) => {
                if let Undone::LeftChanged { .. } = undone {
                    eprintln!("note: {}", self.undo.describe(&undone, "this run"));
                }
                let _ = std::fs::remove_file(&self.record);
            }
            // The record stays, so the next run tries once more.
            Err(e) => eprintln!("warning: {e}; the next oscost run tries once more"),
        }
    }
}

/// Records `undo` before the change it undoes is made; the change must follow at
/// once. The record's name is new and random, never a path another user could plant.
pub fn record(undo: Undo) -> Result<Restore, RecordError> {
    record_in(&folder().map_err(RecordError::Folder)?, undo)
}

fn record_in(dir: &Path, undo: Undo) -> Result<Restore, RecordError> {
    let pid = oscost_platform::sys::getpid();
    // What this run would refuse to read back, it does not write.
    undo.validate(pid)?;
    let started = start_time(pid).ok_or(RecordError::StartTime)?;
    let entry = Entry { pid, started, undo: undo.clone() };
    let text = serde_json::to_vec(&entry).map_err(RecordError::Encode)?;
    let name = format!("{pid}-{}.json", uuid::Uuid::new_v4());
    let (record, partial) = (dir.join(&name), dir.join(format!(".{name}.partial")));
    // Written whole under a name recovery passes over, then renamed: a run recovering
    // at the same moment never reads a record half written (and refuses it).
    oscost_platform::files::write_new(&partial, &text, 0o600)
        .and_then(|()| std::fs::rename(&partial, &record))
        .map_err(|cause| {
            let _ = std::fs::remove_file(&partial);
            RecordError::Write { path: record.clone(), cause }
        })?;
    Ok(Restore { record, undo })
}

/// A setting of the whole system held by this run alone: the lock is released when
/// dropped (and by the kernel when the process ends, however it ends).
#[derive(Debug)]
pub struct Claim {
    _lock: File,
}

/// Why a setting could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Folder(FolderError),
    #[error("the lock file {}: {cause}", .path.display())]
    Lock { path: PathBuf, cause: io::Error },
    #[error("{} is not a regular file of this user's; oscost takes no lock through it", .0.display())]
    Unsafe(PathBuf),
    #[error("another oscost run{} holds {} for its condition (one run at a time may change it)", .holder.map(|p| format!(" (process {p})")).unwrap_or_default(), .setting.display())]
    Held { setting: PathBuf, holder: Option<i32> },
}

/// Takes `setting` for this run, waiting up to `wait` for a run that holds it; once
/// taken, what a killed run left of it is put back first (said in the lines returned),
/// so the value this run then reads is the system's own.
/// A run's conditions that change the same setting (`thp:always` and `thp:never` in one
/// run) share its claim: a second lock of the same file by the same process would be
/// refused as another run's.
pub fn claim(setting: &Path, wait: Duration) -> Result<(Arc<Claim>, Vec<Said>), ClaimError> {
    static CLAIMS: Mutex<Vec<(PathBuf, Weak<Claim>)>> = Mutex::new(Vec::new());
    let mut claims = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
    claims.retain(|(_, c)| c.strong_count() > 0);
    if let Some(held) = claims.iter().filter(|(p, _)| p == setting).find_map(|(_, c)| c.upgrade()) {
        return Ok((held, Vec::new()));
    }
    let (claim, said) = claim_in(&folder().map_err(ClaimError::Folder)?, setting, wait)?;
    let claim = Arc::new(claim);
    claims.push((setting.to_path_buf(), Arc::downgrade(&claim)));
    Ok((claim, said))
}

fn claim_in(dir: &Path, setting: &Path, wait: Duration) -> Result<(Claim, Vec<Said>), ClaimError> {
    let lock = lock_file(dir, setting)?;
    let until = Instant::now() + wait;
    loop {
        match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break,
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(ClaimError::Held { setting: setting.to_path_buf(), holder: holder(&lock) });
            }
            Err(e) => return Err(ClaimError::Lock { path: lock_path(dir, setting), cause: e.into() }),
        }
    }
    // Who holds it, for the message a second run gives.
    let _ = lock.set_len(0);
    let _ = rustix::io::pwrite(&lock, oscost_platform::sys::getpid().to_string().as_bytes(), 0);
    let said = recover_in(dir, Some(setting));
    Ok((Claim { _lock: lock }, said))
}

/// The lock file of `setting` in `dir`: its path with `/` as `.`.
fn lock_path(dir: &Path, setting: &Path) -> PathBuf {
    let name = setting.to_string_lossy().trim_start_matches('/').replace('/', ".");
    dir.join(format!("{name}.lock"))
}

/// Opens the lock file: made new (`O_EXCL|O_NOFOLLOW`), or one already there that is
/// a regular file of this user's, writable by no one else.
fn lock_file(dir: &Path, setting: &Path) -> Result<File, ClaimError> {
    let path = lock_path(dir, setting);
    let opened = match oscost_platform::files::create_new(&path, 0o600) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(&path),
        other => other,
    };
    let file = opened.map_err(|cause| match cause.raw_os_error() {
        Some(libc::ELOOP) => ClaimError::Unsafe(path.clone()),
        _ => ClaimError::Lock { path: path.clone(), cause },
    })?;
    let meta = file.metadata().map_err(|cause| ClaimError::Lock { path: path.clone(), cause })?;
    if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
        return Err(ClaimError::Unsafe(path));
    }
    Ok(file)
}

/// The process a lock file names as its holder.
fn holder(lock: &File) -> Option<i32> {
    let mut buf = [0u8; 16];
    let n = rustix::io::pread(lock, &mut buf, 0).ok()?;
    std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
}

/// What recovering one record did, as said to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// Put back (or found back already).
    Restored(String),
    /// Left as someone else set it since.
    Left(String),
    /// A record refused (not applied) and moved aside.
    Refused(String),
    /// A valid record whose undo failed, moved aside.
    Failed(String),
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Said::Restored(s) => write!(f, "restored: {s}"),
            Said::Left(s) => write!(f, "note: {s}"),
            Said::Refused(s) | Said::Failed(s) => write!(f, "warning: {s}"),
        }
    }
}

/// Undoes every change recorded by a process that is gone (it was killed before it
/// could): what was put back, one line each. What was left as someone else set it, and
/// records refused or that could not be applied, are said here (on standard error),
/// once each: their records are moved aside.
pub fn recover() -> Vec<String> {
    let Ok(dir) = folder() else { return Vec::new() };
    let mut restored = Vec::new();
    for said in recover_in(&dir, None) {
        match said {
            Said::Restored(s) => restored.push(s),
            other => eprintln!("{other}"),
        }
    }
    restored
}

/// [`recover`] in `dir`; with `held`, only the records of that setting, whose lock
/// this process holds. A record of another setting is applied only under that
/// setting's lock: while a live run holds it, the record is that run's to handle.
fn recover_in(dir: &Path, held: Option<&Path>) -> Vec<Said> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut said = Vec::new();
    let mut left = Vec::new();
    for path in entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")) {
        match read_record(&path) {
            Ok(entry) => left.push((path, entry)),
            Err(why) => said.push(Said::Refused(format!(
                "journal record {} refused, not applied: {why}; {}",
                path.display(),
                move_aside(&path, "refused")
            ))),
        }
    }
    for (path, entry) in &left {
        if start_time(entry.pid) == Some(entry.started) {
            continue; // its maker is still running and will undo it
        }
        let setting = entry.undo.setting();
        if held.is_some() && setting != held {
            continue;
        }
        let _claim = match setting {
            Some(s) if held.is_none() => match lock_file(dir, s) {
                Ok(lock) if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok() => {
                    Some(lock)
                }
                _ => continue, // a live run owns the setting, and puts back what it finds left
            },
            _ => None,
        };
        said.extend(apply_left(path, entry, &also_wrote(&left, entry)));
    }
    said
}

/// The values the maker of `entry` wrote to the same setting under its other
/// conditions (each recorded on its own).
fn also_wrote(left: &[(PathBuf, Entry)], entry: &Entry) -> Vec<String> {
    let same = |e: &Entry| e.pid == entry.pid && e.started == entry.started;
    left.iter()
        .filter(|(_, e)| same(e) && e.undo.setting().is_some() && e.undo.setting() == entry.undo.setting())
        .filter_map(|(_, e)| match &e.undo {
            Undo::Write { wrote, .. } => Some(wrote.clone()),
            Undo::RemoveCgroup { .. } => None,
        })
        .collect()
}

/// Applies a dead process's record, and removes it (or moves it aside if it fails);
/// what it did, unless there was nothing to do.
fn apply_left(path: &Path, entry: &Entry, also: &[String]) -> Option<Said> {
    let who = format!("oscost process {} that was killed", entry.pid);
    match entry.undo.apply_over(also) {
        Ok(undone) => {
            let _ = std::fs::remove_file(path);
            let line = entry.undo.describe(&undone, &who);
            match undone {
                Undone::Done => Some(Said::Restored(line)),
                Undone::AlreadyBack => None,
                Undone::LeftChanged { .. } => Some(Said::Left(line)),
            }
        }
        Err(e) => Some(Said::Failed(format!(
            "could not undo what oscost process {} left: {e}; {} (undo it by hand)",
            entry.pid,
            move_aside(path, "unapplied")
        ))),
    }
}

/// Renames a record out of the way (`NAME.WHY`, in the same folder: a rename moves a
/// link, never follows it), so it is said once and never applied.
fn move_aside(path: &Path, why: &str) -> String {
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".{why}"));
    let aside = PathBuf::from(aside);
    match std::fs::rename(path, &aside) {
        Ok(()) => format!("moved aside to {}", aside.display()),
        Err(e) => format!("moving it aside to {} failed: {e}", aside.display()),
    }
}

/// Reads a record as untrusted: a regular file of this user's (opened without
/// following a link), bounded before it is read, named for the process it names, and
/// naming only what oscost changes.
fn read_record(path: &Path) -> Result<Entry, Refusal> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Refusal::NotOwnFile,
            _ => Refusal::Read(e.to_string()),
        })?;
    let meta = file.metadata().map_err(|e| Refusal::Read(e.to_string()))?;
    if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
        return Err(Refusal::NotOwnFile);
    }
    if meta.len() > MAX_RECORD {
        return Err(Refusal::TooLarge);
    }
    let mut text = Vec::new();
    file.take(MAX_RECORD + 1).read_to_end(&mut text).map_err(|e| Refusal::Read(e.to_string()))?;
    if text.len() as u64 > MAX_RECORD {
        return Err(Refusal::TooLarge);
    }
    let entry: Entry = serde_json::from_slice(&text).map_err(|e| Refusal::Malformed(e.to_string()))?;
    let named = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.split_once('-')).map(|(pid, _)| pid);
    if named != Some(entry.pid.to_string().as_str()) {
        return Err(Refusal::Name);
    }
    entry.undo.validate(entry.pid)?;
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests that change the THP setting or its lock run one at a time.
    static THP_SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    const THP: &str = super::super::settings::THP;

    fn write_record(dir: &Path, name: &str, entry: &Entry) -> PathBuf {
        let file = dir.join(name);
        oscost_platform::files::write_new(&file, &serde_json::to_vec(entry).unwrap(), 0o600).unwrap();
        file
    }

    fn dead(undo: Undo) -> Entry {
        // pid 1 with a start time it never had: a process that no longer runs.
        Entry { pid: 1, started: u64::MAX, undo }
    }

    #[test]
    fn a_records_start_time_is_read_from_proc() {
        let me = oscost_platform::sys::getpid();
        assert!(start_time(me).is_some());
        assert_eq!(start_time(i32::MAX), None);
    }

    #[test]
    fn a_setting_is_put_back_only_while_it_holds_what_oscost_wrote() {
        let scratch = oscost_platform::files::private_dir("oscost-journal-").unwrap();
        let setting = scratch.path().join("setting");
        let undo = Undo::Write { path: setting.clone(), original: "old".into(), wrote: "new".into() };
        // The drop path: a record of this run's, the setting as this run left it.
        let restore = |record: &str| {
            let record = scratch.path().join(record);
            std::fs::write(&record, "{}").unwrap();
            (Restore { record: record.clone(), undo: undo.clone() }, record)
        };
        std::fs::write(&setting, "new").unwrap();
        let (r, record) = restore("1");
        drop(r);
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "old");
        assert!(!record.exists());
        // Someone changed it after oscost did: theirs stays, the record goes.
        std::fs::write(&setting, "theirs").unwrap();
        let (r, record) = restore("2");
        drop(r);
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "theirs");
        assert!(!record.exists());
        assert_eq!(undo.apply().unwrap(), Undone::LeftChanged { now: "theirs".into() });
        // A choice file is read by its bracketed word.
        std::fs::write(&setting, "always [new] never").unwrap();
        assert_eq!(read_setting(&setting).unwrap(), "new");
    }

    #[test]
    fn records_naming_what_oscost_does_not_change_are_refused() {
        let me = oscost_platform::sys::getpid();
        let scratch = oscost_platform::files::private_dir("oscost-journal-").unwrap();
        let victim = scratch.path().join("victim");
        let refused = [
            Undo::Write { path: victim.clone(), original: "x".into(), wrote: "y".into() },
            Undo::Write { path: "/etc/passwd".into(), original: "x".into(), wrote: "y".into() },
            Undo::Write { path: THP.into(), original: "madvise\nx".into(), wrote: "never".into() },
            Undo::Write {
                path: "/sys/fs/cgroup/cpu/../../../etc/cpu.max".into(),
                original: "1".into(),
                wrote: "2".into(),
            },
            Undo::RemoveCgroup { dir: scratch.path().to_path_buf() },
            Undo::RemoveCgroup { dir: "/sys/fs/cgroup/cpu".into() },
            Undo::RemoveCgroup { dir: format!("/sys/fs/cgroup/cpu/oscost-{}-0", me + 1).into() },
            Undo::RemoveCgroup { dir: format!("/sys/fs/cgroup/cpu/../../../tmp/oscost-{me}-0").into() },
            Undo::RemoveCgroup { dir: format!("/tmp/oscost-{me}-0").into() },
        ];
        for undo in refused {
            assert!(undo.validate(me).is_err(), "{undo:?} passed");
        }
        assert_eq!(
            Undo::Write { path: THP.into(), original: "madvise".into(), wrote: "never".into() }.validate(me),
            Ok(())
        );
    }

    #[test]
    fn forged_records_are_refused_moved_aside_and_not_retried() {
        let scratch = oscost_platform::files::private_dir("oscost-journal-").unwrap();
        let dir = scratch.path().join("journal");
        std::fs::create_dir(&dir).unwrap();
        let victim = scratch.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let victim_dir = scratch.path().join("keep");
        std::fs::create_dir(&victim_dir).unwrap();
        let write = dead(Undo::Write { path: victim.clone(), original: "forged".into(), wrote: "mine".into() });
        let remove = dead(Undo::RemoveCgroup { dir: victim_dir.clone() });
        let written = write_record(&dir, "1-a.json", &write);
        let removing = write_record(&dir, "1-b.json", &remove);
        // A link to a record kept elsewhere (which would itself pass by its content).
        let elsewhere = write_record(
            scratch.path(),
            "1-c.json",
            &dead(Undo::RemoveCgroup { dir: "/sys/fs/cgroup/cpu/oscost-1-0".into() }),
        );
        std::os::unix::fs::symlink(&elsewhere, dir.join("1-c.json")).unwrap();
        // A record named for another process than it names.
        let misnamed =
            write_record(&dir, "2-d.json", &dead(Undo::RemoveCgroup { dir: "/sys/fs/cgroup/cpu/oscost-1-0".into() }));
        // One too large to be a record.
        std::fs::write(dir.join("1-e.json"), vec![b' '; MAX_RECORD as usize + 1]).unwrap();
        // A record being written by a live run is passed over, not refused.
        std::fs::write(dir.join(".1-f.json.partial"), "{").unwrap();

        let said = recover_in(&dir, None);
        assert_eq!(said.len(), 5, "{said:?}");
        assert!(said.iter().all(|s| matches!(s, Said::Refused(_))), "{said:?}");
        assert!(said.iter().all(|s| s.to_string().contains("moved aside to")), "{said:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        assert!(victim_dir.is_dir());
        for gone in [&written, &removing, &dir.join("1-c.json"), &misnamed, &dir.join("1-e.json")] {
            assert!(std::fs::symlink_metadata(gone).is_err(), "{} is still there", gone.display());
            let mut aside = gone.as_os_str().to_owned();
            aside.push(".refused");
            assert!(std::fs::symlink_metadata(aside).is_ok());
        }
        // The link was moved, not followed: its target is untouched.
        assert!(elsewhere.is_file());
        // Said once: the next recovery finds nothing to say.
        assert_eq!(recover_in(&dir, None), Vec::new());
        assert!(dir.join(".1-f.json.partial").exists());
    }

    #[test]
    fn a_record_that_cannot_be_applied_is_said_once_and_moved_aside() {
        let me = oscost_platform::sys::getpid();
        let scratch = oscost_platform::files::private_dir("oscost-journal-").unwrap();
        let entry = dead(Undo::RemoveCgroup { dir: "/sys/fs/cgroup/cpu/oscost-1-0".into() });
        let record = write_record(scratch.path(), "1-a.json", &entry);
        // An undo that fails (applied as checked: a folder that cannot be removed, for
        // it is not empty, stands for a cgroup that still holds a task).
        let full = scratch.path().join("full");
        std::fs::create_dir(&full).unwrap();
        std::fs::write(full.join("f"), "").unwrap();
        let failing = Entry { pid: me, started: 0, undo: Undo::RemoveCgroup { dir: full.clone() } };
        let said = apply_left(&record, &failing, &[]);
        assert!(matches!(&said, Some(Said::Failed(s)) if s.contains("moved aside to")), "{said:?}");
        assert!(!record.exists() && full.is_dir());
        assert_eq!(recover_in(scratch.path(), None), Vec::new());
    }

    #[test]
    fn a_setting_has_one_owner_and_the_owner_puts_back_what_a_killed_run_left() {
        let _serial = THP_SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        if !oscost_platform::sys::is_root() || read_setting(Path::new(THP)).is_err() {
            eprintln!("skipped: a_setting_has_one_owner needs root (it changes the THP setting)");
            return;
        }
        let scratch = oscost_platform::files::private_dir("oscost-journal-").unwrap();
        let dir = scratch.path();
        let original = read_setting(Path::new(THP)).unwrap();
        let other = if original == "never" { "always" } else { "never" };
        // A killed run left the setting changed, recorded.
        let left = dead(Undo::Write { path: THP.into(), original: original.clone(), wrote: other.into() });
        let record = write_record(dir, "1-a.json", &left);
        write_setting(Path::new(THP), other).unwrap();
        let (claim, said) = claim_in(dir, Path::new(THP), Duration::ZERO).unwrap();
        assert_eq!(read_setting(Path::new(THP)).unwrap(), original, "{said:?}");
        assert!(matches!(&said[..], [Said::Restored(s)] if s.contains(&format!("set back to {original}"))), "{said:?}");
        assert!(!record.exists());
        // A second claim while the first is held is refused, saying who holds it.
        let second = claim_in(dir, Path::new(THP), Duration::from_millis(100)).unwrap_err();
        let me = oscost_platform::sys::getpid();
        assert!(second.to_string().contains(&format!("another oscost run (process {me}) holds")), "{second}");
        drop(claim);
        // A killed run with both modes as conditions left a record of each; the
        // setting reads one of them, so it is put back, and neither says someone else
        // changed it.
        for (name, wrote) in [("1-b.json", "always"), ("1-c.json", "never")] {
            let undo = Undo::Write { path: THP.into(), original: original.clone(), wrote: wrote.into() };
            write_record(dir, name, &dead(undo));
        }
        write_setting(Path::new(THP), other).unwrap();
        let said = recover_in(dir, None);
        assert_eq!(read_setting(Path::new(THP)).unwrap(), original, "{said:?}");
        assert!(matches!(&said[..], [Said::Restored(_)]), "{said:?}");
        assert!(claim_in(dir, Path::new(THP), Duration::ZERO).is_ok());
    }
}
