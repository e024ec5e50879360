//! The results database behind one trait, two backends: SQLite (bundled; the default,
//! a file) and PostgreSQL (a shared store many machines push to). Both hold the same
//! schema with the same migrations, and write a benchmark's rows, or an imported run,
//! in one transaction, so a run is never half there.
//!
//! Where the database is: `--db PATH` (or `OSCOST_DB`) is a SQLite file, unless it is a
//! `postgres://` or `postgresql://` URL. Runs carry a UUID, so a run copied into another
//! database (`import`, `push`) is recognised there and never added twice.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use oscost_figure::model::{ResultRow, RunDocument, RunStatus, Skipped};
use oscost_platform::machine::Machine;

mod codec;
#[cfg(feature = "postgres")]
pub mod postgres;
mod sqlite;

pub use sqlite::SqliteStore;

/// What a results database does, whichever it is.
pub trait Backend {
    /// Where it is, for messages (a path or a URL without its password).
    fn location(&self) -> String;
    /// Records the start of a run; returns its id. A saved name moves to the newest
    /// run that claims it.
    fn begin_run(&mut self, start: &RunStart, machine: &Machine, owner: Option<&Owner>) -> Result<i64, StoreError>;
    /// Writes one benchmark's rows and skips in one transaction.
    fn add_benchmark(&mut self, run_id: i64, rows: &[ResultRow], skipped: &[Skipped]) -> Result<(), StoreError>;
    /// Marks a run finished with `status`.
    fn finish_run(&mut self, run_id: i64, finished_at: &str, status: RunStatus) -> Result<(), StoreError>;
    /// The newest run's id, if any.
    fn latest_run_id(&mut self) -> Result<Option<i64>, StoreError>;
    /// Resolves a run reference: a numeric id, `latest`, or a saved name.
    fn resolve(&mut self, reference: &str) -> Result<i64, StoreError>;
    /// Lists runs, newest first, matching `filter`.
    fn list_runs(&mut self, filter: &RunFilter) -> Result<Vec<RunListing>, StoreError>;
    /// Loads a whole run with its results (and samples) and skips.
    fn load_run(&mut self, run_id: i64) -> Result<(RunDocument, Vec<Skipped>), StoreError>;
    /// Writes whole runs in one transaction, all or nothing; a run already held (by
    /// its UUID) is not added again.
    fn import(&mut self, runs: &[(RunDocument, Vec<Skipped>)]) -> Result<Vec<Imported>, StoreError>;
    /// Imports the runs `read` hands over one at a time, all or nothing. By default
    /// they are gathered and written by [`Backend::import`] (a network store's one
    /// transaction lives on its connection's thread); SQLite writes each as it comes.
    fn import_each(&mut self, read: ImportReader<'_>) -> Result<Vec<Imported>, ImportFailure> {
        let mut runs = Vec::new();
        read(&mut |doc, skipped| {
            runs.push((doc, skipped));
            Ok(())
        })
        .map_err(ImportFailure::Input)?;
        Ok(self.import(&runs)?)
    }
}

/// What reads an import: it hands each run it reads to its argument (which may refuse
/// it, stopping the reading), and fails with the file's problem.
pub type ImportReader<'a> = &'a mut dyn FnMut(
    &mut dyn FnMut(RunDocument, Vec<Skipped>) -> Result<(), oscost_figure::exchange::Refusal>,
) -> Result<(), oscost_figure::exchange::ImportError>;

