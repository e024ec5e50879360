//! The simulator's shared vocabulary: tasks and what they do, the policy contract and
//! its work units, the tick, the random source. The engine, the policies and the
//! workloads all build on it; it builds on none of them but for the policies' names
//! (`PolicyKind`, which the policy registry declares).

/// HZ = 100: Linux 2.0 and 2.4 on i386 (include/asm-i386/param.h).
pub const TICK_NS: u64 = 10_000_000;

pub type TaskId = usize;

/// What a task does next when it has the CPU.
pub enum Action {
    /// Computes for this long.
    Compute(u64),
    /// sched_yield.
    Yield,
    /// Sleeps this long (a timer wakes it).
    Sleep(u64),
    /// Blocks until another task wakes it (at once if a wake-up is pending).
    WaitWake,
    /// Wakes a task (a token, a signal: no data moves).
    Wake(TaskId),
    /// Wakes a task synchronously, as pipe_write() does with
    /// wake_up_interruptible_sync(): the waker says it is about to block, so the
    /// policy may leave the woken task for the waker's CPU (see
    /// [`Scheduler::sync_wake`]).
    WakeSync(TaskId),
    /// Writes one message to a task's socket (chat): the write's own work, the
    /// message queued with the writer's CPU, and the reader woken.
    Send(TaskId),
    /// Writes one message into a socket's send queue behind a closed receive window
    /// (load.chat): the write's own work; no segment leaves and no reader is woken
    /// until a read reopens the window (`Shared::held`).
    SendHeld(TaskId),
    /// Reads the first queued message (the workload asks only when one is there): the
    /// read's own work, and the message's lines fetched when another CPU wrote them.
    Receive,
    /// Posts a semaphore a task may sleep on (semop +1): a system call, and the
    /// sleeper woken if it sleeps.
    Post(TaskId),
    /// A system call that neither blocks nor wakes (a semop −1 that finds a post).
    Syscall,
    /// Creates a task running this behaviour (same address space if `thread`).
    Fork { child: Box<dyn Behavior>, thread: bool },
    /// Waits for its children to exit.
    WaitChildren,
    /// Ends.
    Exit,
}

/// State the workload's tasks share (sockets, counters). The engine touches only the
/// sockets, through `Send` and `Receive`, to know which CPU wrote each message.
#[derive(Debug, Default)]
pub struct Shared {
    pub sent: u64,
    pub delivered: u64,
    /// Each task's socket: the CPU each queued message was written on.
    pub inbox: Vec<std::collections::VecDeque<usize>>,
    /// Chat: the messages the benchmark counts (chat_c's sends and reads).
    pub counted: u64,
    /// Chat: posts waiting on each task's semaphore.
    pub posts: Vec<u64>,
    /// Chat: the writers asleep on each task's full connection.
    pub writers_waiting: Vec<Vec<TaskId>>,
    /// load.chat: messages written to each task's connection and held in the sender's
    /// queue behind a closed receive window (the CPU each was written on).
    pub held: Vec<std::collections::VecDeque<usize>>,
    /// load.chat: data segments that crossed a connection.
    pub segments: u64,
    /// load.chat: the messages each task's connection may still be sent, as its
    /// writers last heard from the receiver (the window's right edge less what was
    /// sent since).
    pub credit: Vec<usize>,
    /// load.chat: each connection's receiver's estimate of the sender's segment size,
    /// in messages (the largest segment seen: tcp_measure_rcv_mss).
    pub rcv_mss: Vec<usize>,
    /// Timers a task's action armed on a connection, which the engine takes after the
    /// action and fires at their time through `on_socket_timer`.
    pub socket_timers: Vec<SocketTimer>,
    /// What a connection's timer does: the reader to wake when data reached it.
    pub on_socket_timer: Option<fn(&mut Shared, &SocketTimer) -> Option<TaskId>>,
    /// load.chat: each connection's acknowledgement state, by its reader.
    pub acks: Vec<AckState>,
    pub forks: u64,
    pub exits: u64,
    /// The web server: connections not yet accepted, and the httpd waiting in accept().
    pub pending: u64,
    pub in_accept: Vec<TaskId>,
}

/// What a load.chat connection's sender and receiver know of its acknowledgements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckState {
    /// Data segments sent and not yet acknowledged.
    pub in_flight: usize,
    /// Messages the receiver took since it last acknowledged.
    pub unacked: usize,
    /// The window that acknowledgement advertised (messages).
    pub advertised: usize,
    /// Segments smaller than the receiver's segment estimate that reached it since it
    /// last acknowledged (tcp_measure_rcv_mss's ICSK_ACK_PUSHED, and ICSK_ACK_PUSHED2
    /// from the second).
    pub pushed: u32,
    /// The timers' generations (an armed timer whose generation has moved on was
    /// cancelled or re-armed), and whether the delayed acknowledgement is pending.
    pub delack_generation: u64,
    pub probe_generation: u64,
    pub delack_pending: bool,
}

