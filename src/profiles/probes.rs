//! The machine measurements a `live` simulation profile takes: a bare system call, a
//! cache-cold scan and recalculation over task-sized records, a bitmap pick, a tree
//! step, a cache line's transfer between two CPUs, how long a thread asleep on an idle
//! CPU takes to run once woken, and whether the kernel ends slices on an hrtick.
//!
//! Timing model: each probe is a loop of the primitive alone, timed by the monotonic
//! clock around whole batches, with a pilot and a warm-up before them; the switch
//! counts that decide whether a batch ran alone are read outside its clock. The idle
//! wake-up is the exception: one wake-up is the primitive, timed from the waker's
//! clock read before its send to the woken thread's read after its receive returns
//! (CLOCK_MONOTONIC, one clock for both CPUs).
//!
//! Why here and not in `sim`: the simulator measures nothing and reads nothing of the
//! machine; the command line hands it these figures through its
//! [`ProfileSource`](crate::sim::profile_source::ProfileSource), so a test can hand it
//! fixed ones and the simulator stays a pure function of its inputs.

use std::hint::black_box;

use crate::sim::cost::{Crowded, MachineProbes};

/// Measures this machine now (a fraction of a second; the cold walks touch 14 MB).
pub fn probe() -> MachineProbes {
    let syscall = bare_yield();
    let (scan, recalc) = cold_walks();
    let (pick, tree) = pick_and_tree();
    let line = line_transfer();
    let idle_wake = idle_wake();
    MachineProbes {
        syscall: syscall.ns,
        scan: scan.ns,
        recalc: recalc.ns,
        pick: pick.ns,
        tree: tree.ns,
        line: line.map(|l| l.ns),
        idle_wake: idle_wake.map(|w| w.ns),
        hrtick: live_hrtick(),
        cpus: crate::sys::allowed_cpus().map(|c| c.len()).unwrap_or(1),
        crowded: Crowded {
            syscall: !syscall.alone,
            walks: !(scan.alone && recalc.alone),
            pick: !(pick.alone && tree.alone),
            line: line.is_some_and(|l| !l.alone),
            idle_wake: idle_wake.is_some_and(|w| !w.alone),
        },
    }
}

/// Timed batches a probe is split into.
const BATCHES: u64 = 16;

/// One timed batch: its time per call, and whether the probing thread (both threads,
/// for the line) went through it without being switched out.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Batch {
    ns: f64,
    alone: bool,
}

/// A probe's figure: the median time per call over the batches that ran alone, or,
/// when none did, over all of them (`alone` false: the figure is doubted).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Probe {
    ns: f64,
    alone: bool,
}

/// Why batches and not one long loop: a probe prices the primitive with the CPU to
/// itself, and a loop another task interrupts charges that task's time to it (a
/// sched_yield that finds another task runnable switches to it and waits out its
/// slice: hundreds of µs a call). A batch through which the probing thread was never
/// switched out (getrusage's counts of its switches unchanged, read outside the
/// timed region) saw none of that; the median of those is the figure.
fn of_batches(batches: &[Batch]) -> Probe {
    let alone: Vec<f64> = batches.iter().filter(|b| b.alone).map(|b| b.ns).collect();
    if alone.is_empty() {
        let all: Vec<f64> = batches.iter().map(|b| b.ns).collect();
        Probe { ns: crate::stats::median(&all), alone: false }
    } else {
        Probe { ns: crate::stats::median(&alone), alone: true }
    }
}

/// Calls timed first, to find a primitive that hands the CPU over as it runs (a
/// sched_yield beside another task runnable on its CPU switched on 12 of 32 calls here
/// and waited out that task's slice each time: 1.5 ms a call, so a probe's 200,000
/// calls would run for minutes). Alone, the pilot takes microseconds and sees no switch.
const PILOT: u64 = 32;

/// Whether a call hands the CPU over: its thread switched on one call in eight or more
/// of `calls` (a call with the CPU to itself sees none; a timer tick's preemption, one).
fn hands_over(switched: u64, calls: u64) -> bool {
    8 * switched >= calls
}

