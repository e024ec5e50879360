//! Chart geometry for the HTML report: axes with readable ticks and a plot frame that
//! draws them. A chart without numbers on its axes asks the reader to trust its shape;
//! here every axis has tick marks, tick labels in one unit, and a title naming that
//! unit, and legends sit outside the plotting area so they never cover a line.
//!
//! Ticks: 1, 2 and 5 times a power of ten on a linear axis; powers of ten (with 2 and 5
//! between them over short ranges) on a log-10 axis; powers of two, thinned, on a
//! log-2 axis. Pure functions from numbers to SVG text.

use std::fmt::Write;

use super::esc;

/// Fewest tick labels an axis carries (a reader needs two to read a scale).
pub const MIN_TICKS: usize = 2;

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    /// Logarithmic, ticks at powers of the base.
    Log(f64),
}

/// An axis: its domain (already widened to ticks) and scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub scale: Scale,
    ticks: Vec<f64>,
}

/// The step of about `target` intervals over `span`: 1, 2 or 5 times a power of ten.
fn nice_step(span: f64, target: f64) -> f64 {
    let raw = (span / target).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

impl Axis {
    /// A linear axis covering `lo..=hi`, widened outward to whole steps.
    pub fn linear(lo: f64, hi: f64) -> Axis {
        let (lo, hi) = if lo.is_finite() && hi.is_finite() { (lo.min(hi), lo.max(hi)) } else { (0.0, 1.0) };
        let (lo, hi) = if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            // One value: a span around it, so it is drawn inside the frame.
            let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
            (lo - pad, hi + pad)
        } else {
            (lo, hi)
        };
        let step = nice_step(hi - lo, 5.0);
        let (a, b) = ((lo / step).floor(), (hi / step).ceil());
        let ticks: Vec<f64> = (0..=((b - a) as i64)).map(|i| (a + i as f64) * step).collect();
        Axis { lo: a * step, hi: b * step, scale: Scale::Linear, ticks }
    }

    /// A linear axis over exactly `lo..=hi` padded by `pad` of its span each side,
    /// with round ticks inside it: for a histogram, whose bins are drawn over the
    /// axis, so a widened axis would leave its data in a corner (whole-step
    /// widening can double the span). At least [`MIN_TICKS`] ticks: a step at most
    /// half the span has two multiples inside it.
    pub fn linear_tight(lo: f64, hi: f64, pad: f64) -> Axis {
        let wide = Axis::linear(lo, hi);
        let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo { (lo, hi) } else { (wide.lo, wide.hi) };
        let margin = (hi - lo) * pad.max(0.0);
        let (lo, hi) = (lo - margin, hi + margin);
        let step = nice_step(hi - lo, 5.0);
        let ticks: Vec<f64> =
            ((lo / step).ceil() as i64..=(hi / step).floor() as i64).map(|i| i as f64 * step).collect();
        if ticks.len() < MIN_TICKS {
            return wide;
        }
        Axis { lo, hi, scale: Scale::Linear, ticks }
    }

    /// A linear axis from zero (or from the data's minimum when it is negative).
    pub fn linear_from_zero(lo: f64, hi: f64) -> Axis {
        Axis::linear(lo.min(0.0), hi.max(0.0))
    }

    /// A log-10 axis covering `lo..=hi` (both above zero), widened outward to ticks:
    /// powers of ten, with 2 and 5 between them when the range spans few decades.
    pub fn log10(lo: f64, hi: f64) -> Axis {
        let (lo, hi) = positive_span(lo, hi);
        let decades = (hi.log10().ceil() - lo.log10().floor()) as i32;
        let mantissas: &[f64] = if decades <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
        let first = lo.log10().floor() as i32;
        let mut all: Vec<f64> = Vec::new();
        for e in first..=(hi.log10().ceil() as i32) {
            for m in mantissas {
                all.push(m * 10f64.powi(e));
            }
        }
        let ticks = enclosing(&all, lo, hi);
        let ticks = thin(ticks, 9);
        Axis { lo: ticks[0].min(lo), hi: ticks[ticks.len() - 1].max(hi), scale: Scale::Log(10.0), ticks }
    }

    /// A log-2 axis covering `lo..=hi` (both above zero): powers of two, thinned to
    /// at most ten labels.
    pub fn log2(lo: f64, hi: f64) -> Axis {
        let (lo, hi) = positive_span(lo, hi);
        let all: Vec<f64> = ((lo.log2().floor() as i32)..=(hi.log2().ceil() as i32)).map(|e| 2f64.powi(e)).collect();
        let ticks = thin(enclosing(&all, lo, hi), 10);
        Axis { lo: ticks[0].min(lo), hi: ticks[ticks.len() - 1].max(hi), scale: Scale::Log(2.0), ticks }
    }

    /// A linear axis over `lo..=hi` with ticks at the given values (places that mean
    /// something, such as runs), not at round steps.
    pub fn with_ticks(lo: f64, hi: f64, ticks: Vec<f64>) -> Axis {
        Axis { lo, hi, scale: Scale::Linear, ticks }
    }

    /// The tick values, in increasing order (at least [`MIN_TICKS`]).
    pub fn ticks(&self) -> &[f64] {
        &self.ticks
    }

    /// Where `v` falls along the axis, 0 at `lo` and 1 at `hi` (clamped).
    pub fn frac(&self, v: f64) -> f64 {
        let f = match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log(_) => {
                let v = v.max(self.lo.min(f64::MIN_POSITIVE.max(self.lo)));
                (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
            }
        };
        if f.is_finite() { f.clamp(0.0, 1.0) } else { 0.0 }
    }

    /// Whether `v` lies inside the domain (a value outside is drawn at the edge, so
    /// the chart marks it).
    pub fn contains(&self, v: f64) -> bool {
        v >= self.lo && v <= self.hi && (self.scale == Scale::Linear || v > 0.0)
    }
}

