//! The chat-room workload used to evaluate schedulers (the "chat" benchmark behind
//! hackbench): R rooms of 20 users; each user connects to a server over TCP on the
//! loopback address and sends M messages; the server sends every message to the other
//! 19 users of the room. Client and server each run a sender and a receiver thread per
//! user (80 threads per room). Every message is counted at its receiver: delivered
//! must equal R × 20 × M × 19 exactly, or the run fails.
//!
//! Timing model: from the moment all client senders are released (stamped just before
//! the first is unparked, so no send precedes it) until the last client receiver has its
//! 19 × M messages; the figure is messages delivered per second.
//!
//! The regime beside the rate (what the scheduler laboratory's model is grounded on):
//! each thread reads its own switch counters (`getrusage(RUSAGE_THREAD)`) when it
//! starts its work (a client sender after the gate) and when it ends, one call each
//! outside its message loop; every socket's segment counters (`TCP_INFO`) are read
//! once the connections are up and once every thread has ended. From them: switches
//! per message delivered, messages per reader wake-up (a reader's voluntary switches
//! are its sleeps), and segments per message written to a connection. The sockets
//! run with TCP_NODELAY: a write is sent at once unless the kernel corks it behind a
//! segment still in flight (tcp_autocorking). The CPUs' idle counters are read over
//! the timed region alone, and each client receiver stamps when it had all its messages
//! (how evenly the users progressed).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::bench::{Ctx, Output};
use crate::runner::BenchError;
use oscost_figure::key::{BenchId, Param};
use oscost_figure::model::{Count, Method, ResultRow};
use oscost_platform::{procfs, sys};

/// The benchmark's id.
pub const ID: BenchId = BenchId::new("load.chat");
/// The nice level every chat thread ran at (0 or 19).
pub const NICE: Param<i64> = Param::new("nice");
/// Chat rooms of 20 users.
pub const ROOMS: Param<u64> = Param::new("rooms");
/// Messages each user writes.
pub const MESSAGES: Param<u64> = Param::new("messages");

pub const USERS_PER_ROOM: usize = 20;
/// A sender and a receiver thread per user, on the client and on the server side.
pub const THREADS_PER_ROOM: usize = USERS_PER_ROOM * 4;
const MSG: usize = 100;
const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// The size of a chat run.
#[derive(Debug, Clone, Copy)]
pub struct ChatSize {
    pub rooms: usize,
    pub messages: usize,
    pub nice: Option<i32>,
}

impl ChatSize {
    /// Deliveries the run must count exactly.
    pub fn expected(&self) -> u64 {
        (self.rooms * USERS_PER_ROOM * self.messages * (USERS_PER_ROOM - 1)) as u64
    }
}

/// One finished run.
#[derive(Debug, Clone, Copy)]
pub struct ChatOutcome {
    pub delivered: u64,
    pub elapsed: Duration,
    /// How the kernel got there, when every counter could be read.
    pub regime: Option<Regime>,
}

/// The four threads of a user, as the regime counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    ClientSend,
    ClientRecv,
    ServerSend,
    ServerRecv,
}

/// Switches (voluntary, involuntary) of one role's threads, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Switches {
    pub voluntary: u64,
    pub involuntary: u64,
}

/// How long the run's CPUs sat idle and how often they went idle over the timed
/// region (from the release to the last client receiver's last message), and the CPU
/// time that window held (its wall time × the CPUs the run may use), µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuIdle {
    pub idle_us: u64,
    pub entries: u64,
    pub cpu_us: u64,
}

/// What the kernel did to deliver a run's messages: its threads' switches by role,
/// the segments its connections sent, and its CPUs' idle time and entries where the
/// kernel exposes cpuidle states.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Regime {
    pub client_send: Switches,
    pub client_recv: Switches,
    pub server_send: Switches,
    pub server_recv: Switches,
    pub segments: sys::TcpSegments,
    pub idle: Option<CpuIdle>,
    /// When the median client receiver had all its messages, as a share of the timed
    /// region, in millionths; summed over runs.
    pub median_finish_ppm: u64,
}

impl Regime {
    fn role_mut(&mut self, role: Role) -> &mut Switches {
        match role {
            Role::ClientSend => &mut self.client_send,
            Role::ClientRecv => &mut self.client_recv,
            Role::ServerSend => &mut self.server_send,
            Role::ServerRecv => &mut self.server_recv,
        }
    }

