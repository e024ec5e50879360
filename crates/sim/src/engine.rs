//! The discrete-event engine: tasks, CPUs, timers and virtual time.
//!
//! Each CPU has its own clock. The engine always advances the CPU whose clock is
//! earliest (ties by index), so every interaction (a wake-up, a lock) happens in time
//! order up to one step; a running task's computation is cut into steps of at most
//! `STEP_NS`, at tick boundaries (each policy's HZ) and, where the profile's kernel
//! has an hrtick, at the slice's end. An idle CPU's clock stops until a task is woken
//! for it: at once plus the IPI's delay where the policy sends one (2.0's and 2.4's
//! reschedule_idle, today's wake balancing), or at its next idle rebalance tick where
//! it does not (2.6.0). Every nanosecond of every CPU is accounted for as task time,
//! scheduler time (picks, switches, recalculation, ticks), lock waiting or idle.
//!
//! The physics of a switch (see `cost`): the switch itself; the address-space change
//! when the CPU's last address space differs (so a thread switch skips it, and so does
//! a switch back from idle to the same mm); the cache refill when the task's footprint
//! is on another CPU; every scanned task_struct last written by another CPU; a global
//! lock whose hand-on costs one line transfer per CPU spinning on it (the run queue's
//! lock, held for the scheduler's work, or a big kernel lock held for all kernel work,
//! as 2.0's SMP kernel did; 2.4's recalculation drops it); the loopback device's
//! transmit lock, which every TCP segment on loopback took until the 2.6 series, with
//! the other shared lines the kernel writes under it (`LoopbackXmit`).
//! Across CPUs: a wake-up onto
//! another CPU's queue (the waker pays its lines), the reschedule IPI a busy CPU takes
//! from another, and a message read where it was not written.

use super::cost::CostProfile;
use super::types::{
    Action, Asleep, Behavior, LoopbackXmit, Rng, Scheduler, Shared, SimTask, SocketTimer, State, SyncWake, TaskId, Why,
    Work,
};

/// One CPU.
#[derive(Debug, Clone, Default)]
pub struct Cpu {
    pub now: u64,
    /// The address space loaded (kept across idle: lazy TLB).
    pub last_mm: Option<usize>,
    pub current: Option<TaskId>,
    pub idle: bool,
    pub need_resched: bool,
    pub next_tick: u64,
    pub idle_ns: u64,
    pub sched_ns: u64,
    pub lock_wait_ns: u64,
    /// Lock-holding work still to charge at this CPU's next step: the rescan after a
    /// recalculation that dropped the lock (see `Engine::charge_sched`).
    pub relock: Option<Work>,
}

/// Counters of a simulation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub end_ns: u64,
    pub switches: u64,
    pub schedules: u64,
    pub yields: u64,
    /// Runnable tasks (the running ones included) at each switch.
    pub runqueue_at_switch: Vec<u32>,
    /// Schedules that ran the recalculation loop.
    pub schedules_with_recalc: u64,
    pub wake_to_run_ns: Vec<u64>,
    /// Children that ran before their parent went on.
    pub child_first: u64,
    pub forks: u64,
    pub task_run_ns: Vec<u64>,
    /// Each task's blocks (voluntary switches) and switches out while runnable.
    pub task_sleeps: Vec<u64>,
    pub task_preempted: Vec<u64>,
    /// When each task exited, if it did before the run ended, ns.
    pub task_exited_ns: Vec<Option<u64>>,
    pub cpu_task_ns: u64,
    pub cpu_sched_ns: u64,
    pub cpu_idle_ns: u64,
    pub cpu_lock_wait_ns: u64,
    /// Switches that changed address space, and that refilled a migrated task's cache.
    pub address_space_changes: u64,
    pub migrations: u64,
    pub cpus: usize,
    pub sent: u64,
    pub delivered: u64,
    /// The messages the workload's benchmark counts (chat_c's).
    pub counted: u64,
    /// Wake-ups by a task onto another CPU's queue, or of a task last run elsewhere.
    pub remote_wakeups: u64,
    /// Wake-ups by a task of a task last run on another CPU than the waker's, and of
    /// those the ones placed on the waker's CPU (as perf's sched_waking and
    /// sched_wakeup count them on a real kernel: the previous CPU, the chosen one).
    pub woken_from_elsewhere: u64,
    pub pulled_to_waker: u64,
    /// Reschedule IPIs taken by a busy CPU.
    pub busy_ipis: u64,
    /// Messages read on another CPU than they were written on.
    pub remote_messages: u64,
    /// Times a CPU found nothing to run and went idle.
    pub idle_entries: u64,
}

/// A spinlock shared by the CPUs, in virtual time.
#[derive(Debug, Default)]
struct SpinLock {
    free_at: u64,
    holder: Option<usize>,
    /// Holds that end in the future: (release, cpu).
    queue: Vec<(u64, usize)>,
    /// The mean number of other CPUs holding or queued for the lock when it is asked for.
    contenders: f64,
}

