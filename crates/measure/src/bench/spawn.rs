//! The creation family: what a new context costs (fork, vfork, clone, fork+exec,
//! posix_spawn, a shell, a thread), and how fork's cost grows with the parent.
//!
//! Timing model: one iteration is one whole cycle: create the child (or thread), let it
//! run to its end, and reap it (wait/join), with the child's exit status checked. The
//! per-call rows split each cycle into `phase=parent_resumes` (until the creating call
//! returns in the parent) and `phase=full_cycle` (until the child is reaped). Children
//! run nothing but their exit (fork/vfork/clone: `_exit(0)` at once; exec rows: the
//! program named in the row).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{
    BenchDef, BenchOptions, Cost, Ctx, Family, OptionError, Output, RoundPlan, Scope, Warmup, no_check, rows_from, tag,
};
use crate::helper::Inherited;
use crate::runner::{BenchError, Failure, MeasureConfig, SplitProbe, Watch, WholeCycle, measure_split};
use crate::tracepass::measure;
use oscost_figure::key::{BenchId, FigureKey, Param, Params, Text};
use oscost_figure::model::{Count, Method, ResultRow};
use oscost_figure::stats;
use oscost_platform::clock::PerCallSource;
use oscost_platform::sys::{self, ExecArgs, ExitStatus, PThread};

/// fork, the child exits at once, the parent waits.
pub const FORK_EXIT: BenchId = BenchId::new("spawn.fork_exit");
/// fork, the child execs the no-op helper, the parent waits.
pub const FORK_EXEC: BenchId = BenchId::new("spawn.fork_exec");
/// fork, the child execs `/bin/sh -c` running the no-op helper, the parent waits.
pub const SHELL: BenchId = BenchId::new("spawn.shell");
/// A thread created and joined.
pub const THREAD: BenchId = BenchId::new("spawn.thread");
/// spawn.fork_mem's variants: the parent's touched memory, and the transparent huge
/// page setting it ran under.
pub const PARENT_MEM_BYTES: Param<u64> = Param::new("parent_mem_bytes");
pub const THP: Param<Text> = Param::new("thp");
/// Which part of a creation cycle a row times.
pub const PHASE: Param<Text> = Param::new("phase");
/// The [`PHASE`] of a row that times the whole cycle, to the child reaped.
pub const FULL_CYCLE: &str = "full_cycle";

/// The key of fork_exit's whole cycle, timed in batches: how a reader (the simulator's
/// `live` profile) asks for a fork's price, not by its text.
pub fn fork_exit_key() -> FigureKey {
    FigureKey::new(FORK_EXIT, Method::Batch, Params::new().with(PHASE, FULL_CYCLE))
}

fn status_code(s: ExitStatus) -> i64 {
    match s {
        ExitStatus::Exited(0) => 0,
        ExitStatus::Exited(c) => Failure::ChildExited(c as u8).code(),
        ExitStatus::Signaled(sig) => Failure::ChildSignaled(sig as u8).code(),
    }
}

#[inline(always)]
fn reap(pid: libc::pid_t) -> i64 {
    match sys::wait_child(pid) {
        Ok(s) => status_code(s),
        Err(e) => i64::from(e.raw_os_error().unwrap_or(libc::ECHILD)),
    }
}

#[inline(always)]
fn io_code(e: std::io::Error) -> i64 {
    i64::from(e.raw_os_error().unwrap_or(libc::EIO))
}

/// How a process-creating probe makes its child.
#[derive(Clone, Copy)]
enum How {
    ForkExit,
    VforkExit,
    CloneVm,
    ForkExec,
    PosixSpawn,
}

/// A child-creating probe; `pid` carries the child between create and complete.
struct Child<'a> {
    how: How,
    exec: Option<&'a ExecArgs>,
    pid: libc::pid_t,
}

impl SplitProbe for Child<'_> {
    #[inline(always)]
    fn create(&mut self) -> i64 {
        let r = match self.how {
            How::ForkExit => sys::fork_exit(),
            How::VforkExit => sys::vfork_exit(),
            How::CloneVm => sys::clone_vm_exit(),
            How::ForkExec => sys::fork_exec(self.exec.expect("exec probes carry their arguments")),
            How::PosixSpawn => sys::posix_spawn(self.exec.expect("spawn probes carry their arguments")),
        };
        match r {
            Ok(pid) => {
                self.pid = pid;
                0
            }
            Err(e) => io_code(e),
        }
    }
    #[inline(always)]
    fn complete(&mut self) -> i64 {
        reap(self.pid)
    }
}

