//! Whether the host shares the measuring CPU's physical core: a probe read before and
//! after a round's timed loops, never inside them.
//!
//! Why. On a virtual machine the host may run other work on the SMT sibling of the
//! core a vCPU sits on. The sibling then shares the core's level-1 data cache: a system
//! call's path, which touches many lines, costs about a third more (getuid 121 → 166 ns
//! on this project's 2-vCPU VM), for stretches of a tenth of a second to several
//! seconds, on one vCPU and not the other. A round that lands in such a stretch reads at
//! a second level, and the rounds of one figure split between the two (`modes`).
//!
//! The probe. Two dependent walks, one line a step in a random cycle: one over a
//! footprint the size of L1d, one over a sixteenth of it. With the core to itself the
//! large walk stays in L1 and reads about as fast as the small one; with a sibling
//! evicting lines, it runs at L2's latency, about three times slower, while the small
//! walk, its few lines always hot, does not move. Their ratio tells the two states
//! apart on any machine without a reference from elsewhere. A dependent ALU chain does
//! not move between the states here, so the clock's frequency is not what changes.

use oscost_figure::stats::SplitMix64;
use oscost_platform::sys;

/// The large walk's time over the small walk's above which the core is read as
/// shared: unshared reads sit at 1.1–1.25 on this project's VM, shared ones at 2–3.5.
pub const SHARED_RATIO: f64 = 1.6;

/// Bytes of one cache line, the walks' stride.
const LINE: usize = 64;
/// `u32` slots in a line: a walk's entries sit one a line.
const SLOTS: usize = LINE / std::mem::size_of::<u32>();
/// The small walk's footprint as a share of the large one's.
const SMALL_DIVISOR: usize = 16;
/// Steps of one timed walk: two laps of the large footprint's lines at 32 KiB.
const STEPS: usize = 1024;
/// Walks of each footprint a read takes the fastest of (a preemption inflates one).
const TRIES: usize = 3;
/// The largest level-1 data cache a probe is built for (L1d caches are tens of KiB): a
/// size past it is a misread, and would allocate its walk for nothing.
const MAX_L1D: usize = 1 << 20;

/// The two walks, built once (outside any timed region).
pub struct CoreProbe {
    large: Vec<u32>,
    small: Vec<u32>,
}

impl CoreProbe {
    /// Walks for a level-1 data cache of `l1d` bytes; None when its small walk would
    /// hold fewer than four lines or the size is past any L1d (1 MiB).
    pub fn new(l1d: usize) -> Option<Self> {
        let lines = l1d / LINE;
        (lines / SMALL_DIVISOR >= 4 && l1d <= MAX_L1D)
            .then(|| Self { large: cycle(lines, 1), small: cycle(lines / SMALL_DIVISOR, 2) })
    }

    /// The probe for this machine's L1d (sysfs), or None where it is not described.
    pub fn for_this_machine() -> Option<Self> {
        Self::new(oscost_platform::procfs::l1d_bytes()?)
    }

    /// One reading: the large walk's time over the small walk's, each the fastest of
    /// three tries.
    pub fn read(&self) -> f64 {
        let fastest = |next: &[u32]| (0..TRIES).map(|_| walk(next, STEPS)).min().unwrap_or(0).max(1);
        fastest(&self.large) as f64 / fastest(&self.small) as f64
    }
}

/// Whether a reading says the core was shared.
pub fn is_shared(ratio: f64) -> bool {
    ratio >= SHARED_RATIO
}

/// A random cycle through `lines` lines: the slot at the start of each line holds the
/// index of the next line's slot, so every step is a dependent load of a new line.
fn cycle(lines: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<usize> = (0..lines).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..lines).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut next = vec![0u32; lines * SLOTS];
    for (k, &line) in order.iter().enumerate() {
        next[line * SLOTS] = (order[(k + 1) % lines] * SLOTS) as u32;
    }
    next
}

/// Nanoseconds `steps` dependent steps through `next` took.
#[inline(never)]
fn walk(next: &[u32], steps: usize) -> u64 {
    let t0 = sys::monotonic_raw_ns();
    let mut at = 0usize;
    for _ in 0..steps {
        at = next[at] as usize;
    }
    let t1 = sys::monotonic_raw_ns();
    std::hint::black_box(at);
    t1 - t0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each walk visits every line once a lap, one line a step.
    #[test]
    fn a_walk_is_one_cycle_through_every_line() {
        for lines in [4usize, 64, 512] {
            let next = cycle(lines, 7);
            let mut seen = vec![false; lines];
            let mut at = 0usize;
            for _ in 0..lines {
                assert_eq!(at % SLOTS, 0, "every step lands at a line's start");
                assert!(!seen[at / SLOTS], "line {} twice in one lap of {lines}", at / SLOTS);
                seen[at / SLOTS] = true;
                at = next[at] as usize;
            }
            assert_eq!(at, 0, "a lap ends where it began");
            assert!(seen.iter().all(|s| *s));
        }
    }

    #[test]
    fn a_probe_needs_a_cache_of_some_lines_and_reads_a_positive_ratio() {
        assert!(CoreProbe::new(1024).is_none());
        assert!(CoreProbe::new(4 << 30).is_none(), "a misread size allocates nothing");
        let probe = CoreProbe::new(32 << 10).unwrap();
        assert_eq!((probe.large.len(), probe.small.len()), (512 * SLOTS, 32 * SLOTS));
        let r = probe.read();
        assert!(r.is_finite() && r > 0.0, "{r}");
        assert!(is_shared(SHARED_RATIO) && !is_shared(1.2));
    }

    /// Readings drawn as this project's VM gave them (unshared 1.1–1.25, about ±4%;
    /// shared 2–3.5): none of a thousand unshared ones is read shared, every shared one
    /// is.
    #[test]
    fn the_threshold_is_quiet_on_an_unshared_cores_spread_and_fires_on_a_shared_one() {
        let mut rng = SplitMix64::new(41);
        let mut normal = || oscost_figure::stats::nested::normal(&mut rng);
        let unshared = (0..1000).filter(|_| is_shared(1.17 * (0.04 * normal()).exp())).count();
        assert_eq!(unshared, 0);
        let shared = (0..1000).filter(|_| is_shared(2.7 * (0.15 * normal()).exp())).count();
        assert!(shared >= 995, "{shared} of 1000");
    }
}
