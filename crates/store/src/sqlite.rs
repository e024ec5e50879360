//! The SQLite backend (bundled), with versioned migrations and WAL. Each
//! benchmark's rows are written in one transaction as soon as it finishes, so a run
//! that is interrupted keeps everything it completed. Raw samples are kept as
//! little-endian f64 blobs next to their summaries.
//!
//! Many oscost processes may write one database at once: every write transaction is
//! IMMEDIATE (it takes the write lock when it begins, so it waits for the others
//! under the busy timeout instead of failing when a read turns into a write), and the
//! migration reads the schema version inside its own IMMEDIATE transaction. Commands
//! that only read open an existing file and never create one. A run records which
//! process owns it, so a run left `running` by a process that is gone reads as
//! `abandoned`.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::*;
use oscost_figure::model::{BenchId, Skipped};
use oscost_figure::model::{Method, ResultRow, RunDocument, RunInfo, RunStatus, SCHEMA_VERSION};
use oscost_platform::machine::Machine;

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sql(e)
    }
}

impl StoreError {
    /// A bare SQLite error that says the file is no database, named with its path.
    fn about(self, path: &Path) -> Self {
        let not_a_db = |e: &rusqlite::Error| e.sqlite_error_code() == Some(ErrorCode::NotADatabase);
        match self {
            StoreError::Sql(e) | StoreError::Open { cause: e, .. } | StoreError::NotWritable { cause: e, .. }
                if not_a_db(&e) =>
            {
                StoreError::NotADatabase { path: path.to_path_buf() }
            }
            other => other,
        }
    }
}

/// Why SQLite may not write the checked database: its file, its folder (where the
/// `-wal` and `-shm` files are made) or its file system, as far as they tell.
fn why_read_only(checked: &oscost_platform::files::DbPath) -> Option<String> {
    use rustix::fs::{Access, AtFlags};
    let me = rustix::process::geteuid().as_raw();
    let name = checked.path.file_name().unwrap_or_default();
    let folder = checked.path.parent().unwrap_or(Path::new("/")).display();
    let writable = |dir_relative: &std::ffi::OsStr| {
        rustix::fs::accessat(&checked.dir, dir_relative, Access::WRITE_OK, AtFlags::EACCESS).is_ok()
    };
    let read_only_fs =
        rustix::fs::fstatvfs(&checked.dir).is_ok_and(|v| v.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY));
    if read_only_fs {
        return Some(format!("it is on a file system mounted read-only ({folder})"));
    }
    if checked.exists && !writable(name) {
        let st = rustix::fs::statat(&checked.dir, name, AtFlags::SYMLINK_NOFOLLOW);
        return Some(match st {
            Ok(st) => format!(
                "the file is mode {:o} and belongs to uid {}; oscost runs as uid {me}, which may not write it",
                st.st_mode & 0o7777,
                st.st_uid
            ),
            Err(e) => format!("the file cannot be written ({e})"),
        });
    }
    if !writable(std::ffi::OsStr::new(".")) {
        return Some(format!(
            "its folder {folder} cannot be written by uid {me}, and SQLite makes the database's -wal and -shm files there"
        ));
    }
    None
}