/// pthread_create + pthread_join of a thread that returns at once.
struct Thread(Option<PThread>);

impl SplitProbe for Thread {
    #[inline(always)]
    fn create(&mut self) -> i64 {
        match PThread::spawn_noop() {
            Ok(t) => {
                self.0 = Some(t);
                0
            }
            Err(e) => io_code(e),
        }
    }
    #[inline(always)]
    fn complete(&mut self) -> i64 {
        match self.0.take().map(PThread::join) {
            Some(Ok(())) => 0,
            Some(Err(e)) => io_code(e),
            None => i64::from(libc::ESRCH),
        }
    }
}

/// Measures a split probe: whole cycles in batches (with the parent's kernel counts)
/// and per-cycle samples of both phases.
fn measure_cycle<P: SplitProbe>(ctx: &Ctx, id: &str, probe: P) -> Result<Vec<ResultRow>, BenchError> {
    // fork copies the parent's page tables: start from a lean parent, and record it.
    sys::release_free_memory();
    let rss = oscost_platform::procfs::resident();
    let mut whole = WholeCycle(probe);
    let m = measure(&mut whole, ctx.cfg, ctx.calib, &Watch { per_call: false, one_cpu: false, ..Default::default() })?;
    let (created, full) = measure_split(&mut whole.0, ctx.cfg, ctx.calib)?;
    let mut rows = rows_from(id, &m, oscost_figure::unit::Unit::NsPerCall, 1.0, ctx.calib);
    tag(&mut rows, PHASE.name(), FULL_CYCLE);
    if let Some(b) = rows.first_mut() {
        // Every cycle's child was reaped and its status checked (a bad one is an error).
        b.counts.insert(Count::ChildrenVerified, (m.batch_iterations + full.len() as u64) as f64);
        if let Some(r) = rss {
            b.counts.insert(Count::ParentRssKib, r.total as f64);
            b.counts.insert(Count::ParentAnonKib, r.anon as f64);
            b.counts.insert(Count::ParentFileKib, r.file as f64);
        }
    }
    let n = full.len() as u64;
    if let Some(r) = ResultRow::from_samples(id, Method::PerCall, oscost_figure::unit::Unit::NsPerCall, full, n) {
        rows.push(r.with(PHASE, FULL_CYCLE));
    }
    if let Some(r) = ResultRow::from_samples(id, Method::PerCall, oscost_figure::unit::Unit::NsPerCall, created, n) {
        rows.push(r.with(PHASE, "parent_resumes"));
    }
    Ok(rows)
}

/// Checks an exec target the way the benchmark will use it, so a broken program is an
/// error naming it before any timing.
fn verify_exec(path: &str, shown: &str, args: &[&str]) -> Result<(), BenchError> {
    if !Path::new(path).exists() {
        return Err(BenchError::Skipped(format!("{shown} does not exist on this system")));
    }
    let status = std::process::Command::new(path)
        .args(&args[1..])
        .env_clear()
        .status()
        .map_err(|e| BenchError::Failed(format!("cannot execute {shown}: {e}")))?;
    if !status.success() {
        return Err(BenchError::Failed(format!("{shown} {:?} exited with {status}", &args[1..])));
    }
    Ok(())
}

/// The benchmarks that exec the no-op helper (`--noop`): only they need it opened.
pub const RUNS_HELPER: [BenchId; 3] = [FORK_EXEC, BenchId::new("spawn.posix_spawn"), SHELL];

/// The no-op program, as a descriptor the benchmark's children inherit (see
/// [`crate::helper`]: it is never executed by a path another user could change).
fn noop(ctx: &Ctx) -> Result<(Inherited, String), BenchError> {
    let exe = ctx.opts.noop.as_ref().map_err(|why| BenchError::Failed(why.to_string()))?;
    let fd = exe.inherit().map_err(|e| BenchError::setup("duplicating the no-op helper's descriptor", e))?;
    Ok((fd, exe.origin().to_string()))
}

