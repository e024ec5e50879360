//! The HTML report's charts, each a `<figure class="chart">` whose caption sits inside
//! its own box above the drawing (so no caption reads as the next chart's title),
//! with numeric axes from [`super::svg`], intervals drawn as error bars or whiskers,
//! and flagged figures drawn as hollow rings off the line rather than as data.
//!
//! Every chart draws everything it is given: nothing is cut to fit. The overview draws
//! every figure of a run once, so a reader (and the browser test) can count them.

use std::fmt::Write;

use super::compare::{Comparison, Doubt, Verdict};
use super::display_unit;
use super::esc;
use super::matrix::Matrix;
use super::svg::{Axis, Frame, Key, Mark, bytes_label, clip, legend, tick_label};
use crate::model::{Method, ResultRow};
use crate::stats;
pub use crate::sweep::{SweepSpec, XAxis};
use crate::unit::Unit;

pub const PALETTE: [&str; 8] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];
/// The colour of a flagged point, and of a `slower` verdict.
const RED: &str = "#d62728";
const GREEN: &str = "#2ca02c";
const GREY: &str = "#777";

/// A figure's box: its caption (title and a line of explanation) above the drawing.
fn figure(class: &str, title: &str, note: &str, svg: &str) -> String {
    format!(
        r#"<figure class="chart {class}"><figcaption><b>{}</b>{}</figcaption>{svg}</figure>"#,
        esc(title),
        if note.is_empty() { String::new() } else { format!("<br>{note}") }
    )
}

/// One point of a line chart: a figure's median at `x`, its interval, and whether a
/// flag doubts it.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub interval: Option<(f64, f64)>,
    pub flagged: bool,
}

impl Point {
    /// A point with neither interval nor flag (a published or simulated value).
    pub fn bare(x: f64, y: f64) -> Point {
        Point { x, y, interval: None, flagged: false }
    }

    /// A stored row's figure at `x`.
    pub fn of_row(x: f64, r: &ResultRow) -> Point {
        Point { x, y: r.median, interval: r.interval(), flagged: r.flags.iter().any(|f| f.flag.doubts_figure()) }
    }
}

/// A named series of points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

/// A sweep's chart: its batch rows, each at its place, with intervals and flags.
pub fn sweep_chart(spec: &SweepSpec, results: &[ResultRow]) -> String {
    let mut series: Vec<Series> = Vec::new();
    for r in results.iter().filter(|r| r.benchmark == spec.benchmark && r.method == Method::Batch) {
        let Some((name, x)) = (spec.place)(r) else { continue };
        let p = Point::of_row(x, r);
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(p),
            None => series.push(Series { name, points: vec![p] }),
        }
    }
    line_chart(spec.title, spec.x_title, &spec.unit, spec.x_axis, &series)
}

/// A line chart of several series against x, with error bars where a point has an
/// interval; a flagged point is a red ring, left out of its line.
pub fn line_chart(title: &str, x_title: &str, unit: &Unit, xaxis: XAxis, series: &[Series]) -> String {
    marked_line_chart(title, x_title, unit, xaxis, series, &[])
}

/// The x axis of a line chart over `pts`, and how its ticks print.
fn x_axis(xaxis: XAxis, pts: &[&Point]) -> (Axis, fn(f64) -> String) {
    let (lo, hi) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.x), b.max(p.x)));
    match xaxis {
        XAxis::Log2Count => (Axis::log2(lo, hi), tick_label),
        XAxis::Log2Bytes => (Axis::log2(lo, hi), bytes_label),
        XAxis::Linear => (Axis::linear(lo, hi), tick_label),
    }
}

/// A labelled vertical mark on a chart's x axis (a change point).
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

/// [`line_chart`] with vertical dashed marks, each labelled inside the plot.
pub fn marked_line_chart(
    title: &str,
    x_title: &str,
    unit: &Unit,
    xaxis: XAxis,
    series: &[Series],
    markers: &[Marker],
) -> String {
    let pts: Vec<&Point> = series.iter().flat_map(|s| &s.points).collect();
    if pts.is_empty() {
        return String::new();
    }
    let (x, x_label) = x_axis(xaxis, &pts);
    chart_on((title, x_title, unit), (x, &x_label), series, markers)
}

/// A line chart over runs 1..=n (oldest first), its x ticks naming runs by id and
/// date (`runs[i]` labels run i + 1), at most six of them so they do not overlap.
pub fn runs_line_chart(title: &str, unit: &Unit, runs: &[String], series: &[Series], markers: &[Marker]) -> String {
    let n = runs.len().max(1);
    let step = n.div_ceil(6);
    let ticks: Vec<f64> = (1..=n).step_by(step).map(|i| i as f64).collect();
    let x = Axis::with_ticks(0.5, n as f64 + 0.5, ticks);
    let label = |v: f64| runs.get((v.round() as usize).wrapping_sub(1)).cloned().unwrap_or_default();
    chart_on((title, "run (oldest first)", unit), (x, &label), series, markers)
}