impl SpinLock {
    /// `cpu` takes the lock to hold it `ns`: it waits (spinning, as lock waiting) until
    /// the lock is free, and the hold is `ns` and the line's transfer. The lock's line,
    /// when it comes from another CPU, costs one `transfer` for this CPU and one for
    /// each other CPU holding or queued for the lock as CPUs ask for it (spinners
    /// re-read the line at every hand-on): the collapse of one lock under many CPUs
    /// emerges from that. Returns the hold; the caller advances the clock by it.
    fn take(&mut self, c: &mut Cpu, cpu: usize, ns: u64, transfer: f64) -> u64 {
        self.take_carrying(c, cpu, ns, transfer, 0)
    }

    /// As [`Self::take`], for a hold that also writes `lines` other lines the previous
    /// holder wrote: when that was another CPU, each comes from its cache inside the
    /// hold, at one `transfer` (only the lock's own line is re-read by spinners).
    fn take_carrying(&mut self, c: &mut Cpu, cpu: usize, ns: u64, transfer: f64, lines: u32) -> u64 {
        let mut hold = ns;
        let now = c.now;
        self.queue.retain(|&(until, _)| until > now);
        let now_waiting = self.queue.iter().filter(|&&(_, other)| other != cpu).count() as f64;
        // The spinners a hand-on finds, averaged over the recent acquisitions: the
        // instantaneous count locks into phases of the CPUs' lockstep, which no real
        // bus arbitration keeps.
        self.contenders = 0.98 * self.contenders + 0.02 * now_waiting;
        if self.free_at > c.now {
            c.lock_wait_ns += self.free_at - c.now;
            c.now = self.free_at;
        }
        if self.holder.is_some_and(|h| h != cpu) {
            hold += (transfer * (1.0 + self.contenders + f64::from(lines))).round() as u64;
        }
        self.holder = Some(cpu);
        self.free_at = c.now + hold;
        self.queue.push((self.free_at, cpu));
        hold
    }
}

/// The longest a running task's step is (so wake-ups from other CPUs land in order).
const STEP_NS: u64 = 50_000;

pub struct Engine {
    pub tasks: Vec<SimTask>,
    pub cpus: Vec<Cpu>,
    pub policy: Box<dyn Scheduler>,
    pub cost: CostProfile,
    pub shared: Shared,
    pub rng: Rng,
    timers: std::collections::BinaryHeap<std::cmp::Reverse<(u64, TaskId)>>,
    /// Connections' timers, at the time they fire (`Shared::socket_timers`).
    socket_timers: std::collections::BinaryHeap<std::cmp::Reverse<(u64, SocketTimer)>>,
    /// The scheduler's global lock (a run-queue lock, or 2.0's big kernel lock).
    lock: SpinLock,
    /// The loopback device's transmit lock: every TCP segment on loopback takes it
    /// (2.4's dev_queue_xmit for a device with no queue takes dev->xmit_lock).
    loopback: SpinLock,
    tick_ns: u64,
    out: Outcome,
    next_mm: usize,
}

impl Engine {
    pub fn new(mut policy: Box<dyn Scheduler>, cost: CostProfile, cpus: usize, seed: u64) -> Self {
        policy.use_hrtick(cost.hrtick);
        let tick_ns = policy.tick_ns();
        let cpus = (0..cpus.max(1)).map(|_| Cpu { idle: true, next_tick: tick_ns, ..Default::default() }).collect();
        Self {
            tasks: Vec::new(),
            cpus,
            policy,
            cost,
            shared: Shared::default(),
            rng: Rng::new(seed),
            timers: Default::default(),
            socket_timers: Default::default(),
            lock: SpinLock::default(),
            loopback: SpinLock::default(),
            tick_ns,
            out: Outcome::default(),
            next_mm: 0,
        }
    }

    /// Adds a runnable task (a new address space unless `mm` is given) on `cpu`.
    pub fn spawn(&mut self, behavior: Box<dyn Behavior>, mm: Option<usize>, nice: i32, cpu: usize) -> TaskId {
        let id = self.new_task(behavior, mm, nice, cpu);
        let target = self.policy.add(&self.tasks, id, cpu % self.cpus.len(), Why::New);
        let now = self.cpus[cpu % self.cpus.len()].now;
        self.placed(target, id, now, None);
        id
    }

    fn new_task(&mut self, behavior: Box<dyn Behavior>, mm: Option<usize>, nice: i32, cpu: usize) -> TaskId {
        let id = self.tasks.len();
        let mm = mm.unwrap_or_else(|| {
            self.next_mm += 1;
            self.next_mm
        });
        self.tasks.push(SimTask::new(id, mm, nice, cpu % self.cpus.len(), Some(behavior)));
        id
    }

