//! The anchors: what each runs, how its output converts to the unit of the oscost
//! figure it stands beside, and which oscost rows that figure and any named gap come
//! from.

use crate::bench::ctx::PLACEMENT;
use crate::bench::load::wakeup::{HOGS, WakeupOptions};
use crate::bench::spawn::{FULL_CYCLE, PHASE};
use crate::bench::syscall::{VIA, VIA_LIBC, VIA_RAW};
use crate::key::Params;
use crate::model::{BenchId, Method, ResultRow};
use crate::tasks::Mode;

use super::parse;

/// A tool performance engineers already trust, or oscost's own raw loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnchorId {
    PerfPipe,
    PerfPipeThreads,
    PerfSyscall,
    Hackbench,
    Cyclictest,
    Hyperfine,
    RawGetppid,
    RawEnosys,
    RawPipe,
}

/// How a comparison's figures print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// ns, shown in ns, µs or ms.
    #[default]
    Time,
    /// Per second, shown in k or M.
    Rate,
}

/// What an anchor's program is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// A tool found on PATH (perf also where Debian keeps its versioned binaries).
    Tool(&'static str),
    /// The raw loop built into oscost.
    RawLoop,
}

/// One oscost row: benchmark, method, the parameters that pick it (typed, as the
/// family declares them; a function because a `Params` is built at run time), and
/// the statistic taken (the anchor's own: a median of runs, or a mean of samples).
#[derive(Debug, Clone, Copy)]
pub struct RowSpec {
    pub bench: &'static BenchId,
    pub method: Method,
    pub params: fn() -> Params,
    pub mean: bool,
}

impl RowSpec {
    /// The figure of the row in `rows` this spec picks.
    pub fn pick(&self, rows: &[ResultRow]) -> Option<f64> {
        let want = (self.params)();
        rows.iter()
            .find(|r| r.benchmark == *self.bench && r.method == self.method && r.params.matches(&want))
            .map(|r| if self.mean { r.mean } else { r.median })
    }

    /// The row as users name it: `ctx.pipe mode=process placement=same_cpu`.
    pub fn describe(&self) -> String {
        let mut s = self.bench.to_string();
        for (k, v) in (self.params)().iter() {
            match v.as_str() {
                Some(text) => s.push_str(&format!(" {k}={text}")),
                None => s.push_str(&format!(" {k}={v}")),
            }
        }
        s
    }
}

/// cyclictest with load.wakeup's settings: `--laptop` leaves /dev/cpu_dma_latency
/// alone, as oscost does; `-d 0` gives every thread the one interval; a priority takes
/// SCHED_FIFO, none the ordinary policy load.wakeup's sleepers then have. Its loops
/// last about 2 s (0.2 s quick) at any interval.
fn cyclictest_args(quick: bool, w: &WakeupOptions) -> Vec<String> {
    let seconds = if quick { 0.2 } else { 2.0 };
    let loops = ((seconds / w.interval.as_secs_f64()) as u64).max(20);
    let mut args: Vec<String> = ["-q", "-N", "--laptop", "-t"].map(String::from).to_vec();
    args.push(w.threads.to_string());
    args.extend(["-d", "0", "-i"].map(String::from));
    args.push(w.interval.as_micros().to_string());
    args.push("-l".into());
    args.push(loops.to_string());
    match w.priority {
        Some(p) => args.extend(["--policy=fifo".to_string(), "-p".to_string(), p.to_string()]),
        None => args.push("--policy=other".into()),
    }
    args
}

/// Two peers of one mode on one CPU (ctx's `mode` and `placement`).
fn same_cpu(mode: Mode) -> Params {
    Params::new().with(Mode::PARAM, mode.as_str()).with(PLACEMENT, crate::tasks::PeerPlacement::SameCpu.as_str())
}

