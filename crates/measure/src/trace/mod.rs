//! The kernel's own account of scheduling: the sched_switch, sched_waking,
//! sched_wakeup_new and sched_migrate_task tracepoints, recorded through perf ring
//! buffers on every allowed CPU with CLOCK_MONOTONIC_RAW timestamps.
//!
//! /proc's switch counts say how many switches a benchmark's tasks made; the events
//! say which: whether a hand-off went straight from A to B, whether a third task ran
//! in between, how long a woken task waited to run, whether a task left the CPU asleep
//! or still runnable, whether a fork's child ran first. Recording makes every switch
//! dearer, so it never happens in a timed region: a *trace pass* runs the workload
//! again after the timed pass (`tracepass::measure`), and reports its own time per
//! operation beside the untraced figure as the observer effect.
//!
//! Layout: `tracefs` finds the events' ids and record layouts (mounting tracefs for
//! the moment it takes to read them when it is not mounted, in a mount namespace of its
//! own, and leaving the machine as found);
//! `event` decodes raw records; `recorder` owns the per-CPU perf buffers; `handoff`
//! turns a benchmark's events into its row's `TraceSummary`; `system` is `oscost
//! trace`: every task of the machine (or of one command), and the run-queue length at
//! every switch.

pub mod event;
pub mod handoff;
pub mod recorder;
pub mod system;
pub mod tracefs;

pub use event::{Comm, Event, EventKind};
pub use recorder::{BufferSizes, Recorder};
pub use tracefs::{EventFormat, TraceSpec};

/// Why the scheduler's events could not be recorded. Each variant carries the whole
/// message a person reads (the path, the errno, the setting to change); the variant
/// says which stage failed, for code that treats them apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// The tracepoints' layouts could not be found or read (tracefs, a format file, a
    /// field the decoder needs).
    #[error("{0}")]
    Format(String),
    /// perf refused a tracepoint or its buffer (permission, no such event, memory).
    #[error("{0}")]
    Perf(String),
    /// The command to record could not be started.
    #[error("{0}")]
    Command(String),
    /// The workload of a trace pass failed.
    #[error("{0}")]
    Workload(String),
}

/// Finds the tracepoints and checks that this process may record them system-wide;
/// the reason, with what to do instead, when it may not.
pub fn prepare() -> Result<TraceSpec, TraceError> {
    let spec = tracefs::discover()?;
    // Opening one small buffer is the only sure test of permission (paranoia level,
    // capabilities, seccomp and containers all play a part).
    Recorder::open(&spec, &spec.cpus[..1], BufferSizes::probe()).map(drop)?;
    Ok(spec)
}

/// What to run instead, said once where tracing is unavailable.
pub const UNAVAILABLE_HINT: &str =
    "run as root (or with CAP_PERFMON, or kernel.perf_event_paranoid=-1) for the kernel's per-switch events";