    /// A task joined `target`'s queue at `now`, from `from`'s context (None: a task the
    /// workload starts). An idle `target` is sent an IPI; a busy one is preempted if the
    /// policy says so, and when the waker runs on another CPU that preemption is a
    /// reschedule IPI the busy CPU takes (`ipi_busy`, charged there: 2.4.17's
    /// reschedule_idle and 2.6.0's resched_task send smp_send_reschedule to a CPU other
    /// than their own). Other idle CPUs learn of the work by IPI where the policy sends
    /// one, else at their next idle rebalance tick.
    fn placed(&mut self, target: usize, id: TaskId, now: u64, from: Option<usize>) {
        if self.cpus[target].idle {
            self.kick_idle(target, now + CostProfile::ns(&self.cost.ipi));
            return;
        }
        if let Some(cur) = self.cpus[target].current
            && self.policy.wake_preempts(&self.tasks, id, cur)
        {
            self.cpus[target].need_resched = true;
            if from.is_some_and(|f| f != target) {
                // Charged on the busy CPU's own clock, outside any big kernel lock: that
                // clock may run ahead of the lock's, which must not be booked ahead.
                let ipi = CostProfile::ns(&self.cost.ipi_busy);
                let c = &mut self.cpus[target];
                c.now += ipi;
                c.sched_ns += ipi;
                self.out.busy_ipis += 1;
            }
        }
        match self.policy.idle_rebalance_ns() {
            None => {
                if let Some(idle) = self.cpus.iter().position(|c| c.idle) {
                    self.kick_idle(idle, now + CostProfile::ns(&self.cost.ipi));
                }
            }
            Some(period) => {
                let at = (now / period + 1) * period;
                for c in 0..self.cpus.len() {
                    self.kick_idle(c, at);
                }
            }
        }
    }

    /// Adds a task asleep until `wake_at` (so a workload does not start as one burst).
    pub fn spawn_sleeping(&mut self, behavior: Box<dyn Behavior>, nice: i32, cpu: usize, wake_at: u64) -> TaskId {
        let id = self.spawn(behavior, None, nice, cpu);
        self.tasks[id].state = State::Blocked;
        self.policy.remove(&self.tasks, id);
        self.timers.push(std::cmp::Reverse((wake_at, id)));
        id
    }

    /// Adds a task asleep until another task wakes it (a thread started waiting in a
    /// read or on a semaphore).
    pub fn spawn_blocked(&mut self, behavior: Box<dyn Behavior>, mm: Option<usize>, nice: i32, cpu: usize) -> TaskId {
        let id = self.spawn(behavior, mm, nice, cpu);
        self.tasks[id].state = State::Blocked;
        self.tasks[id].sleeps = 1; // it starts its work asleep, as a thread blocked in its first read
        self.policy.remove(&self.tasks, id);
        id
    }

    /// Adds a process's main thread, asleep through the timed region (waiting, as
    /// chat_c's and chat_s's do, for the benchmark's threads to finish).
    pub fn spawn_main(&mut self, mm: Option<usize>, nice: i32, cpu: usize) -> TaskId {
        self.spawn_parked(Box::new(Asleep), mm, nice, cpu)
    }

    /// Adds a task parked before its work, asleep until another task wakes it; the
    /// sleep is not one of its switches (load.chat's senders park at the gate before
    /// their counters start).
    pub fn spawn_parked(&mut self, behavior: Box<dyn Behavior>, mm: Option<usize>, nice: i32, cpu: usize) -> TaskId {
        let id = self.spawn(behavior, mm, nice, cpu);
        self.tasks[id].state = State::Blocked;
        self.policy.remove(&self.tasks, id);
        id
    }

    /// The set-up before the timed region: `clones`' (parent, child) in the order the
    /// benchmark's main threads cloned them (see [`Scheduler::set_up_clones`]).
    pub fn set_up_clones(&mut self, clones: &[(TaskId, TaskId)]) {
        self.policy.set_up_clones(&self.tasks, clones);
    }

    /// Adds a task that never runs but is counted by loops over all tasks (the
    /// system's sleeping daemons, which Linux 2.0's recalculation loop visits).
    pub fn spawn_sleeper(&mut self) -> TaskId {
        let id = self.spawn(Box::new(Asleep), None, 0, 0);
        self.tasks[id].state = State::Blocked;
        self.policy.remove(&self.tasks, id);
        id
    }

    fn ns(&self, w: Work) -> u64 {
        let c = &self.cost;
        (w.scanned as f64 * c.scan_per_task.ns
            + w.recalced as f64 * c.recalc_per_task.ns
            + w.picks as f64 * c.pick_o1.ns
            + w.tree_steps as f64 * c.tree_step.ns
            + w.remote as f64 * c.remote_line.ns)
            .round() as u64
    }