/// One step of the schema: SQL, or code for what SQL cannot do (re-encoding blobs).
enum Step {
    Sql(&'static str),
    Code(fn(&rusqlite::Transaction) -> Result<(), StoreError>),
}

/// The schema, one migration per version. Never edit a released step; add one.
const MIGRATIONS: &[Step] = &[
    Step::Sql(SCHEMA_V1),
    Step::Sql(SCHEMA_V2),
    Step::Sql(SCHEMA_V3),
    // v4: per-call samples as HDR histograms (`histo`), the format named per row.
    Step::Code(per_call_rows_to_histograms),
    // v5: every run named by a UUID, so copies of it are recognised.
    Step::Code(name_runs),
    Step::Sql(SCHEMA_V6),
];

/// Adds the runs' UUID column and names every run stored so far.
fn name_runs(tx: &rusqlite::Transaction) -> Result<(), StoreError> {
    tx.execute_batch(SCHEMA_V5_COLUMN)?;
    let ids: Vec<i64> = tx.prepare("SELECT id FROM runs")?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    for id in ids {
        tx.execute("UPDATE runs SET uuid = ?2 WHERE id = ?1", params![id, new_uuid()])?;
    }
    tx.execute_batch(SCHEMA_V5_INDEX)?;
    Ok(())
}

/// Re-encodes every stored per-call row's raw samples as histograms, round by round;
/// the summary columns (what `show` prints) are left as they are.
fn per_call_rows_to_histograms(tx: &rusqlite::Transaction) -> Result<(), StoreError> {
    tx.execute_batch(SCHEMA_V4)?;
    let mut read = tx
        .prepare("SELECT id, samples, rounds_json FROM results WHERE method = 'per_call' AND samples_format = 'f64'")?;
    let rows: Vec<(i64, Vec<u8>, Option<String>)> =
        read.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
    let mut write = tx.prepare("UPDATE results SET samples = ?2, samples_format = ?3 WHERE id = ?1")?;
    for (id, blob, rounds) in rows {
        let mut row = ResultRow::from_samples("", Method::PerCall, "", decode_samples(&blob)?, 0)
            .ok_or_else(|| StoreError::Malformed(format!("result {id} has no samples")))?;
        if let Some(r) = rounds {
            row.rounds = parse_json("rounds", &r)?;
        }
        write.execute(params![id, encode_histogram(&row)?, HDR_FORMAT])?;
    }
    Ok(())
}

/// How long a writer waits for another one before giving up.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// For a reader of an older schema: the private folder of the migrated copy it
    /// reads (removed when the store is dropped).
    _copy: Option<tempfile::TempDir>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, migrates it, and checks that
    /// it can be written, so a bad path fails before anything is measured.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_for_writing(path).map_err(|e| e.about(path))
    }

    fn open_for_writing(path: &Path) -> Result<Self, StoreError> {
        let checked = oscost_platform::files::resolve_db(path, true).map_err(|e| StoreError::checked(path, e))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(&checked.path, flags)
            .map_err(|cause| StoreError::Open { path: path.to_path_buf(), cause })?;
        let mut store = Self::prepare(conn, path)?;
        let read_only = |fallback: String| StoreError::ReadOnly {
            path: path.to_path_buf(),
            why: why_read_only(&checked).unwrap_or(fallback),
        };
        let not_writable = |source: rusqlite::Error| match source.sqlite_error_code() {
            Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied)
                if why_read_only(&checked).is_some() =>
            {
                read_only(source.to_string())
            }
            Some(ErrorCode::ReadOnly) => read_only(source.to_string()),
            _ => Self::classify(path, source, true),
        };
        if checked.exists {
            // A damaged file is refused before anything is measured into it: a run
            // written there could be lost with the rest.
            store.quick_check()?;
        }
        store.use_wal().map_err(not_writable)?;
        // SQLite opens a file it may not write read-only, and a write lock taken and
        // given back writes nothing: ask it.
        if store.conn.is_readonly(rusqlite::DatabaseName::Main)? {
            return Err(read_only("SQLite opened it read-only".into()));
        }
        store.migrate()?;
        // A write that is rolled back: proves the file accepts writes now.
        store.conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").map_err(not_writable)?;
        Ok(store)
    }

    /// `PRAGMA quick_check`: the file's structure is whole, or what is wrong with it.
    fn quick_check(&self) -> Result<(), StoreError> {
        let damaged = |report: String| StoreError::Damaged { path: self.path.clone(), report };
        let mut found = self.conn.prepare("PRAGMA quick_check(5)").map_err(|e| damaged(e.to_string()))?;
        let lines: Vec<String> =
            found.query_map([], |r| r.get(0)).and_then(|rows| rows.collect()).map_err(|e| damaged(e.to_string()))?;
        match &lines[..] {
            [ok] if ok == "ok" => Ok(()),
            _ => Err(damaged(lines.join("; "))),
        }
    }

    /// Opens an existing database for reading: never creates a file or a directory,
    /// never changes the file, and works where the file or its directory is read-only.
    /// A database of an older schema is not migrated (an older oscost could no longer
    /// read it): it is copied into a private folder and the copy migrated and read.
    pub fn open_existing(path: &Path) -> Result<Self, StoreError> {
        Self::open_for_reading(path).map_err(|e| e.about(path))
    }

    fn open_for_reading(path: &Path) -> Result<Self, StoreError> {
        let missing = || StoreError::Missing { path: path.to_path_buf() };
        let checked = match oscost_platform::files::resolve_db(path, false) {
            Ok(c) if c.exists => c,
            Ok(_) => return Err(missing()),
            Err(oscost_platform::files::UnsafePath::Io { cause, .. })
                if cause.kind() == std::io::ErrorKind::NotFound =>
            {
                return Err(missing());
            }
            Err(e) => return Err(StoreError::checked(path, e)),
        };
        let known = MIGRATIONS.len() as i64;
        let reader = Self::open_read_only(&checked.path, path)?;
        let seen: i64 = reader.conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if seen > known {
            return Err(StoreError::TooNew { path: path.to_path_buf(), found: seen, known });
        }
        if seen < known {
            return reader.migrated_copy();
        }
        let flags =
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        if let Ok(conn) = Connection::open_with_flags(&checked.path, flags)
            && let Ok(store) = Self::prepare(conn, path)
        {
            return Ok(store);
        }
        // The file or its folder cannot be written (a WAL database needs its -shm file
        // beside it): read it through the read-only connection.
        Ok(reader)
    }

    /// This (read-only) database copied into a private folder (mode 0700) and the copy
    /// migrated: what a reader of an older schema reads. Messages keep the file's path.
    fn migrated_copy(self) -> Result<Self, StoreError> {
        let folder = oscost_platform::files::private_dir("oscost-read-")
            .map_err(|cause| StoreError::CreateDir { path: std::env::temp_dir(), cause })?;
        let copy = folder.path().join("copy.db");
        self.conn.execute("VACUUM INTO ?1", params![copy.to_string_lossy()])?;
        let conn = Connection::open(&copy).map_err(|cause| StoreError::Open { path: copy.clone(), cause })?;
        let mut store = Self::prepare(conn, &self.path)?;
        store.migrate()?;
        store._copy = Some(folder);
        Ok(store)
    }

    /// Read-only access, for a file (or a directory) this user cannot write. A WAL
    /// database whose shared-memory file cannot be made is read as immutable.
    fn open_read_only(at: &Path, path: &Path) -> Result<Self, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let uri = |extra: &str| format!("file:{}?mode=ro{extra}", at.display());
        let usable = |c: &Connection| c.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0));
        let conn = match Connection::open_with_flags(uri(""), flags) {
            Ok(c) if usable(&c).is_ok() => c,
            _ => Connection::open_with_flags(uri("&immutable=1"), flags)
                .map_err(|source| Self::classify(path, source, false))?,
        };
        usable(&conn).map_err(|source| Self::classify(path, source, false))?;
        let store = Self::prepare(conn, path)?;
        // An older schema read as it is: the owner table it lacks is empty.
        if !store.has_table("run_owner")? {
            store.conn.execute_batch(
                "CREATE TEMP TABLE run_owner (run_id INTEGER PRIMARY KEY, pid INTEGER, start_ticks INTEGER, boot_id TEXT)",
            )?;
        }
        Ok(store)
    }

    fn prepare(conn: Connection, path: &Path) -> Result<Self, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // A bounded page cache (1 MiB): the process that holds the store also starts
        // the measuring workers, and nothing it keeps should grow with the results.
        conn.pragma_update(None, "cache_size", -1024)?;
        Ok(Self { conn, path: path.to_path_buf(), _copy: None })
    }

    /// Puts the database in WAL mode. Leaving rollback mode takes an exclusive lock for
    /// which SQLite does not call the busy handler, so when several processes open a
    /// fresh database at once, the losers retry here until the busy timeout.
    fn use_wal(&self) -> rusqlite::Result<()> {
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match self.conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
                Ok(_) => return Ok(()),
                Err(e)
                    if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn has_table(&self, name: &str) -> Result<bool, StoreError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            params![name],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    fn has_column(&self, table: &str, column: &str) -> Result<bool, StoreError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
            params![table, column],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// Names what went wrong opening `path`: not a database, not writable, or other.
    fn classify(path: &Path, source: rusqlite::Error, writing: bool) -> StoreError {
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => StoreError::NotADatabase { path: path.to_path_buf() },
            _ if writing => StoreError::NotWritable { path: path.to_path_buf(), cause: source },
            _ => StoreError::Open { path: path.to_path_buf(), cause: source },
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write transaction that holds the write lock from its start (see the module doc).
    fn write(&mut self) -> Result<rusqlite::Transaction<'_>, StoreError> {
        let path = self.path.clone();
        self.conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| Self::classify(&path, source, true))
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let known = MIGRATIONS.len() as i64;
        // Reading the version takes no lock; a newer schema is refused before writing.
        let seen: i64 = self.conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if seen > known {
            return Err(StoreError::TooNew { path: self.path.clone(), found: seen, known });
        }
        if seen == known {
            return Ok(());
        }
        let path = self.path.clone();
        let tx = self.write()?;
        // Read again under the lock: another process may have migrated meanwhile.
        let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            match step {
                Step::Sql(sql) => tx.execute_batch(sql).map_err(|source| Self::classify(&path, source, true))?,
                Step::Code(f) => f(&tx)?,
            }
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        // Re-encoding raw per-call samples (v4) frees most of an older file: give the
        // space back now. Another process reading at this moment makes VACUUM fail;
        // the space is then reused by later runs instead.
        if (1..4).contains(&version) {
            let _ = self.conn.execute_batch("VACUUM");
        }
        Ok(())
    }

    /// Records the start of a run (and, when given, the process that owns it);
    /// returns its id. A saved name moves to the newest run that claims it.
    pub fn begin_run(&mut self, start: &RunStart, machine: &Machine, owner: Option<&Owner>) -> Result<i64, StoreError> {
        let tx = self.write()?;
        if let Some(name) = &start.save_name {
            tx.execute("UPDATE runs SET save_name = NULL WHERE save_name = ?1", params![name])?;
        }
        tx.execute(
            "INSERT INTO runs (started_at, command_line, save_name, status, hostname, kernel_release, machine_json, uuid, kind)
             VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8)",
            params![
                start.started_at,
                start.command_line,
                start.save_name,
                machine.hostname,
                machine.kernel_release,
                json(machine),
                start.uuid,
                start.kind.as_str()
            ],
        )?;
        let id = tx.last_insert_rowid();
        if let Some(o) = owner {
            tx.execute(
                "INSERT INTO run_owner (run_id, pid, start_ticks, boot_id) VALUES (?1, ?2, ?3, ?4)",
                params![id, o.pid, o.start_ticks as i64, o.boot_id],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Writes one benchmark's rows and skips in one transaction.
    pub fn add_benchmark(&mut self, run_id: i64, rows: &[ResultRow], skipped: &[Skipped]) -> Result<(), StoreError> {
        let tx = self.write()?;
        insert_rows(&tx, run_id, rows, skipped)?;
        tx.commit()?;
        Ok(())
    }

    /// Marks a run finished with `status` (`complete`, `interrupted` or `failed`).
    pub fn finish_run(&mut self, run_id: i64, finished_at: &str, status: RunStatus) -> Result<(), StoreError> {
        let tx = self.write()?;
        tx.execute(
            "UPDATE runs SET finished_at = ?2, status = ?3 WHERE id = ?1",
            params![run_id, finished_at, status.as_str()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The newest run's id, if any.
    pub fn latest_run_id(&self) -> Result<Option<i64>, StoreError> {
        Ok(self.conn.query_row("SELECT MAX(id) FROM runs", [], |r| r.get::<_, Option<i64>>(0))?)
    }

    /// Resolves a run reference: a numeric id, `latest`, or a saved name.
    pub fn resolve(&self, reference: &str) -> Result<i64, StoreError> {
        if reference == "latest" {
            return self.latest_run_id()?.ok_or_else(|| StoreError::NoSuchRun("(the database has no runs yet)".into()));
        }
        if let Ok(id) = reference.parse::<i64>() {
            let found: Option<i64> =
                self.conn.query_row("SELECT id FROM runs WHERE id = ?1", params![id], |r| r.get(0)).optional()?;
            return found.ok_or_else(|| StoreError::NoSuchRun(reference.into()));
        }
        let found: Option<i64> = self
            .conn
            .query_row("SELECT id FROM runs WHERE save_name = ?1", params![reference], |r| r.get(0))
            .optional()?;
        found.ok_or_else(|| StoreError::NoSuchRun(format!("{reference:?} (neither an id nor a saved name)")))
    }

    /// Lists runs, newest first, matching `filter`.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunListing>, StoreError> {
        let kind = if self.has_column("runs", "kind")? { "r.kind" } else { "'measure'" };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT r.id, r.started_at, r.hostname, r.kernel_release, r.status, r.save_name, r.command_line,
                    (SELECT COUNT(*) FROM results x WHERE x.run_id = r.id), o.pid, o.start_ticks, o.boot_id, {kind}
             FROM runs r LEFT JOIN run_owner o ON o.run_id = r.id
             WHERE (?1 IS NULL OR r.hostname = ?1)
               AND (?2 IS NULL OR EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.id
                                          AND (x.benchmark = ?2 OR x.benchmark LIKE ?2 || '.%')))
               AND (?3 IS NULL OR r.started_at >= ?3)
               AND (?4 IS NULL OR r.started_at < ?4)
             ORDER BY r.id DESC"
        ))?;
        let rows =
            stmt.query_map(params![filter.host, filter.benchmark.as_deref(), filter.since, filter.until], |r| {
                Ok(RunListing {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    hostname: r.get(2)?,
                    kernel_release: r.get(3)?,
                    status: effective_status(stored_status(r, 4)?, owner_of(r, 8)?, &r.get::<_, String>(2)?),
                    save_name: r.get(5)?,
                    command_line: r.get(6)?,
                    results: r.get(7)?,
                    kind: stored_kind(r, 11)?,
                })
            })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Loads a whole run with its results (and samples) and skips.
    pub fn load_run(&self, run_id: i64) -> Result<(RunDocument, Vec<Skipped>), StoreError> {
        let (run, machine) = self.load_info(run_id)?;
        let results = self.load_results(run_id)?;
        let skipped = self.load_skipped(run_id)?;
        Ok((RunDocument { schema_version: SCHEMA_VERSION, run, machine, results }, skipped))
    }

    fn load_info(&self, run_id: i64) -> Result<(RunInfo, Machine), StoreError> {
        let (mut info, machine_json, owner): (RunInfo, String, Option<Owner>) = self
            .conn
            .query_row(
                &format!(
                    "SELECT r.id, r.started_at, r.command_line, r.save_name, r.status, r.machine_json,
                        o.pid, o.start_ticks, o.boot_id, {}, {}
                 FROM runs r LEFT JOIN run_owner o ON o.run_id = r.id WHERE r.id = ?1",
                    // An older schema read as it is has no UUIDs and measured runs only.
                    if self.has_column("runs", "uuid")? { "r.uuid" } else { "NULL" },
                    if self.has_column("runs", "kind")? { "r.kind" } else { "'measure'" }
                ),
                params![run_id],
                |r| {
                    Ok((
                        RunInfo {
                            id: r.get(0)?,
                            started_at: r.get(1)?,
                            command_line: r.get(2)?,
                            save_name: r.get(3)?,
                            status: stored_status(r, 4)?,
                            uuid: r.get(9)?,
                            kind: stored_kind(r, 10)?,
                        },
                        r.get(5)?,
                        owner_of(r, 6)?,
                    ))
                },
            )
            .optional()?
            .ok_or_else(|| StoreError::NoSuchRun(run_id.to_string()))?;
        let machine: Machine = parse_json("machine", &machine_json)?;
        info.status = effective_status(info.status, owner, &machine.hostname);
        Ok((info, machine))
    }

    fn load_results(&self, run_id: i64) -> Result<Vec<ResultRow>, StoreError> {
        // A database of an older schema opened read-only has no rounds (one round each)
        // and raw samples.
        let mut older: Vec<(&str, &str)> = Vec::new();
        for (column, instead) in [("rounds_json", "NULL"), ("samples_format", "'f64'"), ("trace_json", "NULL")] {
            if !self.has_column("results", column)? {
                older.push((column, instead));
            }
        }
        let mut stmt = self.conn.prepare(&codec::select_sql("?1", &older))?;
        let mut rows = stmt.query(params![run_id])?;
        let (mut results, mut budget) = (Vec::new(), oscost_figure::histo::SampleBudget::default());
        while let Some(row) = rows.next()? {
            results.push(codec::StoredRow::decode(row, &mut budget)?);
        }
        Ok(results)
    }

    fn load_skipped(&self, run_id: i64) -> Result<Vec<Skipped>, StoreError> {
        let mut stmt =
            self.conn.prepare("SELECT benchmark, params, reason FROM skipped WHERE run_id = ?1 ORDER BY rowid")?;
        let skipped = stmt
            .query_map(params![run_id], |r| {
                Ok(Skipped {
                    benchmark: BenchId::stored(r.get::<_, String>(0)?),
                    params: r.get::<_, String>(1)?.into(),
                    reason: r.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(skipped)
    }

    /// Writes whole runs (an import) in one transaction: all or nothing. Returns the
    /// new run ids.
    pub fn import(&mut self, runs: &[(RunDocument, Vec<Skipped>)]) -> Result<Vec<Imported>, StoreError> {
        let tx = self.import_transaction()?;
        let ids = runs.iter().map(|(doc, skipped)| import_run(&tx, doc, skipped)).collect::<Result<_, _>>()?;
        tx.commit()?;
        Ok(ids)
    }

    /// Imports the runs `read` hands over one at a time, each written as it comes, so
    /// the import holds one run in memory whatever the file's size; all or nothing.
    pub fn import_each(&mut self, read: ImportReader<'_>) -> Result<Vec<Imported>, ImportFailure> {
        let tx = self.import_transaction()?;
        let mut ids = Vec::new();
        let mut failed = None;
        let outcome = read(&mut |doc, skipped| match import_run(&tx, &doc, &skipped) {
            Ok(id) => {
                ids.push(id);
                Ok(())
            }
            Err(e) => {
                let shown = e.to_string();
                failed = Some(e);
                Err(shown.into())
            }
        });
        // Either failure drops the transaction, which rolls back whatever was written.
        if let Some(e) = failed {
            return Err(ImportFailure::Store(e));
        }
        outcome.map_err(ImportFailure::Input)?;
        tx.commit().map_err(StoreError::from)?;
        Ok(ids)
    }

    /// The write transaction of an import, once the file has passed its check: writing
    /// into a damaged file can succeed where it touches no damaged page and leave the
    /// damage for later (the check's cost grows with the file, once per import).
    fn import_transaction(&mut self) -> Result<rusqlite::Transaction<'_>, StoreError> {
        let path = self.path.display().to_string();
        let tx = self.write()?;
        let check: String = tx.query_row("PRAGMA quick_check(1)", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(StoreError::Malformed(format!(
                "the database {path} is damaged (SQLite's quick_check: {check}); nothing was imported"
            )));
        }
        Ok(tx)
    }
}

/// Writes one imported run inside the import's transaction; a run this database
/// already holds (by its UUID) is not added again.
fn import_run(tx: &rusqlite::Transaction, doc: &RunDocument, skipped: &[Skipped]) -> Result<Imported, StoreError> {
    if let Some(u) = &doc.run.uuid {
        let held: Option<i64> =
            tx.query_row("SELECT id FROM runs WHERE uuid = ?1", params![u], |r| r.get(0)).optional()?;
        if let Some(id) = held {
            return Ok(Imported::AlreadyHeld(id));
        }
    }
    let uuid = doc.run.uuid.clone().unwrap_or_else(new_uuid);
    // A saved name travels with the run unless this database already uses it.
    let name_free = match &doc.run.save_name {
        Some(n) => {
            tx.query_row("SELECT COUNT(*) FROM runs WHERE save_name = ?1", params![n], |r| r.get::<_, i64>(0))? == 0
        }
        None => false,
    };
    let save_name = doc.run.save_name.as_ref().filter(|_| name_free);
    tx.execute(
        "INSERT INTO runs (started_at, finished_at, command_line, save_name, status, hostname, kernel_release, machine_json, uuid, kind)
         VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            doc.run.started_at,
            doc.run.command_line,
            save_name,
            doc.run.status.as_str(),
            doc.machine.hostname,
            doc.machine.kernel_release,
            json(&doc.machine),
            uuid,
            doc.run.kind.as_str()
        ],
    )?;
    let id = tx.last_insert_rowid();
    insert_rows(tx, id, &doc.results, skipped)?;
    Ok(Imported::Added(id))
}

impl Backend for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }
    fn begin_run(&mut self, start: &RunStart, machine: &Machine, owner: Option<&Owner>) -> Result<i64, StoreError> {
        SqliteStore::begin_run(self, start, machine, owner)
    }
    fn add_benchmark(&mut self, run_id: i64, rows: &[ResultRow], skipped: &[Skipped]) -> Result<(), StoreError> {
        SqliteStore::add_benchmark(self, run_id, rows, skipped)
    }
    fn finish_run(&mut self, run_id: i64, finished_at: &str, status: RunStatus) -> Result<(), StoreError> {
        SqliteStore::finish_run(self, run_id, finished_at, status)
    }
    fn latest_run_id(&mut self) -> Result<Option<i64>, StoreError> {
        SqliteStore::latest_run_id(self)
    }
    fn resolve(&mut self, reference: &str) -> Result<i64, StoreError> {
        SqliteStore::resolve(self, reference)
    }
    fn list_runs(&mut self, filter: &RunFilter) -> Result<Vec<RunListing>, StoreError> {
        SqliteStore::list_runs(self, filter)
    }
    fn load_run(&mut self, run_id: i64) -> Result<(RunDocument, Vec<Skipped>), StoreError> {
        SqliteStore::load_run(self, run_id)
    }
    fn import(&mut self, runs: &[(RunDocument, Vec<Skipped>)]) -> Result<Vec<Imported>, StoreError> {
        SqliteStore::import(self, runs)
    }
    fn import_each(&mut self, read: ImportReader<'_>) -> Result<Vec<Imported>, ImportFailure> {
        SqliteStore::import_each(self, read)
    }
}

/// The run kind in column `i` of a row.
/// The status column at `i`, read as a status.
fn stored_status(r: &rusqlite::Row, i: usize) -> rusqlite::Result<RunStatus> {
    let name: String = r.get(i)?;
    parse_status(name).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e.into()))
}

