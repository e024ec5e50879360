//! The founding texts' workloads, as task behaviours, and what each reports.
//!
//! - `travis`: N tasks looping on sched_yield on one CPU (processes or threads), among
//!   `OTHERS` sleeping system tasks; time per switch (Travis's benchmark, 1998).
//! - `loop_yield`: k yielders on c CPUs; switches per second (Molnar's loop_yield).
//! - `chat`: Bill Hartner's chat benchmark as Molnar ran it (`./chat_c ROOMS
//!   MESSAGES` against `chat_s`): rooms of 20 users, each four threads of two processes
//!   relaying every message through the server to the room's 19 others over TCP
//!   ([`super::chat`]); chat_c's messages per second.
//! - `fork`: lmbench's lat_proc fork: a parent forking a child that exits at once,
//!   then waiting for it, one at a time; time per fork+exit and how often the child ran
//!   before the parent went on. Where the child runs (the parent's CPU or an idle one)
//!   is the policy's; a child on another CPU refills its cache there.
//! - `server`: the 1999 article's web server: about 200 httpd and 220 other (mostly
//!   sleeping) tasks; connections arrive at random (the network's interrupt modelled as
//!   a task) and wake *every* httpd waiting in accept() (2.0's thundering herd); one
//!   takes the connection and serves it in short bursts between waits on the slow
//!   client (keep-alive), the others go back to sleep; one CPU-bound job takes the
//!   share of the CPU the article's recalculation rate implies. Run-queue length at every
//!   switch and the share of schedules that ran the recalculation loop. The rates are
//!   assumptions of the workload ([`SERVER`]), not fitted to the article's statistics.

use std::collections::VecDeque;

use super::chat;
use super::engine::{Engine, Outcome};
pub use super::types::Behavior;
use super::types::{Action, Scheduler, Shared, TaskId};
use super::{CostProfile, PolicyKind, Rng};
use oscost_figure::key::BenchId;
use oscost_figure::unit::Unit;

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
    /// The parent's way from fork() back to user space and into waitpid(): it races
    /// the idle CPU that was sent the child.
    to_wait_ns: u64,
    returned: bool,
}

