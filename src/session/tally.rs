//! The run's bookkeeping while it measures, shared by the measuring step (which
//! fills it) and the storing and rescuing steps (which empty it). Its own file so
//! that those steps depend on it and not on each other; the methods that need the
//! measuring's helpers stay beside them in `rounds`.

use crate::model::{ResultRow, Skipped};

/// A benchmark's progress through the run's rounds.
#[derive(Default)]
pub(super) struct Progress {
    /// Each finished round's rows.
    pub(super) rounds: Vec<Vec<ResultRow>>,
    pub(super) skipped: Vec<Skipped>,
    /// No more rounds: it failed, was skipped, or (once-only) ran.
    pub(super) finished: bool,
    pub(super) stored: bool,
    /// Under `--precision`, its cap on rounds at its last judgement.
    pub(super) cap: Option<usize>,
}

impl Progress {
    pub(super) fn skip_once(&mut self, s: Skipped) {
        if !self.skipped.iter().any(|k| k.benchmark == s.benchmark && k.params == s.params) {
            self.skipped.push(s);
        }
    }
}

/// The run's bookkeeping while it measures.
pub(super) struct Tally {
    /// One per benchmark and arm: benchmark i's arm a at `i * arms + a`.
    pub(super) progress: Vec<Progress>,
    pub(super) failures: Vec<Skipped>,
    pub(super) unstored: Vec<Unstored>,
    pub(super) bar: Option<indicatif::ProgressBar>,
    /// Arms whose evidence was said (once per arm).
    pub(super) evidence_said: Vec<bool>,
}

/// A benchmark's merged rows that were not stored, and why (the store's error, or
/// None: the store had already failed for another benchmark).
pub(super) struct Unstored {
    pub(super) benchmark: crate::key::BenchId,
    pub(super) rows: Vec<ResultRow>,
    pub(super) skipped: Vec<Skipped>,
    pub(super) error: Option<String>,
}
