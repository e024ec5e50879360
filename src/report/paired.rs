//! The conditions of a paired run, as tables: one for each condition, each figure
//! against the baseline measured in the same rounds, with the paired ratio, its
//! interval, the minimum detectable effect and the verdict.
//!
//! A line a figure: at a glance only each figure's headline method (batch where it
//! was timed, per call otherwise; `-v` adds the other), the rounds said in the
//! condition's line when every figure paired as many, and where the table is still
//! wider than the terminal the two arms' own figures left out before any cell wraps
//! (the run's table above prints them).

use crate::judge::paired::PairedFigure;
use crate::model::Method;

use super::fit::{Column, folded_table};
use super::table::Width;

/// The tables, or nothing when the run measured no condition.
pub fn render(pairs: &[PairedFigure], threshold: f64, width: Width) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let every_method = matches!(width, Width::Full(_) | Width::Wide);
    let prose = |text: String| super::fit::prose(&text, width);
    let mut out = prose(
        "conditions against the baseline, paired by round (each arm in a fresh worker, in alternating order):".into(),
    );
    out.push('\n');
    let mut conditions: Vec<&str> = Vec::new();
    for p in pairs {
        if !conditions.contains(&p.condition.as_str()) {
            conditions.push(&p.condition);
        }
    }
    let mut dropped_any = false;
    for condition in conditions {
        let rows: Vec<&PairedFigure> =
            pairs.iter().filter(|p| p.condition == condition && (every_method || is_headline(p, pairs))).collect();
        let (section, dropped) = condition_table(condition, &rows, every_method, width);
        dropped_any |= dropped;
        out.push_str(&section);
    }
    let mut legend = format!(
        "ratio: the condition over the baseline, the geometric mean of the rounds' ratios, which is condition gm over baseline gm (each arm's geometric mean of its paired rounds' medians; `show` prints each arm's median of all samples); its 95% interval resamples the paired rounds; a verdict needs the interval to clear ±{:.1}%",
        threshold * 100.0
    );
    if dropped_any {
        legend.push_str("; each arm's gm left out to fit the terminal (-v or --wide shows them)");
    }
    if !every_method && pairs.iter().any(|p| !is_headline(p, pairs)) {
        legend.push_str("; per-call twins of batch figures in -v");
    }
    out.push_str(&prose(legend));
    out.push('\n');
    out
}

/// Whether `p` is its figure's headline: its batch row, or its only method.
fn is_headline(p: &PairedFigure, pairs: &[PairedFigure]) -> bool {
    p.key.method == Method::Batch
        || !pairs.iter().any(|q| {
            q.condition == p.condition
                && q.key.bench == p.key.bench
                && q.key.variant() == p.key.variant()
                && q.key.method == Method::Batch
        })
}

