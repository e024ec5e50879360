//! The unit of a figure: a closed set of what oscost stores, each unit's meaning
//! declared beside its text, here.
//!
//! Why a closed set: a unit's meaning guessed from its text ("starts with ns" for a
//! duration) drifts (`msgs/s` beside `msg/s`). Each unit oscost writes is a variant
//! that declares its stored text and its [`Dimension`],
//! so a new unit is a compiler error wherever a report must decide how to read it
//! (hyperfine's units are a closed set for the same reason). The text stays what
//! databases and exports have always held (`ns/call`, `switches/s`, `share`); a text
//! this build does not know (a database written by another version, an import) is
//! kept as it was written in [`Unit::Other`], flagged as unknown, and read as neither
//! a time nor a rate.

use serde::{Deserialize, Serialize};

/// What a unit measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// Nanoseconds (`ns`, `ns/call`, `ns late`, `ns/MiB`): lower is better.
    Time,
    /// Events per second (`switches/s`, `msg/s`): higher is better.
    Rate,
    /// Anything else (`share`, `tasks`, `ratio`, a unit this build does not know): neither.
    Other,
}

/// A figure's unit, stored and exported as its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Unit {
    /// A bare time (`ns`): a wake-up's latency, a traced interval.
    Ns,
    /// Nanoseconds a call (`ns/call`): a system call, a fork, a sleep.
    NsPerCall,
    /// Nanoseconds a hand-off between two peers (`ns/hand-off`).
    NsPerHandOff,
    /// Nanoseconds a context switch (`ns/switch`).
    NsPerSwitch,
    /// Nanoseconds a simulated fork and exit (`ns/fork`).
    NsPerFork,
    /// Nanoseconds a fork costs per MiB of the parent's memory: a fitted slope (`ns/MiB`).
    NsPerMiB,
    /// How late a wake-up came (`ns late`).
    NsLate,
    /// Context switches a second (`switches/s`).
    SwitchesPerSecond,
    /// Messages delivered a second (`msg/s`; once written `msgs/s`).
    MessagesPerSecond,
    /// A share of a whole, 0 to 1 (`share`).
    Share,
    /// A number of tasks (`tasks`): a run queue's length.
    Tasks,
    /// A ratio of two figures (`ratio`).
    Ratio,
    /// A unit this build does not know, kept as it was written.
    Other(UnknownUnit),
}

/// The text of a unit this build does not know, as a store or an import gave it.
/// Made only by [`Unit::new`], so it never holds the text of a known unit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnknownUnit(String);

impl UnknownUnit {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Every unit this build knows, for reading a text back.
pub const KNOWN: [Unit; 12] = [
    Unit::Ns,
    Unit::NsPerCall,
    Unit::NsPerHandOff,
    Unit::NsPerSwitch,
    Unit::NsPerFork,
    Unit::NsPerMiB,
    Unit::NsLate,
    Unit::SwitchesPerSecond,
    Unit::MessagesPerSecond,
    Unit::Share,
    Unit::Tasks,
    Unit::Ratio,
];

/// Old spellings read as today's.
const ALIASES: [(&str, Unit); 1] = [("msgs/s", Unit::MessagesPerSecond)];

impl Unit {
    /// The unit a text names: a known unit (an old spelling read as today's), or the
    /// text kept as written.
    pub fn new(text: &str) -> Unit {
        if let Some(u) = KNOWN.iter().find(|u| u.as_str() == text) {
            return u.clone();
        }
        if let Some((_, u)) = ALIASES.iter().find(|(old, _)| *old == text) {
            return u.clone();
        }
        Unit::Other(UnknownUnit(text.to_string()))
    }

    /// The text, as stored.
    pub fn as_str(&self) -> &str {
        match self {
            Unit::Ns => "ns",
            Unit::NsPerCall => "ns/call",
            Unit::NsPerHandOff => "ns/hand-off",
            Unit::NsPerSwitch => "ns/switch",
            Unit::NsPerFork => "ns/fork",
            Unit::NsPerMiB => "ns/MiB",
            Unit::NsLate => "ns late",
            Unit::SwitchesPerSecond => "switches/s",
            Unit::MessagesPerSecond => "msg/s",
            Unit::Share => "share",
            Unit::Tasks => "tasks",
            Unit::Ratio => "ratio",
            Unit::Other(text) => text.as_str(),
        }
    }

    /// Whether this build knows the unit (not one kept as written).
    pub fn is_known(&self) -> bool {
        !matches!(self, Unit::Other(_))
    }

    /// What the unit measures, as each unit declares it.
    pub fn dimension(&self) -> Dimension {
        match self {
            Unit::Ns
            | Unit::NsPerCall
            | Unit::NsPerHandOff
            | Unit::NsPerSwitch
            | Unit::NsPerFork
            | Unit::NsPerMiB
            | Unit::NsLate => Dimension::Time,
            Unit::SwitchesPerSecond | Unit::MessagesPerSecond => Dimension::Rate,
            Unit::Share | Unit::Tasks | Unit::Ratio | Unit::Other(_) => Dimension::Other,
        }
    }

