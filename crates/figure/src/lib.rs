//! What a figure is, as every layer above agrees on it: its identity (`key`: benchmark
//! id, method, typed parameters), its `unit` (a closed set), the rows and runs of the
//! `model`, the `stats` every judgement uses, per-call samples as HDR histograms
//! (`histo`), why an import refuses a file (`exchange`), a family's chart declaration
//! (`sweep`) and the founding texts' figures with their sources (`published`).
#![forbid(unsafe_code)]

pub mod exchange;
pub mod histo;
pub mod key;
pub mod model;
pub mod published;
pub mod stats;
pub mod sweep;
pub mod unit;
