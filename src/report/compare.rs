//! Comparing two sides, each one run or a set of runs: for every figure both sides
//! have, the ratio B/A of medians with a 95% interval from the hierarchical bootstrap
//! of both sides (runs, then rounds, then samples: `stats::nested`), and a verdict
//! given only when the interval clears the noise threshold by the margin the
//! comparison's rows, judged as one family, ask (Holm's step-down). A side must stand on at
//! least two units that vary (rounds of one run, or runs) for a verdict: one window
//! says nothing about the next. Machines are shown side by side.

use serde::Serialize;

use super::fit::elide;
use super::table::Width;
use crate::machine::Machine;
use crate::model::{FigureKey, Method, ResultRow, RunDocument};
use crate::stats::nested::{Nested, ratio_interval, unit_ratio_interval, unit_shift_interval};
use crate::stats::shift::{CommonShift, common_shift};
pub use crate::stats::verdict::{Direction, Doubt, Verdict, direction, explained, verdict};

/// The default noise threshold (a fraction): verdicts need the interval of B/A to lie
/// beyond 1 ± this. Back-to-back runs of one binary on a shared 2-core VM drift by more
/// between runs than their rounds show within a run; at 3% single-run comparisons of
/// the same binary gave a verdict for 3.7% of figures (12 pairs, 462 figures), at 2%
/// for 6%. Sets of runs (`compare 1,2,3 4,5,6`) see that drift, and so do one-run
/// sides where this machine's noise runs measured it (`oscost noise`): the threshold is
/// then only the smallest change worth naming.
pub const DEFAULT_THRESHOLD: f64 = 0.03;

/// Fixed seed: the same two runs always give the same intervals.
const BOOTSTRAP_SEED: u64 = 0x0005_C057;

/// What a comparison's ratio and interval are of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Estimator {
    /// The Hodges–Lehmann shift between the two sides' rounds' log medians (runs'
    /// medians when a side pools runs), with Moses's rank interval: the level that
    /// varies, steady where rounds sit at two levels, and a far round weighs as one
    /// rank. Each side's centre is its median unit. Taken with five units a side,
    /// where each side's spread between runs is held too (a side of several runs, or
    /// a one-run side whose machine's noise runs measured the figure), or where every
    /// round of both sides was read by the shared-core probe: on this project's VM a
    /// whole run now and then sat 4–18% off its neighbours in every round (the host's
    /// moment), and ranks, blind to far rounds, then called that moment a change (1 of
    /// 60 A/A pairs of default runs, a cross-CPU row); in one-CPU rows the probe takes
    /// out the host's use of the core, and ranks on them called nothing in 60 A/A pairs.
    UnitShift,
    /// The geometric means of each side's units' medians, with Welch's t-interval on
    /// their logs: sides of two to four units, or whose spread between runs is not
    /// known.
    UnitGeomean,
    /// The pooled medians, with the hierarchical bootstrap: a side of one round, or
    /// with a unit at zero or below.
    PooledMedian,
}

/// One matched figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    #[serde(flatten)]
    pub key: FigureKey,
    pub unit: crate::unit::Unit,
    /// Each side's pooled median (its headline, as `show` prints it).
    pub a_median: f64,
    pub b_median: f64,
    /// The figures `ratio` is B's over A's, by `estimator`.
    pub a_centre: f64,
    pub b_centre: f64,
    pub estimator: Estimator,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The degrees of freedom of the Student t the interval was drawn with (NaN without
    /// an interval): the verdict's p-value and the MDE read the same t.
    pub df: f64,
    /// `faster`, `slower`, `no change`, `higher`, `lower` or `uncertain`, which says
    /// why: the change seen below the MDE, a design too weak for it, or a row a flag
    /// of either side doubts.
    pub verdict: Verdict,
    /// The minimum detectable effect: the smallest change, alone in its row, this
    /// comparison's design (each side's runs and rounds and their spread, and the bar
    /// its family of rows sets) would call with 80% power at the threshold, relative
    /// (0.08 = 8%); NaN without an interval.
    pub mde: f64,
    /// The threshold the verdict cleared or not (the smallest change worth naming).
    pub threshold: f64,
    /// The spread between runs the interval was widened by, on the log ratio: each
    /// one-run side's between-run σ_b from its machine's noise runs (`oscost noise`),
    /// in quadrature (σ_b·√2 for two one-run sides of one machine); None where no side
    /// took one.
    pub between_runs: Option<f64>,
    /// What stands behind each side: runs and rounds in all.
    pub a_runs: usize,
    pub a_rounds: usize,
    pub b_runs: usize,
    pub b_rounds: usize,
}

impl Comparison {
    /// What stands behind the verdict, in words: "10+10 rounds", "3+3 runs".
    pub fn basis(&self) -> String {
        if self.a_runs > 1 || self.b_runs > 1 {
            format!("{}+{} runs", self.a_runs, self.b_runs)
        } else {
            format!("{}+{} rounds", self.a_rounds, self.b_rounds)
        }
    }
}

/// What a comparison fails on, for a CI job gating on it (`compare --fail-on`):
/// `slower`, `slower:5%` or `change`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailOn {
    /// A figure whose verdict is `slower`, and, with a size, whose whole interval lies
    /// beyond a slowdown of that size (0.05: 5% slower at the least).
    Slower { by: Option<f64> },
    /// A figure whose verdict names any clear change: faster, slower, higher, lower.
    Change,
}

/// Why a `--fail-on` value is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--fail-on takes slower, slower:N% (a slowdown of at least N%, 0 < N < 1000) or change, not {0:?}")]
pub struct BadFailOn(String);

impl std::str::FromStr for FailOn {
    type Err = BadFailOn;

    fn from_str(text: &str) -> Result<Self, BadFailOn> {
        let bad = || BadFailOn(text.to_string());
        match text.trim() {
            "change" => Ok(FailOn::Change),
            "slower" => Ok(FailOn::Slower { by: None }),
            other => {
                let size = other.strip_prefix("slower:").ok_or_else(bad)?;
                let n: f64 = size.trim_end_matches('%').trim().parse().map_err(|_| bad())?;
                if !(n > 0.0 && n < 1000.0) {
                    return Err(bad());
                }
                Ok(FailOn::Slower { by: Some(n / 100.0) })
            }
        }
    }
}

/// The comparisons among `compared` that `on` fails on. Only a verdict fails: an
/// `uncertain` figure (its interval does not clear the threshold, the family's gate
/// holds it back as chance, or a flag doubts its row) never does; with a size, only a slowdown whose interval's nearer end is
/// that size or more (the slower side's factor, 1/ratio for a rate).
pub fn failing<'a>(compared: impl IntoIterator<Item = &'a Comparison>, on: FailOn) -> Vec<&'a Comparison> {
    let fails = |c: &Comparison| match on {
        FailOn::Slower { by } => {
            let least = if c.ratio >= 1.0 { c.ci_low } else { 1.0 / c.ci_high };
            c.verdict == Verdict::Slower && by.is_none_or(|x| least >= 1.0 + x)
        }
        FailOn::Change => c.verdict.is_change(),
    };
    compared.into_iter().filter(|c| fails(c)).collect()
}

/// A verdict as a table prints it: `no change` with the size it excludes (the ratio's
/// interval inside ±threshold, two one-sided tests at once), else the verdict's words.
pub fn verdict_text(c: &Comparison) -> String {
    match c.verdict {
        Verdict::NoChange => format!("no change above {:.1}%", c.threshold * 100.0),
        v => v.to_string(),
    }
}

/// The comparisons whose verdict a flag withheld: what `--fail-on` names as not
/// judged rather than passing over in silence.
pub fn withheld<'a>(compared: impl IntoIterator<Item = &'a Comparison>) -> Vec<&'a Comparison> {
    compared.into_iter().filter(|c| c.verdict.flag().is_some()).collect()
}

/// The first flag on either side's rows that withholds a verdict (`FlagCode::withholds_verdict`).
fn withholding_flag(rows: &[&ResultRow]) -> Option<crate::model::FlagCode> {
    rows.iter().flat_map(|r| &r.flags).map(|f| f.flag).find(|f| f.withholds_verdict())
}

/// Every run's row matching `r` (benchmark, parameters, method).
fn matching<'a>(side: &'a [RunDocument], r: &ResultRow) -> Vec<&'a ResultRow> {
    let key = r.key();
    side.iter().filter_map(|d| d.results.iter().find(|x| x.is(&key))).collect()
}

/// The runs of either side whose preflight found other work keeping their CPUs busy.
pub fn busy_runs<'a>(a: &'a [RunDocument], b: &'a [RunDocument]) -> Vec<&'a RunDocument> {
    a.iter().chain(b).filter(|d| d.machine.preflight.iter().any(|t| t.code.is_busy())).collect()
}

/// Whether every round of a side's rows was read by the shared-core probe
/// (`measure::shared_core`): rounds the host ran on a shared core have left the figure,
/// and with them the commonest whole-run move of a one-CPU figure.
fn probed(rows: &[&ResultRow]) -> bool {
    !rows.is_empty()
        && rows.iter().all(|r| {
            !r.rounds.is_empty()
                && r.rounds.iter().all(|x| x.counts.contains_key(&crate::model::Count::SharedCoreShare))
        })
}

/// A side's rows as runs of rounds.
fn nested(rows: &[&ResultRow]) -> Option<Nested> {
    let runs: Vec<Vec<&[f64]>> =
        rows.iter().map(|r| r.round_slices()).filter(|s| s.iter().any(|x| !x.is_empty())).collect();
    Nested::new(&runs)
}

/// The median of a side's medians (the figure of a side without samples).
fn side_median(rows: &[&ResultRow]) -> f64 {
    crate::stats::median(&rows.iter().map(|r| r.median).collect::<Vec<_>>())
}

/// A ratio interval with `extra` (log) added in quadrature to each end's half-width:
/// another independent source of error, as a sum of variances adds.
fn widened(e: crate::stats::RatioEstimate, extra: f64) -> (f64, f64, f64) {
    let (r, lo, hi) = (e.ratio, e.ci_low, e.ci_high);
    if !(r > 0.0 && lo > 0.0 && hi.is_finite()) || extra == 0.0 {
        return (r, lo, hi);
    }
    let grow = |half: f64| (half.max(0.0).powi(2) + extra * extra).sqrt();
    (r, r * (-grow((r / lo).ln())).exp(), r * grow((hi / r).ln()).exp())
}

