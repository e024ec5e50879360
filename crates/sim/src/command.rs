//! `oscost sim`'s plan checked against the sizes a simulation may take, and simulated:
//! every combination the plan names, under one profile, until a stop is asked.

use super::CostProfile;
use super::run::Plan;
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
/// each figure's median over seeds 1..=K, with its seed range.
pub fn rows(plan: &Plan, profile: &CostProfile, stop: impl Fn() -> bool) -> Vec<ResultRow> {
    let mut rows = Vec::new();
    for p in plan.params() {
        if stop() {
            break;
        }
        if super::seeds::is_stochastic(p.workload) && plan.seeds > 1 {
            let spreads = super::seeds::over_seeds(&p, profile, plan.seeds, &stop);
            rows.extend(super::seeds::rows(&p, profile, &spreads));
        } else {
            rows.extend(super::run::simulate_rows(&p, profile));
        }
    }
    rows
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
}
