//! The context-switch family: what it costs to hand the CPU from one task to another,
//! by every common mechanism, between threads and between processes, on one CPU and
//! across CPUs, with the kernel's switch counts next to every figure.
//!
//! Timing model (hand-off rows): one iteration is a round trip from the measuring task:
//! `send` (the token to the peer) then `recv` (blocks until the peer sends it back), so
//! it holds two hand-offs, and figures are per hand-off (half a round trip). On one
//! CPU a hand-off is exactly one switch; across CPUs it is a wake-up of a sleeping
//! task on the other CPU. `mode=self` rows time the mechanism alone (one send and one
//! receive in one task, nobody waiting), so the switch's share can be read off.

use super::{BenchDef, BenchOptions, Cost, Ctx, Family, Output, RoundPlan, Scope, Warmup, no_check, rows_from, tag};
use crate::runner::{BenchError, MeasureConfig, NoArg, Probe, Watch};
use crate::tracepass::measure;
use oscost_figure::key::{BenchId, Param, Text};
use oscost_figure::model::{Count, Flag, FlagCode, ResultRow};
use oscost_platform::sys;

pub mod channel;
pub mod footprint;
pub mod peer;

pub use crate::tasks::{AffinityGuard, PeerPlacement};
use channel::{CondvarPair, Endpoint, EventFd, Futex, Mechanism, Pair, Pipe, SendRecv, Unix};
use peer::{Control, Mode, Peer};

/// Flags from the kernel's counts of a hand-off row (pure; tested on synthetic counts).
///
/// - same CPU: the design needs exactly one switch per hand-off; fewer means some
///   hand-offs did not switch (the loop measured something else), more means
///   preemption or other tasks added switches;
/// - across CPUs: at most one (the waiter sleeps). Materially fewer (below 0.9; a
///   sound row sees 0.998 here) means many hand-offs found their peer still running
///   and never slept: the figure mixes hand-offs with and without a wake-up, and is
///   no switch's cost;
/// - unpinned: any migration mixes placements;
/// - across CPUs or unpinned: involuntary switches are preemptions of the measurement
///   (on one CPU they are part of the design: the woken peer preempts the waker).
pub fn switch_flags(
    placement: PeerPlacement,
    switches_per_handoff: f64,
    involuntary_per_handoff: f64,
    migrations: Option<f64>,
) -> Vec<Flag> {
    let mut flags = Vec::new();
    let s = switches_per_handoff;
    if placement == PeerPlacement::SameCpu && s < 0.95 {
        flags.push(Flag::new(FlagCode::TooFewSwitches,
            format!("{s:.3} switches per hand-off observed; a same-CPU hand-off needs exactly 1: some hand-offs did not switch"),
        ));
    }
    if placement != PeerPlacement::SameCpu && s < crate::rounds::FEWEST_SWITCHES_PER_HANDOFF {
        flags.push(Flag::new(FlagCode::TooFewSwitches,
            format!("{s:.3} switches per hand-off observed; a hand-off across CPUs makes 1 when its peer sleeps: most hand-offs found the peer still running, so the figure is no switch's cost"),
        ));
    }
    if s > 1.10 {
        flags.push(Flag::new(FlagCode::ExtraSwitches,
            format!("{s:.3} switches per hand-off observed, more than the 1 the design needs: the mechanism switched more than once per hand-off, or other tasks ran"),
        ));
    }
    if placement != PeerPlacement::SameCpu && involuntary_per_handoff > 0.02 {
        flags.push(Flag::new(
            FlagCode::Preempted,
            format!(
                "{:.1}% of hand-offs saw an involuntary switch: something else competed for the CPU",
                involuntary_per_handoff * 100.0
            ),
        ));
    }
    if placement == PeerPlacement::Unpinned
        && let Some(m) = migrations.filter(|m| *m > 0.0)
    {
        flags.push(Flag::new(
            FlagCode::Migrated,
            format!("{m:.0} migrations during the timed region: the figure mixes placements"),
        ));
    }
    flags
}

