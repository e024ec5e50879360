//! The shapes every part of oscost agrees on: a result row, its validity flags, and a
//! run with its machine. The JSON output, the store and the reports all read these.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{Percentiles, Summary};
use oscost_platform::machine::Machine;

/// Version of the JSON layout (`--json`, exports).
pub const SCHEMA_VERSION: u32 = 1;

/// The longest name a run may be saved under.
pub const MAX_SAVE_NAME: usize = 64;

/// Why a name cannot be a saved run's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaveNameError {
    #[error("a saved name cannot be empty")]
    Empty,
    #[error("a saved name is at most {MAX_SAVE_NAME} bytes ({len} given)")]
    TooLong { len: usize },
    #[error("{0:?} reads as a run id; choose a name with a letter in it")]
    RunId(String),
    #[error("\"latest\" always means the newest run; choose another name")]
    Latest,
    #[error("a saved name cannot hold control characters")]
    Control,
}

/// A name to save a run under: one that `compare`, `show` and `report` can find again,
/// so not empty, not a run id (all digits) and not `latest`; printable; short.
pub fn check_save_name(name: &str) -> Result<(), SaveNameError> {
    if name.trim().is_empty() {
        return Err(SaveNameError::Empty);
    }
    if name.len() > MAX_SAVE_NAME {
        return Err(SaveNameError::TooLong { len: name.len() });
    }
    if name.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SaveNameError::RunId(name.into()));
    }
    if name == "latest" {
        return Err(SaveNameError::Latest);
    }
    if name.chars().any(char::is_control) {
        return Err(SaveNameError::Control);
    }
    Ok(())
}

pub use crate::key::{BenchId, FigureKey, Method, Params, VariantText};

/// The validity flags a row can carry; serialised as their snake_case names, which
/// are what stored runs, exports and JSON output contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagCode {
    /// A vDSO row: no kernel entry by design.
    Vdso,
    /// A C library wrapper far below the enosys floor (answered from a cache).
    NoKernelEntry,
    /// A real system call measured below the enosys floor.
    BelowFloor,
    /// The batch and per-call figures differ by more than the bracket explains.
    MethodsDisagree,
    /// A per-call median smaller than the bracket it was measured with.
    BelowBracket,
    /// sched_yield switched to another task in more than 1% of calls.
    YieldSwitched,
    /// A same-CPU hand-off saw fewer switches than its design needs.
    TooFewSwitches,
    /// More than one switch per hand-off.
    ExtraSwitches,
    /// Involuntary switches across CPUs or unpinned.
    Preempted,
    /// An unpinned row whose tasks moved between CPUs.
    Migrated,
    /// A difference whose interval reaches zero.
    UnstableDifference,
    /// Uneven progress in a yield storm.
    Uneven,
    /// A CPU share far from what the nice weights promise.
    Unfair,
    /// A sleep whose time is mostly the thread's timer slack.
    TimerSlack,
    /// Third tasks ran between wake-up and run in a visible share of the traced
    /// hand-offs.
    Intruded,
    /// The trace's switch count and /proc's differ by more than 1%.
    TraceDisagrees,
    /// A hand-off row whose rounds disagree on how many switches a hand-off made:
    /// some rounds switched on (nearly) every hand-off, others on far fewer.
    Bimodal,
    /// A per-call figure under ten quanta of its bracket's clock
    /// (`Calibration::quantum_ns`): its digits below the quantum are the
    /// conversion's, not the clock's.
    CoarseClock,
    /// A figure whose rounds sit at two separated levels (`stats::modes`): fresh
    /// workers landed in different modes, and the median belongs to one of them.
    Modes,
    /// Rounds measured while the host shared the measuring CPU's core
    /// (`shared_core`) are in the figure: too few rounds had the core to themselves to
    /// leave them out, or the row is the figure's `core=shared` twin.
    SharedCore,
}

