//! The command line: the thin layer that turns parsed arguments (`args`) into calls,
//! prints the results and chooses the exit code (0 ok, 1 failure, 2 bad usage, 130
//! interrupted). It knows the registry and the option record, never a family's
//! internals: each benchmark checks its own options (`BenchDef::check`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Parser;

use crate::bench::{self, BenchOptions};
use crate::model::{RunDocument, Skipped};
use crate::placement::Placement;
use crate::report;
use crate::select;
use crate::session::{self, RunRequest};
use crate::store::{RunFilter, Store};

pub mod args;
pub mod complete;
mod history;
mod noise;
mod plan;

pub use args::{Cli, Command, ExportFormat, Format, RunArgs};

/// Usage errors exit 2, like clap's own.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The database: `--db`, else the default location; with neither HOME nor
/// XDG_DATA_HOME set there is no default, and guessing one would hide the results.
/// The default folder is used only when it is the user's own (no link planted there,
/// no folder another user owns or can write on the way from HOME to it).
fn db_path(cli_db: &Option<PathBuf>) -> Result<PathBuf> {
    if let Some(p) = cli_db {
        return Ok(p.clone());
    }
    let Some((root, db)) = crate::store::default_location() else {
        return Err(
            UsageError("no database given and neither HOME nor XDG_DATA_HOME is set: pass --db PATH".into()).into()
        );
    };
    if let Some(dir) = db.parent() {
        crate::files::ensure_own_dir(&root, dir).map_err(|e| {
            UsageError(format!(
                "the default database folder: {e} (pass --db PATH to keep the results elsewhere, or, as root, run with your own HOME: sudo -H)"
            ))
        })?;
    }
    Ok(db)
}

/// Standard output closed by the reader (`oscost export | head`): not an error of
/// ours; the process exits as a killed pipe writer would (141) without a message.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub struct PipeClosed;

/// Writes `text` to standard output; a closed pipe becomes [`PipeClosed`].
fn out(text: &str) -> Result<()> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(PipeClosed.into()),
        r => Ok(r?),
    }
}

/// [`out`] with a line end.
fn outln(text: &str) -> Result<()> {
    out(&format!("{text}\n"))
}

/// Entry point: parses arguments, runs, returns the process exit code.
pub fn main() -> i32 {
    // A worker (a round in a fresh process) takes no other argument and prints only
    // its reply; see `worker`.
    if std::env::args_os().nth(1).is_some_and(|a| a == crate::worker::WORKER_COMMAND) {
        return crate::worker::serve();
    }
    if std::env::args_os().nth(1).is_some_and(|a| a == crate::condition::neighbour::NEIGHBOUR_COMMAND) {
        let args: Vec<String> = std::env::args().skip(2).collect();
        return crate::condition::neighbour::serve(&args);
    }
    // A shell asking for completions (COMPLETE=bash …): answered here, then exit.
    clap_complete::env::CompleteEnv::with_factory(<Cli as clap::CommandFactory>::command).complete();
    let _ = crate::sys::ignore_file_size_signal();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if e.use_stderr() && json_requested() {
                json_error(&e.kind().to_string(), &[e.render().to_string()], e.exit_code());
            } else {
                let _ = e.print();
            }
            return e.exit_code();
        }
    };
    hide_passwords();
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<PipeClosed>().is_some() => 128 + libc::SIGPIPE,
        Err(e) => {
            let code = if e.downcast_ref::<UsageError>().is_some()
                || e.downcast_ref::<select::UnknownBenchmark>().is_some()
                || e.downcast_ref::<crate::placement::PlacementError>().is_some()
                || e.downcast_ref::<crate::preflight::Refused>().is_some()
                || e.downcast_ref::<crate::store::StoreError>().is_some_and(|s| s.is_refused_path())
            {
                2
            } else {
                1
            };
            if json_requested() {
                json_error(&e.to_string(), &e.chain().skip(1).map(|c| c.to_string()).collect::<Vec<_>>(), code);
            } else {
                eprintln!("error: {e:#}");
            }
            code
        }
    }
}

/// A password written on the command line (in `--db` or `push --to`'s URL) is
/// readable by every user in `ps` while oscost runs: it is overwritten there with `*`
/// as soon as the arguments are parsed (one thread runs yet), and the user is told to
/// give it where others cannot read it.
fn hide_passwords() {
    let mut hidden = 0;
    let _ = crate::sys::rewrite_own_arguments(|arg| {
        let spans = crate::store::password_spans(arg);
        for span in &spans {
            arg[span.clone()].fill(b'*');
        }
        hidden += usize::from(!spans.is_empty());
        !spans.is_empty()
    });
    if hidden > 0 {
        eprintln!(
            "warning: a password on the command line can be read by other users (ps) until oscost hides it: give it in PGPASSWORD or ~/.pgpass instead"
        );
    }
}

/// Whether the command line asked for JSON (`--json`, `--format json`): its errors are
/// then JSON too (on stderr, so stdout holds results only).
fn json_requested() -> bool {
    // Lossy: an argument that is not UTF-8 (a path) must not panic an error report.
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    args.iter().any(|a| a == "--json" || a == "--format=json")
        || args.windows(2).any(|w| w[0] == "--format" && w[1] == "json")
}

/// An error as one JSON object, one line on stderr:
/// `{"error": {"message": …, "causes": […], "exit_code": N}}`.
fn json_error(message: &str, causes: &[String], code: i32) {
    let v = serde_json::json!({ "error": { "message": message, "causes": causes, "exit_code": code } });
    eprintln!("{v}");
}

/// Loads a run by reference; an unknown reference is a usage error.
fn load(store: &Store, reference: &str) -> Result<(RunDocument, Vec<Skipped>)> {
    let id = store.resolve(reference).map_err(|e| UsageError(e.to_string()))?;
    Ok(store.load_run(id)?)
}

/// Loads every referenced run (the latest when none is named).
fn load_all(store: &Store, refs: Vec<String>) -> Result<Vec<(RunDocument, Vec<Skipped>)>> {
    let refs = if refs.is_empty() { vec!["latest".to_string()] } else { refs };
    refs.iter().map(|r| load(store, r)).collect()
}

/// The command line as it is stored with a run: passwords in database URLs masked
/// (they would otherwise reach `runs`, exports and reports).
fn command_line() -> String {
    std::env::args_os().map(|a| crate::store::without_password(&a.to_string_lossy())).collect::<Vec<_>>().join(" ")
}

/// The width every table of this invocation is fitted to: set once from `--wide`
/// and the terminal before any command runs.
static TABLE_WIDTH: std::sync::OnceLock<report::table::Width> = std::sync::OnceLock::new();

/// `--wide`, else `$COLUMNS`, else the terminal's width, else 100 columns (a pipe or
/// a file: what a terminal of common size shows unwrapped); `-v` the full run table.
fn table_width(wide: bool, verbose: bool) -> report::table::Width {
    use report::table::{DEFAULT_WIDTH, Width};
    if wide {
        return Width::Wide;
    }
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<u16>().ok());
    let terminal = || rustix::termios::tcgetwinsize(std::io::stdout()).ok().map(|w| w.ws_col);
    let w = columns.or_else(terminal).filter(|c| *c >= 40).unwrap_or(DEFAULT_WIDTH);
    if verbose { Width::Full(w) } else { Width::Fit(w) }
}

