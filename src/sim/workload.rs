//! The founding texts' workloads, as task behaviours, and what each reports.
//!
//! - `travis`: N tasks looping on sched_yield on one CPU (processes or threads), among
//!   `OTHERS` sleeping system tasks; time per switch (Travis's benchmark, 1998).
//! - `loop_yield`: k yielders on c CPUs; switches per second (Molnar's loop_yield).
//! - `chat`: rooms of 20 users, each sending `messages` messages to every other user
//!   of its room and reading its own; messages per second (chat_c's shape).
//! - `fork`: a parent forking children that exit at once, one at a time; time per
//!   fork+exit and how often the child ran first.
//! - `server`: mostly-blocked tasks, each running briefly then sleeping, as the 1999
//!   article's web server; run-queue length at every switch and the share of
//!   schedules that ran the recalculation loop.

use std::collections::VecDeque;

use super::engine::{Action, Engine, Outcome, Shared, TaskId};
use super::{CostProfile, PolicyKind, Rng};

/// What a task does, one action at a time.
pub trait Behavior {
    fn next(&mut self, me: TaskId, shared: &mut Shared, rng: &mut Rng) -> Action;
}

/// A task that never runs (a sleeping daemon).
pub struct Asleep;

impl Behavior for Asleep {
    fn next(&mut self, _: TaskId, _: &mut Shared, _: &mut Rng) -> Action {
        Action::WaitWake
    }
}

/// sched_yield forever, with `work` ns of computation between yields.
pub struct Yielder {
    pub work: u64,
    computed: bool,
}

impl Yielder {
    pub fn new(work: u64) -> Self {
        Self { work, computed: false }
    }
}

impl Behavior for Yielder {
    fn next(&mut self, _: TaskId, _: &mut Shared, _: &mut Rng) -> Action {
        self.computed = !self.computed;
        if self.computed && self.work > 0 { Action::Compute(self.work) } else { Action::Yield }
    }
}

/// Computes forever.
pub struct Hog;

impl Behavior for Hog {
    fn next(&mut self, _: TaskId, _: &mut Shared, _: &mut Rng) -> Action {
        Action::Compute(1_000_000_000)
    }
}

/// A child that exits at once.
struct Child;

impl Behavior for Child {
    fn next(&mut self, _: TaskId, _: &mut Shared, _: &mut Rng) -> Action {
        Action::Exit
    }
}

/// Forks `left` children one after another, waiting for each.
struct Forker {
    left: u64,
    waiting: bool,
}

impl Behavior for Forker {
    fn next(&mut self, _: TaskId, shared: &mut Shared, _: &mut Rng) -> Action {
        if self.waiting {
            self.waiting = false;
            return Action::WaitChildren;
        }
        if self.left == 0 {
            return Action::Exit;
        }
        self.left -= 1;
        self.waiting = true;
        shared.forks += 1;
        Action::Fork { child: Box::new(Child), thread: false }
    }
}

/// Runs for an exponential time, sleeps for an exponential time, forever.
struct ServerTask {
    run_mean: f64,
    sleep_mean: f64,
    ran: bool,
}

impl Behavior for ServerTask {
    fn next(&mut self, _: TaskId, _: &mut Shared, rng: &mut Rng) -> Action {
        self.ran = !self.ran;
        if self.ran { Action::Compute(rng.exp(self.run_mean).max(1)) } else { Action::Sleep(rng.exp(self.sleep_mean)) }
    }
}

/// A chat user: sends each peer one message per turn (a computation, then a wake-up
/// of the peer), reads what arrived, until it has sent and read everything.
struct ChatUser {
    peers: Vec<TaskId>,
    to_send: u64,
    to_read: u64,
    queue: VecDeque<Action>,
}

const CHAT_SEND_NS: u64 = 2_000;
const CHAT_READ_NS: u64 = 1_000;

impl Behavior for ChatUser {
    fn next(&mut self, me: TaskId, shared: &mut Shared, _: &mut Rng) -> Action {
        if let Some(a) = self.queue.pop_front() {
            return a;
        }
        let arrived = std::mem::take(&mut shared.mailbox[me]);
        if arrived > 0 {
            self.to_read -= arrived;
            shared.delivered += arrived;
            return Action::Compute(CHAT_READ_NS * arrived);
        }
        if self.to_send > 0 {
            self.to_send -= 1;
            for &p in &self.peers {
                shared.mailbox[p] += 1;
                shared.sent += 1;
                self.queue.push_back(Action::Compute(CHAT_SEND_NS));
                self.queue.push_back(Action::Wake(p));
            }
            return self.queue.pop_front().unwrap_or(Action::Yield);
        }
        if self.to_read > 0 { Action::WaitWake } else { Action::Exit }
    }
}

/// The workloads by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum WorkloadKind {
    Travis,
    #[value(name = "loop_yield")]
    LoopYield,
    Chat,
    Fork,
    Server,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Travis => "travis",
            WorkloadKind::LoopYield => "loop_yield",
            WorkloadKind::Chat => "chat",
            WorkloadKind::Fork => "fork",
            WorkloadKind::Server => "server",
        }
    }
}

/// Sleeping system tasks beside the travis yielders (a 1998 workstation's daemons):
/// Linux 2.0's recalculation visits them too.
pub const OTHERS: usize = 30;
/// Users per chat room (chat_c's rooms).
pub const ROOM: usize = 20;