    /// The sum of two runs' regimes.
    pub fn plus(mut self, o: &Regime) -> Regime {
        for (a, b) in [
            (&mut self.client_send, o.client_send),
            (&mut self.client_recv, o.client_recv),
            (&mut self.server_send, o.server_send),
            (&mut self.server_recv, o.server_recv),
        ] {
            a.voluntary += b.voluntary;
            a.involuntary += b.involuntary;
        }
        self.segments.sent += o.segments.sent;
        self.segments.data_sent += o.segments.data_sent;
        self.median_finish_ppm += o.median_finish_ppm;
        self.idle = self.idle.zip(o.idle).map(|(a, b)| CpuIdle {
            idle_us: a.idle_us + b.idle_us,
            entries: a.entries + b.entries,
            cpu_us: a.cpu_us + b.cpu_us,
        });
        self
    }

    /// Every switch of the run's threads.
    pub fn switches(&self) -> Switches {
        let all = [self.client_send, self.client_recv, self.server_send, self.server_recv];
        Switches {
            voluntary: all.iter().map(|s| s.voluntary).sum(),
            involuntary: all.iter().map(|s| s.involuntary).sum(),
        }
    }

    /// The regime's figures for `runs` runs of `size`.
    pub fn figures(&self, size: ChatSize, runs: usize) -> RegimeFigures {
        let users = (size.rooms * USERS_PER_ROOM * runs) as f64;
        let m = size.messages as f64;
        let delivered = users * m * (USERS_PER_ROOM - 1) as f64;
        // Each message crosses two connections' worth of writes: the user's to the
        // server, and the server's to each of the 19 others.
        let written = users * m * USERS_PER_ROOM as f64;
        let per = |n: u64, d: f64| n as f64 / d.max(1.0);
        let switches = self.switches();
        RegimeFigures {
            switches_per_message: per(switches.voluntary + switches.involuntary, delivered),
            client_messages_per_wake: delivered / self.client_recv.voluntary.max(1) as f64,
            server_messages_per_wake: users * m / self.server_recv.voluntary.max(1) as f64,
            segments_per_message: per(self.segments.sent, written),
            data_segments_per_message: per(self.segments.data_sent, written),
            cpu_idle_share: self.idle.map(|i| per(i.idle_us, i.cpu_us as f64)),
            idle_entries_per_message: self.idle.map(|i| per(i.entries, delivered)),
            median_finish: per(self.median_finish_ppm, 1e6 * runs as f64),
        }
    }
}

/// A regime as the figures the laboratory's model is held against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegimeFigures {
    pub switches_per_message: f64,
    pub client_messages_per_wake: f64,
    pub server_messages_per_wake: f64,
    pub segments_per_message: f64,
    pub data_segments_per_message: f64,
    /// The share of the run's CPU time its CPUs sat idle.
    pub cpu_idle_share: Option<f64>,
    /// How often a CPU of the run went idle, per message delivered.
    pub idle_entries_per_message: Option<f64>,
    /// When the median client receiver had all its messages, as a share of the timed
    /// region (the mean over runs): how evenly the users progressed, 1 for all at once.
    pub median_finish: f64,
}

/// Where the threads add their switches as they end; `failed` once any counter
/// could not be read, and the run then has no regime.
#[derive(Default)]
struct RegimeTally {
    regime: Mutex<Regime>,
    failed: std::sync::atomic::AtomicBool,
}

impl RegimeTally {
    /// This thread's counters at the start of its work.
    fn start(&self) -> Option<(u64, u64)> {
        let s = sys::thread_switches().ok();
        if s.is_none() {
            self.failed.store(true, Ordering::Relaxed);
        }
        s
    }

    /// Adds this thread's switches since `start` to its role's.
    fn end(&self, role: Role, start: Option<(u64, u64)>) {
        let (Some((v0, i0)), Ok((v1, i1))) = (start, sys::thread_switches()) else {
            self.failed.store(true, Ordering::Relaxed);
            return;
        };
        if let Ok(mut r) = self.regime.lock() {
            let s = r.role_mut(role);
            s.voluntary += v1.saturating_sub(v0);
            s.involuntary += i1.saturating_sub(i0);
        }
    }
}

/// Every socket of the run, so any failure can shut all of them and free every thread.
#[derive(Default, Clone)]
struct Sockets(Arc<Mutex<Vec<TcpStream>>>);

