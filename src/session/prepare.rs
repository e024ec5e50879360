//! Everything settled before the first round: what can be checked is checked (the
//! placement, the preflight's traps), the signal handlers installed, the clocks
//! calibrated, the conditions' arms prepared and the run announced. An error here
//! stops the run before anything is measured, so nothing measured can be lost to it.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::noise::precision_noise;
use super::{ADAPTIVE_MIN_ROUNDS, RunRequest, calibrate, estimate_of, rounds_of, seconds};
use crate::clock::Calibration;
use crate::placement::Placement;
use crate::runner::MeasureConfig;
use crate::store::Store;
use crate::{machine, sys};

/// Checks the placement before anything is measured: the workers apply it, the
/// coordinator only tries it (pinning and nice on a scratch thread, the policy set and
/// set back), so it never competes for the measured CPU at a changed priority.
pub(super) fn check_placement(p: &Placement) -> Result<()> {
    let allowed = sys::allowed_cpus().context("reading this process's CPU affinity")?;
    p.validate(&allowed)?;
    std::thread::scope(|s| s.spawn(|| p.apply_static()).join())
        .map_err(|_| anyhow::anyhow!("checking the placement failed"))??;
    std::thread::scope(|s| s.spawn(|| p.probe_policy()).join())
        .map_err(|_| anyhow::anyhow!("checking the policy failed"))??;
    Ok(())
}

/// The tracepoints for the run's trace passes; None (said once, with what to run
/// instead) when none of the selected benchmarks is traced, tracing is off, or the
/// tracepoints cannot be opened.
pub(super) fn trace_spec_for(req: &RunRequest) -> Option<crate::trace::TraceSpec> {
    if !req.trace || !req.selected.iter().any(|(d, _)| d.family.is_traced()) {
        return None;
    }
    match crate::trace::prepare() {
        Ok(spec) => Some(spec),
        Err(why) => {
            crate::report::fit::say(&format!("note: no trace pass: {why}; {}", crate::trace::UNAVAILABLE_HINT));
            None
        }
    }
}

/// What a run measures with, settled before it begins.
pub(super) struct Setup {
    /// Benchmarks measured once; and each round of the others.
    pub(super) cfg: MeasureConfig,
    pub(super) per_round: MeasureConfig,
    pub(super) calib: Calibration,
    pub(super) machine: machine::Machine,
    pub(super) trace_spec: Option<crate::trace::TraceSpec>,
    /// Rounds a benchmark runs (their budgets split the standard budgets).
    pub(super) rounds: usize,
    /// Rounds a benchmark may run: `rounds`, or more under `--precision`.
    pub(super) max_rounds: usize,
    /// When the run's setup was settled (the clocks calibrated), from which an adaptive
    /// run's pace is counted, and when it stops adding rounds.
    pub(super) started: Instant,
    pub(super) deadline: Option<Instant>,
    /// What the run spent before its first round (the store opened, the preflight, the
    /// clocks calibrated): recorded with its rows, for `oscost plan`.
    pub(super) set_up_in: Duration,
    /// Under `--precision`, this machine's between-run spreads (`oscost noise`), which
    /// stand beside a row's interval or blocks when it is judged.
    pub(super) noise: crate::judge::noise::RunNoise,
    /// The run's arms: the baseline, then each condition as prepared (or why it cannot
    /// be measured here). Dropped after the last round: what they hold is undone.
    pub(super) arms: Vec<Arm>,
}

/// One arm of a paired run: what its rounds measure under.
pub(super) enum Arm {
    Baseline,
    Condition(crate::condition::Prepared),
    Unavailable(crate::condition::Condition, String),
}

impl Arm {
    pub(super) fn condition(&self) -> Option<String> {
        match self {
            Arm::Baseline => None,
            Arm::Condition(p) => Some(p.condition.to_string()),
            Arm::Unavailable(c, _) => Some(c.to_string()),
        }
    }
}

/// Checks what can be checked before anything runs, installs the signal handlers,
/// calibrates the clocks and announces the run.
pub(super) fn prepare(req: &RunRequest, store: &Store) -> Result<Setup> {
    recover_left_settings();
    check_placement(&req.options.placement)?;
    sys::install_interrupt_flag().context("installing the signal handlers")?;
    sys::release_free_memory();
    let budgets = if req.quick { MeasureConfig::quick() } else { MeasureConfig::standard() };
    // Before calibrating: the preflight watches the CPUs while oscost itself sleeps.
    let (traps, busy_cpus) = preflight(req)?;
    let cfg = MeasureConfig {
        perf_software_counters: req.perf_counters,
        hard_limit: req.timeout.unwrap_or(budgets.hard_limit),
        busy_cpus,
        ..budgets
    };
    let calib = calibrate(req.quick);
    let mut machine = announce(req, &cfg, &calib);
    machine.preflight = traps;
    if let Some(warning) = crate::worker::fault_warning() {
        crate::report::fit::say(&warning);
    }
    Ok(settle(req, store, cfg, calib, machine))
}