/// The degrees of freedom of an interval widened by the sides' between-run spreads:
/// Welch–Satterthwaite over its parts, the interval's own standard error (of `e.df`)
/// and each spread (of as many degrees of freedom as the noise runs' pairs).
fn widened_df(e: &crate::stats::RatioEstimate, spreads: &[crate::judge::noise::Between]) -> f64 {
    let own = (e.ci_high / e.ci_low).ln() / (2.0 * crate::stats::student::quantile(0.975, e.df));
    let parts = std::iter::once((own * own, e.df)).chain(spreads.iter().map(|b| (b.sigma * b.sigma, b.pairs as f64)));
    let (total, weighted) =
        parts.filter(|(v, df)| *v > 0.0 && *df >= 1.0).fold((0.0, 0.0), |(t, w), (v, df)| (t + v, w + v * v / df));
    if weighted > 0.0 { (total * total / weighted).max(1.0) } else { e.df }
}

/// Compares every figure present on both sides (matched by benchmark, parameters and
/// method), in the order of A's first run. Each side is one run or a set of runs.
pub fn compare(a: &[RunDocument], b: &[RunDocument], threshold: f64, resamples: usize) -> Vec<Comparison> {
    let none = crate::judge::noise::RunNoise::none();
    compare_with(a, b, threshold, [&none, &none], resamples)
}

/// As [`compare`], with each side's machine's between-run spreads (`oscost noise`; A's,
/// then B's): a side of one run does not show how its figure moves between runs, so the
/// interval takes it from that side's noise where the figure has a spread there.
pub fn compare_with(
    a: &[RunDocument],
    b: &[RunDocument],
    threshold: f64,
    noise: [&crate::judge::noise::RunNoise; 2],
    resamples: usize,
) -> Vec<Comparison> {
    let Some(first) = a.first() else { return Vec::new() };
    // A side measured while other work kept its CPUs busy: no change is called, on
    // noise or on a real gap alike (the run is named instead, `busy_runs`).
    let busy = !busy_runs(a, b).is_empty();
    let mut out = Vec::new();
    let mut tested = Vec::new();
    for ra in &first.results {
        let (sa, sb) = (matching(a, ra), matching(b, ra));
        if sb.is_empty() {
            continue;
        }
        let (na, nb) = (nested(&sa), nested(&sb));
        let units = |n: &Option<Nested>| n.as_ref().map_or(0, Nested::units);
        let (a_median, b_median) = match (&na, &nb) {
            (Some(x), Some(y)) => (x.estimate, y.estimate),
            _ => (side_median(&sa), side_median(&sb)),
        };
        // Each one-run side's spread between runs, from its own machine's noise runs.
        let one_run_sides = [&sa, &sb].iter().filter(|s| s.len() == 1).count();
        let spreads: Vec<crate::judge::noise::Between> = [(&sa, noise[0]), (&sb, noise[1])]
            .iter()
            .filter(|(s, _)| s.len() == 1)
            .filter_map(|(_, n)| n.of(ra))
            .collect();
        // Whether each side's interval will hold its figure's spread between runs:
        // a side of several runs shows it, a one-run side takes it from its machine's
        // noise runs.
        let between_held = spreads.len() == one_run_sides;
        // The units' rank shift where each side has five positive units and the
        // spread between runs is held or every round was read by the shared-core
        // probe, their geometric means where two; the pooled medians' bootstrap
        // otherwise (a verdict needs two units anyway). Without either, the ranks'
        // tight interval would call the machine's moment a change
        // (`Estimator::UnitShift`).
        let unit = match (&na, &nb) {
            (Some(x), Some(y)) => (between_held || (probed(&sa) && probed(&sb)))
                .then(|| unit_shift_interval(x, y))
                .flatten()
                .map(|u| (u, Estimator::UnitShift))
                .or_else(|| unit_ratio_interval(x, y).map(|u| (u, Estimator::UnitGeomean))),
            _ => None,
        };
        let (est, a_centre, b_centre, estimator) = match (unit, &na, &nb) {
            (Some((u, estimator)), _, _) => (Some(u.estimate), u.a, u.b, estimator),
            (None, Some(x), Some(y)) => {
                (ratio_interval(x, y, resamples, BOOTSTRAP_SEED), a_median, b_median, Estimator::PooledMedian)
            }
            _ => (None, a_median, b_median, Estimator::PooledMedian),
        };
        let between = (!spreads.is_empty()).then(|| spreads.iter().map(|b| b.sigma).fold(0.0, f64::hypot));
        // A one-run side whose machine's noise runs disagree past any model: no
        // interval can hold what the next run of it may do.
        let noise_refused = [(&sa, noise[0]), (&sb, noise[1])].iter().any(|(s, n)| s.len() == 1 && n.refuses(ra));
        let extra = spreads.iter().map(|b| crate::judge::noise::side_widening(b.sigma, b.pairs)).fold(0.0, f64::hypot);
        // Said only where the interval really took it (a ratio whose interval reaches
        // zero cannot be widened on the log scale, and is left as it is).
        let between =
            between.filter(|_| est.as_ref().is_some_and(|e| e.ratio > 0.0 && e.ci_low > 0.0 && e.ci_high.is_finite()));
        let (ratio, lo, hi) = match est {
            Some(e) if between.is_some() => widened(e, extra),
            Some(e) => (e.ratio, e.ci_low, e.ci_high),
            // Without samples (fits), the ratio stands alone and earns no verdict.
            None => (b_centre / a_centre, f64::NAN, f64::NAN),
        };
        let df = est.map_or(f64::NAN, |e| if between.is_some() { widened_df(&e, &spreads) } else { e.df });
        let both: Vec<&ResultRow> = sa.iter().chain(&sb).copied().collect();
        let mut judged = false;
        let v = if !(lo.is_finite() && hi.is_finite()) {
            Verdict::Uncertain(Doubt::NoInterval)
        } else if units(&na).min(units(&nb)) < 2 {
            // One window per side: its samples say nothing about the next window.
            Verdict::Uncertain(Doubt::OneRound)
        } else if both.iter().any(|r| r.flags.iter().any(|f| f.flag.voids_comparison())) {
            // A side measured something other than the row names (hand-offs that did
            // not switch): the ratio of two such figures means nothing.
            Verdict::Uncertain(Doubt::NotASwitch)
        } else if let Some(flag) = withholding_flag(&both) {
            // The tool itself doubts a side's figure: no verdict on it.
            Verdict::Uncertain(Doubt::Flagged(flag.as_str()))
        } else if noise_refused {
            Verdict::Uncertain(Doubt::MachineNoise)
        } else {
            // Judged with the comparison's other rows (`family_verdicts`).
            judged = true;
            verdict(lo, hi, threshold, direction(&ra.unit))
        };
        tested.push(judged);
        out.push(Comparison {
            key: ra.key(),
            unit: ra.unit.clone(),
            a_median,
            b_median,
            a_centre,
            b_centre,
            estimator,
            ratio,
            ci_low: lo,
            ci_high: hi,
            df,
            verdict: v,
            mde: f64::NAN,
            threshold,
            between_runs: between,
            a_runs: sa.len(),
            a_rounds: sa.iter().map(|r| r.round_count()).sum(),
            b_runs: sb.len(),
            b_rounds: sb.iter().map(|r| r.round_count()).sum(),
        });
    }
    let moved = board_moved(a, b, &out);
    family_verdicts(&mut out, &tested, busy, moved);
    out
}

/// Whether a comparison's verdicts are withheld because every figure moved as one
/// ([`board_shift`]) between one run a side of one recorded machine (the same
/// comparability key, process controls and mitigations included): the machine moving
/// between the runs gives that as readily as a change touching every figure, and
/// nothing recorded tells them apart. Intervals widened by noise runs do not change
/// that: they hold the moves those runs saw, and a host can move further (on this
/// project's VM, one run of six after twelve noise runs came out 8–48% dearer on every
/// row, and nine pipe and syscall rows were called slower). A recorded difference (a
/// seccomp filter, a mitigation) keeps the verdicts: the comparison names it.
fn board_moved(a: &[RunDocument], b: &[RunDocument], rows: &[Comparison]) -> bool {
    a.len() == 1 && b.len() == 1 && key_differences(a, b).between.is_empty() && board_shift(rows).is_some()
}

/// The verdicts of the rows judged on their intervals (`tested`), as one family: a
/// change is named only where Holm's step-down over all of them lets it
/// (`verdict::family_gate`), else `uncertain (chance among N rows)`. Every row with an
/// interval gets the MDE a lone change in this family needs (`power::mde_family`), so
/// the typical MDE is one bar's, and an undecided row is explained against it. On a
/// busy machine, or when every figure moved as one (`board_moved`), no change is named
/// at all.
fn family_verdicts(rows: &mut [Comparison], tested: &[bool], busy: bool, moved: bool) {
    use crate::stats::verdict::{family_gate, p_beyond};
    let judged: Vec<usize> = (0..rows.len()).filter(|&i| tested[i]).collect();
    let m = judged.len().max(1);
    for c in rows.iter_mut() {
        c.mde = crate::stats::power::mde_family(c.ci_low, c.ci_high, c.threshold, c.df, m).unwrap_or(f64::NAN);
    }
    let p: Vec<f64> = judged
        .iter()
        .map(|&i| {
            p_beyond(rows[i].ratio, rows[i].ci_low, rows[i].ci_high, rows[i].threshold, rows[i].df).unwrap_or(1.0)
        })
        .collect();
    let holds = family_gate(&p);
    for (k, &i) in judged.iter().enumerate() {
        let c = &mut rows[i];
        c.verdict = match explained(c.verdict, c.ratio, c.mde) {
            v if v.is_change() && busy => Verdict::Uncertain(Doubt::BusyMachine),
            v if v.is_change() && moved => Verdict::Uncertain(Doubt::BoardMoved),
            v if v.is_change() && !holds[k] => Verdict::Uncertain(Doubt::Chance(judged.len())),
            v => v,
        };
    }
}

/// A side's name: "run #4" or "runs #1, #2, #3".
pub fn side_name(side: &[RunDocument]) -> String {
    let ids: Vec<String> = side.iter().map(|d| format!("#{}", d.run.id)).collect();
    format!("{} {}", if ids.len() == 1 { "run" } else { "runs" }, ids.join(", "))
}

/// A machine's fingerprint fields worth comparing, as (name, value): the host, then
/// the comparability key (`Machine::comparability_key`), mitigations last.
fn fingerprint_fields(m: &Machine) -> Vec<(String, String)> {
    let mut rows = vec![("host".to_string(), super::plain(&m.hostname).into_owned())];
    rows.extend(m.comparability_key().into_iter().map(|(k, v)| (k, super::plain(&v).into_owned())));
    rows
}

/// Where two sides' runs differ in the comparability key, or a side pools runs that
/// do: the fields, so a verdict is never read as the code's when the machine moved.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct KeyDifferences {
    /// Fields whose values differ between A's runs and B's.
    pub between: Vec<String>,
    /// Fields that differ among A's own runs, and among B's.
    pub within_a: Vec<String>,
    pub within_b: Vec<String>,
}

