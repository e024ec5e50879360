//! Exports (JSON, CSV, Markdown) and the validation of imported JSON. Pure functions:
//! text in, data out, or data in, text out.

use serde::{Deserialize, Serialize};

use crate::model::Skipped;
use crate::model::{ResultRow, RunDocument, RunStatus, SCHEMA_VERSION};

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

/// Takes every row's `histogram` out of one exported run (an import's first step for
/// each run): the blobs by row, their samples counted (from the histograms, none
/// expanded) against the run's budget, so that a few kilobytes claiming millions of
/// samples are refused before anything is allocated for them.
fn take_histograms(run: &mut serde_json::Value) -> Result<Vec<(usize, Vec<u8>)>, RunProblem> {
    use base64::Engine;
    let mut budget = crate::histo::SampleBudget::default();
    let mut blobs = Vec::new();
    let rows = run.get_mut("results").and_then(|r| r.as_array_mut()).into_iter().flatten();
    for (i, row) in rows.enumerate() {
        let Some(obj) = row.as_object_mut() else { continue };
        let at = |problem: HistogramProblem| RunProblem::Histogram { row: i, problem };
        if let Some(samples) = obj.get("samples").and_then(|s| s.as_array()) {
            budget.take(samples.len() as u64).map_err(|e| at(e.into()))?;
        }
        let Some(h) = obj.remove("histogram") else { continue };
        let text = h.as_str().ok_or_else(|| at(HistogramProblem::NotAString))?;
        if text.len() > MAX_SAMPLES {
            return Err(at(HistogramProblem::TooLong { bytes: text.len() }));
        }
        let blob = base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| at(e.into()))?;
        let n = crate::histo::count(&blob).map_err(|e| at(e.into()))?;
        budget.take(n).map_err(|e| at(e.into()))?;
        blobs.push((i, blob));
    }
    Ok(blobs)
}

/// Puts the samples of the histograms [`take_histograms`] took back in their rows.
fn expand_histograms(run: &mut ExportedRun, blobs: Vec<(usize, Vec<u8>)>) -> Result<(), RunProblem> {
    for (i, blob) in blobs {
        let at = |problem: HistogramProblem| RunProblem::Histogram { row: i, problem };
        let row = run.doc.results.get_mut(i).ok_or(at(HistogramProblem::NoSuchRow))?;
        if !row.samples.is_empty() {
            return Err(at(HistogramProblem::BothGiven));
        }
        row.samples = crate::histo::decode(&blob).map_err(|e| at(e.into()))?.concat();
    }
    Ok(())
}

/// Bounds on what an import may contain, so hostile input cannot exhaust the machine.
const MAX_RUNS: usize = 10_000;
const MAX_ROWS: usize = 100_000;
const MAX_SAMPLES: usize = crate::histo::MAX_SAMPLES;
const MAX_TEXT: usize = 64 * 1024;

/// Why an export file is refused; nothing of it is imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("not an oscost export: {0}")]
    NotAnExport(#[source] serde_json::Error),
    #[error("not an oscost export: no schema_version")]
    NoVersion,
    #[error("export schema version {0} is not {SCHEMA_VERSION}, the one this oscost reads")]
    Version(u32),
    #[error("more than {MAX_RUNS} runs in one file")]
    TooManyRuns,
    #[error("more than {MAX_ROWS} results in one file")]
    TooManyRows,
    /// The run's place in the file (from 0) and what is wrong with it.
    #[error("run {run}: {problem}")]
    Run { run: usize, problem: RunProblem },
}

/// Why whoever takes the runs read refused one (a store that could not write it).
pub type Refusal = Box<dyn std::error::Error + Send + Sync>;