/// The setup of a run of `req` into `store` measured under `cfg` with the clocks as
/// `calib` found them on `machine`: its rounds, their budgets, cap and deadline
/// (counted from now), the noise runs `store` holds, and its arms prepared.
pub(super) fn settle(
    req: &RunRequest,
    store: &Store,
    cfg: MeasureConfig,
    calib: Calibration,
    machine: machine::Machine,
) -> Setup {
    let rounds = rounds_of(req);
    let per_round = cfg.per_round(rounds);
    let max_rounds = req.precision.map_or(rounds, |g| g.max_rounds.max(rounds));
    let started = Instant::now();
    let deadline = req.precision.map(|g| started + g.max_time);
    let noise = precision_noise(req, store, &machine);
    let arms = prepare_arms(req);
    Setup {
        trace_spec: trace_spec_for(req),
        cfg,
        per_round,
        calib,
        machine,
        rounds,
        max_rounds,
        started,
        deadline,
        set_up_in: Duration::ZERO,
        noise,
        arms,
    }
}

/// The baseline and each condition, prepared for the run; one that cannot be measured
/// here is said once and skipped, and the baseline still runs.
pub(super) fn prepare_arms(req: &RunRequest) -> Vec<Arm> {
    let mut arms = vec![Arm::Baseline];
    for c in &req.conditions {
        arms.push(match crate::condition::prepare(c, &req.options) {
            Ok(p) => Arm::Condition(p),
            Err(crate::condition::Unavailable(why)) => {
                eprintln!("note: condition {c} skipped: {why}");
                Arm::Unavailable(c.clone(), why)
            }
        });
    }
    arms
}

/// Puts back what killed runs left changed (a cgroup, a sysfs setting), said once each.
pub(super) fn recover_left_settings() {
    for line in crate::condition::journal::recover() {
        eprintln!("restored: {line}");
    }
}

/// The preflight's traps, each printed as a warning (with `--strict`, any of them stops
/// the run before anything is measured), and the CPUs it found other work keeping busy.
pub(super) fn preflight(req: &RunRequest) -> Result<(Vec<crate::preflight::Trap>, Vec<usize>)> {
    let snapshot = crate::preflight::snapshot(crate::preflight::WINDOW);
    let traps = crate::preflight::check(&snapshot);
    if req.strict && !traps.is_empty() {
        return Err(crate::preflight::Refused(traps).into());
    }
    for t in &traps {
        crate::report::fit::say(&format!("preflight: {} ({})", t.reason, t.advice));
    }
    Ok((traps, snapshot.busy_cpus()))
}

/// Fingerprints the machine and says, before anything is measured, what the run
/// cannot report and how long it will take.
pub(super) fn announce(req: &RunRequest, cfg: &MeasureConfig, calib: &Calibration) -> machine::Machine {
    for w in &calib.warnings {
        crate::report::fit::say(&format!("warning: {w}"));
    }
    // Whether hardware counters work is part of the fingerprint (`oscost info`, the
    // stored machine); it is not repeated on every run.
    let machine = machine::fingerprint(&req.command_line, Some(calib.clone()));
    let n = req.selected.len();
    let r = rounds_of(req);
    if let (false, Some(g)) = (req.quiet, &req.precision) {
        let why = g.detect.map_or_else(String::new, |d| {
            format!(
                " (so that two runs like this one tell a change of {:.1}%: compare's MDE at its {:.0}% threshold, 80% power)",
                d * 100.0,
                crate::report::compare::DEFAULT_THRESHOLD * 100.0
            )
        });
        crate::report::fit::say(&format!(
            "running {n} benchmark{} until each figure is within ±{:.2}%{why} ({ADAPTIVE_MIN_ROUNDS} rounds or more, as many as fit in {} and at most {})",
            if n == 1 { "" } else { "s" },
            g.target * 100.0,
            seconds(g.max_time),
            g.max_rounds
        ));
    } else if !req.quiet {
        let arms = match req.conditions.len() {
            0 => String::new(),
            k => format!(", each beside {k} condition{} in alternating order", if k == 1 { "" } else { "s" }),
        };
        eprintln!(
            "running {n} benchmark{} in {r} round{}{arms}, about {}",
            if n == 1 { "" } else { "s" },
            if r == 1 { "" } else { "s" },
            seconds(estimate_of(req, cfg))
        );
    }
    machine
}
