//! The runner: warm-up, batch sizing, batch and per-call timing of a probe, kernel
//! counts over the timed region, and the options every benchmark honours.
//!
//! Timing model. A *probe* is one iteration of a primitive (`Probe::once`). The batch
//! loop times N back-to-back iterations with CLOCK_MONOTONIC_RAW and divides by N; N is
//! the smallest power of two for which one batch lasts at least
//! `Calibration::min_batch_ns` = max(1 ms, 1000 × (clock read cost + resolution)), so
//! the clock contributes under 0.1%. The per-call loop brackets each iteration with the
//! serialised cycle counter and subtracts the calibrated empty-bracket cost. Both loops
//! are generic over the probe and marked `#[inline(never)]`: the timed region holds the
//! primitive, a failure check (a conditional move) and, per call, one store of the
//! sample into a buffer allocated beforehand.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::kcounts::{Task, Watcher};
use oscost_figure::model::{Count, TraceSummary};
use oscost_platform::clock::{Calibration, CycleStamp, MonoStamp, PerCallSource, Stamp};
use oscost_platform::sys;

/// Why one iteration of a probe failed. A timed loop carries it encoded as one
/// nonzero `i64` ([`Failure::code`]): an errno as itself, every other kind in its own
/// bit above the errno range, so all probes share one code space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A system call failed with this errno.
    Errno(i32),
    /// A call succeeded with a value it must not return.
    Unexpected,
    /// The other side of a hand-off closed its end (it exited or failed).
    PeerGone,
    /// The other side (or its exit watch) reported a failure.
    Poisoned,
    /// A bounded wait for the other side ran out (the peer stalled).
    WaitTimeout,
    /// A child exited with this nonzero status.
    ChildExited(u8),
    /// A child was killed by this signal.
    ChildSignaled(u8),
}

const UNEXPECTED_BIT: i64 = 1 << 40;
const PEER_GONE_BIT: i64 = 1 << 41;
const POISONED_BIT: i64 = 1 << 42;
const CHILD_EXITED_BIT: i64 = 1 << 43;
const CHILD_SIGNALED_BIT: i64 = 1 << 44;
const WAIT_TIMEOUT_BIT: i64 = 1 << 45;

impl Failure {
    /// The code a probe returns for this failure (never 0).
    #[inline(always)]
    pub const fn code(self) -> i64 {
        match self {
            Failure::Errno(e) => e as i64,
            Failure::Unexpected => UNEXPECTED_BIT,
            Failure::PeerGone => PEER_GONE_BIT,
            Failure::Poisoned => POISONED_BIT,
            Failure::WaitTimeout => WAIT_TIMEOUT_BIT,
            Failure::ChildExited(s) => CHILD_EXITED_BIT | s as i64,
            Failure::ChildSignaled(s) => CHILD_SIGNALED_BIT | s as i64,
        }
    }

    /// The failure a nonzero code stands for.
    pub fn from_code(code: i64) -> Self {
        let low = (code & 0xff) as u8;
        match code {
            c if c & WAIT_TIMEOUT_BIT != 0 => Failure::WaitTimeout,
            c if c & CHILD_SIGNALED_BIT != 0 => Failure::ChildSignaled(low),
            c if c & CHILD_EXITED_BIT != 0 => Failure::ChildExited(low),
            c if c & POISONED_BIT != 0 => Failure::Poisoned,
            c if c & PEER_GONE_BIT != 0 => Failure::PeerGone,
            c if c & UNEXPECTED_BIT != 0 => Failure::Unexpected,
            c => Failure::Errno(c as i32),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Failure::Errno(e) => write!(f, "{}", std::io::Error::from_raw_os_error(e)),
            Failure::Unexpected => f.write_str("a call returned an unexpected value"),
            Failure::PeerGone => f.write_str("the peer closed its end (it exited or failed)"),
            Failure::Poisoned => f.write_str("the peer failed or exited"),
            Failure::WaitTimeout => f.write_str("no hand-off came back within 10 s (the peer stalled)"),
            Failure::ChildExited(127) => {
                f.write_str("a child exited with status 127 (the child could not exec its program)")
            }
            Failure::ChildExited(s) => write!(f, "a child exited with status {s}"),
            Failure::ChildSignaled(s) => write!(f, "a child was killed by signal {s}"),
        }
    }
}

