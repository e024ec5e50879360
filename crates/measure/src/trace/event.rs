//! Scheduler events decoded from raw tracepoint records, by the layouts tracefs gave.

use super::tracefs::{EventFormat, Field, TraceSpec};

/// A task name as the kernel keeps it (up to 15 bytes, NUL-padded).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm(pub [u8; 16]);

impl Comm {
    pub fn new(name: &str) -> Self {
        let mut c = [0u8; 16];
        let b = name.as_bytes();
        let n = b.len().min(15);
        c[..n].copy_from_slice(&b[..n]);
        Comm(c)
    }

    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..end])
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `prev` left the CPU for `next`. `prev_state` is 0 (or only the preemption bit,
    /// 0x100 and above) when prev stayed runnable, a sleep state otherwise.
    Switch { prev_pid: i32, prev_comm: Comm, prev_state: i64, next_pid: i32, next_comm: Comm },
    /// `pid` is being woken, to run on `target_cpu`.
    Waking { pid: i32, target_cpu: i32 },
    /// A new task `pid` was woken for the first time (the event's task forked it).
    WakeupNew { pid: i32, target_cpu: i32 },
    /// `pid` moved between CPUs.
    Migrate { pid: i32, orig_cpu: i32, dest_cpu: i32 },
}

/// One event: when (CLOCK_MONOTONIC_RAW ns), on which CPU, in which task's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub time: u64,
    pub cpu: u32,
    /// The task running when the event fired (the waker of a Waking, the parent of a
    /// WakeupNew).
    pub tid: u32,
    pub kind: EventKind,
}

impl Event {
    /// Whether a switch's previous task left the CPU still runnable (preempted or
    /// yielding) rather than asleep: the low byte holds the task's report state.
    pub fn left_runnable(prev_state: i64) -> bool {
        prev_state & 0xff == 0
    }
}

/// Which tracepoint a buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Switch,
    Waking,
    WakeupNew,
    Migrate,
}

impl Which {
    pub const ALL: [Which; 4] = [Which::Switch, Which::Waking, Which::WakeupNew, Which::Migrate];

    pub fn format(self, spec: &TraceSpec) -> &EventFormat {
        match self {
            Which::Switch => &spec.switch,
            Which::Waking => &spec.waking,
            Which::WakeupNew => &spec.wakeup_new,
            Which::Migrate => &spec.migrate,
        }
    }
}

fn int(raw: &[u8], f: Field) -> Option<i64> {
    let b = raw.get(f.offset..f.offset + f.size)?;
    Some(match (f.size, f.signed) {
        (4, true) => i32::from_ne_bytes(b.try_into().ok()?) as i64,
        (4, false) => u32::from_ne_bytes(b.try_into().ok()?) as i64,
        (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
        (2, _) => u16::from_ne_bytes(b.try_into().ok()?) as i64,
        _ => return None,
    })
}

fn comm(raw: &[u8], f: Field) -> Option<Comm> {
    let b = raw.get(f.offset..f.offset + f.size.min(16))?;
    let mut c = [0u8; 16];
    c[..b.len()].copy_from_slice(b);
    Some(Comm(c))
}

/// The offsets of the fields oscost reads, looked up once per buffer.
#[derive(Debug, Clone, Copy)]
pub enum Decoder {
    Switch { prev_comm: Field, prev_pid: Field, prev_state: Field, next_comm: Field, next_pid: Field },
    Waking { pid: Field, target_cpu: Field },
    WakeupNew { pid: Field, target_cpu: Field },
    Migrate { pid: Field, orig_cpu: Field, dest_cpu: Field },
}

impl Decoder {
    pub fn new(which: Which, spec: &TraceSpec) -> Result<Self, super::TraceError> {
        let f = which.format(spec);
        Ok(match which {
            Which::Switch => Decoder::Switch {
                prev_comm: f.field("prev_comm")?,
                prev_pid: f.field("prev_pid")?,
                prev_state: f.field("prev_state")?,
                next_comm: f.field("next_comm")?,
                next_pid: f.field("next_pid")?,
            },
            Which::Waking => Decoder::Waking { pid: f.field("pid")?, target_cpu: f.field("target_cpu")? },
            Which::WakeupNew => Decoder::WakeupNew { pid: f.field("pid")?, target_cpu: f.field("target_cpu")? },
            Which::Migrate => Decoder::Migrate {
                pid: f.field("pid")?,
                orig_cpu: f.field("orig_cpu")?,
                dest_cpu: f.field("dest_cpu")?,
            },
        })
    }

    /// The event a raw record holds; None for a record too short for the layout.
    pub fn decode(&self, raw: &[u8]) -> Option<EventKind> {
        let i32_of = |f: Field| int(raw, f).map(|v| v as i32);
        Some(match *self {
            Decoder::Switch { prev_comm, prev_pid, prev_state, next_comm, next_pid } => EventKind::Switch {
                prev_pid: i32_of(prev_pid)?,
                prev_comm: comm(raw, prev_comm)?,
                prev_state: int(raw, prev_state)?,
                next_pid: i32_of(next_pid)?,
                next_comm: comm(raw, next_comm)?,
            },
            Decoder::Waking { pid, target_cpu } => {
                EventKind::Waking { pid: i32_of(pid)?, target_cpu: i32_of(target_cpu)? }
            }
            Decoder::WakeupNew { pid, target_cpu } => {
                EventKind::WakeupNew { pid: i32_of(pid)?, target_cpu: i32_of(target_cpu)? }
            }
            Decoder::Migrate { pid, orig_cpu, dest_cpu } => {
                EventKind::Migrate { pid: i32_of(pid)?, orig_cpu: i32_of(orig_cpu)?, dest_cpu: i32_of(dest_cpu)? }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tracefs::parse_format;
    use super::*;

    #[test]
    fn switch_records_decode_by_their_layout() {
        let f = parse_format(
            "ID: 1\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
             \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
             \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
             \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
             \tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n",
        )
        .unwrap();
        let spec = TraceSpec { switch: f.clone(), waking: f.clone(), wakeup_new: f.clone(), migrate: f, cpus: vec![0] };
        let d = Decoder::new(Which::Switch, &spec).unwrap();
        let mut raw = vec![0u8; 64];
        raw[8..12].copy_from_slice(b"pipe");
        raw[24..28].copy_from_slice(&1234i32.to_ne_bytes());
        raw[32..40].copy_from_slice(&1i64.to_ne_bytes());
        raw[40..46].copy_from_slice(b"worker");
        raw[56..60].copy_from_slice(&99i32.to_ne_bytes());
        let EventKind::Switch { prev_pid, prev_comm, prev_state, next_pid, next_comm } = d.decode(&raw).unwrap() else {
            panic!("not a switch")
        };
        assert_eq!((prev_pid, prev_state, next_pid), (1234, 1, 99));
        assert_eq!((prev_comm.as_str(), next_comm.as_str()), ("pipe".into(), "worker".into()));
        assert!(d.decode(&raw[..40]).is_none(), "a short record is refused");
        assert!(Decoder::new(Which::Waking, &spec).is_err(), "a layout without the fields is refused");
        assert!(!Event::left_runnable(1) && Event::left_runnable(0) && Event::left_runnable(0x100));
    }
}