fn stored_kind(r: &rusqlite::Row, i: usize) -> rusqlite::Result<oscost_figure::model::RunKind> {
    let name: String = r.get(i)?;
    parse_kind(name).map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e.into()))
}

/// The owner columns starting at `i` of a row (all NULL without an owner).
fn owner_of(r: &rusqlite::Row, i: usize) -> rusqlite::Result<Option<Owner>> {
    let pid: Option<i32> = r.get(i)?;
    let start: Option<i64> = r.get(i + 1)?;
    let boot: Option<String> = r.get(i + 2)?;
    Ok(match (pid, start, boot) {
        (Some(pid), Some(start), Some(boot_id)) => Some(Owner { pid, start_ticks: start as u64, boot_id }),
        _ => None,
    })
}

fn insert_rows(
    tx: &rusqlite::Transaction,
    run_id: i64,
    rows: &[ResultRow],
    skipped: &[Skipped],
) -> Result<(), StoreError> {
    let first_seq: i64 =
        tx.query_row("SELECT COALESCE(MAX(seq), -1) + 1 FROM results WHERE run_id = ?1", params![run_id], |r| {
            r.get(0)
        })?;
    let sql = codec::insert_sql(|i| format!("?{i}"));
    for (seq, r) in (first_seq..).zip(rows) {
        let c = codec::StoredRow::encode(r)?;
        let values: [&dyn rusqlite::ToSql; 21] = codec::row_params!(&run_id, &seq, c);
        tx.execute(&sql, &values[..])?;
    }
    for s in skipped {
        tx.execute(
            "INSERT INTO skipped (run_id, benchmark, params, reason) VALUES (?1, ?2, ?3, ?4)",
            params![run_id, s.benchmark.as_str(), s.params.as_str(), s.reason],
        )?;
    }
    Ok(())
}

