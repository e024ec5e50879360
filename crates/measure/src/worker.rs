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
//! The reply is a stream of JSON lines: each row and each skipped variant the moment the
//! benchmark gives it, then how the round ended. So a round stopped (or killed) while it
//! reaps a thousand tasks on a busy machine keeps every point it finished.
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

use crate::bench::{self, BenchDef, BenchOptions, Ctx, Output, Produced, Scope};
use crate::helper::{Executable, NoNoop};
use crate::runner::{BenchError, MeasureConfig};
use oscost_figure::model::{ResultRow, Skipped};
use oscost_platform::clock::Calibration;
use oscost_platform::placement::{Policy, PolicyGuard};
use oscost_platform::sys;

/// The hidden command that makes oscost a worker.
pub const WORKER_COMMAND: &str = "__worker";

/// For tests of the coordinator's failure paths: `crash:ID` makes the worker measuring
/// benchmark ID abort, `hang:ID:SECONDS` makes it sleep past any bound and sets that
/// benchmark's bound to SECONDS (so a test need not wait the real bound out). The
/// coordinator reads it, warns that it is set, and hands it to that one benchmark's
/// worker in its request; no worker or task inherits it.
pub const FAULT_ENV: &str = "OSCOST_WORKER_FAULT";

/// The test hook, when it is set and names benchmark `id`.
fn fault_for(id: &str) -> Option<String> {
    let fault = std::env::var(FAULT_ENV).ok()?;
    let target = fault.split(':').nth(1)?;
    (target == id).then_some(fault)
}

/// A warning to print before a run when the test hook is set.
pub fn fault_warning() -> Option<String> {
    std::env::var(FAULT_ENV)
        .ok()
        .map(|f| format!("warning: {FAULT_ENV}={f:?} is set: a test hook that makes a worker crash or hang"))
}

/// How long a stopped worker may take to end before it is killed: 5 s, and 20 ms more
/// for each task the round may have started, since it stops and reaps them all first.
/// A worker killed at the end of it loses nothing it finished: its rows are already
/// reported.
fn stop_grace(opts: &crate::bench::BenchOptions) -> Duration {
    let tasks = [opts.tasks.iter().max(), opts.storm_tasks.iter().max()].into_iter().flatten().copied().max();
    let tasks = tasks.unwrap_or(0).max(opts.rooms * 20);
    Duration::from_secs(5) + Duration::from_millis(20) * tasks as u32
}

/// What one round is to measure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoundRequest {
    pub bench: oscost_figure::key::BenchId,
    pub scope: Scope,
    pub cfg: MeasureConfig,
    pub calib: Calibration,
    pub options: BenchOptions,
    /// The helper as an inherited descriptor and its origin, or why there is none.
    pub noop: Result<(i32, String), NoNoop>,
    /// The real-time watchdog's bound, when the policy is real-time.
    pub policy_bound: Duration,
    /// The test hook ([`FAULT_ENV`]), when it names this benchmark.
    pub fault: Option<String>,
    /// The condition the worker enters before it measures (`run --condition`).
    #[serde(default)]
    pub condition: Option<crate::condition::InWorker>,
}

/// The environment variable through which a worker learns its coordinator's pid.
const COORDINATOR_ENV: &str = "OSCOST_COORDINATOR";

/// What one round measured, and how it ended.
#[derive(Debug)]
pub struct RoundReply {
    pub rows: Vec<ResultRow>,
    pub skipped: Vec<Skipped>,
    pub outcome: Result<(), BenchError>,
    /// How the worker knows its condition was in effect, one fact a line.
    pub evidence: Vec<String>,
    /// Hand-off peers the worker moved to the peer cgroup (`cgroup:split`).
    pub peers_moved: Option<usize>,
}

impl RoundReply {
    /// A reply with nothing in it but how the round ended.
    pub fn empty(outcome: Result<(), BenchError>) -> Self {
        RoundReply { rows: Vec::new(), skipped: Vec::new(), outcome, evidence: Vec::new(), peers_moved: None }
    }
}

/// One line of a worker's reply, as the coordinator reads it.
#[derive(Debug, Deserialize)]
enum Message {
    Row(Box<ResultRow>),
    Skipped(Skipped),
    Evidence(Vec<String>),
    PeersMoved(usize),
    Ended(Result<(), BenchError>),
}