impl Sockets {
    fn add(&self, s: &TcpStream) -> std::io::Result<()> {
        let c = s.try_clone()?;
        if let Ok(mut v) = self.0.lock() {
            v.push(c);
        }
        Ok(())
    }
    /// The segments every socket has sent so far; None when one cannot say.
    fn segments(&self) -> Option<sys::TcpSegments> {
        let v = self.0.lock().ok()?;
        let mut sum = sys::TcpSegments::default();
        for s in v.iter() {
            let c = sys::tcp_segments(s).ok()?;
            sum.sent += c.sent;
            sum.data_sent += c.data_sent;
        }
        Some(sum)
    }
    fn shutdown_all(&self) {
        if let Ok(v) = self.0.lock() {
            for s in v.iter() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

fn prepare(s: &TcpStream) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))
}

fn set_nice(nice: Option<i32>) {
    if let Some(n) = nice {
        let _ = sys::set_nice(n);
    }
}

/// Why a chat run failed; each names the user or thread it happened to.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// A socket or thread call failed: what was being done, and the error.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    /// A socket call failed where the error says enough.
    #[error(transparent)]
    Socket(#[from] std::io::Error),
    #[error("server queue of user {user} closed early")]
    QueueClosed { user: usize },
    #[error("a server sender stopped early")]
    SenderStopped,
    #[error("a chat thread panicked")]
    Panicked,
    #[error("delivered {delivered} messages, expected exactly {expected}")]
    Delivered { delivered: u64, expected: u64 },
    #[error("interrupted")]
    Interrupted,
}

impl ChatError {
    /// The failure of `what`, for `map_err`.
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| ChatError::Io { what, source }
    }
}

type Job = std::thread::JoinHandle<Result<(), ChatError>>;

/// Starts a chat thread named `name`. The name is the thread's comm, which the kernel
/// cuts at 15 bytes: the four roles' names fit whole, so perf, ps and top tell them
/// apart.
fn spawn(
    name: &str,
    sockets: &Sockets,
    f: impl FnOnce() -> Result<(), ChatError> + Send + 'static,
) -> Result<Job, ChatError> {
    let sockets = sockets.clone();
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(128 << 10)
        .spawn(move || {
            let r = f();
            if r.is_err() {
                sockets.shutdown_all();
            }
            r
        })
        .map_err(ChatError::io(format!("starting a {name} thread")))
}

/// Where client senders wait until all of them are there (so the timed region starts
/// with every sender ready, as a barrier would), released together by `release`, or
/// turned away by `abandon` on an error path so none waits forever.
///
/// Each sender parks on its own thread's futex and the release unparks them one by one.
/// A condition variable's notify_all would wake them all onto its one mutex, which they
/// would then take in turn: with 200 senders (10 rooms) that convoy made 1,200–3,200
/// futex waits over 20–110 ms of each timed region on Linux 6.18 (perf's sched_switch
/// call chains, six runs), senders starting one after another instead of together.
#[derive(Default)]
struct Gate {
    /// The senders that arrived, to unpark.
    arrived: Mutex<Vec<std::thread::Thread>>,
    /// [`Gate::WAIT`], [`Gate::GO`] or [`Gate::ABANDONED`].
    state: AtomicU8,
}

impl Gate {
    const WAIT: u8 = 0;
    const GO: u8 = 1;
    const ABANDONED: u8 = 2;

    fn abandon(&self) {
        let _ = self.state.compare_exchange(Self::WAIT, Self::ABANDONED, Ordering::AcqRel, Ordering::Acquire);
        self.unpark_all();
    }

    fn unpark_all(&self) {
        if let Ok(v) = self.arrived.lock() {
            v.iter().for_each(std::thread::Thread::unpark);
        }
    }

