//! Models of today's fair schedulers, per CPU (Documentation/scheduler/sched-design-CFS
//! and sched-eevdf): tasks weighted by nice (the kernel's sched_prio_to_weight table),
//! virtual runtime advancing at 1024/weight of real time, a balanced tree ordered by
//! key (picks and requeues cost log2 n tree levels each).
//!
//! - `cfs`: the leftmost (smallest vruntime) runs; a tick preempts once the task has
//!   had its ideal slice, max(sched_latency × w/W, min_granularity), with
//!   sched_latency 6 ms and min_granularity 0.75 ms scaled by 1 + log2(CPUs); a
//!   wake-up preempts when the current task's vruntime leads by more than the wake-up
//!   granularity (1 ms scaled); a woken task is placed no further back than
//!   min_vruntime - sched_latency/2; sched_yield makes the task the skip buddy (passed
//!   over once if another can run).
//! - `eevdf`: each task has a virtual deadline, vruntime + base_slice × 1024/w (base
//!   slice 0.7 ms scaled: Linux 6.18's sysctl_sched_base_slice); among the *eligible*
//!   tasks (vruntime not ahead of the weighted average V, i.e. lag ≥ 0) the earliest
//!   deadline runs; a task that used its slice gets a new deadline and is
//!   rescheduled; sched_yield pushes its deadline one slice further; a task keeps its
//!   lag while asleep (placed at V - lag); a wake-up preempts only a task that is past
//!   its protected slice or no longer eligible (RUN_TO_PARITY), and only when the
//!   woken task is the pick.
//!   The weighted lags of the queued tasks sum to zero by construction of V.
//! - The tick: HZ = 250 (4 ms, [`TICK_NS`]), the common distribution kernels' CONFIG_HZ
//!   and the Kconfig default (kernel/Kconfig.hz: HZ_250). A slice that runs out between
//!   ticks ends at the next tick: the HRTICK sched feature, which would end it on a
//!   high-resolution timer, is off by default (kernel/sched/features.h:
//!   `SCHED_FEAT(HRTICK, false)` and `SCHED_FEAT(HRTICK_DL, false)`), so the models
//!   have none, except under a `live` profile taken on a kernel whose sched features
//!   (/sys/kernel/debug/sched/features, where debugfs is mounted) list HRTICK: then a
//!   slice ends on its timer (hrtick_start_fair), armed while another task waits.

use super::{LoopbackXmit, Pick, PolicyKind, Scheduler, SyncWake, Why, Work, slot};
use crate::types::{SimTask, TaskId};

/// sched_prio_to_weight, nice -20 … 19.
pub const WEIGHTS: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906, 3121, 2501,
    1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
];

pub fn weight(nice: i32) -> u64 {
    WEIGHTS[(nice.clamp(-20, 19) + 20) as usize]
}

#[derive(Clone, Default)]
struct Entity {
    vruntime: f64,
    deadline: f64,
    /// Real time run since picked (CFS slice) or since the deadline was set (EEVDF).
    ran: u64,
    lag: f64,
    home: usize,
    /// When the task was last picked to run (`se.exec_start`), ns; None before its
    /// first run (a new task's exec_start is 0: never hot).
    picked_at: Option<u64>,
    /// Asleep but still queued (`se.sched_delayed`, eevdf's DELAY_DEQUEUE): it went to
    /// sleep with negative lag and counts in V until it is picked or woken.
    delayed: bool,
    /// Its slice ran out since it was picked (eevdf): update_deadline gave it the next
    /// deadline and asked for a reschedule, which the next accounting point (a tick, a
    /// wake-up's preemption check) carries out.
    slice_ended: bool,
}

struct CpuQueue {
    queued: Vec<TaskId>,
    current: Option<TaskId>,
    min_vruntime: f64,
    skip: Option<TaskId>,
    /// The CPU's periodic balances that failed in a row (`sd->nr_balance_failed`).
    balance_failed: u32,
    /// When the CPU balances next while busy (`rq->next_balance`), ns.
    next_balance: u64,
}