/// A positive span for a log axis: non-positive or missing ends replaced.
fn positive_span(lo: f64, hi: f64) -> (f64, f64) {
    let hi = if hi.is_finite() && hi > 0.0 { hi } else { 1.0 };
    let lo = if lo.is_finite() && lo > 0.0 { lo.min(hi) } else { hi / 10.0 };
    if hi / lo < 1.0001 { (lo / 2.0, hi * 2.0) } else { (lo, hi) }
}

/// The candidates from the last one at or below `lo` to the first at or above `hi`.
fn enclosing(all: &[f64], lo: f64, hi: f64) -> Vec<f64> {
    let start = all.iter().rposition(|&t| t <= lo * (1.0 + 1e-9)).unwrap_or(0);
    let end = all.iter().position(|&t| t >= hi * (1.0 - 1e-9)).unwrap_or(all.len() - 1);
    all[start..=end.max(start + 1).min(all.len() - 1)].to_vec()
}

/// Every k-th tick so that at most `most` remain, keeping both ends.
fn thin(ticks: Vec<f64>, most: usize) -> Vec<f64> {
    if ticks.len() <= most {
        return ticks;
    }
    let k = ticks.len().div_ceil(most);
    let last = ticks.len() - 1;
    ticks.iter().enumerate().filter(|(i, _)| i % k == 0 || *i == last).map(|(_, &t)| t).collect()
}

/// A tick value as a reader writes it: up to three significant digits, no exponent,
/// no trailing zeros ("0.013", "2.5", "1000").
pub fn tick_label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// A byte count as a tick: "512 B", "4 KiB", "64 MiB".
pub fn bytes_label(v: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut v = v;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", tick_label(v), units[i])
}

/// The width a tick label's character takes at most, in pixels (10-pixel font).
pub const TICK_CHAR_WIDTH: f64 = 6.5;

/// A plot's frame: its size, the margins around the plotting area, its axes and
/// their titles. Positions inside the area come from [`Frame::x`] and [`Frame::y`].
pub struct Frame<'a> {
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    pub x: Axis,
    pub y: Axis,
    pub x_title: &'a str,
    pub y_title: &'a str,
    /// How tick values print on each axis (a closure where the labels are not the
    /// values themselves, such as a run's id and date on a history's x axis).
    pub x_label: &'a dyn Fn(f64) -> String,
    pub y_label: fn(f64) -> String,
    /// Whether the y axis is a scale (ticks, labels, grid) or only rows of labelled
    /// figures drawn by the chart itself.
    pub y_scale: bool,
}