fn exec_args(path: &str, shown: &str, args: &[&str]) -> Result<ExecArgs, BenchError> {
    verify_exec(path, shown, args)?;
    ExecArgs::new(path, args).map_err(|e| BenchError::setup("exec arguments", e))
}

fn run_child(ctx: &Ctx, out: &mut Output, id: &str, how: How, exec: Option<&ExecArgs>) -> Result<(), BenchError> {
    out.extend(measure_cycle(ctx, id, Child { how, exec, pid: 0 })?);
    Ok(())
}

fn run_fork_exit(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    run_child(ctx, out, &FORK_EXIT, How::ForkExit, None)
}

fn run_vfork_exit(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    run_child(ctx, out, "spawn.vfork_exit", How::VforkExit, None)
}

fn run_clone_vm(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    run_child(ctx, out, "spawn.clone_vm", How::CloneVm, None)
}

fn run_fork_exec(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let (fd, shown) = noop(ctx)?;
    let args = exec_args(&fd.exec_path(), &shown, &["oscost-noop"])?;
    run_child(ctx, out, &FORK_EXEC, How::ForkExec, Some(&args))
}

fn run_fork_exec_true(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let args = exec_args("/bin/true", "/bin/true", &["true"])?;
    run_child(ctx, out, "spawn.fork_exec_true", How::ForkExec, Some(&args))
}

fn run_posix_spawn(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let (fd, shown) = noop(ctx)?;
    let args = exec_args(&fd.exec_path(), &shown, &["oscost-noop"])?;
    run_child(ctx, out, "spawn.posix_spawn", How::PosixSpawn, Some(&args))
}

/// Quotes a path for `sh -c`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn run_shell(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let (fd, shown) = noop(ctx)?;
    let path = fd.exec_path();
    verify_exec(&path, &shown, &["oscost-noop"])?;
    let script = shell_quote(&path);
    let args = exec_args("/bin/sh", "/bin/sh", &["sh", "-c", &script])?;
    run_child(ctx, out, &SHELL, How::ForkExec, Some(&args))
}

fn run_thread(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(measure_cycle(ctx, &THREAD, Thread(None))?);
    Ok(())
}

/// Timing model: the cycle counter read just before pthread_create, and read again by
/// the new thread as its first action; the difference (empty bracket removed) is how
/// long a new thread waits to run. Then the thread is joined (not timed).
fn run_thread_start(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    if ctx.calib.per_call_source != PerCallSource::CycleCounter {
        return Err(BenchError::Skipped("needs the cycle counter, which this machine cannot use".into()));
    }
    let slot = AtomicU64::new(0);
    let start = sys::monotonic_raw_ns();
    let budget = (ctx.cfg.batch_budget + ctx.cfg.per_call_budget).as_nanos() as u64;
    let mut samples = Vec::with_capacity(20_000);
    while samples.len() < 20_000 {
        slot.store(0, Ordering::Relaxed);
        let t0 = sys::cycles_begin();
        sys::thread_stamp_and_join(&slot).map_err(|e| BenchError::Failed(format!("pthread_create/join: {e}")))?;
        let t1 = slot.load(Ordering::Acquire);
        if t1 == 0 {
            return Err(BenchError::Failed("the new thread did not record its start".into()));
        }
        samples.push(ctx.calib.ticks_to_call_ns(t1.wrapping_sub(t0)));
        if sys::interrupted() {
            return Err(BenchError::Interrupted);
        }
        if samples.len() >= 10 && sys::monotonic_raw_ns() - start >= budget {
            break;
        }
    }
    let n = samples.len() as u64;
    let row = ResultRow::from_samples(
        "spawn.thread_start",
        Method::PerCall,
        oscost_figure::unit::Unit::NsPerCall,
        samples,
        n,
    )
    .ok_or_else(|| BenchError::Failed("no samples".into()))?
    .with_param("phase", "create_to_first_run");
    out.push(row);
    Ok(())
}

/// Transparent huge page settings to sweep: (label, advice) for each mode the system
/// allows; `None` advice leaves the system default.
fn thp_modes() -> Vec<(&'static str, Option<bool>)> {
    let setting = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if setting.contains("[never]") || setting.is_empty() {
        vec![("unavailable", None)]
    } else {
        vec![("off", Some(false)), ("on", Some(true))]
    }
}