impl Behavior for Forker {
    fn next(&mut self, _: TaskId, shared: &mut Shared, _: &mut Rng) -> Action {
        if self.waiting {
            if !self.returned {
                self.returned = true;
                return Action::Compute(self.to_wait_ns.max(1));
            }
            self.waiting = false;
            self.returned = false;
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

/// The web server's assumed rates (per second, ns).
pub struct ServerRates {
    /// httpd processes (Apache's pre-forked servers).
    pub httpd: usize,
    /// Other tasks of the system, asleep most of the time.
    pub others: usize,
    /// Mean time between connections, and a connection's bursts and waits.
    pub arrival_ns: f64,
    pub bursts: u64,
    pub burst_ns: f64,
    pub client_wait_ns: f64,
    /// accept() by an httpd woken in the herd, won or lost.
    pub accept_ns: u64,
    /// The other tasks: how often each wakes, and for how long it runs.
    pub other_period_ns: f64,
    pub other_run_ns: f64,
    /// One CPU-bound job (CGI-like): mean busy stretch and mean pause between them.
    pub cgi_busy_ns: f64,
    pub cgi_idle_ns: f64,
}

/// Assumed, for a 1998 site of about 200 httpd behind three T1 lines: about 10
/// connections a second, each held (keep-alive, slow modem clients) for about 20 s in
/// 15 bursts of 0.3 ms.
///
/// The CPU-bound share is taken from the text, not fitted: one switch in 200 needed a
/// recalculation at 400 switches a second, so one every 0.5 s; under 2.0 without
/// sched_yield, every runnable task reaches counter 0 only when a CPU-bound task has
/// used its whole 20-tick slice (0.2 s) with nothing else runnable holding time. So a
/// CPU-bound job busy 0.2 s of every 0.5 s: 40% of the CPU, in stretches of 0.4 s
/// (longer than a slice, as a CGI script's or a log rotation's are) and pauses of 0.6 s.
pub const SERVER: ServerRates = ServerRates {
    httpd: 200,
    others: 220,
    arrival_ns: 100e6,
    bursts: 15,
    burst_ns: 0.3e6,
    client_wait_ns: 1.3e9,
    accept_ns: 30_000,
    other_period_ns: 10e9,
    other_run_ns: 1e6,
    cgi_busy_ns: 0.4e9,
    cgi_idle_ns: 0.6e9,
};

/// How long the server runs, virtual time: counters drift down by the ticks that land
/// on each task, and the recalculation comes when the first runnable tasks have none
/// left, so the steady state takes minutes to reach.
const SERVER_RUN_NS: u64 = 600_000_000_000;

/// The network: at random moments a connection arrives and every httpd waiting in
/// accept() is woken.
struct Network {
    mean_ns: f64,
    arrived: bool,
    wake: VecDeque<TaskId>,
}

impl Behavior for Network {
    fn next(&mut self, _: TaskId, shared: &mut Shared, rng: &mut Rng) -> Action {
        if let Some(t) = self.wake.pop_front() {
            return Action::Wake(t);
        }
        if self.arrived {
            self.arrived = false;
            shared.pending += 1;
            self.wake.extend(shared.in_accept.drain(..));
            if let Some(t) = self.wake.pop_front() {
                return Action::Wake(t);
            }
        }
        self.arrived = true;
        Action::Sleep(rng.exp(self.mean_ns).max(1))
    }
}

/// An httpd: waits in accept(); woken, tries to take a connection; serves it in
/// bursts between waits on the client.
struct Httpd {
    queue: VecDeque<Action>,
    accepting: bool,
}

impl Behavior for Httpd {
    fn next(&mut self, me: TaskId, shared: &mut Shared, rng: &mut Rng) -> Action {
        if let Some(a) = self.queue.pop_front() {
            return a;
        }
        if self.accepting {
            self.accepting = false;
            if shared.pending > 0 {
                shared.pending -= 1;
                for _ in 0..SERVER.bursts {
                    self.queue.push_back(Action::Compute(rng.exp(SERVER.burst_ns).max(1)));
                    self.queue.push_back(Action::Sleep(rng.exp(SERVER.client_wait_ns).max(1)));
                }
                return Action::Compute(SERVER.accept_ns);
            }
        }
        // Back into accept(): asleep until the next connection's herd.
        self.accepting = true;
        shared.in_accept.push(me);
        self.queue.push_back(Action::Compute(SERVER.accept_ns));
        Action::WaitWake
    }
}

/// A daemon: asleep, now and then runs briefly.
struct Daemon {
    ran: bool,
}

impl Behavior for Daemon {
    fn next(&mut self, _: TaskId, _: &mut Shared, rng: &mut Rng) -> Action {
        self.ran = !self.ran;
        if self.ran {
            Action::Compute(rng.exp(SERVER.other_run_ns).max(1))
        } else {
            Action::Sleep(rng.exp(SERVER.other_period_ns).max(1))
        }
    }
}

/// The CPU-bound job: computes, pauses, computes again.
struct Cgi {
    ran: bool,
}

impl Behavior for Cgi {
    fn next(&mut self, _: TaskId, _: &mut Shared, rng: &mut Rng) -> Action {
        self.ran = !self.ran;
        if self.ran {
            Action::Compute(rng.exp(SERVER.cgi_busy_ns).max(1))
        } else {
            Action::Sleep(rng.exp(SERVER.cgi_idle_ns).max(1))
        }
    }
}

/// The workloads by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum WorkloadKind {
    Travis,
    #[value(name = "loop_yield")]
    LoopYield,
    Chat,
    /// oscost's own load.chat, as it runs on today's kernel (the grounding's model).
    #[value(name = "load_chat")]
    LoadChat,
    Fork,
    Server,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Travis => "travis",
            WorkloadKind::LoopYield => "loop_yield",
            WorkloadKind::Chat => "chat",
            WorkloadKind::LoadChat => "load_chat",
            WorkloadKind::Fork => "fork",
            WorkloadKind::Server => "server",
        }
    }

