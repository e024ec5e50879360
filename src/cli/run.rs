//! `oscost run`: the benchmarks and options checked into a plan, measured through the
//! run's lifecycle (`session`), and the run printed and written to the `--export-*`
//! files asked for.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::runs::{check_output, export_text, write_output};
use super::{ExportFormat, RunArgs, UsageError, args, command_line, out, outln, run_pairs};
use crate::bench::{self, BenchOptions};
use crate::model::{RunDocument, Skipped};
use crate::placement::Placement;
use crate::report;
use crate::session::{self, RunRequest};

pub(super) use crate::session::plan::Plan;
use crate::session::plan::{Choice, PlanError};

/// The relative half-width `--precision` asks of each figure, or the one `--detect`
/// implies (checked by [`plan`] to exceed compare's threshold).
fn precision_target(args: &RunArgs) -> Option<f64> {
    let detect = |pct: f64| crate::stats::power::precision_for(pct / 100.0, report::compare::DEFAULT_THRESHOLD);
    args.precision.map(|pct| pct / 100.0).or_else(|| args.detect.and_then(detect))
}

/// The benchmark `--wakeup-histogram` draws.
const WAKEUP: &str = "load.wakeup";

/// A suite by name, or a usage error naming the closest.
pub(super) fn find_suite(name: &str) -> Result<&'static crate::views::suites::Suite> {
    crate::session::plan::find_suite(name).map_err(plan_error)
}

/// `run`'s arguments as a checked plan (see [`crate::session::plan::plan`]).
pub(super) fn plan(args: &RunArgs) -> Result<Plan> {
    if let Some(pct) = args.detect
        && precision_target(args).is_none()
    {
        return Err(UsageError(format!(
            "--detect {pct}%: compare calls a change only past its {:.0}% threshold; ask for a larger one",
            report::compare::DEFAULT_THRESHOLD * 100.0
        ))
        .into());
    }
    let choice = Choice { suite: args.suite.as_deref(), benchmarks: &args.benchmarks, noop: args.noop.as_deref() };
    let options = BenchOptions {
        placement: Placement { cpu: args.cpu, pair: args.cpus, nice: args.nice, policy: args.policy },
        noop: Err(crate::helper::NoNoop("the plan opens the no-op helper".to_string())),
        parent_mem: args.parent_mem.0.clone(),
        footprint_sizes: args.sizes.0.clone(),
        footprint_stride: args.stride,
        tasks: args.tasks.0.clone(),
        storm_tasks: args.storm_tasks.0.clone(),
        rooms: args.rooms,
        messages: args.messages,
        wakeup: args.wakeup.options(),
    };
    crate::session::plan::plan(&choice, options).map_err(plan_error)
}

/// A plan refused: bad usage (an unknown benchmark keeps its own type, which says so
/// too), except a selection that names nothing.
fn plan_error(e: PlanError) -> anyhow::Error {
    match e {
        PlanError::UnknownBenchmark(e) => e.into(),
        PlanError::NothingSelected => anyhow::Error::from(e),
        other => UsageError(other.to_string()).into(),
    }
}

/// Checks `run`'s arguments as `oscost run` would, measuring nothing: the benchmarks
/// and suite exist and every selected benchmark accepts the options.
pub fn check_run(args: &RunArgs) -> Result<()> {
    plan(args).map(|_| ())
}

pub(super) fn run(args: RunArgs, db: PathBuf) -> Result<i32> {
    let Plan { selected, suite, options } = plan(&args)?;
    if args.wakeup_histogram.is_some() && !selected.iter().any(|(b, _)| b.id == WAKEUP) {
        return Err(UsageError(format!("--wakeup-histogram: {WAKEUP} is not among the benchmarks run")).into());
    }
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
    let judgement = precision_target(&args).map(|target| session::judge_precision(&outcome, &doc, target));
    let precision_lines =
        judgement.as_ref().map(|j| report::precision::summary(j, session::ADAPTIVE_MAX_ROUNDS)).unwrap_or_default();
    let noise = noise_beside(&outcome.store, &doc);
    let (shown, between) = noise.widen_run(&doc);
    if args.json {
        let judged = (judgement.as_ref(), &between[..]);
        outln(&report::json::render_run(&doc, &skipped, args.samples, &run_pairs(&doc), judged))?;
    } else if !args.quiet {
        match suite {
            Some(s) => {
                out(&(s.render)(&doc))?;
                outln(&format!("(the full table: oscost show {})", outcome.run_id))?;
            }
            None => {
                out(&super::fresh_run_table(&shown, &skipped))?;
                out(&super::between_runs_line(&noise, &between))?;
            }
        }
        if let Some(bound) = args.wakeup_histogram {
            let rows: Vec<_> = doc.results.iter().filter(|r| r.benchmark == WAKEUP && !r.samples.is_empty()).collect();
            out(&report::latency_histogram::render(&rows, bound))?;
        }
        let width = super::width();
        for line in &precision_lines {
            outln(&report::fit::prose(line, width))?;
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
        precision: precision_target(args).map(|target| session::PrecisionGoal {
            target,
            detect: args.detect.map(|pct| pct / 100.0),
            max_time: args.max_time.0,
            max_rounds: session::ADAPTIVE_MAX_ROUNDS,
        }),
        conditions: args.conditions.clone(),
        timeout: args.timeout.as_ref().map(|d| d.0),
        kind,
    }
}

/// The `--export-*` files asked for, with their formats.
fn export_paths(args: &RunArgs) -> impl Iterator<Item = (ExportFormat, &PathBuf)> {
    args.exports.0.iter().map(|(format, path)| (*format, path))
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
    let instant = when.instant(SystemTime::now()).map_err(|e| UsageError(e.to_string()))?;
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

/// This machine's noise runs in the run's own database, for its intervals as printed;
/// noise runs that cannot be read leave them as the run's rounds drew them, with a
/// warning (the run is stored either way).
fn noise_beside(store: &crate::store::Store, doc: &crate::model::RunDocument) -> crate::judge::noise::RunNoise {
    session::machine_noise(store, &doc.machine.comparability_key()).unwrap_or_else(|e| {
        eprintln!(
            "warning: this machine's noise runs could not be read ({e}); intervals hold what varied within the run"
        );
        crate::judge::noise::RunNoise::none()
    })
}