/// Refuses parent sizes larger than the memory available now.
pub fn check_parent_mem(sizes: &[u64], available: u64) -> Result<(), OptionError> {
    match sizes.iter().max() {
        Some(&max) if max > available => Err(OptionError::ParentMemory { size: max, available }),
        _ => Ok(()),
    }
}

/// Fits ns per MiB over every batch sample of the sweep, as a `fit` row.
pub fn fit_row(id: &str, points: &[(f64, f64)]) -> Option<ResultRow> {
    let xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    let f = stats::linear_fit(&xs, &ys)?;
    let half = if f.slope_stderr.is_finite() { 1.96 * f.slope_stderr } else { f64::NAN };
    let mut row = ResultRow::from_samples(
        id,
        Method::Fit,
        oscost_figure::unit::Unit::NsPerMiB,
        vec![f.slope],
        points.len() as u64,
    )?;
    row.n = points.len();
    row.ci_low = f.slope - half;
    row.ci_high = f.slope + half;
    row.samples.clear();
    row.counts.insert(Count::InterceptNs, f.intercept);
    row.counts.insert(Count::RSquared, f.r_squared);
    Some(row)
}

/// fork+exit with a parent that has touched S bytes of private anonymous memory.
fn run_fork_mem(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let sizes = &ctx.opts.parent_mem;
    check_parent_mem(sizes, sys::available_memory_bytes()).map_err(|e| BenchError::Skipped(e.to_string()))?;
    let page = sys::page_size();
    for (label, advice) in thp_modes() {
        let mut points = Vec::new();
        for &size in sizes {
            let mut mem = vec![0u8; size as usize];
            if let Some(huge) = advice
                && let Err(e) = sys::advise_huge_pages(&mut mem, huge)
            {
                out.skip("spawn.fork_mem", &format!("thp={label}"), format!("madvise: {e}"));
                break;
            }
            for i in (0..mem.len()).step_by(page) {
                mem[i] = 1; // touch: private, resident, anonymous
            }
            std::hint::black_box(&mem);
            // What the parent holds, by kind: the sweep is over touched anonymous memory.
            let resident = oscost_platform::procfs::resident();
            let mut probe = WholeCycle(Child { how: How::ForkExit, exec: None, pid: 0 });
            let m = measure(
                &mut probe,
                ctx.cfg,
                ctx.calib,
                &Watch { per_call: false, one_cpu: false, ..Default::default() },
            )?;
            let mib = size as f64 / (1u64 << 20) as f64;
            points.extend(m.batch_ns.iter().map(|&y| (mib, y)));
            let mut rows = rows_from("spawn.fork_mem", &m, oscost_figure::unit::Unit::NsPerCall, 1.0, ctx.calib);
            for r in &mut rows {
                r.params.set(THP, label);
                r.params.set(PARENT_MEM_BYTES, size);
                if let Some(res) = resident {
                    r.counts.insert(Count::ParentAnonKib, res.anon as f64);
                    r.counts.insert(Count::ParentFileKib, res.file as f64);
                }
            }
            out.extend(rows);
            drop(mem);
        }
        if let Some(row) = fit_row("spawn.fork_mem", &points) {
            let mut row = row.with_param("fit", "per_MiB_of_parent");
            row.params.set(THP, label);
            out.push(row);
        }
    }
    Ok(())
}

/// Children are created until the batch and per-call budgets together have passed.
fn budget(_: Scope, _: &BenchOptions, cfg: &MeasureConfig) -> Cost {
    Cost::fixed(cfg.batch_budget + cfg.per_call_budget)
}
/// Every parent size, with huge pages off and on, about a probe per size; filling and
/// copying the parent's memory adds about 2.8 ms per MiB whatever the budgets.
fn sweep(_: Scope, o: &BenchOptions, _: &MeasureConfig) -> Cost {
    let mib: u64 = o.parent_mem.iter().map(|b| b >> 20).sum();
    Cost::probes(o.parent_mem.len()).plus(Duration::from_micros(2_800) * mib.min(u64::from(u32::MAX)) as u32)
}
fn check_fork_mem(o: &BenchOptions) -> Result<(), OptionError> {
    if o.parent_mem.is_empty() {
        return Err(OptionError::Empty { flag: "--parent-mem", what: "size" });
    }
    check_parent_mem(&o.parent_mem, sys::available_memory_bytes())?;
    check_address_space(&o.parent_mem, sys::address_space_limit(), oscost_platform::procfs::mapped_bytes().unwrap_or(0))
}

