//! A benchmark's trace pass, read: what the watched tasks' switches were.
//!
//! Definitions (every count is over the traced window):
//! - a *hand-off* is a switch-in of a watched task;
//! - it is *direct* when the task switched out was another of the benchmark's own
//!   tasks (watched, or a child one of them forked), an *idle pass* when it was the
//!   idle task (the wakee's CPU was idle: the usual way across CPUs);
//! - it was *intruded* when a third task (neither the benchmark's nor idle) ran on the
//!   wakee's CPU between its wake-up and its run, or was the task it replaced;
//! - *wake→run* is from sched_waking of a watched task to its next switch-in;
//! - a switch-out *left runnable* (preempted or yielding) when its state is running,
//!   otherwise the task slept;
//! - after sched_wakeup_new of a child forked by a watched task, the child ran
//!   *first* if the parent was switched out still runnable in the child's favour on
//!   the parent's CPU, *elsewhere* if the child first ran on another CPU, and
//!   *after* the parent otherwise (the parent blocked, waiting, before the child ran).

use std::collections::{HashMap, HashSet};

use super::event::{Comm, Event, EventKind};
use oscost_figure::model::{Flag, FlagCode, Intruder, LatencySummary, SpawnOrder, TraceSummary};

/// How many intruding task names a row keeps.
const TOP_INTRUDERS: usize = 3;

/// What the trace pass ran, besides its events.
#[derive(Debug, Clone, Copy, Default)]
pub struct PassFacts {
    pub ops: u64,
    pub traced_ns_per_op: f64,
    pub proc_switches: Option<u64>,
    pub lost: u64,
    pub cpus: usize,
    /// The window of the /proc reads around the loop (`TraceSummary::switches_agree`).
    pub outer: (u64, u64),
    /// Tasks the watched ones create during the pass are watched too (a workload that
    /// starts its own threads); /proc then has no count to compare.
    pub follow_children: bool,
}

/// Latency percentiles of `v` (sorted here).
pub fn latency(v: &mut [u64]) -> Option<LatencySummary> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let at = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)] as f64;
    Some(LatencySummary { n: v.len() as u64, p50: at(0.5), p99: at(0.99), max: *v.last().unwrap() as f64 })
}

struct PendingChild {
    parent: i32,
    parent_cpu: u32,
}

/// One switch, as traced or as inferred (see `summarize`).
struct Switch {
    time: u64,
    cpu: u32,
    prev_pid: i32,
    /// None for an inferred switch: how the previous task left is unknown.
    prev_state: Option<i64>,
    next_pid: i32,
}

/// The reading of one pass's events.
struct Reader {
    watched: HashSet<i32>,
    follow_children: bool,
    children: HashSet<i32>,
    pending_child: HashMap<i32, PendingChild>,
    spawn: SpawnOrder,
    woken_at: HashMap<i32, u64>,
    /// Per CPU: the third tasks switched in, in time order, for the intrusion search.
    third_ins: HashMap<u32, Vec<(u64, i32)>>,
    comms: HashMap<i32, Comm>,
    latencies: Vec<u64>,
    intruders: HashMap<i32, u64>,
    s: TraceSummary,
}

impl Reader {
    fn ours(&self, p: i32) -> bool {
        self.watched.contains(&p) || self.children.contains(&p)
    }

    fn switch(&mut self, w: Switch) {
        if let Some(state) = w.prev_state
            && self.watched.contains(&w.prev_pid)
        {
            self.s.switch_outs += 1;
            if Event::left_runnable(state) {
                self.s.preempted += 1;
            }
        }
        let runnable_out = w.prev_state.is_some_and(Event::left_runnable);
        if let Some(c) = self.pending_child.remove(&w.next_pid) {
            if w.cpu != c.parent_cpu {
                self.spawn.child_elsewhere += 1;
            } else if w.prev_pid == c.parent && runnable_out {
                self.spawn.child_first += 1;
            } else {
                self.spawn.parent_first += 1;
            }
        }
        if w.next_pid != 0 && !self.ours(w.next_pid) {
            self.third_ins.entry(w.cpu).or_default().push((w.time, w.next_pid));
        }
        if !self.watched.contains(&w.next_pid) {
            return;
        }
        self.s.handoffs += 1;
        let woke = self.woken_at.remove(&w.next_pid);
        if w.prev_state.is_none() {
            self.s.untraced_switch_ins += 1;
        } else if let Some(t) = woke {
            // An inferred switch-in's time is the task's first traced act, not its
            // start: it is left out of the latencies.
            self.latencies.push(w.time - t);
        }
        let mut intruder = None;
        if w.prev_pid == 0 {
            self.s.idle_passes += 1;
        } else if self.ours(w.prev_pid) && w.prev_pid != w.next_pid {
            self.s.direct += 1;
        } else if !self.ours(w.prev_pid) {
            intruder = Some(w.prev_pid);
        }
        if intruder.is_none()
            && let (Some(t), Some(ins)) = (woke, self.third_ins.get(&w.cpu))
        {
            let first = ins.partition_point(|(at, _)| *at <= t);
            intruder = ins[first..].iter().find(|(at, _)| *at <= w.time).map(|(_, p)| *p);
        }
        if let Some(p) = intruder {
            self.s.intrusions += 1;
            *self.intruders.entry(p).or_default() += 1;
        }
    }

