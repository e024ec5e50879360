//! `oscost sim`'s plan checked against the sizes a simulation may take, and simulated:
//! every combination the plan names, under one profile, until a stop is asked.

use super::CostProfile;
use super::PolicyKind;
use super::run::Plan;
use super::sensitivity::{Claim, Conclusion, Lab};
use super::workload::Params;
use oscost_figure::key::{FRAGILE, JUDGEMENT, SENSITIVITY};
use oscost_figure::model::ResultRow;

/// The most tasks one simulation takes (virtual work grows with them).
pub const MAX_TASKS: usize = 4096;
/// The most CPUs one simulation takes.
pub const MAX_CPUS: usize = 64;
/// The most messages each chat user sends.
pub const MAX_MESSAGES: u64 = 10_000;
/// The most seeds a stochastic workload runs over.
pub const MAX_SEEDS: u64 = 1000;

/// A size out of the simulator's bounds.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("--cpus must be between 1 and {MAX_CPUS}")]
    Cpus,
    #[error("--tasks must be between 1 and {MAX_TASKS}")]
    Tasks,
    #[error("--messages must be between 1 and {MAX_MESSAGES}")]
    Messages,
    #[error("--seeds must be between 1 and {MAX_SEEDS}")]
    Seeds,
    #[error("--seed runs one seed and --seeds K runs seeds 1..=K: give one of them")]
    SeedAndSeeds,
}

/// The seed and the seed count that `--seed` and `--seeds` ask for: `--seed` alone runs
/// that one seed; `--seeds` alone, or neither, seeds 1..=K (20 unless given). Both at
/// once (K above 1) is refused rather than settled by ignoring one.
pub fn seeds_of(seed: Option<u64>, seeds: Option<u64>) -> Result<(u64, u64), PlanError> {
    match (seed, seeds) {
        (Some(_), Some(k)) if k > 1 => Err(PlanError::SeedAndSeeds),
        (Some(s), _) => Ok((s, 1)),
        (None, k) => Ok((1, k.unwrap_or(super::seeds::DEFAULT_SEEDS))),
    }
}

/// Refuses a plan with a size the simulator does not take, before anything runs.
pub fn check(plan: &Plan) -> Result<(), PlanError> {
    if plan.cpus.iter().any(|&c| c == 0 || c > MAX_CPUS) {
        return Err(PlanError::Cpus);
    }
    if plan.tasks.as_ref().is_some_and(|t| t.iter().any(|&n| n == 0 || n > MAX_TASKS)) {
        return Err(PlanError::Tasks);
    }
    if plan.messages == 0 || plan.messages > MAX_MESSAGES {
        return Err(PlanError::Messages);
    }
    if plan.seeds == 0 || plan.seeds > MAX_SEEDS {
        return Err(PlanError::Seeds);
    }
    Ok(())
}

/// Every simulation of `plan` under `profile`, as rows; `stop` is asked before each.
/// A stochastic workload (the server) runs over the plan's seeds as the reprints do:
/// each figure's median over seeds 1..=K, with its seed range. Every row carries what
/// a suite's cells carry: its sensitivity to each assumed term at ±50% and each fitted
/// term's slope; beside two policies or more, each policy's order against the first
/// judged as a suite's conclusions are (robust, or fragile with the terms that turn it
/// over), under [`JUDGEMENT`] and [`FRAGILE`].
pub fn rows(plan: &Plan, profile: &CostProfile, stop: impl Fn() -> bool) -> Vec<ResultRow> {
    let mut lab = Lab::new(profile.clone());
    let mut made: Vec<(Params, ResultRow)> = Vec::new();
    for p in plan.params() {
        if stop() {
            break;
        }
        let rows = if super::seeds::is_stochastic(p.workload) && plan.seeds > 1 {
            let spreads = super::seeds::over_seeds(&p, profile, plan.seeds, &stop);
            super::seeds::rows(&p, profile, &spreads)
        } else {
            super::run::simulate_rows(&p, profile)
        };
        for mut row in rows {
            if plan.sensitivity {
                let s = lab.sensitivity(&p, &figure_of(&row));
                row.params.set(SENSITIVITY, serde_json::to_value(s).expect("plain data"));
            }
            made.push((p.clone(), row));
        }
    }
    if let Some(first) = plan.policies.first().filter(|_| plan.sensitivity) {
        judge_orders(&mut made, *first, &mut lab, &stop);
    }
    made.into_iter().map(|(_, row)| row).collect()
}

/// A row's figure name.
fn figure_of(row: &ResultRow) -> String {
    row.params.get(super::run::FIGURE).unwrap_or_default().to_string()
}

