//! The command line: argument definitions and the thin layer that turns them into
//! calls, prints the results and chooses the exit code (0 ok, 1 failure, 2 bad usage,
//! 130 interrupted).

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::bench::{self, BenchOptions};
use crate::placement::{Placement, Policy};
use crate::report;
use crate::select;
use crate::session::{self, RunRequest};
use crate::store::{RunFilter, Store};

#[derive(Parser, Debug)]
#[command(
    name = "oscost",
    version,
    about = "What the operating system charges for its primitives, measured and proven"
)]
pub struct Cli {
    /// Results database (default: $XDG_DATA_HOME/oscost/results.db or ~/.local/share/oscost/results.db).
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run benchmarks (default suite without arguments) and store the run.
    Run(RunArgs),
    /// List every benchmark with its description and timing model (or the suites).
    List {
        /// List the named suites instead.
        #[arg(long)]
        suites: bool,
    },
    /// Print the machine fingerprint and the clock calibration.
    Info {
        #[arg(long)]
        json: bool,
    },
    /// Reprint a stored run (the latest by default).
    Show {
        /// Run id, saved name, or `latest`.
        run: Option<String>,
        /// Same as --format json.
        #[arg(long)]
        json: bool,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Include raw samples in JSON output.
        #[arg(long)]
        samples: bool,
    },
    /// Compare two runs: ratio of medians with bootstrap intervals, and a verdict.
    Compare {
        /// Run A (id, saved name or `latest`); with --baseline, this is run B.
        a: Option<String>,
        /// Run B.
        b: Option<String>,
        /// Use the run saved under this name as A.
        #[arg(long, value_name = "NAME")]
        baseline: Option<String>,
        /// Read run B from another database (results from another machine).
        #[arg(long, value_name = "PATH")]
        db_b: Option<PathBuf>,
        /// Noise threshold in percent: verdicts need the interval to clear it.
        #[arg(long, value_name = "PCT", default_value_t = 2.0)]
        threshold: f64,
        #[arg(long)]
        json: bool,
    },
    /// Export runs (default: the latest) as JSON (everything, for import) or CSV.
    Export {
        runs: Vec<String>,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Import a JSON export from another machine into the database (all or nothing).
    Import { file: PathBuf },
    /// Write a self-contained HTML report of runs (default: the latest); with two or
    /// more, the first two are compared.
    Report {
        runs: Vec<String>,
        #[arg(short, long, value_name = "PATH", default_value = "report.html")]
        output: PathBuf,
    },
    /// Sample the live system's run-queue length and switch rate, and store the trace.
    Observe {
        /// How long to observe (e.g. 60s, 2m).
        #[arg(long = "for", value_name = "DURATION", default_value = "60s")]
        duration: String,
        /// Sampling interval (e.g. 10ms).
        #[arg(long, value_name = "DURATION", default_value = "10ms")]
        interval: String,
        #[arg(long)]
        json: bool,
    },
    /// List stored runs, newest first.
    Runs {
        #[arg(long)]
        host: Option<String>,
        /// Only runs with this benchmark id or family.
        #[arg(long)]
        benchmark: Option<String>,
        /// Only runs started at or after this date (YYYY-MM-DD or RFC 3339).
        #[arg(long)]
        since: Option<String>,
        /// Only runs started before this date.
        #[arg(long)]
        until: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Benchmarks to run: ids (syscall.getppid), families (syscall, ctx, spawn, load) or `all`.
    pub benchmarks: Vec<String>,
    /// Run a named suite and print it in the classic table's layout (see `list --suites`).
    #[arg(long, value_name = "NAME", conflicts_with = "benchmarks")]
    pub suite: Option<String>,
    /// About a fifth of the time, at some cost in precision.
    #[arg(long)]
    pub quick: bool,
    /// Write the run as JSON to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Include raw samples in JSON output.
    #[arg(long)]
    pub samples: bool,
    /// Pin the benchmark to this CPU (placement-sweeping families pin by themselves).
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Run at this nice value (-20..19; lowering needs privilege).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub nice: Option<i32>,
    /// Scheduling policy; fifo and rr are bounded by a watchdog and need privilege.
    #[arg(long, value_enum, default_value_t = Policy::Other)]
    pub policy: Policy,
    /// Also count switches with per-task perf software counters. They slow every switch
    /// of the watched tasks, so context-switch figures rise; /proc counts are always taken.
    #[arg(long)]
    pub perf_counters: bool,
    /// Save the run under this name (for `compare --baseline`).
    #[arg(long, value_name = "NAME")]
    pub save: Option<String>,
    /// The no-op program to exec (default: oscost's own static helper).
    #[arg(long, value_name = "PATH")]
    pub noop: Option<PathBuf>,
    /// Parent memory sizes for the fork sweep, e.g. 0,64M,512M.
    #[arg(long, value_name = "LIST", default_value = "0,64M,512M")]
    pub parent_mem: String,
    /// Working-set sizes for ctx.footprint, e.g. 0,4K,64K,1M.
    #[arg(long, value_name = "LIST", default_value = "0,4K,16K,64K,256K,1M,4M")]
    pub sizes: String,
    /// Stride of the footprint walk in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64)]
    pub stride: usize,
    /// Runnable-task counts for load.runqueue.
    #[arg(long, value_name = "LIST", default_value = "2,4,8,16,32,64,128,256,512,1024")]
    pub tasks: String,
    /// Task counts for load.yield_storm.
    #[arg(long, value_name = "LIST", default_value = "2,8,32,128")]
    pub storm_tasks: String,
    /// Chat rooms (20 users each) for load.chat.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub rooms: usize,
    /// Messages each chat user sends.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub messages: usize,
}

/// Parses a comma-separated list of task counts.
pub fn parse_counts(list: &str) -> Result<Vec<usize>, String> {
    list.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| x.trim().parse::<usize>().map_err(|_| format!("{x:?} is not a whole number")))
        .collect()
}

/// Parses a size such as `64M`, `4K`, `1G` or `512` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size (use e.g. 0, 4K, 64M, 1G)"))?;
    n.checked_mul(mult).ok_or_else(|| format!("{s:?} is too large"))
}

