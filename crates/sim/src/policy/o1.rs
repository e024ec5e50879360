//! The O(1) scheduler as Linux 2.6.0 has it (kernel/sched.c), Molnar's 2002 design.
//!
//! - HZ = 1000 (include/asm-i386/param.h): a tick is 1 ms.
//! - A run queue per CPU, each with its own lock, holding two priority arrays (active,
//!   expired) of 140 lists and a bitmap: a pick (`schedule()`) is a find-first-bit and
//!   a list head, whatever the number of tasks; when the active array empties the two
//!   swap.
//! - `task_timeslice()`: BASE_TIMESLICE = MIN_TIMESLICE (10) + (MAX_TIMESLICE (200) −
//!   10) × (139 − static_prio) / 39 ticks: 102 ms at nice 0, 10 ms at nice 19.
//! - `effective_prio()`: static_prio − (CURRENT_BONUS − 5), CURRENT_BONUS =
//!   sleep_avg × MAX_BONUS (10) / MAX_SLEEP_AVG (1020 ms), clamped to 100..139.
//!   `TASK_INTERACTIVE`: prio ≤ static_prio − DELTA, DELTA = nice × 10 / 40 + 2.
//! - `recalc_task_prio()`, at the wake-up (`activate_task`, before the task is queued
//!   and before the preemption test): a sleep longer than JUST_INTERACTIVE_SLEEP sets
//!   sleep_avg to MAX_SLEEP_AVG − AVG_TIMESLICE; a shorter one adds the sleep times
//!   (MAX_BONUS − CURRENT_BONUS), at least once, capped at MAX_SLEEP_AVG. `schedule()`
//!   takes the run time off when the task stops running. Not modelled: the
//!   interactive credit, the uninterruptible-sleep cap and the 30% credit for time
//!   spent waiting in the queue.
//! - `scheduler_tick()`: one tick off the slice; at 0 the task gets a new prio and slice
//!   and goes to the expired array, unless it is interactive and the expired array is
//!   not starving (EXPIRED_STARVING: waiting longer than STARVATION_LIMIT (1020 ms) per
//!   runnable task), when it goes back to the active one; `expired_timestamp` is set at
//!   every expiry. Not modelled: TIMESLICE_GRANULARITY's round robin of interactive
//!   tasks within their slice.
//! - A preempted task keeps its place (the head of its list) and its prio.
//! - `sys_sched_yield()`: to the expired array, prio and slice unchanged.
//! - fork (`copy_process`, `wake_up_forked_process`): the child gets half the parent's
//!   slice (rounded up), the parent keeps half; both get sleep_avg from the parent's
//!   bonus (the child × CHILD_PENALTY 95%); the child takes the parent's prio, is queued
//!   just before the parent on the parent's CPU, and the parent is flagged to
//!   reschedule: the child runs first there. No idle CPU is told. Not modelled:
//!   `sched_exit` giving the parent back the child's unused first slice.
//! - `try_to_wake_up()`: the task stays on its last CPU (an IPI if that CPU is idle);
//!   a woken task preempts a current one of a worse prio (`TASK_PREEMPTS_CURR`). Other
//!   idle CPUs learn of work only at their idle rebalance tick (IDLE_REBALANCE_TICK,
//!   1 ms). A sync wake-up (`wake_up_interruptible_sync`, pipe_write's) moves a task
//!   last run elsewhere to the waker's CPU and queues it with `__activate_task`: no
//!   sleep credit, no preemption test. In 2.6.0 neither a TCP socket's wake-up
//!   (sock_def_readable: wake_up_interruptible) nor an exiting child's wake-up of its
//!   parent (`__wake_up_parent`: wake_up_interruptible; made sync in March 2004, for
//!   2.6.5-rc3-mm1) is sync, so chat and fork wake as any.
//! - `load_balance()`: an idle CPU pulls one task; a busy one, every BUSY_REBALANCE_TICK
//!   (200 ms), pulls half the imbalance when the busiest queue holds at least 25% more;
//!   victims come from the expired array first, best prio first, list tail first, never
//!   the running task and (busy balancing) never a cache-hot one (ran within
//!   cache_decay_ticks, 2 ms for a 512 KB cache).

use std::collections::VecDeque;

use super::{LoopbackXmit, Pick, PolicyKind, Scheduler, SyncWake, Why, Work, slot};
use crate::types::{SimTask, TaskId};

