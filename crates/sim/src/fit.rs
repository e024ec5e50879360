//! Profiles fitted by running the simulator itself: they sit above the workloads, which
//! the cost profiles below them do not know.

use super::cost::{self, CostProfile, ProfileError, fitted};
use super::workload::{Params, simulate};
use super::{PolicyKind, WorkloadKind};

/// Half the window over which the fit's objective is smoothed, ns.
pub const WINDOW_NS: f64 = 50.0;
/// The fine grid's step, ns.
pub const STEP_NS: f64 = 5.0;

/// The median of `v` (not empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// How the lock-transfer fit chose its value: the smoothed objective there and its
/// slope, and how far the raw rate wanders within the window.
#[derive(Debug, Clone, PartialEq)]
pub struct LockFit {
    pub ns: f64,
    /// The raw simulated rate at the chosen value.
    pub rate: f64,
    /// The median rate over the value ± [`WINDOW_NS`] (5 ns steps).
    pub smoothed: f64,
    /// The smoothed rate's slope there, switches/s per ns (central difference over the
    /// window).
    pub slope: f64,
    /// The lowest and highest raw rate within the window.
    pub raw_range: (f64, f64),
}

/// Fits the lock transfer so the simulated linux-2.4 loop_yield rate (2 CPUs, 4
/// yielders) meets `target`.
///
/// The raw rate is not a smooth function of the term: the two CPUs fall into and out
/// of lockstep on the lock, so 5 ns apart the rate can halve or double (1075 ns gives
/// about 474 k/s, 1080 ns 228 k/s). A fit to the raw rate picks whichever grid point
/// lands near the target, cliff or not. So the objective is smoothed: the median of
/// the raw rate over the value ± 50 ns (21 points), which stands for a transfer cost
/// that varies a little from one hand-off to the next, as a real bus's does. The fit
/// keeps the grid point whose smoothed rate is closest to the target among those whose
/// raw rate is within 10% of its smoothed rate (a point typical of its neighbourhood,
/// not one on a cliff), and reports the smoothed slope and the raw range there.
pub fn fit_lock_transfer(base: &CostProfile, target: f64) -> Option<LockFit> {
    let mut p = base.clone();
    let mut rate = |t: f64| {
        p.lock_transfer.ns = t.max(0.0);
        let params = Params::new(PolicyKind::Linux24, WorkloadKind::LoopYield, 2, 4);
        simulate(&params, &p).figures[0].value
    };
    // Coarse: 100 ns steps, each the median of three points 10 ns apart.
    let coarse = (0..=50)
        .map(|i| i as f64 * 100.0)
        .map(|t| (t, median(vec![rate(t - 10.0), rate(t), rate(t + 10.0)])))
        .min_by(|a, b| (a.1 / target).ln().abs().total_cmp(&(b.1 / target).ln().abs()))?
        .0;
    // Fine: 5 ns steps over the coarse best ± 150 ns, with the window's margin.
    let reach = 150.0 + WINDOW_NS;
    let steps = (2.0 * reach / STEP_NS) as usize;
    let grid: Vec<(f64, f64)> =
        (0..=steps).map(|i| (coarse - reach + i as f64 * STEP_NS).max(0.0)).map(|t| (t, rate(t))).collect();
    let w = (WINDOW_NS / STEP_NS) as usize;
    let smoothed = |i: usize| median(grid[i - w..=i + w].iter().map(|g| g.1).collect());
    let candidates = (2 * w..=steps - 2 * w).filter_map(|i| {
        let s = smoothed(i);
        let (t, raw) = grid[i];
        ((raw / s - 1.0).abs() <= 0.1).then(|| {
            let slope = (smoothed(i + w) - smoothed(i - w)) / (2.0 * WINDOW_NS);
            let window = grid[i - w..=i + w].iter().map(|g| g.1);
            let raw_range = (window.clone().fold(f64::INFINITY, f64::min), window.fold(0.0, f64::max));
            LockFit { ns: t, rate: raw, smoothed: s, slope, raw_range }
        })
    });
    candidates.min_by(|a, b| (a.smoothed / target).ln().abs().total_cmp(&(b.smoothed / target).ln().abs()))
}

/// Molnar's 2- and 8-way boxes of 2002 (Pentium III-class SMP on a shared front-side
/// bus). One term is fitted, the lock transfer, to one figure: the old scheduler's
/// 2-way loop_yield rate (the mean of the four vmstat lines), by
/// [`fit_lock_transfer`] on a smoothed objective; every other term is assumed.
pub fn smp2002() -> Result<CostProfile, ProfileError> {
    let target = oscost_figure::published::mean_of_runs(
        "molnar02 loop_yield",
        "2-CPU",
        "4 instances of ./loop_yield",
        "old scheduler",
    )
    .ok_or(ProfileError::Unfittable("smp2002"))?;
    let mut p = cost::smp2002_assumed();
    let fit = fit_lock_transfer(&p, target).ok_or(ProfileError::Unfittable("smp2002"))?;
    if (fit.smoothed / target - 1.0).abs() > 0.1 {
        return Err(ProfileError::Unfittable("smp2002"));
    }
    let from = "molnar02 loop_yield, 2-CPU box, 4 instances, old scheduler: mean of 4 vmstat lines";
    p.lock_transfer = fitted(
        fit.ns,
        format!(
            "{from} ({target:.0} switches/s): the simulated linux-2.4 rate's median over ±{WINDOW_NS:.0} ns, closest grid point where the raw rate is within 10% of that median"
        ),
    );
    p.fit = vec![
        format!(
            "{from}: {target:.0} switches/s; simulated with the fitted term: {:.0} switches/s (median over ±{WINDOW_NS:.0} ns: {:.0})",
            fit.rate, fit.smoothed
        ),
        format!(
            "the raw rate is not smooth in the term (the CPUs fall into and out of lockstep on the lock): within ±{WINDOW_NS:.0} ns it spans {:.0}–{:.0} switches/s; the smoothed rate's slope at {:.0} ns is {:.0} switches/s per ns ({:+.2}% per 1% of the term)",
            fit.raw_range.0,
            fit.raw_range.1,
            fit.ns,
            fit.slope,
            fit.slope * fit.ns / fit.smoothed
        ),
        "identified: the lock's transfer cost per spinning CPU, given every other term (assumed)".into(),
    ];
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_fit_sits_where_the_smoothed_rate_meets_its_target_and_says_how_rough_it_is() {
        let target = oscost_figure::published::mean_of_runs(
            "molnar02 loop_yield",
            "2-CPU",
            "4 instances of ./loop_yield",
            "old scheduler",
        )
        .unwrap();
        let fit = fit_lock_transfer(&cost::smp2002_assumed(), target).unwrap();
        assert!((fit.smoothed / target - 1.0).abs() < 0.1, "{fit:?}");
        // Not on a cliff: the raw rate at the value is typical of its window.
        assert!((fit.rate / fit.smoothed - 1.0).abs() <= 0.1, "{fit:?}");
        assert!(fit.raw_range.0 <= fit.rate && fit.rate <= fit.raw_range.1, "{fit:?}");
        // More transfer cost, a slower lock: the smoothed rate does not rise.
        assert!(fit.slope <= 0.0, "{fit:?}");
        let p = smp2002().unwrap();
        assert_eq!(p.lock_transfer.ns, fit.ns);
        assert!(p.fit.iter().any(|l| l.contains("slope")), "{:?}", p.fit);
    }
}