impl FlagCode {
    /// Every flag, in declaration order.
    pub const ALL: [FlagCode; 20] = [
        FlagCode::Vdso,
        FlagCode::NoKernelEntry,
        FlagCode::BelowFloor,
        FlagCode::MethodsDisagree,
        FlagCode::BelowBracket,
        FlagCode::YieldSwitched,
        FlagCode::TooFewSwitches,
        FlagCode::ExtraSwitches,
        FlagCode::Preempted,
        FlagCode::Migrated,
        FlagCode::UnstableDifference,
        FlagCode::Uneven,
        FlagCode::Unfair,
        FlagCode::TimerSlack,
        FlagCode::Intruded,
        FlagCode::TraceDisagrees,
        FlagCode::Bimodal,
        FlagCode::CoarseClock,
        FlagCode::Modes,
        FlagCode::SharedCore,
    ];

    /// The code as stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            FlagCode::Vdso => "vdso",
            FlagCode::NoKernelEntry => "no_kernel_entry",
            FlagCode::BelowFloor => "below_floor",
            FlagCode::MethodsDisagree => "methods_disagree",
            FlagCode::BelowBracket => "below_bracket",
            FlagCode::YieldSwitched => "yield_switched",
            FlagCode::TooFewSwitches => "too_few_switches",
            FlagCode::ExtraSwitches => "extra_switches",
            FlagCode::Preempted => "preempted",
            FlagCode::Migrated => "migrated",
            FlagCode::UnstableDifference => "unstable_difference",
            FlagCode::Uneven => "uneven",
            FlagCode::Unfair => "unfair",
            FlagCode::TimerSlack => "timer_slack",
            FlagCode::Intruded => "intruded",
            FlagCode::TraceDisagrees => "trace_disagrees",
            FlagCode::Bimodal => "bimodal",
            FlagCode::CoarseClock => "coarse_clock",
            FlagCode::Modes => "modes",
            FlagCode::SharedCore => "shared_core",
        }
    }

    /// Whether the flag says the figure is not what its row names (a hand-off that did
    /// not switch is no switch's cost), so that no ratio of it earns a verdict.
    pub fn voids_comparison(self) -> bool {
        matches!(self, FlagCode::TooFewSwitches | FlagCode::Bimodal)
    }

    /// Whether a row carrying the flag earns no verdict in a comparison (`compare`,
    /// paired conditions, history's change points): every flag that says the
    /// measurement was disturbed, is not what the row names, or cannot resolve a
    /// change. The flags that say what the primitive does by design (a vDSO row, a
    /// cached wrapper, a sleep that is mostly slack, a scheduler's uneven or unfair
    /// shares) do not: comparing those is the point; nor do those that set the level
    /// against another figure of the same run (below the enosys floor, the two methods
    /// apart): they doubt where the figure sits, not how it moves between runs.
    pub fn withholds_verdict(self) -> bool {
        match self {
            FlagCode::Vdso
            | FlagCode::NoKernelEntry
            | FlagCode::TimerSlack
            | FlagCode::Uneven
            | FlagCode::Unfair
            | FlagCode::BelowFloor
            | FlagCode::MethodsDisagree => false,
            FlagCode::BelowBracket
            | FlagCode::YieldSwitched
            | FlagCode::TooFewSwitches
            | FlagCode::ExtraSwitches
            | FlagCode::Preempted
            | FlagCode::Migrated
            | FlagCode::UnstableDifference
            | FlagCode::Intruded
            | FlagCode::TraceDisagrees
            | FlagCode::Bimodal
            | FlagCode::CoarseClock
            | FlagCode::Modes
            | FlagCode::SharedCore => true,
        }
    }

    /// Whether the flag doubts the figure itself (not only its conditions): a chart
    /// shows such a figure marked, not as a point of its curve. Besides the flags
    /// that void a comparison: the trace and /proc disagree on the switches, the
    /// figure is below what the primitive can cost, or the two timing methods
    /// disagree.
    pub fn doubts_figure(self) -> bool {
        self.voids_comparison()
            || matches!(
                self,
                FlagCode::TraceDisagrees
                    | FlagCode::BelowFloor
                    | FlagCode::BelowBracket
                    | FlagCode::MethodsDisagree
                    | FlagCode::Modes
                    | FlagCode::SharedCore
            )
    }
}