const MAX_PRIO: usize = 140;
pub const TICK_NS: u64 = 1_000_000;
const MIN_TIMESLICE: u64 = 10;
const MAX_TIMESLICE: u64 = 200;
const MAX_BONUS: u64 = 10;
const AVG_TIMESLICE: u64 = 102;
/// AVG_TIMESLICE × MAX_BONUS ticks.
pub const MAX_SLEEP_AVG_NS: u64 = AVG_TIMESLICE * MAX_BONUS * TICK_NS;
const STARVATION_LIMIT_NS: u64 = MAX_SLEEP_AVG_NS;
const CHILD_PENALTY: u64 = 95;
const PARENT_PENALTY: u64 = 100;
const BUSY_REBALANCE_NS: u64 = 200 * TICK_NS;
const CACHE_DECAY_NS: u64 = 2 * TICK_NS;

pub fn static_prio(nice: i32) -> usize {
    (120 + nice.clamp(-20, 19)) as usize
}

/// BASE_TIMESLICE, ns.
pub fn timeslice(nice: i32) -> u64 {
    (MIN_TIMESLICE + (MAX_TIMESLICE - MIN_TIMESLICE) * (MAX_PRIO - 1 - static_prio(nice)) as u64 / 39) * TICK_NS
}

/// DELTA(p): nice × 10 / 40 (truncated) + INTERACTIVE_DELTA.
fn delta(nice: i32) -> i64 {
    (nice.clamp(-20, 19) as i64 * 10) / 40 + 2
}

/// JUST_INTERACTIVE_SLEEP(p), ns.
fn just_interactive_sleep(nice: i32) -> u64 {
    let ticks = (AVG_TIMESLICE * MAX_BONUS) as i64 * (MAX_BONUS as i64 / 2 + delta(nice) + 1) / MAX_BONUS as i64 - 1;
    ticks.max(0) as u64 * TICK_NS
}

/// CURRENT_BONUS(p) for a sleep_avg.
fn current_bonus(sleep_avg: u64) -> u64 {
    (sleep_avg / TICK_NS) * MAX_BONUS / (AVG_TIMESLICE * MAX_BONUS)
}

/// A priority array: 140 lists and their bitmap (`o1-2002` shares it).
#[derive(Clone)]
pub(super) struct Array {
    pub(super) lists: Vec<VecDeque<TaskId>>,
    bitmap: [u64; 3],
    pub(super) count: usize,
}

impl Array {
    pub(super) fn new() -> Self {
        Self { lists: vec![VecDeque::new(); MAX_PRIO], bitmap: [0; 3], count: 0 }
    }

    pub(super) fn insert(&mut self, prio: usize, id: TaskId, at: usize) {
        let l = &mut self.lists[prio];
        l.insert(at.min(l.len()), id);
        self.bitmap[prio / 64] |= 1 << (prio % 64);
        self.count += 1;
    }

    pub(super) fn push_back(&mut self, prio: usize, id: TaskId) {
        let n = self.lists[prio].len();
        self.insert(prio, id, n);
    }

    pub(super) fn remove(&mut self, id: TaskId) -> bool {
        for (prio, l) in self.lists.iter_mut().enumerate() {
            if let Some(i) = l.iter().position(|&t| t == id) {
                l.remove(i);
                if l.is_empty() {
                    self.bitmap[prio / 64] &= !(1 << (prio % 64));
                }
                self.count -= 1;
                return true;
            }
        }
        false
    }

    /// sched_find_first_bit, then the list head.
    pub(super) fn first(&self) -> Option<TaskId> {
        let word = self.bitmap.iter().position(|&w| w != 0)?;
        let prio = word * 64 + self.bitmap[word].trailing_zeros() as usize;
        self.lists[prio].front().copied()
    }

    /// Best prio first, each list from its tail: load_balance's order.
    pub(super) fn balance_order(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.lists.iter().flat_map(|l| l.iter().rev().copied())
    }
}

#[derive(Clone, Default)]
struct TaskState {
    slice: u64,
    sleep_avg: u64,
    /// When it last started running (or was created).
    timestamp: u64,
}

struct Rq {
    active: Array,
    expired: Array,
    current: Option<TaskId>,
    expired_timestamp: Option<u64>,
    last_balance: u64,
    /// A child forked by the current task, queued just before it.
    child_ahead: Option<TaskId>,
}

pub struct O1 {
    rqs: Vec<Rq>,
    state: Vec<TaskState>,
    prio: Vec<usize>,
    home: Vec<usize>,
}

impl O1 {
    pub fn new(cpus: usize) -> Self {
        let rqs = (0..cpus)
            .map(|_| Rq {
                active: Array::new(),
                expired: Array::new(),
                current: None,
                expired_timestamp: None,
                last_balance: 0,
                child_ahead: None,
            })
            .collect();
        Self { rqs, state: Vec::new(), prio: Vec::new(), home: Vec::new() }
    }