/// One line of a worker's reply, as the worker writes it (borrowing what it sends).
#[derive(Serialize)]
enum MessageRef<'a> {
    Row(&'a ResultRow),
    Skipped(&'a Skipped),
    Evidence(&'a [String]),
    PeersMoved(usize),
    Ended(&'a Result<(), BenchError>),
}

impl<'a> From<Produced<'a>> for MessageRef<'a> {
    fn from(p: Produced<'a>) -> Self {
        match p {
            Produced::Row(r) => MessageRef::Row(r),
            Produced::Skipped(s) => MessageRef::Skipped(s),
        }
    }
}

/// The helper as it crosses exec: the number of the descriptor the worker inherits.
fn wire_noop(opts: &BenchOptions, fd: Option<i32>) -> Result<(i32, String), NoNoop> {
    match (&opts.noop, fd) {
        (Ok(exe), Some(fd)) => Ok((fd, exe.origin().to_string())),
        (Ok(_), None) => Err("the no-op helper could not be passed to the worker".into()),
        (Err(e), _) => Err(e.clone()),
    }
}

// --- the worker's side -------------------------------------------------------------

/// The worker's main: one round, reported line by line on standard output. The exit
/// status is 0 whenever the round's end was reported (the report says how it ended).
pub fn serve() -> i32 {
    // The coordinator names itself, so a worker whose coordinator died before the death
    // signal was armed ends at once instead of measuring for no one.
    // It takes its process group with it: a child a benchmark forked has no death
    // signal of its own, and would outlive a coordinator killed with SIGKILL.
    let coordinator = std::env::var(COORDINATOR_ENV).ok().and_then(|p| p.parse().ok());
    if sys::die_with_parent_taking_group(coordinator).is_err() {
        sys::die_with_parent(coordinator);
    }
    let mut out = Output::reporting_to(|p| {
        // A coordinator that stopped reading is gone: the death signal ends us.
        let _ = send(&p.into());
    });
    let req = match read_request() {
        Ok(req) => req,
        Err(e) => return end(&Err(BenchError::Setup(e.to_string()))),
    };
    if let Some(condition) = &req.condition {
        match crate::condition::enter(condition) {
            Ok(crate::condition::Entered::Here { evidence }) => {
                let _ = send(&MessageRef::Evidence(&evidence));
            }
            // A child in a new PID namespace measured and replied.
            Ok(crate::condition::Entered::WaitedFor(code)) => return code,
            Err(e) => return end(&Err(BenchError::Setup(e.to_string()))),
        }
    }
    let outcome = measure_round(req, &mut out);
    if let Some(n) = crate::tasks::peers_moved() {
        let _ = send(&MessageRef::PeersMoved(n));
    }
    end(&outcome)
}

/// Reports how the round ended: the worker's exit code.
fn end(outcome: &Result<(), BenchError>) -> i32 {
    if send(&MessageRef::Ended(outcome)) { 0 } else { 74 }
}

/// Writes one line of the reply and flushes it.
fn send(message: &MessageRef) -> bool {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, message).is_ok() && out.write_all(b"\n").is_ok() && out.flush().is_ok()
}

/// Why a worker could not read its round's request.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error("reading the round's request: {0}")]
    Read(#[source] std::io::Error),
    #[error("the round's request is malformed: {0}")]
    Malformed(#[source] serde_json::Error),
}

fn read_request() -> Result<RoundRequest, RequestError> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).map_err(RequestError::Read)?;
    serde_json::from_str(&text).map_err(RequestError::Malformed)
}

fn measure_round(req: RoundRequest, out: &mut Output) -> Result<(), BenchError> {
    sys::install_interrupt_flag().map_err(|e| BenchError::setup("installing the signal handlers", e))?;
    let def = bench::registry()
        .into_iter()
        .find(|b| b.id == req.bench)
        .ok_or_else(|| BenchError::Setup(format!("no benchmark {:?} in this binary", req.bench)))?;
    inject_fault(req.fault.as_deref());
    let mut opts = req.options;
    opts.noop = req.noop.and_then(|(fd, origin)| Executable::adopt(fd, origin).map_err(NoNoop::from)).map(Arc::new);
    opts.placement.apply_static().map_err(|e| BenchError::Setup(e.to_string()))?;
    // The request's text and whatever parsing it left: given back before measuring.
    sys::release_free_memory();
    let ctx = Ctx { cfg: &req.cfg, calib: &req.calib, opts: &opts, scope: req.scope };
    run_one(def, &ctx, req.policy_bound, out)
}

