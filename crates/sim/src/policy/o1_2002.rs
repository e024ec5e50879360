//! The O(1) scheduler as Molnar measured it in January 2002: his patch for 2.5.2-pre6
//! (the founding text's "ultra-scalable O(1) SMP and UP scheduler"), not 2.6.0's (`o1`).
//!
//! The patch's own text for -pre6 was not found whole. Parts of it are quoted in its
//! lkml review of 4 January 2002 (activate_task with its load estimator,
//! expire_task) and in a diff against Molnar's copy for 2.5.2-pre9 of 5 January;
//! where those quotes differ from what Linus merged days later into 2.5.2-pre10, the
//! rule follows the quotes (expire_task, activate_task's `if (penalty)`). The other
//! rules are read from 2.5.2-pre10 (kernel/sched.c and include/linux/sched.h, as
//! quoted line for line in lkml diffs of January 2002), and each rule's doc names the
//! version and function it follows. Where no source was found for a detail, the doc
//! says so and the choice follows the founding text's description.
//!
//! What differs from 2.6.0 (`o1`):
//! - HZ = 100 (i386 in 2.5.2): a tick is 10 ms.
//! - Interactivity is the 4-entry, 1-second load-history estimator: a task's sleep
//!   ticks in each of the last four seconds (`sleep_hist`), and a priority penalty of up
//!   to the announced patch's MAX_PRIO / 3 (21 levels) for the share of that time it did
//!   not sleep. Time spent runnable in a queue counts as load: tasks that want more CPU
//!   than there is get punished. There is no sleep bonus, no interactive credit, no
//!   starvation limit.
//! - Timeslices follow the dynamic priority (PRIO_TO_TIMESLICE): 90 ms at nice 0
//!   without penalty, 20 ms at the worst priority.
//! - sched_yield lowers the task's priority by one and requeues it in the active array.
//! - Balancing pulls the whole imbalance from the busiest queue, expired tasks first,
//!   from the timer tick and whenever a CPU's queue is empty; no cache-hot test.
//! - No sync wake-ups: try_to_wake_up takes a `synchronous` flag and ignores it. No mm
//!   affinity bonus ("i skipped the prev->mm == next->mm advantage").
//!
//! Where the tick lands. scheduler_tick charges the tick to whichever task runs when it
//! fires, and its deactivate + activate puts that task back at NICE_TO_PRIO + the
//! penalty, MAX_PRIO − 1 for a loop that never sleeps, at the tail of the list where
//! its partner's yields keep the partner (139 too). Every tick so leaves two yielders
//! in the same state. The simulator's loop costs are exact, so on the 1/HZ grid the
//! next tick would land at the same point of the same strictly periodic alternation, on
//! the same task, tick after tick: that task's slice would run out twice as often, and
//! the split would follow the loop's period to the nanosecond. On a machine a loop's
//! iterations drift by more than one alternation (a few µs) over the 10 ms between
//! ticks (cache and bus misses, the tick's own footprint), so the point a tick lands on
//! is not fixed. Here the k-th tick reaches the CPU up to `TICK_SPREAD_NS` after its
//! grid time, by a fixed hash of the CPU and k (the same in every run): the kernel's
//! rules, with the phase spread as on a machine.

use super::o1::Array;
use super::{LoopbackXmit, Pick, PolicyKind, Scheduler, Why, Work, slot};
use crate::types::{SimTask, TaskId};

/// How far after its grid time a tick may land (see the module docs): longer than one
/// alternation of two yielders under the 2002 profile (about 4.4 µs) so the point it
/// lands on is spread over the whole alternation, and 0.2% of a tick.
pub const TICK_SPREAD_NS: u64 = 20_000;
const _: () = assert!(TICK_SPREAD_NS < TICK_NS / 10, "a tick stays within a tenth of its period");

/// The k-th tick's offset on `cpu`, drawn uniformly from [0, TICK_SPREAD_NS) by
/// SplitMix64 over the CPU and the tick's number: independent from tick to tick, so the
/// time between two ticks (what decides the point the next lands on, since each tick
/// leaves two yielders in the same state) is spread too; and the same in every run.
pub fn tick_offset(cpu: usize, k: u64) -> u64 {
    let mut z = (k ^ ((cpu as u64) << 48)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) % TICK_SPREAD_NS
}

/// HZ = 100 (include/asm-i386/param.h in 2.5.2).
const HZ: u64 = 100;
pub const TICK_NS: u64 = 1_000_000_000 / HZ;
const MAX_RT_PRIO: usize = 100;
const MAX_PRIO: usize = 140;
const MAX_USER_PRIO: usize = MAX_PRIO - MAX_RT_PRIO;
/// The announced patch's MAX_PRIO, by every trace of it: the founding text's "64-bit
/// bitmap cache for array indices", Anton Blanchard's "the first MAX_PRIO (64) bits"
/// (lkml, 4 January 2002, confirmed by Molnar) and Molnar's "where all the CPU hogs live
/// (this is p->prio == 63 right now)" (6 January). No line defining it was found. Its
/// 40 user levels (nice 0 at 44) are the same as pre10's (nice 0 at 120), so the
/// simulator keeps pre10's numbering and takes from 64 only the penalty below.
const ANNOUNCED_MAX_PRIO: usize = 64;
/// The announced patch's activate_task (2.5.2-pre6, as quoted in its review of
/// 4 January 2002): `MAX_BOOST (MAX_PRIO/3)`, 21 levels at its MAX_PRIO of 64. A task
/// that never sleeps reaches MAX_PRIO − 1 from nice 0 (44 + 21 past 63), where
/// Molnar's CPU hogs lived; pre10 (MAX_USER_PRIO / 3, 13 levels) stops it at 133,
/// six levels short.
pub const MAX_PENALTY: usize = ANNOUNCED_MAX_PRIO / 3;
/// include/linux/sched.h: SLEEP_HIST_SIZE, the estimator's seconds.
const SLEEP_HIST_SIZE: usize = 4;
/// include/linux/sched.h (2.5.2): MIN_TIMESLICE = 20 ms, MAX_TIMESLICE = 150 ms, in ticks.
const MIN_TIMESLICE: u64 = 20 * HZ / 1000;
const MAX_TIMESLICE: u64 = 150 * HZ / 1000;

