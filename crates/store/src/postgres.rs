//! The PostgreSQL backend: a shared store that many machines write to (`oscost push`,
//! or `--db postgres://…` directly), through the synchronous `postgres` crate.
//!
//! The schema is SQLite's, step by step, translated (`dialect`: BIGSERIAL ids, BIGINT,
//! DOUBLE PRECISION, BYTEA blobs), versioned in `oscost_schema` and migrated under a transaction-
//! scoped advisory lock, so machines that connect at once migrate once. Every write is
//! one transaction: a benchmark's rows, a finished run, or a whole pushed run, so a
//! push that is killed leaves nothing of the run behind. A run is named by its UUID
//! (unique): pushing a run twice, even from two machines at once, stores it once.
//!
//! The client blocks in its calls and has no timeout of its own past the socket's
//! connect (a stopped server accepts the connection and then never answers), so the
//! connection lives in a thread of its own and every call waits for it with a bound:
//! the URL's `connect_timeout` (10 s without one) for connecting, [`CALL_TIMEOUT`] for
//! each later call (an import gets more by its size). A call past its bound fails with
//! the cause, and the store refuses every later call instead of queueing behind it.

use std::sync::mpsc;
use std::time::Duration;

use ::postgres::{Client, Error as PgError, NoTls, Transaction};

use super::*;
use oscost_figure::model::{BenchId, ResultRow, RunDocument, RunInfo, RunStatus, SCHEMA_VERSION, Skipped};
use oscost_platform::machine::Machine;

/// SQLite's schema in PostgreSQL's dialect: 64-bit serial ids and integers, double
/// precision reals, BYTEA blobs. The same names and columns, so both backends read and
/// write rows alike.
pub fn dialect(sqlite: &str) -> String {
    sqlite
        .replace("id INTEGER PRIMARY KEY,", "id BIGSERIAL PRIMARY KEY,")
        .replace(" INTEGER", " BIGINT")
        .replace(" REAL", " DOUBLE PRECISION")
        .replace(" BLOB", " BYTEA")
}

/// The schema, one step per version, as SQLite's (see `dialect`).
const MIGRATIONS: [&str; 6] = [
    SCHEMA_V1,
    SCHEMA_V2,
    SCHEMA_V3,
    SCHEMA_V4,
    // A fresh database has no runs to name before the index.
    "ALTER TABLE runs ADD COLUMN uuid TEXT; CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);",
    SCHEMA_V6,
];

/// The advisory lock that serialises migrations (any constant shared by all oscosts).
const MIGRATION_LOCK: i64 = 0x05C0_57DB;

/// How long connecting may take when the URL sets no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long any one call (a transaction) may wait for the server.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// What an import adds to [`CALL_TIMEOUT`] for each row it writes.
const IMPORT_PER_ROW: Duration = Duration::from_millis(10);

/// The shared store: calls forwarded to the connection's thread, each with a bound.
pub struct PgStore {
    jobs: mpsc::Sender<Job>,
    /// The URL without its password, for messages.
    shown: String,
    /// Why the store takes no more calls (one timed out and may still hold the line).
    broken: Option<String>,
}

/// One call, run on the connection's thread.
type Job = Box<dyn FnOnce(&mut PgConnection) + Send>;

/// The connection itself, owned by its thread.
struct PgConnection {
    client: Client,
    /// The URL without its password, for messages.
    shown: String,
}

/// A client error with every cause under it ("error connecting to server: Connection
/// refused (os error 111)", not only the first part).
fn cause_of(e: &PgError) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        source = s.source();
    }
    without_password(&text)
}