impl Frame<'_> {
    /// The horizontal position of `v`.
    pub fn x(&self, v: f64) -> f64 {
        self.left + self.x.frac(v) * (self.width - self.left - self.right)
    }

    /// The vertical position of `v` (larger values higher).
    pub fn y(&self, v: f64) -> f64 {
        self.height - self.bottom - self.y.frac(v) * (self.height - self.top - self.bottom)
    }

    /// The widest y tick label, in pixels (10-pixel digits are at most about 6.5 wide).
    fn y_labels_width(&self) -> f64 {
        let widest = self.y.ticks().iter().filter(|_| self.y_scale).map(|&t| (self.y_label)(t).chars().count()).max();
        widest.unwrap_or(0) as f64 * TICK_CHAR_WIDTH
    }

    /// Where the y axis title's baseline stands: left of the widest tick label with a
    /// gap (the rotated title reaches about 9 pixels left of its baseline and 3 right),
    /// never off the chart.
    fn y_title_x(&self) -> f64 {
        (self.left - 6.0 - self.y_labels_width() - 6.0).max(11.0)
    }

    /// The left margin that holds the y tick labels and the axis title beside them
    /// without overlap: at least `left`.
    pub fn left_for_labels(&self, left: f64) -> f64 {
        left.max(6.0 + self.y_labels_width() + 6.0 + 12.0 + 4.0)
    }

    /// The opening `<svg>` with background, grid, both axes with ticks and labels, and
    /// the axis titles. `title` is the chart's accessible name.
    pub fn open(&self, title: &str) -> String {
        let (w, h) = (self.width, self.height);
        let (x0, x1, y0, y1) = (self.left, w - self.right, self.top, h - self.bottom);
        let mut s = format!(
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img"><title>{t}</title><rect width="100%" height="100%" fill="#fff"/>"##,
            t = esc(title)
        );
        for &t in self.x.ticks() {
            let px = self.x(t);
            let _ = write!(
                s,
                r##"<line x1="{px:.1}" y1="{y0:.1}" x2="{px:.1}" y2="{y1:.1}" stroke="#eee"/><line x1="{px:.1}" y1="{y1:.1}" x2="{px:.1}" y2="{:.1}" stroke="#333"/><text class="tick x" x="{px:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"##,
                y1 + 4.0,
                y1 + 15.0,
                esc(&(self.x_label)(t))
            );
        }
        for &t in self.y.ticks().iter().filter(|_| self.y_scale) {
            let py = self.y(t);
            let _ = write!(
                s,
                r##"<line x1="{x0:.1}" y1="{py:.1}" x2="{x1:.1}" y2="{py:.1}" stroke="#eee"/><line x1="{:.1}" y1="{py:.1}" x2="{x0:.1}" y2="{py:.1}" stroke="#333"/><text class="tick y" x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
                x0 - 4.0,
                x0 - 6.0,
                py + 3.5,
                esc(&(self.y_label)(t))
            );
        }
        let _ = write!(
            s,
            r##"<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="#333"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#333"/><text class="axis-title x" x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text><text class="axis-title y" transform="translate({:.1} {:.1}) rotate(-90)" font-size="11" text-anchor="middle">{}</text>"##,
            (x0 + x1) / 2.0,
            y1 + 30.0,
            esc(self.x_title),
            self.y_title_x(),
            (y0 + y1) / 2.0,
            esc(self.y_title)
        );
        s
    }
}

/// A legend entry: its colour, how it is drawn, and its words.
pub struct Key<'a> {
    pub color: &'a str,
    pub mark: Mark,
    pub text: String,
}

/// How a legend entry is drawn.
#[derive(Clone, Copy)]
pub enum Mark {
    Line,
    Dot,
    /// A hollow ring: a point drawn but not counted as data (flagged).
    Ring,
    Bar,
    Dashed,
}