/// One iteration of a primitive.
pub trait Probe {
    /// Runs the primitive once and returns 0 on success, else a [`Failure::code`].
    fn once(&mut self) -> i64;

    /// Words for a failure code returned by `once`.
    fn describe(&self, code: i64) -> String {
        Failure::from_code(code).to_string()
    }
}

/// A no-argument call whose raw result is checked with `status_of`. Generic over the
/// function item, so the call is direct and inlined (no function pointer).
pub struct NoArg<F>(pub F);

impl<F: Fn() -> i64> Probe for NoArg<F> {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        sys::status_of((self.0)())
    }
}

/// Why a benchmark produced no figure.
#[derive(Debug, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum BenchError {
    #[error("the primitive failed: {0}")]
    Failed(String),
    #[error("skipped: {0}")]
    Skipped(String),
    #[error("set-up failed: {0}")]
    Setup(String),
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("interrupted")]
    Interrupted,
    /// The worker process measuring the benchmark died or wrote no result.
    #[error("{0}")]
    Worker(String),
}

impl BenchError {
    pub fn setup(what: &str, e: impl std::fmt::Display) -> Self {
        BenchError::Setup(format!("{what}: {e}"))
    }
}

/// How long each phase of a measurement may take.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MeasureConfig {
    pub warmup: Duration,
    pub batch_budget: Duration,
    pub per_call_budget: Duration,
    pub min_batches: usize,
    pub max_batches: usize,
    pub max_per_call: usize,
    /// A measurement running past this is abandoned with a timeout error.
    pub hard_limit: Duration,
    /// Also count switches with per-task perf software counters (opt-in: they make
    /// every switch of the watched tasks dearer; see `kcounts::Watcher::new`).
    pub perf_software_counters: bool,
    /// What a run spends before its first benchmark (calibration, fingerprint, the
    /// store), for the estimate; measured on a 2-core VM.
    pub startup: Duration,
    /// Follow each timed pass with a trace pass recording these tracepoints (see
    /// `tracepass`); set by the session for the families it traces, in one round.
    #[serde(default)]
    pub trace: Option<crate::trace::TraceSpec>,
    /// The CPUs other work kept busy when the run began (the preflight's): families
    /// that pin a pair to one CPU choose another where they can
    /// (`PeerPlacement::cpus_avoiding`).
    #[serde(default)]
    pub busy_cpus: Vec<usize>,
}

impl MeasureConfig {
    /// Default budgets: about 0.4 s per probe in all, spread over the rounds.
    pub fn standard() -> Self {
        Self {
            warmup: Duration::from_millis(30),
            batch_budget: Duration::from_millis(200),
            per_call_budget: Duration::from_millis(120),
            min_batches: 10,
            max_batches: 2_000,
            max_per_call: 200_000,
            hard_limit: Duration::from_secs(30),
            perf_software_counters: false,
            startup: Duration::from_millis(200),
            trace: None,
            busy_cpus: Vec::new(),
        }
    }

    /// `--quick`: about a fifth of the standard time, at some cost in precision.
    pub fn quick() -> Self {
        Self {
            warmup: Duration::from_millis(10),
            batch_budget: Duration::from_millis(50),
            per_call_budget: Duration::from_millis(30),
            min_batches: 5,
            max_batches: 500,
            max_per_call: 50_000,
            hard_limit: Duration::from_secs(15),
            perf_software_counters: false,
            startup: Duration::from_millis(100),
            trace: None,
            busy_cpus: Vec::new(),
        }
    }