/// What is wrong with one exported run.
#[derive(Debug, thiserror::Error)]
pub enum RunProblem {
    #[error("not an oscost run: {0}")]
    NotARun(#[source] serde_json::Error),
    #[error("schema version {0} is not {SCHEMA_VERSION}")]
    Version(u32),
    #[error("status \"running\": a run still being measured cannot be imported (export it once it has finished)")]
    StillRunning,
    /// The UUID as given, cut to 40 characters.
    #[error("UUID {0:?} is not a UUID like 67e55044-10b1-426f-9247-bb680e5fe0c8")]
    Uuid(String),
    #[error("{what} {shown:?} is not an RFC 3339 UTC time like 2026-11-24T01:02:03Z ({source})")]
    Time { what: &'static str, shown: String, source: humantime::TimestampError },
    #[error(transparent)]
    SaveName(#[from] crate::model::SaveNameError),
    #[error(transparent)]
    TooLong(#[from] TooLong),
    #[error("the machine fingerprint is too large")]
    Machine,
    #[error("result {row}: {problem}")]
    Histogram { row: usize, problem: HistogramProblem },
    /// The row's place in the run, its benchmark id (cut to 60 characters) and what is wrong.
    #[error("result {row} ({benchmark:?}): {problem}")]
    Row { row: usize, benchmark: String, problem: RowProblem },
    #[error("{0}")]
    Refused(Refusal),
}

/// A text field longer than an import takes.
#[derive(Debug, thiserror::Error)]
#[error("{what} is {len} bytes long (at most {MAX_TEXT})")]
pub struct TooLong {
    pub what: &'static str,
    pub len: usize,
}

/// What is wrong with a row's histogram.
#[derive(Debug, thiserror::Error)]
pub enum HistogramProblem {
    #[error(transparent)]
    Histogram(#[from] crate::histo::HistoError),
    #[error("the histogram is not a string")]
    NotAString,
    #[error("a histogram of {bytes} bytes (at most {MAX_SAMPLES})")]
    TooLong { bytes: usize },
    #[error("histogram: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("no such row")]
    NoSuchRow,
    #[error("both samples and a histogram are given")]
    BothGiven,
}

/// What is wrong with one result row.
#[derive(Debug, thiserror::Error)]
pub enum RowProblem {
    #[error("benchmark ids are short lowercase names like syscall.getppid")]
    BadId,
    #[error("no such benchmark in this oscost")]
    UnknownBenchmark,
    #[error(transparent)]
    TooLong(#[from] TooLong),
    #[error("{0} samples (at most {MAX_SAMPLES})")]
    TooManySamples(usize),
    #[error("n is 0: a figure of no samples")]
    NoSamples,
    #[error("n is {n} but {samples} samples are given")]
    CountMismatch { n: usize, samples: usize },
    #[error("a sample is not a finite number")]
    NotFinite,
    #[error("its summary is not finite")]
    SummaryNotFinite,
    #[error("min exceeds the median")]
    MinAboveMedian,
    #[error("a standard deviation below zero")]
    NegativeStddev,
    #[error("the interval's low end exceeds its high end")]
    Interval,
    #[error("its rounds hold {in_rounds} samples but {samples} are given")]
    RoundsMismatch { in_rounds: usize, samples: usize },
    #[error("{0} rounds (at most {MAX_SAMPLES})")]
    TooManyRounds(usize),
}

fn check_text(what: &'static str, s: &str) -> Result<(), TooLong> {
    if s.len() > MAX_TEXT {
        return Err(TooLong { what, len: s.len() });
    }
    Ok(())
}

/// A row's figures: consistent with each other and with its samples.
fn check_figures(r: &ResultRow) -> Result<(), RowProblem> {
    if r.n == 0 {
        return Err(RowProblem::NoSamples);
    }
    if !r.samples.is_empty() && r.samples.len() != r.n {
        return Err(RowProblem::CountMismatch { n: r.n, samples: r.samples.len() });
    }
    if r.samples.iter().any(|x| !x.is_finite()) {
        return Err(RowProblem::NotFinite);
    }
    if !(r.median.is_finite() && r.min.is_finite() && r.mean.is_finite()) {
        return Err(RowProblem::SummaryNotFinite);
    }
    if r.min > r.median {
        return Err(RowProblem::MinAboveMedian);
    }
    if r.stddev.is_nan() || r.stddev < 0.0 {
        return Err(RowProblem::NegativeStddev);
    }
    if r.ci_low > r.ci_high {
        return Err(RowProblem::Interval);
    }
    let in_rounds: usize = r.rounds.iter().map(|x| x.samples).sum();
    if !r.rounds.is_empty() && !r.samples.is_empty() && in_rounds != r.samples.len() {
        return Err(RowProblem::RoundsMismatch { in_rounds, samples: r.samples.len() });
    }
    if r.rounds.len() > MAX_SAMPLES {
        return Err(RowProblem::TooManyRounds(r.rounds.len()));
    }
    Ok(())
}

fn check_row(i: usize, r: &ResultRow, known: &dyn Fn(&str) -> bool) -> Result<(), RunProblem> {
    let at = |problem: RowProblem| RunProblem::Row {
        row: i,
        benchmark: r.benchmark.chars().take(60).collect::<String>(),
        problem,
    };
    let valid_id = !r.benchmark.is_empty()
        && r.benchmark.len() <= 64
        && r.benchmark.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '_');
    if !valid_id {
        return Err(at(RowProblem::BadId));
    }
    if !known(&r.benchmark) {
        return Err(at(RowProblem::UnknownBenchmark));
    }
    check_text("unit", &r.unit).map_err(|e| at(e.into()))?;
    let params = serde_json::to_string(&r.params).unwrap_or_default();
    check_text("params", &params).map_err(|e| at(e.into()))?;
    for f in &r.flags {
        check_text("flag reason", &f.reason).map_err(|e| at(e.into()))?;
    }
    if r.samples.len() > MAX_SAMPLES {
        return Err(at(RowProblem::TooManySamples(r.samples.len())));
    }
    check_figures(r).map_err(at)
}

/// A run UUID as oscost writes them: 36 characters, hyphenated, lowercase hex.
fn check_uuid(text: &str) -> Result<(), RunProblem> {
    match uuid::Uuid::try_parse(text) {
        Ok(u) if u.hyphenated().to_string() == text => Ok(()),
        _ => Err(RunProblem::Uuid(text.chars().take(40).collect())),
    }
}

/// A time as oscost writes them: RFC 3339 in UTC, to the second ("2026-11-24T01:02:03Z"),
/// a real date.
fn check_time(what: &'static str, text: &str) -> Result<(), RunProblem> {
    humantime::parse_rfc3339(text).map(drop).map_err(|source| RunProblem::Time {
        what,
        shown: text.chars().take(40).collect(),
        source,
    })
}

/// Parses and validates an export; any problem rejects the whole file. `known` says
/// which benchmark ids this oscost has (a row of another is refused).
pub fn from_json(text: &str, known: &dyn Fn(&str) -> bool) -> Result<Vec<(RunDocument, Vec<Skipped>)>, ImportError> {
    let mut runs = Vec::new();
    read_runs(text.as_bytes(), known, &mut |doc, skipped| {
        runs.push((doc, skipped));
        Ok(())
    })?;
    Ok(runs)
}

/// Reads an export run by run: each is decoded, validated and handed to `take` as soon
/// as it is read, so memory holds one run (its samples expanded) whatever the file's
/// size. Any problem, or a refusal by `take`, stops the reading with its message; the
/// file's own schema version, which may come after its runs, is checked at the end.
pub fn read_runs(
    reader: impl std::io::Read,
    known: &dyn Fn(&str) -> bool,
    take: &mut dyn FnMut(RunDocument, Vec<Skipped>) -> Result<(), Refusal>,
) -> Result<usize, ImportError> {
    let mut reading = Reading { known, take, runs: 0, rows: 0, version: None, failure: None };
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(reader));
    let parsed = serde::Deserializer::deserialize_map(&mut de, &mut reading).and_then(|()| de.end());
    if let Some(failure) = reading.failure {
        return Err(failure);
    }
    parsed.map_err(ImportError::NotAnExport)?;
    match reading.version {
        Some(SCHEMA_VERSION) => Ok(reading.runs),
        Some(v) => Err(ImportError::Version(v)),
        None => Err(ImportError::NoVersion),
    }
}

/// The state of one export's reading (see [`read_runs`]).
struct Reading<'a> {
    known: &'a dyn Fn(&str) -> bool,
    take: &'a mut dyn FnMut(RunDocument, Vec<Skipped>) -> Result<(), Refusal>,
    runs: usize,
    rows: usize,
    version: Option<u32>,
    /// The problem that stopped the reading, as it is to be shown (serde's own error
    /// would add a position in the file to it).
    failure: Option<ImportError>,
}

impl Reading<'_> {
    /// One exported run, from its JSON to `take`.
    fn run(&mut self, mut value: serde_json::Value) -> Result<(), ImportError> {
        let k = self.runs;
        let where_ = |problem: RunProblem| ImportError::Run { run: k, problem };
        self.runs += 1;
        if self.runs > MAX_RUNS {
            return Err(ImportError::TooManyRuns);
        }
        let blobs = take_histograms(&mut value).map_err(where_)?;
        let mut run: ExportedRun = serde_json::from_value(value).map_err(|e| where_(RunProblem::NotARun(e)))?;
        expand_histograms(&mut run, blobs).map_err(where_)?;
        self.rows += run.doc.results.len();
        if self.rows > MAX_ROWS {
            return Err(ImportError::TooManyRows);
        }
        check_run(&run, self.known).map_err(where_)?;
        (self.take)(run.doc, run.skipped).map_err(|e| where_(RunProblem::Refused(e)))
    }

    fn fail<E: serde::de::Error>(&mut self, failure: ImportError) -> E {
        let e = E::custom(&failure);
        self.failure = Some(failure);
        e
    }
}

impl<'de> serde::de::Visitor<'de> for &mut Reading<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an oscost export (an object with schema_version and runs)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "schema_version" => self.version = Some(map.next_value()?),
                "runs" => map.next_value_seed(RunList(&mut *self))?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `runs` array of an export, read element by element.
struct RunList<'r, 'a>(&'r mut Reading<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for RunList<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for RunList<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of runs")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(value) = seq.next_element::<serde_json::Value>()? {
            if let Err(failure) = self.0.run(value) {
                return Err(self.0.fail(failure));
            }
        }
        Ok(())
    }
}