/// The line chart of `series` on the x axis given, with `markers`.
fn chart_on(
    (title, x_title, unit): (&str, &str, &Unit),
    (x, x_label): (Axis, &dyn Fn(f64) -> String),
    series: &[Series],
    markers: &[Marker],
) -> String {
    let pts: Vec<&Point> = series.iter().flat_map(|s| &s.points).collect();
    if pts.is_empty() {
        return String::new();
    }
    let top = pts.iter().map(|p| p.interval.map_or(p.y, |i| i.1.max(p.y))).fold(0.0f64, f64::max);
    let (div, shown) = display_unit(unit, top);
    let ymin = pts.iter().map(|p| p.interval.map_or(p.y, |i| i.0.min(p.y))).fold(0.0f64, f64::min);
    let mut f = Frame {
        width: 760.0,
        height: 300.0,
        left: 64.0,
        right: 230.0,
        top: 14.0,
        bottom: 44.0,
        x,
        y: Axis::linear_from_zero(ymin / div, top / div),
        x_title,
        y_title: &shown,
        x_label,
        y_label: tick_label,
        y_scale: true,
    };
    f.left = f.left_for_labels(f.left);
    let mut svg = f.open(title);
    let mut keys: Vec<Key> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        draw_series(&mut svg, &f, s, color, (div, unit));
        keys.push(Key { color, mark: Mark::Line, text: clip(&s.name, 34) });
    }
    let any_flagged = pts.iter().any(|p| p.flagged);
    if any_flagged {
        keys.push(Key { color: RED, mark: Mark::Ring, text: "flagged: not drawn as data".into() });
    }
    if pts.iter().any(|p| p.interval.is_some()) {
        keys.push(Key { color: "#333", mark: Mark::Line, text: "bars: 95% interval".into() });
    }
    for (i, m) in markers.iter().enumerate() {
        draw_marker(&mut svg, &f, m, i);
    }
    if !markers.is_empty() {
        keys.push(Key { color: GREY, mark: Mark::Line, text: "dashed: a change point".into() });
    }
    svg.push_str(&legend(&keys, f.width - f.right + 14.0, f.top + 8.0));
    svg.push_str("</svg>");
    let note = if any_flagged { "Rings are figures a flag doubts (see Flags): shown, not joined." } else { "" };
    figure("line", title, note, &svg)
}

/// A vertical dashed line at the marker's x across the plot, its label near the top
/// (staggered over three lines, so neighbours do not print over each other), on the
/// side of the line that keeps it inside the plot.
fn draw_marker(svg: &mut String, f: &Frame<'_>, m: &Marker, i: usize) {
    let x = f.x(m.x);
    let (top, bottom) = (f.top, f.height - f.bottom);
    let right_half = x > (f.left + f.width - f.right) / 2.0;
    let (tx, anchor) = if right_half { (x - 3.0, "end") } else { (x + 3.0, "start") };
    let _ = write!(
        svg,
        r#"<line class="marker" x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="{GREY}" stroke-dasharray="5 3"/><text class="marker-label" x="{tx:.1}" y="{:.1}" font-size="10" text-anchor="{anchor}">{}</text>"#,
        top + 11.0 + 11.0 * (i % 3) as f64,
        esc(&clip(&m.label, 40))
    );
}

