//! The chat workload as Bill Hartner's chat benchmark (IBM, version 1.0.1, December
//! 2000) is built, which Molnar ran as `./chat_c 10 1000` against `chat_s`.
//!
//! Why this shape and not "users sending to random peers" (003's one-line summary):
//! the benchmark's sources (chat_c.c, chat_s.c, chat.h) show a server that relays.
//! Each user of a room of 20 is four threads (clone with CLONE_VM: two processes,
//! chat_c's and chat_s's, each one address space) and one TCP connection:
//!
//! - the client's sender (`cli_snd`) writes its `messages` 100-byte messages to the
//!   server as fast as the socket takes them (it blocks only on a full window);
//! - the server's reader (`srv_rcv`) reads each one and posts the room's semaphore for
//!   its user (semop +1);
//! - the server's sender (`srv_snd`) takes each post (semop −1, asleep while none is
//!   posted) and writes the message to the 19 other users' connections;
//! - the client's reader (`cli_rcv`) reads its 19 × `messages` messages.
//!
//! chat_c counts its own sends and reads ("messages sent" + "messages received") over
//! the time from releasing its threads to the last one finishing: 20 × `messages` a
//! user. Nothing is drawn at random: the rate depends on the schedulers alone.
//!
//! What is not the benchmark's and is assumed: a connection takes [`WINDOW`] unread
//! messages before its writers block, and a read that leaves it half empty wakes them
//! (tcp_recvmsg's window update reaching the senders, whose write_space wakes its
//! sleepers once half the buffer is free: tcp_new_space).
//!
//! `nice -n 19 ./chat_c` renices the client's threads only: the server was started
//! apart, at nice 0, and is simulated so.

use std::collections::VecDeque;

use super::engine::{Engine, Outcome};
use super::types::{AckState, Action, Behavior, Rng, Shared, SocketTimer, SocketTimerKind, TaskId};

/// Users per room (chat.h's CLIENTS_PER_ROOM).
pub const ROOM: usize = 20;

/// Unread 100-byte messages a connection holds before its writer blocks (assumed).
///
/// Read against 2.4.17 (the benchmark sets no socket option: Nagle on, default
/// buffers): a lagging reader gets full 16 KB segments over loopback (MTU 16,436),
/// and `__tcp_select_window` (net/ipv4/tcp_output.c) closes the window once 3–4 of
/// them sit in the 87,380-byte receive buffer, 491–655 messages; the writer then
/// fills its own send buffer (50,148 bytes from `tcp_fixup_sndbuf`, raised to 131,072
/// by `tcp_new_space`) before it sleeps in `wait_for_tcp_memory`: about 1,150–1,970
/// messages in all. 640 is the receiver's share. The figures move by at most 17% with
/// 1,500 in its place (see docs/simulator.md): the choice within the kernel's range
/// does not decide a cell.
pub const WINDOW: usize = 640;

/// Which chat program runs: Hartner's chat_c against chat_s (the founding texts'),
/// or oscost's own `load.chat` (the one measured on today's kernel, which grounds the
/// model; see [`LoadChatSockets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// chat_s relays: its reader posts the user's semaphore, the user's server sender
    /// writes the message to the 19 others; a write is one delivery; the writer
    /// sleeps on [`WINDOW`] unread messages.
    ChatC,
    /// load.chat's server fans out: its reader hands the message to each of the 19
    /// others' server senders (a queue each, a wake-up when one sleeps), each of which
    /// writes everything for its user to its user's connection; the sockets are
    /// TCP_NODELAY, flow-controlled as [`LoadChatSockets`] says.
    LoadChat,
}

/// load.chat's connections over today's loopback TCP (TCP_NODELAY, default buffers),
/// as the kernel showed them here, not derived: `ss -ti` on this machine's loopback
/// during a load.chat run found the sender's unsent queue up to 98,296 bytes behind
/// send windows of 12,288–81,920 bytes, and about 34 messages a data segment, with
/// no autocorking (nstat's TcpExtTCPAutoCorking stayed 0: loopback_xmit orphans
/// the skb, so tcp_should_autocork finds no data in flight).
///
/// The mechanism modelled, from Linux 6.18's TCP:
/// - a write leaves at once as a segment of its own, and wakes the reader if it
///   sleeps, while the receiver's window has credit and fewer than [`CWND`] segments
///   are in flight unacknowledged (tcp_write_xmit's tcp_snd_wnd_test and
///   tcp_cwnd_test); otherwise it queues in the sender, with no segment and no wake-up;
/// - the receiver acknowledges on arrival once more than a segment's worth is
///   unanswered and its window has not shrunk since it last acknowledged, which a
///   lagging reader's unread data prevents (__tcp_ack_snd_check); after a read once
///   more than a segment's worth is unanswered, or the read emptied the queue after two
///   small segments (tcp_measure_rcv_mss's ICSK_ACK_PUSHED2), or the window can double
///   (tcp_cleanup_rbuf); else on its delayed acknowledgement's timer ([`DELACK_NS`]);
/// - the sender's tail loss probe ([`PROBE_NS`], [`PROBE_ONE_NS`]) sends the queued
///   messages the window takes, or the last segment again, which the receiver answers;
/// - an acknowledgement empties the congestion window, and the queued messages the
///   credit takes leave as one segment (loopback's MSS of 65,483 bytes holds the whole
///   window); the writer sleeps once [`SNDBUF`] are queued.
///
/// The timers' softirq work is not priced.
pub struct LoadChatSockets;

