//! `oscost crosscheck`: oscost's figures beside the tools performance engineers
//! already trust (perf bench, hackbench, cyclictest, hyperfine) and beside oscost's own
//! raw loop, a tiny C program that does exactly what oscost's rows say they time.
//!
//! Why: two tools that time "a pipe hand-off" can both be right about their own code
//! and still differ by a quarter. A user who sets oscost beside perf sees two numbers;
//! this command says which part of the difference is what (a round trip is two
//! hand-offs; perf calls through the C library, whose wrapper oscost measures in its
//! `via=libc` rows) and how much is left that nobody named.
//!
//! Each anchor is run interleaved with oscost's equivalent figure, pair by pair, the
//! order alternating (A B, B A, …) so drift touches both sides alike. oscost's side of
//! a pair is one round of each benchmark it needs, each in a fresh worker process, as a
//! run measures it; nothing is stored (a crosscheck measures the tools, not the
//! machine). Per pair the ratio anchor / oscost is taken; the summary is their
//! geometric mean with a 95% Student-t interval on the log ratios.
//!
//! An anchor that is not installed is named and skipped; one that fails or prints what
//! cannot be read is reported with why, and the others still run.

pub mod anchor;
pub mod knobs;
pub mod parse;
mod program;

use std::time::Duration;

use serde::Serialize;

pub use crate::helper::RAW_LOOP_ELF;
pub use anchor::AnchorId;
use anchor::{OscostSide, Scale};
use program::{Located, RunError};

use crate::bench::load::wakeup::WakeupOptions;
use crate::bench::{BenchOptions, Scope};
use crate::clock::Calibration;
use crate::model::ResultRow;
use crate::runner::MeasureConfig;

/// A ratio agrees when its whole interval lies within this of 1.
pub const AGREEMENT: f64 = 0.05;
/// Past this many pairs, an interval too close to the band's edge is said to be
/// undecidable rather than given a count.
const MAX_DECIDING_PAIRS: f64 = 10_000.0;
/// Anchor runs whose extremes differ by more than this are said to differ.
const SPREAD: f64 = 0.10;
/// The longest one anchor run may take before it is ended.
const ANCHOR_BOUND: Duration = Duration::from_secs(300);

/// `oscost crosscheck`'s arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Anchors to run (default: all): perf-pipe, perf-pipe-threads, perf-syscall,
    /// hackbench, cyclictest, hyperfine, raw-getppid, raw-enosys, raw-pipe
    pub anchors: Vec<String>,
    /// Pairs of anchor and oscost runs per anchor (at least 2, for an interval)
    #[arg(long, default_value_t = 5)]
    pub pairs: usize,
    /// A tenth of each anchor's loops and oscost's quick budgets
    #[arg(long)]
    pub quick: bool,
    /// Write the comparisons as JSON instead of lines
    #[arg(long)]
    pub json: bool,
    /// cyclictest's -i, -p and -t, given to both cyclictest and load.wakeup
    #[command(flatten)]
    pub wakeup: knobs::WakeupArgs,
}

/// Bad input to the command.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("unknown anchor `{0}` (anchors: {1})")]
    UnknownAnchor(String, String),
    #[error("--pairs must be at least 2 (an interval needs two pairs), got {0}")]
    TooFewPairs(usize),
    #[error(transparent)]
    Wakeup(#[from] crate::bench::OptionError),
    #[error("--wakeup-interval {0:?} is not a whole number of µs, which cyclictest's -i takes")]
    IntervalNotInMicroseconds(Duration),
}

/// The anchors asked for, in their fixed order.
pub fn anchors_of(names: &[String]) -> Result<Vec<AnchorId>, UsageError> {
    if names.is_empty() {
        return Ok(AnchorId::ALL.to_vec());
    }
    let mut chosen = Vec::new();
    for n in names {
        let a = AnchorId::parse(n)
            .ok_or_else(|| UsageError::UnknownAnchor(n.clone(), AnchorId::ALL.map(AnchorId::name).join(", ")))?;
        if !chosen.contains(&a) {
            chosen.push(a);
        }
    }
    Ok(chosen)
}

/// A ratio with its 95% interval (none from fewer than two pairs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratio {
    pub ratio: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The pairs it is taken over.
    #[serde(skip)]
    pub pairs: usize,
}

