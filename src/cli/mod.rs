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

pub use args::{Cli, Command, ExportFormat, Format, RunArgs};

/// Usage errors exit 2, like clap's own.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn db_path(cli_db: &Option<PathBuf>) -> PathBuf {
    cli_db.clone().unwrap_or_else(crate::store::default_path)
}

/// Entry point: parses arguments, runs, returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some()
                || e.downcast_ref::<select::UnknownBenchmark>().is_some()
                || e.downcast_ref::<crate::placement::PlacementError>().is_some()
            {
                2
            } else {
                1
            }
        }
    }
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

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

fn dispatch(cli: Cli) -> Result<i32> {
    let db = db_path(&cli.db);
    match cli.command {
        Command::Run(args) => run(args, db),
        Command::List { suites } => {
            print!("{}", if suites { suites_text() } else { list_text() });
            Ok(0)
        }
        Command::Info { json } => info(json),
        Command::Show { run, json, format, samples } => {
            show(&db, run.as_deref().unwrap_or("latest"), if json { Format::Json } else { format }, samples)
        }
        Command::Compare { a, b, baseline, db_b, threshold, json } => {
            compare(&db, db_b.as_deref(), (baseline, a, b), threshold, json)
        }
        Command::Export { runs, format, output } => export(&db, runs, format, output.as_deref()),
        Command::Import { file } => import(&db, &file),
        Command::Report { runs, output } => html_report(&db, runs, &output),
        Command::Observe { duration, interval, json } => observe(duration.0, interval.0, json, db),
        Command::Runs { host, benchmark, since, until, json } => {
            let filter = RunFilter { host, benchmark, since: since.map(|d| d.0), until: until.map(|d| d.0) };
            runs(&db, &filter, json)
        }
    }
}

fn info(json: bool) -> Result<i32> {
    let calib = session::calibrate(false);
    let m = crate::machine::fingerprint(&command_line(), Some(calib));
    if json {
        println!("{}", serde_json::to_string_pretty(&m)?);
    } else {
        print!("{}", info_text(&m));
    }
    Ok(0)
}

fn show(db: &Path, reference: &str, format: Format, samples: bool) -> Result<i32> {
    let store = Store::open(db)?;
    let (doc, skipped) = load(&store, reference)?;
    match format {
        Format::Json => println!("{}", report::json::render_run(&doc, &skipped, samples)),
        Format::Table => print!("{}", report::table::render_run(&doc, &skipped)),
        Format::Csv => print!("{}", report::export::to_csv(std::slice::from_ref(&doc))),
        Format::Markdown => print!("{}", report::export::to_markdown(&doc)),
    }
    Ok(0)
}

type CompareRefs = (Option<String>, Option<String>, Option<String>);

fn compare(db: &Path, db_b: Option<&Path>, refs: CompareRefs, threshold: f64, json: bool) -> Result<i32> {
    if !(threshold.is_finite() && (0.0..100.0).contains(&threshold)) {
        return Err(UsageError("--threshold is a percentage from 0 to 100".into()).into());
    }
    let (ref_a, ref_b) = match refs {
        (Some(name), b, None) => (name, b.unwrap_or_else(|| "latest".into())),
        (None, Some(a), Some(b)) => (a, b),
        _ => {
            return Err(
                UsageError("compare needs two runs (A B), or --baseline NAME and at most one run".into()).into()
            );
        }
    };
    let store_a = Store::open(db)?;
    let store_b = Store::open(db_b.unwrap_or(db))?;
    let (da, _) = load(&store_a, &ref_a)?;
    let (db, _) = load(&store_b, &ref_b)?;
    let rows = report::compare::compare(&da, &db, threshold / 100.0, 2000);
    if json {
        println!("{}", report::compare::to_json(&da, &db, &rows, threshold / 100.0));
    } else {
        print!("{}", report::compare::render(&da, &db, &rows, threshold / 100.0));
    }
    Ok(0)
}

fn export(db: &Path, refs: Vec<String>, format: ExportFormat, output: Option<&Path>) -> Result<i32> {
    let store = Store::open(db)?;
    let docs = load_all(&store, refs)?;
    let text = match format {
        ExportFormat::Json => report::export::to_json(&docs),
        ExportFormat::Csv => report::export::to_csv(&docs.iter().map(|d| d.0.clone()).collect::<Vec<_>>()),
    };
    match output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => print!("{text}"),
    }
    Ok(0)
}

fn import(db: &Path, file: &Path) -> Result<i32> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let runs = report::export::from_json(&text)
        .map_err(|e| UsageError(format!("{}: {e}; nothing was imported", file.display())))?;
    let mut store = Store::open(db)?;
    let ids = store.import(&runs)?;
    let names: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
    println!("imported {} run(s) as {}", ids.len(), names.join(", "));
    Ok(0)
}

fn html_report(db: &Path, refs: Vec<String>, output: &Path) -> Result<i32> {
    let store = Store::open(db)?;
    let docs = load_all(&store, refs)?;
    let cmp = (docs.len() >= 2).then(|| report::compare::compare(&docs[0].0, &docs[1].0, 0.02, 2000));
    let html = report::html::render(&docs, cmp.as_deref());
    std::fs::write(output, html).with_context(|| format!("writing {}", output.display()))?;
    println!("wrote {}", output.display());
    Ok(0)
}

fn runs(db: &Path, filter: &RunFilter, json: bool) -> Result<i32> {
    let store = Store::open(db)?;
    let runs = store.list_runs(filter)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else {
        for r in runs {
            println!(
                "{:>5}  {}  {:<16} {:<24} {:<11} {:>4} rows  {}{}",
                r.id,
                r.started_at,
                r.hostname,
                r.kernel_release,
                r.status,
                r.results,
                r.command_line,
                r.save_name.map(|n| format!("  [saved as {n}]")).unwrap_or_default()
            );
        }
    }
    Ok(0)
}