    /// Charges `w` on `cpu`, under the global run-queue lock when the policy has one.
    /// Where the policy recalculates with the lock dropped (2.4.16's schedule():
    /// `recalculate:` does spin_unlock_irq(&runqueue_lock), read_lock(&tasklist_lock),
    /// the loop over every task, then takes runqueue_lock again and `goto
    /// repeat_schedule`), the first scan holds the lock, the recalculation runs outside
    /// it (a reader of tasklist_lock, which other readers do not wait for), and the
    /// rescan takes the lock again at this CPU's next step: taken now, it would book
    /// the lock from the loop's end, ahead of the other CPUs' clocks, and make them
    /// wait for the loop after all. (So the rescan is charged after the switch it
    /// leads to; the CPU's time is the same.)
    fn charge_sched(&mut self, cpu: usize, w: Work) {
        if w.recalced > 0 && self.policy.global_lock() && self.policy.recalc_drops_lock() {
            let first = Work { scanned: w.scanned / 2, remote: w.remote / 2, ..Work::default() };
            let rest = Work { scanned: w.scanned - first.scanned, remote: w.remote - first.remote, recalced: 0, ..w };
            self.charge_locked(cpu, first);
            let recalc = self.ns(Work { recalced: w.recalced, ..Work::default() });
            let c = &mut self.cpus[cpu];
            c.now += recalc;
            c.sched_ns += recalc;
            c.relock = Some(rest);
            return;
        }
        self.charge_locked(cpu, w);
    }

    /// Charges `w` on `cpu` holding the global lock when the policy has one.
    fn charge_locked(&mut self, cpu: usize, w: Work) {
        let ns = self.ns(w);
        let hold = if self.policy.global_lock() { self.take_lock(cpu, ns) } else { ns };
        let c = &mut self.cpus[cpu];
        c.now += hold;
        c.sched_ns += hold;
    }

    /// Takes the global lock on `cpu` to hold it `ns` (see [`SpinLock::take`]), its
    /// line priced at the profile's `lock_transfer`.
    fn take_lock(&mut self, cpu: usize, ns: u64) -> u64 {
        let transfer = self.cost.lock_transfer.ns;
        self.lock.take(&mut self.cpus[cpu], cpu, ns, transfer)
    }

    /// `ns` of kernel work on `cpu`, the running task's (`task`: a system call's) or
    /// the scheduler's (None: a switch, a tick, an IPI, a wake-up's remote lines).
    /// Under a big kernel lock (2.0 on SMP: every entry to the kernel spins in
    /// lock_kernel until no other CPU is in it) the work holds the lock, and the
    /// lock's transfer counts as scheduler time; otherwise it runs beside the other
    /// CPUs.
    fn kernel(&mut self, cpu: usize, ns: u64, task: Option<TaskId>) {
        let hold = if self.policy.big_kernel_lock() { self.take_lock(cpu, ns) } else { ns };
        self.cpus[cpu].now += hold;
        match task {
            Some(t) => {
                // A system call's time is its task's (update_curr charges everything
                // since the pick), so its vruntime advances with it.
                self.tasks[t].run_ns += ns;
                self.policy.charge(&self.tasks, t, ns);
                self.cpus[cpu].sched_ns += hold - ns;
            }
            None => self.cpus[cpu].sched_ns += hold,
        }
    }

    /// Wakes an idle CPU at `at` (no earlier than its own clock).
    fn kick_idle(&mut self, cpu: usize, at: u64) {
        let tick = self.tick_ns;
        let c = &mut self.cpus[cpu];
        if c.idle {
            c.idle = false;
            if at > c.now {
                c.idle_ns += at - c.now;
                c.now = at;
            }
            while c.next_tick <= c.now {
                c.next_tick += tick;
            }
        }
    }

