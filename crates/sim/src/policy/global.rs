//! What the 2.0 and 2.4 policies share: one global run queue in arrival order, and
//! per-task tables.

use crate::types::{SimTask, TaskId, Work};

/// The one run queue of Linux 2.0 and 2.2/2.4: every runnable task in arrival order
/// (running ones included), which task each CPU runs, and which it ran last.
pub struct GlobalQueue {
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
pub fn slot<T: Default + Clone>(v: &mut Vec<T>, id: TaskId) -> &mut T {
    if v.len() <= id {
        v.resize(id + 1, T::default());
    }
    &mut v[id]
}
