//! The terminal table: one line per benchmark variant, batch and per-call figures side
//! by side, the kernel counts that prove the figure, and flags as numbered notes.

use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

use super::{fmt_ns, fmt_value, plain};
use crate::model::Skipped;
use crate::model::{BenchId, Count, Method, Params, ResultRow, RunDocument};

/// A benchmark variant: its rows grouped (batch, per-call, or a workload figure).
pub(super) struct Line<'a> {
    /// The first row's benchmark and parameters: what the line's rows share.
    pub(super) bench: &'a BenchId,
    pub(super) params: &'a Params,
    pub(super) batch: Option<&'a ResultRow>,
    pub(super) per_call: Option<&'a ResultRow>,
    pub(super) other: Vec<&'a ResultRow>,
}

impl<'a> Line<'a> {
    /// The benchmark as printed.
    pub(super) fn benchmark(&self) -> std::borrow::Cow<'a, str> {
        plain(self.bench)
    }

    /// The variant's label as printed.
    pub(super) fn variant(&self) -> String {
        plain(&self.params.label()).into_owned()
    }

    /// Every row of the line: batch, per-call, then the others.
    pub(super) fn rows(&self) -> Vec<&'a ResultRow> {
        self.batch.iter().chain(self.per_call.iter()).chain(self.other.iter()).copied().collect()
    }

    /// The row whose figure the line shows: the batch figure, else a workload or fit
    /// figure, else the per-call one.
    pub(super) fn headline(&self) -> Option<&'a ResultRow> {
        self.batch.or(self.other.first().copied()).or(self.per_call)
    }
}

