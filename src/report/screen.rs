//! The one-screen run table: what a default run prints. One line per figure (its
//! per-call twin folded into the batch line; raw/libc and phase twins left to `-v`),
//! each column of one method and saying which, flags as numbered notes said once for
//! every line they concern, the header in three lines. `-v` and `--wide` print the full
//! table ([`super::table`]); JSON and exports keep every row whatever is printed here.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

use super::fit::wrap;
use super::table::{Line, P99_MIN_SAMPLES, RowUnit, group, rounds_line};
use super::{fmt_ns, plain};
use crate::model::{Count, FlagCode, Method, ResultRow, RunDocument, Skipped};

/// Twins a glance does without: (parameter, the twin's value, its parent's value, or
/// None where the parent lacks the parameter). A line whose parameter holds the twin's
/// value, beside a line of the same benchmark and parameters holding the parent's, is
/// left to `-v`.
const TWINS: [(&str, &str, Option<&str>); 3] = [
    ("via", "libc", Some("raw")),
    ("phase", "parent_resumes", Some("full_cycle")),
    (crate::key::SHARED_CORE.name(), "shared", None),
];

/// The run as one screen at `width` columns: the header, the table and its notes.
/// `preflight_said`: the preflight's warnings were printed as they were found (a fresh
/// run), so the header only counts them.
pub fn render_run(doc: &RunDocument, skipped: &[Skipped], width: u16, preflight_said: bool) -> String {
    let w = usize::from(width);
    let mut out = String::new();
    for line in header(doc, w, preflight_said) {
        out.push_str(&wrap(&line, w));
        out.push('\n');
    }
    out.push_str(&render_results(&doc.results, skipped, width, Some(doc.run.id)));
    out
}

/// The header: the run and machine, the clocks, what the intervals stand on, and the
/// preflight's warnings (counted when they were already said).
fn header(doc: &RunDocument, w: usize, preflight_said: bool) -> Vec<String> {
    let m = &doc.machine;
    let mut first = super::table::run_headline(doc);
    // The virtualization when it fits the line (`info` and `-v` always say it).
    let virt = format!(" · {}", plain(&m.virtualization));
    if first.chars().count() + virt.chars().count() <= w {
        first.push_str(&virt);
    }
    let mut lines = vec![first];
    if let Some(c) = &m.calibration {
        let step = c.quantum_ns.map_or_else(String::new, |q| format!(", {} steps", fmt_ns(q)));
        lines.push(format!(
            "clocks: per call {} less a {} bracket{step}; batch CLOCK_MONOTONIC_RAW",
            c.counter,
            fmt_ns(c.bracket_ns)
        ));
    }
    if let Some(l) = rounds_line(&doc.results) {
        lines.push(l.trim_end().to_string());
    }
    match (preflight_said, m.preflight.len()) {
        (_, 0) => {}
        (true, n) => lines.push(format!(
            "preflight: {} (said above as found; oscost show {} repeats {})",
            super::counted(n as u64, "warning", "warnings"),
            doc.run.id,
            if n == 1 { "it" } else { "them" }
        )),
        (false, _) => lines.extend(m.preflight.iter().map(|t| format!("preflight: {}", plain(&t.reason)))),
    }
    lines
}

/// A line's name at a glance: the benchmark and its parameters' values, each named
/// only where the value is a number (`ctx.pipe process same_cpu`, `load.runqueue
/// tasks=8`).
pub fn compact_label(benchmark: &str, variant: &str) -> String {
    let mut out = benchmark.to_string();
    for p in variant.split(' ').filter(|p| !p.is_empty()) {
        out.push(' ');
        match p.split_once('=') {
            Some((_, v)) if v.parse::<f64>().is_err() => out.push_str(v),
            _ => out.push_str(p),
        }
    }
    out
}

