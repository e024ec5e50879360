//! The O(1) scheduler with 2.6.0's constants (Molnar, 2002).
//!
//! - A run queue per CPU, each with its own lock, holding two priority arrays
//!   (active, expired) of 140 lists and a bitmap: a pick is a find-first-bit and a
//!   list head, whatever the number of tasks.
//! - Timeslice by static priority: MIN_TIMESLICE 10 ms + (MAX_TIMESLICE 200 ms -
//!   MIN) × (139 - static_prio) / 39 (about 100 ms at nice 0, 10 ms at nice 19).
//! - sleep_avg (up to MAX_SLEEP_AVG, 1 s) grows while asleep and shrinks while running;
//!   the bonus is sleep_avg × 10 / MAX_SLEEP_AVG - 5 priority levels, ±5.
//! - A task whose slice runs out goes to the expired array, unless it is interactive
//!   (its bonus at least 3 + nice/4) and the expired array is not starving
//!   (EXPIRED_STARVING: waiting more than 1 s per runnable task), when it is put back
//!   into the active array. When the active array empties, the arrays swap.
//! - sched_yield moves the task to the expired array (at its priority).
//! - A forked child runs first. A wake-up preempts a task of lower priority.
//! - Balancing: an idle CPU pulls at once and at every tick; a busy CPU every 200 ms
//!   when the busiest queue holds at least 25% more tasks than its own.

use std::collections::VecDeque;

use super::{Pick, Policy, PolicyKind, Why, Work, slot};
use crate::sim::engine::{SimTask, TaskId};

const MAX_PRIO: usize = 140;
const MIN_TIMESLICE: u64 = 10_000_000;
const MAX_TIMESLICE: u64 = 200_000_000;
const MAX_SLEEP_AVG: u64 = 1_000_000_000;
const STARVATION_LIMIT: u64 = 1_000_000_000;
const BUSY_REBALANCE: u64 = 200_000_000;

pub fn static_prio(nice: i32) -> usize {
    (120 + nice.clamp(-20, 19)) as usize
}

pub fn timeslice(nice: i32) -> u64 {
    MIN_TIMESLICE + (MAX_TIMESLICE - MIN_TIMESLICE) * (MAX_PRIO - 1 - static_prio(nice)) as u64 / 39
}

#[derive(Clone)]
struct Array {
    lists: Vec<VecDeque<TaskId>>,
    bitmap: [u64; 3],
    count: usize,
}

impl Array {
    fn new() -> Self {
        Self { lists: vec![VecDeque::new(); MAX_PRIO], bitmap: [0; 3], count: 0 }
    }

    fn push(&mut self, prio: usize, id: TaskId) {
        self.lists[prio].push_back(id);
        self.bitmap[prio / 64] |= 1 << (prio % 64);
        self.count += 1;
    }

    fn remove(&mut self, id: TaskId) -> bool {
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
    fn first(&self) -> Option<TaskId> {
        let word = self.bitmap.iter().position(|&w| w != 0)?;
        let prio = word * 64 + self.bitmap[word].trailing_zeros() as usize;
        self.lists[prio].front().copied()
    }
}

#[derive(Clone, Default)]
struct TaskState {
    slice_left: u64,
    sleep_avg: u64,
    last_ran: u64,
    slept_at: Option<u64>,
}

struct Rq {
    active: Array,
    expired: Array,
    current: Option<TaskId>,
    expired_since: Option<u64>,
    last_balance: u64,
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
                expired_since: None,
                last_balance: 0,
            })
            .collect();
        Self { rqs, state: Vec::new(), prio: Vec::new(), home: Vec::new() }
    }

    fn bonus(&self, id: TaskId) -> i64 {
        (self.state[id].sleep_avg * 10 / MAX_SLEEP_AVG) as i64 - 5
    }

    fn effective_prio(&self, tasks: &[SimTask], id: TaskId) -> usize {
        (static_prio(tasks[id].nice) as i64 - self.bonus(id)).clamp(100, 139) as usize
    }

    fn interactive(&self, tasks: &[SimTask], id: TaskId) -> bool {
        self.bonus(id) >= 3 + tasks[id].nice as i64 / 4
    }

    fn nr(&self, cpu: usize) -> usize {
        let rq = &self.rqs[cpu];
        rq.active.count + rq.expired.count + rq.current.is_some() as usize
    }

    /// Pulls one queued task from the busiest CPU to `cpu` if it holds `min_gap` more.
    fn pull(&mut self, tasks: &[SimTask], cpu: usize, min_gap: usize) -> Work {
        let work = Work { scanned: self.rqs.len() as u32, ..Work::default() };
        let Some(busiest) = (0..self.rqs.len()).filter(|&c| c != cpu).max_by_key(|&c| (self.nr(c), c)) else {
            return work;
        };
        if self.nr(busiest) < self.nr(cpu) + min_gap {
            return work;
        }
        let rq = &mut self.rqs[busiest];
        let from_expired = rq.expired.count > 0;
        let victim = if from_expired { rq.expired.first() } else { rq.active.first() };
        if let Some(v) = victim {
            if from_expired {
                rq.expired.remove(v);
            } else {
                rq.active.remove(v);
            }
            let p = self.effective_prio(tasks, v);
            self.rqs[cpu].active.push(p, v);
            self.home[v] = cpu;
        }
        work
    }
}

