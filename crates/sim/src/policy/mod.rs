//! Scheduling policies behind one trait. Each owns its run queues and per-task state;
//! the engine tells it when tasks become runnable or stop being runnable, asks it to
//! pick, and passes on ticks, yields and wake-ups. Every decision returns the work it
//! did (`Work`), which the engine charges from the cost profile.
//!
//! Each rule is checked against the kernel's source and cited in the policy modules'
//! docs by version, file and function: Linux 2.0.40 (standing in for 2.0.30: the
//! differences are named), 2.4.16, Molnar's O(1) patch of January 2002 (2.5.2-pre6,
//! read from its 2.5.2-pre10 form) and 2.6.0. Every cited rule has a test named after
//! the version and function it follows.
//!
//! A policy is its module here plus one line in `policies!` below: the line gives its
//! variant, the name the command line and the database use, what it models and how to
//! build it. Everything that lists policies (the command line's values, `ALL`, names,
//! construction) is generated from that one list, so no `match` over policies is
//! written by hand.

pub mod cfs;
pub mod global;
pub mod linux20;
pub mod linux24;
pub mod o1;
pub mod o1_2002;

pub use super::types::{LoopbackXmit, Offer, Pick, Scheduler, SyncWake, Why, Work};
pub use global::{GlobalQueue, slot};

/// Declares `PolicyKind` and everything derived from the list: one line a policy.
macro_rules! policies {
    ($($variant:ident = $name:literal, $about:literal, $build:expr;)+) => {
        /// The simulated policies by name (the names stored runs carry).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
        pub enum PolicyKind {
            $(#[doc = $about] #[value(name = $name)] $variant,)+
        }

        impl PolicyKind {
            /// Every policy, in the registry's order.
            pub const ALL: [PolicyKind; [$(stringify!($variant)),+].len()] = [$(PolicyKind::$variant),+];

            /// The name the command line takes and stored runs carry.
            pub fn name(self) -> &'static str {
                match self {
                    $(PolicyKind::$variant => $name,)+
                }
            }

            /// What the policy models.
            pub fn about(self) -> &'static str {
                match self {
                    $(PolicyKind::$variant => $about,)+
                }
            }

            /// A fresh policy for `cpus` CPUs.
            pub fn build(self, cpus: usize) -> Box<dyn Scheduler> {
                match self {
                    $(PolicyKind::$variant => Box::new(($build)(cpus)),)+
                }
            }

            /// The policy of this name, if any.
            pub fn from_name(name: &str) -> Option<PolicyKind> {
                Self::ALL.iter().copied().find(|p| p.name() == name)
            }
        }
    };
}

policies! {
    Linux20 = "linux-2.0", "Linux 2.0's global run queue and goodness loop", |c| linux20::Linux20::new(c, false);
    Linux20YieldFix = "linux-2.0-yieldfix", "Linux 2.0 with Travis's sched_yield fix", |c| linux20::Linux20::new(c, true);
    Linux24 = "linux-2.4", "Linux 2.4's global run queue, goodness and recalculation", linux24::Linux24::new;
    O1 = "o1", "O(1) as in Linux 2.6.0 (Kolivas's 2003 interactivity, HZ 1000)", o1::O1::new;
    O12002 = "o1-2002", "O(1) as Molnar measured it in January 2002 (2.5.2-pre6 patch, load-history estimator, HZ 100)", o1_2002::O12002::new;
    Cfs = "cfs", "CFS, virtual runtime in a red-black tree", |c| cfs::Fair::new(c, false);
    Eevdf = "eevdf", "EEVDF, eligible virtual deadlines", |c| cfs::Fair::new(c, true);
}
