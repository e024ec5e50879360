//! The argument definitions, with clap value parsers for the values that have a shape
//! (sizes, lists, durations, dates), so a malformed value is refused by clap itself
//! (exit 2, naming the flag) and the rest of the program sees typed values. The
//! commands and global flags are here; `run`'s options (which `noise` shares) in
//! `run`, the value types and their parsers in `values`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use clap_complete::engine::ArgValueCompleter;

use super::complete;

mod run;
mod values;

pub use run::{NoiseArgs, RunArgs};
pub use values::{CountList, Date, HumanDuration, START_AT_LIMIT, SizeList, StartAt, parse_size};

#[derive(Parser, Debug)]
#[command(
    name = "oscost",
    version = crate::machine::VERSION_LINE,
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
        /// Exit 3 when any figure's verdict is `slower` (`slower:5%`: a slowdown whose
        /// whole interval is 5% or more; `change`: any clear change either way), for a
        /// CI job to gate on; `uncertain` never fails.
        #[arg(long, value_name = "WHAT")]
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
        #[arg(long, value_enum, default_value = "json")]
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
        /// Policies, comma-separated (o1 is 2.6.0's O(1); o1-2002 is Molnar's January
        /// 2002 patch, the one his figures measured).
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
        /// The seed of the run (default 1); a stochastic workload (server) then runs this
        /// one seed.
        #[arg(long)]
        seed: Option<u64>,
        /// server: run over seeds 1..=K (default 20) and store each figure's median with
        /// its seed range (the model's seed-to-seed spread, not a measurement interval).
        #[arg(long, value_name = "K")]
        seeds: Option<u64>,
        /// travis: the yielders are threads of one process.
        #[arg(long)]
        threads: bool,
        /// Nice level of the workload's tasks (chat at 0 and 19, as Molnar ran it).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        nice: i32,
        /// chat: messages each user writes (chat_c's count; chat_c ran 100 and 1000).
        #[arg(long, default_value_t = 20)]
        messages: u64,
        /// Leave out each figure's sensitivity (every assumed term at ±50%, each fitted
        /// term's slope) and the policies' order judged under it: about 30 simulations
        /// a figure fewer.
        #[arg(long)]
        no_sensitivity: bool,
        /// chat: hold the model against today's kernel. The newest stored load.chat
        /// rows of each CPU count and nice level are simulated at their own rooms,
        /// messages, nice level and CPUs (so --cpus, --tasks, --nice and --messages are
        /// not taken), and each figure of chat's regime (rate, switches per message,
        /// messages per reader wake-up, segments per message) is printed measured
        /// beside simulated, holding within 30% or named a gap.
        #[arg(long, conflicts_with_all = ["cpus", "tasks", "nice", "messages", "seed", "seeds", "threads"])]
        ground: bool,
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
        by: Option<crate::judge::history::Stratum>,
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
        benchmark: Option<crate::key::BenchId>,
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
