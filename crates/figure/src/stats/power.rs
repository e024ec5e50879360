//! The smallest effect a comparison could have seen: the minimum detectable effect
//! (MDE) of a design at a verdict threshold.
//!
//! A verdict (`faster`, `slower`) needs the whole 95% interval of B/A beyond the
//! threshold t. If the log ratio's estimate has standard error se, a true ratio r is
//! called with probability Φ((ln r − ln(1+t) − z₀.₉₇₅·se)/se); it reaches `POWER`
//! when ln r = ln(1+t) + (z₀.₉₇₅ + z_POWER)·se. The standard error is read from the
//! interval the comparison itself drew (half its width in log terms over z₀.₉₇₅), so
//! the MDE stands on the same units (runs, rounds) and their spread as the verdict.
//!
//! compare judges its rows as one family (`verdict::family_gate`), so a change alone
//! in its row must clear a higher bar than z₀.₉₇₅: [`mde_family`] is the MDE compare
//! prints; [`mde`] and [`precision_for`] are one row's, judged alone.

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
    let se = log_se(ci_low, ci_high)?;
    Some(((1.0 + threshold).ln() + (Z975 + Z80) * se).exp() - 1.0)
}

/// [`mde`] for a row judged with `rows` others as one family (`verdict::family_gate`),
/// its interval a Student t of `df` degrees of freedom: a lone change must clear the
/// family's first bar (`verdict::family_bar`), and 80% power adds t₀.₈,df standard
/// errors, the standard error being the interval's half-width over t₀.₉₇₅,df.
pub fn mde_family(ci_low: f64, ci_high: f64, threshold: f64, df: f64, rows: usize) -> Option<f64> {
    if !(ci_low > 0.0 && ci_high >= ci_low && ci_high.is_finite() && df >= 1.0) {
        return None;
    }
    let se = (ci_high / ci_low).ln() / (2.0 * super::student::quantile(0.975, df));
    let bar = super::verdict::family_bar(rows, df);
    Some(((1.0 + threshold).ln() + (bar + super::student::quantile(POWER, df)) * se).exp() - 1.0)
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
        // One row at many degrees of freedom is the plain MDE; forty rows or few degrees
        // of freedom need more.
        assert!((mde_family(lo, hi, 0.03, 1e9, 1).unwrap() - m).abs() < 1e-4);
        assert!(mde_family(lo, hi, 0.03, 1e9, 40).unwrap() > m);
        assert!(mde_family(lo, hi, 0.03, 9.0, 40).unwrap() > mde_family(lo, hi, 0.03, 1e9, 40).unwrap());
    }

    /// A change of the family MDE, alone among forty rows of t intervals (ten rounds a
    /// side), is named by the gate in about 80% of trials.
    #[test]
    fn the_family_mde_is_what_the_gate_names_with_80_percent_power() {
        use super::super::verdict::{family_gate, p_beyond};
        let (k, sd, t, df, rows) = (10usize, 0.05f64, 0.03f64, 18.0f64, 40usize);
        let mut rng = super::super::SplitMix64::new(3);
        let mut side = |centre: f64| {
            let xs: Vec<f64> = (0..k).map(|_| centre + sd * super::super::nested::normal(&mut rng)).collect();
            let m = xs.iter().sum::<f64>() / k as f64;
            (m, xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1) as f64 / k as f64)
        };
        // The MDE at the expected se (the interval of the true spread).
        let se = sd * (2.0 / k as f64).sqrt();
        let q = super::super::student::quantile(0.975, df);
        let m = mde_family((-q * se).exp(), (q * se).exp(), t, df, rows).unwrap();
        let trials = 1000;
        let mut named = 0;
        for _ in 0..trials {
            let p: Vec<f64> = (0..rows)
                .map(|i| {
                    let ((ma, va), (mb, vb)) = (side(0.0), side(if i == 0 { (1.0 + m).ln() } else { 0.0 }));
                    let (l, half) = (mb - ma, q * (va + vb).sqrt());
                    p_beyond(l.exp(), (l - half).exp(), (l + half).exp(), t, df).unwrap()
                })
                .collect();
            named += usize::from(family_gate(&p)[0]);
        }
        assert!((700..=900).contains(&named), "MDE {m}: named in {named} of {trials}");
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