/// Unread messages the receive window takes (assumed: 12,800 bytes, the smallest send
/// window `ss` showed, where a backlog of 100-byte skbs' truesize keeps it).
pub const RWND: usize = 128;
/// Messages a sender queues behind a closed window before its writer sleeps
/// (assumed: the largest unsent queue `ss` showed, 98,296 bytes).
pub const SNDBUF: usize = 1000;

/// The receiver's first estimate of a segment, in messages: TCP_MSS_DEFAULT (536
/// bytes, tcp_initialize_rcv_mss) of 100-byte messages.
pub const FIRST_RCV_MSS: usize = 5;

/// Data segments a connection keeps in flight unacknowledged (assumed: the congestion
/// window `ss -tin` showed here under bbr, the kernel's default congestion control on
/// this machine: 10–19 segments, connections with data in flight sitting at 18–19).
/// tcp_write_xmit sends no segment past it (tcp_cwnd_test); cubic's grows instead.
pub const CWND: usize = 18;

/// The delayed acknowledgement's timer: TCP_DELACK_MIN (HZ/25), 40 ms.
pub const DELACK_NS: u64 = 40_000_000;
/// The tail loss probe's timer with one segment in flight and with more
/// (tcp_schedule_loss_probe: twice the smoothed round trip, microseconds on loopback,
/// plus TCP_RTO_MIN, 200 ms, or TCP_TIMEOUT_MIN, two jiffies at HZ = 250).
pub const PROBE_ONE_NS: u64 = 200_000_000;
pub const PROBE_NS: u64 = 8_000_000;

/// `reader`'s receiver acknowledges what it took, advertising `offer` (a window never
/// shrinks: tcp_select_window): the sender's segments in flight are answered, and the
/// messages queued behind the window (or the congestion window) that the credit now
/// takes leave as one segment (loopback's 64 KB segments hold the whole window).
fn acknowledge(shared: &mut Shared, reader: TaskId, offer: usize) {
    shared.credit[reader] = shared.credit[reader].max(offer);
    let a = &mut shared.acks[reader];
    *a = AckState {
        delack_generation: a.delack_generation + 1,
        probe_generation: a.probe_generation + 1,
        ..AckState::new(shared.credit[reader])
    };
    if send_held(shared, reader) {
        arm_delayed_ack(shared, reader);
        arm_loss_probe(shared, reader);
    }
}

/// The messages queued behind the window that the credit takes leave as one segment;
/// false when none could.
fn send_held(shared: &mut Shared, reader: TaskId) -> bool {
    let n = shared.held[reader].len().min(shared.credit[reader]);
    if n == 0 {
        return false;
    }
    let segment: Vec<usize> = shared.held[reader].drain(..n).collect();
    shared.inbox[reader].extend(segment);
    shared.credit[reader] -= n;
    shared.segments += 1;
    let a = &mut shared.acks[reader];
    a.in_flight += 1;
    a.unacked += n;
    a.pushed += u32::from(n < shared.rcv_mss[reader]);
    shared.rcv_mss[reader] = shared.rcv_mss[reader].max(n);
    true
}

/// The receiver's delayed acknowledgement, unless one is pending (tcp_send_delayed_ack
/// keeps the earlier deadline).
fn arm_delayed_ack(shared: &mut Shared, reader: TaskId) {
    if !shared.acks[reader].delack_pending {
        shared.acks[reader].delack_pending = true;
        shared.acks[reader].delack_generation += 1;
        let generation = shared.acks[reader].delack_generation;
        shared.socket_timers.push(SocketTimer {
            conn: reader,
            kind: SocketTimerKind::DelayedAck,
            generation,
            after_ns: DELACK_NS,
        });
    }
}

/// The sender's tail loss probe, re-armed at every new segment (tcp_write_xmit calls
/// tcp_schedule_loss_probe, which resets the timer).
fn arm_loss_probe(shared: &mut Shared, reader: TaskId) {
    shared.acks[reader].probe_generation += 1;
    let after_ns = if shared.acks[reader].in_flight == 1 { PROBE_ONE_NS } else { PROBE_NS };
    let generation = shared.acks[reader].probe_generation;
    shared.socket_timers.push(SocketTimer { conn: reader, kind: SocketTimerKind::LossProbe, generation, after_ns });
}

