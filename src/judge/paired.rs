//! A paired run's conditions against their baseline: each row measured under a
//! condition (`condition` parameter) matched with the baseline row measured in the
//! same rounds, and judged (`stats::paired`, `stats::verdict`).
//!
//! Pure: it reads a run's stored rows, so `run`, `show`, `report` and the JSON give
//! the same figures for the same run. Two separate runs are never paired: their rounds
//! did not run together (`compare` says so).

use serde::Serialize;

use crate::key::{Param, Text};
use crate::model::{FigureKey, ResultRow};
use crate::stats::paired::{differences, paired_means, paired_medians, ratio};
use crate::stats::verdict::{Doubt, Verdict, direction, explained, verdict};

/// The parameter every row measured under a condition carries: the condition's text.
pub const CONDITION: Param<Text> = crate::condition::PARAM;

/// The row parameters a condition (by its text) changes itself, besides
/// [`CONDITION`]: its baseline is the row equal in every other. Given by the layer
/// that knows conditions (`condition::params_changed_by`).
pub type ParamsChanged = fn(&str) -> &'static [&'static str];

/// Resamples behind a paired interval.
pub const RESAMPLES: usize = 2000;

/// One condition's figure against its baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedFigure {
    pub condition: String,
    /// The baseline row's figure (the condition's own parameters left out).
    #[serde(flatten)]
    pub key: FigureKey,
    pub unit: crate::unit::Unit,
    /// Each arm's median over all its samples (as `show` prints the rows).
    pub baseline: f64,
    pub value: f64,
    /// Each arm's geometric mean of its paired rounds' medians: the ratio's own
    /// inputs (`paired_value / paired_baseline` is the ratio).
    pub paired_baseline: f64,
    pub paired_value: f64,
    /// The condition over the baseline (geometric mean of the rounds' ratios).
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The smallest change this design would call with 80% power at the threshold.
    pub mde: f64,
    pub verdict: Verdict,
    /// Rounds paired.
    pub pairs: usize,
}

/// The parameters that identify a row's baseline: the variant's (bookkeeping such as
/// the batch size left out) but the condition and what the condition itself changes.
fn baseline_key(r: &ResultRow, changed: &[&str]) -> Vec<String> {
    let skip = |p: &String| {
        let key = p.split('=').next().unwrap_or_default();
        key == CONDITION.name() || changed.contains(&key)
    };
    r.variant_params().into_iter().filter(|p| !skip(p)).collect()
}

/// A row's rounds with their numbers.
fn numbered(x: &ResultRow) -> crate::stats::paired::NumberedRounds<'_> {
    x.round_numbers().into_iter().zip(x.round_slices()).collect()
}

