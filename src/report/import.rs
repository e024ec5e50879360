//! The validation of an imported export (`oscost import`): every run of the file read
//! one at a time, bounded before anything is allocated for it, and checked whole before
//! any of it is handed on. Pure functions: text in, data out.
//!
//! Why apart from the exporters: an exporter writes what oscost stored and trusts it;
//! this reads what anyone wrote and trusts nothing.

pub use crate::exchange::{HistogramProblem, ImportError, Refusal, RowProblem, RunProblem, TooLong};
use crate::exchange::{MAX_ROWS, MAX_RUNS, MAX_SAMPLES, MAX_TEXT};
use crate::model::Skipped;
use crate::model::{ResultRow, RunDocument, RunStatus, SCHEMA_VERSION};
use crate::report::export::json::ExportedRun;

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
        benchmark: crate::key::BenchId::stored(r.benchmark.chars().take(60).collect::<String>()),
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
    check_text("unit", r.unit.as_str()).map_err(|e| at(e.into()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::json::to_json;
    use crate::report::export::tests::doc;

    fn from_json_any(text: &str) -> Result<Vec<(RunDocument, Vec<Skipped>)>, ImportError> {
        from_json(text, &|_| true)
    }

    /// A run still `running`, an empty or huge UUID and a date like 9999-99-99 are not
    /// runs to import.
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
}
