//! Readers of the anchors' own output, each a pure function of the text the tool
//! printed (the unit tests hold real outputs as fixtures), and the conversions to the
//! unit of the oscost figure it stands beside.
//!
//! Every reader is strict about the figure it takes and lenient about everything else:
//! a line it does not know is passed over, a figure it needs and cannot find is an
//! error that names the line it looked for.

/// Why an anchor's output could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParseError {
    #[error("no `{0}` line in its output")]
    Missing(&'static str),
    #[error("`{line}`: {why}")]
    Bad { line: String, why: String },
}

fn bad(line: &str, why: impl Into<String>) -> ParseError {
    ParseError::Bad { line: line.trim().to_string(), why: why.into() }
}

/// A positive, finite number.
fn positive(line: &str, token: &str) -> Result<f64, ParseError> {
    match token.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        Ok(x) => Err(bad(line, format!("{x} is not a positive figure"))),
        Err(e) => Err(bad(line, format!("`{token}`: {e}"))),
    }
}

/// What `perf bench sched pipe` and `perf bench syscall basic` print:
///
/// ```text
/// # Executed 20000 pipe operations between two processes
///      Total time: 0.125 [sec]
///        6.266650 usecs/op
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PerfBench {
    pub usecs_per_op: f64,
    /// The `# Executed …` line's text after the count (`pipe operations between two
    /// threads`, `getppid() calls`), when printed.
    pub executed: Option<String>,
}

pub fn perf_bench(text: &str) -> Result<PerfBench, ParseError> {
    let mut usecs = None;
    let mut executed = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("# Executed ") {
            executed = rest.split_once(' ').map(|(_, what)| what.to_string());
        } else if let Some(figure) = t.strip_suffix("usecs/op") {
            usecs = Some(positive(line, figure.trim())?);
        }
    }
    Ok(PerfBench { usecs_per_op: usecs.ok_or(ParseError::Missing("usecs/op"))?, executed })
}

/// ns per hand-off from `perf bench sched pipe`'s µs per op: one op is a round trip,
/// the token there and back, so two hand-offs.
pub fn perf_pipe_ns_per_handoff(usecs_per_op: f64) -> f64 {
    usecs_per_op * 1000.0 / 2.0
}

/// ns per call from `perf bench syscall basic`'s µs per op (one glibc `syscall()` of
/// getppid per op).
pub fn perf_syscall_ns_per_call(usecs_per_op: f64) -> f64 {
    usecs_per_op * 1000.0
}

/// What hackbench (rt-tests) prints:
///
/// ```text
/// Running in process mode with 2 groups using 40 file descriptors each (== 80 tasks)
/// Each sender will pass 100 messages of 100 bytes
/// Time: 0.239
/// ```
///
/// Each group has `fds / 2` senders and as many receivers; every sender writes its
/// messages to every receiver of its group.
#[derive(Debug, Clone, PartialEq)]
pub struct Hackbench {
    pub groups: u64,
    /// File descriptors per group as printed (twice the `--fds` given).
    pub fds: u64,
    pub loops: u64,
    pub seconds: f64,
}

impl Hackbench {
    /// Messages delivered in all: groups × senders × receivers × loops.
    pub fn messages(&self) -> u64 {
        let per_side = self.fds / 2;
        self.groups * per_side * per_side * self.loops
    }

    /// Messages delivered per second over the whole run.
    pub fn messages_per_second(&self) -> f64 {
        self.messages() as f64 / self.seconds
    }
}

/// The number before `word` in `line` (`2 groups` → 2).
fn count_before(line: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(2).find(|w| w[1] == word).and_then(|w| w[0].parse().ok())
}

pub fn hackbench(text: &str) -> Result<Hackbench, ParseError> {
    let (mut groups, mut fds, mut loops, mut seconds) = (None, None, None, None);
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("Running in ") {
            groups = Some(count_before(t, "groups").ok_or_else(|| bad(t, "no group count"))?);
            fds = Some(count_before(t, "file").ok_or_else(|| bad(t, "no descriptor count"))?);
        } else if t.starts_with("Each sender will pass ") {
            loops = Some(count_before(t, "messages").ok_or_else(|| bad(t, "no message count"))?);
        } else if let Some(s) = t.strip_prefix("Time:") {
            seconds = Some(positive(t, s.trim())?);
        }
    }
    Ok(Hackbench {
        groups: groups.ok_or(ParseError::Missing("Running in"))?,
        fds: fds.ok_or(ParseError::Missing("Running in"))?,
        loops: loops.ok_or(ParseError::Missing("Each sender will pass"))?,
        seconds: seconds.ok_or(ParseError::Missing("Time:"))?,
    })
}