/// The width every table of this invocation is fitted to.
pub(crate) fn width() -> report::table::Width {
    *TABLE_WIDTH.get_or_init(|| table_width(false, false))
}

/// A run as the terminal table, fitted to this invocation's width.
fn run_table(doc: &RunDocument, skipped: &[Skipped]) -> String {
    report::table::render_run(doc, skipped, width())
        + &report::paired::render(&run_pairs(doc), report::compare::DEFAULT_THRESHOLD, width())
}

/// The run just measured as the terminal table (its preflight warnings said once).
fn fresh_run_table(doc: &RunDocument, skipped: &[Skipped]) -> String {
    report::table::render_fresh_run(doc, skipped, width())
        + &report::paired::render(&run_pairs(doc), report::compare::DEFAULT_THRESHOLD, width())
}

/// A run's conditions against its baseline, at the default threshold.
fn run_pairs(doc: &RunDocument) -> Vec<crate::paired::PairedFigure> {
    crate::paired::pairs(&doc.results, report::compare::DEFAULT_THRESHOLD, crate::condition::params_changed_by)
}

fn dispatch(cli: Cli) -> Result<i32> {
    let _ = TABLE_WIDTH.set(table_width(cli.wide, cli.verbose));
    let db = || db_path(&cli.db);
    match cli.command {
        Command::Run(args) => run(*args, db()?),
        Command::Noise(args) => noise::noise(*args, db()?),
        Command::Crosscheck(args) => crate::crosscheck::command(&args).map_err(|e| UsageError(e.to_string()).into()),
        Command::List { suites } => {
            out(&if suites { suites_text() } else { list_text() })?;
            Ok(0)
        }
        Command::Info { json } => info(json),
        Command::Show { run, json, format, samples, histogram, suite } => {
            let format = if json { Format::Json } else { format };
            let reference = run.as_deref().unwrap_or("latest");
            if let Some(row) = histogram {
                return show_histogram(&db()?, reference, &row);
            }
            if samples && format != Format::Json {
                return Err(UsageError("--samples adds raw samples to JSON output: give it with --json".into()).into());
            }
            show(&db()?, reference, format, samples, suite.as_deref())
        }
        Command::Compare { sides, baseline, db_b, by, threshold, fail_on, machine, json } => {
            let request = CompareRequest { sides, baseline, by, fail_on, machine };
            compare(&db()?, db_b.as_deref(), request, threshold, json)
        }
        Command::Export { runs, format, output } => {
            if let Some(p) = &output {
                check_output(p)?;
            }
            export(&db()?, runs, format, output.as_deref())
        }
        Command::Import { file } => import(&db()?, &file),
        Command::Report { runs, output, force } => {
            let output = report_output(output, force)?;
            html_report(&db()?, runs, &output)
        }
        Command::Observe { duration, interval, json } => observe(duration.0, interval.0, json, db()?),
        Command::Trace { duration, json, command } => trace(duration.0, &command, json, db()?),
        Command::Sim { policy, workload, cpus, tasks, profile, seed, threads, nice, messages, json } => {
            let plan = crate::sim::run::Plan { policies: policy, workload, cpus, tasks, threads, nice, messages, seed };
            sim(plan, &profile, json, db()?)
        }
        Command::Push { runs, to } => push(&db()?, runs, &to),
        Command::Completions { shell } => completions(shell),
        Command::Man { command } => manual(command.as_deref()),
        Command::History { figures, host, since, until, by, fail_on_change, recent, html, json } => {
            let filter = RunFilter { host, benchmark: None, since: since.map(|d| d.0), until: until.map(|d| d.0) };
            let fail_on = fail_on_change.then_some(history::FailOnChange { recent: recent.map(|n| n as usize) });
            if let Some(p) = &html {
                check_output(p)?;
            }
            history::history(&db()?, &history::Request { figures, filter, by, fail_on, html, json })
        }
        Command::Plan { figures, precision, host, json } => {
            let filter = RunFilter { host, ..Default::default() };
            plan::plan(&db()?, &figures, &filter, precision / 100.0, json)
        }
        Command::Runs { host, benchmark, since, until, json } => {
            let filter = RunFilter { host, benchmark, since: since.map(|d| d.0), until: until.map(|d| d.0) };
            runs(&db()?, &filter, json)
        }
    }
}

/// A completion script for `shell`, from the clap definition (so it never drifts from
/// the flags).
fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "oscost", &mut buf);
    out(&String::from_utf8_lossy(&buf))?;
    Ok(0)
}

/// A manual page, as roff, from the clap definition: oscost(1), or the page of one
/// command, oscost-COMMAND(1) (the pages oscost(1) names), each with the sections clap
/// does not know: EXIT STATUS, and on oscost(1) ENVIRONMENT and FILES.
fn manual(command: Option<&str>) -> Result<i32> {
    let top = <Cli as clap::CommandFactory>::command();
    let cmd = match command {
        None => top,
        Some(name) => {
            let names: Vec<String> = top.get_subcommands().map(|c| c.get_name().to_string()).collect();
            let sub = top.find_subcommand(name).cloned().ok_or_else(|| {
                UsageError(format!(
                    "no command {name:?}; the pages are oscost(1) and oscost-{{{}}}(1)",
                    names.join(",")
                ))
            })?;
            sub.display_name(format!("oscost-{name}")).bin_name(format!("oscost {name}"))
        }
    };
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut buf)?;
    }
    manual_sections(command.is_none()).to_writer(&mut buf)?;
    if cmd.get_version().is_some() {
        man.render_version_section(&mut buf)?;
    }
    out(&String::from_utf8_lossy(&buf))?;
    Ok(0)
}

/// The sections clap cannot derive: exit statuses always; the environment and files
/// on the main page.
fn manual_sections(main_page: bool) -> roff::Roff {
    use roff::{bold, roman};
    let mut r = roff::Roff::new();
    let item = |r: &mut roff::Roff, term: &str, text: &str| {
        r.control("TP", []).text([bold(term)]).text([roman(text)]);
    };
    r.control("SH", ["EXIT STATUS"]);
    for (code, text) in [
        ("0", "Success."),
        ("1", "A benchmark failed, storing failed (the run's rounds were rescued to a file), or another error."),
        (
            "2",
            "Bad input, refused before anything was measured or written: an unknown benchmark, suite or flag, a size beyond a limit, a refused helper, a malformed import, a database path another user could change, an output that is not a regular file or a new name.",
        ),
        (
            "3",
            "compare --fail-on found a figure with the verdict it fails on, or history --fail-on-change a figure that changed.",
        ),
        ("129, 130, 143", "Stopped by SIGHUP, SIGINT or SIGTERM; the rounds that finished are stored."),
        ("141", "The reader of the output closed the pipe."),
    ] {
        item(&mut r, code, text);
    }
    if main_page {
        r.control("SH", ["ENVIRONMENT"]);
        for (name, text) in [
            ("OSCOST_DB", "The results database when --db is not given: a SQLite file or a postgres:// URL."),
            (
                "XDG_DATA_HOME",
                "Where the default database lives ($XDG_DATA_HOME/oscost/results.db); ignored unless absolute.",
            ),
            ("HOME", "The default database's folder without XDG_DATA_HOME (~/.local/share/oscost)."),
            (
                "PGPASSWORD, PGPASSFILE",
                "The PostgreSQL password when the URL has none: PGPASSWORD, else the first matching line of PGPASSFILE (default ~/.pgpass; read only when it is a regular file of the user, mode 0600). A password in a URL on the command line is hidden from ps once oscost has read it, with a warning.",
            ),
            (
                "COLUMNS",
                "The width tables are fitted to (else the terminal's, else 100 columns); --wide prints every column unwrapped.",
            ),
            (
                "COMPLETE",
                "Set to a shell name (bash, zsh, fish, elvish, powershell), oscost prints that shell's dynamic completion script: source <(COMPLETE=bash oscost).",
            ),
            (
                "TMPDIR",
                "Where a private folder (mode 0700) is made for the files of the open and stat probes and, when the database's folder cannot hold it, a rescue file.",
            ),
            (
                "OSCOST_WORKER_FAULT",
                "A test hook that makes one benchmark's worker crash or hang; oscost warns when it is set.",
            ),
        ] {
            item(&mut r, name, text);
        }
        r.control("SH", ["FILES"]);
        for (name, text) in [
            (
                "~/.local/share/oscost/results.db",
                "The default results database (SQLite, WAL mode), in a folder oscost made mode 0700; a planted link there is refused. Any database file (--db) is used only where no other user can change its path: every folder on the way is the user's or root's and not writable by others (or sticky, holding an entry of theirs), its own folder is writable by no one else (SQLite makes its -wal and -shm files there), a link is followed only when it is the user's or root's, and an existing file must be a regular SQLite file of the user or root (an empty one only of the user's own). A file that fails SQLite's quick_check is not written into.",
            ),
            (
                "<db>.unsaved-run<ID>-<PID>.json",
                "A run's measured rounds when storing failed: an export with a UUID of its own, for oscost import.",
            ),
        ] {
            item(&mut r, name, text);
        }
    }
    r
}

