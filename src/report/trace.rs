//! The trace pass of each row, as cells: shared by the terminal table and the HTML
//! report so both say the same thing.

use super::{fmt_ns, plain};
use crate::model::{ResultRow, TraceSummary};

/// Column headings of `cells`.
pub const HEADER: [&str; 9] = [
    "benchmark",
    "variant",
    "hand-offs",
    "direct",
    "idle / intruded",
    "wake→run p50 / p99 / max",
    "left runnable",
    "traced (observer effect)",
    "events vs /proc",
];

fn pct(k: u64, n: u64) -> String {
    if n == 0 { "-".into() } else { format!("{:.1}%", 100.0 * k as f64 / n as f64) }
}

/// One line of cells for a row with a trace pass.
pub fn cells(r: &ResultRow, t: &TraceSummary) -> Vec<String> {
    let mut intruded = format!("{} / {}", pct(t.idle_passes, t.handoffs), pct(t.intrusions, t.handoffs));
    if let Some(top) = t.intruders.first() {
        intruded.push_str(&format!(" ({} {})", plain(&top.comm), top.count));
    }
    let latency = match &t.wake_to_run {
        Some(l) => format!("{} / {} / {}", fmt_ns(l.p50), fmt_ns(l.p99), fmt_ns(l.max)),
        None => "-".into(),
    };
    // Only a time per operation compares with the traced pass's own; a row whose
    // figure is a difference (the footprint) compares its plain hand-off.
    let untraced = r.counts.get(&crate::model::Count::HandoffNsMedian).copied().unwrap_or(r.median);
    let effect = if !r.unit.is_time_per_op() {
        "-".to_string()
    } else if untraced > 0.0 && t.traced_ns_per_op > 0.0 {
        let change = (100.0 * (t.traced_ns_per_op / untraced - 1.0)).round() + 0.0;
        format!("{} ({}{change:.0}%)", fmt_ns(t.traced_ns_per_op), if change > 0.0 { "+" } else { "" })
    } else {
        fmt_ns(t.traced_ns_per_op)
    };
    let mut handoffs = t.handoffs.to_string();
    if t.untraced_switch_ins > 0 {
        handoffs.push_str(&format!(" ({} inferred)", t.untraced_switch_ins));
    }
    let mut agree = match (t.proc_switches, t.switches_agree()) {
        (Some(p), Some(true)) => format!("{} = {p}", t.switch_outs),
        (Some(p), _) => format!("{} ≠ {p}", t.switch_outs),
        (None, _) => format!("{} / -", t.switch_outs),
    };
    if t.lost > 0 {
        agree.push_str(&format!(", {} lost", t.lost));
    }
    vec![
        plain(&r.benchmark).into_owned(),
        plain(&r.variant_label()).into_owned(),
        handoffs,
        pct(t.direct, t.handoffs),
        intruded,
        latency,
        pct(t.preempted, t.switch_outs),
        effect,
        agree,
    ]
}

/// Lines saying who ran first after each fork, for rows that forked.
pub fn spawn_lines(rows: &[ResultRow]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| Some((r, r.trace.as_ref()?.spawn?)))
        .map(|(r, s)| {
            format!(
                "{} {}: of {}, {} ran first on the parent's CPU (parent preempted), {} started on another CPU, {} ran after the parent blocked; {}",
                plain(&r.benchmark),
                plain(&r.variant_label()),
                super::counted(s.children, "child", "children"),
                s.child_first,
                s.child_elsewhere,
                s.parent_first,
                super::counted(s.child_migrations, "child migration", "child migrations")
            )
        })
        .collect()
}

/// The rows that carry a trace pass, with their cells.
pub fn traced(rows: &[ResultRow]) -> Vec<Vec<String>> {
    rows.iter().filter_map(|r| r.trace.as_ref().map(|t| cells(r, t))).collect()
}
