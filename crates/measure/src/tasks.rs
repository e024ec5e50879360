//! The one lifecycle of every task a benchmark starts besides the measuring thread: a
//! group of N threads or forked processes, pinned to given CPUs (and at a nice value,
//! when given), each running a body with its index and sharing a control page (a stop
//! flag, and per task its kernel id and one counter word).
//!
//! Why one place: a task that outlives its benchmark corrupts every later figure and a
//! child that outlives oscost is a leak on the user's machine. So a group is always
//! stopped and reaped, by `finish` on success or by `Drop` on any error path: a process
//! that does not stop in time is killed; a thread is nudged (its channel poisoned) and
//! waited for again. Every child also takes default Ctrl-C handling and dies with
//! oscost (PDEATHSIG). [`ExitWatch`] wakes a waiting measuring thread when a child dies.

use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::kcounts::Task;
use crate::runner::BenchError;
use oscost_platform::sys::{self, SharedWords};

pub use oscost_figure::key::Mode;

/// Where a measuring task and its peers run (not `placement::Placement`, the CPU,
/// nice value and policy the user asks a whole run for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerPlacement {
    SameCpu,
    CrossCpu,
    Unpinned,
}

impl PeerPlacement {
    pub fn as_str(self) -> &'static str {
        match self {
            PeerPlacement::SameCpu => "same_cpu",
            PeerPlacement::CrossCpu => "cross_cpu",
            PeerPlacement::Unpinned => "unpinned",
        }
    }

    /// CPU sets for (measuring task, peer), or why this placement cannot run here.
    pub fn cpus(self, allowed: &[usize]) -> Result<(Vec<usize>, Vec<usize>), TooFewCpus> {
        let n = allowed.len();
        match self {
            _ if n == 0 => Err(TooFewCpus::None),
            PeerPlacement::SameCpu => Ok((vec![allowed[n - 1]], vec![allowed[n - 1]])),
            PeerPlacement::CrossCpu if n < 2 => Err(TooFewCpus::Two { allowed: allowed.to_vec() }),
            PeerPlacement::CrossCpu => Ok((vec![allowed[n - 2]], vec![allowed[n - 1]])),
            PeerPlacement::Unpinned => Ok((allowed.to_vec(), allowed.to_vec())),
        }
    }

    /// As [`PeerPlacement::cpus`], with a same-CPU pair on the last allowed CPU not in
    /// `busy` (kept busy by other work when the run began) where there is one: on a CPU
    /// a hog shares, a hand-off's figure holds the hog's slices.
    pub fn cpus_avoiding(self, allowed: &[usize], busy: &[usize]) -> Result<(Vec<usize>, Vec<usize>), TooFewCpus> {
        match (self, allowed.iter().rev().find(|c| !busy.contains(c))) {
            (PeerPlacement::SameCpu, Some(&cpu)) => Ok((vec![cpu], vec![cpu])),
            _ => self.cpus(allowed),
        }
    }
}

/// Why a placement cannot run on the CPUs this process may use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TooFewCpus {
    #[error("no CPU is allowed")]
    None,
    #[error("needs 2 CPUs, this process may use only {} ({allowed:?})", .allowed.len())]
    Two { allowed: Vec<usize> },
}

/// A benchmark whose placement cannot run here is skipped, with the reason.
impl From<TooFewCpus> for BenchError {
    fn from(e: TooFewCpus) -> Self {
        BenchError::Skipped(e.to_string())
    }
}

/// Restores the measuring thread's CPU affinity when dropped.
pub struct AffinityGuard(Vec<usize>);

impl AffinityGuard {
    pub fn pin(cpus: &[usize]) -> Result<Self, BenchError> {
        let saved = sys::allowed_cpus().map_err(|e| BenchError::setup("reading CPU affinity", e))?;
        sys::set_affinity(cpus).map_err(|e| BenchError::setup(&format!("pinning to CPUs {cpus:?}"), e))?;
        Ok(Self(saved))
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        let _ = sys::set_affinity(&self.0);
    }
}

const STOP: usize = 0;
const READY: usize = 1;
/// Words before the per-task area: stop, ready count, spares.
const HEADER: usize = 4;
/// Per task: its kernel id, then its counter.
const PER_TASK: usize = 2;

/// Bounds on the group's start-up, and on each stage of its stop.
const START_LIMIT: Duration = Duration::from_secs(30);
const STOP_LIMIT: Duration = Duration::from_secs(5);
/// How long tasks still starting when a stop signal comes may take to announce
/// themselves (see `TaskGroup::wait_ready`).
const STOP_GRACE_TO_START: Duration = Duration::from_secs(1);