impl std::fmt::Display for FlagCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A validity flag: its code and the reason, in words, that it was raised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flag {
    pub flag: FlagCode,
    pub reason: String,
}

impl Flag {
    pub fn new(flag: FlagCode, reason: impl Into<String>) -> Self {
        Self { flag, reason: reason.into() }
    }
}

/// Declares `Count` from one list, each count's variant and stored name written once:
/// the name is its serde name, its `as_str` and its place in `ALL`.
macro_rules! counts {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal,)*) => {
        /// The kernel-observed and derived counts a row carries; serialised as their
        /// snake_case names, which are what stored runs, exports and JSON contain. Declared
        /// in the alphabetical order of those names, so a map of counts (ordered by
        /// declaration) prints in its names' order, as a map keyed by the names would.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Count {
            $($(#[doc = $doc])* #[serde(rename = $name)] $variant,)*
        }

        impl Count {
            /// Every count, in declaration (alphabetical) order.
            pub const ALL: [Count; [$($name),*].len()] = [$(Count::$variant),*];

            /// The name as stored and printed.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Count::$variant => $name,)*
                }
            }
        }
    };
}

counts! {
    /// The CPUs the measured tasks could run on (their affinity mask's size).
    AllowedCpus = "allowed_cpus",
    /// Children reaped with their exit status checked.
    ChildrenVerified = "children_verified",
    /// Chat: messages its client readers read per wake-up (per voluntary switch).
    ClientMessagesPerWake = "client_messages_per_wake",
    /// Operations over which the counts were taken.
    CountedOps = "counted_ops",
    /// Chat: the share of the run's CPU time its CPUs sat idle (cpuidle states).
    CpuIdleShare = "cpu_idle_share",
    /// CPU cycles of the measuring thread.
    Cycles = "cycles",
    /// Cycles per operation.
    CyclesPerOp = "cycles_per_op",
    /// Chat: segments that carried data per message written to a connection.
    DataSegmentsPerMessage = "data_segments_per_message",
    /// Messages delivered.
    Delivered = "delivered",
    /// A share's distance from its promise.
    Deviation = "deviation",
    /// Messages a complete run delivers.
    ExpectedPerRun = "expected_per_run",
    /// The enosys floor measured beside the row in the same round (batch median, ns).
    FloorNs = "floor_ns",
    /// Share of samples with more than 10 runnable.
    FracAbove10 = "frac_above_10",
    /// Share of samples with 20 or more runnable.
    FracAbove20 = "frac_above_20",
    /// The median hand-off time, ns.
    HandoffNsMedian = "handoff_ns_median",
    /// Chat: how often a CPU of the run went idle, per message delivered.
    IdleEntriesPerMessage = "idle_entries_per_message",
    /// Instructions retired by the measuring thread.
    Instructions = "instructions",
    /// Instructions per operation.
    InstructionsPerOp = "instructions_per_op",
    /// A fit's intercept, ns.
    InterceptNs = "intercept_ns",
    /// Switches forced on the watched tasks (preemptions).
    InvoluntarySwitches = "involuntary_switches",
    /// Jain's fairness index.
    JainIndex = "jain_index",
    /// The largest share's distance from its promise.
    LargestDeviation = "largest_deviation",
    /// Trace records the kernel could not write.
    LostEvents = "lost_events",
    /// Chat: when the median client receiver had all its messages, as a share of the
    /// timed region (1: every user finished at the end).
    MedianFinishShare = "median_finish_share",
    /// Moves of the watched tasks between CPUs.
    Migrations = "migrations",
    /// Migrations per operation.
    MigrationsPerOp = "migrations_per_op",
    /// The slowest task's progress over the fastest's.
    MinMaxRatio = "min_max_ratio",
    /// The median divided by the switches observed per operation.
    NsPerObservedSwitch = "ns_per_observed_switch",
    /// Samples above Tukey's upper fences.
    OutliersHigh = "outliers_high",
    /// Samples below Tukey's lower fences.
    OutliersLow = "outliers_low",
    /// The forking parent's private anonymous memory (RssAnon), KiB: what fork copies.
    ParentAnonKib = "parent_anon_kib",
    /// The forking parent's file-backed resident memory (RssFile), KiB.
    ParentFileKib = "parent_file_kib",
    /// The forking parent's resident memory, KiB.
    ParentRssKib = "parent_rss_kib",
    /// Switches counted by per-task perf software counters.
    PerfContextSwitches = "perf_context_switches",
    /// Perf-counted switches per operation.
    PerfContextSwitchesPerOp = "perf_context_switches_per_op",
    /// Migrations counted by per-task perf software counters.
    PerfCpuMigrations = "perf_cpu_migrations",
    /// The CPU share the nice weights promise.
    PromisedShare = "promised_share",
    /// A fit's coefficient of determination.
    RSquared = "r_squared",
    /// The wall time of the round that measured the row, s: a fresh worker started,
    /// its warm-up, every variant the round measured, the worker reaped (what one more
    /// round of the benchmark costs; `oscost plan` reads it). Rounds keep the median.
    RoundSeconds = "round_seconds",
    /// What the run spent before its first round (the store opened, the preflight,
    /// the clocks calibrated), s: what one more run costs beyond its rounds (`oscost
    /// plan` reads it). The same on every row of a run.
    RunSetupSeconds = "run_setup_seconds",
    /// The samples a row's statistics were computed from, where it stores a
    /// subsample of them (its `n` is then the stored count).
    SamplesObserved = "samples_observed",
    /// Length of the observation, s.
    Seconds = "seconds",
    /// Chat: TCP segments sent (pure ACKs included) per message written to a
    /// connection.
    SegmentsPerMessage = "segments_per_message",
    /// Chat: messages its server readers read per wake-up (per voluntary switch).
    ServerMessagesPerWake = "server_messages_per_wake",
    /// The shared-core probe's largest reading in a round: an L1-sized walk's time
    /// over a small walk's (`shared_core`; about 1 with the core to itself, 2–3.5
    /// with the host's work on its SMT sibling).
    SharedCoreRatio = "shared_core_ratio",
    /// Rounds left out of a figure because the probe found the host sharing the
    /// measuring CPU's core (they are the figure's `core=shared` twin).
    SharedCoreRounds = "shared_core_rounds",
    /// The share of a round's shared-core probe readings that found the core shared.
    SharedCoreShare = "shared_core_share",
    /// All switches of the watched tasks.
    Switches = "switches",
    /// Switches per timed iteration.
    SwitchesPerIteration = "switches_per_iteration",
    /// Chat: switches of its threads (voluntary and forced) per message delivered.
    SwitchesPerMessage = "switches_per_message",
    /// Switches per operation.
    SwitchesPerOp = "switches_per_op",
    /// System-wide switches per second.
    SwitchesPerSOverall = "switches_per_s_overall",
    /// The sleeping thread's timer slack, ns.
    TimerSlackNs = "timer_slack_ns",
    /// Switches the watched tasks made by blocking.
    VoluntarySwitches = "voluntary_switches",
    /// The 99th percentile of a task's wake-up to run, ns.
    WakeToRunP99Ns = "wake_to_run_p99_ns",
    /// Yields per second of each task.
    YieldsPerSPerTask = "yields_per_s_per_task",
}

