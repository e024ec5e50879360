//! Rounds: one benchmark's rows from each of its rounds merged into the rows a run
//! reports, with intervals and verdict-like flags judged at the level that varies.
//!
//! A round is one fresh worker process measuring the benchmark at one moment of the
//! run (`session` spreads the rounds over the whole run, interleaved with the other
//! benchmarks). Merging keeps every sample and records which round gave it
//! ([`ResultRow::rounds`]), so the interval (the hierarchical bootstrap of
//! `stats::nested`) and `compare` can resample rounds first.
//!
//! - The figure is the median of all samples; the interval resamples rounds, then the
//!   samples within each, widened for few rounds and for the counter's step.
//! - Totals (switches, migrations, instructions, operations counted, children
//!   reaped) are added up over the rounds and the per-operation ratios recomputed;
//!   other counts (settings, ratios, fits) keep the median over the rounds.
//! - A flag a family raised from one round's window stands only if it was raised in
//!   most rounds: one disturbed round is noise, not a property of the figure. Its
//!   reason keeps the first raising round's figures and says so.
//! - `below_floor` and `methods_disagree` compare two figures round by round (the
//!   pair measured at the same moment) and fire only where the gap is larger than the
//!   rounds' spread explains (Student's t over the rounds' paired differences).

use std::collections::BTreeMap;

use oscost_figure::key::SHARED_CORE;
use oscost_figure::model::{Count, Flag, FlagCode, Method, ResultRow, Round};
use oscost_figure::stats::nested::{Nested, t_interval};

/// Resamples behind a row's interval.
pub const RESAMPLES: usize = 500;

/// How far the per-call mean may sit from the batch median, as a share of the batch
/// figure, before the methods are said to disagree (plus the per-call counter's
/// step): a bracket serialises each call, a batch lets calls overlap, and that
/// costs a few percent on the cheapest calls.
pub const METHODS_TOLERANCE: f64 = 0.05;