    /// The benchmark id its simulated rows are stored under (`sim.travis`, …).
    pub const fn id(self) -> BenchId {
        match self {
            WorkloadKind::Travis => BenchId::new("sim.travis"),
            WorkloadKind::LoopYield => BenchId::new("sim.loop_yield"),
            WorkloadKind::Chat => BenchId::new("sim.chat"),
            WorkloadKind::LoadChat => BenchId::new("sim.load_chat"),
            WorkloadKind::Fork => BenchId::new("sim.fork"),
            WorkloadKind::Server => BenchId::new("sim.server"),
        }
    }
}

/// A chat run's regime as figures (the delivery rate first).
fn regime_figures(r: &chat::Regime) -> Vec<Figure> {
    let mut out = vec![
        fig(chat::DELIVERED_PER_SECOND, r.delivered_per_second, Unit::MessagesPerSecond),
        fig(chat::SWITCHES_PER_MESSAGE, r.switches_per_message, Unit::Ratio),
        fig(chat::CLIENT_MESSAGES_PER_WAKE, r.client_messages_per_wake, Unit::Ratio),
        fig(chat::SERVER_MESSAGES_PER_WAKE, r.server_messages_per_wake, Unit::Ratio),
    ];
    if let Some(s) = r.segments_per_message {
        out.push(fig(chat::SEGMENTS_PER_MESSAGE, s, Unit::Ratio));
    }
    out.push(fig(chat::CPU_IDLE_SHARE, r.cpu_idle_share, Unit::Ratio));
    out.push(fig(chat::IDLE_ENTRIES_PER_MESSAGE, r.idle_entries_per_message, Unit::Ratio));
    out.push(fig(chat::MEDIAN_FINISH, r.median_finish, Unit::Ratio));
    out
}

/// Sleeping system tasks beside the travis yielders (a 1998 workstation's daemons):
/// Linux 2.0's recalculation visits them too.
pub const OTHERS: usize = 30;
pub use super::chat::ROOM;

/// One simulation's parameters.
#[derive(Debug, Clone, PartialEq)]
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

impl Params {
    /// Processes at nice 0, 20 messages (chat), seed 1.
    pub fn new(policy: PolicyKind, workload: WorkloadKind, cpus: usize, tasks: usize) -> Self {
        Self { policy, workload, cpus, tasks, threads: false, nice: 0, messages: 20, seed: 1 }
    }
}

/// One simulated figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: &'static str,
    pub value: f64,
    pub unit: Unit,
}

/// A simulation's figures and its counters.
pub struct Report {
    pub figures: Vec<Figure>,
    pub outcome: Outcome,
}

fn fig(name: &'static str, value: f64, unit: Unit) -> Figure {
    Figure { name, value, unit }
}

/// Runs one simulation.
pub fn simulate(p: &Params, cost: &CostProfile) -> Report {
    simulate_with(p, cost, p.policy.build(p.cpus))
}

