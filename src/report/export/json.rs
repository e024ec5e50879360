//! The JSON export: every run with everything stored about it, the file `oscost
//! import` reads back (its validation is `report::import`).

use serde::{Deserialize, Serialize};

use super::{ExportError, Exporter, Runs};
use crate::model::{RunDocument, SCHEMA_VERSION, Skipped};

pub const EXPORTER: Exporter = Exporter {
    name: "json",
    flag: "export-json",
    help: "",
    file_help: "Also write the run, as `oscost export --format json` would (importable), to FILE",
    render,
};

fn render(runs: Runs) -> Result<String, ExportError> {
    Ok(to_json(runs))
}

/// An export file: any number of runs with everything stored about them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Export {
    pub schema_version: u32,
    pub runs: Vec<ExportedRun>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExportedRun {
    #[serde(flatten)]
    pub doc: RunDocument,
    #[serde(default)]
    pub skipped: Vec<Skipped>,
}

/// The export of runs. Per-call samples travel as they are stored: a `histogram`
/// (base64 of the `histo` blob, round by round) in place of `samples`.
pub fn to_json(runs: &[(RunDocument, Vec<Skipped>)]) -> String {
    use base64::Engine;
    let e = Export {
        schema_version: SCHEMA_VERSION,
        runs: runs.iter().map(|(d, s)| ExportedRun { doc: d.clone(), skipped: s.clone() }).collect(),
    };
    let mut v = serde_json::to_value(&e).expect("plain data serialises");
    let docs = v["runs"].as_array_mut().into_iter().flatten();
    for (run, value) in e.runs.iter().zip(docs) {
        let rows = value["results"].as_array_mut().into_iter().flatten();
        for (row, out) in run.doc.results.iter().zip(rows) {
            if row.method != crate::model::Method::PerCall || row.samples.is_empty() {
                continue;
            }
            if let (Ok(blob), Some(obj)) = (crate::histo::encode(&row.round_slices()), out.as_object_mut()) {
                obj.remove("samples");
                obj.insert("histogram".into(), base64::engine::general_purpose::STANDARD.encode(blob).into());
            }
        }
    }
    serde_json::to_string(&v).expect("plain data serialises")
}