/// What a ratio's interval says of the band [1 − AGREEMENT, 1 + AGREEMENT]: a point
/// inside it with an interval reaching past it is no agreement, only a question more
/// pairs can settle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreement {
    /// The whole interval lies inside the band.
    Agrees,
    /// The whole interval lies outside the band, on one side.
    Differs,
    /// The interval reaches across an edge of the band: about `pairs` pairs in all
    /// would decide (None without an interval, or too close to an edge to say).
    Inconclusive { pairs: Option<usize> },
}

impl Ratio {
    /// The geometric mean of `ratios` with a t-interval on their logs.
    pub fn of(ratios: &[f64]) -> Option<Self> {
        let logs: Vec<f64> = ratios.iter().filter(|r| r.is_finite() && **r > 0.0).map(|r| r.ln()).collect();
        if logs.is_empty() {
            return None;
        }
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let ci = crate::stats::nested::t_interval(&logs);
        Some(Ratio { ratio: mean.exp(), low: ci.map(|c| c.1.exp()), high: ci.map(|c| c.2.exp()), pairs: logs.len() })
    }

    /// Where the interval lies against the agreement band.
    pub fn agreement(&self) -> Agreement {
        let (band_low, band_high) = (1.0 - AGREEMENT, 1.0 + AGREEMENT);
        let (Some(low), Some(high)) = (self.low, self.high) else { return Agreement::Inconclusive { pairs: None } };
        if low >= band_low && high <= band_high {
            Agreement::Agrees
        } else if high < band_low || low > band_high {
            Agreement::Differs
        } else {
            Agreement::Inconclusive { pairs: self.pairs_to_decide() }
        }
    }

    /// About how many pairs would bring the interval to one side of the band's nearer
    /// edge, were the ratio and the pairs' spread to stay: the half-width (on the logs)
    /// shrinks as one over the square root of the pairs.
    fn pairs_to_decide(&self) -> Option<usize> {
        let (low, high) = (self.low?, self.high?);
        let centre = self.ratio.ln();
        let half = (high.ln() - low.ln()) / 2.0;
        let edge = [1.0 - AGREEMENT, 1.0 + AGREEMENT].map(|e| (centre - e.ln()).abs());
        let room = edge[0].min(edge[1]);
        let needed = self.pairs as f64 * (half / room).powi(2);
        (needed.is_finite() && needed <= MAX_DECIDING_PAIRS).then(|| needed.ceil() as usize + 1)
    }

    /// What an inconclusive interval needs, in words.
    fn undecided(&self, pairs: Option<usize>) -> String {
        match pairs {
            Some(n) => format!("{} inconclusive: about {n} pairs would decide", self.text()),
            None if self.low.is_none() => format!("{} inconclusive: no interval", self.text()),
            None => format!("{} inconclusive: too near the {:.0}% edge to decide", self.text(), AGREEMENT * 100.0),
        }
    }

    fn text(&self) -> String {
        match (self.low, self.high) {
            (Some(l), Some(h)) => format!("x{:.3} [{l:.3}, {h:.3}]", self.ratio),
            _ => format!("x{:.3}", self.ratio),
        }
    }
}

/// One pair: the anchor's figure and oscost's, with the named gaps' figures in the
/// order of the comparison's gaps (empty when a row they need is missing).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    pub anchor: f64,
    pub oscost: f64,
    pub gaps: Vec<f64>,
}

/// A gap named and measured by oscost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gap {
    pub what: String,
    /// Its mean over the pairs, in the comparison's unit.
    pub figure: f64,
    pub source: String,
}

/// How one anchor went.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Compared {
        oscost_row: String,
        pairs: Vec<Pair>,
        anchor_figure: f64,
        oscost_figure: f64,
        ratio: Option<Ratio>,
        gaps: Vec<Gap>,
        /// The anchor over oscost's figure plus every gap.
        rest: Option<Ratio>,
        note: String,
    },
    /// oscost measures nothing this anchor can be set beside: its figure alone.
    NoEquivalent {
        figures: Vec<f64>,
        anchor_figure: f64,
        note: String,
    },
    Skipped {
        why: String,
    },
    Failed {
        why: String,
    },
}

/// One anchor's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub anchor: String,
    /// What ran, as a command line (the program as found).
    pub command: String,
    pub unit: String,
    /// How its figures print: a time, or (hackbench) a rate.
    #[serde(skip)]
    pub scale: anchor::Scale,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The geometric mean of positive figures.
fn geomean(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len().max(1) as f64).exp()
}