impl Policy for O1 {
    fn kind(&self) -> PolicyKind {
        PolicyKind::O1
    }

    fn global_lock(&self) -> bool {
        false
    }

    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize {
        let st = slot(&mut self.state, id);
        let target = match why {
            Why::New => {
                st.slice_left = timeslice(tasks[id].nice);
                cpu
            }
            Why::Wake => tasks[id].cpu,
        };
        slot(&mut self.prio, id);
        *slot(&mut self.home, id) = target;
        let p = self.effective_prio(tasks, id);
        self.prio[id] = p;
        if why == Why::New {
            // The child runs first: ahead of its parent's priority level.
            self.rqs[target].active.lists[p].push_front(id);
            self.rqs[target].active.bitmap[p / 64] |= 1 << (p % 64);
            self.rqs[target].active.count += 1;
        } else {
            self.rqs[target].active.push(p, id);
        }
        target
    }

    fn remove(&mut self, _tasks: &[SimTask], id: TaskId) {
        let cpu = self.home.get(id).copied().unwrap_or(0);
        let rq = &mut self.rqs[cpu];
        if rq.current == Some(id) {
            rq.current = None;
        } else if !rq.active.remove(id) {
            rq.expired.remove(id);
        }
        self.state[id].slept_at = Some(self.state[id].last_ran);
    }

    fn pick(&mut self, tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, now: u64) -> Pick {
        let mut work = Work { picks: 1, ..Work::default() };
        if let Some(p) = prev
            && self.rqs[cpu].current == Some(p)
        {
            // Still runnable: back into its array (expired if its slice ran out or it
            // yielded, which `tick` and `on_yield` arranged by emptying the slice).
            self.rqs[cpu].current = None;
            let pr = self.effective_prio(tasks, p);
            if self.state[p].slice_left == 0 {
                self.state[p].slice_left = timeslice(tasks[p].nice);
                let starving =
                    self.rqs[cpu].expired_since.is_some_and(|s| now - s > STARVATION_LIMIT * self.nr(cpu) as u64);
                if self.interactive(tasks, p) && !starving {
                    self.rqs[cpu].active.push(pr, p);
                } else {
                    self.rqs[cpu].expired.push(pr, p);
                    self.rqs[cpu].expired_since.get_or_insert(now);
                }
            } else {
                self.rqs[cpu].active.push(pr, p);
            }
        }
        self.rqs[cpu].current = None;
        if self.rqs[cpu].active.count == 0 && self.rqs[cpu].expired.count == 0 {
            let w = self.pull(tasks, cpu, 1);
            work.scanned += w.scanned;
        }
        let rq = &mut self.rqs[cpu];
        if rq.active.count == 0 && rq.expired.count > 0 {
            std::mem::swap(&mut rq.active, &mut rq.expired);
            rq.expired_since = None;
        }
        let next = rq.active.first();
        if let Some(n) = next {
            rq.active.remove(n);
            rq.current = Some(n);
            let st = &mut self.state[n];
            if let Some(s) = st.slept_at.take() {
                st.sleep_avg = (st.sleep_avg + now.saturating_sub(s)).min(MAX_SLEEP_AVG);
            }
            st.last_ran = now;
        }
        Pick { next, work }
    }

    fn tick(&mut self, tasks: &[SimTask], cpu: usize, cur: TaskId, now: u64) -> bool {
        let tick = crate::sim::engine::TICK_NS;
        let st = &mut self.state[cur];
        st.sleep_avg = st.sleep_avg.saturating_sub(tick);
        st.last_ran = now;
        st.slice_left = st.slice_left.saturating_sub(tick);
        let expired = st.slice_left == 0;
        if now - self.rqs[cpu].last_balance >= BUSY_REBALANCE {
            self.rqs[cpu].last_balance = now;
            let gap = (self.nr(cpu) / 4).max(1);
            self.pull(tasks, cpu, gap);
        }
        expired
    }

    fn on_yield(&mut self, tasks: &[SimTask], cpu: usize, cur: TaskId) -> Work {
        // To the expired array: picked from there only when the active one empties.
        if self.rqs[cpu].current == Some(cur) {
            self.rqs[cpu].current = None;
            let p = self.effective_prio(tasks, cur);
            self.rqs[cpu].expired.push(p, cur);
            self.rqs[cpu].expired_since.get_or_insert(self.state[cur].last_ran);
        }
        Work { picks: 1, ..Work::default() }
    }

    fn wake_preempts(&self, tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool {
        self.effective_prio(tasks, woken) < self.effective_prio(tasks, cur)
    }

    fn fork_child_first(&self) -> bool {
        true
    }

    fn idle_balance(&mut self, tasks: &[SimTask], cpu: usize, _now: u64) -> Work {
        self.pull(tasks, cpu, 1)
    }
}