impl AckState {
    /// A fresh connection, its first advertised window `window`.
    pub fn new(window: usize) -> Self {
        Self {
            in_flight: 0,
            unacked: 0,
            advertised: window,
            pushed: 0,
            delack_generation: 0,
            probe_generation: 0,
            delack_pending: false,
        }
    }
}

/// A connection's timer (TCP's, in softirq): which connection, which timer, the
/// generation it was armed at, and how long after the arming action it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SocketTimer {
    pub conn: usize,
    pub kind: SocketTimerKind,
    pub generation: u64,
    pub after_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SocketTimerKind {
    /// The receiver's delayed acknowledgement (tcp_send_delayed_ack).
    DelayedAck,
    /// The sender's tail loss probe (tcp_schedule_loss_probe).
    LossProbe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Runnable,
    Running,
    Blocked,
    Exited,
}

/// What the engine and the policies know of a task.
pub struct SimTask {
    pub id: TaskId,
    /// Address space: tasks with the same `mm` switch as threads.
    pub mm: usize,
    pub nice: i32,
    pub state: State,
    /// The CPU it last ran on.
    pub cpu: usize,
    pub run_ns: u64,
    /// Times it blocked (a voluntary switch, as getrusage counts them).
    pub sleeps: u64,
    /// Times it was switched out while still runnable (an involuntary switch).
    pub preempted: u64,
    /// When it exited, ns.
    pub exited_at: Option<u64>,
    pub parent: Option<TaskId>,
    pub live_children: u32,
    pub waiting_children: bool,
    pub wake_pending: bool,
    pub woken_at: Option<u64>,
    /// When it last blocked or yielded (the policies' sleep and run accounting).
    pub stamp: u64,
    /// Computation left of the current action.
    pub remaining: u64,
    pub(crate) behavior: Option<Box<dyn Behavior>>,
}

impl SimTask {
    /// A runnable task that has not run yet.
    pub(crate) fn new(id: TaskId, mm: usize, nice: i32, cpu: usize, behavior: Option<Box<dyn Behavior>>) -> Self {
        Self {
            id,
            mm,
            nice,
            state: State::Runnable,
            cpu,
            run_ns: 0,
            sleeps: 0,
            preempted: 0,
            exited_at: None,
            parent: None,
            live_children: 0,
            waiting_children: false,
            wake_pending: false,
            woken_at: None,
            stamp: 0,
            remaining: 0,
            behavior,
        }
    }

    /// A parent still waiting in the run queue (not blocked in wait, not running) when
    /// its child exits: the child ran before the parent went on.
    pub(crate) fn waiting_in_queue(&self) -> bool {
        self.state == State::Runnable
    }
}

/// Tasks for driving a policy by hand in tests: processes (one mm each) at `nice` on
/// CPU 0, runnable.
#[cfg(test)]
pub fn test_tasks(n: usize, nice: i32) -> Vec<SimTask> {
    (0..n).map(|id| SimTask::new(id, id + 1, nice, 0, None)).collect()
}

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

/// What a scheduling decision cost, in operations (the profile prices them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Tasks whose goodness was computed.
    pub scanned: u32,
    /// Tasks visited by a counter recalculation.
    pub recalced: u32,
    /// Constant-time picks.
    pub picks: u32,
    /// Balanced-tree levels walked.
    pub tree_steps: u32,
    /// Scanned task_structs last written by another CPU (a cache line fetched).
    pub remote: u32,
}

/// A task switched out still runnable, offered to the other CPUs: the work done
/// holding the global lock, and the CPU told of the task (None: none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offer {
    pub work: Work,
    pub told: Option<usize>,
}

/// A pick: who runs next on the CPU (None: idle), and its cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pick {
    pub next: Option<TaskId>,
    pub work: Work,
}

/// Why a task became runnable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A task the workload starts.
    New,
    Wake,
    /// A sync wake-up the policy places itself, from the waker's CPU (the CPU passed to
    /// `add`): onto that CPU ([`SyncWake::JoinsWakersCpu`]) or where wake_affine
    /// chooses ([`SyncWake::Affine`]).
    WakeSync,
    /// A child forked by `parent` (on the CPU passed to `add`).
    Fork {
        parent: TaskId,
    },
}

