//! Where the scheduler's tracepoints are described: their perf ids
//! (`events/sched/<name>/id`) and the layout of their raw records
//! (`events/sched/<name>/format`), read from tracefs.
//!
//! perf_event_open needs only the id, so tracefs is needed for the moment it takes to
//! read these files. When it is not mounted, oscost (as root) mounts it on
//! /sys/kernel/tracing inside a mount namespace of one thread's own (unshared for the
//! purpose), reads, and unmounts it: no other process ever sees that mount, the
//! machine is left as found, and the spec crosses to worker processes as JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::TraceError;

/// One field of a raw tracepoint record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Field {
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
}

/// A tracepoint's perf id and its record's fields by name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventFormat {
    pub id: u64,
    pub fields: BTreeMap<String, Field>,
}

impl EventFormat {
    /// The field `name`, or why the kernel's layout cannot be used.
    pub fn field(&self, name: &str) -> Result<Field, TraceError> {
        self.fields
            .get(name)
            .copied()
            .ok_or_else(|| TraceError::Format(format!("tracepoint {} has no field {name}", self.id)))
    }
}

/// The four tracepoints oscost records, and the CPUs to record them on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TraceSpec {
    pub switch: EventFormat,
    pub waking: EventFormat,
    pub wakeup_new: EventFormat,
    pub migrate: EventFormat,
    /// The CPUs this process may run on (all of them are recorded).
    pub cpus: Vec<usize>,
}

/// Parses a tracepoint's `format` file: its `ID:` line and its `field:` lines.
pub fn parse_format(text: &str) -> Result<EventFormat, TraceError> {
    let mut id = None;
    let mut fields = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("ID:") {
            id = v.trim().parse::<u64>().ok();
        } else if let Some(rest) = line.strip_prefix("field:") {
            let mut decl = "";
            let (mut offset, mut size, mut signed) = (None, None, false);
            for (i, part) in rest.split(';').map(str::trim).enumerate() {
                if i == 0 {
                    decl = part;
                } else if let Some(v) = part.strip_prefix("offset:") {
                    offset = v.parse().ok();
                } else if let Some(v) = part.strip_prefix("size:") {
                    size = v.parse().ok();
                } else if let Some(v) = part.strip_prefix("signed:") {
                    signed = v == "1";
                }
            }
            // "char prev_comm[16]" → prev_comm; "__data_loc char[] comm" → comm.
            let name = decl.rsplit(' ').next().unwrap_or("").split('[').next().unwrap_or("");
            if let (false, Some(offset), Some(size)) = (name.is_empty(), offset, size) {
                fields.insert(name.to_string(), Field { offset, size, signed });
            }
        }
    }
    let id = id.ok_or_else(|| TraceError::Format("a tracepoint format without an ID line".into()))?;
    Ok(EventFormat { id, fields })
}

/// The tracefs mounted now, if any: a tracefs mount, or debugfs's `tracing`.
fn mounted_tracefs(mounts: &str) -> Option<PathBuf> {
    let mut debugfs = None;
    for line in mounts.lines() {
        let mut it = line.split_whitespace();
        let (_, Some(dir), Some(kind)) = (it.next(), it.next(), it.next()) else { continue };
        match kind {
            "tracefs" => return Some(PathBuf::from(dir)),
            "debugfs" => debugfs = Some(Path::new(dir).join("tracing")),
            _ => {}
        }
    }
    debugfs.filter(|d| d.join("events").is_dir())
}

/// Reads the four formats under a tracefs root.
fn read_spec(root: &Path, cpus: Vec<usize>) -> Result<TraceSpec, TraceError> {
    let read = |name: &str| {
        let path = root.join("events/sched").join(name).join("format");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| TraceError::Format(format!("reading {}: {e}", path.display())))?;
        parse_format(&text).map_err(|e| TraceError::Format(format!("{}: {e}", path.display())))
    };
    Ok(TraceSpec {
        switch: read("sched_switch")?,
        waking: read("sched_waking")?,
        wakeup_new: read("sched_wakeup_new")?,
        migrate: read("sched_migrate_task")?,
        cpus,
    })
}

/// Where oscost mounts tracefs when nobody has.
const TRACEFS_DIR: &str = "/sys/kernel/tracing";

/// Finds the tracepoints: from the mounted tracefs, or from one oscost mounts for the
/// moment and unmounts.
pub fn discover() -> Result<TraceSpec, TraceError> {
    // Called from an unpinned thread (the coordinator): every CPU the run may use.
    let cpus = oscost_platform::sys::allowed_cpus()
        .map_err(|e| TraceError::Format(format!("reading the allowed CPUs: {e}")))?;
    if cpus.is_empty() {
        return Err(TraceError::Format("no CPU is allowed".into()));
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts")
        .map_err(|e| TraceError::Format(format!("reading /proc/self/mounts: {e}")))?;
    if let Some(root) = mounted_tracefs(&mounts) {
        return read_spec(&root, cpus);
    }
    // Mounted in a thread's own mount namespace: no other process (another oscost
    // reading at the same moment, a test comparing the mount table) ever sees it, and
    // it vanishes with the thread whatever happens.
    std::thread::scope(|s| {
        s.spawn(|| {
            use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags, mount, mount_change, unmount};
            let denied = |e: &dyn std::fmt::Display| {
                TraceError::Format(format!("tracefs is not mounted and mounting it needs root ({e})"))
            };
            oscost_platform::sys::unshare_mount_namespace().map_err(|e| denied(&e))?;
            mount_change("/", MountPropagationFlags::PRIVATE | MountPropagationFlags::REC).map_err(|e| denied(&e))?;
            mount("nodev", TRACEFS_DIR, "tracefs", MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC, None)
                .map_err(|e| denied(&e))?;
            let spec = read_spec(Path::new(TRACEFS_DIR), cpus);
            let _ = unmount(TRACEFS_DIR, UnmountFlags::empty());
            spec
        })
        .join()
        .unwrap_or_else(|_| Err(TraceError::Format("reading tracefs panicked".into())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:__data_loc char[] comm;\toffset:40;\tsize:4;\tsigned:0;

print fmt: \"prev_comm=%s\", REC->prev_comm
";

    #[test]
    fn format_files_give_ids_and_fields() {
        let f = parse_format(SWITCH).unwrap();
        assert_eq!(f.id, 372);
        assert_eq!(f.field("prev_comm").unwrap(), Field { offset: 8, size: 16, signed: false });
        assert_eq!(f.field("prev_pid").unwrap(), Field { offset: 24, size: 4, signed: true });
        assert_eq!(f.field("prev_state").unwrap().size, 8);
        assert_eq!(f.field("comm").unwrap().offset, 40);
        assert!(f.field("next_pid").unwrap_err().to_string().contains("next_pid"));
        assert!(parse_format("format:\n").is_err());
    }

    #[test]
    fn finds_tracefs_or_debugfs_tracing() {
        let m = "proc /proc proc rw 0 0\ntracefs /sys/kernel/tracing tracefs rw 0 0\n";
        assert_eq!(mounted_tracefs(m), Some(PathBuf::from("/sys/kernel/tracing")));
        assert_eq!(mounted_tracefs("proc /proc proc rw 0 0\n"), None);
        // debugfs without a readable tracing/events is no tracefs.
        assert_eq!(mounted_tracefs("debugfs /nonexistent-debugfs debugfs rw 0 0\n"), None);
    }
}