/// The calling thread's switches so far, voluntary and involuntary together.
fn switches() -> Option<u64> {
    crate::sys::thread_switches().ok().map(|(v, i)| v + i)
}

/// Calls kept by [`one_by_one`] before it stops, and the longest it runs.
const ONE_BY_ONE: usize = 64;
const ONE_BY_ONE_FOR: std::time::Duration = std::time::Duration::from_millis(250);

/// Calls timed one at a time, for a call that hands the CPU over on some calls: the
/// median of the calls through which the thread was not switched out, less the median
/// of as many empty timings (the clock's own reads), taken until [`ONE_BY_ONE`] such
/// calls or [`ONE_BY_ONE_FOR`]. Doubted all the same (another task was runnable on the
/// CPU, so the call was not the bare one); None when no call went unswitched.
fn one_by_one(f: &mut impl FnMut(u64) -> u64) -> Option<Probe> {
    let start = std::time::Instant::now();
    let (mut kept, mut empty) = (Vec::new(), Vec::new());
    while kept.len() < ONE_BY_ONE && start.elapsed() < ONE_BY_ONE_FOR {
        let before = switches();
        let t0 = std::time::Instant::now();
        black_box(f(1));
        let ns = t0.elapsed().as_nanos() as f64;
        if before.is_some() && before == switches() {
            kept.push(ns);
            let t0 = std::time::Instant::now();
            black_box(f(0));
            empty.push(t0.elapsed().as_nanos() as f64);
        }
    }
    (!kept.is_empty()).then(|| {
        let ns = (crate::stats::median(&kept) - crate::stats::median(&empty)).max(0.0);
        Probe { ns, alone: false }
    })
}

/// Times `f` over `reps` calls in [`BATCHES`] batches (after a warm-up of a tenth),
/// each batch's clock around `f` alone. A pilot of [`PILOT`] calls comes first: when
/// the thread switched on one in eight of them or more, the call itself hands the CPU
/// over, and the calls are timed one by one instead ([`one_by_one`]), doubted.
fn per_call(mut f: impl FnMut(u64) -> u64, reps: u64) -> Probe {
    let before = switches();
    let t0 = std::time::Instant::now();
    black_box(f(PILOT));
    let ns = t0.elapsed().as_nanos() as f64 / PILOT as f64;
    if let (Some(b), Some(a)) = (before, switches())
        && hands_over(a.saturating_sub(b), PILOT)
    {
        return one_by_one(&mut f).unwrap_or(Probe { ns, alone: false });
    }
    let _ = f(reps / 10); // warm
    let n = (reps / BATCHES).max(1);
    let batches: Vec<Batch> = (0..BATCHES)
        .map(|_| {
            let before = switches();
            let t0 = std::time::Instant::now();
            black_box(f(n));
            let ns = t0.elapsed().as_nanos() as f64 / n as f64;
            let after = switches();
            Batch { ns, alone: before.is_some() && before == after }
        })
        .collect();
    of_batches(&batches)
}

/// A task_struct-sized record (1.75 KB, the size of a 2.4 task_struct) whose scheduling
/// fields sit at its start; scans read them, recalculations write them.
#[repr(C)]
struct TaskLike {
    next: usize,
    counter: i64,
    priority: i64,
    cpu: u32,
    _rest: [u8; 1760],
}