/// SQLite's columns, for the row codec.
impl codec::Columns for rusqlite::Row<'_> {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        Ok(self.get(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.get(i)?)
    }
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        Ok(self.get(i)?)
    }
    fn real(&self, i: usize) -> Result<Option<f64>, StoreError> {
        Ok(self.get(i)?)
    }
    fn blob(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        Ok(self.get(i)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(started_at: &str, command_line: &str, save_name: Option<String>) -> RunStart {
        RunStart {
            started_at: started_at.into(),
            command_line: command_line.into(),
            save_name,
            uuid: new_uuid(),
            kind: oscost_figure::model::RunKind::Measure,
        }
    }
    use oscost_figure::model::{Count, Flag, FlagCode};

    fn machine() -> Machine {
        oscost_platform::machine::Machine::example()
    }

    fn row() -> ResultRow {
        let mut r = ResultRow::from_samples("syscall.getppid", Method::PerCall, "ns/call", vec![1.0, 2.0, 3.0, 4.0], 4)
            .unwrap()
            .with_param("via", "raw");
        r.counts.insert(Count::Switches, 0.0);
        r.flag(Flag::new(FlagCode::Vdso, "reason"));
        r
    }

    #[test]
    fn default_path_rules() {
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(default_path_from(Some("/x".into()), Some("/h".into())), p("/x/oscost/results.db"));
        assert_eq!(default_path_from(None, Some("/h".into())), p("/h/.local/share/oscost/results.db"));
        assert_eq!(default_path_from(Some("".into()), Some("/h".into())), p("/h/.local/share/oscost/results.db"));
        assert_eq!(default_path_from(None, None), None, "no guess when there is no home");
        assert_eq!(default_path_from(Some("".into()), Some("".into())), None);
        // The XDG specification: a relative XDG_DATA_HOME is ignored.
        assert_eq!(
            default_path_from(Some("rel/dir".into()), Some("/h".into())),
            p("/h/.local/share/oscost/results.db")
        );
    }

    #[test]
    fn round_trip_keeps_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/results.db");
        let mut s = SqliteStore::open(&path).unwrap();
        let id =
            s.begin_run(&start("2026-01-01T00:00:00Z", "oscost run", Some("base".into())), &machine(), None).unwrap();
        let skipped = vec![Skipped {
            benchmark: "ctx.pipe".into(),
            params: "placement=cross_cpu".into(),
            reason: "one CPU".into(),
        }];
        s.add_benchmark(id, &[row()], &skipped).unwrap();
        s.finish_run(id, "2026-01-01T00:00:01Z", RunStatus::Complete).unwrap();
        drop(s);
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(s.resolve("latest").unwrap(), id);
        assert_eq!(s.resolve("base").unwrap(), id);
        assert!(s.resolve("nope").is_err());
        let (doc, sk) = s.load_run(id).unwrap();
        assert_eq!(doc.results, vec![row()]);
        assert_eq!(sk, skipped);
        assert_eq!(doc.run.status, RunStatus::Complete);
        assert_eq!(doc.machine, machine());
        let listed = s.list_runs(&RunFilter { benchmark: Some("syscall".into()), ..Default::default() }).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].results, 1);
        assert!(
            s.list_runs(&RunFilter { host: Some("no-such-host".into()), ..Default::default() }).unwrap().is_empty()
        );
    }

    /// "database or disk is full" and its kind name no file by themselves.
    #[test]
    fn a_bare_sql_error_names_its_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut s = SqliteStore::open(&path).unwrap();
        let id = s.begin_run(&start("2026-01-01T00:00:00Z", "oscost run", None), &machine(), None).unwrap();
        drop(s);
        Connection::open(&path).unwrap().execute_batch("DROP TABLE skipped").unwrap();
        let store = crate::Store::open_existing(&path).unwrap();
        let e = store.load_run(id).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()) && e.contains("skipped"), "{e}");
    }

    /// An import into a damaged file must not write what it can and exit 0: the file
    /// is checked first, and nothing is written.
    #[test]
    fn an_import_into_a_damaged_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut s = SqliteStore::open(&path).unwrap();
        for i in 0..40 {
            let id = s.begin_run(&start("2026-01-01T00:00:00Z", "oscost run", None), &machine(), None).unwrap();
            s.add_benchmark(id, &vec![row(); 20], &[]).unwrap();
            s.finish_run(id, &format!("2026-01-01T00:00:{i:02}Z"), RunStatus::Complete).unwrap();
        }
        let (doc, skipped) = s.load_run(1).unwrap();
        drop(s);
        // Scribble over a page in the middle of the file (past the schema's first page).
        let mut bytes = std::fs::read(&path).unwrap();
        let page = 4096;
        assert!(bytes.len() > 6 * page, "a file of several pages");
        let at = (bytes.len() / page / 2) * page;
        for b in &mut bytes[at..at + page] {
            *b = 0xA5;
        }
        std::fs::write(&path, bytes).unwrap();
        let mut s = SqliteStore::open_existing(&path).unwrap();
        let mut doc = doc;
        doc.run.uuid = Some(crate::new_uuid());
        let e = s.import(&[(doc, skipped)]).unwrap_err().to_string();
        assert!(e.contains("damaged"), "{e}");
    }

    #[test]
    fn unwritable_path_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain-file");
        std::fs::write(&file, b"x").unwrap();
        // A path below a regular file cannot be created.
        let err = SqliteStore::open(&file.join("results.db")).err().expect("must fail");
        assert!(err.to_string().contains("plain-file"), "{err}");
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        drop(SqliteStore::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        assert!(matches!(SqliteStore::open(&path), Err(StoreError::TooNew { .. })));
    }

    #[test]
    fn concurrent_writers_wait_for_each_other_and_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || -> Result<i64, StoreError> {
                    // Each writer opens (and migrates) a fresh database at the same time.
                    let mut s = SqliteStore::open(&path)?;
                    let id =
                        s.begin_run(&start("2026-01-01T00:00:00Z", "w", Some("same-name".into())), &machine(), None)?;
                    for _ in 0..5 {
                        s.add_benchmark(id, &[row()], &[])?;
                    }
                    s.finish_run(
                        id,
                        "2026-01-01T00:00:01Z",
                        if i % 2 == 0 { RunStatus::Complete } else { RunStatus::Interrupted },
                    )?;
                    Ok(id)
                })
            })
            .collect();
        let ids: Vec<i64> = handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
        let s = SqliteStore::open_existing(&path).unwrap();
        let runs = s.list_runs(&RunFilter::default()).unwrap();
        assert_eq!(runs.len(), 8);
        assert!(runs.iter().all(|r| r.results == 5 && r.status != RunStatus::Running), "{runs:?}");
        let named: Vec<_> = runs.iter().filter(|r| r.save_name.is_some()).collect();
        assert_eq!(named.len(), 1, "one run holds the saved name");
        assert!(ids.iter().all(|id| s.load_run(*id).is_ok()));
    }

    #[test]
    fn a_run_whose_owner_is_gone_reads_as_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut s = SqliteStore::open(&path).unwrap();
        let me = Owner::current().expect("/proc names this process");
        // Runs of this host: only they can be judged (another host's stays running).
        let here = Machine { hostname: oscost_platform::sys::uname().1, ..machine() };
        let live = s.begin_run(&start("t", "c", None), &here, Some(&me)).unwrap();
        let gone = Owner { start_ticks: me.start_ticks + 1, ..me.clone() };
        let dead = s.begin_run(&start("t", "c", None), &here, Some(&gone)).unwrap();
        let unknown = s.begin_run(&start("t", "c", None), &here, None).unwrap();
        assert_eq!(s.load_run(live).unwrap().0.run.status, RunStatus::Running);
        assert_eq!(s.load_run(dead).unwrap().0.run.status, RunStatus::Abandoned);
        assert_eq!(s.load_run(unknown).unwrap().0.run.status, RunStatus::Running, "no owner recorded: as stored");
        let listed = s.list_runs(&RunFilter::default()).unwrap();
        assert_eq!(listed.iter().find(|r| r.id == dead).unwrap().status, RunStatus::Abandoned);
        s.finish_run(dead, "t", RunStatus::Interrupted).unwrap();
        assert_eq!(s.load_run(dead).unwrap().0.run.status, RunStatus::Interrupted, "a finished run is what it says");
    }

    #[test]
    fn a_count_stored_as_null_leaves_the_run_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut s = SqliteStore::open(&path).unwrap();
        let id = s.begin_run(&start("t", "c", None), &machine(), None).unwrap();
        let mut r = row();
        r.counts.insert(Count::JainIndex, f64::NAN);
        s.add_benchmark(id, &[r], &[]).unwrap();
        let stored: String = s.conn.query_row("SELECT counts_json FROM results", [], |r| r.get(0)).unwrap();
        assert_eq!(stored, r#"{"switches":0.0}"#, "a NaN is not written");
        // What an older oscost wrote for 0/0.
        s.conn.execute("UPDATE results SET counts_json = '{\"jain_index\":null,\"switches\":0.0}'", []).unwrap();
        let (doc, _) = s.load_run(id).unwrap();
        assert_eq!(doc.results[0].counts, row().counts);
    }

    #[test]
    fn reading_never_creates_and_names_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("typo/a/x.db");
        assert!(matches!(SqliteStore::open_existing(&missing), Err(StoreError::Missing { .. })));
        assert!(!dir.path().join("typo").exists(), "no directory was created");
        let junk = dir.path().join("junk.db");
        std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
        let e = SqliteStore::open_existing(&junk).err().expect("junk is refused");
        assert!(e.to_string().contains("is not an oscost results database"), "{e}");
        let e = SqliteStore::open(&junk).err().expect("junk is refused for writing too");
        assert!(e.to_string().contains("is not an oscost results database"), "{e}");
    }

    #[test]
    fn an_older_schema_upgrades_in_place_and_keeps_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let c = Connection::open(&path).unwrap();
            let Step::Sql(v1) = MIGRATIONS[0] else { unreachable!("v1 is SQL") };
            c.execute_batch(v1).unwrap();
            c.pragma_update(None, "user_version", 1).unwrap();
            c.execute(
                "INSERT INTO runs (started_at, command_line, status, hostname, kernel_release, machine_json)
                 VALUES ('t', 'c', 'complete', 'h', 'k', ?1)",
                params![json(&machine())],
            )
            .unwrap();
        }
        let version = || -> i64 {
            Connection::open(&path).unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap()
        };
        // A reader that migrated the file would leave it unreadable to an older oscost:
        // a reader reads a migrated private copy, and the file stays.
        let bytes = std::fs::read(&path).unwrap();
        let s = SqliteStore::open_existing(&path).unwrap();
        assert_eq!(s.load_run(1).unwrap().0.run.status, RunStatus::Complete);
        drop(s);
        assert_eq!(version(), 1, "a reader left the schema as it was");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "a reader changed no byte");
        // A writer upgrades it in place.
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(s.load_run(1).unwrap().0.run.status, RunStatus::Complete);
        drop(s);
        assert_eq!(version(), MIGRATIONS.len() as i64);
    }

    #[test]
    fn samples_blob_round_trip() {
        let v = vec![1.5, -2.0, f64::MAX];
        assert_eq!(decode_samples(&encode_samples(&v)).unwrap(), v);
        assert!(decode_samples(&[1, 2, 3]).is_err());
    }
}
