//! Stochastic workloads over many seeds.
//!
//! A workload that draws at random (the web server's arrivals, bursts and waits) gives
//! a different figure for every seed; one seed's figure says nothing of how far the
//! next would land. So such a workload runs over `K` seeds (1 to K, each exactly
//! repeatable) and reports each figure's median with its seed range: the lowest and the
//! highest of the K figures. That range is the model's own seed-to-seed spread, not a
//! measurement interval: nothing here was measured, and the stored row keeps one value
//! and no interval, the range in its own parameters (`seeds`, `seed_low`, `seed_high`).

use super::CostProfile;
use super::workload::{Params, WorkloadKind, simulate};
use oscost_figure::key::Param;
use oscost_figure::model::ResultRow;

/// Seeds a stochastic workload runs over when none are given: enough that the lowest
/// and highest of them bound about 90% of the seed-to-seed spread (the chance that a
/// new seed falls outside the range of K is 2/(K + 1)).
pub const DEFAULT_SEEDS: u64 = 20;

/// A row over seeds: how many seeds, and the lowest and highest figure among them.
pub const SEEDS: Param<u64> = Param::new("seeds");
pub const SEED_LOW: Param<f64> = Param::new("seed_low");
pub const SEED_HIGH: Param<f64> = Param::new("seed_high");

/// Whether a workload draws at random (and so runs over seeds in the reprints).
pub fn is_stochastic(w: WorkloadKind) -> bool {
    w == WorkloadKind::Server
}

/// One figure over the seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub figure: &'static str,
    pub unit: oscost_figure::unit::Unit,
    /// The figure at seeds 1..=K, in seed order.
    pub values: Vec<f64>,
}

impl Spread {
    pub fn median(&self) -> f64 {
        let mut v = self.values.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    /// The lowest and highest figure over the seeds.
    pub fn range(&self) -> (f64, f64) {
        self.values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)))
    }

    /// How many seeds give a figure within `lo..=hi`.
    pub fn within(&self, lo: f64, hi: f64) -> usize {
        self.values.iter().filter(|v| (lo..=hi).contains(*v)).count()
    }
}

/// Every figure of `p` at seeds 1..=`seeds` (`p.seed` is ignored); `stop` is asked
/// between seeds (the figures then hold the seeds run so far).
pub fn over_seeds(p: &Params, profile: &CostProfile, seeds: u64, stop: impl Fn() -> bool) -> Vec<Spread> {
    let mut out: Vec<Spread> = Vec::new();
    for seed in 1..=seeds.max(1) {
        if stop() {
            break;
        }
        let report = simulate(&Params { seed, ..p.clone() }, profile);
        for f in report.figures {
            match out.iter_mut().find(|s| s.figure == f.name) {
                Some(s) => s.values.push(f.value),
                None => out.push(Spread { figure: f.name, unit: f.unit, values: vec![f.value] }),
            }
        }
    }
    out
}

/// The rows of a run over seeds: one a figure, its value the median, labelled
/// `seeds=K` with the range in `seed_low` and `seed_high`; the rest as a single seed's
/// row says it (policy, CPUs, tasks, profile).
pub fn rows(p: &Params, profile: &CostProfile, spreads: &[Spread]) -> Vec<ResultRow> {
    let template = super::run::simulate_rows(&Params { seed: 1, ..p.clone() }, profile);
    spreads
        .iter()
        .filter_map(|s| {
            let mut row = template.iter().find(|r| r.params.get(super::run::FIGURE) == Some(s.figure))?.clone();
            let m = s.median();
            let (lo, hi) = s.range();
            (row.min, row.median, row.mean, row.ci_low, row.ci_high) = (m, m, m, m, m);
            row.params.remove("seed");
            row.params.set(SEEDS, s.values.len() as u64);
            row.params.set(SEED_LOW, lo);
            row.params.set(SEED_HIGH, hi);
            row.params.insert("value".into(), "median over seeds".into());
            Some(row)
        })
        .collect()
}

/// "median of 20 seeds, range 1.2–4.0" for a stored row over seeds; None for a row of
/// one seed.
pub fn label(row: &ResultRow, num: impl Fn(f64) -> String) -> Option<String> {
    let k = row.params.get(SEEDS)?;
    let (lo, hi) = (row.params.get(SEED_LOW)?, row.params.get(SEED_HIGH)?);
    Some(format!("median of {k} seeds, seed range {}–{}", num(lo), num(hi)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicyKind;
    use crate::cost::unit_profile;

    fn server() -> Params {
        Params::new(PolicyKind::Linux20, WorkloadKind::Server, 1, 200)
    }

    #[test]
    fn each_seed_gives_its_own_figure_and_the_same_one_every_time() {
        let p = server();
        let a = over_seeds(&p, &unit_profile(), 3, || false);
        let b = over_seeds(&p, &unit_profile(), 3, || false);
        assert_eq!(a, b, "the same seeds, the same figures");
        // Seed k's figures are exactly a single run's at seed k.
        for seed in 1..=3u64 {
            let one = simulate(&Params { seed, ..p.clone() }, &unit_profile());
            for f in &one.figures {
                let s = a.iter().find(|s| s.figure == f.name).unwrap();
                assert_eq!(s.values[(seed - 1) as usize], f.value, "{} at seed {seed}", f.name);
            }
        }
        // Different seeds draw differently.
        let mean = a.iter().find(|s| s.figure == "run queue at switch, mean").unwrap();
        assert!(mean.values.windows(2).any(|w| w[0] != w[1]), "{mean:?}");
    }

    #[test]
    fn a_row_over_seeds_holds_the_median_and_says_its_seed_range_is_not_an_interval() {
        let p = server();
        let spreads = over_seeds(&p, &unit_profile(), 3, || false);
        let rows = rows(&p, &unit_profile(), &spreads);
        assert_eq!(rows.len(), spreads.len());
        for (r, s) in rows.iter().zip(&spreads) {
            assert_eq!(r.median, s.median());
            assert_eq!((r.ci_low, r.ci_high), (r.median, r.median), "no interval");
            assert_eq!(r.params.raw("seeds"), Some(&3u64.into()));
            let l = label(r, |v| format!("{v:.1}")).unwrap();
            assert!(l.starts_with("median of 3 seeds, seed range "), "{l}");
        }
        // Stopped before the first seed: nothing to report, nothing made up.
        assert!(over_seeds(&p, &unit_profile(), 3, || true).is_empty());
    }
}