/// A difference between the anchor's work and oscost's that oscost measures itself:
/// `times` × (`with` − `without`), added to the oscost figure.
#[derive(Debug, Clone, Copy)]
pub struct GapSpec {
    pub what: &'static str,
    pub times: f64,
    pub with: RowSpec,
    pub without: RowSpec,
    /// Where the figure comes from, as printed.
    pub source: &'static str,
}

impl GapSpec {
    pub fn figure(&self, rows: &[ResultRow]) -> Option<f64> {
        Some(self.times * (self.with.pick(rows)? - self.without.pick(rows)?))
    }
}

/// oscost's side of a comparison.
#[derive(Debug, Clone)]
pub struct OscostSide {
    /// The benchmarks a B turn runs, each one round in a fresh worker.
    pub benches: &'static [&'static str],
    pub row: RowSpec,
    /// The differences oscost measures, each added to its figure.
    pub gaps: Vec<GapSpec>,
    /// A difference oscost cannot measure, named when the figures disagree.
    pub unmeasured: Option<&'static str>,
}

const PIPE_PROCESS: RowSpec = RowSpec {
    bench: &BenchId::new("ctx.pipe"),
    method: Method::Batch,
    params: || same_cpu(Mode::Process),
    mean: false,
};
const PIPE_THREAD: RowSpec = RowSpec { params: || same_cpu(Mode::Thread), ..PIPE_PROCESS };
const GETPPID: RowSpec =
    RowSpec { bench: &BenchId::new("syscall.getppid"), method: Method::Batch, params: Params::new, mean: false };
/// The bare entry and exit: no per-process kernel object is read, so where getppid's
/// figure differs between processes and this one does not, the difference is in the
/// call's own work.
const ENOSYS: RowSpec = RowSpec { bench: &BenchId::new("syscall.enosys"), ..GETPPID };
const GETPID_LIBC: RowSpec = RowSpec {
    bench: &BenchId::new("syscall.getpid"),
    method: Method::Batch,
    params: || Params::new().with(VIA, VIA_LIBC),
    mean: false,
};
const WAKEUP_ALONE: RowSpec = RowSpec {
    bench: &BenchId::new("load.wakeup"),
    method: Method::PerCall,
    params: || Params::new().with(HOGS, 0u64),
    mean: true,
};
const POSIX_SPAWN: RowSpec = RowSpec {
    bench: &BenchId::new("spawn.posix_spawn"),
    method: Method::Batch,
    params: || Params::new().with(PHASE, FULL_CYCLE),
    mean: false,
};
const GETPID_RAW: RowSpec = RowSpec { params: || Params::new().with(VIA, VIA_RAW), ..GETPID_LIBC };
/// The C library's wrapper around one system call, as oscost measures it.
const WRAPPER_SOURCE: &str = "oscost getpid via=libc - via=raw";
/// A hand-off is one write and one read, each through the C library in perf.
const PIPE_WRAPPERS: GapSpec =
    GapSpec { what: "glibc read+write", times: 2.0, with: GETPID_LIBC, without: GETPID_RAW, source: WRAPPER_SOURCE };
const SYSCALL_WRAPPER: GapSpec =
    GapSpec { what: "glibc syscall()", times: 1.0, with: GETPID_LIBC, without: GETPID_RAW, source: WRAPPER_SOURCE };

/// A whole loop's time beside oscost's median: perf and the raw loop divide one loop's
/// elapsed time by its operations, so every preemption and slow stretch is in their
/// figure; oscost's figure is the median of its batches, and the same row's mean holds
/// what the median leaves out.
fn whole_loop(row: RowSpec) -> GapSpec {
    GapSpec {
        what: "whole-loop time",
        times: 1.0,
        with: RowSpec { mean: true, ..row },
        without: row,
        source: "oscost mean - median",
    }
}