impl Count {
    /// Whether the count is a total over the timed region, which rounds add up (the
    /// others are ratios or settings, of which rounds keep the median).
    pub fn is_total(self) -> bool {
        matches!(
            self,
            Count::ChildrenVerified
                | Count::CountedOps
                | Count::Cycles
                | Count::Delivered
                | Count::Instructions
                | Count::InvoluntarySwitches
                | Count::Migrations
                | Count::PerfContextSwitches
                | Count::PerfCpuMigrations
                | Count::Switches
                | Count::VoluntarySwitches
        )
    }

    /// The per-operation figure derived from this total, for the totals that have one.
    pub fn per_op(self) -> Option<Count> {
        match self {
            Count::Switches => Some(Count::SwitchesPerOp),
            Count::Migrations => Some(Count::MigrationsPerOp),
            Count::Instructions => Some(Count::InstructionsPerOp),
            Count::Cycles => Some(Count::CyclesPerOp),
            Count::PerfContextSwitches => Some(Count::PerfContextSwitchesPerOp),
            _ => None,
        }
    }
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A variant that could not run here (or failed), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub benchmark: BenchId,
    pub params: VariantText,
    pub reason: String,
}

/// One figure: a benchmark under given parameters, measured by one method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    pub benchmark: BenchId,
    pub params: Params,
    pub method: Method,
    pub unit: crate::unit::Unit,
    /// Number of samples the statistics summarise.
    pub n: usize,
    /// Number of primitive operations timed in all (each sample may hold many).
    pub iterations: u64,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub percentiles: Option<Percentiles>,
    /// Kernel-observed counters over the timed region (switches, migrations, …).
    /// Only finite values are written; a null read back (as runs stored before this
    /// rule hold) is left out rather than making the run unreadable.
    #[serde(serialize_with = "finite_counts::serialize", deserialize_with = "finite_counts::deserialize")]
    pub counts: BTreeMap<Count, f64>,
    pub flags: Vec<Flag>,
    /// The raw samples, in `unit`. Kept in the store and in exports; left out of
    /// `--json` run output unless asked for, where they would dwarf the summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
    /// The rounds behind the row, in the order they ran: how many of `samples` each
    /// contributed (consecutive slices) and the counts each took. Empty for a row that
    /// was never split (runs stored before rounds existed): one round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<Round>,
    /// What the kernel's scheduler tracepoints saw in the trace pass that followed the
    /// timed pass (`trace`); absent when tracing was unavailable or not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSummary>,
}

