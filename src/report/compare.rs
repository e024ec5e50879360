//! Comparing two runs: for every figure both runs have, the ratio B/A of medians with a
//! bootstrap confidence interval from the stored raw samples, and a verdict given only
//! when the interval clears the noise threshold. Machines are shown side by side.

use serde::Serialize;

use crate::machine::Machine;
use crate::model::RunDocument;
use crate::stats;

/// Whether a bigger number is better, worse, or neither for a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
    Neutral,
}

pub fn direction(unit: &str) -> Direction {
    if unit.starts_with("ns") {
        Direction::LowerIsBetter
    } else if unit.ends_with("/s") {
        Direction::HigherIsBetter
    } else {
        Direction::Neutral
    }
}

/// Fixed seed: the same two runs always give the same intervals.
const BOOTSTRAP_SEED: u64 = 0x0005_C057;

/// One matched figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub benchmark: String,
    pub variant: String,
    pub method: String,
    pub unit: String,
    pub a_median: f64,
    pub b_median: f64,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// `faster`, `slower`, `no change`, `higher`, `lower` or `uncertain`.
    pub verdict: String,
}

/// The verdict for a ratio interval B/A against a ±threshold (e.g. 0.02).
pub fn verdict(ci_low: f64, ci_high: f64, threshold: f64, dir: Direction) -> &'static str {
    let (up, down) = (1.0 + threshold, 1.0 - threshold);
    if ci_low > up {
        match dir {
            Direction::LowerIsBetter => "slower",
            Direction::HigherIsBetter => "faster",
            Direction::Neutral => "higher",
        }
    } else if ci_high < down {
        match dir {
            Direction::LowerIsBetter => "faster",
            Direction::HigherIsBetter => "slower",
            Direction::Neutral => "lower",
        }
    } else if ci_low >= down && ci_high <= up {
        "no change"
    } else {
        "uncertain"
    }
}

/// Compares every figure present in both runs (matched by benchmark, parameters and
/// method), in A's order.
pub fn compare(a: &RunDocument, b: &RunDocument, threshold: f64, resamples: usize) -> Vec<Comparison> {
    let mut out = Vec::new();
    for ra in &a.results {
        let k = ra.variant_label();
        let Some(rb) = b
            .results
            .iter()
            .find(|rb| rb.benchmark == ra.benchmark && rb.method == ra.method && rb.variant_label() == k)
        else {
            continue;
        };
        let est = if ra.samples.len() >= 2 && rb.samples.len() >= 2 {
            stats::bootstrap_median_ratio(&ra.samples, &rb.samples, resamples, BOOTSTRAP_SEED)
        } else {
            None
        };
        let (ratio, lo, hi) = match est {
            Some(e) => (e.ratio, e.ci_low, e.ci_high),
            // Without samples (fits), the ratio stands alone and earns no verdict.
            None => {
                let r = rb.median / ra.median;
                (r, f64::NAN, f64::NAN)
            }
        };
        let v = if !(lo.is_finite() && hi.is_finite()) {
            "uncertain"
        } else if quantised(&ra.samples) || quantised(&rb.samples) {
            // A median sitting on a heavily tied value moves in whole steps of the
            // timer; a bootstrap then reports a falsely narrow interval.
            "uncertain (quantised)"
        } else {
            verdict(lo, hi, threshold, direction(&ra.unit))
        };
        out.push(Comparison {
            benchmark: ra.benchmark.clone(),
            variant: k,
            method: ra.method.as_str().to_string(),
            unit: ra.unit.clone(),
            a_median: ra.median,
            b_median: rb.median,
            ratio,
            ci_low: lo,
            ci_high: hi,
            verdict: v.to_string(),
        });
    }
    out
}

/// True when more than a fifth of the samples equal the median exactly.
pub fn quantised(samples: &[f64]) -> bool {
    let m = stats::median(samples);
    samples.iter().filter(|&&x| x == m).count() * 5 > samples.len()
}

