//! Every file and folder oscost creates goes through here, so that none can be aimed
//! by another user: oscost often runs as root, in folders others can write (a shared
//! `$TMPDIR`, another user's `$HOME` kept by `sudo`), where a name known in advance
//! (`oscost-target-<pid>`, `.name.tmp.<pid>`) lets that user plant a symlink that
//! root then writes through.
//!
//! The rules, each closing one way in:
//! - a new file is opened `O_CREAT|O_EXCL|O_NOFOLLOW` ([`create_new`]): it is ours
//!   and new, or the call fails; it never follows a link nor truncates a file;
//! - scratch files live in a folder oscost made itself, mode 0700, under a name no one
//!   can guess ([`private_dir`]); what is opened there cannot be swapped;
//! - a file replaced as a whole ([`write_atomic`]) is written under a random name
//!   beside it and renamed over it: a rename replaces a planted link, never follows it;
//! - the default data folder is used only when it and the folders below `$HOME` that
//!   lead to it are real folders of the user oscost runs as ([`ensure_own_dir`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags, Stat};

/// Creates `path` as a new file of mode `mode` (less the umask), refusing to follow a
/// symlink or to open anything that already exists.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Writes `bytes` into a new file at `path` (see [`create_new`]); a file half written
/// (a full disk) is removed.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut f = create_new(path, mode)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// A folder of mode 0700 with an unguessable name under the temp folder, removed (with
/// what it holds) when dropped.
pub fn private_dir(prefix: &str) -> io::Result<tempfile::TempDir> {
    // The creator in the name, so that a later run can remove a folder a killed run left.
    tempfile::Builder::new()
        .prefix(&scratch_prefix(prefix))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// The name prefix of a scratch folder of kind `kind` (one of the kinds a later run sweeps, such
/// as `oscost-target-`): the kind, then this process's pid and start time, so that a
/// later run can tell whether its creator is gone. Just `kind` when /proc cannot say.
pub fn scratch_prefix(kind: &str) -> String {
    let pid = crate::sys::getpid();
    match crate::procfs::process_start_ticks(pid) {
        Some(start) => format!("{kind}{pid}.{start}-"),
        None => kind.to_string(),
    }
}

/// Replaces `path` with `bytes` so that a reader sees the old file or the new one,
/// never a part: a new file of random name beside it, synced, then renamed over it.
/// On any failure (a full disk) nothing is left behind and `path` is unchanged. The
/// file gets the mode an ordinary `open(O_CREAT, 0666)` gives (the kernel takes the
/// umask off): an export is meant to be read. Only a regular file is replaced (see
/// [`check_output`]); should another user put a link or a pipe at the name after that
/// check, the rename replaces it, never writes through it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    check_output(path).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Why a folder cannot hold oscost's data safely. The messages give no advice: what
/// to do instead depends on what the folder is for, which the caller says.
#[derive(Debug, thiserror::Error)]
pub enum UnsafeDir {
    #[error("{} is a symbolic link; oscost keeps its data only in a real folder", .0.display())]
    Symlink(PathBuf),
    #[error("{} belongs to uid {owner}, not to uid {me} that oscost runs as", .path.display())]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error("{} can be written by other users (mode {mode:o}); oscost keeps its data only where they cannot", .path.display())]
    Shared { path: PathBuf, mode: u32 },
    #[error("{} is not a folder", .0.display())]
    NotDir(PathBuf),
    #[error("creating {}: {cause}", .path.display())]
    Create { path: PathBuf, cause: io::Error },
}

/// Makes sure `dir` and every folder from `root` (exclusive) down to it are real
/// folders (no symlink) owned by the effective user and not writable by others,
/// creating the missing ones with mode 0700. `root` is trusted as it is (`$HOME` or
/// `$XDG_DATA_HOME` as the user gave it); `dir` must lie below it. The walk holds each
/// folder open and goes on from it by one name at a time, never following a link, so
/// what is checked is what the next step is taken from (a folder renamed or swapped
/// meanwhile cannot slip another in). The last folder is returned, held.
pub fn ensure_own_dir(root: &Path, dir: &Path) -> Result<OwnedFd, UnsafeDir> {
    let me = rustix::process::geteuid().as_raw();
    let below = dir.strip_prefix(root).unwrap_or(dir);
    let create = |path: &Path, cause: io::Error| UnsafeDir::Create { path: path.to_path_buf(), cause };
    let mut held = rustix::fs::open(root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| create(root, e.into()))?;
    let mut at = root.to_path_buf();
    for part in below.components() {
        let Component::Normal(name) = part else {
            return Err(UnsafeDir::NotDir(at.join(part)));
        };
        at.push(name);
        let (fd, st) = match open_entry(&held, name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match rustix::fs::mkdirat(&held, name, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(create(&at, e.into())),
                }
                // Made by us just now, but another user may have raced us to the name:
                // what is held is checked like any folder found there.
                open_entry(&held, name).map_err(|e| create(&at, e))?
            }
            Err(e) => return Err(create(&at, e)),
            Ok(found) => found,
        };
        check_own(&at, &st, me)?;
        held = fd;
    }
    Ok(held)
}