/// A seed for a row's bootstrap, from what names the row: the same row always gets
/// the same interval.
pub fn seed_of(r: &ResultRow) -> u64 {
    let key = format!("{}|{}|{}", r.benchmark, r.method.as_str(), r.variant_label());
    key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The rows of a benchmark's rounds (one list per round, in the order they ran),
/// merged: one row per benchmark, method and variant, in first-seen order, then
/// judged over the rounds.
pub fn merge(rounds: &[Vec<ResultRow>]) -> Vec<ResultRow> {
    let mut order: Vec<Key> = Vec::new();
    let mut groups: BTreeMap<Key, Vec<&ResultRow>> = BTreeMap::new();
    let mut numbers: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for (at, round) in rounds.iter().enumerate() {
        for r in round {
            let key = figure_key(r);
            if !groups.contains_key(&key) {
                order.push(key.clone());
            }
            groups.entry(key.clone()).or_default().push(r);
            numbers.entry(key).or_default().push(at);
        }
    }
    let mut merged: Vec<ResultRow> = Vec::with_capacity(order.len());
    for k in &order {
        let (parts, ats) = (&groups[k], &numbers[k]);
        match split_shared_core(parts) {
            CoreSplit::Unshared => merged.push(merge_at(parts, ats)),
            CoreSplit::LeftOut { clear, shared } => {
                let pick = |which: &[usize]| -> (Vec<&ResultRow>, Vec<usize>) {
                    which.iter().map(|&i| (parts[i], ats[i])).unzip()
                };
                let (clear_parts, clear_ats) = pick(&clear);
                let (shared_parts, shared_ats) = pick(&shared);
                let mut row = merge_at(&clear_parts, &clear_ats);
                row.counts.insert(Count::SharedCoreRounds, shared.len() as f64);
                let mut twin = merge_at(&shared_parts, &shared_ats);
                twin.params.set(SHARED_CORE, "shared");
                twin.flag(shared_core_twin_flag(&row, &twin, parts.len()));
                merged.push(row);
                merged.push(twin);
            }
            CoreSplit::Kept { shared } => {
                let mut row = merge_at(parts, ats);
                row.flag(Flag::new(
                    FlagCode::SharedCore,
                    format!(
                        "in {shared} of {} rounds the probe found the host sharing this CPU's core ({}); too few rounds had the core to themselves to leave those out, so the figure holds the sibling's cost",
                        parts.len(),
                        probe_words(&row)
                    ),
                ));
                merged.push(row);
            }
        }
    }
    judge(&mut merged);
    merged
}

/// The fewest rounds with the core to themselves a figure needs before the rounds of a
/// shared core are left out of it: below it, its interval would rest on too few units.
pub const MIN_UNSHARED_ROUNDS: usize = 3;

/// How a figure's rounds divide by the shared-core probe (`shared_core`).
#[derive(Debug, PartialEq)]
enum CoreSplit {
    /// No round found the core shared, or no round was probed.
    Unshared,
    /// The rounds (indices) with the core to themselves make the figure; those that
    /// found it shared make its `core=shared` twin.
    LeftOut { clear: Vec<usize>, shared: Vec<usize> },
    /// Too few rounds had the core to themselves: every round stays in, flagged.
    Kept { shared: usize },
}

/// A round is shared when any of its probe readings found the core shared: its
/// samples may hold the sibling's cost.
fn split_shared_core(parts: &[&ResultRow]) -> CoreSplit {
    let share = |r: &ResultRow| r.counts.get(&Count::SharedCoreShare).copied();
    if parts.iter().all(|r| share(r).is_none_or(|s| s <= 0.0)) {
        return CoreSplit::Unshared;
    }
    let (shared, clear): (Vec<usize>, Vec<usize>) =
        (0..parts.len()).partition(|&i| share(parts[i]).is_some_and(|s| s > 0.0));
    if clear.len() < MIN_UNSHARED_ROUNDS {
        return CoreSplit::Kept { shared: shared.len() };
    }
    CoreSplit::LeftOut { clear, shared }
}

/// `shared_core` on a figure's twin: how many rounds, what the probe read, and how far
/// the twin sits from the figure.
fn shared_core_twin_flag(row: &ResultRow, twin: &ResultRow, rounds: usize) -> Flag {
    Flag::new(
        FlagCode::SharedCore,
        format!(
            "the {} of {rounds} rounds in which the probe found the host sharing this CPU's core ({}), left out of the figure; they read x{:.2} its median",
            twin.rounds.len().max(1),
            probe_words(twin),
            twin.median / row.median
        ),
    )
}

/// What the probe read on a row's rounds, in words for a flag's reason.
fn probe_words(r: &ResultRow) -> String {
    let ratio = r.counts.get(&Count::SharedCoreRatio).copied().unwrap_or(f64::NAN);
    format!("an L1-sized walk {ratio:.1}x a small one's time, against about 1 with the core to itself")
}

/// One row from its rounds, each round told when it ran (its index among the run's
/// rounds).
fn merge_at(parts: &[&ResultRow], ats: &[usize]) -> ResultRow {
    let mut row = merge_row(parts);
    if row.rounds.len() == ats.len() {
        for (round, at) in row.rounds.iter_mut().zip(ats) {
            round.at = Some(*at);
        }
    }
    row
}

/// What makes rows of different rounds one figure.
type Key = (oscost_figure::model::BenchId, Method, oscost_figure::unit::Unit, String);

fn figure_key(r: &ResultRow) -> Key {
    (r.benchmark.clone(), r.method, r.unit.clone(), r.variant_label())
}

/// Each figure of the rounds with its rounds' log medians, straight from the rounds,
/// in the order [`merge`] gives its rows: the figure's first row, and what
/// [`round_log_medians`] of the merged row gives (the rounds of a shared core left
/// out as [`merge`] leaves them out), at the cost of one median a round, without
/// merging (whose bootstrap grows with every round).
pub fn log_medians_by_figure(rounds: &[Vec<ResultRow>]) -> Vec<(&ResultRow, Vec<f64>)> {
    let mut order: Vec<Key> = Vec::new();
    let mut figures: BTreeMap<Key, Vec<&ResultRow>> = BTreeMap::new();
    for r in rounds.iter().flatten() {
        let key = figure_key(r);
        if !figures.contains_key(&key) {
            order.push(key.clone());
        }
        figures.entry(key).or_default().push(r);
    }
    order
        .iter()
        .filter_map(|k| figures.remove(k))
        .map(|parts| {
            let kept: Vec<&ResultRow> = match split_shared_core(&parts) {
                CoreSplit::LeftOut { clear, .. } => clear.iter().map(|&i| parts[i]).collect(),
                CoreSplit::Unshared | CoreSplit::Kept { .. } => parts.clone(),
            };
            let logs = kept
                .iter()
                .filter(|r| !r.samples.is_empty())
                .map(|r| oscost_figure::stats::median(&r.samples))
                .filter(|m| *m > 0.0)
                .map(f64::ln)
                .collect();
            (parts[0], logs)
        })
        .collect()
}

/// One row from its rounds.
fn merge_row(parts: &[&ResultRow]) -> ResultRow {
    let first = parts[0];
    let samples: Vec<f64> = parts.iter().flat_map(|r| r.samples.iter().copied()).collect();
    let iterations = parts.iter().map(|r| r.iterations).sum();
    let mut row = match ResultRow::from_samples(&first.benchmark, first.method, &first.unit, samples, iterations) {
        Some(r) => r,
        // No samples (a fit): the median of the rounds' figures.
        None => return merge_scalar(parts),
    };
    row.params = first.params.clone();
    row.rounds = parts.iter().map(|r| Round { samples: r.samples.len(), at: None, counts: r.counts.clone() }).collect();
    let outliers: BTreeMap<Count, f64> = std::mem::take(&mut row.counts);
    row.counts = merge_counts(parts);
    row.counts.extend(outliers);
    if let (Some(s), true) =
        (row.counts.get(&Count::SwitchesPerOp).copied(), first.counts.contains_key(&Count::NsPerObservedSwitch))
    {
        row.counts.insert(Count::NsPerObservedSwitch, row.median / s);
    }
    let slices = row.round_slices();
    if let Some(n) = Nested::from_rounds(&slices) {
        (row.ci_low, row.ci_high) = n.interval(RESAMPLES, seed_of(&row));
    }
    row.flags = majority_flags(parts);
    add_trace(&mut row, parts);
    row
}

/// The trace pass (run in one round) and the flags it raises, judged once on the
/// merged row.
fn add_trace(row: &mut ResultRow, parts: &[&ResultRow]) {
    row.trace = parts.iter().find_map(|r| r.trace.clone());
    if let Some(t) = &row.trace {
        for f in crate::trace::handoff::flags(t) {
            row.flag(f);
        }
    }
}

/// A row without samples: the median of the rounds' figures, with a Student-t
/// interval over them when there are several.
fn merge_scalar(parts: &[&ResultRow]) -> ResultRow {
    let mut row = parts[0].clone();
    if parts.len() == 1 {
        add_trace(&mut row, parts);
        return row;
    }
    let medians: Vec<f64> = parts.iter().map(|r| r.median).collect();
    row.median = oscost_figure::stats::median(&medians);
    row.mean = medians.iter().sum::<f64>() / medians.len() as f64;
    if let Some((_, lo, hi)) = t_interval(&medians) {
        (row.ci_low, row.ci_high) = (lo, hi);
    }
    row.rounds = parts.iter().map(|r| Round { samples: 0, at: None, counts: r.counts.clone() }).collect();
    row.counts = merge_counts(parts);
    row.flags = majority_flags(parts);
    add_trace(&mut row, parts);
    row
}

/// Totals added up, per-operation ratios recomputed from them, the rest the median.
fn merge_counts(parts: &[&ResultRow]) -> BTreeMap<Count, f64> {
    let mut values: BTreeMap<Count, Vec<f64>> = BTreeMap::new();
    for r in parts {
        for (k, v) in &r.counts {
            if !matches!(k, Count::OutliersLow | Count::OutliersHigh) {
                values.entry(*k).or_default().push(*v);
            }
        }
    }
    let mut out: BTreeMap<Count, f64> = values
        .iter()
        .map(|(k, v)| (*k, if k.is_total() { v.iter().sum() } else { oscost_figure::stats::median(v) }))
        .collect();
    if let Some(&ops) = out.get(&Count::CountedOps).filter(|o| **o > 0.0) {
        for k in Count::ALL {
            if let (Some(per), Some(&total)) = (k.per_op(), out.get(&k))
                && out.contains_key(&per)
            {
                out.insert(per, total / ops);
            }
        }
    }
    out
}

/// The flags raised in more than half of the rounds, each saying in how many.
fn majority_flags(parts: &[&ResultRow]) -> Vec<Flag> {
    let mut seen: Vec<(Flag, usize)> = Vec::new();
    for r in parts {
        for f in &r.flags {
            match seen.iter_mut().find(|(g, _)| g.flag == f.flag) {
                Some((_, n)) => *n += 1,
                None => seen.push((f.clone(), 1)),
            }
        }
    }
    let total = parts.len();
    seen.into_iter()
        .filter(|(_, n)| 2 * n > total)
        .map(|(mut f, n)| {
            // The reason's figures are one round's: say so, and how many rounds agree.
            if total > 1 {
                f.reason.push_str(&format!(" (raised in {n} of {total} rounds; figures of the first)"));
            }
            f
        })
        .collect()
}

/// A row's precision: its 95% interval's larger half-width relative to its median
/// (None without an interval, or for a median that is not positive).
pub fn precision_of(r: &ResultRow) -> Option<f64> {
    let (lo, hi) = r.interval()?;
    (r.median > 0.0).then(|| (r.median - lo).max(hi - r.median) / r.median)
}

/// The rows whose interval is wider than `target` (relative half-width), or that have
/// none: a row without an interval has not shown any precision.
pub fn short_of(rows: &[ResultRow], target: f64) -> Vec<&ResultRow> {
    rows.iter().filter(|r| precision_of(r).is_none_or(|p| p > target)).collect()
}

/// Why a row fell short of a precision, in words: a bimodal row, a machine that
/// drifted, or only that the rounds or the time ran out.
pub fn why_short(r: &ResultRow, target: f64) -> &'static str {
    if r.flags.iter().any(|f| f.flag == oscost_figure::model::FlagCode::Bimodal) {
        return "bimodal";
    }
    if drifted(&round_medians(r), target) {
        return "drifting";
    }
    if precision_of(r).is_none() { "no interval" } else { "rounds or time spent" }
}

