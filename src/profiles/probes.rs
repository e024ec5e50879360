//! The machine measurements a `live` simulation profile takes: a bare system call, a
//! cache-cold scan and recalculation over task-sized records, a bitmap pick, a tree
//! step, a cache line's transfer between two CPUs, and whether the kernel ends slices
//! on an hrtick.
//!
//! Why here and not in `sim`: the simulator measures nothing and reads nothing of the
//! machine; the command line hands it these figures through its
//! [`ProfileSource`](crate::sim::profile_source::ProfileSource), so a test can hand it
//! fixed ones and the simulator stays a pure function of its inputs.

use std::hint::black_box;

use crate::sim::cost::MachineProbes;

/// Measures this machine now (a fraction of a second; the cold walks touch 14 MB).
pub fn probe() -> MachineProbes {
    let syscall = bare_yield();
    let (scan, recalc) = cold_walks();
    let (pick, tree) = pick_and_tree();
    MachineProbes {
        syscall,
        scan,
        recalc,
        pick,
        tree,
        line: line_transfer(),
        hrtick: live_hrtick(),
        cpus: crate::sys::allowed_cpus().map(|c| c.len()).unwrap_or(1),
    }
}

/// Times `f` over enough repetitions for a stable per-call figure, ns.
fn per_call(mut f: impl FnMut(u64) -> u64, reps: u64) -> f64 {
    let _ = f(reps / 10); // warm
    let t0 = std::time::Instant::now();
    black_box(f(reps));
    t0.elapsed().as_nanos() as f64 / reps as f64
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
fn cold_walks() -> (f64, f64) {
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
fn pick_and_tree() -> (f64, f64) {
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
    ) / (2.0 * 1024f64.log2());
    (pick, tree_step)
}

/// sched_yield with nothing else runnable on this thread's CPU: the bare system call.
fn bare_yield() -> f64 {
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
fn line_transfer() -> Option<f64> {
    use std::sync::atomic::{AtomicU64, Ordering};
    const ROUNDS: u64 = 200_000;
    let cpus = crate::sys::allowed_cpus().ok()?;
    let (a, b) = (*cpus.first()?, *cpus.get(1)?);
    let flag = AtomicU64::new(0);
    std::thread::scope(|s| {
        let peer = s.spawn(|| {
            // Never leaves early: the timer side waits for every answer.
            let pinned = crate::sys::set_affinity(&[b]).is_ok();
            for i in 0..ROUNDS {
                while flag.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                flag.store(2 * i + 2, Ordering::Release);
            }
            pinned.then_some(())
        });
        let timer = s.spawn(|| {
            let pinned = crate::sys::set_affinity(&[a]).is_ok();
            let t0 = std::time::Instant::now();
            for i in 0..ROUNDS {
                flag.store(2 * i + 1, Ordering::Release);
                while flag.load(Ordering::Acquire) != 2 * i + 2 {
                    std::hint::spin_loop();
                }
            }
            pinned.then(|| t0.elapsed().as_nanos() as f64 / (2 * ROUNDS) as f64)
        });
        let ns = timer.join().ok()?;
        peer.join().ok()??;
        ns
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
