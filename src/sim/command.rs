//! `oscost sim`'s plan checked against the sizes a simulation may take, and simulated:
//! every combination the plan names, under one profile, until a stop is asked.

use super::CostProfile;
use super::run::Plan;
use crate::model::ResultRow;

/// The most tasks one simulation takes (virtual work grows with them).
pub const MAX_TASKS: usize = 4096;
/// The most CPUs one simulation takes.
pub const MAX_CPUS: usize = 64;
/// The most messages each chat user sends.
pub const MAX_MESSAGES: u64 = 10_000;

/// A size out of the simulator's bounds.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("--cpus must be between 1 and {MAX_CPUS}")]
    Cpus,
    #[error("--tasks must be between 1 and {MAX_TASKS}")]
    Tasks,
    #[error("--messages must be between 1 and {MAX_MESSAGES}")]
    Messages,
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
    Ok(())
}

/// Every simulation of `plan` under `profile`, as rows; `stop` is asked before each.
pub fn rows(plan: &Plan, profile: &CostProfile, stop: impl Fn() -> bool) -> Vec<ResultRow> {
    let mut rows = Vec::new();
    for p in plan.params() {
        if stop() {
            break;
        }
        rows.extend(super::run::simulate_rows(&p, profile));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{PolicyKind, WorkloadKind};

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
    }

    #[test]
    fn a_stop_asked_ends_the_simulations() {
        let profile = crate::sim::cost::pentium200().unwrap();
        assert!(rows(&plan(), &profile, || true).is_empty());
        assert!(!rows(&plan(), &profile, || false).is_empty());
    }
}
