//! A group of N identical tasks (threads or forked processes) pinned to given CPUs,
//! each running a body with its index, sharing a control page (a stop flag and one
//! counter word per task). The group is always stopped and reaped: by `finish`, or
//! by `Drop` on an error path (processes that do not stop in time are killed; every
//! child also dies with oscost through PDEATHSIG).

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::bench::ctx::peer::Mode;
use crate::kcounts::Task;
use crate::runner::BenchError;
use crate::sys::{self, SharedWords};

const STOP: usize = 0;
const READY: usize = 1;
/// Words before the per-task area: stop, ready count, spare.
const HEADER: usize = 4;
/// Per task: its kernel id, then its counter.
const PER_TASK: usize = 2;

/// A task's view of the group.
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
}

enum Handles {
    Threads(Vec<std::thread::JoinHandle<i32>>),
    Processes(Vec<(libc::pid_t, bool)>),
}

pub struct TaskGroup {
    words: Arc<SharedWords>,
    handles: Handles,
    n: usize,
    /// The tasks' kernel ids, for counting their switches.
    pub tasks: Vec<Task>,
}

const START_LIMIT: Duration = Duration::from_secs(30);
const STOP_LIMIT: Duration = Duration::from_secs(5);

/// Refuses a group that the process or file limits could not hold.
pub fn check_limits(mode: Mode, n: usize, fds_per_task: usize) -> Result<(), String> {
    if mode == Mode::Process
        && let Some(limit) = sys::nproc_limit()
        && !sys::is_root()
    {
        let in_use = count_user_processes();
        if in_use + n + 16 > limit as usize {
            return Err(format!(
                "{n} processes would exceed the process limit (RLIMIT_NPROC {limit}, {in_use} already in use by this user)"
            ));
        }
    }
    let nofile = sys::nofile_limit();
    let need = n * fds_per_task + 64;
    if need as u64 > nofile {
        return Err(format!("{n} tasks need about {need} file descriptors; the limit (RLIMIT_NOFILE) is {nofile}"));
    }
    let mem_needed = (n as u64) * if mode == Mode::Thread { 128 << 10 } else { 1 << 20 };
    if mem_needed > sys::available_memory_bytes() / 2 {
        return Err(format!("{n} tasks need about {} MiB; too close to the memory available", mem_needed >> 20));
    }
    Ok(())
}

fn count_user_processes() -> usize {
    let uid = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
        s.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
    });
    let Some(uid) = uid else { return 0 };
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("status"))
                        .ok()
                        .and_then(|s| {
                            s.lines()
                                .find(|l| l.starts_with("Uid:"))
                                .map(|l| l.split_whitespace().nth(1) == Some(uid.as_str()))
                        })
                        .unwrap_or(false)
                })
                .count()
        })
        .unwrap_or(0)
}