/// Why an import wrote nothing: the file (bad input) or the store.
#[derive(Debug, thiserror::Error)]
pub enum ImportFailure {
    #[error(transparent)]
    Input(oscost_figure::exchange::ImportError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A results database of either kind. Reads take `&self` (the PostgreSQL client needs
/// `&mut` even to read; one process uses a store from one thread).
pub struct Store(std::cell::RefCell<Box<dyn Backend>>);

/// The schema, version by version, in SQLite's dialect (`postgres::dialect` turns it
/// into PostgreSQL's). Never edit a released step; add one.
/// v1: runs, their results and skips.
pub(crate) const SCHEMA_V1: &str = "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        command_line TEXT NOT NULL,
        save_name TEXT,
        status TEXT NOT NULL,
        hostname TEXT NOT NULL,
        kernel_release TEXT NOT NULL,
        machine_json TEXT NOT NULL
    );
    CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        benchmark TEXT NOT NULL,
        params_json TEXT NOT NULL,
        method TEXT NOT NULL,
        unit TEXT NOT NULL,
        n INTEGER NOT NULL,
        iterations INTEGER NOT NULL,
        min REAL, median REAL, mean REAL, stddev REAL, ci_low REAL, ci_high REAL,
        percentiles_json TEXT,
        counts_json TEXT NOT NULL,
        flags_json TEXT NOT NULL,
        samples BLOB NOT NULL
    );
    CREATE INDEX results_by_run ON results(run_id, seq);
    CREATE INDEX results_by_benchmark ON results(benchmark);
    CREATE TABLE skipped (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        benchmark TEXT NOT NULL,
        params TEXT NOT NULL,
        reason TEXT NOT NULL
    );
    CREATE UNIQUE INDEX runs_by_save_name ON runs(save_name) WHERE save_name IS NOT NULL;";
/// v2: the process that owns a run, to tell a live run from an abandoned one.
pub(crate) const SCHEMA_V2: &str = "CREATE TABLE run_owner (
        run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        pid INTEGER NOT NULL,
        start_ticks INTEGER NOT NULL,
        boot_id TEXT NOT NULL
    );";
/// v3: the rounds behind each row (sample counts and counts per round), as JSON.
pub(crate) const SCHEMA_V3: &str = "ALTER TABLE results ADD COLUMN rounds_json TEXT;";
/// v4: per-call samples as HDR histograms (`histo`), the format named per row.
pub(crate) const SCHEMA_V4: &str = "ALTER TABLE results ADD COLUMN samples_format TEXT NOT NULL DEFAULT 'f64';";
/// v5: every run named by a UUID (the column, then, once every run has one, the index).
pub(crate) const SCHEMA_V5_COLUMN: &str = "ALTER TABLE runs ADD COLUMN uuid TEXT;";
pub(crate) const SCHEMA_V5_INDEX: &str = "CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);";
/// v6: what made a run (measured, traced, simulated), and each row's trace pass.
pub(crate) const SCHEMA_V6: &str = "ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'measure';
    ALTER TABLE results ADD COLUMN trace_json TEXT;";

/// A row's samples as stored: per-call samples as histograms (`histo`), batch means,
/// few, as raw f64s; with the format's name.
pub(crate) fn stored_samples(r: &ResultRow) -> Result<(Vec<u8>, &'static str), StoreError> {
    if r.method == oscost_figure::model::Method::PerCall && !r.samples.is_empty() {
        Ok((encode_histogram(r)?, HDR_FORMAT))
    } else {
        Ok((encode_samples(&r.samples), "f64"))
    }
}

/// Samples read back from their stored form.
pub(crate) fn load_samples(blob: &[u8], format: &str) -> Result<Vec<f64>, StoreError> {
    if format == HDR_FORMAT {
        Ok(oscost_figure::histo::decode(blob).map_err(|e| StoreError::Malformed(e.to_string()))?.concat())
    } else {
        decode_samples(blob)
    }
}

/// Text (a URL, or an argument holding one such as `--db=postgres://…`) as it may be
/// printed or stored: the password of `user:password@` and any `password=` parameter
/// (in any case: `PASSWORD=` is refused by the parser, and its error must not show it
/// either) replaced by `***`.
pub fn without_password(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for span in password_spans(text.as_bytes()) {
        out.push_str(&text[from..span.start]);
        out.push_str("***");
        from = span.end;
    }
    out.push_str(&text[from..]);
    out
}

