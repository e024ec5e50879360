//! Many machines side by side: each side (a run, a set of runs, or every run of one
//! host) in a column, the first one the baseline, and for every figure the other
//! sides' ratio to it with its interval and verdict (`compare`'s, side by side). The
//! fingerprint fields in which the machines differ come first, as a header.

use std::fmt::Write;

use serde::Serialize;

use super::compare::{Comparison, compare_with, side_name};
use super::{fmt_value, plain};
use crate::judge::noise::RunNoise;
use crate::model::{FigureKey, RunDocument};

/// One side's column.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// `run #3`, `runs #1, #2`, or the host's name.
    pub name: String,
    pub runs: Vec<i64>,
    /// The noise runs of this side's machine (`oscost noise`) its one-run intervals
    /// took their figures' spread between runs from; None without them.
    pub noise_runs: Option<crate::judge::noise::Source>,
}

/// One figure across the sides: the baseline's median and, per other side, its
/// comparison with the baseline (None where that side lacks the figure).
#[derive(Debug, Clone, Serialize)]
pub struct MatrixRow {
    #[serde(flatten)]
    pub key: FigureKey,
    pub unit: crate::unit::Unit,
    pub baseline_median: f64,
    pub cells: Vec<Option<Comparison>>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    pub columns: Vec<Column>,
    pub threshold: f64,
    /// Fingerprint fields that differ between the sides: (field, value per side).
    pub differences: Vec<(String, Vec<String>)>,
    pub rows: Vec<MatrixRow>,
}

/// Compares every side with the first. `names` labels the sides (None: their runs).
/// `noise` holds each side's machine's between-run spreads, in the order of the sides
/// (empty, or shorter: none for the rest), which a one-run side's intervals take as in
/// [`compare_with`].
pub fn matrix(
    sides: &[Vec<RunDocument>],
    names: Option<Vec<String>>,
    threshold: f64,
    noise: &[RunNoise],
    resamples: usize,
) -> Matrix {
    let none = RunNoise::none();
    let noise_of = |i: usize| noise.get(i).unwrap_or(&none);
    let columns: Vec<Column> = sides
        .iter()
        .enumerate()
        .map(|(i, s)| Column {
            name: names.as_ref().and_then(|n| n.get(i).cloned()).unwrap_or_else(|| side_name(s)),
            runs: s.iter().map(|d| d.run.id).collect(),
            // Only a side of one run takes its machine's spread (`compare_with`).
            noise_runs: if s.len() == 1 { noise_of(i).source.clone() } else { None },
        })
        .collect();
    // Each side's machine is its first run's.
    let machines: Vec<&crate::machine::Machine> = sides.iter().filter_map(|s| s.first()).map(|d| &d.machine).collect();
    let differences = super::compare::fingerprints(&machines)
        .into_iter()
        .filter(|(field, values)| field == "host" || values.iter().any(|v| v != &values[0]))
        .collect();
    let Some(base) = sides.first() else {
        return Matrix { columns, threshold, differences, rows: Vec::new() };
    };
    let per_side: Vec<Vec<Comparison>> = sides[1..]
        .iter()
        .enumerate()
        .map(|(i, s)| compare_with(base, s, threshold, [noise_of(0), noise_of(i + 1)], resamples))
        .collect();
    let mut rows = Vec::new();
    for r in base.first().map(|d| d.results.as_slice()).unwrap_or_default() {
        let key = r.key();
        let cells: Vec<Option<Comparison>> =
            per_side.iter().map(|cs| cs.iter().find(|c| c.key == key).cloned()).collect();
        let baseline_median = cells.iter().flatten().next().map_or(r.median, |c| c.a_median);
        rows.push(MatrixRow { key, unit: r.unit.clone(), baseline_median, cells });
    }
    Matrix { columns, threshold, differences, rows }
}

