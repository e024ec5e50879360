//! The one place where a round of a benchmark is actually run, behind a trait, so the
//! run's coordination (interleaving, storing, stopping, rescuing) can be driven and
//! checked without measuring anything: a real run hands its rounds to worker processes
//! (or, in the pipeline's tests, to the calling process), and a test hands them to an
//! executor that answers with canned replies.
//!
//! The stop signal is read through the executor too: it is what ends rounds early, and
//! a test must be able to send it without raising the flag of the whole process.

use crate::sys;
use crate::worker::{Executor, RoundJob, RoundReply};

/// Runs the rounds of a run and tells whether a stop was asked for.
pub trait RoundExecutor {
    /// Runs one round of one benchmark's arm and returns what it measured and how it
    /// ended (a failure is the reply's outcome, never a panic).
    fn run_round(&mut self, job: &RoundJob) -> RoundReply;

    /// The stop signal that arrived first, if one did (Ctrl-C, SIGTERM, SIGHUP,
    /// SIGXCPU): the run measures nothing new and keeps what finished.
    fn stop_signal(&self) -> Option<i32> {
        sys::stop_signal()
    }

    /// Whether a stop was asked for.
    fn interrupted(&self) -> bool {
        self.stop_signal().is_some()
    }
}

/// The real executors: each round in a fresh worker process, or in this process.
impl RoundExecutor for Executor {
    fn run_round(&mut self, job: &RoundJob) -> RoundReply {
        crate::worker::run_round(job, *self)
    }
}