/// Every condition row of `rows` with its baseline, in the rows' order; rows without
/// per-round samples or a baseline are left out.
pub fn pairs(rows: &[ResultRow], threshold: f64, params_changed: ParamsChanged) -> Vec<PairedFigure> {
    let mut out = Vec::new();
    for r in rows {
        let Some(text) = r.params.get(CONDITION) else { continue };
        let changed = params_changed(text);
        let key = baseline_key(r, changed);
        let base = rows.iter().find(|b| {
            !b.params.contains(CONDITION.name())
                && b.benchmark == r.benchmark
                && b.method == r.method
                && b.unit == r.unit
                && baseline_key(b, changed) == key
        });
        let Some(base) = base else { continue };
        let medians = paired_medians(&numbered(base), &numbered(r));
        let d = differences(&medians);
        let (paired_baseline, paired_value) = paired_means(&medians);
        let Some(est) = ratio(&d, RESAMPLES, crate::rounds::seed_of(r)) else { continue };
        let mde = crate::stats::power::mde(est.ci_low, est.ci_high, threshold).unwrap_or(f64::NAN);
        let flags = || [base, r].into_iter().flat_map(|x| &x.flags).map(|f| f.flag);
        let v = match (flags().find(|f| f.voids_comparison()), flags().find(|f| f.withholds_verdict())) {
            // An arm measured something other than the row names (a hand-off that did
            // not switch): a ratio of its rounds earns no verdict.
            (Some(crate::model::FlagCode::TooFewSwitches), _) => Verdict::Uncertain(Doubt::NotASwitch),
            // An arm the tool itself doubts (a bimodal figure, intruded hand-offs).
            (_, Some(f)) => Verdict::Uncertain(Doubt::Flagged(f.as_str())),
            (Some(f), None) => Verdict::Uncertain(Doubt::Flagged(f.as_str())),
            (None, None) => explained(verdict(est.ci_low, est.ci_high, threshold, direction(&r.unit)), est.ratio, mde),
        };
        out.push(PairedFigure {
            condition: text.to_string(),
            key: base.key(),
            unit: r.unit.clone(),
            baseline: base.median,
            value: r.median,
            paired_baseline,
            paired_value,
            ratio: est.ratio,
            ci_low: est.ci_low,
            ci_high: est.ci_high,
            mde,
            verdict: v,
            pairs: est.pairs,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Method, Round};

    /// As `condition` says: a nice value changes the rows' `runner`.
    fn changed(text: &str) -> &'static [&'static str] {
        if text.starts_with("nice:") { &["runner"] } else { &[] }
    }

    fn row(params: &[(&str, &str)], rounds: &[f64]) -> ResultRow {
        let samples: Vec<f64> = rounds.iter().flat_map(|m| [m * 0.99, *m, m * 1.01]).collect();
        let mut r = ResultRow::from_samples("ctx.pipe", Method::Batch, "ns/hand-off", samples, 30).unwrap();
        for (k, v) in params {
            r = r.with_param(k, *v);
        }
        r.rounds = (0..rounds.len()).map(|i| Round { samples: 3, at: Some(i), counts: Default::default() }).collect();
        r
    }

    /// A condition row that missed a middle round pairs each round with the
    /// baseline's round of the same number, not the same position.
    #[test]
    fn rounds_pair_by_number_when_one_is_missing() {
        let base = row(&[], &[100.0, 200.0, 300.0]);
        let mut cond = row(&[("condition", "nice:5")], &[110.0, 330.0]);
        cond.rounds[1].at = Some(2);
        let p = &pairs(&[base, cond], 0.03, changed)[0];
        assert_eq!(p.pairs, 2);
        assert!((p.ratio - 1.1).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn a_condition_row_is_paired_with_the_baseline_measured_beside_it() {
        let drift = [1000.0, 1300.0, 900.0, 1100.0, 1000.0, 1250.0];
        let base = row(&[("mode", "thread")], &drift);
        let other = row(&[("mode", "process")], &drift.map(|x| x * 2.0));
        let cond = row(&[("mode", "thread"), ("condition", "seccomp:allow=8")], &drift.map(|x| x * 1.10));
        let p = pairs(&[base, other, cond], 0.03, changed);
        assert_eq!(p.len(), 1);
        let p = &p[0];
        assert_eq!((p.condition.as_str(), p.key.variant(), p.pairs), ("seccomp:allow=8", "mode=thread", 6));
        // The drift (±30%) cancels: the ratio is the 10% the condition adds, exactly.
        assert!((p.ratio - 1.10).abs() < 1e-9 && p.ci_high / p.ci_low < 1.0 + 1e-9, "{p:?}");
        assert_eq!(p.verdict, "slower");
        // The table's inputs are the ratio's own: their quotient is the ratio.
        assert!((p.paired_value / p.paired_baseline / p.ratio - 1.0).abs() < 1e-9, "{p:?}");
        // A bimodal arm earns no verdict, however clear its ratio.
        let mut bimodal = row(&[("mode", "thread"), ("condition", "seccomp:allow=8")], &drift.map(|x| x * 1.10));
        bimodal.flag(crate::model::Flag::new(crate::model::FlagCode::Bimodal, "two modes"));
        let base = row(&[("mode", "thread")], &drift);
        assert_eq!(pairs(&[base, bimodal], 0.03, changed)[0].verdict, "uncertain (bimodal)");
    }

    #[test]
    fn a_nice_condition_is_paired_across_the_runner_it_changes() {
        let base = row(&[], &[100.0, 110.0, 90.0]);
        let cond = row(&[("runner", "nice=5"), ("condition", "nice:5")], &[100.0, 110.0, 90.0]);
        let p = pairs(&[base, cond], 0.03, changed);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].verdict, "no change");
        // No baseline, no pair.
        let lone = row(&[("condition", "nice:5"), ("mode", "x")], &[1.0, 2.0]);
        assert!(pairs(&[lone], 0.03, changed).is_empty());
    }
}
