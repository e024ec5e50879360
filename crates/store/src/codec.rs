//! The one codec between a result row and the `results` table, for both backends.
//! Each column's name, position and encoding is written here once: a backend only
//! says how it reads a column of a type ([`Columns`]) and binds the values in the
//! order [`row_params!`] gives. Written twice by hand (SQLite and PostgreSQL), the 21
//! columns would let a column added to one be missed in the other.

use super::{HDR_FORMAT, StoreError, counts_json, json, load_samples, parse_json, stored_samples};
use oscost_figure::histo::SampleBudget;
use oscost_figure::model::{BenchId, Method, ResultRow};

/// The stored columns of a row, in order, after `run_id` and `seq`.
pub(crate) const COLUMNS: [&str; 19] = [
    "benchmark",
    "params_json",
    "method",
    "unit",
    "n",
    "iterations",
    "min",
    "median",
    "mean",
    "stddev",
    "ci_low",
    "ci_high",
    "percentiles_json",
    "counts_json",
    "flags_json",
    "samples",
    "rounds_json",
    "samples_format",
    "trace_json",
];

/// The insert statement, with the backend's placeholder for the n-th value (from 1):
/// `?1` for SQLite, `$1` for PostgreSQL.
pub(crate) fn insert_sql(placeholder: fn(usize) -> String) -> String {
    let values: Vec<String> = (1..=COLUMNS.len() + 2).map(placeholder).collect();
    format!("INSERT INTO results (run_id, seq, {}) VALUES ({})", COLUMNS.join(", "), values.join(", "))
}

/// The select statement for one run's rows in order, the run id bound to
/// `run_placeholder`; `replace` swaps a column for an expression (an older SQLite
/// schema without it: `("rounds_json", "NULL")`).
pub(crate) fn select_sql(run_placeholder: &str, replace: &[(&str, &str)]) -> String {
    let columns: Vec<&str> =
        COLUMNS.iter().map(|c| replace.iter().find(|(name, _)| name == c).map_or(*c, |(_, expr)| *expr)).collect();
    format!("SELECT {} FROM results WHERE run_id = {run_placeholder} ORDER BY seq", columns.join(", "))
}

/// A row as stored: one value per column of [`COLUMNS`].
pub(crate) struct StoredRow {
    pub benchmark: BenchId,
    pub params_json: String,
    pub method: Method,
    pub unit: String,
    pub n: i64,
    pub iterations: i64,
    /// min, median, mean, stddev, ci_low, ci_high.
    pub figures: [f64; 6],
    pub percentiles_json: Option<String>,
    pub counts_json: String,
    pub flags_json: String,
    pub samples: Vec<u8>,
    pub rounds_json: Option<String>,
    pub samples_format: &'static str,
    pub trace_json: Option<String>,
}

/// The values of a stored row with its run and sequence number, as an array of
/// references in [`COLUMNS`]' order (after `run_id`, `seq`); the backend gives the
/// element type (`&dyn rusqlite::ToSql`, `&(dyn postgres::types::ToSql + Sync)`).
macro_rules! row_params {
    ($run_id:expr, $seq:expr, $c:expr) => {
        [
            $run_id,
            $seq,
            &$c.benchmark.as_str(),
            &$c.params_json,
            &$c.method.as_str(),
            &$c.unit,
            &$c.n,
            &$c.iterations,
            &$c.figures[0],
            &$c.figures[1],
            &$c.figures[2],
            &$c.figures[3],
            &$c.figures[4],
            &$c.figures[5],
            &$c.percentiles_json,
            &$c.counts_json,
            &$c.flags_json,
            &$c.samples,
            &$c.rounds_json,
            &$c.samples_format,
            &$c.trace_json,
        ]
    };
}
pub(crate) use row_params;

