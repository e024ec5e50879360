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
use super::types::{Action, Behavior, Rng, Shared, TaskId};

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
    role: Role,
    user: usize,
    /// The room's first user.
    room: usize,
    /// Messages (or posts) it is still to handle.
    left: u64,
    /// The server's sender: peers of the message it is relaying still to be written.
    relay: VecDeque<usize>,
    /// A read just made: the writers to wake (a window reopened), then the post to make
    /// (the server's reader).
    wake_writers: Vec<TaskId>,
    post: bool,
}

impl ChatThread {
    fn new(role: Role, user: usize, messages: u64) -> Self {
        let left = if role == Role::ClientRecv { (ROOM as u64 - 1) * messages } else { messages };
        Self {
            role,
            user,
            room: user / ROOM * ROOM,
            left,
            relay: VecDeque::new(),
            wake_writers: Vec::new(),
            post: false,
        }
    }

    /// Writes to `reader`'s connection, or waits for its window to open.
    fn write(&self, me: TaskId, reader: TaskId, shared: &mut Shared) -> Option<Action> {
        if shared.inbox.get(reader).is_some_and(|q| q.len() >= WINDOW) {
            if !shared.writers_waiting[reader].contains(&me) {
                shared.writers_waiting[reader].push(me);
            }
            return Some(Action::WaitWake);
        }
        None
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
        // A read that leaves the window half open wakes the writers waiting on it
        // (after the read itself, below).
        if shared.inbox[me].len() <= WINDOW / 2 + 1 {
            self.wake_writers = std::mem::take(&mut shared.writers_waiting[me]);
        }
        Action::Receive
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
            let reader = id_of(peer, Role::ClientRecv);
            if let Some(wait) = self.write(me, reader, shared) {
                return wait;
            }
            self.relay.pop_front();
            return Action::Send(reader);
        }
        if self.left == 0 {
            return Action::Exit;
        }
        match self.role {
            Role::ClientSend => {
                let reader = id_of(self.user, Role::ServerRecv);
                if let Some(wait) = self.write(me, reader, shared) {
                    return wait;
                }
                self.left -= 1;
                shared.counted += 1;
                Action::Send(reader)
            }
            Role::ServerRecv => {
                let read = self.read(me, shared, false);
                self.post = matches!(read, Action::Receive);
                read
            }
            Role::ServerSend => {
                if shared.posts[me] == 0 {
                    return Action::WaitWake;
                }
                // semop(roomsem, −1) finding a post: a system call that does not sleep.
                shared.posts[me] -= 1;
                self.left -= 1;
                self.relay = (self.room..self.room + ROOM).filter(|&p| p != self.user).collect();
                Action::Syscall
            }
            Role::ClientRecv => self.read(me, shared, true),
        }
    }
}

/// The messages chat_c counts for `rooms` rooms of `messages` each: every user's
/// sends and its reads of the other 19 users' messages.
pub fn counted(rooms: usize, messages: u64) -> u64 {
    (rooms * ROOM) as u64 * ROOM as u64 * messages
}

/// Runs chat on `e`: `rooms` rooms, each user writing `messages`, the client's threads
/// at `nice`; returns chat_c's rate (messages per second) with the counters.
///
/// Threads are created as the benchmark creates them (room by room, each user's
/// threads in turn), each process's on one CPU (chat_c's on the first, chat_s's on
/// the second), as a clone places a thread on its parent's CPU; the policy's own
/// balancing spreads them from there, as the kernel's did.
pub fn run(e: &mut Engine, rooms: usize, messages: u64, nice: i32) -> (f64, Outcome) {
    let users = rooms * ROOM;
    let tasks = 4 * users;
    e.shared.inbox = vec![VecDeque::new(); tasks];
    e.shared.posts = vec![0; tasks];
    e.shared.writers_waiting = vec![Vec::new(); tasks];
    let cpus = e.cpus.len();
    let (mut client_mm, mut server_mm) = (None, None);
    for u in 0..users {
        for role in ROLES {
            let client = matches!(role, Role::ClientSend | Role::ClientRecv);
            let (mm, task_nice, cpu) = if client { (&mut client_mm, nice, 0) } else { (&mut server_mm, 0, 1 % cpus) };
            let thread = Box::new(ChatThread::new(role, u, messages));
            // Only the client's senders have work when chat_c releases its threads: the
            // server's threads wait in recv() and semop(), the client's readers in
            // recv().
            let id = if role == Role::ClientSend {
                e.spawn(thread, *mm, task_nice, cpu)
            } else {
                e.spawn_blocked(thread, *mm, task_nice, cpu)
            };
            debug_assert_eq!(id, id_of(u, role));
            *mm = Some(e.tasks[id].mm);
        }
    }
    let expected = counted(rooms, messages);
    let out = e.run(600_000_000_000, |s| s.counted >= expected);
    let rate = out.counted as f64 / (out.end_ns as f64 / 1e9);
    (rate, out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut sender = ChatThread::new(Role::ClientSend, 0, 10);
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::WaitWake));
        // Asked again while still full (a pending wake-up let it through): listed once.
        assert!(matches!(sender.next(writer, &mut shared, &mut rng), Action::WaitWake));
        assert_eq!(shared.writers_waiting[reader], vec![writer]);
        let mut server = ChatThread::new(Role::ServerRecv, 0, 10 * WINDOW as u64);
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
        let mut relay = ChatThread::new(Role::ServerSend, 3, 1);
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
    fn chat_c_counts_twenty_messages_a_user_per_message_written() {
        assert_eq!(counted(10, 1000), 4_000_000);
        assert_eq!(counted(1, 1), 400);
    }
}