    /// The budgets of one of `rounds` rounds: each phase's budget and sample caps
    /// divided among the rounds (so a run of R rounds measures about as long as one of
    /// a single round), with floors that keep every round a measurement of its own: a
    /// few milliseconds of warm-up and at least three batches.
    pub fn per_round(&self, rounds: usize) -> Self {
        let r = rounds.max(1) as u32;
        let at_least = |d: Duration, ms: u64| (d / r).max(Duration::from_millis(ms));
        Self {
            warmup: at_least(self.warmup, 2),
            batch_budget: at_least(self.batch_budget, 10),
            per_call_budget: at_least(self.per_call_budget, 5),
            min_batches: (self.min_batches / r as usize).max(3),
            max_batches: (self.max_batches / r as usize).max(10),
            max_per_call: (self.max_per_call / r as usize).max(1_000),
            ..self.clone()
        }
    }

    /// Roughly how long one `measure` call takes with these budgets.
    pub fn estimate_per_probe(&self) -> Duration {
        self.warmup + self.batch_budget + self.per_call_budget + Duration::from_millis(10)
    }
}

/// What a measurement produced, in nanoseconds per iteration.
#[derive(Debug, Clone, Default)]
pub struct Measurement {
    /// Iterations per batch.
    pub batch_size: u64,
    /// The mean of each batch (ns per iteration).
    pub batch_ns: Vec<f64>,
    /// Iterations timed in batches.
    pub batch_iterations: u64,
    /// Iterations, batched and single, over which the kernel counts were taken.
    pub counted_iterations: u64,
    /// Single-call samples (ns, empty bracket removed).
    pub per_call_ns: Vec<f64>,
    /// Kernel counts over all timed rounds, summed over the watched tasks.
    pub counts: BTreeMap<Count, f64>,
    /// The trace pass after the timed one, per iteration (or why it failed), when the
    /// config asked for one.
    pub trace: Option<Result<TraceSummary, crate::trace::TraceError>>,
}

/// What a measurement watches and whether it runs the per-call phase.
#[derive(Debug, Clone)]
pub struct Watch {
    /// Tasks whose switches and migrations are counted; the measuring thread is added.
    pub peers: Vec<Task>,
    /// Count instructions and cycles of the measuring thread where possible.
    pub hardware: bool,
    /// Run the per-call phase too.
    pub per_call: bool,
    /// The primitive runs on the measuring thread's CPU alone (no peer elsewhere), so
    /// the shared-core probe read there before and after the timed loops
    /// (`shared_core`) speaks for the whole measurement.
    pub one_cpu: bool,
}

impl Default for Watch {
    fn default() -> Self {
        Self { peers: Vec::new(), hardware: false, per_call: true, one_cpu: true }
    }
}

/// Times `n` back-to-back iterations; returns (elapsed ns, first failure code or 0).
/// The first failure ends the batch: after one (a stop signal's EINTR, a peer gone),
/// a hand-off's next call may wait for an answer that never comes, and a wake-up
/// meant to end such a wait (a poisoned channel) is consumed by the first read.
#[inline(never)]
pub fn time_batch<P: Probe>(probe: &mut P, n: u64) -> (u64, i64) {
    let mut failure = 0i64;
    let t0 = sys::monotonic_raw_ns();
    for _ in 0..n {
        let r = probe.once();
        if r != 0 {
            failure = r;
            break;
        }
    }
    let t1 = sys::monotonic_raw_ns();
    (t1 - t0, std::hint::black_box(failure))
}

/// Brackets each iteration with `S`, storing raw bracket readings into `out`;
/// returns the first failure code or 0, which ends the run (see [`time_batch`]).
#[inline(never)]
pub fn time_each<P: Probe, S: Stamp>(probe: &mut P, out: &mut [u64]) -> i64 {
    let mut failure = 0i64;
    for slot in out.iter_mut() {
        let t0 = S::begin();
        let r = probe.once();
        let t1 = S::end();
        *slot = t1.wrapping_sub(t0);
        if r != 0 {
            failure = r;
            break;
        }
    }
    std::hint::black_box(failure)
}

fn fail<P: Probe>(probe: &P, code: i64) -> BenchError {
    if sys::interrupted() {
        return BenchError::Interrupted;
    }
    BenchError::Failed(probe.describe(code))
}