impl StoredRow {
    /// A row as it is stored.
    pub fn encode(r: &ResultRow) -> Result<StoredRow, StoreError> {
        let (samples, samples_format) = stored_samples(r)?;
        Ok(StoredRow {
            benchmark: r.benchmark.clone(),
            params_json: json(&r.params),
            method: r.method,
            unit: r.unit.to_string(),
            n: r.n as i64,
            iterations: r.iterations as i64,
            figures: [r.min, r.median, r.mean, r.stddev, r.ci_low, r.ci_high],
            percentiles_json: r.percentiles.as_ref().map(json),
            counts_json: counts_json(&r.counts),
            flags_json: json(&r.flags),
            samples,
            rounds_json: (!r.rounds.is_empty()).then(|| json(&r.rounds)),
            samples_format,
            trace_json: r.trace.as_ref().map(json),
        })
    }

    /// A stored row read back through a backend's columns, in [`COLUMNS`]' order. Its
    /// samples are counted, and taken from `budget` (shared by the rows of one load),
    /// before any is expanded: a row of crafted counts is refused, not decoded.
    pub fn decode<C: Columns>(c: &C, budget: &mut SampleBudget) -> Result<ResultRow, StoreError> {
        let method: String = c.text(2)?;
        let figure = |i: usize| c.real(6 + i).map(|x| x.unwrap_or(f64::NAN));
        let format: Option<String> = c.opt_text(17)?;
        let benchmark: String = c.text(0)?;
        let blob = c.blob(15)?;
        let format = format.as_deref().unwrap_or("f64");
        let refused = |e: oscost_figure::histo::HistoError| {
            let shown: String = benchmark.chars().take(64).collect();
            StoreError::Malformed(format!("the samples of a row of {shown:?}: {e}"))
        };
        let claimed = if format == HDR_FORMAT {
            oscost_figure::histo::count(&blob).map_err(refused)?
        } else {
            blob.len() as u64 / 8
        };
        budget.take(claimed).map_err(refused)?;
        Ok(ResultRow {
            benchmark: BenchId::stored(benchmark),
            params: parse_json("params", &c.text(1)?)?,
            method: Method::parse(&method).ok_or_else(|| StoreError::Malformed(format!("method {method:?}")))?,
            unit: c.text(3)?.into(),
            n: c.int(4)? as usize,
            iterations: c.int(5)? as u64,
            min: figure(0)?,
            median: figure(1)?,
            mean: figure(2)?,
            stddev: figure(3)?,
            ci_low: figure(4)?,
            ci_high: figure(5)?,
            percentiles: c.opt_text(12)?.map(|p| parse_json("percentiles", &p)).transpose()?,
            counts: oscost_figure::model::finite_counts::deserialize(&mut serde_json::Deserializer::from_str(
                &c.text(13)?,
            ))
            .map_err(|e| StoreError::Malformed(format!("counts: {e}")))?,
            flags: parse_json("flags", &c.text(14)?)?,
            samples: load_samples(&blob, format)?,
            rounds: c.opt_text(16)?.map(|t| parse_json("rounds", &t)).transpose()?.unwrap_or_default(),
            trace: c.opt_text(18)?.map(|t| parse_json("trace", &t)).transpose()?,
        })
    }
}

/// How a backend reads the column at an index of a fetched row.
pub(crate) trait Columns {
    fn text(&self, i: usize) -> Result<String, StoreError>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError>;
    fn int(&self, i: usize) -> Result<i64, StoreError>;
    /// A real that may be NULL (SQLite stores NaN as NULL).
    fn real(&self, i: usize) -> Result<Option<f64>, StoreError>;
    fn blob(&self, i: usize) -> Result<Vec<u8>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_name_every_column_once_in_order() {
        let sql = insert_sql(|i| format!("${i}"));
        assert!(sql.starts_with("INSERT INTO results (run_id, seq, benchmark, params_json,"), "{sql}");
        assert!(sql.ends_with("$20, $21)"), "{sql}");
        let select = select_sql("?1", &[("rounds_json", "NULL")]);
        assert!(
            select.contains("samples, NULL, samples_format, trace_json FROM results WHERE run_id = ?1"),
            "{select}"
        );
    }
}
