//! The system-call family: what one kernel entry costs, from the bare entry/exit floor
//! (an unimplemented call number) to calls that do a little work.
//!
//! Timing model: one iteration is one system call made with the raw `syscall`
//! instruction (no C library between us and the kernel) unless the row says
//! `via=libc` or `via=vdso`, plus the check of its return value. `open_close` is an
//! openat and a close (two kernel entries) of an existing file.
//!
//! Each row is checked against the floor: a real system call cannot cost less than an
//! empty kernel entry, so a row below it did not enter the kernel (a cached getpid, a
//! vDSO clock read). vDSO rows are always marked as such.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};

use super::{BenchDef, BenchOptions, Cost, Ctx, Family, Output, RoundPlan, Scope, Warmup, no_check, rows_from, tag};
use crate::runner::{BenchError, Failure, MeasureConfig, NoArg, Probe, Watch};
use crate::tracepass::measure;
use oscost_figure::key::{BenchId, Param, Text};
use oscost_figure::model::{Count, Flag, FlagCode, ResultRow};
use oscost_platform::sys;

const ENOSYS: i64 = libc::ENOSYS as i64;
/// Failure code for a call that "succeeded" with an unexpected value.
const UNEXPECTED: i64 = Failure::Unexpected.code();

/// How a row relates to the kernel-entry floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// The floor itself (`enosys`).
    Floor,
    /// A raw system call: must cost at least the floor.
    Kernel,
    /// A C library wrapper that may answer without entering the kernel.
    LibcWrapper,
    /// A vDSO function: by design no kernel entry.
    Vdso,
}

/// The flags a row earns against the floor in its own round, where an order of
/// magnitude decides: a vDSO row is marked as such (and says so if it costs as much as
/// a kernel entry), a C library wrapper far below the floor did not enter the kernel.
/// Both figures are the lower decile of batch means (ns). Whether a real system call
/// sits *below* the floor is a finer question, judged over the rounds
/// (`rounds::below_floor`), never in one window.
pub fn floor_flags(kind: EntryKind, batch_low: f64, floor: Option<f64>) -> Vec<Flag> {
    let mut flags = Vec::new();
    match (kind, floor) {
        (EntryKind::Vdso, floor) => {
            let mut reason = "vDSO: no kernel entry; the clock is read in user space".to_string();
            if let Some(f) = floor.filter(|&f| batch_low >= f) {
                reason.push_str(&format!(
                    " (but it costs {batch_low:.1} ns, at least the {f:.1} ns floor: the clocksource may not support vDSO reads and the call may fall back to the kernel)"
                ));
            }
            flags.push(Flag::new(FlagCode::Vdso, reason));
        }
        (EntryKind::LibcWrapper, Some(f)) if batch_low < 0.5 * f => flags.push(Flag::new(
            FlagCode::NoKernelEntry,
            format!(
                "did not enter the kernel (cached by the C library): {batch_low:.1} ns is far below the {f:.1} ns floor"
            ),
        )),
        _ => {}
    }
    flags
}

// --- probes -------------------------------------------------------------------------

/// The unused call number; success is -ENOSYS.
struct Enosys;
impl Probe for Enosys {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        if sys::raw_enosys() == -ENOSYS { 0 } else { UNEXPECTED }
    }
    fn describe(&self, _: i64) -> String {
        format!("system call {} did not return -ENOSYS", sys::UNUSED_SYSCALL_NR)
    }
}

/// libc getpid: the result must be our pid.
struct LibcGetpid(i64);
impl Probe for LibcGetpid {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        if sys::libc_getpid() == self.0 { 0 } else { UNEXPECTED }
    }
    fn describe(&self, _: i64) -> String {
        "getpid returned a pid other than ours".into()
    }
}

struct OpenClose(CString);
impl Probe for OpenClose {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        sys::status_of(sys::raw_open_close(&self.0))
    }
}

struct Stat(CString);
impl Probe for Stat {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        sys::status_of(sys::raw_stat(&self.0))
    }
}