/// Whether `line` is a twin left to `-v`: see [`TWINS`].
fn is_twin(line: &Line<'_>, lines: &[Line<'_>]) -> bool {
    let params =
        |l: &Line<'_>| l.variant().split(' ').filter(|p| !p.is_empty()).map(str::to_string).collect::<Vec<_>>();
    let mine = params(line);
    TWINS.iter().any(|(key, twin, parent)| {
        let Some(i) = mine.iter().position(|p| *p == format!("{key}={twin}")) else { return false };
        let mut wanted = mine.clone();
        match parent {
            Some(parent) => wanted[i] = format!("{key}={parent}"),
            None => {
                wanted.remove(i);
            }
        }
        lines.iter().any(|l| l.bench == line.bench && params(l) == wanted)
    })
}

/// The rounds left out of the figures because the host shared the measuring core, in
/// one line (None when none were).
fn shared_core_line(rows: &[ResultRow]) -> Option<String> {
    let left: Vec<f64> = rows
        .iter()
        .filter(|r| r.method == Method::Batch)
        .filter_map(|r| r.counts.get(&Count::SharedCoreRounds).copied())
        .filter(|n| *n > 0.0)
        .collect();
    let rounds: f64 = left.iter().sum();
    (!left.is_empty()).then(|| {
        format!(
            "shared core: {} found the host running other work on the measuring CPU's SMT sibling, left out of {} (core=shared twins in -v)",
            super::counted(rounds as u64, "round", "rounds"),
            super::counted(left.len() as u64, "figure", "figures")
        )
    })
}

/// The short sense of a flag, for the note said once for every line carrying it (each
/// row's own reason, with its figures, is in `-v`, JSON and exports).
pub fn gist(code: FlagCode) -> &'static str {
    match code {
        FlagCode::Vdso => "answered in user space by the vDSO, no kernel entry",
        FlagCode::NoKernelEntry => "the C library answered from a cache, no kernel entry",
        FlagCode::BelowFloor => "below the enosys floor: no real system call costs that little",
        FlagCode::MethodsDisagree => "per-call and batch figures differ by more than the bracket explains",
        FlagCode::BelowBracket => "per-call median below the bracket it was measured with",
        FlagCode::YieldSwitched => "sched_yield switched to another task in more than 1% of calls",
        FlagCode::TooFewSwitches => "fewer switches than a hand-off needs: not a switch's cost",
        FlagCode::ExtraSwitches => "more than one switch per hand-off",
        FlagCode::Preempted => "involuntary switches: the tasks were preempted",
        FlagCode::Migrated => "the unpinned tasks moved between CPUs",
        FlagCode::UnstableDifference => "the difference's interval reaches zero",
        FlagCode::Uneven => "uneven progress among the storm's tasks",
        FlagCode::Unfair => "CPU shares far from what the nice weights promise",
        FlagCode::TimerSlack => "the sleep is mostly the thread's timer slack",
        FlagCode::Intruded => "third tasks ran between wake-up and run",
        FlagCode::TraceDisagrees => "the trace's switch count and /proc's differ by more than 1%",
        FlagCode::Bimodal => "rounds disagree on how many switches a hand-off made",
        FlagCode::CoarseClock => "per-call figure under 10 clock steps: read the batch figure",
        FlagCode::Modes => "rounds sit at two levels: fresh workers landed in different modes",
        FlagCode::SharedCore => "rounds on a core the host shared with other work are in the figure",
    }
}

