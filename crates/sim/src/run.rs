//! A simulation as oscost stores it: one row per simulated figure, labelled
//! `simulated=profile NAME`, carrying the whole cost profile (`cost_profile`), so a
//! stored run says what every figure was charged and can be simulated again to the
//! nanosecond (`--profile live@RUN`). A simulated figure is deterministic: its row has
//! one sample and no interval (`n` = 1, `ci_low` = `ci_high` = the value).

use std::collections::BTreeMap;

use super::cost::CostProfile;
use super::workload::{Params, Report, simulate};
use super::{PolicyKind, WorkloadKind};
use oscost_figure::key::{Param, Text};
use oscost_figure::model::{Count, Method, ResultRow};

/// The parameter that holds a row's whole cost profile.
pub use oscost_figure::key::COST_PROFILE as PROFILE;
/// The parameter that names the profile (`profile NAME`).
pub const SIMULATED: Param<Text> = Param::new("simulated");
/// [`SIMULATED`]'s stored name.
pub const SIMULATED_PARAM: &str = SIMULATED.name();
/// The simulated policy's name (`linux-2.0`).
pub const POLICY: Param<Text> = Param::new("policy");
/// The simulated machine's CPUs.
pub const CPUS: Param<u64> = Param::new("cpus");
/// The workload's size: its tasks.
pub const TASKS: Param<u64> = Param::new("tasks");
/// Which of the simulation's figures the row holds (`time per switch`).
pub const FIGURE: Param<Text> = Param::new("figure");
/// The seed the simulation ran with.
pub const SEED: Param<u64> = Param::new("seed");
/// The tasks' nice level, written only when not 0.
pub const NICE: Param<i64> = Param::new("nice");
/// The chat workload's messages per sender.
pub const MESSAGES: Param<u64> = Param::new("messages");
/// Threads or processes (`mode=thread`, written only for threads; processes are the
/// default), as the measuring families write it.
pub const MODE: Param<Text> = oscost_figure::key::Mode::PARAM;

/// The parameters [`rows_of`] leaves unwritten while they hold their default:
/// processes (not threads) and nice 0. A reader selecting simulated rows by their
/// variant takes a missing one as this value
/// ([`oscost_figure::key::Params::matches_with_defaults`]).
pub fn unwritten_defaults() -> oscost_figure::model::Params {
    oscost_figure::model::Params::new().with(MODE, oscost_figure::key::Mode::Process.as_str()).with(NICE, 0i64)
}

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
    /// Each figure's sensitivity and the policies' order judged under it
    /// ([`super::command::rows`]).
    pub sensitivity: bool,
}

/// Each workload's sizes when none are given.
pub fn default_tasks(w: WorkloadKind, cpus: usize) -> Vec<usize> {
    match w {
        WorkloadKind::Travis => vec![2, 4, 8, 10, 20, 40],
        WorkloadKind::LoopYield => vec![2 * cpus],
        WorkloadKind::Chat | WorkloadKind::LoadChat => vec![2],
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
            let mut params = oscost_figure::model::Params::new();
            params.set(SIMULATED, format!("profile {}", profile.name));
            params.set(POLICY, p.policy.name());
            params.set(CPUS, p.cpus as u64);
            params.set(TASKS, p.tasks as u64);
            params.set(FIGURE, f.name);
            params.set(SEED, p.seed);
            if p.threads {
                params.set(MODE, "thread");
            }
            if p.nice != 0 {
                params.set(NICE, i64::from(p.nice));
            }
            if matches!(p.workload, WorkloadKind::Chat | WorkloadKind::LoadChat) {
                params.set(MESSAGES, p.messages);
            }
            params.set(PROFILE, profile_json.clone());
            let mut row = value_row(&p.workload.id(), f.unit.clone(), f.value);
            row.params = params;
            row.counts.insert(Count::Switches, report.outcome.switches as f64);
            row.counts.insert(Count::Seconds, report.outcome.end_ns as f64 / 1e9);
            row
        })
        .collect()
}

/// A row holding one deterministic value: one sample, no interval, no parameters.
pub fn value_row(benchmark: &str, unit: oscost_figure::unit::Unit, value: f64) -> ResultRow {
    ResultRow {
        benchmark: benchmark.into(),
        params: oscost_figure::model::Params::new(),
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
    serde_json::from_value(row.params.get(PROFILE)?.clone()).ok()
}

/// Whether a row is simulated.
pub fn is_simulated(row: &ResultRow) -> bool {
    row.params.contains(SIMULATED_PARAM)
}
