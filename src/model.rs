//! The shapes every part of oscost agrees on: a result row, its validity flags, and a
//! run with its machine. The JSON output, the store and the reports all read these.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::stats::{Percentiles, Summary};

/// Version of the JSON layout (`--json`, exports).
pub const SCHEMA_VERSION: u32 = 1;

/// How a figure was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Many calls timed as one interval, divided by their number; samples are batch means.
    Batch,
    /// Each call bracketed by the cycle counter; samples are single calls.
    PerCall,
    /// A rate or total over a fixed-time workload (ops per second, shares).
    Workload,
    /// A least-squares fit over a sweep (slope per unit).
    Fit,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Batch => "batch",
            Method::PerCall => "per_call",
            Method::Workload => "workload",
            Method::Fit => "fit",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "batch" => Some(Method::Batch),
            "per_call" => Some(Method::PerCall),
            "workload" => Some(Method::Workload),
            "fit" => Some(Method::Fit),
            _ => None,
        }
    }
}

/// A validity flag: a short code and the reason, in words, that it was raised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flag {
    pub flag: String,
    pub reason: String,
}

impl Flag {
    pub fn new(flag: &str, reason: impl Into<String>) -> Self {
        Self { flag: flag.to_string(), reason: reason.into() }
    }
}

/// One figure: a benchmark under given parameters, measured by one method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    pub benchmark: String,
    pub params: BTreeMap<String, serde_json::Value>,
    pub method: Method,
    pub unit: String,
    /// Number of samples the statistics summarise.
    pub n: usize,
    /// Number of primitive operations timed in all (each sample may hold many).
    pub iterations: u64,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub percentiles: Option<Percentiles>,
    /// Kernel-observed counters over the timed region (switches, migrations, …).
    pub counts: BTreeMap<String, f64>,
    pub flags: Vec<Flag>,
    /// The raw samples, in `unit`. Kept in the store and in exports; left out of
    /// `--json` run output unless asked for, where they would dwarf the summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
}

impl ResultRow {
    /// A row summarising `samples` (already in `unit`). None for no usable samples.
    pub fn from_samples(
        benchmark: &str,
        method: Method,
        unit: &str,
        samples: Vec<f64>,
        iterations: u64,
    ) -> Option<Self> {
        let s: Summary = crate::stats::summarize(&samples)?;
        let percentiles = if method == Method::PerCall { crate::stats::percentiles(&samples) } else { None };
        let mut counts = BTreeMap::new();
        if s.outliers.total() > 0 {
            counts.insert("outliers_low".into(), (s.outliers.low_mild + s.outliers.low_severe) as f64);
            counts.insert("outliers_high".into(), (s.outliers.high_mild + s.outliers.high_severe) as f64);
        }
        Some(Self {
            benchmark: benchmark.to_string(),
            params: BTreeMap::new(),
            method,
            unit: unit.to_string(),
            n: s.n,
            iterations,
            min: s.min,
            median: s.median,
            mean: s.mean,
            stddev: s.stddev,
            ci_low: s.ci_low,
            ci_high: s.ci_high,
            percentiles,
            counts,
            flags: Vec::new(),
            samples,
        })
    }

    /// Adds a parameter.
    pub fn with_param(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.params.insert(key.to_string(), value.into());
        self
    }

    /// Raises a flag unless the same code is already raised.
    pub fn flag(&mut self, flag: Flag) {
        if !self.flags.iter().any(|f| f.flag == flag.flag) {
            self.flags.push(flag);
        }
    }

    pub fn has_flag(&self, code: &str) -> bool {
        self.flags.iter().any(|f| f.flag == code)
    }

    /// The parameters that tell variants apart, as one short string such as
    /// `mode=process placement=same_cpu` (bookkeeping parameters left out).
    pub fn variant_label(&self) -> String {
        self.params
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "batch_size" | "path" | "statement"))
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A run: when, how it was invoked, on what machine, and what it measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub id: i64,
    /// RFC 3339 UTC start time.
    pub started_at: String,
    pub command_line: String,
    #[serde(default)]
    pub save_name: Option<String>,
    /// `complete`, `interrupted`, or `running`.
    pub status: String,
}

/// A whole run, as written by `--json` and by exports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunDocument {
    pub schema_version: u32,
    pub run: RunInfo,
    pub machine: Machine,
    pub results: Vec<ResultRow>,
}