/// Result rows as one screen at `width` columns: the table, its notes, what `-v`
/// adds. `run_id` names the run in the hint (a bare `show -v` otherwise).
pub fn render_results(rows: &[ResultRow], skipped: &[Skipped], width: u16, run_id: Option<i64>) -> String {
    let w = usize::from(width);
    let lines = group(rows);
    let mut notes: Vec<(FlagCode, Vec<String>)> = Vec::new();
    let (mut folded, mut thin) = (0usize, false);
    let mut shown = Vec::new();
    for line in &lines {
        let label = compact_label(&line.benchmark(), &line.variant());
        if line.params.is_shared_core_twin() && is_twin(line, &lines) {
            // Said once for the run under the table (`shared_core_line`).
            folded += 1;
            continue;
        }
        let numbers = note_numbers(line, &label, &mut notes);
        if is_twin(line, &lines) {
            folded += 1;
            continue;
        }
        let Some(headline) = line.headline() else { continue };
        shown.push(Figure::of(line, headline, label, &numbers, &mut thin));
    }
    // A line a figure where it fits: the per-call header folded in two, else the
    // per-call column left to `-v`; narrower still, the names wrapped between words.
    let w16 = width;
    let layouts = [Layout::Line(PerCall::Shown), Layout::Line(PerCall::Stacked), Layout::Line(PerCall::Dropped)];
    let mut dropped = false;
    let mut out = String::new();
    for layout in layouts {
        out = figures_table(&shown, layout).to_string();
        dropped = layout.per_call() == PerCall::Dropped;
        if super::fit::widest(&out) <= w {
            break;
        }
    }
    if super::fit::widest(&out) > w {
        let mut narrow = figures_table(&shown, Layout::Narrow(w16));
        out = narrow.to_string();
        if super::fit::widest(&out) > w {
            // Narrower than the numbers: cells broken wherever the width needs.
            super::fit::table(&mut narrow, super::table::Width::Fit(w16));
            out = narrow.to_string();
        }
    }
    out.push('\n');
    let mut prose = Vec::new();
    if dropped {
        prose.push(format!("per call p50 / p99 left out to fit {w} columns (-v or --wide shows them)"));
    }
    if thin && !dropped {
        prose.push(format!("per call p99: \"-\" where a row had fewer than {P99_MIN_SAMPLES} samples"));
    }
    prose.extend(note_lines(&notes, w));
    prose.extend(shared_core_line(rows));
    prose.extend(statements_and_skipped(rows, skipped));
    if let Some(more) = more_line(rows, folded, run_id) {
        prose.push(more);
    }
    for p in prose {
        out.push_str(&wrap(&p, w));
        out.push('\n');
    }
    out
}

/// Up to this many flags get a line each; more are packed into lines of codes and
/// counts, so the flags a busy machine raises cannot push the table off the screen.
const NOTE_LINES: usize = 6;

/// The notes under the table, one a flag: its sense and the lines it concerns, named
/// where they fit one line of `width` columns and counted where they do not (the rows
/// carry the note's number); each fits one line at 100 columns, and a narrower terminal
/// wraps it. More flags than [`NOTE_LINES`]: code and count only, packed whole into
/// lines of `width` (`-v` says each flag's reason).
fn note_lines(notes: &[(FlagCode, Vec<String>)], width: usize) -> Vec<String> {
    let count = |who: &[String]| super::counted(who.len() as u64, "row", "rows");
    if notes.len() > NOTE_LINES {
        // Packed a whole note to a piece, so no note breaks across lines.
        let mut lines = vec![String::new()];
        for (i, (code, who)) in notes.iter().enumerate() {
            let piece = format!("[{}] {code}: {}", i + 1, count(who));
            let last = lines.last_mut().expect("one line at least");
            if last.is_empty() {
                last.push_str(&piece);
            } else if last.chars().count() + 2 + piece.chars().count() <= width {
                last.push_str("; ");
                last.push_str(&piece);
            } else {
                lines.push(piece);
            }
        }
        return lines;
    }
    notes
        .iter()
        .enumerate()
        .map(|(i, (code, who))| {
            let named = format!("[{}] {code}: {}: {}", i + 1, gist(*code), who.join(", "));
            if named.chars().count() <= width {
                named
            } else {
                format!("[{}] {code}: {}: {}", i + 1, gist(*code), count(who))
            }
        })
        .collect()
}

/// A line's figures as text: its name, its headline figure and the interval's
/// half-width, the per-call p50 and p99 (one method to the column, so the p99 never
/// reads below a median of another method), switches per operation, note numbers.
struct Figure {
    label: String,
    median: String,
    interval: String,
    per_call: String,
    switches: String,
    tags: String,
}

