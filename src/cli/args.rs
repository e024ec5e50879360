//! The argument definitions, with clap value parsers for the values that have a shape
//! (sizes, lists, durations, dates), so a malformed value is refused by clap itself
//! (exit 2, naming the flag) and the rest of the program sees typed values.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use clap::{Args, Parser, Subcommand};
use clap_complete::engine::ArgValueCompleter;

use super::complete;

use crate::placement::Policy;

#[derive(Parser, Debug)]
#[command(
    name = "oscost",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("OSCOST_GIT_COMMIT"), ")"),
    about = "What the operating system charges for its primitives, measured and proven"
)]
pub struct Cli {
    /// Results database: a SQLite file, or a postgres://user@host:port/dbname URL
    /// (default: $XDG_DATA_HOME/oscost/results.db or ~/.local/share/oscost/results.db).
    #[arg(long, global = true, value_name = "PATH|URL", env = "OSCOST_DB")]
    pub db: Option<PathBuf>,
    /// Print tables with every column and nothing wrapped (by default a table is fitted
    /// to the terminal's width, or to 100 columns when the output is not a terminal).
    #[arg(long, global = true)]
    pub wide: bool,
    /// Print a run's full table: every row (the per-call, raw/libc and phase twins a
    /// default run folds), the kernel counts, the trace pass and each flag's reason.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run benchmarks (default suite without arguments) and store the run.
    Run(Box<RunArgs>),
    /// Learn this machine's run-to-run noise: run the benchmarks N times back to back
    /// (A/A runs, stored as kind `noise`) and print each figure's spread between runs;
    /// `compare` then widens a one-run side's interval by it on a machine with the same
    /// comparability key. Takes every option of `run`.
    Noise(Box<NoiseArgs>),
    /// Put oscost's figures beside perf bench, hackbench, cyclictest, hyperfine and a raw
    /// C loop, run interleaved pair by pair: each ratio with its interval, and each gap
    /// named with its measured figure. Nothing is stored.
    Crosscheck(crate::crosscheck::Args),
    /// List every benchmark with its description and timing model (or the suites).
    List {
        /// List the named suites instead.
        #[arg(long)]
        suites: bool,
    },
    /// Print the machine fingerprint and the clock calibration.
    Info {
        #[arg(long)]
        json: bool,
    },
    /// Reprint a stored run (the latest by default).
    Show {
        /// Run id, saved name, or `latest`.
        #[arg(add = ArgValueCompleter::new(complete::runs))]
        run: Option<String>,
        /// Same as --format json.
        #[arg(long)]
        json: bool,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Include raw samples in JSON output (--json or --format json only).
        #[arg(long)]
        samples: bool,
        /// Print one row's percentile distribution in HdrHistogram's layout instead:
        /// ROW is the benchmark id and any of its parameters, e.g.
        /// 'ctx.pipe mode=process placement=same_cpu' (a per-call row when there is one).
        #[arg(long, value_name = "ROW", conflicts_with_all = ["json", "suite"])]
        histogram: Option<String>,
        /// Reprint the run in a suite's layout (travis98, molnar02, bartz24, lmbench):
        /// the published figures beside the run's simulated and measured ones.
        #[arg(long, value_name = "NAME", add = ArgValueCompleter::new(complete::suites))]
        suite: Option<String>,
    },
    /// Compare two runs (or two sets of runs): ratio of medians with an interval from
    /// resampling runs, rounds and samples, and a verdict where it clears the noise.
    Compare {
        /// The sides, the first the baseline: each a run (id, saved name or `latest`),
        /// runs pooled as one side (`1,2,3`), and `@PATH` to read it from another
        /// database (`latest@b.db`). Two sides: A and B; more: one column per side.
        #[arg(add = ArgValueCompleter::new(complete::runs))]
        sides: Vec<String>,
        /// Use the run saved under this name as the baseline (A).
        #[arg(long, value_name = "NAME")]
        baseline: Option<String>,
        /// Read the sides after the first from another database (results from another machine).
        #[arg(long, value_name = "PATH")]
        db_b: Option<PathBuf>,
        /// Make each machine (host) a side, pooling its runs: the runs given, or every
        /// complete run of the databases read.
        #[arg(long, value_enum, value_name = "KEY")]
        by: Option<GroupBy>,
        /// Threshold in percent, the smallest change worth naming: verdicts need the
        /// interval to clear it [default: 3]. Where a one-run side's machine has noise
        /// runs (`oscost noise`) in that side's database, its interval also holds its
        /// figure's spread between runs.
        #[arg(long, value_name = "PCT")]
        threshold: Option<f64>,
        /// Exit 3 when any figure's verdict is `slower` (or, with `change`, any clear
        /// change either way), for a CI job to gate on; `uncertain` never fails.
        #[arg(long, value_enum, value_name = "WHAT")]
        fail_on: Option<crate::report::compare::FailOn>,
        /// Print every fingerprint field of both machines, whole (by default: one line
        /// when they agree, else only the fields that differ; JSON always has them all).
        #[arg(long)]
        machine: bool,
        #[arg(long)]
        json: bool,
    },
    /// Export runs (default: the latest) as JSON (everything, for import), CSV, or one
    /// run as a Prometheus textfile; a file given with -o is replaced atomically.
    Export {
        #[arg(add = ArgValueCompleter::new(complete::runs))]
        runs: Vec<String>,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Write to this file instead of stdout (a regular file or a new name; `-` is
        /// stdout).
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Import a JSON export from another machine into the database (all or nothing).
    Import { file: PathBuf },
    /// Write a self-contained HTML report of runs (default: the latest); with two, the
    /// second is compared with the first, and with three or more, every run with the
    /// first.
    Report {
        #[arg(add = ArgValueCompleter::new(complete::runs))]
        runs: Vec<String>,
        /// The file to write, replaced if it is there (`-`: standard output)
        /// [default: report.html, which is not replaced without --force].
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
        /// Replace report.html when no -o is given.
        #[arg(long)]
        force: bool,
    },
    /// Sample the live system's run-queue length and switch rate, and store the trace.
    Observe {
        /// How long to observe (e.g. 60s, 2m).
        #[arg(long = "for", value_name = "DURATION", default_value = "60s")]
        duration: HumanDuration,
        /// Sampling interval (e.g. 10ms).
        #[arg(long, value_name = "DURATION", default_value = "10ms")]
        interval: HumanDuration,
        #[arg(long)]
        json: bool,
    },
    /// Record the scheduler's events (sched_switch, sched_waking, …) for a bounded
    /// time, of the whole machine or of one command: per-task switches, wake→run
    /// latency and the run-queue length at every switch. Needs root or CAP_PERFMON.
    Trace {
        /// How long to record at most (e.g. 1s, 10s; at most 10 minutes).
        #[arg(long = "for", value_name = "DURATION", default_value = "1s")]
        duration: HumanDuration,
        #[arg(long)]
        json: bool,
        /// A command to run and record (its tasks and their forks); recording ends
        /// when it exits, or it is killed at the bound.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Simulate historical and current schedulers on the founding texts' workloads
    /// (virtual time charged by a cost profile; stored as a run of kind `sim`).
    Sim {
        /// Policies, comma-separated: linux-2.0, linux-2.0-yieldfix, linux-2.4, o1, cfs, eevdf.
        #[arg(long, value_enum, value_delimiter = ',', required = true)]
        policy: Vec<crate::sim::PolicyKind>,
        #[arg(long, value_enum)]
        workload: crate::sim::WorkloadKind,
        /// CPU counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1")]
        cpus: Vec<usize>,
        /// Tasks (travis, loop_yield, server), rooms (chat) or forks (fork),
        /// comma-separated; each workload has its own default.
        #[arg(long, value_delimiter = ',')]
        tasks: Option<Vec<usize>>,
        /// Cost profile: live (this machine, measured now), live@RUN (the profile stored
        /// with sim run RUN: the same figures again), pentium200 (Travis's 1998 machine,
        /// fitted to one published row) or smp2002 (Molnar's SMP boxes, fitted to one
        /// published figure).
        #[arg(long, default_value = "live")]
        profile: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// travis: the yielders are threads of one process.
        #[arg(long)]
        threads: bool,
        /// Nice level of the workload's tasks (chat at 0 and 19, as Molnar ran it).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        nice: i32,
        /// chat: messages each user sends to each other user of its room.
        #[arg(long, default_value_t = 20)]
        messages: u64,
        #[arg(long)]
        json: bool,
    },
    /// Each figure's medians over the stored runs, oldest first, with the change
    /// points found in them: where, by how much (with an interval), and what in the
    /// comparability key (kernel, microcode, mitigations, governor, oscost, …) changed
    /// with each.
    History {
        /// Figures to follow: a benchmark id or family, then any of its parameters
        /// ('ctx.pipe mode=process'); every figure when none is given.
        #[arg(value_name = "FIGURE", add = ArgValueCompleter::new(complete::benchmarks))]
        figures: Vec<String>,
        /// Only runs of this host.
        #[arg(long)]
        host: Option<String>,
        /// Only runs started at or after this date (YYYY-MM-DD or RFC 3339).
        #[arg(long, value_name = "DATE")]
        since: Option<Date>,
        /// Only runs started before this date.
        #[arg(long, value_name = "DATE")]
        until: Option<Date>,
        /// A series per host, or per comparability key (no series then mixes kernels,
        /// settings or machines).
        #[arg(long, value_enum, value_name = "KEY")]
        by: Option<crate::history::Stratum>,
        /// Exit 3 when a figure's newest segment differs from the one before it (with
        /// --recent N, only a change among the newest N runs), for nightly jobs.
        #[arg(long)]
        fail_on_change: bool,
        /// With --fail-on-change: only changes among the newest N runs fail, so a
        /// change alerts on the runs after it and then becomes the new baseline.
        #[arg(long, value_name = "N", requires = "fail_on_change", value_parser = clap::value_parser!(u32).range(1..))]
        recent: Option<u32>,
        /// Also write the history as a self-contained HTML page of charts.
        #[arg(long, value_name = "PATH")]
        html: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// For each figure of the stored runs: the variance runs, rounds and samples each
    /// add, and the cheapest design (runs × rounds × samples) that reaches a precision,
    /// with its time (Kalibera and Jones's repetition planner).
    Plan {
        /// Figures to plan: a benchmark id or family, then any of its parameters; every
        /// batch figure when none is given.
        #[arg(value_name = "FIGURE", add = ArgValueCompleter::new(complete::benchmarks))]
        figures: Vec<String>,
        /// The 95% interval's half-width to reach, in percent of the figure.
        #[arg(long, value_name = "PCT", default_value_t = 2.0)]
        precision: f64,
        /// Only runs of this host.
        #[arg(long)]
        host: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List stored runs, newest first.
    Runs {
        #[arg(long)]
        host: Option<String>,
        /// Only runs with this benchmark id or family.
        #[arg(long)]
        benchmark: Option<String>,
        /// Only runs started at or after this date (YYYY-MM-DD or RFC 3339).
        #[arg(long, value_name = "DATE")]
        since: Option<Date>,
        /// Only runs started before this date.
        #[arg(long, value_name = "DATE")]
        until: Option<Date>,
        #[arg(long)]
        json: bool,
    },
    /// Copy runs (default: every finished run) into another database, such as a shared
    /// PostgreSQL store; a run already there (same UUID) is not copied again.
    Push {
        #[arg(add = ArgValueCompleter::new(complete::runs))]
        runs: Vec<String>,
        /// The database to copy into: a postgres:// URL or a SQLite file.
        #[arg(long, value_name = "URL|PATH")]
        to: PathBuf,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff), generated from these definitions: oscost(1), or a
    /// command's own page, oscost-COMMAND(1).
    Man {
        /// The command whose page to print (run, show, compare, …).
        command: Option<String>,
    },
}

/// How `compare --by` groups runs into sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    Host,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
}

pub use crate::report::export::ExportFormat;

/// `oscost noise`: the runs to make, and the run options they are made with.
#[derive(Args, Debug)]
pub struct NoiseArgs {
    /// A/A runs to make back to back (3 to 100: at least two consecutive pairs).
    #[arg(long, value_name = "N", default_value_t = crate::noise::DEFAULT_RUNS, value_parser = runs_count)]
    pub runs: usize,
    #[command(flatten)]
    pub run: RunArgs,
}

fn runs_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (3..=100).contains(&n) => Ok(n),
        _ => Err(format!("{s:?}: give 3 to 100 runs")),
    }
}

#[derive(Args, Debug)]
// A negative number is a value (refused by its parser with a reason), not a flag.
#[command(allow_negative_numbers = true)]
pub struct RunArgs {
    /// Benchmarks to run: ids (syscall.getppid), families (syscall, ctx, spawn, load) or `all`.
    #[arg(add = ArgValueCompleter::new(complete::benchmarks))]
    pub benchmarks: Vec<String>,
    /// Run a named suite and print it in the classic table's layout (see `list --suites`).
    #[arg(long, value_name = "NAME", conflicts_with = "benchmarks", add = ArgValueCompleter::new(complete::suites))]
    pub suite: Option<String>,
    /// About a fifth of the time, at some cost in precision (and 5 rounds, not 10).
    #[arg(long)]
    pub quick: bool,
    /// Measure each benchmark in N rounds, each in a fresh worker process, spread over
    /// the run (default 10, 5 with --quick); intervals come from the rounds' spread.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=100))]
    pub rounds: Option<u16>,
    /// Write the run as JSON to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Include raw samples in JSON output (with --json).
    #[arg(long, requires = "json")]
    pub samples: bool,
    /// Print nothing but warnings and errors (no announcement, progress or table); the
    /// run is stored, and written to any --export-* file.
    #[arg(short, long, conflicts_with = "json")]
    pub quiet: bool,
    /// Also write the run, as `oscost export --format json` would (importable), to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the run's rows as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the run as a Markdown table to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write the run as a node_exporter textfile to FILE (replaced atomically,
    /// as the textfile collector needs).
    #[arg(long, value_name = "FILE")]
    pub export_prometheus: Option<PathBuf>,
    /// Keep adding rounds (fresh workers, interleaved as usual) until every figure is
    /// within ±PCT (judged from blocks of ten rounds or more once there are three,
    /// with this machine's spread between runs from `oscost noise` beside) or out of
    /// reach of the rounds that fit in --max-time (or of any rounds, the spread between
    /// runs alone being past ±PCT), 1000 rounds have run, or --max-time is spent; the
    /// figures that did not get there are named, with why.
    #[arg(long, value_name = "PCT", conflicts_with = "rounds", value_parser = precision_percent)]
    pub precision: Option<f64>,
    /// With --precision: stop adding rounds after this long (default 10m).
    #[arg(long, value_name = "DURATION", requires = "precision", default_value = "10m")]
    pub max_time: HumanDuration,
    /// Measure under a condition beside the unchanged baseline, in the same rounds
    /// (each arm in a fresh worker, in alternating order), with the paired ratio, its
    /// interval, the MDE and a verdict: seccomp:allow=N|default|notify,
    /// ns:user,pid,net,mnt,uts,ipc,cgroup, cgroup:cpu.max=Q/P|cpu.weight=W|cpuset=LIST|split, spec:ssb|ib,
    /// observer:perf|trace, neighbour:cpu|mem (or cpu@CPU, mem@CPU), nice:N, policy:batch|idle|fifo,
    /// slack:DURATION, thp:always|never. Repeat for more; one this machine cannot
    /// measure is skipped with the reason.
    #[arg(long = "condition", value_name = "SPEC", conflicts_with = "precision")]
    pub conditions: Vec<crate::condition::Condition>,
    /// Refuse to measure while the preflight finds any trap on this machine (a busy
    /// CPU, a narrowed affinity, a CPU quota, a governor, boost, SMT, steal, …): exit 2
    /// with each named, before anything is measured.
    #[arg(long)]
    pub strict: bool,
    /// Begin measuring at an instant, so many hosts measure the same moments of
    /// shared infrastructure: `next:1m` (the next whole minute of the epoch; any
    /// period from 1s to 24h), or an RFC 3339 time within the next 24 hours.
    #[arg(long, value_name = "WHEN")]
    pub start_at: Option<StartAt>,
    /// Pin the benchmark to this CPU (placement-sweeping families pin by themselves).
    #[arg(long, value_name = "N", value_parser = cpu_number)]
    pub cpu: Option<usize>,
    /// Run at this nice value (-20..19; lowering needs privilege).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub nice: Option<i32>,
    /// Scheduling policy; fifo and rr are bounded by a watchdog and need privilege.
    #[arg(long, value_enum, default_value_t = Policy::Other)]
    pub policy: Policy,
    /// Also count switches with per-task perf software counters. They slow every switch
    /// of the watched tasks, so context-switch figures rise; /proc counts are always taken.
    #[arg(long)]
    pub perf_counters: bool,
    /// Skip the trace pass that follows the timed pass of the ctx, load and spawn
    /// benchmarks (where the scheduler's tracepoints can be opened).
    #[arg(long)]
    pub no_trace: bool,
    /// Save the run under this name (for `compare --baseline`): not a number, not `latest`.
    #[arg(long, value_name = "NAME", value_parser = save_name)]
    pub save: Option<String>,
    /// The no-op program to exec (default: oscost's own static helper).
    #[arg(long, value_name = "PATH")]
    pub noop: Option<PathBuf>,
    /// Parent memory sizes for the fork sweep, e.g. 0,64M,512M.
    #[arg(long, value_name = "LIST", default_value = "0,64M,512M")]
    pub parent_mem: SizeList,
    /// Working-set sizes for ctx.footprint, e.g. 0,4K,64K,1M.
    #[arg(long, value_name = "LIST", default_value = "0,4K,16K,64K,256K,1M,4M")]
    pub sizes: SizeList,
    /// Stride of the footprint walk in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64, value_parser = at_least_one)]
    pub stride: usize,
    /// Runnable-task counts for load.runqueue.
    #[arg(long, value_name = "LIST", default_value = "2,4,8,16,32,64,128,256,512,1024")]
    pub tasks: CountList,
    /// Task counts for load.yield_storm.
    #[arg(long, value_name = "LIST", default_value = "2,8,32,128")]
    pub storm_tasks: CountList,
    /// Chat rooms (20 users each) for load.chat.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = at_least_one)]
    pub rooms: usize,
    /// Messages each chat user sends.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = at_least_one)]
    pub messages: usize,
}

/// A comma-separated list of byte sizes such as `0,4K,64M,1G` (binary multiples).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeList(pub Vec<u64>);

impl FromStr for SizeList {
    type Err = String;
    fn from_str(list: &str) -> Result<Self, String> {
        list.split(',').filter(|x| !x.trim().is_empty()).map(parse_size).collect::<Result<_, _>>().map(SizeList)
    }
}

/// Parses a size such as `64M`, `4K`, `1G` or `512` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size (use e.g. 0, 4K, 64M, 1G)"))?;
    n.checked_mul(mult).ok_or_else(|| format!("{s:?} is too large"))
}

/// A comma-separated list of whole numbers such as `2,4,8`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountList(pub Vec<usize>);

impl FromStr for CountList {
    type Err = String;
    fn from_str(list: &str) -> Result<Self, String> {
        list.split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| x.trim().parse::<usize>().map_err(|_| format!("{x:?} is not a whole number")))
            .collect::<Result<_, _>>()
            .map(CountList)
    }
}