/// Adds the count-derived figures and flags to hand-off rows.
fn prove(rows: &mut [ResultRow], placement: PeerPlacement) {
    let Some(b) = rows.first() else { return };
    let handoffs = b.counts.get(&Count::CountedOps).copied().unwrap_or(b.iterations as f64);
    let per = |k: Count| b.counts.get(&k).map(|v| v / handoffs.max(1.0));
    let switches = per(Count::Switches).unwrap_or(f64::NAN);
    let invol = per(Count::InvoluntarySwitches).unwrap_or(0.0);
    let flags = switch_flags(placement, switches, invol, b.counts.get(&Count::Migrations).copied());
    let ns_per_switch = if switches > 0.0 { b.median / switches } else { f64::NAN };
    for r in rows.iter_mut() {
        for f in &flags {
            r.flag(f.clone());
        }
    }
    if let Some(b) = rows.first_mut()
        && ns_per_switch.is_finite()
    {
        b.counts.insert(Count::NsPerObservedSwitch, ns_per_switch);
    }
}

/// The peer's side of a round trip: receive, then send back, until asked to stop.
/// Runs after fork in process mode: raw system calls only, no allocation.
fn echo<E: Endpoint>(mut end: E, ctl: &Control) -> i32 {
    loop {
        if end.recv() != 0 {
            end.poison();
            return 1;
        }
        if ctl.stop_requested() {
            return 0;
        }
        if end.send() != 0 {
            end.poison();
            return 2;
        }
    }
}

fn allowed() -> Result<Vec<usize>, BenchError> {
    sys::allowed_cpus().map_err(|e| BenchError::setup("reading CPU affinity", e))
}

/// Measures one hand-off variant of mechanism `M`.
fn handoff<M: Mechanism>(
    ctx: &Ctx,
    id: &str,
    mode: Mode,
    placement: PeerPlacement,
    cpus: (Vec<usize>, Vec<usize>),
) -> Result<Vec<ResultRow>, BenchError> {
    let _pin = AffinityGuard::pin(&cpus.0)?;
    let Pair { main, peer: peer_end, poison_main, poison_peer } =
        M::pair(mode == Mode::Process).map_err(|e| BenchError::setup("building the channel", e))?;
    let peer = Peer::start(mode, &cpus.1, poison_main, poison_peer, move |ctl| echo(peer_end, ctl))?;
    let mut probe = SendRecv { end: main };
    // One round trip before measuring proves the peer is there and answering.
    let first = probe.once();
    let measured = if first != 0 {
        Err(BenchError::Failed(format!("first hand-off: {}", channel::describe(first))))
    } else {
        let one_cpu = placement == PeerPlacement::SameCpu;
        measure(
            &mut probe,
            ctx.cfg,
            ctx.calib,
            &Watch { peers: vec![peer.task], hardware: false, per_call: true, one_cpu },
        )
    };
    let mut end = probe.end;
    let stopped = peer.finish(move || {
        end.send();
        drop(end);
    });
    let m = measured?;
    stopped?;
    let mut rows = rows_from(id, &m, oscost_figure::unit::Unit::NsPerHandOff, 2.0, ctx.calib);
    tag(&mut rows, Mode::PARAM.name(), mode.as_str());
    tag(&mut rows, PLACEMENT.name(), placement.as_str());
    prove(&mut rows, placement);
    Ok(rows)
}

/// The variants a scope runs.
fn variants(scope: Scope, modes: &[Mode]) -> Vec<(Mode, PeerPlacement)> {
    let placements: &[PeerPlacement] = match scope {
        Scope::Headline => &[PeerPlacement::SameCpu, PeerPlacement::CrossCpu],
        Scope::Full => &[PeerPlacement::SameCpu, PeerPlacement::CrossCpu, PeerPlacement::Unpinned],
    };
    modes.iter().flat_map(|&m| placements.iter().map(move |&p| (m, p))).collect()
}

