//! The benchmark registry: every benchmark's id, family, description and timing model,
//! and the shared step that turns a measurement into result rows.

use std::sync::Arc;
use std::time::Duration;

use crate::runner::{BenchError, MeasureConfig, Measurement};
use oscost_figure::key::BenchId;
use oscost_figure::model::{Count, Flag, FlagCode, Method, ResultRow, Skipped};
use oscost_figure::unit::Unit;
use oscost_platform::clock::Calibration;
use oscost_platform::placement::Placement;

pub mod ctx;
pub mod load;
pub mod spawn;
pub mod syscall;

/// How much of a benchmark to run: everything, or the headline variants the default
/// suite shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Scope {
    Full,
    Headline,
}

/// Options that individual families read. They cross into worker processes as JSON;
/// the no-op program, an open descriptor, crosses separately (see `worker`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BenchOptions {
    pub placement: Placement,
    /// The no-op program the creation family execs, opened and verified (or why not).
    #[serde(skip, default = "noop_not_passed")]
    pub noop: Result<Arc<crate::helper::Executable>, crate::helper::NoNoop>,
    /// Parent sizes for the fork memory sweep, in bytes.
    pub parent_mem: Vec<u64>,
    /// Working-set sizes for the context-switch footprint sweep, in bytes.
    pub footprint_sizes: Vec<u64>,
    /// Stride of the footprint walk, in bytes.
    pub footprint_stride: usize,
    /// Runnable-task counts for the run-queue sweep.
    pub tasks: Vec<usize>,
    /// Task counts for the yield storm.
    pub storm_tasks: Vec<usize>,
    /// Chat rooms and messages per user.
    pub rooms: usize,
    pub messages: usize,
    /// The wake-up sleepers' interval, priority and number (cyclictest's knobs).
    #[serde(default)]
    pub wakeup: load::wakeup::WakeupOptions,
}

impl BenchOptions {
    /// The smallest sweep of every family (one parent size, one working set, two
    /// tasks, one chat room of `messages`), for a run that needs one figure of each
    /// benchmark it names and no sweep.
    pub fn smallest(noop: Result<Arc<crate::helper::Executable>, crate::helper::NoNoop>, messages: usize) -> Self {
        BenchOptions {
            placement: Placement::default(),
            noop,
            parent_mem: vec![0],
            footprint_sizes: vec![0],
            footprint_stride: 64,
            tasks: vec![2],
            storm_tasks: vec![2],
            rooms: 1,
            messages,
            wakeup: load::wakeup::WakeupOptions::default(),
        }
    }
}

fn noop_not_passed() -> Result<Arc<crate::helper::Executable>, crate::helper::NoNoop> {
    Err("the no-op helper was not passed on".into())
}

/// Why options a benchmark reads cannot be run with; each names the option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("{flag}: give at least one {what}")]
    Empty { flag: &'static str, what: &'static str },
    #[error("{flag}: {given} is too few; each count must be at least {min}")]
    TooFew { flag: &'static str, given: usize, min: usize },
    /// The option (with its value where it helps) and the limit it would exceed.
    #[error("{option}: {source}")]
    Limits { option: String, source: load::group::LimitError },
    #[error("--rooms and --messages must be at least 1")]
    NoChat,
    #[error(
        "--wakeup-interval {} is outside {} to {}",
        humantime::format_duration(*.0),
        humantime::format_duration(*load::wakeup::INTERVAL_RANGE.start()),
        humantime::format_duration(*load::wakeup::INTERVAL_RANGE.end())
    )]
    WakeupInterval(Duration),
    #[error("--wakeup-threads {0}: give 1 to {max}", max = load::wakeup::MAX_THREADS)]
    WakeupThreads(usize),
    #[error("--wakeup-priority {priority}: SCHED_FIFO priorities run from 1 to {max} here")]
    WakeupPriority { priority: u8, max: i32 },
    #[error(
        "--wakeup-priority {priority} needs privilege: this user's RLIMIT_RTPRIO is {limit} (run as root, or raise it with ulimit -r)"
    )]
    RealTimeRefused { priority: u8, limit: u64 },
    #[error("--stride must be at least 1 byte")]
    ZeroStride,
    #[error("--parent-mem {} MiB is more than the {} MiB of memory available now", .size >> 20, .available >> 20)]
    ParentMemory { size: u64, available: u64 },
    #[error(
        "--parent-mem {} MiB does not fit the address-space limit (ulimit -v) of {} MiB beside the {} MiB a worker maps before it",
        .size >> 20, .limit >> 20, .base >> 20
    )]
    AddressSpace { size: u64, limit: u64, base: u64 },
}