/// Every export format: what `export --format` and `run --export-*` write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
    /// A Markdown table a run, for a README or a paper.
    Markdown,
    /// A node_exporter textfile of one run (medians in seconds).
    Prometheus,
}

/// Why runs could not be exported in a format.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("--format prometheus writes one run: name one (or none: the latest)")]
    OneRunOnly,
}

/// Every exporter behind one signature: runs (with their skips) in, text out. A new
/// format is a variant above, its arm here, and its own renderer.
pub fn render(format: ExportFormat, runs: &[(RunDocument, Vec<Skipped>)]) -> Result<String, ExportError> {
    Ok(match format {
        ExportFormat::Json => to_json(runs),
        ExportFormat::Csv => to_csv(&runs.iter().map(|d| d.0.clone()).collect::<Vec<_>>()),
        ExportFormat::Markdown => runs.iter().map(|(d, _)| to_markdown(d)).collect::<Vec<_>>().join("\n"),
        ExportFormat::Prometheus => match runs {
            [(doc, _)] => super::prometheus::to_textfile(doc),
            _ => return Err(ExportError::OneRunOnly),
        },
    })
}

/// One run's checks (its rows and skips included), before it is imported.
fn check_run(r: &ExportedRun, known: &dyn Fn(&str) -> bool) -> Result<(), RunProblem> {
    if r.doc.schema_version != SCHEMA_VERSION {
        return Err(RunProblem::Version(r.doc.schema_version));
    }
    if r.doc.run.status == RunStatus::Running {
        return Err(RunProblem::StillRunning);
    }
    if let Some(uuid) = &r.doc.run.uuid {
        check_uuid(uuid)?;
    }
    check_time("start time", &r.doc.run.started_at)?;
    if let Some(name) = &r.doc.run.save_name {
        crate::model::check_save_name(name)?;
    }
    for (what, s) in [
        ("command line", &r.doc.run.command_line),
        ("start time", &r.doc.run.started_at),
        ("host name", &r.doc.machine.hostname),
    ] {
        check_text(what, s)?;
    }
    let machine = serde_json::to_string(&r.doc.machine).unwrap_or_default();
    if machine.len() > 16 * MAX_TEXT {
        return Err(RunProblem::Machine);
    }
    for (i, row) in r.doc.results.iter().enumerate() {
        check_row(i, row, known)?;
    }
    for s in &r.skipped {
        for (what, t) in [
            ("skipped benchmark", s.benchmark.as_str()),
            ("skipped variant", s.params.as_str()),
            ("skip reason", s.reason.as_str()),
        ] {
            check_text(what, t)?;
        }
    }
    Ok(())
}