impl Figure {
    fn of(line: &Line<'_>, headline: &ResultRow, mut label: String, numbers: &[usize], thin: &mut bool) -> Self {
        let unit = RowUnit::of(headline);
        if headline.method != Method::Batch {
            label.push_str(&format!(" ({})", headline.method.as_str().replace('_', " ")));
        }
        let median = format!("{} {}", unit.num(headline.median, headline), unit.shown);
        let interval = match headline.interval() {
            Some((lo, hi)) if headline.median.abs() > 0.0 => {
                format!("±{}", percent((hi - headline.median).max(headline.median - lo) / headline.median.abs()))
            }
            _ => String::new(),
        };
        let per_call =
            line.per_call.and_then(|p| p.percentiles.as_ref().map(|q| (p, q))).map_or_else(String::new, |(p, q)| {
                let p99 = if p.n < P99_MIN_SAMPLES {
                    *thin = true;
                    "-".to_string()
                } else {
                    unit.num(q.p99, p)
                };
                format!("{} / {p99}", unit.num(q.p50, p))
            });
        let switches = line
            .rows()
            .iter()
            .find_map(|r| r.counts.get(&Count::SwitchesPerOp))
            .map_or_else(String::new, |s| format!("{s:.2}"));
        let tags = if numbers.is_empty() {
            String::new()
        } else {
            format!("[{}]", numbers.iter().map(ToString::to_string).collect::<Vec<_>>().join(","))
        };
        Figure { label, median, interval, per_call, switches, tags }
    }
}

/// Where a figures table puts its per-call percentiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PerCall {
    /// In a column headed on one line.
    Shown,
    /// In a column headed on two lines (the header is wider than the figures).
    Stacked,
    /// Left to `-v`.
    Dropped,
}

/// How a figures table is laid out: a line a figure, or fitted to a width with each
/// interval under its figure and the names wrapped between words (per-call left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Line(PerCall),
    Narrow(u16),
}

impl Layout {
    fn per_call(self) -> PerCall {
        match self {
            Layout::Line(p) => p,
            Layout::Narrow(_) => PerCall::Dropped,
        }
    }
}

/// The figures as a table in `layout`.
fn figures_table(figures: &[Figure], layout: Layout) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    let per_call = match layout.per_call() {
        PerCall::Shown => Some("per call p50 / p99"),
        PerCall::Stacked => Some("per call\np50 / p99"),
        PerCall::Dropped => None,
    };
    let mut header = vec!["figure", "batch median ±95%"];
    header.extend(per_call);
    header.extend(["sw/op", "notes"]);
    t.set_header(header.clone());
    let narrow = match layout {
        Layout::Narrow(w) => Some(w),
        Layout::Line(_) => None,
    };
    let sep = if narrow.is_some() { "\n" } else { " " };
    let cells: Vec<Vec<String>> = figures
        .iter()
        .map(|f| {
            let median =
                if f.interval.is_empty() { f.median.clone() } else { format!("{}{sep}{}", f.median, f.interval) };
            let mut row = vec![f.label.clone(), median];
            if per_call.is_some() {
                row.push(f.per_call.clone());
            }
            row.extend([f.switches.clone(), f.tags.clone()]);
            row
        })
        .collect();
    let n = header.len();
    // Narrow, the names take what the numbers leave (three characters of border and
    // padding a column, one more for the outer border), wrapped between their words.
    let label_width = narrow.map(|w| {
        let widest = |i: usize| {
            cells.iter().map(|c| super::fit::widest(&c[i])).chain([super::fit::widest(header[i])]).max().unwrap_or(0)
        };
        let numbers: usize = (1..n).map(widest).sum();
        usize::from(w).saturating_sub(numbers + 3 * n + 1).max(12)
    });
    for row in &cells {
        let label = label_width.map_or_else(|| row[0].clone(), |lw| super::fit::wrap(&row[0], lw));
        let mut line = vec![Cell::new(label)];
        line.extend(row[1..n - 1].iter().map(|c| Cell::new(c).set_alignment(CellAlignment::Right)));
        line.push(Cell::new(&row[n - 1]));
        t.add_row(line);
    }
    t
}

