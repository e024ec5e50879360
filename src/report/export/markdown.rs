//! The Markdown export: a table a run, for a README or a paper.

use super::{ExportError, Exporter, Runs};
use crate::model::RunDocument;

pub const EXPORTER: Exporter = Exporter {
    name: "markdown",
    flag: "export-markdown",
    help: "A Markdown table a run, for a README or a paper",
    file_help: "Also write the run as a Markdown table to FILE",
    render,
};

fn render(runs: Runs) -> Result<String, ExportError> {
    Ok(runs.iter().map(|(d, _)| to_markdown(d)).collect::<Vec<_>>().join("\n"))
}

/// A Markdown table cell: printable, pipes escaped, nothing that starts markup
/// a reader did not write (HTML tags).
fn md_cell(s: &str) -> String {
    crate::report::plain(s).replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;")
}

/// A Markdown table of a run that pastes cleanly into a README or paper.
pub fn to_markdown(d: &RunDocument) -> String {
    let m = &d.machine;
    let mut out = format!(
        "**oscost run #{}** — {} · {} · kernel {} · {}\n\n| benchmark | variant | method | median | 95% CI | p99 | flags |\n|---|---|---|---:|---|---:|---|\n",
        d.run.id,
        md_cell(&d.run.started_at),
        md_cell(&m.cpu_model),
        md_cell(&m.kernel_release),
        md_cell(&m.virtualization)
    );
    for r in &d.results {
        let f = |x: f64| crate::report::fmt_value(x, &r.unit);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            md_cell(&r.benchmark),
            md_cell(&r.variant_label()),
            r.method.as_str(),
            f(r.median),
            r.interval().map(|(lo, hi)| format!("{} – {}", f(lo), f(hi))).unwrap_or_else(|| "none (one value)".into()),
            r.percentiles.as_ref().map(|p| f(p.p99)).unwrap_or_default(),
            md_cell(&r.flags.iter().map(|x| x.flag.as_str()).collect::<Vec<_>>().join(", "))
        ));
    }
    out
}
