//! The simulator's invariants (virtual time only: nothing here depends on the machine).

use super::cost::unit_profile;
use super::policy::Why;
use super::types::{SimTask, State};
use super::workload::{Params, WorkloadKind, simulate};
use super::*;

fn params(policy: PolicyKind, workload: WorkloadKind, cpus: usize, tasks: usize) -> Params {
    Params { policy, workload, cpus, tasks, threads: false, nice: 0, messages: 10, seed: 7 }
}

#[test]
fn the_same_seed_gives_the_same_output() {
    for w in [WorkloadKind::Server, WorkloadKind::Chat] {
        let p = params(PolicyKind::Cfs, w, 2, 2);
        let (a, b) = (simulate(&p, &unit_profile()), simulate(&p, &unit_profile()));
        assert_eq!(a.figures, b.figures);
        assert_eq!(a.outcome, b.outcome);
    }
    let other = Params { seed: 8, ..params(PolicyKind::Cfs, WorkloadKind::Server, 1, 20) };
    let same = params(PolicyKind::Cfs, WorkloadKind::Server, 1, 20);
    assert_ne!(simulate(&other, &unit_profile()).outcome, simulate(&same, &unit_profile()).outcome);
}

#[test]
fn an_o1_pick_costs_the_same_at_any_run_queue_length() {
    let per_schedule = |n| {
        let o = simulate(&params(PolicyKind::O1, WorkloadKind::Travis, 1, n), &unit_profile()).outcome;
        (o.cpu_sched_ns as f64 / o.schedules as f64, o.switches as f64 / o.schedules as f64)
    };
    let (small, s_sw) = per_schedule(2);
    let (large, l_sw) = per_schedule(1024);
    // Every schedule switches here, so the scheduler's time per schedule is one pick,
    // one yield's requeue and one switch, whatever N is.
    assert!(s_sw > 0.99 && l_sw > 0.99);
    assert!((small - large).abs() / small < 0.01, "{small} vs {large}");
    let scan = |n| {
        let o = simulate(&params(PolicyKind::Linux24, WorkloadKind::Travis, 1, n), &unit_profile()).outcome;
        o.cpu_sched_ns as f64 / o.schedules as f64
    };
    assert!(scan(1024) > 10.0 * scan(2), "a goodness scan grows with N");
}

#[test]
fn linux20_recalculates_every_n_yields_and_the_fix_makes_it_twenty_times_rarer() {
    for n in [2usize, 4, 10, 40] {
        let before = simulate(&params(PolicyKind::Linux20, WorkloadKind::Travis, 1, n), &unit_profile());
        let after = simulate(&params(PolicyKind::Linux20YieldFix, WorkloadKind::Travis, 1, n), &unit_profile());
        let (b, a) = (before.figures[1].value, after.figures[1].value);
        assert!((b * n as f64 - 1.0).abs() < 0.01, "before the fix, once per {n} yields: {b}");
        let ratio = b / a;
        assert!((18.0..=22.0).contains(&ratio), "after the fix about 1/20 as often at N={n}: {ratio}");
    }
    // The dip: from 2 to 4 contexts the recalculation is shared by more switches.
    let t = |n| simulate(&params(PolicyKind::Linux20, WorkloadKind::Travis, 1, n), &unit_profile()).figures[0].value;
    assert!(t(4) < t(2), "{} vs {}", t(4), t(2));
}

#[test]
fn cfs_shares_follow_the_nice_weights() {
    use super::engine::Engine;
    use super::workload::Hog;
    let nices = [0, 0, 5, 10];
    for kind in [PolicyKind::Cfs, PolicyKind::Eevdf] {
        let mut e = Engine::new(kind.build(1), unit_profile(), 1, 1);
        for &n in &nices {
            e.spawn(Box::new(Hog), None, n, 0);
        }
        let o = e.run(20_000_000_000, |_| false);
        let total: u64 = o.task_run_ns.iter().sum();
        let weights: Vec<f64> = nices.iter().map(|&n| policy::cfs::weight(n) as f64).collect();
        let wsum: f64 = weights.iter().sum();
        for (i, w) in weights.iter().enumerate() {
            let share = o.task_run_ns[i] as f64 / total as f64;
            assert!(
                (share - w / wsum).abs() < 0.01,
                "{}: nice {} share {share} vs {}",
                kind.name(),
                nices[i],
                w / wsum
            );
        }
    }
}