/// The comparison of finished pairs: ratio, gaps, and what the note says of them.
pub fn compare(side: &OscostSide, pairs: Vec<Pair>) -> Outcome {
    let anchors: Vec<f64> = pairs.iter().map(|p| p.anchor).collect();
    let ratio = Ratio::of(&pairs.iter().map(|p| p.anchor / p.oscost).collect::<Vec<_>>());
    let measured: Vec<&Pair> =
        pairs.iter().filter(|p| !side.gaps.is_empty() && p.gaps.len() == side.gaps.len()).collect();
    let gaps: Vec<Gap> = if measured.is_empty() {
        Vec::new()
    } else {
        let n = measured.len() as f64;
        let gap = |(i, g): (usize, &anchor::GapSpec)| Gap {
            what: g.what.to_string(),
            figure: measured.iter().map(|p| p.gaps[i]).sum::<f64>() / n,
            source: g.source.to_string(),
        };
        side.gaps.iter().enumerate().map(gap).collect()
    };
    let rest =
        Ratio::of(&measured.iter().map(|p| p.anchor / (p.oscost + p.gaps.iter().sum::<f64>())).collect::<Vec<_>>());
    let ours: Vec<f64> = pairs.iter().map(|p| p.oscost).collect();
    let note = note(ratio.as_ref(), (&gaps, rest.as_ref()), side.unmeasured, [&anchors, &ours]);
    Outcome::Compared {
        oscost_row: side.row.describe(),
        anchor_figure: geomean(&anchors),
        oscost_figure: geomean(&ours),
        pairs,
        ratio,
        gaps,
        rest,
        note,
    }
}

/// What a comparison's figures say: agreement, or the named gaps with their figures
/// and what is left; and the runs of either side that differ among themselves (each run is
/// a fresh process on both sides, so this is where a per-process mode shows).
pub fn note(
    ratio: Option<&Ratio>,
    (gaps, rest): (&[Gap], Option<&Ratio>),
    unmeasured: Option<&str>,
    [anchors, ours]: [&[f64]; 2],
) -> String {
    let mut parts = Vec::new();
    match ratio.map(|r| (r, r.agreement())) {
        None => parts.push("no ratio".to_string()),
        Some((_, Agreement::Agrees)) => parts.push("agrees within 5%".to_string()),
        Some((r, _)) if !gaps.is_empty() => {
            let named: Vec<String> =
                gaps.iter().map(|g| format!("{} {:+.1} ns ({})", g.what, g.figure, g.source)).collect();
            let named = named.join(", ");
            match rest.map(|rest| (rest, rest.agreement())) {
                Some((_, Agreement::Agrees)) => parts.push(format!("{named}: agrees with them")),
                Some((rest, Agreement::Differs)) => parts.push(format!("{named}; rest x{:.3} not named", rest.ratio)),
                Some((rest, Agreement::Inconclusive { pairs })) => {
                    parts.push(format!("{named}; rest {}", rest.undecided(pairs)))
                }
                None => parts.push(format!("{named}; x{:.3} not named", r.ratio)),
            }
        }
        Some((r, Agreement::Inconclusive { pairs })) => parts.push(r.undecided(pairs)),
        Some((r, Agreement::Differs)) => match unmeasured {
            Some(why) => parts.push(format!("x{:.3}, not measured by oscost: {why}", r.ratio)),
            None => parts.push(format!("x{:.3} not named", r.ratio)),
        },
    }
    for (side, runs) in [("anchor", anchors), ("oscost", ours)] {
        if let Some(levels) = levels(runs) {
            parts.push(format!("{side} {levels}"));
        } else if let Some(s) = spread(runs) {
            parts.push(format!("{side} runs {}-{}", figure_text(s.0, Scale::Time), figure_text(s.1, Scale::Time)));
        }
    }
    parts.join("; ")
}

/// The two levels a side's runs sit at, when they form two modes (each run is a fresh
/// process: a level per process is a property of the process, not of the tool).
fn levels(runs: &[f64]) -> Option<String> {
    let logs: Vec<f64> = runs.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
    let m = crate::stats::modes::modes(&logs)?;
    let n = m.lower_rounds + m.upper_rounds;
    Some(format!(
        "processes at two levels: {} in {} of {n}, {} in {} of {n}",
        figure_text(m.lower, Scale::Time),
        m.lower_rounds,
        figure_text(m.upper, Scale::Time),
        m.upper_rounds
    ))
}