/// The password libpq would take when the URL gives none: `PGPASSWORD`, else the first
/// matching line of the password file (`PGPASSFILE`, else `~/.pgpass`), so it need not
/// be written in a URL on the command line, where every user sees it (`ps`). The file
/// is read as libpq reads it: only when it is a regular file of this user that no one
/// else can read or write (mode 0600), and never past 64 KiB.
fn password_from_environment(config: &::postgres::Config) -> Option<String> {
    if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
        return Some(pw.to_string_lossy().into_owned());
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".pgpass")))?;
    let text = read_private_file(&file)?;
    let host = match config.get_hosts().first() {
        Some(::postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().unwrap_or_default();
    let dbname = config.get_dbname().unwrap_or(user);
    pgpass_lookup(&text, [&host, &port, dbname, user])
}

/// The file at `path` when it is a regular file of this user, mode 0600 or narrower,
/// at most 64 KiB (opened without following a link and without blocking).
fn read_private_file(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    const LIMIT: u64 = 64 * 1024;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let m = f.metadata().ok()?;
    let me = rustix::process::geteuid().as_raw();
    if !m.file_type().is_file() || m.uid() != me || m.mode() & 0o077 != 0 || m.len() > LIMIT {
        return None;
    }
    let mut text = String::new();
    f.take(LIMIT).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The password of the first `host:port:database:user:password` line matching
/// `wanted` (each field may be `*`; `\:` and `\\` are a colon and a backslash).
fn pgpass_lookup(text: &str, wanted: [&str; 4]) -> Option<String> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let fields = pgpass_fields(line);
        let [host, port, db, user, password] = <[String; 5]>::try_from(fields).ok()?;
        let matches = [host, port, db, user].iter().zip(wanted).all(|(f, w)| f == "*" || f == w);
        matches.then_some(password)
    })
}

/// A password-file line split at its unescaped colons, escapes undone.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("one field").extend(chars.next()),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

use super::without_password;

impl PgStore {
    /// Connects and migrates, within the URL's `connect_timeout` (10 s without one)
    /// and then [`CALL_TIMEOUT`].
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let shown = without_password(url);
        let mut config: ::postgres::Config = url.parse().map_err(|e: PgError| StoreError::Postgres {
            url: shown.clone(),
            cause: format!("a bad URL: {}", cause_of(&e)),
        })?;
        if config.get_password().is_none()
            && let Some(password) = password_from_environment(&config)
        {
            config.password(password);
        }
        let limit = config.get_connect_timeout().copied().unwrap_or(CONNECT_TIMEOUT);
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, connected) = mpsc::sync_channel(1);
        let thread_shown = shown.clone();
        let spawned = std::thread::Builder::new().name("oscost-postgres".into()).spawn(move || {
            let client = match config.connect(NoTls) {
                Ok(c) => c,
                Err(e) => {
                    let _ = ready.send(Err(format!("cannot connect: {}", cause_of(&e))));
                    return;
                }
            };
            let _ = ready.send(Ok(()));
            let mut conn = PgConnection { client, shown: thread_shown };
            for job in queue {
                job(&mut conn);
            }
        });
        let fail = |cause: String| StoreError::Postgres { url: shown.clone(), cause };
        spawned.map_err(|e| fail(format!("cannot start the connection's thread: {e}")))?;
        match connected.recv_timeout(limit) {
            Ok(Ok(())) => {}
            Ok(Err(cause)) => return Err(fail(cause)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(fail(format!(
                    "cannot connect: no answer from the server within {} s (connect_timeout)",
                    limit.as_secs_f64()
                )));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(fail("cannot connect: the connection's thread ended".into()));
            }
        }
        let mut store = Self { jobs, shown, broken: None };
        store.call("migrating the schema", CALL_TIMEOUT, |c| c.migrate())?;
        Ok(store)
    }

    /// Runs `f` on the connection's thread and waits at most `limit` for it.
    fn call<T: Send + 'static>(
        &mut self,
        what: &str,
        limit: Duration,
        f: impl FnOnce(&mut PgConnection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let fail = |cause: String| StoreError::Postgres { url: self.shown.clone(), cause };
        if let Some(why) = &self.broken {
            return Err(fail(format!("{what}: refused, since {why}")));
        }
        let (reply, answer) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |c| {
            let _ = reply.send(f(c));
        });
        if self.jobs.send(job).is_err() {
            return Err(fail(format!("{what}: the connection's thread has ended")));
        }
        match answer.recv_timeout(limit) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let why = format!("{what} got no answer from the server within {} s", limit.as_secs_f64());
                self.broken = Some(why.clone());
                Err(fail(why))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(fail(format!("{what}: the connection's thread ended"))),
        }
    }
}