#[test]
fn eevdf_weighted_lags_sum_to_zero() {
    use super::policy::Scheduler;
    use super::policy::cfs::Fair;
    let mut rng = Rng::new(3);
    let nices = [0, -5, 3, 10, 0, 5];
    let tasks: Vec<SimTask> = nices
        .iter()
        .enumerate()
        .map(|(id, &nice)| {
            let mut e = super::engine::Engine::new(PolicyKind::Eevdf.build(1), unit_profile(), 1, 0);
            e.spawn(Box::new(super::workload::Hog), None, nice, 0);
            let mut t = e.tasks.pop().unwrap();
            t.id = id;
            t.state = State::Runnable;
            t
        })
        .collect();
    let mut f = Fair::new(1, true);
    for t in &tasks {
        f.add(&tasks, t.id, 0, Why::New);
    }
    let scale: f64 = tasks.iter().map(|t| policy::cfs::weight(t.nice) as f64).sum::<f64>() * 1e6;
    let mut prev = None;
    let mut ran = std::collections::BTreeSet::new();
    for round in 0..400 {
        let cur = f.pick(&tasks, 0, prev, round).next.unwrap();
        ran.insert(cur);
        f.charge(&tasks, cur, rng.exp(1e6));
        let sum = f.weighted_lag_sum(0);
        assert!(sum.abs() / scale < 1e-9, "round {round}: {sum}");
        if round % 7 == 0 {
            // A yield pushes the deadline; the lags still balance.
            f.on_yield(&tasks, 0, cur);
        }
        prev = Some(cur);
    }
    assert_eq!(ran.len(), tasks.len(), "every task was eligible at some point");
}

#[test]
fn every_cpu_nanosecond_is_accounted_for() {
    for pol in PolicyKind::ALL {
        for (w, cpus, n) in [
            (WorkloadKind::Travis, 1, 8),
            (WorkloadKind::LoopYield, 2, 4),
            (WorkloadKind::Server, 2, 30),
            (WorkloadKind::Fork, 1, 50),
            (WorkloadKind::Chat, 2, 1),
        ] {
            let o = simulate(&params(pol, w, cpus, n), &unit_profile()).outcome;
            let accounted = o.cpu_task_ns + o.cpu_sched_ns + o.cpu_idle_ns + o.cpu_lock_wait_ns;
            assert_eq!(accounted, o.end_ns * cpus as u64, "{} {}", pol.name(), w.name());
            assert_eq!(o.cpu_task_ns, o.task_run_ns.iter().sum::<u64>());
        }
    }
}

#[test]
fn chat_users_write_chat_cs_count_and_lose_no_message() {
    // chat_c's count: every user of every room writes `messages` messages, and every
    // one is read.
    for pol in PolicyKind::ALL {
        for cpus in [1, 2] {
            let p = Params { messages: 5, ..params(pol, WorkloadKind::Chat, cpus, 2) };
            let o = simulate(&p, &unit_profile()).outcome;
            let expected = (2 * workload::ROOM) as u64 * 5;
            assert_eq!((o.sent, o.delivered), (expected, expected), "{} on {cpus} CPUs", pol.name());
        }
    }
}

#[test]
fn chat_peers_come_from_the_seed() {
    // The same seed: the same peers, to the nanosecond; another seed: other peers.
    let p = Params { messages: 20, ..params(PolicyKind::O1, WorkloadKind::Chat, 2, 1) };
    let (a, b) = (simulate(&p, &unit_profile()).outcome, simulate(&p, &unit_profile()).outcome);
    assert_eq!(a, b);
    let other = simulate(&Params { seed: 8, ..p }, &unit_profile()).outcome;
    assert_ne!(a.end_ns, other.end_ns);
}

#[test]
fn one_cpu_charges_no_cross_cpu_term() {
    for pol in PolicyKind::ALL {
        let o = simulate(&params(pol, WorkloadKind::Chat, 1, 1), &unit_profile()).outcome;
        assert_eq!((o.remote_wakeups, o.busy_ipis, o.remote_messages), (0, 0, 0), "{}", pol.name());
        assert!(o.delivered > 0);
    }
}

