//! The other side of a hand-off: a thread or a forked process, pinned where the
//! placement says, whose life oscost controls on every path. A peer is started with a
//! body to run, reports its kernel task id for counting, and is always stopped and
//! reaped: by `finish` on success, by `Drop` on any error path (a process that does not
//! stop in time is killed). A peer process also dies with its parent (PDEATHSIG) and
//! takes default Ctrl-C handling, and a monitor thread wakes the measuring side if it
//! dies, so no wait of ours outlives it.

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::channel::Poisoner;
use crate::kcounts::Task;
use crate::runner::BenchError;
use crate::sys::{self, SharedWords};

/// Thread or process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Thread,
    Process,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Thread => "thread",
            Mode::Process => "process",
        }
    }
}

/// Control words shared with the peer.
const STOP: usize = 0;
const TID: usize = 1;
const READY: usize = 2;

/// The peer's view: whether it has been asked to stop.
pub struct Control(Arc<SharedWords>);

impl Control {
    #[inline(always)]
    pub fn stop_requested(&self) -> bool {
        self.0.word(STOP).load(Ordering::Relaxed) != 0
    }
}

enum Kind {
    Thread(Option<std::thread::JoinHandle<i32>>),
    Process { pid: libc::pid_t, monitor: Option<Monitor>, reaped: bool },
}

/// Watches a child through a pidfd and poisons the measuring side when it exits.
struct Monitor {
    stop: Arc<std::os::fd::OwnedFd>,
    handle: std::thread::JoinHandle<()>,
}

impl Monitor {
    fn start(pid: libc::pid_t, poison_main: Poisoner) -> Option<Self> {
        let pidfd = sys::pidfd_open(pid).ok()?;
        let stop = Arc::new(sys::eventfd().ok()?);
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("oscost-peer-monitor".into())
            .spawn(move || {
                if let Ok(0) = sys::wait_readable_any(&[pidfd.as_raw_fd(), stop2.as_raw_fd()]) {
                    poison_main.poison();
                }
            })
            .ok()?;
        Some(Self { stop, handle })
    }

    fn stop(self) {
        sys::raw_write_u64(self.stop.as_raw_fd(), 1);
        let _ = self.handle.join();
    }
}

/// A running peer.
pub struct Peer {
    kind: Kind,
    control: Arc<SharedWords>,
    poison_peer: Poisoner,
    pub task: Task,
}

/// Bound on the peer's start-up and on its stop.
const START_LIMIT: Duration = Duration::from_secs(5);
const STOP_LIMIT: Duration = Duration::from_secs(2);