/// A connection's timer fires: the delayed acknowledgement answers what the receiver
/// took; the loss probe sends the queued messages the window takes as a new segment
/// (tcp_send_loss_probe), or else sends the last segment again, which the receiver
/// answers at once as a duplicate. Returns the reader when data reached it.
fn on_timer(shared: &mut Shared, timer: &SocketTimer) -> Option<TaskId> {
    let r = timer.conn;
    let before = shared.inbox[r].len();
    let offer = window(RWND.saturating_sub(before), shared.rcv_mss[r]);
    match timer.kind {
        SocketTimerKind::DelayedAck if timer.generation == shared.acks[r].delack_generation => {
            shared.acks[r].delack_pending = false;
            if shared.acks[r].unacked > 0 {
                acknowledge(shared, r, offer);
            }
        }
        SocketTimerKind::LossProbe
            if timer.generation == shared.acks[r].probe_generation && shared.acks[r].in_flight > 0 =>
        {
            if !send_held(shared, r) {
                shared.segments += 1;
                acknowledge(shared, r, offer);
            } else {
                arm_delayed_ack(shared, r);
            }
        }
        SocketTimerKind::DelayedAck | SocketTimerKind::LossProbe => {}
    }
    (shared.inbox[r].len() > before).then_some(r)
}

/// The window a receiver offers with `free` messages of room: none below one
/// segment, else rounded down to whole segments of `rcv_mss` (receiver-side silly
/// window avoidance: __tcp_select_window, net/ipv4/tcp_output.c).
fn window(free: usize, rcv_mss: usize) -> usize {
    if free < rcv_mss { 0 } else { free / rcv_mss * rcv_mss }
}

/// The four threads of one user, in the order each user's ids are handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    ClientSend,
    ServerRecv,
    ServerSend,
    ClientRecv,
}

const ROLES: [Role; 4] = [Role::ClientSend, Role::ServerRecv, Role::ServerSend, Role::ClientRecv];

/// Task ids of user `u`'s threads: four consecutive ids, in [`ROLES`]' order.
fn id_of(u: usize, role: Role) -> TaskId {
    4 * u + ROLES.iter().position(|&r| r == role).expect("a role of ROLES")
}

/// One chat thread: its role, its user and room, what it has done and what it owes.
struct ChatThread {
    program: Program,
    role: Role,
    user: usize,
    /// The room's first user.
    room: usize,
    /// Messages (or posts) it is still to handle.
    left: u64,
    /// The peers of the message in hand still to be served: chat_c's server sender
    /// writes it to each; load.chat's server reader hands it to each one's sender.
    relay: VecDeque<usize>,
    /// A read just made: the writers to wake (a window reopened), then the post to make
    /// (the server's reader).
    wake_writers: Vec<TaskId>,
    post: bool,
}

impl ChatThread {
    fn new(program: Program, role: Role, user: usize, messages: u64) -> Self {
        let peers = ROOM as u64 - 1;
        let left = match (program, role) {
            (_, Role::ClientRecv) | (Program::LoadChat, Role::ServerSend) => peers * messages,
            _ => messages,
        };
        Self {
            program,
            role,
            user,
            room: user / ROOM * ROOM,
            left,
            relay: VecDeque::new(),
            wake_writers: Vec::new(),
            post: false,
        }
    }

    /// The room's other users.
    fn peers(&self) -> VecDeque<usize> {
        (self.room..self.room + ROOM).filter(|&p| p != self.user).collect()
    }

    /// Writes to `reader`'s connection: a `Send`, a `SendHeld` behind a closed window,
    /// or `WaitWake` when the connection takes no more (the message stays in hand).
    fn write(&self, me: TaskId, reader: TaskId, shared: &mut Shared) -> Action {
        let unread = shared.inbox.get(reader).map_or(0, |q| q.len());
        let held = shared.held.get(reader).map_or(0, |q| q.len());
        let full = match self.program {
            Program::ChatC => unread >= WINDOW,
            Program::LoadChat => held >= SNDBUF,
        };
        if full {
            if !shared.writers_waiting[reader].contains(&me) {
                shared.writers_waiting[reader].push(me);
            }
            return Action::WaitWake;
        }
        match self.program {
            Program::LoadChat if held > 0 || shared.credit[reader] == 0 || shared.acks[reader].in_flight >= CWND => {
                Action::SendHeld(reader)
            }
            Program::LoadChat => {
                shared.credit[reader] -= 1;
                shared.segments += 1;
                let a = &mut shared.acks[reader];
                a.in_flight += 1;
                a.unacked += 1;
                a.pushed += 1;
                // The segment reaches the receiver at once (loopback), which
                // acknowledges it there when more than a segment's worth is
                // unanswered and its window would not shrink: the reader keeps up
                // (__tcp_ack_snd_check). Otherwise the acknowledgement waits for a read.
                let unread = shared.inbox[reader].len() + 1;
                let offer = window(RWND.saturating_sub(unread), shared.rcv_mss[reader]);
                if shared.acks[reader].unacked > shared.rcv_mss[reader] && offer >= shared.acks[reader].advertised {
                    acknowledge(shared, reader, offer);
                } else {
                    arm_delayed_ack(shared, reader);
                }
                if shared.acks[reader].in_flight > 0 {
                    arm_loss_probe(shared, reader);
                }
                Action::Send(reader)
            }
            Program::ChatC => Action::Send(reader),
        }
    }

