//! `oscost run`: the benchmarks and options checked into a plan, measured through the
//! run's lifecycle (`session`), and the run printed and written to the `--export-*`
//! files asked for.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::runs::{check_output, export_text, write_output};
use super::{ExportFormat, RunArgs, UsageError, args, command_line, out, outln, run_pairs, run_table};
use crate::bench::{self, BenchOptions};
use crate::model::{RunDocument, Skipped};
use crate::placement::Placement;
use crate::report;
use crate::select;
use crate::session::{self, RunRequest};

/// What `run` will do: the benchmarks, the suite (if any) and the options, checked.
pub(super) struct Plan {
    pub(super) selected: Vec<(&'static bench::BenchDef, bench::Scope)>,
    pub(super) suite: Option<&'static crate::views::suites::Suite>,
    pub(super) options: BenchOptions,
}

/// A suite by name, or a usage error naming the closest.
pub(super) fn find_suite(name: &str) -> Result<&'static crate::views::suites::Suite> {
    crate::views::suites::find(name).ok_or_else(|| {
        let names = crate::views::suites::SUITES.iter().map(|s| s.name);
        UsageError(format!(
            "unknown suite {name:?}{}",
            select::closest(name, names).map(|c| format!("; did you mean {c:?}?")).unwrap_or_default()
        ))
        .into()
    })
}

pub(super) fn plan(args: &RunArgs) -> Result<Plan> {
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
    let runs_helper = session::runs_noop_helper(&selected);
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

pub(super) fn run(args: RunArgs, db: PathBuf) -> Result<i32> {
    let Plan { selected, suite, options } = plan(&args)?;
    for (_, path) in export_paths(&args) {
        check_output(path)?;
    }
    if let Some(when) = args.start_at {
        wait_until(when, args.quiet || args.json)?;
    }
    let req = run_request(&args, (selected, options), db, crate::model::RunKind::Measure);
    let outcome = match suite {
        Some(s) => session::execute_suite(req, s.name)?,
        None => session::execute(req)?,
    };
    let (doc, skipped) = outcome.store.load_run(outcome.run_id).context("reading the run back from the database")?;
    let run = [(doc, skipped)];
    let unwritten = write_exports(&args, &run);
    let [(doc, skipped)] = run;
    let judgement = args.precision.map(|pct| session::judge_precision(&outcome, &doc, pct / 100.0));
    let precision_lines =
        judgement.as_ref().map(|j| report::precision::summary(j, session::ADAPTIVE_MAX_ROUNDS)).unwrap_or_default();
    if args.json {
        outln(&report::json::render_run(&doc, &skipped, args.samples, &run_pairs(&doc), judgement.as_ref()))?;
    } else if !args.quiet {
        match suite {
            Some(s) => {
                out(&(s.render)(&doc))?;
                outln(&format!("(the full table: oscost show {})", outcome.run_id))?;
            }
            None => out(&run_table(&doc, &skipped))?,
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
pub(super) fn run_request(
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
