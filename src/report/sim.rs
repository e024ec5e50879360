//! A simulated run as the founding texts lay out their tables: for each workload,
//! figure, CPU count, mode and nice level, one row per policy and one column per size.
//! A simulated figure is deterministic: no interval, no spread, no host fingerprint
//! (the machine it stands for is the profile's, printed with every term below).

use std::collections::BTreeMap;

use super::reprint::num;
use crate::key::ParamType;
use crate::model::{ResultRow, RunDocument};
use crate::sim::run::{CPUS, FIGURE, MODE, NICE, POLICY, SIMULATED, TASKS};

/// A simulated row's parameter as printed (empty when the row has none).
fn param<T: ParamType>(r: &ResultRow, p: crate::key::Param<T>) -> String
where
    for<'a> T::Read<'a>: ToString,
{
    r.params.get(p).map(|v| v.to_string()).unwrap_or_default()
}

/// The run as tables, then each profile it used, term by term.
pub fn render(doc: &RunDocument) -> String {
    let mut out = format!(
        "oscost sim #{} ({}) · {} · simulated, not measured\n",
        doc.run.id,
        doc.run.status,
        super::plain(&doc.run.started_at)
    );
    // Groups in first-seen order; sizes sorted numerically.
    let mut groups: Vec<(String, Vec<&ResultRow>)> = Vec::new();
    for r in &doc.results {
        let mode = param(r, MODE);
        let nice = param(r, NICE);
        let key = format!(
            "{} · {} ({}) · {} CPU{}{}{} · {}",
            r.benchmark,
            param(r, FIGURE),
            r.unit,
            param(r, CPUS),
            if r.params.get(CPUS) == Some(1) { "" } else { "s" },
            if mode.is_empty() { String::new() } else { format!(" · {mode}s") },
            if nice.is_empty() { String::new() } else { format!(" · nice {nice}") },
            param(r, SIMULATED),
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    for (key, rows) in &groups {
        let mut sizes: Vec<u64> = rows.iter().filter_map(|r| r.params.get(TASKS)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let mut table: BTreeMap<usize, (String, BTreeMap<u64, f64>)> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for r in rows {
            let policy = param(r, POLICY);
            if !order.contains(&policy) {
                order.push(policy.clone());
            }
            let i = order.iter().position(|p| *p == policy).unwrap_or(0);
            let n = r.params.get(TASKS).unwrap_or(0);
            table.entry(i).or_insert_with(|| (policy, BTreeMap::new())).1.insert(n, r.median);
        }
        out.push_str(&format!("\n{key}\n"));
        let w = order.iter().map(|p| p.len()).max().unwrap_or(6).max(6);
        out.push_str(&format!("{:<w$}", "tasks"));
        for n in &sizes {
            out.push_str(&format!(" {n:>10}"));
        }
        out.push('\n');
        for (policy, values) in table.values() {
            out.push_str(&format!("{policy:<w$}"));
            for n in &sizes {
                out.push_str(&format!(" {:>10}", values.get(n).map(|v| num(*v)).unwrap_or_else(|| "-".into())));
            }
            out.push('\n');
        }
    }
    out
}

/// Each distinct profile of the run's rows, described term by term.
pub fn profiles(doc: &RunDocument) -> Vec<String> {
    let mut seen: Vec<crate::sim::CostProfile> = Vec::new();
    for p in doc.results.iter().filter_map(crate::sim::run::profile_of) {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    seen.iter().flat_map(|p| p.describe()).collect()
}
