//! A history (`crate::judge::history`) as a terminal view (one line a figure: a sparkline
//! of its medians with the change points marked, its runs and noise; then a line per
//! change), as JSON, and as an HTML page of charts (the series with intervals, the
//! segments' levels, each change point marked and labelled).

use std::fmt::Write;

use crate::judge::history::{Change, Series};
use crate::machine::KeyChange;

use super::charts::{self, Marker, Point};
use super::{esc, fmt_value, plain};

/// The levels a sparkline draws with, lowest first.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// The most runs a sparkline shows (the newest); older ones are elided.
const SPARK_RUNS: usize = 48;
/// The least a sparkline's height spans, on the log scale (1%).
const SPARK_MIN_SPAN: f64 = 0.01;

/// The medians as a sparkline on a log scale, `│` before each change's first run.
pub fn sparkline(s: &Series) -> String {
    let from = s.points.len().saturating_sub(SPARK_RUNS);
    let logs: Vec<f64> = s.points[from..].iter().map(|p| p.median.ln()).collect();
    let (lo, hi) = logs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    // The bars span at least what one median can resolve (twice the series' noise)
    // and 1%: a difference below that (a clock's quantum, the last digit of a
    // conversion) is drawn about the middle bar, not as a full drop.
    let least = (2.0 * s.noise.unwrap_or(0.0)).max(SPARK_MIN_SPAN);
    let mid = (lo + hi) / 2.0;
    let mut out = String::from(if from > 0 { "…" } else { "" });
    for (i, v) in logs.iter().enumerate() {
        if s.changes.iter().any(|c| c.index == from + i) {
            out.push('│');
        }
        let level = if hi - lo >= least {
            ((v - lo) / (hi - lo) * 7.0).round() as usize
        } else {
            (3.0 + ((v - mid) / least * 7.0).round()).clamp(0.0, 7.0) as usize
        };
        out.push(BARS[level.min(7)]);
    }
    out
}

/// A key change in words: `kernel 6.1 → 6.2`.
fn key_change_text(k: &KeyChange) -> String {
    format!("{} {} → {}", k.field, plain(&k.before.join("|")), plain(&k.after.join("|")))
}

/// What changed with a change, in words.
pub fn cause_text(c: &Change) -> String {
    if c.key_changes.is_empty() {
        "nothing in the comparability key changed (the machine's load or neighbours, or the code measured)".into()
    } else {
        c.key_changes.iter().map(key_change_text).collect::<Vec<_>>().join("; ")
    }
}

/// One change in words: where, from what to what, its size and what changed with it.
fn change_text(s: &Series, c: &Change) -> String {
    let doubt = c.doubted.map_or_else(String::new, |f| format!(" uncertain ({f}):"));
    format!(
        "change at run #{} ({}, after {} runs, {} since):{doubt} {} → {}, ×{:.3} [{:.3}, {:.3}]; {}",
        c.run_id,
        c.started_at,
        c.runs_before,
        c.runs_after,
        fmt_value(c.median_before, &s.unit),
        fmt_value(c.median_after, &s.unit),
        c.ratio,
        c.ci_low,
        c.ci_high,
        cause_text(c)
    )
}

/// The terminal view: one line per figure, then its changes indented.
pub fn render(series: &[Series], runs: usize) -> String {
    let mut out = String::new();
    if series.is_empty() {
        let _ = writeln!(out, "no figure matched in {runs} complete measured runs");
        return out;
    }
    for s in series {
        let stratum = s.stratum.as_deref().map(|x| format!(" ({})", plain(x))).unwrap_or_default();
        let noise =
            s.noise.map_or_else(|| "too few runs to measure the noise".into(), |n| format!("noise {:.1}%", n * 100.0));
        let last = s.points.last().map_or_else(String::new, |p| fmt_value(p.median, &s.unit));
        // A figure a run's flag doubts is in the series; say how many there are.
        let flagged = s.points.iter().filter(|p| p.flagged).count();
        let flagged = if flagged > 0 { format!(", {flagged} flagged") } else { String::new() };
        let _ = writeln!(
            out,
            "{}{stratum}  {}  {} runs{flagged}, latest {last}, {noise}",
            plain(&s.figure()),
            sparkline(s),
            s.points.len()
        );
        for c in &s.changes {
            let _ = writeln!(out, "    {}", change_text(s, c));
        }
    }
    let changed = series.iter().filter(|s| !s.changes.is_empty()).count();
    let _ = writeln!(
        out,
        "{} of {} figures changed over {runs} runs; change points: robust binary segmentation on log medians, penalty 4·ln(n)·σ² with σ each series' run-to-run noise",
        changed,
        series.len()
    );
    out
}