/// Opens the entry `name` of the folder `dir` itself (`O_PATH|O_NOFOLLOW`: a link is
/// held as a link, nothing is read or run), with what it is.
fn open_entry(dir: &OwnedFd, name: &std::ffi::OsStr) -> io::Result<(OwnedFd, Stat)> {
    let fd = rustix::fs::openat(dir, name, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
    let st = rustix::fs::fstat(&fd)?;
    Ok((fd, st))
}

fn check_own(path: &Path, st: &Stat, me: u32) -> Result<(), UnsafeDir> {
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind == FileType::Symlink {
        return Err(UnsafeDir::Symlink(path.to_path_buf()));
    }
    if kind != FileType::Directory {
        return Err(UnsafeDir::NotDir(path.to_path_buf()));
    }
    if st.st_uid != me {
        return Err(UnsafeDir::Foreign { path: path.to_path_buf(), owner: st.st_uid, me });
    }
    if st.st_mode & 0o022 != 0 {
        return Err(UnsafeDir::Shared { path: path.to_path_buf(), mode: st.st_mode & 0o7777 });
    }
    Ok(())
}

/// The first bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How many symbolic links a database path may pass through (the kernel's own bound).
const MAX_LINKS: usize = 40;

/// Why a database path is refused. A database is opened by name by SQLite, which makes
/// its `-wal` and `-shm` files beside it by name too; so every folder on the way, and
/// the database's own, must be one that no other user can change.
#[derive(Debug, thiserror::Error)]
pub enum UnsafePath {
    #[error("{}: {cause}", .path.display())]
    Io { path: PathBuf, cause: io::Error },
    #[error(
        "{} is a symbolic link of uid {owner}: oscost follows only links of its own user (uid {me}) or of root, as another user's could point anywhere",
        .path.display()
    )]
    ForeignLink { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{} belongs to uid {owner}, not to uid {me} that oscost runs as (nor to root): that user could change what lies in it while oscost uses it",
        .path.display()
    )]
    ForeignDir { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{} can be written by other users (mode {mode:o}): one of them could put a link or a file of their own where oscost reads and writes",
        .path.display()
    )]
    SharedDir { path: PathBuf, mode: u32 },
    #[error(
        "{} can be written by other users (mode {mode:o}): SQLite makes the database's -wal and -shm files beside it by name, which another user could plant; keep the database in a folder only you can write",
        .path.display()
    )]
    SharedDbDir { path: PathBuf, mode: u32 },
    #[error("{} is {kind}, not a regular file", .path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error(
        "{} belongs to uid {owner}, not to uid {me} that oscost runs as: oscost opens only its own files (or root's)",
        .path.display()
    )]
    ForeignFile { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{} is an empty file of uid {owner}: oscost makes a new database only in a file of its own user (uid {me})",
        .path.display()
    )]
    ForeignEmpty { path: PathBuf, owner: u32, me: u32 },
    #[error("{} is not a SQLite database (it does not begin with SQLite's header)", .path.display())]
    NotSqlite { path: PathBuf },
    #[error("{}: more than {MAX_LINKS} symbolic links on the way", .path.display())]
    TooManyLinks { path: PathBuf },
    #[error("{} names no file", .path.display())]
    NoFileName { path: PathBuf },
    #[error("{}: there is no folder {} to write it in", .path.display(), .folder.display())]
    NoFolder { path: PathBuf, folder: PathBuf },
}

/// A database path checked (see [`resolve_db`]): absolute, free of links, in a folder
/// only the user (or root) can change, which is held open.
#[derive(Debug)]
pub struct DbPath {
    /// The path with every link resolved: what SQLite is given.
    pub path: PathBuf,
    /// Whether a file is there (a regular SQLite file, or an empty one of the user's).
    pub exists: bool,
    /// The database's folder, held.
    pub dir: OwnedFd,
}

