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
//!   CPU idle the longest (oldest `last_schedule`), else the busy CPU with the highest
//!   `preemption_goodness(running, p, cpu) > 0` (the first in CPU order on a tie),
//!   which is made to reschedule and sent an IPI; none when the task beats no running
//!   one. On one CPU, the current task when the woken one beats it.
//! - `__schedule_tail` (SMP): after a switch away from a task still runnable that did
//!   not yield, the new task takes `runqueue_lock` and calls reschedule_idle(prev), so
//!   the switched-out task may go to an idle CPU or preempt a busy one whose task it
//!   beats (`offer_switched_out`). UP has no such step.
//! - `try_to_wake_up(p, synchronous)` holds `runqueue_lock` across add_to_runqueue and
//!   reschedule_idle: on SMP every wake-up takes the lock every schedule() takes, with
//!   reschedule_idle's reads of the other CPUs held in it (`wake_work`).
//! - `try_to_wake_up(p, synchronous)`: a sync wake-up (`wake_up_interruptible_sync`,
//!   used by pipe_write in fs/pipe.c) skips reschedule_idle, so no CPU is told. None of
//!   the founding texts' workloads wakes that way in 2.4: chat writes to TCP sockets
//!   (sock_def_readable calls wake_up_interruptible), an exiting child wakes its
//!   parent through wake_up_parent (wake_up_interruptible on wait_chldexit), a new
//!   child is woken by wake_up_process (not sync), and the server's wake-ups come
//!   from the network's interrupt and from timers (process_timeout: wake_up_process).
//!   The rule applies to a behaviour that writes as a pipe does (`Action::WakeSync`).
//! - fork (`do_fork`): the child gets `(counter + 1) >> 1`, the parent keeps
//!   `counter >> 1`; the child joins the head through `wake_up_process`.
//! - exit (`release_task`): the reaping parent gets the child's counter back, capped at
//!   MAX_COUNTER (20 ticks).
//! - The recalculation (`recalculate:` in schedule()) drops runqueue_lock
//!   (spin_unlock_irq), takes tasklist_lock for reading, recomputes every task's
//!   counter, and takes runqueue_lock again before the rescan: the loop's time is
//!   charged outside the run-queue lock, beside the other CPUs (readers of
//!   tasklist_lock do not wait for each other; the fork and exit paths that take it
//!   for writing are not modelled as lock holders), and the rescan pays for the lock
//!   again. Two CPUs that both find every counter at 0 in the kernel could both
//!   recalculate (the second halving what the first set); the simulator updates the
//!   counters at once at the first, so the second finds them set.

use super::{GlobalQueue, LoopbackXmit, Offer, Pick, PolicyKind, Scheduler, SyncWake, Why, Work, slot};
use crate::types::{SimTask, State, TaskId};

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
    /// Per CPU, the task its last schedule() switched away from while runnable and
    /// not yielding: schedule_tail's to offer (`offer_switched_out`).
    to_offer: Vec<Option<TaskId>>,
}

impl Linux24 {
    pub fn new(cpus: usize) -> Self {
        Self {
            cpus,
            rq: GlobalQueue::new(cpus),
            counter: Vec::new(),
            yielded: Vec::new(),
            last_schedule: vec![0; cpus],
            to_offer: vec![None; cpus],
        }
    }

    /// do_fork's split: the child gets `(counter + 1) >> 1`, the parent keeps
    /// `counter >> 1`.
    fn split_counter(&mut self, parent: TaskId, child: TaskId) {
        let c = self.counter[parent];
        *slot(&mut self.counter, child) = (c + 1) >> 1;
        self.counter[parent] = c >> 1;
    }