impl TaskGroup {
    /// Starts `n` tasks running `body(member)`, each pinned to `cpus` (and at `nice`,
    /// when given). In process mode the body runs after fork: raw calls only.
    pub fn start<F>(mode: Mode, n: usize, cpus: &[usize], nice: Option<i32>, body: F) -> Result<Self, BenchError>
    where
        F: Fn(&Member) -> i32 + Send + Sync + Clone + 'static,
    {
        let words =
            Arc::new(SharedWords::new(HEADER + n * PER_TASK).map_err(|e| BenchError::setup("group control page", e))?);
        let mut group = TaskGroup { words: words.clone(), handles: Handles::Threads(Vec::new()), n, tasks: Vec::new() };
        let prepare = move |m: &Member, cpus: &[usize]| -> bool {
            if sys::set_affinity(cpus).is_err() {
                return false;
            }
            if let Some(v) = nice
                && sys::set_nice(v).is_err()
            {
                return false;
            }
            m.words.word(HEADER + m.index * PER_TASK).store(sys::gettid() as u64, Ordering::SeqCst);
            m.words.word(READY).fetch_add(1, Ordering::SeqCst);
            true
        };
        match mode {
            Mode::Thread => {
                let mut hs = Vec::with_capacity(n);
                for index in 0..n {
                    let m = Member { words: words.clone(), index };
                    let body = body.clone();
                    let cpus = cpus.to_vec();
                    let h = std::thread::Builder::new()
                        .name("oscost-load".into())
                        .stack_size(64 << 10)
                        .spawn(move || if prepare(&m, &cpus) { body(&m) } else { 3 })
                        .map_err(|e| BenchError::setup(&format!("starting thread {index} of {n}"), e));
                    match h {
                        Ok(h) => hs.push(h),
                        Err(e) => {
                            group.handles = Handles::Threads(hs);
                            return Err(e);
                        }
                    }
                }
                group.handles = Handles::Threads(hs);
            }
            Mode::Process => {
                group.handles = Handles::Processes(Vec::with_capacity(n));
                for index in 0..n {
                    let m = Member { words: words.clone(), index };
                    match sys::fork() {
                        Ok(sys::Fork::Child) => {
                            sys::default_sigint();
                            sys::die_with_parent();
                            let code = if prepare(&m, cpus) { body(&m) } else { 3 };
                            sys::exit_now(code)
                        }
                        Ok(sys::Fork::Parent(pid)) => {
                            if let Handles::Processes(v) = &mut group.handles {
                                v.push((pid, false));
                            }
                        }
                        Err(e) => return Err(BenchError::Failed(format!("fork of task {index} of {n}: {e}"))),
                    }
                }
            }
        }
        let start = Instant::now();
        while (words.word(READY).load(Ordering::SeqCst) as usize) < n {
            if start.elapsed() > START_LIMIT || sys::interrupted() {
                return Err(BenchError::Setup(format!(
                    "only {} of {n} tasks started",
                    words.word(READY).load(Ordering::SeqCst)
                )));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let pid = sys::getpid();
        group.tasks = (0..n)
            .map(|i| {
                let tid = words.word(HEADER + i * PER_TASK).load(Ordering::SeqCst) as libc::pid_t;
                match mode {
                    Mode::Thread => Task { pid, tid },
                    Mode::Process => Task::process(tid),
                }
            })
            .collect();
        Ok(group)
    }

    /// The counters of all tasks now.
    pub fn counters(&self) -> Vec<u64> {
        (0..self.n).map(|i| self.words.word(HEADER + i * PER_TASK + 1).load(Ordering::Relaxed)).collect()
    }

    /// Asks every task to stop, runs `wake` (to unblock waiting tasks), and reaps them;
    /// checks that every task ended cleanly.
    pub fn finish(mut self, wake: impl FnOnce()) -> Result<(), BenchError> {
        self.words.word(STOP).store(1, Ordering::SeqCst);
        wake();
        self.reap()
    }

    fn reap(&mut self) -> Result<(), BenchError> {
        self.words.word(STOP).store(1, Ordering::SeqCst);
        let deadline = Instant::now() + STOP_LIMIT;
        let mut bad = Vec::new();
        match &mut self.handles {
            Handles::Threads(hs) => {
                for h in hs.drain(..) {
                    while !h.is_finished() && Instant::now() < deadline {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    if !h.is_finished() {
                        bad.push("a thread did not stop".to_string());
                        continue; // cannot kill a thread; it ends with the process
                    }
                    match h.join() {
                        Ok(0) => {}
                        Ok(c) => bad.push(format!("a thread ended with code {c}")),
                        Err(_) => bad.push("a thread panicked".into()),
                    }
                }
            }
            Handles::Processes(ps) => {
                for (pid, reaped) in ps.iter_mut().filter(|(_, r)| !*r) {
                    let status = sys::reap_by(*pid, deadline).ok();
                    *reaped = true;
                    match status {
                        Some(s) if s.success() => {}
                        Some(s) => bad.push(format!("process {pid} ended with {s:?}")),
                        None => bad.push(format!("process {pid} could not be waited for")),
                    }
                }
            }
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(BenchError::Failed(format!("{} task(s) failed: {}", bad.len(), bad[0])))
        }
    }

    /// Pidfds of the processes (for a monitor that wakes waiters when one dies).
    pub fn pids(&self) -> Vec<libc::pid_t> {
        match &self.handles {
            Handles::Processes(ps) => ps.iter().map(|(p, _)| *p).collect(),
            Handles::Threads(_) => Vec::new(),
        }
    }
}

impl Drop for TaskGroup {
    fn drop(&mut self) {
        self.words.word(STOP).store(1, Ordering::SeqCst);
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

/// Watches processes through pidfds; when any exits, calls `on_exit` once.
pub struct ExitWatch {
    stop: Arc<std::os::fd::OwnedFd>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ExitWatch {
    pub fn start(pids: &[libc::pid_t], on_exit: impl FnOnce() + Send + 'static) -> Self {
        let fds: Vec<_> = pids.iter().filter_map(|&p| sys::pidfd_open(p).ok()).collect();
        let stop = Arc::new(sys::eventfd().expect("eventfd for the exit watch"));
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("oscost-exit-watch".into())
            .spawn(move || {
                let mut raw: Vec<_> = fds.iter().map(|f| f.as_raw_fd()).collect();
                raw.push(stop2.as_raw_fd());
                if let Ok(i) = sys::wait_readable_any(&raw)
                    && i + 1 < raw.len()
                {
                    on_exit();
                }
            })
            .ok();
        Self { stop, handle }
    }
}

impl Drop for ExitWatch {
    fn drop(&mut self) {
        sys::raw_write_u64(self.stop.as_raw_fd(), 1);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