/// The first refusal of [`check_options`], with the benchmark's id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{id}: {source}")]
pub struct OptionsRefused {
    pub id: BenchId,
    pub source: OptionError,
}

/// Everything a benchmark needs to run.
pub struct Ctx<'a> {
    pub cfg: &'a MeasureConfig,
    pub calib: &'a Calibration,
    pub opts: &'a BenchOptions,
    pub scope: Scope,
}

/// What one benchmark produced: its rows and what it skipped, each final once given.
///
/// Why final: a worker reports every row the moment it is pushed, so a round stopped
/// while it reaps a thousand tasks (which a busy machine can make slower than any
/// grace) keeps the points it finished. Nothing may change a row after [`Output::push`];
/// the labels every row of the round carries are set before, with [`Output::label`].
#[derive(Default)]
pub struct Output {
    rows: Vec<ResultRow>,
    skipped: Vec<Skipped>,
    /// Parameters added to each row pushed: (key, value, whether it replaces the row's own).
    labels: Vec<(String, serde_json::Value, bool)>,
    report: Option<Reporter>,
}

/// Where an [`Output`] hands what it is given, as it is given.
type Reporter = Box<dyn FnMut(Produced<'_>)>;

/// One finished piece of a round, as it is reported.
#[derive(Debug, Clone, Copy)]
pub enum Produced<'a> {
    Row(&'a ResultRow),
    Skipped(&'a Skipped),
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output").field("rows", &self.rows).field("skipped", &self.skipped).finish_non_exhaustive()
    }
}

impl Output {
    /// An output that also hands every row and skip to `report` as it is given.
    pub fn reporting_to(report: impl FnMut(Produced<'_>) + 'static) -> Self {
        Self { report: Some(Box::new(report)), ..Self::default() }
    }

    /// Gives every row pushed from now on the parameter `key`; `replace` says whether it
    /// replaces a value the row set itself.
    pub fn label(&mut self, key: &str, value: impl Into<serde_json::Value>, replace: bool) {
        self.labels.push((key.to_string(), value.into(), replace));
    }

    /// Adds a finished row.
    pub fn push(&mut self, mut row: ResultRow) {
        for (key, value, replace) in &self.labels {
            if *replace || !row.params.contains(key) {
                row.params.insert(key.clone(), value.clone());
            }
        }
        if let Some(report) = &mut self.report {
            report(Produced::Row(&row));
        }
        self.rows.push(row);
    }

    /// Adds finished rows, in order.
    pub fn extend(&mut self, rows: impl IntoIterator<Item = ResultRow>) {
        for row in rows {
            self.push(row);
        }
    }

    /// Records a variant that was not measured, and why.
    pub fn skip(&mut self, benchmark: &str, params: &str, reason: impl Into<String>) {
        let skipped = Skipped { benchmark: benchmark.into(), params: params.into(), reason: reason.into() };
        if let Some(report) = &mut self.report {
            report(Produced::Skipped(&skipped));
        }
        self.skipped.push(skipped);
    }

    pub fn rows(&self) -> &[ResultRow] {
        &self.rows
    }

    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    pub fn into_parts(self) -> (Vec<ResultRow>, Vec<Skipped>) {
        (self.rows, self.skipped)
    }
}

/// The benchmark families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Syscall,
    Ctx,
    Spawn,
    Load,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Syscall => "syscall",
            Family::Ctx => "ctx",
            Family::Spawn => "spawn",
            Family::Load => "load",
        }
    }

    /// Whether the family's timed passes are followed by a trace pass: its figures
    /// are about switches, and the per-switch events sharpen their proof.
    pub fn is_traced(self) -> bool {
        matches!(self, Family::Ctx | Family::Load | Family::Spawn)
    }
}

/// What a benchmark's time is made of: measurements (each about
/// `MeasureConfig::estimate_per_probe`) and work that does not follow those budgets
/// (starting tasks, filling memory, a fixed-size workload, a fixed window). The
/// constants in the families' cost functions were fitted to wall times on a 2-core VM.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    pub probes: usize,
    pub fixed: Duration,
}

impl Cost {
    /// `n` measurements and nothing else.
    pub const fn probes(n: usize) -> Self {
        Self { probes: n, fixed: Duration::ZERO }
    }

    /// Work of a known length and no measurement of the standard kind.
    pub const fn fixed(d: Duration) -> Self {
        Self { probes: 0, fixed: d }
    }