pub struct Fair {
    eevdf: bool,
    /// Slices end on a high-resolution timer (HRTICK), not at the next tick.
    hrtick: bool,
    cpus: Vec<CpuQueue>,
    ent: Vec<Entity>,
    weight: Vec<u64>,
    factor: f64,
}

/// The tick of the fair models: HZ = 250.
pub const TICK_NS: u64 = 4_000_000;

const SCHED_LATENCY: f64 = 6e6;
const MIN_GRANULARITY: f64 = 0.75e6;
const WAKEUP_GRANULARITY: f64 = 1e6;
/// sysctl_sched_base_slice, Linux 6.18 (kernel/sched/fair.c): 0.7 ms.
const BASE_SLICE: f64 = 0.7e6;
/// sysctl_sched_migration_cost, Linux 6.18 (kernel/sched/fair.c): a task that started
/// running less than 0.5 ms ago is cache-hot (task_hot).
pub const MIGRATION_COST_NS: u64 = 500_000;
/// sd->cache_nice_tries of a domain of CPUs sharing a last-level cache (6.18's sd_init,
/// SD_SHARE_LLC): periodic balances that may fail before a cache-hot task is moved.
const CACHE_NICE_TRIES: u32 = 1;
/// sd->busy_factor (6.18's sd_init): a busy CPU balances 16 times less often than an
/// idle one.
const BUSY_FACTOR: u64 = 16;
/// sysctl_sched_nr_migrate (6.18, without PREEMPT_RT): the tasks one balance may move.
const NR_MIGRATE: usize = 32;

impl Fair {
    pub fn new(cpus: usize, eevdf: bool) -> Self {
        let queues = (0..cpus)
            .map(|_| CpuQueue {
                queued: Vec::new(),
                current: None,
                min_vruntime: 0.0,
                skip: None,
                balance_failed: 0,
                next_balance: 0,
            })
            .collect();
        Self {
            eevdf,
            hrtick: false,
            cpus: queues,
            ent: Vec::new(),
            weight: Vec::new(),
            factor: 1.0 + (cpus.max(1) as f64).log2(),
        }
    }

    /// Linux 6.18's check_preempt_wakeup_fair, which preempts only when
    /// `__pick_eevdf(cfs_rq, protect)` picks the woken task (equal slices, so no
    /// PREEMPT_SHORT): the current task is kept while it is eligible and inside its
    /// protected slice (RUN_TO_PARITY: set_protect_slice sets `vprot` to its deadline
    /// when every slice is the base slice, and protect_slice holds while vruntime is
    /// short of it); otherwise the woken task must be eligible and have the earliest
    /// deadline of the eligible tasks, the current one among them.
    fn eevdf_wake_preempts(&self, woken: TaskId, cur: TaskId) -> bool {
        let cpu = self.ent[cur].home;
        let v = self.avg_vruntime(cpu);
        let eligible = |t: TaskId| self.ent[t].vruntime <= v;
        let c = &self.ent[cur];
        if c.slice_ended {
            // update_deadline's resched_curr, carried out at this accounting point.
            return true;
        }
        if eligible(cur) && c.vruntime < c.deadline {
            return false;
        }
        if !eligible(woken) {
            return false;
        }
        let others = self.cpus[cpu].queued.iter().copied().filter(|&t| t != woken && eligible(t));
        let earliest =
            others.map(|t| self.ent[t].deadline).fold(if eligible(cur) { c.deadline } else { f64::INFINITY }, f64::min);
        self.ent[woken].deadline < earliest
    }

    fn tree_steps(n: usize) -> u32 {
        ((n + 1) as f64).log2().ceil() as u32
    }