    /// Makes `id` runnable at `now`, from `from_cpu`'s context when `waker` (a task's
    /// system call or exit), else from a timer. A task that joins another CPU's queue
    /// than its waker's costs the waker that queue's and that task's lines
    /// (`wake_remote`, charged as scheduler time): try_to_wake_up locks and writes
    /// them where they were last written. A `sync` wake-up, where the policy honours
    /// it, tells no CPU: the task waits in the queue for the next schedule() (the
    /// waker's own, as it blocks), and only its own lines are fetched when another CPU
    /// last wrote them. Where the policy's wake-up takes its global lock (2.4's
    /// try_to_wake_up under runqueue_lock), the waker holds it for the wake-up's work
    /// ([`Scheduler::wake_work`]).
    fn wake(&mut self, id: TaskId, now: u64, from_cpu: usize, waker: bool, sync: bool) {
        if self.tasks[id].state != State::Blocked {
            self.tasks[id].wake_pending = true;
            return;
        }
        self.tasks[id].state = State::Runnable;
        self.tasks[id].woken_at = Some(now);
        let mode = if sync { self.policy.sync_wake() } else { SyncWake::AsAnyWake };
        let why = match mode {
            SyncWake::JoinsWakersCpu | SyncWake::Affine => Why::WakeSync,
            SyncWake::AsAnyWake | SyncWake::TellsNoCpu => Why::Wake,
        };
        // Before add: what reschedule_idle reads is the CPUs as the wake-up finds them.
        let locked = self.policy.wake_work(&self.tasks, id, from_cpu, mode == SyncWake::TellsNoCpu);
        let last_ran = self.tasks[id].cpu;
        let target = self.policy.add(&self.tasks, id, from_cpu, why);
        if waker && last_ran != from_cpu {
            self.out.woken_from_elsewhere += 1;
            self.out.pulled_to_waker += u64::from(target == from_cpu);
        }
        if let Some(w) = locked {
            self.charge_locked(from_cpu, w);
        }
        if !waker {
            let now = now.max(self.cpus[from_cpu].now);
            self.placed(target, id, now, None);
            return;
        }
        // Neither of the old kernels' sync wake-ups tests for preemption or sends an
        // IPI: the waker is about to block, and its schedule() picks the task up.
        // Today's flag only places the task.
        let tells_no_cpu = match mode {
            SyncWake::AsAnyWake | SyncWake::Affine => false,
            SyncWake::TellsNoCpu | SyncWake::JoinsWakersCpu => true,
        };
        let remote = if tells_no_cpu {
            self.tasks[id].cpu != from_cpu
        } else {
            target != from_cpu || self.tasks[id].cpu != from_cpu
        };
        if remote {
            self.kernel(from_cpu, CostProfile::ns(&self.cost.wake_remote), None);
            self.out.remote_wakeups += 1;
        }
        if !tells_no_cpu {
            let now = self.cpus[from_cpu].now;
            self.placed(target, id, now, Some(from_cpu));
        }
    }

    fn runnable_count(&self) -> u32 {
        self.tasks.iter().filter(|t| matches!(t.state, State::Runnable | State::Running)).count() as u32
    }

    /// schedule() on `cpu`: the policy picks, the switch is charged.
    fn schedule(&mut self, cpu: usize) {
        let prev = self.cpus[cpu].current.take();
        let prev_runnable = prev.filter(|&p| self.tasks[p].state == State::Running);
        if let Some(p) = prev_runnable {
            self.tasks[p].state = State::Runnable;
        }
        let pick = self.policy.pick(&self.tasks, cpu, prev_runnable, self.cpus[cpu].now);
        self.out.schedules += 1;
        if pick.work.recalced > 0 {
            self.out.schedules_with_recalc += 1;
        }
        self.charge_sched(cpu, pick.work);
        self.cpus[cpu].need_resched = false;
        match pick.next {
            Some(n) => {
                if Some(n) != prev {
                    let sw = self.switch_cost(cpu, n);
                    self.kernel(cpu, sw, None);
                    self.cpus[cpu].last_mm = Some(self.tasks[n].mm);
                    self.out.switches += 1;
                    if let Some(p) = prev_runnable {
                        self.tasks[p].preempted += 1;
                    }
                    self.out.runqueue_at_switch.push(self.runnable_count());
                    if let Some(w) = self.tasks[n].woken_at.take() {
                        self.out.wake_to_run_ns.push(self.cpus[cpu].now.saturating_sub(w));
                    }
                }
                self.tasks[n].state = State::Running;
                self.tasks[n].cpu = cpu;
                self.cpus[cpu].current = Some(n);
                if let Some(p) = prev_runnable.filter(|&p| p != n) {
                    self.offer(cpu, p);
                }
            }
            None => {
                // An idle CPU takes no more steps: its rescan is charged now.
                if let Some(w) = self.cpus[cpu].relock.take() {
                    self.charge_locked(cpu, w);
                }
                self.cpus[cpu].idle = true;
                self.out.idle_entries += 1;
            }
        }
    }

    /// `prev`, switched out of `cpu` still runnable, offered to the other CPUs where
    /// the policy does so ([`Scheduler::offer_switched_out`]): the work under the
    /// global lock on this CPU, then the told CPU learns of the task as of a wake-up.
    fn offer(&mut self, cpu: usize, prev: TaskId) {
        let Some(offer) = self.policy.offer_switched_out(&self.tasks, cpu, prev) else {
            return;
        };
        self.charge_locked(cpu, offer.work);
        if let Some(target) = offer.told {
            let now = self.cpus[cpu].now;
            self.placed(target, prev, now, Some(cpu));
        }
    }