/// A positive duration: `60s`, `10ms`, `2m`, `500us` (humantime's units), or a bare
/// number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl FromStr for HumanDuration {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let bare = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.');
        let d = if bare {
            t.parse::<f64>().ok().filter(|v| v.is_finite() && *v < 1e12).map(Duration::from_secs_f64)
        } else {
            humantime::parse_duration(t).ok()
        }
        .ok_or_else(|| format!("{s:?} is not a duration (use e.g. 60s, 10ms, 2m)"))?;
        if d.is_zero() {
            return Err(format!("{s:?} must be a positive duration"));
        }
        Ok(HumanDuration(d))
    }
}

/// A date (`YYYY-MM-DD`, midnight UTC) or an RFC 3339 time, kept as the RFC 3339 UTC
/// text the store compares with its start times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Date(pub String);

/// `--precision`: a percentage above 0 and below 100.
fn precision_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().trim_end_matches('%').parse().map_err(|_| format!("{s:?} is not a percentage"))?;
    if v > 0.0 && v < 100.0 { Ok(v) } else { Err(format!("{s}: the precision is a percentage above 0 and below 100")) }
}

/// When `run --start-at` begins measuring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StartAt {
    /// The next instant whose time since the epoch is a whole number of this period.
    Aligned(Duration),
    /// This instant.
    At(SystemTime),
}