    /// Waits until `n` senders arrived; false if interrupted or abandoned first.
    fn all_arrived(&self, n: usize) -> bool {
        loop {
            match self.arrived.lock() {
                Ok(v) if v.len() >= n => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
            if sys::interrupted() || self.state.load(Ordering::Acquire) == Self::ABANDONED {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Lets every sender go: the moment they were let go, or None if the gate was
    /// abandoned first.
    fn release(&self) -> Option<Instant> {
        let t0 = Instant::now();
        self.state.compare_exchange(Self::WAIT, Self::GO, Ordering::AcqRel, Ordering::Acquire).ok()?;
        self.unpark_all();
        Some(t0)
    }

    /// A sender arrives and waits; true to go, false when the run was abandoned. An
    /// unpark that comes before the park is kept by the thread, so none is missed.
    fn wait(&self) -> bool {
        match self.arrived.lock() {
            Ok(mut v) => v.push(std::thread::current()),
            Err(_) => return false,
        }
        loop {
            match self.state.load(Ordering::Acquire) {
                Self::GO => return true,
                Self::ABANDONED => return false,
                _ => std::thread::park(),
            }
        }
    }
}

/// Runs the workload once against a server it starts on 127.0.0.1 (or, for tests of
/// the failure path, against `server` without starting one).
pub fn run_once(size: ChatSize, server: Option<SocketAddr>) -> Result<ChatOutcome, ChatError> {
    let sockets = Sockets::default();
    let gate = Arc::new(Gate::default());
    let regime = Arc::new(RegimeTally::default());
    let mut jobs: Vec<Job> = Vec::new();
    let result = run_inner(size, server, &sockets, &gate, &regime, &mut jobs);
    if result.is_err() {
        gate.abandon();
        sockets.shutdown_all();
    }
    // Every thread is joined on every path.
    let mut first_err = None;
    for j in jobs {
        match j.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(ChatError::Panicked);
            }
        }
    }
    let (mut outcome, segments_before, timeline) = result?;
    if let Some(e) = first_err {
        return Err(e);
    }
    outcome.regime = regime_of(&regime, segments_before, sockets.segments()).map(|r| Regime {
        idle: timeline.idle,
        median_finish_ppm: timeline.median_finish_ppm,
        ..r
    });
    if outcome.delivered != size.expected() {
        return Err(ChatError::Delivered { delivered: outcome.delivered, expected: size.expected() });
    }
    Ok(outcome)
}

/// The run's regime from its threads' tally and the sockets' counters before and
/// after; None if any counter could not be read.
fn regime_of(tally: &RegimeTally, before: Option<sys::TcpSegments>, after: Option<sys::TcpSegments>) -> Option<Regime> {
    let (before, after) = (before?, after?);
    if tally.failed.load(Ordering::Relaxed) {
        return None;
    }
    let mut r = *tally.regime.lock().ok()?;
    r.segments = sys::TcpSegments {
        sent: after.sent.saturating_sub(before.sent),
        data_sent: after.data_sent.saturating_sub(before.data_sent),
    };
    // A kernel older than 4.6 leaves the counters at zero: no regime rather than a
    // false one (a run always sends data).
    (r.segments.data_sent > 0).then_some(r)
}

/// Connects every user (and, with our own server, accepts each): (clients, server side).
fn connect_all(
    users: usize,
    server: Option<SocketAddr>,
    sockets: &Sockets,
) -> Result<(Vec<TcpStream>, Vec<TcpStream>), ChatError> {
    let listener = match server {
        None => Some(TcpListener::bind("127.0.0.1:0").map_err(ChatError::io("binding the chat server on 127.0.0.1"))?),
        Some(_) => None,
    };
    let addr = match (&listener, server) {
        (Some(l), _) => l.local_addr()?,
        (None, Some(a)) => a,
        (None, None) => unreachable!("a server is either started or given"),
    };
    let keep = |s: TcpStream, into: &mut Vec<TcpStream>| -> Result<(), ChatError> {
        prepare(&s)?;
        sockets.add(&s)?;
        into.push(s);
        Ok(())
    };
    let (mut clients, mut servers) = (Vec::with_capacity(users), Vec::with_capacity(users));
    for u in 0..users {
        let c = TcpStream::connect_timeout(&addr, IO_TIMEOUT)
            .map_err(ChatError::io(format!("user {u} connecting to the chat server {addr}")))?;
        keep(c, &mut clients)?;
        if let Some(l) = &listener {
            let (s, _) = l.accept().map_err(ChatError::io(format!("accepting user {u}")))?;
            keep(s, &mut servers)?;
        }
    }
    Ok((clients, servers))
}

/// The server: per user a sender (drains its queue to the socket) and a receiver (fans
/// each message out to the room's other senders).
fn start_server(
    size: ChatSize,
    socks: &[TcpStream],
    sockets: &Sockets,
    regime: &Arc<RegimeTally>,
    jobs: &mut Vec<Job>,
) -> Result<(), ChatError> {
    let per_receiver = (USERS_PER_ROOM - 1) * size.messages;
    let mut queues: Vec<mpsc::Sender<[u8; MSG]>> = Vec::with_capacity(socks.len());
    for (u, s) in socks.iter().enumerate() {
        let (tx, rx) = mpsc::channel::<[u8; MSG]>();
        queues.push(tx);
        let mut w = s.try_clone()?;
        let (nice, regime) = (size.nice, regime.clone());
        jobs.push(spawn("oscost-srv-tx", sockets, move || {
            set_nice(nice);
            let start = regime.start();
            for _ in 0..per_receiver {
                let m = rx.recv().map_err(|_| ChatError::QueueClosed { user: u })?;
                w.write_all(&m).map_err(ChatError::io(format!("server sending to user {u}")))?;
            }
            regime.end(Role::ServerSend, start);
            Ok(())
        })?);
    }
    for (u, s) in socks.iter().enumerate() {
        let room = u / USERS_PER_ROOM;
        let peers: Vec<mpsc::Sender<[u8; MSG]>> = (room * USERS_PER_ROOM..(room + 1) * USERS_PER_ROOM)
            .filter(|&v| v != u)
            .map(|v| queues[v].clone())
            .collect();
        let mut r = s.try_clone()?;
        let (messages, nice, regime) = (size.messages, size.nice, regime.clone());
        jobs.push(spawn("oscost-srv-rx", sockets, move || {
            set_nice(nice);
            let start = regime.start();
            let mut m = [0u8; MSG];
            for _ in 0..messages {
                r.read_exact(&mut m).map_err(ChatError::io(format!("server receiving from user {u}")))?;
                for p in &peers {
                    p.send(m).map_err(|_| ChatError::SenderStopped)?;
                }
            }
            regime.end(Role::ServerRecv, start);
            Ok(())
        })?);
    }
    Ok(())
}

/// What the timed region's clock says of the run beside its rate: the CPUs' idle time
/// and how evenly the users finished.
struct Timeline {
    idle: Option<CpuIdle>,
    median_finish_ppm: u64,
}

/// What the client receivers share: the delivery count, when each had all its
/// messages (the last of them ends the timed region), and the CPUs' idle counters over
/// the timed region.
struct Tally {
    delivered: AtomicU64,
    /// Room for every receiver from the start: no receiver allocates while others are
    /// still in their timed loops.
    finished: Mutex<Vec<Instant>>,
    idle: IdleWindow,
}

impl Tally {
    /// A receiver has all its messages: the moment is stamped, and the last receiver
    /// closes the idle window.
    fn receiver_done(&self) {
        let now = Instant::now();
        if let Ok(mut f) = self.finished.lock() {
            f.push(now);
        }
        self.idle.receiver_done();
    }

    /// When the last receiver had all its messages, if any did.
    fn end(&self) -> Option<Instant> {
        self.finished.lock().ok()?.iter().max().copied()
    }

    /// When the median receiver finished, as a share of the timed region from `t0`
    /// to `end`, in millionths (the upper median).
    fn median_finish_ppm(&self, t0: Instant, end: Instant) -> u64 {
        let span = end.saturating_duration_since(t0).as_secs_f64();
        let mut shares: Vec<f64> = match self.finished.lock() {
            Ok(f) => f.iter().map(|t| t.saturating_duration_since(t0).as_secs_f64() / span.max(1e-9)).collect(),
            Err(_) => return 0,
        };
        shares.sort_by(f64::total_cmp);
        shares.get(shares.len() / 2).map_or(0, |m| (m.min(1.0) * 1e6).round() as u64)
    }
}

/// The CPUs' idle counters read at the two ends of the timed region: by the
/// coordinator once every sender waits at the gate, just before it stamps the release,
/// and by the client receiver that finishes last, once it has its messages. The
/// coordinator's own waits on either side (the senders' arrival, the threads' exits)
/// fall outside, so the share is the scheduler's while the messages flow.
struct IdleWindow {
    cpus: Vec<usize>,
    receivers_left: AtomicUsize,
    start: OnceLock<Option<(procfs::IdleTotals, Instant)>>,
    end: OnceLock<Option<(procfs::IdleTotals, Instant)>>,
}

impl IdleWindow {
    fn new(cpus: Vec<usize>, receivers: usize) -> IdleWindow {
        IdleWindow { cpus, receivers_left: AtomicUsize::new(receivers), start: OnceLock::new(), end: OnceLock::new() }
    }

    /// Reads the counters, then the clock: the window opens after the read.
    fn open(&self) {
        let read = procfs::cpuidle_totals(&self.cpus).map(|t| (t, Instant::now()));
        let _ = self.start.set(read);
    }

    /// A client receiver has its messages; the last one reads the clock, then the
    /// counters: the window closes before the read.
    fn receiver_done(&self) {
        if self.receivers_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let at = Instant::now();
            let _ = self.end.set(procfs::cpuidle_totals(&self.cpus).map(|t| (t, at)));
        }
    }

    /// The idle figures between the two reads, if both were made.
    fn idle(&self) -> Option<CpuIdle> {
        let ((a, since), (b, until)) = (self.start.get().copied()??, self.end.get().copied()??);
        Some(CpuIdle {
            idle_us: b.time_us.saturating_sub(a.time_us),
            entries: b.entries.saturating_sub(a.entries),
            cpu_us: until.saturating_duration_since(since).as_micros() as u64 * self.cpus.len() as u64,
        })
    }
}

/// The clients: per user a sender of M messages (held at the gate) and a receiver
/// counting 19 × M.
fn start_clients(
    size: ChatSize,
    socks: &[TcpStream],
    sockets: &Sockets,
    gate: &Arc<Gate>,
    tally: &Arc<Tally>,
    regime: &Arc<RegimeTally>,
    jobs: &mut Vec<Job>,
) -> Result<(), ChatError> {
    let per_receiver = (USERS_PER_ROOM - 1) * size.messages;
    for (u, c) in socks.iter().enumerate() {
        let mut w = c.try_clone()?;
        let (messages, nice, gate, tx_regime) = (size.messages, size.nice, gate.clone(), regime.clone());
        jobs.push(spawn("oscost-cli-tx", sockets, move || {
            set_nice(nice);
            let mut m = [0u8; MSG];
            m[..8].copy_from_slice(&(u as u64).to_le_bytes());
            if !gate.wait() {
                return Ok(()); // the run was abandoned before it started
            }
            let start = tx_regime.start();
            for _ in 0..messages {
                w.write_all(&m).map_err(ChatError::io(format!("user {u} sending")))?;
            }
            tx_regime.end(Role::ClientSend, start);
            Ok(())
        })?);
        let mut r = c.try_clone()?;
        let (nice, tally, regime) = (size.nice, tally.clone(), regime.clone());
        jobs.push(spawn("oscost-cli-rx", sockets, move || {
            set_nice(nice);
            let start = regime.start();
            let mut m = [0u8; MSG];
            for _ in 0..per_receiver {
                r.read_exact(&mut m).map_err(ChatError::io(format!("user {u} receiving")))?;
                tally.delivered.fetch_add(1, Ordering::Relaxed);
            }
            tally.receiver_done();
            regime.end(Role::ClientRecv, start);
            Ok(())
        })?);
    }
    Ok(())
}

fn run_inner(
    size: ChatSize,
    server: Option<SocketAddr>,
    sockets: &Sockets,
    gate: &Arc<Gate>,
    regime: &Arc<RegimeTally>,
    jobs: &mut Vec<Job>,
) -> Result<(ChatOutcome, Option<sys::TcpSegments>, Timeline), ChatError> {
    let (clients, servers) = connect_all(size.rooms * USERS_PER_ROOM, server, sockets)?;
    let segments_before = sockets.segments();
    start_server(size, &servers, sockets, regime, jobs)?;
    let idle = IdleWindow::new(sys::allowed_cpus().unwrap_or_default(), clients.len());
    let finished = Mutex::new(Vec::with_capacity(clients.len()));
    let tally = Arc::new(Tally { delivered: AtomicU64::new(0), finished, idle });
    start_clients(size, &clients, sockets, gate, &tally, regime, jobs)?;
    if !gate.all_arrived(clients.len()) {
        return Err(ChatError::Interrupted);
    }
    tally.idle.open();
    let Some(t0) = gate.release() else {
        return Err(ChatError::Interrupted);
    };
    // Wait for the jobs (joined by the caller); the last receiver's stamp ends the timed region.
    for j in jobs.iter() {
        while !j.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
            if sys::interrupted() {
                return Err(ChatError::Interrupted);
            }
        }
    }
    let end = tally.end().unwrap_or_else(Instant::now);
    let timeline = Timeline { idle: tally.idle.idle(), median_finish_ppm: tally.median_finish_ppm(t0, end) };
    let outcome = ChatOutcome {
        delivered: tally.delivered.load(Ordering::Relaxed),
        elapsed: end.saturating_duration_since(t0),
        regime: None,
    };
    Ok((outcome, segments_before, timeline))
}