/// Fewest rounds in each half before a drift is judged.
const DRIFT_HALF_ROUNDS: usize = 5;

/// Whether the later half of the rounds' medians moved from the earlier half by more
/// than `target` and by more than the rounds' own spread allows (3.5 standard errors
/// of the difference of the halves' mean log medians): noise alone does not drift.
fn drifted(medians: &[f64], target: f64) -> bool {
    let logs: Vec<f64> = medians.iter().filter(|m| **m > 0.0).map(|m| m.ln()).collect();
    let half = logs.len() / 2;
    if half < DRIFT_HALF_ROUNDS {
        return false;
    }
    let (Some(a), Some(b)) =
        (oscost_figure::stats::summarize(&logs[..half]), oscost_figure::stats::summarize(&logs[half..]))
    else {
        return false;
    };
    let diff = (b.mean - a.mean).abs();
    let se = (a.stddev.powi(2) / a.n as f64 + b.stddev.powi(2) / b.n as f64).sqrt();
    diff > (1.0 + target).ln() && diff > 3.5 * se
}

/// Each round's median.
fn round_medians(r: &ResultRow) -> Vec<f64> {
    r.round_slices().iter().map(|s| oscost_figure::stats::median(s)).collect()
}

/// The log of each round's median, in the order the rounds ran (rounds without
/// samples, or with a median that is not positive, left out).
pub fn round_log_medians(r: &ResultRow) -> Vec<f64> {
    r.round_slices()
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| oscost_figure::stats::median(s))
        .filter(|m| *m > 0.0)
        .map(f64::ln)
        .collect()
}