/// One thread's summary line of `cyclictest -q` (with `-N`, in ns):
///
/// ```text
/// T: 0 ( 7455) P: 0 I:1000 C:    200 Min:  67808 Act:   84393 Avg:   98462 Max: 3495957
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Cyclictest {
    pub cycles: u64,
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

/// The figure after `key` (`Avg:` → 98462), whether or not a space follows the colon.
fn field(line: &str, key: &str) -> Option<String> {
    let at = line.find(key)? + key.len();
    line[at..].split_whitespace().next().map(str::to_string)
}

/// Every thread's line, pooled: cycles summed, the average weighted by each thread's
/// cycles (what load.wakeup's mean over its sleepers' pooled wakes is), the extremes
/// of all.
pub fn cyclictest(text: &str) -> Result<Cyclictest, ParseError> {
    let mut pooled: Option<Cyclictest> = None;
    for line in text.lines().map(str::trim).filter(|l| l.starts_with("T:")) {
        let t = cyclictest_thread(line)?;
        pooled = Some(match pooled {
            None => t,
            Some(p) => {
                let cycles = p.cycles + t.cycles;
                Cyclictest {
                    cycles,
                    min: p.min.min(t.min),
                    avg: (p.avg * p.cycles as f64 + t.avg * t.cycles as f64) / cycles as f64,
                    max: p.max.max(t.max),
                }
            }
        });
    }
    pooled.ok_or(ParseError::Missing("T:"))
}

/// One thread's summary line.
fn cyclictest_thread(line: &str) -> Result<Cyclictest, ParseError> {
    let number = |key: &'static str| -> Result<f64, ParseError> {
        let token = field(line, key).ok_or_else(|| bad(line, format!("no {key}")))?;
        token
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| bad(line, format!("{key} {token}")))
    };
    let cycles = number("C:")? as u64;
    if cycles == 0 {
        return Err(bad(line, "no cycles ran"));
    }
    Ok(Cyclictest { cycles, min: number("Min:")?, avg: number("Avg:")?, max: number("Max:")? })
}

/// The first command's figures in hyperfine's `--export-json` file, in seconds.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Hyperfine {
    pub command: String,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    #[serde(default)]
    pub times: Vec<f64>,
}

#[derive(serde::Deserialize)]
struct HyperfineExport {
    results: Vec<Hyperfine>,
}

pub fn hyperfine(json: &str) -> Result<Hyperfine, ParseError> {
    let export: HyperfineExport =
        serde_json::from_str(json).map_err(|e| bad("hyperfine --export-json", e.to_string()))?;
    let first = export.results.into_iter().next().ok_or(ParseError::Missing("results"))?;
    if !(first.median.is_finite() && first.median > 0.0) {
        return Err(bad("hyperfine --export-json", format!("median {}", first.median)));
    }
    Ok(first)
}

/// ns from hyperfine's seconds.
pub fn hyperfine_ns(seconds: f64) -> f64 {
    seconds * 1e9
}

