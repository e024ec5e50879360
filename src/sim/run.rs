//! A simulation as oscost stores it: one row per simulated figure, labelled
//! `simulated=profile NAME`, carrying the whole cost profile (`cost_profile`), so a
//! stored run says what every figure was charged and can be simulated again to the
//! nanosecond (`--profile live@RUN`). A simulated figure is deterministic: its row has
//! one sample and no interval (`n` = 1, `ci_low` = `ci_high` = the value).

use std::collections::BTreeMap;

use super::cost::CostProfile;
use super::workload::{Params, Report, simulate};
use super::{PolicyKind, WorkloadKind};
use crate::model::{Count, Method, ResultRow};

/// The parameter that holds a row's whole cost profile.
pub const PROFILE_PARAM: &str = "cost_profile";
/// The parameter that names the profile (`profile NAME`).
pub const SIMULATED_PARAM: &str = "simulated";

/// What to simulate: every policy × CPU count × size.
#[derive(Debug, Clone)]
pub struct Plan {
    pub policies: Vec<PolicyKind>,
    pub workload: WorkloadKind,
    pub cpus: Vec<usize>,
    /// None: the workload's own sizes.
    pub tasks: Option<Vec<usize>>,
    pub threads: bool,
    pub nice: i32,
    pub messages: u64,
    pub seed: u64,
    /// A stochastic workload runs over seeds 1..=`seeds` and stores each figure's
    /// median with its seed range ([`super::seeds`]); 1 runs `seed` alone.
    pub seeds: u64,
}

/// Each workload's sizes when none are given.
pub fn default_tasks(w: WorkloadKind, cpus: usize) -> Vec<usize> {
    match w {
        WorkloadKind::Travis => vec![2, 4, 8, 10, 20, 40],
        WorkloadKind::LoopYield => vec![2 * cpus],
        WorkloadKind::Chat => vec![2],
        WorkloadKind::Fork => vec![1000],
        WorkloadKind::Server => vec![super::workload::SERVER.httpd],
    }
}

impl Plan {
    /// Every simulation of the plan, in order.
    pub fn params(&self) -> Vec<Params> {
        let mut out = Vec::new();
        for &policy in &self.policies {
            for &cpus in &self.cpus {
                for tasks in self.tasks.clone().unwrap_or_else(|| default_tasks(self.workload, cpus)) {
                    out.push(Params {
                        policy,
                        workload: self.workload,
                        cpus,
                        tasks,
                        threads: self.threads,
                        nice: self.nice,
                        messages: self.messages,
                        seed: self.seed,
                    });
                }
            }
        }
        out
    }
}

/// Runs `params` and returns its rows.
pub fn simulate_rows(p: &Params, profile: &CostProfile) -> Vec<ResultRow> {
    rows_of(p, &simulate(p, profile), profile)
}

/// One row per figure of a simulation.
pub fn rows_of(p: &Params, report: &Report, profile: &CostProfile) -> Vec<ResultRow> {
    let profile_json = serde_json::to_value(profile).expect("a profile is plain data");
    report
        .figures
        .iter()
        .map(|f| {
            let mut params = crate::model::Params::new();
            params.insert(SIMULATED_PARAM.into(), format!("profile {}", profile.name).into());
            params.insert("policy".into(), p.policy.name().into());
            params.insert("cpus".into(), p.cpus.into());
            params.insert("tasks".into(), p.tasks.into());
            params.insert("figure".into(), f.name.into());
            params.insert("seed".into(), p.seed.into());
            if p.threads {
                params.insert("mode".into(), "thread".into());
            }
            if p.nice != 0 {
                params.insert("nice".into(), p.nice.into());
            }
            if p.workload == WorkloadKind::Chat {
                params.insert("messages".into(), p.messages.into());
            }
            params.insert(PROFILE_PARAM.into(), profile_json.clone());
            let mut row = value_row(&super::benchmark_id(p.workload), f.unit.clone(), f.value);
            row.params = params;
            row.counts.insert(Count::Switches, report.outcome.switches as f64);
            row.counts.insert(Count::Seconds, report.outcome.end_ns as f64 / 1e9);
            row
        })
        .collect()
}

/// A row holding one deterministic value: one sample, no interval, no parameters.
pub fn value_row(benchmark: &str, unit: crate::unit::Unit, value: f64) -> ResultRow {
    ResultRow {
        benchmark: benchmark.into(),
        params: crate::model::Params::new(),
        method: Method::Workload,
        unit,
        n: 1,
        iterations: 1,
        min: value,
        median: value,
        mean: value,
        stddev: 0.0,
        ci_low: value,
        ci_high: value,
        percentiles: None,
        counts: BTreeMap::new(),
        flags: Vec::new(),
        samples: Vec::new(),
        rounds: Vec::new(),
        trace: None,
    }
}

/// The cost profile a stored simulated row carries.
pub fn profile_of(row: &ResultRow) -> Option<CostProfile> {
    serde_json::from_value(row.params.raw(PROFILE_PARAM)?.clone()).ok()
}

/// Whether a row is simulated.
pub fn is_simulated(row: &ResultRow) -> bool {
    row.params.contains(SIMULATED_PARAM)
}