/// The trace pass behind a row: the same workload run again, untimed by the row, with
/// sched_switch, sched_waking, sched_wakeup_new and sched_migrate_task recorded on
/// every allowed CPU. Counts are over the traced window only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Operations (hand-offs, calls, cycles) the traced pass ran.
    pub ops: u64,
    /// The traced pass's own time per operation, ns (tracing makes switches dearer:
    /// beside the row's untraced figure, this is the observer effect).
    pub traced_ns_per_op: f64,
    /// Switch-ins of the watched tasks.
    pub handoffs: u64,
    /// Switch-ins straight from another watched task.
    pub direct: u64,
    /// Switch-ins from the idle task (a hand-off across CPUs wakes an idle CPU).
    pub idle_passes: u64,
    /// Hand-offs before which a third task ran on the CPU between wake-up and run.
    pub intrusions: u64,
    /// The tasks that intruded most, by name, with how many hand-offs each delayed.
    pub intruders: Vec<Intruder>,
    /// Wake-up (sched_waking) to run (sched_switch in) of the watched tasks, ns.
    pub wake_to_run: Option<LatencySummary>,
    /// Switch-outs of the watched tasks, and how many of them left runnable
    /// (preempted, or yielding) rather than asleep.
    pub switch_outs: u64,
    pub preempted: u64,
    /// sched_migrate_task events of the watched tasks (and their children).
    pub migrations: u64,
    /// The watched tasks' switches from /proc, read just before and just after the
    /// traced loop, for agreement; reading /proc takes time, so the events bracket it:
    /// `switch_outs` counts the loop itself, `switch_outs_outer` the loop and the reads.
    pub proc_switches: Option<u64>,
    #[serde(default)]
    pub switch_outs_outer: u64,
    /// Records the kernel could not write (full ring buffers).
    pub lost: u64,
    /// CPUs recorded.
    pub cpus: usize,
    /// Who ran first after each fork of a watched task (creation benchmarks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn: Option<SpawnOrder>,
    /// Switch-ins the kernel did not trace, inferred from the task's next event
    /// (`trace::handoff::summarize`).
    #[serde(default)]
    pub untraced_switch_ins: u64,
}

