//! The 2.2/2.4 scheduler, the baseline Molnar measured the O(1) scheduler against.
//!
//! - One global run queue under one lock (runqueue_lock), scanned by goodness() at
//!   every schedule(): counter + (20 - nice) when the counter is nonzero, +1 for the
//!   same address space, PROC_CHANGE_PENALTY (15) for the last CPU on SMP.
//! - sched_yield sets SCHED_YIELD and moves the task to the queue's tail: the yielder
//!   then scores -1, chosen only when nothing else can run; its counter is kept, so
//!   yielding causes no recalculation.
//! - When every runnable task's goodness is 0, every task's counter becomes
//!   counter/2 + NICE_TO_TICKS(nice) (6 ticks at nice 0, HZ = 100) and the scan
//!   repeats.
//! - A wake-up preempts when the woken task's goodness beats the current's.

use super::{GlobalQueue, Pick, Policy, PolicyKind, Why, Work, slot};
use crate::sim::engine::{SimTask, State, TaskId};

pub const PROC_CHANGE_PENALTY: i64 = 15;

/// NICE_TO_TICKS at HZ = 100.
pub fn nice_to_ticks(nice: i32) -> i64 {
    ((20 - nice as i64) >> 2) + 1
}

pub struct Linux24 {
    cpus: usize,
    rq: GlobalQueue,
    counter: Vec<i64>,
    yielded: Vec<bool>,
}

impl Linux24 {
    pub fn new(cpus: usize) -> Self {
        Self { cpus, rq: GlobalQueue::new(cpus), counter: Vec::new(), yielded: Vec::new() }
    }

    fn goodness(&self, tasks: &[SimTask], p: TaskId, cpu: usize) -> i64 {
        if self.yielded[p] {
            return -1;
        }
        let mut w = self.counter[p];
        if w > 0 {
            w += 20 - tasks[p].nice as i64;
            if self.cpus > 1 && tasks[p].cpu == cpu {
                w += PROC_CHANGE_PENALTY;
            }
            if self.rq.same_mm_as_last(tasks, cpu, p) {
                w += 1;
            }
        }
        w
    }

    fn scan(&self, tasks: &[SimTask], cpu: usize) -> Option<(i64, TaskId)> {
        self.rq.best(|p| self.goodness(tasks, p, cpu))
    }
}

impl Policy for Linux24 {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Linux24
    }

    fn global_lock(&self) -> bool {
        self.cpus > 1
    }

    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        if why == Why::New {
            *slot(&mut self.counter, id) = nice_to_ticks(tasks[id].nice);
        }
        slot(&mut self.counter, id);
        *slot(&mut self.yielded, id) = false;
        self.rq.add(id, cpu)
    }

    fn remove(&mut self, _tasks: &[SimTask], id: TaskId) {
        self.rq.remove(id);
    }

    fn pick(&mut self, tasks: &[SimTask], cpu: usize, _prev: Option<TaskId>, _now: u64) -> Pick {
        self.rq.running[cpu] = None;
        let mut work = Work { scanned: self.rq.queue.len() as u32, ..Work::default() };
        let mut best = self.scan(tasks, cpu);
        if let Some((0, _)) = best {
            let mut n = 0;
            for t in tasks.iter().filter(|t| t.state != State::Exited) {
                let c = slot(&mut self.counter, t.id);
                *c = (*c >> 1) + nice_to_ticks(t.nice);
                n += 1;
            }
            work.recalced = n;
            work.scanned += self.rq.queue.len() as u32;
            best = self.scan(tasks, cpu);
        }
        // The yield flag lasts one schedule() of the yielder's CPU.
        if let Some(p) = _prev {
            self.yielded[p] = false;
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
        self.yielded[cur] = true;
        Work::default()
    }

    fn wake_preempts(&self, tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool {
        let cpu = tasks[cur].cpu;
        self.goodness(tasks, woken, cpu) > self.goodness(tasks, cur, cpu)
    }

    fn fork_child_first(&self) -> bool {
        false
    }
}
