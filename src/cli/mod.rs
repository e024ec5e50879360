//! The command line: the thin layer that turns parsed arguments (`args`) into calls,
//! prints the results and chooses the exit code (0 ok, 1 failure, 2 bad usage, 130
//! interrupted). It knows the registry and the option record, never a family's
//! internals: each benchmark checks its own options (`BenchDef::check`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;

use crate::bench;
use crate::catalogue::select;
use crate::model::{RunDocument, Skipped};
use crate::report;
use crate::runs::transfer::is_stdout;
use crate::session;
use crate::store::{RunFilter, Store};

pub mod args;
pub mod complete;
mod history;
pub mod manual;
mod noise;
mod plan;
mod record;
mod run;
mod runs;

pub use args::{Cli, Command, ExportFormat, Format, RunArgs};
pub use run::check_run;
pub use runs::COMPARE_FAILED;

use record::{ground_chat, observe, sim, trace};
use run::{Plan, find_suite, plan, run, run_request};
use runs::{
    CompareRequest, check_output, compare, export, html_report, import, push, runs, show, show_histogram, write_output,
};

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
    crate::runs::sides::load(store, reference).map_err(side_error)
}

/// Loads every referenced run (the latest when none is named).
fn load_all(store: &Store, refs: Vec<String>) -> Result<Vec<(RunDocument, Vec<Skipped>)>> {
    crate::runs::sides::load_all(store, &refs).map_err(side_error)
}

/// Runs that cannot be read as named: bad usage, unless the database failed (whose
/// error keeps its type, so a refused database path stays bad usage too).
fn side_error(e: crate::runs::sides::SideError) -> anyhow::Error {
    match e {
        crate::runs::sides::SideError::Store(e) => e.into(),
        other => UsageError(other.to_string()).into(),
    }
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
    report::text::render_run(doc, skipped, width())
        + &report::paired::render(&run_pairs(doc), report::compare::DEFAULT_THRESHOLD, width())
}

/// The run just measured as the terminal table (its preflight warnings said once).
fn fresh_run_table(doc: &RunDocument, skipped: &[Skipped]) -> String {
    report::text::render_fresh_run(doc, skipped, width())
        + &report::paired::render(&run_pairs(doc), report::compare::DEFAULT_THRESHOLD, width())
}

/// Under a run's table: which rows' intervals also hold this machine's spread between
/// runs, and from which noise runs; where none do, that the intervals are the run's.
fn between_runs_line(noise: &crate::judge::noise::RunNoise, widened: &[crate::judge::noise::RowBetween]) -> String {
    let Some(src) = noise.source.as_ref().filter(|_| !widened.is_empty()) else {
        // A run's own interval is often read as the figure's: say what it leaves out.
        return report::fit::prose(
            "intervals: within this run only (oscost noise adds this machine's spread between runs)\n",
            width(),
        );
    };
    report::fit::prose(
        &format!(
            "intervals of {} rows also hold this machine's spread between runs, from its {} noise runs ({} to {}); the stored run keeps its own (show --json: between_runs)",
            widened.len(),
            src.runs,
            src.first,
            src.last
        ),
        width(),
    ) + "\n"
}

/// A run's conditions against its baseline, at the default threshold.
fn run_pairs(doc: &RunDocument) -> Vec<crate::judge::paired::PairedFigure> {
    crate::judge::paired::pairs(&doc.results, report::compare::DEFAULT_THRESHOLD, crate::condition::params_changed_by)
}

fn dispatch(cli: Cli) -> Result<i32> {
    let _ = TABLE_WIDTH.set(table_width(cli.wide, cli.verbose));
    let db = || db_path(&cli.db);
    match cli.command {
        Command::Run(args) => run(*args, db()?),
        Command::Noise(args) => noise::noise(*args, db()?),
        Command::Crosscheck(args) => crate::crosscheck::command(&args).map_err(|e| UsageError(e.to_string()).into()),
        Command::List { suites } => {
            // Continuation lines hang under the description's column.
            let (text, indent) = if suites { (suites_text(), 11) } else { (list_text(), 27) };
            out(&report::fit::hanging(&text, width(), indent))?;
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
            let output = crate::runs::transfer::report_output(output, force).map_err(|e| UsageError(e.to_string()))?;
            html_report(&db()?, runs, &output)
        }
        Command::Observe { duration, interval, json } => observe(duration.0, interval.0, json, db()?),
        Command::Trace { duration, json, command } => trace(duration.0, &command, json, db()?),
        Command::Sim {
            policy,
            workload,
            cpus,
            tasks,
            profile,
            seed,
            seeds,
            threads,
            nice,
            messages,
            no_sensitivity,
            ground,
            json,
        } => {
            if ground {
                return ground_chat(workload, &policy, &profile, json, db()?);
            }
            let (seed, seeds) = crate::sim::command::seeds_of(seed, seeds).map_err(|e| UsageError(e.to_string()))?;
            let plan = crate::sim::run::Plan {
                policies: policy,
                workload,
                cpus,
                tasks,
                threads,
                nice,
                messages,
                seed,
                seeds,
                sensitivity: !no_sensitivity,
            };
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

/// A manual page, as roff, from the clap definition (see [`crate::cli::manual`]).
fn manual(command: Option<&str>) -> Result<i32> {
    let page = crate::cli::manual::page(<Cli as clap::CommandFactory>::command(), command).map_err(|e| match e {
        crate::cli::manual::ManualError::NoCommand { .. } => UsageError(e.to_string()).into(),
        other => anyhow::Error::from(other),
    })?;
    out(&page)?;
    Ok(0)
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
        out.push_str(&format!("{:<24}   warm-up: {}\n", "", b.warmup.describe()));
    }
    out.push_str(&format!("\nthe runner's warm-up: {}\n", bench::RUNNER_WARMUP));
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
    line("tcp congestion control", m.tcp_congestion_control.as_deref().unwrap_or("unknown"));
    line("cpuidle", m.cpuidle.as_deref().unwrap_or("unknown"));
    line("libc", &m.libc);
    line("process controls", &m.process_controls.as_ref().map_or_else(|| "unknown".into(), |c| c.text()));
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
        let ids: Vec<&str> = bench::registry().iter().map(|b| b.id.as_str()).collect();
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