/// The longest `--start-at` waits: a day (a nightly job's period).
pub const START_AT_LIMIT: Duration = Duration::from_secs(24 * 3600);

impl StartAt {
    /// The instant to begin at, seen from `now`; an instant past, or further than
    /// [`START_AT_LIMIT`] away, is an error in words.
    pub fn instant(self, now: SystemTime) -> Result<SystemTime, String> {
        match self {
            StartAt::Aligned(period) => {
                let since = now.duration_since(SystemTime::UNIX_EPOCH).map_err(|e| e.to_string())?;
                let p = period.as_nanos();
                let next = (since.as_nanos() / p + 1) * p;
                let wait = Duration::from_nanos(u64::try_from(next - since.as_nanos()).map_err(|e| e.to_string())?);
                Ok(now + wait)
            }
            StartAt::At(t) => match t.duration_since(now) {
                Ok(wait) if wait <= START_AT_LIMIT => Ok(t),
                Ok(_) => Err("--start-at is more than 24 hours away".into()),
                Err(_) => Err(format!("--start-at {} is in the past", humantime::format_rfc3339_seconds(t))),
            },
        }
    }
}

impl FromStr for StartAt {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(period) = s.strip_prefix("next:") {
            let d = humantime::parse_duration(period)
                .map_err(|e| format!("{period:?} is not a period (1s, 1m, 15m, 1h): {e}"))?;
            if d < Duration::from_secs(1) || d > START_AT_LIMIT || d.subsec_nanos() != 0 {
                return Err(format!("{period:?}: the period is whole seconds from 1s to 24h"));
            }
            return Ok(StartAt::Aligned(d));
        }
        humantime::parse_rfc3339_weak(s)
            .map(StartAt::At)
            .map_err(|e| format!("{s:?} is neither next:PERIOD (next:1m) nor an RFC 3339 time: {e}"))
    }
}