    fn event(&mut self, e: &Event) {
        match e.kind {
            EventKind::WakeupNew { pid, .. } if self.follow_children && self.watched.contains(&(e.tid as i32)) => {
                self.watched.insert(pid);
            }
            EventKind::WakeupNew { pid, .. } if self.watched.contains(&(e.tid as i32)) => {
                self.children.insert(pid);
                self.spawn.children += 1;
                self.pending_child.insert(pid, PendingChild { parent: e.tid as i32, parent_cpu: e.cpu });
            }
            EventKind::WakeupNew { .. } => {}
            EventKind::Waking { pid, .. } => {
                if self.watched.contains(&pid) {
                    self.woken_at.entry(pid).or_insert(e.time);
                }
            }
            EventKind::Migrate { pid, .. } => {
                if self.watched.contains(&pid) {
                    self.s.migrations += 1;
                } else if self.children.contains(&pid) {
                    self.spawn.child_migrations += 1;
                }
            }
            EventKind::Switch { prev_pid, prev_comm, prev_state, next_pid, next_comm } => {
                self.comms.insert(prev_pid, prev_comm);
                self.comms.insert(next_pid, next_comm);
                self.switch(Switch { time: e.time, cpu: e.cpu, prev_pid, prev_state: Some(prev_state), next_pid });
            }
        }
    }
}

/// The task an event ran in the context of: a switch's previous task, else the
/// sampled task.
fn context(e: &Event) -> i32 {
    match e.kind {
        EventKind::Switch { prev_pid, .. } => prev_pid,
        _ => e.tid as i32,
    }
}

/// Reads time-ordered `events` inside `[from, to]` for the tasks `watched`.
///
/// Some switches are never traced: on a CPU whose idle loop polls, the kernel here
/// switches from idle to a woken task without a sched_switch event (ftrace shows the
/// same). Each CPU's current task is followed from its switches, and an event in the
/// context of another task proves a switch that was not traced: it is inferred at
/// that event (its time an upper bound), counted as `untraced_switch_ins`, and left
/// out of the wake→run latencies.
pub fn summarize(events: &[Event], watched: &[i32], (from, to): (u64, u64), facts: PassFacts) -> TraceSummary {
    let mut r = Reader {
        watched: watched.iter().copied().collect(),
        follow_children: facts.follow_children,
        children: HashSet::new(),
        pending_child: HashMap::new(),
        spawn: SpawnOrder::default(),
        woken_at: HashMap::new(),
        third_ins: HashMap::new(),
        comms: HashMap::new(),
        latencies: Vec::new(),
        intruders: HashMap::new(),
        s: TraceSummary {
            ops: facts.ops,
            traced_ns_per_op: facts.traced_ns_per_op,
            handoffs: 0,
            direct: 0,
            idle_passes: 0,
            intrusions: 0,
            intruders: Vec::new(),
            wake_to_run: None,
            switch_outs: 0,
            preempted: 0,
            migrations: 0,
            proc_switches: facts.proc_switches,
            switch_outs_outer: 0,
            lost: facts.lost,
            cpus: facts.cpus,
            spawn: None,
            untraced_switch_ins: 0,
        },
    };
    let mut current: HashMap<u32, i32> = HashMap::new();
    for e in events.iter().filter(|e| e.time >= from && e.time <= to) {
        let ctx = context(e);
        // A sample with no task (-1) proves nothing about who runs.
        if ctx < 0 {
            r.event(e);
            continue;
        }
        if let Some(&cur) = current.get(&e.cpu)
            && cur != ctx
        {
            r.switch(Switch { time: e.time, cpu: e.cpu, prev_pid: cur, prev_state: None, next_pid: ctx });
        }
        r.event(e);
        current.insert(e.cpu, if let EventKind::Switch { next_pid, .. } = e.kind { next_pid } else { ctx });
    }
    let mut s = r.s;
    s.switch_outs_outer = events
        .iter()
        .filter(|e| e.time >= facts.outer.0 && e.time <= facts.outer.1)
        .filter(|e| matches!(e.kind, EventKind::Switch { prev_pid, .. } if r.watched.contains(&prev_pid)))
        .count() as u64;
    s.wake_to_run = latency(&mut r.latencies);
    let name = |p: i32| r.comms.get(&p).map(|c| c.as_str().into_owned()).unwrap_or_else(|| format!("pid {p}"));
    // By name, not by PID: forty short-lived `exe` children are one intruder to a
    // reader, not forty entries of one name.
    let mut by_name: HashMap<String, u64> = HashMap::new();
    for (p, count) in r.intruders {
        *by_name.entry(name(p)).or_default() += count;
    }
    let mut top: Vec<Intruder> = by_name.into_iter().map(|(comm, count)| Intruder { comm, count }).collect();
    top.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.comm.cmp(&b.comm)));
    top.truncate(TOP_INTRUDERS);
    s.intruders = top;
    if r.spawn.children > 0 {
        s.spawn = Some(r.spawn);
    }
    s
}