/// The history as JSON: how many runs were read, how they were split, every series.
pub fn to_json(series: &[Series], runs: usize, by: Option<crate::judge::history::Stratum>) -> String {
    serde_json::to_string_pretty(&serde_json::json!({ "runs": runs, "by": by, "series": series })).unwrap_or_default()
}

/// A series' chart: its runs (x: 1…n) with intervals, each segment's level as a
/// line, each change marked with its size and what changed.
fn chart(s: &Series) -> String {
    let runs = charts::Series {
        name: "run medians".into(),
        points: s
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| Point {
                x: (i + 1) as f64,
                y: p.median,
                interval: (p.ci_low.is_finite() && p.ci_high.is_finite()).then_some((p.ci_low, p.ci_high)),
                flagged: p.flagged,
            })
            .collect(),
    };
    let mut all = vec![runs];
    let bounds: Vec<usize> =
        std::iter::once(0).chain(s.changes.iter().map(|c| c.index)).chain([s.points.len()]).collect();
    for (k, w) in bounds.windows(2).enumerate() {
        let level = s.changes.get(k).map_or_else(
            || s.changes.last().map_or_else(|| median_of(s, w[0]..w[1]), |c| c.median_after),
            |c| c.median_before,
        );
        all.push(charts::Series {
            name: format!("segment {}: {}", k + 1, fmt_value(level, &s.unit)),
            points: vec![Point::bare(w[0] as f64 + 0.6, level), Point::bare(w[1] as f64 + 0.4, level)],
        });
    }
    let markers: Vec<Marker> = s
        .changes
        .iter()
        .map(|c| Marker {
            x: c.index as f64 + 0.5,
            label: format!(
                "×{:.2} {}",
                c.ratio,
                c.key_changes.iter().map(|k| k.field.as_str()).collect::<Vec<_>>().join(", ")
            ),
        })
        .collect();
    let title = format!("{}{}", s.figure(), s.stratum.as_deref().map(|x| format!(" ({x})")).unwrap_or_default());
    let runs: Vec<String> = s.points.iter().map(|p| format!("#{} {}", p.run_id, short_date(&p.started_at))).collect();
    charts::runs_line_chart(&title, &s.unit, &runs, &all, &markers)
}

/// A run's date as a tick says it: month and day ("11-05") from its RFC 3339 start.
fn short_date(started_at: &str) -> &str {
    started_at.get(5..10).unwrap_or(started_at)
}

fn median_of(s: &Series, r: std::ops::Range<usize>) -> f64 {
    crate::stats::median(&s.points[r].iter().map(|p| p.median).collect::<Vec<_>>())
}

/// The history as a self-contained HTML page: the figures that changed first, each
/// with its chart and its changes in words, then the rest.
pub fn html(series: &[Series], runs: usize) -> String {
    let mut h = String::from(super::html::HEAD);
    let _ = write!(h, "<section><h2>History over {runs} runs</h2><p>{}</p>", esc(&render_summary(series, runs)));
    let (changed, steady): (Vec<&Series>, Vec<&Series>) = series.iter().partition(|s| !s.changes.is_empty());
    for s in changed.iter().chain(&steady) {
        h.push_str(&chart(s));
        if !s.changes.is_empty() {
            h.push_str("<ul>");
            for c in &s.changes {
                let _ = write!(h, "<li>{}</li>", esc(&change_text(s, c)));
            }
            h.push_str("</ul>");
        }
    }
    h.push_str("</section></body></html>\n");
    h
}