/// The comparability-key differences of two sides.
pub fn key_differences(a: &[RunDocument], b: &[RunDocument]) -> KeyDifferences {
    fn machines(s: &[RunDocument]) -> Vec<&Machine> {
        s.iter().map(|d| &d.machine).collect()
    }
    let (ma, mb) = (machines(a), machines(b));
    KeyDifferences {
        between: crate::machine::key_changes(&ma, &mb).into_iter().map(|c| c.field).collect(),
        within_a: crate::machine::key_spread(&ma),
        within_b: crate::machine::key_spread(&mb),
    }
}

impl KeyDifferences {
    /// The differences in words, one line each (nothing when the key matches).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.between.is_empty() {
            out.push(format!(
                "the sides differ in the comparability key ({}): a verdict may come from that, not from what was measured",
                self.between.join(", ")
            ));
        }
        for (side, fields) in [("A", &self.within_a), ("B", &self.within_b)] {
            if !fields.is_empty() {
                out.push(format!("side {side} pools runs that differ in {}", fields.join(", ")));
            }
        }
        out
    }
}

/// Several machines' fingerprints field by field: every field any of them has, in
/// first-seen order, with each machine's value (`-` where it has none).
pub fn fingerprints(machines: &[&Machine]) -> Vec<(String, Vec<String>)> {
    let each: Vec<Vec<(String, String)>> = machines.iter().map(|m| fingerprint_fields(m)).collect();
    let mut fields: Vec<String> = Vec::new();
    for f in each.iter().flatten().map(|(k, _)| k) {
        if !fields.contains(f) {
            fields.push(f.clone());
        }
    }
    fields
        .into_iter()
        .map(|f| {
            let values = each
                .iter()
                .map(|m| m.iter().find(|(k, _)| *k == f).map_or_else(|| "-".into(), |(_, v)| v.clone()))
                .collect();
            (f, values)
        })
        .collect()
}

/// The fingerprint fields worth comparing: (name, A, B).
pub fn machine_diff(a: &Machine, b: &Machine) -> Vec<(String, String, String)> {
    fingerprints(&[a, b]).into_iter().map(|(k, mut v)| (k, v.remove(0), v.remove(0))).collect()
}

/// The comparison as JSON: both sides' run ids, the threshold, the machines'
/// differences (first run of each side) and every figure's comparison.
pub fn to_json(a: &[RunDocument], b: &[RunDocument], rows: &[Comparison], threshold: f64) -> String {
    #[derive(serde::Serialize)]
    struct Out<'a> {
        a: Vec<i64>,
        b: Vec<i64>,
        threshold: f64,
        machines: Vec<(String, String, String)>,
        comparability: KeyDifferences,
        /// Always false: two runs' rounds did not run together (`run --condition` pairs).
        paired: bool,
        /// Whether B's rows moved as one against A's (`board_shift`).
        board_shift: Option<CommonShift>,
        results: &'a [Comparison],
    }
    let machines = match (a.first(), b.first()) {
        (Some(x), Some(y)) => machine_diff(&x.machine, &y.machine),
        _ => Vec::new(),
    };
    let ids = |s: &[RunDocument]| s.iter().map(|d| d.run.id).collect();
    let comparability = key_differences(a, b);
    let board_shift = board_shift(rows);
    let out =
        Out { a: ids(a), b: ids(b), threshold, machines, comparability, paired: false, board_shift, results: rows };
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

/// The longest value a machines table prints; longer ones (the kernel command line)
/// are elided there and whole in JSON and `--machine`.
pub const MACHINE_VALUE_WIDTH: usize = 40;

/// How much of the machines a comparison prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineView {
    /// One line when the first runs' fingerprints agree, else only the fields that
    /// differ, long values elided.
    Differences,
    /// Every fingerprint field, whole (`compare --machine`).
    Full,
}

/// The machines of a two-sided comparison (first run of each side), as `view` says:
/// one line when their comparability keys are equal, else the fields that differ.
pub fn machines_text(a: &[RunDocument], b: &[RunDocument], view: MachineView, width: Width) -> String {
    use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
    let (Some(x), Some(y)) = (a.first(), b.first()) else { return String::new() };
    let fields = machine_diff(&x.machine, &y.machine);
    let differing: Vec<&(String, String, String)> = fields.iter().filter(|(_, p, q)| p != q).collect();
    if view == MachineView::Differences && x.machine.comparability_key() == y.machine.comparability_key() {
        return super::fit::prose(&same_machines_line(&x.machine, &y.machine), width) + "\n";
    }
    let mut m = Table::new();
    m.load_preset(UTF8_FULL_CONDENSED);
    super::fit::table(&mut m, width);
    m.set_header(vec!["", &format!("A: {}", side_name(a)), &format!("B: {}", side_name(b)), ""]);
    match view {
        MachineView::Full => {
            for (name, p, q) in &fields {
                let mark = if p != q { "≠" } else { "" };
                m.add_row(vec![name.clone(), p.clone(), q.clone(), mark.to_string()]);
            }
        }
        MachineView::Differences => {
            for (name, p, q) in differing {
                let w = MACHINE_VALUE_WIDTH;
                m.add_row(vec![name.clone(), elide(p, w), elide(q, w), "≠".to_string()]);
            }
        }
    }
    let what = if view == MachineView::Full {
        String::new()
    } else {
        super::fit::prose("where the machines differ (compare --machine prints every field):", width) + "\n"
    };
    format!("{what}{m}\n")
}

/// Two machines of one comparability key in one line: what they are, and the hosts
/// when those differ.
fn same_machines_line(x: &Machine, y: &Machine) -> String {
    let host = if x.hostname == y.hostname {
        super::plain(&x.hostname).into_owned()
    } else {
        format!("hosts {} and {}", super::plain(&x.hostname), super::plain(&y.hostname))
    };
    format!(
        "machines: same ({host} · {} · {} CPUs · kernel {} · {}); compare --machine prints every field",
        super::plain(&x.cpu_model),
        x.logical_cpus,
        super::plain(&x.kernel_release),
        super::plain(&x.virtualization)
    )
}

/// Renders a comparison as text: the machines (as `view` says), then figures.
pub fn render(
    a: &[RunDocument],
    b: &[RunDocument],
    rows: &[Comparison],
    threshold: f64,
    (view, width): (MachineView, Width),
) -> String {
    let m = machines_text(a, b, view, width);
    let t = match width {
        Width::Fit(_) => glance(rows, width),
        Width::Full(_) | Width::Wide => figures_table(rows, width),
    };
    let widened = rows.iter().any(|c| c.between_runs.is_some());
    let single = a.len() == 1 && b.len() == 1;
    let unpaired = if holds_conditions(a) || holds_conditions(b) { UNPAIRED_NOTE } else { "" };
    let key: String = key_differences(a, b).lines().iter().map(|l| super::fit::prose(l, width) + "\n").collect();
    let notes = format!(
        "verdicts need the 95% interval of B/A to clear ±{:.1}%, two rounds or runs a side, and the margin Holm's step-down over the rows asks (else \"uncertain (chance among N rows)\"); otherwise \"uncertain\", with whether the change seen is below the MDE (the smallest change alone in its row the design would call with 80% power) or the design too weak for it; the units are each side's rounds (its runs when it pools runs); with five a side and the spread between runs held (sets of runs, or oscost noise) or every round read by the shared-core probe, A and B are the median unit and B/A the median of every pairwise ratio of units (Hodges-Lehmann) with Moses's rank interval; otherwise with two or more the units' geometric means with Welch's t-interval on the logs, with one the pooled medians with the hierarchical bootstrap{}\n",
        threshold * 100.0,
        match (single, widened) {
            (true, true) =>
                "\none run a side: each interval also holds its figure's spread between runs (the between-runs column: each one-run side's, from its machine's noise runs, in quadrature), where it has one",
            (true, false) =>
                "\none run a side: the intervals hold what varied within each run; a machine that drifts between runs needs its between-run spread (oscost noise) or sets of runs (compare 1,2,3 4,5,6)",
            _ => "",
        }
    ) + unpaired;
    let busy: Vec<String> = busy_runs(a, b).iter().map(|d| format!("#{}", d.run.id)).collect();
    let busy = if busy.is_empty() {
        String::new()
    } else {
        super::fit::prose(
            &format!(
                "run {} measured while other work kept the CPUs busy (its preflight said so): no change is called between such runs",
                busy.join(", ")
            ),
            width,
        ) + "\n"
    };
    let same_machine = board_moved(a, b, rows);
    let board =
        board_shift(rows).map_or_else(String::new, |s| super::fit::prose(&board_line(&s, same_machine), width) + "\n");
    format!("{m}{key}{busy}{board}{t}{}", super::fit::prose(&notes, width))
}

/// The shift B's rows share against A's (`stats::shift`): over the rows with an
/// interval whose ratio means what it names, each oriented so that above 1 is dearer
/// (a time longer, a rate lower); rows of no direction are left out.
pub fn board_shift(rows: &[Comparison]) -> Option<CommonShift> {
    let threshold = rows.first()?.threshold;
    let oriented: Vec<f64> = rows
        .iter()
        .filter(|c| c.ci_low.is_finite() && c.ratio > 0.0 && c.verdict != Verdict::Uncertain(Doubt::NotASwitch))
        .filter_map(|c| match direction(&c.unit) {
            Direction::LowerIsBetter => Some(c.ratio.ln()),
            Direction::HigherIsBetter => Some(-c.ratio.ln()),
            Direction::Neutral => None,
        })
        .collect();
    common_shift(&oriented, threshold)
}

/// The line naming a shift the rows share, and, between one run a side of one
/// recorded machine (`board_moved`), why no change is called and what tells its two
/// causes apart.
fn board_line(s: &CommonShift, same_machine: bool) -> String {
    let (side, size) = if s.dearer() { ("dearer", s.median_ratio) } else { ("cheaper", 1.0 / s.median_ratio) };
    let seen = format!(
        "B {side} across the board: {} of {} figures, by ×{size:.2} at the median (sign test p {:.0e})",
        s.moved, s.rows, s.p
    );
    if same_machine {
        format!(
            "{seen}: a change touching every figure or the machine moving between the runs, which one run a side of one recorded machine cannot tell apart, so no change is called; oscost noise measures how far this machine moves, run --condition interleaves two setups in one run"
        )
    } else {
        format!("{seen}: a cause that touches every figure")
    }
}

