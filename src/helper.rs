//! The static no-op program the creation benchmarks exec. It is assembled by the build
//! script, embedded in oscost, and written out on first use to the user's cache
//! directory, so a single oscost binary is all a user needs.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The helper's bytes (empty on architectures without a helper source).
pub const NOOP_ELF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oscost-noop"));

/// Where the helper is written: `$XDG_CACHE_HOME/oscost`, else `~/.cache/oscost`,
/// else the temp directory; the name carries the version and size so versions coexist.
pub fn default_location() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|x| !x.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("oscost").join(format!("oscost-noop-{}-{}", env!("CARGO_PKG_VERSION"), NOOP_ELF.len()))
}

/// Writes the helper to `path` unless an identical copy is there; returns the path.
pub fn install(path: &Path) -> std::io::Result<PathBuf> {
    if NOOP_ELF.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "no no-op helper is built for this architecture",
        ));
    }
    if std::fs::read(path).map(|b| b == NOOP_ELF).unwrap_or(false) {
        return Ok(path.to_path_buf());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(NOOP_ELF)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o755))?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(path.to_path_buf())
}

/// Installs the helper at its default location, or, when that cannot be written (no
/// home directory, a read-only cache), in a per-user folder of the temp directory.
/// Returns the path, or why neither place worked.
pub fn install_default() -> Result<PathBuf, String> {
    let first = default_location();
    match install(&first) {
        Ok(p) => Ok(p),
        Err(e1) => {
            let name = first.file_name().map(|n| n.to_owned()).unwrap_or_default();
            let fallback = std::env::temp_dir().join(format!("oscost-{}", crate::sys::uid())).join(name);
            install(&fallback).map_err(|e2| {
                format!(
                    "cannot write the no-op helper to {} ({e1}) nor to {} ({e2})",
                    first.display(),
                    fallback.display()
                )
            })
        }
    }
}

/// Checks that `path` is a regular, executable file; the error names the path.
pub fn check_executable(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("the no-op helper {} is missing: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("the no-op helper {} is not a regular file", path.display()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!("the no-op helper {} is not executable", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_installs_and_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("noop");
        if NOOP_ELF.is_empty() {
            assert!(install(&p).is_err());
            return;
        }
        install(&p).unwrap();
        assert!(check_executable(&p).is_ok());
        let status = std::process::Command::new(&p).status().unwrap();
        assert!(status.success());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(check_executable(&p).unwrap_err().contains("not executable"));
        assert!(check_executable(&dir.path().join("absent")).unwrap_err().contains("absent"));
    }
}
