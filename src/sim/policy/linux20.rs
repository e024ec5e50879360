//! Linux 2.0.30's scheduler (kernel/sched.c as Appleton's 1999 article describes it),
//! and the article's sched_yield fix.
//!
//! - One global, unsorted run queue; tasks join at its tail. Every schedule() computes
//!   goodness() for every task on it: the counter (ticks left); if nonzero, +1 for
//!   the same address space as the previous task and, on SMP, PROC_CHANGE_PENALTY
//!   for the CPU it last ran on; a task running on another CPU is skipped but still
//!   visited. The first task of the highest goodness wins.
//! - When the best goodness is 0, the recalculation loop runs over *every* task of the
//!   system, runnable or not: counter = counter/2 + priority (DEF_PRIORITY, 20 ticks at
//!   HZ = 100).
//! - A tick takes one from the running task's counter; at 0 it is rescheduled.
//! - A wake-up preempts when the woken task's counter exceeds the current's by 3.
//! - sched_yield: move_last_runqueue, then counter = 0; with the fix, counter - 1 (the
//!   yield costs one tick, so a recalculation comes about 1/20 as often).
//! - SMP: one global lock around the run queue.

use super::{GlobalQueue, Pick, Policy, PolicyKind, Why, Work, slot};
use crate::sim::engine::{SimTask, State, TaskId};

pub const DEF_PRIORITY: i64 = 20;
pub const PROC_CHANGE_PENALTY: i64 = 15;

pub struct Linux20 {
    yield_fix: bool,
    cpus: usize,
    rq: GlobalQueue,
    counter: Vec<i64>,
}

impl Linux20 {
    pub fn new(cpus: usize, yield_fix: bool) -> Self {
        Self { yield_fix, cpus, rq: GlobalQueue::new(cpus), counter: Vec::new() }
    }

    fn goodness(&self, tasks: &[SimTask], p: TaskId, cpu: usize) -> i64 {
        let mut w = self.counter[p];
        if w > 0 {
            if self.cpus > 1 && tasks[p].cpu == cpu {
                w += PROC_CHANGE_PENALTY;
            }
            if self.rq.same_mm_as_last(tasks, cpu, p) {
                w += 1;
            }
        }
        w
    }
}

impl Policy for Linux20 {
    fn kind(&self) -> PolicyKind {
        if self.yield_fix { PolicyKind::Linux20YieldFix } else { PolicyKind::Linux20 }
    }

    fn global_lock(&self) -> bool {
        self.cpus > 1
    }

    fn add(&mut self, _tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        if why == Why::New {
            *slot(&mut self.counter, id) = DEF_PRIORITY;
        }
        slot(&mut self.counter, id);
        self.rq.add(id, cpu)
    }

    fn remove(&mut self, _tasks: &[SimTask], id: TaskId) {
        self.rq.remove(id);
    }

    fn pick(&mut self, tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, _now: u64) -> Pick {
        self.rq.running[cpu] = None;
        let _ = prev; // prev stays on the queue where it was: only its counter matters.
        let mut work = Work { scanned: self.rq.queue.len() as u32, ..Work::default() };
        let best = self.rq.best(|p| self.goodness(tasks, p, cpu));
        if let Some((0, _)) = best {
            let mut n = 0;
            for t in tasks.iter().filter(|t| t.state != State::Exited) {
                let c = slot(&mut self.counter, t.id);
                *c = (*c >> 1) + DEF_PRIORITY;
                n += 1;
            }
            work.recalced = n;
        }
        let next = best.map(|(_, p)| p);
        self.rq.ran(cpu, next);
        Pick { next, work }
    }

    fn tick(&mut self, _tasks: &[SimTask], _cpu: usize, cur: TaskId, _now: u64) -> bool {
        let c = slot(&mut self.counter, cur);
        if *c > 0 {
            *c -= 1;
        }
        *c == 0
    }

    fn on_yield(&mut self, _tasks: &[SimTask], _cpu: usize, cur: TaskId) -> Work {
        self.rq.move_last(cur);
        let c = slot(&mut self.counter, cur);
        if self.yield_fix {
            *c = (*c - 1).max(0);
        } else {
            *c = 0;
        }
        Work::default()
    }

    fn wake_preempts(&self, _tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool {
        self.counter[woken] > self.counter[cur] + 3
    }

    fn fork_child_first(&self) -> bool {
        false
    }
}