/// A folder reached by the walk, held, with its resolved path, owner and mode.
struct Held {
    fd: OwnedFd,
    path: PathBuf,
    uid: u32,
    mode: u32,
}

impl Held {
    /// Whether no user but `me` and root can replace the entry of owner `entry_uid` in
    /// this folder: one of theirs that others cannot write, or a sticky one (where only
    /// an entry's owner may rename it) with an entry of theirs.
    fn keeps(&self, entry_uid: u32, me: u32) -> bool {
        let trusted = |uid: u32| uid == me || uid == 0;
        trusted(self.uid) && (self.mode & 0o022 == 0 || (self.mode & 0o1000 != 0 && trusted(entry_uid)))
    }

    /// Why an entry of owner `entry_uid` here could be changed by another user.
    fn refusal(&self, me: u32) -> UnsafePath {
        if self.uid != me && self.uid != 0 {
            UnsafePath::ForeignDir { path: self.path.clone(), owner: self.uid, me }
        } else {
            UnsafePath::SharedDir { path: self.path.clone(), mode: self.mode & 0o7777 }
        }
    }
}

/// Resolves the database path `path` one name at a time from `/` (a relative path from
/// the current folder), each folder held open and the next name opened from it without
/// following a link. A link is followed (by its own text, read from the link held)
/// only when it is the user's or root's and sits where no other user can replace it;
/// every folder passed must keep its entries (see `Held::keeps`), so no other user can
/// change what the resolved path names after the check: the check and SQLite's use by
/// name see the same files. The database's folder must be one no other user can write
/// (SQLite's `-wal` and `-shm` files are made there by name); an existing file must be
/// a regular file of the user or root that begins with SQLite's header, or an empty
/// file of the user's own (SQLite makes a database in an empty file; one of root's,
/// for another user, or a link's target is never turned into one). Missing folders
/// are made (mode 0700) when `create_dirs`.
pub fn resolve_db(path: &Path, create_dirs: bool) -> Result<DbPath, UnsafePath> {
    let me = rustix::process::geteuid().as_raw();
    match walk(path, create_dirs, me)? {
        Walked::Missing { dir, here } => {
            check_db_dir(&dir, me)?;
            Ok(DbPath { path: here, exists: false, dir: dir.fd })
        }
        Walked::File { dir, name, here, st } => {
            check_db_dir(&dir, me)?;
            check_db_file(&dir.fd, &name, &here, &st, me)?;
            Ok(DbPath { path: here, exists: true, dir: dir.fd })
        }
    }
}

/// An input file (`import FILE`, `--noop PATH`) opened under the rules of a database
/// path ([`resolve_db`]): the path walked a name at a time, a link followed only when
/// it is the user's or root's where no other user can replace it, every folder passed
/// keeping its entries; the file a regular one of the user's or root's, opened without
/// following a link and without blocking (a FIFO never hangs the open), and checked to
/// be the file the walk found.
pub fn open_input(path: &Path) -> Result<File, UnsafePath> {
    let me = rustix::process::geteuid().as_raw();
    // A folder missing on the way is said of the path asked for, not of the folder.
    let walked = walk(path, false, me).map_err(|e| match e {
        UnsafePath::Io { cause, .. } => UnsafePath::Io { path: path.to_path_buf(), cause },
        other => other,
    })?;
    let (dir, name, here, st) = match walked {
        Walked::File { dir, name, here, st } => (dir, name, here, st),
        Walked::Missing { here, .. } => {
            return Err(UnsafePath::Io { path: here, cause: io::Error::from(io::ErrorKind::NotFound) });
        }
    };
    if st.st_uid != me && st.st_uid != 0 {
        return Err(UnsafePath::ForeignFile { path: here, owner: st.st_uid, me });
    }
    let io_at = |cause: io::Error| UnsafePath::Io { path: here.clone(), cause };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir.fd, &name, flags, Mode::empty()).map_err(|e| io_at(e.into()))?;
    let now = rustix::fs::fstat(&fd).map_err(|e| io_at(e.into()))?;
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) {
        return Err(io_at(io::Error::other("the file was replaced while it was checked")));
    }
    Ok(File::from(fd))
}

/// Where a walk of a path ended: a regular file in its folder, or no entry there.
enum Walked {
    File { dir: Held, name: std::ffi::OsString, here: PathBuf, st: Stat },
    Missing { dir: Held, here: PathBuf },
}