/// The fingerprint fields worth comparing: (name, A, B).
pub fn machine_diff(a: &Machine, b: &Machine) -> Vec<(String, String, String)> {
    let mut rows = vec![
        ("host".to_string(), super::plain(&a.hostname).into_owned(), super::plain(&b.hostname).into_owned()),
        ("cpu".into(), super::plain(&a.cpu_model).into_owned(), super::plain(&b.cpu_model).into_owned()),
        ("logical cpus".into(), a.logical_cpus.to_string(), b.logical_cpus.to_string()),
        ("smt".into(), a.smt_text().into(), b.smt_text().into()),
        ("governor".into(), a.governor.clone().unwrap_or_default(), b.governor.clone().unwrap_or_default()),
        ("kernel".into(), a.kernel_release.clone(), b.kernel_release.clone()),
        ("virtualization".into(), a.virtualization.clone(), b.virtualization.clone()),
        ("clocksource".into(), a.clocksource.clone().unwrap_or_default(), b.clocksource.clone().unwrap_or_default()),
        (
            "transparent hugepages".into(),
            a.transparent_hugepages.clone().unwrap_or_default(),
            b.transparent_hugepages.clone().unwrap_or_default(),
        ),
        ("libc".into(), a.libc.clone(), b.libc.clone()),
        (
            "oscost".into(),
            format!("{} ({})", a.tool_version, a.git_commit),
            format!("{} ({})", b.tool_version, b.git_commit),
        ),
    ];
    let keys: std::collections::BTreeSet<&String> = a.mitigations.keys().chain(b.mitigations.keys()).collect();
    for k in keys {
        rows.push((
            format!("mitigation {k}"),
            a.mitigations.get(k).cloned().unwrap_or_else(|| "-".into()),
            b.mitigations.get(k).cloned().unwrap_or_else(|| "-".into()),
        ));
    }
    rows
}

/// Renders a comparison as text: machines (differences marked), then figures.
/// The comparison as JSON: both run ids, the threshold, the machines' differences and
/// every figure's comparison.
pub fn to_json(a: &RunDocument, b: &RunDocument, rows: &[Comparison], threshold: f64) -> String {
    #[derive(serde::Serialize)]
    struct Out<'a> {
        a: i64,
        b: i64,
        threshold: f64,
        machines: Vec<(String, String, String)>,
        results: &'a [Comparison],
    }
    let out =
        Out { a: a.run.id, b: b.run.id, threshold, machines: machine_diff(&a.machine, &b.machine), results: rows };
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