/// Each row of a policy other than `first` judged as the claim its simulation makes:
/// its figure above or below `first`'s at the same size. A pair within 10% of each
/// other makes no claim (the judgement says so by its absence).
fn judge_orders(made: &mut [(Params, ResultRow)], first: PolicyKind, lab: &mut Lab, stop: &impl Fn() -> bool) {
    for i in 0..made.len() {
        let (p, row) = &made[i];
        if p.policy == first || stop() {
            continue;
        }
        let den = Params { policy: first, ..p.clone() };
        let figure = figure_of(row);
        let Some(base) = made.iter().find(|(q, r)| *q == den && figure_of(r) == figure) else { continue };
        let ratio = if base.1.median != 0.0 { row.median / base.1.median } else { f64::NAN };
        let Some(claim) = Claim::of_published(ratio, 1.0) else { continue };
        let Some(name) = lab.figure_name(p, &figure) else { continue };
        let c = Conclusion {
            label: format!("{} / {}", p.policy.name(), first.name()),
            num: p.clone(),
            den,
            figure: name,
            claim,
            published: ratio,
        };
        let j = lab.judge(&c);
        let row = &mut made[i].1;
        row.params.set(FRAGILE, j.fragile);
        row.params.set(JUDGEMENT, serde_json::to_value(&j).expect("plain data"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PolicyKind, WorkloadKind};

    fn plan() -> Plan {
        Plan {
            policies: vec![PolicyKind::O1],
            workload: WorkloadKind::LoopYield,
            cpus: vec![2],
            tasks: None,
            threads: false,
            nice: 0,
            messages: 10,
            seed: 1,
            seeds: 1,
            sensitivity: false,
        }
    }

    #[test]
    fn sizes_beyond_the_bounds_are_refused() {
        assert_eq!(check(&plan()), Ok(()));
        assert_eq!(check(&Plan { cpus: vec![2, MAX_CPUS + 1], ..plan() }), Err(PlanError::Cpus));
        assert_eq!(check(&Plan { cpus: vec![0], ..plan() }), Err(PlanError::Cpus));
        assert_eq!(check(&Plan { tasks: Some(vec![0]), ..plan() }), Err(PlanError::Tasks));
        assert_eq!(check(&Plan { tasks: Some(vec![MAX_TASKS + 1]), ..plan() }), Err(PlanError::Tasks));
        assert_eq!(check(&Plan { messages: 0, ..plan() }), Err(PlanError::Messages));
        assert_eq!(PlanError::Messages.to_string(), "--messages must be between 1 and 10000");
        assert_eq!(check(&Plan { seeds: 0, ..plan() }), Err(PlanError::Seeds));
        assert_eq!(seeds_of(Some(3), None), Ok((3, 1)), "--seed alone is obeyed");
        assert_eq!(seeds_of(Some(3), Some(1)), Ok((3, 1)));
        assert_eq!(seeds_of(None, Some(5)), Ok((1, 5)));
        assert_eq!(seeds_of(None, None), Ok((1, crate::seeds::DEFAULT_SEEDS)));
        assert_eq!(seeds_of(Some(3), Some(20)), Err(PlanError::SeedAndSeeds), "never one ignored");
        assert_eq!(check(&Plan { seeds: MAX_SEEDS + 1, ..plan() }), Err(PlanError::Seeds));
    }

    #[test]
    fn a_stop_asked_ends_the_simulations() {
        let profile = crate::cost::pentium200().unwrap();
        assert!(rows(&plan(), &profile, || true).is_empty());
        assert!(!rows(&plan(), &profile, || false).is_empty());
    }

    #[test]
    fn the_server_runs_over_seeds_and_stores_the_median_with_its_seed_range() {
        let profile = crate::cost::unit_profile();
        let server = Plan {
            workload: WorkloadKind::Server,
            policies: vec![PolicyKind::Linux20],
            tasks: Some(vec![20]),
            seeds: 3,
            ..plan()
        };
        let made = rows(&server, &profile, || false);
        assert!(!made.is_empty());
        for r in &made {
            assert_eq!(r.params.raw("seeds").and_then(|v| v.as_u64()), Some(3), "{:?}", r.params);
            let label = crate::seeds::label(r, |v| format!("{v}")).expect("a row over seeds is labelled");
            assert!(label.starts_with("median of 3 seeds, seed range "), "{label}");
        }
        // One seed: the row of that seed alone.
        let one = rows(&Plan { seeds: 1, seed: 7, ..server }, &profile, || false);
        assert!(one.iter().all(|r| r.params.raw("seed").and_then(|v| v.as_u64()) == Some(7)));
    }

    /// As a suite's cells: every row with its sensitivity, and beside two policies the
    /// second's order against the first judged under it. Travis on Travis's own
    /// profile: O(1)'s switch is cheaper than 2.0's goodness scan over 4 tasks,
    /// whatever any assumed term does within ±50%.
    #[test]
    fn every_row_carries_its_sensitivity_and_a_second_policy_its_order() {
        let profile = crate::cost::pentium200().unwrap();
        let plan = Plan {
            policies: vec![PolicyKind::Linux20, PolicyKind::O1],
            workload: WorkloadKind::Travis,
            tasks: Some(vec![4]),
            sensitivity: true,
            ..plan()
        };
        let made = rows(&plan, &profile, || false);
        assert!(!made.is_empty());
        for r in &made {
            assert!(r.params.contains(SENSITIVITY.name()), "{:?}", r.params);
        }
        let policy = |r: &ResultRow| r.params.get(crate::run::POLICY).unwrap_or_default().to_string();
        let o1_switch = made
            .iter()
            .find(|r| policy(r) == "o1" && r.params.get(crate::run::FIGURE) == Some("time per switch"))
            .expect("o1's switch");
        let j: crate::sensitivity::Judgement =
            serde_json::from_value(o1_switch.params.get(JUDGEMENT).expect("judged").clone()).unwrap();
        assert_eq!((j.label.as_str(), j.claim), ("o1 / linux-2.0", Claim::Below(1.0)));
        assert_eq!(j.mark(), "robust");
        assert!(made.iter().filter(|r| policy(r) == "linux-2.0").all(|r| !r.params.contains(JUDGEMENT.name())));
        // Without: neither.
        let bare = rows(&Plan { sensitivity: false, ..plan }, &profile, || false);
        assert!(bare.iter().all(|r| !r.params.contains(SENSITIVITY.name()) && !r.params.contains(JUDGEMENT.name())));
    }
}
