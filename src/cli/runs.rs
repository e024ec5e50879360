//! The commands that read stored runs: `show`, `compare`, `export`, `import`, `push`,
//! `report` and `runs`; each reads what the user named through the library (`sides`,
//! `transfer`) and prints it.

use std::path::Path;

use anyhow::{Context, Result};

use super::ExportFormat;
use super::{Format, UsageError, args, find_suite, load, load_all, out, outln, run_pairs, run_table, side_error};
use crate::model::RunDocument;
use crate::report;
use crate::runs::transfer::is_stdout;
use crate::store::{RunFilter, Store};

pub(super) fn show(db: &Path, reference: &str, format: Format, samples: bool, suite: Option<&str>) -> Result<i32> {
    let suite = suite.map(find_suite).transpose()?;
    let store = Store::open_existing(db)?;
    let (doc, skipped) = load(&store, reference)?;
    if let Some(s) = suite {
        out(&(s.render)(&doc))?;
        return Ok(0);
    }
    let noise = crate::runs::sides::machine_noise(db, std::slice::from_ref(&doc));
    let (shown, between) = noise.widen_run(&doc);
    match format {
        Format::Json => outln(&report::json::render_run(&doc, &skipped, samples, &run_pairs(&doc), (None, &between)))?,
        Format::Table => {
            out(&run_table(&shown, &skipped))?;
            out(&super::between_runs_line(&noise, &between))?;
        }
        Format::Csv => out(&report::export::csv::to_csv(std::slice::from_ref(&doc)))?,
        Format::Markdown => out(&report::export::markdown::to_markdown(&doc))?,
    }
    Ok(0)
}

/// `show --histogram ROW`: the one row ROW names (its benchmark id, then any of its
/// `key=value` parameters), a per-call row before any other, as a percentile
/// distribution.
pub(super) fn show_histogram(db: &Path, reference: &str, spec: &str) -> Result<i32> {
    let store = Store::open_existing(db)?;
    let (doc, _) = load(&store, reference)?;
    let row = crate::runs::sides::named_row(&doc, spec).map_err(|e| UsageError(e.to_string()))?;
    out(&report::percentiles::render(row)?)?;
    Ok(0)
}

/// What `compare` was asked to put side by side.
pub(super) struct CompareRequest {
    pub(super) sides: Vec<String>,
    pub(super) baseline: Option<String>,
    pub(super) by: Option<args::GroupBy>,
    pub(super) fail_on: Option<report::compare::FailOn>,
    /// Every fingerprint field (`--machine`), not only the differences.
    pub(super) machine: bool,
}

/// The exit status of a comparison that `--fail-on` fails.
pub const COMPARE_FAILED: i32 = 3;

/// The exit status of a printed comparison: [`COMPARE_FAILED`] when `fail_on` finds a
/// figure to fail on (named on standard error), else 0.
fn gate<'a>(
    compared: impl IntoIterator<Item = &'a report::compare::Comparison>,
    fail_on: Option<report::compare::FailOn>,
) -> i32 {
    let gate = crate::runs::sides::gate(compared, fail_on);
    for line in &gate.lines {
        eprintln!("{line}");
    }
    if gate.failed { COMPARE_FAILED } else { 0 }
}

pub(super) fn compare(
    db: &Path,
    db_b: Option<&Path>,
    req: CompareRequest,
    given: Option<f64>,
    json: bool,
) -> Result<i32> {
    let threshold = given.unwrap_or(report::compare::DEFAULT_THRESHOLD * 100.0);
    if !(threshold.is_finite() && (0.0..100.0).contains(&threshold)) {
        return Err(UsageError("--threshold is a percentage from 0 to 100".into()).into());
    }
    let refs = crate::runs::sides::side_refs(req.sides, req.baseline);
    let by_host = req.by == Some(args::GroupBy::Host);
    let crate::runs::sides::Sides { runs: sides, names, dbs } =
        crate::runs::sides::sides(db, db_b, &refs, by_host).map_err(side_error)?;
    let threshold = threshold / 100.0;
    // Each side's machine's noise runs, from the database the side was read from.
    let noise: Vec<crate::judge::noise::RunNoise> =
        sides.iter().zip(&dbs).map(|(side, path)| crate::runs::sides::machine_noise(path, side)).collect();
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
            out(&report::compare::render(a, b, &rows, threshold, (view, super::width())))?;
            if let Some(line) = report::compare::between_runs_line(&rows, [noise_a, noise_b]) {
                outln(&report::fit::prose(&line, super::width()))?;
            }
        }
        return Ok(gate(&rows, req.fail_on));
    }
    let m = report::matrix::matrix(&sides, names, threshold, &noise, 2000);
    if json {
        outln(&serde_json::to_string_pretty(&m)?)?;
    } else {
        out(&report::matrix::render(&m, super::width()))?;
    }
    Ok(gate(m.rows.iter().flat_map(|r| r.cells.iter().flatten()), req.fail_on))
}

pub(super) fn export(db: &Path, refs: Vec<String>, format: ExportFormat, output: Option<&Path>) -> Result<i32> {
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
pub(super) fn export_text(format: ExportFormat, docs: &[(RunDocument, Vec<crate::model::Skipped>)]) -> Result<String> {
    report::export::render(format, docs).map_err(|e| UsageError(e.to_string()).into())
}

/// Refuses, as bad usage, an output path that is not `-`, a regular file or a new name
/// (see [`crate::runs::transfer::check_output`]); checked before anything is read or measured.
pub(super) fn check_output(path: &Path) -> Result<()> {
    crate::runs::transfer::check_output(path).map_err(|e| UsageError(e.to_string()).into())
}

/// Writes an output: to standard output for `-`, else replacing the file whole, so
/// that a reader sees the old file or the new one, never a part (a collector may read
/// at any moment; see [`crate::files::write_atomic`]).
pub(super) fn write_output(path: &Path, text: &str) -> Result<()> {
    if is_stdout(path) {
        return out(text);
    }
    crate::files::write_atomic(path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

pub(super) fn import(db: &Path, file: &Path) -> Result<i32> {
    use crate::runs::transfer::ImportError;
    let done = crate::runs::transfer::import(db, file).map_err(|e| match e {
        ImportError::Refused { .. } | ImportError::Unsafe(_) => UsageError(e.to_string()).into(),
        ImportError::Store(e) => e.into(),
        read => anyhow::Error::from(read),
    })?;
    outln(&crate::runs::transfer::import_message(&done))?;
    Ok(0)
}

pub(super) fn push(db: &Path, refs: Vec<String>, to: &Path) -> Result<i32> {
    let pushed = crate::runs::transfer::push(db, &refs, to).map_err(side_error)?;
    outln(&format!("pushed {} run(s) to {}; {} already there", pushed.added, pushed.location, pushed.already))?;
    Ok(0)
}

pub(super) fn html_report(db: &Path, refs: Vec<String>, output: &Path) -> Result<i32> {
    let store = Store::open_existing(db)?;
    let docs = load_all(&store, refs)?;
    write_output(output, &crate::runs::transfer::report_html(db, &docs))?;
    if !is_stdout(output) {
        outln(&format!("wrote {}", output.display()))?;
    }
    Ok(0)
}

pub(super) fn runs(db: &Path, filter: &RunFilter, json: bool) -> Result<i32> {
    let store = Store::open_existing(db)?;
    let runs = store.list_runs(filter)?;
    if json {
        outln(&serde_json::to_string_pretty(&runs)?)?;
    } else {
        out(&report::listing::runs(&runs, super::width()))?;
    }
    Ok(0)
}