    /// schedule()'s `recalculate:` loop (for_each_task): every task's counter, asleep
    /// or not, becomes counter/2 + NICE_TO_TICKS(nice). Returns the tasks visited.
    fn recalculate(&mut self, tasks: &[SimTask]) -> u32 {
        let mut n = 0;
        for t in tasks.iter().filter(|t| t.state != State::Exited) {
            let c = slot(&mut self.counter, t.id);
            *c = (*c >> 1) + nice_to_ticks(t.nice);
            n += 1;
        }
        n
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

    /// preemption_goodness(tsk, p, cpu) of 2.4.16: how much `p` beats the task `cpu`
    /// runs, both scored on that CPU against the running task's mm.
    fn preemption_goodness(&self, tasks: &[SimTask], running: TaskId, p: TaskId, cpu: usize) -> i64 {
        self.goodness(tasks, p, cpu) - self.goodness(tasks, running, cpu)
    }

    /// reschedule_idle() of 2.4.16 (kernel/sched.c), the CPU it tells about `p`: the
    /// task's last CPU if it is idle; else the idle CPU idle the longest (oldest
    /// `last_schedule`); else the busy CPU whose running task `p` beats by the most
    /// (`preemption_goodness(tsk, p, cpu) > max_prio`, max_prio starting at 0, so the
    /// first in CPU order on a tie), which is made to reschedule and sent an IPI when it
    /// is not the waker's. None: no CPU is told (every running task is as good), and the
    /// task waits in the queue. On one CPU (the UP branch) the waker's current task,
    /// when `p` beats it.
    pub fn reschedule_idle(&self, tasks: &[SimTask], p: TaskId, waker: usize) -> Option<usize> {
        if self.cpus == 1 {
            let beats = self.rq.running[0].is_none_or(|cur| self.preemption_goodness(tasks, cur, p, 0) > 0);
            return beats.then_some(waker);
        }
        let last = tasks[p].cpu;
        if self.rq.running[last].is_none() {
            return Some(last);
        }
        let idle = (0..self.cpus).filter(|&c| self.rq.running[c].is_none()).min_by_key(|&c| (self.last_schedule[c], c));
        if idle.is_some() {
            return idle;
        }
        let mut best: Option<(i64, usize)> = None;
        for cpu in 0..self.cpus {
            let Some(running) = self.rq.running[cpu] else { continue };
            let prio = self.preemption_goodness(tasks, running, p, cpu);
            if prio > best.map_or(0, |(m, _)| m) {
                best = Some((prio, cpu));
            }
        }
        best.map(|(_, cpu)| cpu)
    }

    pub fn counter(&self, id: TaskId) -> i64 {
        self.counter[id]
    }
}

impl Scheduler for Linux24 {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Linux24
    }

    /// 2.4.17, a segment on loopback: net/core/dev.c dev_queue_xmit takes
    /// dev->queue_lock, then dev->xmit_lock (one line of struct net_device with the
    /// owner field and the device's refcnt: the lock's own), and calls
    /// drivers/net/loopback.c loopback_xmit, which writes the device's statistics
    /// (`dev->priv`, a net_device_stats of its own: rx/tx bytes and packets), and
    /// `dev->last_rx` (a line of struct net_device away from the locks), then
    /// netif_rx, which stamps the segment (`get_fast_time`, on an i386 with a TSC
    /// arch/i386/kernel/time.c's do_gettimeofday, whose read_lock_irqsave and unlock
    /// write the global `xtime_lock`): three lines every CPU's sends write, besides the
    /// lock's.
    fn loopback_xmit(&self) -> LoopbackXmit {
        LoopbackXmit::Locked { shared_lines: 3 }
    }

    fn global_lock(&self) -> bool {
        self.cpus > 1
    }

    /// schedule()'s `recalculate:` drops runqueue_lock for the loop and takes it again.
    fn recalc_drops_lock(&self) -> bool {
        true
    }

    /// 2.4.16 kernel/sched.c try_to_wake_up: `spin_lock_irqsave(&runqueue_lock)`, then
    /// add_to_runqueue and (unless sync) reschedule_idle, then the unlock. What
    /// reschedule_idle reads under the lock: when the task's last CPU is idle, that
    /// CPU's current task (its shortcut); otherwise, for every CPU, its schedule data
    /// (cpu_curr, last_schedule), and, while no idle CPU has been met, the running
    /// task's goodness against the woken one (preemption_goodness): a line of another
    /// CPU for each read of another CPU's.
    fn wake_work(&self, tasks: &[SimTask], id: TaskId, from_cpu: usize, sync: bool) -> Option<Work> {
        if self.cpus == 1 {
            return None;
        }
        if sync {
            return Some(Work::default());
        }
        let other = |cpu: usize| u32::from(cpu != from_cpu);
        let last = tasks[id].cpu;
        if self.rq.running[last].is_none() {
            return Some(Work { remote: other(last), ..Work::default() });
        }
        let mut w = Work::default();
        let mut idle_met = false;
        for cpu in 0..self.cpus {
            w.remote += other(cpu);
            match self.rq.running[cpu] {
                None => idle_met = true,
                Some(_) if !idle_met => {
                    w.scanned += 1;
                    w.remote += other(cpu);
                }
                Some(_) => {}
            }
        }
        Some(w)
    }