    /// What switching `cpu` to `n` costs: the switch, the address-space change when
    /// the CPU held another mm, the cache refill when `n`'s footprint is on another CPU.
    fn switch_cost(&mut self, cpu: usize, n: TaskId) -> u64 {
        let mut ns = CostProfile::ns(&self.cost.switch);
        if self.cpus[cpu].last_mm != Some(self.tasks[n].mm) {
            ns += CostProfile::ns(&self.cost.address_space);
            self.out.address_space_changes += 1;
        }
        if self.tasks[n].cpu != cpu {
            ns += CostProfile::ns(&self.cost.migration_refill);
            self.out.migrations += 1;
        }
        ns
    }

    /// Runs until `end_ns` of virtual time, or until nothing can run and no timer is
    /// set, or until `stop` says the workload is done.
    pub fn run(&mut self, end_ns: u64, stop: impl Fn(&Shared) -> bool) -> Outcome {
        loop {
            // The earliest CPU clock, or the next timer if every CPU is idle.
            let busy = (0..self.cpus.len()).filter(|&i| !self.cpus[i].idle).min_by_key(|&i| (self.cpus[i].now, i));
            let next_socket = self.socket_timers.peek().map(|r| r.0.0);
            let next_timer = match (self.timers.peek().map(|r| r.0.0), next_socket) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let now = match (busy, next_timer) {
                (Some(c), Some(t)) => self.cpus[c].now.min(t),
                (Some(c), None) => self.cpus[c].now,
                (None, Some(t)) => t,
                (None, None) => break,
            };
            if now >= end_ns || stop(&self.shared) {
                break;
            }
            if next_socket.is_some_and(|t| t <= now) {
                let std::cmp::Reverse((t, timer)) = self.socket_timers.pop().expect("peeked");
                self.fire_socket_timer(t, &timer);
                continue;
            }
            if next_timer.is_some_and(|t| t <= now) {
                let std::cmp::Reverse((t, id)) = self.timers.pop().expect("peeked");
                let from = self.tasks[id].cpu;
                self.wake(id, t, from, false, false);
                continue;
            }
            let Some(cpu) = busy else { continue };
            self.step(cpu);
        }
        self.finish()
    }

    fn step(&mut self, cpu: usize) {
        if let Some(w) = self.cpus[cpu].relock.take() {
            self.charge_locked(cpu, w);
            return;
        }
        let now = self.cpus[cpu].now;
        if now >= self.cpus[cpu].next_tick {
            // The next tick's place on the grid, and where the policy's timer lands.
            let k = self.cpus[cpu].next_tick / self.tick_ns + 1;
            self.cpus[cpu].next_tick = k * self.tick_ns + self.policy.tick_offset_ns(cpu, k);
            if let Some(cur) = self.cpus[cpu].current {
                self.kernel(cpu, CostProfile::ns(&self.cost.tick), None);
                if self.policy.tick(&self.tasks, cpu, cur, now) {
                    self.cpus[cpu].need_resched = true;
                }
            } else {
                let w = self.policy.idle_balance(&self.tasks, cpu, now);
                self.charge_sched(cpu, w);
            }
        }
        let Some(cur) = self.cpus[cpu].current.filter(|_| !self.cpus[cpu].need_resched) else {
            self.schedule(cpu);
            return;
        };
        if self.tasks[cur].remaining > 0 {
            let mut d = self.tasks[cur].remaining.min(STEP_NS).min(self.cpus[cpu].next_tick - now).max(1);
            if let Some(left) = self.policy.hrtick_left(&self.tasks, cpu, cur) {
                // The hrtick fires: its handler is the tick's (hrtick() calls the
                // class's task_tick), with the timer interrupt's cost.
                if left == 0 {
                    self.kernel(cpu, CostProfile::ns(&self.cost.tick), None);
                    if self.policy.tick(&self.tasks, cpu, cur, now) {
                        self.cpus[cpu].need_resched = true;
                        return;
                    }
                } else {
                    d = d.min(left);
                }
            }
            self.tasks[cur].remaining -= d;
            self.tasks[cur].run_ns += d;
            self.policy.charge(&self.tasks, cur, d);
            self.cpus[cpu].now += d;
            return;
        }
        let mut b = self.tasks[cur].behavior.take().expect("a running task has its behaviour");
        let action = b.next(cur, &mut self.shared, &mut self.rng);
        self.tasks[cur].behavior = Some(b);
        self.act(cpu, cur, action);
        let at = self.cpus[cpu].now;
        for t in std::mem::take(&mut self.shared.socket_timers) {
            self.socket_timers.push(std::cmp::Reverse((at + t.after_ns, t)));
        }
    }

    /// A connection's timer fires in softirq: the workload says what it does, and a
    /// reader that data reached is woken where it last ran. Its work is not priced.
    fn fire_socket_timer(&mut self, t: u64, timer: &SocketTimer) {
        let Some(fire) = self.shared.on_socket_timer else { return };
        if let Some(reader) = fire(&mut self.shared, timer)
            && self.tasks[reader].state == State::Blocked
        {
            let from = self.tasks[reader].cpu;
            self.wake(reader, t, from, false, false);
        }
    }