/// One byte read from (or written to) a descriptor: the result must be 1.
struct OneByte {
    fd: RawFd,
    buf: [u8; 1],
    write: bool,
}
impl Probe for OneByte {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        let r = if self.write { sys::raw_write(self.fd, &self.buf) } else { sys::raw_read(self.fd, &mut self.buf) };
        if r == 1 {
            0
        } else if r < 0 {
            -r
        } else {
            UNEXPECTED
        }
    }
    fn describe(&self, code: i64) -> String {
        if code == UNEXPECTED {
            "transferred other than 1 byte".into()
        } else {
            std::io::Error::from_raw_os_error(code as i32).to_string()
        }
    }
}

// --- running ------------------------------------------------------------------------

/// Measures the floor (batch median and lower decile of enosys, ns) in this round,
/// just before the row it judges: a batch-only pass of a third of the row's batch
/// budget, so floor and row see the same moment of the machine.
fn floor(ctx: &Ctx) -> Result<(f64, f64), BenchError> {
    let cfg = MeasureConfig {
        warmup: ctx.cfg.warmup / 2,
        batch_budget: ctx.cfg.batch_budget / 3,
        min_batches: 3,
        ..ctx.cfg.clone()
    };
    let m = measure(&mut Enosys, &cfg, ctx.calib, &Watch { per_call: false, ..Default::default() })?;
    Ok((oscost_figure::stats::median(&m.batch_ns), oscost_figure::stats::quantile(&m.batch_ns, 0.1)))
}

fn run_probe<P: Probe>(
    ctx: &Ctx,
    id: &str,
    via: Option<&str>,
    kind: EntryKind,
    mut probe: P,
) -> Result<Vec<ResultRow>, BenchError> {
    let floor = match kind {
        EntryKind::Floor => None,
        _ => Some(floor(ctx)?),
    };
    let watch = Watch { hardware: true, ..Default::default() };
    let m = measure(&mut probe, ctx.cfg, ctx.calib, &watch)?;
    let mut rows = rows_from(id, &m, oscost_figure::unit::Unit::NsPerCall, 1.0, ctx.calib);
    if let Some(v) = via {
        tag(&mut rows, VIA.name(), v);
    }
    let low = oscost_figure::stats::quantile(&m.batch_ns, 0.1);
    let flags = floor_flags(kind, low, floor.map(|(_, low)| low));
    for r in rows.iter_mut() {
        for f in &flags {
            r.flag(f.clone());
        }
        // A real call's floor, for the judgement over rounds.
        if let (EntryKind::Kernel, Some((median, _))) = (kind, floor) {
            r.counts.insert(Count::FloorNs, median);
        }
    }
    Ok(rows)
}

fn run_enosys(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(run_probe(ctx, "syscall.enosys", None, EntryKind::Floor, Enosys)?);
    Ok(())
}

fn run_getppid(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(run_probe(ctx, &GETPPID, None, EntryKind::Kernel, NoArg(sys::raw_getppid))?);
    Ok(())
}

fn run_getuid(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(run_probe(ctx, &GETUID, None, EntryKind::Kernel, NoArg(sys::raw_getuid))?);
    Ok(())
}

fn run_gettid(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(run_probe(ctx, "syscall.gettid", None, EntryKind::Kernel, NoArg(sys::raw_gettid))?);
    Ok(())
}

fn run_getpid(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(run_probe(ctx, &GETPID, Some(VIA_RAW), EntryKind::Kernel, NoArg(sys::raw_getpid))?);
    out.extend(run_probe(ctx, &GETPID, Some(VIA_LIBC), EntryKind::LibcWrapper, LibcGetpid(i64::from(sys::getpid())))?);
    Ok(())
}