/// The extremes of the anchor's runs when they differ by more than [`SPREAD`].
fn spread(xs: &[f64]) -> Option<(f64, f64)> {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (xs.len() > 1 && lo > 0.0 && hi / lo > 1.0 + SPREAD).then_some((lo, hi))
}

/// A figure as people read it: ns, µs or ms for times, k or M for rates.
pub fn figure_text(x: f64, scale: Scale) -> String {
    if scale == Scale::Rate {
        return if x >= 1e6 {
            format!("{:.3} M", x / 1e6)
        } else if x >= 1e3 {
            format!("{:.1} k", x / 1e3)
        } else {
            format!("{x:.1}")
        };
    }
    if x >= 1e6 {
        format!("{:.3} ms", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.3} us", x / 1e3)
    } else {
        format!("{x:.1} ns")
    }
}

/// The widest line printed.
pub const WIDTH: usize = 100;

/// How a text follows the start of its first line.
#[derive(Clone, Copy, PartialEq)]
enum Flow {
    /// On the first line only if it fits there whole (a note reads best unbroken).
    Whole,
    /// Word by word from the first line on.
    Words,
}

/// `text` after `first`, then on lines after `indent`, broken at spaces into lines of
/// at most `width` columns.
fn wrap(first: &str, text: &str, indent: &str, width: usize, flow: Flow) -> Vec<String> {
    let sep = if first.ends_with(' ') { "" } else { " " };
    if first.chars().count() + sep.len() + text.chars().count() <= width {
        return vec![format!("{first}{sep}{text}")];
    }
    let mut lines = vec![first.to_string()];
    if flow == Flow::Whole {
        lines = vec![first.trim_end().to_string(), indent.to_string()];
    }
    for word in text.split(' ') {
        let last = lines.last_mut().expect("one line at least");
        let sep = if last.trim().is_empty() || last.ends_with(' ') { "" } else { " " };
        if last.chars().count() + sep.len() + word.chars().count() <= width {
            last.push_str(sep);
            last.push_str(word);
        } else {
            lines.push(format!("{indent}{word}"));
        }
    }
    lines
}

/// The two lines above the entries.
pub fn header(pairs: usize) -> String {
    format!(
        "crosscheck: {pairs} pairs per anchor, interleaved (A B, B A, ...); ratio = anchor / oscost\n{:<18} {:>13} {:>13}  ratio [95% CI]\n",
        "anchor", "anchor", "oscost"
    )
}

/// One entry as lines of at most [`WIDTH`] columns: its name, both figures, the ratio
/// and the note, then what ran.
pub fn render_entry(e: &Entry) -> String {
    let head = match &e.outcome {
        Outcome::Compared { anchor_figure, oscost_figure, ratio, note, .. } => {
            let r = ratio.map_or("-".to_string(), |r| r.text());
            let lead = format!(
                "{:<18} {:>13} {:>13}  {r}",
                e.anchor,
                figure_text(*anchor_figure, e.scale),
                figure_text(*oscost_figure, e.scale)
            );
            wrap(&format!("{lead} "), note, "    ", WIDTH, Flow::Whole)
        }
        Outcome::NoEquivalent { anchor_figure, note, .. } => {
            let lead = format!("{:<18} {:>13} {:>13} ", e.anchor, figure_text(*anchor_figure, e.scale), "-");
            wrap(&lead, &format!("no equivalent: {note}"), "    ", WIDTH, Flow::Words)
        }
        Outcome::Skipped { why } => {
            wrap(&format!("{:<18}", e.anchor), &format!("skipped: {why}"), "    ", WIDTH, Flow::Words)
        }
        Outcome::Failed { why } => {
            wrap(&format!("{:<18}", e.anchor), &format!("failed: {why}"), "    ", WIDTH, Flow::Words)
        }
    };
    let ran = match &e.outcome {
        Outcome::Compared { oscost_row, .. } => Some(format!("{} | oscost {oscost_row} ({})", e.command, e.unit)),
        Outcome::NoEquivalent { .. } => Some(format!("{} ({})", e.command, e.unit)),
        _ => None,
    };
    let ran = ran.map(|r| wrap("    ran:", &r, "      ", WIDTH, Flow::Words)).unwrap_or_default();
    head.iter().chain(&ran).map(|l| format!("{}\n", l.trim_end())).collect()
}

/// The header and every entry.
pub fn render(entries: &[Entry], pairs: usize) -> String {
    header(pairs) + &entries.iter().map(render_entry).collect::<String>()
}

