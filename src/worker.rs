//! Worker processes: every round of every benchmark runs in a fresh, lean process.
//!
//! Why: a process's state leaks into what it measures. fork copies the parent's page
//! tables, so a parent that holds SQLite's page cache and the heap left by earlier
//! benchmarks makes every fork dearer (1.4–1.8× here); caches, the allocator and the
//! kernel's view of a long-lived process drift over a run. A worker is oscost itself,
//! re-executed from `/proc/self/exe` (the running binary's own file, never a path
//! another user could replace) with the hidden `__worker` command: it reads one
//! [`RoundRequest`] from its standard input, measures, writes one [`RoundReply`] to
//! its standard output and exits. It opens no database and draws nothing.
//!
//! The coordinator (`session`) keeps the database, the terminal and the watchdog. A
//! worker runs in a process group of its own, so the coordinator can stop it and
//! everything it started at once: a stop signal is passed on to the group (the worker
//! stops between samples and reports what it was doing), a worker past its bound or
//! one that will not stop is killed with its group, and a worker that dies of its own
//! is reported for its benchmark while the run goes on. A worker dies with the
//! coordinator (PR_SET_PDEATHSIG). Real-time policies are entered in the worker only.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::bench::{self, BenchDef, BenchOptions, Ctx, Output, Scope};
use crate::clock::Calibration;
use crate::helper::Executable;
use crate::model::{ResultRow, Skipped};
use crate::placement::{Policy, PolicyGuard};
use crate::runner::{BenchError, MeasureConfig};
use crate::sys;

/// The hidden command that makes oscost a worker.
pub const WORKER_COMMAND: &str = "__worker";

/// For tests of the coordinator's failure paths: `crash:ID` makes the worker measuring
/// benchmark ID abort, `hang:ID:SECONDS` makes it sleep past any bound and sets that
/// benchmark's bound to SECONDS (so a test need not wait the real bound out).
pub const FAULT_ENV: &str = "OSCOST_WORKER_FAULT";

/// How long a stopped worker may take to report before it is killed: 5 s, and 20 ms
/// more for each task the round may have started, since it stops and reaps them all
/// first. Under heavy CPU load even this can be too short (the round's finished points
/// are then lost with the worker): reporting before reaping would close that.
fn stop_grace(opts: &crate::bench::BenchOptions) -> Duration {
    let tasks = [opts.tasks.iter().max(), opts.storm_tasks.iter().max()].into_iter().flatten().copied().max();
    let tasks = tasks.unwrap_or(0).max(opts.rooms * 20);
    Duration::from_secs(5) + Duration::from_millis(20) * tasks as u32
}

/// What one round is to measure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoundRequest {
    pub bench: String,
    pub scope: Scope,
    pub cfg: MeasureConfig,
    pub calib: Calibration,
    pub options: BenchOptions,
    /// The helper as an inherited descriptor and its origin, or why there is none.
    pub noop: Result<(i32, String), String>,
    /// The real-time watchdog's bound, when the policy is real-time.
    pub policy_bound: Duration,
}

/// The environment variable through which a worker learns its coordinator's pid.
const COORDINATOR_ENV: &str = "OSCOST_COORDINATOR";

/// What one round measured, and how it ended.
#[derive(Debug, Serialize, Deserialize)]
pub struct RoundReply {
    pub rows: Vec<ResultRow>,
    pub skipped: Vec<Skipped>,
    pub outcome: Result<(), BenchError>,
}

/// The helper as it crosses exec: the number of the descriptor the worker inherits.
fn wire_noop(opts: &BenchOptions, fd: Option<i32>) -> Result<(i32, String), String> {
    match (&opts.noop, fd) {
        (Ok(exe), Some(fd)) => Ok((fd, exe.origin().to_string())),
        (Ok(_), None) => Err("the no-op helper could not be passed to the worker".into()),
        (Err(e), _) => Err(e.clone()),
    }
}

// --- the worker's side -------------------------------------------------------------