/// A third task that ran between a watched task's wake-up and its run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intruder {
    pub comm: String,
    pub count: u64,
}

/// Percentiles of a latency, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub n: u64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// After sched_wakeup_new of a child: did the child run before the parent went on?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnOrder {
    /// Children whose creation was seen.
    pub children: u64,
    /// The parent was preempted on its CPU in favour of the child.
    pub child_first: u64,
    /// The child started on another CPU while the parent ran on.
    pub child_elsewhere: u64,
    /// The child ran only once the parent had blocked (waiting for it) on its CPU.
    pub parent_first: u64,
    /// sched_migrate_task events of the children.
    pub child_migrations: u64,
}

impl TraceSummary {
    /// Whether /proc's switch count agrees with the events' within 1% (or 2 switches,
    /// for short passes): it must lie between the switches traced in the loop and
    /// those traced in the loop and the /proc reads around it. None without a count.
    pub fn switches_agree(&self) -> Option<bool> {
        let p = self.proc_switches? as f64;
        let (inner, outer) = (self.switch_outs as f64, self.switch_outs_outer.max(self.switch_outs) as f64);
        let slack = |x: f64| (0.01 * x).max(2.0);
        Some(p >= inner - slack(inner) && p <= outer + slack(outer))
    }
}

/// One round of a row: a fresh worker process's measurement at one moment of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Samples this round contributed.
    pub samples: usize,
    /// Which of the benchmark's rounds this was (from 0), so that rounds of two rows
    /// measured together pair by round, not by position, when a row is missing from a
    /// round. None in rows stored before rounds were numbered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<usize>,
    /// The round's own counts (its floor, its switches, …).
    #[serde(default, serialize_with = "finite_counts::serialize", deserialize_with = "finite_counts::deserialize")]
    pub counts: BTreeMap<Count, f64>,
}

impl ResultRow {
    /// The samples of each round, as slices of `samples` (one slice when the row
    /// holds no round structure or the structure does not fit the samples).
    pub fn round_slices(&self) -> Vec<&[f64]> {
        let total: usize = self.rounds.iter().map(|r| r.samples).sum();
        if self.rounds.is_empty() || total != self.samples.len() {
            return vec![&self.samples[..]];
        }
        let mut out = Vec::with_capacity(self.rounds.len());
        let mut at = 0;
        for r in &self.rounds {
            out.push(&self.samples[at..at + r.samples]);
            at += r.samples;
        }
        out
    }

    /// Each round's number (`Round::at`), or its position where the row does not
    /// carry numbers; one entry per slice of [`ResultRow::round_slices`].
    pub fn round_numbers(&self) -> Vec<usize> {
        let slices = self.round_slices().len();
        if self.rounds.len() == slices && self.rounds.iter().all(|r| r.at.is_some()) {
            self.rounds.iter().filter_map(|r| r.at).collect()
        } else {
            (0..slices).collect()
        }
    }

    /// How many rounds stand behind the row.
    pub fn round_count(&self) -> usize {
        self.rounds.len().max(1)
    }

    /// A row summarising `samples` (already in `unit`). None for no usable samples.
    pub fn from_samples(
        benchmark: impl Into<BenchId>,
        method: Method,
        unit: impl Into<crate::unit::Unit>,
        samples: Vec<f64>,
        iterations: u64,
    ) -> Option<Self> {
        let s: Summary = crate::stats::summarize(&samples)?;
        let percentiles = if method == Method::PerCall { crate::stats::percentiles(&samples) } else { None };
        let mut counts = BTreeMap::new();
        if s.outliers.total() > 0 {
            counts.insert(Count::OutliersLow, (s.outliers.low_mild + s.outliers.low_severe) as f64);
            counts.insert(Count::OutliersHigh, (s.outliers.high_mild + s.outliers.high_severe) as f64);
        }
        Some(Self {
            benchmark: benchmark.into(),
            params: Params::new(),
            method,
            unit: unit.into(),
            n: s.n,
            iterations,
            min: s.min,
            median: s.median,
            mean: s.mean,
            stddev: s.stddev,
            ci_low: s.ci_low,
            ci_high: s.ci_high,
            percentiles,
            counts,
            flags: Vec::new(),
            samples,
            rounds: Vec::new(),
            trace: None,
        })
    }