/// What a policy does with a sync wake-up ([`Action::WakeSync`]: the waker says it is
/// about to block), as the kernel it follows did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncWake {
    /// The flag is taken and ignored: the task is woken as any other.
    AsAnyWake,
    /// The task joins the queue and no CPU is told: no idle CPU is sent an IPI, no
    /// running task is preempted (2.4's try_to_wake_up(p, 1) skips reschedule_idle).
    TellsNoCpu,
    /// The task is moved to the waker's CPU and queued there with no preemption test
    /// and no sleep credit (2.6.0's try_to_wake_up with sync: the fast migration, then
    /// __activate_task instead of activate_task).
    JoinsWakersCpu,
    /// The flag only places the task (today's select_task_rq_fair: wake_affine_idle
    /// takes the waker's CPU when the waker runs there alone), and the wake-up then
    /// tests for preemption and tells the CPU as any other (ttwu_do_activate's
    /// wakeup_preempt).
    Affine,
}

/// How a TCP segment sent over loopback passes the loopback device on a policy's
/// kernel: what every CPU's sends share there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopbackXmit {
    /// Nothing every CPU takes: later kernels made loopback lockless (NETIF_F_LLTX),
    /// and 2.0's big kernel lock already holds every send.
    Lockless,
    /// Under the device's transmit lock, one lock for every CPU: 2.4's and 2.6.0's
    /// dev_queue_xmit, for a device with no queue, takes dev->xmit_lock around
    /// hard_start_xmit (its comment: "it is unlikely that xmit_lock protection is
    /// necessary here (f.e. loopback ...)"). Under it the segment writes
    /// `shared_lines` lines besides the lock's own that every CPU's sends write too;
    /// each was last written by the lock's previous holder, so when that was another
    /// CPU each comes from its cache inside the hold.
    Locked { shared_lines: u32 },
}

