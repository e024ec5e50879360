//! `run`'s options, which `noise` shares (flattened), and the parsers only they use.

use std::path::PathBuf;

use clap::Args;
use clap_complete::engine::ArgValueCompleter;

use super::complete;
use super::values::{
    CountList, HumanDuration, SizeList, StartAt, ValueError, at_least_one, cpu_number, cpu_pair, save_name,
};

use crate::placement::Policy;
use crate::report::export::ExportFormat;

/// `oscost noise`: the runs to make, and the run options they are made with.
#[derive(Args, Debug)]
pub struct NoiseArgs {
    /// A/A runs to make back to back (3 to 100: at least two consecutive pairs).
    #[arg(long, value_name = "N", default_value_t = crate::judge::noise::DEFAULT_RUNS, value_parser = runs_count)]
    pub runs: usize,
    #[command(flatten)]
    pub run: RunArgs,
}

fn runs_count(s: &str) -> Result<usize, ValueError> {
    match s.parse::<usize>() {
        Ok(n) if (3..=100).contains(&n) => Ok(n),
        _ => Err(ValueError::Runs(s.to_string())),
    }
}

#[derive(Args, Debug)]
// A negative number is a value (refused by its parser with a reason), not a flag.
#[command(allow_negative_numbers = true)]
#[command(group(clap::ArgGroup::new("adaptive").args(["precision", "detect"])))]
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
    /// `--export-NAME FILE`, one for each exporter.
    #[command(flatten)]
    pub exports: ExportFiles,
    /// Keep adding rounds (fresh workers, interleaved as usual) until every figure is
    /// within ±PCT (judged from blocks of ten rounds or more once there are three,
    /// with this machine's spread between runs from `oscost noise` beside) or out of
    /// reach of the rounds that fit in --max-time (or of any rounds, the spread between
    /// runs alone being past ±PCT), 1000 rounds have run, or --max-time is spent; the
    /// figures that did not get there are named, with why.
    #[arg(long, value_name = "PCT", conflicts_with = "rounds", value_parser = precision_percent)]
    pub precision: Option<f64>,
    /// Size the run so that two runs like it tell a change of PCT from noise: rounds
    /// are added (as --precision does) until each figure is within the half-width that
    /// gives compare an MDE of PCT at its 3% threshold with 80% power (±0.95% for 5%).
    #[arg(long, value_name = "PCT", conflicts_with_all = ["rounds", "precision"], value_parser = precision_percent)]
    pub detect: Option<f64>,
    /// Abandon a measurement that runs past this (default 30s, 15s with --quick); a
    /// worker is killed once past its measurements' share of it. Raise it where other
    /// work leaves the run a small share of the CPUs: a bound is there to catch a hang.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<HumanDuration>,
    /// With --precision or --detect: stop adding rounds after this long (default 10m).
    #[arg(long, value_name = "DURATION", requires = "adaptive", default_value = "10m")]
    pub max_time: HumanDuration,
    /// Measure under a condition beside the unchanged baseline, in the same rounds
    /// (each arm in a fresh worker, in alternating order), with the paired ratio, its
    /// interval, the MDE and a verdict: seccomp:allow=N|default|notify,
    /// ns:user,pid,net,mnt,uts,ipc,cgroup, cgroup:cpu.max=Q/P|cpu.weight=W|cpuset=LIST|split, spec:ssb|ib,
    /// observer:perf|trace, neighbour:cpu|mem (or cpu@CPU, mem@CPU), nice:N, policy:batch|idle|fifo,
    /// slack:DURATION, thp:always|never. Repeat for more; one this machine cannot
    /// measure is skipped with the reason.
    #[arg(long = "condition", value_name = "SPEC", conflicts_with_all = ["precision", "detect"])]
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
    /// Hold the run to two CPUs, as `taskset -c A,B` or cyclictest's `-a` would: the
    /// pair a cross-CPU figure runs on (same-CPU figures on the higher), recorded in
    /// every row (`runner=cpus=A+B`).
    #[arg(long, value_name = "A,B", value_parser = cpu_pair, conflicts_with = "cpu")]
    pub cpus: Option<[usize; 2]>,
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
    /// load.wakeup's sleepers, as cyclictest's -i, -p and -t set them.
    #[command(flatten)]
    pub wakeup: crate::crosscheck::knobs::WakeupArgs,
    /// After the table, load.wakeup's latencies in cyclictest's -h layout: a line a µs
    /// from 0 to US − 1, a column a row, then totals, extremes and overflows.
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(1..=100_000), conflicts_with_all = ["json", "quiet"])]
    pub wakeup_histogram: Option<u32>,
}

/// `--precision`: a percentage above 0 and below 100.
fn precision_percent(s: &str) -> Result<f64, ValueError> {
    let v: f64 = s.trim().trim_end_matches('%').parse().map_err(|_| ValueError::NotAPercentage(s.to_string()))?;
    if v > 0.0 && v < 100.0 { Ok(v) } else { Err(ValueError::PrecisionRange(s.to_string())) }
}

/// The files `run --export-NAME FILE` names, with their formats, in the exporters'
/// order. The flags are made from `report::export::EXPORTERS`, so a new exporter has
/// its flag without a line here.
#[derive(Debug, Clone, Default)]
pub struct ExportFiles(pub Vec<(ExportFormat, PathBuf)>);

impl clap::FromArgMatches for ExportFiles {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut files = ExportFiles::default();
        files.update_from_arg_matches(matches)?;
        Ok(files)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for format in ExportFormat::all() {
            if let Some(path) = matches.get_one::<PathBuf>(format.exporter().flag) {
                self.0.retain(|(f, _)| *f != format);
                self.0.push((format, path.clone()));
            }
        }
        Ok(())
    }
}

impl Args for ExportFiles {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        ExportFormat::all().map(ExportFormat::exporter).fold(cmd, |cmd, e| {
            cmd.arg(
                clap::Arg::new(e.flag)
                    .long(e.flag)
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(e.file_help),
            )
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}