/// Where passwords are in `text`, in order: the `password` of `scheme://user:password@`
/// and the value of every `password=` (any case) up to the next `&`, space or end.
/// Every span starts and ends at an ASCII byte, so it cuts UTF-8 text at boundaries.
pub fn password_spans(text: &[u8]) -> Vec<std::ops::Range<usize>> {
    let find = |hay: &[u8], needle: &[u8], from: usize| {
        hay.get(from..)?.windows(needle.len()).position(|w| w.eq_ignore_ascii_case(needle)).map(|i| i + from)
    };
    let mut spans = Vec::new();
    if let Some(scheme) = find(text, b"://", 0) {
        let authority = scheme + 3;
        let at = text.iter().rposition(|&b| b == b'@').filter(|&at| at > authority);
        if let Some(at) = at
            && let Some(colon) = text[authority..at].iter().position(|&b| b == b':')
        {
            spans.push(authority + colon + 1..at);
        }
    }
    let key = b"password=";
    let mut from = 0;
    while let Some(i) = find(text, key, from) {
        let start = i + key.len();
        let end = text[start..].iter().position(|&b| b == b'&' || b == b' ').map_or(text.len(), |e| e + start);
        if spans.last().is_none_or(|last: &std::ops::Range<usize>| last.end <= i) {
            spans.push(start..end);
        }
        from = end;
    }
    spans.sort_by_key(|s| s.start);
    spans
}

