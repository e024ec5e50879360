//! Why an import refuses an export file or one of its runs, and the bounds it holds
//! the file to.
//!
//! Why a module of its own, below the store and the report: the import's validation
//! (`report::import`) raises these errors, and the store passes them through (it hands
//! each run it is given to a reader that may fail with them, and a reader's refusal
//! back), so both must name them, and a store names nothing of the report.

use crate::model::SCHEMA_VERSION;

/// Bounds on what an import may contain, so hostile input cannot exhaust the machine.
pub const MAX_RUNS: usize = 10_000;
pub const MAX_ROWS: usize = 100_000;
pub const MAX_SAMPLES: usize = crate::histo::MAX_SAMPLES;
pub const MAX_TEXT: usize = 64 * 1024;

/// Why an export file is refused; nothing of it is imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("not an oscost export: {0}")]
    NotAnExport(#[source] serde_json::Error),
    #[error("not an oscost export: no schema_version")]
    NoVersion,
    #[error("export schema version {0} is not {SCHEMA_VERSION}, the one this oscost reads")]
    Version(u32),
    #[error("more than {MAX_RUNS} runs in one file")]
    TooManyRuns,
    #[error("more than {MAX_ROWS} results in one file")]
    TooManyRows,
    /// The run's place in the file (from 0) and what is wrong with it.
    #[error("run {run}: {problem}")]
    Run { run: usize, problem: RunProblem },
}

/// Why whoever takes the runs read refused one (a store that could not write it).
pub type Refusal = Box<dyn std::error::Error + Send + Sync>;

/// What is wrong with one exported run.
#[derive(Debug, thiserror::Error)]
pub enum RunProblem {
    #[error("not an oscost run: {0}")]
    NotARun(#[source] serde_json::Error),
    #[error("schema version {0} is not {SCHEMA_VERSION}")]
    Version(u32),
    #[error("status \"running\": a run still being measured cannot be imported (export it once it has finished)")]
    StillRunning,
    /// The UUID as given, cut to 40 characters.
    #[error("UUID {0:?} is not a UUID like 67e55044-10b1-426f-9247-bb680e5fe0c8")]
    Uuid(String),
    #[error("{what} {shown:?} is not an RFC 3339 UTC time like 2026-11-24T01:02:03Z ({source})")]
    Time { what: &'static str, shown: String, source: humantime::TimestampError },
    #[error(transparent)]
    SaveName(#[from] crate::model::SaveNameError),
    #[error(transparent)]
    TooLong(#[from] TooLong),
    #[error("the machine fingerprint is too large")]
    Machine,
    #[error("result {row}: {problem}")]
    Histogram { row: usize, problem: HistogramProblem },
    /// The row's place in the run, its benchmark id (cut to 60 characters) and what is wrong.
    #[error("result {row} ({benchmark:?}): {problem}")]
    Row { row: usize, benchmark: crate::key::BenchId, problem: RowProblem },
    #[error("{0}")]
    Refused(Refusal),
}

/// A text field longer than an import takes.
#[derive(Debug, thiserror::Error)]
#[error("{what} is {len} bytes long (at most {MAX_TEXT})")]
pub struct TooLong {
    pub what: &'static str,
    pub len: usize,
}

/// What is wrong with a row's histogram.
#[derive(Debug, thiserror::Error)]
pub enum HistogramProblem {
    #[error(transparent)]
    Histogram(#[from] crate::histo::HistoError),
    #[error("the histogram is not a string")]
    NotAString,
    #[error("a histogram of {bytes} bytes (at most {MAX_SAMPLES})")]
    TooLong { bytes: usize },
    #[error("histogram: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("no such row")]
    NoSuchRow,
    #[error("both samples and a histogram are given")]
    BothGiven,
}

/// What is wrong with one result row.
#[derive(Debug, thiserror::Error)]
pub enum RowProblem {
    #[error("benchmark ids are short lowercase names like syscall.getppid")]
    BadId,
    #[error("no such benchmark in this oscost")]
    UnknownBenchmark,
    #[error(transparent)]
    TooLong(#[from] TooLong),
    #[error("{0} samples (at most {MAX_SAMPLES})")]
    TooManySamples(usize),
    #[error("n is 0: a figure of no samples")]
    NoSamples,
    #[error("n is {n} but {samples} samples are given")]
    CountMismatch { n: usize, samples: usize },
    #[error("a sample is not a finite number")]
    NotFinite,
    #[error("its summary is not finite")]
    SummaryNotFinite,
    #[error("min exceeds the median")]
    MinAboveMedian,
    #[error("a standard deviation below zero")]
    NegativeStddev,
    #[error("the interval's low end exceeds its high end")]
    Interval,
    #[error("its rounds hold {in_rounds} samples but {samples} are given")]
    RoundsMismatch { in_rounds: usize, samples: usize },
    #[error("{0} rounds (at most {MAX_SAMPLES})")]
    TooManyRounds(usize),
}