fn run_mechanism<M: Mechanism, L: Probe>(
    ctx: &Ctx,
    out: &mut Output,
    id: &str,
    modes: &[Mode],
    loopback: impl FnOnce() -> std::io::Result<L>,
) -> Result<(), BenchError> {
    let allowed = allowed()?;
    for (mode, placement) in variants(ctx.scope, modes) {
        match placement.cpus_avoiding(&allowed, &ctx.cfg.busy_cpus) {
            Ok(cpus) => out.extend(handoff::<M>(ctx, id, mode, placement, cpus)?),
            Err(why) => {
                out.skip(id, &format!("mode={} placement={}", mode.as_str(), placement.as_str()), why.to_string())
            }
        }
    }
    if ctx.scope == Scope::Full {
        let mut probe = loopback().map_err(|e| BenchError::setup("building the loopback channel", e))?;
        let _pin = AffinityGuard::pin(&PeerPlacement::SameCpu.cpus_avoiding(&allowed, &ctx.cfg.busy_cpus)?.0)?;
        let m = measure(&mut probe, ctx.cfg, ctx.calib, &Watch::default())?;
        let mut rows = rows_from(id, &m, oscost_figure::unit::Unit::NsPerHandOff, 1.0, ctx.calib);
        tag(&mut rows, Mode::PARAM.name(), "self");
        tag(&mut rows, PLACEMENT.name(), "same_cpu");
        out.extend(rows);
    }
    Ok(())
}

const BOTH: &[Mode] = &[Mode::Thread, Mode::Process];

/// The ids other layers name (the reprints); the rest are named in [`BENCHES`] only.
pub const PIPE: BenchId = BenchId::new("ctx.pipe");
pub const UNIX: BenchId = BenchId::new("ctx.unix");
pub const CONDVAR: BenchId = BenchId::new("ctx.condvar");
pub const SLEEP0: BenchId = BenchId::new("ctx.sleep0");
/// Where the measuring task and its peer ran ([`PeerPlacement`]'s names, `same_cpu`).
pub const PLACEMENT: Param<Text> = Param::new("placement");
/// What a sleep(0) competed with on its CPU: nothing ([`ALONE`]) or `yielding_peer`.
pub const COMPETITION: Param<Text> = Param::new("competition");
/// The [`COMPETITION`] of a sleep(0) alone on its CPU.
pub const ALONE: &str = "alone";

fn run_pipe(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    run_mechanism::<Pipe, _>(ctx, out, &PIPE, BOTH, SendRecv::loopback_pipe)
}

fn run_futex(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    run_mechanism::<Futex, _>(ctx, out, "ctx.futex", BOTH, channel::FutexLoopback::new)
}

fn run_eventfd(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    run_mechanism::<EventFd, _>(ctx, out, "ctx.eventfd", BOTH, SendRecv::loopback_eventfd)
}

fn run_unix(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    run_mechanism::<Unix, _>(ctx, out, &UNIX, BOTH, channel::UnixLoopback::new)
}

fn run_condvar(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    run_mechanism::<CondvarPair, _>(ctx, out, &CONDVAR, &[Mode::Thread], || Ok(SendRecv::loopback_condvar()))
}

/// The yielding peer: sched_yield until asked to stop (raw calls only).
fn yield_loop(ctl: &Control) -> i32 {
    while !ctl.stop_requested() {
        sys::raw_sched_yield();
    }
    0
}

