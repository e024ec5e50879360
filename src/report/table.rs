//! The terminal table: one line per benchmark variant, batch and per-call figures side
//! by side, the kernel counts that prove the figure, and flags as numbered notes.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

use super::{fmt_ns, fmt_value, plain};
use crate::model::Skipped;
use crate::model::{Count, Method, ResultRow, RunDocument};

/// A benchmark variant: its rows grouped (batch, per-call, or a workload figure).
struct Line<'a> {
    benchmark: std::borrow::Cow<'a, str>,
    variant: String,
    batch: Option<&'a ResultRow>,
    per_call: Option<&'a ResultRow>,
    other: Vec<&'a ResultRow>,
}

fn group(rows: &[ResultRow]) -> Vec<Line<'_>> {
    let mut lines: Vec<Line> = Vec::new();
    for r in rows {
        let variant = plain(&r.variant_label()).into_owned();
        let benchmark = plain(&r.benchmark);
        let idx = match lines.iter().position(|l| l.benchmark == benchmark && l.variant == variant) {
            Some(i) => i,
            None => {
                lines.push(Line { benchmark, variant, batch: None, per_call: None, other: Vec::new() });
                lines.len() - 1
            }
        };
        let l = &mut lines[idx];
        match r.method {
            Method::Batch => l.batch = Some(r),
            Method::PerCall => l.per_call = Some(r),
            _ => l.other.push(r),
        }
    }
    lines
}

/// The counts that prove a figure, in a few words.
pub fn proof(r: &ResultRow) -> String {
    let mut parts = Vec::new();
    if let Some(s) = r.counts.get(&Count::SwitchesPerOp) {
        parts.push(format!("{s:.2} sw/op"));
    }
    if let Some(m) = r.counts.get(&Count::Migrations).filter(|m| **m > 0.0) {
        parts.push(format!("{m:.0} migr"));
    }
    if let Some(i) = r.counts.get(&Count::InstructionsPerOp) {
        parts.push(format!("{i:.0} instr/op"));
    }
    if let Some(c) = r.counts.get(&Count::CyclesPerOp) {
        parts.push(format!("{c:.0} cyc/op"));
    }
    match (r.counts.get(&Count::ParentAnonKib), r.counts.get(&Count::ParentFileKib)) {
        (Some(anon), Some(file)) => {
            parts.push(format!("parent {:.1} MiB anon + {:.1} MiB file", anon / 1024.0, file / 1024.0))
        }
        _ => {
            if let Some(kib) = r.counts.get(&Count::ParentRssKib) {
                parts.push(format!("parent {:.1} MiB", kib / 1024.0));
            }
        }
    }
    if let Some(slack) = r.counts.get(&Count::TimerSlackNs) {
        parts.push(format!("timer slack {}", fmt_value(*slack, "ns")));
    }
    for key in [Count::Delivered] {
        if let Some(v) = r.counts.get(&key) {
            parts.push(format!("{key} {v:.0}"));
        }
    }
    parts.join(", ")
}

/// Renders the run as a table followed by numbered flag notes and skipped variants.
pub fn render_run(doc: &RunDocument, skipped: &[Skipped]) -> String {
    if doc.run.kind == crate::model::RunKind::Sim {
        let mut out = super::sim::render(doc);
        out.push('\n');
        for line in super::sim::profiles(doc) {
            out.push_str(&line);
            out.push('\n');
        }
        return out;
    }
    let m = &doc.machine;
    let mut out = format!(
        "oscost run #{} ({}) · {} · {} · {} · kernel {} · {}\n",
        doc.run.id,
        plain(&doc.run.status),
        plain(&doc.run.started_at),
        plain(&m.hostname),
        plain(&m.cpu_model),
        plain(&m.kernel_release),
        plain(&m.virtualization)
    );
    if let Some(c) = &m.calibration {
        out.push_str(&format!(
            "per-call bracket: {} ({:.3} ticks/ns, empty bracket {} subtracted); batch clock: CLOCK_MONOTONIC_RAW ({} per read)\n",
            c.counter,
            c.ticks_per_ns,
            fmt_ns(c.bracket_ns),
            fmt_ns(c.clock_read_ns)
        ));
    }
    if let Some(line) = rounds_line(&doc.results) {
        out.push_str(&line);
    }
    out.push_str(&render_results(&doc.results, skipped));
    out
}