/// Refuses parent sizes that the address-space limit (`ulimit -v`) cannot hold beside
/// what a worker maps before it allocates them (`base`): the worker would abort on the
/// allocation instead.
pub fn check_address_space(sizes: &[u64], limit: Option<u64>, base: u64) -> Result<(), OptionError> {
    match (sizes.iter().max(), limit) {
        (Some(&max), Some(limit)) if max.saturating_add(base) > limit => {
            Err(OptionError::AddressSpace { size: max, limit, base })
        }
        _ => Ok(()),
    }
}

const CYCLE: &str =
    "create, child runs to its end, reap with the exit status checked; per-call rows split parent_resumes / full_cycle";

/// A creation benchmark's warm-up: the runner's before the batch rows; the per-call
/// phases are timed right after the batch pass, on the same probe.
const SPLIT: Warmup = Warmup::Own(
    "the runner's before the batch rows; the per-call phases follow the batch pass, with none of their own",
);
/// An exec benchmark's warm-up: as [`SPLIT`], after the target is run once to verify it.
const EXEC: Warmup = Warmup::Own(
    "the exec target runs once, untimed, to verify it; then the runner's before the batch rows, \
     the per-call phases following the batch pass",
);

pub static BENCHES: [BenchDef; 10] = [
    BenchDef {
        id: FORK_EXIT,
        family: Family::Spawn,
        summary: "fork, the child _exits at once, the parent waits (clone current process)",
        timing_model: CYCLE,
        warmup: SPLIT,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_fork_exit,
    },
    BenchDef {
        id: BenchId::new("spawn.vfork_exit"),
        family: Family::Spawn,
        summary: "vfork, the child exits at once (x86_64)",
        timing_model: CYCLE,
        warmup: SPLIT,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_vfork_exit,
    },
    BenchDef {
        id: BenchId::new("spawn.clone_vm"),
        family: Family::Spawn,
        summary: "clone(CLONE_VM): a child sharing the address space, the kernel half of a thread (x86_64)",
        timing_model: CYCLE,
        warmup: SPLIT,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_clone_vm,
    },
    BenchDef {
        id: FORK_EXEC,
        family: Family::Spawn,
        summary: "fork + exec of oscost's static no-op helper (spawn new process)",
        timing_model: CYCLE,
        warmup: EXEC,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_fork_exec,
    },
    BenchDef {
        id: BenchId::new("spawn.fork_exec_true"),
        family: Family::Spawn,
        summary: "fork + exec of /bin/true, dynamically linked, as a real program",
        timing_model: CYCLE,
        warmup: EXEC,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_fork_exec_true,
    },
    BenchDef {
        id: BenchId::new("spawn.posix_spawn"),
        family: Family::Spawn,
        summary: "posix_spawn of the static no-op helper",
        timing_model: CYCLE,
        warmup: EXEC,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_posix_spawn,
    },
    BenchDef {
        id: SHELL,
        family: Family::Spawn,
        summary: "fork + exec of /bin/sh -c running the no-op helper (lmbench's fork+/bin/sh -c)",
        timing_model: CYCLE,
        warmup: EXEC,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_shell,
    },
    BenchDef {
        id: THREAD,
        family: Family::Spawn,
        summary: "pthread_create + pthread_join of a thread that returns at once (spawn new thread)",
        timing_model: CYCLE,
        warmup: SPLIT,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_thread,
    },
    BenchDef {
        id: BenchId::new("spawn.thread_start"),
        family: Family::Spawn,
        summary: "latency from pthread_create until the new thread first runs",
        timing_model: "cycle counter before pthread_create, and read by the new thread as its first action",
        warmup: Warmup::None("its own loop keeps every creation from the first"),
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: budget,
        check: no_check,
        run: run_thread_start,
    },
    BenchDef {
        id: BenchId::new("spawn.fork_mem"),
        family: Family::Spawn,
        summary: "fork+exit with a parent of --parent-mem touched private anonymous memory (its RssAnon recorded per row), THP off and on; fitted ns per MiB",
        timing_model: "one fork+exit+wait cycle per iteration at each parent size; the fit is least squares over every batch mean",
        warmup: Warmup::Own(
            "the parent's memory is touched first, then the runner's whole warm-up (30 ms, 10 ms with --quick) at each size",
        ),
        in_default_suite: false,
        rounds: RoundPlan::Once,
        cost: sweep,
        check: check_fork_mem,
        run: run_fork_mem,
    },
];