/// Whether `db` names a PostgreSQL database rather than a SQLite file.
pub fn is_postgres(db: &Path) -> bool {
    let s = db.to_string_lossy();
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// The PostgreSQL database `url` names, connected.
#[cfg(feature = "postgres")]
fn connect_postgres(url: &Path) -> Result<Box<dyn Backend>, StoreError> {
    Ok(Box::new(postgres::PgStore::connect(&url.to_string_lossy())?))
}

/// Without the `postgres` feature a PostgreSQL URL is refused, saying how to build
/// oscost with it.
#[cfg(not(feature = "postgres"))]
fn connect_postgres(url: &Path) -> Result<Box<dyn Backend>, StoreError> {
    Err(StoreError::Postgres {
        url: without_password(&url.to_string_lossy()),
        cause: "this oscost was built without PostgreSQL support (build it with the default features)".into(),
    })
}

impl Store {
    /// Opens (creating and migrating as needed) the database `db` names.
    pub fn open(db: &Path) -> Result<Self, StoreError> {
        let b: Box<dyn Backend> =
            if is_postgres(db) { connect_postgres(db)? } else { Box::new(SqliteStore::open(db)?) };
        Ok(Self(std::cell::RefCell::new(b)))
    }

    /// Opens an existing database for reading (a SQLite file is never created).
    pub fn open_existing(db: &Path) -> Result<Self, StoreError> {
        let b: Box<dyn Backend> =
            if is_postgres(db) { connect_postgres(db)? } else { Box::new(SqliteStore::open_existing(db)?) };
        Ok(Self(std::cell::RefCell::new(b)))
    }

    pub fn location(&self) -> String {
        self.0.borrow_mut().location()
    }

    /// A bare SQL error, named with the database it came from ("database or disk is
    /// full" alone does not say which file).
    fn located<T>(&self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        r.map_err(|e| self.locate(e))
    }

    fn locate(&self, e: StoreError) -> StoreError {
        match e {
            StoreError::Sql(cause) => StoreError::SqlAt { location: self.location(), cause },
            other => other,
        }
    }
    pub fn begin_run(&mut self, start: &RunStart, machine: &Machine, owner: Option<&Owner>) -> Result<i64, StoreError> {
        let r = self.0.borrow_mut().begin_run(start, machine, owner);
        self.located(r)
    }
    pub fn add_benchmark(&mut self, run_id: i64, rows: &[ResultRow], skipped: &[Skipped]) -> Result<(), StoreError> {
        let r = self.0.borrow_mut().add_benchmark(run_id, rows, skipped);
        self.located(r)
    }
    pub fn finish_run(&mut self, run_id: i64, finished_at: &str, status: RunStatus) -> Result<(), StoreError> {
        let r = self.0.borrow_mut().finish_run(run_id, finished_at, status);
        self.located(r)
    }
    pub fn latest_run_id(&self) -> Result<Option<i64>, StoreError> {
        let r = self.0.borrow_mut().latest_run_id();
        self.located(r)
    }
    pub fn resolve(&self, reference: &str) -> Result<i64, StoreError> {
        let r = self.0.borrow_mut().resolve(reference);
        self.located(r)
    }
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunListing>, StoreError> {
        let r = self.0.borrow_mut().list_runs(filter);
        self.located(r)
    }
    pub fn load_run(&self, run_id: i64) -> Result<(RunDocument, Vec<Skipped>), StoreError> {
        let r = self.0.borrow_mut().load_run(run_id);
        self.located(r)
    }
    pub fn import_each(&mut self, read: ImportReader<'_>) -> Result<Vec<Imported>, ImportFailure> {
        let r = self.0.borrow_mut().import_each(read);
        r.map_err(|e| match e {
            ImportFailure::Store(e) => ImportFailure::Store(self.locate(e)),
            input => input,
        })
    }
    pub fn import(&mut self, runs: &[(RunDocument, Vec<Skipped>)]) -> Result<Vec<Imported>, StoreError> {
        let r = self.0.borrow_mut().import(runs);
        self.located(r)
    }
}

/// Errors of the store, with the path they concern. Each message is whole: the
/// underlying error is in the text and not chained as a `source` as well, which
/// would print it twice under `{:#}`.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the results database {path}: {cause}")]
    Open { path: PathBuf, cause: rusqlite::Error },
    #[error("cannot create the directory {path} for the results database: {cause}")]
    CreateDir { path: PathBuf, cause: std::io::Error },
    #[error("the results database {path} is not writable: {cause}")]
    NotWritable { path: PathBuf, cause: rusqlite::Error },
    #[error("{path} is not an oscost results database (SQLite cannot read it as a database)")]
    NotADatabase { path: PathBuf },
    #[error("there is no results database at {path} (oscost run creates one)")]
    Missing { path: PathBuf },
    #[error(
        "the results database {path} has schema version {found}, newer than this oscost understands ({known}); use a newer oscost"
    )]
    TooNew { path: PathBuf, found: i64, known: i64 },
    #[error("database error: {0}")]
    Sql(rusqlite::Error),
    #[error("results database {location}: {cause}")]
    SqlAt { location: String, cause: rusqlite::Error },
    #[error("stored data is malformed: {0}")]
    Malformed(String),
    #[error("no run {0} in the database")]
    NoSuchRun(String),
    #[error("PostgreSQL database {url}: {cause}")]
    Postgres { url: String, cause: String },
    /// A database path refused before anything is opened (see `files::resolve_db`).
    #[error("the results database {path}: {cause}")]
    Unsafe { path: PathBuf, cause: oscost_platform::files::UnsafePath },
    #[error(
        "the results database {path} is damaged (SQLite's quick_check: {report}); oscost writes nothing into it: keep it aside, and read what it still holds with oscost export, or restore a copy"
    )]
    Damaged { path: PathBuf, report: String },
    #[error("the results database {path} cannot be written: {why}")]
    ReadOnly { path: PathBuf, why: String },
}

impl StoreError {
    /// A database path refused by the check: a file that is not SQLite's keeps its
    /// usual error; any other refusal names the path as given and why.
    pub(crate) fn checked(path: &Path, cause: oscost_platform::files::UnsafePath) -> Self {
        match cause {
            oscost_platform::files::UnsafePath::NotSqlite { .. } => {
                StoreError::NotADatabase { path: path.to_path_buf() }
            }
            cause => StoreError::Unsafe { path: path.to_path_buf(), cause },
        }
    }

    /// Whether this is bad input (a path refused as unsafe), exit 2, rather than a
    /// failure (a path that could not be read or made, as any file error, exits 1).
    pub fn is_refused_path(&self) -> bool {
        matches!(self, StoreError::Unsafe { cause, .. } if !matches!(cause, oscost_platform::files::UnsafePath::Io { .. }))
    }
}