/// What the intervals stand on: how many rounds the rows were measured in (nothing
/// for runs stored before rounds existed).
fn rounds_line(rows: &[ResultRow]) -> Option<String> {
    let most = rows.iter().map(|r| r.rounds.len()).max().filter(|m| *m > 0)?;
    let once = rows.iter().filter(|r| r.rounds.len() == 1).count();
    let mut line = format!(
        "intervals: 95%, from {most} round{} in fresh worker processes (rounds resampled, then samples)",
        if most == 1 { "" } else { "s" }
    );
    if once > 0 && most > 1 {
        line.push_str(&format!(
            "; {once} row{} measured in one round cover that window only",
            if once == 1 { "" } else { "s" }
        ));
    }
    line.push('\n');
    Some(line)
}

/// The fewest samples behind a printed p99 and p99.9: a tail percentile from fewer is
/// one or two samples, not a percentile.
pub const P99_MIN_SAMPLES: usize = 100;
pub const P999_MIN_SAMPLES: usize = 1000;

/// A percentile printed only from enough samples (`-` otherwise; `thin` is set so the
/// table says why).
pub(super) fn percentile(value: f64, unit: &str, n: usize, min: usize, thin: &mut bool) -> String {
    if n < min {
        *thin = true;
        return "-".into();
    }
    fmt_value(value, unit)
}

/// Renders result rows (any run, any families) as the table and its notes.
pub fn render_results(rows: &[ResultRow], skipped: &[Skipped]) -> String {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(vec![
        "benchmark",
        "variant",
        "median [95% CI]",
        "per-call p50",
        "p99",
        "p99.9",
        "max",
        "kernel counts",
        "flags",
    ]);
    let mut notes: Vec<String> = Vec::new();
    let mut thin = false;
    for line in group(rows) {
        let all: Vec<&ResultRow> =
            line.batch.iter().chain(line.per_call.iter()).chain(line.other.iter()).copied().collect();
        let flags = flag_tags(&line, &all, &mut notes);
        let headline = line.batch.or(line.other.first().copied()).or(line.per_call);
        let pc = line.per_call.and_then(|p| p.percentiles.as_ref().map(|q| (p, q)));
        let mut pct = |f: fn(&crate::stats::Percentiles) -> f64, min: usize| {
            pc.map(|(p, q)| percentile(f(q), &p.unit, p.n, min, &mut thin)).unwrap_or_default()
        };
        let (p50, p99, p999, max) =
            (pct(|q| q.p50, 1), pct(|q| q.p99, P99_MIN_SAMPLES), pct(|q| q.p999, P999_MIN_SAMPLES), pct(|q| q.max, 1));
        let mut cells = vec![
            Cell::new(&line.benchmark),
            Cell::new(&line.variant),
            Cell::new(headline.map(super::figure_with_interval).unwrap_or_default())
                .set_alignment(CellAlignment::Right),
            Cell::new(p50).set_alignment(CellAlignment::Right),
            Cell::new(p99).set_alignment(CellAlignment::Right),
            Cell::new(p999).set_alignment(CellAlignment::Right),
            Cell::new(max).set_alignment(CellAlignment::Right),
        ];
        cells.push(Cell::new(all.iter().map(|r| proof(r)).find(|s| !s.is_empty()).unwrap_or_default()));
        cells.push(Cell::new(flags.join(" ")));
        table.add_row(cells);
        for extra in line.other.iter().skip(1) {
            table.add_row(vec![
                Cell::new(""),
                Cell::new(format!("  {}", extra.unit)),
                Cell::new(super::figure_with_interval(extra)).set_alignment(CellAlignment::Right),
            ]);
        }
    }
    let mut out = table.to_string();
    out.push('\n');
    if thin {
        out.push_str(&format!(
            "p99 is printed from {P99_MIN_SAMPLES} per-call samples and p99.9 from {P999_MIN_SAMPLES}; \"-\" where a row had fewer\n"
        ));
    }
    out.push_str(&trace_section(rows));
    out.push_str(&footer(&notes, rows, skipped));
    out
}

