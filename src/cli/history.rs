//! `oscost history`: the stored runs read as series, change points found and
//! annotated (`crate::judge::history`), printed (`report::history`), and an exit status a
//! nightly job can gate on.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{COMPARE_FAILED, UsageError, is_stdout, out, outln, write_output};
use crate::judge::history::{self as series, Stratum};
use crate::report;
use crate::store::{RunFilter, Store};

/// `--fail-on-change`, and how far back a change may be to fail.
#[derive(Debug, Clone, Copy)]
pub struct FailOnChange {
    pub recent: Option<usize>,
}

/// What `history` was asked for.
#[derive(Debug)]
pub struct Request {
    pub figures: Vec<String>,
    pub filter: RunFilter,
    pub by: Option<Stratum>,
    pub fail_on: Option<FailOnChange>,
    pub html: Option<PathBuf>,
    pub json: bool,
}

pub fn history(db: &Path, req: &Request) -> Result<i32> {
    let runs = load_runs(db, &req.filter, &[crate::model::RunKind::Measure])?;
    let found =
        series::build(&runs, req.by, |r| req.figures.is_empty() || req.figures.iter().any(|f| series::matches(f, r)));
    if found.is_empty() && !req.figures.is_empty() && !runs.is_empty() {
        return Err(UsageError(format!(
            "no figure of the {} runs read matches {}",
            runs.len(),
            req.figures.iter().map(|f| format!("'{f}'")).collect::<Vec<_>>().join(" or ")
        ))
        .into());
    }
    if req.json {
        outln(&report::history::to_json(&found, runs.len(), req.by))?;
    } else {
        out(&report::fit::prose(&report::history::render(&found, runs.len()), super::width()))?;
    }
    if let Some(path) = &req.html {
        write_output(path, &report::history::html(&found, runs.len()))?;
        if !is_stdout(path) {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(req.fail_on.map_or(0, |f| fail_status(&found, f)))
}

/// The complete runs of `kinds` the filter selects, oldest first.
pub(super) fn load_runs(
    db: &Path,
    filter: &RunFilter,
    kinds: &[crate::model::RunKind],
) -> Result<Vec<crate::model::RunDocument>> {
    let store = Store::open_existing(db)?;
    let listed = store.list_runs(filter)?;
    let docs = listed
        .iter()
        .filter(|l| l.status == crate::model::RunStatus::Complete && kinds.contains(&l.kind))
        .map(|l| store.load_run(l.id).map(|(d, _)| d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(series::complete_of(docs, kinds))
}

/// [`COMPARE_FAILED`] when a figure changed (among the newest `recent` runs), each
/// such change named on standard error; else 0.
fn fail_status(found: &[series::Series], on: FailOnChange) -> i32 {
    let latest = |s: &'_ series::Series| s.recent_changes(on.recent).last().cloned();
    let doubted: Vec<String> = found
        .iter()
        .filter_map(|s| {
            let c = latest(s)?;
            c.doubted.map(|flag| format!("{} ×{:.3} at run #{} (uncertain: {flag})", s.figure(), c.ratio, c.run_id))
        })
        .collect();
    if !doubted.is_empty() {
        eprintln!("--fail-on-change: {} change(s) not judged, a flag doubts the runs beside them:", doubted.len());
        for d in &doubted {
            eprintln!("  {}", report::plain(d));
        }
    }
    let changed: Vec<String> = found
        .iter()
        .filter_map(|s| {
            let c = latest(s).filter(|c| c.doubted.is_none())?;
            Some(format!("{} ×{:.3} at run #{} ({})", s.figure(), c.ratio, c.run_id, report::history::cause_text(&c)))
        })
        .collect();
    if changed.is_empty() {
        return 0;
    }
    eprintln!("--fail-on-change: {} figure(s) changed:", changed.len());
    for c in &changed {
        eprintln!("  {}", report::plain(c));
    }
    COMPARE_FAILED
}
