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

/// The run as tables, each with its rows' robustness fitted to `width`, then each
/// profile it used, term by term.
pub fn render(doc: &RunDocument, width: super::table::Width) -> String {
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
        let multi = sizes.len() > 1;
        // A figure over seeds is a median, not a value: its seed range beside it.
        for r in rows {
            if let Some(seeds) = crate::sim::seeds::label(r, num) {
                let at = if multi { format!(" at {}", param(r, TASKS)) } else { String::new() };
                out.push_str(&super::fit::hanging(&format!("    {}{at}: {seeds}", param(r, POLICY)), width, 6));
                out.push('\n');
            }
        }
        let lines: Vec<String> = rows.iter().filter_map(|r| robustness(r, multi)).collect();
        if !lines.is_empty() {
            out.push_str(&format!(
                "  under ±{:.0}% of each assumed term (the term that moves it most; the order against {}):\n",
                crate::sim::sensitivity::SWING * 100.0,
                order.first().map_or("", String::as_str)
            ));
        }
        for line in lines {
            out.push_str(&super::fit::hanging(&line, width, 6));
            out.push('\n');
        }
    }
    out
}

/// A row's robustness in one line: the range ±50% of each assumed term moves its
/// figure over (the widest term named), and beside another policy whether its order
/// against the first holds under every such variant (`robust`) or which terms turn it
/// over (`fragile`). None for a row without a sensitivity.
fn robustness(r: &ResultRow, with_size: bool) -> Option<String> {
    use crate::sim::sensitivity::{Judgement, Sensitivity};
    let s: Sensitivity = serde_json::from_value(r.params.get(crate::key::SENSITIVITY)?.clone()).ok()?;
    let mut line = format!("    {}", param(r, POLICY));
    if with_size {
        line.push_str(&format!(" at {}", param(r, TASKS)));
    }
    let (lo, hi) = s.range(r.median);
    match s.widest() {
        Some(w) if num(lo) != num(hi) => line.push_str(&format!(": {}–{} ({})", num(lo), num(hi), w.term)),
        _ => line.push_str(": unmoved"),
    }
    let judged = r.params.get(crate::key::JUDGEMENT).and_then(|v| serde_json::from_value::<Judgement>(v.clone()).ok());
    if let Some(j) = judged {
        line.push_str(&format!("; {} {}", j.claim.text(), j.mark()));
    }
    Some(line)
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