/// What `run` will do: the benchmarks, the suite (if any) and the options, checked.
struct Plan {
    selected: Vec<(&'static bench::BenchDef, bench::Scope)>,
    suite: Option<&'static report::suites::Suite>,
    options: BenchOptions,
}

fn plan(args: &RunArgs) -> Result<Plan> {
    let registry = bench::registry();
    let suite = match &args.suite {
        Some(name) => Some(report::suites::find(name).ok_or_else(|| {
            let names = report::suites::SUITES.iter().map(|s| s.name);
            UsageError(format!(
                "unknown suite {name:?}{}",
                select::closest(name, names).map(|c| format!("; did you mean {c:?}?")).unwrap_or_default()
            ))
        })?),
        None => None,
    };
    let selectors: Vec<String> = match suite {
        Some(s) => s.selectors.iter().map(|x| x.to_string()).collect(),
        None => args.benchmarks.clone(),
    };
    let selected = select::select(&registry, &selectors)?;
    session::ensure_selected(&selected)?;
    let noop = match &args.noop {
        Some(p) => crate::helper::Executable::open_verified(p),
        None => crate::helper::Executable::embedded(),
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
    }
    crate::sys::raise_nofile_limit();
    bench::check_options(&selected, &options).map_err(UsageError)?;
    Ok(Plan { selected, suite, options })
}

fn run(args: RunArgs, db: PathBuf) -> Result<i32> {
    let Plan { selected, suite, options } = plan(&args)?;
    let req = RunRequest {
        selected,
        quick: args.quick,
        perf_counters: args.perf_counters,
        options,
        db,
        save: args.save.clone(),
        command_line: command_line(),
        progress: !args.json && std::io::stderr().is_terminal(),
    };
    let outcome = session::execute(req)?;
    let (doc, skipped) = outcome.store.load_run(outcome.run_id).context("reading the run back from the database")?;
    if args.json {
        println!("{}", report::json::render_run(&doc, &skipped, args.samples));
    } else {
        match suite {
            Some(s) => {
                print!("{}", (s.render)(&doc));
                println!("(the full table: oscost show {})", outcome.run_id);
            }
            None => print!("{}", report::table::render_run(&doc, &skipped)),
        }
        println!(
            "stored as run #{} in {} ({:.1} s)",
            outcome.run_id,
            outcome.store.path().display(),
            outcome.elapsed.as_secs_f64()
        );
    }
    if outcome.interrupted {
        eprintln!("interrupted: the benchmarks that finished are stored in run #{}", outcome.run_id);
        return Ok(130);
    }
    Ok(if outcome.failures.is_empty() { 0 } else { 1 })
}

fn observe(d: std::time::Duration, iv: std::time::Duration, json: bool, db: PathBuf) -> Result<i32> {
    if iv >= d {
        return Err(UsageError("--interval must be shorter than --for".into()).into());
    }
    let mut store = Store::open(&db)?;
    crate::sys::install_interrupt_flag().context("installing the Ctrl-C handler")?;
    let machine = crate::machine::fingerprint(&command_line(), None);
    eprintln!("observing for {:.0} s every {} …", d.as_secs_f64(), report::fmt_ns(iv.as_nanos() as f64));
    let run_id = store.begin_run(&report::now_rfc3339(), &command_line(), None, &machine)?;
    let trace = crate::observe::record(d, iv).map_err(anyhow::Error::msg)?;
    store.add_benchmark(run_id, &crate::observe::rows(&trace, iv), &[])?;
    let interrupted = crate::sys::interrupted();
    store.finish_run(run_id, &report::now_rfc3339(), if interrupted { "interrupted" } else { "complete" })?;
    let (doc, skipped) = store.load_run(run_id)?;
    if json {
        println!("{}", report::json::render_run(&doc, &skipped, false));
    } else {
        print!("{}", report::table::render_run(&doc, &skipped));
        if let Some(s) = crate::observe::summarize_trace(&trace.running, trace.switches, trace.seconds) {
            println!("{}", crate::observe::summary_line(&s));
        }
        println!("stored as run #{run_id} in {}", store.path().display());
    }
    Ok(if interrupted { 130 } else { 0 })
}

/// `oscost list --suites`: every suite with its summary.
pub fn suites_text() -> String {
    report::suites::SUITES.iter().map(|s| format!("{:<10} {}\n", s.name, s.summary)).collect()
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
    let mut line = |k: &str, v: &str| out.push_str(&format!("{k:<22} {v}\n"));
    line("host", &m.hostname);
    line("cpu", &m.cpu_model);
    line("logical cpus", &format!("{} (this process may use {:?})", m.logical_cpus, m.allowed_cpus));
    line(
        "smt",
        &m.smt_active.map(|s| if s { "active" } else { "inactive" }.to_string()).unwrap_or_else(|| "unknown".into()),
    );
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
        line("per-call bracket", &format!("{:?}: {}", c.per_call_source, c.counter));
        line(
            "counter rate",
            &format!("{:.4} ticks/ns (spread {:.3}% over 3 rounds)", c.ticks_per_ns, c.rate_spread * 100.0),
        );
        line("empty bracket", &format!("{:.1} ticks = {}", c.bracket_ticks, report::fmt_ns(c.bracket_ns)));
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
        for s in &report::suites::SUITES {
            for sel in s.selectors {
                assert!(ids.contains(sel), "{} selects unknown {sel}", s.name);
            }
        }
        assert!(report::suites::find("lmbench").is_some() && report::suites::find("nope").is_none());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