/// Two tasks alternating by sched_yield on one CPU. One iteration is one yield of the
/// measuring task, which runs the peer until it yields back: two hand-offs.
fn run_yield(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let allowed = allowed()?;
    let (cpus, _) = PeerPlacement::SameCpu.cpus_avoiding(&allowed, &ctx.cfg.busy_cpus)?;
    for mode in [Mode::Thread, Mode::Process] {
        let _pin = AffinityGuard::pin(&cpus)?;
        let peer = Peer::start(mode, &cpus, channel::Poisoner::Eof, channel::Poisoner::Eof, yield_loop)?;
        let measured = measure(
            &mut NoArg(sys::raw_sched_yield),
            ctx.cfg,
            ctx.calib,
            &Watch { peers: vec![peer.task], hardware: false, per_call: true, one_cpu: true },
        );
        let stopped = peer.finish(|| {});
        let m = measured?;
        stopped?;
        let mut rows = rows_from("ctx.yield", &m, oscost_figure::unit::Unit::NsPerHandOff, 2.0, ctx.calib);
        tag(&mut rows, Mode::PARAM.name(), mode.as_str());
        tag(&mut rows, PLACEMENT.name(), "same_cpu");
        prove(&mut rows, PeerPlacement::SameCpu);
        out.extend(rows);
    }
    Ok(())
}

/// nanosleep with a zero interval: what `sleep(0)` costs, and whether it switched.
struct SleepZero;
impl Probe for SleepZero {
    #[inline(always)]
    fn once(&mut self) -> i64 {
        sys::status_of(sys::nanosleep_zero())
    }
}

/// Timing model: one nanosleep({0, 0}) call. A zero sleep still sleeps until the
/// end of the thread's timer slack (50 µs by default), so the rows say which slack
/// they ran with (`timer_slack_ns`) and a row with the slack set to 1 ns shows the call
/// itself. Rows:
/// - on one CPU, alone, with the default slack and with 1 ns; and with a yielding
///   peer runnable on the same CPU (so a switch is possible);
/// - the four classic scenarios with a yielding peer: `regular` (no pinning, normal
///   policy), `affinity` (both pinned to one CPU), `priority` (the sleeper SCHED_FIFO,
///   unpinned) and `both`; the real-time ones need the privilege to set a real-time
///   policy (skipped with the reason otherwise) and run under the watchdog's bound.
fn run_sleep0(ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let allowed = allowed()?;
    let (cpus, _) = PeerPlacement::SameCpu.cpus_avoiding(&allowed, &ctx.cfg.busy_cpus)?;
    {
        let _pin = AffinityGuard::pin(&cpus)?;
        let default_slack = sys::timer_slack_ns().map_err(|e| BenchError::setup("reading the timer slack", e))?;
        let default = sleep0_rows(ctx, &cpus, false, "same_cpu", ALONE)?;
        let fine = {
            let _slack = sys::TimerSlack::set(1).map_err(|e| BenchError::setup("setting the timer slack", e))?;
            sleep0_rows(ctx, &cpus, false, "same_cpu", ALONE)?
        };
        let flag = slack_flag(default.first().map(|r| r.median), fine.first().map(|r| r.median), default_slack);
        out.extend(with_slack(default, default_slack, flag));
        out.extend(with_slack(fine, 1, None));
        out.extend(with_slack(sleep0_rows(ctx, &cpus, true, "same_cpu", "yielding_peer")?, default_slack, None));
    }
    let p = &ctx.opts.placement;
    if p.cpu.is_some() || p.policy != oscost_platform::placement::Policy::Other {
        out.skip(
            "ctx.sleep0",
            "scenario=*",
            "--cpu or --policy was given: the scenarios set their own placement and policy",
        );
        return Ok(());
    }
    let slack = sys::timer_slack_ns().map_err(|e| BenchError::setup("reading the timer slack", e))?;
    for (scenario, pinned, realtime) in
        [("regular", false, false), ("affinity", true, false), ("priority", false, true), ("both", true, true)]
    {
        let on = if pinned { cpus.clone() } else { allowed.clone() };
        let _pin = AffinityGuard::pin(&on)?;
        let _policy = if realtime {
            let bound = ctx.cfg.hard_limit + ctx.cfg.estimate_per_probe();
            match oscost_platform::placement::PolicyGuard::enter(oscost_platform::placement::Policy::Fifo, bound) {
                Ok(g) => Some(g),
                Err(e) => {
                    out.skip("ctx.sleep0", &format!("scenario={scenario}"), format!("needs a real-time policy: {e}"));
                    continue;
                }
            }
        } else {
            None
        };
        let placement = if pinned { "same_cpu" } else { "unpinned" };
        let mut rows = sleep0_rows(ctx, &on, true, placement, "yielding_peer")?;
        tag(&mut rows, "scenario", scenario);
        tag(&mut rows, "policy", if realtime { "fifo" } else { "other" });
        out.extend(with_slack(rows, slack, None));
    }
    Ok(())
}