    /// try_to_wake_up(p, 1) calls reschedule_idle() only when `p` may not run on the
    /// waker's CPU (`cpus_allowed`; every task may, here).
    fn sync_wake(&self) -> SyncWake {
        SyncWake::TellsNoCpu
    }

    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        match why {
            Why::New => *slot(&mut self.counter, id) = nice_to_ticks(tasks[id].nice),
            Why::Fork { parent } => self.split_counter(parent, id),
            // A sync wake-up reaches here as a plain one (TellsNoCpu: the engine tells
            // no CPU); the counter is the same either way.
            Why::Wake | Why::WakeSync => {}
        }
        slot(&mut self.counter, id);
        *slot(&mut self.yielded, id) = false;
        self.rq.add(id, true);
        // No CPU told: the task's last CPU, whose running task it does not beat
        // (`wake_preempts` then says no), so nothing is preempted.
        self.reschedule_idle(tasks, id, cpu).unwrap_or(tasks[id].cpu.min(self.cpus - 1))
    }

    fn remove(&mut self, _tasks: &[SimTask], id: TaskId) {
        self.rq.remove(id);
    }

    fn pick(&mut self, tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, now: u64) -> Pick {
        self.rq.running[cpu] = None;
        self.last_schedule[cpu] = now;
        let (mut best, mut work) = self.rq.best(tasks, cpu, |p| self.goodness(tasks, p, cpu));
        if let Some((0, _)) = best {
            work.recalced = self.recalculate(tasks);
            let (again, w) = self.rq.best(tasks, cpu, |p| self.goodness(tasks, p, cpu));
            best = again;
            work.scanned += w.scanned;
            work.remote += w.remote;
        }
        let next = best.map(|(_, p)| p);
        // __schedule_tail reads the yield flag before clearing it: a task that yielded
        // is not offered. The flag lasts one schedule() of the yielder's CPU.
        self.to_offer[cpu] = prev.filter(|&p| next != Some(p) && !self.yielded[p]);
        if let Some(p) = prev {
            self.yielded[p] = false;
        }
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

    /// 2.4.16 kernel/sched.c __schedule_tail, SMP: after a switch away from a task
    /// still runnable (not the idle task, not one that yielded: SCHED_YIELD skips it
    /// "to avoid taking the runqueue lock"), the new task's first act is to take
    /// runqueue_lock and call reschedule_idle(prev), which tells an idle CPU, or a busy
    /// one whose task prev beats, about it; under the lock, the same reads as a
    /// wake-up's. UP has no such step.
    fn offer_switched_out(&mut self, tasks: &[SimTask], cpu: usize, prev: TaskId) -> Option<Offer> {
        if self.cpus == 1 || self.to_offer[cpu].take() != Some(prev) {
            return None;
        }
        let work = self.wake_work(tasks, prev, cpu, false).unwrap_or_default();
        Some(Offer { work, told: self.reschedule_idle(tasks, prev, cpu) })
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

    /// 2.4.17's do_fork gives each clone `(counter + 1) >> 1` and leaves the parent
    /// `counter >> 1`, asking for a reschedule when that is 0 (`if (!current->counter)
    /// current->need_resched = 1`). The parent's schedule() then finds no runnable task
    /// with a counter left (its clones sleep at once in their first semop or read, and
    /// on SMP the other process's main thread is running elsewhere, out of
    /// can_schedule's reach) and recalculates every task's counter, the sleeping
    /// clones' too. Over a set-up of hundreds of clones that happens every few clones,
    /// and a sleeper's counter climbs to the fixed point of counter/2 + NICE_TO_TICKS:
    /// 11 ticks at nice 0, 1 at nice 19. Tasks not yet cloned are visited too; their
    /// counters are set when they are cloned. The set-up's own ticks are not counted
    /// (it takes a few of them against hundreds of clones).
    fn set_up_clones(&mut self, tasks: &[SimTask], clones: &[(TaskId, TaskId)]) {
        for &(parent, child) in clones {
            self.split_counter(parent, child);
            if self.counter[parent] == 0 {
                self.recalculate(tasks);
            }
        }
    }
}