/// The per-task cost of a goodness scan and of a recalculation over task-sized records
/// that are not in the cache: 8192 records (14 MB, beyond the last-level cache of most
/// machines) linked in a shuffled order, so each visit is a cache miss, as a scan of a
/// long run queue after other work is.
fn cold_walks() -> (Probe, Probe) {
    const N: usize = 8192;
    let mut v: Vec<TaskLike> = (0..N)
        .map(|i| TaskLike { next: 0, counter: (i % 21) as i64, priority: 20, cpu: (i % 2) as u32, _rest: [0; 1760] })
        .collect();
    let mut order: Vec<usize> = (0..N).collect();
    let mut rng = crate::stats::SplitMix64::new(0x5eed);
    for i in (1..N).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    for w in 0..N {
        v[order[w]].next = order[(w + 1) % N];
    }
    let scan = per_call(
        |n| {
            let (mut at, mut best) = (order[0], 0i64);
            for _ in 0..n {
                let t = &v[at];
                let g = t.counter + if t.cpu == 1 { 15 } else { 0 };
                best = best.max(g);
                at = t.next;
            }
            black_box(best) as u64
        },
        400_000,
    );
    let recalc = per_call(
        |n| {
            let mut at = order[0];
            for _ in 0..n {
                let t = &mut v[at];
                t.counter = (t.counter >> 1) + t.priority;
                at = t.next;
            }
            black_box(at) as u64
        },
        400_000,
    );
    (scan, recalc)
}

/// A bitmap find-first and an ordered tree's level, timed.
fn pick_and_tree() -> (Probe, Probe) {
    let bitmap: [u64; 3] = [0, 1 << 40, 3];
    let pick = per_call(
        |n| {
            let mut s = 0u64;
            for k in 0..n {
                s += black_box(bitmap)[(k % 3) as usize].trailing_zeros() as u64;
            }
            s
        },
        5_000_000,
    );
    let mut tree = std::collections::BTreeSet::new();
    for i in 0..1024u64 {
        tree.insert(i * 7919 % 100_003);
    }
    let tree_step = per_call(
        |n| {
            let mut s = 0u64;
            for k in 0..n {
                let key = (k * 7919) % 100_003 + 200_000;
                tree.insert(key);
                tree.remove(&key);
                s += key;
            }
            s
        },
        200_000,
    );
    let per_level = Probe { ns: tree_step.ns / (2.0 * 1024f64.log2()), ..tree_step };
    (pick, per_level)
}

/// sched_yield with nothing else runnable on this thread's CPU: the bare system call.
fn bare_yield() -> Probe {
    per_call(
        |n| {
            for _ in 0..n {
                crate::sys::raw_sched_yield();
            }
            n
        },
        200_000,
    )
}

/// Half the round trip of a cache line bounced between two threads on two CPUs (each
/// waits for the other's write, then writes): one line transfer. Both sides run on
/// threads of their own, pinned, so the caller's affinity is untouched. None with
/// fewer than two CPUs allowed.
///
/// Timed in [`BATCHES`] batches, as [`per_call`] times: a batch runs alone when
/// neither thread was switched out through it. Between batches the answering thread
/// reads its switch counts, and the timing thread waits for that read to end before
/// its clock starts again, so no read falls inside a timed batch.
fn line_transfer() -> Option<Probe> {
    use std::sync::atomic::{AtomicU64, Ordering};
    const ROUNDS: u64 = 200_000;
    let per_batch = ROUNDS / BATCHES;
    let cpus = crate::sys::allowed_cpus().ok()?;
    let (a, b) = (*cpus.first()?, *cpus.get(1)?);
    let flag = AtomicU64::new(0);
    // Batch boundaries the answering thread has read its switches at.
    let read = AtomicU64::new(0);
    std::thread::scope(|s| {
        let peer = s.spawn(|| {
            // Never leaves early: the timer side waits for every answer.
            let pinned = crate::sys::set_affinity(&[b]).is_ok();
            let mut counts = Vec::with_capacity(BATCHES as usize + 1);
            counts.push(switches());
            read.store(1, Ordering::Release);
            for k in 0..BATCHES {
                for j in 0..per_batch {
                    let i = k * per_batch + j;
                    while flag.load(Ordering::Acquire) != 2 * i + 1 {
                        std::hint::spin_loop();
                    }
                    flag.store(2 * i + 2, Ordering::Release);
                }
                counts.push(switches());
                read.store(k + 2, Ordering::Release);
            }
            pinned.then_some(counts)
        });
        let timer = s.spawn(|| {
            let pinned = crate::sys::set_affinity(&[a]).is_ok();
            let mut batches = Vec::with_capacity(BATCHES as usize);
            for k in 0..BATCHES {
                while read.load(Ordering::Acquire) != k + 1 {
                    std::hint::spin_loop();
                }
                let before = switches();
                let t0 = std::time::Instant::now();
                for j in 0..per_batch {
                    let i = k * per_batch + j;
                    flag.store(2 * i + 1, Ordering::Release);
                    while flag.load(Ordering::Acquire) != 2 * i + 2 {
                        std::hint::spin_loop();
                    }
                }
                let ns = t0.elapsed().as_nanos() as f64 / (2 * per_batch) as f64;
                let after = switches();
                batches.push((ns, before.is_some() && before == after));
            }
            pinned.then_some(batches)
        });
        let timed = timer.join().ok()??;
        let counts = peer.join().ok()??;
        let batches: Vec<Batch> = timed
            .iter()
            .zip(counts.windows(2))
            .map(|(&(ns, alone), peer)| Batch { ns, alone: alone && peer[0].is_some() && peer[0] == peer[1] })
            .collect();
        Some(of_batches(&batches))
    })
}