/// The comparison's figures as a table. Fitted to the terminal, a figure is named in
/// one cell (`ctx.pipe process same_cpu`), the numbers never wrap, the names and
/// verdicts wrap between their words, and the rounds or runs a ratio came from are
/// said once under the table when every row shares them; `--wide` keeps every column.
fn figures_table(rows: &[Comparison], width: Width) -> String {
    // A column for the between-run spread only where some interval took one.
    let widened = rows.iter().any(|c| c.between_runs.is_some());
    let fitted = width.columns().is_some();
    let shared_basis = rows.first().map(Comparison::basis).filter(|b| fitted && rows.iter().all(|c| c.basis() == *b));
    let mut header = if fitted {
        vec!["figure", "A", "B", "B/A [95% CI]", "MDE", "verdict"]
    } else {
        vec!["benchmark", "variant", "method", "A", "B", "B/A [95% CI]", "MDE", "verdict"]
    };
    if widened {
        header.push("between runs");
    }
    if shared_basis.is_none() {
        header.push("from");
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|c| {
            let mut cells = if fitted {
                // A batch figure is the headline; another method says itself.
                let mut label =
                    super::screen::compact_label(&super::plain(&c.key.bench), &super::plain(c.key.variant()));
                if c.key.method != Method::Batch {
                    label.push_str(&format!(" ({})", c.key.method.as_str().replace('_', " ")));
                }
                vec![label]
            } else {
                vec![
                    super::plain(&c.key.bench).into_owned(),
                    super::plain(c.key.variant()).into_owned(),
                    c.key.method.as_str().to_string(),
                ]
            };
            cells.extend([
                super::fmt_value(c.a_centre, &c.unit),
                super::fmt_value(c.b_centre, &c.unit),
                if c.ci_low.is_finite() {
                    format!("{:.3} [{:.3}, {:.3}]", c.ratio, c.ci_low, c.ci_high)
                } else {
                    format!("{:.3}", c.ratio)
                },
                if c.mde.is_finite() { format!("±{:.1}%", c.mde * 100.0) } else { "-".into() },
                verdict_text(c),
            ]);
            if widened {
                cells.push(c.between_runs.map_or_else(|| "-".into(), |s| format!("σ {:.1}%", s * 100.0)));
            }
            if shared_basis.is_none() {
                cells.push(c.basis());
            }
            cells
        })
        .collect();
    // The names, verdicts and sources share what the numbers leave; at a glance the
    // sides' medians and spreads go before a cell wraps.
    let flexible = |i: usize| if fitted { i == 0 || i == 5 } else { i <= 1 || i == 7 };
    let median = |i: usize| if fitted { (1..=2).contains(&i) } else { (3..=4).contains(&i) };
    let columns: Vec<super::fit::Column<'_>> = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let c = if flexible(i) || *h == "from" {
                super::fit::Column::flexible(h)
            } else {
                super::fit::Column::right(h)
            };
            if median(i) || *h == "between runs" || *h == "from" { c.droppable() } else { c }
        })
        .collect();
    let (t, dropped) = super::fit::folded_table(&columns, &cells, width);
    let mut out = format!("{t}\n");
    if !dropped.is_empty() {
        out.push_str(&super::fit::prose(
            &format!("{} left out to fit the terminal (-v or --wide shows them)", dropped.join(", ")),
            width,
        ));
        out.push('\n');
    }
    if let Some(basis) = shared_basis {
        out.push_str(&super::fit::prose(&format!("every ratio from {basis}"), width));
        out.push('\n');
    }
    out
}

/// A comparison at a glance: its typical MDE, the rows with a verdict (a change, or
/// none above the threshold), and every other row folded into one line a reason with
/// its count; `-v` prints them all.
fn glance(rows: &[Comparison], width: Width) -> String {
    // A figure's shared-core twin holds the rounds left out of it: one line counts them.
    let (twins, rows): (Vec<&Comparison>, Vec<&Comparison>) =
        rows.iter().partition(|c| c.key.params().is_shared_core_twin());
    let mut mdes: Vec<f64> = rows.iter().map(|c| c.mde).filter(|m| m.is_finite()).collect();
    mdes.sort_by(f64::total_cmp);
    let mut out = String::new();
    if let Some(m) = mdes.get(mdes.len() / 2) {
        out.push_str(&super::fit::prose(
            &format!(
                "{} compared; typical MDE ±{:.1}% (the median over {} with an interval: a change alone in its row this design calls with 80% power){}",
                super::counted(rows.len() as u64, "figure", "figures"),
                m * 100.0,
                mdes.len(),
                family_mdes(&rows)
            ),
            width,
        ));
        out.push('\n');
    }
    // The changes are the rows; figures that did not move past the threshold are
    // counted in a line, as every undecided reason is.
    let (changed, rest): (Vec<&Comparison>, Vec<&Comparison>) = rows.iter().partition(|c| c.verdict.is_change());
    if !changed.is_empty() {
        let changed: Vec<Comparison> = changed.into_iter().cloned().collect();
        out.push_str(&figures_table(&changed, width));
    }
    let mut reasons: Vec<(String, usize)> = Vec::new();
    let no_change = rest.iter().filter(|c| c.verdict == Verdict::NoChange);
    for c in no_change.chain(rest.iter().filter(|c| c.verdict != Verdict::NoChange)) {
        let why = match c.verdict {
            Verdict::NoChange => format!("no change above {:.1}%", c.threshold * 100.0),
            v => v.to_string(),
        };
        match reasons.iter_mut().find(|(r, _)| *r == why) {
            Some((_, n)) => *n += 1,
            None => reasons.push((why, 1)),
        }
    }
    for (why, n) in &reasons {
        out.push_str(&super::fit::prose(&format!("{why}: {}", super::counted(*n as u64, "figure", "figures")), width));
        out.push('\n');
    }
    if !twins.is_empty() {
        out.push_str(&super::fit::prose(
            &format!(
                "core=shared twins (the rounds the host shared the core in, left out of their figures): {}",
                twins.len()
            ),
            width,
        ));
        out.push('\n');
    }
    let below: Vec<&Comparison> =
        rest.iter().copied().filter(|c| c.verdict == Verdict::Uncertain(Doubt::BelowMde)).collect();
    if let Some(command) = resolving_command(&below) {
        out.push_str(&super::fit::prose(&command, width));
        out.push('\n');
    }
    if !rest.is_empty() || !twins.is_empty() {
        out.push_str(&super::fit::prose("compare -v prints every figure", width));
        out.push('\n');
    }
    out
}

/// Each family's typical MDE over its batch rows (`; batch rows by family: syscall
/// ±4.6%, …`), in the order the families first appear; empty for fewer than two families.
/// The families differ by an order of magnitude (a system call's rounds agree to a
/// percent, a fork's spread by tens), which one median over every row hides.
fn family_mdes(rows: &[&Comparison]) -> String {
    let mut families: Vec<(String, Vec<f64>)> = Vec::new();
    for c in rows.iter().filter(|c| c.key.method == crate::model::Method::Batch && c.mde.is_finite()) {
        let family = c.key.bench.as_str().split('.').next().unwrap_or_default().to_string();
        match families.iter_mut().find(|(f, _)| *f == family) {
            Some((_, m)) => m.push(c.mde),
            None => families.push((family, vec![c.mde])),
        }
    }
    if families.len() < 2 {
        return String::new();
    }
    let each: Vec<String> =
        families.iter().map(|(f, m)| format!("{f} ±{:.1}%", crate::stats::median(m) * 100.0)).collect();
    format!("; batch rows by family: {}", each.join(", "))
}

/// The runs that would tell the changes below the MDE from noise: their benchmarks
/// (their families, past four) measured with `--detect` at the typical change seen,
/// at least a point past the threshold (a change inside it is no verdict at any
/// precision), once before and once after.
fn resolving_command(below: &[&Comparison]) -> Option<String> {
    let threshold = below.first()?.threshold;
    let mut ids: Vec<String> = below.iter().map(|c| c.key.bench.to_string()).collect();
    ids.sort();
    ids.dedup();
    if ids.len() > 4 {
        ids = ids.iter().map(|id| id.split('.').next().unwrap_or(id).to_string()).collect();
        ids.dedup();
    }
    let seen: Vec<f64> = below.iter().map(|c| c.ratio.ln().abs().exp() - 1.0).filter(|x| x.is_finite()).collect();
    let typical = crate::stats::median(&seen).max(threshold + 0.01);
    let pct = (typical * 100.0).ceil();
    // Rows whose spread between runs alone is past what one run needs for that change:
    // rounds of one run cannot narrow that part, runs can.
    let needed = crate::stats::power::precision_for(pct / 100.0, threshold).unwrap_or(0.0);
    let per_run = |c: &&Comparison| c.between_runs.map(|b| crate::stats::Z975 * b / std::f64::consts::SQRT_2);
    let past = below.iter().filter(|c| per_run(c).is_some_and(|h| h >= needed)).count();
    if 2 * past > below.len() {
        return Some(format!(
            "to tell a {pct:.0}% change in those from noise needs runs, not rounds: in {past} of {} the spread between runs alone is past it (oscost plan prices runs, rounds and samples)",
            below.len()
        ));
    }
    Some(format!(
        "to tell a {pct:.0}% change in those from noise: oscost run {} --detect {pct:.0}%, before and after, then compare",
        ids.join(" ")
    ))
}

/// The line under a two-sided comparison naming where its between-run spreads came
/// from (side A's and B's machine's noise runs), when some interval took one.
pub fn between_runs_line(rows: &[Comparison], noise: [&crate::judge::noise::RunNoise; 2]) -> Option<String> {
    let widened = rows.iter().filter(|c| c.between_runs.is_some()).count();
    noise_sources(&[("A", noise[0].source.as_ref()), ("B", noise[1].source.as_ref())], widened, rows.len())
}

/// Where the between-run spreads came from, when `widened` of the `total` intervals
/// took one: each set of noise runs (`oscost noise`) once, with the sides whose machine
/// it measured, or "this machine's" when every side read the same ones.
pub fn noise_sources(
    sides: &[(&str, Option<&crate::judge::noise::Source>)],
    widened: usize,
    total: usize,
) -> Option<String> {
    let mut groups: Vec<(Vec<&str>, &crate::judge::noise::Source)> = Vec::new();
    for (name, source) in sides {
        let Some(source) = source else { continue };
        match groups.iter_mut().find(|(_, s)| *s == *source) {
            Some((names, _)) => names.push(name),
            None => groups.push((vec![name], source)),
        }
    }
    if widened == 0 || groups.is_empty() {
        return None;
    }
    let runs = |s: &crate::judge::noise::Source| format!("{} noise runs ({} to {})", s.runs, s.first, s.last);
    let from = match &groups[..] {
        [(names, s)] if sides.len() > 1 && names.len() == sides.len() => format!("this machine's {}", runs(s)),
        _ => groups
            .iter()
            .map(|(names, s)| {
                let whose: Vec<String> = names.iter().map(|n| format!("{n}'s")).collect();
                format!("{} machine's {}", whose.join(" and "), runs(s))
            })
            .collect::<Vec<_>>()
            .join(" and "),
    };
    Some(format!(
        "between runs: {widened} of {total} intervals hold their figure's spread between runs, from {from}; oscost noise"
    ))
}

/// Whether any run of a side measured conditions beside a baseline (`run --condition`).
fn holds_conditions(side: &[RunDocument]) -> bool {
    side.iter().any(|d| d.results.iter().any(|r| r.params.contains(crate::judge::paired::CONDITION.name())))
}

