//! How much each simulated figure owes to each cost term, and whether a published
//! conclusion survives the terms nobody measured.
//!
//! A simulated figure is exact given its profile, but most profiles are mostly
//! assumptions: a figure that agrees with a text only while an assumed term sits at one
//! value is a guess, not a prediction. So every simulated cell carries:
//! - for each *assumed* term, the figure with that term at half and at one and a half
//!   times its value, every other term held ([`SWING`]; the profile's fit is not redone);
//! - for each *fitted* term, the figure's slope at the fitted value (a central
//!   difference of ±[`SLOPE_STEP`]), so a fit that sits on a cliff shows it;
//! - *measured* terms are left alone: their spread is the measurement's.
//!
//! A published conclusion is a ratio's side of a threshold (O(1) faster than the old
//! scheduler: o1/old above 1 for a rate; the fix faster than before: after/before below
//! 1 for a time). It is `fragile` when it holds at the profile's values but some
//! assumed term within ±50% puts it on the other side; the terms that do are named.

use std::collections::BTreeMap;

use super::cost::CostProfile;
use super::workload::{Params, simulate};

/// How far an assumed term moves either way: ±50%.
pub const SWING: f64 = 0.5;
/// A fitted term's step for its slope: ±2% of its value.
pub const SLOPE_STEP: f64 = 0.02;

/// The profile with one term (by its name in [`CostProfile::terms`]) scaled by
/// `factor`; None for a name the profile does not have. Terms are set through the
/// profile's data form, so a term added to the profile is covered without a change
/// here.
pub fn scaled(profile: &CostProfile, term: &str, factor: f64) -> Option<CostProfile> {
    let mut v = serde_json::to_value(profile).ok()?;
    let ns = v.get_mut(term)?.get_mut("ns")?;
    let was = ns.as_f64()?;
    *ns = serde_json::Value::from(was * factor);
    serde_json::from_value(v).ok()
}

/// A figure with one assumed term at −50% and at +50%.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Swing {
    pub term: String,
    /// The term's value, ns.
    pub ns: f64,
    /// The figure with the term at (1 − SWING) and at (1 + SWING) of its value.
    pub low: f64,
    pub high: f64,
}

/// A figure's slope in one fitted term at its fitted value.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slope {
    pub term: String,
    pub ns: f64,
    /// Figure units per ns of the term.
    pub per_ns: f64,
    /// Relative change of the figure per relative change of the term; |e| ≫ 1 is a cliff.
    pub elasticity: f64,
}

/// One figure's sensitivity: every assumed term's swing, every fitted term's slope.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sensitivity {
    pub swing: f64,
    pub assumed: Vec<Swing>,
    pub fitted: Vec<Slope>,
}

impl Sensitivity {
    /// The widest range of the figure (`at` at the profile's values) over the assumed
    /// terms' swings, as [`Judgement::range`] is of a ratio.
    pub fn range(&self, at: f64) -> (f64, f64) {
        self.assumed.iter().flat_map(|s| [s.low, s.high]).fold((at, at), |(lo, hi), v| (lo.min(v), hi.max(v)))
    }

    /// The assumed term whose swing moves the figure most.
    pub fn widest(&self) -> Option<&Swing> {
        let span = |s: &Swing| (s.high - s.low).abs();
        self.assumed.iter().max_by(|a, b| span(a).total_cmp(&span(b)))
    }
}

/// The terms of `profile` that move (non-zero), with their basis.
fn moving_terms(profile: &CostProfile) -> Vec<(String, f64, &'static str)> {
    profile
        .terms()
        .into_iter()
        .filter(|(_, t)| t.ns != 0.0)
        .map(|(name, t)| (name.to_string(), t.ns, t.basis.word()))
        .collect()
}

