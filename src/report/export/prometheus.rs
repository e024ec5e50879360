//! A run as a node_exporter textfile (the Prometheus text exposition format), so a
//! fleet's figures land next to its other metrics: write it into the textfile
//! collector's directory (`--collector.textfile.directory`) and node_exporter serves it.
//!
//! Metrics, in base units (seconds), all gauges, all named `oscost_…` so none collides
//! with node_exporter's own (its switch counter is `node_context_switches_total`):
//! - `oscost_benchmark_seconds{benchmark, variant, method, kind, stat}`: every figure
//!   measured in time (ns/call, ns/hand-off, ns/switch, ns late);
//! - `oscost_benchmark_per_second{benchmark, variant, method, kind, unit, stat}`: every
//!   rate (msg/s, switches/s);
//! - `oscost_run_timestamp_seconds`: when the run started (Unix time);
//! - `oscost_info{version, commit, host, kernel, cpu, virtualization, run, kind} 1`.
//!
//! `stat` is `median`, `ci_low` and `ci_high` (the 95% interval, where the row has
//! one) and `p99` (per-call rows with the samples a p99 needs). It is not called
//! `quantile`: that label belongs to summaries, and these are gauges of stored
//! figures (`promtool check metrics` holds exports to that). `kind` says what made the
//! run (`measure`, `observe`, `trace`, `sim`), so a simulated figure is never read as
//! a measured one. Rows that name a process (`trace.task`, by command and PID) are
//! left out: a PID in a label makes a new series at every run.
//!
//! Figures of other units (shares, fitted slopes) are left out: they have no base unit
//! a dashboard could sum or compare. Label values are escaped as the format requires.

use std::fmt::Write;

use super::{ExportError, Exporter, Runs};
use crate::model::{ResultRow, RunDocument};

pub const EXPORTER: Exporter = Exporter {
    name: "prometheus",
    flag: "export-prometheus",
    help: "A node_exporter textfile of one run (medians in seconds)",
    file_help: "Also write the run as a node_exporter textfile to FILE (replaced atomically, as the textfile collector needs)",
    render,
};

/// One run only: a textfile holds one value of each series.
fn render(runs: Runs) -> Result<String, ExportError> {
    match runs {
        [(doc, _)] => Ok(to_textfile(doc)),
        _ => Err(ExportError::OneRunOnly),
    }
}

/// Escapes a label value: backslash, double quote and line feed.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A run start (RFC 3339, UTC) as Unix seconds.
fn unix_seconds(rfc3339: &str) -> Option<f64> {
    humantime::parse_rfc3339(rfc3339)
        .or_else(|_| humantime::parse_rfc3339_weak(rfc3339))
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs_f64())
}

/// The values a row exports, by `stat`.
fn stats_of(r: &ResultRow) -> Vec<(&'static str, f64)> {
    let mut out = vec![("median", r.median)];
    if let Some((lo, hi)) = r.interval() {
        out.extend([("ci_low", lo), ("ci_high", hi)]);
    }
    if let Some(p) = r.percentiles.as_ref().filter(|_| r.n >= crate::report::table::P99_MIN_SAMPLES) {
        out.push(("p99", p.p99));
    }
    out
}

/// One metric family of figures: each row's stats times `scale`, labelled by
/// benchmark, variant, method and kind (and unit when `with_unit`).
fn family(o: &mut String, name: &str, help: &str, rows: &[&ResultRow], kind: &str, scale: f64, with_unit: bool) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} gauge");
    for r in rows {
        let unit = if with_unit { format!(",unit=\"{}\"", label(r.unit.as_str())) } else { String::new() };
        for (stat, v) in stats_of(r) {
            let _ = writeln!(
                o,
                "{name}{{benchmark=\"{}\",variant=\"{}\",method=\"{}\",kind=\"{kind}\"{unit},stat=\"{stat}\"}} {:e}",
                label(&r.benchmark),
                label(&r.variant_label()),
                r.method.as_str(),
                v * scale
            );
        }
    }
}

/// The textfile for one run.
pub fn to_textfile(doc: &RunDocument) -> String {
    let mut o = String::new();
    let kind = doc.run.kind.as_str();
    let m = &doc.machine;
    let _ = writeln!(o, "# HELP oscost_info The oscost run these metrics come from, and its machine.");
    let _ = writeln!(o, "# TYPE oscost_info gauge");
    let _ = writeln!(
        o,
        "oscost_info{{version=\"{}\",commit=\"{}\",host=\"{}\",kernel=\"{}\",cpu=\"{}\",virtualization=\"{}\",run=\"{}\",kind=\"{kind}\"}} 1",
        label(&m.tool_version),
        label(&m.git_commit),
        label(&m.hostname),
        label(&m.kernel_release),
        label(&m.cpu_model),
        label(&m.virtualization),
        doc.run.id
    );
    if let Some(t) = unix_seconds(&doc.run.started_at) {
        let _ = writeln!(o, "# HELP oscost_run_timestamp_seconds When the run started, as Unix time.");
        let _ = writeln!(o, "# TYPE oscost_run_timestamp_seconds gauge");
        let _ = writeln!(o, "oscost_run_timestamp_seconds {t}");
    }
    let exported: Vec<&ResultRow> = doc.results.iter().filter(|r| !crate::trace::system::names_a_process(r)).collect();
    let time: Vec<_> = exported.iter().copied().filter(|r| r.unit.is_time()).collect();
    let help = "An oscost figure in seconds: its median, 95% interval and p99 (stat).";
    family(&mut o, "oscost_benchmark_seconds", help, &time, kind, 1e-9, false);
    let rates: Vec<_> = exported.iter().copied().filter(|r| r.unit.is_rate()).collect();
    let help = "An oscost rate per second: its median, 95% interval and p99 (stat).";
    family(&mut o, "oscost_benchmark_per_second", help, &rates, kind, 1.0, true);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_times_are_unix_seconds() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(unix_seconds("1970-01-01T00:01:40Z"), Some(100.0));
        assert_eq!(unix_seconds("not a date"), None);
    }
}