    /// A time's text after its `ns` (`/call`, ` late`, nothing for `ns`): what a
    /// scaled time keeps after µs, ms or s. None for a unit that is not a time.
    fn time_suffix(&self) -> Option<&'static str> {
        match self {
            Unit::Ns => Some(""),
            Unit::NsPerCall => Some("/call"),
            Unit::NsPerHandOff => Some("/hand-off"),
            Unit::NsPerSwitch => Some("/switch"),
            Unit::NsPerFork => Some("/fork"),
            Unit::NsPerMiB => Some("/MiB"),
            Unit::NsLate => Some(" late"),
            Unit::SwitchesPerSecond
            | Unit::MessagesPerSecond
            | Unit::Share
            | Unit::Tasks
            | Unit::Ratio
            | Unit::Other(_) => None,
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
        self.time_suffix().is_some_and(|rest| rest.starts_with('/'))
    }

    /// The unit values around `magnitude` read best in, and the divisor that takes
    /// them there: a time moves to µs, ms or s, so one chart axis or one table line
    /// prints every number in one unit; other units stay.
    pub fn scaled(&self, magnitude: f64) -> (f64, String) {
        let Some(rest) = self.time_suffix() else { return (1.0, self.as_str().to_string()) };
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
            format!("{v:.0} {}", self.as_str())
        } else {
            format!("{v:.3} {}", self.as_str())
        }
    }
}

/// Units sort by their stored text, so anything ordered by unit keeps the alphabetical
/// order of the text it is stored as.
impl Ord for Unit {
    fn cmp(&self, other: &Unit) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Unit {
    fn partial_cmp(&self, other: &Unit) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
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

impl From<&Unit> for Unit {
    fn from(u: &Unit) -> Unit {
        u.clone()
    }
}

impl From<Unit> for String {
    fn from(u: Unit) -> String {
        if let Unit::Other(UnknownUnit(text)) = u { text } else { u.as_str().to_string() }
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_are_declared_by_each_unit() {
        for u in [Unit::Ns, Unit::NsPerCall, Unit::NsPerHandOff, Unit::NsPerSwitch, Unit::NsLate, Unit::NsPerMiB] {
            assert_eq!(u.dimension(), Dimension::Time, "{u}");
        }
        for u in [Unit::SwitchesPerSecond, Unit::MessagesPerSecond] {
            assert_eq!(u.dimension(), Dimension::Rate, "{u}");
        }
        for u in [Unit::Share, Unit::Tasks, Unit::Ratio] {
            assert_eq!(u.dimension(), Dimension::Other, "{u}");
        }
        assert!(Unit::NsPerCall.is_time_per_op() && Unit::NsPerMiB.is_time_per_op());
        assert!(!Unit::NsLate.is_time_per_op() && !Unit::Ns.is_time_per_op());
    }

    #[test]
    fn every_known_unit_reads_back_from_its_text() {
        for u in KNOWN {
            assert_eq!(Unit::new(u.as_str()), u, "{u}");
            assert!(u.is_known(), "{u}");
            let json = serde_json::to_string(&u).unwrap();
            assert_eq!(serde_json::from_str::<Unit>(&json).unwrap(), u, "{json}");
        }
        let texts: std::collections::BTreeSet<&str> = KNOWN.iter().map(Unit::as_str).collect();
        assert_eq!(texts.len(), KNOWN.len(), "two units share a text");
    }

    #[test]
    fn an_unknown_unit_is_kept_as_written_and_read_as_neither_time_nor_rate() {
        for t in ["yields/s", "µs/switch", "ns/exec", "+1", ""] {
            let u = Unit::new(t);
            assert!(!u.is_known(), "{t}");
            assert_eq!(u.as_str(), t);
            assert_eq!(u.dimension(), Dimension::Other, "{t}");
            assert_eq!(u.scaled(3.4e5), (1.0, t.to_string()));
            assert_eq!(serde_json::to_string(&u).unwrap(), serde_json::to_string(t).unwrap());
            assert_eq!(serde_json::from_str::<Unit>(&serde_json::to_string(t).unwrap()).unwrap(), u);
        }
        assert_eq!(Unit::new("yields/s").format(1234.0), "1234 yields/s");
    }

    #[test]
    fn units_sort_by_their_text() {
        let mut units = [Unit::SwitchesPerSecond, Unit::new("zz"), Unit::NsPerCall, Unit::Ns, Unit::Share];
        units.sort();
        let texts: Vec<&str> = units.iter().map(Unit::as_str).collect();
        assert_eq!(texts, ["ns", "ns/call", "share", "switches/s", "zz"]);
    }

    #[test]
    fn the_old_spelling_reads_as_today() {
        assert_eq!(Unit::new("msgs/s"), Unit::MessagesPerSecond);
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
        assert_eq!(Unit::NsLate.scaled(2.5e6), (1e6, "ms late".to_string()));
    }
}