/// The walk of [`resolve_db`] and [`open_input`]: `path` resolved one name at a time,
/// each folder held, the links and folders checked as `resolve_db` says; missing
/// folders made (mode 0700) when `create_dirs`.
fn walk(path: &Path, create_dirs: bool, me: u32) -> Result<Walked, UnsafePath> {
    let io_at = |p: &Path, cause: io::Error| UnsafePath::Io { path: p.to_path_buf(), cause };
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_err(|e| io_at(path, e))?.join(path)
    };
    if !matches!(absolute.components().next_back(), Some(Component::Normal(_))) {
        return Err(UnsafePath::NoFileName { path: path.to_path_buf() });
    }
    let root = || -> Result<Held, UnsafePath> {
        let fd = rustix::fs::open("/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| io_at(Path::new("/"), e.into()))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| io_at(Path::new("/"), e.into()))?;
        Ok(Held { fd, path: PathBuf::from("/"), uid: st.st_uid, mode: st.st_mode })
    };
    let mut stack = vec![root()?];
    let mut queue: std::collections::VecDeque<std::ffi::OsString> = names(&absolute);
    let mut links = 0;
    while let Some(name) = queue.pop_front() {
        let last = queue.is_empty();
        let top = stack.last().expect("the root is never popped");
        if name == ".." {
            if last {
                return Err(UnsafePath::NoFileName { path: path.to_path_buf() });
            }
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        let here = top.path.join(&name);
        let (fd, st) = match open_entry(&top.fd, &name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && last => {
                let dir = stack.pop().expect("the root is never popped");
                return Ok(Walked::Missing { dir, here });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && create_dirs => {
                if !top.keeps(me, me) {
                    return Err(top.refusal(me));
                }
                match rustix::fs::mkdirat(&top.fd, &name, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(io_at(&here, e.into())),
                }
                queue.push_front(name);
                continue;
            }
            Err(e) => return Err(io_at(&here, e)),
            Ok(found) => found,
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind == FileType::Symlink && st.st_uid != me && st.st_uid != 0 {
            return Err(UnsafePath::ForeignLink { path: here, owner: st.st_uid, me });
        }
        if !top.keeps(st.st_uid, me) {
            return Err(top.refusal(me));
        }
        match kind {
            FileType::Symlink => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(UnsafePath::TooManyLinks { path: path.to_path_buf() });
                }
                let target = rustix::fs::readlinkat(&fd, "", Vec::new()).map_err(|e| io_at(&here, e.into()))?;
                let target = PathBuf::from(std::ffi::OsStr::from_bytes(target.as_bytes()));
                if target.is_absolute() {
                    stack.truncate(1);
                }
                for n in names(&target).into_iter().rev() {
                    queue.push_front(n);
                }
            }
            FileType::Directory if !last => {
                stack.push(Held { fd, path: here, uid: st.st_uid, mode: st.st_mode });
            }
            FileType::RegularFile if last => {
                let dir = stack.pop().expect("the root is never popped");
                return Ok(Walked::File { dir, name, here, st });
            }
            FileType::RegularFile => return Err(io_at(&here, io::Error::from_raw_os_error(libc::ENOTDIR))),
            other => return Err(UnsafePath::NotAFile { path: here, kind: kind_name(other) }),
        }
    }
    Err(UnsafePath::NoFileName { path: path.to_path_buf() })
}

/// The names of `path` in order, `.` and the root left out.
fn names(path: &Path) -> std::collections::VecDeque<std::ffi::OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// The database's folder: the user's or root's, and no one else can write it.
fn check_db_dir(dir: &Held, me: u32) -> Result<(), UnsafePath> {
    if dir.uid != me && dir.uid != 0 {
        return Err(UnsafePath::ForeignDir { path: dir.path.clone(), owner: dir.uid, me });
    }
    if dir.mode & 0o022 != 0 {
        return Err(UnsafePath::SharedDbDir { path: dir.path.clone(), mode: dir.mode & 0o7777 });
    }
    Ok(())
}

/// An existing database file: the user's or root's, and SQLite's (an empty one only
/// of the user's own); its header is read from the file checked, opened without
/// following a link and without blocking.
fn check_db_file(dir: &OwnedFd, name: &std::ffi::OsStr, path: &Path, st: &Stat, me: u32) -> Result<(), UnsafePath> {
    if st.st_uid != me && st.st_uid != 0 {
        return Err(UnsafePath::ForeignFile { path: path.to_path_buf(), owner: st.st_uid, me });
    }
    if st.st_size == 0 {
        if st.st_uid != me {
            return Err(UnsafePath::ForeignEmpty { path: path.to_path_buf(), owner: st.st_uid, me });
        }
        return Ok(());
    }
    let io_at = |cause: io::Error| UnsafePath::Io { path: path.to_path_buf(), cause };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty()).map_err(|e| io_at(e.into()))?;
    let now = rustix::fs::fstat(&fd).map_err(|e| io_at(e.into()))?;
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) {
        return Err(io_at(io::Error::other("the file was replaced while it was checked")));
    }
    let mut head = [0u8; 16];
    let mut file = File::from(fd);
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_at(e)),
        }
    }
    if &head != SQLITE_MAGIC {
        return Err(UnsafePath::NotSqlite { path: path.to_path_buf() });
    }
    Ok(())
}

