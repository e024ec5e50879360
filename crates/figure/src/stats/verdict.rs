//! Verdicts on a ratio interval: a change is named only when the whole 95% interval
//! lies beyond a noise threshold, in the direction the unit calls better or worse; an
//! `uncertain` verdict says why no change was named: the change seen is below the
//! design's minimum detectable effect, the design is too weak to call it, or the row
//! itself is doubted (a flag, one round, no interval). Shared by `compare` (two
//! sides), which then judges its rows as one family ([`family_gate`]), and paired
//! conditions (`paired`), whose rows are each judged alone.
//!
//! A verdict is a closed set ([`Verdict`]): `--fail-on` and the charts match its
//! variants, and it prints (and serialises) as the words stored runs and exports
//! have always carried.

use super::student;
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
    /// One run a side of one recorded machine, and the rows moved as one
    /// (`shift::common_shift`): the machine moving between the runs gives that as
    /// readily as a change touching every figure, and nothing recorded tells them apart.
    BoardMoved,
    /// The row's interval clears the threshold, but not by the margin one of this
    /// many rows judged together needs (Holm's step-down, [`family_gate`]): among that
    /// many rows, a change this far out is what noise alone gives.
    Chance(usize),
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
            Verdict::Uncertain(Doubt::BoardMoved) => f.write_str("uncertain (every figure moved)"),
            Verdict::Uncertain(Doubt::Chance(m)) => write!(f, "uncertain (chance among {m} rows)"),
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

/// The chance of naming a change anywhere among one comparison's rows when none
/// changed: the family-wise error rate [`family_gate`] holds.
pub const FAMILY_ALPHA: f64 = 0.05;

/// The two-sided p-value of a change beyond ±`threshold` (log scale, as [`verdict`]),
/// read from a ratio and its 95% interval drawn with Student's t of `df` degrees of
/// freedom: the standard error is the half of the interval that faces no change, over
/// t₀.₉₇₅,df, and the tail is that t's (a normal tail would call a row ten rows out
/// of a family 2–10 times too often at the few degrees of freedom of ten rounds or a
/// few runs). None without a usable interval.
pub fn p_beyond(ratio: f64, ci_low: f64, ci_high: f64, threshold: f64, df: f64) -> Option<f64> {
    if !(ratio > 0.0 && ci_low > 0.0 && ci_high.is_finite() && ci_low <= ratio && ratio <= ci_high && df >= 1.0) {
        return None;
    }
    let l = ratio.ln();
    let half = if l >= 0.0 { l - ci_low.ln() } else { ci_high.ln() - l };
    let margin = l.abs() - (1.0 + threshold).ln();
    if half <= 0.0 {
        return Some(if margin > 0.0 { 0.0 } else { 1.0 });
    }
    let t = margin / (half / student::quantile(0.975, df));
    Some((2.0 * student::cdf(-t, df)).min(1.0))
}

/// The bar a lone change among `rows` judged together must clear, in standard errors
/// past the threshold, for an interval of `df` degrees of freedom: t₁₋α/(2m),df, the
/// first step of [`family_gate`].
pub fn family_bar(rows: usize, df: f64) -> f64 {
    student::quantile(1.0 - FAMILY_ALPHA / (2.0 * rows.max(1) as f64), df)
}