fn run_clock_gettime(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(run_probe(
        ctx,
        "syscall.clock_gettime",
        Some(VIA_VDSO),
        EntryKind::Vdso,
        NoArg(sys::libc_clock_gettime),
    )?);
    out.extend(run_probe(
        ctx,
        "syscall.clock_gettime",
        Some(VIA_RAW),
        EntryKind::Kernel,
        NoArg(sys::raw_clock_gettime),
    )?);
    Ok(())
}

fn run_gettimeofday(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(run_probe(ctx, &GETTIMEOFDAY, Some(VIA_VDSO), EntryKind::Vdso, NoArg(sys::libc_gettimeofday))?);
    out.extend(run_probe(ctx, &GETTIMEOFDAY, Some(VIA_RAW), EntryKind::Kernel, NoArg(sys::raw_gettimeofday))?);
    Ok(())
}

/// A file that exists for the open and stat probes: created new (never through a
/// link) in a private folder of mode 0700 with an unguessable name, so no other user
/// can aim the probes' path at a file of theirs; removed, with its folder, when
/// dropped.
struct TargetFile {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}
impl TargetFile {
    fn create() -> Result<Self, BenchError> {
        let dir = oscost_platform::files::private_dir("oscost-target-")
            .map_err(|e| BenchError::setup("creating a private folder for the target file", e))?;
        let path = dir.path().join("target");
        oscost_platform::files::write_new(&path, b"oscost\n", 0o600)
            .map_err(|e| BenchError::setup(&format!("creating {}", path.display()), e))?;
        Ok(Self { _dir: dir, path })
    }
    fn cstring(&self) -> Result<CString, BenchError> {
        CString::new(self.path.as_os_str().as_encoded_bytes()).map_err(|e| BenchError::setup("target path", e))
    }
}

fn run_open_close(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let f = TargetFile::create()?;
    let mut rows = run_probe(ctx, &OPEN_CLOSE, None, EntryKind::Kernel, OpenClose(f.cstring()?))?;
    tag(&mut rows, "path", &f.path.display().to_string());
    out.extend(rows);
    Ok(())
}

fn run_stat(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let f = TargetFile::create()?;
    let mut rows = run_probe(ctx, &STAT, None, EntryKind::Kernel, Stat(f.cstring()?))?;
    tag(&mut rows, "path", &f.path.display().to_string());
    out.extend(rows);
    Ok(())
}

fn run_read(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let f = File::open("/dev/zero").map_err(|e| BenchError::setup("opening /dev/zero", e))?;
    out.extend(run_probe(ctx, &READ, None, EntryKind::Kernel, OneByte { fd: f.as_raw_fd(), buf: [0], write: false })?);
    Ok(())
}

fn run_write(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let f = File::options().write(true).open("/dev/null").map_err(|e| BenchError::setup("opening /dev/null", e))?;
    out.extend(run_probe(
        ctx,
        &WRITE,
        None,
        EntryKind::Kernel,
        OneByte { fd: f.as_raw_fd(), buf: [b'x'], write: true },
    )?);
    Ok(())
}

/// Flags a sched_yield row whose calls switched: another task was runnable.
pub fn yield_flag(switches_per_call: f64) -> Option<Flag> {
    (switches_per_call > 0.01).then(|| {
        Flag::new(FlagCode::YieldSwitched,
            format!(
                "{:.1}% of sched_yield calls switched to another task: the CPU was not idle, so this is not the bare call",
                switches_per_call * 100.0
            ),
        )
    })
}

/// getrandom of 16 bytes as a raw system call (rustix issues the `syscall` itself; no
/// vDSO, no C library): the result must be 16.
struct GetRandom([u8; 16]);
impl Probe for GetRandom {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        match rustix::rand::getrandom(&mut self.0, rustix::rand::GetRandomFlags::empty()) {
            Ok(16) => 0,
            Ok(_) => UNEXPECTED,
            Err(e) => i64::from(e.raw_os_error()),
        }
    }
}

fn run_getrandom(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    out.extend(run_probe(ctx, "syscall.getrandom", None, EntryKind::Kernel, GetRandom([0; 16]))?);
    Ok(())
}