fn info(json: bool) -> Result<i32> {
    let calib = session::calibrate(false);
    let m = crate::machine::fingerprint(&command_line(), Some(calib));
    if json {
        outln(&serde_json::to_string_pretty(&m)?)?;
    } else {
        out(&report::fit::hanging(&info_text(&m), width(), 23))?;
    }
    Ok(0)
}

fn show(db: &Path, reference: &str, format: Format, samples: bool, suite: Option<&str>) -> Result<i32> {
    let suite = suite.map(find_suite).transpose()?;
    let store = Store::open_existing(db)?;
    let (doc, skipped) = load(&store, reference)?;
    if let Some(s) = suite {
        out(&(s.render)(&doc))?;
        return Ok(0);
    }
    match format {
        Format::Json => outln(&report::json::render_run(&doc, &skipped, samples, &run_pairs(&doc), None))?,
        Format::Table => out(&run_table(&doc, &skipped))?,
        Format::Csv => out(&report::export::to_csv(std::slice::from_ref(&doc)))?,
        Format::Markdown => out(&report::export::to_markdown(&doc))?,
    }
    Ok(0)
}

/// `show --histogram ROW`: the one row ROW names (its benchmark id, then any of its
/// `key=value` parameters), a per-call row before any other, as a percentile
/// distribution.
fn show_histogram(db: &Path, reference: &str, spec: &str) -> Result<i32> {
    let store = Store::open_existing(db)?;
    let (doc, _) = load(&store, reference)?;
    let mut words = spec.split_whitespace();
    let id = words.next().unwrap_or_default();
    let want: Vec<&str> = words.collect();
    let matching: Vec<&crate::model::ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.benchmark == id && !r.samples.is_empty())
        .filter(|r| want.iter().all(|w| r.variant_params().iter().any(|p| p == w)))
        .collect();
    let per_call: Vec<_> = matching.iter().copied().filter(|r| r.method == crate::model::Method::PerCall).collect();
    let chosen = if per_call.is_empty() { matching } else { per_call };
    match chosen.as_slice() {
        [r] => {
            out(&report::percentiles::render(r)?)?;
            Ok(0)
        }
        [] => Err(UsageError(format!("run #{} has no row with samples that matches '{spec}'", doc.run.id)).into()),
        many => {
            let names: Vec<String> = many.iter().map(|r| format!("'{} {}'", r.benchmark, r.variant_label())).collect();
            Err(UsageError(format!("'{spec}' matches {} rows: {}; name more parameters", many.len(), names.join(", ")))
                .into())
        }
    }
}

/// What `compare` was asked to put side by side.
struct CompareRequest {
    sides: Vec<String>,
    baseline: Option<String>,
    by: Option<args::GroupBy>,
    fail_on: Option<report::compare::FailOn>,
    /// Every fingerprint field (`--machine`), not only the differences.
    machine: bool,
}

/// The exit status of a comparison that `--fail-on` fails.
pub const COMPARE_FAILED: i32 = 3;

/// The exit status of a printed comparison: [`COMPARE_FAILED`] when `fail_on` finds a
/// figure to fail on (named on standard error), else 0.
fn gate<'a>(
    compared: impl IntoIterator<Item = &'a report::compare::Comparison>,
    fail_on: Option<report::compare::FailOn>,
) -> i32 {
    let Some(on) = fail_on else { return 0 };
    let compared: Vec<&report::compare::Comparison> = compared.into_iter().collect();
    let withheld = report::compare::withheld(compared.iter().copied());
    if !withheld.is_empty() {
        let names: Vec<String> =
            withheld.iter().map(|c| format!("{} {} ({})", c.benchmark, c.variant, c.verdict)).collect();
        eprintln!("--fail-on: {} figure(s) not judged, a flag doubts them: {}", withheld.len(), names.join(", "));
    }
    let failing = report::compare::failing(compared, on);
    if failing.is_empty() {
        return 0;
    }
    let names: Vec<String> = failing.iter().map(|c| format!("{} {} ({})", c.benchmark, c.variant, c.verdict)).collect();
    eprintln!("--fail-on {}: {} figure(s) fail: {}", format!("{on:?}").to_lowercase(), failing.len(), names.join(", "));
    COMPARE_FAILED
}

fn compare(db: &Path, db_b: Option<&Path>, req: CompareRequest, given: Option<f64>, json: bool) -> Result<i32> {
    let threshold = given.unwrap_or(report::compare::DEFAULT_THRESHOLD * 100.0);
    if !(threshold.is_finite() && (0.0..100.0).contains(&threshold)) {
        return Err(UsageError("--threshold is a percentage from 0 to 100".into()).into());
    }
    let mut refs = req.sides;
    if let Some(name) = req.baseline {
        if refs.is_empty() {
            refs.push("latest".into());
        }
        refs.insert(0, name);
    }
    // Side A reads from the database, the others from --db-b where given.
    let side_db = |i: usize| if i == 0 { db } else { db_b.unwrap_or(db) };
    let Sides { runs: sides, names, dbs } = match req.by {
        Some(args::GroupBy::Host) => by_host(db, db_b, &refs)?,
        None => {
            if refs.len() < 2 {
                return Err(UsageError(
                    "compare needs two sides or more (A B …), or --baseline NAME and at most one more, or --by host"
                        .into(),
                )
                .into());
            }
            let dbs: Vec<PathBuf> =
                refs.iter().enumerate().map(|(i, r)| side_location(side_db(i), r).1.to_path_buf()).collect();
            let runs = refs.iter().enumerate().map(|(i, r)| load_side_at(side_db(i), r)).collect::<Result<Vec<_>>>()?;
            Sides { runs, names: None, dbs }
        }
    };
    let threshold = threshold / 100.0;
    // Each side's machine's noise runs, from the database the side was read from.
    let noise: Vec<crate::noise::RunNoise> =
        sides.iter().zip(&dbs).map(|(side, path)| machine_noise(path, side)).collect();
    if let ([a, b], [noise_a, noise_b], None) = (&sides[..], &noise[..], &names) {
        let rows = report::compare::compare_with(a, b, threshold, [noise_a, noise_b], 2000);
        if json {
            outln(&report::compare::to_json(a, b, &rows, threshold))?;
        } else {
            let view = if req.machine {
                report::compare::MachineView::Full
            } else {
                report::compare::MachineView::Differences
            };
            out(&report::compare::render(a, b, &rows, threshold, (view, width())))?;
            if let Some(line) = report::compare::between_runs_line(&rows, [noise_a, noise_b]) {
                outln(&report::fit::prose(&line, width()))?;
            }
        }
        return Ok(gate(&rows, req.fail_on));
    }
    let m = report::matrix::matrix(&sides, names, threshold, &noise, 2000);
    if json {
        outln(&serde_json::to_string_pretty(&m)?)?;
    } else {
        out(&report::matrix::render(&m, width()))?;
    }
    Ok(gate(m.rows.iter().flat_map(|r| r.cells.iter().flatten()), req.fail_on))
}