impl AnchorId {
    pub const ALL: [AnchorId; 9] = [
        AnchorId::PerfPipe,
        AnchorId::PerfPipeThreads,
        AnchorId::PerfSyscall,
        AnchorId::Hackbench,
        AnchorId::Cyclictest,
        AnchorId::Hyperfine,
        AnchorId::RawGetppid,
        AnchorId::RawEnosys,
        AnchorId::RawPipe,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AnchorId::PerfPipe => "perf-pipe",
            AnchorId::PerfPipeThreads => "perf-pipe-threads",
            AnchorId::PerfSyscall => "perf-syscall",
            AnchorId::Hackbench => "hackbench",
            AnchorId::Cyclictest => "cyclictest",
            AnchorId::Hyperfine => "hyperfine",
            AnchorId::RawGetppid => "raw-getppid",
            AnchorId::RawEnosys => "raw-enosys",
            AnchorId::RawPipe => "raw-pipe",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    pub fn program(self) -> Program {
        match self {
            AnchorId::PerfPipe | AnchorId::PerfPipeThreads | AnchorId::PerfSyscall => Program::Tool("perf"),
            AnchorId::Hackbench => Program::Tool("hackbench"),
            AnchorId::Cyclictest => Program::Tool("cyclictest"),
            AnchorId::Hyperfine => Program::Tool("hyperfine"),
            AnchorId::RawGetppid | AnchorId::RawEnosys | AnchorId::RawPipe => Program::RawLoop,
        }
    }

    /// The unit of both figures.
    pub fn unit(self) -> &'static str {
        match self {
            AnchorId::PerfPipe | AnchorId::PerfPipeThreads | AnchorId::RawPipe => "ns/hand-off",
            AnchorId::PerfSyscall | AnchorId::RawGetppid | AnchorId::RawEnosys => "ns/call",
            AnchorId::Hackbench => "messages/s",
            AnchorId::Cyclictest => "ns late",
            AnchorId::Hyperfine => "ns/exec",
        }
    }

    pub fn scale(self) -> Scale {
        if self == AnchorId::Hackbench { Scale::Rate } else { Scale::Time }
    }

    /// Whether the anchor runs on the CPU oscost's same-CPU rows use, with a 1 ns
    /// timer slack (what load.wakeup sets), both inherited from the thread that starts it.
    pub fn pinned(self) -> bool {
        matches!(self, AnchorId::PerfPipe | AnchorId::PerfPipeThreads | AnchorId::RawPipe | AnchorId::Cyclictest)
    }