impl Peer {
    /// Starts `body` as a thread or a forked process, pinned to `cpus`. The body gets
    /// the control block and returns an exit code (0 = clean stop).
    ///
    /// In a process the body runs after `fork` in a possibly multi-threaded parent: it
    /// must make only raw system calls and allocate nothing (every body here does).
    pub fn start<F>(
        mode: Mode,
        cpus: &[usize],
        poison_main: Poisoner,
        poison_peer: Poisoner,
        body: F,
    ) -> Result<Self, BenchError>
    where
        F: FnOnce(&Control) -> i32 + Send + 'static,
    {
        let control = Arc::new(SharedWords::new(4).map_err(|e| BenchError::setup("shared control page", e))?);
        let ctl = Control(control.clone());
        let cpus_owned: Vec<usize> = cpus.to_vec();
        let kind = match mode {
            Mode::Thread => {
                let handle = std::thread::Builder::new()
                    .name("oscost-peer".into())
                    .spawn(move || {
                        if sys::set_affinity(&cpus_owned).is_err() {
                            return 3;
                        }
                        ctl.0.word(TID).store(sys::gettid() as u64, Ordering::SeqCst);
                        ctl.0.word(READY).store(1, Ordering::SeqCst);
                        body(&ctl)
                    })
                    .map_err(|e| BenchError::setup("starting the peer thread", e))?;
                Kind::Thread(Some(handle))
            }
            Mode::Process => match sys::fork().map_err(|e| BenchError::setup("fork", e))? {
                sys::Fork::Child => {
                    sys::default_sigint();
                    sys::die_with_parent();
                    if sys::set_affinity(&cpus_owned).is_err() {
                        sys::exit_now(3);
                    }
                    ctl.0.word(TID).store(sys::gettid() as u64, Ordering::SeqCst);
                    ctl.0.word(READY).store(1, Ordering::SeqCst);
                    let code = body(&ctl);
                    sys::exit_now(code)
                }
                sys::Fork::Parent(pid) => {
                    let monitor = Monitor::start(pid, poison_main);
                    Kind::Process { pid, monitor, reaped: false }
                }
            },
        };
        let mut peer = Peer { kind, control, poison_peer, task: Task { pid: sys::getpid(), tid: 0 } };
        let start = Instant::now();
        while peer.control.word(READY).load(Ordering::SeqCst) == 0 {
            if start.elapsed() > START_LIMIT || peer.exited_early() {
                return Err(BenchError::Setup("the peer did not start (it could not be pinned or exited)".into()));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let tid = peer.control.word(TID).load(Ordering::SeqCst) as libc::pid_t;
        peer.task = match peer.kind {
            Kind::Thread(_) => Task { pid: sys::getpid(), tid },
            Kind::Process { pid, .. } => Task::process(pid),
        };
        Ok(peer)
    }

    fn exited_early(&mut self) -> bool {
        match &mut self.kind {
            Kind::Thread(h) => h.as_ref().is_some_and(|h| h.is_finished()),
            Kind::Process { pid, reaped, .. } => {
                if let Ok(Some(_)) = sys::try_wait_child(*pid) {
                    *reaped = true;
                }
                *reaped
            }
        }
    }

    /// Asks the peer to stop; `wake` then delivers the token that lets it see the
    /// request (or closes the channel). Waits for it, kills a process that does not
    /// stop in time, and checks how it ended.
    pub fn finish(mut self, wake: impl FnOnce()) -> Result<(), BenchError> {
        self.control.word(STOP).store(1, Ordering::SeqCst);
        wake();
        self.stop_and_reap()
    }

    fn stop_and_reap(&mut self) -> Result<(), BenchError> {
        self.control.word(STOP).store(1, Ordering::SeqCst);
        let deadline = Instant::now() + STOP_LIMIT;
        match &mut self.kind {
            Kind::Thread(handle) => {
                let Some(h) = handle.take() else { return Ok(()) };
                let mut poisoned = false;
                while !h.is_finished() {
                    if Instant::now() > deadline && !poisoned {
                        self.poison_peer.poison();
                        poisoned = true;
                    }
                    if Instant::now() > deadline + STOP_LIMIT {
                        return Err(BenchError::Timeout("the peer thread did not stop".into()));
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
                match h.join() {
                    Ok(0) => Ok(()),
                    Ok(code) => Err(BenchError::Failed(format!("the peer thread stopped with code {code}"))),
                    Err(_) => Err(BenchError::Failed("the peer thread panicked".into())),
                }
            }
            Kind::Process { pid, monitor, reaped } => {
                if *reaped {
                    return Ok(());
                }
                let status = sys::reap_by(*pid, deadline);
                *reaped = true;
                if let Some(m) = monitor.take() {
                    m.stop();
                }
                match status {
                    Ok(s) if s.success() => Ok(()),
                    Ok(s) => Err(BenchError::Failed(format!("the peer process ended with {s:?}"))),
                    Err(e) => Err(BenchError::Failed(format!("waiting for the peer process: {e}"))),
                }
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // Error paths: make sure the peer is gone and reaped.
        if let Kind::Process { pid, reaped: false, .. } = self.kind {
            self.poison_peer.poison();
            sys::kill_hard(pid);
        } else {
            self.poison_peer.poison();
        }
        let _ = self.stop_and_reap();
    }
}

#[cfg(test)]
mod tests {
    use super::super::channel::{self, Endpoint, EventFd, Futex, Mechanism, Pair, Pipe};
    use super::*;

    fn echo<E: Endpoint>(mut end: E, ctl: &Control) -> i32 {
        loop {
            if end.recv() != 0 {
                return 1;
            }
            if ctl.stop_requested() {
                return 0;
            }
            if end.send() != 0 {
                return 2;
            }
        }
    }

    fn our_children() -> Vec<libc::pid_t> {
        sys::live_children()
    }

    /// A peer process killed mid-run: the measuring side's wait ends with an error
    /// (no hang), the peer is reaped, and no child is left.
    fn killed_peer_is_detected<M: Mechanism>() {
        let Pair { mut main, peer: peer_end, poison_main, poison_peer } = M::pair(true).unwrap();
        let cpus = sys::allowed_cpus().unwrap();
        let peer = Peer::start(Mode::Process, &cpus, poison_main, poison_peer, move |ctl| echo(peer_end, ctl)).unwrap();
        assert_eq!(main.send(), 0);
        assert_eq!(main.recv(), 0);
        sys::kill_hard(peer.task.pid);
        let t = Instant::now();
        let mut code = 0;
        for _ in 0..3 {
            code = main.send();
            if code == 0 {
                code = main.recv();
            }
            if code != 0 {
                break;
            }
        }
        assert_ne!(code, 0, "a dead peer must fail the hand-off");
        assert!(t.elapsed() < Duration::from_secs(15));
        let pid = peer.task.pid;
        let r = peer.finish(move || drop(main));
        assert!(r.is_err(), "a killed peer is reported");
        assert!(!our_children().contains(&pid), "the peer was reaped");
    }

    #[test]
    fn killed_peer_process_fails_cleanly_for_each_mechanism() {
        killed_peer_is_detected::<Pipe>();
        killed_peer_is_detected::<EventFd>();
        killed_peer_is_detected::<Futex>();
    }

    #[test]
    fn dropped_peer_is_reaped() {
        let Pair { main, peer: peer_end, poison_main, poison_peer } = Pipe::pair(true).unwrap();
        let cpus = sys::allowed_cpus().unwrap();
        let peer = Peer::start(Mode::Process, &cpus, poison_main, poison_peer, move |ctl| echo(peer_end, ctl)).unwrap();
        let pid = peer.task.pid;
        drop(main);
        drop(peer); // an error path: Drop stops and reaps
        assert!(!our_children().contains(&pid));
    }

    #[test]
    fn thread_peer_stops_cleanly() {
        let Pair { mut main, peer: peer_end, poison_main, poison_peer } = channel::Futex::pair(false).unwrap();
        let cpus = sys::allowed_cpus().unwrap();
        let peer = Peer::start(Mode::Thread, &cpus, poison_main, poison_peer, move |ctl| echo(peer_end, ctl)).unwrap();
        assert_ne!(peer.task.tid, 0);
        assert_eq!(main.send(), 0);
        assert_eq!(main.recv(), 0);
        peer.finish(move || {
            main.send();
        })
        .unwrap();
    }
}
