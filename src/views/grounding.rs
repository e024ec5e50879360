//! The laboratory's grounding: chat's regime as today's kernel runs it (`load.chat`'s
//! rate and counts: switches per message, messages per reader wake-up, segments per
//! message) beside the same figures simulated by a model of today's scheduler on the
//! same rooms, messages, nice level and CPU count. A model whose rate is right for the
//! wrong reasons (per-message wake-ups where the kernel reads in batches) is not
//! grounded, and its account of 2002's schedulers inherits the error; each figure says
//! whether it holds within [`TOLERANCE`] or names the gap.
//!
//! The verdict is drawn from the measured figure's interval over stored runs, not one
//! run's median: `load.chat` measures in one round (a fixed number of messages), so the
//! level that varies is the run, a fresh process at its own moment. A figure holds
//! when its whole interval lies within the tolerance of the model, is a gap when none
//! of it does, and is undecided when the interval spans the edge. One run has no
//! interval and gets no verdict.
//!
//! A view, since it names a family's benchmark and the simulator's workload.

use crate::bench::load::chat;
use crate::model::{Count, ResultRow};
use crate::report::reprint::num;
use crate::sim::PolicyKind;
use crate::sim::chat as model;

/// How far a simulated figure may be from the measured one and still hold (±30%).
pub const TOLERANCE: f64 = 0.30;

/// What a grounding line concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The measured interval lies wholly within the tolerance of the model.
    Holds,
    /// The measured interval lies wholly outside it.
    Gap,
    /// The interval spans the tolerance's edge: more rounds would decide.
    Undecided,
    /// One run: no interval, so no verdict.
    OneRun,
    /// Measured on a busy machine: printed, not judged.
    Busy,
    /// The model has no such figure.
    NotModelled,
    /// The model has the figure, but no simulated row of the measured size was found.
    NotSimulated,
    /// The row has no such count.
    NotMeasured,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Gap => "GAP",
            Verdict::Undecided => "undecided",
            Verdict::OneRun => "no verdict: 1 run",
            Verdict::Busy => "no verdict: busy",
            Verdict::NotModelled => "not modelled",
            Verdict::NotSimulated => "not simulated",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// The verdict on a model figure `simulated` against a measured interval `(lo, hi)`:
/// the model holds for a measured value m when |simulated / m - 1| <= [`TOLERANCE`],
/// that is m in [simulated / (1 + T), simulated / (1 - T)], or when m is within
/// `resolution` of it (the smallest difference the measurement resolves, which decides
/// near zero, where any ratio is large).
pub fn judge(simulated: f64, (lo, hi): (f64, f64), resolution: f64) -> Verdict {
    let band = (
        (simulated / (1.0 + TOLERANCE)).min(simulated - resolution),
        (simulated / (1.0 - TOLERANCE)).max(simulated + resolution),
    );
    if lo >= band.0 && hi <= band.1 {
        Verdict::Holds
    } else if hi < band.0 || lo > band.1 {
        Verdict::Gap
    } else {
        Verdict::Undecided
    }
}

/// The stored chat rows of one size (CPUs, nice level, rooms, messages), one a run,
/// and where they came from.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The runs the rows came from, newest first.
    pub runs: Vec<i64>,
    pub cpus: usize,
    /// One row a run, in the order of `runs`.
    pub rows: Vec<ResultRow>,
    /// The rows were measured on a busy machine (none of this size was measured on a
    /// quiet one): no verdict.
    pub busy: bool,
}

impl Measured {
    /// A parameter of the newest row (every row of a size has the same).
    fn param<T: crate::key::ParamType>(&self, p: crate::key::Param<T>) -> Option<T::Read<'_>> {
        self.rows.first()?.params.get(p)
    }
    pub fn nice(&self) -> i32 {
        self.param(chat::NICE).unwrap_or(0) as i32
    }
    pub fn rooms(&self) -> usize {
        self.param(chat::ROOMS).unwrap_or(0) as usize
    }
    pub fn messages(&self) -> u64 {
        self.param(chat::MESSAGES).unwrap_or(0)
    }

    /// Each run's value of a figure: a count, or (None) the row's rate.
    fn values(&self, count: Option<Count>) -> Vec<f64> {
        self.rows
            .iter()
            .filter_map(|r| match count {
                Some(c) => r.counts.get(&c).copied(),
                None => Some(r.median),
            })
            .collect()
    }
}