/// The trace passes, when the run had any: a second table, and who ran first after
/// the forks.
fn trace_section(rows: &[ResultRow]) -> String {
    let lines = super::trace::traced(rows);
    if lines.is_empty() {
        return String::new();
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(super::trace::HEADER.to_vec());
    for l in lines {
        t.add_row(l);
    }
    let mut out = String::from("trace pass (sched_switch/sched_waking events, recorded after the timed pass):\n");
    out.push_str(&t.to_string());
    out.push('\n');
    for l in super::trace::spawn_lines(rows) {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// The numbered tags of a line's flags (`[2] vdso`), adding each new reason to `notes`
/// so a reason shared by several lines is printed once.
fn flag_tags(line: &Line<'_>, all: &[&ResultRow], notes: &mut Vec<String>) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for r in all {
        for f in &r.flags {
            let who = if line.variant.is_empty() {
                line.benchmark.to_string()
            } else {
                format!("{} {}", line.benchmark, line.variant)
            };
            let note = format!("{who}: {}: {}", f.flag, plain(&f.reason));
            let n = match notes.iter().position(|x| *x == note) {
                Some(i) => i + 1,
                None => {
                    notes.push(note);
                    notes.len()
                }
            };
            let tag = format!("[{n}] {}", f.flag);
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
    }
    tags
}

/// Below the table: the numbered flag reasons, the fits' statements, the skipped.
fn footer(notes: &[String], rows: &[ResultRow], skipped: &[Skipped]) -> String {
    let mut out = String::new();
    for (i, n) in notes.iter().enumerate() {
        out.push_str(&format!("[{}] {n}\n", i + 1));
    }
    for r in rows {
        if let Some(serde_json::Value::String(st)) = r.params.get("statement") {
            out.push_str(&format!("{} {}: {}\n", plain(&r.benchmark), plain(&r.variant_label()), plain(st)));
        }
    }
    for s in skipped {
        out.push_str(&format!("skipped {} {}: {}\n", plain(&s.benchmark), plain(&s.params), plain(&s.reason)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flag, FlagCode};

    #[test]
    fn table_pairs_methods_and_numbers_flags() {
        let mut b = ResultRow::from_samples("syscall.getpid", Method::Batch, "ns/call", vec![2.0, 3.0], 2)
            .unwrap()
            .with_param("via", "libc");
        b.flag(Flag::new(FlagCode::NoKernelEntry, "did not enter the kernel (cached by the C library)"));
        b.counts.insert(Count::SwitchesPerOp, 0.0);
        let p = ResultRow::from_samples("syscall.getpid", Method::PerCall, "ns/call", vec![2.0, 3.0, 4.0], 3)
            .unwrap()
            .with_param("via", "libc");
        let skipped = [Skipped {
            benchmark: "ctx.pipe".into(),
            params: "placement=cross_cpu".into(),
            reason: "needs 2 CPUs".into(),
        }];
        let t = render_results(&[b, p], &skipped);
        assert_eq!(t.matches("syscall.getpid").count(), 2, "one line plus one note:\n{t}");
        assert!(t.contains("[1] no_kernel_entry"));
        assert!(t.contains("[1] syscall.getpid via=libc: no_kernel_entry: did not enter the kernel"));
        assert!(t.contains("0.00 sw/op"));
        assert!(t.contains("skipped ctx.pipe placement=cross_cpu: needs 2 CPUs"));
    }

    /// p99.9 from 75 samples was printed: a tail percentile needs the samples behind it.
    #[test]
    fn tail_percentiles_need_their_samples() {
        let per_call = |n: usize| {
            let samples: Vec<f64> = (0..n).map(|i| 100.0 + i as f64).collect();
            ResultRow::from_samples("load.wakeup", Method::PerCall, "ns", samples, n as u64).unwrap()
        };
        let thin = render_results(&[per_call(75)], &[]);
        let cells: Vec<&str> = thin.lines().find(|l| l.contains("load.wakeup")).unwrap().split('┆').collect();
        assert_eq!((cells[4].trim(), cells[5].trim()), ("-", "-"), "{thin}");
        assert!(thin.contains("p99.9 from 1000"), "{thin}");
        let mid = render_results(&[per_call(500)], &[]);
        let cells: Vec<&str> = mid.lines().find(|l| l.contains("load.wakeup")).unwrap().split('┆').collect();
        assert!(cells[4].trim() != "-" && cells[5].trim() == "-", "{mid}");
        let full = render_results(&[per_call(2000)], &[]);
        assert!(!full.contains("p99.9 from 1000"), "{full}");
    }
}