    /// This cost and `d` more.
    pub fn plus(self, d: Duration) -> Self {
        Self { fixed: self.fixed + d, ..self }
    }

    /// The expected wall time under `cfg`.
    pub fn time(&self, cfg: &MeasureConfig) -> Duration {
        cfg.estimate_per_probe() * self.probes as u32 + self.fixed
    }
}

/// How a benchmark is spread over a run's rounds (see `session`: each round is a fresh
/// worker process at its own moment of the run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RoundPlan {
    /// Measured in every round, each with its share of the budgets.
    Spread,
    /// Measured in one round with the whole budgets: a fixed-size workload (a storm
    /// window, a number of messages, a memory fill, a task-count sweep) whose
    /// repetition would multiply its time. Its interval covers that one window and
    /// the row says so; `compare` pools runs for it.
    Once,
}

/// What runs untimed before a benchmark's first kept sample: stated for every
/// benchmark (`oscost list`), since a figure taken cold and one taken warm answer
/// different questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmup {
    /// The probe runner's warm-up ([`RUNNER_WARMUP`]).
    Runner,
    /// Something untimed first, then the runner's warm-up.
    RunnerAfter(&'static str),
    /// The benchmark's own, described.
    Own(&'static str),
    /// Nothing: the first timed iteration is a sample; what that means for it.
    None(&'static str),
}

/// The probe runner's warm-up, as `oscost list` states it.
pub const RUNNER_WARMUP: &str = "untimed batches, doubling until one lasts 1 ms, then repeated until \
    the round's warm-up has passed (30 ms a benchmark, 10 ms with --quick, shared among its rounds, \
    at least 2 ms a round)";

impl Warmup {
    /// The statement, naming the runner's warm-up ([`RUNNER_WARMUP`] says what it is).
    pub fn describe(&self) -> String {
        match self {
            Warmup::Runner => "the runner's".to_string(),
            Warmup::RunnerAfter(first) => format!("{first}, then the runner's"),
            Warmup::Own(text) => text.to_string(),
            Warmup::None(what) => format!("none: {what}"),
        }
    }
}

/// One benchmark in the registry.
#[derive(Debug)]
pub struct BenchDef {
    pub id: BenchId,
    pub family: Family,
    pub summary: &'static str,
    /// What one timed iteration contains.
    pub timing_model: &'static str,
    /// What runs untimed before the first kept sample.
    pub warmup: Warmup,
    pub in_default_suite: bool,
    pub rounds: RoundPlan,
    /// What the benchmark's time is made of at a scope with these options and
    /// budgets; sets the run's time estimate and the real-time watchdog's bound.
    pub cost: fn(Scope, &BenchOptions, &MeasureConfig) -> Cost,
    /// Refuses options this benchmark cannot run with (sizes beyond the machine's
    /// limits), before anything is measured; the reason names the option.
    pub check: fn(&BenchOptions) -> Result<(), OptionError>,
    pub run: fn(&Ctx, &mut Output) -> Result<(), BenchError>,
}

/// The check of a benchmark that takes every option as it comes.
pub fn no_check(_: &BenchOptions) -> Result<(), OptionError> {
    Ok(())
}

/// Checks the options of every selected benchmark; the first refusal, with its id.
pub fn check_options(selected: &[(&BenchDef, Scope)], opts: &BenchOptions) -> Result<(), OptionsRefused> {
    selected.iter().try_for_each(|(b, _)| (b.check)(opts).map_err(|source| OptionsRefused { id: b.id.clone(), source }))
}

/// Every benchmark, in the order a full run executes them.
pub fn registry() -> Vec<&'static BenchDef> {
    let mut all: Vec<&'static BenchDef> = Vec::new();
    all.extend(syscall::BENCHES.iter());
    all.extend(ctx::BENCHES.iter());
    all.extend(spawn::BENCHES.iter());
    all.extend(load::BENCHES.iter());
    all
}

/// The sweep charts the families declare, for the HTML report.
pub fn sweeps() -> Vec<oscost_figure::sweep::SweepSpec> {
    vec![load::runqueue::SWEEP, ctx::footprint::SWEEP, spawn::FORK_MEM_SWEEP]
}

/// Turns a measurement into its batch row and (when sampled) its per-call row.
/// `ops_per_iteration` divides iteration times into the unit's operation (a round trip
/// holds two hand-offs); counts are copied to the batch row with per-operation ratios.
pub fn rows_from(id: &str, m: &Measurement, unit: Unit, ops_per_iteration: f64, calib: &Calibration) -> Vec<ResultRow> {
    let ops = ops_per_iteration.max(1e-12);
    let mut rows = Vec::new();
    let batch_iters = (m.batch_iterations as f64 * ops).round() as u64;
    if let Some(mut b) = ResultRow::from_samples(
        id,
        Method::Batch,
        unit.clone(),
        m.batch_ns.iter().map(|x| x / ops).collect(),
        batch_iters,
    ) {
        b.params.set(oscost_figure::key::BATCH_SIZE, m.batch_size);
        let per_op = m.trace.clone().map(|t| {
            t.map(|t| oscost_figure::model::TraceSummary {
                ops: (t.ops as f64 * ops).round() as u64,
                traced_ns_per_op: t.traced_ns_per_op / ops,
                ..t
            })
        });
        attach_trace(&mut b, per_op);
        for (k, v) in &m.counts {
            b.counts.insert(*k, *v);
        }
        // The counts cover every timed operation, batched and single.
        let counted = m.counted_iterations as f64 * ops;
        if counted > 0.0 {
            b.counts.insert(Count::CountedOps, counted);
            for (key, v) in &m.counts {
                if let Some(per_op) = key.per_op() {
                    b.counts.insert(per_op, v / counted);
                }
            }
        }
        rows.push(b);
    }
    let per_call_iters = (m.per_call_ns.len() as f64 * ops).round() as u64;
    if let Some(mut p) = ResultRow::from_samples(
        id,
        Method::PerCall,
        unit,
        m.per_call_ns.iter().map(|x| x / ops).collect(),
        per_call_iters,
    ) {
        // Whether the two methods disagree is judged over the rounds
        // (`rounds::methods_disagree`), never in one window.
        if let Some(b) = rows.first() {
            p.params = b.params.clone();
            p.params.remove(oscost_figure::key::BATCH_SIZE.name());
        }
        if p.median < calib.bracket_ns / ops {
            p.flag(Flag::new(FlagCode::BelowBracket,
                format!(
                    "per-call median {:.1} ns is below the cost of the timing bracket ({:.1} ns): read the batch figure",
                    p.median,
                    calib.bracket_ns / ops
                ),
            ));
        }
        if let Some(flag) = coarse_clock(p.median, calib, &m.per_call_ns, ops) {
            p.flag(flag);
        }
        // Both methods were timed between the same two shared-core readings: a round
        // leaves both figures or neither (`rounds::merge`).
        for k in [Count::SharedCoreShare, Count::SharedCoreRatio] {
            if let Some(v) = m.counts.get(&k) {
                p.counts.insert(k, *v);
            }
        }
        rows.push(p);
    }
    rows
}

/// Per-call figures under this many quanta of the bracket's clock are flagged.
pub const COARSE_CLOCK_QUANTA: f64 = 10.0;

/// The `coarse_clock` flag for a per-call median (per operation, `ops` operations to
/// a bracket) under [`COARSE_CLOCK_QUANTA`] quanta of the bracket's clock. The step is
/// the larger of the calibration's and the one the row's own brackets returned
/// (`brackets_ns`, each a bracket's reading less the empty bracket): a counter can
/// step coarser while the run measures than while it was calibrated (a loaded host's
/// virtual counter), and the values returned are what the figure is made of.
fn coarse_clock(median: f64, calib: &Calibration, brackets_ns: &[f64], ops: f64) -> Option<Flag> {
    let ticks: Vec<u64> = brackets_ns
        .iter()
        .map(|ns| ((ns + calib.bracket_ns) * calib.ticks_per_ns).round())
        .filter(|t| t.is_finite() && *t >= 0.0)
        .map(|t| t as u64)
        .collect();
    let returned = oscost_platform::clock::quantum_of(&ticks) as f64 / calib.ticks_per_ns;
    let quantum = calib.quantum_ns?.max(returned) / ops;
    (quantum > 0.0 && median < COARSE_CLOCK_QUANTA * quantum).then(|| {
        Flag::new(
            FlagCode::CoarseClock,
            format!(
                "per-call median {median:.1} ns is under {COARSE_CLOCK_QUANTA:.0} steps of the bracket's clock ({quantum:.1} ns a step): per-call figures are multiples of the step; read the batch figure"
            ),
        )
    })
}

/// Gives a row its trace pass; a failed pass leaves the row as it is and says why on
/// the worker's stderr (the terminal's).
pub fn attach_trace(
    row: &mut ResultRow,
    trace: Option<Result<oscost_figure::model::TraceSummary, crate::trace::TraceError>>,
) {
    match trace {
        Some(Ok(t)) => row.trace = Some(t),
        Some(Err(e)) => eprintln!("warning: {}: no trace pass: {e}", row.benchmark),
        None => {}
    }
}

/// Adds a parameter to every row.
pub fn tag(rows: &mut [ResultRow], key: &str, value: &str) {
    for r in rows {
        r.params.insert(key.to_string(), value.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_is_its_probes_at_the_budget_plus_its_fixed_work() {
        let cfg = MeasureConfig::quick();
        let c = Cost::probes(3).plus(Duration::from_millis(250));
        assert_eq!(c.time(&cfg), cfg.estimate_per_probe() * 3 + Duration::from_millis(250));
        assert_eq!(Cost::fixed(Duration::from_secs(2)).time(&cfg), Duration::from_secs(2));
        assert_eq!(Cost::default().time(&cfg), Duration::ZERO);
    }

    /// Both methods' rows carry the round's shared-core reading, so a round leaves both
    /// figures or neither; the kernel counts stay the batch row's.
    #[test]
    fn both_methods_carry_the_rounds_shared_core_reading() {
        let calib = oscost_platform::clock::calibrate(1_000_000);
        let mut m = Measurement {
            batch_size: 64,
            batch_ns: vec![120.0; 5],
            batch_iterations: 320,
            counted_iterations: 330,
            per_call_ns: vec![125.0; 10],
            ..Default::default()
        };
        m.counts.extend([(Count::SharedCoreShare, 0.5), (Count::SharedCoreRatio, 2.8), (Count::Switches, 3.0)]);
        let rows = rows_from("syscall.getuid", &m, Unit::NsPerCall, 1.0, &calib);
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!(r.counts.get(&Count::SharedCoreShare), Some(&0.5), "{:?}", r.method);
            assert_eq!(r.counts.get(&Count::SharedCoreRatio), Some(&2.8), "{:?}", r.method);
        }
        assert!(rows[0].counts.contains_key(&Count::Switches) && !rows[1].counts.contains_key(&Count::Switches));
    }

    /// A per-call median under ten steps of a 10-ns clock is flagged, one over it is
    /// not, and a clock of single-tick steps (or a run without a quantum) flags nothing.
    #[test]
    fn coarse_clock_fires_under_ten_quanta_only() {
        let mut c = oscost_platform::clock::calibrate(1_000_000);
        c.quantum_ns = Some(10.0);
        assert!(coarse_clock(94.5, &c, &[], 1.0).is_some());
        assert!(coarse_clock(120.0, &c, &[], 1.0).is_none());
        assert!(coarse_clock(60.0, &c, &[], 2.0).is_none(), "two operations to a bracket halve the step");
        c.quantum_ns = Some(0.4);
        assert!(coarse_clock(4.1, &c, &[], 1.0).is_none() && coarse_clock(3.9, &c, &[], 1.0).is_some());
        c.quantum_ns = None;
        assert!(coarse_clock(1.0, &c, &[], 1.0).is_none());
    }

    /// The step the row's own brackets returned counts when it is coarser than the
    /// calibration's: readings that move 10 ns of ticks at a time (a loaded host's
    /// counter) flag a 60 ns median though the calibration saw single ticks; readings
    /// of single ticks do not.
    #[test]
    fn coarse_clock_reads_the_step_the_brackets_returned() {
        let mut c = oscost_platform::clock::calibrate(1_000_000);
        c.quantum_ns = Some(1.0 / c.ticks_per_ns);
        let step = (10.0 * c.ticks_per_ns).round().max(2.0);
        // Bracket readings (empty bracket included) on the step, less the bracket.
        let coarse: Vec<f64> = (0..400).map(|i| f64::from(5 + i % 7) * step / c.ticks_per_ns - c.bracket_ns).collect();
        assert!(coarse_clock(60.0, &c, &coarse, 1.0).is_some());
        let fine: Vec<f64> = (0..400).map(|i| f64::from(150 + i % 37) / c.ticks_per_ns - c.bracket_ns).collect();
        assert!(coarse_clock(60.0, &c, &fine, 1.0).is_none());
    }

    #[test]
    fn ids_are_unique_and_prefixed_by_family() {
        let reg = registry();
        let mut ids: Vec<_> = reg.iter().map(|b| b.id.as_str()).collect();
        for b in &reg {
            assert!(b.id.starts_with(&format!("{}.", b.family.name())), "{}", b.id);
            assert!(!b.summary.is_empty() && !b.timing_model.is_empty());
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), reg.len());
    }
}