    /// Reads one message, or waits for one; counts it as chat_c does when `counted`.
    fn read(&mut self, me: TaskId, shared: &mut Shared, counted: bool) -> Action {
        if shared.inbox.get(me).is_none_or(|q| q.is_empty()) {
            return Action::WaitWake;
        }
        self.left -= 1;
        if counted {
            shared.counted += 1;
        }
        // What stays unread once this read is done (the engine takes the message).
        let after = shared.inbox[me].len() - 1;
        match self.program {
            // A read that leaves the window half open wakes the writers waiting on it
            // (after the read itself, below).
            Program::ChatC => {
                if after <= WINDOW / 2 {
                    self.wake_writers = std::mem::take(&mut shared.writers_waiting[me]);
                }
            }
            Program::LoadChat => {
                // tcp_cleanup_rbuf acknowledges after the read once more than a
                // segment's worth is unanswered, and sends a window update once the
                // window the reader could offer is at least twice what the writers
                // still have; either frees the congestion window, and the queued
                // messages that fit leave as one segment.
                let offer = window(RWND.saturating_sub(after), shared.rcv_mss[me]);
                let update = offer > 0 && offer >= 2 * shared.credit[me];
                if update || shared.acks[me].unacked > shared.rcv_mss[me] || (after == 0 && shared.acks[me].pushed >= 2)
                {
                    acknowledge(shared, me, offer);
                }
                if shared.held[me].len() <= SNDBUF / 2 {
                    self.wake_writers = std::mem::take(&mut shared.writers_waiting[me]);
                }
            }
        }
        Action::Receive
    }

    /// A write that went out (or was queued): the message leaves the hand.
    fn sent(action: &Action) -> bool {
        matches!(action, Action::Send(_) | Action::SendHeld(_))
    }
}

impl Behavior for ChatThread {
    fn next(&mut self, me: TaskId, shared: &mut Shared, _: &mut Rng) -> Action {
        if let Some(w) = self.wake_writers.pop() {
            return Action::Wake(w);
        }
        if std::mem::take(&mut self.post) {
            // semop(roomsem, +1) for this user's server sender.
            let sender = id_of(self.user, Role::ServerSend);
            shared.posts[sender] += 1;
            return Action::Post(sender);
        }
        if let Some(&peer) = self.relay.front() {
            let action = match self.program {
                Program::ChatC => self.write(me, id_of(peer, Role::ClientRecv), shared),
                Program::LoadChat => {
                    // The message onto the peer's sender's queue (a futex wake-up when
                    // that sender sleeps, priced as a post).
                    let sender = id_of(peer, Role::ServerSend);
                    shared.posts[sender] += 1;
                    Action::Post(sender)
                }
            };
            if Self::sent(&action) || matches!(action, Action::Post(_)) {
                self.relay.pop_front();
            }
            return action;
        }
        if self.left == 0 {
            return Action::Exit;
        }
        match (self.program, self.role) {
            (_, Role::ClientSend) => {
                let action = self.write(me, id_of(self.user, Role::ServerRecv), shared);
                if Self::sent(&action) {
                    self.left -= 1;
                    shared.counted += 1;
                }
                action
            }
            (Program::ChatC, Role::ServerRecv) => {
                let read = self.read(me, shared, false);
                self.post = matches!(read, Action::Receive);
                read
            }
            (Program::LoadChat, Role::ServerRecv) => {
                let read = self.read(me, shared, false);
                if matches!(read, Action::Receive) {
                    self.relay = self.peers();
                }
                read
            }
            (Program::ChatC, Role::ServerSend) => {
                if shared.posts[me] == 0 {
                    return Action::WaitWake;
                }
                // semop(roomsem, −1) finding a post: a system call that does not sleep.
                shared.posts[me] -= 1;
                self.left -= 1;
                self.relay = self.peers();
                Action::Syscall
            }
            (Program::LoadChat, Role::ServerSend) => {
                if shared.posts[me] == 0 {
                    return Action::WaitWake;
                }
                let action = self.write(me, id_of(self.user, Role::ClientRecv), shared);
                if Self::sent(&action) {
                    shared.posts[me] -= 1;
                    self.left -= 1;
                }
                action
            }
            (_, Role::ClientRecv) => self.read(me, shared, true),
        }
    }
}

/// The messages chat_c counts for `rooms` rooms of `messages` each: every user's
/// sends and its reads of the other 19 users' messages.
pub fn counted(rooms: usize, messages: u64) -> u64 {
    (rooms * ROOM) as u64 * ROOM as u64 * messages
}

/// The regime's figures, as the simulated rows name them.
pub const DELIVERED_PER_SECOND: &str = "messages delivered per second";
pub const SWITCHES_PER_MESSAGE: &str = "switches per message delivered";
pub const CLIENT_MESSAGES_PER_WAKE: &str = "messages per client reader wake-up";
pub const SERVER_MESSAGES_PER_WAKE: &str = "messages per server reader wake-up";
pub const SEGMENTS_PER_MESSAGE: &str = "data segments per message written";
pub const CPU_IDLE_SHARE: &str = "share of CPU time idle";
pub const IDLE_ENTRIES_PER_MESSAGE: &str = "CPU idle entries per message delivered";
pub const MEDIAN_FINISH: &str = "client readers' median finish, share of the run";