/// Each figure's between-run spread from the noise runs (`oscost noise`) in `db` of the
/// machine of `side`'s first run (its comparability key). Noise runs that cannot be
/// read leave the side without them, with a warning: the comparison still stands on
/// what the runs themselves show.
fn machine_noise(db: &Path, side: &[RunDocument]) -> crate::noise::RunNoise {
    let Some(first) = side.first() else { return crate::noise::RunNoise::none() };
    let read = Store::open_existing(db)
        .map_err(anyhow::Error::from)
        .and_then(|store| Ok(session::machine_noise(&store, &first.machine.comparability_key())?));
    read.unwrap_or_else(|e| {
        eprintln!(
            "warning: the noise runs in {} could not be read ({e:#}); run #{}'s side is compared without its machine's spread between runs",
            db.display(),
            first.run.id
        );
        crate::noise::RunNoise::none()
    })
}

/// A side given as `REFS` or `REFS@PATH` (another database), read.
fn load_side_at(default_db: &Path, side: &str) -> Result<Vec<RunDocument>> {
    let (refs, path) = side_location(default_db, side);
    load_side(&Store::open_existing(path)?, refs)
}

/// A side's run references and the database they are in: `REFS@PATH`, or `REFS` in
/// `default_db`.
fn side_location<'a>(default_db: &'a Path, side: &'a str) -> (&'a str, &'a Path) {
    match side.rsplit_once('@') {
        Some((refs, path)) if !path.is_empty() => (refs, Path::new(path)),
        _ => (side, default_db),
    }
}

/// Every run given (or every complete run of the databases), one side per host, in
/// the order the hosts first appear; each side's name is its host.
/// The sides of a comparison: their runs, their names where they are not the runs'
/// own, and the database each was read from (whose noise runs it takes).
struct Sides {
    runs: Vec<Vec<RunDocument>>,
    names: Option<Vec<String>>,
    dbs: Vec<PathBuf>,
}

/// Every run given (or every complete run of the databases), one side per host, in
/// the order the hosts first appear; each side's name is its host, and its database
/// the one its first run came from.
fn by_host(db: &Path, db_b: Option<&Path>, refs: &[String]) -> Result<Sides> {
    let mut runs: Vec<(RunDocument, &Path)> = Vec::new();
    if refs.is_empty() {
        for path in std::iter::once(db).chain(db_b) {
            let store = Store::open_existing(path)?;
            for l in store
                .list_runs(&RunFilter::default())?
                .into_iter()
                .rev()
                .filter(|l| l.status == crate::model::RunStatus::Complete)
            {
                runs.push((store.load_run(l.id)?.0, path));
            }
        }
    } else {
        for (i, r) in refs.iter().enumerate() {
            let (refs, path) = side_location(if i == 0 { db } else { db_b.unwrap_or(db) }, r);
            runs.extend(load_side(&Store::open_existing(path)?, refs)?.into_iter().map(|d| (d, path)));
        }
    }
    let mut hosts: Vec<String> = Vec::new();
    let mut sides: Vec<Vec<RunDocument>> = Vec::new();
    let mut dbs: Vec<PathBuf> = Vec::new();
    for (d, path) in runs {
        match hosts.iter().position(|h| *h == d.machine.hostname) {
            Some(i) => sides[i].push(d),
            None => {
                hosts.push(d.machine.hostname.clone());
                sides.push(vec![d]);
                dbs.push(path.to_path_buf());
            }
        }
    }
    if sides.len() < 2 {
        return Err(UsageError(format!("--by host needs runs of two hosts or more; found {}", hosts.len())).into());
    }
    let names = hosts.iter().map(|h| report::plain(h).into_owned()).collect();
    Ok(Sides { runs: sides, names: Some(names), dbs })
}

/// One side of a comparison: a run, or runs separated by commas (`1,2,3`), pooled.
fn load_side(store: &Store, refs: &str) -> Result<Vec<RunDocument>> {
    let parts: Vec<&str> = refs.split(',').map(str::trim).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(UsageError(format!("{refs:?}: a side is runs separated by commas, as in 1,2,3")).into());
    }
    parts.into_iter().map(|r| Ok(load(store, r)?.0)).collect()
}

fn export(db: &Path, refs: Vec<String>, format: ExportFormat, output: Option<&Path>) -> Result<i32> {
    let store = Store::open_existing(db)?;
    let docs = load_all(&store, refs)?;
    let text = export_text(format, &docs)?;
    match output {
        Some(p) => write_output(p, &text)?,
        None => out(&text)?,
    }
    Ok(0)
}

/// Runs as one export format's text (what `export` prints and `run --export-*` writes).
fn export_text(format: ExportFormat, docs: &[(RunDocument, Vec<crate::model::Skipped>)]) -> Result<String> {
    report::export::render(format, docs).map_err(|e| UsageError(e.to_string()).into())
}