impl PgConnection {
    fn err(&self, e: PgError) -> StoreError {
        StoreError::Postgres { url: self.shown.clone(), cause: cause_of(&e) }
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let known = MIGRATIONS.len() as i64;
        let shown = self.shown.clone();
        let pg = |e: PgError| StoreError::Postgres { url: shown.clone(), cause: cause_of(&e) };
        let mut tx = self.client.transaction().map_err(pg)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).map_err(pg)?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS oscost_schema (version BIGINT NOT NULL)").map_err(pg)?;
        let version: i64 = match tx.query_opt("SELECT version FROM oscost_schema", &[]).map_err(pg)? {
            Some(row) => row.get(0),
            None => {
                tx.execute("INSERT INTO oscost_schema (version) VALUES (0)", &[]).map_err(pg)?;
                0
            }
        };
        if version > known {
            return Err(StoreError::Postgres {
                url: shown.clone(),
                cause: format!(
                    "schema version {version} is newer than this oscost understands ({known}); use a newer oscost"
                ),
            });
        }
        for (i, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.batch_execute(&dialect(step)).map_err(pg)?;
            tx.execute("UPDATE oscost_schema SET version = $1", &[&(i as i64 + 1)]).map_err(pg)?;
        }
        tx.commit().map_err(pg)
    }
}

/// Inserts a run's rows and skips, numbering rows after those already there.
fn insert_rows(tx: &mut Transaction, run_id: i64, rows: &[ResultRow], skipped: &[Skipped]) -> Result<(), PgOrStore> {
    let first: i64 =
        tx.query_one("SELECT COALESCE(MAX(seq), -1) + 1 FROM results WHERE run_id = $1", &[&run_id])?.get(0);
    let sql = codec::insert_sql(|i| format!("${i}"));
    for (seq, r) in (first..).zip(rows) {
        let c = codec::StoredRow::encode(r)?;
        let values: [&(dyn ::postgres::types::ToSql + Sync); 21] = codec::row_params!(&run_id, &seq, c);
        tx.execute(&sql, &values)?;
    }
    for s in skipped {
        tx.execute(
            "INSERT INTO skipped (run_id, benchmark, params, reason) VALUES ($1, $2, $3, $4)",
            &[&run_id, &s.benchmark.as_str(), &s.params.as_str(), &s.reason],
        )?;
    }
    Ok(())
}

/// The owner columns starting at `i` (pid, start ticks, boot id; all NULL without).
fn owner_at(r: &::postgres::Row, i: usize) -> Option<Owner> {
    match (r.get::<_, Option<i64>>(i), r.get::<_, Option<i64>>(i + 1), r.get::<_, Option<String>>(i + 2)) {
        (Some(pid), Some(t), Some(boot_id)) => Some(Owner { pid: pid as i32, start_ticks: t as u64, boot_id }),
        _ => None,
    }
}

/// Either kind of failure inside a transaction.
enum PgOrStore {
    Pg(PgError),
    Store(StoreError),
}

impl From<PgError> for PgOrStore {
    fn from(e: PgError) -> Self {
        PgOrStore::Pg(e)
    }
}

impl From<StoreError> for PgOrStore {
    fn from(e: StoreError) -> Self {
        PgOrStore::Store(e)
    }
}

impl PgConnection {
    fn fail(&self, e: PgOrStore) -> StoreError {
        match e {
            PgOrStore::Pg(e) => self.err(e),
            PgOrStore::Store(e) => e,
        }
    }

    fn load_results(&mut self, run_id: i64) -> Result<Vec<ResultRow>, PgOrStore> {
        let rows = self.client.query(&codec::select_sql("$1", &[]), &[&run_id])?;
        let mut budget = oscost_figure::histo::SampleBudget::default();
        Ok(rows.iter().map(|r| codec::StoredRow::decode(r, &mut budget)).collect::<Result<_, _>>()?)
    }
}

/// PostgreSQL's columns, for the row codec.
impl codec::Columns for ::postgres::Row {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        self.try_get(i).map_err(column_error)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        self.try_get(i).map_err(column_error)
    }
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.try_get(i).map_err(column_error)
    }
    fn real(&self, i: usize) -> Result<Option<f64>, StoreError> {
        self.try_get(i).map_err(column_error)
    }
    fn blob(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        self.try_get(i).map_err(column_error)
    }
}

