//! The indirect cost of a switch: a pipe hand-off between two processes on one CPU
//! where each side first walks its own working set, minus the same walks done by one
//! task without switching. Both buffers live in one shared mapping, so the baseline
//! walks exactly the memory the two processes walk; the two are timed in interleaved
//! rounds, so drift hits both alike, and the difference is taken round by round.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::channel::{self, Endpoint, Mechanism, Pair, Pipe, PipeEnd};
use super::peer::{Control, Mode, Peer};
use crate::bench::{BenchOptions, Cost, Ctx, Output, Scope};
use crate::kcounts::{Task, Watcher};
use oscost_figure::key::Param;
use oscost_figure::model::{Count, Flag, FlagCode, Method, ResultRow};

/// The working set each task touches between hand-offs.
pub const SIZE_BYTES: Param<u64> = Param::new("size_bytes");
use crate::runner::{BenchError, MeasureConfig, Probe, time_batch};
use crate::tasks::{AffinityGuard, PeerPlacement};
use oscost_platform::sys::{self, SharedWords};

pub const TIMING_MODEL: &str = "per size S, interleaved rounds of (a) N pipe round trips between two processes on one CPU, each side walking its own S-byte buffer (one load per stride) before it sends, and (b) N iterations of one task walking both buffers without switching; figure = ((a) - (b)) / 2 per hand-off, round by round";

/// One interleaved measurement per working-set size.
/// One interleaved pair of rounds per size, about three quarters of a probe each.
pub fn cost(_: Scope, o: &BenchOptions, _: &MeasureConfig) -> Cost {
    Cost::probes(o.footprint_sizes.len() * 3 / 4)
}

/// The sweep needs a size, and the walk a stride of at least one byte.
pub fn check(o: &BenchOptions) -> Result<(), crate::bench::OptionError> {
    use crate::bench::OptionError;
    if o.footprint_sizes.is_empty() {
        return Err(OptionError::Empty { flag: "--sizes", what: "working-set size" });
    }
    if o.footprint_stride == 0 { Err(OptionError::ZeroStride) } else { Ok(()) }
}

/// Reads one word per stride of `buf`: the working-set walk.
#[inline(always)]
fn walk(buf: &[AtomicU64], stride_words: usize) -> u64 {
    let mut sum = 0u64;
    let mut i = 0;
    while i < buf.len() {
        sum = sum.wrapping_add(buf[i].load(Ordering::Relaxed));
        i += stride_words;
    }
    std::hint::black_box(sum)
}

/// The working sets: the measuring side's buffer then the peer's, in one mapping.
struct Buffers {
    mem: Arc<SharedWords>,
    words: usize,
    stride: usize,
}

impl Buffers {
    fn mine(&self) -> &[AtomicU64] {
        self.mem.slice(0, self.words)
    }
    fn peers(&self) -> &[AtomicU64] {
        self.mem.slice(self.words, self.words)
    }
}

/// (a): walk, send, receive.
struct WalkRoundTrip {
    end: PipeEnd,
    buf: Buffers,
}

impl Probe for WalkRoundTrip {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        walk(self.buf.mine(), self.buf.stride);
        let s = self.end.send();
        if s != 0 {
            return s;
        }
        self.end.recv()
    }
    fn describe(&self, code: i64) -> String {
        channel::describe(code)
    }
}

/// (b): both walks, no switch.
struct WalkBoth<'a>(&'a Buffers);

impl Probe for WalkBoth<'_> {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        walk(self.0.mine(), self.0.stride);
        walk(self.0.peers(), self.0.stride);
        0
    }
}

/// The peer: receive, walk its buffer, send back (raw calls only, runs after fork).
fn walk_echo(mut end: PipeEnd, buf: Buffers, ctl: &Control) -> i32 {
    loop {
        if end.recv() != 0 {
            return 1;
        }
        if ctl.stop_requested() {
            return 0;
        }
        walk(buf.peers(), buf.stride);
        if end.send() != 0 {
            return 2;
        }
    }
}

/// Flags a difference that noise can explain: not a result.
pub fn difference_flag(median: f64, ci_low: f64) -> Option<Flag> {
    (median <= 0.0 || ci_low <= 0.0).then(|| {
        Flag::new(FlagCode::UnstableDifference,
            format!("the switch-minus-walk difference (median {median:.1} ns, CI low {ci_low:.1} ns) reaches zero or below: within noise, not a result"),
        )
    })
}

fn one_size(ctx: &Ctx, size: u64, stride: usize, cpus: &[usize]) -> Result<ResultRow, BenchError> {
    let words = (size / 8) as usize;
    let stride_words = (stride / 8).max(1);
    let mem = Arc::new(SharedWords::new(2 * words + 1).map_err(|e| BenchError::setup("mapping the working sets", e))?);
    for w in mem.slice(0, 2 * words) {
        w.store(1, Ordering::Relaxed); // fault every page in before timing
    }
    let buffers = || Buffers { mem: mem.clone(), words, stride: stride_words };
    let Pair { main, peer: peer_end, poison_main, poison_peer } =
        Pipe::pair(true).map_err(|e| BenchError::setup("building the pipes", e))?;
    let peer_buf = buffers();
    let peer =
        Peer::start(Mode::Process, cpus, poison_main, poison_peer, move |ctl| walk_echo(peer_end, peer_buf, ctl))?;
    let mut trip = WalkRoundTrip { end: main, buf: buffers() };
    let base_buf = buffers();
    let mut base = WalkBoth(&base_buf);

    let result = interleave(ctx, &mut trip, &mut base, peer.task);
    let mut end = trip.end;
    let stopped = peer.finish(move || {
        end.send();
        drop(end);
    });
    let (diffs, handoffs, counts, trace) = result?;
    stopped?;
    let mut row = ResultRow::from_samples(
        "ctx.footprint",
        Method::Batch,
        oscost_figure::unit::Unit::NsPerHandOff,
        diffs,
        handoffs,
    )
    .ok_or_else(|| BenchError::Failed("no rounds were timed".into()))?
    .with(SIZE_BYTES, size)
    .with_param("stride_bytes", stride)
    .with_param("mode", "process")
    .with_param("placement", "same_cpu");
    for (k, v) in counts {
        row.counts.insert(k, v);
    }
    if let Some(s) = row.counts.get(&Count::Switches) {
        row.counts.insert(Count::SwitchesPerOp, s / handoffs.max(1) as f64);
    }
    if let Some(f) = difference_flag(row.median, row.ci_low) {
        row.flag(f);
    }
    crate::bench::attach_trace(&mut row, trace);
    Ok(row)
}