/// The test hook named by [`FAULT_ENV`], as the request carries it.
fn inject_fault(fault: Option<&str>) {
    match fault.map(|f| f.split(':').next()) {
        Some(Some("crash")) => std::process::abort(),
        Some(Some("hang")) => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        _ => {}
    }
}

/// The bound a `hang:ID:SECONDS` fault sets for benchmark `id`.
fn fault_bound(id: &str) -> Option<Duration> {
    let fault = fault_for(id)?;
    let mut parts = fault.split(':');
    match (parts.next(), parts.nth(1)) {
        (Some("hang"), Some(secs)) => secs.parse().ok().map(Duration::from_secs_f64),
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
    if policy != Policy::Other {
        out.label(oscost_figure::key::SCHED_POLICY.name(), policy.as_str(), true);
    }
    if let Some(label) = ctx.opts.placement.label() {
        out.label(oscost_figure::key::RUNNER.name(), label, false);
    }
    let r = (def.run)(ctx, out);
    if let Some(g) = guard {
        let fired = g.fired();
        drop(g);
        if fired {
            return Err(BenchError::Timeout(format!("the real-time watchdog demoted {} after its bound", def.id)));
        }
    }
    r
}

/// A worker's reply read back: every whole line's row and skip, how the round ended if
/// that line came, and the first line that could not be read. A last line cut short
/// (the worker was killed while writing it) is not a reply line and is left out.
fn parse_reply(bytes: &[u8]) -> (RoundReply, Option<Result<(), BenchError>>, Option<String>) {
    let mut reply = RoundReply::empty(Ok(()));
    let mut ended = None;
    for line in bytes.split_inclusive(|&b| b == b'\n').filter(|l| l.ends_with(b"\n")) {
        match serde_json::from_slice::<Message>(line) {
            Ok(Message::Row(row)) => reply.rows.push(*row),
            Ok(Message::Skipped(s)) => reply.skipped.push(s),
            Ok(Message::Evidence(e)) => reply.evidence.extend(e),
            Ok(Message::PeersMoved(n)) => reply.peers_moved = Some(n),
            Ok(Message::Ended(outcome)) => ended = Some(outcome),
            Err(e) => return (reply, ended, Some(format!("a garbled reply line: {e}"))),
        }
    }
    (reply, ended, None)
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
    /// The condition the worker enters first (fresh workers only).
    pub condition: Option<&'a crate::condition::InWorker>,
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
            let (rows, skipped) = out.into_parts();
            Ok(RoundReply { rows, skipped, ..RoundReply::empty(outcome) })
        }
    };
    result.unwrap_or_else(|e| RoundReply::empty(Err(e)))
}