/// One series: its good points joined, each point's interval as an error bar, its
/// flagged points as red rings off the line; values divided by `div` (`unit` names
/// them in the tooltips).
fn draw_series(svg: &mut String, f: &Frame<'_>, s: &Series, color: &str, (div, unit): (f64, &Unit)) {
    let mut good: Vec<&Point> = s.points.iter().filter(|p| !p.flagged).collect();
    good.sort_by(|a, b| a.x.total_cmp(&b.x));
    let path: Vec<String> = good.iter().map(|p| format!("{:.1},{:.1}", f.x(p.x), f.y(p.y / div))).collect();
    let _ = write!(svg, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, path.join(" "));
    for p in &s.points {
        let (cx, cy) = (f.x(p.x), f.y(p.y / div));
        if let Some((lo, hi)) = p.interval {
            let (a, b) = (f.y(lo / div), f.y(hi / div));
            let _ = write!(
                svg,
                r#"<path class="errorbar" d="M{cx:.1},{a:.1}V{b:.1}M{:.1},{a:.1}h8M{:.1},{b:.1}h8" stroke="{color}" fill="none"/>"#,
                cx - 4.0,
                cx - 4.0
            );
        }
        let tip = esc(&format!("{}: x={} y={}", s.name, tick_label(p.x), super::fmt_value(p.y, unit)));
        let _ = if p.flagged {
            write!(
                svg,
                r##"<circle class="flagged" cx="{cx:.1}" cy="{cy:.1}" r="4.5" fill="#fff" stroke="{RED}" stroke-width="1.5"><title>{tip} (flagged)</title></circle>"##
            )
        } else {
            write!(svg, r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3" fill="{color}"><title>{tip}</title></circle>"#)
        };
    }
}

/// A histogram of a per-call row's samples between their 0.5th and 99.5th
/// percentiles, with count and value axes, the median (dashed), p99 (dotted, from 100
/// samples) and the median's 95% interval (a band) marked.
pub fn histogram(r: &ResultRow) -> String {
    let mut s: Vec<f64> = r.samples.iter().copied().filter(|x| x.is_finite()).collect();
    if s.len() < 2 {
        return String::new();
    }
    s.sort_by(f64::total_cmp);
    let (lo, hi) = histogram_range(&s);
    let (div, shown) = r.unit.scaled(hi);
    // Tight, not widened to whole steps: the bins are drawn over the axis, and a
    // widened one can leave the data on half of it.
    let x = Axis::linear_tight(lo / div, hi / div, 0.02);
    let counts = bin_counts(&s, &x, div);
    let off = s.iter().filter(|v| !x.contains(**v / div)).count();
    let width = (x.hi - x.lo) / counts.len() as f64;
    let most = counts.iter().copied().max().unwrap_or(1) as f64;
    let title = format!("{} {}", r.benchmark, r.variant_label());
    let x_title = format!("per call, {shown}");
    let mut f = Frame {
        width: 410.0,
        height: 210.0,
        left: 54.0,
        right: 26.0,
        top: 10.0,
        bottom: 44.0,
        x,
        y: Axis::linear(0.0, most),
        x_title: &x_title,
        y_title: "calls",
        x_label: &tick_label,
        y_label: tick_label,
        y_scale: true,
    };
    f.left = f.left_for_labels(f.left);
    let mut svg = f.open(&title);
    if let Some((a, b)) = r.interval() {
        let (xa, xb) = (f.x(a / div), f.x(b / div));
        let _ = write!(
            svg,
            r##"<rect class="interval" x="{xa:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#ffbf00" opacity="0.35"/>"##,
            f.top,
            (xb - xa).max(1.0),
            f.height - f.top - f.bottom
        );
    }
    for (i, c) in counts.iter().enumerate() {
        let (x0, x1) = (f.x(f.x.lo + width * i as f64), f.x(f.x.lo + width * (i + 1) as f64));
        // A bin that holds samples stays visible (at least 1 px) however tall the
        // tallest bin: a sparse tail drawn at 0.04 px would read as no data.
        let base = f.height - f.bottom;
        let height = if *c > 0 { (base - f.y(*c as f64)).max(1.0) } else { 0.0 };
        let _ = write!(
            svg,
            r##"<rect class="bar" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{height:.1}" fill="#1f77b4"/>"##,
            base - height,
            (x1 - x0 - 0.5).max(0.5),
        );
    }
    let median = stats::quantile_sorted(&s, 0.5);
    let p99 = (s.len() >= super::table::P99_MIN_SAMPLES).then(|| stats::quantile_sorted(&s, 0.99));
    let marks: Vec<(&str, f64, &str)> =
        std::iter::once(("median", median, "5 3")).chain(p99.map(|v| ("p99", v, "2 2"))).collect();
    for (name, v, dash) in marks {
        let px = f.x(v / div);
        let _ = write!(
            svg,
            r##"<line class="mark" x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#222" stroke-width="1.5" stroke-dasharray="{dash}"><title>{name} {}</title></line>"##,
            f.top,
            f.height - f.bottom,
            esc(&super::fmt_value(v, &r.unit))
        );
    }
    svg.push_str("</svg>");
    let mut note = histogram_note(r, s.len(), median, p99);
    if off > 0 {
        let _ = write!(note, "; {off} beyond the axis (up to {})", esc(&super::fmt_value(s[s.len() - 1], &r.unit)));
    }
    figure("hist", &title, &note, &svg)
}

/// The span a histogram's axis covers, chosen from the data so its bins show the
/// bulk of it: the 0.5th to 99.5th percentiles, narrowed to three interquartile
/// ranges beyond the quartiles where a few far samples would stretch the axis until
/// every other sample fell in one bar (those past it are counted in the caption).
/// Each end is then drawn in to the outermost sample inside it, so the first and
/// last bins hold data (an interpolated percentile between a sparse tail's samples
/// would leave an empty stretch at the edge).
fn histogram_range(sorted: &[f64]) -> (f64, f64) {
    let q = |p| stats::quantile_sorted(sorted, p);
    let (lo, hi) = (q(0.005), q(0.995));
    let (q1, q3) = (q(0.25), q(0.75));
    let iqr = q3 - q1;
    let (lo, hi) = if iqr <= 0.0 { (lo, hi) } else { (lo.max(q1 - 3.0 * iqr), hi.min(q3 + 3.0 * iqr)) };
    let first = sorted.iter().copied().find(|v| *v >= lo).unwrap_or(lo);
    let last = sorted.iter().rev().copied().find(|v| *v <= hi).unwrap_or(hi);
    if first < last { (first, last) } else { (lo, hi) }
}

/// How many of the samples (in `x`'s unit once divided by `div`) fall in each of
/// forty equal bins of the axis; samples off the axis are not counted.
fn bin_counts(sorted: &[f64], x: &Axis, div: f64) -> Vec<u64> {
    let bins = 40;
    let width = (x.hi - x.lo) / bins as f64;
    let mut counts = vec![0u64; bins];
    for &v in sorted {
        let b = ((v / div - x.lo) / width).floor();
        if b >= 0.0 && (v / div) <= x.hi {
            counts[(b as usize).min(bins - 1)] += 1;
        }
    }
    counts
}

/// A histogram's caption line: the samples, and what each mark is.
fn histogram_note(r: &ResultRow, n: usize, median: f64, p99: Option<f64>) -> String {
    let mut note = format!("{n} samples; dashed: median {}", esc(&super::fmt_value(median, &r.unit)));
    if let Some(v) = p99 {
        let _ = write!(note, "; dotted: p99 {}", esc(&super::fmt_value(v, &r.unit)));
    }
    if r.interval().is_some() {
        note.push_str("; band: the median's 95% interval");
    }
    note
}

/// The colour and mark of a verdict, and its legend entry: at most 31 characters, what
/// the legend's column (164 px right of its marks, font size 10) fits.
fn verdict_style(verdict: Verdict) -> (&'static str, Mark, &'static str) {
    match verdict {
        Verdict::Faster => (GREEN, Mark::Dot, "faster (B lower)"),
        Verdict::Slower => (RED, Mark::Dot, "slower (B higher)"),
        Verdict::Higher | Verdict::Lower => ("#9467bd", Mark::Dot, "higher / lower (a rate)"),
        Verdict::NoChange => ("#1f77b4", Mark::Dot, "no change"),
        Verdict::Uncertain(Doubt::NotASwitch) => (GREY, Mark::Ring, "no verdict: not a switch's cost"),
        Verdict::Uncertain(Doubt::Flagged(_)) => (GREY, Mark::Ring, "no verdict: a flag doubts it"),
        Verdict::Uncertain(Doubt::MachineNoise) => (GREY, Mark::Ring, "no verdict: noise runs disagree"),
        Verdict::Uncertain(Doubt::BusyMachine) => (GREY, Mark::Ring, "no verdict: busy machine"),
        Verdict::Uncertain(Doubt::BoardMoved) => (GREY, Mark::Ring, "no verdict: every figure moved"),
        Verdict::Uncertain(
            Doubt::Straddles
            | Doubt::BelowMde
            | Doubt::DesignTooWeak
            | Doubt::OneRound
            | Doubt::NoInterval
            | Doubt::Chance(_),
        ) => (GREY, Mark::Dot, "uncertain"),
    }
}

/// Ratios on a log axis that holds every interval and 1.
/// A log axis over ratios given as (ratio, interval low, interval high).
fn ratio_axis(cells: impl Iterator<Item = (f64, f64, f64)>) -> Axis {
    let (lo, hi) = cells.fold((1.0f64, 1.0f64), |(a, b), (ratio, ci_low, ci_high)| {
        let (l, h) = if ci_low.is_finite() { (ci_low, ci_high) } else { (ratio, ratio) };
        (a.min(l).min(ratio), b.max(h).max(ratio))
    });
    Axis::log10(lo.min(0.95), hi.max(1.05))
}

/// The frame of a chart of labelled rows (a row per figure, `rows_height` tall in
/// all): labels on the left, the value axis `x` below, the legend on the right.
fn rows_frame<'a>(x: Axis, x_title: &'a str, rows_height: f64) -> Frame<'a> {
    Frame {
        width: 1000.0,
        height: 60.0 + rows_height,
        left: 430.0,
        right: 200.0,
        top: 10.0,
        bottom: 44.0,
        x,
        y: Axis::linear(0.0, 1.0),
        x_title,
        y_title: "",
        x_label: &tick_label,
        y_label: |_| String::new(),
        y_scale: false,
    }
}