/// What a file of type `kind` is, in words.
fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "a folder",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Fifo => "a named pipe",
        FileType::Socket => "a socket",
        FileType::Symlink => "a symbolic link",
        FileType::RegularFile => "a regular file",
        _ => "not a regular file",
    }
}

/// Why an output path is refused.
#[derive(Debug, thiserror::Error)]
pub enum BadOutput {
    #[error(
        "{} is {kind}: oscost writes its outputs only to a regular file or a new name (or to standard output with -)",
        .path.display()
    )]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{}: {cause}", .path.display())]
    Io { path: PathBuf, cause: io::Error },
    #[error("{} names no file", .path.display())]
    NoFileName { path: PathBuf },
    #[error("{}: there is no folder {} to write it in", .path.display(), .folder.display())]
    NoFolder { path: PathBuf, folder: PathBuf },
}

/// Checks that `path` can take an output: a regular file (replaced whole by
/// [`write_atomic`]) or a name not taken yet in a folder that is there; a device, a
/// pipe, a socket, a folder or a symbolic link is refused (replacing `/dev/null` or a
/// link would change what others rely on; writing through a link is what another
/// user's link asks for), and so is a name in a folder that is not there, which could
/// only fail once the figures it would hold are measured.
pub fn check_output(path: &Path) -> Result<(), BadOutput> {
    if path.file_name().is_none() {
        return Err(BadOutput::NoFileName { path: path.to_path_buf() });
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(m) => {
            Err(BadOutput::NotAFile { path: path.to_path_buf(), kind: kind_name(FileType::from_raw_mode(m.mode())) })
        }
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
            let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            match std::fs::metadata(folder) {
                Ok(m) if m.is_dir() => Ok(()),
                _ => Err(BadOutput::NoFolder { path: path.to_path_buf(), folder: folder.to_path_buf() }),
            }
        }
        Err(cause) => Err(BadOutput::Io { path: path.to_path_buf(), cause }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_new_refuses_a_symlink_and_an_existing_file() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"secret").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(create_new(&link, 0o600).is_err());
        assert!(create_new(&victim, 0o600).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
        write_new(&d.path().join("fresh"), b"x", 0o600).unwrap();
        let mode = std::fs::metadata(d.path().join("fresh")).unwrap().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    }

    #[test]
    fn write_atomic_neither_follows_nor_replaces_a_planted_link() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"secret").unwrap();
        let out = d.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        let e = write_atomic(&out, b"{}").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
        assert!(std::fs::symlink_metadata(&out).unwrap().file_type().is_symlink());
        // A regular file is replaced whole; nothing but the files remains (no temporary left).
        let plain = d.path().join("plain.json");
        std::fs::write(&plain, b"old").unwrap();
        write_atomic(&plain, b"{}").unwrap();
        assert_eq!(std::fs::read(&plain).unwrap(), b"{}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 3);
    }

    #[test]
    fn outputs_are_regular_files_or_new_names() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_output(&d.path().join("new.json")).is_ok());
        let nowhere = d.path().join("missing-folder/new.json");
        assert!(matches!(check_output(&nowhere), Err(BadOutput::NoFolder { .. })), "a folder that is not there");
        std::fs::write(d.path().join("a-file"), b"").unwrap();
        let under_a_file = d.path().join("a-file/new.json");
        assert!(matches!(check_output(&under_a_file), Err(BadOutput::NoFolder { .. })), "a file is no folder");
        std::fs::write(d.path().join("old.json"), b"x").unwrap();
        assert!(check_output(&d.path().join("old.json")).is_ok());
        for (path, kind) in [(d.path().to_path_buf(), "folder"), (PathBuf::from("/dev/null"), "character device")] {
            let e = check_output(&path).unwrap_err();
            assert!(e.to_string().contains(kind), "{e}");
        }
        std::os::unix::fs::symlink("/dev/null", d.path().join("link")).unwrap();
        assert!(check_output(&d.path().join("link")).unwrap_err().to_string().contains("symbolic link"));
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(check_output(&fifo).unwrap_err().to_string().contains("named pipe"));
    }

    #[test]
    fn private_dir_is_mode_0700() {
        let d = private_dir("oscost-test-").unwrap();
        assert_eq!(std::fs::metadata(d.path()).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn own_dir_is_created_and_a_planted_link_refused() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".local/share/oscost");
        ensure_own_dir(home.path(), &dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        ensure_own_dir(home.path(), &dir).unwrap(); // idempotent

        let other = tempfile::tempdir().unwrap();
        let home2 = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home2.path().join(".local/share")).unwrap();
        std::os::unix::fs::symlink(other.path(), home2.path().join(".local/share/oscost")).unwrap();
        let e = ensure_own_dir(home2.path(), &home2.path().join(".local/share/oscost")).unwrap_err();
        assert!(matches!(e, UnsafeDir::Symlink(_)), "{e}");

        let home3 = tempfile::tempdir().unwrap();
        std::fs::create_dir(home3.path().join("shared")).unwrap();
        std::fs::set_permissions(home3.path().join("shared"), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = ensure_own_dir(home3.path(), &home3.path().join("shared/oscost")).unwrap_err();
        assert!(matches!(e, UnsafeDir::Shared { .. }), "{e}");
    }

    #[test]
    fn a_database_path_resolves_to_what_sqlite_is_given() {
        let d = tempfile::tempdir().unwrap();
        let fresh = resolve_db(&d.path().join("new/sub/r.db"), true).unwrap();
        assert!(!fresh.exists && fresh.path == d.path().join("new/sub/r.db"));
        assert_eq!(std::fs::metadata(d.path().join("new/sub")).unwrap().mode() & 0o777, 0o700);
        assert!(matches!(
            resolve_db(&d.path().join("missing/r.db"), false),
            Err(UnsafePath::Io { cause, .. }) if cause.kind() == io::ErrorKind::NotFound
        ));
        assert!(!d.path().join("missing").exists());

        // An own link (in an own folder) is followed, `..` included; the path has no link left.
        let real = d.path().join("real.db");
        let mut db = SQLITE_MAGIC.to_vec();
        db.resize(4096, 0);
        std::fs::write(&real, &db).unwrap();
        std::os::unix::fs::symlink("new/../real.db", d.path().join("link.db")).unwrap();
        let found = resolve_db(&d.path().join("link.db"), false).unwrap();
        assert!(found.exists && found.path == real, "{found:?}");

        // An own empty file is accepted (SQLite makes it a database); a file that is
        // not SQLite's, a named pipe and a loop of links are refused, without blocking.
        std::fs::write(d.path().join("empty.db"), b"").unwrap();
        assert!(resolve_db(&d.path().join("empty.db"), false).unwrap().exists);
        std::fs::write(d.path().join("junk.db"), b"SQLite format 2\0 and more").unwrap();
        assert!(matches!(resolve_db(&d.path().join("junk.db"), true), Err(UnsafePath::NotSqlite { .. })));
        let fifo = d.path().join("fifo.db");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(matches!(resolve_db(&fifo, true), Err(UnsafePath::NotAFile { kind: "a named pipe", .. })));
        std::os::unix::fs::symlink("b.db", d.path().join("a.db")).unwrap();
        std::os::unix::fs::symlink("a.db", d.path().join("b.db")).unwrap();
        assert!(matches!(resolve_db(&d.path().join("a.db"), true), Err(UnsafePath::TooManyLinks { .. })));
    }

    #[test]
    fn a_database_in_a_folder_others_can_write_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let shared = d.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = resolve_db(&shared.join("r.db"), true).unwrap_err();
        assert!(matches!(e, UnsafePath::SharedDbDir { .. }), "{e}");
        assert!(!shared.join("r.db").exists());
        // Below it, an own folder is fine: the sticky bit keeps others from renaming it.
        std::fs::create_dir(shared.join("mine")).unwrap();
        std::fs::set_permissions(shared.join("mine"), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(resolve_db(&shared.join("mine/r.db"), true).is_ok());
        // Without the sticky bit, anyone could rename it away: refused.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = resolve_db(&shared.join("mine/r.db"), true).unwrap_err();
        assert!(matches!(e, UnsafePath::SharedDir { .. }), "{e}");
    }
}