/// The matrix as text: the differing fingerprint fields, then one column per side.
pub fn render(m: &Matrix, width: super::table::Width) -> String {
    use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
    let mut head = Table::new();
    head.load_preset(UTF8_FULL_CONDENSED);
    super::fit::table(&mut head, width);
    let mut names = vec![String::new()];
    names.extend(m.columns.iter().map(|c| plain(&c.name).into_owned()));
    head.set_header(names.clone());
    for (field, values) in &m.differences {
        let mut row = vec![field.clone()];
        // Long values (the kernel command line) elided here, whole in JSON.
        row.extend(values.iter().map(|v| super::fit::elide(&plain(v), super::compare::MACHINE_VALUE_WIDTH)));
        head.add_row(row);
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    super::fit::table(&mut t, width);
    let mut header = vec!["benchmark".to_string(), "variant".into(), "method".into()];
    header.push(format!("{} (baseline)", names[1]));
    header.extend(names[2..].iter().map(|n| format!("{n}: ratio [95% CI] verdict")));
    t.set_header(header);
    for r in &m.rows {
        let mut row = vec![
            plain(&r.key.bench).into_owned(),
            plain(r.key.variant()).into_owned(),
            r.key.method.as_str().to_string(),
            fmt_value(r.baseline_median, &r.unit),
        ];
        row.extend(r.cells.iter().map(|c| cell(c.as_ref())));
        t.add_row(row);
    }
    let mut o = if m.differences.is_empty() { format!("{t}\n") } else { format!("{head}\n{t}\n") };
    let ratios = format!(
        "ratios are each side's median over the baseline's; verdicts need the 95% interval to clear ±{:.1}%, two rounds or runs a side, and the margin Holm's step-down over a column's rows asks",
        m.threshold * 100.0
    );
    let _ = writeln!(o, "{}", super::fit::prose(&ratios, width));
    if let Some(line) = between_runs_line(m) {
        let _ = writeln!(o, "{}", super::fit::prose(&line, width));
    }
    o
}

/// One cell: the ratio, its interval and verdict, marked `*` where the interval also
/// holds the figure's spread between runs.
pub fn cell(c: Option<&Comparison>) -> String {
    let mark = if c.is_some_and(|c| c.between_runs.is_some()) { "*" } else { "" };
    match c {
        Some(c) if c.ci_low.is_finite() => {
            format!("{:.3} [{:.3}, {:.3}]{mark} {}", c.ratio, c.ci_low, c.ci_high, c.verdict)
        }
        Some(c) => format!("{:.3} {}", c.ratio, c.verdict),
        None => "-".into(),
    }
}

/// What the `*` cells took and from where, when some did: each one-run side's
/// between-run spread, from its machine's noise runs.
pub fn between_runs_line(m: &Matrix) -> Option<String> {
    let cells: Vec<&Comparison> = m.rows.iter().flat_map(|r| r.cells.iter().flatten()).collect();
    let widened = cells.iter().filter(|c| c.between_runs.is_some()).count();
    let sources: Vec<(&str, Option<&crate::judge::noise::Source>)> =
        m.columns.iter().map(|c| (c.name.as_str(), c.noise_runs.as_ref())).collect();
    super::compare::noise_sources(&sources, widened, cells.len())
        .map(|line| format!("* {line} (each one-run side's, in quadrature)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Method, ResultRow, Round};
    use crate::report::compare::Verdict;

    fn doc(id: i64, host: &str, centre: f64) -> RunDocument {
        let mut rng = crate::stats::SplitMix64::new(id as u64);
        let parts = crate::stats::nested::synthetic(&mut rng, centre, 5, 50, 0.02, 0.01);
        let all: Vec<f64> = parts.iter().flatten().copied().collect();
        let mut r = ResultRow::from_samples("syscall.getppid", Method::Batch, "ns/call", all, 250).unwrap();
        r.rounds = parts.iter().map(|p| Round { samples: p.len(), at: None, counts: Default::default() }).collect();
        let mut machine = crate::machine::Machine::example();
        machine.hostname = host.into();
        RunDocument::for_tests(id, machine, vec![r])
    }

    #[test]
    fn three_machines_in_three_columns_with_ratios_to_the_first() {
        let sides = vec![vec![doc(1, "a", 100.0)], vec![doc(2, "b", 200.0)], vec![doc(3, "c", 100.0)]];
        let m = matrix(&sides, None, 0.03, &[], 300);
        assert_eq!(m.columns.len(), 3);
        assert_eq!(m.differences[0].0, "host");
        assert_eq!(m.differences[0].1, vec!["a", "b", "c"]);
        assert_eq!(m.rows.len(), 1);
        let cells = &m.rows[0].cells;
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[0].as_ref().unwrap().verdict, "slower");
        assert!((cells[0].as_ref().unwrap().ratio - 2.0).abs() < 0.1);
        assert!(!matches!(cells[1].as_ref().unwrap().verdict, Verdict::Faster | Verdict::Slower));
        let text = render(&m, crate::report::table::Width::Wide);
        assert!(text.contains("run #1 (baseline)") && text.contains("run #3: ratio"), "{text}");
    }

    /// One-run sides take their machine's spread between runs exactly as a two-sided
    /// `compare` does (a side of several runs takes none), and the text marks those
    /// cells and names the noise runs; without a model nothing is marked.
    #[test]
    fn one_run_sides_take_their_machines_spread_as_compare_does() {
        let noise_runs: Vec<RunDocument> = [100.0, 108.0, 95.0, 104.0]
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let mut d = doc(10 + i as i64, "a", c);
                d.run.kind = crate::model::RunKind::Noise;
                d
            })
            .collect();
        let model = RunNoise::from_noise(&noise_runs);
        let sigma = model.of(&noise_runs[0].results[0]).expect("the figure has a spread").sigma;
        assert!(sigma > 0.0);
        let sides =
            vec![vec![doc(1, "a", 100.0)], vec![doc(2, "a", 104.0)], vec![doc(3, "a", 100.0), doc(4, "a", 103.0)]];
        let noise = vec![model.clone(), model.clone(), model.clone()];
        let m = matrix(&sides, None, 0.03, &noise, 300);
        let (one, set) = (m.rows[0].cells[0].as_ref().unwrap(), m.rows[0].cells[1].as_ref().unwrap());
        assert_eq!(one, &compare_with(&sides[0], &sides[1], 0.03, [&model, &model], 300)[0]);
        assert!((one.between_runs.unwrap() - sigma * 2f64.sqrt()).abs() < 1e-12, "{one:?}");
        assert!((set.between_runs.unwrap() - sigma).abs() < 1e-12, "only the one-run baseline's: {set:?}");
        let bare = matrix(&sides, None, 0.03, &[], 300);
        for (b, w) in bare.rows[0].cells.iter().flatten().zip(m.rows[0].cells.iter().flatten()) {
            assert!(b.between_runs.is_none() && w.ci_low < b.ci_low && w.ci_high > b.ci_high, "{b:?} {w:?}");
        }
        let text = render(&m, crate::report::table::Width::Wide);
        assert!(text.contains("]* "), "widened cells are marked: {text}");
        assert!(
            text.contains(
                "* between runs: 2 of 2 intervals hold their figure's spread between runs, from run #1's and run #2's machine's 4 noise runs"
            ),
            "{text}"
        );
        let plain_text = render(&bare, crate::report::table::Width::Wide);
        assert!(!plain_text.contains("]*") && !plain_text.contains("between runs"), "{plain_text}");
        assert!(m.columns[2].noise_runs.is_none(), "a side of two runs takes no spread and is not named");
        // Each cell takes the spreads of its own sides: only the baseline's machine has
        // noise runs, then only the second side's.
        let spread = |m: &Matrix, i: usize| m.rows[0].cells[i].as_ref().unwrap().between_runs;
        let baseline_only = matrix(&sides, None, 0.03, &noise[..1], 300);
        assert_eq!((spread(&baseline_only, 0), spread(&baseline_only, 1)), (Some(sigma), Some(sigma)));
        let line = between_runs_line(&baseline_only).unwrap();
        assert!(line.contains("from run #1's machine's 4 noise runs"), "{line}");
        let second_only = matrix(&sides, None, 0.03, &[RunNoise::none(), model.clone()], 300);
        assert_eq!((spread(&second_only, 0), spread(&second_only, 1)), (Some(sigma), None));
        let line = between_runs_line(&second_only).unwrap();
        assert!(line.contains("2 intervals") && line.contains("from run #2's machine's"), "{line}");
    }
}