/// One condition's line and table; whether the arms' gm columns were left out.
fn condition_table(condition: &str, rows: &[&PairedFigure], every_method: bool, width: Width) -> (String, bool) {
    let rounds: Vec<usize> = rows.iter().map(|p| p.pairs).collect();
    let same_rounds = rounds.windows(2).all(|w| w[0] == w[1]);
    let mut line = format!("{} against the baseline", super::plain(condition));
    if same_rounds && let Some(n) = rounds.first() {
        line.push_str(&format!(", {} paired", super::counted(*n as u64, "round", "rounds")));
    }
    let mut columns = vec![
        Column::flexible("figure"),
        Column::right("baseline gm").droppable(),
        Column::right("condition gm").droppable(),
        Column::right("ratio [95% CI]"),
        Column::right("MDE"),
        Column::flexible("verdict"),
    ];
    if !same_rounds {
        columns.push(Column::right("rounds"));
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|p| {
            let mut label = super::screen::compact_label(&super::plain(&p.key.bench), &super::plain(p.key.variant()));
            if every_method || p.key.method != Method::Batch {
                label.push_str(&format!(" ({})", p.key.method.as_str().replace('_', " ")));
            }
            let mut cells = vec![
                label,
                super::fmt_value(p.paired_baseline, &p.unit),
                super::fmt_value(p.paired_value, &p.unit),
                format!("{:.3} [{:.3}, {:.3}]", p.ratio, p.ci_low, p.ci_high),
                if p.mde.is_finite() { format!("±{:.1}%", p.mde * 100.0) } else { "-".into() },
                p.verdict.to_string(),
            ];
            if !same_rounds {
                cells.push(p.pairs.to_string());
            }
            cells
        })
        .collect();
    let (table, dropped) = folded_table(&columns, &cells, width);
    let text = format!("{}\n{table}\n", super::fit::prose(&line, width));
    (text, !dropped.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Count, ResultRow, Round};

    /// Rows of a conditions run: three benchmarks (two system calls and a pipe
    /// hand-off in seven variants), each timed in batch and per call, measured
    /// beside two conditions in 5 rounds.
    fn conditions_run() -> Vec<ResultRow> {
        let mut rows = Vec::new();
        let variants: Vec<(&str, Vec<(&str, &str)>)> = vec![
            ("syscall.getppid", vec![]),
            ("syscall.read", vec![]),
            ("ctx.pipe", vec![("mode", "thread"), ("placement", "same_cpu")]),
            ("ctx.pipe", vec![("mode", "thread"), ("placement", "cross_cpu")]),
            ("ctx.pipe", vec![("mode", "thread"), ("placement", "unpinned")]),
            ("ctx.pipe", vec![("mode", "process"), ("placement", "same_cpu")]),
            ("ctx.pipe", vec![("mode", "process"), ("placement", "cross_cpu")]),
            ("ctx.pipe", vec![("mode", "process"), ("placement", "unpinned")]),
            ("ctx.pipe", vec![("mode", "self"), ("placement", "same_cpu")]),
        ];
        for condition in [None, Some("seccomp:allow=20"), Some("ns:user,pid,net")] {
            let factor = if condition == Some("seccomp:allow=20") { 1.5 } else { 1.0 };
            for (bench, params) in &variants {
                for method in [Method::Batch, Method::PerCall] {
                    let unit = if bench.starts_with("ctx") { "ns/hand-off" } else { "ns/call" };
                    let centre = if bench.starts_with("ctx") { 7412.0 } else { 188.0 } * factor;
                    let rounds = [1.0, 1.02, 0.98, 1.01, 0.99];
                    let samples: Vec<f64> =
                        rounds.iter().flat_map(|m| [m * centre * 0.99, m * centre, m * centre * 1.01]).collect();
                    let mut r = ResultRow::from_samples(*bench, method, unit, samples, 30).unwrap();
                    for (k, v) in params {
                        r = r.with_param(k, *v);
                    }
                    if let Some(c) = condition {
                        r = r.with_param("condition", c);
                    }
                    r.rounds = (0..5).map(|i| Round { samples: 3, at: Some(i), counts: Default::default() }).collect();
                    r.counts.insert(Count::SwitchesPerOp, if bench.starts_with("ctx") { 1.0 } else { 0.0 });
                    rows.push(r);
                }
            }
        }
        rows
    }

    /// Two conditions beside three benchmarks: at 100 columns every figure of the
    /// run's table and every paired row is one line; at 80 no line is wider than the
    /// terminal and no word of a name is split.
    #[test]
    fn a_conditions_run_prints_a_line_a_figure_at_100_columns_and_fits_80() {
        let rows = conditions_run();
        let pairs = crate::judge::paired::pairs(&rows, 0.03, |_| &[]);
        assert_eq!(pairs.len(), 2 * 9 * 2, "each condition's figure in both methods paired");
        for width in [100u16, 80] {
            let run = super::super::screen::render_results(&rows, &[], width, Some(3));
            let paired = render(&pairs, 0.03, Width::Fit(width));
            let text = format!("{run}{paired}");
            assert!(super::super::fit::widest(&text) <= usize::from(width), "wider than {width}:\n{text}");
            let words = |s: &str| {
                s.split(|c: char| c.is_whitespace() || c == '│' || c == '┆')
                    .filter(|w| !w.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            for w in ["seccomp:allow=20", "ns:user,pid,net", "cross_cpu", "syscall.getppid", "unpinned"] {
                assert!(words(&text).iter().any(|x| x == w), "{w} whole at {width}:\n{text}");
            }
            if width == 100 {
                let body = |t: &str| t.lines().filter(|l| l.starts_with('│')).count();
                // The run's table: a header line and a line a figure (27: 9 baseline,
                // 9 a condition).
                assert_eq!(body(&run), 1 + 27, "a line a figure:\n{run}");
                // Each condition's table: a header line and its 9 headline figures.
                assert_eq!(body(&paired), 2 * (1 + 9), "a line a paired figure:\n{paired}");
                assert!(paired.contains("seccomp:allow=20 against the baseline, 5 rounds paired"), "{paired}");
                assert!(paired.lines().any(|l| l.starts_with("│ syscall.getppid") && l.contains("slower")), "{paired}");
            }
        }
        // -v keeps every method and the arms' figures.
        let full = render(&pairs, 0.03, Width::Full(100));
        assert!(full.contains("(per call)") && full.contains("baseline gm"), "{full}");
    }
}
