//! Hand-off channels: the mechanisms one task uses to pass the CPU to another. Each
//! mechanism gives a pair of endpoints (one for the measuring side, one for the peer);
//! `send` hands the token over and `recv` blocks until it comes back.
//!
//! Endpoints are concrete types used through generics, so a timed loop calls the
//! mechanism directly. Every blocking wait ends: on EOF when the other side's
//! descriptors close (pipes, sockets), on a poison value the other side or the peer
//! monitor writes (eventfd, futex, condvar), or on a futex timeout.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::runner::Failure;
use oscost_platform::sys::{self, SharedWords};

/// Failure codes of the endpoints, in the runner's one code space.
pub const PEER_GONE: i64 = Failure::PeerGone.code();
pub const POISONED: i64 = Failure::Poisoned.code();
pub const UNEXPECTED: i64 = Failure::Unexpected.code();
pub const WAIT_TIMEOUT: i64 = Failure::WaitTimeout.code();

/// Words for a failure code of an endpoint.
pub fn describe(code: i64) -> String {
    Failure::from_code(code).to_string()
}

/// One side of a hand-off channel.
pub trait Endpoint: Send + 'static {
    /// Passes the token to the other side. 0 or a failure code.
    fn send(&mut self) -> i64;
    /// Blocks until the token comes back. 0 or a failure code.
    fn recv(&mut self) -> i64;
    /// Makes the other side's pending or next `recv` fail (used on error paths).
    fn poison(&mut self);
}

/// How the monitor of a peer process wakes the measuring side when the peer dies
/// without closing a descriptor the measuring side reads.
pub enum Poisoner {
    /// EOF already reaches the measuring side.
    Eof,
    EventFd(Arc<OwnedFd>),
    Futex(Arc<SharedWords>, bool),
    Condvar(TurnCell),
}

impl Poisoner {
    pub fn poison(&self) {
        match self {
            Poisoner::Eof => {}
            Poisoner::EventFd(fd) => {
                sys::raw_write_u64(fd.as_raw_fd(), POISON_VALUE);
            }
            Poisoner::Futex(w, shared) => {
                w.futex_word(TURN).store(TURN_POISON, Ordering::Release);
                sys::futex_wake(w.futex_word(TURN), i32::MAX, *shared);
            }
            Poisoner::Condvar(cell) => {
                let (m, cv) = &**cell;
                if let Ok(mut g) = m.lock() {
                    *g = TURN_POISON;
                }
                cv.notify_all();
            }
        }
    }
}

/// A built channel: both endpoints, and how to make each side's wait fail from outside
/// (the peer's monitor poisons the main side; teardown poisons the peer side).
pub struct Pair<M, P> {
    pub main: M,
    pub peer: P,
    pub poison_main: Poisoner,
    pub poison_peer: Poisoner,
}

/// A mechanism: how to build a pair of endpoints.
pub trait Mechanism {
    type Main: Endpoint;
    type Peer: Endpoint;
    /// Builds the pair; `shared` means the peer will be another process.
    fn pair(shared: bool) -> std::io::Result<Pair<Self::Main, Self::Peer>>;
}

/// Maps a one-byte read or write result to 0 or a failure code (0 bytes: EOF).
#[inline(always)]
pub fn one_byte(r: i64) -> i64 {
    match r {
        1 => 0,
        0 => PEER_GONE,
        r if r < 0 => -r,
        _ => UNEXPECTED,
    }
}

// --- pipes ------------------------------------------------------------------------

/// Two pipes, one per direction; one byte per hand-off.
pub struct PipeEnd {
    rd: OwnedFd,
    wr: OwnedFd,
    buf: [u8; 1],
}

impl Endpoint for PipeEnd {
    #[inline(always)]
    fn send(&mut self) -> i64 {
        one_byte(sys::raw_write(self.wr.as_raw_fd(), &self.buf))
    }
    #[inline(always)]
    fn recv(&mut self) -> i64 {
        one_byte(sys::raw_read(self.rd.as_raw_fd(), &mut self.buf))
    }
    fn poison(&mut self) {
        // Closing our write end gives the other side EOF.
        if let Ok((r, w)) = sys::pipe() {
            drop(r);
            self.wr = w;
        }
    }
}