/// The `modes` flag of a row whose rounds sit at two levels, naming each level with
/// its share of the rounds and the level the median belongs to.
fn modes_flag(r: &ResultRow) -> Option<Flag> {
    let m = oscost_figure::stats::modes::modes(&round_log_medians(r))?;
    let n = m.lower_rounds + m.upper_rounds;
    let within = if (r.median - m.lower).abs() <= (r.median - m.upper).abs() { "lower" } else { "upper" };
    Some(Flag::new(
        FlagCode::Modes,
        format!(
            "the rounds sit at two levels, {} in {} of {n} and {} in {} of {n} (fresh workers landed in different modes); the median belongs to the {within}",
            r.unit.format(m.lower),
            m.lower_rounds,
            r.unit.format(m.upper),
            m.upper_rounds
        ),
    ))
}

/// Each round's mean.
fn round_means(r: &ResultRow) -> Vec<f64> {
    r.round_slices().iter().map(|s| s.iter().sum::<f64>() / s.len().max(1) as f64).collect()
}

/// The round-level judgements, on merged rows.
fn judge(rows: &mut [ResultRow]) {
    for r in rows.iter_mut() {
        let floors: Vec<f64> = r.rounds.iter().filter_map(|x| x.counts.get(&Count::FloorNs).copied()).collect();
        if r.method == Method::Batch && floors.len() == r.rounds.len() && !floors.is_empty() {
            let medians = round_medians(r);
            if let Some(f) = below_floor(&medians, &floors) {
                r.flag(f.clone());
            }
        }
        // A hand-off row (it carries the cost per observed switch) with each round's
        // switches per hand-off.
        let switches: Vec<f64> = r.rounds.iter().filter_map(|x| x.counts.get(&Count::SwitchesPerOp).copied()).collect();
        if r.counts.contains_key(&Count::NsPerObservedSwitch)
            && switches.len() == r.rounds.len()
            && let Some(f) = bimodal_switches(&switches)
        {
            r.flag(f);
        }
        // Per-call rows are left out: their round medians are whole steps of the
        // bracket's clock, levels by construction; the batch row of the same call
        // shows a worker's mode as well.
        if r.method != Method::PerCall
            && let Some(f) = modes_flag(r)
        {
            r.flag(f);
        }
    }
    // Each batch round's mean under its round number, so a per-call round is set
    // beside the batch round it was timed with.
    type Numbered = Vec<(usize, f64)>;
    let numbered = |r: &ResultRow| -> Numbered { r.round_numbers().into_iter().zip(round_means(r)).collect() };
    let batches: Vec<(oscost_figure::model::BenchId, String, Numbered)> = rows
        .iter()
        .filter(|r| r.method == Method::Batch)
        .map(|r| (r.benchmark.clone(), r.variant_label(), numbered(r)))
        .collect();
    // What the rounds say of the call or the hand-off itself holds for both its rows.
    let shared_flags: Vec<(oscost_figure::model::BenchId, String, Flag)> = rows
        .iter()
        .filter(|r| r.method == Method::Batch)
        .flat_map(|r| {
            r.flags
                .iter()
                .filter(|f| matches!(f.flag, FlagCode::BelowFloor | FlagCode::Bimodal))
                .map(|f| (r.benchmark.clone(), r.variant_label(), f.clone()))
        })
        .collect();
    for p in rows.iter_mut().filter(|r| r.method == Method::PerCall) {
        let key = (p.benchmark.clone(), p.variant_label());
        if let Some((_, _, batch)) = batches.iter().find(|(b, v, _)| (b, v) == (&key.0, &key.1)) {
            let step = Nested::from_rounds(&p.round_slices()).map_or(0.0, |n| n.step);
            let (batch_means, call_means): (Vec<f64>, Vec<f64>) = numbered(p)
                .into_iter()
                .filter_map(|(at, c)| batch.iter().find(|(b_at, _)| *b_at == at).map(|(_, b)| (*b, c)))
                .unzip();
            if let Some(f) = methods_disagree(&batch_means, &call_means, step) {
                p.flag(f);
            }
        }
        // A call below the floor, or a hand-off whose rounds disagree, is so in both rows.
        for (_, _, f) in shared_flags.iter().filter(|(b, v, _)| (b, v) == (&key.0, &key.1)) {
            p.flag(f.clone());
        }
    }
}

/// The fewest switches per hand-off a sound hand-off row across CPUs shows (0.998 is
/// usual here): below it, most hand-offs found their peer running and never slept.
pub const FEWEST_SWITCHES_PER_HANDOFF: f64 = 0.9;