/// A row's label at height `y`: clipped to fit, whole in its tooltip.
fn row_label(svg: &mut String, y: f64, label: &str) {
    let _ = write!(
        svg,
        r#"<text x="4" y="{:.1}" font-size="10"><title>{}</title>{}</text>"#,
        y + 3.5,
        esc(label),
        esc(&clip(label, 78))
    );
}

/// A ratio chart's opening: the frame's axes and the dashed line at 1. Returns the
/// SVG so far and the position of 1.
fn ratio_frame(f: &Frame<'_>, title: &str) -> (String, f64) {
    let mut svg = f.open(title);
    let one = f.x(1.0);
    let _ = write!(
        svg,
        r##"<line x1="{one:.1}" y1="{}" x2="{one:.1}" y2="{}" stroke="#555" stroke-dasharray="4"/>"##,
        f.top,
        f.height - f.bottom
    );
    (svg, one)
}

/// One row of a forest plot: a figure's ratio, its interval and its verdict.
pub struct Forest {
    pub label: String,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub verdict: Verdict,
}

/// The forest plot of B/A ratios: a row per figure, its ratio as a dot coloured by its
/// verdict and its 95% interval as a whisker, on a log axis with 1 dashed.
pub fn ratio_bars(rows: &[Comparison]) -> String {
    let rows: Vec<Forest> = rows
        .iter()
        .map(|c| Forest {
            label: format!("{} {} ({})", c.key.bench, c.key.variant(), c.key.method.as_str()),
            ratio: c.ratio,
            ci_low: c.ci_low,
            ci_high: c.ci_high,
            verdict: c.verdict,
        })
        .collect();
    let caption =
        "Each figure's ratio of medians (dot) with its 95% interval (line); left of the dashed line B is lower.";
    forest("B/A ratios", "B/A ratio of medians (log scale)", caption, &rows)
}

