//! `oscost sim --ground`: the stored `load.chat` rows of each size, pooled over runs,
//! each size simulated under the asked policies at its own rooms, messages, nice level
//! and CPU count, and the two set side by side (`views::grounding`).

use std::path::Path;

use anyhow::Result;

use crate::bench::load::chat;
use crate::model::{Count, ResultRow};
use crate::sim::{CostProfile, PolicyKind, WorkloadKind};
use crate::store::{RunFilter, Store};
use crate::views::grounding::{Line, Measured, lines};

/// The newest stored runs read for measured chat rows.
const RUNS_READ: usize = 50;

/// The stored chat rows that carry their regime, among the newest 50 runs,
/// grouped by size (CPUs, nice, rooms, messages) and ordered by CPUs and nice level:
/// each group's runs are the units its interval is drawn over. Rows measured on a
/// quiet machine are kept over busy ones; a size measured only busy keeps its busy
/// rows and gets no verdict.
pub fn measured_chat(db: &Path) -> Result<Vec<Measured>> {
    let store = Store::open_existing(db)?;
    let filter = RunFilter { benchmark: Some(chat::ID), ..Default::default() };
    let mut listed = store.list_runs(&filter)?;
    listed.sort_by_key(|l| std::cmp::Reverse(l.id));
    let mut groups: Vec<Measured> = Vec::new();
    for listing in listed.iter().take(RUNS_READ) {
        let (doc, _) = store.load_run(listing.id)?;
        let busy = doc.machine.preflight.iter().any(|t| t.code.is_busy());
        // Rows stored before the regime was counted have nothing to ground.
        let rows = doc
            .results
            .into_iter()
            .filter(|r| r.benchmark == chat::ID && r.counts.contains_key(&Count::SwitchesPerMessage));
        for row in rows {
            let cpus =
                row.counts.get(&Count::AllowedCpus).map(|&c| c as usize).unwrap_or(doc.machine.allowed_cpus.len());
            let one = Measured { runs: vec![listing.id], cpus, rows: vec![row], busy };
            let size = |m: &Measured| (m.cpus, m.nice(), m.rooms(), m.messages());
            match groups.iter_mut().find(|g| size(g) == size(&one)) {
                None => groups.push(one),
                Some(g) if g.busy && !busy => *g = one,
                Some(g) if g.busy == busy => {
                    g.runs.extend(one.runs);
                    g.rows.extend(one.rows);
                }
                Some(_) => {}
            }
        }
    }
    groups.sort_by_key(|m| (m.cpus, m.nice()));
    Ok(groups)
}

/// Each measured row simulated under each policy (asked `stop` before each), as the
/// simulated rows and the grounding's lines.
pub fn simulate(
    measured: &[Measured],
    policies: &[PolicyKind],
    profile: &CostProfile,
    stop: impl Fn() -> bool,
) -> (Vec<ResultRow>, Vec<Line>) {
    let mut rows = Vec::new();
    let mut out = Vec::new();
    for &policy in policies {
        for m in measured {
            if stop() {
                return (rows, out);
            }
            let mut p = crate::sim::workload::Params::new(policy, WorkloadKind::LoadChat, m.cpus, m.rooms());
            p.nice = m.nice();
            p.messages = m.messages();
            let simulated = crate::sim::run::simulate_rows(&p, profile);
            out.extend(lines(m, policy, &simulated));
            rows.extend(simulated);
        }
    }
    (rows, out)
}