/// A column of an unexpected type or nullness.
fn column_error(e: PgError) -> StoreError {
    StoreError::Malformed(format!("a results column: {e}"))
}

impl Backend for PgStore {
    fn location(&self) -> String {
        self.shown.clone()
    }

    fn begin_run(&mut self, start: &RunStart, machine: &Machine, owner: Option<&Owner>) -> Result<i64, StoreError> {
        let (start, machine, owner) = (start.clone(), machine.clone(), owner.cloned());
        self.call("starting a run", CALL_TIMEOUT, move |c| c.begin_run(&start, &machine, owner.as_ref()))
    }

    fn add_benchmark(&mut self, run_id: i64, rows: &[ResultRow], skipped: &[Skipped]) -> Result<(), StoreError> {
        let (rows, skipped) = (rows.to_vec(), skipped.to_vec());
        self.call("storing a benchmark", CALL_TIMEOUT, move |c| c.add_benchmark(run_id, &rows, &skipped))
    }

    fn finish_run(&mut self, run_id: i64, finished_at: &str, status: RunStatus) -> Result<(), StoreError> {
        let finished_at = finished_at.to_string();
        self.call("finishing a run", CALL_TIMEOUT, move |c| c.finish_run(run_id, &finished_at, status))
    }

    fn latest_run_id(&mut self) -> Result<Option<i64>, StoreError> {
        self.call("finding the latest run", CALL_TIMEOUT, |c| c.latest_run_id())
    }

    fn resolve(&mut self, reference: &str) -> Result<i64, StoreError> {
        let reference = reference.to_string();
        self.call("finding a run", CALL_TIMEOUT, move |c| c.resolve(&reference))
    }

    fn list_runs(&mut self, filter: &RunFilter) -> Result<Vec<RunListing>, StoreError> {
        let filter = filter.clone();
        self.call("listing runs", CALL_TIMEOUT, move |c| c.list_runs(&filter))
    }

    fn load_run(&mut self, run_id: i64) -> Result<(RunDocument, Vec<Skipped>), StoreError> {
        self.call("loading a run", CALL_TIMEOUT, move |c| c.load_run(run_id))
    }

    fn import(&mut self, runs: &[(RunDocument, Vec<Skipped>)]) -> Result<Vec<Imported>, StoreError> {
        let rows: usize = runs.iter().map(|(d, s)| d.results.len() + s.len()).sum();
        let limit = CALL_TIMEOUT + IMPORT_PER_ROW * rows as u32;
        let runs = runs.to_vec();
        self.call("importing runs", limit, move |c| c.import(&runs))
    }
}

/// The calls themselves, on the connection's thread.
impl Backend for PgConnection {
    fn location(&self) -> String {
        self.shown.clone()
    }

    fn begin_run(&mut self, start: &RunStart, machine: &Machine, owner: Option<&Owner>) -> Result<i64, StoreError> {
        let run = (|| -> Result<i64, PgError> {
            let mut tx = self.client.transaction()?;
            if let Some(name) = &start.save_name {
                tx.execute("UPDATE runs SET save_name = NULL WHERE save_name = $1", &[name])?;
            }
            let id: i64 = tx
                .query_one(
                    "INSERT INTO runs (started_at, command_line, save_name, status, hostname, kernel_release, machine_json, uuid, kind)
                     VALUES ($1, $2, $3, 'running', $4, $5, $6, $7, $8) RETURNING id",
                    &[
                        &start.started_at,
                        &start.command_line,
                        &start.save_name,
                        &machine.hostname,
                        &machine.kernel_release,
                        &json(machine),
                        &start.uuid,
                        &start.kind.as_str(),
                    ],
                )?
                .get(0);
            if let Some(o) = owner {
                tx.execute(
                    "INSERT INTO run_owner (run_id, pid, start_ticks, boot_id) VALUES ($1, $2, $3, $4)",
                    &[&id, &i64::from(o.pid), &(o.start_ticks as i64), &o.boot_id],
                )?;
            }
            tx.commit()?;
            Ok(id)
        })();
        run.map_err(|e| self.err(e))
    }

    fn add_benchmark(&mut self, run_id: i64, rows: &[ResultRow], skipped: &[Skipped]) -> Result<(), StoreError> {
        let done = (|| -> Result<(), PgOrStore> {
            let mut tx = self.client.transaction()?;
            insert_rows(&mut tx, run_id, rows, skipped)?;
            tx.commit()?;
            Ok(())
        })();
        done.map_err(|e| self.fail(e))
    }