    /// The anchor's arguments; `scale` is 1 for a full run and 0.1 under `--quick`.
    /// `helper` is the path that execs oscost's no-op helper; `export` the file
    /// hyperfine writes its figures to; `wakeup` the knobs cyclictest shares with
    /// load.wakeup.
    pub fn args(self, quick: bool, helper: &str, export: &str, wakeup: &WakeupOptions) -> Vec<String> {
        let n = |full: u64| (if quick { full / 10 } else { full }).to_string();
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            AnchorId::PerfPipe => v(&["bench", "sched", "pipe", "-l", &n(200_000)]),
            AnchorId::PerfPipeThreads => v(&["bench", "sched", "pipe", "-T", "-l", &n(200_000)]),
            AnchorId::PerfSyscall => v(&["bench", "syscall", "basic", "-l", &n(2_000_000)]),
            AnchorId::Hackbench => v(&["-g", "2", "-f", "20", "-l", &n(1_000)]),
            AnchorId::Cyclictest => cyclictest_args(quick, wakeup),
            AnchorId::Hyperfine => {
                v(&["-N", "--runs", &n(300), "--warmup", "20", "--style", "none", "--export-json", export, helper])
            }
            AnchorId::RawGetppid => v(&["getppid", &n(2_000_000)]),
            AnchorId::RawEnosys => v(&["enosys", &n(2_000_000)]),
            AnchorId::RawPipe => v(&["pipe", &n(200_000)]),
        }
    }

    /// Whether a failure the anchor printed (`said`) means it cannot run as this user,
    /// not that it broke: cyclictest sets its scheduling policy, which an unprivileged
    /// user without RLIMIT_RTPRIO may not.
    pub fn needs_privilege(self, said: &str) -> bool {
        self == AnchorId::Cyclictest && said.contains("missing capabilities")
    }

    /// The anchor's figure in [`AnchorId::unit`], from what it printed (hyperfine: from
    /// its export file's text).
    pub fn figure(self, output: &str) -> Result<f64, parse::ParseError> {
        Ok(match self {
            AnchorId::PerfPipe | AnchorId::PerfPipeThreads => {
                parse::perf_pipe_ns_per_handoff(parse::perf_bench(output)?.usecs_per_op)
            }
            AnchorId::PerfSyscall => parse::perf_syscall_ns_per_call(parse::perf_bench(output)?.usecs_per_op),
            AnchorId::Hackbench => parse::hackbench(output)?.messages_per_second(),
            AnchorId::Cyclictest => parse::cyclictest(output)?.avg,
            AnchorId::Hyperfine => parse::hyperfine_ns(parse::hyperfine(output)?.median),
            AnchorId::RawGetppid => parse::raw_loop(output, "getppid")?,
            AnchorId::RawEnosys => parse::raw_loop(output, "enosys")?,
            AnchorId::RawPipe => parse::raw_loop(output, "pipe")?,
        })
    }

    /// oscost's side, or why oscost has no figure to set beside this anchor.
    pub fn oscost(self) -> Result<OscostSide, &'static str> {
        let pipe = |row| OscostSide {
            benches: &["ctx.pipe", "syscall.getpid"],
            row,
            gaps: vec![PIPE_WRAPPERS, whole_loop(row)],
            unmeasured: None,
        };
        Ok(match self {
            AnchorId::PerfPipe => pipe(PIPE_PROCESS),
            AnchorId::PerfPipeThreads => pipe(PIPE_THREAD),
            AnchorId::PerfSyscall => OscostSide {
                benches: &["syscall.getppid", "syscall.getpid"],
                row: GETPPID,
                gaps: vec![SYSCALL_WRAPPER, whole_loop(GETPPID)],
                unmeasured: None,
            },
            AnchorId::Hackbench => {
                return Err("load.chat relays every message through a server thread over TCP; \
                            hackbench's senders write straight to receivers over socket pairs");
            }
            AnchorId::Cyclictest => {
                OscostSide { benches: &["load.wakeup"], row: WAKEUP_ALONE, gaps: Vec::new(), unmeasured: None }
            }
            AnchorId::Hyperfine => OscostSide {
                benches: &["spawn.posix_spawn"],
                row: POSIX_SPAWN,
                gaps: Vec::new(),
                unmeasured: Some("hyperfine's own work around each run (clock, rusage, /dev/null)"),
            },
            AnchorId::RawGetppid => OscostSide {
                benches: &["syscall.getppid"],
                row: GETPPID,
                gaps: vec![whole_loop(GETPPID)],
                unmeasured: None,
            },
            AnchorId::RawEnosys => OscostSide {
                benches: &["syscall.enosys"],
                row: ENOSYS,
                gaps: vec![whole_loop(ENOSYS)],
                unmeasured: None,
            },
            AnchorId::RawPipe => OscostSide {
                benches: &["ctx.pipe"],
                row: PIPE_PROCESS,
                gaps: vec![whole_loop(PIPE_PROCESS)],
                unmeasured: None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bench: &str, method: Method, params: &[(&str, serde_json::Value)], median: f64) -> ResultRow {
        let mut r = ResultRow::from_samples(bench, method, "ns", vec![median; 3], 3).unwrap();
        for (k, v) in params {
            r.params.insert(k.to_string(), v.clone());
        }
        r
    }

    #[test]
    fn names_round_trip() {
        for a in AnchorId::ALL {
            assert_eq!(AnchorId::parse(a.name()), Some(a));
        }
        assert_eq!(AnchorId::parse("perf"), None);
    }

    #[test]
    fn rows_are_picked_by_params_and_the_gap_is_their_difference() {
        let rows = vec![
            row("ctx.pipe", Method::Batch, &[("mode", "thread".into()), ("placement", "same_cpu".into())], 1500.0),
            row("ctx.pipe", Method::Batch, &[("mode", "process".into()), ("placement", "same_cpu".into())], 2000.0),
            row("ctx.pipe", Method::PerCall, &[("mode", "process".into()), ("placement", "same_cpu".into())], 9.0),
            row("syscall.getpid", Method::Batch, &[("via", "raw".into())], 100.0),
            row("syscall.getpid", Method::Batch, &[("via", "libc".into())], 103.5),
            row("load.wakeup", Method::PerCall, &[("hogs", 0u64.into())], 55_000.0),
        ];
        let side = AnchorId::PerfPipe.oscost().unwrap();
        assert_eq!(side.row.pick(&rows), Some(2000.0));
        assert_eq!(side.gaps[0].figure(&rows), Some(7.0));
        // Equal samples: the mean is the median, and the whole loop adds nothing.
        assert_eq!(side.gaps[1].figure(&rows), Some(0.0));
        assert_eq!(AnchorId::PerfPipeThreads.oscost().unwrap().row.pick(&rows), Some(1500.0));
        assert_eq!(AnchorId::PerfSyscall.oscost().unwrap().gaps[0].figure(&rows), Some(3.5));
        // A numeric parameter is matched by its text.
        assert_eq!(AnchorId::Cyclictest.oscost().unwrap().row.pick(&rows), Some(55_000.0));
        assert_eq!(AnchorId::RawGetppid.oscost().unwrap().row.pick(&rows), None);
        assert!(AnchorId::Hackbench.oscost().is_err());
    }

    #[test]
    fn cyclictest_refused_its_policy_is_a_matter_of_privilege() {
        // What rt-tests 2.4 prints when run by a user without RLIMIT_RTPRIO.
        let said = "Probably missing capabilities, either run as root or increase RLIMIT_RTPRIO limits.";
        assert!(AnchorId::Cyclictest.needs_privilege(said));
        assert!(!AnchorId::Cyclictest.needs_privilege("cyclictest: invalid option"));
        assert!(!AnchorId::PerfPipe.needs_privilege(said));
    }

    #[test]
    fn cyclictest_is_given_load_wakeups_settings() {
        let plain = AnchorId::Cyclictest.args(false, "h", "e", &WakeupOptions::default()).join(" ");
        assert_eq!(plain, "-q -N --laptop -t 1 -d 0 -i 1000 -l 2000 --policy=other");
        let w = WakeupOptions { interval: std::time::Duration::from_micros(200), priority: Some(80), threads: 2 };
        let rt = AnchorId::Cyclictest.args(true, "h", "e", &w).join(" ");
        assert_eq!(rt, "-q -N --laptop -t 2 -d 0 -i 200 -l 1000 --policy=fifo -p 80");
    }

    #[test]
    fn quick_runs_a_tenth() {
        assert_eq!(
            AnchorId::PerfPipe.args(false, "h", "e", &WakeupOptions::default()),
            ["bench", "sched", "pipe", "-l", "200000"]
        );
        assert_eq!(AnchorId::PerfPipe.args(true, "h", "e", &WakeupOptions::default())[4], "20000");
        let hf = AnchorId::Hyperfine.args(false, "/proc/self/fd/9", "/tmp/x/h.json", &WakeupOptions::default());
        assert_eq!(hf.last().map(String::as_str), Some("/proc/self/fd/9"));
        assert!(hf.windows(2).any(|w| w[0] == "--export-json" && w[1] == "/tmp/x/h.json"));
    }
}
