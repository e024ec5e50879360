//! The smallest effect a comparison could have seen: the minimum detectable effect
//! (MDE) of a design at a verdict threshold.
//!
//! A verdict (`faster`, `slower`) needs the whole 95% interval of B/A beyond the
//! threshold t. If the log ratio's estimate has standard error se, a true ratio r is
//! called with probability Φ((ln r − ln(1+t) − z₀.₉₇₅·se)/se); it reaches `POWER`
//! when ln r = ln(1+t) + (z₀.₉₇₅ + z_POWER)·se. The standard error is read from the
//! interval the comparison itself drew (half its width in log terms over z₀.₉₇₅), so
//! the MDE stands on the same units (runs, rounds) and their spread as the verdict.

/// The power the MDE is quoted at.
pub const POWER: f64 = 0.8;
use super::Z975;
/// z for 80% power.
const Z80: f64 = 0.841_621;

/// The standard error of ln(B/A) an interval [low, high] of the ratio implies.
pub fn log_se(ci_low: f64, ci_high: f64) -> Option<f64> {
    (ci_low > 0.0 && ci_high >= ci_low && ci_high.is_finite()).then(|| (ci_high / ci_low).ln() / (2.0 * Z975))
}

/// The minimum detectable effect, as a relative change (0.08 = 8%): the smallest
/// true change that the interval's design would call with 80% power at ±`threshold`.
pub fn mde(ci_low: f64, ci_high: f64, threshold: f64) -> Option<f64> {
    mde_at(ci_low, ci_high, threshold, Z975)
}

/// [`mde`] for a verdict that needs `z_crit` standard errors past the threshold
/// rather than z₀.₉₇₅: a row judged among many (`verdict::family_gate`), whose lone
/// change must clear the family's first bar.
pub fn mde_at(ci_low: f64, ci_high: f64, threshold: f64, z_crit: f64) -> Option<f64> {
    let se = log_se(ci_low, ci_high)?;
    Some(((1.0 + threshold).ln() + (z_crit + Z80) * se).exp() - 1.0)
}

/// The relative half-width each of two runs' figures needs (their 95% intervals, on
/// the log scale) for a comparison of the two to call a change of `detect` with 80%
/// power at ±`threshold`: the ratio's standard error is √2 times one run's, so
/// ln(1+detect) = ln(1+threshold) + (z₀.₉₇₅ + z₀.₈)·√2·h/z₀.₉₇₅. None when `detect`
/// does not exceed the threshold (no design calls a change the verdict does not).
pub fn precision_for(detect: f64, threshold: f64) -> Option<f64> {
    let margin = (1.0 + detect).ln() - (1.0 + threshold).ln();
    (margin > 0.0 && margin.is_finite()).then(|| margin * Z975 / ((Z975 + Z80) * std::f64::consts::SQRT_2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mde_adds_the_interval_and_the_power_margin_to_the_threshold() {
        // se = 0.01 in log terms: the interval is exp(±1.96·0.01).
        let (lo, hi) = ((-Z975 * 0.01f64).exp(), (Z975 * 0.01f64).exp());
        assert!((log_se(lo, hi).unwrap() - 0.01).abs() < 1e-12);
        let m = mde(lo, hi, 0.03).unwrap();
        assert!((m - (1.03f64.ln() + 0.028016).exp() + 1.0).abs() < 1e-4, "{m}");
        // A point interval detects anything past the threshold; a wider one needs more.
        assert!((mde(1.0, 1.0, 0.03).unwrap() - 0.03).abs() < 1e-12);
        assert!(mde(0.9, 1.1, 0.03).unwrap() > m);
        assert_eq!(mde(f64::NAN, 1.0, 0.03), None);
        assert_eq!(mde(0.0, 1.0, 0.03), None);
    }

    #[test]
    fn two_runs_at_the_precision_for_a_change_detect_it() {
        for (detect, threshold) in [(0.05, 0.03), (0.10, 0.03), (0.05, 0.0)] {
            let h = precision_for(detect, threshold).unwrap();
            // Two runs of half-width h: the ratio's se is √2 · h / z.
            let se = std::f64::consts::SQRT_2 * h / Z975;
            let (lo, hi) = ((-Z975 * se).exp(), (Z975 * se).exp());
            assert!((mde(lo, hi, threshold).unwrap() - detect).abs() < 1e-12, "{detect} {threshold}");
        }
        // 5% at compare's 3% threshold needs each run within about ±1%.
        assert!((precision_for(0.05, 0.03).unwrap() - 0.0095).abs() < 0.0005);
        assert_eq!(precision_for(0.03, 0.03), None);
        assert_eq!(precision_for(0.02, 0.03), None);
    }
}
