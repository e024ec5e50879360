//! Exports: runs out as text, one exporter a file, each a pure function from runs (with
//! their skips) to text. `export --format NAME` and `run --export-NAME FILE` are read
//! from [`EXPORTERS`], so a new format is its file (an [`Exporter`] and its renderer)
//! and one line there. Reading an export back is `report::import`.

pub mod csv;
pub mod json;
pub mod markdown;
pub mod prometheus;

use crate::model::{RunDocument, Skipped};

/// Every export format: what `export --format` and `run --export-*` write, in the order
/// they are listed.
pub const EXPORTERS: &[Exporter] = &[json::EXPORTER, csv::EXPORTER, markdown::EXPORTER, prometheus::EXPORTER];

/// The runs an exporter writes, each with its skips.
pub type Runs<'a> = &'a [(RunDocument, Vec<Skipped>)];

/// One export format.
pub struct Exporter {
    /// Its name for `export --format`.
    pub name: &'static str,
    /// Its `run` flag, `export-` and the name (clap keeps an argument's id for the
    /// program's life, so it is written out, not made).
    pub flag: &'static str,
    /// What it writes, for `export --format`'s help (empty: the name says it).
    pub help: &'static str,
    /// The help of its `run --export-NAME FILE`.
    pub file_help: &'static str,
    /// Runs in, text out.
    pub render: fn(Runs) -> Result<String, ExportError>,
}

/// An export format as the command line names it: one of [`EXPORTERS`].
#[derive(Clone, Copy)]
pub struct ExportFormat(&'static Exporter);

impl ExportFormat {
    /// The format named `name`, if there is one.
    pub fn named(name: &str) -> Option<Self> {
        EXPORTERS.iter().find(|e| e.name == name).map(ExportFormat)
    }

    /// Every format, in [`EXPORTERS`]' order.
    pub fn all() -> impl Iterator<Item = Self> {
        EXPORTERS.iter().map(ExportFormat)
    }

    pub fn exporter(self) -> &'static Exporter {
        self.0
    }
}

impl PartialEq for ExportFormat {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for ExportFormat {}

impl std::fmt::Debug for ExportFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ExportFormat({})", self.0.name)
    }
}

impl std::fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl clap::ValueEnum for ExportFormat {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::LazyLock<Vec<ExportFormat>> = std::sync::LazyLock::new(|| ExportFormat::all().collect());
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.0.name);
        Some(if self.0.help.is_empty() { value } else { value.help(self.0.help) })
    }
}

/// Why runs could not be exported in a format.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("--format prometheus writes one run: name one (or none: the latest)")]
    OneRunOnly,
}

/// The runs in `format`.
pub fn render(format: ExportFormat, runs: Runs) -> Result<String, ExportError> {
    (format.0.render)(runs)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{ExportFormat, render};
    use crate::model::{Flag, FlagCode, Method, ResultRow, RunDocument, RunInfo, SCHEMA_VERSION};

    /// The runs in the format `name`, through the registry as the command line asks.
    fn exported(name: &str, docs: &[RunDocument]) -> String {
        let runs: Vec<_> = docs.iter().map(|d| (d.clone(), Vec::new())).collect();
        render(ExportFormat::named(name).expect("a registered format"), &runs).unwrap()
    }

    fn to_csv(docs: &[RunDocument]) -> String {
        exported("csv", docs)
    }

    fn to_markdown(d: &RunDocument) -> String {
        exported("markdown", std::slice::from_ref(d))
    }

    pub(crate) fn doc() -> RunDocument {
        let mut r = ResultRow::from_samples("syscall.getppid", Method::PerCall, "ns/call", vec![1.0, 2.0, 3.0], 3)
            .unwrap()
            .with_param("via", "raw");
        r.flag(Flag::new(FlagCode::Vdso, "a \"quoted\", reason | with pipe"));
        RunDocument {
            schema_version: SCHEMA_VERSION,
            run: RunInfo {
                id: 3,
                started_at: "2026-01-01T00:00:00Z".into(),
                command_line: "oscost run".into(),
                save_name: None,
                status: crate::model::RunStatus::Complete,
                uuid: None,
                kind: crate::model::RunKind::Measure,
            },
            machine: crate::machine::Machine::example(),
            results: vec![r],
        }
    }

    /// Raw ESC and U+202E in CSV would mislead: a terminal obeys the first, a reader is
    /// misled by the second.
    #[test]
    fn csv_shows_control_characters_and_bidi_overrides_as_replacements() {
        let mut d = doc();
        d.machine.hostname = "host\u{1b}[2J\u{202e}evil".into();
        let csv = to_csv(&[d]);
        assert!(!csv.contains('\u{1b}') && !csv.contains('\u{202e}'), "{csv:?}");
        assert!(csv.contains("host\u{fffd}[2J\u{fffd}evil"));
    }

    #[test]
    fn csv_and_markdown_escape_their_text() {
        let csv = to_csv(&[doc()]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[1].contains("\"{\"\"via\"\":\"\"raw\"\"}\""), "{}", lines[1]);
        assert_eq!(lines[0].split(',').count(), 22);
        let md = to_markdown(&doc());
        assert!(md.contains("| syscall.getppid | via=raw | per_call |"));
        assert_eq!(md.lines().filter(|l| l.starts_with('|')).count(), 3);
    }

    #[test]
    fn stored_text_cannot_become_a_formula_markup_or_a_terminal_command() {
        let mut d = doc();
        d.machine.hostname = "=HYPERLINK(\"http://x\")".into();
        d.machine.kernel_release = "@SUM(A1)".into();
        d.results[0].unit = "+1".into();
        d.results[0].median = -1.5;
        let csv = to_csv(&[d.clone()]);
        let row = csv.lines().nth(1).unwrap();
        assert!(row.contains(",\"'=HYPERLINK(\"\"http://x\"\")\",'@SUM(A1),"), "{row}");
        assert!(row.contains(",'+1,") && row.contains(",-1.5,"), "numbers keep their sign: {row}");
        d.machine.cpu_model = "evil\u{1b}[2J<img src=x>|\r\nfake".into();
        let md = to_markdown(&d);
        assert!(!md.contains('\u{1b}') && !md.contains('\r') && !md.contains("<img"), "{md}");
        assert_eq!(md.lines().count(), d.results.len() + 4, "no line break injected: {md}");
    }

    /// Each exporter's flag is `export-` and its name, and no two share a name.
    #[test]
    fn every_exporter_is_named_once_and_flagged_by_its_name() {
        let names: std::collections::BTreeSet<_> = super::EXPORTERS.iter().map(|e| e.name).collect();
        assert_eq!(names.len(), super::EXPORTERS.len());
        for e in super::EXPORTERS {
            assert_eq!(e.flag, format!("export-{}", e.name));
        }
    }
}