fn run_sched_yield(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let mut rows = run_probe(ctx, &SCHED_YIELD, None, EntryKind::Kernel, NoArg(sys::raw_sched_yield))?;
    if let Some(f) = rows.first().and_then(|b| b.counts.get(&Count::SwitchesPerOp)).and_then(|&s| yield_flag(s)) {
        for r in rows.iter_mut() {
            r.flag(f.clone());
        }
    }
    out.extend(rows);
    Ok(())
}

/// The floor pass that precedes each judged row (see `floor`).
fn floor_time(cfg: &MeasureConfig) -> std::time::Duration {
    cfg.warmup / 2 + cfg.batch_budget / 3
}
fn bare(_: Scope, _: &BenchOptions, _: &MeasureConfig) -> Cost {
    Cost::probes(1)
}
fn one(_: Scope, _: &BenchOptions, cfg: &MeasureConfig) -> Cost {
    Cost::probes(1).plus(floor_time(cfg))
}
fn two(_: Scope, _: &BenchOptions, cfg: &MeasureConfig) -> Cost {
    Cost::probes(2).plus(floor_time(cfg) * 2)
}

/// How a call that has more than one way in was made (`libc`, `raw`, `vdso`).
pub const VIA: Param<Text> = Param::new("via");
/// The [`VIA`] of a call through the C library's wrapper.
pub const VIA_LIBC: &str = "libc";
/// The [`VIA`] of a call made by one raw `syscall` instruction.
pub const VIA_RAW: &str = "raw";
/// The [`VIA`] of a call the vDSO answers without entering the kernel.
pub const VIA_VDSO: &str = "vdso";

/// The ids other layers name (the reprints); the rest are named in [`BENCHES`] only.
pub const GETPPID: BenchId = BenchId::new("syscall.getppid");
pub const GETUID: BenchId = BenchId::new("syscall.getuid");
pub const GETPID: BenchId = BenchId::new("syscall.getpid");
pub const GETTIMEOFDAY: BenchId = BenchId::new("syscall.gettimeofday");
pub const OPEN_CLOSE: BenchId = BenchId::new("syscall.open_close");
pub const STAT: BenchId = BenchId::new("syscall.stat");
pub const READ: BenchId = BenchId::new("syscall.read");
pub const WRITE: BenchId = BenchId::new("syscall.write");
pub const SCHED_YIELD: BenchId = BenchId::new("syscall.sched_yield");

const RAW: &str = "one raw `syscall` instruction and a check of its result";