/// A task's view of its group.
#[derive(Clone)]
pub struct Member {
    words: Arc<SharedWords>,
    index: usize,
}

impl Member {
    pub fn index(&self) -> usize {
        self.index
    }

    #[inline(always)]
    pub fn stop_requested(&self) -> bool {
        self.words.word(STOP).load(Ordering::Relaxed) != 0
    }

    /// This task's counter (only this task writes it).
    #[inline(always)]
    pub fn counter(&self) -> &AtomicU64 {
        self.words.word(HEADER + self.index * PER_TASK + 1)
    }

    /// Pins, sets nice, and announces this task's kernel id; false if it could not.
    /// A task given a nice level runs under SCHED_OTHER whatever the caller's policy:
    /// nice is a fair-scheduler weight and means nothing to a real-time task, and a
    /// real-time hog would never let its CPU go.
    fn prepare(&self, cpus: &[usize], nice: Option<i32>) -> bool {
        let niced = |v: i32| sys::set_policy(libc::SCHED_OTHER, 0).is_ok() && sys::set_nice(v).is_ok();
        if sys::set_affinity(cpus).is_err() || nice.is_some_and(|v| !niced(v)) {
            return false;
        }
        self.words.word(HEADER + self.index * PER_TASK).store(sys::gettid() as u64, Ordering::SeqCst);
        self.words.word(READY).fetch_add(1, Ordering::SeqCst);
        true
    }
}

/// Exit code of a task that could not be pinned or reniced.
const PREPARE_FAILED: i32 = 3;

enum Handles {
    Threads(Vec<std::thread::JoinHandle<i32>>),
    Processes(Vec<(libc::pid_t, bool)>),
}

/// A running group of tasks.
pub struct TaskGroup {
    words: Arc<SharedWords>,
    handles: Handles,
    n: usize,
    /// Unblocks tasks stuck in a wait when they do not stop in time.
    nudge: Option<Box<dyn Fn() + Send>>,
    /// The tasks' kernel ids, for counting their switches.
    pub tasks: Vec<Task>,
}

impl TaskGroup {
    /// Starts `n` tasks running `body(member)`; see [`TaskGroup::start_with`].
    pub fn start<F>(mode: Mode, n: usize, cpus: &[usize], nice: Option<i32>, body: F) -> Result<Self, BenchError>
    where
        F: Fn(&Member) -> i32 + Send + Sync + Clone + 'static,
    {
        Self::start_with(mode, n, cpus, nice, |_| body.clone())
    }

    /// Starts `n` tasks, task `i` running the body `make(i)` returns, each pinned to
    /// `cpus` (and at `nice`, when given); returns once every task has announced itself.
    /// In process mode a body runs in a forked child and is bound by the child's rules
    /// (`sys::fork_child`: raw system calls and memory it owns).
    pub fn start_with<B, M>(
        mode: Mode,
        n: usize,
        cpus: &[usize],
        nice: Option<i32>,
        make: M,
    ) -> Result<Self, BenchError>
    where
        M: FnMut(usize) -> B,
        B: FnOnce(&Member) -> i32 + Send + 'static,
    {
        Self::start_nudged(mode, n, cpus, nice, make, None)
    }

    /// As [`TaskGroup::start_with`], with what unblocks the tasks (see
    /// [`TaskGroup::set_nudge`]) set before the first starts: a start that fails
    /// part-way (a stop signal while the tasks announce themselves) then still wakes
    /// those already waiting, instead of waiting for them until its deadlines pass.
    pub fn start_nudged<B, M>(
        mode: Mode,
        n: usize,
        cpus: &[usize],
        nice: Option<i32>,
        mut make: M,
        nudge: Option<Box<dyn Fn() + Send>>,
    ) -> Result<Self, BenchError>
    where
        M: FnMut(usize) -> B,
        B: FnOnce(&Member) -> i32 + Send + 'static,
    {
        let words =
            Arc::new(SharedWords::new(HEADER + n * PER_TASK).map_err(|e| BenchError::setup("group control page", e))?);
        let handles = match mode {
            Mode::Thread => Handles::Threads(Vec::with_capacity(n)),
            Mode::Process => Handles::Processes(Vec::with_capacity(n)),
        };
        let mut group = TaskGroup { words, handles, n, nudge, tasks: Vec::new() };
        for index in 0..n {
            let m = Member { words: group.words.clone(), index };
            let body = make(index);
            group.spawn_one(m, cpus, nice, body).map_err(|e| BenchError::setup(&format!("task {index} of {n}"), e))?;
        }
        group.wait_ready()?;
        let pid = sys::getpid();
        group.tasks = (0..n)
            .map(|i| {
                let tid = group.words.word(HEADER + i * PER_TASK).load(Ordering::SeqCst) as libc::pid_t;
                match mode {
                    Mode::Thread => Task { pid, tid },
                    Mode::Process => Task::process(tid),
                }
            })
            .collect();
        Ok(group)
    }