    fn finish_run(&mut self, run_id: i64, finished_at: &str, status: RunStatus) -> Result<(), StoreError> {
        self.client
            .execute(
                "UPDATE runs SET finished_at = $2, status = $3 WHERE id = $1",
                &[&run_id, &finished_at, &status.as_str()],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    fn latest_run_id(&mut self) -> Result<Option<i64>, StoreError> {
        let r = self.client.query_one("SELECT MAX(id) FROM runs", &[]);
        r.map(|row| row.get::<_, Option<i64>>(0)).map_err(|e| self.err(e))
    }

    fn resolve(&mut self, reference: &str) -> Result<i64, StoreError> {
        if reference == "latest" {
            return self.latest_run_id()?.ok_or_else(|| StoreError::NoSuchRun("(the database has no runs yet)".into()));
        }
        let r = match reference.parse::<i64>() {
            Ok(id) => self.client.query_opt("SELECT id FROM runs WHERE id = $1", &[&id]),
            Err(_) => self.client.query_opt("SELECT id FROM runs WHERE save_name = $1", &[&reference]),
        };
        let found = r.map_err(|e| self.err(e))?.map(|row| row.get::<_, i64>(0));
        found.ok_or_else(|| StoreError::NoSuchRun(format!("{reference:?}")))
    }

    fn list_runs(&mut self, filter: &RunFilter) -> Result<Vec<RunListing>, StoreError> {
        let rows = self.client.query(
            "SELECT r.id, r.started_at, r.hostname, r.kernel_release, r.status, r.save_name, r.command_line,
                        (SELECT COUNT(*) FROM results x WHERE x.run_id = r.id), o.pid, o.start_ticks, o.boot_id, r.kind
                 FROM runs r LEFT JOIN run_owner o ON o.run_id = r.id
                 WHERE ($1::TEXT IS NULL OR r.hostname = $1)
                   AND ($2::TEXT IS NULL OR EXISTS (SELECT 1 FROM results x WHERE x.run_id = r.id
                                                  AND (x.benchmark = $2 OR x.benchmark LIKE $2 || '.%')))
                   AND ($3::TEXT IS NULL OR r.started_at >= $3)
                   AND ($4::TEXT IS NULL OR r.started_at < $4)
                 ORDER BY r.id DESC",
            &[&filter.host, &filter.benchmark.as_deref(), &filter.since, &filter.until],
        );
        let rows = rows.map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                let owner = owner_at(r, 8);
                let hostname: String = r.get(2);
                Ok(RunListing {
                    id: r.get(0),
                    started_at: r.get(1),
                    status: effective_status(parse_status(r.get(4))?, owner, &hostname),
                    hostname,
                    kernel_release: r.get(3),
                    save_name: r.get(5),
                    command_line: r.get(6),
                    results: r.get(7),
                    kind: parse_kind(r.get(11))?,
                })
            })
            .collect()
    }

    fn load_run(&mut self, run_id: i64) -> Result<(RunDocument, Vec<Skipped>), StoreError> {
        let me = self;
        let head = me
            .client
            .query_opt(
                "SELECT r.id, r.started_at, r.command_line, r.save_name, r.status, r.machine_json, r.uuid,
                        o.pid, o.start_ticks, o.boot_id, r.kind
                 FROM runs r LEFT JOIN run_owner o ON o.run_id = r.id WHERE r.id = $1",
                &[&run_id],
            )
            .map_err(|e| me.err(e))?
            .ok_or_else(|| StoreError::NoSuchRun(run_id.to_string()))?;
        let owner = owner_at(&head, 7);
        let machine: Machine = parse_json("machine", head.get(5))?;
        let run = RunInfo {
            id: head.get(0),
            started_at: head.get(1),
            command_line: head.get(2),
            save_name: head.get(3),
            status: effective_status(parse_status(head.get(4))?, owner, &machine.hostname),
            uuid: head.get(6),
            kind: parse_kind(head.get(10))?,
        };
        let results = me.load_results(run_id).map_err(|e| me.fail(e))?;
        let skipped = me
            .client
            .query("SELECT benchmark, params, reason FROM skipped WHERE run_id = $1 ORDER BY ctid", &[&run_id])
            .map_err(|e| me.err(e))?
            .iter()
            .map(|r| Skipped {
                benchmark: BenchId::stored(r.get::<_, String>(0)),
                params: r.get::<_, String>(1).into(),
                reason: r.get(2),
            })
            .collect();
        Ok((RunDocument { schema_version: SCHEMA_VERSION, run, machine, results }, skipped))
    }

