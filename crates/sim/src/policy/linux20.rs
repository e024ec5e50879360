//! Linux 2.0's scheduler (kernel/sched.c of 2.0.40, standing in for the 2.0.30 that
//! Travis measured), and the sched_yield change Appleton's 1999 article proposes.
//!
//! - One global, unsorted run queue; `add_to_runqueue` links a task in at its tail.
//! - `schedule()` computes `goodness()` for every task on it, head to tail, and the
//!   first of the highest wins (`if (weight > c)`). goodness is the counter (ticks
//!   left); when nonzero, +1 for the task that just ran (`p == prev`: the same task,
//!   not the same address space) and, on SMP, `PROC_CHANGE_PENALTY` (20 on i386,
//!   include/asm-i386/smp.h) for the CPU it last ran on. A task running on another CPU
//!   scores -1000.
//! - When the best goodness is 0, the recalculation loop runs over *every* task of the
//!   system (`for_each_task`), runnable or not: `counter = (counter >> 1) + priority`,
//!   priority being 20 − nice (sys_nice; DEF_PRIORITY 20 ticks at HZ = 100). There is
//!   no rescan: the first task that scored 0 runs.
//! - The tick (`update_process_times`) takes one from the running task's counter and
//!   reschedules when it goes *below* 0: a full slice is 21 ticks.
//! - A wake-up (`add_to_runqueue`) preempts the waker's CPU when the woken counter
//!   exceeds the current's by 3; on SMP the first idle CPU is sent MSG_RESCHEDULE (the
//!   simulator then skips the +3 test, a simplification).
//! - fork (`do_fork`): `p->counter = (current->counter >>= 1)`: parent and child share
//!   the parent's ticks, so the child never preempts; it joins the queue's tail.
//! - `sys_sched_yield`: `move_last_runqueue(current); current->counter = 0`, as the
//!   article's Listing 2 and 2.0.31–2.0.40 have it (the 2.0.30 tag itself only moves
//!   the task). `linux-2.0-yieldfix` is the article's Listing 3 (`if (counter)
//!   counter--`): a proposal, in no 2.0 release; a yield then costs one tick, so the
//!   recalculation runs about 1/20 as often.
//! - SMP: the kernel lock (`kernel_flag`, include/asm-i386/smp_lock.h of 2.0.40;
//!   taken by lock_kernel on every entry from user space or an interrupt, and held
//!   through schedule() and the switch) is the only lock: one CPU is in the kernel at
//!   a time, and the others spin for it. The simulator holds it for all kernel work
//!   on SMP: system calls, scheduling, switches, ticks and a wake-up's remote lines
//!   (not the reschedule IPI a busy CPU takes, charged on its own clock). User
//!   computation runs beside it. Each piece of kernel work takes the lock on its own,
//!   so another CPU may slip in between a system call and the schedule() that follows
//!   it, where the kernel would hold the lock throughout; the kernel time of all CPUs
//!   is serialised either way. No reprint runs 2.0 on more than one CPU.

use super::{GlobalQueue, LoopbackXmit, Pick, PolicyKind, Scheduler, Why, Work, slot};
use crate::types::{SimTask, State, TaskId};

pub const DEF_PRIORITY: i64 = 20;
/// include/asm-i386/smp.h of 2.0.
pub const PROC_CHANGE_PENALTY: i64 = 20;

/// sys_nice: priority = 20 − nice, within 1..40.
pub fn priority(nice: i32) -> i64 {
    (DEF_PRIORITY - nice as i64).clamp(1, 2 * DEF_PRIORITY)
}

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

    /// goodness(p, prev, this_cpu).
    fn goodness(&self, tasks: &[SimTask], p: TaskId, prev: Option<TaskId>, cpu: usize) -> i64 {
        let mut w = self.counter[p];
        if w > 0 {
            if self.cpus > 1 && tasks[p].cpu == cpu {
                w += PROC_CHANGE_PENALTY;
            }
            if prev == Some(p) {
                w += 1;
            }
        }
        w
    }

    pub fn counter(&self, id: TaskId) -> i64 {
        self.counter[id]
    }
}

impl Scheduler for Linux20 {
    fn kind(&self) -> PolicyKind {
        if self.yield_fix { PolicyKind::Linux20YieldFix } else { PolicyKind::Linux20 }
    }

    fn global_lock(&self) -> bool {
        self.cpus > 1
    }

    /// The big kernel lock already holds every send (`big_kernel_lock`).
    fn loopback_xmit(&self) -> LoopbackXmit {
        LoopbackXmit::Lockless
    }

    /// 2.0's SMP kernel is one big lock: every entry (a system call, an interrupt,
    /// schedule()) takes `kernel_flag` through lock_kernel, spinning while another CPU
    /// holds it, and the run queue has no lock of its own.
    fn big_kernel_lock(&self) -> bool {
        self.cpus > 1
    }

    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        match why {
            Why::New => *slot(&mut self.counter, id) = priority(tasks[id].nice),
            Why::Fork { parent } => {
                let half = self.counter[parent] >> 1;
                self.counter[parent] = half;
                *slot(&mut self.counter, id) = half;
            }
            // 2.0 has no sync wake-up: the policy never asks for one.
            Why::Wake | Why::WakeSync => {}
        }
        slot(&mut self.counter, id);
        self.rq.add(id, false);
        self.rq.first_idle().unwrap_or(cpu)
    }

    fn remove(&mut self, _tasks: &[SimTask], id: TaskId) {
        self.rq.remove(id);
    }

    fn pick(&mut self, tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, _now: u64) -> Pick {
        self.rq.running[cpu] = None;
        let (best, mut work) = self.rq.best(tasks, cpu, |p| self.goodness(tasks, p, prev, cpu));
        if let Some((0, _)) = best {
            let mut n = 0;
            for t in tasks.iter().filter(|t| t.state != State::Exited) {
                let c = slot(&mut self.counter, t.id);
                *c = (*c >> 1) + priority(t.nice);
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
        *c -= 1;
        if *c < 0 {
            *c = 0;
            return true;
        }
        false
    }

    fn on_yield(&mut self, _tasks: &[SimTask], _cpu: usize, cur: TaskId) -> Work {
        self.rq.move_last(cur);
        let c = slot(&mut self.counter, cur);
        if self.yield_fix {
            if *c > 0 {
                *c -= 1;
            }
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