/// 2.5.2 include/linux/sched.h: NICE_TO_PRIO(n), nice −20..19 onto 100..139.
pub fn nice_to_prio(nice: i32) -> usize {
    (MAX_RT_PRIO as i32 + 20 + nice.clamp(-20, 19)) as usize
}

/// 2.5.2 include/linux/sched.h: PRIO_TO_TIMESLICE(p), ns: the dynamic priority
/// scaled onto MAX_TIMESLICE..MIN_TIMESLICE, rounded up.
pub fn prio_to_timeslice(prio: usize) -> u64 {
    let user = (prio.clamp(MAX_RT_PRIO, MAX_PRIO - 1) - MAX_RT_PRIO) as u64;
    let top = MAX_USER_PRIO as u64 - 1;
    ((((top - user) * (MAX_TIMESLICE - MIN_TIMESLICE) + top) / MAX_USER_PRIO as u64) + MIN_TIMESLICE) * TICK_NS
}

/// A task's load history: ticks slept in each of the last SLEEP_HIST_SIZE seconds
/// (2.5.2-pre10 include/linux/sched.h: sleep_hist, sleep_idx, sleep_timestamp,
/// run_timestamp), all in jiffies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    hist: [u64; SLEEP_HIST_SIZE],
    idx: usize,
    sleep_ts: u64,
    run_ts: u64,
}

fn next_idx(idx: usize) -> usize {
    (idx + 1) % SLEEP_HIST_SIZE
}

impl History {
    /// 2.5.2-pre10 kernel/fork.c: do_fork zeroes the history and stamps both times
    /// with the creation jiffy.
    pub fn new(j: u64) -> Self {
        Self { hist: [0; SLEEP_HIST_SIZE], idx: 0, sleep_ts: j, run_ts: j }
    }

    /// 2.5.2-pre10 kernel/sched.c: update_sleep_avg_deactivate. The task stops being
    /// runnable at jiffy `j`: seconds that passed since it last ran are zeroed (no
    /// sleep in them), and the sleep starts.
    pub fn deactivate(&mut self, j: u64) {
        let delta = j / HZ - self.run_ts / HZ;
        if delta > 0 {
            if delta < SLEEP_HIST_SIZE as u64 {
                for _ in 0..delta {
                    self.idx = next_idx(self.idx);
                    self.hist[self.idx] = 0;
                }
            } else {
                self.hist = [0; SLEEP_HIST_SIZE];
                self.idx = 0;
            }
        }
        self.sleep_ts = j;
    }

    /// 2.5.2-pre10 kernel/sched.c: update_sleep_avg_activate. The task becomes
    /// runnable at jiffy `j`: the ticks slept since `sleep_ts` go into the seconds they
    /// fell in. Followed line for line, including that a sleep across two second
    /// boundaries leaves the middle bucket as it was (the loop's last bucket is
    /// zeroed again for the current second).
    pub fn activate(&mut self, j: u64) {
        let delta = j / HZ - self.sleep_ts / HZ;
        let delta_ticks = if delta > 0 {
            if delta < SLEEP_HIST_SIZE as u64 {
                self.hist[self.idx] += HZ - self.sleep_ts % HZ;
                self.idx = next_idx(self.idx);
                for _ in 1..delta {
                    self.idx = next_idx(self.idx);
                    self.hist[self.idx] = HZ;
                }
            } else {
                self.hist = [HZ; SLEEP_HIST_SIZE];
                self.idx = 0;
            }
            self.hist[self.idx] = 0;
            j % HZ
        } else {
            j - self.sleep_ts
        };
        self.hist[self.idx] += delta_ticks;
        self.run_ts = j;
    }

    /// 2.5.2-pre10 kernel/sched.c: get_sleep_avg, the share of the last three seconds
    /// and this one so far spent asleep, in 1/HZ.
    pub fn sleep_avg(&self, j: u64) -> u64 {
        let sum: u64 = self.hist.iter().sum();
        (sum * HZ / ((SLEEP_HIST_SIZE as u64 - 1) * HZ + j % HZ)).min(HZ)
    }

    /// 2.5.2-pre10 kernel/sched.c: activate_task's penalty, MAX_PENALTY × load / HZ
    /// with load = HZ − sleep.
    pub fn penalty(&self, j: u64) -> usize {
        (MAX_PENALTY as u64 * (HZ - self.sleep_avg(j)) / HZ) as usize
    }
}