/// One simulation's parameters.
#[derive(Debug, Clone)]
pub struct Params {
    pub policy: PolicyKind,
    pub workload: WorkloadKind,
    pub cpus: usize,
    /// Tasks (travis, loop_yield, server), rooms (chat) or forks (fork).
    pub tasks: usize,
    /// travis: threads of one process rather than processes.
    pub threads: bool,
    pub nice: i32,
    pub messages: u64,
    pub seed: u64,
}

/// One simulated figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: &'static str,
    pub value: f64,
    pub unit: &'static str,
}

/// A simulation's figures and its counters.
pub struct Report {
    pub figures: Vec<Figure>,
    pub outcome: Outcome,
}

fn fig(name: &'static str, value: f64, unit: &'static str) -> Figure {
    Figure { name, value, unit }
}

/// Runs one simulation.
pub fn simulate(p: &Params, cost: &CostProfile) -> Report {
    let mut e = Engine::new(p.policy.build(p.cpus), cost.clone(), p.cpus, p.seed);
    let n = p.tasks.max(1);
    match p.workload {
        WorkloadKind::Travis => {
            for _ in 0..OTHERS {
                e.spawn_sleeper();
            }
            let mm = p.threads.then_some(usize::MAX);
            for i in 0..n {
                e.spawn(Box::new(Yielder::new(0)), mm, p.nice, i % p.cpus);
            }
            let out = e.run(2_000_000_000, |_| false);
            // Travis's figure: the run's time over its sched_yield calls (a yield that
            // picks its caller again still counts, as it did in his loop).
            let per = out.end_ns as f64 * p.cpus as f64 / out.yields.max(1) as f64;
            Report {
                figures: vec![
                    fig("time per switch", per, "ns/switch"),
                    fig(
                        "recalculations per yield",
                        out.schedules_with_recalc as f64 / out.yields.max(1) as f64,
                        "ratio",
                    ),
                ],
                outcome: out,
            }
        }
        WorkloadKind::LoopYield => {
            for i in 0..n {
                e.spawn(Box::new(Yielder::new(0)), None, p.nice, i % p.cpus);
            }
            let out = e.run(1_000_000_000, |_| false);
            let rate = out.switches as f64 / (out.end_ns as f64 / 1e9);
            Report { figures: vec![fig("switches per second", rate, "switches/s")], outcome: out }
        }
        WorkloadKind::Chat => {
            let users = n * ROOM;
            e.shared.mailbox = vec![0; users];
            for r in 0..n {
                let ids: Vec<TaskId> = (r * ROOM..(r + 1) * ROOM).collect();
                for &me in &ids {
                    let peers: Vec<TaskId> = ids.iter().copied().filter(|&x| x != me).collect();
                    let to_read = p.messages * peers.len() as u64;
                    let u = ChatUser { peers, to_send: p.messages, to_read, queue: VecDeque::new() };
                    let id = e.spawn(Box::new(u), None, p.nice, me % p.cpus);
                    debug_assert_eq!(id, me);
                }
            }
            let expected = (users * (ROOM - 1)) as u64 * p.messages;
            let out = e.run(60_000_000_000, |s| s.delivered >= expected);
            let rate = out.delivered as f64 / (out.end_ns as f64 / 1e9);
            Report { figures: vec![fig("messages per second", rate, "msgs/s")], outcome: out }
        }
        WorkloadKind::Fork => {
            e.spawn(Box::new(Forker { left: n as u64, waiting: false }), None, p.nice, 0);
            let out = e.run(60_000_000_000, |_| false);
            let per = out.end_ns as f64 / out.forks.max(1) as f64;
            let first = out.child_first as f64 / out.forks.max(1) as f64;
            Report {
                figures: vec![fig("time per fork+exit", per, "ns/fork"), fig("child ran first", first, "share")],
                outcome: out,
            }
        }
        WorkloadKind::Server => {
            for i in 0..n {
                // Each starts asleep, so the first moments are not one burst of every task.
                let t = ServerTask { run_mean: 1e6, sleep_mean: 150e6, ran: false };
                let wake = e.rng.exp(150e6);
                e.spawn_sleeping(Box::new(t), p.nice, i % p.cpus, wake);
            }
            let out = e.run(60_000_000_000, |_| false);
            let rq: Vec<f64> = out.runqueue_at_switch.iter().map(|&x| x as f64).collect();
            let share =
                |keep: &dyn Fn(f64) -> bool| rq.iter().filter(|&&x| keep(x)).count() as f64 / rq.len().max(1) as f64;
            let mean = rq.iter().sum::<f64>() / rq.len().max(1) as f64;
            Report {
                figures: vec![
                    fig("run queue at switch, mean", mean, "tasks"),
                    fig("switches with more than 10 runnable", share(&|x| x > 10.0), "share"),
                    fig("switches with 20 or more runnable", share(&|x| x >= 20.0), "share"),
                    fig("run queue at switch, max", rq.iter().copied().fold(0.0, f64::max), "tasks"),
                    fig("switches per second", out.switches as f64 / (out.end_ns as f64 / 1e9), "switches/s"),
                    fig(
                        "schedules that recalculated",
                        out.schedules_with_recalc as f64 / out.schedules.max(1) as f64,
                        "share",
                    ),
                ],
                outcome: out,
            }
        }
    }
}