/// Said when the sides hold conditions: separate runs are compared only as unpaired
/// sides.
const UNPAIRED_NOTE: &str = "these sides are separate runs, compared unpaired: their rounds did not run together, so the intervals must span the drift between runs; a condition against its baseline within one run is paired by round (oscost show RUN)\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flag, FlagCode, Method, ResultRow};

    fn doc(id: i64, rows: Vec<ResultRow>) -> RunDocument {
        RunDocument::for_tests(id, crate::machine::Machine::example(), rows)
    }

    /// A row of `rounds` rounds around `centre` (3% round noise, 1% within).
    fn row(id: &str, method: Method, unit: &str, centre: f64, rounds: usize, seed: u64) -> ResultRow {
        let mut rng = crate::stats::SplitMix64::new(seed);
        let parts = crate::stats::nested::synthetic(&mut rng, centre, rounds, 100, 0.03, 0.01);
        let all: Vec<f64> = parts.iter().flatten().copied().collect();
        let mut r = ResultRow::from_samples(id, method, unit, all, (rounds * 100) as u64).unwrap();
        r.rounds = parts
            .iter()
            .map(|p| crate::model::Round { samples: p.len(), at: None, counts: Default::default() })
            .collect();
        r
    }

    fn getppid(centre: f64, rounds: usize, seed: u64) -> ResultRow {
        row("syscall.getppid", Method::Batch, "ns/call", centre, rounds, seed)
    }

    #[test]
    fn rows_below_their_mde_are_given_the_run_that_would_tell_them() {
        let base =
            compare(&[doc(1, vec![getppid(100.0, 3, 1)])], &[doc(2, vec![getppid(100.0, 3, 2)])], 0.03, 200).remove(0);
        let below = |bench: &str, ratio: f64| Comparison {
            key: crate::model::FigureKey::new(bench.into(), Method::Batch, crate::model::Params::new()),
            ratio,
            verdict: Verdict::Uncertain(Doubt::BelowMde),
            ..base.clone()
        };
        let rows = [below("syscall.getppid", 1.06), below("syscall.getppid", 0.95), below("ctx.pipe", 1.02)];
        let refs: Vec<&Comparison> = rows.iter().collect();
        // The typical change seen (5.3%, 5.3% and 2%: median 5.3%) rounded up, each
        // benchmark once.
        assert_eq!(
            resolving_command(&refs).unwrap(),
            "to tell a 6% change in those from noise: oscost run ctx.pipe syscall.getppid --detect 6%, before and after, then compare"
        );
        // Changes inside the threshold ask for a point past it; many benchmarks, their families.
        let small: Vec<Comparison> =
            ["syscall.a", "syscall.b", "ctx.c", "ctx.d", "spawn.e"].iter().map(|b| below(b, 1.001)).collect();
        let refs: Vec<&Comparison> = small.iter().collect();
        let line = resolving_command(&refs).unwrap();
        assert!(line.contains("oscost run ctx spawn syscall --detect 4%"), "{line}");
        assert_eq!(resolving_command(&[]), None);
        // Most rows' spread between runs alone past what a 6% change needs of one run
        // (±1.3%): rounds cannot get there, and the line says runs.
        let spread = |c: &Comparison, b: f64| Comparison { between_runs: Some(b), ..c.clone() };
        let held = [spread(&rows[0], 0.02), spread(&rows[1], 0.02), spread(&rows[2], 0.001)];
        let refs: Vec<&Comparison> = held.iter().collect();
        let line = resolving_command(&refs).unwrap();
        assert!(line.contains("needs runs, not rounds: in 2 of 3") && !line.contains("--detect"), "{line}");
        let held = [spread(&rows[0], 0.001), spread(&rows[1], 0.001), rows[2].clone()];
        let refs: Vec<&Comparison> = held.iter().collect();
        assert!(resolving_command(&refs).unwrap().contains("--detect 6%"));
    }

    /// Forty comparisons of two runs drawn alike (noise only), ten rounds a side.
    fn equal_pairs() -> impl Iterator<Item = Vec<Comparison>> {
        (0..40).map(|seed| {
            compare(
                &[doc(1, vec![getppid(100.0, 10, seed)])],
                &[doc(2, vec![getppid(100.0, 10, seed + 100)])],
                0.02,
                500,
            )
        })
    }

    #[test]
    fn equal_runs_get_no_direction() {
        let mut verdicts = 0;
        for c in equal_pairs() {
            assert_eq!(c.len(), 1);
            assert_eq!(c[0].basis(), "10+10 rounds");
            verdicts += matches!(c[0].verdict, Verdict::Faster | Verdict::Slower) as usize;
        }
        assert!(verdicts <= 2, "{verdicts} of 40 equal pairs got a direction");
    }

    /// The MDE printed beside a verdict is what the design detects: over seeded
    /// pairs of ten rounds a side (3% round-to-round noise), a true change equal to
    /// the MDE of A/A pairs is called `slower` in 70–90% of trials, and pairs without a
    /// change get a direction in at most 5%.
    #[test]
    fn the_mde_matches_simulation() {
        let threshold = DEFAULT_THRESHOLD;
        let pair = |shift: f64, seed: u64| {
            compare(
                &[doc(1, vec![getppid(100.0, 10, seed)])],
                &[doc(2, vec![getppid(100.0 * shift, 10, seed + 10_000)])],
                threshold,
                500,
            )
            .remove(0)
        };
        let mut mdes: Vec<f64> = (0..60).map(|seed| pair(1.0, 50_000 + seed).mde).collect();
        mdes.sort_by(f64::total_cmp);
        let mde = mdes[mdes.len() / 2];
        assert!(mde > threshold && mde < 0.3, "{mde}");
        let trials: usize = 300;
        let called = (0..trials as u64).filter(|&seed| pair(1.0 + mde, seed).verdict == "slower").count();
        eprintln!("MDE {:.1}%: a change of that size called slower in {called} of {trials}", mde * 100.0);
        assert!((70 * trials / 100..=90 * trials / 100).contains(&called), "{called} of {trials} at the MDE {mde}");
        let directed = (0..trials as u64)
            .filter(|&seed| matches!(pair(1.0, seed).verdict, Verdict::Faster | Verdict::Slower))
            .count();
        assert!(directed <= trials / 20, "{directed} of {trials} A/A pairs got a direction");
    }

    #[test]
    fn an_uncertain_verdict_says_why() {
        let straddles = Verdict::Uncertain(Doubt::Straddles);
        assert_eq!(explained(straddles, 1.01, 0.08), "uncertain (change below MDE)");
        assert_eq!(explained(straddles, 0.99, 0.08), "uncertain (change below MDE)");
        assert_eq!(explained(straddles, 1.10, 0.08), "uncertain (design too weak)");
        assert_eq!(explained(Verdict::Slower, 1.10, 0.08), "slower");
        assert_eq!(explained(straddles, 1.10, f64::NAN), "uncertain");
    }

    #[test]
    fn a_shift_gets_the_right_direction_and_size() {
        let a = getppid(100.0, 10, 1);
        let b = getppid(125.0, 10, 2);
        let c = compare(&[doc(1, vec![a.clone()])], &[doc(2, vec![b.clone()])], 0.02, 500);
        assert_eq!(c[0].verdict, "slower");
        assert!(c[0].ci_low > 1.1 && c[0].ci_high < 1.4 && c[0].ci_low < c[0].ratio, "{:?}", c[0]);
        let c = compare(&[doc(2, vec![b])], &[doc(1, vec![a])], 0.02, 500);
        assert_eq!(c[0].verdict, "faster");
        // For a rate, higher is better.
        let ra = row("load.chat", Method::Workload, "msg/s", 1000.0, 10, 3);
        let rb = row("load.chat", Method::Workload, "msg/s", 1500.0, 10, 4);
        assert_eq!(compare(&[doc(1, vec![ra])], &[doc(2, vec![rb])], 0.02, 500)[0].verdict, "faster");
    }

    /// `--fail-on`: quiet on equal pairs (noise), fires on a 20% slowdown; `change`
    /// fires on a speed-up too, `slower` does not.
    #[test]
    fn fail_on_stays_quiet_on_noise_and_fires_on_a_real_gap() {
        let fired = equal_pairs().filter(|c| !failing(c, FailOn::Change).is_empty()).count();
        assert!(fired <= 2, "{fired} of 40 equal pairs failed the gate");
        let (a, b) = (getppid(100.0, 10, 1), getppid(120.0, 10, 2));
        let slower = compare(&[doc(1, vec![a.clone()])], &[doc(2, vec![b.clone()])], 0.02, 500);
        assert_eq!(failing(&slower, FailOn::Slower { by: None }).len(), 1);
        assert_eq!(failing(&slower, FailOn::Change).len(), 1);
        let faster = compare(&[doc(2, vec![b])], &[doc(1, vec![a])], 0.02, 500);
        assert!(failing(&faster, FailOn::Slower { by: None }).is_empty());
        assert_eq!(failing(&faster, FailOn::Change).len(), 1);
    }

    /// `--fail-on slower:5%`: never on A/A pairs, not on a real 4% slowdown (below the
    /// size stated), on a real 10% one whenever the design has the power for it (30
    /// rounds a side of 3% round noise); the values parse as written and nothing
    /// else does.
    #[test]
    fn fail_on_a_size_passes_a_small_slowdown_and_fails_a_real_one() {
        let gate = FailOn::Slower { by: Some(0.05) };
        assert_eq!("slower:5%".parse::<FailOn>(), Ok(gate));
        assert_eq!("slower:5".parse::<FailOn>(), Ok(gate));
        assert_eq!("slower".parse::<FailOn>(), Ok(FailOn::Slower { by: None }));
        assert_eq!("change".parse::<FailOn>(), Ok(FailOn::Change));
        for bad in ["slower:", "slower:-5%", "slower:0", "faster", "slower:x%", ""] {
            assert!(bad.parse::<FailOn>().is_err(), "{bad:?}");
        }
        assert_eq!(equal_pairs().filter(|c| !failing(c, gate).is_empty()).count(), 0, "A/A fails nothing");
        let (mut small, mut real) = (0, 0);
        for seed in 0..20 {
            let base = getppid(100.0, 30, seed);
            let four =
                compare(&[doc(1, vec![base.clone()])], &[doc(2, vec![getppid(104.0, 30, seed + 50)])], 0.02, 500);
            let ten = compare(&[doc(1, vec![base])], &[doc(2, vec![getppid(110.0, 30, seed + 90)])], 0.02, 500);
            small += usize::from(!failing(&four, gate).is_empty());
            real += usize::from(!failing(&ten, gate).is_empty());
        }
        assert!(small <= 1, "a 4% slowdown failed a 5% gate in {small} of 20");
        assert!(real >= 19, "a 10% slowdown passed a 5% gate in {} of 20", 20 - real);
    }

    /// Equivalence: `no change above X%` only where the whole interval lies within
    /// ±X% (both one-sided tests at once): said of most A/A pairs at a 5% threshold
    /// (30 rounds a side), and of no pair 10% apart.
    #[test]
    fn no_change_is_said_of_alike_runs_and_never_of_a_real_gap() {
        let said = |centre: f64| {
            (0..40)
                .filter(|seed| {
                    let a = doc(1, vec![getppid(100.0, 30, *seed)]);
                    let b = doc(2, vec![getppid(centre, 30, seed + 100)]);
                    let c = compare(&[a], &[b], 0.05, 500);
                    verdict_text(&c[0]) == "no change above 5.0%"
                })
                .count()
        };
        assert!(said(100.0) >= 30, "{} of 40 alike pairs", said(100.0));
        assert!(said(110.0) <= 2, "{} of 40 pairs 10% apart called no change", said(110.0));
    }

    /// compare at a glance: forty figures, one 25% slower, one alike within a tight
    /// interval, the rest noisy: a typical MDE, only the judged rows in the table, each
    /// on one line, the rest folded a line a reason; within 40 lines and the width at
    /// 100 and 80 columns; `-v` prints every row.
    #[test]
    fn a_comparison_at_a_glance_fits_one_screen() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for i in 0..40u64 {
            let id = format!("syscall.call_number_{i}");
            let (centre, rounds) = match i {
                0 => (125.0, 10),
                1 => (100.0, 60),
                _ => (100.0, 3),
            };
            a.push(row(&id, Method::Batch, "ns/call", 100.0, rounds, i));
            b.push(row(&id, Method::Batch, "ns/call", centre, rounds, i + 1000));
        }
        let (a, b) = ([doc(1, a)], [doc(2, b)]);
        let rows = compare(&a, &b, 0.03, 500);
        assert!(rows[0].verdict.is_change(), "{:?}", rows[0].verdict);
        let unchanged = rows.iter().filter(|c| c.verdict == Verdict::NoChange).count();
        for width in [100u16, 80] {
            let text = render(&a, &b, &rows, 0.03, (MachineView::Differences, Width::Fit(width)));
            assert!(super::super::fit::widest(&text) <= usize::from(width), "{text}");
            assert!(text.lines().count() <= 40, "{} lines:\n{text}", text.lines().count());
            assert!(text.contains("typical MDE"), "{text}");
            let body: Vec<&str> = text.lines().filter(|l| l.starts_with('│')).skip(1).collect();
            // The changes are the rows; the figures that did not move are a line.
            let changed = rows.iter().filter(|c| c.verdict.is_change()).count();
            let said = |what: &str| text.replace("\n  ", " ").contains(what);
            assert_eq!(unchanged > 0, said("no change above 3.0%: "), "{text}");
            assert!(!body.iter().any(|l| l.contains("no change")), "{text}");
            if width == 100 {
                assert_eq!(body.len(), changed, "a line a changed row at {width}:\n{text}");
                assert!(body.iter().any(|l| l.contains("call_number_0") && l.contains("slower")), "{text}");
            }
            // Narrower, a row may stack, its words whole.
            assert!(text.contains("syscall.call_number_0 ") && text.contains("slower"), "{text}");
            assert!(text.contains("uncertain") && text.contains("compare -v prints every figure"), "{text}");
        }
        let every = render(&a, &b, &rows, 0.03, (MachineView::Differences, Width::Full(100)));
        assert!(every.contains("number_39") && every.contains("verdict"), "{every}");
    }

    /// The header gives each family's typical MDE over its batch rows beside the
    /// comparison's, in the order the families appear, where there are two or more.
    #[test]
    fn the_header_gives_each_familys_typical_mde() {
        let side = |seed: u64| {
            vec![
                getppid(100.0, 10, seed),
                row("syscall.getuid", Method::Batch, "ns/call", 90.0, 10, seed + 1),
                row("spawn.fork_exit", Method::Batch, "ns/call", 150_000.0, 3, seed + 2),
            ]
        };
        let (a, b) = ([doc(1, side(1))], [doc(2, side(11))]);
        let rows = compare(&a, &b, 0.03, 200);
        let text = render(&a, &b, &rows, 0.03, (MachineView::Differences, Width::Fit(100))).replace("\n  ", " ");
        let mde = |bench: &str| rows.iter().find(|c| c.key.bench.as_str() == bench).unwrap().mde * 100.0;
        let syscall = crate::stats::median(&[mde("syscall.getppid"), mde("syscall.getuid")]);
        let want = format!("batch rows by family: syscall ±{syscall:.1}%, spawn ±{:.1}%", mde("spawn.fork_exit"));
        assert!(text.contains(&want), "{want}\n{text}");
        let (a1, b1) = ([doc(1, vec![getppid(100.0, 10, 1)])], [doc(2, vec![getppid(100.0, 10, 2)])]);
        let one = render(&a1, &b1, &compare(&a1, &b1, 0.03, 200), 0.03, (MachineView::Differences, Width::Fit(100)));
        assert!(!one.contains("by family"), "{one}");
    }

    /// A figure's shared-core twin, on both sides, is counted in one line and is never a
    /// row of the glance, whatever its verdict; `-v` prints it.
    #[test]
    fn shared_core_twins_are_counted_in_a_line() {
        let side = |seed: u64, gap: f64| {
            let mut twin = getppid(140.0 * gap, 3, seed + 1);
            twin.params.set(crate::key::SHARED_CORE, "shared");
            vec![getppid(100.0 * gap, 10, seed), twin]
        };
        let (a, b) = ([doc(1, side(1, 1.0))], [doc(2, side(3, 1.25))]);
        let rows = compare(&a, &b, 0.03, 200);
        assert_eq!(rows.len(), 2);
        let text = render(&a, &b, &rows, 0.03, (MachineView::Differences, Width::Fit(100)));
        let body: Vec<&str> = text.lines().filter(|l| l.starts_with('│')).skip(1).collect();
        assert!(body.iter().all(|l| !l.contains("shared")), "{text}");
        assert!(text.replace("\n  ", " ").contains("left out of their figures): 1"), "{text}");
        let every = render(&a, &b, &rows, 0.03, (MachineView::Differences, Width::Full(100)));
        assert!(every.contains("shared"), "{every}");
    }

    /// Heavy load: a side measured while other work kept the CPUs busy earns no
    /// change, neither on alike runs nor on a 25% gap (the run is named instead), and
    /// `--fail-on` passes; the same gap without the trap is called slower.
    #[test]
    fn no_change_is_called_for_a_run_measured_on_a_busy_machine() {
        let busy = |mut d: RunDocument| {
            d.machine.preflight.push(crate::preflight::Trap {
                code: crate::preflight::TrapCode::BusyCpu,
                reason: "CPU 1 was 97% busy".into(),
                advice: "stop the other work".into(),
            });
            d
        };
        let mut changes = 0;
        for seed in 0..40 {
            let a = [doc(1, vec![getppid(100.0, 10, seed)])];
            let b = [busy(doc(2, vec![getppid(100.0, 10, seed + 100)]))];
            changes += compare(&a, &b, 0.02, 500).iter().filter(|c| c.verdict.is_change()).count();
        }
        assert_eq!(changes, 0, "a change called on a busy machine's A/A pairs");
        let a = [doc(1, vec![getppid(100.0, 10, 1)])];
        let gap = [doc(2, vec![getppid(125.0, 10, 2)])];
        assert_eq!(compare(&a, &gap, 0.02, 500)[0].verdict, "slower");
        let gap = [busy(gap[0].clone())];
        let c = compare(&a, &gap, 0.02, 500);
        assert_eq!(c[0].verdict, Verdict::Uncertain(Doubt::BusyMachine));
        assert_eq!(c[0].verdict.to_string(), "uncertain (machine busy)");
        assert!(failing(&c, FailOn::Slower { by: None }).is_empty());
        let text = render(&a, &gap, &c, 0.02, (MachineView::Differences, Width::Fit(100)));
        assert!(text.contains("run #2 measured while other work kept the CPUs busy"), "{text}");
    }

    /// A hand-off that did not switch is no switch's cost: even a 25% gap earns no
    /// verdict when either side carries such a flag.
    #[test]
    fn a_figure_that_is_no_switch_cost_earns_no_verdict() {
        for code in [FlagCode::TooFewSwitches, FlagCode::Bimodal] {
            let mut b = getppid(125.0, 10, 2);
            b.flag(Flag::new(code, "synthetic"));
            let c = compare(&[doc(1, vec![getppid(100.0, 10, 1)])], &[doc(2, vec![b])], 0.02, 500);
            assert_eq!(c[0].verdict, "uncertain (not a switch's cost)", "{code}");
            assert!(failing(&c, FailOn::Change).is_empty());
        }
    }

    /// A row the tool itself doubts (third tasks intruded on its hand-offs, its
    /// rounds at two levels, its tasks preempted) earns no verdict on either side,
    /// even across a 25% gap, and `--fail-on` names it as withheld instead of failing;
    /// a flag that only says what the primitive does (a vDSO row) withholds nothing.
    #[test]
    fn a_row_a_flag_doubts_earns_no_verdict_on_either_side() {
        for code in [FlagCode::Intruded, FlagCode::Preempted, FlagCode::TraceDisagrees, FlagCode::CoarseClock] {
            for flagged_side in [0, 1] {
                let mut rows = [getppid(100.0, 10, 1), getppid(125.0, 10, 2)];
                rows[flagged_side].flag(Flag::new(code, "synthetic"));
                let [a, b] = rows;
                let c = compare(&[doc(1, vec![a])], &[doc(2, vec![b])], 0.02, 500);
                assert_eq!(c[0].verdict, Verdict::Uncertain(Doubt::Flagged(code.as_str())), "{code}");
                assert_eq!(c[0].verdict.to_string(), format!("uncertain ({code})"));
                assert!(failing(&c, FailOn::Change).is_empty() && failing(&c, FailOn::Slower { by: None }).is_empty());
                assert_eq!(withheld(&c).len(), 1);
            }
        }
        let mut b = getppid(125.0, 10, 2);
        b.flag(Flag::new(FlagCode::Vdso, "synthetic"));
        let c = compare(&[doc(1, vec![getppid(100.0, 10, 1)])], &[doc(2, vec![b])], 0.02, 500);
        assert_eq!(c[0].verdict, Verdict::Slower);
        assert!(withheld(&c).is_empty());
    }

    #[test]
    fn one_round_a_side_earns_no_verdict() {
        let c = compare(&[doc(1, vec![getppid(100.0, 1, 1)])], &[doc(2, vec![getppid(150.0, 1, 2)])], 0.02, 300);
        assert_eq!(c[0].verdict, "uncertain (one round)");
        assert!(c[0].ci_low.is_finite() && c[0].ci_high > c[0].ci_low);
    }

    #[test]
    fn sets_of_runs_pool_as_the_higher_level() {
        // Three runs a side; each run sits at its own level (runs vary by 5%), which
        // rounds within a run cannot see. The interval must follow the runs.
        let side = |centre: f64, seed: u64| -> Vec<RunDocument> {
            [0.95, 1.0, 1.05]
                .iter()
                .enumerate()
                .map(|(i, k)| doc(i as i64, vec![getppid(centre * k, 10, seed + i as u64)]))
                .collect()
        };
        let same = compare(&side(100.0, 10), &side(100.0, 20), 0.02, 500);
        assert_eq!(same[0].basis(), "3+3 runs");
        assert!(!matches!(same[0].verdict, Verdict::Faster | Verdict::Slower), "{:?}", same[0]);
        assert!(same[0].ci_high - same[0].ci_low > 0.05, "runs' spread shows: {:?}", same[0]);
        let shifted = compare(&side(100.0, 10), &side(160.0, 20), 0.02, 500);
        assert_eq!(shifted[0].verdict, "slower", "{:?}", shifted[0]);
    }

    #[test]
    fn verdict_needs_the_interval_to_clear_the_threshold() {
        assert_eq!(verdict(1.01, 1.05, 0.02, Direction::LowerIsBetter), "uncertain");
        assert_eq!(verdict(0.99, 1.01, 0.02, Direction::LowerIsBetter), "no change");
        assert_eq!(verdict(1.03, 1.05, 0.02, Direction::LowerIsBetter), "slower");
        assert_eq!(verdict(0.90, 0.95, 0.02, Direction::Neutral), "lower");
        // The threshold is symmetric in logs: a 150% threshold still leaves room below.
        assert_eq!(verdict(0.2, 0.35, 1.5, Direction::LowerIsBetter), "faster");
        assert_eq!(verdict(0.45, 2.4, 1.5, Direction::LowerIsBetter), "no change");
    }

    #[test]
    fn unmatched_rows_are_left_out_and_machines_are_diffed() {
        let a = getppid(100.0, 3, 1);
        let b = row("syscall.getuid", Method::Batch, "ns/call", 100.0, 3, 2);
        assert!(compare(&[doc(1, vec![a])], &[doc(2, vec![b])], 0.02, 100).is_empty());
        let m1 = crate::machine::Machine::example();
        let mut m2 = m1.clone();
        m2.kernel_release = "9.9.9".into();
        let d = machine_diff(&m1, &m2);
        let k = d.iter().find(|r| r.0 == "kernel").unwrap();
        assert_ne!(k.1, k.2);
    }

    #[test]
    fn a_comparison_names_the_key_fields_its_sides_differ_in() {
        let run = |id, kernel: &str| {
            let mut d = doc(id, vec![getppid(100.0, 3, id as u64)]);
            d.machine.kernel_release = kernel.into();
            d
        };
        let (a, b) = ([run(1, "6.1"), run(2, "6.1")], [run(3, "6.2")]);
        let k = key_differences(&a, &b);
        assert_eq!(k.between, ["kernel"]);
        assert!(k.within_a.is_empty() && k.within_b.is_empty());
        let text = render(&a, &b, &compare(&a, &b, 0.02, 100), 0.02, (MachineView::Differences, Width::Wide));
        assert!(text.contains("the sides differ in the comparability key (kernel)"), "{text}");
        // A side that pools two kernels says so; matching sides say nothing.
        let mixed = [run(1, "6.1"), run(2, "6.2")];
        assert_eq!(key_differences(&mixed, &b).within_a, ["kernel"]);
        assert_eq!(key_differences(&a, &a), KeyDifferences::default());
        let json: serde_json::Value = serde_json::from_str(&to_json(&a, &b, &[], 0.02)).unwrap();
        assert_eq!(json["comparability"]["between"][0], "kernel");
    }

    /// `text` with its line breaks and indents as single spaces, to read wrapped prose.
    fn words(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// A run of 24 figures, each `factor` times its own centre (10 rounds, 3% round
    /// noise), the seed drawing each row afresh.
    fn board(id: i64, factor: f64, seed: u64) -> RunDocument {
        let rows = (0..24)
            .map(|i| {
                let name = format!("syscall.call_number_{i}");
                row(&name, Method::Batch, "ns/call", factor * (100.0 + 10.0 * i as f64), 10, seed * 100 + i)
            })
            .collect();
        doc(id, rows)
    }

    /// Every figure 20% dearer between one run a side of one recorded machine: the
    /// board is named and no change called (the machine moving between runs gives the
    /// same), `--fail-on slower` passes; the same gap with a recorded difference (B
    /// under a seccomp filter) keeps its verdicts; alike runs name no board.
    #[test]
    fn every_figure_moving_as_one_is_named_and_called_only_with_a_recorded_cause() {
        let (a, b) = ([board(1, 1.0, 1)], [board(2, 1.2, 2)]);
        let rows = compare(&a, &b, 0.03, 200);
        let shift = board_shift(&rows).expect("every figure moved");
        assert!(shift.dearer() && shift.moved == 24 && (1.15..1.25).contains(&shift.median_ratio), "{shift:?}");
        assert!(rows.iter().all(|c| !c.verdict.is_change()), "{rows:?}");
        assert!(rows.iter().any(|c| c.verdict == Verdict::Uncertain(Doubt::BoardMoved)));
        assert!(failing(&rows, FailOn::Slower { by: None }).is_empty());
        // Noise runs of quiet moments widen the intervals but do not explain a move of
        // the whole board: still no change called.
        let noise: Vec<RunDocument> = (0..6)
            .map(|i| {
                let mut d = board(10 + i, 1.0, 10 + i as u64);
                d.run.kind = crate::model::RunKind::Noise;
                d
            })
            .collect();
        let model = crate::judge::noise::RunNoise::from_noise(&noise);
        let held = compare_with(&a, &b, 0.03, [&model, &model], 200);
        assert!(held.iter().all(|c| c.between_runs.is_some() && !c.verdict.is_change()), "{held:?}");
        for width in [100u16, 80] {
            let text = render(&a, &b, &rows, 0.03, (MachineView::Differences, Width::Fit(width)));
            let words = words(&text);
            assert!(words.contains("B dearer across the board: 24 of 24 figures"), "{text}");
            assert!(words.contains("so no change is called") && words.contains("uncertain (every figure moved)"));
            assert!(super::super::fit::widest(&text) <= usize::from(width), "{text}");
        }
        let json: serde_json::Value = serde_json::from_str(&to_json(&a, &b, &rows, 0.03)).unwrap();
        assert_eq!(json["board_shift"]["moved"], 24);
        // A smaller shift, whatever its rows' own verdicts: the same reason.
        let (a6, b6) = ([board(1, 1.0, 5)], [board(2, 1.06, 6)]);
        let rows6 = compare(&a6, &b6, 0.03, 200);
        assert!(board_shift(&rows6).is_some() && rows6.iter().all(|c| !c.verdict.is_change()));
        let text = render(&a6, &b6, &rows6, 0.03, (MachineView::Differences, Width::Fit(100)));
        assert!(words(&text).contains("cannot tell apart"), "{text}");

        let mut filtered = board(2, 1.2, 2);
        let mut controls = filtered.machine.process_controls.clone().unwrap_or_default();
        (controls.seccomp_mode, controls.seccomp_filters) = (Some(2), Some(1));
        filtered.machine.process_controls = Some(controls);
        let b = [filtered];
        let rows = compare(&a, &b, 0.03, 200);
        assert!(rows.iter().filter(|c| c.verdict == Verdict::Slower).count() >= 20, "{rows:?}");
        let text = render(&a, &b, &rows, 0.03, (MachineView::Differences, Width::Fit(100)));
        let words = words(&text);
        assert!(words.contains("process controls") && words.contains("a cause that touches every figure"), "{text}");

        let mut named = 0;
        for seed in 0..50 {
            let rows = compare(&[board(1, 1.0, 2 * seed + 10)], &[board(2, 1.0, 2 * seed + 11)], 0.03, 200);
            named += board_shift(&rows).is_some() as usize;
        }
        assert!(named <= 1, "{named} of 50 alike pairs named a board");
    }
}