/// oscost's side of the pairs: the run's budgets, clocks and options, set once.
struct Oscost {
    cfg: MeasureConfig,
    calib: Calibration,
    opts: BenchOptions,
}

/// Why oscost's side of a pair has no figure.
#[derive(Debug, thiserror::Error)]
enum SideError {
    #[error("no benchmark {0}")]
    NoBenchmark(String),
    #[error("{id}: {source}")]
    Round { id: crate::key::BenchId, source: crate::runner::BenchError },
    /// The row the side reads, described.
    #[error("no row {0}")]
    NoRow(String),
}

impl Oscost {
    fn new(quick: bool, wakeup: WakeupOptions) -> Self {
        let noop = crate::helper::Executable::embedded().map(std::sync::Arc::new).map_err(Into::into);
        let opts = BenchOptions { wakeup, ..BenchOptions::smallest(noop, 100) };
        let cfg = if quick { MeasureConfig::quick() } else { MeasureConfig::standard() };
        Oscost { cfg, calib: crate::session::calibrate(quick), opts }
    }

    /// One round of each benchmark, each in a fresh worker: the rows, or why not.
    fn turn(&self, benches: &[&str]) -> Result<Vec<ResultRow>, SideError> {
        let registry = crate::bench::registry();
        let mut rows = Vec::new();
        for id in benches {
            let def = registry.iter().find(|d| d.id == *id).ok_or_else(|| SideError::NoBenchmark(id.to_string()))?;
            let cost = (def.cost)(Scope::Headline, &self.opts, &self.cfg);
            let bound = self.cfg.hard_limit * cost.probes.max(1) as u32 + cost.fixed * 4 + Duration::from_secs(10);
            let job = crate::worker::RoundJob {
                def,
                scope: Scope::Headline,
                cfg: &self.cfg,
                calib: &self.calib,
                opts: &self.opts,
                bound,
                condition: None,
            };
            let reply = crate::worker::run_round(&job, crate::worker::Executor::Workers);
            reply.outcome.map_err(|source| SideError::Round { id: def.id.clone(), source })?;
            rows.extend(reply.rows);
        }
        Ok(rows)
    }

    /// oscost's figure (and the gaps') from one turn.
    fn pair_side(&self, side: &OscostSide) -> Result<(f64, Vec<f64>), SideError> {
        let rows = self.turn(side.benches)?;
        let figure = side.row.pick(&rows).ok_or_else(|| SideError::NoRow(side.row.describe()))?;
        let gaps: Option<Vec<f64>> = side.gaps.iter().map(|g| g.figure(&rows)).collect();
        Ok((figure, gaps.unwrap_or_default()))
    }
}

/// Runs the anchors, `pairs` pairs each, calling `done` with each entry as it finishes.
/// Returns every entry; a stop signal ends the run after the entry it interrupted.
pub fn run(
    anchors: &[AnchorId],
    pairs: usize,
    quick: bool,
    wakeup: WakeupOptions,
    mut done: impl FnMut(&Entry),
) -> Vec<Entry> {
    let mut oscost: Option<Oscost> = None;
    let mut entries = Vec::new();
    for &a in anchors {
        let entry = run_anchor(a, pairs, quick, wakeup, &mut oscost);
        done(&entry);
        entries.push(entry);
        if crate::sys::stop_signal().is_some() {
            break;
        }
    }
    entries
}

fn entry(a: AnchorId, command: String, outcome: Outcome) -> Entry {
    Entry { anchor: a.name().to_string(), command, unit: a.unit().to_string(), scale: a.scale(), outcome }
}

/// A run that gave no figure: a failure, or a skip when the anchor cannot run as this
/// user.
fn failed(a: AnchorId, e: &RunError) -> Outcome {
    match e {
        RunError::Exit(_, said) if a.needs_privilege(said) => {
            Outcome::Skipped { why: format!("{} cannot run as this user: {said}", a.name()) }
        }
        _ => Outcome::Failed { why: e.to_string() },
    }
}