    fn members(&self, cpu: usize) -> impl Iterator<Item = TaskId> + '_ {
        self.cpus[cpu].queued.iter().copied().chain(self.cpus[cpu].current)
    }

    /// The weighted average vruntime V of a CPU's tasks (queued and current).
    pub fn avg_vruntime(&self, cpu: usize) -> f64 {
        let (mut s, mut w) = (0.0, 0.0);
        for t in self.members(cpu) {
            s += self.ent[t].vruntime * self.weight[t] as f64;
            w += self.weight[t] as f64;
        }
        if w > 0.0 { s / w } else { self.cpus[cpu].min_vruntime }
    }

    /// Σ w_i (V - v_i) over a CPU's tasks: zero, whatever they ran (a check).
    pub fn weighted_lag_sum(&self, cpu: usize) -> f64 {
        let v = self.avg_vruntime(cpu);
        self.members(cpu).map(|t| self.weight[t] as f64 * (v - self.ent[t].vruntime)).sum()
    }

    fn slice_virtual(&self, t: TaskId) -> f64 {
        BASE_SLICE * self.factor * 1024.0 / self.weight[t] as f64
    }

    fn total_weight(&self, cpu: usize) -> u64 {
        self.members(cpu).map(|t| self.weight[t]).sum()
    }

    /// The CPU's runnable tasks (a delayed sleeper is queued, not runnable).
    pub fn load(&self, cpu: usize) -> usize {
        let q = &self.cpus[cpu].queued;
        q.iter().filter(|&&t| !self.ent[t].delayed).count() + self.cpus[cpu].current.is_some() as usize
    }

    /// Where Linux 6.18's select_task_rq_fair puts a task woken with the sync flag by a
    /// task running on `this` (the waker's CPU), the task having last run on `prev`.
    /// wake_affine_idle (WA_IDLE): `this` when it is idle (an interrupt's wake-up) and
    /// `prev` is not; `this` when the waker runs there alone (nr_running == 1);
    /// `prev` when it is idle. Otherwise WA_WEIGHT compares the CPUs' PELT loads, which
    /// the model does not keep: it takes `prev`, as wake_affine does when no rule
    /// picks `this`. Then select_idle_sibling: that target if idle, else `prev` if
    /// idle, else the first idle CPU after the target (select_idle_cpu's scan of the
    /// last-level cache, which every CPU of the model shares), else the target.
    fn affine_target(&self, this: usize, prev: usize) -> usize {
        let idle = |c: usize| self.load(c) == 0;
        let target = if idle(this) {
            if idle(prev) { prev } else { this }
        } else if self.load(this) == 1 {
            this
        } else {
            prev
        };
        let n = self.cpus.len();
        if idle(target) {
            target
        } else if prev != target && idle(prev) {
            prev
        } else {
            (1..n).map(|k| (target + k) % n).find(|&c| idle(c)).unwrap_or(target)
        }
    }

    /// The task `cpu` runs next. Among equal keys the one queued first: `queued` is in
    /// the order the tasks joined the queue (a task put back after running joins it
    /// anew), and `min_by` keeps the first of equals, as 6.18's __enqueue_entity
    /// inserts a key equal to another to its right (rb_add_augmented_cached with
    /// `__entity_less`, a strict `entity_before`), so the leftmost of equals is the
    /// oldest.
    fn choose(&mut self, cpu: usize) -> Option<TaskId> {
        loop {
            let next = self.choose_queued(cpu);
            match next {
                Some(n) if self.ent[n].delayed => self.finish_delayed_dequeue(cpu, n),
                _ => return next,
            }
        }
    }

    /// 6.18's dequeue of a delayed task that pick_next_entity picked (dequeue_entities
    /// with DEQUEUE_DELAYED): it leaves the queue with its lag, which is not negative
    /// once it is picked, clipped to zero (DELAY_ZERO, finish_delayed_dequeue_entity).
    fn finish_delayed_dequeue(&mut self, cpu: usize, id: TaskId) {
        let v = self.avg_vruntime(cpu);
        self.cpus[cpu].queued.retain(|&t| t != id);
        let e = &mut self.ent[id];
        e.lag = (v - e.vruntime).min(0.0);
        e.delayed = false;
    }

    /// How often a busy CPU balances: the domain's balance interval (its weight in ms,
    /// sd_init's `sd_weight`) times [`BUSY_FACTOR`] (get_sd_balance_interval).
    fn busy_balance_ns(&self) -> u64 {
        self.cpus.len() as u64 * 1_000_000 * BUSY_FACTOR
    }

    /// A busy CPU's periodic balance (6.18's sched_balance_rq from the tick's
    /// sched_balance_trigger): it pulls from the busiest CPU until the two are within a
    /// task of each other, at most [`NR_MIGRATE`] tasks, each as [`Fair::pull`] allows.
    fn busy_balance(&mut self, cpu: usize, now: u64) {
        for _ in 0..NR_MIGRATE {
            let before = self.load(cpu);
            self.pull(cpu, now, false);
            if self.load(cpu) == before {
                break;
            }
        }
    }

    /// A delayed task woken (6.18's ttwu_runnable: still queued, so it stays on its
    /// CPU): requeue_delayed_entity keeps it where it is, unless V has passed it, when
    /// DELAY_ZERO places it afresh at V with no lag. Returns its CPU.
    fn requeue_delayed(&mut self, id: TaskId) -> usize {
        let cpu = self.ent[id].home;
        let v = self.avg_vruntime(cpu);
        let slice = self.slice_virtual(id);
        let e = &mut self.ent[id];
        e.delayed = false;
        if v - e.vruntime > 0.0 {
            e.vruntime = v;
            e.deadline = v + slice;
            e.ran = 0;
            // Dequeued and enqueued again: behind the tasks of equal keys.
            let q = &mut self.cpus[cpu].queued;
            q.retain(|&t| t != id);
            q.push(id);
        }
        cpu
    }

    /// The queued task with the earliest eligible deadline (eevdf) or the smallest
    /// vruntime (cfs), delayed ones included.
    fn choose_queued(&self, cpu: usize) -> Option<TaskId> {
        let q = &self.cpus[cpu].queued;
        if self.eevdf {
            let v = self.avg_vruntime(cpu);
            let eligible = q.iter().copied().filter(|&t| self.ent[t].vruntime <= v + 1e-6);
            eligible
                .min_by(|&a, &b| self.ent[a].deadline.total_cmp(&self.ent[b].deadline))
                .or_else(|| q.iter().copied().min_by(|&a, &b| self.ent[a].vruntime.total_cmp(&self.ent[b].vruntime)))
        } else {
            let by_v = |a: &TaskId, b: &TaskId| self.ent[*a].vruntime.total_cmp(&self.ent[*b].vruntime);
            let skip = self.cpus[cpu].skip;
            q.iter().copied().filter(|&t| Some(t) != skip).min_by(by_v).or_else(|| q.iter().copied().min_by(by_v))
        }
    }

    /// CFS's ideal slice of `cur` on `cpu`: the latency shared by weight, at least the
    /// minimum granularity.
    fn ideal_slice(&self, cpu: usize, cur: TaskId) -> f64 {
        let total = self.total_weight(cpu).max(1) as f64;
        (SCHED_LATENCY * self.factor * self.weight[cur] as f64 / total).max(MIN_GRANULARITY * self.factor)
    }

    /// A balance run by `cpu` at `now`: the busiest other CPU's first queued task that
    /// can move (can_migrate_task), when that CPU has more than one task more. A task is
    /// cache-hot while less than [`MIGRATION_COST_NS`] has passed since it was picked
    /// (Linux 6.18's task_hot: `rq_clock_task - se.exec_start`), and a hot task moves
    /// only once more than [`CACHE_NICE_TRIES`] periodic balances of this CPU failed in
    /// a row. A newly idle CPU's balance (`newly_idle`, sched_balance_newidle) neither
    /// counts as a failure nor moves a hot task; a CPU that finds nothing to pull goes
    /// idle.
    fn pull(&mut self, cpu: usize, now: u64, newly_idle: bool) -> Work {
        let work = Work { scanned: self.cpus.len() as u32, ..Work::default() };
        let waiting = |c: usize| self.load(c) - self.cpus[c].current.is_some() as usize;
        let busiest = (0..self.cpus.len()).filter(|&c| c != cpu).max_by_key(|&c| (waiting(c), c));
        if let Some(b) = busiest
            && waiting(b) > 0
            && self.load(b) > self.load(cpu) + 1
        {
            let forced = !newly_idle && self.cpus[cpu].balance_failed > CACHE_NICE_TRIES;
            let hot = |t: &TaskId| self.ent[*t].picked_at.is_some_and(|at| now.saturating_sub(at) < MIGRATION_COST_NS);
            let movable = |t: &TaskId| !self.ent[*t].delayed && (forced || !hot(t));
            let Some(i) = self.cpus[b].queued.iter().position(movable) else {
                if !newly_idle {
                    self.cpus[cpu].balance_failed += 1;
                }
                return work;
            };
            if !newly_idle {
                self.cpus[cpu].balance_failed = 0;
            }
            let t = self.cpus[b].queued.remove(i);
            // Carried over relative to the queues' minimums.
            let rel = self.ent[t].vruntime - self.cpus[b].min_vruntime;
            self.ent[t].vruntime = self.cpus[cpu].min_vruntime + rel;
            self.ent[t].home = cpu;
            self.cpus[cpu].queued.push(t);
        }
        work
    }
}