#[cfg(test)]
mod noise_tests {
    use super::*;
    use crate::judge::noise::RunNoise;
    use crate::model::{Method, ResultRow, RunKind};
    use crate::stats::SplitMix64;
    use crate::stats::nested::{normal, synthetic};

    /// A row of `bench` from its rounds' samples.
    fn row_of_rounds(bench: &str, unit: &str, parts: &[Vec<f64>]) -> ResultRow {
        let all: Vec<f64> = parts.iter().flatten().copied().collect();
        let mut r = ResultRow::from_samples(bench, Method::Batch, unit, all, 500).unwrap();
        r.rounds = parts
            .iter()
            .map(|p| crate::model::Round { samples: p.len(), at: None, counts: Default::default() })
            .collect();
        r
    }

    /// Run `id` of `rows`, started a second per id apart.
    fn run_of(id: i64, rows: Vec<ResultRow>) -> RunDocument {
        let mut d = RunDocument::for_tests(id, crate::machine::Machine::example(), rows);
        d.run.started_at = format!("2026-11-24T00:00:{:02}Z", id % 60);
        d
    }

    /// `n` runs of kind `noise`, the i-th made by `make(i)`.
    fn noise_runs(n: i64, mut make: impl FnMut(i64) -> RunDocument) -> Vec<RunDocument> {
        (0..n)
            .map(|i| {
                let mut d = make(i);
                d.run.kind = RunKind::Noise;
                d
            })
            .collect()
    }

