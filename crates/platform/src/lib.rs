//! The platform layer: what oscost asks of the kernel and the file system, below any
//! notion of a figure. `sys` holds the only unsafe code (thin wrappers by subsystem,
//! each unsafe block with its SAFETY line); `procfs` reads /proc, bounded; `files` is
//! the one way a file or folder is created (never through a link, never where another
//! user can aim it); `leftovers` ends what a killed run left; `placement` and
//! `preflight` are the user's CPU, nice and policy request and the traps a machine
//! sets before a run; `clock` calibrates; `machine` is the fingerprint every run keeps.
#![deny(unsafe_code)]

pub mod clock;
pub mod files;
pub mod leftovers;
pub mod machine;
pub mod placement;
pub mod preflight;
pub mod procfs;
#[allow(unsafe_code)]
pub mod sys;
