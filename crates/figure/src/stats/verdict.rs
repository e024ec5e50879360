//! Verdicts on a ratio interval: a change is named only when the whole 95% interval
//! lies beyond a noise threshold, in the direction the unit calls better or worse; an
//! `uncertain` verdict says why no change was named: the change seen is below the
//! design's minimum detectable effect, the design is too weak to call it, or the row
//! itself is doubted (a flag, one round, no interval). Shared by `compare` (two
//! sides) and paired conditions (`paired`).
//!
//! A verdict is a closed set ([`Verdict`]): `--fail-on` and the charts match its
//! variants, and it prints (and serialises) as the words stored runs and exports
//! have always carried.

use serde::{Serialize, Serializer};

/// Whether a bigger number is better, worse, or neither for a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
    Neutral,
}

pub fn direction(unit: &crate::unit::Unit) -> Direction {
    match unit.dimension() {
        crate::unit::Dimension::Time => Direction::LowerIsBetter,
        crate::unit::Dimension::Rate => Direction::HigherIsBetter,
        crate::unit::Dimension::Other => Direction::Neutral,
    }
}

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The interval lies beyond the threshold, in the better direction of a time.
    Faster,
    /// ... in the worse direction of a time.
    Slower,
    /// ... above, for a unit with no better direction.
    Higher,
    /// ... below, for a unit with no better direction.
    Lower,
    /// The whole interval lies within the threshold.
    NoChange,
    /// No change named, and why.
    Uncertain(Doubt),
}

/// Why a comparison named no change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doubt {
    /// The interval straddles the threshold (no power figure to say more).
    Straddles,
    /// The change seen is smaller than the design's MDE.
    BelowMde,
    /// The change seen is not small, and the interval was still too wide to call it.
    DesignTooWeak,
    /// A side stands on one window: its samples say nothing about the next.
    OneRound,
    /// There is no interval (rows without samples: fits).
    NoInterval,
    /// A side measured something other than the row names (a hand-off that did not
    /// switch).
    NotASwitch,
    /// A side's row carries this flag (its stored name), which doubts the figure.
    Flagged(&'static str),
    /// A one-run side's machine-noise model refuses the figure: its noise runs
    /// disagree past what any spread between runs describes.
    MachineNoise,
    /// A side's run was measured while other work kept its CPUs busy (its preflight
    /// said so): a change between such runs is as likely the other work's.
    BusyMachine,
}

impl Verdict {
    /// Whether the verdict names a change (faster, slower, higher, lower).
    pub fn is_change(self) -> bool {
        matches!(self, Verdict::Faster | Verdict::Slower | Verdict::Higher | Verdict::Lower)
    }

    /// The row flag that withheld a verdict, if one did.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            Verdict::Uncertain(Doubt::Flagged(f)) => Some(f),
            _ => None,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Faster => f.write_str("faster"),
            Verdict::Slower => f.write_str("slower"),
            Verdict::Higher => f.write_str("higher"),
            Verdict::Lower => f.write_str("lower"),
            Verdict::NoChange => f.write_str("no change"),
            Verdict::Uncertain(Doubt::Straddles | Doubt::NoInterval) => f.write_str("uncertain"),
            Verdict::Uncertain(Doubt::BelowMde) => f.write_str("uncertain (change below MDE)"),
            Verdict::Uncertain(Doubt::DesignTooWeak) => f.write_str("uncertain (design too weak)"),
            Verdict::Uncertain(Doubt::OneRound) => f.write_str("uncertain (one round)"),
            Verdict::Uncertain(Doubt::NotASwitch) => f.write_str("uncertain (not a switch's cost)"),
            Verdict::Uncertain(Doubt::Flagged(flag)) => write!(f, "uncertain ({flag})"),
            Verdict::Uncertain(Doubt::MachineNoise) => f.write_str("uncertain (machine noise too wide)"),
            Verdict::Uncertain(Doubt::BusyMachine) => f.write_str("uncertain (machine busy)"),
        }
    }
}

impl Serialize for Verdict {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Verdicts read as their words in tests and filters (`c.verdict == "slower"`).
impl PartialEq<&str> for Verdict {
    fn eq(&self, other: &&str) -> bool {
        let words = self.to_string();
        words.as_str() == *other
    }
}

/// The verdict for a ratio interval B/A against a ±threshold (e.g. 0.02), on the
/// ratio's log scale: above 1 + t, or below 1/(1 + t). A ratio's noise is symmetric in
/// logs, and a threshold of this machine's own (`noise`) may exceed 100%, where
/// 1 − t would leave no room below.
pub fn verdict(ci_low: f64, ci_high: f64, threshold: f64, dir: Direction) -> Verdict {
    let (up, down) = (1.0 + threshold, 1.0 / (1.0 + threshold));
    if ci_low > up {
        match dir {
            Direction::LowerIsBetter => Verdict::Slower,
            Direction::HigherIsBetter => Verdict::Faster,
            Direction::Neutral => Verdict::Higher,
        }
    } else if ci_high < down {
        match dir {
            Direction::LowerIsBetter => Verdict::Faster,
            Direction::HigherIsBetter => Verdict::Slower,
            Direction::Neutral => Verdict::Lower,
        }
    } else if ci_low >= down && ci_high <= up {
        Verdict::NoChange
    } else {
        Verdict::Uncertain(Doubt::Straddles)
    }
}

/// An `uncertain` verdict with its reason: the change seen is smaller than the
/// design's MDE (more rounds or runs would be needed to tell it from noise), or it is
/// not, and this design's interval was still too wide to call it.
pub fn explained(v: Verdict, ratio: f64, mde: f64) -> Verdict {
    if v != Verdict::Uncertain(Doubt::Straddles) || !mde.is_finite() {
        return v;
    }
    Verdict::Uncertain(if ratio.ln().abs() < (1.0 + mde).ln() { Doubt::BelowMde } else { Doubt::DesignTooWeak })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_print_as_stored_runs_carry_them() {
        assert_eq!(verdict(1.1, 1.2, 0.03, Direction::LowerIsBetter), "slower");
        assert_eq!(verdict(0.8, 0.9, 0.03, Direction::HigherIsBetter), "slower");
        assert_eq!(verdict(0.99, 1.01, 0.03, Direction::Neutral), "no change");
        assert_eq!(
            explained(verdict(0.99, 1.2, 0.03, Direction::LowerIsBetter), 1.01, 0.1),
            "uncertain (change below MDE)"
        );
        assert_eq!(Verdict::Uncertain(Doubt::Flagged("intruded")).to_string(), "uncertain (intruded)");
        assert_eq!(serde_json::to_string(&Verdict::Faster).unwrap(), "\"faster\"");
        assert!(Verdict::Lower.is_change() && !Verdict::Uncertain(Doubt::OneRound).is_change());
    }
}