/// Writes `text` to `path` so that a reader sees the old file or the new one, never a
/// part (a collector may read at any moment); see [`crate::files::write_atomic`].
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    crate::files::write_atomic(path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

/// Whether an output path means standard output.
fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Refuses, as bad usage, an output path that is not `-`, a regular file or a new name
/// (see [`crate::files::check_output`]); checked before anything is read or measured.
fn check_output(path: &Path) -> Result<()> {
    if is_stdout(path) {
        return Ok(());
    }
    crate::files::check_output(path).map_err(|e| UsageError(e.to_string()).into())
}

/// Writes an output: to standard output for `-`, else replacing the file whole.
fn write_output(path: &Path, text: &str) -> Result<()> {
    if is_stdout(path) { out(text) } else { write_atomic(path, text) }
}

/// The file `report` writes: `-o` as given (replaced if it is there), else
/// `report.html`, which is not replaced without `--force` (a report written earlier in
/// this folder is not lost to a command that named no file).
fn report_output(output: Option<PathBuf>, force: bool) -> Result<PathBuf> {
    let path = match output {
        Some(p) => p,
        None => {
            let p = PathBuf::from(DEFAULT_REPORT);
            if !force && std::fs::symlink_metadata(&p).is_ok() {
                return Err(UsageError(format!(
                    "{DEFAULT_REPORT} is already here: pass --force to replace it, or -o PATH to write elsewhere"
                ))
                .into());
            }
            p
        }
    };
    check_output(&path)?;
    Ok(path)
}

/// The file `report` writes when no `-o` is given.
const DEFAULT_REPORT: &str = "report.html";

/// Imports an export run by run inside one transaction (SQLite writes each as it is
/// read, so memory holds one run whatever the file's size); any problem imports nothing.
fn import(db: &Path, file: &Path) -> Result<i32> {
    let open = || std::fs::File::open(file).with_context(|| format!("reading {}", file.display()));
    let refused = |e: String| UsageError(format!("{}: {e}; nothing was imported", file.display()));
    // Into a database not there yet, the file is read once to check it, so a bad file
    // leaves no empty database behind; an existing one rolls back instead.
    if !crate::store::is_postgres(db) && !db.exists() {
        report::export::read_runs(open()?, &crate::producers::is_known, &mut |_, _| Ok(())).map_err(refused)?;
    }
    let input = open()?;
    let mut store = Store::open(db)?;
    let mut read = |take: &mut dyn FnMut(_, _) -> Result<(), String>| {
        report::export::read_runs(&input, &crate::producers::is_known, take).map(drop)
    };
    let done = store.import_each(&mut read).map_err(|e| match e {
        crate::store::ImportFailure::Input(e) => refused(e).into(),
        crate::store::ImportFailure::Store(e) => anyhow::Error::from(e),
    })?;
    let list = |added: bool| -> Vec<String> {
        done.iter()
            .filter(|i| matches!(i, crate::store::Imported::Added(_)) == added)
            .map(|i| format!("#{}", i.id()))
            .collect()
    };
    let (added, held) = (list(true), list(false));
    let mut msg = match added.len() {
        0 => "imported no run".to_string(),
        1 => format!("imported 1 run as {}", added[0]),
        n => format!("imported {n} runs as {}", added.join(", ")),
    };
    if !held.is_empty() {
        msg.push_str(&format!("; {} already here (same run UUID) as {}", held.len(), held.join(", ")));
    }
    outln(&msg)?;
    Ok(0)
}

/// Copies runs into another database in one transaction (a push cut short leaves no
/// part of a run there); runs still being measured are left for a later push.
fn push(db: &Path, refs: Vec<String>, to: &Path) -> Result<i32> {
    let store = Store::open_existing(db)?;
    let ids: Vec<i64> = if refs.is_empty() {
        store
            .list_runs(&RunFilter::default())?
            .into_iter()
            .rev()
            .filter(|l| l.status != crate::model::RunStatus::Running)
            .map(|l| l.id)
            .collect()
    } else {
        refs.iter().map(|r| store.resolve(r).map_err(|e| UsageError(e.to_string()).into())).collect::<Result<_>>()?
    };
    let mut runs = Vec::with_capacity(ids.len());
    for id in ids {
        let (doc, skipped) = store.load_run(id)?;
        if doc.run.status == crate::model::RunStatus::Running {
            eprintln!("run #{id} is still running: not pushed (push it when it has finished)");
            continue;
        }
        runs.push((doc, skipped));
    }
    let mut remote = Store::open(to)?;
    let done = remote.import(&runs)?;
    let added = done.iter().filter(|i| matches!(i, crate::store::Imported::Added(_))).count();
    outln(&format!("pushed {added} run(s) to {}; {} already there", remote.location(), done.len() - added))?;
    Ok(0)
}

fn html_report(db: &Path, refs: Vec<String>, output: &Path) -> Result<i32> {
    let store = Store::open_existing(db)?;
    let docs = load_all(&store, refs)?;
    let threshold = report::compare::DEFAULT_THRESHOLD;
    // Every run is a side of one run: each takes its machine's noise runs from this
    // database, as `compare` does (one run alone is compared with nothing).
    let compared = if docs.len() >= 2 { docs.len() } else { 0 };
    let noise: Vec<crate::noise::RunNoise> =
        docs.iter().take(compared).map(|(d, _)| machine_noise(db, std::slice::from_ref(d))).collect();
    let html = match (&docs[..], &noise[..]) {
        // Three runs or more: every run a column, the first the baseline.
        (_, [_, _, _, ..]) => {
            let sides: Vec<Vec<RunDocument>> = docs.iter().map(|d| vec![d.0.clone()]).collect();
            let m = report::matrix::matrix(&sides, None, threshold, &noise, 2000);
            report::html::render_matrix(&docs, &m, &crate::views::report_views())
        }
        ([a, b], [na, nb]) => {
            let rows = report::compare::compare_with(
                std::slice::from_ref(&a.0),
                std::slice::from_ref(&b.0),
                threshold,
                [na, nb],
                2000,
            );
            let between_runs = report::compare::between_runs_line(&rows, [na, nb]);
            let section = report::html::ComparisonSection { rows: &rows, between_runs };
            report::html::render(&docs, Some(&section), &crate::views::report_views())
        }
        _ => report::html::render(&docs, None, &crate::views::report_views()),
    };
    write_output(output, &html)?;
    if !is_stdout(output) {
        outln(&format!("wrote {}", output.display()))?;
    }
    Ok(0)
}

fn runs(db: &Path, filter: &RunFilter, json: bool) -> Result<i32> {
    let store = Store::open_existing(db)?;
    let runs = store.list_runs(filter)?;
    if json {
        outln(&serde_json::to_string_pretty(&runs)?)?;
    } else {
        out(&report::listing::runs(&runs, width()))?;
    }
    Ok(0)
}

/// What `run` will do: the benchmarks, the suite (if any) and the options, checked.
struct Plan {
    selected: Vec<(&'static bench::BenchDef, bench::Scope)>,
    suite: Option<&'static crate::views::suites::Suite>,
    options: BenchOptions,
}

/// A suite by name, or a usage error naming the closest.
fn find_suite(name: &str) -> Result<&'static crate::views::suites::Suite> {
    crate::views::suites::find(name).ok_or_else(|| {
        let names = crate::views::suites::SUITES.iter().map(|s| s.name);
        UsageError(format!(
            "unknown suite {name:?}{}",
            select::closest(name, names).map(|c| format!("; did you mean {c:?}?")).unwrap_or_default()
        ))
        .into()
    })
}

fn plan(args: &RunArgs) -> Result<Plan> {
    let registry = bench::registry();
    let suite = args.suite.as_deref().map(find_suite).transpose()?;
    let selectors: Vec<String> = match suite {
        Some(s) => s.selectors.iter().map(|x| x.to_string()).collect(),
        None => args.benchmarks.clone(),
    };
    let selected = select::select(&registry, &selectors)?;
    session::ensure_selected(&selected)?;
    check_address_space_floor()?;
    // The helper is opened only when a selected benchmark runs it; one the user named
    // and oscost refuses stops the run here, before anything is measured.
    let runs_helper = selected.iter().any(|(b, _)| bench::spawn::RUNS_HELPER.contains(&b.id));
    let noop = match (&args.noop, runs_helper) {
        (_, false) => Err("no selected benchmark runs the no-op helper".to_string()),
        (Some(p), true) => {
            Ok(crate::helper::Executable::open_verified(p).map_err(|e| UsageError(format!("--noop: {e}")))?)
        }
        (None, true) => crate::helper::Executable::embedded(),
    }
    .map(std::sync::Arc::new);
    let mut options = BenchOptions {
        placement: Placement { cpu: args.cpu, nice: args.nice, policy: args.policy },
        noop,
        parent_mem: args.parent_mem.0.clone(),
        footprint_sizes: args.sizes.0.clone(),
        footprint_stride: args.stride,
        tasks: args.tasks.0.clone(),
        storm_tasks: args.storm_tasks.0.clone(),
        rooms: args.rooms,
        messages: args.messages,
    };
    if let Some(s) = suite {
        if let Some(tasks) = s.presets.tasks {
            options.tasks = tasks.to_vec();
        }
        if let Some(rooms) = s.presets.rooms {
            options.rooms = rooms;
        }
        if let Some(storm) = s.presets.storm_tasks {
            options.storm_tasks = storm.to_vec();
        }
    }
    crate::sys::raise_nofile_limit();
    bench::check_options(&selected, &options).map_err(UsageError)?;
    Ok(Plan { selected, suite, options })
}

/// The address space (`ulimit -v`) below which the coordinator itself may fail an
/// allocation, which aborts it and loses every round not yet stored: 40 MiB ran the
/// quick suite here and 30 MiB did not; the floor keeps a margin.
const ADDRESS_SPACE_FLOOR: u64 = 64 << 20;

fn check_address_space_floor() -> Result<()> {
    match crate::sys::address_space_limit() {
        Some(limit) if limit < ADDRESS_SPACE_FLOOR => Err(UsageError(format!(
            "the address-space limit (ulimit -v) is {} MiB; oscost needs {} MiB to measure without aborting on a failed allocation (which would lose the rounds not yet stored): raise it",
            limit >> 20,
            ADDRESS_SPACE_FLOOR >> 20
        ))
        .into()),
        _ => Ok(()),
    }
}

/// Checks `run`'s arguments as `oscost run` would, measuring nothing: the benchmarks
/// and suite exist and every selected benchmark accepts the options.
pub fn check_run(args: &RunArgs) -> Result<()> {
    plan(args).map(|_| ())
}

fn run(args: RunArgs, db: PathBuf) -> Result<i32> {
    let Plan { selected, suite, options } = plan(&args)?;
    for (_, path) in export_paths(&args) {
        check_output(path)?;
    }
    if let Some(when) = args.start_at {
        wait_until(when, args.quiet || args.json)?;
    }
    let req = run_request(&args, (selected, options), db, crate::model::RunKind::Measure);
    let db = req.db.clone();
    let mut outcome = session::execute(req)?;
    if let Some(s) = suite {
        add_suite_simulations(s.name, &db, &mut outcome)?;
    }
    let (doc, skipped) = outcome.store.load_run(outcome.run_id).context("reading the run back from the database")?;
    let run = [(doc, skipped)];
    let unwritten = write_exports(&args, &run);
    let [(doc, skipped)] = run;
    let judgement = args.precision.map(|pct| {
        let noise = session::machine_noise(&outcome.store, &doc.machine.comparability_key()).unwrap_or_else(|e| {
            eprintln!("warning: this machine's noise runs could not be read ({e}); precision is judged within the run");
            crate::noise::RunNoise::none()
        });
        judge_precision(&doc, pct / 100.0, &noise, &outcome.round_caps)
    });
    let precision_lines = judgement.as_ref().map(precision_summary).unwrap_or_default();
    if args.json {
        outln(&report::json::render_run(&doc, &skipped, args.samples, &run_pairs(&doc), judgement.as_ref()))?;
    } else if !args.quiet {
        match suite {
            Some(s) => {
                out(&(s.render)(&doc))?;
                outln(&format!("(the full table: oscost show {})", outcome.run_id))?;
            }
            None => out(&fresh_run_table(&doc, &skipped))?,
        }
        for line in &precision_lines {
            outln(line)?;
        }
        outln(&format!(
            "stored as run #{} in {} ({:.1} s)",
            outcome.run_id,
            outcome.store.location(),
            outcome.elapsed.as_secs_f64()
        ))?;
    }
    for e in &unwritten {
        eprintln!("error: {e:#}");
    }
    if let Some(e) = &outcome.storage_error {
        eprintln!("error: {e}");
        return Ok(1);
    }
    if !unwritten.is_empty() {
        eprintln!("the run is stored as run #{} (oscost export {0} writes it again)", outcome.run_id);
        return Ok(1);
    }
    if let Some(sig) = outcome.stopped_by {
        eprintln!(
            "stopped by {}: the benchmarks that finished are stored in run #{}",
            signal_name(sig),
            outcome.run_id
        );
        return Ok(128 + sig);
    }
    Ok(if outcome.failures.is_empty() { 0 } else { 1 })
}

/// The session's request for a run of `args` over the planned benchmarks, stored as
/// `kind`.
fn run_request(
    args: &RunArgs,
    (selected, options): (Vec<(&'static bench::BenchDef, bench::Scope)>, BenchOptions),
    db: PathBuf,
    kind: crate::model::RunKind,
) -> RunRequest {
    RunRequest {
        selected,
        quick: args.quick,
        rounds: args.rounds.map(usize::from),
        executor: crate::worker::Executor::Workers,
        perf_counters: args.perf_counters,
        trace: !args.no_trace,
        options,
        db,
        save: args.save.clone(),
        command_line: command_line(),
        progress: !args.json && !args.quiet && std::io::stderr().is_terminal(),
        quiet: args.quiet,
        strict: args.strict,
        precision: args.precision.map(|pct| session::PrecisionGoal {
            target: pct / 100.0,
            max_time: args.max_time.0,
            max_rounds: session::ADAPTIVE_MAX_ROUNDS,
        }),
        conditions: args.conditions.clone(),
        kind,
    }
}

/// Judges a `--precision` run's rows (see `precision::Judge`), each against its
/// benchmark's last cap on rounds (`caps`; the ceiling for a benchmark without one).
fn judge_precision(
    doc: &RunDocument,
    target: f64,
    noise: &crate::noise::RunNoise,
    caps: &std::collections::BTreeMap<String, usize>,
) -> crate::precision::RunJudgement {
    let cap = |r: &crate::model::ResultRow| caps.get(&r.benchmark).copied().unwrap_or(session::ADAPTIVE_MAX_ROUNDS);
    let figures =
        doc.results.iter().map(|r| crate::precision::Judge { target, max_rounds: cap(r), noise }.figure(r)).collect();
    crate::precision::RunJudgement::of(target, figures)
}

/// What `--precision` reached: how many figures got within the target and, for each
/// that did not, why.
fn precision_summary(j: &crate::precision::RunJudgement) -> Vec<String> {
    use crate::precision::{Basis, Standing};
    let mut lines = vec![format!(
        "precision ±{:.1}%: {} of {} figures reached it; judged from blocks of {} rounds or more (the drift the run saw) for {}, {} of them with this machine's spread between runs beside; with that spread alone (oscost noise) for {}; on their own interval for the rest",
        j.target * 100.0,
        j.reached,
        j.figures.len(),
        crate::stats::blocks::BLOCK_ROUNDS,
        j.judged_on(Basis::Blocks) + j.judged_on(Basis::BlocksAndBetweenRuns),
        j.judged_on(Basis::BlocksAndBetweenRuns),
        j.judged_on(Basis::BetweenRuns),
    )];
    for f in &j.figures {
        let name = format!("{} {} [{}]", report::plain(&f.benchmark), report::plain(&f.variant), f.method);
        let now = f.precision.map_or_else(|| "no interval".into(), |p| format!("±{:.1}%", p * 100.0));
        match f.standing {
            Standing::Reached => {}
            Standing::OutOfReach { rounds_needed } => lines.push(format!(
                "  out of reach: {name} at {now} after {} rounds would need {} rounds, past {} (runs spread over time can: oscost plan)",
                f.rounds,
                rounds_needed.map_or_else(
                    || format!("more than {}", crate::precision::PROJECTION_ROUNDS),
                    |n| format!("about {n}")
                ),
                if f.cap >= session::ADAPTIVE_MAX_ROUNDS {
                    format!("the ceiling of {} rounds", f.cap)
                } else {
                    format!("the {} that fit in --max-time at its pace", f.cap)
                }
            )),
            Standing::OneWindow => lines.push(format!(
                "  not reached: {name} at {now} in one round: that interval holds one window; the spread between runs (oscost noise) or runs spread over time (compare 1,2,3 …) can say more"
            )),
            Standing::NeedsRuns { between, pairs } => lines.push(format!(
                "  needs runs: {name} at {now}: this machine's noise runs ({pairs} pairs, oscost noise) bound its spread between runs at ±{:.1}% (95%), past ±{:.1}%; rounds of one run cannot narrow that; more noise runs can narrow the bound, runs spread over time the figure (oscost plan)",
                between * 100.0,
                j.target * 100.0
            )),
            Standing::NoRounds => lines.push(format!(
                "  not reached: {name} at {now}: a fitted figure, without rounds of samples to add"
            )),
            Standing::Short => lines.push(format!(
                "  not reached: {name} at {now} after {} rounds ({})",
                f.rounds,
                f.why.unwrap_or("rounds or time spent")
            )),
        }
    }
    lines
}

/// The `--export-*` files asked for, with their formats.
fn export_paths(args: &RunArgs) -> impl Iterator<Item = (ExportFormat, &PathBuf)> {
    [
        (ExportFormat::Json, &args.export_json),
        (ExportFormat::Csv, &args.export_csv),
        (ExportFormat::Markdown, &args.export_markdown),
        (ExportFormat::Prometheus, &args.export_prometheus),
    ]
    .into_iter()
    .filter_map(|(format, path)| path.as_ref().map(|p| (format, p)))
}

/// The run written to every `--export-*` file asked for; the ones that could not be
/// written are returned, so the run's table and id are still printed (the run is
/// stored) before they are reported.
fn write_exports(args: &RunArgs, run: &[(RunDocument, Vec<Skipped>)]) -> Vec<anyhow::Error> {
    export_paths(args)
        .filter_map(|(format, path)| export_text(format, run).and_then(|t| write_output(path, &t)).err())
        .collect()
}

/// Sleeps until `--start-at`'s instant (before anything is measured or started, so
/// an interrupt here leaves nothing behind). The wait is on the real-time clock in
/// steps, so a clock set forward or back while waiting is followed.
fn wait_until(when: args::StartAt, quiet: bool) -> Result<()> {
    use std::time::{Duration, SystemTime};
    let instant = when.instant(SystemTime::now()).map_err(UsageError)?;
    if !quiet {
        eprintln!("waiting until {} to begin (--start-at)", humantime::format_rfc3339_seconds(instant));
    }
    while let Ok(left) = instant.duration_since(SystemTime::now()) {
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_secs(1)));
    }
    Ok(())
}

/// A suite's simulations, added to its run: the texts' experiments under the period
/// profile and under `live` (its switch costs from this very run, else from the newest
/// stored run that has them).
fn add_suite_simulations(suite: &str, db: &Path, outcome: &mut session::RunOutcome) -> Result<()> {
    let mut profiles = Vec::new();
    match crate::sim::suites::period_profile(suite) {
        Some(Ok(p)) => profiles.push(p),
        Some(Err(e)) => eprintln!("note: no period simulation: {e}"),
        None => return Ok(()),
    }
    let (doc, _) = outcome.store.load_run(outcome.run_id)?;
    match crate::sim::cost::StoredSwitch::from_run(&doc).or_else(|| stored_switch(db).ok()) {
        Some(s) => profiles.push(crate::sim::cost::live(s)),
        None => eprintln!("note: no live simulation: no run has load.runqueue yield rows at 2 tasks"),
    }
    eprintln!(
        "simulating the suite's experiments ({}) …",
        profiles.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
    );
    let rows = crate::sim::suites::rows(suite, &profiles, crate::sys::interrupted);
    outcome.store.add_benchmark(outcome.run_id, &rows, &[])?;
    Ok(())
}

/// A stop signal's name, for messages.
fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "Ctrl-C (SIGINT)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGXCPU => "SIGXCPU (CPU time limit)",
        _ => "a signal",
    }
}