/// One sleep(0) measurement, with a yielding peer on `cpus` when asked.
fn sleep0_rows(
    ctx: &Ctx,
    cpus: &[usize],
    with_peer: bool,
    placement: &str,
    competition: &str,
) -> Result<Vec<ResultRow>, BenchError> {
    let peer = if with_peer {
        Some(Peer::start(Mode::Thread, cpus, channel::Poisoner::Eof, channel::Poisoner::Eof, yield_loop)?)
    } else {
        None
    };
    let watch = Watch { peers: peer.iter().map(|p| p.task).collect(), hardware: false, per_call: true, one_cpu: false };
    let measured = measure(&mut SleepZero, ctx.cfg, ctx.calib, &watch);
    if let Some(p) = peer {
        p.finish(|| {})?;
    }
    let mut rows = rows_from(&SLEEP0, &measured?, oscost_figure::unit::Unit::NsPerCall, 1.0, ctx.calib);
    tag(&mut rows, PLACEMENT.name(), placement);
    tag(&mut rows, COMPETITION.name(), competition);
    Ok(rows)
}

/// Records the slack a sleep ran with (as a parameter that tells the rows apart, and
/// as a count) and raises `flag` on its rows.
fn with_slack(mut rows: Vec<ResultRow>, slack_ns: u64, flag: Option<Flag>) -> Vec<ResultRow> {
    let label = if slack_ns == 1 { "1ns".to_string() } else { "default".to_string() };
    tag(&mut rows, "slack", &label);
    for r in &mut rows {
        r.counts.insert(Count::TimerSlackNs, slack_ns as f64);
        if let Some(f) = &flag {
            r.flag(f.clone());
        }
    }
    rows
}

/// `timer_slack` when the slack explains most of a zero sleep: the default-slack
/// median exceeds the 1 ns-slack median by more than half its own value, and the
/// slack is at least that gap's order (pure; the two figures differ tenfold here).
pub fn slack_flag(default_ns: Option<f64>, fine_ns: Option<f64>, slack_ns: u64) -> Option<Flag> {
    let (d, f) = (default_ns?, fine_ns?);
    let gap = d - f;
    (gap > 0.5 * d && slack_ns as f64 >= 0.5 * gap).then(|| {
        Flag::new(
            FlagCode::TimerSlack,
            format!(
                "{:.1} µs of this {:.1} µs zero sleep is the thread's {:.0} µs timer slack: with the slack at 1 ns it costs {:.1} µs",
                gap / 1e3,
                d / 1e3,
                slack_ns as f64 / 1e3,
                f / 1e3
            ),
        )
    })
}

fn headline_probes(s: Scope, _: &BenchOptions, _: &MeasureConfig) -> Cost {
    match s {
        Scope::Headline => Cost::probes(4),
        Scope::Full => Cost::probes(7),
    }
}
fn condvar_probes(_: Scope, _: &BenchOptions, _: &MeasureConfig) -> Cost {
    Cost::probes(4)
}
fn two(_: Scope, _: &BenchOptions, _: &MeasureConfig) -> Cost {
    Cost::probes(2)
}
fn sleep0_probes(_: Scope, _: &BenchOptions, _: &MeasureConfig) -> Cost {
    Cost::probes(7)
}

