//! The laboratory's grounding: chat's regime as today's kernel runs it (`load.chat`'s
//! rate and counts: switches per message, messages per reader wake-up, segments per
//! message) beside the same figures simulated by a model of today's scheduler on the
//! same rooms, messages, nice level and CPU count. A model whose rate is right for the
//! wrong reasons (per-message wake-ups where the kernel reads in batches) is not
//! grounded, and its account of 2002's schedulers inherits the error; each figure says
//! whether it holds within [`TOLERANCE`] or names the gap.
//!
//! A view, since it names a family's benchmark and the simulator's workload.

use crate::bench::load::chat;
use crate::model::{Count, ResultRow};
use crate::report::reprint::num;
use crate::sim::PolicyKind;
use crate::sim::chat as model;

/// How far a simulated figure may be from the measured one and still hold (±30%).
pub const TOLERANCE: f64 = 0.30;

/// One measured chat row and where it came from.
#[derive(Debug, Clone)]
pub struct Measured {
    pub run: i64,
    pub cpus: usize,
    pub row: ResultRow,
    /// The run's preflight found other work keeping its CPUs busy: no verdict.
    pub busy: bool,
}

impl Measured {
    pub fn nice(&self) -> i32 {
        self.row.params.get(chat::NICE).unwrap_or(0) as i32
    }
    pub fn rooms(&self) -> usize {
        self.row.params.get(chat::ROOMS).unwrap_or(0) as usize
    }
    pub fn messages(&self) -> u64 {
        self.row.params.get(chat::MESSAGES).unwrap_or(0)
    }
}

/// A grounding figure: its label, the count that measures it (None: the row's own
/// rate), and the simulated figure beside it (Err: why the model has none).
type Figure = (&'static str, Option<Count>, Result<&'static str, &'static str>);

/// Why the model has no count of all segments.
const NO_ACKS: &str = "the model sends no ACKs";

const FIGURES: [Figure; 6] = [
    ("messages delivered per second", None, Ok(model::DELIVERED_PER_SECOND)),
    ("switches per message", Some(Count::SwitchesPerMessage), Ok(model::SWITCHES_PER_MESSAGE)),
    ("messages per client reader wake-up", Some(Count::ClientMessagesPerWake), Ok(model::CLIENT_MESSAGES_PER_WAKE)),
    ("messages per server reader wake-up", Some(Count::ServerMessagesPerWake), Ok(model::SERVER_MESSAGES_PER_WAKE)),
    ("data segments per message", Some(Count::DataSegmentsPerMessage), Ok(model::SEGMENTS_PER_MESSAGE)),
    ("segments per message (ACKs too)", Some(Count::SegmentsPerMessage), Err(NO_ACKS)),
];

/// One line of the grounding: a figure measured and simulated at one size.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Line {
    pub run: i64,
    pub cpus: usize,
    pub nice: i32,
    pub policy: &'static str,
    pub figure: &'static str,
    pub measured: Option<f64>,
    pub simulated: Option<f64>,
    /// Why the model has no such figure.
    pub not_modelled: Option<&'static str>,
    /// Measured on a busy machine: printed, not judged.
    pub busy: bool,
}

impl Line {
    /// simulated / measured, where both exist.
    pub fn ratio(&self) -> Option<f64> {
        match (self.measured, self.simulated) {
            (Some(m), Some(s)) if m > 0.0 && s.is_finite() => Some(s / m),
            _ => None,
        }
    }