/// `spawn.fork_mem`'s chart: fork+exit against the parent's touched memory, a series
/// per transparent-huge-page setting.
pub const FORK_MEM_SWEEP: oscost_figure::sweep::SweepSpec = oscost_figure::sweep::SweepSpec {
    benchmark: BenchId::new("spawn.fork_mem"),
    title: "fork+exit against touched parent memory",
    x_title: "parent memory, MiB",
    x_axis: oscost_figure::sweep::XAxis::Linear,
    unit: oscost_figure::unit::Unit::NsPerCall,
    place: |r| {
        let mib = r.params.get(PARENT_MEM_BYTES)? as f64 / f64::from(1u32 << 20);
        Some((format!("THP {}", r.params.get(THP).unwrap_or_default()), mib))
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Probe;

    #[test]
    fn exit_statuses_are_verified() {
        assert_eq!(status_code(ExitStatus::Exited(0)), 0);
        let c = status_code(ExitStatus::Exited(127));
        let words = Failure::from_code(c).to_string();
        assert!(words.contains("127") && words.contains("could not exec"), "{words}");
        assert!(Failure::from_code(status_code(ExitStatus::Signaled(9))).to_string().contains("signal 9"));
    }

    #[test]
    fn a_child_that_fails_to_exec_is_an_error_not_a_sample() {
        let args = ExecArgs::new("/nonexistent/oscost-helper", &["x"]).unwrap();
        let mut p = WholeCycle(Child { how: How::ForkExec, exec: Some(&args), pid: 0 });
        let code = p.once();
        assert_eq!(code, Failure::ChildExited(127).code());
        assert!(!oscost_platform::procfs::live_children().contains(&p.0.pid), "the failed child was reaped");
    }

    #[test]
    fn fit_on_synthetic_sweep() {
        // 10 µs + 20 ns per MiB, with small noise.
        let mut pts = Vec::new();
        for &mib in &[0.0, 64.0, 512.0] {
            for e in [-5.0, 0.0, 5.0] {
                pts.push((mib, 10_000.0 + 20.0 * mib + e));
            }
        }
        let r = fit_row("spawn.fork_mem", &pts).unwrap();
        assert!((r.median - 20.0).abs() < 0.05, "{r:?}");
        assert!(r.ci_low <= r.median && r.median <= r.ci_high);
        assert!((r.counts[&Count::InterceptNs] - 10_000.0).abs() < 5.0);
        assert!(fit_row("x", &[(1.0, 2.0)]).is_none());
    }

    #[test]
    fn parent_mem_limit() {
        assert!(check_parent_mem(&[0, 64 << 20], 1 << 30).is_ok());
        let e = check_parent_mem(&[0, 4 << 30], 1 << 30).unwrap_err().to_string();
        assert!(e.contains("4096 MiB") && e.contains("1024 MiB"), "{e}");
    }

    /// `spawn.fork_mem` under `ulimit -v` must be refused up front, not abort its
    /// worker.
    #[test]
    fn parent_mem_beyond_the_address_space_limit_is_refused() {
        assert!(check_address_space(&[0, 64 << 20], None, 30 << 20).is_ok());
        assert!(check_address_space(&[0, 64 << 20], Some(200 << 20), 30 << 20).is_ok());
        let e = check_address_space(&[0, 256 << 20], Some(200 << 20), 30 << 20).unwrap_err().to_string();
        assert!(e.contains("256 MiB") && e.contains("200 MiB") && e.contains("ulimit -v"), "{e}");
    }

    #[test]
    fn quoting_for_the_shell() {
        assert_eq!(shell_quote("/a b/c"), "'/a b/c'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