/// The worker's main: one round, its reply on standard output. The exit status is 0
/// whenever a reply was written (the reply says how the benchmark ended).
pub fn serve() -> i32 {
    // The coordinator names itself, so a worker whose coordinator died before the death
    // signal was armed ends at once instead of measuring for no one.
    sys::die_with_parent(std::env::var(COORDINATOR_ENV).ok().and_then(|p| p.parse().ok()));
    let reply = match read_request() {
        Ok(req) => measure_round(req),
        Err(e) => RoundReply { rows: Vec::new(), skipped: Vec::new(), outcome: Err(BenchError::Setup(e)) },
    };
    let text = match serde_json::to_vec(&reply) {
        Ok(t) => t,
        Err(_) => return 70,
    };
    let mut out = std::io::stdout().lock();
    if out.write_all(&text).and_then(|()| out.flush()).is_err() {
        return 74;
    }
    0
}

fn read_request() -> Result<RoundRequest, String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).map_err(|e| format!("reading the round's request: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("the round's request is malformed: {e}"))
}

fn measure_round(req: RoundRequest) -> RoundReply {
    let mut out = Output::default();
    let outcome = (|| {
        sys::install_interrupt_flag().map_err(|e| BenchError::setup("installing the signal handlers", e))?;
        let def = bench::registry()
            .into_iter()
            .find(|b| b.id == req.bench)
            .ok_or_else(|| BenchError::Setup(format!("no benchmark {:?} in this binary", req.bench)))?;
        inject_fault(def.id);
        let mut opts = req.options;
        opts.noop = req.noop.and_then(|(fd, origin)| Executable::adopt(fd, origin)).map(Arc::new);
        opts.placement.apply_static().map_err(|e| BenchError::Setup(e.to_string()))?;
        // The request's text and whatever parsing it left: given back before measuring.
        sys::release_free_memory();
        let ctx = Ctx { cfg: &req.cfg, calib: &req.calib, opts: &opts, scope: req.scope };
        run_one(def, &ctx, req.policy_bound, &mut out)
    })();
    RoundReply { rows: out.rows, skipped: out.skipped, outcome }
}

/// The test hook named by [`FAULT_ENV`].
fn inject_fault(id: &str) {
    let Ok(fault) = std::env::var(FAULT_ENV) else { return };
    match fault.split_once(':') {
        Some(("crash", target)) if target == id => std::process::abort(),
        Some(("hang", rest)) if rest.split(':').next() == Some(id) => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        _ => {}
    }
}

/// The bound a `hang:ID:SECONDS` fault sets for benchmark `id`.
fn fault_bound(id: &str) -> Option<Duration> {
    let fault = std::env::var(FAULT_ENV).ok()?;
    let mut parts = fault.split(':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("hang"), Some(target), Some(secs)) if target == id => secs.parse().ok().map(Duration::from_secs_f64),
        _ => None,
    }
}

/// Runs one benchmark under the requested policy (bounded by the watchdog when it is
/// real-time) and labels its rows with the placement.
fn run_one(def: &BenchDef, ctx: &Ctx, bound: Duration, out: &mut Output) -> Result<(), BenchError> {
    let policy = ctx.opts.placement.policy;
    let guard = if policy != Policy::Other {
        Some(PolicyGuard::enter(policy, bound).map_err(|e| BenchError::Setup(e.to_string()))?)
    } else {
        None
    };
    let r = (def.run)(ctx, out);
    if let Some(g) = guard {
        let fired = g.fired();
        drop(g);
        if fired {
            return Err(BenchError::Timeout(format!("the real-time watchdog demoted {} after its bound", def.id)));
        }
        bench::tag(&mut out.rows, "policy", policy.as_str());
    }
    if let Some(label) = ctx.opts.placement.label() {
        for r in &mut out.rows {
            r.params.entry("runner".into()).or_insert(label.clone().into());
        }
    }
    r
}

// --- the coordinator's side --------------------------------------------------------

/// Everything a round needs from the run.
pub struct RoundJob<'a> {
    pub def: &'a BenchDef,
    pub scope: Scope,
    pub cfg: &'a MeasureConfig,
    pub calib: &'a Calibration,
    pub opts: &'a BenchOptions,
    /// The round is abandoned (its worker killed) after this long.
    pub bound: Duration,
}

/// Where rounds run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executor {
    /// Each round in a fresh worker process (what `oscost run` does).
    Workers,
    /// Each round in the calling process: for tests of the pipeline with benchmarks
    /// that exist only in the test binary. It gives up what workers are for (a lean
    /// parent, a crash kept to its benchmark), so nothing a user runs uses it.
    InProcess,
}

