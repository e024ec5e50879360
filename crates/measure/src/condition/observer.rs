//! `observer:perf`, `observer:trace`: the observer effect, measured rather than
//! guessed.
//!
//! `perf` attaches per-task software counters (context switches and migrations) to the
//! benchmark's tasks, as `--perf-counters` does: an active perf event on a task makes
//! each of its switches dearer. The rows of the condition carry the counters' counts,
//! which shows they were open. `trace` opens the scheduler's tracepoints (switch,
//! wake-up, new task, migration) on every CPU for the condition's rounds and drains
//! them as `oscost trace` does, from a thread of the coordinator; the records are
//! counted and dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::{Act, Condition, HoldsRound, HoldsRun, Kind, Malformed, NotActed, RoundError, Setup, Unavailable};
use crate::runner::MeasureConfig;

pub const KIND: Kind = Kind { name: "observer", parse, forms: "observer:perf, observer:trace" };

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Observer {
    Perf,
    Trace,
}

/// The condition: the observer attached during its rounds.
struct Watch(Observer);

fn parse(rest: &str) -> Result<Condition, Malformed> {
    match rest {
        "perf" => Ok(Condition::new(Watch(Observer::Perf))),
        "trace" => Ok(Condition::new(Watch(Observer::Trace))),
        _ => Err(Malformed::NotOneOf { given: rest.into(), expected: "perf or trace" }),
    }
}

impl std::fmt::Display for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Observer::Perf => "perf",
            Observer::Trace => "trace",
        })
    }
}

impl std::fmt::Display for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "observer:{}", self.0)
    }
}

impl Act for Watch {
    fn prepare(&self, _: &crate::bench::BenchOptions) -> Result<Setup, Unavailable> {
        check(self.0).map(|()| Setup::holding(self.0))
    }

    fn adjust(&self, cfg: &mut MeasureConfig, _: &mut crate::bench::BenchOptions) {
        self.0.adjust(cfg);
    }

    fn evidence(&self, rows: &[oscost_figure::model::ResultRow]) -> Vec<String> {
        self.0.evidence(rows)
    }

    fn acted(&self, report: &super::RoundReport) -> Result<(), NotActed> {
        self.0.acted(report.rows)
    }
}

impl HoldsRun for Observer {
    fn hold_round(&self, _: &crate::bench::BenchOptions) -> Result<Option<Box<dyn HoldsRound>>, RoundError> {
        let watching = self.watch().map_err(RoundError::new)?;
        Ok(watching.map(|w| Box::new(w) as Box<dyn HoldsRound>))
    }
}

impl HoldsRound for Watching {
    fn seen(&self) -> Result<Vec<String>, NotActed> {
        Ok(vec![format!("{} scheduler events recorded and drained during the round", self.records())])
    }
}

/// Checks the observer can be attached here.
fn check(o: Observer) -> Result<(), Unavailable> {
    match o {
        Observer::Perf => oscost_platform::sys::PerfCounter::open(oscost_platform::sys::PerfEvent::ContextSwitches, 0)
            .map(drop)
            .map_err(|e| Unavailable(format!("a perf software counter could not be opened: {e}"))),
        Observer::Trace => crate::trace::prepare()
            .map(drop)
            .map_err(|e| Unavailable(format!("{e}; {}", crate::trace::UNAVAILABLE_HINT))),
    }
}

impl Observer {
    fn adjust(&self, cfg: &mut MeasureConfig) {
        if *self == Observer::Perf {
            cfg.perf_software_counters = true;
        }
    }

    /// Whether the rows show the observer was attached (the per-task counters counted).
    fn acted(&self, rows: &[oscost_figure::model::ResultRow]) -> Result<(), NotActed> {
        let counted = rows.iter().any(|r| r.counts.contains_key(&oscost_figure::model::Count::PerfContextSwitches));
        match self {
            Observer::Perf if !counted && !rows.is_empty() => Err(NotActed::new(NoCounter)),
            Observer::Perf | Observer::Trace => Ok(()),
        }
    }

    /// What the rows show of the observer.
    fn evidence(&self, rows: &[oscost_figure::model::ResultRow]) -> Vec<String> {
        let switches: f64 =
            rows.iter().filter_map(|r| r.counts.get(&oscost_figure::model::Count::PerfContextSwitches)).sum();
        match self {
            Observer::Perf if !rows.is_empty() => {
                vec![format!("per-task perf counters open: they counted {switches:.0} switches over the round's rows")]
            }
            Observer::Perf | Observer::Trace => Vec::new(),
        }
    }

    /// Starts watching for one round (the tracepoints); None for `perf`, which the
    /// worker attaches itself.
    fn watch(&self) -> Result<Option<Watching>, WatchError> {
        match self {
            Observer::Perf => Ok(None),
            Observer::Trace => Watching::start().map(Some),
        }
    }
}

/// No counter could be attached to the benchmark's tasks.
#[derive(Debug, thiserror::Error)]
#[error("observer:perf attaches to benchmarks of at most 4 tasks, and no counter could be attached here")]
struct NoCounter;

/// Why the trace observer could not watch a round.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    #[error("the trace observer's thread ended before it started")]
    ThreadEnded,
}

/// The tracepoints open and drained, until dropped.
pub struct Watching {
    stop: Arc<AtomicBool>,
    records: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How often the drain thread empties the buffers.
const DRAIN_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

impl Watching {
    fn start() -> Result<Self, WatchError> {
        let spec = crate::trace::prepare()?;
        let (stop, records) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let (tx, rx) = std::sync::mpsc::channel();
        let (s, r) = (stop.clone(), records.clone());
        let thread = std::thread::spawn(move || {
            use crate::trace::recorder::{BufferSizes, Recorder};
            let opened = Recorder::open(&spec, &spec.cpus, BufferSizes::streaming());
            let mut recorder = match opened.and_then(|mut rec| rec.enable().map(|()| rec)) {
                Ok(rec) => rec,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let _ = tx.send(Ok(()));
            let mut events = Vec::new();
            while !s.load(Ordering::SeqCst) {
                std::thread::sleep(DRAIN_EVERY);
                recorder.drain(&mut events);
                r.fetch_add(events.len() as u64, Ordering::SeqCst);
                events.clear();
            }
            recorder.disable();
        });
        match rx.recv() {
            Ok(Ok(())) => Ok(Watching { stop, records, thread: Some(thread) }),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(WatchError::ThreadEnded),
        }
    }

    /// Records drained so far.
    fn records(&self) -> u64 {
        self.records.load(Ordering::SeqCst)
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
