//! Executes a run: checks everything that can be checked before measuring (database,
//! placement, privileges), calibrates, runs each selected benchmark, and stores each
//! one's rows the moment it finishes. A stop signal (Ctrl-C, SIGTERM, SIGHUP,
//! SIGXCPU) stops between samples; what finished stays.
//!
//! Measured figures are never lost: a run is marked `interrupted` or `failed` on
//! every path that can run code (a guard marks it `failed` if the run ends any other
//! way, panics included), and when storing fails the benchmark's figures are printed
//! and written, importable, to a JSON file beside the database before the run stops.

use std::cell::Cell;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::bench::{BenchDef, BenchOptions, Ctx, Output, Scope};
use crate::clock::Calibration;
use crate::model::{RunDocument, RunInfo, Skipped};
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
    /// The stop signal that ended the run early, if one did.
    pub stopped_by: Option<i32>,
    pub failures: Vec<Skipped>,
    /// Why the run stopped because it could not store a benchmark (its figures were
    /// printed and saved as the message says).
    pub storage_error: Option<String>,
    pub store: Store,
    pub elapsed: Duration,
}

impl RunOutcome {
    pub fn interrupted(&self) -> bool {
        self.stopped_by.is_some()
    }
}

/// A run being recorded: marked `failed` when dropped unless finished (so an error
/// return or a panic never leaves it `running`).
struct OpenRun {
    store: Option<Store>,
    id: i64,
}

impl OpenRun {
    fn store(&mut self) -> &mut Store {
        self.store.as_mut().expect("the store stays until the run is finished")
    }

    fn finish(mut self, status: &str) -> Result<Store> {
        let mut store = self.store.take().expect("a run finishes once");
        store.finish_run(self.id, &report::now_rfc3339(), status)?;
        Ok(store)
    }
}

impl Drop for OpenRun {
    fn drop(&mut self) {
        if let Some(store) = self.store.as_mut() {
            let _ = store.finish_run(self.id, &report::now_rfc3339(), "failed");
        }
    }
}

/// The estimated duration of the selected benchmarks.
pub fn estimate(selected: &[(&BenchDef, Scope)], opts: &BenchOptions, cfg: &MeasureConfig) -> Duration {
    let work = selected.iter().map(|(b, s)| (b.cost)(*s, opts, cfg).time(cfg)).sum::<Duration>();
    cfg.startup + work
}

/// The run's estimate, from its benchmarks and options.
fn estimate_of(req: &RunRequest, cfg: &MeasureConfig) -> Duration {
    estimate(&req.selected, &req.options, cfg)
}