/// A simulation's figures by name.
type Figures = Vec<(&'static str, f64)>;
/// An experiment (its parameters as text), a term ("" for none) and its factor's bits.
type Variant = (String, String, u64);

/// Simulations of one profile and its variants, each run once: a reprint asks for the
/// same experiment under the same variant from several cells and conclusions.
pub struct Lab {
    base: CostProfile,
    /// (experiment, term, factor) → the experiment's figures by name.
    memo: BTreeMap<Variant, Figures>,
}

impl Lab {
    pub fn new(base: CostProfile) -> Self {
        Self { base, memo: BTreeMap::new() }
    }

    pub fn profile(&self) -> &CostProfile {
        &self.base
    }

    /// `figure` of experiment `p` with `term` scaled by `factor` ("" and 1.0: the
    /// profile as it is); None for a figure the workload does not report.
    pub fn figure(&mut self, p: &Params, figure: &str, term: &str, factor: f64) -> Option<f64> {
        let key = (format!("{p:?}"), term.to_string(), factor.to_bits());
        if !self.memo.contains_key(&key) {
            let profile = if term.is_empty() { self.base.clone() } else { scaled(&self.base, term, factor)? };
            let figures = simulate(p, &profile).figures.iter().map(|f| (f.name, f.value)).collect();
            self.memo.insert(key.clone(), figures);
        }
        self.memo[&key].iter().find(|(n, _)| *n == figure).map(|(_, v)| *v)
    }

    /// `figure` as experiment `p`'s workload names it (its report's own text); None
    /// for a figure the workload does not report.
    pub fn figure_name(&mut self, p: &Params, figure: &str) -> Option<&'static str> {
        self.figure(p, figure, "", 1.0)?;
        let key = (format!("{p:?}"), String::new(), 1.0f64.to_bits());
        self.memo[&key].iter().find(|(n, _)| *n == figure).map(|(n, _)| *n)
    }

    /// The sensitivity of `figure` of experiment `p`.
    pub fn sensitivity(&mut self, p: &Params, figure: &str) -> Sensitivity {
        let mut out = Sensitivity { swing: SWING, ..Default::default() };
        for (term, ns, basis) in moving_terms(&self.base) {
            match basis {
                "assumed" => {
                    let low = self.figure(p, figure, &term, 1.0 - SWING);
                    let high = self.figure(p, figure, &term, 1.0 + SWING);
                    if let (Some(low), Some(high)) = (low, high) {
                        out.assumed.push(Swing { term, ns, low, high });
                    }
                }
                "fitted" => {
                    let at = self.figure(p, figure, "", 1.0);
                    let down = self.figure(p, figure, &term, 1.0 - SLOPE_STEP);
                    let up = self.figure(p, figure, &term, 1.0 + SLOPE_STEP);
                    if let (Some(at), Some(down), Some(up)) = (at, down, up) {
                        let per_ns = (up - down) / (2.0 * SLOPE_STEP * ns);
                        let elasticity = if at != 0.0 { per_ns * ns / at } else { 0.0 };
                        out.fitted.push(Slope { term, ns, per_ns, elasticity });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// A conclusion judged at the profile's values alone: whether it holds, with no
    /// variant swept (its mark says so; never `robust`).
    pub fn judge_unswept(&mut self, c: &Conclusion) -> Judgement {
        let num = self.figure(&c.num, c.figure, "", 1.0);
        let den = self.figure(&c.den, c.figure, "", 1.0);
        let ratio = num.zip(den).filter(|(_, d)| *d != 0.0).map_or(f64::NAN, |(n, d)| n / d);
        Judgement {
            label: c.label.clone(),
            claim: c.claim,
            published: c.published,
            ratio,
            holds: meets(c.claim, c.published, ratio),
            fragile: false,
            flipped_by: Vec::new(),
            swings: Vec::new(),
            swept: false,
        }
    }

    /// A conclusion judged under the profile and its ±50% variants.
    pub fn judge(&mut self, c: &Conclusion) -> Judgement {
        let ratio_at = |lab: &mut Lab, term: &str, factor: f64| {
            let num = lab.figure(&c.num, c.figure, term, factor)?;
            let den = lab.figure(&c.den, c.figure, term, factor)?;
            (den != 0.0).then(|| num / den)
        };
        let ratio = ratio_at(self, "", 1.0).unwrap_or(f64::NAN);
        let holds = meets(c.claim, c.published, ratio);
        let mut swings = Vec::new();
        let mut flipped_by = Vec::new();
        for (term, ns, basis) in moving_terms(&self.base) {
            if basis != "assumed" {
                continue;
            }
            let (Some(low), Some(high)) = (ratio_at(self, &term, 1.0 - SWING), ratio_at(self, &term, 1.0 + SWING))
            else {
                continue;
            };
            if holds && !(meets(c.claim, c.published, low) && meets(c.claim, c.published, high)) {
                flipped_by.push(term.clone());
            }
            swings.push(Swing { term, ns, low, high });
        }
        Judgement {
            label: c.label.clone(),
            claim: c.claim,
            published: c.published,
            ratio,
            holds,
            fragile: holds && !flipped_by.is_empty(),
            flipped_by,
            swings,
            swept: true,
        }
    }
}

/// How far from the published ratio a simulated one may stand and still meet its
/// target: within a factor of 2 either way (and on the published side of the
/// threshold).
pub const TARGET_FACTOR: f64 = 2.0;

/// A conclusion's target: the ratios on the published side of its threshold within
/// [`TARGET_FACTOR`] of the published ratio (the side alone when none is published).
pub fn target_range(claim: Claim, published: f64) -> (f64, f64) {
    let (lo, hi) = if published.is_finite() && published > 0.0 {
        (published / TARGET_FACTOR, published * TARGET_FACTOR)
    } else {
        (0.0, f64::INFINITY)
    };
    match claim {
        Claim::Above(t) => (lo.max(t), hi),
        Claim::Below(t) => (lo, hi.min(t)),
    }
}

/// Whether `ratio` meets the target of a conclusion claiming `claim` of `published`.
pub fn meets(claim: Claim, published: f64, ratio: f64) -> bool {
    let (lo, hi) = target_range(claim, published);
    claim.holds(ratio) && ratio >= lo && ratio <= hi
}

/// Which side of a threshold a published ratio stands.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "side", content = "threshold", rename_all = "snake_case")]
pub enum Claim {
    Above(f64),
    Below(f64),
}

impl Claim {
    /// The side of `threshold` the published ratio stands on; None when it stands
    /// within 10% of it (the text's figures do not decide a side there).
    pub fn of_published(ratio: f64, threshold: f64) -> Option<Claim> {
        if ratio >= threshold * 1.1 {
            Some(Claim::Above(threshold))
        } else if ratio <= threshold / 1.1 {
            Some(Claim::Below(threshold))
        } else {
            None
        }
    }

    pub fn holds(self, ratio: f64) -> bool {
        match self {
            Claim::Above(t) => ratio > t,
            Claim::Below(t) => ratio < t,
        }
    }

    /// "> 1", "< 0.7".
    pub fn text(self) -> String {
        match self {
            Claim::Above(t) => format!("> {t}"),
            Claim::Below(t) => format!("< {t}"),
        }
    }
}

/// A published conclusion: `figure` of `num` over that of `den` stands on one side of
/// a threshold.
#[derive(Debug, Clone)]
pub struct Conclusion {
    pub label: String,
    pub num: Params,
    pub den: Params,
    pub figure: &'static str,
    pub claim: Claim,
    /// The published ratio.
    pub published: f64,
}

/// A conclusion under the simulation: the ratio, whether it holds, and whether an
/// assumed term within ±50% turns it over.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Judgement {
    pub label: String,
    pub claim: Claim,
    pub published: f64,
    pub ratio: f64,
    pub holds: bool,
    /// Holds at the profile's values, not at every ±50% variant of an assumed term.
    pub fragile: bool,
    /// The assumed terms whose ±50% turns the conclusion over.
    pub flipped_by: Vec<String>,
    /// The ratio with each assumed term at −50% and +50%.
    pub swings: Vec<Swing>,
    /// Whether the assumed terms were swept at all (a `--quick` suite judges at the
    /// profile's values alone).
    #[serde(default = "swept_by_default")]
    pub swept: bool,
}

/// A judgement that does not say whether it swept did: only an unswept one writes
/// `false`.
fn swept_by_default() -> bool {
    true
}

impl Judgement {
    /// The target as printed: "1–2.52", "> 1" when no ratio is published.
    pub fn target_text(&self) -> String {
        let (lo, hi) = target_range(self.claim, self.published);
        if hi.is_finite() { format!("{}–{}", short(lo), short(hi)) } else { self.claim.text() }
    }

    /// "robust", "fragile (ipi, migration_refill ±50%)", "met, not swept" or "not met
    /// (×2.2 above its target)".
    pub fn mark(&self) -> String {
        if !self.holds {
            let (lo, hi) = target_range(self.claim, self.published);
            match self.ratio {
                r if r > hi && hi > 0.0 => format!("not met (×{} above its target)", short(r / hi)),
                r if r < lo && r > 0.0 => format!("not met (×{} below its target)", short(lo / r)),
                _ => "not met".into(),
            }
        } else if !self.swept {
            "met, not swept".into()
        } else if self.fragile {
            format!("fragile ({} ±{:.0}%)", self.flipped_by.join(", "), SWING * 100.0)
        } else {
            "robust".into()
        }
    }

    /// The widest ratio range over the assumed terms' swings.
    pub fn range(&self) -> (f64, f64) {
        self.swings
            .iter()
            .flat_map(|s| [s.low, s.high])
            .fold((self.ratio, self.ratio), |(lo, hi), r| (lo.min(r), hi.max(r)))
    }
}

/// A ratio in three significant figures at most.
fn short(v: f64) -> String {
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::unit_profile;
    use crate::{PolicyKind, WorkloadKind};

    #[test]
    fn a_ratio_on_the_published_side_but_past_twice_the_published_one_is_not_met() {
        let c = Claim::Above(1.0);
        assert_eq!(target_range(c, 1.26), (1.0, 2.52));
        assert!(meets(c, 1.26, 1.5));
        assert!(!meets(c, 1.26, 2.82), "on the side, but ×2.2 the published ratio");
        assert!(!meets(c, 1.26, 0.98), "the wrong side");
        let j = Judgement {
            label: "chat".into(),
            claim: c,
            published: 1.26,
            ratio: 2.82,
            holds: meets(c, 1.26, 2.82),
            fragile: false,
            flipped_by: Vec::new(),
            swings: Vec::new(),
            swept: true,
        };
        assert_eq!(j.mark(), "not met (×1.12 above its target)");
        assert_eq!(j.target_text(), "1.00–2.52");
        // A claim below its threshold keeps the threshold as its upper bound.
        assert_eq!(target_range(Claim::Below(1.0), 0.7), (0.35, 1.0));
    }

    fn fork(policy: PolicyKind) -> Params {
        Params::new(policy, WorkloadKind::Fork, 2, 100)
    }

    fn conclusion(claim: Claim) -> Conclusion {
        Conclusion {
            label: "fork o1/old".into(),
            num: fork(PolicyKind::O1),
            den: fork(PolicyKind::Linux24),
            figure: "time per fork+exit",
            claim,
            // No published ratio: the target is the claim's side alone.
            published: f64::NAN,
        }
    }

    #[test]
    fn scaling_a_term_moves_that_term_only() {
        let p = unit_profile();
        let q = scaled(&p, "ipi", 1.5).unwrap();
        assert_eq!(q.ipi.ns, 3000.0);
        assert_eq!(q.ipi.basis, p.ipi.basis);
        for ((a, ta), (b, tb)) in p.terms().into_iter().zip(q.terms()) {
            assert_eq!(a, b);
            if a != "ipi" {
                assert_eq!(ta, tb, "{a}");
            }
        }
        assert!(scaled(&p, "no_such_term", 2.0).is_none());
    }

    /// The synthetic profile's fork ratio (o1/old) moves with its assumed terms: a
    /// threshold between the ratio and its farthest swing is crossed by the term that
    /// swings it there, and that conclusion is marked fragile; a threshold beyond every
    /// swing is not.
    #[test]
    fn a_term_that_flips_a_ratio_within_fifty_percent_marks_it_fragile() {
        let mut lab = Lab::new(unit_profile());
        let base = lab.judge(&conclusion(Claim::Below(f64::INFINITY)));
        let (lo, hi) = base.range();
        assert!(hi > lo, "some assumed term moves the fork ratio: {base:?}");
        let (tight, wide) = if hi - base.ratio > base.ratio - lo {
            (Claim::Below(base.ratio + (hi - base.ratio) / 2.0), Claim::Below(hi * 1.5))
        } else {
            (Claim::Above(base.ratio - (base.ratio - lo) / 2.0), Claim::Above(lo / 1.5))
        };
        let j = lab.judge(&conclusion(tight));
        assert!(j.holds && j.fragile, "{j:?}");
        assert!(j.mark().starts_with("fragile ("), "{}", j.mark());
        for mover in &j.flipped_by {
            let s = j.swings.iter().find(|s| &s.term == mover).unwrap();
            assert!(!tight.holds(s.low) || !tight.holds(s.high), "{s:?}");
        }
        // The terms not named keep it on its side.
        for s in j.swings.iter().filter(|s| !j.flipped_by.contains(&s.term)) {
            assert!(tight.holds(s.low) && tight.holds(s.high), "{s:?}");
        }
        let j = lab.judge(&conclusion(wide));
        assert!(j.holds && !j.fragile && j.flipped_by.is_empty(), "{j:?}");
        assert_eq!(j.mark(), "robust");
        // A conclusion the ratio already misses: not met, and not called fragile.
        let missed = match tight {
            Claim::Below(_) => Claim::Below(lo / 2.0),
            Claim::Above(_) => Claim::Above(hi * 2.0),
        };
        let j = lab.judge(&conclusion(missed));
        assert!(!j.holds && !j.fragile);
        assert!(j.mark().starts_with("not met"), "{}", j.mark());
    }

    #[test]
    fn a_fitted_term_reports_its_slope_and_an_assumed_one_its_swing() {
        let mut p = unit_profile();
        p.switch = crate::cost::fitted(500.0, "a synthetic fit");
        let mut lab = Lab::new(p);
        let travis = Params::new(PolicyKind::Linux20, WorkloadKind::Travis, 1, 4);
        let s = lab.sensitivity(&travis, "time per switch");
        let slope = s.fitted.iter().find(|s| s.term == "switch").expect("the fitted switch has a slope");
        // Every yield switches once: about one ns of time per switch per ns of switch.
        assert!((slope.per_ns - 1.0).abs() < 0.1, "{slope:?}");
        assert!(slope.elasticity > 0.0 && slope.elasticity < 1.0, "{slope:?}");
        assert!(s.assumed.iter().all(|w| w.term != "switch"));
        let scan = s.assumed.iter().find(|w| w.term == "scan_per_task").unwrap();
        assert!(scan.low < scan.high, "{scan:?}");
        // Same experiment, same variant: one simulation, the same figure.
        assert_eq!(lab.sensitivity(&travis, "time per switch"), s);
    }

    #[test]
    fn a_published_ratio_near_its_threshold_makes_no_claim() {
        assert_eq!(Claim::of_published(4.05, 1.0), Some(Claim::Above(1.0)));
        assert_eq!(Claim::of_published(0.38, 0.7), Some(Claim::Below(0.7)));
        assert_eq!(Claim::of_published(28.0 / 27.0, 1.0), None);
    }
}