    fn spawn_one<B>(&mut self, m: Member, cpus: &[usize], nice: Option<i32>, body: B) -> std::io::Result<()>
    where
        B: FnOnce(&Member) -> i32 + Send + 'static,
    {
        match &mut self.handles {
            Handles::Threads(hs) => {
                let cpus = cpus.to_vec();
                let h = std::thread::Builder::new()
                    .name("oscost-task".into())
                    .stack_size(64 << 10)
                    .spawn(move || if m.prepare(&cpus, nice) { body(&m) } else { PREPARE_FAILED })?;
                hs.push(h);
            }
            Handles::Processes(ps) => {
                let parent = sys::getpid();
                let pid = sys::fork_child(|| {
                    sys::default_signals();
                    sys::die_with_parent(Some(parent));
                    if m.prepare(cpus, nice) { body(&m) } else { PREPARE_FAILED }
                })?;
                ps.push((pid, false));
            }
        }
        Ok(())
    }

    /// Waits until every task announced itself; fails at once if one ended instead.
    /// A stop signal gives the tasks a short grace to announce themselves rather than
    /// failing the start at once: a task that announced itself may already wait for its
    /// first hand-off, which only the caller's own stop (its wake) ends promptly, and a
    /// group dropped half-started could only wait for it until its deadlines pass.
    fn wait_ready(&mut self) -> Result<(), BenchError> {
        let start = Instant::now();
        let mut stopped_at: Option<Instant> = None;
        loop {
            let ready = self.words.word(READY).load(Ordering::SeqCst) as usize;
            if ready >= self.n {
                return Ok(());
            }
            if sys::interrupted() {
                stopped_at.get_or_insert_with(Instant::now);
            }
            let given_up = stopped_at.is_some_and(|t| t.elapsed() > STOP_GRACE_TO_START);
            if self.any_exited() || start.elapsed() > START_LIMIT || given_up {
                return Err(BenchError::Setup(format!(
                    "only {ready} of {} tasks started (a task could not be pinned or reniced, or exited)",
                    self.n
                )));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn any_exited(&mut self) -> bool {
        match &mut self.handles {
            Handles::Threads(hs) => hs.iter().any(|h| h.is_finished()),
            Handles::Processes(ps) => ps.iter_mut().any(|(pid, reaped)| {
                *reaped = *reaped || matches!(sys::try_wait_child(*pid), Ok(Some(_)));
                *reaped
            }),
        }
    }

    /// Sets what unblocks tasks that did not stop in time (poisoning their channel).
    pub fn set_nudge(&mut self, nudge: impl Fn() + Send + 'static) {
        self.nudge = Some(Box::new(nudge));
    }

    /// The counters of all tasks now.
    pub fn counters(&self) -> Vec<u64> {
        (0..self.n).map(|i| self.words.word(HEADER + i * PER_TASK + 1).load(Ordering::Relaxed)).collect()
    }

    /// The processes' pids (empty for threads), for an [`ExitWatch`].
    pub fn pids(&self) -> Vec<libc::pid_t> {
        match &self.handles {
            Handles::Processes(ps) => ps.iter().map(|(p, _)| *p).collect(),
            Handles::Threads(_) => Vec::new(),
        }
    }

    /// Asks every task to stop, runs `wake` (to unblock waiting tasks), reaps them, and
    /// checks that every task ended cleanly.
    pub fn finish(mut self, wake: impl FnOnce()) -> Result<(), BenchError> {
        self.words.word(STOP).store(1, Ordering::SeqCst);
        wake();
        self.reap()
    }

    fn reap(&mut self) -> Result<(), BenchError> {
        self.words.word(STOP).store(1, Ordering::SeqCst);
        let deadline = Instant::now() + STOP_LIMIT;
        let bad = match &mut self.handles {
            Handles::Threads(hs) => reap_threads(hs, deadline, self.nudge.as_deref()),
            Handles::Processes(ps) => reap_processes(ps, deadline),
        };
        match bad.first() {
            None => Ok(()),
            Some(first) => Err(BenchError::Failed(format!("{} task(s) failed: {first}", bad.len()))),
        }
    }
}

/// Joins threads, nudging them once at `deadline` and giving up a stage later (a
/// thread cannot be killed; one that never stops ends with the process).
fn reap_threads(
    hs: &mut Vec<std::thread::JoinHandle<i32>>,
    deadline: Instant,
    nudge: Option<&(dyn Fn() + Send)>,
) -> Vec<String> {
    let mut bad = Vec::new();
    let mut nudged = false;
    for h in hs.drain(..) {
        while !h.is_finished() && Instant::now() < deadline + STOP_LIMIT {
            if Instant::now() > deadline && !nudged {
                nudge.inspect(|f| f());
                nudged = true;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        if !h.is_finished() {
            bad.push("a thread did not stop".to_string());
            continue;
        }
        match h.join() {
            Ok(0) => {}
            Ok(c) => bad.push(format!("a thread ended with code {c}")),
            Err(_) => bad.push("a thread panicked".into()),
        }
    }
    bad
}

/// Reaps processes, killing those still running at `deadline`.
fn reap_processes(ps: &mut [(libc::pid_t, bool)], deadline: Instant) -> Vec<String> {
    let mut bad = Vec::new();
    for (pid, reaped) in ps.iter_mut().filter(|(_, r)| !*r) {
        let status = sys::reap_by(*pid, deadline);
        *reaped = true;
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => bad.push(format!("process {pid} ended with {s:?}")),
            Err(e) => bad.push(format!("process {pid} could not be waited for: {e}")),
        }
    }
    bad
}

impl Drop for TaskGroup {
    fn drop(&mut self) {
        // Error paths: nothing may outlive the group.
        self.words.word(STOP).store(1, Ordering::SeqCst);
        if let Some(n) = &self.nudge {
            n();
        }
        if let Handles::Processes(ps) = &self.handles {
            for (pid, reaped) in ps {
                if !reaped {
                    sys::kill_hard(*pid);
                }
            }
        }
        let _ = self.reap();
    }
}

/// Watches processes through pidfds; when any exits, calls `on_exit` once (to wake a
/// measuring thread that waits on the dead one).
pub struct ExitWatch {
    stop: Option<Arc<std::os::fd::OwnedFd>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ExitWatch {
    /// Starts the watch; without pidfds or an eventfd it watches nothing, and the
    /// group's deadlines still bound every wait.
    pub fn start(pids: &[libc::pid_t], on_exit: impl FnOnce() + Send + 'static) -> Self {
        let fds: Vec<_> = pids.iter().filter_map(|&p| sys::pidfd_open(p).ok()).collect();
        let Ok(stop) = sys::eventfd().map(Arc::new) else { return Self { stop: None, handle: None } };
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("oscost-exit-watch".into())
            .spawn(move || {
                let mut all: Vec<std::os::fd::BorrowedFd> = fds.iter().map(|f| f.as_fd()).collect();
                all.push(stop2.as_fd());
                if let Ok(i) = sys::wait_readable_any(&all)
                    && i + 1 < all.len()
                {
                    on_exit();
                }
            })
            .ok();
        Self { stop: Some(stop), handle }
    }
}

impl Drop for ExitWatch {
    fn drop(&mut self) {
        if let Some(s) = &self.stop {
            sys::raw_write_u64(s.as_raw_fd(), 1);
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Where the peer of a hand-off is moved (`cgroup:split`): a cgroup of its own beside
/// the measuring task's, so that every hand-off crosses cgroups. Set once by a worker
/// measuring under that condition; [`move_peer`] obeys it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PeerCgroup {
    /// The file a task id is written to: `tasks` (cgroup v1, one thread) or
    /// `cgroup.procs` (v2, a whole process).
    pub file: std::path::PathBuf,
    /// Whether a single thread can be moved (v1); under v2 a thread peer cannot be.
    pub threads: bool,
}

static PEER_CGROUP: std::sync::OnceLock<PeerCgroup> = std::sync::OnceLock::new();
static PEERS_MOVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Makes every hand-off peer started from now on move to `group`.
pub fn set_peer_cgroup(group: PeerCgroup) {
    let _ = PEER_CGROUP.set(group);
}

/// How many peers were moved, when peers are moved at all.
pub fn peers_moved() -> Option<usize> {
    PEER_CGROUP.get().map(|_| PEERS_MOVED.load(Ordering::SeqCst))
}

/// Moves a started peer to the peer cgroup, if one is set (before anything is timed).
pub fn move_peer(task: &Task, mode: Mode) -> Result<(), BenchError> {
    let Some(group) = PEER_CGROUP.get() else { return Ok(()) };
    if mode == Mode::Thread && !group.threads {
        return Err(BenchError::Skipped(
            "cgroup:split moves a thread peer only under cgroup v1 (v2 would need a threaded subtree)".into(),
        ));
    }
    std::fs::write(&group.file, task.tid.to_string())
        .map_err(|e| BenchError::setup(&format!("moving the peer into {}", group.file.display()), e))?;
    PEERS_MOVED.fetch_add(1, Ordering::SeqCst);
    Ok(())
}