/// A duration as users read an estimate: whole seconds, or minutes and seconds.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64().ceil() as u64;
    if s >= 120 { format!("{} min {} s", s / 60, s % 60) } else { format!("{s} s") }
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
    sys::install_interrupt_flag().context("installing the signal handlers")?;
    sys::release_free_memory();
    let cfg = MeasureConfig {
        perf_software_counters: req.perf_counters,
        ..if req.quick { MeasureConfig::quick() } else { MeasureConfig::standard() }
    };
    let calib = calibrate(req.quick);
    let machine = announce(&req, &cfg, &calib);
    let started_at = report::now_rfc3339();
    let owner = crate::store::Owner::current();
    let id = store.begin_run(&started_at, &req.command_line, req.save.as_deref(), &machine, owner.as_ref())?;
    let mut run = OpenRun { store: Some(store), id };

    let started = Instant::now();
    let floor = Cell::new(None);
    let mut failures = Vec::new();
    let mut storage_error = None;
    let bar = req.progress.then(|| progress_bar(req.selected.len() as u64, estimate_of(&req, &cfg)));
    let say = |msg: &str| match &bar {
        Some(b) => b.suspend(|| eprintln!("{msg}")),
        None => eprintln!("{msg}"),
    };
    for (def, scope) in &req.selected {
        if sys::interrupted() {
            break;
        }
        if let Some(b) = &bar {
            b.set_message(def.id);
        }
        let ctx = Ctx { cfg: &cfg, calib: &calib, opts: &req.options, scope: *scope, syscall_floor: &floor };
        let mut out = Output::default();
        let result = run_one(def, &ctx, &mut out);
        match classify(def, result, &out) {
            Ended::Done | Ended::Interrupted => {}
            Ended::Skipped(why) => out.skip(def.id, "", why),
            Ended::Failed(f) => {
                say(&format!("error: {}: {}", def.id, f.reason.trim_start_matches("failed: ")));
                out.skipped.push(f.clone());
                failures.push(f);
            }
        }
        if let Err(e) = run.store().add_benchmark(id, &out.rows, &out.skipped) {
            let doc = unsaved_document(&req, &machine, id, &started_at, &out);
            storage_error = Some(rescue(&req.db, def.id, &e.to_string(), &doc, &out));
            break;
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let stopped_by = sys::stop_signal();
    let status = match (&storage_error, stopped_by) {
        (Some(_), _) => "failed",
        (None, Some(_)) => "interrupted",
        // A benchmark that failed (not skipped) means the run did not do its job.
        (None, None) if !failures.is_empty() => "failed",
        (None, None) => "complete",
    };
    let store = run.finish(status)?;
    Ok(RunOutcome { run_id: id, stopped_by, failures, storage_error, store, elapsed: started.elapsed() })
}

/// The figures a benchmark measured but could not store, as a run document.
fn unsaved_document(
    req: &RunRequest,
    machine: &machine::Machine,
    id: i64,
    started_at: &str,
    out: &Output,
) -> RunDocument {
    RunDocument {
        schema_version: crate::model::SCHEMA_VERSION,
        run: RunInfo {
            id,
            started_at: started_at.to_string(),
            command_line: req.command_line.clone(),
            save_name: None,
            status: "failed".into(),
        },
        machine: machine.clone(),
        results: out.rows.clone(),
    }
}

/// When a benchmark's figures cannot be stored: prints them, writes them as an
/// importable export beside the database (else in the temp directory), and returns
/// what happened, in words.
fn rescue(db: &Path, id: &str, error: &str, doc: &RunDocument, out: &Output) -> String {
    print!("{}", report::table::render_results(&doc.results, &out.skipped));
    let json = report::export::to_json(&[(doc.clone(), out.skipped.clone())]);
    let name = format!(
        "{}.unsaved-run{}-{}.json",
        db.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "oscost".into()),
        doc.run.id,
        std::process::id()
    );
    let beside = db.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).join(&name);
    let written = [beside, std::env::temp_dir().join(&name)].into_iter().find(|p| match std::fs::write(p, &json) {
        Ok(()) => true,
        Err(_) => {
            let _ = std::fs::remove_file(p); // no half-written file left behind
            false
        }
    });
    let saved = match written {
        Some(p) => format!("printed above and saved to {} (oscost import reads it)", p.display()),
        None => "printed above (no file could be written either)".into(),
    };
    format!("storing {id} failed ({error}); its figures are {saved}; the run stopped there")
}

/// Fingerprints the machine and says, before anything is measured, what the run
/// cannot report and how long it will take.
fn announce(req: &RunRequest, cfg: &MeasureConfig, calib: &Calibration) -> machine::Machine {
    for w in &calib.warnings {
        eprintln!("warning: {w}");
    }
    // Whether hardware counters work is part of the fingerprint (`oscost info`, the
    // stored machine); it is not repeated on every run.
    let machine = machine::fingerprint(&req.command_line, Some(calib.clone()));
    let n = req.selected.len();
    eprintln!("running {n} benchmark{}, about {}", if n == 1 { "" } else { "s" }, seconds(estimate_of(req, cfg)));
    machine
}

/// How one benchmark ended, for the run's bookkeeping.
enum Ended {
    Done,
    Interrupted,
    Skipped(String),
    Failed(Skipped),
}

fn classify(def: &BenchDef, result: Result<(), BenchError>, out: &Output) -> Ended {
    let failed = |reason: String| Ended::Failed(Skipped { benchmark: def.id.into(), params: String::new(), reason });
    match result {
        // A benchmark that measured nothing and said why not did not do its job.
        Ok(()) if out.rows.is_empty() && out.skipped.is_empty() => {
            failed("failed: it measured nothing (check the sizes and lists given to it)".into())
        }
        Ok(()) => Ended::Done,
        Err(BenchError::Interrupted) => Ended::Interrupted,
        // Ctrl-C reaches children first at times: their death is the symptom.
        Err(_) if interrupt_arriving() => Ended::Interrupted,
        Err(BenchError::Skipped(why)) => Ended::Skipped(why),
        Err(other) => failed(format!("failed: {other}")),
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
        let cost = (def.cost)(ctx.scope, ctx.opts, ctx.cfg);
        let bound = ctx.cfg.hard_limit * cost.probes.max(1) as u32 + cost.fixed * 4;
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

/// The bar shows time spent against the announced estimate: the benchmarks differ
/// too much in length for a rate-based time left to mean anything.
fn progress_bar(len: u64, estimate: Duration) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    let template = format!("{{bar:30}} {{pos}}/{{len}} {{msg}} ({{elapsed}} of about {})", seconds(estimate));
    let style =
        indicatif::ProgressStyle::with_template(&template).unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
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