type Rounds = (
    Vec<f64>,
    u64,
    std::collections::BTreeMap<Count, f64>,
    Option<Result<oscost_figure::model::TraceSummary, crate::trace::TraceError>>,
);

/// Times interleaved rounds of (a) and (b); returns per-round differences per hand-off,
/// the hand-offs timed, the kernel counts over all rounds, and the trace pass of the
/// walking round trip (about 20 ms of whole batches, after the timed rounds).
fn interleave(ctx: &Ctx, trip: &mut WalkRoundTrip, base: &mut WalkBoth, peer: Task) -> Result<Rounds, BenchError> {
    let fail = |code: i64| BenchError::Failed(channel::describe(code));
    // Size N on (a) by the runner's rule: a round lasts at least the minimum batch.
    let mut n = 1u64;
    loop {
        let (ns, code) = time_batch(trip, n);
        if code != 0 {
            return Err(fail(code));
        }
        if ns as f64 >= ctx.calib.min_batch_ns || n >= 1 << 24 {
            break;
        }
        n *= 2;
    }
    let mut watcher = Watcher::new(&[Task::current(), peer], false, ctx.cfg.perf_software_counters);
    let budget = (ctx.cfg.batch_budget * 2).as_nanos() as u64;
    let start = sys::monotonic_raw_ns();
    let mut diffs = Vec::new();
    let mut trip_ns = Vec::new();
    watcher.start();
    while diffs.len() < 200 {
        let (a, code) = time_batch(trip, n);
        if code != 0 {
            watcher.finish();
            return Err(fail(code));
        }
        let (b, _) = time_batch(base, n);
        diffs.push((a as f64 - b as f64) / n as f64 / 2.0);
        trip_ns.push(a as f64 / n as f64 / 2.0);
        if sys::interrupted() {
            watcher.finish();
            return Err(BenchError::Interrupted);
        }
        if diffs.len() >= ctx.cfg.min_batches && sys::monotonic_raw_ns() - start >= budget {
            break;
        }
    }
    let mut counts = watcher.finish();
    counts.insert(Count::HandoffNsMedian, oscost_figure::stats::median(&trip_ns));
    let trace = crate::tracepass::trace_window(ctx.cfg, &[Task::current(), peer], || {
        let end = sys::monotonic_raw_ns() + crate::tracepass::TRACE_WINDOW.as_nanos() as u64;
        let mut handoffs = 0;
        while sys::monotonic_raw_ns() < end {
            match time_batch(trip, n) {
                (_, 0) => handoffs += n * 2,
                (_, code) => return Err(channel::describe(code).into()),
            }
        }
        Ok(handoffs)
    });
    Ok((diffs.clone(), diffs.len() as u64 * n * 2, counts, trace))
}

pub fn run(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let allowed = sys::allowed_cpus().map_err(|e| BenchError::setup("reading CPU affinity", e))?;
    let (cpus, _) = PeerPlacement::SameCpu.cpus_avoiding(&allowed, &ctx.cfg.busy_cpus)?;
    let _pin = AffinityGuard::pin(&cpus)?;
    let budget = sys::available_memory_bytes() / 2;
    for &size in &ctx.opts.footprint_sizes {
        if size.saturating_mul(2) > budget {
            out.skip(
                "ctx.footprint",
                &format!("size_bytes={size}"),
                format!("two buffers of {size} bytes exceed half the available memory ({budget} bytes)"),
            );
            continue;
        }
        out.push(one_size(ctx, size, ctx.opts.footprint_stride, &cpus)?);
    }
    Ok(())
}

/// The sweep's chart: the extra cost per hand-off against the working set.
pub const SWEEP: oscost_figure::sweep::SweepSpec = oscost_figure::sweep::SweepSpec {
    benchmark: oscost_figure::key::BenchId::new("ctx.footprint"),
    title: "Cache footprint: extra cost per hand-off against working set",
    x_title: "working set per task (log scale)",
    x_axis: oscost_figure::sweep::XAxis::Log2Bytes,
    unit: oscost_figure::unit::Unit::NsPerHandOff,
    place: |r| Some(("extra per hand-off".into(), r.params.get(SIZE_BYTES)? as f64)),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unstable_differences_are_flagged() {
        assert!(difference_flag(100.0, 50.0).is_none());
        assert!(difference_flag(-3.0, -10.0).is_some());
        assert!(difference_flag(5.0, -1.0).is_some());
    }

    #[test]
    fn walk_reads_one_word_per_stride() {
        let v: Vec<AtomicU64> = (0..16).map(AtomicU64::new).collect();
        assert_eq!(walk(&v, 1), (0..16).sum::<u64>());
        assert_eq!(walk(&v, 8), 8);
    }
}