/// How the model delivered a run's messages, in the figures `load.chat` measures
/// on today's kernel (its regime): switches of the chat threads (blocks and
/// switches out while runnable, as getrusage counts voluntary and involuntary ones)
/// per message a client reader read, messages read per block of the client and
/// server readers, (load.chat's sockets only) data segments per message written to a
/// connection, and the CPUs' idle share and idle entries. A thread that starts its
/// work asleep in its first read counts that sleep, as the measured threads do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Regime {
    /// Messages the client readers read per second.
    pub delivered_per_second: f64,
    pub switches_per_message: f64,
    pub client_messages_per_wake: f64,
    pub server_messages_per_wake: f64,
    /// None where a write is one delivery (chat_c's model).
    pub segments_per_message: Option<f64>,
    /// The share of the run's CPU time its CPUs sat idle.
    pub cpu_idle_share: f64,
    /// Times a CPU went idle, per message delivered.
    pub idle_entries_per_message: f64,
    /// When the median client reader had all its messages, as a share of the run (the
    /// upper median; a reader still at work when the run ends finishes at its end).
    pub median_finish: f64,
}

/// The regime of a run of `rooms` rooms of `messages` a user that sent `segments`
/// (None: not modelled).
fn regime(out: &Outcome, rooms: usize, messages: u64, segments: Option<u64>) -> Regime {
    let users = rooms * ROOM;
    let sum = |role: Role, v: &[u64]| (0..users).map(|u| v.get(id_of(u, role)).copied().unwrap_or(0)).sum::<u64>();
    let all = |v: &[u64]| ROLES.iter().map(|&r| sum(r, v)).sum::<u64>();
    let delivered = (users as u64 * (ROOM as u64 - 1) * messages) as f64;
    let read_by_servers = (users as u64 * messages) as f64;
    let written = read_by_servers * ROOM as f64;
    let switches = all(&out.task_sleeps) + all(&out.task_preempted);
    Regime {
        delivered_per_second: delivered / (out.end_ns.max(1) as f64 / 1e9),
        switches_per_message: switches as f64 / delivered.max(1.0),
        client_messages_per_wake: delivered / sum(Role::ClientRecv, &out.task_sleeps).max(1) as f64,
        server_messages_per_wake: read_by_servers / sum(Role::ServerRecv, &out.task_sleeps).max(1) as f64,
        segments_per_message: segments.map(|n| n as f64 / written.max(1.0)),
        cpu_idle_share: out.cpu_idle_ns as f64 / (out.end_ns as f64 * out.cpus as f64).max(1.0),
        idle_entries_per_message: out.idle_entries as f64 / delivered.max(1.0),
        median_finish: median_finish(out, users),
    }
}

/// When the median client reader of `users` exited, as a share of the run.
fn median_finish(out: &Outcome, users: usize) -> f64 {
    let end = out.end_ns.max(1);
    let mut at: Vec<u64> = (0..users)
        .map(|u| out.task_exited_ns.get(id_of(u, Role::ClientRecv)).copied().flatten().unwrap_or(end).min(end))
        .collect();
    at.sort_unstable();
    at.get(users / 2).map_or(1.0, |&t| t as f64 / end as f64)
}

/// load.chat's release: its coordinator (at nice 0, whatever the chat threads' level)
/// unparks the senders waiting at the gate one by one, user by user, then waits for the
/// threads (its 1-ms polls of their ends, a wake-up a millisecond, are not modelled).
struct Gate {
    senders: VecDeque<TaskId>,
}

impl Behavior for Gate {
    fn next(&mut self, _: TaskId, _: &mut Shared, _: &mut Rng) -> Action {
        self.senders.pop_front().map_or(Action::WaitWake, Action::Wake)
    }
}

/// chat_c's and chat_s's set-up, before chat_c takes its start time: each process's
/// main thread clones its threads user by user (chat_c's main_client_thread connects,
/// then clones cli_snd and cli_rcv; chat_s's main accepts, then clones srv_rcv and
/// srv_snd), each clone blocking at once in its first semop or recv. The policy
/// leaves what its kernel's fork and schedule() leave ([`Engine::set_up_clones`]);
/// the main threads then sleep until the threads finish. `client` is chat_c's address
/// space and nice, `server_mm` chat_s's (at nice 0).
fn set_up(e: &mut Engine, users: usize, client: (Option<usize>, i32), server_mm: Option<usize>) {
    let cpus = e.cpus.len();
    let client_main = e.spawn_main(client.0, client.1, 0);
    let server_main = e.spawn_main(server_mm, 0, 1 % cpus);
    e.set_up_clones(&clone_order(users, client_main, server_main));
}

/// The (parent, child) clones of the set-up, in order: user by user, chat_c's sender
/// then its reader, chat_s's reader then its sender.
fn clone_order(users: usize, client_main: TaskId, server_main: TaskId) -> Vec<(TaskId, TaskId)> {
    (0..users)
        .flat_map(|u| {
            [
                (client_main, id_of(u, Role::ClientSend)),
                (client_main, id_of(u, Role::ClientRecv)),
                (server_main, id_of(u, Role::ServerRecv)),
                (server_main, id_of(u, Role::ServerSend)),
            ]
        })
        .collect()
}

