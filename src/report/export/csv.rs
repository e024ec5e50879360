//! The CSV export: one line per result row, with a header, safe to open in a
//! spreadsheet.

use super::{ExportError, Exporter, Runs};
use crate::model::RunDocument;

pub const EXPORTER: Exporter = Exporter {
    name: "csv",
    flag: "export-csv",
    help: "",
    file_help: "Also write the run's rows as CSV to FILE",
    render,
};

fn render(runs: Runs) -> Result<String, ExportError> {
    Ok(to_csv(&runs.iter().map(|d| d.0.clone()).collect::<Vec<_>>()))
}

/// A text field of the CSV: one a spreadsheet would read as a formula (= + - @, or
/// a leading tab or carriage return) gets a leading apostrophe, the usual
/// neutraliser; control characters (a terminal's escape sequences) and bidirectional
/// overrides become visible replacements, as everywhere oscost prints stored text. Numbers are written by `num` and never pass through here.
fn csv_text(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{}", crate::report::plain(s))
    } else {
        crate::report::plain(s).into_owned()
    }
}

fn num(x: f64) -> String {
    if x.is_finite() { format!("{x}") } else { String::new() }
}

/// One CSV line per result row, with a header.
pub fn to_csv(runs: &[RunDocument]) -> String {
    // The csv crate quotes what needs quoting; `csv_text` has already made each text
    // field safe to open in a spreadsheet.
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    let header = "run_id,started_at,host,kernel,benchmark,params,method,unit,n,iterations,min,median,mean,stddev,ci_low,ci_high,p50,p90,p99,p999,max,flags";
    let _ = w.write_record(header.split(','));
    for d in runs {
        for r in &d.results {
            let p = r.percentiles.as_ref();
            let fields = [
                d.run.id.to_string(),
                csv_text(&d.run.started_at),
                csv_text(&d.machine.hostname),
                csv_text(&d.machine.kernel_release),
                csv_text(&r.benchmark),
                csv_text(&serde_json::to_string(&r.params).unwrap_or_default()),
                r.method.as_str().to_string(),
                csv_text(r.unit.as_str()),
                r.n.to_string(),
                r.iterations.to_string(),
                num(r.min),
                num(r.median),
                num(r.mean),
                num(r.stddev),
                num(r.ci_low),
                num(r.ci_high),
                p.map(|p| num(p.p50)).unwrap_or_default(),
                p.map(|p| num(p.p90)).unwrap_or_default(),
                p.map(|p| num(p.p99)).unwrap_or_default(),
                p.map(|p| num(p.p999)).unwrap_or_default(),
                p.map(|p| num(p.max)).unwrap_or_default(),
                r.flags.iter().map(|f| f.flag.as_str()).collect::<Vec<_>>().join(";"),
            ];
            let _ = w.write_record(&fields);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