/// Runs per nice level: three with the standard budgets, one with --quick's.
pub fn repetitions(cfg: &crate::runner::MeasureConfig) -> usize {
    if cfg.batch_budget.as_millis() >= 200 { 3 } else { 1 }
}

/// The regime's figures and switch totals on `row`.
fn insert_regime(row: &mut ResultRow, r: &Regime, size: ChatSize, runs: usize) {
    let f = r.figures(size, runs);
    let s = r.switches();
    for (count, value) in [
        (Count::SwitchesPerMessage, f.switches_per_message),
        (Count::ClientMessagesPerWake, f.client_messages_per_wake),
        (Count::ServerMessagesPerWake, f.server_messages_per_wake),
        (Count::SegmentsPerMessage, f.segments_per_message),
        (Count::DataSegmentsPerMessage, f.data_segments_per_message),
        (Count::VoluntarySwitches, s.voluntary as f64),
        (Count::InvoluntarySwitches, s.involuntary as f64),
        (Count::MedianFinishShare, f.median_finish),
    ] {
        row.counts.insert(count, value);
    }
    for (count, value) in
        [(Count::CpuIdleShare, f.cpu_idle_share), (Count::IdleEntriesPerMessage, f.idle_entries_per_message)]
    {
        if let Some(v) = value {
            row.counts.insert(count, v);
        }
    }
}