/// Parses a comma-separated list of sizes.
pub fn parse_sizes(list: &str) -> Result<Vec<u64>, String> {
    list.split(',').filter(|x| !x.trim().is_empty()).map(parse_size).collect()
}

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
fn load(store: &Store, reference: &str) -> Result<(crate::model::RunDocument, Vec<crate::model::Skipped>)> {
    let id = store.resolve(reference).map_err(|e| UsageError(e.to_string()))?;
    Ok(store.load_run(id)?)
}

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(args) => run(args, db_path(&cli.db)),
        Command::List { suites } => {
            if suites {
                for s in &report::suites::SUITES {
                    println!("{:<10} {}", s.name, s.summary);
                }
            } else {
                print!("{}", list_text());
            }
            Ok(0)
        }
        Command::Info { json } => {
            let calib = session::calibrate(false);
            let m = crate::machine::fingerprint(&command_line(), Some(calib));
            if json {
                println!("{}", serde_json::to_string_pretty(&m)?);
            } else {
                print!("{}", info_text(&m));
            }
            Ok(0)
        }
        Command::Show { run, json, format, samples } => {
            let store = Store::open(&db_path(&cli.db))?;
            let (doc, skipped) = load(&store, run.as_deref().unwrap_or("latest"))?;
            match if json { Format::Json } else { format } {
                Format::Json => println!("{}", report::json::render_run(&doc, &skipped, samples)),
                Format::Table => print!("{}", report::table::render_run(&doc, &skipped)),
                Format::Csv => print!("{}", report::export::to_csv(std::slice::from_ref(&doc))),
                Format::Markdown => print!("{}", report::export::to_markdown(&doc)),
            }
            Ok(0)
        }
        Command::Compare { a, b, baseline, db_b, threshold, json } => {
            if !(threshold.is_finite() && (0.0..100.0).contains(&threshold)) {
                return Err(UsageError("--threshold is a percentage from 0 to 100".into()).into());
            }
            let store_a = Store::open(&db_path(&cli.db))?;
            let store_b = match &db_b {
                Some(p) => Store::open(p)?,
                None => Store::open(&db_path(&cli.db))?,
            };
            let (ref_a, ref_b) = match (baseline, a, b) {
                (Some(name), b, None) => (name, b.unwrap_or_else(|| "latest".into())),
                (None, Some(a), Some(b)) => (a, b),
                _ => {
                    return Err(UsageError(
                        "compare needs two runs (A B), or --baseline NAME and at most one run".into(),
                    )
                    .into());
                }
            };
            let (da, _) = load(&store_a, &ref_a)?;
            let (db, _) = load(&store_b, &ref_b)?;
            let rows = report::compare::compare(&da, &db, threshold / 100.0, 2000);
            if json {
                #[derive(serde::Serialize)]
                struct Out<'a> {
                    a: i64,
                    b: i64,
                    threshold: f64,
                    machines: Vec<(String, String, String)>,
                    results: &'a [report::compare::Comparison],
                }
                let out = Out {
                    a: da.run.id,
                    b: db.run.id,
                    threshold: threshold / 100.0,
                    machines: report::compare::machine_diff(&da.machine, &db.machine),
                    results: &rows,
                };
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                print!("{}", report::compare::render(&da, &db, &rows, threshold / 100.0));
            }
            Ok(0)
        }
        Command::Export { runs, format, output } => {
            let store = Store::open(&db_path(&cli.db))?;
            let refs = if runs.is_empty() { vec!["latest".to_string()] } else { runs };
            let docs = refs.iter().map(|r| load(&store, r)).collect::<Result<Vec<_>>>()?;
            let text = match format {
                ExportFormat::Json => report::export::to_json(&docs),
                ExportFormat::Csv => report::export::to_csv(&docs.iter().map(|d| d.0.clone()).collect::<Vec<_>>()),
            };
            match output {
                Some(p) => std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?,
                None => print!("{text}"),
            }
            Ok(0)
        }
        Command::Import { file } => {
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let runs = report::export::from_json(&text)
                .map_err(|e| UsageError(format!("{}: {e}; nothing was imported", file.display())))?;
            let mut store = Store::open(&db_path(&cli.db))?;
            let ids = store.import(&runs)?;
            println!(
                "imported {} run(s) as {}",
                ids.len(),
                ids.iter().map(|i| format!("#{i}")).collect::<Vec<_>>().join(", ")
            );
            Ok(0)
        }
        Command::Report { runs, output } => {
            let store = Store::open(&db_path(&cli.db))?;
            let refs = if runs.is_empty() { vec!["latest".to_string()] } else { runs };
            let docs = refs.iter().map(|r| load(&store, r)).collect::<Result<Vec<_>>>()?;
            let cmp = (docs.len() >= 2).then(|| report::compare::compare(&docs[0].0, &docs[1].0, 0.02, 2000));
            let html = report::html::render(&docs, cmp.as_deref());
            std::fs::write(&output, html).with_context(|| format!("writing {}", output.display()))?;
            println!("wrote {}", output.display());
            Ok(0)
        }
        Command::Observe { duration, interval, json } => observe(&duration, &interval, json, db_path(&cli.db)),
        Command::Runs { host, benchmark, since, until, json } => {
            let store = Store::open(&db_path(&cli.db))?;
            let runs = store.list_runs(&RunFilter { host, benchmark, since, until })?;
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
    }
}