/// Holm's step-down at [`FAMILY_ALPHA`] over the p-values of the rows judged together:
/// which of them may name a change. Sorted smallest first, the j-th (from 0) holds
/// when it and every smaller one is at most α/(m − j). A comparison judges dozens of
/// rows: judged alone at 95%, about one row in a hundred of identical runs clears the
/// threshold, and a comparison of 58 rows then names a false change about half the
/// time. The step-down keeps the chance of any false change in the whole comparison at
/// α, and still names the rows of a change that moves many of them (each row past the
/// first faces a looser bar).
pub fn family_gate(p: &[f64]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut holds = vec![false; p.len()];
    for (j, &i) in order.iter().enumerate() {
        if p[i].is_nan() || p[i] > FAMILY_ALPHA / (p.len() - j) as f64 {
            break;
        }
        holds[i] = true;
    }
    holds
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

    #[test]
    fn p_values_match_the_interval_they_come_from() {
        // An interval whose facing end sits on the threshold: p = 0.05, at any df.
        let t = 0.03f64;
        for df in [4.0, 9.0, 18.0, 1e9] {
            let q = student::quantile(0.975, df);
            let se = 0.02f64;
            let r = ((1.0 + t).ln() + q * se).exp();
            let (lo, hi) = (1.0 + t, (r.ln() + q * se).exp());
            assert!((p_beyond(r, lo, hi, t, df).unwrap() - 0.05).abs() < 1e-6, "{df}");
            // Mirrored below 1.
            assert!((p_beyond(1.0 / r, 1.0 / hi, 1.0 / lo, t, df).unwrap() - 0.05).abs() < 1e-6, "{df}");
        }
        assert_eq!(p_beyond(1.0, 0.99, 1.01, t, 9.0), Some(1.0));
        assert_eq!(p_beyond(1.0, 0.0, 1.2, t, 9.0), None);
        // The bar of one row is the interval's own; of forty, t's tail, wider at few df.
        assert!((family_bar(1, 1e9) - Z975_TEST).abs() < 3e-3);
        assert!((family_bar(40, 1e9) - 3.227).abs() < 1e-2);
        assert!(family_bar(40, 9.0) > 4.0 && family_bar(40, 4.0) > family_bar(40, 9.0));
    }

    const Z975_TEST: f64 = crate::stats::Z975;
    use crate::stats::SplitMix64;
    use crate::stats::nested::normal;

    /// One comparison of `rows` rows, each the Student-t 95% interval of ten rounds a
    /// side (Welch's, equal spreads: 18 degrees of freedom) of a log spread of 0.1 a
    /// round around a true log ratio `shift(i)`: which rows the gate lets name a change.
    /// The rounds are drawn, so each interval's width varies as a real one does.
    fn trial(rows: usize, shift: impl Fn(usize) -> f64, rng: &mut SplitMix64) -> Vec<bool> {
        let (k, sd, t, df) = (10, 0.1, 0.03, 18.0);
        let side = |rng: &mut SplitMix64, centre: f64| {
            let xs: Vec<f64> = (0..k).map(|_| centre + sd * normal(rng)).collect();
            let m = xs.iter().sum::<f64>() / k as f64;
            (m, xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1) as f64 / k as f64)
        };
        let p: Vec<f64> = (0..rows)
            .map(|i| {
                let ((ma, va), (mb, vb)) = (side(rng, 0.0), side(rng, shift(i)));
                let (l, half) = (mb - ma, student::quantile(0.975, df) * (va + vb).sqrt());
                p_beyond(l.exp(), (l - half).exp(), (l + half).exp(), t, df).unwrap()
            })
            .collect();
        family_gate(&p)
    }

    #[test]
    fn the_gate_is_quiet_on_identical_runs() {
        // A/A: 40 rows, none changed. A change anywhere in at most 5% of comparisons
        // (it holds α over the family; each row alone would speak in ~1% of rows).
        let mut u = SplitMix64::new(7);
        let trials = 2000;
        let noisy = (0..trials).filter(|_| trial(40, |_| 0.0, &mut u).iter().any(|&h| h)).count();
        assert!(noisy * 100 <= 5 * trials, "{noisy} of {trials} A/A comparisons named a change");
    }

    #[test]
    fn the_gate_fires_on_a_real_gap() {
        let mut u = SplitMix64::new(11);
        let trials = 1000;
        // One row 40% slower among 40: named in nearly every comparison.
        let one = (0..trials).filter(|_| trial(40, |i| if i == 0 { 1.4f64.ln() } else { 0.0 }, &mut u)[0]).count();
        assert!(one * 100 >= 95 * trials, "{one} of {trials}");
        // Ten rows 30% slower (a kernel entry made dearer): the step-down names most of them.
        let named: usize = (0..trials)
            .map(|_| trial(40, |i| if i < 10 { 1.3f64.ln() } else { 0.0 }, &mut u)[..10].iter().filter(|&&h| h).count())
            .sum();
        assert!(named * 100 >= 80 * 10 * trials, "{named} of {}", 10 * trials);
        // A single row: the gate is the row's own 95% interval.
        assert_eq!(family_gate(&[0.049]), vec![true]);
        assert_eq!(family_gate(&[0.051]), vec![false]);
    }
}
