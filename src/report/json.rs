//! The JSON layout of `--json` (documented in docs/statistics.md): `schema_version`, `run`,
//! `machine`, `results`, plus `skipped`, and for a run with conditions `paired` (each
//! condition's figure against its baseline, `paired::PairedFigure`), and for a
//! `--precision` run `precision` (each row's judgement, `precision::RunJudgement`).

use serde::Serialize;

use crate::judge::paired::PairedFigure;
use crate::model::RunDocument;
use crate::model::Skipped;

#[derive(Serialize)]
struct WithSkipped<'a> {
    #[serde(flatten)]
    doc: &'a RunDocument,
    skipped: &'a [Skipped],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    paired: Vec<crate::judge::paired::PairedFigure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    precision: Option<&'a crate::judge::precision::RunJudgement>,
    /// Rows whose figure this machine's noise runs measured: their intervals with the
    /// spread between runs (the rows keep their own).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    between_runs: &'a [crate::judge::noise::RowBetween],
}

/// Renders a run as pretty JSON; raw samples only when `samples` is true; with a
/// `--precision` run's judgement of its rows where given, and its rows' intervals with
/// this machine's spread between runs (`between_runs`).
pub fn render_run(
    doc: &RunDocument,
    skipped: &[Skipped],
    samples: bool,
    paired: &[PairedFigure],
    (precision, between_runs): (Option<&crate::judge::precision::RunJudgement>, &[crate::judge::noise::RowBetween]),
) -> String {
    let paired = paired.to_vec();
    let stripped;
    let doc = if samples {
        doc
    } else {
        let mut d = doc.clone();
        for r in &mut d.results {
            r.samples.clear();
        }
        stripped = d;
        &stripped
    };
    serde_json::to_string_pretty(&WithSkipped { doc, skipped, paired, precision, between_runs })
        .expect("plain data serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Method, ResultRow, RunInfo};

    #[test]
    fn json_has_the_documented_fields() {
        let r = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", vec![1.0, 2.0], 2).unwrap();
        let doc = RunDocument {
            schema_version: 1,
            run: RunInfo {
                id: 7,
                started_at: "t".into(),
                command_line: "oscost run".into(),
                save_name: None,
                status: crate::model::RunStatus::Complete,
                uuid: None,
                kind: crate::model::RunKind::Measure,
            },
            machine: crate::machine::Machine::example(),
            results: vec![r],
        };
        let v: serde_json::Value = serde_json::from_str(&render_run(&doc, &[], false, &[], (None, &[]))).unwrap();
        for k in ["schema_version", "run", "machine", "results", "skipped"] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        let r0 = &v["results"][0];
        for k in [
            "benchmark",
            "params",
            "method",
            "unit",
            "n",
            "min",
            "median",
            "mean",
            "stddev",
            "ci_low",
            "ci_high",
            "percentiles",
            "counts",
            "flags",
        ] {
            assert!(r0.get(k).is_some(), "missing result field {k}");
        }
        assert!(r0.get("samples").is_none());
        let v: serde_json::Value = serde_json::from_str(&render_run(&doc, &[], true, &[], (None, &[]))).unwrap();
        assert_eq!(v["results"][0]["samples"].as_array().unwrap().len(), 2);
        assert!(v.get("between_runs").is_none(), "no noise runs, no widened intervals");
        let widened = crate::judge::noise::RowBetween {
            key: doc.results[0].key(),
            between: 0.02,
            pairs: 5,
            ci_low: 0.9,
            ci_high: 2.2,
        };
        let v: serde_json::Value =
            serde_json::from_str(&render_run(&doc, &[], false, &[], (None, std::slice::from_ref(&widened)))).unwrap();
        let w = &v["between_runs"][0];
        assert_eq!(
            (w["benchmark"].as_str(), w["pairs"].as_u64(), w["ci_low"].as_f64()),
            (Some("syscall.getppid"), Some(5), Some(0.9))
        );
        assert_eq!(v["results"][0]["ci_low"], r0["ci_low"], "the row keeps its own interval");
    }
}