    /// One run: getppid drifting between runs by 0.5%, a same-CPU hand-off by 8%; each
    /// in 10 rounds with 3% round-to-round noise; `gap` scales the hand-off.
    fn run(id: i64, rng: &mut SplitMix64, gap: f64) -> RunDocument {
        let mut row = |bench: &str, unit: &str, centre: f64, drift: f64| {
            let centre = centre * (drift * normal(rng)).exp();
            row_of_rounds(bench, unit, &synthetic(rng, centre, 10, 50, 0.03, 0.01))
        };
        let rows =
            vec![row("syscall.getppid", "ns/call", 100.0, 0.005), row("ctx.pipe", "ns/hand-off", 1500.0 * gap, 0.08)];
        run_of(id, rows)
    }

    /// Noise runs of a figure a factor of four apart from run to run are no model of a
    /// machine's drift: the figure is refused, and a one-run comparison of it gives no
    /// verdict (widening by them would print an interval of thousands of percent),
    /// while a quiet figure of the same runs keeps its spread and its verdict.
    #[test]
    fn noise_runs_that_disagree_past_any_model_are_refused() {
        let mut rng = SplitMix64::new(7);
        let noise = noise_runs(4, |i| run(i, &mut rng, if i % 2 == 0 { 1.0 } else { 4.0 }));
        let model = RunNoise::from_noise(&noise);
        assert_eq!(model.len(), 1, "getppid keeps its spread");
        let one = std::slice::from_ref;
        let (a, b) = (run(100, &mut rng, 1.0), run(101, &mut rng, 1.6));
        let c = compare_with(one(&a), one(&b), DEFAULT_THRESHOLD, [&model, &model], 200);
        assert!(model.refuses(&a.results[1]) && !model.refuses(&a.results[0]));
        assert_eq!(c[1].verdict, Verdict::Uncertain(Doubt::MachineNoise));
        assert_eq!(c[1].verdict, "uncertain (machine noise too wide)");
        assert!(c[0].between_runs.is_some() && c[0].verdict != Verdict::Uncertain(Doubt::MachineNoise));
        // Without the absurd runs, the same pair's 60% gap is called.
        let quiet = RunNoise::from_noise(&noise[..1]);
        let c = compare_with(one(&a), one(&b), DEFAULT_THRESHOLD, [&quiet, &quiet], 200);
        assert_ne!(c[1].verdict, Verdict::Uncertain(Doubt::MachineNoise));
    }