/// A simulated scheduler (one of the policies `PolicyKind` names: Linux 2.0's,
/// 2.4's, O(1), CFS, EEVDF). Not `placement::Policy`, the SCHED_* class a measured
/// run asks the real kernel for.
pub trait Scheduler {
    fn kind(&self) -> PolicyKind;
    /// One run-queue lock for all CPUs (contention then emerges on SMP).
    fn global_lock(&self) -> bool;
    /// Whether the global lock is a big kernel lock: every nanosecond a CPU spends in
    /// the kernel (system calls, scheduling, switches, ticks) is spent holding
    /// it, so no two CPUs are in the kernel at once and the others spin (Linux 2.0 on
    /// SMP). False: the lock covers the scheduler's run-queue work only.
    fn big_kernel_lock(&self) -> bool {
        false
    }
    /// Whether the counter recalculation runs with the global lock dropped (2.4's
    /// `recalculate:` path), the scan after it taking the lock again. The policy's
    /// pick then reports two scans of the same queue, half its `scanned` and `remote`
    /// each. False: the whole pick, recalculation included, holds the lock.
    fn recalc_drops_lock(&self) -> bool {
        false
    }
    /// The work a wake-up of `id` by `from_cpu` does holding the global lock, where the
    /// policy's wake-up takes it (2.4's try_to_wake_up holds runqueue_lock across
    /// add_to_runqueue and reschedule_idle); `sync` for a sync wake-up the policy
    /// honours. None: the wake-up takes no global lock (per-CPU queues, or a big
    /// kernel lock that holds all kernel work anyway).
    fn wake_work(&self, _tasks: &[SimTask], _id: TaskId, _from_cpu: usize, _sync: bool) -> Option<Work> {
        None
    }
    /// After a switch on `cpu` away from `prev`, still runnable: what the policy does
    /// to offer `prev` to another CPU (2.4's schedule_tail on SMP: under runqueue_lock,
    /// reschedule_idle(prev), unless prev yielded). None: nothing (the default).
    fn offer_switched_out(&mut self, _tasks: &[SimTask], _cpu: usize, _prev: TaskId) -> Option<Offer> {
        None
    }
    /// What a sync wake-up ([`Action::WakeSync`]) does under this policy; by default
    /// the flag is ignored.
    fn sync_wake(&self) -> SyncWake {
        SyncWake::AsAnyWake
    }
    /// Whether data arriving on a socket wakes its sleeping reader with the sync flag.
    /// 2.4.17's and 2.6.0's sock_def_readable call wake_up_interruptible (no flag);
    /// today's (net/core/sock.c) calls wake_up_interruptible_sync_poll. By default,
    /// no flag.
    fn socket_wake_sync(&self) -> bool {
        false
    }
    /// How a TCP segment sent over loopback passes the loopback device on this
    /// policy's kernel ([`LoopbackXmit`]).
    fn loopback_xmit(&self) -> LoopbackXmit;
    /// `id` became runnable (woken or new) from `cpu`'s context; returns the CPU whose
    /// queue it joined (the one to kick or preempt).
    fn add(&mut self, tasks: &[SimTask], id: TaskId, cpu: usize, why: Why) -> usize;
    /// `id` stopped being runnable (blocked, slept, exited).
    fn remove(&mut self, tasks: &[SimTask], id: TaskId);
    /// `id` went to sleep (it blocked or slept; it did not exit): by default it leaves
    /// the queue as [`Scheduler::remove`] has it.
    fn block(&mut self, tasks: &[SimTask], id: TaskId) {
        self.remove(tasks, id);
    }
    /// schedule() on `cpu`; `prev` is the task that just ran if it is still runnable.
    fn pick(&mut self, tasks: &[SimTask], cpu: usize, prev: Option<TaskId>, now: u64) -> Pick;
    /// A timer tick on `cpu` while `cur` runs; true asks for a reschedule.
    fn tick(&mut self, tasks: &[SimTask], cpu: usize, cur: TaskId, now: u64) -> bool;
    /// sched_yield by `cur` (a reschedule follows).
    fn on_yield(&mut self, tasks: &[SimTask], cpu: usize, cur: TaskId) -> Work;
    /// Whether waking `woken` preempts `cur`.
    fn wake_preempts(&self, tasks: &[SimTask], woken: TaskId, cur: TaskId) -> bool;
    /// Whether a forked child runs before its parent goes on.
    fn fork_child_first(&self) -> bool;
    /// `id` ran `ns` more (virtual-runtime policies account it).
    fn charge(&mut self, _tasks: &[SimTask], _id: TaskId, _ns: u64) {}
    /// An idle CPU's tick: pull work from a busier CPU.
    fn idle_balance(&mut self, _tasks: &[SimTask], _cpu: usize, _now: u64) -> Work {
        Work::default()
    }
    /// The timer tick (1/HZ).
    fn tick_ns(&self) -> u64 {
        TICK_NS
    }
    /// How long after its place on the 1/HZ grid the `k`-th tick reaches `cpu` (under
    /// a tenth of a tick). 0: ticks land on the grid, at a fixed point of any strictly
    /// periodic loop (see `o1_2002` for the policy that moves them, and why).
    fn tick_offset_ns(&self, _cpu: usize, _k: u64) -> u64 {
        0
    }
    /// Ends slices on a high-resolution timer (the HRTICK sched feature) where the
    /// policy has one; the profile says whether ([`super::CostProfile::hrtick`]).
    fn use_hrtick(&mut self, _on: bool) {}
    /// With an hrtick armed, how long `cur` may still run on `cpu` before its slice
    /// ends (0: it has ended; the hrtick's handler is the tick's). None: no hrtick
    /// armed, the tick decides.
    fn hrtick_left(&self, _tasks: &[SimTask], _cpu: usize, _cur: TaskId) -> Option<u64> {
        None
    }
    /// None: a wake-up that leaves a CPU idle sends it an IPI (reschedule_idle). Some:
    /// idle CPUs find work only at their idle rebalance tick, this often.
    fn idle_rebalance_ns(&self) -> Option<u64> {
        None
    }
    /// Whether sched_yield by `cur` does anything (2.4 returns at once when no other
    /// task waits).
    fn yield_reschedules(&self, _tasks: &[SimTask], _cpu: usize, _cur: TaskId) -> bool {
        true
    }
    /// `child` exited and `parent` reaps it.
    fn reap(&mut self, _tasks: &[SimTask], _child: TaskId, _parent: TaskId) {}
    /// A benchmark's set-up, before its timed region: main threads cloned the
    /// workload's threads in `clones`' order (parent, child), each child blocking at
    /// once and each parent going on to its next clone (chat_c's and chat_s's loops).
    /// The policy leaves the state its kernel's fork and schedule() would. By default
    /// nothing: each child keeps the state it was added with, as a new task.
    fn set_up_clones(&mut self, _tasks: &[SimTask], _clones: &[(TaskId, TaskId)]) {}
}

pub use super::policy::PolicyKind;

/// The simulator's only source of chance: the statistics' seeded SplitMix64.
pub struct Rng(oscost_figure::stats::SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(oscost_figure::stats::SplitMix64::new(seed))
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Exponentially distributed with this mean.
    pub fn exp(&mut self, mean: f64) -> u64 {
        (-mean * (1.0 - self.unit()).ln()).round() as u64
    }
}