/// A paired run's conditions: a forest plot per condition, each figure's ratio to the
/// baseline measured in the same rounds, with its paired interval.
pub fn paired_bars(pairs: &[crate::judge::paired::PairedFigure]) -> String {
    let mut conditions: Vec<&str> = Vec::new();
    for p in pairs {
        if !conditions.contains(&p.condition.as_str()) {
            conditions.push(&p.condition);
        }
    }
    let mut h = String::new();
    for c in conditions {
        let rows: Vec<Forest> = pairs
            .iter()
            .filter(|p| p.condition == c)
            .map(|p| Forest {
                label: format!("{} {} ({})", p.key.bench, p.key.variant(), p.key.method.as_str()),
                ratio: p.ratio,
                ci_low: p.ci_low,
                ci_high: p.ci_high,
                verdict: p.verdict,
            })
            .collect();
        let title = format!("{c} against the baseline");
        let caption = "Each figure's paired ratio to the baseline measured in the same rounds (dot) with its 95% interval from the resampled pairs of rounds (line); right of the dashed line the condition costs more.";
        h.push_str(&forest(&title, "condition / baseline (log scale)", caption, &rows));
    }
    h
}

/// A forest plot of ratios (see [`ratio_bars`]).
fn forest(title: &str, axis: &str, caption: &str, rows: &[Forest]) -> String {
    let rows: Vec<&Forest> = rows.iter().filter(|c| c.ratio.is_finite() && c.ratio > 0.0).collect();
    if rows.is_empty() {
        return String::new();
    }
    let row_h = 16.0;
    let f =
        rows_frame(ratio_axis(rows.iter().map(|c| (c.ratio, c.ci_low, c.ci_high))), axis, row_h * rows.len() as f64);
    let (mut svg, _) = ratio_frame(&f, title);
    let mut keys: Vec<Key> = Vec::new();
    for (i, c) in rows.iter().enumerate() {
        let y = f.top + row_h * (i as f64 + 0.5);
        let (color, mark, name) = verdict_style(c.verdict);
        if !keys.iter().any(|k| k.text == name) {
            keys.push(Key { color, mark, text: name.into() });
        }
        let label = &c.label;
        row_label(&mut svg, y, label);
        if c.ci_low.is_finite() && c.ci_high.is_finite() {
            let _ = write!(
                svg,
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2"/>"#,
                f.x(c.ci_low),
                f.x(c.ci_high)
            );
        }
        let tip = esc(&format!("{label}: {:.3} [{:.3}, {:.3}] {}", c.ratio, c.ci_low, c.ci_high, c.verdict));
        let _ = match mark {
            Mark::Ring => write!(
                svg,
                r##"<circle class="ratio" cx="{:.1}" cy="{y:.1}" r="4" fill="#fff" stroke="{color}" stroke-width="1.5"><title>{tip}</title></circle>"##,
                f.x(c.ratio)
            ),
            _ => write!(
                svg,
                r#"<circle class="ratio" cx="{:.1}" cy="{y:.1}" r="3.5" fill="{color}"><title>{tip}</title></circle>"#,
                f.x(c.ratio)
            ),
        };
    }
    keys.push(Key { color: "#555", mark: Mark::Dashed, text: "1: no difference".into() });
    svg.push_str(&legend(&keys, f.width - f.right + 14.0, f.top + 8.0));
    svg.push_str("</svg>");
    figure("forest", title, caption, &svg)
}

