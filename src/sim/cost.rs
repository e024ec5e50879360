//! Cost profiles: the virtual time each scheduler operation charges. A profile is
//! named, printed with every simulated figure, and made one of two ways:
//! - `live`: this machine. The scan, recalculation, bitmap-pick and tree-step costs are
//!   measured on the spot by running the simulator's own code paths for them in a
//!   timed loop; the switch and system-call costs come from a stored oscost run's
//!   `load.runqueue` yield rows at 2 tasks (the switch with the least scheduling in it).
//! - `pentium200`: fitted to the published "Linux before change, process switch" row
//!   of the 1999 article's Table 2 and nothing else (`fit_travis_row`). The figures of
//!   that row are not part of this build, so the profile cannot be made here.

use std::hint::black_box;

/// What each operation costs, ns of virtual time.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostProfile {
    pub name: String,
    /// Where the figures come from.
    pub source: String,
    /// Entering and leaving the kernel (a sched_yield's own cost).
    pub syscall_ns: f64,
    /// A switch between tasks sharing an address space.
    pub switch_thread_ns: f64,
    /// A switch between address spaces.
    pub switch_process_ns: f64,
    /// goodness() of one task in a run-queue scan.
    pub scan_per_task_ns: f64,
    /// One task in the recalculation loop.
    pub recalc_per_task_ns: f64,
    /// A constant-time pick (bitmap search, list head).
    pub pick_o1_ns: f64,
    /// One level of a balanced tree (an insert or removal costs log2 n of these).
    pub tree_step_ns: f64,
    /// A lock's cache line moving to another CPU.
    pub lock_bounce_ns: f64,
    /// Waking a task (try_to_wake_up's own work).
    pub wake_ns: f64,
    /// Creating a task, and reaping it.
    pub fork_ns: f64,
    pub exit_ns: f64,
}

/// Why a profile cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "profile pentium200 is fitted to the published Table 2 row \"Linux before change, process switch\" (Appleton, 1999), whose figures this build does not carry; use --profile live"
    )]
    PublishedRowMissing,
    #[error(
        "the live profile needs a stored run with load.runqueue yield rows at 2 tasks (run `oscost run load.runqueue` first): {0}"
    )]
    NoStoredSwitch(String),
    #[error("unknown profile {0:?} (profiles: live, pentium200)")]
    Unknown(String),
}

/// The switch and system-call figures a live profile takes from a stored run, ns.
#[derive(Debug, Clone, Copy)]
pub struct StoredSwitch {
    pub thread_ns: f64,
    pub process_ns: f64,
    pub yield_alone_ns: Option<f64>,
}

/// Times `f` over enough repetitions for a stable per-call figure, ns.
fn per_call(mut f: impl FnMut(u64) -> u64, reps: u64) -> f64 {
    let _ = f(reps / 10); // warm
    let t0 = std::time::Instant::now();
    black_box(f(reps));
    t0.elapsed().as_nanos() as f64 / reps as f64
}

/// The scan, recalculation, bitmap and tree costs of this machine, measured by timing
/// the simulator's code paths for them.
pub fn measured_paths() -> (f64, f64, f64, f64) {
    let counters: Vec<(i64, i64, u32)> = (0..1024).map(|i| (i % 20, 20, (i % 7) as u32)).collect();
    let scan = per_call(
        |n| {
            let mut best = 0i64;
            for k in 0..n {
                let (c, _, cpu) = counters[(k % 1024) as usize];
                let g = c + if cpu == 3 { 15 } else { 0 };
                best = best.max(black_box(g));
            }
            best as u64
        },
        2_000_000,
    );
    let mut table = counters.clone();
    let recalc = per_call(
        |n| {
            for k in 0..n {
                let t = &mut table[(k % 1024) as usize];
                t.0 = (t.0 >> 1) + t.1;
            }
            black_box(table[0].0) as u64
        },
        2_000_000,
    );
    let bitmap: [u64; 3] = [0, 1 << 40, 3];
    let pick = per_call(
        |n| {
            let mut s = 0u64;
            for k in 0..n {
                let w = black_box(bitmap)[(k % 3) as usize];
                s += w.trailing_zeros() as u64;
            }
            s
        },
        5_000_000,
    );
    let mut tree = std::collections::BTreeSet::new();
    for i in 0..1024u64 {
        tree.insert(i * 7919 % 100_003);
    }
    let steps = (1024f64).log2();
    let tree_step = per_call(
        |n| {
            let mut s = 0u64;
            for k in 0..n {
                let key = (k * 7919) % 100_003;
                tree.insert(key + 200_000);
                tree.remove(&(key + 200_000));
                s += key;
            }
            s
        },
        200_000,
    ) / (2.0 * steps);
    (scan, recalc, pick, tree_step)
}

