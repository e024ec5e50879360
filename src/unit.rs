//! The unit of a figure: what its number measures, read from its text once, here.
//!
//! Why a type: the meaning of a unit was guessed from its text in four places ("starts
//! with ns" meant a duration), and one had drifted (`msgs/s` beside `msg/s`). Every
//! question a report asks of a unit (is it a time, a rate; which scale reads best;
//! how does a value print) is answered by this module; the text itself stays what
//! databases and exports have always held (`ns/call`, `switches/s`, `share`).

use serde::{Deserialize, Serialize};

/// What a unit measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Nanoseconds (`ns`, `ns/call`, `ns late`): lower is better.
    Time,
    /// Events per second (`switches/s`, `msg/s`): higher is better.
    Rate,
    /// Anything else (`share`, `tasks`, `ns/MiB` slopes are times): neither.
    Other,
}

/// A figure's unit, stored and exported as its text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub struct Unit(String);

/// Old spellings read as today's.
const ALIASES: [(&str, &str); 1] = [("msgs/s", "msg/s")];

impl Unit {
    /// The unit a text names (an old spelling read as today's).
    pub fn new(text: &str) -> Unit {
        let text = ALIASES.iter().find(|(old, _)| *old == text).map_or(text, |(_, new)| new);
        Unit(text.to_string())
    }

    /// The text, as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn dimension(&self) -> Dimension {
        if self.0.starts_with("ns") {
            Dimension::Time
        } else if self.0.ends_with("/s") {
            Dimension::Rate
        } else {
            Dimension::Other
        }
    }

    pub fn is_time(&self) -> bool {
        self.dimension() == Dimension::Time
    }

    pub fn is_rate(&self) -> bool {
        self.dimension() == Dimension::Rate
    }

    /// A time per operation (`ns/call`, `ns/hand-off`), not a bare time (`ns late`).
    pub fn is_time_per_op(&self) -> bool {
        self.0.starts_with("ns/")
    }

    /// The unit values around `magnitude` read best in, and the divisor that takes
    /// them there: a time moves to µs, ms or s, so one chart axis or one table line
    /// prints every number in one unit; other units stay.
    pub fn scaled(&self, magnitude: f64) -> (f64, String) {
        let Some(rest) = self.0.strip_prefix("ns") else { return (1.0, self.0.clone()) };
        let m = magnitude.abs();
        let (div, prefix) = if m >= 1e9 {
            (1e9, "s")
        } else if m >= 1e6 {
            (1e6, "ms")
        } else if m >= 1e4 {
            (1e3, "µs")
        } else {
            (1.0, "ns")
        };
        (div, format!("{prefix}{rest}"))
    }

    /// A value in this unit, with it: times at a scale that keeps 3–4 significant
    /// digits, other numbers plain (never in exponent notation).
    pub fn format(&self, v: f64) -> String {
        if self.is_time() {
            return format_ns(v);
        }
        if !v.is_finite() {
            "-".into()
        } else if v.abs() >= 100.0 {
            format!("{v:.0} {}", self.0)
        } else {
            format!("{v:.3} {}", self.0)
        }
    }
}

/// A duration given in nanoseconds, with a unit that keeps 3–4 significant digits.
pub fn format_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".into();
    }
    let a = ns.abs();
    if a >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if a >= 1e4 {
        format!("{:.2} µs", ns / 1e3)
    } else if a >= 100.0 {
        format!("{ns:.0} ns")
    } else {
        format!("{ns:.1} ns")
    }
}

impl From<String> for Unit {
    fn from(text: String) -> Unit {
        Unit::new(&text)
    }
}

impl From<&str> for Unit {
    fn from(text: &str) -> Unit {
        Unit::new(text)
    }
}

impl From<Unit> for String {
    fn from(u: Unit) -> String {
        u.0
    }
}

impl std::ops::Deref for Unit {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_come_from_the_text() {
        for t in ["ns", "ns/call", "ns/hand-off", "ns late", "ns/MiB"] {
            assert_eq!(Unit::new(t).dimension(), Dimension::Time, "{t}");
        }
        for t in ["switches/s", "msg/s", "yields/s"] {
            assert_eq!(Unit::new(t).dimension(), Dimension::Rate, "{t}");
        }
        for t in ["share", "tasks", "ratio", "µs/switch"] {
            assert_eq!(Unit::new(t).dimension(), Dimension::Other, "{t}");
        }
        assert!(Unit::new("ns/call").is_time_per_op() && !Unit::new("ns late").is_time_per_op());
    }

    #[test]
    fn the_old_spelling_reads_as_today() {
        assert_eq!(Unit::new("msgs/s"), Unit::new("msg/s"));
        let u: Unit = serde_json::from_str("\"msgs/s\"").unwrap();
        assert_eq!(u.as_str(), "msg/s");
        assert_eq!(serde_json::to_string(&Unit::new("ns/call")).unwrap(), "\"ns/call\"");
    }

    #[test]
    fn values_print_in_their_unit() {
        assert_eq!(Unit::new("ns/call").format(52.34), "52.3 ns");
        assert_eq!(Unit::new("ns/call").format(12_345.0), "12.35 µs");
        assert_eq!(Unit::new("msg/s").format(1234.0), "1234 msg/s");
        assert_eq!(Unit::new("switches/s").format(341_300.0), "341300 switches/s");
        assert_eq!(Unit::new("share").format(0.4171), "0.417 share");
        assert_eq!(Unit::new("ns/switch").scaled(13_370.0), (1e3, "µs/switch".to_string()));
        assert_eq!(Unit::new("switches/s").scaled(3.4e5), (1.0, "switches/s".to_string()));
    }
}
