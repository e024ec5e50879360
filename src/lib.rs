//! oscost measures what the operating system charges for its primitives (system
//! calls, context switches, process and thread creation) and proves each figure with
//! the kernel's own counts.
//!
//! The layers below this package are crates, lowest first, so that none can name one
//! above it: `oscost-platform` (system calls, /proc, files, the machine), then
//! `oscost-figure` (what a figure is), then beside each other `oscost-sim` (the
//! scheduler laboratory, which measures and opens nothing), `oscost-store` (SQLite and
//! PostgreSQL behind one trait) and `oscost-measure` (timed loops, rounds, the
//! families and conditions). Their modules are re-exported here under their own names,
//! so one path (`oscost::model`, `oscost::bench`) serves the binary, the tests and
//! anyone who links the library.
//!
//! This package's own layers, lowest first (a folder names only the folders before
//! it, and the layers below):
//! - `judge`: a condition against its baseline, a machine's spread between runs, the
//!   precision a row has reached, a figure's history split at its change points;
//! - `catalogue`: what can be selected and what can be stored (every id a run may
//!   hold, from the families, `observe`, `trace` and the simulator);
//! - `report`: renderings (tables, charts, exports), which know the model, never a
//!   family;
//! - `views`: layouts that name benchmarks (the founding texts' reprints);
//! - `profiles`: the simulator's cost profiles from a database and the machine figures
//!   a `live` profile measures, handed to the simulator as its `ProfileSource`;
//! - `session`: a run, from its plan checked before anything is measured to its rows
//!   stored;
//! - `runs`: stored runs as commands name them (compare's sides and its `--fail-on`
//!   gate), and runs carried between databases and files;
//! - `crosscheck`: oscost's figures beside other tools, one worker round per pair;
//! - `cli`: arguments, one library call per command, printing; the man pages.
#![forbid(unsafe_code)]

pub use oscost_figure::{exchange, histo, key, model, published, stats, sweep, unit};
pub use oscost_measure::{bench, condition, helper, kcounts, observe, rounds, runner, tasks, trace, tracepass, worker};
pub use oscost_platform::{clock, files, leftovers, machine, placement, preflight, procfs, sys};
pub use oscost_sim as sim;
pub use oscost_store as store;

pub mod catalogue;
pub mod cli;
pub mod crosscheck;
pub mod judge;
pub mod profiles;
pub mod report;
pub mod runs;
pub mod session;
pub mod views;