#[test]
fn cross_cpu_messages_cost_more_than_local_ones() {
    // The same chat on 2 CPUs with and without the cross-CPU terms: their price is
    // in the rate, and the counters say where it was paid.
    let p = Params { messages: 20, ..params(PolicyKind::O1, WorkloadKind::Chat, 2, 1) };
    let with = simulate(&p, &unit_profile());
    let mut free = unit_profile();
    for t in [&mut free.wake_remote, &mut free.ipi_busy, &mut free.msg_remote] {
        t.ns = 0.0;
    }
    let without = simulate(&p, &free);
    let o = &with.outcome;
    assert!(o.remote_wakeups > 0 && o.remote_messages > 0, "{o:?}");
    assert!(with.figures[0].value < without.figures[0].value);
}

/// A writer that sends one message to `to`, then computes.
struct WriteOnce {
    to: usize,
    sent: bool,
}

impl workload::Behavior for WriteOnce {
    fn next(&mut self, _: usize, _: &mut types::Shared, _: &mut Rng) -> types::Action {
        if std::mem::replace(&mut self.sent, true) {
            types::Action::Compute(10_000_000)
        } else {
            types::Action::Send(self.to)
        }
    }
}

/// A reader: reads what its socket holds, else waits.
struct Reader;

impl workload::Behavior for Reader {
    fn next(&mut self, me: usize, shared: &mut types::Shared, _: &mut Rng) -> types::Action {
        if shared.inbox.get(me).is_some_and(|q| !q.is_empty()) {
            types::Action::Receive
        } else {
            types::Action::WaitWake
        }
    }
}

#[test]
fn linux_2_4_17_sock_def_readable_is_no_sync_wake_up_so_reschedule_idle_gives_the_reader_an_idle_cpu() {
    // net/core/sock.c of 2.4.17: sock_def_readable() calls wake_up_interruptible(), not
    // the _sync variant (pipe_write() in fs/pipe.c is what uses
    // wake_up_interruptible_sync()); try_to_wake_up(p, 0) then calls reschedule_idle(),
    // which sends the reader to the idle CPU. 2.6.0's sock_def_readable() is the same
    // (wake_up_interruptible(sk->sk_sleep)). The reader, last on CPU 0, reads on CPU 1
    // a message written on CPU 0: its lines cross.
    let mut e = engine::Engine::new(PolicyKind::Linux24.build(2), unit_profile(), 2, 0);
    let reader = e.spawn_sleeping(Box::new(Reader), 0, 0, u64::MAX / 2);
    e.spawn(Box::new(WriteOnce { to: reader, sent: false }), None, 0, 0);
    let o = e.run(5_000_000, |_| false);
    assert_eq!((o.sent, o.delivered, o.remote_messages), (1, 1, 1), "{o:?}");
    assert_eq!(e.tasks[reader].cpu, 1, "the reader ran on the idle CPU");
}

#[test]
fn linux_2_6_0_try_to_wake_up_queues_the_reader_on_its_last_cpu_and_resched_task_sends_an_ipi() {
    // kernel/sched.c of 2.6.0, try_to_wake_up() with sync = 0: the task joins its last
    // CPU's queue (its lock and lines taken from the waker's CPU), and when it beats
    // that CPU's current task, resched_task() sends that busy CPU a reschedule IPI.
    let mut e = engine::Engine::new(PolicyKind::O1.build(2), unit_profile(), 2, 0);
    let reader = e.spawn_sleeping(Box::new(Reader), 0, 1, u64::MAX / 2);
    e.spawn(Box::new(workload::Hog), None, 0, 1);
    // The writer starts once the hog has run long enough to have lost its bonus.
    e.spawn_sleeping(Box::new(WriteOnce { to: reader, sent: false }), 0, 0, 300_000_000);
    let o = e.run(400_000_000, |_| false);
    assert_eq!((o.sent, o.delivered), (1, 1), "{o:?}");
    assert_eq!(e.tasks[reader].cpu, 1, "woken on its last CPU");
    assert!(o.remote_wakeups >= 1 && o.busy_ipis >= 1, "{o:?}");
    assert_eq!(o.remote_messages, 1);
}