/// An interval's relative half-width, to two significant digits at most.
fn percent(x: f64) -> String {
    let p = x * 100.0;
    if p >= 10.0 { format!("{p:.0}%") } else { format!("{p:.1}%") }
}

/// The numbers of the notes `line`'s flags belong to (one note a flag, gathering every
/// line that carries it), adding the line to each note.
fn note_numbers(line: &Line<'_>, label: &str, notes: &mut Vec<(FlagCode, Vec<String>)>) -> Vec<usize> {
    let mut numbers = Vec::new();
    for r in line.rows() {
        for f in &r.flags {
            let i = match notes.iter().position(|(c, _)| *c == f.flag) {
                Some(i) => i,
                None => {
                    notes.push((f.flag, Vec::new()));
                    notes.len() - 1
                }
            };
            if !notes[i].1.iter().any(|l| l == label) {
                notes[i].1.push(label.to_string());
            }
            if !numbers.contains(&(i + 1)) {
                numbers.push(i + 1);
            }
        }
    }
    numbers.sort_unstable();
    numbers
}

/// The fits' statements and the skipped variants, as the full table prints them.
fn statements_and_skipped(rows: &[ResultRow], skipped: &[Skipped]) -> Vec<String> {
    let mut out = Vec::new();
    for r in rows {
        if let Some(st) = r.params.get(crate::key::STATEMENT) {
            out.push(format!("{} {}: {}", plain(&r.benchmark), plain(&r.variant_label()), plain(st)));
        }
    }
    for s in skipped {
        out.push(format!("skipped {} {}: {}", plain(&s.benchmark), plain(&s.params), plain(&s.reason)));
    }
    out
}

