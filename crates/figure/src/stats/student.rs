//! Student's t distribution, as compare's verdicts read it: the lower tail and the
//! quantiles of a t of `df` degrees of freedom (statrs). Degrees of freedom are held
//! to [1, 1000]: below 1 no interval is drawn, and past 1000 t is the normal to three
//! digits while statrs's quantile loses its accuracy (at 10⁷ it gives 1.83 for 1.96).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The most degrees of freedom the t is taken at; see the module's note.
const MAX_DF: f64 = 1000.0;

fn t_of(df: f64) -> Option<StudentsT> {
    let df = if df.is_nan() { 1.0 } else { df.clamp(1.0, MAX_DF) };
    StudentsT::new(0.0, 1.0, df).ok()
}

/// P(T ≤ x) for T a Student t of `df` degrees of freedom (NaN if x is NaN).
pub fn cdf(x: f64, df: f64) -> f64 {
    t_of(df).map_or(f64::NAN, |t| t.cdf(x))
}

/// The p-quantile of a Student t of `df` degrees of freedom, 0 < p < 1.
pub fn quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    t_of(df).map_or(f64::NAN, |t| t.inverse_cdf(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_tails_match_the_tables() {
        for (df, q) in [(1.0, 12.706), (4.0, 2.776), (9.0, 2.262), (18.0, 2.101), (1e9, 1.962)] {
            assert!((quantile(0.975, df) - q).abs() < 1e-3, "{df}");
            assert!((cdf(-quantile(0.975, df), df) - 0.025).abs() < 1e-9, "{df}");
        }
        assert!(quantile(1.0, 9.0).is_nan() && quantile(0.5, f64::NAN).abs() < 1e-9);
    }
}