pub static BENCHES: [BenchDef; 13] = [
    BenchDef {
        id: BenchId::new("syscall.enosys"),
        family: Family::Syscall,
        summary: "unimplemented call number: bare kernel entry and exit, the floor",
        timing_model: RAW,
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: bare,
        check: no_check,
        run: run_enosys,
    },
    BenchDef {
        id: GETPPID,
        family: Family::Syscall,
        summary: "getppid: a trivial real system call",
        timing_model: RAW,
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_getppid,
    },
    BenchDef {
        id: GETUID,
        family: Family::Syscall,
        summary: "getuid: a trivial real system call",
        timing_model: RAW,
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_getuid,
    },
    BenchDef {
        id: BenchId::new("syscall.gettid"),
        family: Family::Syscall,
        summary: "gettid: a trivial real system call",
        timing_model: RAW,
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_gettid,
    },
    BenchDef {
        id: GETPID,
        family: Family::Syscall,
        summary: "getpid raw and through the C library (caught if cached)",
        timing_model: "raw: one `syscall`; libc: one call of the C library's getpid(), compared with our pid",
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: two,
        check: no_check,
        run: run_getpid,
    },
    BenchDef {
        id: BenchId::new("syscall.clock_gettime"),
        family: Family::Syscall,
        summary: "clock_gettime(MONOTONIC) through the vDSO and as a raw system call",
        timing_model: "vdso: one libc clock_gettime() (user space); raw: one `syscall`",
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: two,
        check: no_check,
        run: run_clock_gettime,
    },
    BenchDef {
        id: GETTIMEOFDAY,
        family: Family::Syscall,
        summary: "gettimeofday through the vDSO and as a raw system call",
        timing_model: "vdso: one libc gettimeofday() (user space); raw: one `syscall`",
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: two,
        check: no_check,
        run: run_gettimeofday,
    },
    BenchDef {
        id: OPEN_CLOSE,
        family: Family::Syscall,
        summary: "openat + close of an existing file in the temp directory",
        timing_model: "two raw system calls: openat(O_RDONLY) and close of the returned fd",
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_open_close,
    },
    BenchDef {
        id: STAT,
        family: Family::Syscall,
        summary: "newfstatat of an existing file in the temp directory",
        timing_model: RAW,
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_stat,
    },
    BenchDef {
        id: READ,
        family: Family::Syscall,
        summary: "read 1 byte from /dev/zero",
        timing_model: "one raw read(fd, buf, 1), result must be 1",
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_read,
    },
    BenchDef {
        id: WRITE,
        family: Family::Syscall,
        summary: "write 1 byte to /dev/null",
        timing_model: "one raw write(fd, buf, 1), result must be 1",
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_write,
    },
    BenchDef {
        id: SCHED_YIELD,
        family: Family::Syscall,
        summary: "sched_yield with no other runnable task on the CPU (checked by switch counts)",
        timing_model: RAW,
        warmup: Warmup::Runner,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_sched_yield,
    },
    BenchDef {
        id: BenchId::new("syscall.getrandom"),
        family: Family::Syscall,
        summary: "getrandom of 16 bytes from the kernel's generator (raw, not the vDSO)",
        timing_model: "one raw getrandom(buf, 16, 0), result must be 16",
        warmup: Warmup::Runner,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: one,
        check: no_check,
        run: run_getrandom,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_flags_on_synthetic_numbers() {
        assert!(floor_flags(EntryKind::Kernel, 80.0, Some(70.0)).is_empty());
        // Below the floor in one window is no verdict: the rounds judge it.
        assert!(floor_flags(EntryKind::Kernel, 50.0, Some(70.0)).is_empty());
        assert!(floor_flags(EntryKind::LibcWrapper, 60.0, Some(70.0)).is_empty());
        let f = floor_flags(EntryKind::LibcWrapper, 2.0, Some(70.0));
        assert_eq!(f[0].flag, FlagCode::NoKernelEntry);
        assert!(f[0].reason.contains("cached by the C library"));
        let f = floor_flags(EntryKind::Vdso, 20.0, Some(70.0));
        assert_eq!(f[0].flag, FlagCode::Vdso);
        assert!(!f[0].reason.contains("fall back"));
        let f = floor_flags(EntryKind::Vdso, 90.0, Some(70.0));
        assert!(f[0].reason.contains("fall back"));
        assert!(floor_flags(EntryKind::Floor, 1.0, None).is_empty());
    }

    #[test]
    fn yield_flag_threshold() {
        assert!(yield_flag(0.0).is_none());
        assert!(yield_flag(0.5).is_some());
    }

    #[test]
    fn probes_succeed_and_fail_truthfully() {
        assert_eq!(Enosys.once(), 0);
        assert_eq!(NoArg(sys::raw_getppid).once(), 0);
        let mut bad = OneByte { fd: -1, buf: [0], write: false };
        assert_eq!(bad.once(), libc::EBADF as i64);
        let mut missing = OpenClose(CString::new("/nonexistent/oscost").unwrap());
        assert_eq!(missing.once(), libc::ENOENT as i64);
        assert_eq!(LibcGetpid(i64::from(sys::getpid())).once(), 0);
        assert_eq!(NoArg(sys::libc_clock_gettime).once(), 0);
        assert_eq!(NoArg(sys::raw_gettimeofday).once(), 0);
    }
}