/// The mean of `v` (None when empty): the figure the interval over runs is about.
fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The 95% interval of a figure's mean over runs (Student's t over the runs' values,
/// none below zero); None with fewer than two runs.
fn interval(values: &[f64]) -> Option<(f64, f64)> {
    crate::stats::nested::t_interval(values).map(|(_, lo, hi)| (lo.max(0.0), hi))
}

/// A grounding figure: its label, the count that measures it (None: the row's own
/// rate), the simulated figure beside it (Err: why the model has none), and the
/// smallest difference its measurement resolves (0: any, within the tolerance).
type Figure = (&'static str, Option<Count>, Result<&'static str, &'static str>, f64);

/// A CPU's idle share resolves to about one idle period a CPU: a period in progress at
/// either read is counted when it ends, and load.chat's idle periods last up to a few
/// milliseconds, 0.1% of a half-second run's CPU time.
const IDLE_SHARE_RESOLUTION: f64 = 0.001;

/// Why the model has no count of all segments.
const NO_ACKS: &str = "the model sends no ACKs";

const FIGURES: [Figure; 9] = [
    ("messages delivered per second", None, Ok(model::DELIVERED_PER_SECOND), 0.0),
    ("switches per message", Some(Count::SwitchesPerMessage), Ok(model::SWITCHES_PER_MESSAGE), 0.0),
    (
        "messages per client reader wake-up",
        Some(Count::ClientMessagesPerWake),
        Ok(model::CLIENT_MESSAGES_PER_WAKE),
        0.0,
    ),
    (
        "messages per server reader wake-up",
        Some(Count::ServerMessagesPerWake),
        Ok(model::SERVER_MESSAGES_PER_WAKE),
        0.0,
    ),
    ("data segments per message", Some(Count::DataSegmentsPerMessage), Ok(model::SEGMENTS_PER_MESSAGE), 0.0),
    ("segments per message (ACKs too)", Some(Count::SegmentsPerMessage), Err(NO_ACKS), 0.0),
    ("share of CPU time idle", Some(Count::CpuIdleShare), Ok(model::CPU_IDLE_SHARE), IDLE_SHARE_RESOLUTION),
    ("CPU idle entries per message", Some(Count::IdleEntriesPerMessage), Ok(model::IDLE_ENTRIES_PER_MESSAGE), 0.0),
    ("client readers' median finish", Some(Count::MedianFinishShare), Ok(model::MEDIAN_FINISH), 0.0),
];

/// One line of the grounding: a figure measured and simulated at one size.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Line {
    /// The runs measured, newest first.
    pub runs: Vec<i64>,
    pub cpus: usize,
    pub nice: i32,
    pub policy: &'static str,
    pub figure: &'static str,
    /// The measured figure: its mean over runs.
    pub measured: Option<f64>,
    /// The measured figure's 95% interval over runs (None: one run).
    pub interval: Option<(f64, f64)>,
    pub simulated: Option<f64>,
    /// Why the model has no such figure.
    pub not_modelled: Option<&'static str>,
    /// Measured on a busy machine: printed, not judged.
    pub busy: bool,
    /// The smallest difference the measurement resolves ([`judge`]).
    pub resolution: f64,
    /// What the line concludes ([`Line::judged`]).
    pub verdict: Verdict,
}

impl Line {
    /// simulated / measured, where both exist.
    pub fn ratio(&self) -> Option<f64> {
        match (self.measured, self.simulated) {
            (Some(m), Some(s)) if m > 0.0 && s.is_finite() => Some(s / m),
            _ => None,
        }
    }