/// A primitive with two moments worth timing: when the caller regains control
/// (`create` returned) and when the whole cycle is done (`complete` returned), e.g.
/// fork returning in the parent, then the child reaped.
pub trait SplitProbe {
    /// Starts the cycle; 0 or a failure code. Nothing is left to complete on failure.
    fn create(&mut self) -> i64;
    /// Finishes the cycle (waits, reaps, joins); 0 or a failure code.
    fn complete(&mut self) -> i64;
    fn describe(&self, code: i64) -> String {
        Failure::from_code(code).to_string()
    }
}

/// A split probe timed as one whole cycle.
pub struct WholeCycle<P: SplitProbe>(pub P);

impl<P: SplitProbe> Probe for WholeCycle<P> {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        let c = self.0.create();
        if c != 0 {
            return c;
        }
        self.0.complete()
    }
    fn describe(&self, code: i64) -> String {
        self.0.describe(code)
    }
}

/// Brackets each cycle, storing the reading at `create`'s return into `created` and at
/// `complete`'s return into `whole`; returns the first failure code or 0.
#[inline(never)]
pub fn time_split<P: SplitProbe, S: Stamp>(probe: &mut P, created: &mut [u64], whole: &mut [u64]) -> i64 {
    for (c, w) in created.iter_mut().zip(whole.iter_mut()) {
        let t0 = S::begin();
        let r = probe.create();
        let t1 = S::end();
        if r != 0 {
            return r;
        }
        let r = probe.complete();
        let t2 = S::end();
        *c = t1.wrapping_sub(t0);
        *w = t2.wrapping_sub(t0);
        if r != 0 {
            return r;
        }
    }
    0
}

/// Per-cycle samples of a split probe for the per-call budget: (created ns, whole ns).
pub fn measure_split<P: SplitProbe>(
    probe: &mut P,
    cfg: &MeasureConfig,
    calib: &Calibration,
) -> Result<(Vec<f64>, Vec<f64>), BenchError> {
    const CHUNK: usize = 16;
    let n = cfg.max_per_call.min(20_000);
    let (mut created, mut whole) = (vec![0u64; n], vec![0u64; n]);
    let start = sys::monotonic_raw_ns();
    let mut filled = 0;
    while filled < n {
        let end = (filled + CHUNK).min(n);
        let code = match calib.per_call_source {
            PerCallSource::CycleCounter => {
                time_split::<P, CycleStamp>(probe, &mut created[filled..end], &mut whole[filled..end])
            }
            PerCallSource::Monotonic => {
                time_split::<P, MonoStamp>(probe, &mut created[filled..end], &mut whole[filled..end])
            }
        };
        if code != 0 {
            return Err(if sys::interrupted() {
                BenchError::Interrupted
            } else {
                BenchError::Failed(probe.describe(code))
            });
        }
        filled = end;
        check_interrupt()?;
        if sys::monotonic_raw_ns() - start >= cfg.per_call_budget.as_nanos() as u64 {
            break;
        }
    }
    let conv = |v: &[u64]| v[..filled].iter().map(|&t| calib.ticks_to_call_ns(t)).collect();
    Ok((conv(&created), conv(&whole)))
}

fn check_interrupt() -> Result<(), BenchError> {
    if sys::interrupted() { Err(BenchError::Interrupted) } else { Ok(()) }
}

/// Warms the probe up and finds the batch size (see the module doc for the rule).
fn size_batches<P: Probe>(probe: &mut P, cfg: &MeasureConfig, calib: &Calibration) -> Result<u64, BenchError> {
    let start = sys::monotonic_raw_ns();
    let mut n = 1u64;
    let mut sized = false;
    loop {
        check_interrupt()?;
        let (ns, code) = time_batch(probe, n);
        if code != 0 {
            return Err(fail(probe, code));
        }
        if !sized {
            if ns as f64 >= calib.min_batch_ns || n >= 1 << 30 {
                sized = true;
            } else {
                n *= 2;
                continue;
            }
        }
        let elapsed = sys::monotonic_raw_ns() - start;
        if elapsed >= cfg.warmup.as_nanos() as u64 {
            return Ok(n);
        }
        if elapsed >= cfg.hard_limit.as_nanos() as u64 {
            return Err(BenchError::Timeout(format!("warm-up exceeded {:?}", cfg.hard_limit)));
        }
    }
}