    /// Whether the model holds within [`TOLERANCE`] (None: nothing to judge, or a
    /// measurement the tool doubts).
    pub fn holds(&self) -> Option<bool> {
        if self.busy {
            return None;
        }
        self.ratio().map(|r| (r - 1.0).abs() <= TOLERANCE)
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
        .map(|&(figure, count, simulated)| Line {
            run: measured.run,
            cpus: measured.cpus,
            nice: measured.nice(),
            policy: policy.name(),
            figure,
            measured: match count {
                Some(c) => measured.row.counts.get(&c).copied(),
                None => Some(measured.row.median),
            },
            simulated: simulated.ok().and_then(find),
            not_modelled: simulated.err(),
            busy: measured.busy,
        })
        .collect()
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

/// The grounding as text: a table per policy, a line per figure, each line under 80
/// columns, then what the marks mean.
pub fn render(lines: &[Line], profile: &str) -> String {
    let mut out = String::new();
    let mut policies: Vec<&str> = lines.iter().map(|l| l.policy).collect();
    policies.dedup();
    for policy in policies {
        out.push_str(&format!("\ngrounding: load.chat measured against the {policy} model (profile {profile})\n"));
        out.push_str(&format!(
            "{:>4} {:>4} {:<35} {:>9} {:>9} {:>7}  {}\n",
            "CPUs", "nice", "figure", "measured", "model", "ratio", "within 30%"
        ));
        for l in lines.iter().filter(|l| l.policy == policy) {
            let cell = |v: Option<f64>| v.map(num).unwrap_or_else(|| "-".into());
            let (ratio, verdict) = match (l.ratio(), l.holds(), l.not_modelled) {
                (Some(r), Some(true), _) => (format!("×{r:.2}"), "holds"),
                (Some(r), None, _) => (format!("×{}", ratio_text(r)), "busy machine: no verdict"),
                (Some(r), Some(false), _) => (format!("×{}", ratio_text(r)), "GAP"),
                (None, _, Some(_)) => ("".into(), "not modelled"),
                (None, _, None) => ("".into(), "not measured"),
            };
            out.push_str(&format!(
                "{:>4} {:>4} {:<35} {:>9} {:>9} {:>7}  {}\n",
                l.cpus,
                l.nice,
                l.figure,
                cell(l.measured),
                cell(l.simulated),
                ratio,
                verdict
            ));
        }
    }
    let runs: std::collections::BTreeSet<i64> = lines.iter().map(|l| l.run).collect();
    let runs: Vec<String> = runs.iter().map(|r| format!("#{r}")).collect();
    out.push_str(&format!(
        "measured: the newest load.chat rows of each CPU count and nice level (runs {});\n",
        runs.join(", ")
    ));
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

    fn measured(rate: f64, switches: f64) -> Measured {
        let mut row = ResultRow::from_samples(chat::ID, Method::Workload, Unit::MessagesPerSecond, vec![rate], 1)
            .unwrap()
            .with(chat::NICE, 0)
            .with(chat::ROOMS, 2u64)
            .with(chat::MESSAGES, 100u64);
        row.counts.insert(Count::SwitchesPerMessage, switches);
        Measured { run: 7, cpus: 2, row, busy: false }
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

    #[test]
    fn a_figure_within_thirty_percent_holds_and_one_past_it_is_a_gap() {
        let m = measured(300_000.0, 0.01);
        let sim = [simulated(model::DELIVERED_PER_SECOND, 260_000.0), simulated(model::SWITCHES_PER_MESSAGE, 0.45)];
        let lines = lines(&m, PolicyKind::Eevdf, &sim);
        assert_eq!(lines[0].holds(), Some(true), "×0.87 holds");
        assert_eq!(lines[1].holds(), Some(false), "×45 is a gap");
        let text = render(&lines, "live");
        assert!(text.contains("holds") && text.contains("GAP"), "{text}");
        // ACK segments are measured but not modelled: said so, never judged.
        let seg = lines.iter().find(|l| l.figure.contains("ACKs too")).unwrap();
        assert_eq!((seg.holds(), seg.not_modelled.is_some()), (None, true));
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    #[test]
    fn a_row_measured_on_a_busy_machine_gets_no_verdict() {
        let m = Measured { busy: true, ..measured(300_000.0, 0.01) };
        let lines = lines(&m, PolicyKind::Eevdf, &[simulated(model::SWITCHES_PER_MESSAGE, 0.45)]);
        assert_eq!(lines[1].holds(), None);
        let text = render(&lines, "live");
        assert!(text.contains("busy machine: no verdict") && !text.contains("GAP"), "{text}");
    }

    #[test]
    fn a_simulated_row_of_another_size_is_not_taken() {
        let m = measured(300_000.0, 0.01);
        let mut other = simulated(model::SWITCHES_PER_MESSAGE, 0.01);
        other.params.set(crate::sim::run::CPUS, 1u64);
        let lines = lines(&m, PolicyKind::Eevdf, &[other]);
        assert_eq!(lines[1].simulated, None);
    }
}