    /// A/A noise runs give each figure its between-run spread, and a one-run side's
    /// interval then holds it: single-run comparisons of a drifting figure stay quiet
    /// where the bare interval fires on noise, and still call a real gap. Sides of
    /// several runs show that spread themselves and are not widened.
    #[test]
    fn one_run_sides_take_the_between_run_spread_and_stay_quiet_on_drift() {
        let mut rng = SplitMix64::new(0x5eed);
        let noise = noise_runs(8, |i| run(i, &mut rng, 1.0));
        let model = RunNoise::from_noise(&noise);
        assert_eq!(model.len(), 2);
        let called = |c: &Comparison| matches!(c.verdict, Verdict::Faster | Verdict::Slower);
        let one = std::slice::from_ref;
        let t = DEFAULT_THRESHOLD;
        let (mut loud_bare, mut loud_drift, mut loud_quiet, mut gap) = (0, 0, 0, 0);
        let trials = 200;
        for i in 0..trials {
            let (a, b) = (run(100 + i, &mut rng, 1.0), run(1000 + i, &mut rng, 1.0));
            let bare = compare_with(one(&a), one(&b), t, [&RunNoise::none(), &RunNoise::none()], 200);
            let held = compare_with(one(&a), one(&b), t, [&model, &model], 200);
            loud_bare += called(&bare[1]) as usize;
            loud_drift += called(&held[1]) as usize;
            loud_quiet += called(&held[0]) as usize;
            let slower = run(5000 + i, &mut rng, 1.6);
            gap += (compare_with(one(&a), one(&slower), t, [&model, &model], 200)[1].verdict == "slower") as usize;
        }
        assert!(loud_bare > trials as usize / 4, "a bare one-run interval fires on drift: {loud_bare} of {trials}");
        assert!(loud_drift <= trials as usize / 20, "with the spread it stays quiet: {loud_drift} of {trials}");
        assert!(loud_quiet <= trials as usize / 20, "{loud_quiet} of {trials}");
        assert!(gap >= trials as usize * 8 / 10, "a 60% gap is called: {gap} of {trials}");
        // The comparison says which intervals took a spread, and widening never narrows.
        let (bare, held) = (
            compare_with(one(&noise[0]), one(&noise[1]), t, [&RunNoise::none(), &RunNoise::none()], 200),
            compare_with(one(&noise[0]), one(&noise[1]), t, [&model, &model], 200),
        );
        assert!(bare.iter().all(|c| c.between_runs.is_none()));
        // Only A's machine has noise runs: the ratio carries A's spread alone, √2 less.
        let half = compare_with(one(&noise[0]), one(&noise[1]), t, [&model, &RunNoise::none()], 200);
        for (x, y) in half.iter().zip(&held) {
            let (x, y) = (x.between_runs.unwrap(), y.between_runs.unwrap());
            assert!((y - x * 2f64.sqrt()).abs() < 1e-12, "{x} {y}");
        }
        assert!(held.iter().all(|c| c.between_runs.is_some()) && held[1].between_runs > held[0].between_runs);
        // Held rows stand on the ranks of their rounds with the spread between runs
        // around them, each side at least t₀.₉₇₅,₇·σ_b·√2; bare rows, with no spread to
        // hold the machine's moment, on their rounds' means.
        for (x, y) in bare.iter().zip(&held) {
            assert_eq!((x.estimator, y.estimator), (Estimator::UnitGeomean, Estimator::UnitShift));
            let least = crate::stats::nested::t975(7) * y.between_runs.unwrap();
            let (down, up) = ((y.ratio / y.ci_low).ln(), (y.ci_high / y.ratio).ln());
            assert!(down >= least - 1e-12 && up >= least - 1e-12, "{x:?} {y:?}");
        }
        // Sides of four runs: their runs show the spread, the model adds nothing, and
        // they stay quiet on drift yet call the gap.
        let (mut loud_sets, mut gap_sets) = (0, 0);
        for i in 0..50 {
            let side = |rng: &mut SplitMix64, base: i64, gap: f64| -> Vec<RunDocument> {
                (0..4).map(|k| run(base + k, rng, gap)).collect()
            };
            let (a, b, c) = (
                side(&mut rng, 20_000 + 8 * i, 1.0),
                side(&mut rng, 30_000 + 8 * i, 1.0),
                side(&mut rng, 40_000 + 8 * i, 1.6),
            );
            let aa = compare_with(&a, &b, t, [&model, &model], 200);
            assert!(aa.iter().all(|c| c.between_runs.is_none()));
            assert_eq!(aa, compare(&a, &b, t, 200), "the model leaves sets of runs alone");
            loud_sets += aa.iter().filter(|c| called(c)).count();
            gap_sets += (compare_with(&a, &c, t, [&model, &model], 200)[1].verdict == "slower") as usize;
        }
        assert!(loud_sets <= 5, "sets of runs stay quiet: {loud_sets} of 100");
        assert!(gap_sets >= 40, "and call a 60% gap: {gap_sets} of 50");
    }

    /// One run of getppid as this project's VM gives it: 10 rounds with 1% round
    /// noise, each with one chance in ten of landing 38% dearer, and 0.5% drift
    /// between runs; `gap` scales it.
    fn far_run(id: i64, rng: &mut SplitMix64, gap: f64) -> RunDocument {
        let centre = 100.0 * gap * (0.005 * normal(rng)).exp();
        let mut parts = synthetic(rng, centre, 10, 50, 0.01, 0.01);
        for p in &mut parts {
            if rng.below(10) == 0 {
                p.iter_mut().for_each(|x| *x *= 1.38);
            }
        }
        run_of(id, vec![row_of_rounds("syscall.getppid", "ns/call", &parts)])
    }

    /// Where the spread between runs is held, a comparison stands on the ranks of its
    /// rounds, and a far round weighs as one rank: a 10% slowdown is called where the
    /// rounds' means, dragged by the far rounds, mostly cannot call it; identical runs
    /// stay quiet either way.
    #[test]
    fn far_rounds_weigh_as_one_rank_where_the_spread_between_runs_is_held() {
        let mut rng = SplitMix64::new(0xFA5);
        let noise = noise_runs(8, |i| far_run(i, &mut rng, 1.0));
        let model = RunNoise::from_noise(&noise);
        let bare = RunNoise::none();
        let one = std::slice::from_ref;
        let t = DEFAULT_THRESHOLD;
        let called = |c: &Comparison| matches!(c.verdict, Verdict::Faster | Verdict::Slower);
        let (mut quiet_ranks, mut quiet_means, mut ranks, mut means) = (0, 0, 0, 0);
        let trials = 200;
        for i in 0..trials {
            let a = far_run(100 + i, &mut rng, 1.0);
            let (same, slower) = (far_run(1000 + i, &mut rng, 1.0), far_run(5000 + i, &mut rng, 1.1));
            let held = compare_with(one(&a), one(&same), t, [&model, &model], 200);
            assert_eq!(held[0].estimator, Estimator::UnitShift);
            quiet_ranks += called(&held[0]) as usize;
            quiet_means += called(&compare_with(one(&a), one(&same), t, [&bare, &bare], 200)[0]) as usize;
            let held = compare_with(one(&a), one(&slower), t, [&model, &model], 200);
            ranks += (held[0].verdict == Verdict::Slower) as usize;
            let loose = compare_with(one(&a), one(&slower), t, [&bare, &bare], 200);
            assert_eq!(loose[0].estimator, Estimator::UnitGeomean);
            means += (loose[0].verdict == Verdict::Slower) as usize;
        }
        let trials = trials as usize;
        assert!(quiet_ranks <= trials / 20 && quiet_means <= trials / 20, "A/A: {quiet_ranks}, {quiet_means}");
        assert!(ranks >= trials * 7 / 10, "ranks call a 10% slowdown {ranks} of {trials}");
        assert!(means <= trials / 2, "means {means} of {trials}");
    }

    /// `far_run` with every round read by the shared-core probe (and found unshared).
    fn probed_far_run(id: i64, rng: &mut SplitMix64, gap: f64) -> RunDocument {
        let mut d = far_run(id, rng, gap);
        for r in &mut d.results {
            for round in &mut r.rounds {
                round.counts.insert(crate::model::Count::SharedCoreShare, 0.0);
            }
        }
        d
    }

    /// One run a side, no noise runs: rows whose every round the shared-core probe read
    /// stand on the ranks of their rounds, and call a 10% slowdown past far rounds while
    /// identical runs stay quiet; rows of which a round went unprobed keep the means.
    #[test]
    fn probed_rounds_stand_on_their_ranks_without_noise_runs() {
        let mut rng = SplitMix64::new(0x5C0);
        let one = std::slice::from_ref;
        let t = DEFAULT_THRESHOLD;
        let (mut quiet, mut called) = (0, 0);
        let trials = 200;
        for i in 0..trials {
            let a = probed_far_run(100 + i, &mut rng, 1.0);
            let (same, slower) = (probed_far_run(1000 + i, &mut rng, 1.0), probed_far_run(5000 + i, &mut rng, 1.1));
            let aa = compare(one(&a), one(&same), t, 200);
            assert_eq!(aa[0].estimator, Estimator::UnitShift);
            quiet += matches!(aa[0].verdict, Verdict::Faster | Verdict::Slower) as usize;
            called += (compare(one(&a), one(&slower), t, 200)[0].verdict == Verdict::Slower) as usize;
        }
        let trials = trials as usize;
        assert!(quiet <= trials / 20, "A/A called {quiet} of {trials}");
        assert!(called >= trials * 7 / 10, "a 10% slowdown called {called} of {trials}");
        let a = probed_far_run(1, &mut rng, 1.0);
        let mut b = probed_far_run(2, &mut rng, 1.0);
        b.results[0].rounds[3].counts.clear();
        assert_eq!(compare(one(&a), one(&b), t, 200)[0].estimator, Estimator::UnitGeomean);
    }
}