/// Where the running task goes when it stops running but stays runnable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Requeue {
    /// Preempted before any tick: still at the head of its list.
    Head,
    /// A tick requeued it (the estimator's deactivate + activate, or an expiry into
    /// the active array): the tail of its list.
    Tail,
    /// Its slice expired: the tail of the expired array.
    Expired,
}

#[derive(Clone, Debug)]
struct TaskState {
    slice: u64,
    history: History,
}

struct Rq {
    active: Array,
    expired: Array,
    current: Option<TaskId>,
    requeue: Requeue,
    /// A child forked by the current task, queued just before it.
    child_ahead: Option<TaskId>,
}

pub struct O12002 {
    rqs: Vec<Rq>,
    state: Vec<TaskState>,
    prio: Vec<usize>,
    home: Vec<usize>,
}

fn jiffies(ns: u64) -> u64 {
    ns / TICK_NS
}

impl O12002 {
    pub fn new(cpus: usize) -> Self {
        let rqs = (0..cpus)
            .map(|_| Rq {
                active: Array::new(),
                expired: Array::new(),
                current: None,
                requeue: Requeue::Head,
                child_ahead: None,
            })
            .collect();
        Self { rqs, state: Vec::new(), prio: Vec::new(), home: Vec::new() }
    }

    /// 2.5.2-pre10 kernel/fork.c: do_fork halves `parent`'s slice between it and a
    /// child, in ticks; a parent left with none gets one tick (its expire_task there is
    /// not modelled). Returns the child's share.
    fn split_slice(&mut self, parent: TaskId) -> u64 {
        let ticks = self.state[parent].slice / TICK_NS;
        self.state[parent].slice = (ticks >> 1).max(1) * TICK_NS;
        ((ticks + 1) >> 1) * TICK_NS
    }

    /// The announced patch's activate_task (2.5.2-pre6, as quoted in its review of
    /// 4 January 2002, and unchanged in the copy for 2.5.2-pre9 of 5 January). Unless
    /// the task was last activated in this same jiffy, its history takes the sleep and,
    /// when the penalty is not zero (`if (penalty)`), its priority becomes
    /// NICE_TO_PRIO(nice) + the penalty, at most MAX_PRIO − 1: a task with no load
    /// keeps the priority it had. (2.5.2-pre10 dropped the test and resets it to
    /// NICE_TO_PRIO.)
    fn activate(&mut self, tasks: &[SimTask], id: TaskId, j: u64) {
        let h = &mut self.state[id].history;
        if h.run_ts == j {
            return;
        }
        h.activate(j);
        let penalty = h.penalty(j);
        if penalty > 0 {
            self.prio[id] = (nice_to_prio(tasks[id].nice) + penalty).min(MAX_PRIO - 1);
        }
    }

    fn nr(&self, cpu: usize) -> usize {
        let rq = &self.rqs[cpu];
        rq.active.count + rq.expired.count + rq.current.is_some() as usize
    }

    /// The first task of `array` in load_balance's order: best priority first, each
    /// list from its head.
    fn first_movable(array: &Array) -> Option<TaskId> {
        array.lists.iter().find_map(|l| l.front().copied())
    }

    /// 2.5.2-pre6-era kernel/sched.c: load_balance(this_rq). With max_rq_len() the
    /// longest queue, nothing moves unless this queue is short of it by more than
    /// 1 + max/8 (the "~10% imbalance"); then the busiest other queue, if it holds
    /// more than this one + 1, gives up to that whole difference, expired tasks first,
    /// best priority first, never its running task; there is no cache-hot test. The
    /// pulled tasks join this CPU's active array, and the best priority pulled is
    /// returned: a pulled task better than the task running here preempts it
    /// (`if (next->prio < current->prio) current->need_resched = 1`, in the January
    /// copy and in the patch's 2.4.17 version of 4 February). (Followed from a January
    /// 2002 copy of the patch's load_balance; the re-search for a second-busiest queue
    /// when the busiest has nothing left to give is not modelled.)
    fn load_balance(&mut self, cpu: usize) -> (Work, Option<usize>) {
        let cpus = self.rqs.len() as u32;
        let work = Work { scanned: cpus, remote: cpus.saturating_sub(1), ..Work::default() };
        let max = (0..self.rqs.len()).map(|c| self.nr(c)).max().unwrap_or(0);
        let own = self.nr(cpu);
        let mut nr_tasks = max.saturating_sub(own);
        if nr_tasks <= 1 + max / 8 {
            return (work, None);
        }
        let Some(busiest) = (0..self.rqs.len()).filter(|&c| c != cpu).max_by_key(|&c| (self.nr(c), usize::MAX - c))
        else {
            return (work, None);
        };
        if self.nr(busiest) <= own + 1 {
            return (work, None);
        }
        let mut best: Option<usize> = None;
        while nr_tasks > 0 {
            let rq = &mut self.rqs[busiest];
            let (v, from_expired) = match Self::first_movable(&rq.expired) {
                Some(v) => (v, true),
                None => match Self::first_movable(&rq.active) {
                    Some(v) => (v, false),
                    None => break,
                },
            };
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
            best = Some(best.map_or(p, |b| b.min(p)));
            nr_tasks -= 1;
        }
        (work, best)
    }

    /// The task's slice and priority, for tests.
    pub fn slice(&self, id: TaskId) -> u64 {
        self.state[id].slice
    }
    pub fn prio(&self, id: TaskId) -> usize {
        self.prio[id]
    }
}