/// What `-v` adds, when it adds something: the lines folded here, the trace pass, the
/// counts beside switches, each flag's own reason.
fn more_line(rows: &[ResultRow], folded: usize, run_id: Option<i64>) -> Option<String> {
    let mut parts = Vec::new();
    if folded > 0 {
        parts.push(super::counted(folded as u64, "twin line", "twin lines"));
    }
    if rows.iter().any(|r| r.trace.is_some()) {
        parts.push("the trace pass".to_string());
    }
    if rows.iter().any(|r| !r.flags.is_empty()) {
        parts.push("each flag's reason".to_string());
    }
    if parts.is_empty() {
        return None;
    }
    let show = run_id.map_or_else(|| "show -v".to_string(), |id| format!("oscost show {id} -v"));
    Some(format!("{show} adds {}, and the kernel counts", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Flag;

    /// A default suite's rows: 18 benchmarks in 30 variants, each a batch row and its
    /// per-call twin (the spawn phases per call only), flags on many of them.
    fn default_suite() -> Vec<ResultRow> {
        let mut rows = Vec::new();
        let mut add =
            |bench: &str, params: &[(&str, &str)], unit: &str, centre: f64, batch: bool, flags: &[FlagCode]| {
                let samples =
                    |c: f64, n: usize| (0..n).map(|i| c * (1.0 + 0.001 * (i % 17) as f64)).collect::<Vec<_>>();
                let mut methods = vec![(Method::PerCall, 2000)];
                if batch {
                    methods.insert(0, (Method::Batch, 200));
                }
                for (method, n) in methods {
                    let mut r = ResultRow::from_samples(bench, method, unit, samples(centre, n), n as u64).unwrap();
                    for (k, v) in params {
                        r = r.with_param(k, *v);
                    }
                    if method == Method::Batch {
                        r.counts.insert(Count::SwitchesPerOp, if bench.starts_with("syscall") { 0.0 } else { 1.0 });
                        r.counts.insert(Count::ParentAnonKib, 300.0);
                    }
                    for f in flags {
                        r.flag(Flag::new(*f, "a reason with its figures, 111 ns in 7 of 10 rounds and 125 ns in 3"));
                    }
                    rows.push(r);
                }
            };
        use FlagCode::{CoarseClock, MethodsDisagree, Modes, Vdso};
        for (name, flags) in [
            ("enosys", &[CoarseClock][..]),
            ("getppid", &[MethodsDisagree]),
            ("getuid", &[Modes, CoarseClock]),
            ("gettid", &[Modes, MethodsDisagree]),
            ("open_close", &[Modes]),
            ("stat", &[Modes, MethodsDisagree]),
            ("read", &[MethodsDisagree]),
            ("write", &[MethodsDisagree]),
            ("sched_yield", &[MethodsDisagree]),
        ] {
            add(&format!("syscall.{name}"), &[], "ns/call", 150.0, true, flags);
        }
        for via in ["raw", "libc"] {
            add("syscall.getpid", &[("via", via)], "ns/call", 130.0, true, &[]);
        }
        for name in ["clock_gettime", "gettimeofday"] {
            add(&format!("syscall.{name}"), &[("via", "vdso")], "ns/call", 22.0, true, &[Vdso, CoarseClock]);
            add(&format!("syscall.{name}"), &[("via", "raw")], "ns/call", 230.0, true, &[]);
        }
        for bench in ["ctx.pipe", "ctx.futex"] {
            for mode in ["thread", "process"] {
                for placement in ["same_cpu", "cross_cpu"] {
                    let flags: &[FlagCode] = if placement == "same_cpu" { &[MethodsDisagree] } else { &[Modes] };
                    let centre = if placement == "same_cpu" { 2250.0 } else { 17_500.0 };
                    add(bench, &[("mode", mode), ("placement", placement)], "ns/hand-off", centre, true, flags);
                }
            }
        }
        for bench in ["spawn.fork_exit", "spawn.fork_exec", "spawn.shell", "spawn.thread"] {
            add(bench, &[("phase", "full_cycle")], "ns/call", 145_000.0, true, &[]);
            add(bench, &[("phase", "parent_resumes")], "ns/call", 64_000.0, false, &[]);
        }
        rows
    }

    fn suite_run() -> RunDocument {
        let mut doc = RunDocument::for_tests(7, crate::machine::Machine::example(), default_suite());
        doc.run.started_at = "2026-11-26T06:07:34Z".into();
        doc
    }

    /// The default screen: at 100 columns a line a figure at most and the whole run in
    /// 48 lines (a run adds its "running" and "stored as" lines: 50); no line wider
    /// than the terminal at 100 or 80 columns.
    #[test]
    fn a_default_suite_fits_one_screen() {
        let doc = suite_run();
        let benchmarks: std::collections::BTreeSet<&str> = doc.results.iter().map(|r| r.benchmark.as_str()).collect();
        assert_eq!(benchmarks.len(), 18);
        let text = render_run(&doc, &[], 100, false);
        let body: Vec<&str> = text.lines().filter(|l| l.starts_with('│')).skip(1).collect();
        let figures = group(&doc.results).len();
        assert!(body.len() <= figures, "{} table lines for {figures} figures:\n{text}", body.len());
        assert!(body.iter().all(|l| l.contains(" ns/") || l.contains(" µs/")), "a figure a line:\n{text}");
        assert!(text.lines().count() <= 48, "{} lines:\n{text}", text.lines().count());
        for width in [100u16, 80] {
            let t = render_run(&doc, &[], width, false);
            let widest = super::super::fit::widest(&t);
            assert!(widest <= usize::from(width), "{widest} columns at {width}:\n{t}");
        }
    }

    /// One note a flag, one line each, counting the lines it concerns when their names
    /// do not fit; each line's tags point at the notes of its flags; the folded twins
    /// are counted, and `-v` named.
    #[test]
    fn notes_are_said_once_and_twins_fold() {
        let text = render_run(&suite_run(), &[], 100, false);
        for code in ["coarse_clock", "methods_disagree", "modes", "vdso"] {
            assert_eq!(text.matches(&format!("] {code}: ")).count(), 1, "{code} said once:\n{text}");
        }
        let note = text.lines().position(|l| l.starts_with("[3] modes")).expect("modes is the third flag seen");
        let after = text.lines().nth(note + 1).unwrap_or_default();
        assert!(text.lines().nth(note).unwrap().ends_with(": 8 rows") && after.starts_with("[4] "), "{text}");
        let getuid = text.lines().find(|l| l.starts_with("│ syscall.getuid ")).unwrap();
        assert!(getuid.contains("[1,3]"), "{getuid}");
        assert!(!text.contains("syscall.getpid libc") && text.contains("syscall.getpid raw"), "{text}");
        assert!(!text.contains("parent_resumes"), "{text}");
        assert!(text.contains("oscost show 7 -v adds 5 twin lines"), "{text}");
        assert!(!text.contains("a reason with its figures"), "the reasons whole are -v's:\n{text}");
    }

    /// A figure's `core=shared` twin folds into `-v` without a note of its own; one line
    /// under the table says how many rounds left how many figures, and fits 80 columns.
    #[test]
    fn a_shared_core_twin_folds_and_the_rounds_left_out_are_said_once() {
        let mut figure =
            ResultRow::from_samples("syscall.getuid", Method::Batch, "ns/call", vec![110.0; 70], 70).unwrap();
        figure.counts.insert(Count::SharedCoreRounds, 3.0);
        let mut twin =
            ResultRow::from_samples("syscall.getuid", Method::Batch, "ns/call", vec![150.0; 30], 30).unwrap();
        twin.params.set(crate::key::SHARED_CORE, "shared");
        twin.flag(Flag::new(FlagCode::SharedCore, "the 3 of 10 rounds …"));
        let lone = ResultRow::from_samples("syscall.gettid", Method::Batch, "ns/call", vec![129.0; 100], 100).unwrap();
        for width in [100u16, 80] {
            let text = render_results(&[figure.clone(), twin.clone(), lone.clone()], &[], width, Some(4));
            assert_eq!(text.lines().filter(|l| l.starts_with("│ syscall.getuid")).count(), 1, "{text}");
            assert!(!text.contains("shared_core:") && !text.contains("150"), "the twin is -v's:\n{text}");
            let joined = text.replace("\n  ", " ");
            assert_eq!(joined.matches("shared core: 3 rounds").count(), 1, "{text}");
            assert!(joined.contains("left out of 1 figure"), "{text}");
            assert!(super::super::fit::widest(&text) <= usize::from(width), "{text}");
        }
        let unshared = render_results(&[lone], &[], 100, None);
        assert!(!unshared.contains("shared core"), "{unshared}");
    }

    /// A note names its lines where they fit its line; a busy machine's flags, raised on
    /// every line, still leave the run on one screen at 100 columns: past six flags the
    /// notes are packed, code and count, no note split across lines.
    #[test]
    fn a_busy_machines_flags_keep_the_screen() {
        let one = ResultRow::from_samples("syscall.getuid", Method::Batch, "ns/call", vec![150.0; 200], 200).unwrap();
        let mut flagged = one.clone();
        flagged.flag(Flag::new(FlagCode::Preempted, "3 involuntary switches"));
        let text = render_results(&[flagged], &[], 100, None);
        assert!(
            text.lines().any(|l| l == format!("[1] preempted: {}: syscall.getuid", gist(FlagCode::Preempted))),
            "{text}"
        );
        for code in FlagCode::ALL {
            let line = format!("[10] {code}: {}: 26 rows", gist(code));
            assert!(line.chars().count() <= 100, "{line}");
        }
        use FlagCode::*;
        let busy = [Preempted, Migrated, Intruded, Modes, Bimodal, CoarseClock, MethodsDisagree, TraceDisagrees];
        let mut doc = suite_run();
        for r in &mut doc.results {
            for code in busy {
                r.flag(Flag::new(code, "a reason with its figures, long enough to wrap a line if it were listed"));
            }
        }
        for width in [100u16, 80] {
            let text = render_run(&doc, &[], width, false);
            let lines = text.lines().count();
            assert!(width < 100 || lines <= 48, "{lines} lines at {width} columns:\n{text}");
            assert!(super::super::fit::widest(&text) <= usize::from(width), "{text}");
            assert!(text.contains(" rows; [2] "), "packed:\n{text}");
            for code in busy {
                assert_eq!(text.matches(&format!("] {code}: ")).count(), 1, "{code} said once:\n{text}");
            }
        }
    }

    /// One method to a column: the batch median in its column, the per-call p50 and p99
    /// beside it in theirs; a line without a batch figure says its method.
    #[test]
    fn each_column_holds_one_method() {
        let per_call = ResultRow::from_samples("load.wakeup", Method::PerCall, "ns", vec![5000.0; 300], 300).unwrap();
        let text = render_results(&[per_call], &[], 100, None);
        assert!(text.contains("batch median ±95%") && text.contains("per call p50 / p99"), "{text}");
        assert!(text.contains("load.wakeup (per call)"), "{text}");
        assert_eq!(compact_label("ctx.pipe", "mode=process placement=same_cpu"), "ctx.pipe process same_cpu");
        assert_eq!(compact_label("load.runqueue", "tasks=8 op=yield"), "load.runqueue tasks=8 yield");
    }

    /// A suite run's simulated rows carry their model (a cost profile, a sensitivity
    /// to every assumed term, a judgement) as parameters: none enters a label, and
    /// each figure takes at most 3 lines at 100 columns and fits 80.
    #[test]
    fn a_simulated_row_is_labelled_by_its_figure_not_its_model() {
        let model = serde_json::json!({"assumed": (0..12).map(|i| serde_json::json!({"term": format!("term{i}"), "low": 193160.56678796056, "high": 195049.1446068563, "ns": 60.0})).collect::<Vec<_>>()});
        let mut rows = Vec::new();
        for (policy, nice) in [("linux-2.4", "0"), ("o1-2002", "19")] {
            let r = ResultRow::from_samples("sim.chat", Method::Batch, "msg/s", vec![194315.0], 1)
                .unwrap()
                .with_param("cpus", "8")
                .with_param("figure", "messages per second")
                .with_param("messages", "100")
                .with_param("nice", nice)
                .with_param("policy", policy)
                .with_param("seed", "1")
                .with_param("simulated", "smp2002")
                .with_param("tasks", "10");
            let mut r = r;
            r.params.set(crate::key::SENSITIVITY, model.clone());
            r.params.set(crate::key::COST_PROFILE, model.clone());
            r.params.set(crate::key::FRAGILE, true);
            rows.push(r);
        }
        let mut conclusion = ResultRow::from_samples("sim.conclusion", Method::Batch, "ratio", vec![2.82], 1)
            .unwrap()
            .with_param("conclusion", "chat, 8 CPUs, nice 0, O(1) / old")
            .with_param("simulated", "smp2002");
        conclusion.params.set(crate::key::JUDGEMENT, model.clone());
        rows.push(conclusion);
        for width in [100u16, 80] {
            let text = render_results(&rows, &[], width, Some(1));
            assert!(!text.contains('{') && !text.contains("term0"), "no model in a label:\n{text}");
            assert!(super::super::fit::widest(&text) <= usize::from(width), "{text}");
            let body: Vec<&str> = text.lines().filter(|l| l.starts_with('│')).skip(1).collect();
            if width == 100 {
                assert!(body.len() <= 3 * rows.len(), "{} lines for {} figures:\n{text}", body.len(), rows.len());
            }
        }
        let label = crate::model::ResultRow::variant_label(&rows[0]);
        assert_eq!(
            label,
            "cpus=8 figure=messages per second messages=100 nice=0 policy=linux-2.4 seed=1 simulated=smp2002 tasks=10"
        );
    }
}
