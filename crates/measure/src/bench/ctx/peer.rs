//! The other side of a hand-off: one task of the shared lifecycle ([`crate::tasks`]),
//! a thread or a forked process pinned where the placement says, plus what a hand-off
//! needs on top: when a peer process dies, an exit watch poisons the measuring side's
//! channel so no wait of ours outlives it; when a peer does not stop, its own side is
//! poisoned to unblock it.

use super::channel::Poisoner;
use crate::kcounts::Task;
use crate::runner::BenchError;
use crate::tasks::{ExitWatch, TaskGroup};
pub use crate::tasks::{Member as Control, Mode};

/// A running peer.
pub struct Peer {
    group: Option<TaskGroup>,
    _watch: Option<ExitWatch>,
    pub task: Task,
}

impl Peer {
    /// Starts `body` as a thread or a forked process, pinned to `cpus`. The body gets
    /// the control block and returns an exit code (0 = clean stop). In a process the
    /// body is bound by the child's rules (raw system calls, no allocation).
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
        let mut body = Some(body);
        // The nudge is set before the peer starts, so a start cut short (a stop signal
        // while it announces itself) wakes a peer already waiting for its first token.
        let nudge: Box<dyn Fn() + Send> = Box::new(move || poison_peer.poison());
        let take = |_| body.take().expect("one peer, one body");
        let group = TaskGroup::start_nudged(mode, 1, cpus, None, take, Some(nudge))?;
        let watch = (mode == Mode::Process).then(|| ExitWatch::start(&group.pids(), move || poison_main.poison()));
        let task = group.tasks[0];
        crate::tasks::move_peer(&task, mode)?;
        Ok(Peer { group: Some(group), _watch: watch, task })
    }

    /// Asks the peer to stop; `wake` then delivers the token that lets it see the
    /// request (or closes the channel). Waits for it, kills a process that does not
    /// stop in time, and checks how it ended.
    pub fn finish(mut self, wake: impl FnOnce()) -> Result<(), BenchError> {
        let group = self.group.take().expect("a peer finishes once");
        group.finish(wake).map_err(|e| match e {
            BenchError::Failed(why) => BenchError::Failed(format!("the peer: {why}")),
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::channel::{self, Endpoint, EventFd, Futex, Mechanism, Pair, Pipe};
    use super::*;
    use oscost_platform::sys;
    use std::time::{Duration, Instant};

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
        oscost_platform::procfs::live_children()
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
