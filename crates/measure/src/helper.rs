//! The program the creation benchmarks exec, held as an open, verified descriptor.
//!
//! Why a descriptor and never a path: oscost often runs as root, and a program it execs
//! by path from a place another user can write (a shared temp or cache folder) lets that
//! user replace the program between two execs and run code as root. So:
//! - the embedded no-op helper (assembled by the build script, so one oscost binary is
//!   all a user needs) is written to a memfd that is then sealed against every change and
//!   reopened read-only; it never exists on any file system another user can reach;
//! - a program the user names with `--noop PATH` is opened once and its descriptor is
//!   checked: a regular, executable file owned by the caller or by root and writable by
//!   no one else. Renaming or replacing the path afterwards changes nothing;
//! - every exec goes through `/proc/self/fd/N` of such a descriptor ([`Executable::inherit`]),
//!   which names the open file itself, not a path to look up again.

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use rustix::fs::{MemfdFlags, Mode, OFlags, SealFlags};

/// The helper's bytes (empty on architectures without a helper source).
pub const NOOP_ELF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oscost-noop"));

/// The raw loop's bytes, which `crosscheck` runs beside other tools (empty where it is
/// not built).
pub const RAW_LOOP_ELF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oscost-rawloop"));

/// Why a program cannot be held or executed.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("no no-op helper is built for this architecture; pass --noop PATH")]
    NotBuilt,
    #[error("cannot hold the no-op helper in sealed memory ({0}); pass --noop PATH (a program owned by you or root)")]
    Sealing(#[source] io::Error),
    #[error("the no-op helper {} cannot be opened: {source}", .path.display())]
    Open { path: std::path::PathBuf, source: io::Error },
    #[error("the no-op helper: {0}; it is not executed")]
    UnsafePath(#[from] oscost_platform::files::UnsafePath),
    #[error("fstat of {}: {source}", .path.display())]
    Stat { path: std::path::PathBuf, source: io::Error },
    #[error("the no-op helper {} {why}; it is not executed", .path.display())]
    Untrusted { path: std::path::PathBuf, why: Untrusted },
    #[error("the no-op helper's descriptor {fd} was not passed on: {source}")]
    NotInherited { fd: std::os::fd::RawFd, source: io::Error },
}

/// Why a file's mode or owner makes it unsafe to execute.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Untrusted {
    #[error("is not a regular file")]
    NotRegular,
    #[error("is not executable")]
    NotExecutable,
    #[error("belongs to uid {owner}, neither you (uid {euid}) nor root")]
    Owner { owner: u32, euid: u32 },
    #[error("is writable by {} (mode {:o})", if .mode & 0o002 != 0 { "anyone" } else { "its group" }, .mode & 0o7777)]
    Writable { mode: u32 },
}

/// Why a run has no no-op program to exec, as the user is to read it. It crosses into
/// worker processes (JSON) with the options, so it holds the message, made once where
/// the failure happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[error("{0}")]
#[serde(transparent)]
pub struct NoNoop(pub String);

impl From<HelperError> for NoNoop {
    fn from(e: HelperError) -> Self {
        NoNoop(e.to_string())
    }
}

impl From<&str> for NoNoop {
    fn from(why: &str) -> Self {
        NoNoop(why.into())
    }
}

/// A program to exec, opened and verified once.
pub struct Executable {
    fd: OwnedFd,
    origin: String,
}

impl fmt::Debug for Executable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Executable({}, fd {})", self.origin, self.fd.as_raw_fd())
    }
}

impl Executable {
    /// The embedded no-op helper in a sealed, read-only memfd.
    pub fn embedded() -> Result<Self, HelperError> {
        if NOOP_ELF.is_empty() {
            return Err(HelperError::NotBuilt);
        }
        let fd = sealed_memfd("oscost-noop", NOOP_ELF).map_err(HelperError::Sealing)?;
        Ok(Self { fd, origin: "oscost's embedded no-op helper (sealed memfd)".into() })
    }

    /// Another program embedded into oscost (`bytes`), held in a sealed, read-only
    /// memfd named `name`, exactly as the no-op helper is.
    pub fn sealed(name: &str, bytes: &[u8]) -> io::Result<Self> {
        Ok(Self { fd: sealed_memfd(name, bytes)?, origin: format!("oscost's embedded {name} (sealed memfd)") })
    }

    /// Opens `path` under the rules of a database path (`files::open_input`: no
    /// link another user could change, no folder another user can write on the way, a
    /// regular file of the caller's or root's, opened without blocking) and checks the
    /// open file: executable, and not writable by group or others.
    pub fn open_verified(path: &Path) -> Result<Self, HelperError> {
        let at = || path.to_path_buf();
        let fd = OwnedFd::from(oscost_platform::files::open_input(path)?);
        let st = rustix::fs::fstat(&fd).map_err(|e| HelperError::Stat { path: at(), source: e.into() })?;
        check_trusted(st.st_mode, st.st_uid, rustix::process::geteuid().as_raw())
            .map_err(|why| HelperError::Untrusted { path: at(), why })?;
        Ok(Self { fd, origin: path.display().to_string() })
    }

    /// The program a parent process opened and verified, received as the inherited
    /// descriptor `fd` (a worker process's view of the run's helper).
    pub fn adopt(fd: std::os::fd::RawFd, origin: String) -> Result<Self, HelperError> {
        let fd =
            oscost_platform::sys::adopt_inherited_fd(fd).map_err(|e| HelperError::NotInherited { fd, source: e })?;
        Ok(Self { fd, origin })
    }