#[test]
fn the_o1_child_runs_first_and_the_others_let_the_parent_go_on() {
    for pol in PolicyKind::ALL {
        let r = simulate(&params(pol, WorkloadKind::Fork, 1, 100), &unit_profile());
        let first = r.figures[1].value;
        assert_eq!(r.outcome.forks, 100);
        // Both O(1)s run the child first (2.6.0's wake_up_forked_process; the 2002
        // patch by the founding text's "run fork()ed children before the parent").
        if matches!(pol, PolicyKind::O1 | PolicyKind::O12002) {
            assert_eq!(first, 1.0, "{}", pol.name());
        } else {
            assert_eq!(first, 0.0, "{}", pol.name());
        }
    }
}

// The kernel's rules, one test each, named after the version and function they follow.

fn tasks_for(n: usize) -> Vec<SimTask> {
    super::types::test_tasks(n, 0)
}

#[test]
fn linux_2_0_40_goodness_gives_its_bonus_to_prev_itself() {
    // kernel/sched.c goodness(): `if (p == prev) weight += 1;`. Under the article's
    // yield change (counter − 1) two yielders alternate A, B, B, A, A, B, …: the one
    // that yielded ties the other's counter, and its +1 picks it again every other
    // time; threads of one mm get no more than processes.
    for threads in [false, true] {
        let p = Params { threads, ..params(PolicyKind::Linux20YieldFix, WorkloadKind::Travis, 1, 2) };
        let o = simulate(&p, &unit_profile()).outcome;
        let share = o.switches as f64 / o.yields as f64;
        assert!((0.45..0.55).contains(&share), "threads {threads}: {share}");
    }
    assert_eq!(policy::linux20::PROC_CHANGE_PENALTY, 20, "include/asm-i386/smp.h of 2.0");
}

#[test]
fn linux_2_0_40_update_process_times_reschedules_below_zero() {
    // `p->counter -= ticks; if (p->counter < 0) { p->counter = 0; need_resched = 1; }`:
    // a slice of DEF_PRIORITY (20) runs 21 ticks, so two hogs switch every 210 ms.
    let mut e = super::engine::Engine::new(PolicyKind::Linux20.build(1), unit_profile(), 1, 0);
    e.spawn(Box::new(super::workload::Hog), None, 0, 0);
    e.spawn(Box::new(super::workload::Hog), None, 0, 0);
    let o = e.run(10_500_000_000, |_| false);
    assert_eq!(o.switches, 50, "10.5 s / 210 ms");
}

#[test]
fn linux_2_0_40_do_fork_halves_the_counter_for_parent_and_child() {
    // kernel/fork.c do_fork(): `p->counter = (current->counter >>= 1);`.
    let tasks = tasks_for(2);
    let mut l = policy::linux20::Linux20::new(1, false);
    l.add(&tasks, 0, 0, Why::New);
    l.add(&tasks, 1, 0, Why::Fork { parent: 0 });
    assert_eq!((l.counter(0), l.counter(1)), (10, 10));
    // The child never preempts its parent (equal counters: no `> current + 3`).
    assert!(!l.wake_preempts(&tasks, 1, 0));
}

#[test]
fn linux_2_4_16_do_fork_splits_the_counter_and_release_task_returns_it() {
    // kernel/fork.c do_fork(): `p->counter = (current->counter + 1) >> 1;
    // current->counter >>= 1;`; kernel/exit.c release_task(): the parent gets the
    // child's counter back, up to MAX_COUNTER (20).
    let tasks = tasks_for(3);
    let mut l = policy::linux24::Linux24::new(1);
    l.add(&tasks, 0, 0, Why::New); // NICE_TO_TICKS(0) = 6
    assert_eq!(l.counter(0), 6);
    l.add(&tasks, 1, 0, Why::Fork { parent: 0 });
    assert_eq!((l.counter(0), l.counter(1)), (3, 3));
    l.add(&tasks, 2, 0, Why::Fork { parent: 0 });
    assert_eq!((l.counter(0), l.counter(2)), (1, 2));
    l.reap(&tasks, 1, 0);
    l.reap(&tasks, 2, 0);
    assert_eq!(l.counter(0), 6);
}

