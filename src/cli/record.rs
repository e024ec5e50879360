//! The runs made by recording rather than by the benchmarks: `observe`, `trace` and
//! `sim`, each begun, filled and finished through `session::record`.

use std::path::PathBuf;

use anyhow::Result;

use super::{UsageError, command_line, out, outln, run_pairs, run_table};
use crate::report;

pub(super) fn observe(d: std::time::Duration, iv: std::time::Duration, json: bool, db: PathBuf) -> Result<i32> {
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
    record: impl FnOnce() -> Result<(Vec<crate::model::ResultRow>, Vec<String>)>,
) -> Result<i32> {
    let (run, lines) = crate::session::record(&db, kind, &command_line(), record)?;
    let (doc, skipped) = run.store.load_run(run.run_id)?;
    if json {
        outln(&report::json::render_run(&doc, &skipped, false, &run_pairs(&doc), (None, &[])))?;
    } else {
        out(&run_table(&doc, &skipped))?;
        for line in lines {
            outln(&report::fit::prose(&line, super::width()))?;
        }
        outln(&format!("stored as run #{} in {}", run.run_id, run.store.location()))?;
    }
    Ok(run.stopped_by.map_or(0, |s| 128 + s))
}

/// The longest `oscost trace` recording (events are kept in memory until it ends).
const TRACE_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

pub(super) fn trace(d: std::time::Duration, command: &[String], json: bool, db: PathBuf) -> Result<i32> {
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
        let recorded = crate::trace::system::record(&spec, d, command)?;
        Ok((crate::trace::system::rows(&recorded, command), crate::trace::system::summary(&recorded)))
    })
}

pub(super) fn sim(plan: crate::sim::run::Plan, profile: &str, json: bool, db: PathBuf) -> Result<i32> {
    crate::sim::command::check(&plan).map_err(|e| UsageError(e.to_string()))?;
    let source = crate::profiles::StoredProfiles::Measuring(&db);
    let profile = crate::sim::profile_source::choose(profile, &source)
        .map_err(|e| if e.is_usage() { UsageError(e.to_string()).into() } else { anyhow::Error::from(e) })?;
    report::fit::say(&format!("simulating with the {} profile ({}) …", profile.name, profile.machine));
    recorded_run(db, crate::model::RunKind::Sim, json, || {
        Ok((crate::sim::command::rows(&plan, &profile, crate::sys::interrupted), Vec::new()))
    })
}

/// `oscost sim --workload chat --ground`: the newest measured chat rows simulated at
/// their own sizes, stored as a sim run, and printed beside the measured ones.
pub(super) fn ground_chat(
    workload: crate::sim::WorkloadKind,
    policies: &[crate::sim::PolicyKind],
    profile: &str,
    json: bool,
    db: PathBuf,
) -> Result<i32> {
    if workload != crate::sim::WorkloadKind::LoadChat {
        return Err(UsageError(
            "--ground holds the load_chat model against load.chat's measured rows: give --workload load_chat".into(),
        )
        .into());
    }
    let measured = crate::session::grounding::measured_chat(&db)?;
    if measured.is_empty() {
        return Err(UsageError(format!(
            "no load.chat row with its regime is stored in {}: measure one with `oscost run load.chat` (and `oscost run load.chat --cpu 0` for one CPU)",
            db.display()
        ))
        .into());
    }
    let source = crate::profiles::StoredProfiles::Measuring(&db);
    let profile_arg = profile;
    let profile = crate::sim::profile_source::choose(profile, &source)
        .map_err(|e| if e.is_usage() { UsageError(e.to_string()).into() } else { anyhow::Error::from(e) })?;
    report::fit::say(&format!("simulating with the {} profile ({}) …", profile.name, profile.machine));
    let (run, lines) = crate::session::record(&db, crate::model::RunKind::Sim, &command_line(), || {
        Ok::<_, anyhow::Error>(crate::session::grounding::simulate(
            &measured,
            policies,
            &profile,
            crate::sys::interrupted,
        ))
    })?;
    if json {
        outln(&serde_json::to_string_pretty(&serde_json::json!({ "run": run.run_id, "grounding": lines }))?)?;
    } else {
        out(&crate::views::grounding::render(&lines, profile_arg))?;
        out(&crate::views::grounding::profile_lines(profile_arg, &profile))?;
        outln(&format!("simulated rows stored as run #{} in {}", run.run_id, run.store.location()))?;
    }
    Ok(run.stopped_by.map_or(0, |s| 128 + s))
}