    fn act(&mut self, cpu: usize, cur: TaskId, action: Action) {
        let now = self.cpus[cpu].now;
        match action {
            Action::Compute(d) => self.tasks[cur].remaining = d,
            Action::Yield => {
                self.out.yields += 1;
                self.kernel(cpu, CostProfile::ns(&self.cost.syscall), Some(cur));
                if self.policy.yield_reschedules(&self.tasks, cpu, cur) {
                    self.tasks[cur].stamp = self.cpus[cpu].now;
                    let w = self.policy.on_yield(&self.tasks, cpu, cur);
                    self.charge_sched(cpu, w);
                    self.cpus[cpu].need_resched = true;
                }
            }
            Action::Sleep(d) => {
                self.block(cur, now);
                self.timers.push(std::cmp::Reverse((now + d, cur)));
                self.cpus[cpu].need_resched = true;
            }
            Action::WaitWake => {
                if std::mem::take(&mut self.tasks[cur].wake_pending) {
                    return;
                }
                self.block(cur, now);
                self.cpus[cpu].need_resched = true;
            }
            Action::Wake(id) | Action::WakeSync(id) => {
                let sync = matches!(action, Action::WakeSync(_));
                self.kernel(cpu, CostProfile::ns(&self.cost.wake), Some(cur));
                let now = self.cpus[cpu].now;
                self.wake(id, now, cpu, true, sync);
            }
            Action::Send(to) => {
                // The reader is woken only when it sleeps on the socket (sk->data_ready
                // finds no waiter otherwise).
                let asleep = self.tasks[to].state == State::Blocked;
                let wake = if asleep { CostProfile::ns(&self.cost.wake) } else { 0 };
                let send = CostProfile::ns(&self.cost.msg_send);
                let (xmit, shared_lines) = match self.policy.loopback_xmit() {
                    LoopbackXmit::Locked { shared_lines } => {
                        (CostProfile::ns(&self.cost.loopback_xmit).min(send), shared_lines)
                    }
                    LoopbackXmit::Lockless => (0, 0),
                };
                self.kernel(cpu, send - xmit + wake, Some(cur));
                if xmit > 0 {
                    self.loopback_xmit(cpu, cur, xmit, shared_lines);
                }
                if self.shared.inbox.len() <= to {
                    self.shared.inbox.resize(to + 1, Default::default());
                }
                self.shared.inbox[to].push_back(cpu);
                self.shared.sent += 1;
                if asleep {
                    let now = self.cpus[cpu].now;
                    let sync = self.policy.socket_wake_sync();
                    self.wake(to, now, cpu, true, sync);
                }
            }
            Action::Post(to) => {
                let asleep = self.tasks[to].state == State::Blocked;
                let wake = if asleep { CostProfile::ns(&self.cost.wake) } else { 0 };
                self.kernel(cpu, CostProfile::ns(&self.cost.syscall) + wake, Some(cur));
                if asleep {
                    let now = self.cpus[cpu].now;
                    self.wake(to, now, cpu, true, false);
                }
            }
            Action::Syscall => self.kernel(cpu, CostProfile::ns(&self.cost.syscall), Some(cur)),
            Action::SendHeld(to) => {
                self.kernel(cpu, CostProfile::ns(&self.cost.msg_send), Some(cur));
                if self.shared.held.len() <= to {
                    self.shared.held.resize(to + 1, Default::default());
                }
                self.shared.held[to].push_back(cpu);
                self.shared.sent += 1;
            }
            Action::Receive => {
                let Some(written_on) = self.shared.inbox.get_mut(cur).and_then(|q| q.pop_front()) else {
                    // Nothing queued: the read blocks, as WaitWake.
                    return self.act(cpu, cur, Action::WaitWake);
                };
                let mut read = CostProfile::ns(&self.cost.msg_recv);
                if written_on != cpu {
                    read += CostProfile::ns(&self.cost.msg_remote);
                    self.out.remote_messages += 1;
                }
                self.kernel(cpu, read, Some(cur));
                self.shared.delivered += 1;
            }
            Action::Fork { child, thread } => {
                self.kernel(cpu, CostProfile::ns(&self.cost.fork), Some(cur));
                let mm = thread.then_some(self.tasks[cur].mm);
                let nice = self.tasks[cur].nice;
                let id = self.new_task(child, mm, nice, cpu);
                self.tasks[id].parent = Some(cur);
                self.tasks[id].woken_at = Some(self.cpus[cpu].now);
                self.tasks[cur].live_children += 1;
                self.out.forks += 1;
                let target = self.policy.add(&self.tasks, id, cpu, Why::Fork { parent: cur });
                let now = self.cpus[cpu].now;
                self.placed(target, id, now, Some(cpu));
                if self.policy.fork_child_first() {
                    self.cpus[cpu].need_resched = true;
                }
            }
            Action::WaitChildren => {
                if self.tasks[cur].live_children > 0 {
                    self.tasks[cur].waiting_children = true;
                    self.block(cur, now);
                    self.cpus[cpu].need_resched = true;
                }
            }
            Action::Exit => {
                self.kernel(cpu, CostProfile::ns(&self.cost.exit), Some(cur));
                self.policy.remove(&self.tasks, cur);
                self.tasks[cur].state = State::Exited;
                self.tasks[cur].exited_at = Some(self.cpus[cpu].now);
                self.cpus[cpu].need_resched = true;
                if let Some(p) = self.tasks[cur].parent {
                    self.policy.reap(&self.tasks, cur, p);
                    // Whether the child ran before the parent went on.
                    if self.tasks[p].waiting_in_queue() {
                        self.out.child_first += 1;
                    }
                    self.tasks[p].live_children -= 1;
                    if self.tasks[p].waiting_children && self.tasks[p].live_children == 0 {
                        self.tasks[p].waiting_children = false;
                        let now = self.cpus[cpu].now;
                        self.wake(p, now, cpu, true, false);
                    }
                }
            }
        }
    }

