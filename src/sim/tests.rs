//! The simulator's invariants (virtual time only: nothing here depends on the machine).

use super::cost::unit_profile;
use super::engine::{SimTask, State};
use super::policy::Why;
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
    use super::policy::Policy;
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
fn chat_loses_no_message() {
    for pol in PolicyKind::ALL {
        for cpus in [1, 2] {
            let p = Params { messages: 5, ..params(pol, WorkloadKind::Chat, cpus, 2) };
            let o = simulate(&p, &unit_profile()).outcome;
            let expected = (2 * workload::ROOM * (workload::ROOM - 1)) as u64 * 5;
            assert_eq!((o.sent, o.delivered), (expected, expected), "{} on {cpus} CPUs", pol.name());
        }
    }
}

#[test]
fn the_o1_child_runs_first_and_the_others_let_the_parent_go_on() {
    for pol in PolicyKind::ALL {
        let r = simulate(&params(pol, WorkloadKind::Fork, 1, 100), &unit_profile());
        let first = r.figures[1].value;
        assert_eq!(r.outcome.forks, 100);
        if pol == PolicyKind::O1 {
            assert_eq!(first, 1.0);
        } else {
            assert_eq!(first, 0.0, "{}", pol.name());
        }
    }
}