impl Scheduler for Fair {
    fn kind(&self) -> PolicyKind {
        if self.eevdf { PolicyKind::Eevdf } else { PolicyKind::Cfs }
    }

    fn global_lock(&self) -> bool {
        false
    }

    /// Today's loopback device is lockless (NETIF_F_LLTX).
    fn loopback_xmit(&self) -> LoopbackXmit {
        LoopbackXmit::Lockless
    }

    /// `eevdf` places a sync wake-up as Linux 6.18 does (`Fair::affine_target`);
    /// `cfs` ignores the flag, as before.
    fn sync_wake(&self) -> SyncWake {
        if self.eevdf { SyncWake::Affine } else { SyncWake::AsAnyWake }
    }

    /// Today's sock_def_readable wakes with wake_up_interruptible_sync_poll.
    fn socket_wake_sync(&self) -> bool {
        true
    }

    fn tick_ns(&self) -> u64 {
        TICK_NS
    }

    fn use_hrtick(&mut self, on: bool) {
        self.hrtick = on;
    }

    /// hrtick_start_fair: armed only while another task waits (h_nr_running > 1), for
    /// the rest of the slice: CFS's ideal slice less what the task ran; EEVDF's
    /// virtual time to its deadline, in real time at its weight.
    fn hrtick_left(&self, _tasks: &[SimTask], cpu: usize, cur: TaskId) -> Option<u64> {
        if !self.hrtick || self.cpus[cpu].queued.is_empty() {
            return None;
        }
        let e = &self.ent[cur];
        if self.eevdf {
            if e.slice_ended || e.vruntime >= e.deadline {
                return Some(0);
            }
            let real = (e.deadline - e.vruntime) * self.weight[cur] as f64 / 1024.0;
            return Some((real.ceil() as u64).max(1));
        }
        Some((self.ideal_slice(cpu, cur).ceil() as u64).saturating_sub(e.ran))
    }

    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        *slot(&mut self.weight, id) = weight(tasks[id].nice);
        slot(&mut self.ent, id);
        if self.ent[id].delayed {
            return self.requeue_delayed(id);
        }
        let new = matches!(why, Why::New | Why::Fork { .. });
        let target = match why {
            Why::New | Why::Fork { .. } => cpu,
            // select_idle_sibling: an idle CPU if there is one, else where it last ran.
            Why::Wake => (0..self.cpus.len()).find(|&c| self.load(c) == 0).unwrap_or(tasks[id].cpu),
            // Only `eevdf` takes the flag (`sync_wake`): wake_affine's choice.
            Why::WakeSync => self.affine_target(cpu, tasks[id].cpu),
        };
        let v = self.avg_vruntime(target);
        let min = self.cpus[target].min_vruntime;
        let slice = self.slice_virtual(id);
        let e = &mut self.ent[id];
        if self.eevdf {
            e.vruntime = if new { v } else { v - e.lag };
        } else if new {
            e.vruntime = min;
        } else {
            e.vruntime = e.vruntime.max(min - SCHED_LATENCY * self.factor / 2.0);
        }
        e.home = target;
        e.ran = 0;
        e.deadline = e.vruntime + slice;
        self.cpus[target].queued.push(id);
        target
    }

    fn block(&mut self, tasks: &[SimTask], id: TaskId) {
        let cpu = self.ent[id].home;
        let ineligible = self.ent[id].vruntime > self.avg_vruntime(cpu) + 1e-6;
        if !(self.eevdf && ineligible) {
            return self.remove(tasks, id);
        }
        // DELAY_DEQUEUE: it stays queued, as put_prev_entity leaves an on_rq task.
        self.ent[id].delayed = true;
        let q = &mut self.cpus[cpu];
        if q.current == Some(id) {
            q.current = None;
            q.queued.push(id);
        }
    }

    fn remove(&mut self, _tasks: &[SimTask], id: TaskId) {
        let cpu = self.ent[id].home;
        self.ent[id].delayed = false;
        let v = self.avg_vruntime(cpu);
        self.ent[id].lag = v - self.ent[id].vruntime;
        let q = &mut self.cpus[cpu];
        if q.current == Some(id) {
            q.current = None;
        } else {
            q.queued.retain(|&t| t != id);
        }
    }

    fn pick(&mut self, _tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, now: u64) -> Pick {
        let mut work = Work::default();
        if let Some(p) = prev
            && self.cpus[cpu].current == Some(p)
        {
            self.cpus[cpu].queued.push(p);
            work.tree_steps += Self::tree_steps(self.cpus[cpu].queued.len());
        }
        self.cpus[cpu].current = None;
        let mut next = self.choose(cpu);
        if next.is_none() {
            let w = self.pull(cpu, now, true);
            work.scanned += w.scanned;
            next = self.choose(cpu);
        }
        self.cpus[cpu].skip = None;
        if let Some(n) = next {
            self.ent[n].picked_at = Some(now);
            self.ent[n].slice_ended = false;
            work.tree_steps += Self::tree_steps(self.cpus[cpu].queued.len());
            self.cpus[cpu].queued.retain(|&t| t != n);
            self.cpus[cpu].current = Some(n);
            if !self.eevdf {
                self.ent[n].ran = 0;
            }
            let min = self.members(cpu).map(|t| self.ent[t].vruntime).fold(f64::INFINITY, f64::min);
            if min.is_finite() && min > self.cpus[cpu].min_vruntime {
                self.cpus[cpu].min_vruntime = min;
            }
        }
        Pick { next, work }
    }

    /// The task ran `ns` (computing or in a system call: update_curr charges both).
    /// Under eevdf a slice that runs out gets the next deadline at once (6.18's
    /// update_deadline, called from every update_curr).
    fn charge(&mut self, _tasks: &[SimTask], id: TaskId, ns: u64) {
        let w = self.weight[id] as f64;
        let slice = self.slice_virtual(id);
        let e = &mut self.ent[id];
        e.vruntime += ns as f64 * 1024.0 / w;
        e.ran += ns;
        if self.eevdf && e.vruntime >= e.deadline {
            e.deadline = e.vruntime + slice;
            e.slice_ended = true;
        }
    }

    fn tick(&mut self, _tasks: &[SimTask], cpu: usize, cur: TaskId, now: u64) -> bool {
        if self.cpus.len() > 1 && now >= self.cpus[cpu].next_balance {
            self.cpus[cpu].next_balance = now + self.busy_balance_ns();
            self.busy_balance(cpu, now);
        }
        if self.eevdf {
            std::mem::take(&mut self.ent[cur].slice_ended) && !self.cpus[cpu].queued.is_empty()
        } else {
            self.ent[cur].ran as f64 >= self.ideal_slice(cpu, cur).ceil() && !self.cpus[cpu].queued.is_empty()
        }
    }

    fn on_yield(&mut self, _tasks: &[SimTask], cpu: usize, cur: TaskId) -> Work {
        if self.eevdf {
            self.ent[cur].deadline += self.slice_virtual(cur);
        } else {
            self.cpus[cpu].skip = Some(cur);
        }
        Work::default()
    }

    fn wake_preempts(&self, _tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool {
        if self.eevdf {
            self.eevdf_wake_preempts(woken, cur)
        } else {
            let gran = WAKEUP_GRANULARITY * self.factor * 1024.0 / self.weight[woken] as f64;
            self.ent[cur].vruntime - self.ent[woken].vruntime > gran
        }
    }

    fn fork_child_first(&self) -> bool {
        false
    }

    fn idle_balance(&mut self, _tasks: &[SimTask], cpu: usize, now: u64) -> Work {
        self.pull(cpu, now, false)
    }
}