/// Measures `probe`: warm-up, then interleaved rounds of one batch and one chunk of
/// bracketed single calls, so drift on a shared machine touches both methods alike,
/// with the kernel counts taken over all rounds. The trace pass a config may ask for
/// follows in `tracepass::measure`, which families call.
pub fn measure_timed<P: Probe>(
    probe: &mut P,
    cfg: &MeasureConfig,
    calib: &Calibration,
    watch: &Watch,
) -> Result<Measurement, BenchError> {
    let core = watch.one_cpu.then(crate::shared_core::CoreProbe::for_this_machine).flatten();
    let mut core_reads: Vec<f64> = core.iter().map(|c| c.read()).collect();
    let batch_size = size_batches(probe, cfg, calib)?;
    let mut m = Measurement { batch_size, ..Default::default() };

    let mut tasks = vec![Task::current()];
    tasks.extend(watch.peers.iter().copied());
    let mut watcher = Watcher::new(&tasks, watch.hardware, cfg.perf_software_counters);
    m.batch_ns.reserve(cfg.max_batches);
    let mut raw = if watch.per_call { vec![0u64; cfg.max_per_call] } else { Vec::new() };
    let mut filled = 0usize;
    // Per round, single calls get the budgets' share of a batch's iterations.
    let share = cfg.per_call_budget.as_secs_f64() / cfg.batch_budget.as_secs_f64().max(1e-9);
    let chunk = ((batch_size as f64 * share).ceil() as usize).clamp(1, raw.len().max(1));
    let budget =
        (cfg.batch_budget + if watch.per_call { cfg.per_call_budget } else { Duration::ZERO }).as_nanos() as u64;
    let start = sys::monotonic_raw_ns();
    watcher.start();
    let outcome = loop {
        let (ns, code) = time_batch(probe, batch_size);
        if code != 0 {
            break Err(fail(probe, code));
        }
        m.batch_ns.push(ns as f64 / batch_size as f64);
        m.batch_iterations += batch_size;
        if filled < raw.len() {
            let end = (filled + chunk).min(raw.len());
            let code = match calib.per_call_source {
                PerCallSource::CycleCounter => time_each::<P, CycleStamp>(probe, &mut raw[filled..end]),
                PerCallSource::Monotonic => time_each::<P, MonoStamp>(probe, &mut raw[filled..end]),
            };
            if code != 0 {
                break Err(fail(probe, code));
            }
            m.counted_iterations += (end - filled) as u64;
            filled = end;
        }
        if sys::interrupted() {
            break Err(BenchError::Interrupted);
        }
        let elapsed = sys::monotonic_raw_ns() - start;
        let enough = elapsed >= budget && m.batch_ns.len() >= cfg.min_batches;
        if enough || m.batch_ns.len() >= cfg.max_batches || elapsed >= cfg.hard_limit.as_nanos() as u64 {
            break Ok(());
        }
    };
    m.counts = watcher.finish();
    outcome?;
    core_reads.extend(core.iter().map(|c| c.read()));
    m.counts.extend(shared_core_counts(&core_reads));
    m.counted_iterations += m.batch_iterations;
    m.per_call_ns = raw[..filled].iter().map(|&t| calib.ticks_to_call_ns(t)).collect();
    Ok(m)
}

