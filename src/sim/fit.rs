//! Profiles fitted by running the simulator itself: they sit above the workloads, which
//! the cost profiles below them do not know.

use super::cost::{self, CostProfile, ProfileError, fitted};
use super::workload::{Params, simulate};
use super::{PolicyKind, WorkloadKind};

/// Molnar's 2- and 8-way boxes of 2002 (Pentium III-class SMP on a shared front-side
/// bus). One term is fitted, the lock transfer, to one figure: the old scheduler's
/// 2-way loop_yield rate (the mean of the four vmstat lines). The fit runs the
/// simulator itself (2.4 policy, 2 CPUs, 4 yielders) over a grid of the term (100 ns
/// steps, then 5 ns around the best) and keeps the value whose simulated rate comes
/// closest to the published one; every other term is assumed.
pub fn smp2002() -> Result<CostProfile, ProfileError> {
    let target =
        crate::published::mean_of_runs("molnar02 loop_yield", "2-CPU", "4 instances of ./loop_yield", "old scheduler")
            .ok_or(ProfileError::Unfittable("smp2002"))?;
    let mut p = cost::smp2002_assumed();
    let rate = |p: &CostProfile| {
        let params = Params::new(PolicyKind::Linux24, WorkloadKind::LoopYield, 2, 4);
        simulate(&params, p).figures[0].value
    };
    // The simulated rate falls as the transfer grows, but not smoothly (the CPUs fall
    // into and out of lockstep on the lock): a grid, then a finer one around the best.
    let closest = |p: &mut CostProfile, grid: &mut dyn Iterator<Item = f64>| {
        let mut best = (f64::INFINITY, 0.0);
        for t in grid {
            p.lock_transfer.ns = t;
            let miss = (rate(p) / target).ln().abs();
            if miss < best.0 {
                best = (miss, t);
            }
        }
        best.1
    };
    let coarse = closest(&mut p, &mut (0..=50).map(|i| i as f64 * 100.0));
    let t = closest(&mut p, &mut (0..=40).map(|i| (coarse - 100.0 + i as f64 * 5.0).max(0.0)));
    p.lock_transfer.ns = t;
    let got = rate(&p);
    if (got / target - 1.0).abs() > 0.1 {
        return Err(ProfileError::Unfittable("smp2002"));
    }
    let from = "molnar02 loop_yield, 2-CPU box, 4 instances, old scheduler: mean of 4 vmstat lines";
    p.lock_transfer =
        fitted(t, format!("{from} ({target:.0} switches/s), the simulated linux-2.4 rate's closest grid point"));
    p.fit = vec![
        format!("{from}: {target:.0} switches/s; simulated with the fitted term: {got:.0} switches/s"),
        "identified: the lock's transfer cost per spinning CPU, given every other term (assumed)".into(),
    ];
    Ok(p)
}