/// [`simulate`] under `policy` in place of the one `p` names (a test's altered rule),
/// for `p.cpus` CPUs.
pub fn simulate_with(p: &Params, cost: &CostProfile, policy: Box<dyn Scheduler>) -> Report {
    let mut e = Engine::new(policy, cost.clone(), p.cpus, p.seed);
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
                    fig("time per switch", per, Unit::NsPerSwitch),
                    fig(
                        "recalculations per yield",
                        out.schedules_with_recalc as f64 / out.yields.max(1) as f64,
                        Unit::Ratio,
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
            Report { figures: vec![fig("switches per second", rate, Unit::SwitchesPerSecond)], outcome: out }
        }
        WorkloadKind::Chat => {
            let (rate, out, regime) = chat::run(&mut e, n, p.messages, p.nice, chat::Program::ChatC);
            let mut figures = vec![fig("messages per second", rate, Unit::MessagesPerSecond)];
            figures.extend(regime_figures(&regime));
            Report { figures, outcome: out }
        }
        WorkloadKind::LoadChat => {
            let (_, out, regime) = chat::run(&mut e, n, p.messages, p.nice, chat::Program::LoadChat);
            Report { figures: regime_figures(&regime), outcome: out }
        }
        WorkloadKind::Fork => {
            // lat_proc's parent: fork(), then waitpid(): fork's return, waitpid's entry and
            // its walk of the children under tasklist_lock, three system calls' worth
            // (assumed). It races the IPI to an idle CPU: whichever CPU reaches
            // schedule() first takes the child under 2.0 and 2.4.
            let to_wait_ns = 3 * CostProfile::ns(&cost.syscall);
            e.spawn(Box::new(Forker { left: n as u64, waiting: false, to_wait_ns, returned: false }), None, p.nice, 0);
            let out = e.run(60_000_000_000, |_| false);
            let per = out.end_ns as f64 / out.forks.max(1) as f64;
            let first = out.child_first as f64 / out.forks.max(1) as f64;
            Report {
                figures: vec![
                    fig("time per fork+exit", per, Unit::NsPerFork),
                    fig("child ran first", first, Unit::Share),
                ],
                outcome: out,
            }
        }
        WorkloadKind::Server => {
            // `tasks` httpd (each first in accept), the other tasks asleep at random
            // phases, and the network.
            // A warm start: each httpd is found part-way through a connection (a random
            // number of its bursts left), so the run opens in the steady state rather
            // than with every httpd in accept().
            for i in 0..n {
                let mut h = Httpd { queue: VecDeque::new(), accepting: false };
                let left = (e.rng.unit() * SERVER.bursts as f64) as u64;
                for _ in 0..left {
                    h.queue.push_back(Action::Compute(e.rng.exp(SERVER.burst_ns).max(1)));
                    h.queue.push_back(Action::Sleep(e.rng.exp(SERVER.client_wait_ns).max(1)));
                }
                let wake = e.rng.exp(SERVER.client_wait_ns);
                e.spawn_sleeping(Box::new(h), p.nice, i % p.cpus, wake);
            }
            for i in 0..SERVER.others {
                let wake = e.rng.exp(SERVER.other_period_ns);
                e.spawn_sleeping(Box::new(Daemon { ran: false }), 0, i % p.cpus, wake);
            }
            let cgi_wake = e.rng.exp(SERVER.cgi_idle_ns);
            e.spawn_sleeping(Box::new(Cgi { ran: false }), p.nice, 0, cgi_wake);
            let net = Network { mean_ns: SERVER.arrival_ns, arrived: false, wake: VecDeque::new() };
            let first = e.rng.exp(SERVER.arrival_ns);
            e.spawn_sleeping(Box::new(net), -20, 0, first);
            let out = e.run(SERVER_RUN_NS, |_| false);
            let rq: Vec<f64> = out.runqueue_at_switch.iter().map(|&x| x as f64).collect();
            let share =
                |keep: &dyn Fn(f64) -> bool| rq.iter().filter(|&&x| keep(x)).count() as f64 / rq.len().max(1) as f64;
            let mean = rq.iter().sum::<f64>() / rq.len().max(1) as f64;
            Report {
                figures: vec![
                    fig("run queue at switch, mean", mean, Unit::Tasks),
                    fig("switches with more than 10 runnable", share(&|x| x > 10.0), Unit::Share),
                    fig("switches with 20 or more runnable", share(&|x| x >= 20.0), Unit::Share),
                    fig("run queue at switch, max", rq.iter().copied().fold(0.0, f64::max), Unit::Tasks),
                    fig(
                        "switches per second",
                        out.switches as f64 / (out.end_ns as f64 / 1e9),
                        Unit::SwitchesPerSecond,
                    ),
                    fig(
                        "schedules that recalculated",
                        out.schedules_with_recalc as f64 / out.schedules.max(1) as f64,
                        Unit::Share,
                    ),
                    // The article's figure: one context switch in 200 needed one.
                    fig(
                        "switches that needed a recalculation",
                        out.schedules_with_recalc as f64 / out.switches.max(1) as f64,
                        Unit::Share,
                    ),
                ],
                outcome: out,
            }
        }
    }
}