    /// Where the program came from, for messages.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// A descriptor children inherit across exec (not close-on-exec), held for the
    /// duration of one benchmark, so that a shell or a script interpreter started by
    /// the benchmark can open the program through `/proc/self/fd/N` as well.
    pub fn inherit(&self) -> io::Result<Inherited> {
        Ok(Inherited(rustix::io::dup(&self.fd)?))
    }
}

/// An inheritable duplicate of an [`Executable`]'s descriptor; closed on drop.
#[derive(Debug)]
pub struct Inherited(OwnedFd);

impl Inherited {
    /// The descriptor's number, which a child started now inherits as is.
    pub fn raw(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }

    /// The path that execs the open file (valid in this process and in children that
    /// inherit the descriptor).
    pub fn exec_path(&self) -> String {
        format!("/proc/self/fd/{}", self.0.as_raw_fd())
    }
}

/// Why a file may not be executed by oscost, from its mode and owner; `Ok` when its
/// contents can change only by its owner and that owner is `euid` or root.
pub fn check_trusted(mode: u32, owner: u32, euid: u32) -> Result<(), Untrusted> {
    if mode & libc::S_IFMT != libc::S_IFREG {
        return Err(Untrusted::NotRegular);
    }
    if mode & 0o111 == 0 {
        return Err(Untrusted::NotExecutable);
    }
    if owner != euid && owner != 0 {
        return Err(Untrusted::Owner { owner, euid });
    }
    if mode & 0o022 != 0 {
        return Err(Untrusted::Writable { mode });
    }
    Ok(())
}

/// Writes `bytes` into a new memfd named `name`, seals it against writes, growth, shrinking and
/// further sealing, checks the contents, and returns a read-only descriptor of it (a
/// file that still has a writable descriptor cannot be executed: ETXTBSY).
fn sealed_memfd(name: &str, bytes: &[u8]) -> io::Result<OwnedFd> {
    let base = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
    // MFD_EXEC (Linux 6.3+) asks for an executable memfd where vm.memfd_noexec would
    // otherwise refuse; older kernels reject the flag and make memfds executable anyway.
    let rw = match rustix::fs::memfd_create(name, base | MemfdFlags::EXEC) {
        Err(rustix::io::Errno::INVAL) => rustix::fs::memfd_create(name, base)?,
        r => r?,
    };
    let mut written = 0;
    while written < bytes.len() {
        written += rustix::io::write(&rw, &bytes[written..])?;
    }
    rustix::fs::fcntl_add_seals(&rw, SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL)?;
    let ro = rustix::fs::open(
        format!("/proc/self/fd/{}", rw.as_fd().as_raw_fd()),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    drop(rw);
    let mut back = vec![0u8; bytes.len() + 1];
    let n = rustix::io::pread(&ro, &mut back, 0)?;
    if &back[..n] != bytes {
        return Err(io::Error::other("the sealed copy does not match the embedded program"));
    }
    Ok(ro)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_rules() {
        let reg = libc::S_IFREG;
        assert!(check_trusted(reg | 0o755, 0, 0).is_ok());
        assert!(check_trusted(reg | 0o700, 1000, 1000).is_ok());
        assert!(check_trusted(reg | 0o755, 0, 1000).is_ok(), "root's programs are trusted by everyone");
        assert!(check_trusted(reg | 0o755, 65534, 0).unwrap_err().to_string().contains("uid 65534"));
        assert!(check_trusted(reg | 0o777, 0, 0).unwrap_err().to_string().contains("anyone"));
        assert!(check_trusted(reg | 0o775, 0, 0).unwrap_err().to_string().contains("group"));
        assert!(check_trusted(reg | 0o644, 0, 0).unwrap_err().to_string().contains("not executable"));
        assert!(check_trusted(libc::S_IFDIR | 0o755, 0, 0).unwrap_err().to_string().contains("regular"));
    }

    #[test]
    fn the_embedded_helper_is_sealed_and_runs() {
        if NOOP_ELF.is_empty() {
            assert!(Executable::embedded().is_err());
            return;
        }
        let exe = Executable::embedded().unwrap();
        let seals = rustix::fs::fcntl_get_seals(&exe.fd).unwrap();
        assert!(seals.contains(SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL));
        // Not writable through the descriptor we hold, nor by reopening it for writing.
        assert!(rustix::io::write(&exe.fd, b"x").is_err());
        let reopened = rustix::fs::open(
            format!("/proc/self/fd/{}", exe.fd.as_raw_fd()),
            OFlags::RDWR | OFlags::CLOEXEC,
            Mode::empty(),
        );
        if let Ok(w) = reopened {
            assert_eq!(rustix::io::write(&w, b"x").unwrap_err(), rustix::io::Errno::PERM);
        }
        let inherited = exe.inherit().unwrap();
        let status = std::process::Command::new(inherited.exec_path()).status().unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_user_program_is_checked_on_its_descriptor() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("prog");
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let exe = Executable::open_verified(&p).unwrap();
        // Replacing the path after opening changes nothing: the open file runs.
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, "#!/bin/sh\nexit 3\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let inherited = exe.inherit().unwrap();
        assert!(std::process::Command::new(inherited.exec_path()).status().unwrap().success());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o757)).unwrap();
        assert!(Executable::open_verified(&p).unwrap_err().to_string().contains("writable by anyone"));
        let missing = dir.path().join("absent");
        assert!(Executable::open_verified(&missing).unwrap_err().to_string().contains("absent"));
    }
}