fn observe(d: std::time::Duration, iv: std::time::Duration, json: bool, db: PathBuf) -> Result<i32> {
    // The samples are kept in memory until the end (about 10 MB a minute at 10 ms).
    if d > TRACE_LIMIT {
        return Err(UsageError("--for must be at most 10 minutes".into()).into());
    }
    if iv >= d {
        return Err(UsageError("--interval must be shorter than --for".into()).into());
    }
    eprintln!("observing for {:.0} s every {} …", d.as_secs_f64(), report::fmt_ns(iv.as_nanos() as f64));
    recorded_run(db, crate::model::RunKind::Observe, json, || {
        let trace = crate::observe::record(d, iv)?;
        let summary = crate::observe::summarize_trace(&trace.running, trace.switches, trace.seconds)
            .map(|s| crate::observe::summary_line(&s));
        Ok((crate::observe::rows(&trace, iv), summary.into_iter().collect()))
    })
}

/// A run made by recording rather than by the benchmarks (`observe`, `trace`, `sim`):
/// begun in the store as `kind`, filled by `record` (its rows, and lines to print
/// under the table), finished, and printed.
fn recorded_run(
    db: PathBuf,
    kind: crate::model::RunKind,
    json: bool,
    record: impl FnOnce() -> Result<(Vec<crate::model::ResultRow>, Vec<String>), String>,
) -> Result<i32> {
    let (run, lines) = crate::session::record(&db, kind, &command_line(), record)?;
    let (doc, skipped) = run.store.load_run(run.run_id)?;
    if json {
        outln(&report::json::render_run(&doc, &skipped, false, &run_pairs(&doc), None))?;
    } else {
        out(&run_table(&doc, &skipped))?;
        for line in lines {
            outln(&report::fit::prose(&line, width()))?;
        }
        outln(&format!("stored as run #{} in {}", run.run_id, run.store.location()))?;
    }
    Ok(run.stopped_by.map_or(0, |s| 128 + s))
}