impl Scheduler for O12002 {
    fn kind(&self) -> PolicyKind {
        PolicyKind::O12002
    }

    /// 2.4.17's path ([`super::linux24::Linux24`]'s three lines): the founding text
    /// ran the patch on 2.4.17 as well as on 2.5.2-pre6, and -pre6's network and time
    /// code was not read.
    fn loopback_xmit(&self) -> LoopbackXmit {
        LoopbackXmit::Locked { shared_lines: 3 }
    }

    fn global_lock(&self) -> bool {
        false
    }

    fn tick_ns(&self) -> u64 {
        TICK_NS
    }

    /// Spread over a running loop's phase, as on a machine (see the module docs).
    fn tick_offset_ns(&self, cpu: usize, k: u64) -> u64 {
        tick_offset(cpu, k)
    }

    /// 2.5.2-pre9 kernel/sched.c: idle_tick balances every REBALANCE_TICK = HZ/100,
    /// every tick at HZ = 100 (as quoted in a January 2002 lkml review of the patch).
    fn idle_rebalance_ns(&self) -> Option<u64> {
        Some(TICK_NS)
    }

    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        slot(&mut self.home, id);
        slot(&mut self.prio, id);
        if self.state.len() <= id {
            self.state.resize(id + 1, TaskState { slice: 0, history: History::default() });
        }
        let now = tasks[id].woken_at.unwrap_or(tasks[id].stamp);
        match why {
            Why::New => {
                let prio = nice_to_prio(tasks[id].nice);
                self.state[id] = TaskState { slice: prio_to_timeslice(prio), history: History::new(jiffies(now)) };
                self.prio[id] = prio;
                self.home[id] = cpu;
                self.rqs[cpu].active.push_back(prio, id);
                cpu
            }
            Why::Fork { parent } => {
                // 2.5.2-pre10 kernel/fork.c: do_fork halves the parent's slice between
                // the two (split_slice); the child's history starts empty at this jiffy
                // and it takes the parent's priority. Where it is queued is not in the found
                // source: the founding text's "run fork()ed children before the
                // parent ... parent and child are running on the same CPU" decides,
                // as in `o1`: just before the parent on the parent's CPU.
                let slice = self.split_slice(parent);
                self.state[id] = TaskState { slice, history: History::new(jiffies(now)) };
                self.prio[id] = self.prio[parent];
                self.home[id] = cpu;
                self.rqs[cpu].active.insert(self.prio[id], id, 0);
                self.rqs[cpu].child_ahead = Some(id);
                cpu
            }
            // The policy ignores the sync flag (SyncWake::AsAnyWake), so WakeSync never
            // reaches here; were it to, it would be this.
            Why::Wake | Why::WakeSync => {
                // 2.5.2-pre10 kernel/sched.c: try_to_wake_up queues the task on its own
                // CPU's run queue (task_rq(p)); the `synchronous` flag is ignored.
                let target = tasks[id].cpu;
                self.activate(tasks, id, jiffies(now));
                self.home[id] = target;
                self.rqs[target].active.push_back(self.prio[id], id);
                target
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
        // deactivate_task → update_sleep_avg_deactivate.
        self.state[id].history.deactivate(jiffies(tasks[id].stamp));
    }

    /// 2.5.2-pre10 kernel/sched.c: schedule(). An empty queue balances first; an empty
    /// active array swaps with the expired one; the pick is the head of the best list.
    fn pick(&mut self, _tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, _now: u64) -> Pick {
        let mut work = Work { picks: 1, ..Work::default() };
        if let Some(p) = prev
            && self.rqs[cpu].current == Some(p)
        {
            let rq = &mut self.rqs[cpu];
            rq.current = None;
            let prio = self.prio[p];
            match rq.requeue {
                Requeue::Expired => rq.expired.push_back(prio, p),
                Requeue::Tail => rq.active.push_back(prio, p),
                Requeue::Head => {
                    let at = match rq.child_ahead.take() {
                        Some(c) if rq.active.lists[prio].front() == Some(&c) => 1,
                        _ => 0,
                    };
                    rq.active.insert(prio, p, at);
                }
            }
        }
        self.rqs[cpu].current = None;
        if self.nr(cpu) == 0 {
            let (w, _) = self.load_balance(cpu);
            work.scanned += w.scanned;
            work.remote += w.remote;
        }
        let rq = &mut self.rqs[cpu];
        if rq.active.count == 0 && rq.expired.count > 0 {
            std::mem::swap(&mut rq.active, &mut rq.expired);
        }
        let next = rq.active.first();
        if let Some(n) = next {
            rq.active.remove(n);
            rq.current = Some(n);
            rq.requeue = Requeue::Head;
            if rq.child_ahead == Some(n) {
                rq.child_ahead = None;
            }
        }
        Pick { next, work }
    }

    /// The announced patch's expire_task (2.5.2-pre6, as quoted in its review of
    /// 4 January 2002), whose work 2.5.2-pre10's scheduler_tick does. One tick off the
    /// slice; at 0 the task gets PRIO_TO_TIMESLICE of its current priority and goes to
    /// the expired array, whatever its priority (pre10 added the exception that keeps
    /// nice −20..−14 in the active array); otherwise the tick deactivates and activates
    /// it so the estimator sees its running (its priority moves, and it goes to its
    /// list's tail). Then load_balance, every tick, busy or not; a pulled task better
    /// than the running one reschedules, as an expired slice does.
    ///
    /// A tick can land between a task's sched_yield and the schedule() after it: the
    /// task is then already back in the active array (the kernel keeps the running
    /// task queued all along), and the tick's requeue moves it there and then.
    fn tick(&mut self, tasks: &[SimTask], cpu: usize, cur: TaskId, now: u64) -> bool {
        let st = &mut self.state[cur];
        st.slice = st.slice.saturating_sub(TICK_NS);
        let expired = st.slice == 0;
        let requeue = if expired {
            st.slice = prio_to_timeslice(self.prio[cur]);
            Requeue::Expired
        } else {
            let j = jiffies(now);
            self.state[cur].history.deactivate(j);
            let queued = self.rqs[cpu].current != Some(cur) && self.rqs[cpu].active.remove(cur);
            self.activate(tasks, cur, j);
            if queued {
                self.rqs[cpu].active.push_back(self.prio[cur], cur);
            }
            Requeue::Tail
        };
        let rq = &mut self.rqs[cpu];
        if rq.current == Some(cur) {
            rq.requeue = requeue;
        } else if requeue == Requeue::Expired && rq.active.remove(cur) {
            rq.expired.push_back(self.prio[cur], cur);
        }
        let (_, pulled) = self.load_balance(cpu);
        expired || pulled.is_some_and(|p| p < self.prio[cur])
    }

    /// 2.5.2-pre6-era kernel/sched.c: sys_sched_yield. The task's priority drops by
    /// one (not below MAX_PRIO − 1) and it goes to the tail of its list in the active
    /// array, slice kept: a loss "recovered once the current timeslice expires" (here,
    /// at its next activation or tick).
    fn on_yield(&mut self, _tasks: &[SimTask], cpu: usize, cur: TaskId) -> Work {
        if self.rqs[cpu].current == Some(cur) {
            self.rqs[cpu].current = None;
            self.prio[cur] = (self.prio[cur] + 1).min(MAX_PRIO - 1);
            self.rqs[cpu].active.push_back(self.prio[cur], cur);
        }
        Work { picks: 1, ..Work::default() }
    }

    /// 2.5.2-pre10 kernel/sched.c: try_to_wake_up reschedules the CPU when the woken
    /// task's priority is better than the running one's (p->prio < rq->curr->prio).
    fn wake_preempts(&self, _tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool {
        self.prio[woken] < self.prio[cur]
    }

    fn fork_child_first(&self) -> bool {
        true
    }

    /// Each clone takes half of what its main thread's slice has left (split_slice, as
    /// do_fork does), so past the first few a clone starts with one tick where a new
    /// task has PRIO_TO_TIMESLICE; its history, empty at creation, is kept as new.
    fn set_up_clones(&mut self, _tasks: &[SimTask], clones: &[(TaskId, TaskId)]) {
        for &(parent, child) in clones {
            self.state[child].slice = self.split_slice(parent);
        }
    }

    fn idle_balance(&mut self, _tasks: &[SimTask], cpu: usize, _now: u64) -> Work {
        self.load_balance(cpu).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_2_5_2_prio_to_timeslice_and_nice_to_prio() {
        // include/linux/sched.h (2.5.2): 90 ms at nice 0, 150 ms at the best user
        // priority, 20 ms at the worst; HZ = 100.
        assert_eq!(TICK_NS, 10_000_000);
        assert_eq!(prio_to_timeslice(nice_to_prio(0)), 90 * 1_000_000, "PRIO_TO_TIMESLICE(120)");
        assert_eq!(prio_to_timeslice(nice_to_prio(-20)), 150 * 1_000_000, "PRIO_TO_TIMESLICE(100)");
        assert_eq!(prio_to_timeslice(nice_to_prio(19)), 20 * 1_000_000, "PRIO_TO_TIMESLICE(139)");
        // A penalised nice 0 task gets a shorter slice: prio 133 → 40 ms.
        assert_eq!(prio_to_timeslice(133), 40 * 1_000_000);
        assert_eq!(MAX_PENALTY, 21, "2.5.2-pre6 activate_task: MAX_BOOST (MAX_PRIO/3) at MAX_PRIO 64");
    }

    #[test]
    fn linux_2_5_2_pre10_update_sleep_avg_activate_and_get_sleep_avg() {
        // A task that slept all of four seconds has no load: no penalty.
        let mut h = History::new(0);
        h.deactivate(0);
        h.activate(500);
        assert_eq!(h.sleep_avg(500), HZ, "update_sleep_avg_activate: a 5 s sleep fills every bucket");
        assert_eq!(h.penalty(500), 0);
        // A task that never slept (runnable all along, running or queued) gets the
        // whole MAX_PENALTY: load counts time waiting in the queue.
        let h = History::new(0);
        assert_eq!(h.penalty(350), MAX_PENALTY, "get_sleep_avg of an empty history");
        // Asleep from tick 150 to 250: 50 ticks in each of two seconds, over a window
        // of three seconds and 50 ticks.
        let mut h = History::new(0);
        h.deactivate(150);
        h.activate(250);
        assert_eq!(h.hist, [0, 50, 50, 0]);
        assert_eq!(h.sleep_avg(250), 100 * HZ / (3 * HZ + 50), "get_sleep_avg");
        assert_eq!(h.penalty(250), MAX_PENALTY * (100 - 28) / 100);
        // Asleep across two second boundaries (ticks 200 to 400): as the source has
        // it, second 2 gets its ticks, the loop fills the current second's bucket,
        // which is then zeroed, and second 3, slept whole, keeps its old value (0).
        let mut h = History::new(0);
        h.deactivate(200);
        h.activate(400);
        assert_eq!(h.hist, [0, 0, HZ, 0], "update_sleep_avg_activate with delta = 2");
    }

    #[test]
    fn linux_2_5_2_pre10_update_sleep_avg_deactivate_zeroes_the_seconds_run() {
        // Asleep for second 0, then runnable through seconds 1..3: the seconds it ran
        // are zeroed when it next stops, so its sleep share falls.
        let mut h = History::new(0);
        h.deactivate(0);
        h.activate(99);
        assert_eq!(h.sleep_avg(99), 99 * HZ / (3 * HZ + 99));
        h.deactivate(350);
        assert_eq!(h.hist.iter().sum::<u64>(), 99, "the slept ticks stay within the window");
        h.activate(350);
        h.deactivate(800);
        assert_eq!(h.hist, [0; SLEEP_HIST_SIZE], "more than SLEEP_HIST_SIZE seconds run: no sleep left");
    }

    /// `n` new nice-0 tasks, all added on CPU 0 of a `cpus`-CPU policy.
    fn new_tasks_on_cpu_0(n: usize, cpus: usize) -> (Vec<SimTask>, O12002) {
        let tasks = crate::types::test_tasks(n, 0);
        let mut o = O12002::new(cpus);
        for id in 0..n {
            o.add(&tasks, id, 0, Why::New);
        }
        (tasks, o)
    }

    #[test]
    fn linux_2_5_2_pre10_do_fork_leaves_a_set_ups_later_clones_one_tick_each() {
        // kernel/fork.c do_fork: `p->time_slice = (current->time_slice + 1) >> 1;
        // current->time_slice >>= 1;`, a parent left with none keeping one tick. Main 0
        // (90 ms at nice 0: 9 ticks) clones 1..=6, each asleep at once.
        let (tasks, mut o) = new_tasks_on_cpu_0(7, 1);
        assert_eq!(o.slice(1), 9 * TICK_NS, "a new task: PRIO_TO_TIMESLICE(120)");
        let clones: Vec<(TaskId, TaskId)> = (1..7).map(|c| (0, c)).collect();
        o.set_up_clones(&tasks, &clones);
        let ticks: Vec<u64> = (1..7).map(|id| o.slice(id) / TICK_NS).collect();
        assert_eq!(ticks, [5, 2, 1, 1, 1, 1]);
        assert_eq!(o.slice(0), TICK_NS);
    }

    #[test]
    fn linux_2_5_2_pre6_activate_task_puts_a_cpu_hog_at_max_prio_minus_1_and_skips_the_same_jiffy() {
        let mut tasks = crate::types::test_tasks(1, 0);
        let mut o = O12002::new(1);
        o.add(&tasks, 0, 0, Why::New);
        assert_eq!(o.prio(0), 120, "a new task starts at NICE_TO_PRIO(0)");
        // Runnable for three seconds (running or queued), then woken again: the whole
        // penalty, 21 levels, carries it past MAX_PRIO − 1 ("where all the CPU hogs
        // live (this is p->prio == 63 right now)", at the announced patch's MAX_PRIO 64).
        tasks[0].stamp = 3 * 1_000_000_000;
        o.remove(&tasks, 0);
        tasks[0].woken_at = Some(tasks[0].stamp);
        o.add(&tasks, 0, 0, Why::Wake);
        assert_eq!(o.prio(0), MAX_PRIO - 1, "activate_task: NICE_TO_PRIO + MAX_BOOST, at most MAX_PRIO − 1");
        // Woken in the jiffy of its last activation: the estimator is not consulted.
        o.state[0].history.hist = [HZ; SLEEP_HIST_SIZE];
        o.remove(&tasks, 0);
        o.add(&tasks, 0, 0, Why::Wake);
        assert_eq!(o.prio(0), MAX_PRIO - 1, "activate_task: run_timestamp == jiffies skips");
        // At nice 19 the penalty cannot pass MAX_PRIO − 1.
        let nice19 = crate::types::test_tasks(1, 19);
        let mut o = O12002::new(1);
        o.add(&nice19, 0, 0, Why::New);
        o.activate(&nice19, 0, 400);
        assert_eq!(o.prio(0), MAX_PRIO - 1);
    }

    #[test]
    fn linux_2_5_2_pre6_activate_task_keeps_the_priority_when_the_penalty_is_zero() {
        // `if (penalty)`: a task that slept all of the estimator's window keeps the
        // priority it had (here a yield's loss), where pre10 would reset it to 120.
        let mut tasks = crate::types::test_tasks(1, 0);
        let mut o = O12002::new(1);
        o.add(&tasks, 0, 0, Why::New);
        o.prio[0] = 127;
        tasks[0].stamp = 0;
        o.remove(&tasks, 0);
        tasks[0].woken_at = Some(5 * 1_000_000_000);
        o.add(&tasks, 0, 0, Why::Wake);
        assert_eq!(o.state[0].history.penalty(500), 0, "a five-second sleep leaves no load");
        assert_eq!(o.prio(0), 127, "activate_task: if (penalty) guards the assignment");
        // With load, the priority is NICE_TO_PRIO + the penalty again.
        tasks[0].stamp = 8 * 1_000_000_000;
        o.remove(&tasks, 0);
        o.state[0].history.hist = [0; SLEEP_HIST_SIZE];
        tasks[0].woken_at = Some(tasks[0].stamp + TICK_NS);
        o.add(&tasks, 0, 0, Why::Wake);
        assert!(o.prio(0) > 120 && o.prio(0) <= 120 + MAX_PENALTY, "a loaded task is penalised from NICE_TO_PRIO");
    }

    #[test]
    fn linux_2_5_2_pre6_expire_task_sends_every_expired_task_to_the_expired_array() {
        let tasks = crate::types::test_tasks(2, 0);
        let mut o = O12002::new(1);
        o.add(&tasks, 0, 0, Why::New);
        o.add(&tasks, 1, 0, Why::New);
        let first = o.pick(&tasks, 0, None, 0).next.unwrap();
        let mut now = 0;
        while !o.tick(&tasks, 0, first, now) {
            now += TICK_NS;
        }
        assert_eq!(o.rqs[0].requeue, Requeue::Expired, "expire_task: a used-up slice goes to the expired array");
        assert_eq!(o.slice(first), prio_to_timeslice(o.prio(first)), "scheduler_tick: PRIO_TO_TIMESLICE(p->prio)");
        let next = o.pick(&tasks, 0, Some(first), now).next.unwrap();
        assert_ne!(next, first);
        assert_eq!(o.rqs[0].expired.count, 1);
        // Near the top (nice −20) too: the announced patch has no exception for it
        // (2.5.2-pre10 kept prio <= 106 in the active array).
        let top = crate::types::test_tasks(1, -20);
        let mut o = O12002::new(1);
        o.add(&top, 0, 0, Why::New);
        // A history of sleep (no penalty): the ticks keep its priority at 100.
        o.state[0].history.hist = [HZ; SLEEP_HIST_SIZE];
        o.pick(&top, 0, None, 0);
        let mut now = 0;
        while !o.tick(&top, 0, 0, now) {
            now += TICK_NS;
        }
        assert_eq!((o.prio(0), o.rqs[0].requeue), (100, Requeue::Expired), "expire_task: no exception near the top");
    }

    #[test]
    fn linux_2_5_2_sys_sched_yield_lowers_prio_by_one_in_the_active_array() {
        let tasks = crate::types::test_tasks(2, 0);
        let mut o = O12002::new(1);
        o.add(&tasks, 0, 0, Why::New);
        o.add(&tasks, 1, 0, Why::New);
        let a = o.pick(&tasks, 0, None, 0).next.unwrap();
        o.on_yield(&tasks, 0, a);
        assert_eq!(o.prio(a), 121, "sys_sched_yield: prio + 1");
        assert_eq!(o.rqs[0].active.count, 2, "sys_sched_yield: stays in the active array");
        let b = o.pick(&tasks, 0, None, 0).next.unwrap();
        assert_ne!(a, b);
        for _ in 0..30 {
            o.on_yield(&tasks, 0, b);
            o.pick(&tasks, 0, None, 0);
            o.rqs[0].current = Some(b);
            o.rqs[0].active.remove(b);
        }
        assert_eq!(o.prio(b), MAX_PRIO - 1, "sys_sched_yield: not below MAX_PRIO - 1");
    }

    #[test]
    fn linux_2_5_2_load_balance_pulls_the_whole_imbalance_expired_first() {
        // Five tasks on CPU 0, none on CPU 1: max 5, this 0, 5 > 1 + 5/8, so CPU 1
        // pulls up to five, never CPU 0's running task: it takes all four queued.
        let (tasks, mut o) = new_tasks_on_cpu_0(5, 2);
        let running = o.pick(&tasks, 0, None, 0).next.unwrap();
        o.rqs[0].active.remove(4);
        o.rqs[0].expired.push_back(120, 4);
        let _ = o.load_balance(1);
        assert_eq!((o.nr(0), o.nr(1)), (1, 4), "load_balance: nr_tasks = max − this");
        assert_eq!(o.rqs[0].current, Some(running));
        assert_eq!(o.home[4], 1, "the expired task moved too");
        // Balanced queues (2 and 1): the imbalance of 1 is not > 1 + 2/8.
        let mut o = O12002::new(2);
        for id in 0..3 {
            o.add(&tasks, id, (id == 2) as usize, Why::New);
        }
        let _ = o.load_balance(1);
        assert_eq!((o.nr(0), o.nr(1)), (2, 1), "load_balance: no move under the ~10% imbalance");
    }

    #[test]
    fn linux_2_4_17_o1_load_balance_lets_a_pulled_better_task_preempt_the_running_one() {
        // CPU 1 runs a penalised task (130); CPU 0 holds five at 120. The tick on CPU 1
        // pulls from CPU 0, and a pulled task better than its running one sets
        // need_resched; the same pull beside a better running task does not.
        let tasks = crate::types::test_tasks(6, 0);
        for (running_prio, resched) in [(130, true), (110, false)] {
            let mut o = O12002::new(2);
            for id in 0..5 {
                o.add(&tasks, id, 0, Why::New);
            }
            o.pick(&tasks, 0, None, 0);
            o.add(&tasks, 5, 1, Why::New);
            assert_eq!(o.pick(&tasks, 1, None, 0).next, Some(5));
            o.prio[5] = running_prio;
            o.state[5].slice = 10 * TICK_NS;
            assert_eq!(o.tick(&tasks, 1, 5, 0), resched, "running at {running_prio}");
            assert!(o.nr(1) > 1, "the tick's load_balance pulled");
        }
    }

    #[test]
    fn linux_2_5_2_pre10_try_to_wake_up_stays_on_the_task_cpu_and_preempts_a_worse_prio() {
        let mut tasks = crate::types::test_tasks(2, 0);
        let mut o = O12002::new(2);
        o.add(&tasks, 0, 0, Why::New);
        o.add(&tasks, 1, 0, Why::New);
        tasks[1].cpu = 1;
        tasks[1].stamp = 0;
        o.remove(&tasks, 1);
        tasks[1].woken_at = Some(5 * 1_000_000_000);
        assert_eq!(o.add(&tasks, 1, 0, Why::Wake), 1, "try_to_wake_up: task_rq(p), not the waker's");
        o.prio[0] = 130;
        o.prio[1] = 125;
        assert!(o.wake_preempts(&tasks, 1, 0));
        assert!(!o.wake_preempts(&tasks, 0, 1));
        o.prio[1] = 130;
        assert!(!o.wake_preempts(&tasks, 1, 0), "equal priorities do not preempt: batch at nice 19");
    }
}

#[cfg(test)]
mod yield_and_tick {
    use super::*;

    #[test]
    fn linux_2_5_2_pre10_scheduler_tick_expires_a_task_that_just_yielded() {
        // The tick lands after sched_yield requeued the task, before schedule(): its
        // expiry still moves it to the expired array, so the other task gets its turn
        // (the kernel keeps the running task queued, and expiry dequeues it).
        let tasks = crate::types::test_tasks(2, 0);
        let mut o = O12002::new(1);
        o.add(&tasks, 0, 0, Why::New);
        o.add(&tasks, 1, 0, Why::New);
        let a = o.pick(&tasks, 0, None, 0).next.unwrap();
        o.state[a].slice = TICK_NS;
        o.on_yield(&tasks, 0, a);
        assert!(o.tick(&tasks, 0, a, TICK_NS), "scheduler_tick: the slice ran out");
        assert_eq!((o.rqs[0].active.count, o.rqs[0].expired.count), (1, 1));
        assert_ne!(o.pick(&tasks, 0, None, TICK_NS).next, Some(a));
    }
}

#[cfg(test)]
mod two_yielders {
    use super::*;
    use crate::engine::Engine;
    use crate::workload::Yielder;

    /// Two sched_yield loops on one CPU for a minute (6,000 ticks) under the 2002
    /// profile with its switch cost at `switch_ns`: each loop's time in the kernel's
    /// yield path, ns.
    fn shares(switch_ns: f64) -> [u64; 2] {
        let mut cost = crate::cost::smp2002_assumed();
        cost.switch.ns = switch_ns;
        let mut e = Engine::new(PolicyKind::O12002.build(1), cost, 1, 1);
        e.spawn(Box::new(Yielder::new(0)), None, 0, 0);
        e.spawn(Box::new(Yielder::new(0)), None, 0, 0);
        let o = e.run(60_000_000_000, |_| false);
        [o.task_run_ns[0], o.task_run_ns[1]]
    }

    #[test]
    fn linux_2_5_2_pre6_scheduler_tick_two_yielders_on_one_cpu_share_it_within_10_percent() {
        // Both loops sit at MAX_PRIO − 1 (the announced patch's penalty of 21 from 120),
        // and scheduler_tick requeues the ticked one at the tail of that list; its slice
        // there is two ticks. When one's slice ends it goes to the expired array and the
        // other runs alone to the end of its own, so which loop a tick finds moves the
        // split by whole ticks, cycle by cycle: over ten seconds one loop's share ranged
        // from 46% to 51%, over a minute from 49% to 52%. With the point a tick lands on
        // spread over the loop, each yielder is ticked about as often, so each gets half
        // the CPU whatever the loop's period (with ticks on the grid, one loop's share
        // ranges from 11% to 89% over switch costs from 850 to 960 ns).
        for switch_ns in [850.0, 900.0, 950.0] {
            let [a, b] = shares(switch_ns);
            let (lo, hi) = (a.min(b) as f64, a.max(b) as f64);
            assert!(lo >= 0.9 * hi, "switch {switch_ns} ns: {a} ns against {b} ns");
        }
    }

    #[test]
    fn tick_offsets_stay_under_the_spread_and_cover_it() {
        let offsets: Vec<u64> = (1..=100).map(|k| tick_offset(0, k)).collect();
        assert!(offsets.iter().all(|&o| o < TICK_SPREAD_NS));
        for quarter in 0..4 {
            let (lo, hi) = (quarter * TICK_SPREAD_NS / 4, (quarter + 1) * TICK_SPREAD_NS / 4);
            let n = offsets.iter().filter(|&&o| (lo..hi).contains(&o)).count();
            assert!((20..=30).contains(&n), "quarter {quarter}: {n} of 100");
        }
        assert_ne!(tick_offset(0, 7), tick_offset(1, 7), "two CPUs' ticks are not in step");
    }
}
