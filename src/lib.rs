//! oscost measures what the operating system charges for its primitives (system
//! calls, context switches, process and thread creation) and proves each figure with
//! the kernel's own counts.
//!
//! Layout, lowest layer first (a module imports only from layers below it):
//! - `sys` (the only unsafe code: thin wrappers by subsystem, the raw `syscall` and the
//!   cycle counter), `procfs` (readers of /proc) and `files` (the one way oscost creates
//!   a file or folder: never through a link, never where another user can aim it),
//!   `leftovers` (what a killed run left: worker groups and scratch folders, ended by
//!   the next run) and `preflight` (what the machine is doing before a run: busy CPUs,
//!   an inherited nice, policy, cgroup weight or affinity);
//! - `published` (the founding texts' figures, embedded), `clock` (calibration),
//!   `stats`, `unit` (what a figure's unit measures, and how it prints), `key` (a
//!   figure's identity: the benchmark's id, the method and typed parameters, which
//!   producers declare and readers ask for), `model` (the
//!   row, flag, count, status and run-kind types every layer agrees on), `exchange`
//!   (why an import refuses a file or a run, and its bounds: raised by the report's
//!   import, passed through by the store), `sweep` (a
//!   family's chart declaration, which the report draws), `machine` (the fingerprint),
//!   `kcounts` (what the kernel
//!   observed), `placement` (the user's CPU, nice and policy request), `histo` (per-call
//!   samples as HDR histograms), `helper` (the
//!   program the exec probes run, held as a verified descriptor);
//! - `runner` (timed loops, probes and their failure codes), `tracepass` (the trace
//!   pass that follows a timed one, beside the runner), `tasks` (the one
//!   lifecycle of peer threads and processes) and `rounds` (a benchmark's rounds
//!   merged, intervals and flags judged over them);
//! - `bench` (the registry and the family contract) with one module per family;
//!   `observe`; `worker` (a round in a fresh process, and the coordinator's side);
//! - `sim` (the scheduler laboratory: a discrete-event engine, the policies, the
//!   founding texts' workloads and cost profiles; it opens no database and measures
//!   nothing: a `live` profile's switch costs and machine figures come from the
//!   `ProfileSource` it is handed) and `trace` (the scheduler's tracepoints);
//! - `producers` (every id a run can store rows under, gathered from the families,
//!   `observe`, `trace` and `sim`);
//! - `paired` (a condition against its baseline, round by round), `noise` (a
//!   machine's spread between runs, computed from its A/A runs) and
//!   `precision` (what a row of `run --precision` has reached, and whether rounds can
//!   still reach a target);
//! - `history` (each figure's run medians over stored runs, split at its change
//!   points and annotated with the comparability key that changed);
//! - `store` (SQLite and PostgreSQL behind one trait, one row codec) and `report`
//!   (renderings: tables, charts, exports), which know the model, never a family;
//! - `condition` (what a run is measured under beside its baseline: settings,
//!   isolations, observers, neighbours; one file each implementing `condition::Act`,
//!   whose hooks default to doing nothing, and one line in `condition::KINDS`);
//! - `views` (layouts that name benchmarks: the founding texts' reprints);
//! - `run_plan` (what a run will measure, checked before anything is),
//!   `stored_profiles` (the simulator's profiles from a database: the source `sim`
//!   is handed, with `machine_probes`, the machine figures a `live` profile takes), `session` (a run's side effects), `sides` (the runs a command names,
//!   compare's sides and its `--fail-on` gate), `transfer` (import, push, the report's
//!   file), `manual` (the man pages from the clap definition), `crosscheck` (oscost's
//!   figures beside other tools, one worker round per pair), `select`, and `cli`
//!   (arguments, one library call per command, printing).
//!
//! A new benchmark is an entry in its family's `BENCHES`; a new family is its module
//! and one line in `bench::registry`.
#![deny(unsafe_code)]

pub mod bench;
pub mod cli;
pub mod clock;
pub mod condition;
pub mod crosscheck;
pub mod exchange;
pub mod files;
pub mod helper;
pub mod histo;
pub mod history;
pub mod kcounts;
pub mod key;
pub mod leftovers;
pub mod machine;
pub mod machine_probes;
pub mod manual;
pub mod model;
pub mod noise;
pub mod observe;
pub mod paired;
pub mod placement;
pub mod precision;
pub mod preflight;
pub mod procfs;
pub mod producers;
pub mod published;
pub mod report;
pub mod rounds;
pub mod run_plan;
pub mod runner;
pub mod select;
pub mod session;
pub mod sides;
pub mod sim;
pub mod stats;
pub mod store;
pub mod stored_profiles;
pub mod sweep;
#[allow(unsafe_code)]
pub mod sys;
pub mod tasks;
pub mod trace;
pub mod tracepass;
pub mod transfer;
pub mod unit;
pub mod views;
pub mod worker;