/// The longest `oscost trace` recording (events are kept in memory until it ends).
const TRACE_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

fn trace(d: std::time::Duration, command: &[String], json: bool, db: PathBuf) -> Result<i32> {
    if d.is_zero() || d > TRACE_LIMIT {
        return Err(UsageError("--for must be between 1 ms and 10 minutes".into()).into());
    }
    let spec = match crate::trace::prepare() {
        Ok(s) => s,
        Err(why) => {
            eprintln!(
                "error: oscost trace needs the scheduler's tracepoints: {why}.\n{}; without privilege, `oscost observe` samples the run queue from /proc",
                crate::trace::UNAVAILABLE_HINT
            );
            return Ok(1);
        }
    };
    let what = if command.is_empty() { "the whole machine".to_string() } else { format!("`{}`", command.join(" ")) };
    eprintln!("tracing {what} for up to {} …", report::fmt_ns(d.as_nanos() as f64));
    recorded_run(db, crate::model::RunKind::Trace, json, || {
        let recorded = crate::trace::system::record(&spec, d, command).map_err(|e| e.to_string())?;
        Ok((crate::trace::system::rows(&recorded, command), crate::trace::system::summary(&recorded)))
    })
}

/// The switch costs a live profile takes from the newest stored run that has them.
fn stored_switch(db: &std::path::Path) -> Result<crate::sim::cost::StoredSwitch, String> {
    crate::sim::stored::switch_costs(db).map_err(|e| e.to_string())
}