fn render_summary(series: &[Series], runs: usize) -> String {
    let changed = series.iter().filter(|s| !s.changes.is_empty()).count();
    format!(
        "{changed} of {} figures changed over {runs} complete measured runs. Change points: robust binary segmentation on log medians with penalty 4·ln(n)·σ², σ each series' run-to-run noise; each change is the ratio of the segments' medians with its 95% interval, and the comparability-key fields that differ between the segments' runs.",
        series.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::history::{Point as HPoint, Series};
    use crate::model::Method;

    fn series(medians: &[f64], change_at: Option<usize>) -> Series {
        let points = medians
            .iter()
            .enumerate()
            .map(|(i, m)| HPoint {
                run_id: i as i64 + 1,
                run_uuid: None,
                started_at: format!("2026-11-{:02}T00:00:00Z", i + 1),
                host: "h".into(),
                median: *m,
                ci_low: m * 0.99,
                ci_high: m * 1.01,
                flagged: false,
                doubt: None,
            })
            .collect();
        let changes = change_at
            .map(|i| Change {
                index: i,
                run_id: i as i64 + 1,
                started_at: "2026-11-05T00:00:00Z".into(),
                runs_before: i,
                runs_after: medians.len() - i,
                median_before: medians[0],
                median_after: medians[medians.len() - 1],
                ratio: medians[medians.len() - 1] / medians[0],
                ci_low: 1.05,
                ci_high: 1.15,
                key_changes: vec![KeyChange {
                    field: "kernel".into(),
                    before: vec!["6.1".into()],
                    after: vec!["6.2".into()],
                }],
                doubted: None,
            })
            .into_iter()
            .collect();
        Series {
            key: crate::model::FigureKey::new("syscall.getppid".into(), Method::Batch, crate::model::Params::new()),
            unit: "ns/call".into(),
            stratum: None,
            points,
            noise: Some(0.02),
            changes,
        }
    }

    #[test]
    fn the_sparkline_marks_the_change_and_spans_the_levels() {
        let s = series(&[100.0, 100.0, 100.0, 110.0, 110.0], Some(3));
        assert_eq!(sparkline(&s), "▁▁▁│██");
        let flat = series(&[5.0; 3], None);
        assert_eq!(sparkline(&flat), "▄▄▄");
        let long = series(&vec![1.0; 60], None);
        assert!(sparkline(&long).starts_with('…'));
        assert_eq!(sparkline(&long).chars().count(), SPARK_RUNS + 1);
        // The last digit of a conversion is no drop.
        let digits = series(&[80.11852, 80.11850, 80.11852], None);
        assert_eq!(sparkline(&digits), "▄▄▄");
    }

    #[test]
    fn the_text_names_the_change_its_size_and_what_changed() {
        let text = render(&[series(&[100.0, 100.0, 100.0, 110.0, 110.0], Some(3))], 5);
        assert!(text.contains("syscall.getppid [batch]"), "{text}");
        assert!(text.contains("change at run #4"), "{text}");
        assert!(text.contains("×1.100 [1.050, 1.150]"), "{text}");
        assert!(text.contains("kernel 6.1 → 6.2"), "{text}");
        assert!(text.contains("1 of 1 figures changed over 5 runs"), "{text}");
        assert!(render(&[], 7).contains("no figure matched in 7"));
        let mut doubted = series(&[100.0, 100.0, 100.0], None);
        doubted.points[1].flagged = true;
        assert!(render(&[doubted], 3).contains("3 runs, 1 flagged,"));
    }

    #[test]
    fn the_page_draws_each_series_with_its_marked_changes() {
        let page = html(&[series(&[1.0; 4], None), series(&[100.0, 100.0, 100.0, 110.0, 110.0], Some(3))], 5);
        assert_eq!(page.matches("<svg").count(), 2);
        assert_eq!(page.matches(r#"class="marker""#).count(), 1);
        assert!(page.contains("×1.10 kernel"));
        // The changed figure comes first.
        assert!(page.find("×1.10").unwrap() < page.rfind("<svg").unwrap());
    }
}