/// `bimodal` for a hand-off row, from each round's switches per hand-off: some rounds
/// switched on (nearly) every hand-off (0.95 or more) and others on materially fewer
/// (below 0.9): the rounds measured two different things, and their merged figure is
/// neither. Rounds all low are `too_few_switches` (raised by the family); rounds
/// spread within one regime are not bimodal.
pub fn bimodal_switches(per_round: &[f64]) -> Option<Flag> {
    let lowest = per_round.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = per_round.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let low = per_round.iter().filter(|s| **s < FEWEST_SWITCHES_PER_HANDOFF).count();
    (low > 0 && highest >= 0.95).then(|| {
        Flag::new(
            FlagCode::Bimodal,
            format!(
                "switches per hand-off ranged from {lowest:.2} to {highest:.2} over the rounds ({low} of {} below {}): some rounds switched on every hand-off, others mostly found the peer running, so the figure mixes two measurements",
                per_round.len(),
                FEWEST_SWITCHES_PER_HANDOFF
            ),
        )
    })
}

/// `below_floor` for a real system call, from each round's median of the call and of
/// the enosys floor measured just before it in the same worker. Fires only when the
/// call is below the floor by more than the rounds' spread explains: the upper end of
/// the 95% t-interval of the mean log ratio lies below zero. Needs two rounds or more.
pub fn below_floor(call_rounds: &[f64], floor_rounds: &[f64]) -> Option<Flag> {
    let logs: Vec<f64> = call_rounds
        .iter()
        .zip(floor_rounds)
        .filter(|(c, f)| **c > 0.0 && **f > 0.0)
        .map(|(c, f)| (c / f).ln())
        .collect();
    let (mean, _, hi) = t_interval(&logs)?;
    (hi < 0.0).then(|| {
        Flag::new(
            FlagCode::BelowFloor,
            format!(
                "{:.1}% below the enosys floor measured beside it, over {} rounds (95% interval up to {:.1}% below): a real system call cannot cost less than an empty kernel entry",
                (1.0 - mean.exp()) * 100.0,
                logs.len(),
                (1.0 - hi.exp()) * 100.0
            ),
        )
    })
}