pub(super) fn group(rows: &[ResultRow]) -> Vec<Line<'_>> {
    let mut lines: Vec<Line> = Vec::new();
    for r in rows {
        let idx = match lines.iter().position(|l| *l.bench == r.benchmark && l.params.same_variant(&r.params)) {
            Some(i) => i,
            None => {
                let (bench, params) = (&r.benchmark, &r.params);
                lines.push(Line { bench, params, batch: None, per_call: None, other: Vec::new() });
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
        parts.push(format!("timer slack {}", fmt_value(*slack, &crate::unit::Unit::Ns)));
    }
    for key in [Count::Delivered] {
        if let Some(v) = r.counts.get(&key) {
            parts.push(format!("{key} {v:.0}"));
        }
    }
    parts.join(", ")
}

pub use super::fit::{DEFAULT_WIDTH, Width};

impl Width {
    /// The columns text is fitted to (none for `--wide`).
    pub fn columns(self) -> Option<u16> {
        match self {
            Width::Fit(w) | Width::Full(w) => Some(w),
            Width::Wide => None,
        }
    }
}

/// A run's first line: its number and status, when, and the machine (without the
/// virtualization, which the one-screen table adds only where it fits).
pub(super) fn run_headline(doc: &RunDocument) -> String {
    let m = &doc.machine;
    format!(
        "oscost run #{} ({}) · {} · {} · {} · kernel {}",
        doc.run.id,
        doc.run.status,
        plain(&doc.run.started_at),
        plain(&m.hostname),
        plain(&m.cpu_model),
        plain(&m.kernel_release),
    )
}

/// A measured run's whole table (`-v` and `--wide`): its header, every row and the
/// notes. [`super::text`] picks this layout or another.
pub fn render_run_full(doc: &RunDocument, skipped: &[Skipped], width: Width) -> String {
    let m = &doc.machine;
    let mut out = format!("{} · {}\n", run_headline(doc), plain(&m.virtualization));
    if let Some(c) = &m.calibration {
        let step = c.quantum_ns.map_or_else(String::new, |q| format!(", in steps of {}", fmt_ns(q)));
        out.push_str(&format!(
            "per-call bracket: {} ({:.3} ticks/ns, empty bracket {} subtracted{step}); batch clock: CLOCK_MONOTONIC_RAW ({} per read)\n",
            c.counter,
            c.ticks_per_ns,
            fmt_ns(c.bracket_ns),
            fmt_ns(c.clock_read_ns)
        ));
    }
    for t in &m.preflight {
        out.push_str(&format!("preflight: {}\n", plain(&t.reason)));
    }
    if let Some(line) = rounds_line(&doc.results) {
        out.push_str(&line);
    }
    let mut out = super::fit::prose(&out, width);
    out.push_str(&render_results_full(&doc.results, skipped, width));
    out
}

/// What the intervals stand on: how many rounds the rows were measured in (nothing
/// for runs stored before rounds existed).
pub(super) fn rounds_line(rows: &[ResultRow]) -> Option<String> {
    let most = rows.iter().map(|r| r.rounds.len()).max().filter(|m| *m > 0)?;
    // A figure's shared-core twin holds the rounds left out of it, one or a few by
    // chance, not a design: said in its own line.
    let once = rows.iter().filter(|r| r.rounds.len() == 1 && !r.params.is_shared_core_twin()).count();
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
pub(super) fn percentile(value: f64, unit: &crate::unit::Unit, n: usize, min: usize, thin: &mut bool) -> String {
    if n < min {
        *thin = true;
        return "-".into();
    }
    fmt_value(value, unit)
}

/// A number without its unit, to three or four significant digits and never in
/// exponent notation: "104", "13.37", "0.417", "341300".
pub fn bare(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// One line's numbers in one unit: the unit its headline figure reads best in.
pub(super) struct RowUnit<'a> {
    unit: &'a crate::unit::Unit,
    div: f64,
    pub(super) shown: String,
}

impl<'a> RowUnit<'a> {
    pub(super) fn of(r: &'a ResultRow) -> Self {
        let (div, shown) = r.unit.scaled(r.median);
        RowUnit { unit: &r.unit, div, shown }
    }

    /// A value of `r` in this unit (with its own unit, should `r`'s differ).
    pub(super) fn num(&self, v: f64, r: &ResultRow) -> String {
        if r.unit == *self.unit { bare(v / self.div) } else { fmt_value(v, &r.unit) }
    }

    /// A row's figure over its interval over the unit, for the narrow table.
    fn stacked(&self, r: &ResultRow) -> String {
        format!("{}\n{}", self.figure_sep(r, "\n"), self.shown)
    }

    /// A row's figure with its interval, in this unit: `104 [101, 121]`.
    fn figure(&self, r: &ResultRow) -> String {
        self.figure_sep(r, " ")
    }

    /// The figure, `sep`, then its interval (when it has one).
    fn figure_sep(&self, r: &ResultRow, sep: &str) -> String {
        match r.interval() {
            Some((lo, hi)) => format!("{}{sep}[{}, {}]", self.num(r.median, r), self.num(lo, r), self.num(hi, r)),
            None => self.num(r.median, r),
        }
    }
}

/// Renders result rows (any run, any families) as the full table and its notes.
pub fn render_results_full(rows: &[ResultRow], skipped: &[Skipped], width: Width) -> String {
    let mut notes: Vec<String> = Vec::new();
    let mut thin = false;
    let mut out = results_table_of(rows, true, &mut notes, &mut thin).to_string();
    if let Width::Full(w) = width
        && out.lines().any(|l| l.chars().count() > usize::from(w))
    {
        (notes, thin) = (Vec::new(), false);
        let mut narrow = results_table_of(rows, false, &mut notes, &mut thin);
        narrow.set_content_arrangement(ContentArrangement::Dynamic).set_width(w);
        out = narrow.to_string();
    }
    out.push('\n');
    if thin {
        let said = format!(
            "p99 is printed from {P99_MIN_SAMPLES} per-call samples and p99.9 from {P999_MIN_SAMPLES}; \"-\" where a row had fewer\n"
        );
        out.push_str(&super::fit::prose(&said, width));
    }
    out.push_str(&trace_section(rows, width));
    out.push_str(&super::fit::prose(&footer(&notes, rows, skipped), width));
    out
}

/// The results table: a line per benchmark variant, every number of a line in the
/// one unit of its own column. Wide: benchmark and variant apart, per-call p50 and
/// max included. Narrow: benchmark over variant in one cell, per-call p50, p99 and
/// p99.9 stacked in one column (one method to a column), max left out.
fn results_table_of(rows: &[ResultRow], wide: bool, notes: &mut Vec<String>, thin: &mut bool) -> Table {
    let mut table = results_header(wide);
    for line in group(rows) {
        let all: Vec<&ResultRow> =
            line.batch.iter().chain(line.per_call.iter()).chain(line.other.iter()).copied().collect();
        let flags = flag_tags(&line, &all, notes);
        let Some(headline) = line.batch.or(line.other.first().copied()).or(line.per_call) else { continue };
        let unit = RowUnit::of(headline);
        let pc = line.per_call.and_then(|p| p.percentiles.as_ref().map(|q| (p, q)));
        let mut pct = |f: fn(&crate::stats::Percentiles) -> f64, min: usize| {
            let Some((p, q)) = pc else { return String::new() };
            if p.n < min {
                *thin = true;
                return "-".into();
            }
            unit.num(f(q), p)
        };
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        let mut cells = if wide {
            vec![
                Cell::new(line.benchmark()),
                Cell::new(line.variant()),
                Cell::new(&unit.shown),
                right(unit.figure(headline)),
            ]
        } else {
            vec![Cell::new(stacked(&line.benchmark(), &line.variant())), right(unit.stacked(headline))]
        };
        let (p99, p999) = (pct(|q| q.p99, P99_MIN_SAMPLES), pct(|q| q.p999, P999_MIN_SAMPLES));
        if wide {
            cells.extend([right(pct(|q| q.p50, 1)), right(p99), right(p999), right(pct(|q| q.max, 1))]);
        } else {
            // One method to the column: single calls' p50 over their tails, so the
            // tail never reads below a median of another method (the batch's).
            let p50 = pct(|q| q.p50, 1);
            cells.push(right(if pc.is_some() { format!("{p50}\n{p99}\n{p999}") } else { String::new() }));
        }
        cells.push(Cell::new(all.iter().map(|r| proof(r)).find(|s| !s.is_empty()).unwrap_or_default()));
        cells.push(Cell::new(flags.join(" ")));
        table.add_row(cells);
        for extra in line.other.iter().skip(1) {
            let u = RowUnit::of(extra);
            table.add_row(if wide {
                vec![Cell::new(""), Cell::new(""), Cell::new(&u.shown), right(u.figure(extra))]
            } else {
                vec![Cell::new(""), right(u.stacked(extra))]
            });
        }
    }
    table
}

/// The results table's columns, wide or narrow.
fn results_header(wide: bool) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    let header: &[&str] = if wide {
        &[
            "benchmark",
            "variant",
            "unit",
            "median [95% CI]",
            "per-call p50",
            "p99",
            "p99.9",
            "max",
            "kernel counts",
            "flags",
        ]
    } else {
        &["benchmark / variant", "median\n[95% CI]\nunit", "per call\np50\np99\np99.9", "kernel counts", "flags"]
    };
    table.set_header(header.to_vec());
    if !wide {
        // The names and figures never wrap (they are broken where they may be); the
        // words beside them do.
        table.set_constraints([ColumnConstraint::ContentWidth; 3]);
    }
    table
}

/// Where the narrow table breaks a variant's parameters onto the next line.
const VARIANT_WRAP: usize = 28;

/// The narrowest width at which the fitted trace table keeps its words whole.
const TRACE_WHOLE_WORDS: u16 = 96;

/// Where the narrow trace table breaks a variant's parameters: narrower than the
/// results table, as it has more columns.
const TRACE_VARIANT_WRAP: usize = 20;

/// A benchmark over its variant's parameters, broken between parameters (not inside
/// one) at [`VARIANT_WRAP`] characters.
fn stacked(benchmark: &str, variant: &str) -> String {
    stacked_at(benchmark, variant, VARIANT_WRAP)
}

/// [`stacked`], broken at `wrap` characters.
fn stacked_at(benchmark: &str, variant: &str, wrap: usize) -> String {
    let mut out = benchmark.to_string();
    let mut current = String::new();
    for p in variant.split(' ').filter(|p| !p.is_empty()) {
        if !current.is_empty() && current.chars().count() + 1 + p.chars().count() > wrap {
            out.push_str(&format!("\n {current}"));
            current.clear();
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(p);
    }
    if !current.is_empty() {
        out.push_str(&format!("\n {current}"));
    }
    out
}

/// The trace passes, when the run had any: a second table, and who ran first after
/// the forks.
fn trace_section(rows: &[ResultRow], width: Width) -> String {
    let lines = super::trace::traced(rows);
    if lines.is_empty() {
        return String::new();
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    match width {
        Width::Wide => {
            t.set_header(super::trace::HEADER.to_vec());
            for l in lines {
                t.add_row(l);
            }
        }
        Width::Fit(w) | Width::Full(w) => {
            // Benchmark over variant as in the results table, direct beside idle and
            // intruded, headers broken between words; the cells wrap, never inside a
            // word of eight letters or fewer.
            t.set_content_arrangement(ContentArrangement::Dynamic).set_width(w);
            t.set_header(vec![
                "benchmark / variant",
                "hand-\noffs",
                "direct /\nidle /\nintruded",
                "wake→run\np50 / p99\n/ max",
                "left\nrunnable",
                "traced,\nobserver\neffect",
                "events\nvs /proc",
            ]);
            // Words kept whole where the width allows it (the names and six columns of
            // ten); narrower, words are broken rather than the table overflowing.
            if w >= TRACE_WHOLE_WORDS {
                let fixed = ColumnConstraint::LowerBoundary(comfy_table::Width::Fixed(10));
                t.set_constraints([ColumnConstraint::ContentWidth, fixed, fixed, fixed, fixed, fixed, fixed]);
            }
            for l in lines {
                let [bench, variant, handoffs, direct, idle, rest @ ..] = l.as_slice() else { continue };
                let mut row = vec![
                    stacked_at(bench, variant, TRACE_VARIANT_WRAP),
                    handoffs.clone(),
                    format!("{direct} / {idle}"),
                ];
                row.extend(rest.iter().cloned());
                t.add_row(row);
            }
        }
    }
    let mut out = String::from("trace pass (sched_switch/sched_waking events, recorded after the timed pass):\n");
    out.push_str(&t.to_string());
    out.push('\n');
    for l in super::trace::spawn_lines(rows) {
        out.push_str(&super::fit::prose(&l, width));
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
            let (benchmark, variant) = (line.benchmark(), line.variant());
            let who = if variant.is_empty() { benchmark.to_string() } else { format!("{benchmark} {variant}") };
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
        if let Some(st) = r.params.get(crate::key::STATEMENT) {
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
        let t = render_results_full(&[b, p], &skipped, Width::Wide);
        assert_eq!(t.matches("syscall.getpid").count(), 2, "one line plus one note:\n{t}");
        assert!(t.contains("[1] no_kernel_entry"));
        assert!(t.contains("[1] syscall.getpid via=libc: no_kernel_entry: did not enter the kernel"));
        assert!(t.contains("0.00 sw/op"));
        assert!(t.contains("┆ ns/call ┆"), "the unit has its own column: {t}");
        assert!(t.contains("skipped ctx.pipe placement=cross_cpu: needs 2 CPUs"));
    }

    /// p99.9 from 75 samples was printed: a tail percentile needs the samples behind it.
    #[test]
    fn tail_percentiles_need_their_samples() {
        let per_call = |n: usize| {
            let samples: Vec<f64> = (0..n).map(|i| 100.0 + i as f64).collect();
            ResultRow::from_samples("load.wakeup", Method::PerCall, "ns", samples, n as u64).unwrap()
        };
        let thin = render_results_full(&[per_call(75)], &[], Width::Wide);
        let cells: Vec<&str> = thin.lines().find(|l| l.contains("load.wakeup")).unwrap().split('┆').collect();
        assert_eq!((cells[5].trim(), cells[6].trim()), ("-", "-"), "{thin}");
        assert!(thin.contains("p99.9 from 1000"), "{thin}");
        let mid = render_results_full(&[per_call(500)], &[], Width::Wide);
        let cells: Vec<&str> = mid.lines().find(|l| l.contains("load.wakeup")).unwrap().split('┆').collect();
        assert!(cells[5].trim() != "-" && cells[6].trim() == "-", "{mid}");
        let full = render_results_full(&[per_call(2000)], &[], Width::Wide);
        assert!(!full.contains("p99.9 from 1000"), "{full}");
    }

    #[test]
    fn bare_numbers_read_plainly() {
        assert_eq!(bare(341_300.4), "341300");
        assert_eq!(bare(13.374), "13.37");
        assert_eq!(bare(0.4171), "0.417");
        assert_eq!(bare(f64::NAN), "-");
        assert_eq!(
            stacked("ctx.pipe", "mode=process placement=same_cpu size_bytes=4096"),
            "ctx.pipe\n mode=process\n placement=same_cpu\n size_bytes=4096"
        );
    }
}
