//! Scheduling policies behind one trait. Each owns its run queues and per-task state;
//! the engine tells it when tasks become runnable or stop being runnable, asks it to
//! pick, and passes on ticks, yields and wake-ups. Every decision returns the work it
//! did (`Work`), which the engine charges from the cost profile.
//!
//! Each rule is checked against the kernel's source and cited in the policy modules'
//! docs by version, file and function: Linux 2.0.40 (standing in for 2.0.30: the
//! differences are named), 2.4.16 and 2.6.0. Every cited rule has a test in
//! `sim/tests.rs` named after the version and function it follows.

use super::engine::{SimTask, TaskId};

pub mod cfs;
pub mod linux20;
pub mod linux24;
pub mod o1;

/// What a scheduling decision cost, in operations (the profile prices them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Tasks whose goodness was computed.
    pub scanned: u32,
    /// Tasks visited by a counter recalculation.
    pub recalced: u32,
    /// Constant-time picks.
    pub picks: u32,
    /// Balanced-tree levels walked.
    pub tree_steps: u32,
    /// Scanned task_structs last written by another CPU (a cache line fetched).
    pub remote: u32,
}

/// A pick: who runs next on the CPU (None: idle), and its cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pick {
    pub next: Option<TaskId>,
    pub work: Work,
}

/// Why a task became runnable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A task the workload starts.
    New,
    Wake,
    /// A child forked by `parent` (on the CPU passed to `add`).
    Fork {
        parent: TaskId,
    },
}

pub trait Policy {
    fn kind(&self) -> PolicyKind;
    /// One run-queue lock for all CPUs (contention then emerges on SMP).
    fn global_lock(&self) -> bool;
    /// `id` became runnable (woken or new) from `cpu`'s context; returns the CPU whose
    /// queue it joined (the one to kick or preempt).
    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize;
    /// `id` stopped being runnable (blocked, slept, exited).
    fn remove(&mut self, tasks: &[SimTask], id: TaskId);
    /// schedule() on `cpu`; `prev` is the task that just ran if it is still runnable.
    fn pick(&mut self, tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, now: u64) -> Pick;
    /// A timer tick on `cpu` while `cur` runs; true asks for a reschedule.
    fn tick(&mut self, tasks: &[SimTask], cpu: usize, cur: TaskId, now: u64) -> bool;
    /// sched_yield by `cur` (a reschedule follows).
    fn on_yield(&mut self, tasks: &[SimTask], cpu: usize, cur: TaskId) -> Work;
    /// Whether waking `woken` preempts `cur`.
    fn wake_preempts(&self, tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool;
    /// Whether a forked child runs before its parent goes on.
    fn fork_child_first(&self) -> bool;
    /// `id` ran `ns` more (virtual-runtime policies account it).
    fn charge(&mut self, _tasks: &[SimTask], _id: TaskId, _ns: u64) {}
    /// An idle CPU's tick: pull work from a busier CPU.
    fn idle_balance(&mut self, _tasks: &[SimTask], _cpu: usize, _now: u64) -> Work {
        Work::default()
    }
    /// The timer tick (1/HZ).
    fn tick_ns(&self) -> u64 {
        crate::sim::engine::TICK_NS
    }
    /// None: a wake-up that leaves a CPU idle sends it an IPI (reschedule_idle). Some:
    /// idle CPUs find work only at their idle rebalance tick, this often.
    fn idle_rebalance_ns(&self) -> Option<u64> {
        None
    }
    /// Whether sched_yield by `cur` does anything (2.4 returns at once when no other
    /// task waits).
    fn yield_reschedules(&self, _tasks: &[SimTask], _cpu: usize, _cur: TaskId) -> bool {
        true
    }
    /// `child` exited and `parent` reaps it.
    fn reap(&mut self, _tasks: &[SimTask], _child: TaskId, _parent: TaskId) {}
}

/// The policies by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum PolicyKind {
    #[value(name = "linux-2.0")]
    Linux20,
    #[value(name = "linux-2.0-yieldfix")]
    Linux20YieldFix,
    #[value(name = "linux-2.4")]
    Linux24,
    #[value(name = "o1")]
    O1,
    #[value(name = "cfs")]
    Cfs,
    #[value(name = "eevdf")]
    Eevdf,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 6] = [
        PolicyKind::Linux20,
        PolicyKind::Linux20YieldFix,
        PolicyKind::Linux24,
        PolicyKind::O1,
        PolicyKind::Cfs,
        PolicyKind::Eevdf,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Linux20 => "linux-2.0",
            PolicyKind::Linux20YieldFix => "linux-2.0-yieldfix",
            PolicyKind::Linux24 => "linux-2.4",
            PolicyKind::O1 => "o1",
            PolicyKind::Cfs => "cfs",
            PolicyKind::Eevdf => "eevdf",
        }
    }

    /// A fresh policy for `cpus` CPUs.
    pub fn build(self, cpus: usize) -> Box<dyn Policy> {
        match self {
            PolicyKind::Linux20 => Box::new(linux20::Linux20::new(cpus, false)),
            PolicyKind::Linux20YieldFix => Box::new(linux20::Linux20::new(cpus, true)),
            PolicyKind::Linux24 => Box::new(linux24::Linux24::new(cpus)),
            PolicyKind::O1 => Box::new(o1::O1::new(cpus)),
            PolicyKind::Cfs => Box::new(cfs::Fair::new(cpus, false)),
            PolicyKind::Eevdf => Box::new(cfs::Fair::new(cpus, true)),
        }
    }
}