/// A round's shared-core counts from its probe readings (none without readings).
fn shared_core_counts(reads: &[f64]) -> Vec<(Count, f64)> {
    if reads.is_empty() {
        return Vec::new();
    }
    let shared = reads.iter().filter(|r| crate::shared_core::is_shared(**r)).count();
    vec![
        (Count::SharedCoreShare, shared as f64 / reads.len() as f64),
        (Count::SharedCoreRatio, reads.iter().copied().fold(f64::NAN, f64::max)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts its calls; fails with `code` on call number `fail_at`.
    struct Counting {
        calls: u64,
        fail_at: u64,
        code: i64,
    }

    impl Probe for Counting {
        fn once(&mut self) -> i64 {
            self.calls += 1;
            if self.calls == self.fail_at { self.code } else { 0 }
        }
    }

    fn calib() -> Calibration {
        oscost_platform::clock::calibrate(1_000_000)
    }

    #[test]
    fn failure_codes_round_trip_and_never_collide() {
        let all = [
            Failure::Errno(libc::ENOENT),
            Failure::Errno(4095),
            Failure::Unexpected,
            Failure::PeerGone,
            Failure::Poisoned,
            Failure::WaitTimeout,
            Failure::ChildExited(1),
            Failure::ChildExited(127),
            Failure::ChildSignaled(9),
        ];
        for (i, f) in all.iter().enumerate() {
            assert_ne!(f.code(), 0);
            assert_eq!(Failure::from_code(f.code()), *f);
            for g in &all[i + 1..] {
                assert_ne!(f.code(), g.code(), "{f:?} and {g:?} share a code");
            }
        }
        assert!(Failure::ChildExited(127).to_string().contains("could not exec"));
    }

    #[test]
    fn batch_counts_every_iteration() {
        let mut p = Counting { calls: 0, fail_at: 0, code: 0 };
        let (_, code) = time_batch(&mut p, 1000);
        assert_eq!((p.calls, code), (1000, 0));
    }

    #[test]
    fn first_failure_is_kept() {
        let mut p = Counting { calls: 0, fail_at: 5, code: libc::EBADF as i64 };
        let (_, code) = time_batch(&mut p, 10);
        assert_eq!(code, libc::EBADF as i64);
        let mut p = Counting { calls: 0, fail_at: 3, code: 7 };
        let mut buf = [0u64; 8];
        assert_eq!(time_each::<_, MonoStamp>(&mut p, &mut buf), 7);
    }

    /// A hand-off that went on after its first failure (the stop signal's EINTR), its
    /// peer gone and the poison that should wake it read already, would hold a stop for
    /// 10 s. Nothing is called after a failure.
    #[test]
    fn a_failure_ends_the_batch_and_the_per_call_run() {
        let mut p = Counting { calls: 0, fail_at: 5, code: libc::EINTR as i64 };
        assert_eq!(time_batch(&mut p, 1000).1, libc::EINTR as i64);
        assert_eq!(p.calls, 5, "no call after the failure");
        let mut p = Counting { calls: 0, fail_at: 3, code: libc::EINTR as i64 };
        let mut buf = [0u64; 64];
        assert_eq!(time_each::<_, MonoStamp>(&mut p, &mut buf), libc::EINTR as i64);
        assert_eq!(p.calls, 3, "no call after the failure");
    }

    #[test]
    fn measure_reports_failure_with_reason() {
        let mut p = Counting { calls: 0, fail_at: 100, code: libc::ENOENT as i64 };
        let err = measure_timed(&mut p, &MeasureConfig::quick(), &calib(), &Watch::default()).unwrap_err();
        assert!(err.to_string().contains("No such file"), "{err}");
    }

    #[test]
    fn measure_fills_both_phases() {
        let mut p = Counting { calls: 0, fail_at: 0, code: 0 };
        let cfg = MeasureConfig::quick();
        let m = measure_timed(&mut p, &cfg, &calib(), &Watch::default()).unwrap();
        assert!(m.batch_ns.len() >= cfg.min_batches);
        assert!(m.batch_size.is_power_of_two());
        assert_eq!(m.batch_iterations, m.batch_size * m.batch_ns.len() as u64);
        assert_eq!(m.counted_iterations, m.batch_iterations + m.per_call_ns.len() as u64);
        assert!(!m.per_call_ns.is_empty() && m.per_call_ns.len() <= cfg.max_per_call);
        assert!(m.batch_ns.iter().all(|x| x.is_finite() && *x >= 0.0));
        assert!(m.counts.contains_key(&Count::Switches));
    }
}