    fn effective_prio(&self, tasks: &[SimTask], id: TaskId) -> usize {
        let bonus = current_bonus(self.state[id].sleep_avg) as i64 - (MAX_BONUS / 2) as i64;
        (static_prio(tasks[id].nice) as i64 - bonus).clamp(100, 139) as usize
    }

    fn interactive(&self, tasks: &[SimTask], id: TaskId) -> bool {
        self.prio[id] as i64 <= static_prio(tasks[id].nice) as i64 - delta(tasks[id].nice)
    }

    /// recalc_task_prio(p, now) at a wake-up.
    fn recalc_task_prio(&mut self, tasks: &[SimTask], id: TaskId, now: u64) {
        let slept = now.saturating_sub(tasks[id].stamp).min(MAX_SLEEP_AVG_NS);
        let st = &mut self.state[id];
        if slept > just_interactive_sleep(tasks[id].nice) {
            st.sleep_avg = (AVG_TIMESLICE * (MAX_BONUS - 1)) * TICK_NS;
        } else {
            let times = (MAX_BONUS - current_bonus(st.sleep_avg)).max(1);
            st.sleep_avg = (st.sleep_avg + slept * times).min(MAX_SLEEP_AVG_NS);
        }
        self.prio[id] = self.effective_prio(tasks, id);
    }

    /// schedule()'s `prev->sleep_avg -= run_time`.
    fn ran_until(&mut self, id: TaskId, now: u64) {
        let st = &mut self.state[id];
        st.sleep_avg = st.sleep_avg.saturating_sub(now.saturating_sub(st.timestamp));
    }

    fn nr(&self, cpu: usize) -> usize {
        let rq = &self.rqs[cpu];
        rq.active.count + rq.expired.count + rq.current.is_some() as usize
    }

    fn starving(&self, cpu: usize, now: u64) -> bool {
        self.rqs[cpu].expired_timestamp.is_some_and(|t| now - t >= STARVATION_LIMIT_NS * self.nr(cpu) as u64 + TICK_NS)
    }

    /// load_balance(this, idle): see the module doc.
    fn load_balance(&mut self, cpu: usize, idle: bool, now: u64) -> Work {
        let cpus = self.rqs.len() as u32;
        let work = Work { scanned: cpus, remote: cpus.saturating_sub(1), ..Work::default() };
        let own = self.nr(cpu);
        let Some(busiest) =
            (0..self.rqs.len()).filter(|&c| c != cpu && self.nr(c) > 1).max_by_key(|&c| (self.nr(c), c))
        else {
            return work;
        };
        let max_load = self.nr(busiest);
        let imbalance = max_load.saturating_sub(own);
        if max_load <= own || (!idle && imbalance * 4 < max_load) {
            return work;
        }
        let want = if idle { 1 } else { (imbalance / 2).max(1) };
        let from_expired = self.rqs[busiest].expired.count > 0;
        let array = if from_expired { &self.rqs[busiest].expired } else { &self.rqs[busiest].active };
        let victims: Vec<TaskId> = array
            .balance_order()
            .filter(|&t| idle || now.saturating_sub(self.state[t].timestamp) > CACHE_DECAY_NS)
            .take(want)
            .collect();
        for v in victims {
            let rq = &mut self.rqs[busiest];
            if from_expired {
                rq.expired.remove(v);
            } else {
                rq.active.remove(v);
            }
            if rq.child_ahead == Some(v) {
                rq.child_ahead = None;
            }
            let p = self.prio[v];
            self.rqs[cpu].active.push_back(p, v);
            self.home[v] = cpu;
        }
        work
    }

    /// The task's slice, for tests.
    pub fn slice(&self, id: TaskId) -> u64 {
        self.state[id].slice
    }
    pub fn prio(&self, id: TaskId) -> usize {
        self.prio[id]
    }
}

impl Scheduler for O1 {
    fn kind(&self) -> PolicyKind {
        PolicyKind::O1
    }

    /// try_to_wake_up(p, state, sync): see [`SyncWake::JoinsWakersCpu`].
    fn sync_wake(&self) -> SyncWake {
        SyncWake::JoinsWakersCpu
    }

    /// 2.6.0 keeps the device's transmit lock. Its loopback_xmit is taken to write the
    /// device's statistics and `last_rx` as 2.4.17's does (2.6.0's file was not
    /// read); netif_rx's timestamp adds no line, 2.6.0's `xtime_lock` being a seqlock
    /// (since 2.5.60), whose readers write nothing.
    fn loopback_xmit(&self) -> LoopbackXmit {
        LoopbackXmit::Locked { shared_lines: 2 }
    }