/// The live profile: measured code paths and a stored run's switch costs.
pub fn live(stored: StoredSwitch) -> CostProfile {
    let (scan, recalc, pick, tree) = measured_paths();
    let syscall = stored.yield_alone_ns.unwrap_or(stored.thread_ns * 0.1);
    CostProfile {
        name: "live".into(),
        source: format!(
            "this machine: scan {scan:.2} ns/task, recalc {recalc:.2} ns/task, pick {pick:.2} ns, tree step {tree:.2} ns measured now; switches {:.0}/{:.0} ns (thread/process) from stored load.runqueue yield rows at 2 tasks",
            stored.thread_ns, stored.process_ns
        ),
        syscall_ns: syscall,
        // A yield-to-yield switch at 2 tasks holds a system call and one pick: the
        // rest is the switch itself.
        switch_thread_ns: (stored.thread_ns - syscall - pick).max(1.0),
        switch_process_ns: (stored.process_ns - syscall - pick).max(1.0),
        scan_per_task_ns: scan,
        recalc_per_task_ns: recalc,
        pick_o1_ns: pick,
        tree_step_ns: tree,
        lock_bounce_ns: 100.0,
        wake_ns: pick * 20.0,
        fork_ns: stored.process_ns * 20.0,
        exit_ns: stored.process_ns * 10.0,
    }
}

/// A profile by name; `stored` feeds `live`.
pub fn by_name(name: &str, stored: Result<StoredSwitch, String>) -> Result<CostProfile, ProfileError> {
    match name {
        "live" => stored.map(live).map_err(ProfileError::NoStoredSwitch),
        "pentium200" => Err(ProfileError::PublishedRowMissing),
        other => Err(ProfileError::Unknown(other.into())),
    }
}

/// The fit behind `pentium200`: per-switch time at N runnable yielders under Linux
/// 2.0.30 before the fix is base + scan·N + recalc·(N + others)/N (a recalculation
/// every N switches, over every task of the system). Least squares over the row's
/// (N, µs) points for (base, scan, recalc) given `others` background tasks; returns
/// the parameters (ns) and the residuals (µs).
pub fn fit_travis_row(points: &[(f64, f64)], others: f64) -> Option<([f64; 3], Vec<f64>)> {
    let rows: Vec<[f64; 3]> = points.iter().map(|&(n, _)| [1.0, n, (n + others) / n]).collect();
    let y: Vec<f64> = points.iter().map(|&(_, us)| us * 1000.0).collect();
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for (r, &yi) in rows.iter().zip(&y) {
        for i in 0..3 {
            b[i] += r[i] * yi;
            for j in 0..3 {
                a[i][j] += r[i] * r[j];
            }
        }
    }
    let p = solve3(a, b)?;
    let res = rows.iter().zip(&y).map(|(r, yi)| (r[0] * p[0] + r[1] * p[1] + r[2] * p[2] - yi) / 1000.0).collect();
    Some((p, res))
}

/// Gaussian elimination with partial pivoting on a 3×3 system.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for c in 0..3 {
        let p = (c..3).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..3 {
            let f = a[r][c] / a[c][c];
            let pivot = a[c];
            for (x, p) in a[r].iter_mut().zip(pivot).skip(c) {
                *x -= f * p;
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = [0.0; 3];
    for c in (0..3).rev() {
        x[c] = (b[c] - (c + 1..3).map(|k| a[c][k] * x[k]).sum::<f64>()) / a[c][c];
    }
    Some(x)
}

/// A fixed profile for tests and examples: round numbers, not a machine.
pub fn unit_profile() -> CostProfile {
    CostProfile {
        name: "unit".into(),
        source: "round numbers for tests".into(),
        syscall_ns: 100.0,
        switch_thread_ns: 500.0,
        switch_process_ns: 1000.0,
        scan_per_task_ns: 10.0,
        recalc_per_task_ns: 20.0,
        pick_o1_ns: 30.0,
        tree_step_ns: 15.0,
        lock_bounce_ns: 100.0,
        wake_ns: 200.0,
        fork_ns: 20_000.0,
        exit_ns: 10_000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_travis_fit_recovers_known_parameters() {
        let (base, scan, recalc, others) = (3000.0, 50.0, 400.0, 30.0);
        let pts: Vec<(f64, f64)> = [2.0, 4.0, 8.0, 10.0, 20.0, 40.0]
            .iter()
            .map(|&n| (n, (base + scan * n + recalc * (n + others) / n) / 1000.0))
            .collect();
        let (p, res) = fit_travis_row(&pts, others).unwrap();
        assert!((p[0] - base).abs() < 1e-6 && (p[1] - scan).abs() < 1e-6 && (p[2] - recalc).abs() < 1e-6, "{p:?}");
        assert!(res.iter().all(|r| r.abs() < 1e-9));
        assert!(matches!(by_name("pentium200", Err("x".into())), Err(ProfileError::PublishedRowMissing)));
        assert!(matches!(by_name("k6", Err("x".into())), Err(ProfileError::Unknown(_))));
    }
}
