//! The measuring core: timed loops and their probes (`runner`), the trace pass that
//! follows a timed one (`tracepass`, `trace`, `observe`), what the kernel counted
//! (`kcounts`), peer threads and processes (`tasks`), rounds merged and judged
//! (`rounds`), whether the host shares the measuring core (`shared_core`), the programs exec'd by descriptor (`helper`), a round in a fresh process
//! (`worker`); the families (`bench`: a new benchmark is an entry in its family's
//! `BENCHES`, a new family its module and one line in `bench::registry`) and the
//! conditions a run is measured under (`condition`: a file each, one line in
//! `condition::KINDS`).
#![forbid(unsafe_code)]

pub mod bench;
pub mod condition;
pub mod helper;
pub mod kcounts;
pub mod observe;
pub mod rounds;
pub mod runner;
pub mod shared_core;
pub mod tasks;
pub mod trace;
pub mod tracepass;
pub mod worker;