impl FromStr for Date {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        let full = if t.len() == 10 { format!("{t}T00:00:00Z") } else { t.to_string() };
        let when: SystemTime = humantime::parse_rfc3339_weak(&full)
            .map_err(|e| format!("{s:?} is not a date (use YYYY-MM-DD or RFC 3339): {e}"))?;
        Ok(Date(humantime::format_rfc3339_seconds(when).to_string()))
    }
}

/// A count that must be a whole number of at least 1.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{s:?} is not a whole number of 1 or more")),
    }
}

/// A CPU number as the kernel numbers them (0, 1, …).
fn cpu_number(s: &str) -> Result<usize, String> {
    s.trim().parse::<usize>().map_err(|_| format!("{s:?} is not a CPU number (0, 1, …; see `oscost info`)"))
}

/// `--save`: a name the run can be found by again (see `model::check_save_name`).
fn save_name(s: &str) -> Result<String, String> {
    crate::model::check_save_name(s).map(|()| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_at_aligns_to_the_epoch_and_refuses_what_it_cannot_wait_for() {
        let at = |secs: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        let minute: StartAt = "next:1m".parse().unwrap();
        assert_eq!(minute.instant(at(120)).unwrap(), at(180), "a whole minute now waits for the next");
        assert_eq!(minute.instant(at(121)).unwrap(), at(180));
        let quarter: StartAt = "next:15m".parse().unwrap();
        assert_eq!(quarter.instant(at(3600 + 1)).unwrap(), at(3600 + 900));
        let then: StartAt = "2026-11-24T06:00:00Z".parse().unwrap();
        let six = humantime::parse_rfc3339("2026-11-24T06:00:00Z").unwrap();
        assert_eq!(then.instant(six - Duration::from_secs(5)).unwrap(), six);
        assert!(then.instant(six + Duration::from_secs(1)).unwrap_err().contains("in the past"));
        assert!(then.instant(six - Duration::from_secs(25 * 3600)).unwrap_err().contains("24 hours"));
        for bad in ["next:0s", "next:500ms", "next:2days", "tomorrow", "next:"] {
            assert!(bad.parse::<StartAt>().is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_parse() {
        assert_eq!("0,64M,512M".parse::<SizeList>().unwrap().0, vec![0, 64 << 20, 512 << 20]);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("99999999999999G").is_err());
        assert_eq!("2, 4,8".parse::<CountList>().unwrap().0, vec![2, 4, 8]);
        assert!("2,x".parse::<CountList>().is_err());
    }

    #[test]
    fn durations_parse() {
        let d = |s: &str| s.parse::<HumanDuration>().map(|d| d.0);
        assert_eq!(d("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(d("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(d("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(d("1.5").unwrap(), Duration::from_millis(1500));
        assert!(d("0s").is_err());
        assert!(d("ten").is_err());
        assert!(d("5 parsecs").is_err());
        assert!(d("18446744073709551616").is_err());
        assert!(d("18446744073709551616s").is_err());
    }

    #[test]
    fn dates_parse_and_normalise() {
        assert_eq!("2026-11-22".parse::<Date>().unwrap().0, "2026-11-22T00:00:00Z");
        assert_eq!("2026-11-22T10:00:00+00:00".parse::<Date>().unwrap().0, "2026-11-22T10:00:00Z");
        assert!("2026-13-45".parse::<Date>().is_err());
        assert!("notadate".parse::<Date>().is_err());
    }
}