    /// `cur`'s segment through the loopback device's transmit lock, `ns` held: the
    /// sending task's kernel time (waiting for the lock counts as lock waiting), the
    /// lock's line and the `shared_lines` the kernel writes under it moving at the
    /// profile's `remote_line` from the CPU that last held it.
    fn loopback_xmit(&mut self, cpu: usize, cur: TaskId, ns: u64, shared_lines: u32) {
        let line = self.cost.remote_line.ns;
        let hold = self.loopback.take_carrying(&mut self.cpus[cpu], cpu, ns, line, shared_lines);
        self.cpus[cpu].now += hold;
        self.tasks[cur].run_ns += hold;
    }

    fn block(&mut self, id: TaskId, now: u64) {
        self.tasks[id].stamp = now;
        self.policy.block(&self.tasks, id);
        self.tasks[id].state = State::Blocked;
        self.tasks[id].sleeps += 1;
    }

    fn finish(&mut self) -> Outcome {
        let end = self.cpus.iter().map(|c| c.now).max().unwrap_or(0);
        let mut out = std::mem::take(&mut self.out);
        for c in &mut self.cpus {
            // An idle CPU (or one whose clock stopped short) idled to the end, so every
            // CPU accounts for the same span.
            if c.now < end {
                c.idle_ns += end - c.now;
                c.now = end;
            }
        }
        out.end_ns = self.cpus.iter().map(|c| c.now).max().unwrap_or(end);
        out.cpus = self.cpus.len();
        out.task_run_ns = self.tasks.iter().map(|t| t.run_ns).collect();
        out.task_sleeps = self.tasks.iter().map(|t| t.sleeps).collect();
        out.task_preempted = self.tasks.iter().map(|t| t.preempted).collect();
        out.task_exited_ns = self.tasks.iter().map(|t| t.exited_at).collect();
        out.cpu_task_ns = out.task_run_ns.iter().sum();
        out.cpu_sched_ns = self.cpus.iter().map(|c| c.sched_ns).sum();
        out.cpu_idle_ns = self.cpus.iter().map(|c| c.idle_ns).sum();
        out.cpu_lock_wait_ns = self.cpus.iter().map(|c| c.lock_wait_ns).sum();
        out.sent = self.shared.sent;
        out.delivered = self.shared.delivered;
        out.counted = self.shared.counted;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{Cpu, SpinLock};

    #[test]
    fn a_lock_from_another_cpu_brings_the_lines_written_under_it() {
        // 2.4.17's loopback transmit writes the device's statistics, last_rx and
        // xtime_lock under dev->xmit_lock: taken from another CPU, each line comes with
        // the lock's own; taken again on the same CPU, none moves.
        let mut cpus = [Cpu::default(), Cpu::default()];
        let mut lock = SpinLock::default();
        assert_eq!(lock.take_carrying(&mut cpus[0], 0, 500, 250.0, 3), 500, "a first hold moves no line");
        cpus[1].now = 10_000;
        assert_eq!(lock.take_carrying(&mut cpus[1], 1, 500, 250.0, 3), 500 + 4 * 250, "the lock's line and three more");
        cpus[1].now += 10_000;
        assert_eq!(lock.take_carrying(&mut cpus[1], 1, 500, 250.0, 3), 500, "the lines are in this CPU's cache");
        cpus[0].now = 30_000;
        assert_eq!(lock.take(&mut cpus[0], 0, 500, 250.0), 500 + 250, "a plain take moves the lock's line alone");
    }
}