/// The lower end of the 95% Wilson score interval of k successes in n.
pub fn wilson_low(k: u64, n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let (z, n, p) = (1.96f64, n as f64, k as f64 / n as f64);
    let centre = p + z * z / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    ((centre - spread) / (1.0 + z * z / n)).max(0.0)
}

/// The share of intruded hand-offs above which `intruded` is raised, when the share's
/// 95% lower bound clears it: one hand-off in fifty delayed by a third task is more
/// than a kworker's occasional tick, and moves a median.
pub const INTRUDED_SHARE: f64 = 0.02;
/// Fewest intrusions that can raise `intruded`.
pub const INTRUDED_MIN: u64 = 5;

/// The flags a trace pass raises on its row.
pub fn flags(s: &TraceSummary) -> Vec<Flag> {
    let mut out = Vec::new();
    // A handful of intrusions in a handful of hand-offs (a benchmark that hands
    // nothing off) says nothing about a share.
    if s.intrusions >= INTRUDED_MIN && wilson_low(s.intrusions, s.handoffs) > INTRUDED_SHARE {
        let names: Vec<String> = s.intruders.iter().map(|i| format!("{} ({})", i.comm, i.count)).collect();
        out.push(Flag::new(
            FlagCode::Intruded,
            format!(
                "third tasks ran before {} of {} traced hand-offs ({:.1}%): {}",
                s.intrusions,
                s.handoffs,
                100.0 * s.intrusions as f64 / s.handoffs as f64,
                names.join(", ")
            ),
        ));
    }
    if s.switches_agree() == Some(false) {
        out.push(Flag::new(
            FlagCode::TraceDisagrees,
            format!(
                "the trace saw {} switches of the watched tasks, /proc {} over the same window",
                s.switch_outs,
                s.proc_switches.unwrap_or(0)
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(time: u64, cpu: u32, prev: i32, state: i64, next: i32, next_comm: &str) -> Event {
        Event {
            time,
            cpu,
            tid: prev as u32,
            kind: EventKind::Switch {
                prev_pid: prev,
                prev_comm: Comm::new(&if prev == 77 { "kworker/0:1".to_string() } else { format!("t{prev}") }),
                prev_state: state,
                next_pid: next,
                next_comm: Comm::new(next_comm),
            },
        }
    }

    fn wake(time: u64, cpu: u32, waker: u32, pid: i32) -> Event {
        Event { time, cpu, tid: waker, kind: EventKind::Waking { pid, target_cpu: cpu as i32 } }
    }

    /// A same-CPU ping-pong of tasks 10 and 11: wake the other, sleep, switch.
    fn ping_pong(n: u64) -> Vec<Event> {
        let mut v = Vec::new();
        for i in 0..n {
            let (a, b) = if i % 2 == 0 { (10, 11) } else { (11, 10) };
            v.push(wake(i * 100, 0, a as u32, b));
            v.push(sw(i * 100 + 30, 0, a, 1, b, "peer"));
        }
        v
    }

    #[test]
    fn a_clean_ping_pong_is_all_direct() {
        let s = summarize(&ping_pong(1000), &[10, 11], (0, u64::MAX), PassFacts::default());
        assert_eq!((s.handoffs, s.direct, s.idle_passes, s.intrusions), (1000, 1000, 0, 0));
        assert_eq!((s.switch_outs, s.preempted), (1000, 0));
        let l = s.wake_to_run.unwrap();
        assert_eq!((l.n, l.p50, l.max), (1000, 30.0, 30.0));
        assert!(flags(&s).is_empty());
    }

    #[test]
    fn third_tasks_between_wake_and_run_are_intrusions() {
        let mut v = ping_pong(4);
        // The last hand-off (10 woken by 11 at 300): 11 sleeps, a kworker runs, then 10.
        v.pop();
        v.push(sw(310, 0, 11, 1, 77, "kworker/0:1"));
        v.push(sw(330, 0, 77, 1, 10, "t10"));
        let s = summarize(&v, &[10, 11], (0, u64::MAX), PassFacts::default());
        assert_eq!((s.handoffs, s.direct, s.intrusions), (4, 3, 1));
        assert_eq!(s.intruders, vec![Intruder { comm: "kworker/0:1".into(), count: 1 }]);
        assert_eq!(s.wake_to_run.unwrap().max, 30.0);
        // A kworker that ran and left before the wake-up delays nothing.
        let mut early = vec![sw(1, 0, 10, 0, 77, "kworker/0:1"), sw(2, 0, 77, 1, 10, "t10")];
        early.extend(ping_pong(4).into_iter().map(|e| Event { time: e.time + 10, ..e }));
        let s = summarize(&early, &[10, 11], (0, u64::MAX), PassFacts::default());
        assert_eq!(s.preempted, 1, "10 left runnable once, for the kworker");
        assert_eq!(s.handoffs, 5);
        assert_eq!(s.intrusions, 1, "only the switch-in straight from the kworker");
    }

    /// Two intruding processes of one name are one entry, with both counts.
    #[test]
    fn intruders_are_listed_by_name() {
        let named = |time, prev: i32, prev_comm: &str, next: i32, next_comm: &str| Event {
            time,
            cpu: 0,
            tid: prev as u32,
            kind: EventKind::Switch {
                prev_pid: prev,
                prev_comm: Comm::new(prev_comm),
                prev_state: 1,
                next_pid: next,
                next_comm: Comm::new(next_comm),
            },
        };
        let mut v = ping_pong(4);
        // Hand-offs 3 and 4: an `exe` runs between the wake-up and the woken, each a
        // different process.
        v.truncate(4);
        v.push(wake(200, 0, 10, 11));
        v.push(named(230, 10, "t10", 78, "exe"));
        v.push(named(250, 78, "exe", 11, "t11"));
        v.push(wake(300, 0, 11, 10));
        v.push(named(330, 11, "t11", 79, "exe"));
        v.push(named(350, 79, "exe", 10, "t10"));
        let s = summarize(&v, &[10, 11], (0, u64::MAX), PassFacts::default());
        assert_eq!(s.intrusions, 2, "{s:?}");
        assert_eq!(s.intruders, vec![Intruder { comm: "exe".into(), count: 2 }]);
    }

    #[test]
    fn idle_passes_and_the_window() {
        let v = vec![wake(10, 1, 10, 11), sw(20, 1, 0, 0, 11, "peer"), wake(500, 1, 10, 11), sw(520, 1, 0, 0, 11, "p")];
        let s = summarize(&v, &[10, 11], (0, 100), PassFacts::default());
        assert_eq!((s.handoffs, s.idle_passes, s.direct), (1, 1, 0));
    }

    #[test]
    fn untraced_switch_ins_from_a_polling_idle_are_inferred() {
        // Across CPUs as traced here: 11 on CPU 1 is never seen switching in from
        // idle; its waking of 10 proves it ran.
        let mut v = Vec::new();
        for i in 0..100u64 {
            let t = i * 1000;
            v.push(wake(t, 0, 10, 11));
            v.push(sw(t + 10, 0, 10, 1, 0, "swapper/0"));
            v.push(wake(t + 400, 1, 11, 10));
            v.push(sw(t + 410, 1, 11, 1, 0, "swapper/1"));
            v.push(sw(t + 500, 0, 0, 0, 10, "t10"));
        }
        let s = summarize(&v, &[10, 11], (0, u64::MAX), PassFacts::default());
        assert_eq!((s.switch_outs, s.handoffs, s.idle_passes), (200, 199, 199));
        assert_eq!(s.untraced_switch_ins, 99, "the first run of 11 precedes any switch on CPU 1");
        assert_eq!(s.wake_to_run.unwrap().n, 100, "only traced switch-ins give latencies");
        assert_eq!(s.intrusions, 0);
    }

    #[test]
    fn fork_order_is_read_from_wakeup_new() {
        let new = |time, cpu, parent: u32, child| Event {
            time,
            cpu,
            tid: parent,
            kind: EventKind::WakeupNew { pid: child, target_cpu: cpu as i32 },
        };
        let v = vec![
            // Child 100 runs first: parent 10 preempted in its favour on CPU 0.
            new(1, 0, 10, 100),
            sw(2, 0, 10, 0, 100, "child"),
            // Child 101 runs on CPU 1 while the parent goes on.
            new(10, 0, 10, 101),
            sw(11, 1, 0, 0, 101, "child"),
            // Child 102 runs once the parent sleeps in wait.
            new(20, 0, 10, 102),
            sw(21, 0, 10, 1, 102, "child"),
            Event { time: 22, cpu: 1, tid: 0, kind: EventKind::Migrate { pid: 102, orig_cpu: 0, dest_cpu: 1 } },
        ];
        let s = summarize(&v, &[10], (0, 100), PassFacts::default());
        let o = s.spawn.unwrap();
        assert_eq!((o.children, o.child_first, o.child_elsewhere, o.parent_first, o.child_migrations), (3, 1, 1, 1, 1));
    }

    #[test]
    fn intruded_is_quiet_on_rare_intrusions_and_fires_on_a_real_share() {
        // Synthetic passes of 2,000 hand-offs with intrusions drawn at rate p.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut draw = |p: f64| {
            (0..2000)
                .filter(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (rng >> 11) as f64 / (1u64 << 53) as f64 <= p
                })
                .count() as u64
        };
        let summary =
            |k| TraceSummary { handoffs: 2000, intrusions: k, ..summarize(&[], &[], (0, 0), PassFacts::default()) };
        let quiet = (0..200).filter(|_| !flags(&summary(draw(0.005))).is_empty()).count();
        assert_eq!(quiet, 0, "0.5% intrusions (a kworker now and then) must stay quiet");
        let fired = (0..200).filter(|_| !flags(&summary(draw(0.06))).is_empty()).count();
        assert!(fired >= 195, "6% intrusions fired {fired}/200");
        // A share at the threshold itself never fires more than the interval's 2.5%.
        let at = (0..400).filter(|_| !flags(&summary(draw(INTRUDED_SHARE))).is_empty()).count();
        assert!(at <= 20, "at the threshold {at}/400");
    }

    #[test]
    fn disagreement_with_proc_beyond_one_percent_is_flagged() {
        let base = summarize(&ping_pong(1000), &[10, 11], (0, u64::MAX), PassFacts::default());
        let with = |p| TraceSummary { proc_switches: Some(p), ..base.clone() };
        assert!(flags(&with(1000)).is_empty());
        assert!(flags(&with(1008)).is_empty(), "within 1%");
        assert_eq!(flags(&with(1030))[0].flag, FlagCode::TraceDisagrees);
        assert_eq!(flags(&with(900))[0].flag, FlagCode::TraceDisagrees);
        // Switches during the /proc reads count up to the outer window.
        let outer = TraceSummary { switch_outs_outer: 1200, proc_switches: Some(1150), ..base.clone() };
        assert!(flags(&outer).is_empty());
        // One intrusion in one hand-off is no share.
        let one = TraceSummary { handoffs: 1, intrusions: 1, ..base.clone() };
        assert!(flags(&one).is_empty());
        assert!(wilson_low(0, 10) == 0.0 && wilson_low(10, 10) > 0.6);
    }
}