fn run_anchor(a: AnchorId, pairs: usize, quick: bool, wakeup: WakeupOptions, oscost: &mut Option<Oscost>) -> Entry {
    let located = match program::locate(a.program()) {
        Located::Found(p) => p,
        Located::Missing(why) => return entry(a, String::new(), Outcome::Skipped { why }),
    };
    let prepared = match program::Prepared::new(a, &located, quick, &wakeup) {
        Ok(p) => p,
        Err(why) => return entry(a, located.shown.clone(), Outcome::Failed { why: why.to_string() }),
    };
    let command = prepared.command_line();
    let side = match a.oscost() {
        Ok(side) => side,
        Err(why) => {
            let mut figures = Vec::new();
            for _ in 0..pairs {
                match prepared.run_once(a) {
                    Ok(x) => figures.push(x),
                    Err(e) => return entry(a, command, failed(a, &e)),
                }
            }
            let anchor_figure = geomean(&figures);
            return entry(a, command, Outcome::NoEquivalent { figures, anchor_figure, note: why.to_string() });
        }
    };
    let oscost = oscost.get_or_insert_with(|| Oscost::new(quick, wakeup));
    let mut done = Vec::new();
    for i in 0..pairs {
        let mut anchor = None;
        let mut ours = None;
        for side_first in crate::session::arm_order(2, i) {
            if side_first == 0 {
                match prepared.run_once(a) {
                    Ok(x) => anchor = Some(x),
                    Err(e) => return entry(a, command, failed(a, &e)),
                }
            } else {
                match oscost.pair_side(&side) {
                    Ok(x) => ours = Some(x),
                    Err(why) => return entry(a, command, Outcome::Failed { why: format!("oscost: {why}") }),
                }
            }
        }
        if let (Some(anchor), Some((figure, gaps))) = (anchor, ours) {
            done.push(Pair { anchor, oscost: figure, gaps });
        }
    }
    entry(a, command, compare(&side, done))
}

/// The whole JSON document.
#[derive(Serialize)]
struct Document<'a> {
    pairs: usize,
    quick: bool,
    /// Ratios within this of 1 are said to agree.
    agreement: f64,
    anchors: &'a [Entry],
}

/// `oscost crosscheck`: runs the anchors and prints each as it finishes (lines), or all
/// at the end (`--json`). Exit status 0; 1 when an anchor failed; 128 + the signal when
/// stopped (what finished is printed).
pub fn command(args: &Args) -> Result<i32, UsageError> {
    let anchors = anchors_of(&args.anchors)?;
    if args.pairs < 2 {
        return Err(UsageError::TooFewPairs(args.pairs));
    }
    let wakeup = args.wakeup.options();
    crate::bench::load::wakeup::check(&wakeup)?;
    if !wakeup.interval.subsec_nanos().is_multiple_of(1000) {
        return Err(UsageError::IntervalNotInMicroseconds(wakeup.interval));
    }
    if let Err(e) = crate::sys::install_interrupt_flag() {
        eprintln!("warning: the signal handlers could not be installed ({e}); Ctrl-C ends the anchors abruptly");
    }
    let mut printed = Ok(());
    if !args.json {
        printed = emit(&header(args.pairs));
    }
    let entries = run(&anchors, args.pairs, args.quick, wakeup, |e| {
        if !args.json && printed.is_ok() {
            printed = emit(&render_entry(e));
        }
    });
    if args.json {
        let doc = Document { pairs: args.pairs, quick: args.quick, agreement: AGREEMENT, anchors: &entries };
        let text = serde_json::to_string_pretty(&doc).expect("the document serializes") + "\n";
        printed = emit(&text);
    }
    if printed.is_err() {
        return Ok(128 + libc::SIGPIPE);
    }
    if let Some(sig) = crate::sys::stop_signal() {
        return Ok(128 + sig);
    }
    Ok(if entries.iter().any(|e| matches!(e.outcome, Outcome::Failed { .. })) { 1 } else { 0 })
}