/// Messages per user in the trace pass (its switches must fit the buffers).
const TRACED_MESSAGES: usize = 5;

pub fn run(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let reps = repetitions(ctx.cfg);
    for nice in [0, 19] {
        let size = ChatSize { rooms: ctx.opts.rooms, messages: ctx.opts.messages, nice: Some(nice) };
        let mut rates = Vec::new();
        let mut delivered = 0;
        let mut regimes = Vec::new();
        for _ in 0..reps {
            let o = run_once(size, None).map_err(|e| {
                if sys::interrupted() { BenchError::Interrupted } else { BenchError::Failed(e.to_string()) }
            })?;
            delivered += o.delivered;
            regimes.push(o.regime);
            rates.push(o.delivered as f64 / o.elapsed.as_secs_f64().max(1e-9));
        }
        // Every run's regime summed, or none if any run had none.
        let regime = regimes.into_iter().reduce(|a, b| a.zip(b).map(|(a, b)| a.plus(&b))).flatten();
        let mut row = ResultRow::from_samples(
            ID,
            Method::Workload,
            oscost_figure::unit::Unit::MessagesPerSecond,
            rates,
            delivered,
        )
        .ok_or_else(|| BenchError::Failed("no runs".into()))?
        .with(ROOMS, size.rooms as u64)
        .with(MESSAGES, size.messages as u64)
        .with(NICE, i64::from(nice))
        .with_param("threads", (size.rooms * USERS_PER_ROOM * 4) as u64);
        if let Ok(cpus) = sys::allowed_cpus() {
            row.counts.insert(Count::AllowedCpus, cpus.len() as f64);
        }
        row.counts.insert(Count::Delivered, delivered as f64);
        row.counts.insert(Count::ExpectedPerRun, size.expected() as f64);
        if let Some(r) = regime {
            insert_regime(&mut row, &r, size, reps);
        }
        // The trace pass: one room, a few messages, its threads followed as they start.
        let small = ChatSize { rooms: 1, messages: size.messages.min(TRACED_MESSAGES), nice: size.nice };
        let trace = crate::tracepass::trace_window_following(ctx.cfg, &[crate::kcounts::Task::current()], || {
            run_once(small, None).map(|o| o.delivered).map_err(Into::into)
        });
        crate::bench::attach_trace(&mut row, trace);
        out.push(row);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_is_counted_exactly() {
        let size = ChatSize { rooms: 1, messages: 5, nice: None };
        assert_eq!(size.expected(), 20 * 5 * 19);
        let o = run_once(size, None).unwrap();
        assert_eq!(o.delivered, size.expected());
        // The regime: every message written crossed in some data segment, and a
        // segment carries one message or more.
        let r = o.regime.expect("this kernel reports each thread's switches and each socket's segments");
        let written = (USERS_PER_ROOM * 5 * USERS_PER_ROOM) as u64;
        assert!((1..=written).contains(&r.segments.data_sent), "{r:?}");
        assert!(r.segments.sent >= r.segments.data_sent, "{r:?}");
        let f = r.figures(size, 1);
        assert!(f.data_segments_per_message > 0.0 && f.data_segments_per_message <= 1.0, "{f:?}");
        assert!(f.median_finish > 0.0 && f.median_finish <= 1.0, "a share of the timed region: {f:?}");
        // The CPUs' idle figures, where this machine has cpuidle states to read.
        let cpus = sys::allowed_cpus().unwrap_or_default();
        match procfs::cpuidle_totals(&cpus) {
            Some(_) => assert!(r.idle.is_some_and(|i| i.cpu_us > 0) && f.cpu_idle_share.is_some(), "{r:?}"),
            None => eprintln!("skipped the idle figures: no cpuidle states here"),
        }
    }

    #[test]
    fn runs_regimes_sum_their_idle_only_when_every_run_has_it() {
        let idle = |us| Some(CpuIdle { idle_us: us, entries: 2, cpu_us: 1000 });
        let a = Regime { idle: idle(100), ..Regime::default() };
        let b = Regime { idle: idle(50), ..Regime::default() };
        assert_eq!(a.plus(&b).idle, Some(CpuIdle { idle_us: 150, entries: 4, cpu_us: 2000 }));
        assert_eq!(a.plus(&Regime::default()).idle, None, "a run without them: none for the sum");
        let size = ChatSize { rooms: 1, messages: 10, nice: None };
        let f = a.plus(&b).figures(size, 2);
        assert_eq!(f.cpu_idle_share, Some(0.075));
        assert_eq!(f.idle_entries_per_message, Some(4.0 / (2.0 * 20.0 * 10.0 * 19.0)));
    }

    #[test]
    fn the_median_receivers_finish_is_a_share_of_the_timed_region_averaged_over_runs() {
        let tally =
            Tally { delivered: AtomicU64::new(0), finished: Mutex::default(), idle: IdleWindow::new(Vec::new(), 3) };
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        tally.finished.lock().unwrap().extend([at(90), at(10), at(50)]);
        assert_eq!(tally.median_finish_ppm(t0, at(100)), 500_000);
        // A run whose users all finish at its end: 1.
        let a = Regime { median_finish_ppm: 500_000, ..Regime::default() };
        let b = Regime { median_finish_ppm: 1_000_000, ..Regime::default() };
        let size = ChatSize { rooms: 1, messages: 10, nice: None };
        assert_eq!(a.plus(&b).figures(size, 2).median_finish, 0.75);
    }

    #[test]
    fn only_the_last_receiver_closes_the_idle_window() {
        let cpus = sys::allowed_cpus().unwrap_or_default();
        if procfs::cpuidle_totals(&cpus).is_none() {
            eprintln!("skipped: no cpuidle states here");
            return;
        }
        let window = IdleWindow::new(cpus, 3);
        window.open();
        window.receiver_done();
        window.receiver_done();
        assert_eq!(window.idle(), None, "two of three receivers: the window is still open");
        window.receiver_done();
        assert!(window.idle().is_some(), "closed by the third");
    }

    fn waiting_senders(gate: &Arc<Gate>, n: usize) -> Vec<std::thread::JoinHandle<bool>> {
        (0..n)
            .map(|_| {
                let g = gate.clone();
                std::thread::spawn(move || g.wait())
            })
            .collect()
    }

    #[test]
    fn the_gate_lets_every_sender_go_once_all_arrived() {
        let gate = Arc::new(Gate::default());
        let senders = waiting_senders(&gate, 8);
        assert!(gate.all_arrived(8));
        assert!(gate.release().is_some());
        assert!(senders.into_iter().all(|s| s.join().unwrap()));
        // One that comes after the release goes at once.
        assert!(gate.wait());
    }

    #[test]
    fn an_abandoned_gate_turns_every_sender_away() {
        let gate = Arc::new(Gate::default());
        let senders = waiting_senders(&gate, 4);
        while gate.arrived.lock().unwrap().len() < 4 {
            std::thread::yield_now();
        }
        gate.abandon();
        assert!(senders.into_iter().all(|s| !s.join().unwrap()));
        assert!(!gate.all_arrived(5), "no wait on an abandoned gate");
        assert_eq!(gate.release(), None);
        assert!(!gate.wait(), "a late sender is turned away too");
    }

    #[test]
    fn refused_connection_is_a_clear_error_and_frees_everything() {
        // A port that was just free: nothing listens there now.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let e = run_once(ChatSize { rooms: 1, messages: 1, nice: None }, Some(port)).unwrap_err().to_string();
        assert!(e.contains("connecting to the chat server") && e.contains("refused"), "{e}");
    }
}