/// Wake-ups [`idle_wake`] times, and how long the sleeping thread's CPU sits idle
/// before each: a CPU a hand-off left idle a moment ago, as a busy workload's CPUs
/// are. How long it has been idle decides what waking it costs: on the 2-vCPU VM of
/// docs/simulator.md, past 20 µs with no guest halt polling and past the 200 µs window
/// with it, the host's wake-up of a halted vCPU.
const IDLE_WAKES: usize = 64;
const IDLE_PAUSE: std::time::Duration = std::time::Duration::from_micros(20);

/// How long a thread asleep on a CPU idle for [`IDLE_PAUSE`] takes to run once another
/// CPU wakes it: the waker, pinned to one CPU, spins through the pause, reads the
/// clock and sends; the sleeper, pinned to another and blocked in its receive, reads
/// the clock as the receive returns. The wake-up's system call, the interrupt to the
/// idle CPU, that CPU's way out of its idle state (in a VM whose idle vCPU halts, the
/// host's wake-up of it) and the switch to the sleeper are all inside. A wake-up
/// through which the sleeper was switched out involuntarily did not run alone. None
/// with fewer than two CPUs allowed.
fn idle_wake() -> Option<Probe> {
    let cpus = crate::sys::allowed_cpus().ok()?;
    let (a, b) = (*cpus.first()?, *cpus.get(1)?);
    let (to_sleeper, inbox) = std::sync::mpsc::sync_channel::<std::time::Instant>(1);
    std::thread::scope(|s| {
        let sleeper = s.spawn(move || {
            let pinned = crate::sys::set_affinity(&[b]).is_ok();
            let mut wakes = Vec::with_capacity(IDLE_WAKES);
            let involuntary = || crate::sys::thread_switches().ok().map(|(_, i)| i);
            let mut before = involuntary();
            while let Ok(sent) = inbox.recv() {
                let ns = sent.elapsed().as_nanos() as f64;
                let after = involuntary();
                wakes.push(Batch { ns, alone: before.is_some() && before == after });
                before = after;
            }
            pinned.then_some(wakes)
        });
        let pinned = s
            .spawn(move || {
                let pinned = crate::sys::set_affinity(&[a]).is_ok();
                for _ in 0..IDLE_WAKES {
                    // Spun, not slept: a sleep's timer would wake this CPU late by
                    // more than the pause.
                    let t = std::time::Instant::now();
                    while t.elapsed() < IDLE_PAUSE {
                        std::hint::spin_loop();
                    }
                    if to_sleeper.send(std::time::Instant::now()).is_err() {
                        break;
                    }
                }
                pinned
            })
            .join()
            .ok()?;
        let wakes = sleeper.join().ok()??;
        (pinned && !wakes.is_empty()).then(|| of_batches(&wakes))
    })
}

