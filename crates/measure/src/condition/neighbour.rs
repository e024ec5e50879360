//! `neighbour:cpu`, `neighbour:mem` (`@CPU` to choose where): a busy process beside
//! the benchmark during the condition's rounds.
//!
//! The neighbour is oscost itself, re-executed (`/proc/self/exe __neighbour KIND CPU`),
//! pinned to one CPU: `cpu` spins on registers, `mem` copies between two 64 MiB
//! buffers (far beyond any last-level cache here), taking memory bandwidth and cache.
//! By default it sits on the first CPU this process may use: the same-CPU hand-offs
//! run on the last, the cross-CPU ones measure on the one before it, so on two CPUs it
//! shares a CPU with the measuring side of a cross-CPU pair and none with a same-CPU
//! pair. It starts before the round's worker, says it runs, and is killed and reaped
//! when the round ends; it dies with the coordinator (PR_SET_PDEATHSIG).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};

use super::{
    Act, Condition, HoldsRound, HoldsRun, Kind, MAX_CPUS, Malformed, NotActed, RoundError, Setup, Unavailable,
};
use crate::bench::BenchOptions;

pub const KIND: Kind = Kind { name: "neighbour", parse, forms: "neighbour:cpu, neighbour:mem (@CPU to pin it)" };

/// The hidden command that makes oscost a neighbour.
pub const NEIGHBOUR_COMMAND: &str = "__neighbour";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    Cpu,
    Mem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Load {
    pub work: Work,
    pub cpu: Option<usize>,
}

/// The condition: the neighbour started around each of its rounds.
struct Neighbour(Load);

fn parse(rest: &str) -> Result<Condition, Malformed> {
    let (work, cpu) = rest.split_once('@').map_or((rest, None), |(w, c)| (w, Some(c)));
    let work = match work {
        "cpu" => Work::Cpu,
        "mem" => Work::Mem,
        _ => return Err(Malformed::NotOneOf { given: work.into(), expected: "cpu or mem" }),
    };
    let cpu = cpu
        .map(|c| {
            c.parse::<usize>().ok().filter(|n| *n < MAX_CPUS).ok_or_else(|| Malformed::CpuNumber { given: c.into() })
        })
        .transpose()?;
    Ok(Condition::new(Neighbour(Load { work, cpu })))
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.work {
            Work::Cpu => "cpu",
            Work::Mem => "mem",
        })?;
        match self.cpu {
            Some(c) => write!(f, "@{c}"),
            None => Ok(()),
        }
    }
}

impl std::fmt::Display for Neighbour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "neighbour:{}", self.0)
    }
}

impl Act for Neighbour {
    fn prepare(&self, opts: &BenchOptions) -> Result<Setup, Unavailable> {
        cpu_of(&self.0, opts).map(|_| Setup::holding(self.0))
    }
}

impl HoldsRun for Load {
    fn hold_round(&self, opts: &BenchOptions) -> Result<Option<Box<dyn HoldsRound>>, RoundError> {
        let running = start(self, opts).map_err(RoundError::new)?;
        Ok(Some(Box::new(running)))
    }
}

impl HoldsRound for Running {
    fn seen(&self) -> Result<Vec<String>, NotActed> {
        Ok(vec![self.describe()])
    }
}

/// The CPU the neighbour runs on.
fn cpu_of(n: &Load, opts: &BenchOptions) -> Result<usize, Unavailable> {
    let allowed =
        oscost_platform::sys::allowed_cpus().map_err(|e| Unavailable(format!("reading the allowed CPUs: {e}")))?;
    match n.cpu {
        Some(c) if allowed.contains(&c) => Ok(c),
        Some(c) => Err(Unavailable(format!("CPU {c} is not one this process may use"))),
        None if allowed.len() < 2 => {
            Err(Unavailable("a neighbour needs a second CPU; this process may use one".into()))
        }
        None => Ok(allowed.iter().copied().find(|c| Some(*c) != opts.placement.cpu).unwrap_or(allowed[0])),
    }
}

/// A neighbour running; killed and reaped when dropped.
struct Running {
    child: Child,
    cpu: usize,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// What the neighbour is doing, read from /proc.
    fn describe(&self) -> String {
        let pid = self.child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, f)| f.split_whitespace().collect()).unwrap_or_default();
        // State (field 3), then utime and stime (fields 14 and 15), in clock ticks.
        let alive = fields.first().is_some_and(|s| *s != "Z" && *s != "X");
        let ticks = |i: usize| fields.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        let cpu_time = ticks(11) + ticks(12);
        format!(
            "neighbour process {pid} on CPU {} {} ({cpu_time} ticks of CPU time so far)",
            self.cpu,
            if alive { "busy through the round" } else { "ENDED during the round" }
        )
    }
}

/// Why the neighbour did not start for a round.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error(transparent)]
    Cpu(#[from] Unavailable),
    #[error("starting the neighbour: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("the neighbour's output")]
    NoOutput,
    #[error("the neighbour: {0}")]
    Read(#[source] std::io::Error),
    /// What it said instead of that it runs.
    #[error("the neighbour did not start ({said})")]
    NotStarted { said: String },
}

/// Starts the neighbour and returns once it runs.
fn start(n: &Load, opts: &BenchOptions) -> Result<Running, StartError> {
    let cpu = cpu_of(n, opts)?;
    let work = if n.work == Work::Cpu { "cpu" } else { "mem" };
    let child = Command::new("/proc/self/exe")
        .args([NEIGHBOUR_COMMAND, work, &cpu.to_string(), &oscost_platform::sys::getpid().to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(StartError::Spawn)?;
    let mut running = Running { child, cpu };
    let mut line = String::new();
    let stdout = running.child.stdout.take().ok_or(StartError::NoOutput)?;
    BufReader::new(stdout).read_line(&mut line).map_err(StartError::Read)?;
    if line.trim() != "running" {
        return Err(StartError::NotStarted { said: line.trim().into() });
    }
    Ok(running)
}

/// The neighbour's main: `__neighbour cpu|mem CPU COORDINATOR`. Runs until killed.
pub fn serve(args: &[String]) -> i32 {
    let parent = args.get(2).and_then(|p| p.parse().ok());
    oscost_platform::sys::die_with_parent(parent);
    let Some(cpu) = args.get(1).and_then(|c| c.parse::<usize>().ok()) else { return 2 };
    if let Err(e) = oscost_platform::sys::set_affinity(&[cpu]) {
        println!("pinning to CPU {cpu}: {e}");
        return 1;
    }
    let mem = args.first().map(String::as_str) == Some("mem");
    // Touched before saying it runs, so the round does not time their first faults.
    let (mut a, b) = if mem { (vec![1u8; 64 << 20], vec![2u8; 64 << 20]) } else { (Vec::new(), Vec::new()) };
    println!("running");
    let mut x = 0u64;
    loop {
        if mem {
            a.copy_from_slice(&b);
            std::hint::black_box(&mut a);
        } else {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
        }
    }
}
