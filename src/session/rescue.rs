//! What the store refused, kept anyway: when storing a benchmark fails, its figures
//! are printed and written, importable, to a file of their own beside the database (or
//! in a private folder), so a full disk or a file-size limit never loses a measurement.

use std::path::Path;

use super::RunRequest;
use super::tally::Unstored;
use crate::model::{ResultRow, RunDocument, RunInfo, RunStatus, Skipped};
use crate::{machine, report};

/// Every benchmark the store refused, printed and rescued in one importable file, or,
/// when that file cannot be written (a file-size limit, a nearly full disk), in one
/// file a benchmark, so that whatever fits is saved. Each file is a run of its own (a
/// new UUID): the stored part of the run already holds the run's, and an import would
/// take the file for it and add nothing.
pub(super) fn rescue_all(
    req: &RunRequest,
    machine: &machine::Machine,
    id: i64,
    started_at: &str,
    unstored: &[Unstored],
) -> String {
    let rows: Vec<ResultRow> = unstored.iter().flat_map(|u| u.rows.iter().cloned()).collect();
    let skipped: Vec<Skipped> = unstored.iter().flat_map(|u| u.skipped.iter().cloned()).collect();
    print!("{}", report::text::render_results(&rows, &skipped, report::table::Width::Wide));
    let names = unstored.iter().map(|u| u.benchmark.as_str()).collect::<Vec<_>>().join(", ");
    let error = unstored.iter().find_map(|u| u.error.clone()).unwrap_or_default();
    let doc = |rows: &[ResultRow]| unsaved_document(req, machine, (id, &crate::store::new_uuid()), started_at, rows);
    let saved = match write_rescue(&req.db, &doc(&rows), &skipped, "") {
        Some(p) => format!("printed above and saved to {} (oscost import reads it)", p.display()),
        None => {
            let (mut files, mut lost) = (Vec::new(), Vec::new());
            for u in unstored {
                match write_rescue(&req.db, &doc(&u.rows), &u.skipped, &format!("-{}", u.benchmark)) {
                    Some(p) => files.push(p.display().to_string()),
                    None => lost.push(u.benchmark.as_str()),
                }
            }
            let mut said = format!(
                "printed above and, as one file could not be written, saved one benchmark a file: {} (oscost import reads each)",
                if files.is_empty() { "none".to_string() } else { files.join(", ") }
            );
            if !lost.is_empty() {
                said.push_str(&format!("; no file could be written for {}", lost.join(", ")));
            }
            said
        }
    };
    format!("storing {names} failed ({error}); their figures are {saved}; the run stopped there")
}

/// The figures a benchmark measured but could not store, as a run document.
pub(super) fn unsaved_document(
    req: &RunRequest,
    machine: &machine::Machine,
    (id, uuid): (i64, &str),
    started_at: &str,
    rows: &[ResultRow],
) -> RunDocument {
    RunDocument {
        schema_version: crate::model::SCHEMA_VERSION,
        run: RunInfo {
            id,
            started_at: started_at.to_string(),
            command_line: req.command_line.clone(),
            save_name: None,
            status: RunStatus::Failed,
            uuid: Some(uuid.to_string()),
            kind: req.kind,
        },
        machine: machine.clone(),
        results: rows.to_vec(),
    }
}

/// Writes a rescue document as an importable export: a new file (never through a link,
/// never over another file) beside the database, else in a private folder of the temp
/// folder that is kept for the user. `suffix` tells apart one benchmark's file.
pub(super) fn write_rescue(
    db: &Path,
    doc: &RunDocument,
    skipped: &[Skipped],
    suffix: &str,
) -> Option<std::path::PathBuf> {
    let json = report::export::json::to_json(&[(doc.clone(), skipped.to_vec())]);
    let name = format!(
        "{}.unsaved-run{}-{}{suffix}.json",
        db.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "oscost".into()),
        doc.run.id,
        std::process::id()
    );
    let beside = db.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).join(&name);
    crate::files::write_new(&beside, json.as_bytes(), 0o600).map(|()| beside).ok().or_else(|| {
        // The folder is kept only when the file could be written in it.
        let dir = crate::files::private_dir("oscost-rescue-").ok()?;
        let p = dir.path().join(&name);
        crate::files::write_new(&p, json.as_bytes(), 0o600).ok()?;
        let _ = dir.keep();
        Some(p)
    })
}