fn run(args: RunArgs, db: PathBuf) -> Result<i32> {
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
    let parent_mem = parse_sizes(&args.parent_mem).map_err(|e| UsageError(format!("--parent-mem: {e}")))?;
    let footprint_sizes = parse_sizes(&args.sizes).map_err(|e| UsageError(format!("--sizes: {e}")))?;
    if selected.iter().any(|(b, _)| b.id == "spawn.fork_mem") {
        bench::spawn::check_parent_mem(&parent_mem, crate::sys::available_memory_bytes()).map_err(UsageError)?;
    }
    if args.stride == 0 {
        return Err(UsageError("--stride must be at least 1 byte".into()).into());
    }
    let noop = match &args.noop {
        Some(p) => crate::helper::Executable::open_verified(p),
        None => crate::helper::Executable::embedded(),
    }
    .map(std::sync::Arc::new);
    let tasks = parse_counts(&args.tasks).map_err(|e| UsageError(format!("--tasks: {e}")))?;
    let storm_tasks = parse_counts(&args.storm_tasks).map_err(|e| UsageError(format!("--storm-tasks: {e}")))?;
    if args.rooms == 0 || args.messages == 0 {
        return Err(UsageError("--rooms and --messages must be at least 1".into()).into());
    }
    crate::sys::raise_nofile_limit();
    for (flag, list, mode, fds) in [
        ("--tasks", &tasks, crate::bench::ctx::peer::Mode::Process, 2),
        ("--storm-tasks", &storm_tasks, crate::bench::ctx::peer::Mode::Thread, 0),
    ] {
        if let Some(&max) = list.iter().max() {
            crate::bench::load::group::check_limits(mode, max, fds).map_err(|e| UsageError(format!("{flag}: {e}")))?;
        }
    }
    let chat_threads = args.rooms * 80;
    crate::bench::load::group::check_limits(crate::bench::ctx::peer::Mode::Thread, chat_threads, 4)
        .map_err(|e| UsageError(format!("--rooms {}: {e}", args.rooms)))?;
    let mut options = BenchOptions {
        placement: Placement { cpu: args.cpu, nice: args.nice, policy: args.policy },
        noop,
        parent_mem,
        footprint_sizes,
        footprint_stride: args.stride,
        tasks,
        storm_tasks,
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

fn observe(duration: &str, interval: &str, json: bool, db: PathBuf) -> Result<i32> {
    let d = crate::observe::parse_duration(duration).map_err(|e| UsageError(format!("--for: {e}")))?;
    let iv = crate::observe::parse_duration(interval).map_err(|e| UsageError(format!("--interval: {e}")))?;
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
            println!(
                "run queue (excluding the observer): mean {:.2}, p50 {:.0}, p90 {:.0}, p99 {:.0}, max {:.0}; above 10: {:.2}% of the time, above 20: {:.2}%; {:.0} switches/s",
                s.mean,
                s.p50,
                s.p90,
                s.p99,
                s.max,
                s.frac_above_10 * 100.0,
                s.frac_above_20 * 100.0,
                s.switches_per_s
            );
        }
        println!("stored as run #{run_id} in {}", store.path().display());
    }
    Ok(if interrupted { 130 } else { 0 })
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
    fn sizes_parse() {
        assert_eq!(parse_sizes("0,64M,512M").unwrap(), vec![0, 64 << 20, 512 << 20]);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }

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