pub struct Pipe;
impl Mechanism for Pipe {
    type Main = PipeEnd;
    type Peer = PipeEnd;
    fn pair(_shared: bool) -> std::io::Result<Pair<PipeEnd, PipeEnd>> {
        let (a_rd, a_wr) = sys::pipe()?; // main → peer
        let (b_rd, b_wr) = sys::pipe()?; // peer → main
        Ok(Pair {
            main: PipeEnd { rd: b_rd, wr: a_wr, buf: [1] },
            peer: PipeEnd { rd: a_rd, wr: b_wr, buf: [1] },
            poison_main: Poisoner::Eof,
            poison_peer: Poisoner::Eof,
        })
    }
}

// --- AF_UNIX stream socket pair ----------------------------------------------------

pub struct UnixEnd {
    fd: OwnedFd,
    buf: [u8; 1],
}

impl Endpoint for UnixEnd {
    #[inline(always)]
    fn send(&mut self) -> i64 {
        one_byte(sys::raw_write(self.fd.as_raw_fd(), &self.buf))
    }
    #[inline(always)]
    fn recv(&mut self) -> i64 {
        one_byte(sys::raw_read(self.fd.as_raw_fd(), &mut self.buf))
    }
    fn poison(&mut self) {
        if let Ok((a, _b)) = sys::unix_socketpair() {
            self.fd = a; // the old socket closes: the other side reads EOF
        }
    }
}

pub struct Unix;
impl Mechanism for Unix {
    type Main = UnixEnd;
    type Peer = UnixEnd;
    fn pair(_shared: bool) -> std::io::Result<Pair<UnixEnd, UnixEnd>> {
        let (a, b) = sys::unix_socketpair()?;
        Ok(Pair {
            main: UnixEnd { fd: a, buf: [1] },
            peer: UnixEnd { fd: b, buf: [1] },
            poison_main: Poisoner::Eof,
            poison_peer: Poisoner::Eof,
        })
    }
}

// --- eventfd ------------------------------------------------------------------------

const POISON_VALUE: u64 = 1 << 40;

/// Two eventfd counters, one per direction; a hand-off writes 1 and the reader
/// expects exactly 1.
pub struct EventFdEnd {
    mine: Arc<OwnedFd>,
    theirs: Arc<OwnedFd>,
}

impl Endpoint for EventFdEnd {
    #[inline(always)]
    fn send(&mut self) -> i64 {
        let r = sys::raw_write_u64(self.theirs.as_raw_fd(), 1);
        if r == 8 {
            0
        } else if r < 0 {
            -r
        } else {
            UNEXPECTED
        }
    }
    #[inline(always)]
    fn recv(&mut self) -> i64 {
        let mut v = 0;
        let r = sys::raw_read_u64(self.mine.as_raw_fd(), &mut v);
        if r != 8 {
            return if r < 0 { -r } else { UNEXPECTED };
        }
        if v == 1 { 0 } else { POISONED }
    }
    fn poison(&mut self) {
        sys::raw_write_u64(self.theirs.as_raw_fd(), POISON_VALUE);
    }
}

pub struct EventFd;
impl Mechanism for EventFd {
    type Main = EventFdEnd;
    type Peer = EventFdEnd;
    fn pair(_shared: bool) -> std::io::Result<Pair<EventFdEnd, EventFdEnd>> {
        let to_main = Arc::new(sys::eventfd()?);
        let to_peer = Arc::new(sys::eventfd()?);
        Ok(Pair {
            main: EventFdEnd { mine: to_main.clone(), theirs: to_peer.clone() },
            peer: EventFdEnd { mine: to_peer.clone(), theirs: to_main.clone() },
            poison_main: Poisoner::EventFd(to_main),
            poison_peer: Poisoner::EventFd(to_peer),
        })
    }
}

// --- futex ----------------------------------------------------------------------------

/// Index of the turn word in the futex pair's shared mapping.
const TURN: usize = 0;
const TURN_MAIN: u32 = 0;
const TURN_PEER: u32 = 1;
const TURN_POISON: u32 = 2;
/// Each wait is bounded; this many bounded waits in a row without the token is a stall.
const WAIT_SLICE: Duration = Duration::from_secs(1);
const WAIT_SLICES: u32 = 10;

/// A shared turn word with FUTEX_WAIT/FUTEX_WAKE (private for threads, shared for
/// processes, whose word lives in a MAP_SHARED mapping).
///
/// The wait carries no timeout: a timed FUTEX_WAIT arms and cancels a kernel timer on
/// every hand-off, which measured 13% dearer than the plain hand-off. A peer that dies
/// or fails is still seen: its exit watch writes the poison value and wakes the
/// waiter. A peer that stalls alive is the worker's watchdog's to end.
pub struct FutexEnd {
    words: Arc<SharedWords>,
    me: u32,
    other: u32,
    shared: bool,
}