/// Writes `text` to standard output at once.
fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes()).and_then(|()| o.flush())
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Start(e) => write!(f, "could not start it: {e}"),
            RunError::Exit(status, tail) => write!(f, "it exited with {status}: {tail}"),
            RunError::Timeout => write!(f, "it ran past {} s and was ended", ANCHOR_BOUND.as_secs()),
            RunError::Stopped => write!(f, "stopped"),
            RunError::Unreadable(e) => write!(f, "its output could not be read: {e}"),
            RunError::Export(e) => write!(f, "its export file could not be read: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_is_the_geometric_mean_with_a_t_interval_on_logs() {
        let r = Ratio::of(&[1.25, 1.25, 1.25]).unwrap();
        assert!((r.ratio - 1.25).abs() < 1e-12);
        assert!((r.low.unwrap() - 1.25).abs() < 1e-12 && (r.high.unwrap() - 1.25).abs() < 1e-12);
        let r = Ratio::of(&[2.0, 0.5]).unwrap();
        assert!((r.ratio - 1.0).abs() < 1e-12);
        assert!(r.low.unwrap() < 1.0 && r.high.unwrap() > 1.0);
        let one = Ratio::of(&[1.1]).unwrap();
        assert_eq!((one.low, one.high), (None, None));
        assert!(Ratio::of(&[]).is_none());
    }

    fn side(a: AnchorId) -> OscostSide {
        a.oscost().unwrap()
    }

    #[test]
    fn the_gaps_oscost_measures_are_named_with_their_figures() {
        let pairs = vec![
            Pair { anchor: 2500.0, oscost: 2000.0, gaps: vec![8.0, 2.0] },
            Pair { anchor: 2500.0, oscost: 2000.0, gaps: vec![8.0, 2.0] },
        ];
        let Outcome::Compared { anchor_figure, oscost_figure, ratio, gaps, rest, note, .. } =
            compare(&side(AnchorId::PerfPipe), pairs)
        else {
            panic!("compared")
        };
        assert!((anchor_figure - 2500.0).abs() < 1e-9 && (oscost_figure - 2000.0).abs() < 1e-9);
        assert!((ratio.unwrap().ratio - 1.25).abs() < 1e-12);
        assert_eq!(gaps.iter().map(|g| g.figure).collect::<Vec<_>>(), [8.0, 2.0]);
        assert!((rest.unwrap().ratio - 2500.0 / 2010.0).abs() < 1e-12);
        assert!(note.starts_with("glibc read+write +8.0 ns (oscost getpid via=libc - via=raw)"), "{note}");
        assert!(note.contains(", whole-loop time +2.0 ns (oscost mean - median)"), "{note}");
        assert!(note.contains("rest x1.244 not named"), "{note}");
    }

    #[test]
    fn agreement_and_the_gaps_that_explain_it_are_said() {
        let same = vec![Pair { anchor: 100.0, oscost: 98.0, gaps: vec![1.0] }; 3];
        let Outcome::Compared { note, .. } = compare(&side(AnchorId::RawGetppid), same) else { panic!("compared") };
        assert_eq!(note, "agrees within 5%");
        let wrapped = vec![Pair { anchor: 166.0, oscost: 117.0, gaps: vec![48.0, 1.0] }; 3];
        let Outcome::Compared { note, .. } = compare(&side(AnchorId::PerfSyscall), wrapped) else { panic!("compared") };
        assert!(note.starts_with("glibc syscall() +48.0 ns"), "{note}");
        assert!(note.ends_with("agrees with them"), "{note}");
        // A pair whose gap rows were missing names no gap.
        let unmeasured = vec![Pair { anchor: 166.0, oscost: 117.0, gaps: vec![] }; 3];
        let Outcome::Compared { gaps, rest, note, .. } = compare(&side(AnchorId::PerfSyscall), unmeasured) else {
            panic!("compared")
        };
        assert!(gaps.is_empty() && rest.is_none(), "{note}");
        assert_eq!(note, "x1.419 not named");
    }

    /// An interval reaching past the 5% band is no agreement, whatever its centre:
    /// pairs spread ±20% around 1 are inconclusive and say how many pairs would decide;
    /// tight ones agree, tight ones 30% off differ, and one pair decides nothing.
    #[test]
    fn agreement_needs_the_whole_interval_inside_the_band() {
        let spread = [0.8, 1.2, 0.85, 1.15, 1.0, 0.9, 1.1];
        let ratio = Ratio::of(&spread).unwrap();
        assert!((ratio.ratio - 1.0).abs() < AGREEMENT, "the centre alone would pass: {ratio:?}");
        let Agreement::Inconclusive { pairs: Some(n) } = ratio.agreement() else { panic!("{:?}", ratio.agreement()) };
        assert!(n > spread.len(), "{n}");
        let pairs: Vec<Pair> =
            spread.iter().map(|r| Pair { anchor: 100.0 * r, oscost: 100.0, gaps: vec![0.0] }).collect();
        let Outcome::Compared { note, .. } = compare(&side(AnchorId::RawGetppid), pairs) else { panic!("compared") };
        assert!(!note.contains("agrees"), "{note}");
        assert!(note.contains("inconclusive: about"), "{note}");
        assert_eq!(Ratio::of(&[0.99, 1.01, 1.0, 0.995]).unwrap().agreement(), Agreement::Agrees);
        assert_eq!(Ratio::of(&[1.29, 1.31, 1.3]).unwrap().agreement(), Agreement::Differs);
        assert_eq!(Ratio::of(&[1.0]).unwrap().agreement(), Agreement::Inconclusive { pairs: None });
    }

    /// On synthetic pairs: equal figures with 10% noise per pair are called different
    /// in at most 5% of trials; a real 30% gap with 2% noise is called different in at
    /// least 95%, and never agreeing.
    #[test]
    fn the_verdicts_are_quiet_on_noise_and_fire_on_a_real_gap() {
        let mut rng = crate::stats::SplitMix64::new(11);
        let mut trial = |centre: f64, sd: f64| {
            let ratios: Vec<f64> =
                (0..5).map(|_| (centre.ln() + sd * crate::stats::nested::normal(&mut rng)).exp()).collect();
            Ratio::of(&ratios).unwrap().agreement()
        };
        let trials = 1000;
        let noise: Vec<Agreement> = (0..trials).map(|_| trial(1.0, 0.10)).collect();
        let differs = noise.iter().filter(|a| **a == Agreement::Differs).count();
        assert!(differs * 20 <= trials, "{differs} of {trials} equal pairs called different");
        let gap: Vec<Agreement> = (0..trials).map(|_| trial(1.3, 0.02)).collect();
        let found = gap.iter().filter(|a| **a == Agreement::Differs).count();
        assert!(found * 20 >= trials * 19, "{found} of {trials} real gaps found");
        assert!(!gap.contains(&Agreement::Agrees));
    }

    /// Fresh processes of the raw loop at two levels (as getppid's are on some
    /// machines) are said as levels with their counts; one level is not.
    #[test]
    fn per_process_levels_are_named() {
        let anchors = [118.0, 155.0, 117.0, 156.0, 154.0, 155.5];
        let ours = [154.0, 155.0, 153.0, 154.5, 155.0, 153.5];
        let pairs: Vec<Pair> =
            anchors.iter().zip(ours).map(|(a, o)| Pair { anchor: *a, oscost: o, gaps: vec![0.0] }).collect();
        let Outcome::Compared { note, .. } = compare(&side(AnchorId::RawGetppid), pairs) else { panic!("compared") };
        assert!(note.contains("anchor processes at two levels: 117.5 ns in 2 of 6, 155.2 ns in 4 of 6"), "{note}");
        assert!(!note.contains("oscost processes"), "{note}");
    }

    #[test]
    fn anchor_runs_that_differ_are_named() {
        let n = note(None, (&[], None), None, [&[1940.0, 2440.0], &[2000.0, 2010.0]]);
        assert_eq!(n, "no ratio; anchor runs 1.940 us-2.440 us");
        let n = note(None, (&[], None), None, [&[1940.0, 1950.0], &[1900.0, 2400.0]]);
        assert_eq!(n, "no ratio; oscost runs 1.900 us-2.400 us");
    }

    #[test]
    fn figures_print_in_their_scale() {
        assert_eq!(figure_text(116.25, Scale::Time), "116.2 ns");
        assert_eq!(figure_text(2500.0, Scale::Time), "2.500 us");
        assert_eq!(figure_text(1.5e6, Scale::Time), "1.500 ms");
        assert_eq!(figure_text(334_728.0, Scale::Rate), "334.7 k");
    }

    #[test]
    fn every_line_fits_the_width() {
        let long = "a very long note ".repeat(20);
        let entries = vec![
            entry(AnchorId::PerfPipe, "perf bench sched pipe -l 200000".into(), Outcome::Failed { why: long.clone() }),
            entry(
                AnchorId::Hackbench,
                "hackbench -g 2 -f 20 -l 1000".into(),
                Outcome::NoEquivalent { figures: vec![1.0], anchor_figure: 1.0, note: long },
            ),
        ];
        for line in render(&entries, 5).lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
    }

    #[test]
    fn anchors_are_chosen_by_name() {
        assert_eq!(anchors_of(&[]).unwrap().len(), AnchorId::ALL.len());
        assert_eq!(anchors_of(&["raw-pipe".into(), "raw-pipe".into()]).unwrap(), vec![AnchorId::RawPipe]);
        let e = anchors_of(&["perf".into()]).unwrap_err().to_string();
        assert!(e.contains("unknown anchor `perf`") && e.contains("perf-pipe"), "{e}");
    }
}
