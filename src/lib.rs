//! oscost measures what the operating system charges for its primitives (system
//! calls, context switches, process and thread creation) and proves each figure with
//! the kernel's own counts.
//!
//! Layout: `sys` (the only unsafe code: thin syscall wrappers and the cycle counter),
//! `clock` (calibration), `runner` (timed loops), `stats`, `kcounts` (what the kernel
//! observed), `bench::*` (one module per family), `store` (SQLite), `report`
//! (text renderings), `session` (a run's side effects) and `cli`.
#![deny(unsafe_code)]

pub mod bench;
pub mod cli;
pub mod clock;
pub mod helper;
pub mod kcounts;
pub mod machine;
pub mod model;
pub mod observe;
pub mod placement;
pub mod procfs;
pub mod report;
pub mod runner;
pub mod select;
pub mod session;
pub mod stats;
pub mod store;
#[allow(unsafe_code)]
pub mod sys;
pub mod tasks;