/// A fresh run UUID (version 4, random).
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The name of the histogram format in `samples_format`.
pub(crate) const HDR_FORMAT: &str = "hdr1";

/// A per-call row's samples as a histogram blob.
pub(crate) fn encode_histogram(r: &ResultRow) -> Result<Vec<u8>, StoreError> {
    oscost_figure::histo::encode(&r.round_slices()).map_err(|e| StoreError::Malformed(e.to_string()))
}

pub use oscost_platform::procfs::Owner;

/// What a run's stored status means now: a run still marked `running` whose owner is
/// gone was abandoned (killed without a chance to say so). Only a run of this host can
/// be judged: another machine's run in a shared store stays `running`, since nothing
/// here can tell whether its owner still runs (its boot id is not ours by nature).
pub(crate) fn effective_status(stored: RunStatus, owner: Option<Owner>, run_host: &str) -> RunStatus {
    let this_host = oscost_platform::sys::uname().1;
    match owner {
        Some(o) if stored == RunStatus::Running && run_host == this_host && !o.alive() => RunStatus::Abandoned,
        _ => stored,
    }
}

/// A stored run status read back; an unknown name is malformed data.
pub(crate) fn parse_status(name: String) -> Result<RunStatus, StoreError> {
    RunStatus::parse(&name).ok_or_else(|| StoreError::Malformed(format!("run status {name:?}")))
}

/// The default database path: `$XDG_DATA_HOME/oscost/results.db`, else
/// `~/.local/share/oscost/results.db`.
/// None when neither is set: the caller asks for `--db` rather than guessing.
pub fn default_path() -> Option<PathBuf> {
    default_location().map(|(_, db)| db)
}

/// The default database path and the folder it is trusted from (`$XDG_DATA_HOME` or
/// `$HOME` as given): the folders between them must be the user's own
/// ([`oscost_platform::files::ensure_own_dir`]).
pub fn default_location() -> Option<(PathBuf, PathBuf)> {
    default_location_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
}

/// [`default_path`] from given environment values (pure, for tests).
pub fn default_path_from(xdg: Option<std::ffi::OsString>, home: Option<std::ffi::OsString>) -> Option<PathBuf> {
    default_location_from(xdg, home).map(|(_, db)| db)
}

/// [`default_location`] from given environment values. A relative `XDG_DATA_HOME` is
/// ignored, as the XDG base directory specification says.
fn default_location_from(
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<(PathBuf, PathBuf)> {
    let xdg = xdg.filter(|x| Path::new(x).is_absolute());
    let (root, base) = match (xdg, home.filter(|h| !h.is_empty())) {
        (Some(x), _) => (PathBuf::from(&x), PathBuf::from(x)),
        (None, Some(h)) => (PathBuf::from(&h), PathBuf::from(h).join(".local/share")),
        (None, None) => return None,
    };
    Some((root, base.join("oscost").join("results.db")))
}

/// What an import did with one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    /// Stored under this new id.
    Added(i64),
    /// The database already held it (same UUID), as this id.
    AlreadyHeld(i64),
}

impl Imported {
    /// The run's id in this database.
    pub fn id(self) -> i64 {
        match self {
            Imported::Added(id) | Imported::AlreadyHeld(id) => id,
        }
    }
}

/// What names a run when it starts.
#[derive(Debug, Clone)]
pub struct RunStart {
    pub started_at: String,
    pub command_line: String,
    pub save_name: Option<String>,
    pub uuid: String,
    /// `model::RunKind`.
    pub kind: oscost_figure::model::RunKind,
}

/// A short listing line of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunListing {
    pub id: i64,
    pub started_at: String,
    pub hostname: String,
    pub kernel_release: String,
    pub status: RunStatus,
    pub save_name: Option<String>,
    pub results: i64,
    pub command_line: String,
    pub kind: oscost_figure::model::RunKind,
}

