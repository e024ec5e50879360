//! Scheduling policies behind one trait. Each owns its run queues and per-task state;
//! the engine tells it when tasks become runnable or stop being runnable, asks it to
//! pick, and passes on ticks, yields and wake-ups. Every decision returns the work it
//! did (`Work`), which the engine charges from the cost profile.
//!
//! Each rule is checked against the kernel's source and cited in the policy modules'
//! docs by version, file and function: Linux 2.0.40 (standing in for 2.0.30: the
//! differences are named), 2.4.16 and 2.6.0. Every cited rule has a test in
//! `sim/tests.rs` named after the version and function it follows.

pub mod cfs;
pub mod global;
pub mod linux20;
pub mod linux24;
pub mod o1;

pub use super::types::{Pick, PolicyKind, Scheduler, Why, Work};
pub use global::{GlobalQueue, slot};

impl PolicyKind {
    /// A fresh policy for `cpus` CPUs.
    pub fn build(self, cpus: usize) -> Box<dyn Scheduler> {
        match self {
            PolicyKind::Linux20 => Box::new(linux20::Linux20::new(cpus, false)),
            PolicyKind::Linux20YieldFix => Box::new(linux20::Linux20::new(cpus, true)),
            PolicyKind::Linux24 => Box::new(linux24::Linux24::new(cpus)),
            PolicyKind::O1 => Box::new(o1::O1::new(cpus)),
            PolicyKind::Cfs => Box::new(cfs::Fair::new(cpus, false)),
            PolicyKind::Eevdf => Box::new(cfs::Fair::new(cpus, true)),
        }
    }
}