/// Runs one round and returns its reply. A worker that crashes, exceeds its bound or
/// writes no reply becomes an error for this benchmark; a stop signal is passed on to
/// the worker's group and the worker's own report returned.
pub fn run_round(plan: &RoundJob, executor: Executor) -> RoundReply {
    let result = match executor {
        Executor::Workers => spawn_and_wait(plan),
        Executor::InProcess => {
            let mut out = Output::default();
            let ctx = Ctx { cfg: plan.cfg, calib: plan.calib, opts: plan.opts, scope: plan.scope };
            let outcome = run_one(plan.def, &ctx, plan.bound, &mut out);
            Ok(RoundReply { rows: out.rows, skipped: out.skipped, outcome })
        }
    };
    result.unwrap_or_else(|e| RoundReply { rows: Vec::new(), skipped: Vec::new(), outcome: Err(e) })
}

fn spawn_and_wait(plan: &RoundJob) -> Result<RoundReply, BenchError> {
    let id = plan.def.id;
    let inherited = match &plan.opts.noop {
        Ok(exe) => Some(exe.inherit().map_err(|e| BenchError::setup("passing the no-op helper on", e))?),
        Err(_) => None,
    };
    let req = RoundRequest {
        bench: id.to_string(),
        scope: plan.scope,
        cfg: plan.cfg.clone(),
        calib: plan.calib.clone(),
        options: plan.opts.clone(),
        noop: wire_noop(plan.opts, inherited.as_ref().map(|i| i.raw())),
        policy_bound: plan.bound,
    };
    let text = serde_json::to_vec(&req).map_err(|e| BenchError::setup("encoding the round's request", e))?;
    let mut child = Command::new("/proc/self/exe")
        .arg(WORKER_COMMAND)
        .env(COORDINATOR_ENV, sys::getpid().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|e| BenchError::setup("starting a worker process", e))?;
    drop(inherited);
    let pgid = child.id() as libc::pid_t;
    // The worker reads its whole request before measuring; a worker that died first
    // shows up below as one that wrote no reply.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&text);
    }
    let mut stdout = child.stdout.take().expect("stdout was piped");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = stdout.read_to_end(&mut buf).map(|_| buf);
        let _ = tx.send(r);
    });
    let bound = fault_bound(id).unwrap_or(plan.bound);
    let grace = stop_grace(plan.opts);
    let started = Instant::now();
    let mut stop_sent: Option<Instant> = None;
    let mut killed_for = None;
    let received = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(r) => break r.ok(),
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(sig) = sys::stop_signal()
            && stop_sent.is_none()
        {
            sys::signal_group(pgid, sig);
            stop_sent = Some(Instant::now());
        }
        let overdue = started.elapsed() > bound;
        let stuck = stop_sent.is_some_and(|t| t.elapsed() > grace);
        if (overdue || stuck) && killed_for.is_none() {
            killed_for = Some(if stuck { "it did not stop when asked" } else { "it ran past its bound" });
            sys::signal_group(pgid, libc::SIGKILL);
        }
    };
    // Whatever the worker left in its group goes with it.
    sys::signal_group(pgid, libc::SIGKILL);
    let status = child.wait().map_err(|e| BenchError::setup("waiting for the worker", e))?;
    let _ = reader.join();
    if let Some(why) = killed_for {
        if stop_sent.is_some() {
            return Err(BenchError::Interrupted);
        }
        return Err(BenchError::Timeout(format!(
            "the worker measuring {id} was killed after {:.0} s: {why}",
            bound.as_secs_f64()
        )));
    }
    match received.as_deref().map(serde_json::from_slice::<RoundReply>) {
        Some(Ok(reply)) => Ok(reply),
        _ if stop_sent.is_some() => Err(BenchError::Interrupted),
        _ => Err(BenchError::Worker(match (status.code(), status.signal()) {
            (_, Some(sig)) => {
                format!("the worker process measuring {id} was killed by signal {sig} before it reported")
            }
            (Some(code), _) => format!("the worker process measuring {id} exited with status {code} without a result"),
            _ => format!("the worker process measuring {id} ended without a result"),
        })),
    }
}