impl Endpoint for FutexEnd {
    #[inline(always)]
    fn send(&mut self) -> i64 {
        let w = self.words.futex_word(TURN);
        // Compare-and-swap, not a store: a poison written meanwhile must not be lost.
        if let Err(v) = w.compare_exchange(self.me, self.other, Ordering::AcqRel, Ordering::Acquire) {
            return if v == TURN_POISON { POISONED } else { UNEXPECTED };
        }
        let r = sys::futex_wake(w, 1, self.shared);
        if r < 0 { -r } else { 0 }
    }
    #[inline(always)]
    fn recv(&mut self) -> i64 {
        let w = self.words.futex_word(TURN);
        loop {
            let v = w.load(Ordering::Acquire);
            if v == self.me {
                return 0;
            }
            if v == TURN_POISON {
                return POISONED;
            }
            let r = sys::futex_wait(w, v, None, self.shared);
            if r == 0 || r == -(libc::EAGAIN as i64) {
                continue;
            }
            return -r;
        }
    }
    fn poison(&mut self) {
        Poisoner::Futex(self.words.clone(), self.shared).poison();
    }
}

pub struct Futex;
impl Mechanism for Futex {
    type Main = FutexEnd;
    type Peer = FutexEnd;
    fn pair(shared: bool) -> std::io::Result<Pair<FutexEnd, FutexEnd>> {
        let words = Arc::new(SharedWords::new(1)?);
        Ok(Pair {
            main: FutexEnd { words: words.clone(), me: TURN_MAIN, other: TURN_PEER, shared },
            peer: FutexEnd { words: words.clone(), me: TURN_PEER, other: TURN_MAIN, shared },
            poison_main: Poisoner::Futex(words.clone(), shared),
            poison_peer: Poisoner::Futex(words, shared),
        })
    }
}

// --- mutex + condition variable (threads only) -----------------------------------------

type TurnCell = Arc<(Mutex<u32>, Condvar)>;

/// A turn variable under a mutex, signalled through one condition variable.
pub struct CondvarEnd {
    cell: TurnCell,
    me: u32,
    other: u32,
}

impl Endpoint for CondvarEnd {
    #[inline(always)]
    fn send(&mut self) -> i64 {
        let (m, cv) = &*self.cell;
        match m.lock() {
            Ok(mut g) if *g != TURN_POISON => *g = self.other,
            _ => return POISONED,
        }
        cv.notify_one();
        0
    }
    #[inline(always)]
    fn recv(&mut self) -> i64 {
        let (m, cv) = &*self.cell;
        let Ok(mut g) = m.lock() else { return POISONED };
        let mut slices = 0;
        while *g != self.me {
            if *g == TURN_POISON {
                return POISONED;
            }
            match cv.wait_timeout(g, WAIT_SLICE) {
                Ok((ng, to)) => {
                    g = ng;
                    if to.timed_out() {
                        slices += 1;
                        if slices >= WAIT_SLICES {
                            return WAIT_TIMEOUT;
                        }
                    }
                }
                Err(_) => return POISONED,
            }
        }
        0
    }
    fn poison(&mut self) {
        Poisoner::Condvar(self.cell.clone()).poison();
    }
}

pub struct CondvarPair;
impl Mechanism for CondvarPair {
    type Main = CondvarEnd;
    type Peer = CondvarEnd;
    fn pair(shared: bool) -> std::io::Result<Pair<CondvarEnd, CondvarEnd>> {
        if shared {
            return Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "condvar hand-off is threads only"));
        }
        let cell: TurnCell = Arc::new((Mutex::new(TURN_MAIN), Condvar::new()));
        Ok(Pair {
            main: CondvarEnd { cell: cell.clone(), me: TURN_MAIN, other: TURN_PEER },
            peer: CondvarEnd { cell: cell.clone(), me: TURN_PEER, other: TURN_MAIN },
            poison_main: Poisoner::Condvar(cell.clone()),
            poison_peer: Poisoner::Condvar(cell),
        })
    }
}

// --- the mechanism alone, without a switch ---------------------------------------------

/// One send then one receive on an endpoint. With a peer on the other side it is a
/// round trip (two hand-offs); on a loopback channel (both ends in one task, nobody
/// waiting) it is the part of a hand-off that is the mechanism rather than the switch.
pub struct SendRecv<E: Endpoint> {
    pub end: E,
}

