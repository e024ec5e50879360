//! Executes a run: checks everything that can be checked before measuring (database,
//! placement, privileges), calibrates, runs each selected benchmark, and stores each
//! one's rows the moment it finishes. Ctrl-C stops between samples; what finished stays.

use std::cell::Cell;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::bench::{BenchDef, BenchOptions, Ctx, Output, Scope};
use crate::clock::Calibration;
use crate::model::Skipped;
use crate::placement::{Placement, PolicyGuard};
use crate::runner::{BenchError, MeasureConfig};
use crate::store::Store;
use crate::{machine, report, sys};

/// What the user asked a run to do.
pub struct RunRequest {
    pub selected: Vec<(&'static BenchDef, Scope)>,
    pub quick: bool,
    /// Also count switches with per-task perf software counters.
    pub perf_counters: bool,
    pub options: BenchOptions,
    pub db: PathBuf,
    pub save: Option<String>,
    pub command_line: String,
    /// Draw a progress bar (only on a terminal, never with --json).
    pub progress: bool,
}

/// How a run ended.
pub struct RunOutcome {
    pub run_id: i64,
    pub interrupted: bool,
    pub failures: Vec<Skipped>,
    pub store: Store,
    pub elapsed: Duration,
}

/// The estimated duration of the selected benchmarks.
pub fn estimate(selected: &[(&BenchDef, Scope)], opts: &BenchOptions, cfg: &MeasureConfig) -> Duration {
    let probes: usize = selected.iter().map(|(b, s)| (b.probes)(*s, opts)).sum();
    cfg.estimate_per_probe() * probes as u32
}

/// Calibrates with rounds sized to the run's precision.
pub fn calibrate(quick: bool) -> Calibration {
    crate::clock::calibrate(if quick { 10_000_000 } else { 40_000_000 })
}

fn check_placement(p: &Placement) -> Result<()> {
    let allowed = sys::allowed_cpus().context("reading this process's CPU affinity")?;
    p.validate(&allowed)?;
    p.apply_static()?;
    p.probe_policy()?;
    Ok(())
}

/// Runs the request. Errors before the first measurement are returned as errors;
/// failures of single benchmarks are reported in the outcome and the run goes on.
pub fn execute(req: RunRequest) -> Result<RunOutcome> {
    let mut store = Store::open(&req.db)?;
    check_placement(&req.options.placement)?;
    sys::install_interrupt_flag().context("installing the Ctrl-C handler")?;
    sys::release_free_memory();
    let cfg = MeasureConfig {
        perf_software_counters: req.perf_counters,
        ..if req.quick { MeasureConfig::quick() } else { MeasureConfig::standard() }
    };
    let calib = calibrate(req.quick);
    let machine = announce(&req, &cfg, &calib);
    let run_id = store.begin_run(&report::now_rfc3339(), &req.command_line, req.save.as_deref(), &machine)?;

    let started = Instant::now();
    let floor = Cell::new(None);
    let mut failures = Vec::new();
    let mut interrupted = false;
    let bar = req.progress.then(|| progress_bar(req.selected.len() as u64));
    for (def, scope) in &req.selected {
        if sys::interrupted() {
            interrupted = true;
            break;
        }
        if let Some(b) = &bar {
            b.set_message(def.id);
        }
        let ctx = Ctx { cfg: &cfg, calib: &calib, opts: &req.options, scope: *scope, syscall_floor: &floor };
        let mut out = Output::default();
        match classify(def, run_one(def, &ctx, &mut out)) {
            Ended::Done => {}
            Ended::Interrupted => interrupted = true,
            Ended::Skipped(why) => out.skip(def.id, "", why),
            Ended::Failed(f) => {
                let say = || eprintln!("error: {}: {}", def.id, f.reason.trim_start_matches("failed: "));
                match &bar {
                    Some(b) => b.suspend(say),
                    None => say(),
                }
                out.skipped.push(f.clone());
                failures.push(f);
            }
        }
        store.add_benchmark(run_id, &out.rows, &out.skipped).with_context(|| format!("storing {}", def.id))?;
        if let Some(b) = &bar {
            b.inc(1);
        }
        if interrupted {
            break;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    interrupted |= sys::interrupted();
    let status = if interrupted { "interrupted" } else { "complete" };
    store.finish_run(run_id, &report::now_rfc3339(), status)?;
    Ok(RunOutcome { run_id, interrupted, failures, store, elapsed: started.elapsed() })
}

/// Fingerprints the machine and says, before anything is measured, what the run
/// cannot report and how long it will take.
fn announce(req: &RunRequest, cfg: &MeasureConfig, calib: &Calibration) -> machine::Machine {
    for w in &calib.warnings {
        eprintln!("warning: {w}");
    }
    let machine = machine::fingerprint(&req.command_line, Some(calib.clone()));
    if !machine.hardware_counters.starts_with("available") {
        eprintln!(
            "note: hardware counters {}; instructions and cycles per call are not reported",
            machine.hardware_counters
        );
    }
    let est = estimate(&req.selected, &req.options, cfg);
    eprintln!("running {} benchmarks, about {:.0} s", req.selected.len(), est.as_secs_f64().ceil());
    machine
}

/// How one benchmark ended, for the run's bookkeeping.
enum Ended {
    Done,
    Interrupted,
    Skipped(String),
    Failed(Skipped),
}

fn classify(def: &BenchDef, result: Result<(), BenchError>) -> Ended {
    match result {
        Ok(()) => Ended::Done,
        Err(BenchError::Interrupted) => Ended::Interrupted,
        // Ctrl-C reaches children first at times: their death is the symptom.
        Err(_) if interrupt_arriving() => Ended::Interrupted,
        Err(BenchError::Skipped(why)) => Ended::Skipped(why),
        Err(other) => Ended::Failed(Skipped {
            benchmark: def.id.into(),
            params: String::new(),
            reason: format!("failed: {other}"),
        }),
    }
}

/// Whether a Ctrl-C is being delivered: the group's signal may reach the children (and
/// fail the benchmark) a moment before it reaches us.
fn interrupt_arriving() -> bool {
    for _ in 0..10 {
        if sys::interrupted() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Runs one benchmark under the requested policy (bounded by the watchdog when it is
/// real-time), and checks afterwards that it left no child process behind.
fn run_one(def: &BenchDef, ctx: &Ctx, out: &mut Output) -> Result<(), BenchError> {
    let policy = ctx.opts.placement.policy;
    let guard = if policy != crate::placement::Policy::Other {
        let bound = ctx.cfg.hard_limit * (def.probes)(ctx.scope, ctx.opts).max(1) as u32;
        Some(PolicyGuard::enter(policy, bound).map_err(|e| BenchError::Setup(e.to_string()))?)
    } else {
        None
    };
    let r = (def.run)(ctx, out);
    if let Some(g) = guard {
        let fired = g.fired();
        drop(g);
        if fired {
            return Err(BenchError::Timeout(format!("the real-time watchdog demoted {} after its bound", def.id)));
        }
        crate::bench::tag(&mut out.rows, "policy", policy.as_str());
    }
    if let Some(label) = ctx.opts.placement.label() {
        for r in &mut out.rows {
            r.params.entry("runner".into()).or_insert(label.clone().into());
        }
    }
    r
}

fn progress_bar(len: u64) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} (about {eta} left)")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// Fails clearly when a run selected nothing.
pub fn ensure_selected(selected: &[(&BenchDef, Scope)]) -> Result<()> {
    if selected.is_empty() {
        bail!("no benchmark selected");
    }
    Ok(())
}