/// Where the running kernel lists its scheduler features (debugfs: mounted, and
/// readable by root only, on most systems).
const SCHED_FEATURES: &str = "/sys/kernel/debug/sched/features";

/// Whether the running kernel ends slices on an hrtick (its sched features list
/// HRTICK, not NO_HRTICK); None where the features cannot be read. The file is a line
/// of feature names: read at most 64 KiB of it.
fn live_hrtick() -> Option<bool> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(SCHED_FEATURES).ok()?.take(64 * 1024).read_to_string(&mut text).ok()?;
    Some(crate::sim::cost::hrtick_listed(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(ns: f64, alone: bool) -> Batch {
        Batch { ns, alone }
    }

    #[test]
    fn the_figure_is_the_median_of_the_batches_that_ran_alone() {
        // Two batches another task interrupted (a slice each, charged to the calls)
        // leave the figure where the batches that ran alone put it.
        let batches = [batch(100.0, true), batch(50_000.0, false), batch(104.0, true), batch(90_000.0, false)];
        assert_eq!(of_batches(&batches), Probe { ns: 102.0, alone: true });
        assert_eq!(of_batches(&[batch(100.0, true)]), Probe { ns: 100.0, alone: true });
    }

    #[test]
    fn with_no_batch_alone_the_figure_is_every_batchs_median_and_doubted() {
        let batches = [batch(400.0, false), batch(500.0, false), batch(90_000.0, false)];
        assert_eq!(of_batches(&batches), Probe { ns: 500.0, alone: false });
    }

    #[test]
    fn a_pilot_with_a_tick_or_two_runs_alone_and_one_that_switched_often_hands_over() {
        for quiet in [0, 1, 3] {
            assert!(!hands_over(quiet, PILOT), "{quiet} switches in {PILOT} calls");
        }
        // A sched_yield beside a runnable spinner switched on 12 of 32 calls here.
        for crowded in [4, 12, 32] {
            assert!(hands_over(crowded, PILOT), "{crowded} switches in {PILOT} calls");
        }
    }

    #[test]
    fn an_idle_cpus_wake_up_is_a_positive_time_and_none_with_one_cpu() {
        let cpus = crate::sys::allowed_cpus().unwrap_or_default();
        match idle_wake() {
            // The sleeper's clock read follows the waker's: a wake-up takes time.
            Some(p) => assert!(p.ns > 0.0 && p.ns.is_finite(), "{p:?}"),
            None if cpus.len() < 2 => eprintln!("skipped: {} CPU allowed, no idle CPU to wake", cpus.len()),
            None => eprintln!("skipped: the threads could not be pinned to two CPUs"),
        }
    }

    #[test]
    fn a_yield_beside_a_task_spinning_on_its_cpu_is_crowded() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let Some(cpu) = crate::sys::allowed_cpus().ok().and_then(|c| c.first().copied()) else {
            eprintln!("skipped: this process's allowed CPUs cannot be read");
            return;
        };
        // The probe starts only once the spinner runs pinned to the CPU, so no batch
        // can run before it (a busy machine may start the spinner late).
        let (started, pinned, stop) = (AtomicBool::new(false), AtomicBool::new(false), AtomicBool::new(false));
        let probe = std::thread::scope(|s| {
            s.spawn(|| {
                let ok = crate::sys::set_affinity(&[cpu]).is_ok();
                pinned.store(ok, Ordering::Release);
                started.store(true, Ordering::Release);
                while ok && !stop.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
            });
            let probe = s.spawn(|| {
                crate::sys::set_affinity(&[cpu]).ok()?;
                while !started.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                pinned.load(Ordering::Acquire).then(bare_yield)
            });
            let probe = probe.join().ok().flatten();
            stop.store(true, Ordering::Release);
            probe
        });
        let Some(probe) = probe else {
            eprintln!("skipped: a thread could not be pinned to CPU {cpu}");
            return;
        };
        assert!(!probe.alone, "sched_yield beside a runnable spinner on CPU {cpu}: {probe:?}");
    }
}