impl SendRecv<PipeEnd> {
    pub fn loopback_pipe() -> std::io::Result<Self> {
        let (rd, wr) = sys::pipe()?;
        Ok(Self { end: PipeEnd { rd, wr, buf: [1] } })
    }
}

impl SendRecv<EventFdEnd> {
    pub fn loopback_eventfd() -> std::io::Result<Self> {
        let fd = Arc::new(sys::eventfd()?);
        Ok(Self { end: EventFdEnd { mine: fd.clone(), theirs: fd } })
    }
}

/// The futex calls of a hand-off without a sleeper: a FUTEX_WAKE with nobody waiting
/// and a FUTEX_WAIT whose word no longer holds the expected value (returns EAGAIN).
pub struct FutexLoopback {
    words: SharedWords,
}

impl FutexLoopback {
    pub fn new() -> std::io::Result<Self> {
        Ok(Self { words: SharedWords::new(1)? })
    }
}

impl crate::runner::Probe for FutexLoopback {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        let w = self.words.futex_word(TURN);
        w.store(TURN_MAIN, Ordering::Release);
        let r = sys::futex_wake(w, 1, false);
        if r != 0 {
            return if r < 0 { -r } else { UNEXPECTED };
        }
        let r = sys::futex_wait(w, TURN_PEER, None, false);
        if r == -(libc::EAGAIN as i64) {
            0
        } else if r < 0 {
            -r
        } else {
            UNEXPECTED
        }
    }
    fn describe(&self, code: i64) -> String {
        describe(code)
    }
}

impl SendRecv<CondvarEnd> {
    pub fn loopback_condvar() -> Self {
        let cell: TurnCell = Arc::new((Mutex::new(TURN_MAIN), Condvar::new()));
        Self { end: CondvarEnd { cell, me: TURN_MAIN, other: TURN_MAIN } }
    }
}

/// A socket pair driven from one task: write on one end, read on the other.
pub struct UnixLoopback {
    a: OwnedFd,
    b: OwnedFd,
    buf: [u8; 1],
}

impl UnixLoopback {
    pub fn new() -> std::io::Result<Self> {
        let (a, b) = sys::unix_socketpair()?;
        Ok(Self { a, b, buf: [1] })
    }
}

impl crate::runner::Probe for UnixLoopback {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        let s = one_byte(sys::raw_write(self.a.as_raw_fd(), &self.buf));
        if s != 0 {
            return s;
        }
        one_byte(sys::raw_read(self.b.as_raw_fd(), &mut self.buf))
    }
    fn describe(&self, code: i64) -> String {
        describe(code)
    }
}

impl<E: Endpoint> crate::runner::Probe for SendRecv<E> {
    /// Timing model: one send, then one receive.
    #[inline(always)]
    fn once(&mut self) -> i64 {
        let s = self.end.send();
        if s != 0 {
            return s;
        }
        self.end.recv()
    }
    fn describe(&self, code: i64) -> String {
        describe(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Probe;

    fn round_trip<M: Mechanism>() {
        let Pair { mut main, mut peer, .. } = M::pair(false).unwrap();
        let t = std::thread::spawn(move || {
            for _ in 0..100 {
                assert_eq!(peer.recv(), 0);
                assert_eq!(peer.send(), 0);
            }
            peer
        });
        for _ in 0..100 {
            assert_eq!(main.send(), 0);
            assert_eq!(main.recv(), 0);
        }
        let mut peer = t.join().unwrap();
        // The peer reports a failure: the main side's next receive fails, never hangs.
        peer.poison();
        drop(peer);
        assert_ne!(main.recv(), 0);
    }

    #[test]
    fn every_mechanism_hands_off_and_fails_cleanly() {
        round_trip::<Pipe>();
        round_trip::<Unix>();
        round_trip::<EventFd>();
        round_trip::<Futex>();
        round_trip::<CondvarPair>();
    }

    #[test]
    fn loopbacks_succeed() {
        assert_eq!(SendRecv::loopback_pipe().unwrap().once(), 0);
        assert_eq!(SendRecv::loopback_eventfd().unwrap().once(), 0);
        assert_eq!(SendRecv::loopback_condvar().once(), 0);
        assert_eq!(UnixLoopback::new().unwrap().once(), 0);
        // The futex loopback: a wake with nobody waiting and a wait that returns at once.
        assert_eq!(FutexLoopback::new().unwrap().once(), 0);
    }
}