/// The stored switch costs, measured now (a run of `load.runqueue` at 2 tasks in a
/// child oscost, stored in `db` like any run) when no stored run has them.
fn stored_or_measured_switch(db: &std::path::Path) -> Result<crate::sim::cost::StoredSwitch> {
    if let Ok(s) = stored_switch(db) {
        return Ok(s);
    }
    let args = ["run", "load.runqueue", "--tasks", "2", "--rounds", "3", "--quick", "--no-trace"];
    eprintln!(
        "the live profile needs this machine's thread and process switch: no stored run has them, so measuring them now (oscost {} --db {})",
        args.join(" "),
        db.display()
    );
    let exe = std::env::current_exe().context("finding oscost's own executable")?;
    let status = std::process::Command::new(exe)
        .args(args)
        .arg("--db")
        .arg(db)
        .stdout(std::process::Stdio::null())
        .status()
        .context("running the switch measurement")?;
    if !status.success() {
        anyhow::bail!("measuring the switch costs failed ({status})");
    }
    stored_switch(db).map_err(anyhow::Error::msg)
}

/// The profile `--profile` names: `live` (this machine, measured now), `live@RUN` (the
/// profile a stored sim run carries), `pentium200` or `smp2002` (fitted).
fn sim_profile(name: &str, db: &std::path::Path) -> Result<crate::sim::CostProfile> {
    use crate::sim::cost;
    if let Some(run) = name.strip_prefix("live@") {
        let id: i64 = run.parse().map_err(|_| UsageError(format!("--profile live@RUN takes a run id, not {run:?}")))?;
        return crate::sim::stored::profile_of_run(db, id).map_err(|e| match e {
            crate::sim::stored::StoredProfileError::NotASimulation(_) => UsageError(e.to_string()).into(),
            other => other.into(),
        });
    }
    Ok(match name {
        "live" => cost::live(stored_or_measured_switch(db)?),
        "pentium200" => cost::pentium200()?,
        "smp2002" => crate::sim::fit::smp2002()?,
        other => return Err(UsageError(cost::ProfileError::Unknown(other.into()).to_string()).into()),
    })
}

/// Longest run of one simulation's sizes (virtual work grows with them).
const SIM_MAX_TASKS: usize = 4096;
const SIM_MAX_CPUS: usize = 64;

fn sim(plan: crate::sim::run::Plan, profile: &str, json: bool, db: PathBuf) -> Result<i32> {
    if plan.cpus.iter().any(|&c| c == 0 || c > SIM_MAX_CPUS) {
        return Err(UsageError(format!("--cpus must be between 1 and {SIM_MAX_CPUS}")).into());
    }
    if let Some(t) = &plan.tasks
        && t.iter().any(|&n| n == 0 || n > SIM_MAX_TASKS)
    {
        return Err(UsageError(format!("--tasks must be between 1 and {SIM_MAX_TASKS}")).into());
    }
    if plan.messages == 0 || plan.messages > 10_000 {
        return Err(UsageError("--messages must be between 1 and 10000".into()).into());
    }
    let profile = sim_profile(profile, &db)?;
    eprintln!("simulating with the {} profile ({}) …", profile.name, profile.machine);
    recorded_run(db, crate::model::RunKind::Sim, json, || {
        let mut rows = Vec::new();
        for p in plan.params() {
            if crate::sys::interrupted() {
                break;
            }
            rows.extend(crate::sim::run::simulate_rows(&p, &profile));
        }
        Ok((rows, Vec::new()))
    })
}

/// `oscost list --suites`: every suite with its summary.
pub fn suites_text() -> String {
    crate::views::suites::SUITES.iter().map(|s| format!("{:<10} {}\n", s.name, s.summary)).collect()
}

/// `oscost list`: every benchmark, its description and timing model.
pub fn list_text() -> String {
    let mut out = String::new();
    for b in bench::registry() {
        out.push_str(&format!("{:<24} {}{}\n", b.id, b.summary, if b.in_default_suite { "  [default]" } else { "" }));
        out.push_str(&format!("{:<24}   timing: {}\n", "", b.timing_model));
    }
    out
}

/// `oscost info` as text.
pub fn info_text(m: &crate::machine::Machine) -> String {
    let mut out = String::new();
    let mut line = |k: &str, v: &str| out.push_str(&format!("{k:<22} {}\n", crate::report::plain(v)));
    line("host", &m.hostname);
    line("cpu", &m.cpu_model);
    line(
        "logical cpus",
        &format!("{} (this process may use {})", m.logical_cpus, crate::sys::cpu_list_text(&m.allowed_cpus)),
    );
    line("smt", m.smt_text());
    line("frequency governor", m.governor.as_deref().unwrap_or("none exposed"));
    line("kernel", &format!("{} {}", m.kernel_release, m.kernel_version));
    line("arch", &m.arch);
    line("virtualization", &m.virtualization);
    line("clocksource", m.clocksource.as_deref().unwrap_or("unknown"));
    line("transparent hugepages", m.transparent_hugepages.as_deref().unwrap_or("unknown"));
    line("libc", &m.libc);
    line("hardware counters", &m.hardware_counters);
    line("oscost", &format!("{} ({})", m.tool_version, m.git_commit));
    if let Some(c) = &m.calibration {
        line("per-call bracket", &format!("{}: {}", c.per_call_source.as_str(), c.counter));
        line(
            "counter rate",
            &format!("{:.4} ticks/ns (spread {:.3}% over 3 rounds)", c.ticks_per_ns, c.rate_spread * 100.0),
        );
        line("empty bracket", &format!("{:.1} ticks = {}", c.bracket_ticks, report::fmt_ns(c.bracket_ns)));
        if let Some(q) = c.quantum_ns {
            line("bracket step", &format!("{} (per-call figures are multiples of it)", report::fmt_ns(q)));
        }
        line(
            "clock read",
            &format!("{} (resolution {})", report::fmt_ns(c.clock_read_ns), report::fmt_ns(c.clock_resolution_ns)),
        );
        line("minimum batch", &report::fmt_ns(c.min_batch_ns));
        for w in &c.warnings {
            line("warning", w);
        }
    }
    let vulnerable: Vec<String> = m.mitigations.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    for (i, v) in vulnerable.iter().enumerate() {
        line(if i == 0 { "mitigations" } else { "" }, v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_select_existing_benchmarks() {
        let ids: Vec<&str> = bench::registry().iter().map(|b| b.id).collect();
        for s in &crate::views::suites::SUITES {
            for sel in s.selectors {
                assert!(ids.contains(sel), "{} selects unknown {sel}", s.name);
            }
        }
        assert!(crate::views::suites::find("lmbench").is_some() && crate::views::suites::find("nope").is_none());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