fn spawn_and_wait(plan: &RoundJob) -> Result<RoundReply, BenchError> {
    let id = &plan.def.id;
    let inherited = match &plan.opts.noop {
        Ok(exe) => Some(exe.inherit().map_err(|e| BenchError::setup("passing the no-op helper on", e))?),
        Err(_) => None,
    };
    let req = RoundRequest {
        bench: id.clone(),
        scope: plan.scope,
        cfg: plan.cfg.clone(),
        calib: plan.calib.clone(),
        options: plan.opts.clone(),
        noop: wire_noop(plan.opts, inherited.as_ref().map(|i| i.raw())),
        policy_bound: plan.bound,
        fault: fault_for(id),
        condition: plan.condition.cloned(),
    };
    let text = serde_json::to_vec(&req).map_err(|e| BenchError::setup("encoding the round's request", e))?;
    // So the tasks of a worker killed with its group are ours to reap, not init's.
    let _ = sys::become_subreaper();
    let mut child = Command::new("/proc/self/exe")
        .arg(WORKER_COMMAND)
        .env(COORDINATOR_ENV, sys::getpid().to_string())
        .env_remove(FAULT_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|e| BenchError::setup("starting a worker process", e))?;
    drop(inherited);
    let pgid = child.id() as libc::pid_t;
    // Kept until the group is reaped, so that a later run can end what is left of it if
    // this process is killed first.
    let marker = oscost_platform::leftovers::GroupMarker::record(pgid);
    // The worker reads its whole request before measuring; a worker that died first
    // shows up below as one that wrote no reply.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&text);
    }
    let mut stdout = child.stdout.take().expect("stdout was piped");
    // The bytes are only gathered while the worker measures (and parsed once it has
    // ended), so the coordinator does no more than copy them while a later variant runs.
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    let bound = fault_bound(id).unwrap_or(plan.bound);
    let grace = stop_grace(plan.opts);
    let started = Instant::now();
    let mut stop_sent: Option<Instant> = None;
    let mut killed_for = None;
    let received = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(bytes) => break bytes,
            Err(mpsc::RecvTimeoutError::Disconnected) => break Vec::new(),
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
    // Whatever the worker left in its group goes with it; as their subreaper, we reap
    // those it could not.
    sys::signal_group(pgid, libc::SIGKILL);
    let status = child.wait().map_err(|e| BenchError::setup("waiting for the worker", e))?;
    sys::reap_group(pgid, Instant::now() + Duration::from_secs(5));
    drop(marker);
    let _ = reader.join();
    // The rows already reported are kept whatever happened after them.
    let (mut reply, ended, garbled) = parse_reply(&received);
    reply.outcome = match (ended, killed_for) {
        (_, Some(_)) | (None, None) if stop_sent.is_some() => Err(BenchError::Interrupted),
        (_, Some(why)) => Err(BenchError::Timeout(format!(
            "the worker measuring {id} was killed after {:.0} s: {why}",
            bound.as_secs_f64()
        ))),
        (Some(outcome), None) => outcome,
        (None, None) => Err(BenchError::Worker(match (garbled, status.code(), status.signal()) {
            (Some(e), _, _) => format!("the worker process measuring {id} replied with {e}"),
            (_, _, Some(sig)) => {
                format!("the worker process measuring {id} was killed by signal {sig} before it reported")
            }
            (_, Some(code), _) => {
                format!("the worker process measuring {id} exited with status {code} without a result")
            }
            _ => format!("the worker process measuring {id} ended without a result"),
        })),
    };
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oscost_figure::model::Method;

    fn line(message: &MessageRef) -> Vec<u8> {
        let mut text = serde_json::to_vec(message).unwrap();
        text.push(b'\n');
        text
    }

    /// What a killed worker had reported is read back whole, and
    /// the line it was cut off in is left out rather than failing the rest.
    #[test]
    fn a_reply_cut_short_keeps_every_whole_line() {
        let row = ResultRow::from_samples("syscall.getppid", Method::PerCall, "ns/call", vec![1.0, 2.0], 2).unwrap();
        let skipped = Skipped { benchmark: "ctx.pipe".into(), params: "x".into(), reason: "why".into() };
        let mut bytes = line(&MessageRef::Row(&row));
        bytes.extend(line(&MessageRef::Skipped(&skipped)));
        bytes.extend(line(&MessageRef::Row(&row)));
        let whole = bytes.len();
        bytes.extend(line(&MessageRef::Ended(&Ok(()))));
        let (reply, ended, garbled) = parse_reply(&bytes);
        assert_eq!((reply.rows.len(), reply.skipped.len()), (2, 1));
        assert!(matches!(ended, Some(Ok(()))) && garbled.is_none());
        // Killed while writing the third line: two whole lines, nothing garbled.
        let (reply, ended, garbled) = parse_reply(&bytes[..whole - 5]);
        assert_eq!((reply.rows.len(), reply.skipped.len()), (1, 1));
        assert!(ended.is_none() && garbled.is_none());
        assert_eq!(reply.rows[0], row);
        let (reply, ended, garbled) = parse_reply(b"");
        assert!(reply.rows.is_empty() && ended.is_none() && garbled.is_none(), "no reply is not a garbled one");
        // A whole line that is no reply line is reported.
        assert!(parse_reply(b"not json\n").2.is_some());
    }
}
