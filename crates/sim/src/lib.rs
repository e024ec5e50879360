//! The scheduler laboratory: a deterministic discrete-event simulator that runs
//! schedulers no machine runs any more (Linux 2.0's goodness and recalc loops, with and
//! without the 1999 sched_yield fix; 2.2/2.4's goodness; the O(1) scheduler of 2.6.0)
//! and models of today's (CFS, EEVDF) on the founding texts' workloads.
//!
//! Nothing here measures: every figure is virtual time charged by a named cost profile
//! (`cost`), and every figure the simulator produces is labelled simulated, with its
//! profile. The engine (`engine`) owns the tasks, the CPUs, the timers and the clock;
//! a policy (`policy`) owns its run queues and decides who runs; a workload
//! (`workload`) says what the tasks do; `run` makes stored rows of its figures. Same
//! seed and same profile: the same output, to the nanosecond (a stored run carries its
//! profile, so `--profile live@RUN` repeats it).
#![forbid(unsafe_code)]

pub mod chat;
pub mod command;
pub mod cost;
pub mod engine;
pub mod fit;
pub mod policy;
pub mod profile_source;
pub mod run;
pub mod seeds;
pub mod sensitivity;
pub mod stored;
pub mod suites;
pub mod types;
pub mod workload;

pub use cost::CostProfile;
pub use engine::{Engine, Outcome};
pub use types::{PolicyKind, Rng, Scheduler};
pub use workload::WorkloadKind;

#[cfg(test)]
mod tests;
