//! Reports: pure functions from stored data to text (table, JSON). Nothing here
//! measures or writes files; the CLI decides where the text goes.

pub mod charts;
pub mod compare;
pub mod export;
pub mod fit;
pub mod history;
pub mod html;
pub mod import;
pub mod json;
pub mod latency_histogram;
pub mod listing;
pub mod matrix;
pub mod paired;
pub mod percentiles;
pub mod precision;
pub mod reprint;
pub mod screen;
pub mod sim;
pub mod svg;
pub mod table;
pub mod text;
pub mod trace;

/// Stored text made safe to print: control characters (escape sequences, carriage
/// returns, line breaks) and the bidirectional overrides that reorder what a reader
/// sees become visible replacements, so a stored name cannot rewrite a terminal or
/// a table. Plain text is returned as is, without copying.
pub fn plain(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars()
        .map(|c| match c {
            '\n' | '\t' | '\r' => ' ',
            c if unsafe_char(c) => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    // Control characters and bidirectional overrides become visible replacements first.
    for c in plain(s).chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A count with its noun in the right number: "1 child", "2 children".
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A row's figure with its 95% interval, `median [low, high]`, or the median alone
/// when the row has no interval (see [`crate::model::ResultRow::interval`]).
pub fn figure_with_interval(r: &crate::model::ResultRow) -> String {
    match r.interval() {
        Some((lo, hi)) => {
            format!("{} [{}, {}]", fmt_value(r.median, &r.unit), fmt_value(lo, &r.unit), fmt_value(hi, &r.unit))
        }
        None => fmt_value(r.median, &r.unit),
    }
}

/// Formats a duration given in nanoseconds with a unit that keeps 3–4 significant digits.
pub fn fmt_ns(ns: f64) -> String {
    crate::unit::format_ns(ns)
}

/// Formats a value in `unit` (see [`crate::unit::Unit::format`]).
pub fn fmt_value(v: f64, unit: &crate::unit::Unit) -> String {
    unit.format(v)
}

/// The unit values of `unit` read best in around `magnitude`, and the divisor that
/// takes them there (see [`crate::unit::Unit::scaled`]).
pub fn display_unit(unit: &crate::unit::Unit, magnitude: f64) -> (f64, String) {
    unit.scaled(magnitude)
}

/// Formats an RFC 3339 UTC timestamp from seconds since the epoch.
pub fn rfc3339(secs: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).to_string()
}

/// Now, as RFC 3339 UTC.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit::Unit;

    /// A zero-width interval (one value, a simulated figure) is printed nowhere: the
    /// median stands alone; a real interval is printed with it.
    #[test]
    fn a_zero_width_interval_is_not_printed() {
        let mut r = crate::model::ResultRow::from_samples(
            "sim.travis",
            crate::model::Method::Workload,
            "µs/switch",
            vec![2.5],
            1,
        )
        .unwrap();
        (r.ci_low, r.ci_high) = (2.5, 2.5);
        assert_eq!(figure_with_interval(&r), "2.500 µs/switch");
        (r.ci_low, r.ci_high) = (f64::NAN, f64::NAN);
        assert_eq!(figure_with_interval(&r), "2.500 µs/switch");
        (r.ci_low, r.ci_high) = (2.4, 2.6);
        assert_eq!(figure_with_interval(&r), "2.500 µs/switch [2.400 µs/switch, 2.600 µs/switch]");
    }

    #[test]
    fn counts_take_the_right_number() {
        assert_eq!(counted(1, "child", "children"), "1 child");
        assert_eq!(counted(0, "child", "children"), "0 children");
        assert_eq!(counted(2, "switch", "switches"), "2 switches");
    }

    #[test]
    fn formats_durations() {
        assert_eq!(fmt_ns(52.34), "52.3 ns");
        assert_eq!(fmt_ns(523.4), "523 ns");
        assert_eq!(fmt_ns(12_345.0), "12.35 µs");
        assert_eq!(fmt_ns(3_210_000.0), "3.210 ms");
        assert_eq!(fmt_ns(f64::NAN), "-");
        assert_eq!(fmt_value(1234.0, &Unit::new("msg/s")), "1234 msg/s");
    }

    #[test]
    fn display_units_scale_durations_only() {
        assert_eq!(display_unit(&Unit::new("ns/switch"), 950.0), (1.0, "ns/switch".to_string()));
        assert_eq!(display_unit(&Unit::new("ns/switch"), 13_370.0), (1e3, "µs/switch".to_string()));
        assert_eq!(display_unit(&Unit::new("ns"), 3.2e6), (1e6, "ms".to_string()));
        assert_eq!(display_unit(&Unit::new("switches/s"), 3.4e5), (1.0, "switches/s".to_string()));
    }

    #[test]
    fn formats_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
    }

    #[test]
    fn plain_text_passes_and_controls_are_made_visible() {
        assert!(matches!(plain("syscall.getppid via=raw µs"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(plain("a\u{1b}[31mred\u{7}"), "a\u{fffd}[31mred\u{fffd}");
        assert_eq!(plain("two\nlines\r"), "two lines ");
        assert_eq!(plain("abc\u{202e}fed"), "abc\u{fffd}fed");
        assert_eq!(plain("\u{9b}2J"), "\u{fffd}2J", "the C1 escape too");
    }
}