/// Runs `program` on `e`: `rooms` rooms, each user writing `messages`; returns chat_c's
/// rate (messages per second: sends and reads) with the counters and the regime.
///
/// chat_c's client threads run at `nice` and its server (started apart) at 0, two
/// processes; load.chat's threads are all of one process, all at `nice`. Threads are
/// created as the benchmark creates them (room by room, each user's threads in
/// turn), each process's on one CPU (chat_c's on the first, chat_s's on the second;
/// load.chat's on the first), as a clone places a thread on its parent's CPU; the
/// policy's own balancing spreads them from there, as the kernel's did.
pub fn run(e: &mut Engine, rooms: usize, messages: u64, nice: i32, program: Program) -> (f64, Outcome, Regime) {
    let users = rooms * ROOM;
    let tasks = 4 * users;
    e.shared.inbox = vec![VecDeque::new(); tasks];
    e.shared.held = vec![VecDeque::new(); tasks];
    e.shared.credit = vec![RWND; tasks];
    e.shared.rcv_mss = vec![FIRST_RCV_MSS; tasks];
    e.shared.acks = vec![AckState::new(RWND); tasks];
    e.shared.on_socket_timer =
        (program == Program::LoadChat).then_some(on_timer as fn(&mut Shared, &SocketTimer) -> Option<TaskId>);
    e.shared.posts = vec![0; tasks];
    e.shared.writers_waiting = vec![Vec::new(); tasks];
    let cpus = e.cpus.len();
    let (mut client_mm, mut server_mm) = (None, None);
    for u in 0..users {
        for role in ROLES {
            let client = matches!(role, Role::ClientSend | Role::ClientRecv);
            let (mm, task_nice, cpu) = match program {
                Program::ChatC if client => (&mut client_mm, nice, 0),
                Program::ChatC => (&mut server_mm, 0, 1 % cpus),
                Program::LoadChat => (&mut client_mm, nice, 0),
            };
            let thread = Box::new(ChatThread::new(program, role, u, messages));
            // Only the client's senders have work when the clients are released: the
            // server's threads wait in recv() and semop() (or their queue), the
            // client's readers in recv(). load.chat's senders wait at its gate.
            let id = match (program, role) {
                (Program::LoadChat, Role::ClientSend) => e.spawn_parked(thread, *mm, task_nice, cpu),
                (Program::ChatC, Role::ClientSend) => e.spawn(thread, *mm, task_nice, cpu),
                _ => e.spawn_blocked(thread, *mm, task_nice, cpu),
            };
            debug_assert_eq!(id, id_of(u, role));
            *mm = Some(e.tasks[id].mm);
        }
    }
    match program {
        Program::ChatC => set_up(e, users, (client_mm, nice), server_mm),
        Program::LoadChat => {
            let senders = (0..users).map(|u| id_of(u, Role::ClientSend)).collect();
            e.spawn(Box::new(Gate { senders }), client_mm, 0, 0);
        }
    }
    let expected = counted(rooms, messages);
    let out = e.run(600_000_000_000, |s| s.counted >= expected);
    let rate = out.counted as f64 / (out.end_ns as f64 / 1e9);
    let segments = (program == Program::LoadChat).then_some(e.shared.segments);
    let regime = regime(&out, rooms, messages, segments);
    (rate, out, regime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_up_clones_every_thread_once_from_its_own_processs_main() {
        // chat_c.c main_client_thread: per user, __clone(cli_snd) then __clone(cli_rcv);
        // chat_s.c main: per accepted connection, __clone(srv_rcv) then __clone(srv_snd).
        let users = 3;
        let order = clone_order(users, 100, 101);
        assert_eq!(order.len(), 4 * users);
        let mut children: Vec<TaskId> = order.iter().map(|&(_, c)| c).collect();
        children.sort_unstable();
        assert_eq!(children, (0..4 * users).collect::<Vec<_>>(), "each thread once");
        for &(parent, child) in &order {
            let role = ROLES[child % 4];
            let client = matches!(role, Role::ClientSend | Role::ClientRecv);
            assert_eq!(parent, if client { 100 } else { 101 }, "{role:?}");
        }
        assert_eq!(
            &order[..4],
            &[
                (100, id_of(0, Role::ClientSend)),
                (100, id_of(0, Role::ClientRecv)),
                (101, id_of(0, Role::ServerRecv)),
                (101, id_of(0, Role::ServerSend))
            ]
        );
    }

    #[test]
    fn the_median_readers_finish_is_a_share_of_the_run_and_a_reader_still_at_work_finishes_at_its_end() {
        let users = ROOM;
        let mut out = Outcome { end_ns: 100, task_exited_ns: vec![None; 4 * users], ..Outcome::default() };
        for u in 0..users - 1 {
            out.task_exited_ns[id_of(u, Role::ClientRecv)] = Some(5 * u as u64);
        }
        // Exits at 0, 5, ..., 90 and one at the end: the upper median is the 11th, 50.
        assert_eq!(median_finish(&out, users), 0.5);
        // Other threads' exits do not count.
        out.task_exited_ns[id_of(0, Role::ServerSend)] = Some(1);
        assert_eq!(median_finish(&out, users), 0.5);
    }

    #[test]
    fn each_user_has_four_threads_in_order() {
        assert_eq!(id_of(0, Role::ClientSend), 0);
        assert_eq!(id_of(0, Role::ClientRecv), 3);
        assert_eq!(id_of(2, Role::ServerSend), 10);
    }

    fn room_state() -> Shared {
        let tasks = 4 * ROOM;
        Shared {
            inbox: vec![VecDeque::new(); tasks],
            held: vec![VecDeque::new(); tasks],
            credit: vec![RWND; tasks],
            rcv_mss: vec![FIRST_RCV_MSS; tasks],
            acks: vec![AckState::new(RWND); tasks],
            posts: vec![0; tasks],
            writers_waiting: vec![Vec::new(); tasks],
            ..Shared::default()
        }
    }

    #[test]
    fn a_writer_sleeps_on_a_full_window_until_a_read_leaves_it_half_empty() {
        let (mut shared, mut rng) = (room_state(), Rng::new(1));
        let (writer, reader) = (id_of(0, Role::ClientSend), id_of(0, Role::ServerRecv));
        shared.inbox[reader] = std::iter::repeat_n(0, WINDOW).collect();
        let mut sender = ChatThread::new(Program::ChatC, Role::ClientSend, 0, 10);
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::WaitWake));
        // Asked again while still full (a pending wake-up let it through): listed once.
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::WaitWake));
        assert_eq!(shared.writers_waiting[reader], vec![writer]);
        let mut server = ChatThread::new(Program::ChatC, Role::ServerRecv, 0, 10 * WINDOW as u64);
        let mut woken_at = None;
        for _ in 0..4 * WINDOW {
            match server.next(reader, &mut shared, &mut rng) {
                Action::Receive => {
                    shared.inbox[reader].pop_front();
                }
                Action::Wake(w) => {
                    assert_eq!(w, writer);
                    woken_at = Some(shared.inbox[reader].len());
                    break;
                }
                Action::Post(_) => {}
                _ => panic!("the server's reader only reads, wakes and posts"),
            }
        }
        assert_eq!(woken_at, Some(WINDOW / 2));
        assert!(shared.writers_waiting[reader].is_empty());
        // The writer goes on writing once the window has room.
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::Send(r) if r == reader));
    }

    #[test]
    fn the_server_relays_each_post_to_the_nineteen_others_of_the_room() {
        let (mut shared, mut rng) = (room_state(), Rng::new(1));
        let me = id_of(3, Role::ServerSend);
        let mut relay = ChatThread::new(Program::ChatC, Role::ServerSend, 3, 1);
        assert!(matches!(relay.next(me, &mut shared, &mut rng), Action::WaitWake), "no post yet");
        shared.posts[me] = 1;
        assert!(matches!(relay.next(me, &mut shared, &mut rng), Action::Syscall));
        let mut readers = Vec::new();
        loop {
            match relay.next(me, &mut shared, &mut rng) {
                Action::Send(r) => readers.push(r),
                Action::Exit => break,
                _ => panic!("a relay sends, then exits when its posts are done"),
            }
        }
        let expected: Vec<TaskId> = (0..ROOM).filter(|&u| u != 3).map(|u| id_of(u, Role::ClientRecv)).collect();
        assert_eq!(readers, expected);
    }

    #[test]
    fn linux_6_18_tcp_select_window_offers_no_window_below_one_segment_and_whole_segments_above() {
        assert_eq!(window(4, 5), 0);
        assert_eq!(window(5, 5), 5);
        assert_eq!(window(64, 5), 60);
        assert_eq!(window(64, 34), 34);
    }

    /// A room's state with user 0's load.chat server sender holding `posts` messages
    /// for user 0's client reader: (state, random source, sender, its id, the reader).
    fn server_sender(posts: u64) -> (Shared, Rng, ChatThread, TaskId, TaskId) {
        let (writer, reader) = (id_of(0, Role::ServerSend), id_of(0, Role::ClientRecv));
        let mut shared = room_state();
        shared.posts[writer] = posts;
        (shared, Rng::new(1), ChatThread::new(Program::LoadChat, Role::ServerSend, 0, 10), writer, reader)
    }

    #[test]
    fn a_load_chat_write_without_credit_is_held_and_leaves_with_the_window_update() {
        let (mut shared, mut rng, mut sender, writer, reader) = server_sender(3);
        // With credit, a write is a segment of its own.
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::Send(r) if r == reader));
        assert_eq!((shared.segments, shared.credit[reader]), (1, RWND - 1));
        shared.inbox[reader].push_back(0);
        // Without credit it waits in the sender's queue: no segment, no wake-up.
        shared.credit[reader] = 0;
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::SendHeld(r) if r == reader));
        assert_eq!(shared.segments, 1);
        shared.held[reader].extend([0, 0]);
        // The reader's read frees a window of at least one segment: the update goes
        // out and both held messages leave as one segment behind the one being read.
        let mut client = ChatThread::new(Program::LoadChat, Role::ClientRecv, 0, 10);
        assert!(matches!(client.next(reader, &mut shared, &mut rng), Action::Receive));
        assert_eq!(shared.segments, 2);
        assert_eq!((shared.inbox[reader].len(), shared.held[reader].len()), (3, 0));
    }

    #[test]
    fn linux_6_18_tcp_cwnd_test_holds_a_write_past_the_congestion_window() {
        let (mut shared, mut rng, mut sender, writer, reader) = server_sender(2);
        shared.acks[reader].in_flight = CWND - 1;
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::Send(r) if r == reader));
        shared.inbox[reader].push_back(0);
        assert_eq!(shared.acks[reader].in_flight, CWND);
        // Credit is left, but the window is full: the write waits unsent.
        assert!(shared.credit[reader] > 0);
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::SendHeld(r) if r == reader));
    }

    #[test]
    fn linux_6_18_tcp_ack_snd_check_acknowledges_on_arrival_only_while_the_reader_keeps_up() {
        let reader = id_of(0, Role::ClientRecv);
        let send_one = |unread: usize| {
            let (mut shared, mut rng, mut sender, writer, _) = server_sender(1);
            shared.acks[reader].advertised = 100;
            shared.acks[reader].unacked = FIRST_RCV_MSS;
            shared.acks[reader].in_flight = 3;
            shared.inbox[reader] = std::iter::repeat_n(0, unread).collect();
            assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::Send(_)));
            shared
        };
        // More than a segment's worth unanswered, and the window the reader could offer
        // is not below the last one advertised: answered at once.
        let kept_up = send_one(0);
        assert_eq!((kept_up.acks[reader].in_flight, kept_up.acks[reader].unacked), (0, 0));
        // Unread data has shrunk it: the answer waits, on the delayed acknowledgement.
        let lagging = send_one(60);
        assert_eq!(lagging.acks[reader].in_flight, 4);
        assert!(lagging.socket_timers.iter().any(|t| t.kind == SocketTimerKind::DelayedAck && t.after_ns == DELACK_NS));
        assert!(lagging.socket_timers.iter().any(|t| t.kind == SocketTimerKind::LossProbe && t.after_ns == PROBE_NS));
    }

    #[test]
    fn linux_6_18_tcp_cleanup_rbuf_acknowledges_a_read_that_empties_the_queue_after_two_small_segments() {
        let reader = id_of(0, Role::ClientRecv);
        let read_last = |pushed: u32| {
            let (mut shared, mut rng) = (room_state(), Rng::new(1));
            let mut client = ChatThread::new(Program::LoadChat, Role::ClientRecv, 0, 10);
            shared.inbox[reader].push_back(0);
            shared.held[reader].extend([0, 0, 0]);
            shared.credit[reader] = 100;
            shared.acks[reader].in_flight = 2;
            shared.acks[reader].unacked = 2;
            shared.acks[reader].pushed = pushed;
            assert!(matches!(client.next(reader, &mut shared, &mut rng), Action::Receive));
            shared
        };
        // Two small segments (ICSK_ACK_PUSHED2) and a read that empties the queue: the
        // acknowledgement goes, and the three queued messages follow as one segment.
        let answered = read_last(2);
        assert_eq!((answered.held[reader].len(), answered.inbox[reader].len()), (0, 4));
        assert_eq!((answered.acks[reader].in_flight, answered.segments), (1, 1));
        // One small segment only: no acknowledgement yet, nothing leaves.
        let waiting = read_last(1);
        assert_eq!((waiting.held[reader].len(), waiting.acks[reader].in_flight), (3, 2));
    }

    #[test]
    fn linux_6_18_delayed_ack_and_tail_loss_probe_timers_release_what_waits() {
        let reader = id_of(0, Role::ClientRecv);
        let state = || {
            let mut shared = room_state();
            shared.held[reader].extend([0, 0]);
            shared.acks[reader].in_flight = CWND;
            shared.acks[reader].unacked = CWND;
            shared.credit[reader] = 50;
            shared
        };
        let timer = |kind, generation| SocketTimer { conn: reader, kind, generation, after_ns: 0 };
        // tcp_delack_timer: the receiver answers; the queued messages leave as one
        // segment and reach the reader.
        let mut shared = state();
        shared.acks[reader].delack_generation = 3;
        assert_eq!(on_timer(&mut shared, &timer(SocketTimerKind::DelayedAck, 3)), Some(reader));
        assert_eq!((shared.inbox[reader].len(), shared.acks[reader].in_flight), (2, 1));
        // A timer whose generation moved on was cancelled or re-armed: nothing happens.
        let mut stale = state();
        stale.acks[reader].delack_generation = 4;
        assert_eq!(on_timer(&mut stale, &timer(SocketTimerKind::DelayedAck, 3)), None);
        assert_eq!(stale.held[reader].len(), 2);
        // tcp_send_loss_probe: new data first, past the congestion window by one segment.
        let mut probed = state();
        assert_eq!(on_timer(&mut probed, &timer(SocketTimerKind::LossProbe, 0)), Some(reader));
        assert_eq!((probed.held[reader].len(), probed.acks[reader].in_flight, probed.segments), (0, CWND + 1, 1));
        // With nothing new, the last segment again, which the receiver answers at once.
        let mut resent = state();
        resent.held[reader].clear();
        assert_eq!(on_timer(&mut resent, &timer(SocketTimerKind::LossProbe, 0)), None);
        assert_eq!((resent.acks[reader].in_flight, resent.segments), (0, 1));
    }

    #[test]
    fn chat_c_counts_twenty_messages_a_user_per_message_written() {
        assert_eq!(counted(10, 1000), 4_000_000);
        assert_eq!(counted(1, 1), 400);
    }
}