/// The legend, stacked in a column from (`x`, `y`), one entry per 15 px.
pub fn legend(keys: &[Key<'_>], x: f64, y: f64) -> String {
    let mut s = String::from(r#"<g class="legend">"#);
    for (i, k) in keys.iter().enumerate() {
        let cy = y + 15.0 * i as f64;
        let c = k.color;
        let _ = match k.mark {
            Mark::Line => {
                write!(s, r#"<line x1="{x}" y1="{cy}" x2="{}" y2="{cy}" stroke="{c}" stroke-width="2"/>"#, x + 16.0)
            }
            Mark::Dashed => write!(
                s,
                r#"<line x1="{x}" y1="{cy}" x2="{}" y2="{cy}" stroke="{c}" stroke-width="1.5" stroke-dasharray="3"/>"#,
                x + 16.0
            ),
            Mark::Dot => write!(s, r#"<circle cx="{}" cy="{cy}" r="3.5" fill="{c}"/>"#, x + 8.0),
            Mark::Ring => {
                write!(s, r##"<circle cx="{}" cy="{cy}" r="4" fill="#fff" stroke="{c}" stroke-width="1.5"/>"##, x + 8.0)
            }
            Mark::Bar => write!(s, r#"<rect x="{}" y="{}" width="10" height="10" fill="{c}"/>"#, x + 3.0, cy - 5.0),
        };
        let _ = write!(s, r#"<text x="{}" y="{}" font-size="10">{}</text>"#, x + 22.0, cy + 3.5, esc(&k.text));
    }
    s.push_str("</g>");
    s
}

/// Text cut to `n` characters, with an ellipsis when cut.
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round_and_enclose_the_data() {
        let a = Axis::linear(0.0, 9.3);
        assert_eq!(a.ticks(), &[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!((a.lo, a.hi), (0.0, 10.0));
        let b = Axis::linear(88.0, 121.0);
        assert_eq!(b.ticks(), &[80.0, 90.0, 100.0, 110.0, 120.0, 130.0]);
        let one = Axis::linear(5.0, 5.0);
        assert!(one.ticks().len() >= MIN_TICKS && one.contains(5.0), "{one:?}");
        assert_eq!(Axis::linear_from_zero(3.0, 7.0).lo, 0.0);
    }

    #[test]
    fn a_tight_axis_spans_its_data_with_round_ticks_inside() {
        // 542..1231 widens to 400..1400 on whole steps: data on 69% of the axis.
        let t = Axis::linear_tight(542.0, 1231.0, 0.02);
        assert!((t.lo - (542.0 - 0.02 * 689.0)).abs() < 1e-9 && (t.hi - (1231.0 + 0.02 * 689.0)).abs() < 1e-9, "{t:?}");
        assert_eq!(t.ticks(), &[600.0, 800.0, 1000.0, 1200.0]);
        assert!(t.ticks().iter().all(|v| t.contains(*v)));
        // One value or nothing finite: the widened axis, still drawable.
        let one = Axis::linear_tight(5.0, 5.0, 0.02);
        assert!(one.ticks().len() >= MIN_TICKS && one.contains(5.0), "{one:?}");
        assert!(Axis::linear_tight(f64::NAN, 1.0, 0.02).ticks().len() >= MIN_TICKS);
        // Whatever the span, at least two ticks inside.
        for (lo, hi) in [(0.991, 1.009), (97.0, 103.0), (1.0e6, 1.9e6), (20.1, 20.9)] {
            assert!(Axis::linear_tight(lo, hi, 0.0).ticks().len() >= MIN_TICKS, "{lo}..{hi}");
        }
    }

    #[test]
    fn log_ticks_are_powers_and_enclose_the_data() {
        let r = Axis::log10(0.013, 1.2);
        assert!(r.contains(0.013) && r.contains(1.2), "{r:?}");
        assert!(r.ticks().contains(&1.0) && r.ticks().contains(&0.01), "{r:?}");
        let narrow = Axis::log10(0.8, 1.3);
        assert!(narrow.ticks().len() >= MIN_TICKS, "{narrow:?}");
        assert!(narrow.ticks().contains(&1.0), "{narrow:?}");
        let tasks = Axis::log2(2.0, 1024.0);
        assert_eq!(tasks.ticks(), &[2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0]);
        let bytes = Axis::log2(4096.0, 64.0 * 1024.0 * 1024.0);
        assert!(bytes.ticks().len() <= 10 && bytes.contains(4096.0) && bytes.contains(64.0 * 1048576.0));
        assert_eq!(bytes.ticks().first(), Some(&4096.0));
        assert_eq!(bytes.ticks().last(), Some(&(64.0 * 1048576.0)));
        // Nothing positive: still a drawable axis.
        assert!(Axis::log10(0.0, -1.0).ticks().len() >= MIN_TICKS);
    }

    #[test]
    fn positions_map_ends_and_clamp() {
        let a = Axis::linear(0.0, 10.0);
        assert_eq!((a.frac(0.0), a.frac(10.0), a.frac(5.0), a.frac(99.0)), (0.0, 1.0, 0.5, 1.0));
        let l = Axis::log10(1.0, 100.0);
        assert!((l.frac(10.0) - 0.5).abs() < 1e-12);
        assert_eq!(l.frac(0.0), 0.0, "a non-positive value sits at the edge");
    }

    #[test]
    fn tick_labels_read_as_written() {
        assert_eq!(tick_label(0.013), "0.013");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(1000.0), "1000");
        assert_eq!(tick_label(120.0), "120");
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(1.0), "1");
        assert_eq!(bytes_label(4096.0), "4 KiB");
        assert_eq!(bytes_label(64.0 * 1048576.0), "64 MiB");
        assert_eq!(bytes_label(512.0), "512 B");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
    }
}