/// Grouped bars: a group per figure, in it a bar per compared side from 1 to its
/// ratio to the baseline, with the interval as a whisker; the baseline is the dashed
/// line at 1.
pub fn grouped_bars(m: &Matrix) -> String {
    let rows: Vec<_> = m.rows.iter().filter(|r| r.cells.iter().flatten().any(|c| c.ratio > 0.0)).collect();
    let sides = m.columns.len().saturating_sub(1);
    if rows.is_empty() || sides == 0 {
        return String::new();
    }
    let bar_h = 7.0;
    let group_h = bar_h * sides as f64 + 6.0;
    let cells = rows
        .iter()
        .flat_map(|r| r.cells.iter().flatten())
        .filter(|c| c.ratio > 0.0)
        .map(|c| (c.ratio, c.ci_low, c.ci_high));
    let x_title = "ratio to the baseline's median (log scale)";
    let f = rows_frame(ratio_axis(cells), x_title, group_h * rows.len() as f64);
    let (mut svg, one) = ratio_frame(&f, "ratios to the baseline");
    let mut keys: Vec<Key> = m
        .columns
        .iter()
        .skip(1)
        .enumerate()
        .map(|(i, c)| Key { color: PALETTE[i % PALETTE.len()], mark: Mark::Bar, text: clip(&c.name, 30) })
        .collect();
    keys.push(Key { color: "#555", mark: Mark::Dashed, text: format!("1: {}", clip(&m.columns[0].name, 27)) });
    for (g, r) in rows.iter().enumerate() {
        let top = f.top + 3.0 + group_h * g as f64;
        let label = format!("{} {} ({})", r.key.bench, r.key.variant(), r.key.method.as_str());
        row_label(&mut svg, top + group_h / 2.0 - 3.5, &label);
        for (i, c) in r.cells.iter().enumerate() {
            let Some(c) = c.as_ref().filter(|c| c.ratio > 0.0) else { continue };
            let color = PALETTE[i % PALETTE.len()];
            let y = top + bar_h * i as f64;
            let (x0, x1) = (one.min(f.x(c.ratio)), one.max(f.x(c.ratio)));
            let _ = write!(
                svg,
                r##"<rect class="ratio" x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{}</title></rect>"##,
                (x1 - x0).max(1.0),
                bar_h - 1.0,
                esc(&format!("{label}: {:.3} {}", c.ratio, c.verdict))
            );
            if c.ci_low.is_finite() && c.ci_high.is_finite() {
                let _ = write!(
                    svg,
                    r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#222"/>"##,
                    f.x(c.ci_low),
                    y + bar_h / 2.0,
                    f.x(c.ci_high),
                    y + bar_h / 2.0
                );
            }
        }
    }
    svg.push_str(&legend(&keys, f.width - f.right + 14.0, f.top + 8.0));
    svg.push_str("</svg>");
    figure(
        "bars",
        "Ratios to the baseline",
        "Each side's median over the baseline's (the dashed line), with its 95% interval as a whisker.",
        &svg,
    )
}

