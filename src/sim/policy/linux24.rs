//! The 2.4 scheduler (kernel/sched.c of 2.4.16), the baseline Molnar measured the O(1)
//! scheduler against.
//!
//! - One global run queue under one lock (`runqueue_lock`). `add_to_runqueue` puts a
//!   woken or new task at the queue's *head* (`list_add`); `move_last_runqueue` at its
//!   tail.
//! - `goodness()`: a task flagged SCHED_YIELD scores -1 (after every other task, before
//!   idle); a zero counter scores 0; otherwise counter + (20 − nice), +1 when it shares
//!   the address space the CPU last ran (`p->mm == this_mm`), +PROC_CHANGE_PENALTY
//!   (15, include/asm-i386/smp.h) on the CPU it last ran on (SMP). Head to tail, the
//!   first of the highest wins.
//! - When every candidate scores 0, every task's counter becomes counter/2 +
//!   NICE_TO_TICKS(nice) (6 ticks at nice 0, HZ = 100) and the scan repeats
//!   (`goto repeat_schedule`).
//! - `sys_sched_yield`: when no other task waits (`nr_pending`, runnable tasks less the
//!   busy CPUs), it does nothing; otherwise it flags SCHED_YIELD, moves the task to the
//!   tail, and reschedules. The flag lasts one schedule(); the counter is kept.
//! - The tick (`update_process_times`): `if (--p->counter <= 0)` reschedule.
//! - `reschedule_idle()` on a wake-up: the task's last CPU if it is idle, else the idle
//!   CPU idle the longest (oldest `last_schedule`), else the CPU whose current task it
//!   beats (the simulator tests the task's last CPU), with an IPI.
//! - fork (`do_fork`): the child gets `(counter + 1) >> 1`, the parent keeps
//!   `counter >> 1`; the child joins the head through `wake_up_process`.
//! - exit (`release_task`): the reaping parent gets the child's counter back, capped at
//!   MAX_COUNTER (20 ticks).
//! - The recalculation runs outside runqueue_lock in the kernel (under tasklist_lock);
//!   the simulator charges it under the lock.

use super::{GlobalQueue, Pick, PolicyKind, Scheduler, Why, Work, slot};
use crate::sim::types::{SimTask, State, TaskId};

/// include/asm-i386/smp.h of 2.4.
pub const PROC_CHANGE_PENALTY: i64 = 15;
/// include/linux/sched.h: 20 * HZ / 100.
pub const MAX_COUNTER: i64 = 20;

/// NICE_TO_TICKS at HZ = 100: TICK_SCALE(20 − nice) + 1, TICK_SCALE(x) = x >> 2.
pub fn nice_to_ticks(nice: i32) -> i64 {
    ((20 - nice as i64) >> 2) + 1
}

pub struct Linux24 {
    cpus: usize,
    rq: GlobalQueue,
    counter: Vec<i64>,
    yielded: Vec<bool>,
    /// When each CPU last ran schedule() (`last_schedule`).
    last_schedule: Vec<u64>,
}

impl Linux24 {
    pub fn new(cpus: usize) -> Self {
        Self {
            cpus,
            rq: GlobalQueue::new(cpus),
            counter: Vec::new(),
            yielded: Vec::new(),
            last_schedule: vec![0; cpus],
        }
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

    /// reschedule_idle's choice of CPU for `p`.
    fn reschedule_idle(&self, tasks: &[SimTask], p: TaskId, waker: usize) -> usize {
        let last = tasks[p].cpu;
        if self.rq.running[last].is_none() {
            return last;
        }
        let idle = (0..self.cpus).filter(|&c| self.rq.running[c].is_none()).min_by_key(|&c| (self.last_schedule[c], c));
        idle.unwrap_or(if self.cpus > 1 { last } else { waker })
    }

    pub fn counter(&self, id: TaskId) -> i64 {
        self.counter[id]
    }
}

impl Scheduler for Linux24 {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Linux24
    }

    fn global_lock(&self) -> bool {
        self.cpus > 1
    }

    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        match why {
            Why::New => *slot(&mut self.counter, id) = nice_to_ticks(tasks[id].nice),
            Why::Fork { parent } => {
                let c = self.counter[parent];
                *slot(&mut self.counter, id) = (c + 1) >> 1;
                self.counter[parent] = c >> 1;
            }
            Why::Wake => {}
        }
        slot(&mut self.counter, id);
        *slot(&mut self.yielded, id) = false;
        self.rq.add(id, true);
        self.reschedule_idle(tasks, id, cpu)
    }

    fn remove(&mut self, _tasks: &[SimTask], id: TaskId) {
        self.rq.remove(id);
    }

    fn pick(&mut self, tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, now: u64) -> Pick {
        self.rq.running[cpu] = None;
        self.last_schedule[cpu] = now;
        let (mut best, mut work) = self.rq.best(tasks, cpu, |p| self.goodness(tasks, p, cpu));
        if let Some((0, _)) = best {
            let mut n = 0;
            for t in tasks.iter().filter(|t| t.state != State::Exited) {
                let c = slot(&mut self.counter, t.id);
                *c = (*c >> 1) + nice_to_ticks(t.nice);
                n += 1;
            }
            work.recalced = n;
            let (again, w) = self.rq.best(tasks, cpu, |p| self.goodness(tasks, p, cpu));
            best = again;
            work.scanned += w.scanned;
            work.remote += w.remote;
        }
        // The yield flag lasts one schedule() of the yielder's CPU.
        if let Some(p) = prev {
            self.yielded[p] = false;
        }
        let next = best.map(|(_, p)| p);
        self.rq.ran(cpu, next);
        Pick { next, work }
    }

    fn tick(&mut self, _tasks: &[SimTask], _cpu: usize, cur: TaskId, _now: u64) -> bool {
        let c = slot(&mut self.counter, cur);
        *c -= 1;
        if *c <= 0 {
            *c = 0;
            return true;
        }
        false
    }

    fn yield_reschedules(&self, _tasks: &[SimTask], _cpu: usize, _cur: TaskId) -> bool {
        self.rq.waiting() > 0
    }

    fn on_yield(&mut self, _tasks: &[SimTask], _cpu: usize, cur: TaskId) -> Work {
        self.rq.move_last(cur);
        self.yielded[cur] = true;
        Work::default()
    }

    fn wake_preempts(&self, tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool {
        // preemption_goodness(curr, p, cpu) > 0, both scored on the current's CPU.
        let cpu = tasks[cur].cpu;
        self.goodness(tasks, woken, cpu) > self.goodness(tasks, cur, cpu)
    }

    fn fork_child_first(&self) -> bool {
        false
    }

    fn reap(&mut self, _tasks: &[SimTask], child: TaskId, parent: TaskId) {
        self.counter[parent] = (self.counter[parent] + self.counter[child]).min(MAX_COUNTER);
    }
}