/// The one run queue of Linux 2.0 and 2.2/2.4: every runnable task in arrival order
/// (running ones included), which task each CPU runs, and which it ran last.
pub(crate) struct GlobalQueue {
    pub queue: Vec<TaskId>,
    pub running: Vec<Option<TaskId>>,
    pub last: Vec<Option<TaskId>>,
}

impl GlobalQueue {
    pub fn new(cpus: usize) -> Self {
        Self { queue: Vec::new(), running: vec![None; cpus], last: vec![None; cpus] }
    }

    /// Adds a task at the tail (2.0's add_to_runqueue) or the head (2.4's, `list_add`).
    pub fn add(&mut self, id: TaskId, at_head: bool) {
        if !self.queue.contains(&id) {
            if at_head {
                self.queue.insert(0, id);
            } else {
                self.queue.push(id);
            }
        }
    }

    /// The first idle CPU, in CPU order (2.0's wake_up_process on SMP).
    pub fn first_idle(&self) -> Option<usize> {
        self.running.iter().position(Option::is_none)
    }

    /// Tasks waiting (queued, not running on a CPU).
    pub fn waiting(&self) -> usize {
        self.queue.iter().filter(|&&p| !self.running.contains(&Some(p))).count()
    }

    pub fn remove(&mut self, id: TaskId) {
        self.queue.retain(|&t| t != id);
        for r in &mut self.running {
            if *r == Some(id) {
                *r = None;
            }
        }
    }

    /// move_last_runqueue.
    pub fn move_last(&mut self, id: TaskId) {
        self.queue.retain(|&t| t != id);
        self.queue.push(id);
    }

    /// The first task of the highest `goodness` not running on another CPU (every
    /// queued task is visited), and the scan's work: every queued task, and on SMP a
    /// remote line for each whose task_struct was last written by another CPU.
    pub fn best(
        &self,
        tasks: &[SimTask],
        cpu: usize,
        mut goodness: impl FnMut(TaskId) -> i64,
    ) -> (Option<(i64, TaskId)>, Work) {
        let mut best: Option<(i64, TaskId)> = None;
        let mut work = Work { scanned: self.queue.len() as u32, ..Work::default() };
        for &p in &self.queue {
            if self.running.len() > 1 && tasks[p].cpu != cpu {
                work.remote += 1;
            }
            if self.running.contains(&Some(p)) {
                continue;
            }
            let g = goodness(p);
            if best.is_none_or(|(c, _)| g > c) {
                best = Some((g, p));
            }
        }
        (best, work)
    }

    /// Records `next` as what `cpu` runs.
    pub fn ran(&mut self, cpu: usize, next: Option<TaskId>) {
        self.running[cpu] = next;
        if next.is_some() {
            self.last[cpu] = next;
        }
    }

    /// Whether `p` shares its address space with the task `cpu` ran last.
    pub fn same_mm_as_last(&self, tasks: &[SimTask], cpu: usize, p: TaskId) -> bool {
        self.last[cpu].is_some_and(|l| tasks[l].mm == tasks[p].mm)
    }
}

/// Grows a per-task table to hold `id`.
pub(crate) fn slot<T: Default + Clone>(v: &mut Vec<T>, id: TaskId) -> &mut T {
    if v.len() <= id {
        v.resize(id + 1, T::default());
    }
    &mut v[id]
}