    /// The line's verdict: the model against the measured interval.
    pub fn judged(&self) -> Verdict {
        match (self.measured, self.simulated, self.not_modelled) {
            (_, _, Some(_)) => Verdict::NotModelled,
            (None, _, None) => Verdict::NotMeasured,
            (Some(_), None, None) => Verdict::NotSimulated,
            (Some(_), Some(_), None) if self.busy => Verdict::Busy,
            (Some(_), Some(s), None) => self.interval.map_or(Verdict::OneRun, |i| judge(s, i, self.resolution)),
        }
    }

    /// The interval's larger half-width as a share of the measured figure.
    pub fn spread(&self) -> Option<f64> {
        let (m, (lo, hi)) = (self.measured?, self.interval?);
        (m > 0.0).then(|| (hi - m).max(m - lo) / m)
    }
}

/// The grounding lines of `measured` against `policy`'s simulated rows (those of the
/// same CPU count, nice level, rooms and messages).
pub fn lines(measured: &Measured, policy: PolicyKind, simulated: &[ResultRow]) -> Vec<Line> {
    use crate::sim::run::{CPUS, FIGURE, MESSAGES, NICE, POLICY, TASKS};
    let find = |name: &str| {
        simulated
            .iter()
            .find(|r| {
                r.params.get(POLICY) == Some(policy.name())
                    && r.params.get(FIGURE) == Some(name)
                    && r.params.get(CPUS) == Some(measured.cpus as u64)
                    && r.params.get(TASKS) == Some(measured.rooms() as u64)
                    && r.params.get(MESSAGES) == Some(measured.messages())
                    && r.params.get(NICE).unwrap_or(0) == i64::from(measured.nice())
            })
            .map(|r| r.median)
    };
    FIGURES
        .iter()
        .map(|&(figure, count, simulated, resolution)| Line {
            runs: measured.runs.clone(),
            cpus: measured.cpus,
            nice: measured.nice(),
            policy: policy.name(),
            figure,
            measured: mean(&measured.values(count)),
            interval: interval(&measured.values(count)),
            simulated: simulated.ok().and_then(find),
            not_modelled: simulated.err(),
            busy: measured.busy,
            resolution,
            verdict: Verdict::NotMeasured,
        })
        .map(|l| Line { verdict: l.judged(), ..l })
        .collect()
}

/// The model's profile under the grounding: the terms a load_chat figure leans on most,
/// grouped by how each was had, and, for a live profile, how to hold it from one command
/// to the next (its probes are taken afresh by each, and the model moves with them).
pub fn profile_lines(label: &str, p: &crate::sim::cost::CostProfile) -> String {
    use crate::sim::cost::Term;
    let terms: [(&str, &Term); 4] =
        [("syscall", &p.syscall), ("switch", &p.switch), ("line", &p.remote_line), ("idle wake", &p.ipi)];
    let text =
        |t: &Term| if t.ns >= 10_000.0 { format!("{:.1} µs", t.ns / 1000.0) } else { format!("{:.0} ns", t.ns) };
    let groups: Vec<String> = ["measured", "fitted", "assumed"]
        .iter()
        .filter_map(|&word| {
            let named: Vec<String> = terms
                .iter()
                .filter(|(_, t)| t.basis.word() == word)
                .map(|(name, t)| format!("{name} {}", text(t)))
                .collect();
            (!named.is_empty()).then(|| format!("{word} {}", named.join(", ")))
        })
        .collect();
    // A fitted term names the published figure it was fitted to.
    let sources: String = terms
        .iter()
        .filter(|(_, t)| t.basis.word() == "fitted")
        .map(|(name, t)| format!("; {name}: {}", t.basis.why()))
        .collect();
    let mut out = crate::report::fit::wrap(&format!("model profile {label}: {}{sources}\n", groups.join("; ")), 100);
    if label == "live" {
        out.push_str("(a live profile is measured anew by each command; --profile live@RUN holds one)\n");
    }
    out
}

/// A ratio in two significant figures (×0.12, ×4.5, ×45).
fn ratio_text(r: f64) -> String {
    let digits = if r >= 10.0 {
        0
    } else if r >= 1.0 {
        1
    } else {
        2
    };
    format!("{r:.digits$}")
}

