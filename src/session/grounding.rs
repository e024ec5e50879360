//! `oscost sim --ground`: the newest stored `load.chat` rows of each CPU count and
//! nice level, each simulated under the asked policies at its own rooms, messages,
//! nice level and CPU count, and the two set side by side (`views::grounding`).

use std::path::Path;

use anyhow::Result;

use crate::bench::load::chat;
use crate::model::{Count, ResultRow};
use crate::sim::{CostProfile, PolicyKind, WorkloadKind};
use crate::store::{RunFilter, Store};
use crate::views::grounding::{Line, Measured, lines};

/// The newest stored runs read for measured chat rows.
const RUNS_READ: usize = 50;

/// The newest measured chat row of each (CPUs, nice, rooms, messages) that carries
/// its regime, by CPUs and nice level; none when no such row is stored.
pub fn measured_chat(db: &Path) -> Result<Vec<Measured>> {
    let store = Store::open_existing(db)?;
    let filter = RunFilter { benchmark: Some(chat::ID), ..Default::default() };
    let mut listed = store.list_runs(&filter)?;
    listed.sort_by_key(|l| std::cmp::Reverse(l.id));
    let mut out: Vec<Measured> = Vec::new();
    for listing in listed.iter().take(RUNS_READ) {
        let (doc, _) = store.load_run(listing.id)?;
        for row in doc.results.into_iter().filter(|r| r.benchmark == chat::ID) {
            let cpus =
                row.counts.get(&Count::AllowedCpus).map(|&c| c as usize).unwrap_or(doc.machine.allowed_cpus.len());
            let busy = doc.machine.preflight.iter().any(|t| t.code.is_busy());
            let m = Measured { run: listing.id, cpus, row, busy };
            let same = |o: &Measured| {
                (o.cpus, o.nice(), o.rooms(), o.messages()) == (m.cpus, m.nice(), m.rooms(), m.messages())
            };
            // Rows stored before the regime was counted have nothing to ground.
            if m.row.counts.contains_key(&Count::SwitchesPerMessage) && !out.iter().any(same) {
                out.push(m);
            }
        }
    }
    out.sort_by_key(|m| (m.cpus, m.nice()));
    Ok(out)
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