/// The raw loop's one line, `getppid 116.250 ns/call` or `pipe 1940.125 ns/hand-off`:
/// the figure, for the mode asked.
pub fn raw_loop(text: &str, mode: &str) -> Result<f64, ParseError> {
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() == Some(mode) {
            let figure = words.next().ok_or_else(|| bad(line, "no figure"))?;
            return positive(line, figure);
        }
    }
    Err(ParseError::Missing("the raw loop's figure"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perf 6.1 (Debian bookworm's linux-perf), captured on a 2-vCPU VM.
    const PERF_PIPE: &str = "# Running 'sched/pipe' benchmark:
# Executed 20000 pipe operations between two processes

     Total time: 0.125 [sec]

       6.266650 usecs/op
         159574 ops/sec
";
    const PERF_PIPE_THREADS: &str = "# Running 'sched/pipe' benchmark:
# Executed 20000 pipe operations between two threads

     Total time: 0.123 [sec]

       6.167950 usecs/op
         162128 ops/sec
";
    const PERF_SYSCALL: &str = "# Running 'syscall/basic' benchmark:
# Executed 100000 getppid() calls
     Total time: 0.040 [sec]

       0.406920 usecs/op
        2457485 ops/sec
";
    /// rt-tests 2.4.
    const HACKBENCH: &str = "Running in process mode with 2 groups using 40 file descriptors each (== 80 tasks)
Each sender will pass 100 messages of 100 bytes
Time: 0.239
";
    const CYCLICTEST: &str = "T: 0 ( 7455) P: 0 I:1000 C:    200 Min:  67808 Act:   84393 Avg:   98462 Max: 3495957\n";
    /// hyperfine 1.15, times cut to three.
    const HYPERFINE: &str = r#"{
  "results": [
    {
      "command": "/bin/true",
      "mean": 0.0010490478666666666,
      "stddev": 0.0015675657497803384,
      "median": 0.0005603875,
      "user": 0.00045616666666666657,
      "system": 0.00005506666666666666,
      "min": 0.000535595,
      "max": 0.007913244,
      "times": [0.000559411, 0.0005657100000000001, 0.000643346],
      "exit_codes": [0, 0, 0]
    }
  ]
}"#;

    #[test]
    fn perf_pipe_is_read_and_a_round_trip_is_two_handoffs() {
        let p = perf_bench(PERF_PIPE).unwrap();
        assert_eq!(p.usecs_per_op, 6.266650);
        assert_eq!(p.executed.as_deref(), Some("pipe operations between two processes"));
        assert!((perf_pipe_ns_per_handoff(p.usecs_per_op) - 3133.325).abs() < 1e-9);
        assert_eq!(perf_pipe_ns_per_handoff(5.0), 2500.0);
        let t = perf_bench(PERF_PIPE_THREADS).unwrap();
        assert_eq!(t.executed.as_deref(), Some("pipe operations between two threads"));
        assert_eq!(t.usecs_per_op, 6.167950);
    }

    #[test]
    fn perf_syscall_basic_is_read_in_ns_per_call() {
        let p = perf_bench(PERF_SYSCALL).unwrap();
        assert_eq!(p.executed.as_deref(), Some("getppid() calls"));
        assert!((perf_syscall_ns_per_call(p.usecs_per_op) - 406.92).abs() < 1e-9);
        assert_eq!(perf_syscall_ns_per_call(0.166), 166.0);
    }

    #[test]
    fn perf_output_without_a_figure_is_an_error() {
        assert_eq!(perf_bench("# Running 'sched/pipe' benchmark:\n"), Err(ParseError::Missing("usecs/op")));
        assert!(matches!(perf_bench("  nan usecs/op\n"), Err(ParseError::Bad { .. })));
        assert!(matches!(perf_bench("  x usecs/op\n"), Err(ParseError::Bad { .. })));
    }

    #[test]
    fn hackbench_counts_every_sender_to_every_receiver() {
        let h = hackbench(HACKBENCH).unwrap();
        assert_eq!(h, Hackbench { groups: 2, fds: 40, loops: 100, seconds: 0.239 });
        // 2 groups × 20 senders × 20 receivers × 100 messages.
        assert_eq!(h.messages(), 80_000);
        assert_eq!(h.messages_per_second(), 80_000.0 / 0.239);
        assert_eq!(hackbench("Time: 0.1\n"), Err(ParseError::Missing("Running in")));
    }

    #[test]
    fn cyclictest_summary_is_read() {
        let c = cyclictest(CYCLICTEST).unwrap();
        assert_eq!(c, Cyclictest { cycles: 200, min: 67808.0, avg: 98462.0, max: 3495957.0 });
        let tight = "T: 0 (12345) P: 0 I:1000 C:1000000 Min:1 Act:2 Avg:3 Max:4";
        assert_eq!(cyclictest(tight).unwrap().cycles, 1_000_000);
        assert_eq!(cyclictest("# /dev/cpu_dma_latency set to 0us\n"), Err(ParseError::Missing("T:")));
        // Two threads pool: cycles add, the average is weighted by them.
        let two = "T: 0 ( 1) P:80 I:200 C:  300 Min: 1000 Act: 2 Avg: 2000 Max: 9000\n\
                   T: 1 ( 2) P:80 I:200 C:  100 Min:  500 Act: 2 Avg: 6000 Max: 7000\n";
        assert_eq!(cyclictest(two).unwrap(), Cyclictest { cycles: 400, min: 500.0, avg: 3000.0, max: 9000.0 });
    }

    #[test]
    fn hyperfine_export_is_read_in_seconds() {
        let h = hyperfine(HYPERFINE).unwrap();
        assert_eq!(h.command, "/bin/true");
        assert_eq!(h.median, 0.0005603875);
        assert_eq!(hyperfine_ns(h.median), 0.0005603875 * 1e9);
        assert_eq!(h.times.len(), 3);
        assert!(hyperfine("{}").is_err());
        assert_eq!(hyperfine(r#"{"results": []}"#), Err(ParseError::Missing("results")));
    }

    #[test]
    fn raw_loop_lines_are_read_by_mode() {
        assert_eq!(raw_loop("getppid 116.250 ns/call\n", "getppid"), Ok(116.25));
        assert_eq!(raw_loop("pipe 1940.125 ns/hand-off\n", "pipe"), Ok(1940.125));
        assert!(raw_loop("pipe 1940.125 ns/hand-off\n", "getppid").is_err());
    }
}