#[test]
fn linux_2_4_16_add_to_runqueue_puts_a_task_at_the_head() {
    // kernel/sched.c add_to_runqueue(): `list_add(&p->run_list, &runqueue_head)`; the
    // scan goes head to tail and keeps the first of the best: among equals, the task
    // added last runs first.
    let tasks = tasks_for(3);
    let mut l = policy::linux24::Linux24::new(1);
    for id in 0..3 {
        l.add(&tasks, id, 0, Why::New);
    }
    assert_eq!(l.pick(&tasks, 0, None, 0).next, Some(2));
}

#[test]
fn linux_2_4_16_sys_sched_yield_does_nothing_when_no_task_waits() {
    // kernel/sched.c sys_sched_yield(): `if (nr_pending) { … }`. One yielder per CPU
    // enters schedule() only when its slice runs out (every 6 ticks: about 17 times a
    // second), never for a yield; with a second one on the CPU every yield does.
    let alone = simulate(&params(PolicyKind::Linux24, WorkloadKind::LoopYield, 1, 1), &unit_profile()).outcome;
    assert!(alone.yields > 1000 && alone.schedules <= 20, "{} yields, {} schedules", alone.yields, alone.schedules);
    let two = simulate(&params(PolicyKind::Linux24, WorkloadKind::LoopYield, 1, 2), &unit_profile()).outcome;
    assert!(two.schedules >= two.yields, "{} yields, {} schedules", two.yields, two.schedules);
}

#[test]
fn linux_2_4_16_reschedule_idle_prefers_the_last_cpu_then_the_longest_idle() {
    // kernel/sched.c reschedule_idle(): the task's last CPU if idle, else the idle CPU
    // with the oldest last_schedule.
    let mut tasks = tasks_for(4);
    tasks[0].cpu = 2;
    let mut l = policy::linux24::Linux24::new(3);
    assert_eq!(l.add(&tasks, 0, 0, Why::Wake), 2, "its last CPU, idle");
    assert_eq!(l.pick(&tasks, 2, None, 5).next, Some(0)); // CPU 2 busy from t = 5
    let _ = l.pick(&tasks, 0, None, 9); // CPU 0 looked last at t = 9, found nothing
    tasks[1].cpu = 2;
    assert_eq!(l.add(&tasks, 1, 0, Why::Wake), 1, "CPU 2 busy: CPU 1, idle since t = 0");
}

#[test]
fn linux_2_6_0_wake_up_forked_process_runs_the_child_first_on_the_parents_cpu() {
    // kernel/sched.c wake_up_forked_process(): the child takes the parent's prio and is
    // queued just before it on the parent's CPU, with half its slice; do_fork flags
    // the parent to reschedule. No other CPU is told (they pull at their idle tick).
    let tasks = tasks_for(2);
    let mut o1 = policy::o1::O1::new(1);
    o1.add(&tasks, 0, 0, Why::New);
    assert_eq!(o1.pick(&tasks, 0, None, 0).next, Some(0));
    assert_eq!(o1.add(&tasks, 1, 0, Why::Fork { parent: 0 }), 0, "the parent's CPU");
    assert_eq!((o1.slice(0), o1.slice(1)), (51_000_000, 51_000_000), "half of 102 ms each");
    assert_eq!(o1.prio(1), o1.prio(0));
    assert_eq!(o1.pick(&tasks, 0, Some(0), 1).next, Some(1), "the child runs first");
    let one = simulate(&params(PolicyKind::O1, WorkloadKind::Fork, 1, 200), &unit_profile());
    assert_eq!(one.figures[1].value, 1.0);
    let two = simulate(&params(PolicyKind::O1, WorkloadKind::Fork, 2, 200), &unit_profile());
    assert!(two.figures[1].value > 0.9, "{}", two.figures[1].value);
}

#[test]
fn linux_2_0_and_2_4_reschedule_idle_hands_the_child_to_an_idle_cpu() {
    // 2.0 wake_up_process / 2.4 reschedule_idle: an idle CPU is sent the new child by
    // IPI; when the IPI beats the parent to waitpid (as in the unit profile), the child
    // runs there and refills its cache: a migration per fork.
    for pol in [PolicyKind::Linux20, PolicyKind::Linux24] {
        let r = simulate(&params(pol, WorkloadKind::Fork, 2, 100), &unit_profile());
        assert!(r.outcome.migrations >= 100, "{}: {} migrations", pol.name(), r.outcome.migrations);
        assert_eq!(r.figures[1].value, 0.0);
    }
}