    /// Sets a declared parameter.
    pub fn with<T: crate::key::ParamType>(mut self, p: crate::key::Param<T>, value: impl Into<T::Write>) -> Self {
        self.params.set(p, value);
        self
    }

    /// Whether the row is the figure `key` names as a run stores it: same benchmark
    /// and method, and every parameter of the key with the key's value (the run may
    /// have labelled the row further: its policy, runner or condition).
    pub fn carries(&self, key: &FigureKey) -> bool {
        self.benchmark == key.bench && self.method == key.method && self.params.includes(key.params())
    }

    /// Adds a parameter.
    pub fn with_param(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.params.insert(key.to_string(), value.into());
        self
    }

    /// Raises a flag unless the same code is already raised.
    pub fn flag(&mut self, flag: Flag) {
        if !self.flags.iter().any(|f| f.flag == flag.flag) {
            self.flags.push(flag);
        }
    }

    pub fn has_flag(&self, code: FlagCode) -> bool {
        self.flags.iter().any(|f| f.flag == code)
    }

    /// The row's 95% interval, when it has one worth printing: both ends finite and
    /// apart. A single value (a simulated figure, one window) has none, and a
    /// zero-width pair would claim a certainty no measurement has.
    pub fn interval(&self) -> Option<(f64, f64)> {
        (self.ci_low.is_finite() && self.ci_high.is_finite() && self.ci_high > self.ci_low)
            .then_some((self.ci_low, self.ci_high))
    }

    /// The parameters that tell variants apart, as one short string such as
    /// `mode=process placement=same_cpu` (bookkeeping parameters left out).
    pub fn variant_label(&self) -> String {
        self.params.label()
    }

    /// The parameters of [`ResultRow::variant_label`], each as `key=value`.
    pub fn variant_params(&self) -> Vec<String> {
        self.params.variant_params()
    }

    /// Whether the row is the figure `key` names (its benchmark, method and variant).
    pub fn is(&self, key: &FigureKey) -> bool {
        self.benchmark == key.bench && self.method == key.method && self.variant_label() == key.variant()
    }

    /// The row's identity: benchmark, method and parameters.
    pub fn key(&self) -> FigureKey {
        FigureKey::new(self.benchmark.clone(), self.method, self.params.clone())
    }
}

/// A run: when, how it was invoked, on what machine, and what it measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub id: i64,
    /// RFC 3339 UTC start time.
    pub started_at: String,
    pub command_line: String,
    #[serde(default)]
    pub save_name: Option<String>,
    pub status: RunStatus,
    /// A run's name everywhere it is copied (exports, other databases): importing a
    /// run whose UUID a database already holds adds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// What made the run; runs stored before kinds existed were measured.
    #[serde(default, skip_serializing_if = "RunKind::is_measure")]
    pub kind: RunKind,
}

/// The kinds of run a database holds (`RunInfo::kind`), stored and exported as their
/// lowercase names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// Benchmarks timed on this machine (`oscost run`).
    #[default]
    Measure,
    /// The scheduler's counters sampled while the machine ran its own work
    /// (`oscost observe`).
    Observe,
    /// The scheduler's events recorded (`oscost trace`).
    Trace,
    /// A scheduler simulated (`oscost sim`): no figure of it was measured.
    Sim,
    /// Benchmarks timed back to back to learn this machine's run-to-run noise
    /// (`oscost noise`): A/A runs, from which `compare` takes each figure's spread between runs.
    Noise,
}

impl RunKind {
    pub const ALL: [RunKind; 5] = [RunKind::Measure, RunKind::Observe, RunKind::Trace, RunKind::Sim, RunKind::Noise];

    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Measure => "measure",
            RunKind::Observe => "observe",
            RunKind::Trace => "trace",
            RunKind::Sim => "sim",
            RunKind::Noise => "noise",
        }
    }

    /// The kind a stored name stands for.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    fn is_measure(&self) -> bool {
        *self == RunKind::Measure
    }
}