pub fn render(a: &RunDocument, b: &RunDocument, rows: &[Comparison], threshold: f64) -> String {
    use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
    let mut m = Table::new();
    m.load_preset(UTF8_FULL_CONDENSED);
    m.set_header(vec!["", &format!("A: run #{}", a.run.id), &format!("B: run #{}", b.run.id), ""]);
    for (name, x, y) in machine_diff(&a.machine, &b.machine) {
        let mark = if x != y { "≠" } else { "" };
        m.add_row(vec![name, x, y, mark.to_string()]);
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["benchmark", "variant", "method", "A median", "B median", "B/A [95% CI]", "verdict"]);
    for c in rows {
        t.add_row(vec![
            super::plain(&c.benchmark).into_owned(),
            super::plain(&c.variant).into_owned(),
            c.method.clone(),
            super::fmt_value(c.a_median, &c.unit),
            super::fmt_value(c.b_median, &c.unit),
            if c.ci_low.is_finite() {
                format!("{:.3} [{:.3}, {:.3}]", c.ratio, c.ci_low, c.ci_high)
            } else {
                format!("{:.3}", c.ratio)
            },
            c.verdict.clone(),
        ]);
    }
    format!(
        "{m}\n{t}\nverdicts need the 95% interval of B/A to clear ±{:.1}%; otherwise \"uncertain\" (bootstrap of medians over stored samples)\n",
        threshold * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Method, ResultRow, RunInfo};

    fn doc(id: i64, rows: Vec<ResultRow>) -> RunDocument {
        RunDocument {
            schema_version: 1,
            run: RunInfo {
                id,
                started_at: "t".into(),
                command_line: "c".into(),
                save_name: None,
                status: "complete".into(),
            },
            machine: crate::machine::Machine::example(),
            results: rows,
        }
    }

    fn samples(scale: f64) -> Vec<f64> {
        (0..200).map(|i| scale * (100.0 + (i % 13) as f64)).collect()
    }

    #[test]
    fn identical_runs_show_no_change() {
        let r = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", samples(1.0), 200).unwrap();
        let c = compare(&doc(1, vec![r.clone()]), &doc(2, vec![r]), 0.02, 500);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].verdict, "no change");
        assert_eq!(c[0].ratio, 1.0);
    }

    #[test]
    fn a_shifted_copy_gets_the_right_direction_and_size() {
        let a = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", samples(1.0), 200).unwrap();
        let b = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", samples(1.25), 200).unwrap();
        let c = compare(&doc(1, vec![a.clone()]), &doc(2, vec![b.clone()]), 0.02, 500);
        assert_eq!(c[0].verdict, "slower");
        assert!((c[0].ratio - 1.25).abs() < 1e-9);
        assert!(c[0].ci_low > 1.2 && c[0].ci_high < 1.3);
        let c = compare(&doc(2, vec![b]), &doc(1, vec![a]), 0.02, 500);
        assert_eq!(c[0].verdict, "faster");
        // For a rate, higher is better.
        let ra = ResultRow::from_samples("load.chat", Method::Workload, "msg/s", samples(1.0), 200).unwrap();
        let rb = ResultRow::from_samples("load.chat", Method::Workload, "msg/s", samples(1.5), 200).unwrap();
        assert_eq!(compare(&doc(1, vec![ra]), &doc(2, vec![rb]), 0.02, 500)[0].verdict, "faster");
    }

    #[test]
    fn quantised_samples_earn_no_verdict() {
        let a: Vec<f64> = (0..100).map(|i| if i % 5 < 3 { 130.0 } else { 140.0 + i as f64 }).collect();
        assert!(quantised(&[1.0, 1.0, 1.0, 2.0, 3.0]));
        assert!(!quantised(&samples(1.0)));
        let ra = ResultRow::from_samples("syscall.getppid", Method::PerCall, "ns/call", a.clone(), 100).unwrap();
        let rb = ResultRow::from_samples(
            "syscall.getppid",
            Method::PerCall,
            "ns/call",
            a.iter().map(|x| x + 30.0).collect(),
            100,
        )
        .unwrap();
        assert_eq!(compare(&doc(1, vec![ra]), &doc(2, vec![rb]), 0.02, 200)[0].verdict, "uncertain (quantised)");
    }

    #[test]
    fn verdict_needs_the_interval_to_clear_the_threshold() {
        assert_eq!(verdict(1.01, 1.05, 0.02, Direction::LowerIsBetter), "uncertain");
        assert_eq!(verdict(0.99, 1.01, 0.02, Direction::LowerIsBetter), "no change");
        assert_eq!(verdict(1.03, 1.05, 0.02, Direction::LowerIsBetter), "slower");
        assert_eq!(verdict(0.90, 0.95, 0.02, Direction::Neutral), "lower");
    }

    #[test]
    fn unmatched_rows_are_left_out_and_machines_are_diffed() {
        let a = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", samples(1.0), 200).unwrap();
        let b = ResultRow::from_samples("syscall.getuid", Method::Batch, "ns/call", samples(1.0), 200).unwrap();
        assert!(compare(&doc(1, vec![a]), &doc(2, vec![b]), 0.02, 100).is_empty());
        let m1 = crate::machine::Machine::example();
        let mut m2 = m1.clone();
        m2.kernel_release = "9.9.9".into();
        let d = machine_diff(&m1, &m2);
        let k = d.iter().find(|r| r.0 == "kernel").unwrap();
        assert_ne!(k.1, k.2);
    }
}