    fn import(&mut self, runs: &[(RunDocument, Vec<Skipped>)]) -> Result<Vec<Imported>, StoreError> {
        let done = (|| -> Result<Vec<Imported>, PgOrStore> {
            let mut tx = self.client.transaction()?;
            let mut out = Vec::with_capacity(runs.len());
            for (doc, skipped) in runs {
                let uuid = doc.run.uuid.clone().unwrap_or_else(new_uuid);
                // Claimed by its UUID first: of two pushes of one run at once, one
                // inserts and the other waits, then finds it held.
                let inserted = tx.query_opt(
                    "INSERT INTO runs (started_at, finished_at, command_line, save_name, status, hostname, kernel_release, machine_json, uuid, kind)
                     VALUES ($1, NULL, $2, NULL, $3, $4, $5, $6, $7, $8)
                     ON CONFLICT (uuid) DO NOTHING RETURNING id",
                    &[
                        &doc.run.started_at,
                        &doc.run.command_line,
                        &doc.run.status.as_str(),
                        &doc.machine.hostname,
                        &doc.machine.kernel_release,
                        &json(&doc.machine),
                        &uuid,
                        &doc.run.kind.as_str(),
                    ],
                )?;
                match inserted {
                    Some(row) => {
                        let id: i64 = row.get(0);
                        // A saved name travels with the run unless this database uses it.
                        if let Some(name) = &doc.run.save_name {
                            tx.execute(
                                "UPDATE runs SET save_name = $2 WHERE id = $1
                                 AND NOT EXISTS (SELECT 1 FROM runs WHERE save_name = $2)",
                                &[&id, name],
                            )?;
                        }
                        insert_rows(&mut tx, id, &doc.results, skipped)?;
                        out.push(Imported::Added(id));
                    }
                    None => {
                        let id: i64 = tx.query_one("SELECT id FROM runs WHERE uuid = $1", &[&uuid])?.get(0);
                        out.push(Imported::AlreadyHeld(id));
                    }
                }
            }
            tx.commit()?;
            Ok(out)
        })();
        done.map_err(|e| self.fail(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_keeps_every_name_and_changes_only_types() {
        let pg = dialect(SCHEMA_V1);
        assert!(
            pg.contains("id BIGSERIAL PRIMARY KEY,")
                && pg.contains("samples BYTEA")
                && pg.contains("min DOUBLE PRECISION")
        );
        assert!(!pg.contains(" INTEGER") && !pg.contains(" REAL") && !pg.contains(" BLOB"));
        // A key that references another table stays a plain integer, not a serial.
        assert!(dialect(SCHEMA_V2).contains("run_id BIGINT PRIMARY KEY REFERENCES runs(id)"));
    }

    #[test]
    fn the_password_file_is_matched_as_libpq_matches_it() {
        let text = "# comment\nother:5432:*:u:no\ndb.example:*:results:u:p\\:w\\\\d\n*:*:*:*:fallback\n";
        assert_eq!(pgpass_lookup(text, ["db.example", "5433", "results", "u"]).as_deref(), Some("p:w\\d"));
        assert_eq!(pgpass_lookup(text, ["elsewhere", "5432", "x", "v"]).as_deref(), Some("fallback"));
        assert_eq!(pgpass_lookup("h:1:d:u\n", ["h", "1", "d", "u"]), None);
    }

    #[test]
    fn a_password_file_others_can_read_is_ignored() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("pgpass");
        std::fs::write(&f, "*:*:*:*:pw\n").unwrap();
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        assert_eq!(read_private_file(&f), None);
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert_eq!(read_private_file(&f).as_deref(), Some("*:*:*:*:pw\n"));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(read_private_file(&link), None);
    }
}