/// What a run can be: measuring, done, stopped by a signal, stopped by an error, or
/// left `running` by a process that is gone (shown, never stored, as abandoned).
/// Stored, printed and exported as the lowercase name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum RunStatus {
    Running,
    Complete,
    Interrupted,
    Failed,
    Abandoned,
}

impl RunStatus {
    pub const ALL: [RunStatus; 5] =
        [RunStatus::Running, RunStatus::Complete, RunStatus::Interrupted, RunStatus::Failed, RunStatus::Abandoned];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
            RunStatus::Abandoned => "abandoned",
        }
    }

    /// The status a stored name stands for.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Every name, for messages: "running, complete, …".
    pub fn names() -> String {
        Self::ALL.map(RunStatus::as_str).join(", ")
    }
}

/// A status read from text (an export): an unknown name says what the names are.
impl TryFrom<String> for RunStatus {
    type Error = UnknownStatus;
    fn try_from(name: String) -> Result<Self, UnknownStatus> {
        RunStatus::parse(&name).ok_or(UnknownStatus(name))
    }
}

/// A run status by a name no status has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("status {0:?} is none of {names}", names = RunStatus::names())]
pub struct UnknownStatus(pub String);

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A whole run, as written by `--json` and by exports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunDocument {
    pub schema_version: u32,
    pub run: RunInfo,
    pub machine: Machine,
    pub results: Vec<ResultRow>,
}

impl RunDocument {
    /// A complete run of `rows` on `machine`, for tests of what reads runs.
    pub fn for_tests(id: i64, machine: Machine, results: Vec<ResultRow>) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            run: RunInfo {
                id,
                started_at: "t".into(),
                command_line: "c".into(),
                save_name: None,
                status: RunStatus::Complete,
                uuid: None,
                kind: RunKind::Measure,
            },
            machine,
            results,
        }
    }
}

/// Counts as JSON: a count that is not a finite number (0/0 of an empty window) is
/// no count at all, so it is neither written nor fatal to read.
pub mod finite_counts {
    use super::Count;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    /// Writes the finite counts only.
    pub fn serialize<S: Serializer>(counts: &BTreeMap<Count, f64>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(counts.iter().filter(|(_, v)| v.is_finite()))
    }

    /// Reads a counts map, leaving out nulls and non-finite numbers.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<Count, f64>, D::Error> {
        let raw = BTreeMap::<Count, Option<f64>>::deserialize(d)?;
        Ok(raw.into_iter().filter_map(|(k, v)| v.filter(|v| v.is_finite()).map(|v| (k, v))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_are_the_serde_names() {
        assert!(Count::ALL.windows(2).all(|w| w[0].as_str() < w[1].as_str()), "alphabetical");
        for c in Count::ALL {
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<Count>(&format!("\"{c}\"")).unwrap(), c);
        }
        for f in FlagCode::ALL {
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{}\"", f.as_str()));
        }
        assert!(serde_json::from_str::<Count>("\"no_such_count\"").is_err());
    }

    #[test]
    fn a_count_that_is_not_a_number_is_neither_written_nor_fatal_to_read() {
        let mut r = ResultRow::from_samples("load.storm", Method::Batch, "yields/s", vec![1.0, 2.0], 2).unwrap();
        r.counts.insert(Count::JainIndex, f64::NAN);
        r.counts.insert(Count::MinMaxRatio, 0.5);
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"counts\":{\"min_max_ratio\":0.5}"), "{text}");
        // A run stored before the rule holds a null: it loads, without that count.
        let legacy = text.replace("\"min_max_ratio\":0.5", "\"min_max_ratio\":0.5,\"jain_index\":null");
        assert_ne!(legacy, text);
        let back: ResultRow = serde_json::from_str(&legacy).unwrap();
        assert_eq!(back.counts.len(), 1);
        assert_eq!(back.counts[&Count::MinMaxRatio], 0.5);
    }
}