    fn global_lock(&self) -> bool {
        false
    }

    fn tick_ns(&self) -> u64 {
        TICK_NS
    }

    fn idle_rebalance_ns(&self) -> Option<u64> {
        Some(TICK_NS)
    }

    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        slot(&mut self.state, id);
        slot(&mut self.prio, id);
        slot(&mut self.home, id);
        match why {
            Why::New => {
                self.state[id] = TaskState { slice: timeslice(tasks[id].nice), sleep_avg: 0, timestamp: 0 };
                self.prio[id] = self.effective_prio(tasks, id);
                self.home[id] = cpu;
                self.rqs[cpu].active.push_back(self.prio[id], id);
                cpu
            }
            Why::Fork { parent } => {
                let ps = self.state[parent].slice;
                let bonus = current_bonus(self.state[parent].sleep_avg);
                let penalised = |pct: u64| bonus * pct / 100 * MAX_SLEEP_AVG_NS / MAX_BONUS;
                self.state[parent].slice = (ps >> 1).max(TICK_NS);
                self.state[parent].sleep_avg = penalised(PARENT_PENALTY);
                let now = tasks[id].woken_at.unwrap_or(0);
                self.state[id] =
                    TaskState { slice: (ps + 1) >> 1, sleep_avg: penalised(CHILD_PENALTY), timestamp: now };
                // The parent's prio, just before the parent (the running task heads its
                // list): the child is next on the parent's CPU.
                self.prio[id] = self.prio[parent];
                self.home[id] = cpu;
                self.rqs[cpu].active.insert(self.prio[id], id, 0);
                self.rqs[cpu].child_ahead = Some(id);
                cpu
            }
            Why::Wake => {
                let target = tasks[id].cpu;
                self.recalc_task_prio(tasks, id, tasks[id].woken_at.unwrap_or(tasks[id].stamp));
                self.home[id] = target;
                self.rqs[target].active.push_back(self.prio[id], id);
                target
            }
            Why::WakeSync => {
                // try_to_wake_up(p, state, 1): a task neither running nor queued is
                // fast-migrated to the waker's CPU (set_task_cpu), then queued by
                // __activate_task, which is activate_task without recalc_task_prio:
                // no sleep credit, its prio as it slept; and no TASK_PREEMPTS_CURR test.
                self.home[id] = cpu;
                self.rqs[cpu].active.push_back(self.prio[id], id);
                cpu
            }
        }
    }

    fn remove(&mut self, tasks: &[SimTask], id: TaskId) {
        let cpu = self.home[id];
        let rq = &mut self.rqs[cpu];
        if rq.current == Some(id) {
            rq.current = None;
        } else if !rq.active.remove(id) {
            rq.expired.remove(id);
        }
        if rq.child_ahead == Some(id) {
            rq.child_ahead = None;
        }
        self.ran_until(id, tasks[id].stamp);
    }

    fn pick(&mut self, tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, now: u64) -> Pick {
        let mut work = Work { picks: 1, ..Work::default() };
        if let Some(p) = prev
            && self.rqs[cpu].current == Some(p)
        {
            self.rqs[cpu].current = None;
            self.ran_until(p, now);
            if self.state[p].slice == 0 {
                // scheduler_tick's expiry.
                self.prio[p] = self.effective_prio(tasks, p);
                self.state[p].slice = timeslice(tasks[p].nice);
                self.rqs[cpu].expired_timestamp.get_or_insert(now);
                if self.interactive(tasks, p) && !self.starving(cpu, now) {
                    self.rqs[cpu].active.push_back(self.prio[p], p);
                } else {
                    self.rqs[cpu].expired.push_back(self.prio[p], p);
                }
            } else {
                // Preempted: its place at the head of its list, behind a child it forked.
                let at = match self.rqs[cpu].child_ahead.take() {
                    Some(c) if self.rqs[cpu].active.lists[self.prio[p]].front() == Some(&c) => 1,
                    _ => 0,
                };
                self.rqs[cpu].active.insert(self.prio[p], p, at);
            }
        }
        self.rqs[cpu].current = None;
        if self.nr(cpu) == 0 {
            let w = self.load_balance(cpu, true, now);
            work.scanned += w.scanned;
            work.remote += w.remote;
        }
        let rq = &mut self.rqs[cpu];
        if rq.active.count == 0 && rq.expired.count > 0 {
            std::mem::swap(&mut rq.active, &mut rq.expired);
            rq.expired_timestamp = None;
        }
        let next = rq.active.first();
        match next {
            Some(n) => {
                rq.active.remove(n);
                rq.current = Some(n);
                if rq.child_ahead == Some(n) {
                    rq.child_ahead = None;
                }
                self.state[n].timestamp = now;
            }
            None => rq.expired_timestamp = None,
        }
        Pick { next, work }
    }

    fn tick(&mut self, _tasks: &[SimTask], cpu: usize, cur: TaskId, now: u64) -> bool {
        let st = &mut self.state[cur];
        st.slice = st.slice.saturating_sub(TICK_NS);
        let expired = st.slice == 0;
        if now - self.rqs[cpu].last_balance >= BUSY_REBALANCE_NS {
            self.rqs[cpu].last_balance = now;
            self.load_balance(cpu, false, now);
        }
        expired
    }

    fn on_yield(&mut self, tasks: &[SimTask], cpu: usize, cur: TaskId) -> Work {
        // To the expired array at its prio, its slice kept: picked again only when the
        // active array empties.
        if self.rqs[cpu].current == Some(cur) {
            self.rqs[cpu].current = None;
            self.ran_until(cur, tasks[cur].stamp);
            self.rqs[cpu].expired.push_back(self.prio[cur], cur);
        }
        Work { picks: 1, ..Work::default() }
    }

    fn wake_preempts(&self, _tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool {
        self.prio[woken] < self.prio[cur]
    }

    fn fork_child_first(&self) -> bool {
        true
    }

    fn idle_balance(&mut self, _tasks: &[SimTask], cpu: usize, now: u64) -> Work {
        self.load_balance(cpu, true, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_2_6_0_task_timeslice_and_the_sleep_average_constants() {
        // kernel/sched.c BASE_TIMESLICE at HZ = 1000; MAX_SLEEP_AVG = AVG_TIMESLICE ×
        // MAX_BONUS; JUST_INTERACTIVE_SLEEP at nice 0.
        assert_eq!(timeslice(0), 102 * TICK_NS);
        assert_eq!(timeslice(19), 10 * TICK_NS);
        assert_eq!(timeslice(-20), 200 * TICK_NS);
        assert_eq!(MAX_SLEEP_AVG_NS, 1_020_000_000);
        assert_eq!(just_interactive_sleep(0), 815 * TICK_NS);
    }

    #[test]
    fn linux_2_6_0_task_interactive_is_bonus_delta_over_static_prio() {
        // TASK_INTERACTIVE(p): prio <= static_prio − DELTA(p), DELTA = nice×10/40 + 2:
        // at nice 0 a CURRENT_BONUS of 7 (prio 118) is interactive, 6 is not; at nice
        // 19 no bonus is enough.
        assert_eq!((delta(0), delta(19), delta(-20)), (2, 6, -3));
        let tasks = crate::types::test_tasks(1, 0);
        let mut o = O1::new(1);
        o.add(&tasks, 0, 0, Why::New);
        for (bonus, interactive) in [(7, true), (6, false)] {
            o.state[0].sleep_avg = bonus * AVG_TIMESLICE * TICK_NS;
            o.prio[0] = o.effective_prio(&tasks, 0);
            assert_eq!(o.interactive(&tasks, 0), interactive, "bonus {bonus}: prio {}", o.prio[0]);
        }
        let nice19 = crate::types::test_tasks(1, 19);
        o.state[0].sleep_avg = MAX_SLEEP_AVG_NS;
        o.prio[0] = o.effective_prio(&nice19, 0);
        assert!(!o.interactive(&nice19, 0));
    }

    #[test]
    fn linux_2_6_0_recalc_task_prio_credits_sleep_at_the_wake_up() {
        // recalc_task_prio(): a sleep past JUST_INTERACTIVE_SLEEP sets sleep_avg to
        // MAX_SLEEP_AVG − AVG_TIMESLICE; a short one adds the sleep × (MAX_BONUS −
        // CURRENT_BONUS).
        let mut tasks = crate::types::test_tasks(1, 0);
        let mut o = O1::new(1);
        o.add(&tasks, 0, 0, Why::New);
        tasks[0].stamp = 0;
        tasks[0].woken_at = Some(900 * TICK_NS);
        o.recalc_task_prio(&tasks, 0, 900 * TICK_NS);
        assert_eq!(o.state[0].sleep_avg, 918 * TICK_NS);
        o.state[0].sleep_avg = 0;
        o.recalc_task_prio(&tasks, 0, 10 * TICK_NS);
        assert_eq!(o.state[0].sleep_avg, 100 * TICK_NS, "10 ms × (10 − 0)");
        // The credit comes before the preemption test: the woken task's prio is new.
        assert_eq!(o.prio[0], o.effective_prio(&tasks, 0));
    }
}
