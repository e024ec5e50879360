//! Verdicts on a ratio interval: a change is named only when the whole 95% interval
//! lies beyond a noise threshold, in the direction the unit calls better or worse; an
//! `uncertain` verdict says whether the change seen is below the design's minimum
//! detectable effect or the design too weak to call it. Shared by `compare` (two
//! sides) and paired conditions (`paired`).

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

/// The verdict for a ratio interval B/A against a ±threshold (e.g. 0.02), on the
/// ratio's log scale: above 1 + t, or below 1/(1 + t). A ratio's noise is symmetric in
/// logs, and a threshold of this machine's own (`noise`) may exceed 100%, where
/// 1 − t would leave no room below.
pub fn verdict(ci_low: f64, ci_high: f64, threshold: f64, dir: Direction) -> &'static str {
    let (up, down) = (1.0 + threshold, 1.0 / (1.0 + threshold));
    if ci_low > up {
        match dir {
            Direction::LowerIsBetter => "slower",
            Direction::HigherIsBetter => "faster",
            Direction::Neutral => "higher",
        }
    } else if ci_high < down {
        match dir {
            Direction::LowerIsBetter => "faster",
            Direction::HigherIsBetter => "slower",
            Direction::Neutral => "lower",
        }
    } else if ci_low >= down && ci_high <= up {
        "no change"
    } else {
        "uncertain"
    }
}

/// An `uncertain` verdict with its reason: the change seen is smaller than the
/// design's MDE (more rounds or runs would be needed to tell it from noise), or it is
/// not, and this design's interval was still too wide to call it.
pub fn explained(verdict: &'static str, ratio: f64, mde: f64) -> &'static str {
    if verdict != "uncertain" || !mde.is_finite() {
        return verdict;
    }
    if ratio.ln().abs() < (1.0 + mde).ln() { "uncertain (change below MDE)" } else { "uncertain (design too weak)" }
}