/// A measured interval's half-width as text (±4%), blank without one.
fn spread_text(spread: Option<f64>) -> String {
    match spread {
        Some(x) if x >= 9.995 => ">±999%".into(),
        Some(x) => format!("±{:.0}%", x * 100.0),
        None => String::new(),
    }
}

/// One table line: the columns of the header and of every figure.
fn table_line(cells: [&str; 8]) -> String {
    let [cpus, nice, figure, measured, spread, model, ratio, verdict] = cells;
    format!("{cpus:>4} {nice:>4} {figure:<34} {measured:>9} {spread:>6} {model:>9} {ratio:>6}  {verdict}\n")
}

/// The grounding as text: a table per policy, a line per figure, each line within
/// 100 columns, then what the marks mean.
pub fn render(lines: &[Line], profile: &str) -> String {
    let mut out = String::new();
    let mut policies: Vec<&str> = lines.iter().map(|l| l.policy).collect();
    policies.dedup();
    for policy in policies {
        out.push_str(&format!("\ngrounding: load.chat measured against the {policy} model (profile {profile})\n"));
        out.push_str(&table_line(["CPUs", "nice", "figure", "measured", "95%", "model", "ratio", "within 30%"]));
        for l in lines.iter().filter(|l| l.policy == policy) {
            let cell = |v: Option<f64>| v.map(num).unwrap_or_else(|| "-".into());
            let ratio = match (l.ratio(), l.verdict) {
                (Some(r), Verdict::Holds) => format!("×{r:.2}"),
                (Some(r), _) => format!("×{}", ratio_text(r)),
                (None, _) => String::new(),
            };
            out.push_str(&table_line([
                &l.cpus.to_string(),
                &l.nice.to_string(),
                l.figure,
                &cell(l.measured),
                &spread_text(l.spread()),
                &cell(l.simulated),
                &ratio,
                l.verdict.as_str(),
            ]));
        }
    }
    let runs: std::collections::BTreeSet<i64> = lines.iter().flat_map(|l| l.runs.iter().copied()).collect();
    let span = match (runs.first(), runs.last()) {
        (Some(a), Some(b)) if a != b => format!("#{a}–#{b}"),
        (Some(a), _) => format!("#{a}"),
        _ => String::new(),
    };
    out.push_str(&format!(
        "measured: the mean over the stored load.chat runs of each size ({} runs, {span});\n",
        runs.len()
    ));
    out.push_str(
        "95%: Student's t over those runs; holds: all of it within 30% of the model (an idle\n\
         share within 0.1% of CPU time too, about one idle period a CPU, what its reads resolve);\n\
         GAP: none of it; undecided: it spans the edge; one run: no interval, no verdict\n",
    );
    let mut reasons: Vec<(&str, &str)> =
        lines.iter().filter_map(|l| l.not_modelled.map(|why| (l.figure, why))).collect();
    reasons.dedup();
    for (figure, why) in reasons {
        out.push_str(&format!("{figure}: not modelled ({why})\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Method;
    use crate::unit::Unit;

    /// Measured rows of one size, one a run, with these rates and switches.
    fn measured(rates: &[f64], switches: &[f64]) -> Measured {
        let rows = rates
            .iter()
            .zip(switches)
            .map(|(&rate, &s)| {
                let mut row =
                    ResultRow::from_samples(chat::ID, Method::Workload, Unit::MessagesPerSecond, vec![rate], 1)
                        .unwrap()
                        .with(chat::NICE, 0)
                        .with(chat::ROOMS, 2u64)
                        .with(chat::MESSAGES, 100u64);
                row.counts.insert(Count::SwitchesPerMessage, s);
                row.counts.insert(Count::SegmentsPerMessage, 0.3);
                row.counts.insert(Count::ClientMessagesPerWake, 80.0);
                row
            })
            .collect();
        Measured { runs: (1..=rates.len() as i64).rev().collect(), cpus: 2, rows, busy: false }
    }

    fn simulated(figure: &str, value: f64) -> ResultRow {
        use crate::sim::run::{CPUS, FIGURE, MESSAGES, POLICY, TASKS};
        let mut r = crate::sim::run::value_row("sim.chat", Unit::Ratio, value);
        r.params.set(POLICY, PolicyKind::Eevdf.name());
        r.params.set(FIGURE, figure);
        r.params.set(CPUS, 2u64);
        r.params.set(TASKS, 2u64);
        r.params.set(MESSAGES, 100u64);
        r
    }

    const RATES: [f64; 3] = [298_000.0, 300_000.0, 302_000.0];

    #[test]
    fn a_figure_within_thirty_percent_holds_and_one_past_it_is_a_gap() {
        let m = measured(&RATES, &[0.0099, 0.01, 0.0101]);
        let sim = [simulated(model::DELIVERED_PER_SECOND, 260_000.0), simulated(model::SWITCHES_PER_MESSAGE, 0.45)];
        let lines = lines(&m, PolicyKind::Eevdf, &sim);
        assert_eq!(lines[0].verdict, Verdict::Holds, "×0.87 holds");
        assert_eq!(lines[1].verdict, Verdict::Gap, "×45 is a gap");
        let text = render(&lines, "live");
        assert!(text.lines().any(|l| l.ends_with("holds")) && text.lines().any(|l| l.ends_with("GAP")), "{text}");
        // ACK segments are measured but not modelled: said so, never judged.
        let seg = lines.iter().find(|l| l.figure.contains("ACKs too")).unwrap();
        assert_eq!((seg.verdict, seg.not_modelled.is_some()), (Verdict::NotModelled, true));
        // A count the row lacks is not measured; a modelled figure with no simulated row
        // of the size is not simulated.
        let wake = lines.iter().find(|l| l.figure.contains("client reader")).unwrap();
        assert_eq!(wake.verdict, Verdict::NotSimulated);
        let data = lines.iter().find(|l| l.figure.starts_with("data segments")).unwrap();
        assert_eq!(data.verdict, Verdict::NotMeasured);
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    #[test]
    fn a_measured_interval_across_the_edge_is_undecided_and_one_run_gets_no_verdict() {
        // Switches per message spread 0.006–0.014 across runs: the model's 0.0125
        // is within 30% of some of it and not of the rest.
        let wide = measured(&RATES, &[0.006, 0.01, 0.014]);
        let lines_wide = lines(&wide, PolicyKind::Eevdf, &[simulated(model::SWITCHES_PER_MESSAGE, 0.0125)]);
        assert_eq!(lines_wide[1].verdict, Verdict::Undecided);
        let one = measured(&RATES[..1], &[0.01]);
        let lines_one = lines(&one, PolicyKind::Eevdf, &[simulated(model::SWITCHES_PER_MESSAGE, 0.45)]);
        assert_eq!(lines_one[1].verdict, Verdict::OneRun, "one run: no interval, however far");
        let text = render(&lines_one, "live");
        assert!(text.contains("no verdict: 1 run") && !text.lines().any(|l| l.ends_with("GAP")), "{text}");
    }

    /// The idle-share line of runs whose CPUs sat idle `shares` of the time, beside a
    /// model that sat idle `model_share`.
    fn idle_line(shares: &[f64], model_share: f64) -> Line {
        let mut m = measured(&RATES[..shares.len()], &[0.01; 3][..shares.len()]);
        for (row, &share) in m.rows.iter_mut().zip(shares) {
            row.counts.insert(Count::CpuIdleShare, share);
        }
        let lines = lines(&m, PolicyKind::Eevdf, &[simulated(model::CPU_IDLE_SHARE, model_share)]);
        lines.into_iter().find(|l| l.figure == "share of CPU time idle").unwrap()
    }

    #[test]
    fn an_idle_share_near_zero_is_judged_on_what_its_reads_resolve_not_on_its_ratio() {
        // No idle at all beside a model idle 0.001% of the time: ×∞ as a ratio, the same
        // within one idle period a CPU.
        assert_eq!(idle_line(&[0.0, 0.0, 0.0], 0.00001).verdict, Verdict::Holds);
        // Runs idle 0–0.05% of the time: noise within the reads' resolution, never a gap.
        assert_ne!(idle_line(&[0.0, 0.0002, 0.0005], 0.00001).verdict, Verdict::Gap);
        // Runs idle 1.5–2.8% beside a model idle 0.01%: a gap the resolution cannot hide.
        assert_eq!(idle_line(&[0.015, 0.02, 0.028], 0.0001).verdict, Verdict::Gap);
    }

    #[test]
    fn the_models_profile_is_told_by_how_each_term_was_had_and_a_live_one_how_to_hold_it() {
        use crate::sim::cost::{Basis, Term, unit_profile};
        let mut p = unit_profile();
        p.syscall = Term { ns: 352.0, basis: Basis::Measured("a probe".into()) };
        p.ipi = Term { ns: 19_072.0, basis: Basis::Measured("a probe".into()) };
        let text = profile_lines("live", &p);
        assert!(
            text.starts_with("model profile live: measured syscall 352 ns, idle wake 19.1 µs; assumed switch"),
            "{text}"
        );
        assert!(text.contains("--profile live@RUN holds one"), "{text}");
        let held = profile_lines("live@54", &p);
        assert!(!held.contains("holds one") && held.lines().all(|l| l.chars().count() <= 100), "{held}");
        // A fitted term says what it was fitted to.
        p.switch = Term { ns: 756.0, basis: Basis::Fitted("Table 2 (Appleton 1999)".into()) };
        let fitted = profile_lines("pentium200", &p);
        assert!(
            fitted.contains("fitted switch 756 ns") && fitted.contains("switch: Table 2 (Appleton 1999)"),
            "{fitted}"
        );
    }

    #[test]
    fn a_row_measured_on_a_busy_machine_gets_no_verdict() {
        let m = Measured { busy: true, ..measured(&RATES, &[0.0099, 0.01, 0.0101]) };
        let lines = lines(&m, PolicyKind::Eevdf, &[simulated(model::SWITCHES_PER_MESSAGE, 0.45)]);
        assert_eq!(lines[1].verdict, Verdict::Busy);
        let text = render(&lines, "live");
        assert!(text.contains("no verdict: busy") && !text.lines().any(|l| l.ends_with("GAP")), "{text}");
    }

    #[test]
    fn the_verdict_is_quiet_on_noise_at_the_tolerance_edge_and_fires_on_a_real_gap() {
        // Five runs, each run's count 20% lognormal noise around the truth 1.
        let mut rng = crate::stats::SplitMix64::new(50);
        let trials = 2000;
        let mut gaps_at = |truth_times: f64| {
            (0..trials)
                .filter(|_| {
                    let runs: Vec<f64> = (0..5).map(|_| (0.2 * crate::stats::nested::normal(&mut rng)).exp()).collect();
                    let m = measured(&[300_000.0; 5], &runs);
                    let sim = [simulated(model::SWITCHES_PER_MESSAGE, truth_times)];
                    lines(&m, PolicyKind::Eevdf, &sim)[1].verdict == Verdict::Gap
                })
                .count() as f64
                / trials as f64
        };
        // The model exactly at either edge of the tolerance: within it, so a gap is a
        // false alarm, allowed in at most 5% of trials.
        for edge in [1.0 + TOLERANCE, 1.0 - TOLERANCE] {
            let false_alarms = gaps_at(edge);
            assert!(false_alarms <= 0.05, "model ×{edge:.2}: {false_alarms}");
        }
        assert_eq!(gaps_at(1.0), 0.0, "a model equal to the truth is never a gap");
        // Twice the truth and 0.4 of it (0.7 past the upper edge and 0.3 past the
        // lower) are gaps nearly every time.
        for far in [2.0, 0.4] {
            let seen = gaps_at(far);
            assert!(seen >= 0.95, "model ×{far}: gap seen in {seen}");
        }
    }

    #[test]
    fn a_simulated_row_of_another_size_is_not_taken() {
        let m = measured(&RATES, &[0.0099, 0.01, 0.0101]);
        let mut other = simulated(model::SWITCHES_PER_MESSAGE, 0.01);
        other.params.set(crate::sim::run::CPUS, 1u64);
        let lines = lines(&m, PolicyKind::Eevdf, &[other]);
        assert_eq!(lines[1].simulated, None);
    }
}