/// Filters for `oscost runs`.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub host: Option<String>,
    /// A benchmark's id, or a family (every id under it).
    pub benchmark: Option<oscost_figure::key::BenchId>,
    pub since: Option<String>,
    pub until: Option<String>,
}

pub(crate) fn encode_samples(samples: &[f64]) -> Vec<u8> {
    samples.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn decode_samples(blob: &[u8]) -> Result<Vec<f64>, StoreError> {
    if !blob.len().is_multiple_of(8) {
        return Err(StoreError::Malformed(format!("sample blob of {} bytes is not a whole number of f64", blob.len())));
    }
    Ok(blob.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8-byte chunk"))).collect())
}

pub(crate) fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("plain data serialises")
}

/// Counts as stored: the finite ones (see `model::finite_counts`).
pub(crate) fn counts_json(counts: &std::collections::BTreeMap<oscost_figure::model::Count, f64>) -> String {
    let mut out = Vec::new();
    let _ = oscost_figure::model::finite_counts::serialize(counts, &mut serde_json::Serializer::new(&mut out));
    String::from_utf8(out).unwrap_or_else(|_| "{}".into())
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(what: &str, s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Malformed(format!("{what}: {e}")))
}

/// A stored run kind read back; an unknown name is malformed data, not a new kind.
pub(crate) fn parse_kind(name: String) -> Result<oscost_figure::model::RunKind, StoreError> {
    oscost_figure::model::RunKind::parse(&name).ok_or_else(|| StoreError::Malformed(format!("run kind {name:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_in_every_form_a_url_takes() {
        assert_eq!(without_password("postgres://u:secret@h:5/db"), "postgres://u:***@h:5/db");
        assert_eq!(without_password("postgres://u@h:5/db"), "postgres://u@h:5/db");
        assert_eq!(without_password("--db=postgres://u:pw@h/db"), "--db=postgres://u:***@h/db");
        assert_eq!(
            without_password("postgres://h/db?user=u&password=pw&sslmode=off"),
            "postgres://h/db?user=u&password=***&sslmode=off"
        );
        assert_eq!(without_password("host=h password=pw user=u"), "host=h password=*** user=u");
        assert_eq!(without_password("/var/lib/results.db"), "/var/lib/results.db");
    }

    #[test]
    fn a_password_in_any_case_is_never_shown() {
        for (given, shown) in [
            ("postgres://h/db?PASSWORD=secret", "postgres://h/db?PASSWORD=***"),
            ("postgres://h/db?user=u&PassWord=secret&x=1", "postgres://h/db?user=u&PassWord=***&x=1"),
            ("host=h PASSWORD=secret", "host=h PASSWORD=***"),
            ("postgres://u:secret@h/db?password=other", "postgres://u:***@h/db?password=***"),
            ("postgres://u:sécret@h/db", "postgres://u:***@h/db"),
        ] {
            assert_eq!(without_password(given), shown);
        }
        // The error of a URL the parser refuses names no password.
        let e = Store::open(Path::new("postgres://h/db?PASSWORD=secret")).err().expect("an unknown option is refused");
        assert!(!e.to_string().contains("secret"), "{e}");
    }

    #[test]
    fn only_this_hosts_runs_are_judged_abandoned() {
        let here = oscost_platform::sys::uname().1;
        let me = Owner::current().expect("/proc tells who this process is");
        let gone = Owner { boot_id: "another-boot".into(), ..me.clone() };
        let running = || RunStatus::Running;
        // This host: a live owner keeps its run running, a gone one abandons it.
        assert_eq!(effective_status(running(), Some(me.clone()), &here), RunStatus::Running);
        assert_eq!(effective_status(running(), Some(gone.clone()), &here), RunStatus::Abandoned);
        // Another host's run in a shared store: its boot id is never ours, and says
        // nothing about whether it still runs.
        assert_eq!(effective_status(running(), Some(gone), "another-host"), RunStatus::Running);
        assert_eq!(effective_status(RunStatus::Complete, None, &here), RunStatus::Complete);
    }
}