/// The overview of a set of rows that share a unit: a row per figure, its median as
/// a dot and its interval as a whisker, on a linear axis from zero (a log axis when
/// the figures span more than twenty-fold). Every row given is drawn.
pub fn overview(title: &str, rows: &[&ResultRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let (lo, hi, div, shown) = overview_scale(rows);
    let smallest = rows.iter().map(|r| r.median).filter(|m| *m > 0.0).fold(f64::INFINITY, f64::min);
    let log = lo > 0.0 && hi / smallest > 20.0;
    let x = if log { Axis::log10(lo / div, hi / div) } else { Axis::linear_from_zero(lo / div, hi / div) };
    let row_h = 16.0;
    let x_title = format!("{shown}{}", if log { " (log scale)" } else { "" });
    let f = rows_frame(x, &x_title, row_h * rows.len() as f64);
    let mut svg = f.open(title);
    let shared = shared_params(rows);
    for (i, r) in rows.iter().enumerate() {
        let own: Vec<String> = r.variant_params().into_iter().filter(|p| !shared.contains(p)).collect();
        let label = format!("{} {} ({})", r.benchmark, own.join(" "), r.method.as_str());
        draw_figure_row(&mut svg, &f, f.top + row_h * (i as f64 + 0.5), (r, &label), div);
    }
    let any_interval = rows.iter().any(|r| r.interval().is_some());
    let any_bare = rows.iter().any(|r| r.interval().is_none());
    let any_flagged = rows.iter().any(|r| r.flags.iter().any(|f| f.flag.doubts_figure()));
    let mut keys = vec![Key { color: "#1f77b4", mark: Mark::Dot, text: "median".into() }];
    if any_interval {
        keys.push(Key { color: "#1f77b4", mark: Mark::Line, text: "95% interval".into() });
    }
    if any_flagged {
        keys.push(Key { color: RED, mark: Mark::Ring, text: "flagged (see Flags)".into() });
    }
    svg.push_str(&legend(&keys, f.width - f.right + 14.0, f.top + 8.0));
    svg.push_str("</svg>");
    let mut note = String::from(if any_bare && !any_interval {
        "Deterministic or single-window figures: no interval."
    } else if any_bare {
        "A dot without a line has no interval (one window, or a fitted or simulated value)."
    } else {
        ""
    });
    if !shared.is_empty() {
        let _ = write!(note, "{}Every row: {}.", if note.is_empty() { "" } else { " " }, esc(&shared.join(" ")));
    }
    figure("overview", title, &note, &svg)
}

/// A figure's row of the overview at height `y`: its label, its interval as a line,
/// its median as a dot (a red ring when a flag doubts it); values divided by `div`.
fn draw_figure_row(svg: &mut String, f: &Frame<'_>, y: f64, (r, label): (&ResultRow, &str), div: f64) {
    row_label(svg, y, label);
    if let Some((a, b)) = r.interval() {
        let _ = write!(
            svg,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#1f77b4" stroke-width="2"/>"##,
            f.x(a / div),
            f.x(b / div)
        );
    }
    let tip = esc(&format!("{label}: {}", super::figure_with_interval(r)));
    let cx = f.x(r.median / div);
    let _ = if r.flags.iter().any(|f| f.flag.doubts_figure()) {
        write!(
            svg,
            r##"<circle class="figure-mark flagged" cx="{cx:.1}" cy="{y:.1}" r="4" fill="#fff" stroke="{RED}" stroke-width="1.5"><title>{tip}</title></circle>"##
        )
    } else {
        write!(
            svg,
            r##"<circle class="figure-mark" cx="{cx:.1}" cy="{y:.1}" r="3.5" fill="#1f77b4"><title>{tip}</title></circle>"##
        )
    };
}

/// The parameters every one of several rows has with the same value: said once in
/// the caption rather than on every row, where they would push the parameters that
/// tell the rows apart out of sight.
fn shared_params(rows: &[&ResultRow]) -> Vec<String> {
    let [first, rest @ ..] = rows else { return Vec::new() };
    if rest.is_empty() {
        return Vec::new();
    }
    let others: Vec<Vec<String>> = rest.iter().map(|r| r.variant_params()).collect();
    first.variant_params().into_iter().filter(|p| others.iter().all(|o| o.contains(p))).collect()
}

/// Rows that sit on one overview chart: the same family (the id's part before the
/// dot) and unit, in the run's order.
pub fn overview_groups(results: &[ResultRow]) -> Vec<(String, Vec<&ResultRow>)> {
    let mut groups: Vec<(String, Vec<&ResultRow>)> = Vec::new();
    for r in results.iter().filter(|r| r.median.is_finite()) {
        let family = r.benchmark.split('.').next().unwrap_or(&r.benchmark);
        let key = format!("{family}, {}", r.unit);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    // The title names the unit the axis shows (µs/call, not the stored ns/call).
    for (title, rows) in &mut groups {
        let family = title.split(", ").next().unwrap_or_default().to_string();
        *title = format!("{family}, {}", overview_scale(rows).3);
    }
    groups
}

/// An overview's span (its rows' medians and intervals) and the unit it is shown in:
/// (lo, hi, divisor, unit shown).
fn overview_scale(rows: &[&ResultRow]) -> (f64, f64, f64, String) {
    let ends = |r: &&ResultRow| r.interval().map_or((r.median, r.median), |(l, h)| (l.min(r.median), h.max(r.median)));
    let (lo, hi) =
        rows.iter().map(ends).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (l, h)| (a.min(l), b.max(h)));
    let (div, shown) = rows.first().map_or((1.0, String::new()), |r| display_unit(&r.unit, hi));
    (lo, hi, div, shown)
}

/// Whether a row is drawn as a histogram (per-call samples enough to bin).
pub fn has_histogram(r: &ResultRow) -> bool {
    r.method == Method::PerCall && r.samples.len() >= 10
}

#[cfg(test)]
mod tests {
    /// The most characters a legend entry holds (see `verdict_style`).
    const LEGEND_CHARS: usize = 31;

    #[test]
    fn every_verdicts_legend_entry_fits_the_legend_column() {
        use crate::stats::verdict::{Doubt, Verdict};
        let doubts = [
            Doubt::Straddles,
            Doubt::BelowMde,
            Doubt::DesignTooWeak,
            Doubt::OneRound,
            Doubt::NoInterval,
            Doubt::NotASwitch,
            Doubt::Flagged("modes"),
            Doubt::MachineNoise,
            Doubt::BusyMachine,
            Doubt::BoardMoved,
            Doubt::Chance(58),
        ];
        let verdicts = [Verdict::Faster, Verdict::Slower, Verdict::Higher, Verdict::Lower, Verdict::NoChange]
            .into_iter()
            .chain(doubts.map(Verdict::Uncertain));
        for v in verdicts {
            let (_, _, text) = super::verdict_style(v);
            assert!(text.chars().count() <= LEGEND_CHARS, "{v:?}: {text}");
        }
    }

    use super::*;
    use crate::model::{Flag, FlagCode};

    fn row(bench: &str, median: f64) -> ResultRow {
        let samples: Vec<f64> = (0..200).map(|i| median + (i % 20) as f64).collect();
        ResultRow::from_samples(bench, Method::PerCall, "ns/call", samples, 200).unwrap()
    }

    #[test]
    fn the_overview_draws_every_figure_and_marks_the_flagged() {
        let mut rows: Vec<ResultRow> = (0..70).map(|i| row(&format!("syscall.b{i}"), 100.0 + i as f64)).collect();
        rows[3].flag(Flag::new(FlagCode::TraceDisagrees, "trace saw fewer"));
        let refs: Vec<&ResultRow> = rows.iter().collect();
        let svg = overview("syscall", &refs);
        assert_eq!(svg.matches("class=\"figure-mark").count(), 70, "none cut");
        assert_eq!(svg.matches("figure-mark flagged").count(), 1);
        assert!(svg.matches("class=\"tick x\"").count() >= 2, "the value axis has ticks");
        assert!(svg.contains("flagged (see Flags)"), "the ring is in the legend");
    }

    #[test]
    fn parameters_every_row_shares_are_said_once() {
        let a = row("sim.travis", 10.0).with_param("profile", "pentium200").with_param("tasks", 2);
        let b = row("sim.travis", 20.0).with_param("profile", "pentium200").with_param("tasks", 4);
        assert_eq!(shared_params(&[&a, &b]), vec!["profile=pentium200".to_string()]);
        assert!(shared_params(&[&a]).is_empty(), "one row keeps its label whole");
        let svg = overview("sim", &[&a, &b]);
        assert!(
            svg.contains("Every row: profile=pentium200.") && svg.contains("sim.travis tasks=4 (per_call)"),
            "{svg}"
        );
    }

    #[test]
    fn a_flagged_point_is_a_ring_off_the_line() {
        let s = Series {
            name: "yield process".into(),
            points: vec![
                Point { x: 2.0, y: 300.0, interval: Some((290.0, 310.0)), flagged: false },
                Point { x: 4.0, y: 320.0, interval: Some((300.0, 330.0)), flagged: false },
                Point { x: 1024.0, y: 9.8, interval: None, flagged: true },
            ],
        };
        let svg = line_chart("t", "runnable tasks", &Unit::NsPerSwitch, XAxis::Log2Count, &[s]);
        let line = svg.split("<polyline").nth(1).unwrap().split("/>").next().unwrap();
        assert_eq!(line.matches(',').count(), 2, "only the two good points are joined: {line}");
        assert_eq!(svg.matches("class=\"flagged\"").count(), 1);
        assert_eq!(svg.matches("class=\"errorbar\"").count(), 2);
        for t in ["2", "4", "1024"] {
            assert!(svg.contains(&format!(">{t}</text>")), "x tick {t}");
        }
    }

    #[test]
    fn histograms_have_axes_and_marks() {
        let r = row("ctx.pipe", 1000.0);
        let svg = histogram(&r);
        assert!(svg.matches("class=\"tick y\"").count() >= 2 && svg.matches("class=\"tick x\"").count() >= 2);
        assert!(svg.contains(">calls</text>") && svg.contains("per call, ns/call"));
        assert_eq!(svg.matches("class=\"mark\"").count(), 2, "median and p99 from 200 samples");
        let thin = ResultRow::from_samples("x.y", Method::PerCall, "ns", (0..50).map(f64::from).collect(), 50).unwrap();
        assert_eq!(histogram(&thin).matches("class=\"mark\"").count(), 1, "no p99 from 50 samples");
    }

    /// The x extent of each `rect.bar` in `svg`, and whether it holds samples.
    fn bars(svg: &str) -> Vec<(f64, f64, bool)> {
        let attr = |tag: &str, name: &str| -> f64 {
            let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
        };
        svg.split("<rect class=\"bar\"")
            .skip(1)
            .map(|t| (attr(t, "x"), attr(t, "x") + attr(t, "width"), attr(t, "height") > 0.0))
            .collect()
    }

    #[test]
    fn a_skewed_histogram_spreads_its_bins_over_the_axis() {
        // A floor near 540, most samples within 30%, a tail to four times the floor:
        // the shape fork+exec's per-call rows have. The bins holding samples reach
        // across nearly the whole drawn axis, not the half a whole-step axis would leave.
        let mut s: Vec<f64> = (0..60).map(|i| 542.0 + 11.0 * f64::from(i)).collect();
        s.extend([1231.0, 1500.0, 2200.0]);
        let r = ResultRow::from_samples("spawn.fork_exec", Method::PerCall, "µs", s, 63).unwrap();
        let b = bars(&histogram(&r));
        let held: Vec<_> = b.iter().filter(|x| x.2).collect();
        let span = |v: &[&(f64, f64, bool)]| {
            v.iter().map(|x| x.1).fold(f64::MIN, f64::max) - v.iter().map(|x| x.0).fold(f64::MAX, f64::min)
        };
        let all: Vec<_> = b.iter().collect();
        assert!(span(&held) >= 0.9 * span(&all), "{} of {}", span(&held), span(&all));
    }

    #[test]
    fn ratios_far_from_one_are_inside_the_axis() {
        let c = Comparison {
            key: crate::model::FigureKey::new(
                "ctx.futex".into(),
                crate::model::Method::Batch,
                crate::model::Params::new().with(crate::key::Param::<crate::key::Text>::new("mode"), "process"),
            ),
            unit: "ns/hand-off".into(),
            a_median: 100.0,
            b_median: 1.3,
            a_centre: 100.0,
            b_centre: 1.3,
            estimator: crate::report::compare::Estimator::UnitGeomean,
            ratio: 0.013,
            ci_low: 0.01,
            ci_high: 0.02,
            df: 8.0,
            verdict: Verdict::Uncertain(Doubt::NotASwitch),
            mde: f64::NAN,
            threshold: 0.03,
            between_runs: None,
            a_runs: 1,
            a_rounds: 5,
            b_runs: 1,
            b_rounds: 5,
        };
        let svg = ratio_bars(&[c]);
        assert!(svg.contains(">0.01</text>") && svg.contains(">1</text>"), "{svg}");
        assert!(svg.contains("not a switch"), "the ring has a legend entry");
    }
}