/// `methods_disagree`, from each round's mean of batch means and mean of single calls:
/// both are means over every call timed (a median of batch means would leave out the
/// tail that small batches, as of fork, average in only now and then).
/// Fires when the rounds' 95% t-interval of the relative gap lies wholly beyond
/// [`METHODS_TOLERANCE`] plus the per-call counter's step. Needs two rounds or more.
pub fn methods_disagree(batch_rounds: &[f64], per_call_rounds: &[f64], step_ns: f64) -> Option<Flag> {
    let pairs: Vec<(f64, f64)> =
        batch_rounds.iter().zip(per_call_rounds).filter(|(b, _)| **b > 0.0).map(|(b, p)| (*b, *p)).collect();
    let gaps: Vec<f64> = pairs.iter().map(|(b, p)| p / b - 1.0).collect();
    let (mean, lo, hi) = t_interval(&gaps)?;
    let batch = oscost_figure::stats::median(&pairs.iter().map(|x| x.0).collect::<Vec<_>>());
    let allowed = METHODS_TOLERANCE + step_ns / batch;
    (lo > allowed || hi < -allowed).then(|| {
        Flag::new(
            FlagCode::MethodsDisagree,
            format!(
                "per-call and batch means differ by {:+.1}% over {} rounds (95% interval {:+.1}% to {:+.1}%), beyond the ±{:.1}% a bracket explains",
                mean * 100.0,
                gaps.len(),
                lo * 100.0,
                hi * 100.0,
                allowed * 100.0
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_stays_quiet_on_noise_and_fires_on_a_step() {
        let mut rng = oscost_figure::stats::SplitMix64::new(23);
        let trials = 1000;
        let rounds = |rng: &mut oscost_figure::stats::SplitMix64, step: f64| -> Vec<f64> {
            (0..20)
                .map(|i| {
                    100.0 * (0.05 * oscost_figure::stats::nested::normal(rng)).exp() * if i >= 10 { step } else { 1.0 }
                })
                .collect()
        };
        // 5% round-to-round noise against a 2% target: the halves differ by more
        // than the target often, but not by more than their spread allows.
        let noisy = (0..trials).filter(|_| drifted(&rounds(&mut rng, 1.0), 0.02)).count();
        assert!(noisy <= trials / 20, "{noisy} of {trials} noise-only rows called drifting");
        let stepped = (0..trials).filter(|_| drifted(&rounds(&mut rng, 1.15), 0.02)).count();
        assert!(stepped >= trials * 9 / 10, "{stepped} of {trials} 15% steps called drifting");
        assert!(!drifted(&[100.0, 200.0, 100.0], 0.02), "too few rounds to judge");
    }

    #[test]
    fn precision_is_the_wider_half_of_the_interval_and_shortfalls_say_why() {
        let mut r = ResultRow::from_samples("x", Method::Batch, "ns/call", vec![100.0; 4], 4).unwrap();
        (r.ci_low, r.ci_high) = (99.0, 103.0);
        assert!((precision_of(&r).unwrap() - 0.03).abs() < 1e-12);
        assert!(short_of(std::slice::from_ref(&r), 0.03).is_empty());
        assert_eq!(short_of(std::slice::from_ref(&r), 0.02).len(), 1);
        assert_eq!(why_short(&r, 0.02), "rounds or time spent");
        // Ten rounds whose later half sits 10% above the earlier: drifting.
        r.samples = (0..20).map(|i| if i < 10 { 100.0 } else { 110.0 } + (i % 3) as f64 * 0.1).collect();
        r.rounds =
            (0..10).map(|_| oscost_figure::model::Round { samples: 2, at: None, counts: Default::default() }).collect();
        assert_eq!(why_short(&r, 0.02), "drifting");
        r.flag(oscost_figure::model::Flag::new(oscost_figure::model::FlagCode::Bimodal, "two levels"));
        assert_eq!(why_short(&r, 0.02), "bimodal");
        let bare = ResultRow { ci_low: f64::NAN, ci_high: f64::NAN, ..r.clone() };
        assert_eq!(short_of(std::slice::from_ref(&bare), 0.5).len(), 1, "no interval is no precision");
    }
    use oscost_figure::stats::SplitMix64;
    use oscost_figure::stats::nested::{normal, synthetic};

    /// The log medians read straight from the rounds are the merged rows' own, figure
    /// by figure in the merged order, including a figure without samples (a fit) and a
    /// figure missing from some rounds.
    #[test]
    fn log_medians_from_the_rounds_are_the_merged_rows() {
        let mut rng = SplitMix64::new(9);
        let rounds: Vec<Vec<ResultRow>> = (0..12)
            .map(|i| {
                let mut rows = vec![
                    ResultRow::from_samples("a", Method::Batch, "ns/call", rounds_of(&mut rng, 100.0, 7, 0.05), 7)
                        .unwrap(),
                    ResultRow::from_samples("a", Method::PerCall, "ns", rounds_of(&mut rng, 90.0, 40, 0.2), 40)
                        .unwrap(),
                ];
                let mut fit = rows[0].clone();
                (fit.benchmark, fit.method, fit.samples) = ("b".into(), Method::Fit, Vec::new());
                rows.push(fit);
                if i % 3 != 0 {
                    let mut other = rows[0].clone();
                    other.params.insert("mode".into(), serde_json::json!("x"));
                    rows.push(other);
                }
                rows
            })
            .collect();
        let merged = merge(&rounds);
        let direct = log_medians_by_figure(&rounds);
        assert_eq!(merged.len(), 4);
        let logs: Vec<&Vec<f64>> = direct.iter().map(|(_, l)| l).collect();
        assert_eq!(logs, merged.iter().map(round_log_medians).collect::<Vec<_>>().iter().collect::<Vec<_>>());
        assert_eq!(logs.iter().map(|l| l.len()).collect::<Vec<_>>(), [12, 12, 0, 8]);
        for ((first, _), m) in direct.iter().zip(&merged) {
            assert_eq!(figure_key(first), figure_key(m));
        }
    }

    /// A round of one batch figure and its per-call twin at `level`, its shared-core
    /// probe having read `share` of its readings shared.
    fn probed_round(rng: &mut SplitMix64, level: f64, share: f64) -> Vec<ResultRow> {
        [(Method::Batch, 0.01), (Method::PerCall, 0.05)]
            .into_iter()
            .map(|(method, sd)| {
                let mut r =
                    ResultRow::from_samples("syscall.getuid", method, "ns/call", rounds_of(rng, level, 20, sd), 20)
                        .unwrap();
                r.counts.insert(Count::SharedCoreShare, share);
                r.counts.insert(Count::SharedCoreRatio, if share > 0.0 { 2.9 } else { 1.2 });
                r
            })
            .collect()
    }

    /// Rounds the probe found on a shared core leave the figure for its `core=shared`
    /// twin, flagged and said in numbers; the figure keeps its rounds' numbers and the
    /// methods stay paired round by round. The direct log medians agree.
    #[test]
    fn rounds_on_a_shared_core_leave_the_figure_for_its_twin() {
        let mut rng = SplitMix64::new(31);
        let shared_at = [2usize, 3, 7];
        let rounds: Vec<Vec<ResultRow>> = (0..10)
            .map(|i| {
                let on_shared = shared_at.contains(&i);
                probed_round(&mut rng, if on_shared { 150.0 } else { 110.0 }, if on_shared { 1.0 } else { 0.0 })
            })
            .collect();
        let merged = merge(&rounds);
        assert_eq!(merged.len(), 4, "each method's figure and its twin");
        let (figure, twin) = (&merged[0], &merged[1]);
        assert_eq!((figure.method, twin.method), (Method::Batch, Method::Batch));
        assert_eq!(figure.rounds.len(), 7);
        assert_eq!(figure.round_numbers(), [0, 1, 4, 5, 6, 8, 9]);
        assert!((figure.median - 110.0).abs() < 2.0, "{}", figure.median);
        assert!(figure.ci_high < 112.0, "the interval holds the unshared rounds alone: {:?}", figure.interval());
        assert_eq!(figure.counts[&Count::SharedCoreRounds], 3.0);
        assert!(!figure.has_flag(FlagCode::SharedCore) && !figure.has_flag(FlagCode::Modes));
        assert_eq!(twin.params.get(SHARED_CORE), Some("shared"));
        assert_eq!(twin.round_numbers(), shared_at);
        let flag = twin.flags.iter().find(|f| f.flag == FlagCode::SharedCore).expect("the twin is flagged");
        assert!(flag.reason.contains("3 of 10 rounds") && flag.reason.contains("2.9x"), "{}", flag.reason);
        assert!(merged[2].method == Method::PerCall && merged[2].rounds.len() == 7);
        assert!(!merged[2].has_flag(FlagCode::MethodsDisagree), "the methods pair the same rounds");
        let direct = log_medians_by_figure(&rounds);
        assert_eq!(direct.len(), 2);
        assert_eq!(direct[0].1, round_log_medians(figure));
    }

    /// A per-call row without the probe's reading (a family that gives it to the batch
    /// row alone) keeps every round while its batch twin leaves some: the methods are
    /// still set side by side round by round, by the rounds' numbers, and agree.
    #[test]
    fn methods_pair_by_round_number_when_only_one_left_rounds_out() {
        let mut rng = SplitMix64::new(43);
        let rounds: Vec<Vec<ResultRow>> = (0..10)
            .map(|i| {
                let shared = i < 5;
                let mut round = probed_round(&mut rng, if shared { 150.0 } else { 110.0 }, f64::from(u8::from(shared)));
                round[1].counts.clear();
                round
            })
            .collect();
        let merged = merge(&rounds);
        let per_call = merged.iter().find(|r| r.method == Method::PerCall).unwrap();
        assert_eq!(per_call.rounds.len(), 10, "the per-call row kept every round");
        assert_eq!(merged[0].round_numbers(), [5, 6, 7, 8, 9]);
        assert!(!per_call.has_flag(FlagCode::MethodsDisagree), "{:?}", per_call.flags);
    }

    /// Rounds all unshared (the probe quiet, however the figure's rounds spread) leave
    /// the figure whole and unflagged; with too few unshared rounds every round stays,
    /// and the figure is flagged for holding the sibling's cost.
    #[test]
    fn a_quiet_probe_changes_nothing_and_too_few_unshared_rounds_keep_every_round() {
        let mut rng = SplitMix64::new(37);
        let quiet: Vec<Vec<ResultRow>> =
            (0..10).map(|i| probed_round(&mut rng, if i % 2 == 0 { 110.0 } else { 150.0 }, 0.0)).collect();
        let merged = merge(&quiet);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].rounds.len(), 10);
        assert!(!merged[0].has_flag(FlagCode::SharedCore) && !merged[0].counts.contains_key(&Count::SharedCoreRounds));
        let mostly_shared: Vec<Vec<ResultRow>> =
            (0..10).map(|i| probed_round(&mut rng, 150.0, if i < 8 { 0.5 } else { 0.0 })).collect();
        let merged = merge(&mostly_shared);
        assert_eq!(merged.len(), 2, "no twin");
        assert_eq!(merged[0].rounds.len(), 10);
        let flag = merged[0].flags.iter().find(|f| f.flag == FlagCode::SharedCore).expect("flagged");
        assert!(flag.reason.contains("8 of 10 rounds") && flag.reason.contains("too few"), "{}", flag.reason);
        assert!(FlagCode::SharedCore.withholds_verdict());
    }

    fn rounds_of(rng: &mut SplitMix64, centre: f64, k: usize, sd: f64) -> Vec<f64> {
        (0..k).map(|_| centre * (1.0 + sd * normal(rng))).collect()
    }

    #[test]
    fn below_floor_is_quiet_on_noise_and_fires_on_a_real_gap() {
        // getpid at 1.125× the floor, 5% round noise on both: never below, 200 trials.
        let mut rng = SplitMix64::new(3);
        let mut fired = 0;
        for _ in 0..200 {
            let floor = rounds_of(&mut rng, 100.0, 10, 0.05);
            let call: Vec<f64> = floor.iter().map(|f| f * 1.125 * (1.0 + 0.05 * normal(&mut rng))).collect();
            fired += below_floor(&call, &floor).is_some() as usize;
        }
        assert_eq!(fired, 0);
        // Equal costs (a call that is the floor): at most the test's 2.5% one-sided rate.
        let mut fired = 0;
        for _ in 0..400 {
            let floor = rounds_of(&mut rng, 100.0, 10, 0.05);
            let call: Vec<f64> = floor.iter().map(|f| f * (1.0 + 0.05 * normal(&mut rng))).collect();
            fired += below_floor(&call, &floor).is_some() as usize;
        }
        assert!(fired <= 20, "{fired} of 400");
        // A cached call at 0.8× the floor: always caught.
        let mut caught = 0;
        for _ in 0..200 {
            let floor = rounds_of(&mut rng, 100.0, 10, 0.05);
            let call: Vec<f64> = floor.iter().map(|f| f * 0.8 * (1.0 + 0.05 * normal(&mut rng))).collect();
            caught += below_floor(&call, &floor).is_some() as usize;
        }
        assert!(caught >= 195, "{caught} of 200");
        let f = below_floor(&[80.0, 81.0, 79.0], &[100.0, 101.0, 99.0]).unwrap();
        assert_eq!(f.flag, FlagCode::BelowFloor);
        assert!(f.reason.contains("over 3 rounds"), "{}", f.reason);
        assert!(below_floor(&[50.0], &[100.0]).is_none(), "one round decides nothing");
    }

    #[test]
    fn methods_disagree_is_quiet_on_noise_and_fires_on_a_real_gap() {
        let mut rng = SplitMix64::new(5);
        let (mut noise, mut gap) = (0, 0);
        for _ in 0..200 {
            let batch = rounds_of(&mut rng, 100.0, 10, 0.05);
            // Same figure, 3% serialisation cost, independent 5% noise per round.
            let same: Vec<f64> = batch.iter().map(|b| b * 1.03 * (1.0 + 0.05 * normal(&mut rng))).collect();
            noise += methods_disagree(&batch, &same, 1.0).is_some() as usize;
            let far: Vec<f64> = batch.iter().map(|b| b * 1.35 * (1.0 + 0.05 * normal(&mut rng))).collect();
            gap += methods_disagree(&batch, &far, 1.0).is_some() as usize;
        }
        assert!(noise <= 5, "{noise} of 200 on noise");
        assert!(gap >= 195, "{gap} of 200 on a 35% gap");
        assert!(methods_disagree(&[100.0], &[200.0], 1.0).is_none());
    }

    fn row_with_rounds(rounds: &[Vec<f64>], method: Method) -> Vec<Vec<ResultRow>> {
        rounds
            .iter()
            .map(|s| {
                let mut r =
                    ResultRow::from_samples("syscall.getppid", method, "ns/call", s.clone(), s.len() as u64).unwrap();
                r.counts.insert(Count::Switches, 2.0);
                r.counts.insert(Count::CountedOps, 1000.0);
                r.counts.insert(Count::SwitchesPerOp, 0.002);
                r.counts.insert(Count::FloorNs, 50.0);
                r
            })
            .map(|r| vec![r])
            .collect()
    }

    #[test]
    fn merging_keeps_every_sample_adds_totals_and_records_the_rounds() {
        let mut rng = SplitMix64::new(11);
        let rounds = synthetic(&mut rng, 100.0, 4, 50, 0.03, 0.01);
        let merged = merge(&row_with_rounds(&rounds, Method::Batch));
        assert_eq!(merged.len(), 1);
        let r = &merged[0];
        assert_eq!(r.samples.len(), 200);
        assert_eq!(r.iterations, 200);
        assert_eq!(r.rounds.len(), 4);
        assert!(r.rounds.iter().all(|x| x.samples == 50 && x.counts[&Count::FloorNs] == 50.0));
        assert_eq!(r.counts[&Count::Switches], 8.0);
        assert_eq!(r.counts[&Count::CountedOps], 4000.0);
        assert_eq!(r.counts[&Count::SwitchesPerOp], 0.002);
        assert_eq!(r.counts[&Count::FloorNs], 50.0);
        assert_eq!(r.round_slices()[2], &rounds[2][..]);
        assert!(r.ci_low < r.median && r.median < r.ci_high);
        // The floor is at half the call: nothing is below it.
        assert!(!r.has_flag(FlagCode::BelowFloor));
    }

    /// `bimodal`: quiet on sound rounds and on spread within one regime (noise), and
    /// on rounds all low (`too_few_switches` says that); fires when the rounds split.
    #[test]
    fn bimodal_switches_stays_quiet_on_noise_and_fires_on_split_rounds() {
        assert!(bimodal_switches(&[0.998, 0.997, 0.999, 0.996, 0.998]).is_none());
        assert!(bimodal_switches(&[0.96, 0.99, 0.93, 1.0]).is_none());
        assert!(bimodal_switches(&[0.31, 0.28, 0.30]).is_none());
        let f = bimodal_switches(&[0.998, 0.30, 0.997, 0.25, 0.999]).unwrap();
        assert_eq!(f.flag, FlagCode::Bimodal);
        assert!(f.reason.contains("0.25 to 1.00") && f.reason.contains("2 of 5"), "{}", f.reason);
    }

    #[test]
    fn a_flag_of_one_round_in_four_is_dropped_and_of_three_is_kept() {
        let mut rng = SplitMix64::new(2);
        let rounds = synthetic(&mut rng, 100.0, 4, 20, 0.03, 0.01);
        let mut parts = row_with_rounds(&rounds, Method::Batch);
        parts[0][0].flag(Flag::new(FlagCode::Preempted, "p"));
        for p in &mut parts[..3] {
            p[0].flag(Flag::new(FlagCode::ExtraSwitches, "e"));
        }
        let r = &merge(&parts)[0];
        assert!(!r.has_flag(FlagCode::Preempted));
        let e = r.flags.iter().find(|f| f.flag == FlagCode::ExtraSwitches).unwrap();
        assert_eq!(e.reason, "e (raised in 3 of 4 rounds; figures of the first)");
    }

    #[test]
    fn rows_without_samples_take_the_median_of_the_rounds() {
        let parts: Vec<Vec<ResultRow>> = [10.0, 12.0, 11.0]
            .iter()
            .map(|&m| {
                let mut r = ResultRow::from_samples("spawn.fork_mem", Method::Fit, "ns/MiB", vec![m], 1).unwrap();
                r.samples.clear();
                vec![r]
            })
            .collect();
        let r = &merge(&parts)[0];
        assert_eq!(r.median, 11.0);
        assert!(r.ci_low < 11.0 && r.ci_high > 11.0);
        assert_eq!(r.rounds.len(), 3);
    }
}
