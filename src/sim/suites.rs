//! The simulations each reprint puts beside its published figures: the founding texts'
//! experiments, under the period profile of the text's machines and under `live`.

use super::cost::{self, CostProfile};
use super::workload::Params;
use super::{PolicyKind, WorkloadKind};
use crate::model::ResultRow;

/// Messages each chat user writes in a reprint's cell: chat_c's own count, 100 on the
/// 1-CPU box at nice 0 and 1000 everywhere else. The count matters: the run opens with
/// every user runnable, which weighs on a short run (under smp2002, linux-2.4 on 1
/// CPU: 74 k messages/s at 20 a user, 112 k at 100, 129 k at 300).
pub fn chat_messages(cpus: usize, nice: i32) -> u64 {
    if cpus == 1 && nice == 0 { 100 } else { 1000 }
}
/// Forks of the lat_proc simulation.
pub const LAT_PROC_FORKS: usize = 300;
/// CPUs of the lat_proc box (the text does not say how many: an SMP box).
pub const LAT_PROC_CPUS: usize = 2;

/// The experiments of one reprint, or none for a suite with nothing to simulate.
pub fn experiments(suite: &str) -> Vec<Params> {
    let p = |policy, workload, cpus, tasks| Params::new(policy, workload, cpus, tasks);
    match suite {
        "travis98" => {
            let mut v = Vec::new();
            for policy in [PolicyKind::Linux20, PolicyKind::Linux20YieldFix] {
                for threads in [false, true] {
                    for n in [2, 4, 8, 10, 20, 40] {
                        v.push(Params { threads, ..p(policy, WorkloadKind::Travis, 1, n) });
                    }
                }
            }
            v.push(p(PolicyKind::Linux20, WorkloadKind::Server, 1, super::workload::SERVER.httpd));
            v
        }
        "molnar02" => {
            let mut v = Vec::new();
            for policy in [PolicyKind::Linux24, PolicyKind::O1] {
                for cpus in [1, 8] {
                    for nice in [0, 19] {
                        let messages = chat_messages(cpus, nice);
                        v.push(Params { nice, messages, ..p(policy, WorkloadKind::Chat, cpus, 10) });
                    }
                }
                v.push(p(policy, WorkloadKind::LoopYield, 2, 4));
                v.push(p(policy, WorkloadKind::LoopYield, 8, 16));
                v.push(p(policy, WorkloadKind::Fork, LAT_PROC_CPUS, LAT_PROC_FORKS));
            }
            v
        }
        "lmbench" => [PolicyKind::Linux24, PolicyKind::O1]
            .into_iter()
            .map(|policy| p(policy, WorkloadKind::Fork, LAT_PROC_CPUS, LAT_PROC_FORKS))
            .collect(),
        _ => Vec::new(),
    }
}

/// The period profile of a reprint's texts.
pub fn period_profile(suite: &str) -> Option<Result<CostProfile, cost::ProfileError>> {
    match suite {
        "travis98" => Some(cost::pentium200()),
        "molnar02" | "lmbench" => Some(super::fit::smp2002()),
        _ => None,
    }
}

/// Every experiment of `suite` under each of `profiles`, as rows; `stop` is asked
/// between simulations.
pub fn rows(suite: &str, profiles: &[CostProfile], stop: impl Fn() -> bool) -> Vec<ResultRow> {
    let mut out = Vec::new();
    for profile in profiles {
        for p in experiments(suite) {
            if stop() {
                return out;
            }
            out.extend(super::run::simulate_rows(&p, profile));
        }
    }
    out
}