const HANDOFF_MODEL: &str = "a round trip from the measuring task (send the token, block until it returns) = 2 hand-offs; figures per hand-off; mode=self: one send + one receive in one task";

/// A hand-off benchmark's warm-up: the peer is asked to answer first.
const PEER_CHECKED: Warmup = Warmup::RunnerAfter("one untimed round trip, which checks that the peer answers");

pub static BENCHES: [BenchDef; 8] = [
    BenchDef {
        id: PIPE,
        family: Family::Ctx,
        summary: "one byte each way over two pipes (lmbench lat_ctx, perf bench sched pipe)",
        timing_model: HANDOFF_MODEL,
        warmup: PEER_CHECKED,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: headline_probes,
        check: no_check,
        run: run_pipe,
    },
    BenchDef {
        id: BenchId::new("ctx.futex"),
        family: Family::Ctx,
        summary: "a shared word with FUTEX_WAIT/FUTEX_WAKE (private for threads, shared mapping for processes)",
        timing_model: HANDOFF_MODEL,
        warmup: PEER_CHECKED,
        in_default_suite: true,
        rounds: RoundPlan::Spread,
        cost: headline_probes,
        check: no_check,
        run: run_futex,
    },
    BenchDef {
        id: BenchId::new("ctx.eventfd"),
        family: Family::Ctx,
        summary: "two eventfd counters, one per direction",
        timing_model: HANDOFF_MODEL,
        warmup: PEER_CHECKED,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: headline_probes,
        check: no_check,
        run: run_eventfd,
    },
    BenchDef {
        id: UNIX,
        family: Family::Ctx,
        summary: "one byte each way over an AF_UNIX stream socket pair",
        timing_model: HANDOFF_MODEL,
        warmup: PEER_CHECKED,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: headline_probes,
        check: no_check,
        run: run_unix,
    },
    BenchDef {
        id: CONDVAR,
        family: Family::Ctx,
        summary: "mutex + condition variable turn-taking (threads only)",
        timing_model: HANDOFF_MODEL,
        warmup: PEER_CHECKED,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: condvar_probes,
        check: no_check,
        run: run_condvar,
    },
    BenchDef {
        id: BenchId::new("ctx.yield"),
        family: Family::Ctx,
        summary: "two tasks alternating by sched_yield on one CPU",
        timing_model: "one sched_yield of the measuring task, which runs the peer until it yields back = 2 hand-offs",
        warmup: Warmup::Runner,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: two,
        check: no_check,
        run: run_yield,
    },
    BenchDef {
        id: SLEEP0,
        family: Family::Ctx,
        summary: "nanosleep with a zero interval (sleep(0)): default and 1 ns timer slack, with a runnable peer, and the regular/affinity/priority/both scenarios",
        timing_model: "one nanosleep({0,0}) call, with the switches it caused counted and the timer slack recorded",
        warmup: Warmup::Runner,
        in_default_suite: false,
        rounds: RoundPlan::Spread,
        cost: sleep0_probes,
        check: no_check,
        run: run_sleep0,
    },
    BenchDef {
        id: BenchId::new("ctx.footprint"),
        family: Family::Ctx,
        summary: "pipe hand-off between processes on one CPU with a working set walked before each hand-off, minus the same walk without switching",
        timing_model: footprint::TIMING_MODEL,
        warmup: Warmup::Own(
            "the working set is touched first and the round trip's batch size found in untimed batches; the walk without switching is timed from its first batch",
        ),
        in_default_suite: false,
        rounds: RoundPlan::Once,
        cost: footprint::cost,
        check: footprint::check,
        run: footprint::run,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slack_flag_fires_when_slack_explains_the_sleep() {
        // 55 µs with the 50 µs default, 4.3 µs with 1 ns: the slack explains it.
        let f = slack_flag(Some(55_000.0), Some(4_300.0), 50_000).unwrap();
        assert_eq!(f.flag, FlagCode::TimerSlack);
        assert!(f.reason.contains("50 µs timer slack"), "{}", f.reason);
        // Round noise between two similar figures: quiet.
        assert!(slack_flag(Some(4_500.0), Some(4_300.0), 50_000).is_none());
        assert!(slack_flag(Some(4_300.0), Some(4_500.0), 50_000).is_none());
        // A large gap the slack cannot explain (slack already tiny): quiet.
        assert!(slack_flag(Some(55_000.0), Some(4_300.0), 1_000).is_none());
        assert!(slack_flag(None, Some(4_300.0), 50_000).is_none());
    }

    #[test]
    fn placements_on_one_and_two_cpus() {
        assert_eq!(PeerPlacement::SameCpu.cpus(&[0, 1]).unwrap(), (vec![1], vec![1]));
        assert_eq!(PeerPlacement::CrossCpu.cpus(&[0, 1]).unwrap(), (vec![0], vec![1]));
        assert!(PeerPlacement::CrossCpu.cpus(&[3]).unwrap_err().to_string().contains("needs 2 CPUs"));
        assert_eq!(PeerPlacement::Unpinned.cpus(&[0, 1]).unwrap().1, vec![0, 1]);
        // A same-CPU pair leaves a CPU other work keeps busy where another is allowed;
        // the other placements, and a machine busy everywhere, are as before.
        assert_eq!(PeerPlacement::SameCpu.cpus_avoiding(&[0, 1], &[1]).unwrap(), (vec![0], vec![0]));
        assert_eq!(PeerPlacement::SameCpu.cpus_avoiding(&[0, 1], &[]).unwrap(), (vec![1], vec![1]));
        assert_eq!(PeerPlacement::SameCpu.cpus_avoiding(&[0, 1], &[0, 1]).unwrap(), (vec![1], vec![1]));
        assert_eq!(PeerPlacement::CrossCpu.cpus_avoiding(&[0, 1], &[1]).unwrap(), (vec![0], vec![1]));
    }

    #[test]
    fn switch_flag_logic_on_synthetic_counts() {
        assert!(switch_flags(PeerPlacement::SameCpu, 1.0, 0.0, Some(0.0)).is_empty());
        let f = switch_flags(PeerPlacement::SameCpu, 0.2, 0.0, None);
        assert_eq!(f[0].flag, FlagCode::TooFewSwitches);
        let f = switch_flags(PeerPlacement::SameCpu, 2.0, 0.0, None);
        assert_eq!(f[0].flag, FlagCode::ExtraSwitches);
        // Across CPUs a hand-off that finds its peer running does not switch: a few
        // such are sound (0.998 is usual), most of them are another measurement.
        assert!(switch_flags(PeerPlacement::CrossCpu, 0.998, 0.0, None).is_empty());
        assert!(switch_flags(PeerPlacement::CrossCpu, 0.95, 0.0, None).is_empty());
        assert_eq!(switch_flags(PeerPlacement::CrossCpu, 0.29, 0.0, None)[0].flag, FlagCode::TooFewSwitches);
        assert_eq!(switch_flags(PeerPlacement::Unpinned, 0.5, 0.0, None)[0].flag, FlagCode::TooFewSwitches);
        assert_eq!(switch_flags(PeerPlacement::CrossCpu, 1.5, 0.0, None)[0].flag, FlagCode::ExtraSwitches);
        assert_eq!(switch_flags(PeerPlacement::Unpinned, 1.0, 0.0, Some(3.0))[0].flag, FlagCode::Migrated);
        assert!(switch_flags(PeerPlacement::Unpinned, 1.0, 0.0, Some(0.0)).is_empty());
        assert_eq!(switch_flags(PeerPlacement::CrossCpu, 1.0, 0.5, None)[0].flag, FlagCode::Preempted);
        assert!(
            switch_flags(PeerPlacement::SameCpu, 1.0, 0.5, None).is_empty(),
            "wake-up preemption is the design on one CPU"
        );
    }
}
