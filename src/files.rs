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
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
        .prefix(&crate::leftovers::scratch_prefix(prefix))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// Replaces `path` with `bytes` so that a reader sees the old file or the new one,
/// never a part: a new file of random name beside it, synced, then renamed over it.
/// On any failure (a full disk) nothing is left behind and `path` is unchanged. The
/// file gets the mode an ordinary `open(O_CREAT, 0666)` gives (the kernel takes the
/// umask off): an export is meant to be read.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
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

/// Why a folder cannot hold oscost's data safely.
#[derive(Debug, thiserror::Error)]
pub enum UnsafeDir {
    #[error("{} is a symbolic link; oscost keeps its data only in a real folder (pass --db PATH)", .0.display())]
    Symlink(PathBuf),
    #[error("{} belongs to uid {owner}, not to uid {me} that oscost runs as (pass --db PATH)", .path.display())]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error("{} can be written by other users (mode {mode:o}); oscost keeps its data only where they cannot (pass --db PATH)", .path.display())]
    Shared { path: PathBuf, mode: u32 },
    #[error("{} is not a folder", .0.display())]
    NotDir(PathBuf),
    #[error("creating {}: {cause}", .path.display())]
    Create { path: PathBuf, cause: io::Error },
}

/// Makes sure `dir` and every folder from `root` (exclusive) down to it are real
/// folders (no symlink) owned by the effective user and not writable by others,
/// creating the missing ones with mode 0700. `root` is trusted as it is (`$HOME` or
/// `$XDG_DATA_HOME` as the user gave it); `dir` must lie below it.
pub fn ensure_own_dir(root: &Path, dir: &Path) -> Result<(), UnsafeDir> {
    let me = rustix::process::geteuid().as_raw();
    let below = dir.strip_prefix(root).unwrap_or(dir);
    let mut at = root.to_path_buf();
    for part in below.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) => check_own(&at, &m, me)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&at)
                    .map_err(|cause| UnsafeDir::Create { path: at.clone(), cause })?;
                // Created by us just now, but another user may have raced us to the name.
                let m =
                    std::fs::symlink_metadata(&at).map_err(|cause| UnsafeDir::Create { path: at.clone(), cause })?;
                check_own(&at, &m, me)?;
            }
            Err(cause) => return Err(UnsafeDir::Create { path: at, cause }),
        }
    }
    Ok(())
}

fn check_own(path: &Path, m: &std::fs::Metadata, me: u32) -> Result<(), UnsafeDir> {
    let kind = m.file_type();
    if kind.is_symlink() {
        return Err(UnsafeDir::Symlink(path.to_path_buf()));
    }
    if !kind.is_dir() {
        return Err(UnsafeDir::NotDir(path.to_path_buf()));
    }
    if m.uid() != me {
        return Err(UnsafeDir::Foreign { path: path.to_path_buf(), owner: m.uid(), me });
    }
    if m.mode() & 0o022 != 0 {
        return Err(UnsafeDir::Shared { path: path.to_path_buf(), mode: m.mode() & 0o7777 });
    }
    Ok(())
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
    fn write_atomic_replaces_a_planted_link_without_following_it() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"secret").unwrap();
        let out = d.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_atomic(&out, b"{}").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"secret");
        assert_eq!(std::fs::read(&out).unwrap(), b"{}");
        assert!(!std::fs::symlink_metadata(&out).unwrap().file_type().is_symlink());
        // Nothing but the two files remains (no temporary left).
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
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
}