/// A text field of the CSV: one a spreadsheet would read as a formula (= + - @, or
/// a leading tab or carriage return) gets a leading apostrophe, the usual
/// neutraliser; control characters (a terminal's escape sequences) and bidirectional
/// overrides become visible replacements, as everywhere oscost prints stored text. Numbers are written by `num` and never pass through here.
fn csv_text(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{}", super::plain(s))
    } else {
        super::plain(s).into_owned()
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
                csv_text(&r.unit),
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

/// A Markdown table cell: printable, pipes escaped, nothing that starts markup
/// a reader did not write (HTML tags).
fn md_cell(s: &str) -> String {
    super::plain(s).replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;")
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
        let f = |x: f64| super::fmt_value(x, &r.unit);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flag, FlagCode, Method, RunInfo};

    fn doc() -> RunDocument {
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

    fn from_json_any(text: &str) -> Result<Vec<(RunDocument, Vec<Skipped>)>, ImportError> {
        from_json(text, &|_| true)
    }

    /// Hardening, defect 7: import took a run still `running`, empty or huge UUIDs and
    /// dates like 9999-99-99.
    #[test]
    fn import_refuses_a_running_run_a_bad_uuid_and_an_impossible_date() {
        let refused = |change: &dyn Fn(&mut RunDocument)| {
            let mut d = doc();
            change(&mut d);
            from_json_any(&to_json(&[(d, Vec::new())])).unwrap_err().to_string()
        };
        assert!(from_json_any(&to_json(&[(doc(), Vec::new())])).is_ok());
        assert!(refused(&|d| d.run.status = RunStatus::Running).contains("still being measured"));
        assert!(refused(&|d| d.run.uuid = Some(String::new())).contains("not a UUID"));
        assert!(refused(&|d| d.run.uuid = Some("a".repeat(100_000))).contains("not a UUID"));
        assert!(refused(&|d| d.run.uuid = Some("67E55044-10B1-426F-9247-BB680E5FE0C8".into())).contains("not a UUID"));
        assert!(refused(&|d| d.run.started_at = "9999-99-99".into()).contains("RFC 3339"));
        assert!(refused(&|d| d.run.started_at = "2026-02-30T00:00:00Z".into()).contains("RFC 3339"));
        let mut good = doc();
        good.run.uuid = Some("67e55044-10b1-426f-9247-bb680e5fe0c8".into());
        assert!(from_json_any(&to_json(&[(good, Vec::new())])).is_ok());
    }

    /// Hardening, defect 7: CSV printed raw ESC and U+202E (a terminal obeys the first,
    /// a reader is misled by the second).
    #[test]
    fn csv_shows_control_characters_and_bidi_overrides_as_replacements() {
        let mut d = doc();
        d.machine.hostname = "host\u{1b}[2J\u{202e}evil".into();
        let csv = to_csv(&[d]);
        assert!(!csv.contains('\u{1b}') && !csv.contains('\u{202e}'), "{csv:?}");
        assert!(csv.contains("host\u{fffd}[2J\u{fffd}evil"));
    }

    #[test]
    fn json_round_trip_is_exact() {
        let runs =
            vec![(doc(), vec![Skipped { benchmark: "ctx.pipe".into(), params: "p".into(), reason: "r".into() }])];
        let back = from_json_any(&to_json(&runs)).unwrap();
        assert_eq!(back[0].0.results, runs[0].0.results);
        assert_eq!(back[0].1, runs[0].1);
        assert_eq!(back[0].0.machine, runs[0].0.machine);
    }

    #[test]
    fn hostile_or_malformed_input_is_rejected() {
        assert!(from_json_any("{").unwrap_err().to_string().contains("not an oscost export"));
        assert!(
            from_json_any(r#"{"schema_version": 99, "runs": []}"#).unwrap_err().to_string().contains("schema version")
        );
        let mut d = doc();
        d.results[0].benchmark = "<script>alert(1)</script>".into();
        assert!(from_json_any(&to_json(&[(d, vec![])])).unwrap_err().to_string().contains("benchmark ids"));
        let mut d = doc();
        d.run.command_line = "x".repeat(MAX_TEXT + 1);
        assert!(from_json_any(&to_json(&[(d, vec![])])).is_err());
        // Per-call samples travel as a histogram; a damaged one, or samples that are
        // not numbers, are refused.
        let good: serde_json::Value = serde_json::from_str(&to_json(&[(doc(), vec![])])).unwrap();
        assert!(good["runs"][0]["results"][0]["histogram"].is_string());
        let mut bad = good.clone();
        bad["runs"][0]["results"][0]["histogram"] = "SERSMQ==".into();
        assert!(from_json_any(&bad.to_string()).unwrap_err().to_string().contains("histogram"));
        let mut bad = good.clone();
        bad["runs"][0]["results"][0]["histogram"] = "not base64!".into();
        assert!(from_json_any(&bad.to_string()).unwrap_err().to_string().contains("histogram"));
        let mut bad = good;
        let row = bad["runs"][0]["results"][0].as_object_mut().unwrap();
        row.remove("histogram");
        row.insert("samples".into(), serde_json::json!([1.0, "x", 3.0]));
        assert!(from_json_any(&bad.to_string()).is_err());
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

    /// Each rule of the validator, one mutation of a good document each.
    #[test]
    fn every_inconsistent_run_is_refused_with_its_reason() {
        type Mutation = fn(&mut RunDocument);
        let cases: [(Mutation, &str); 9] = [
            (|d| d.results[0].n = 7, "n is 7 but 3 samples"),
            (|d| d.results[0].n = 0, "n is 0"),
            (
                |d| {
                    d.results[0].rounds = vec![crate::model::Round { samples: 2, at: None, counts: Default::default() }]
                },
                "rounds hold 2",
            ),
            (|d| d.results[0].stddev = -1.0, "standard deviation"),
            (|d| (d.results[0].ci_low, d.results[0].ci_high) = (5.0, 1.0), "low end"),
            (|d| d.results[0].min = 99.0, "min exceeds"),
            (|d| d.schema_version = 7, "schema version 7"),
            (|d| d.run.save_name = Some("x".repeat(5 << 20)), "at most"),
            (|d| d.run.save_name = Some("latest".into()), "latest"),
        ];
        for (mutate, expect) in cases {
            let mut d = doc();
            mutate(&mut d);
            let e = from_json_any(&to_json(&[(d, vec![])])).unwrap_err().to_string();
            assert!(e.contains(expect), "{expect}: {e}");
        }
        // A status no run can have (the type holds none such: the text is changed).
        let good = to_json(&[(doc(), vec![])]);
        let fine = good.replace("\"status\":\"complete\"", "\"status\":\"fine\"");
        assert_ne!(fine, good);
        let e = from_json_any(&fine).unwrap_err().to_string();
        assert!(e.contains("status"), "status: {e}");
        let known = |id: &str| id == "syscall.getppid";
        assert!(from_json(&to_json(&[(doc(), vec![])]), &known).is_ok());
        let mut d = doc();
        d.results[0].benchmark = "syscall.getpid2".into();
        assert!(from_json(&to_json(&[(d, vec![])]), &known).unwrap_err().to_string().contains("no such benchmark"));
        let big =
            Skipped { benchmark: "x".repeat(MAX_TEXT + 1).into(), params: Default::default(), reason: String::new() };
        assert!(from_json_any(&to_json(&[(doc(), vec![big])])).unwrap_err().to_string().contains("skipped benchmark"));
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
}
