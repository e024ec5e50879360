//! The run as the store holds it: begun as this process's, each benchmark's merged
//! rows stored the moment its last round ends (or, after a stop, with the rounds it
//! has), and finished with the status the run earned. A run dropped unfinished is
//! marked `failed`, so no path (an error, a panic) leaves it `running`.

use std::path::Path;

use anyhow::{Context, Result};

use super::RunRequest;
use super::prepare::Setup;
use super::tally::{Progress, Tally, Unstored};
use crate::model::{ResultRow, RunStatus};
use crate::store::Store;
use crate::{machine, report, rounds, sys};

/// A run being recorded: marked `failed` when dropped unless finished (so an error
/// return or a panic never leaves it `running`).
pub(super) struct OpenRun {
    pub(super) store: Option<Store>,
    pub(super) id: i64,
    /// The database, to open again when the run's end cannot be written through the
    /// connection that failed (see [`mark_finished`]).
    pub(super) db: Option<std::path::PathBuf>,
}

impl OpenRun {
    pub(super) fn store(&mut self) -> &mut Store {
        self.store.as_mut().expect("the store stays until the run is finished")
    }

    pub(super) fn finish(mut self, status: RunStatus) -> Result<Store> {
        let store = self.store.take().expect("a run finishes once");
        Ok(mark_finished(store, self.db.as_deref(), self.id, status)?)
    }
}

impl Drop for OpenRun {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            let _ = mark_finished(store, self.db.as_deref(), self.id, RunStatus::Failed);
        }
    }
}

/// Writes how run `id` ended; the store to go on with. When a full disk (or a file-size
/// limit) made the store fail, the connection's write-ahead log may be what cannot
/// grow: the connection is closed (which folds the log into the database and removes
/// it) and the database opened again, where the one-row update fits. Else the run
/// would stay `running`, and read as `abandoned` once this process is gone, though
/// it failed.
pub(super) fn mark_finished(
    mut store: Store,
    db: Option<&Path>,
    id: i64,
    status: RunStatus,
) -> Result<Store, crate::store::StoreError> {
    let first = match store.finish_run(id, &report::now_rfc3339(), status) {
        Ok(()) => return Ok(store),
        Err(e) => e,
    };
    let Some(db) = db else { return Err(first) };
    drop(store);
    let mut again = Store::open(db).map_err(|_| first)?;
    again.finish_run(id, &report::now_rfc3339(), status)?;
    Ok(again)
}

/// What a run is begun as.
pub(super) struct Begin<'a> {
    pub(super) command_line: &'a str,
    pub(super) save: Option<String>,
    pub(super) kind: crate::model::RunKind,
}

/// The run begun in the store, owned by this process.
pub(super) fn begin(
    what: Begin<'_>,
    mut store: Store,
    machine: &machine::Machine,
    started_at: &str,
) -> Result<OpenRun> {
    let owner = crate::store::Owner::current();
    let start = crate::store::RunStart {
        started_at: started_at.to_string(),
        command_line: what.command_line.to_string(),
        save_name: what.save,
        uuid: crate::store::new_uuid(),
        kind: what.kind,
    };
    let id = store.begin_run(&start, machine, owner.as_ref())?;
    Ok(OpenRun { store: Some(store), id, db: None })
}

/// A run recorded rather than measured by the benchmarks (`observe`, `trace`, `sim`).
pub struct Recorded {
    pub run_id: i64,
    pub store: Store,
    /// The stop signal that ended the recording early, if one did.
    pub stopped_by: Option<i32>,
}

/// Records a run of `kind` with the lifecycle of a measured one: begun in the store
/// as this process's, filled with the rows `record` gives (and its other output,
/// handed back), finished `complete`, or `interrupted` by a stop signal; marked
/// `failed` on every early return, a failed recording included.
pub fn record<T, E: std::fmt::Display + std::fmt::Debug + Send + Sync + 'static>(
    db: &Path,
    kind: crate::model::RunKind,
    command_line: &str,
    record: impl FnOnce() -> Result<(Vec<ResultRow>, T), E>,
) -> Result<(Recorded, T)> {
    let store = Store::open(db)?;
    sys::install_interrupt_flag().context("installing the signal handlers")?;
    let machine = machine::fingerprint(command_line, None);
    let mut run = begin(Begin { command_line, save: None, kind }, store, &machine, &report::now_rfc3339())?;
    let (rows, other) = record().map_err(anyhow::Error::msg)?;
    let run_id = run.id;
    run.store().add_benchmark(run_id, &rows, &[])?;
    let stopped_by = sys::stop_signal();
    let store = run.finish(if stopped_by.is_some() { RunStatus::Interrupted } else { RunStatus::Complete })?;
    Ok((Recorded { run_id, store, stopped_by }, other))
}

/// Stores benchmark `i` once every arm of it has finished: the arms in order, so the
/// baseline's rows come first whatever order the last round ran them in.
pub(super) fn store_when_done(
    run: &mut OpenRun,
    setup: &Setup,
    tally: &mut Tally,
    i: usize,
    id: &crate::key::BenchId,
) -> Result<(), Unstored> {
    let arms = setup.arms.len();
    let slots = &mut tally.progress[i * arms..(i + 1) * arms];
    if slots.iter().any(|p| !p.finished) || slots.iter().all(|p| p.stored) {
        return Ok(());
    }
    for p in slots.iter_mut().filter(|p| !p.stored) {
        store_benchmark(run, p, id)?;
    }
    Ok(())
}

/// How the run ended: a store that failed or a failed benchmark fails it; a stop
/// signal interrupts it.
pub(super) fn final_status(storage_failed: bool, stopped: bool, benchmark_failed: bool) -> RunStatus {
    match (storage_failed, stopped) {
        (true, _) => RunStatus::Failed,
        (false, true) => RunStatus::Interrupted,
        // A benchmark that failed (not skipped) means the run did not do its job.
        (false, false) if benchmark_failed => RunStatus::Failed,
        (false, false) => RunStatus::Complete,
    }
}

/// The run marked finished with `status`; when the store fails again, whatever was
/// rescued is still said.
pub(super) fn finish(run: OpenRun, status: RunStatus, storage_error: Option<&str>) -> Result<Store> {
    run.finish(status).inspect_err(|_| {
        if let Some(m) = storage_error {
            eprintln!("error: {m}");
        }
    })
}

/// Merges a benchmark's rounds and stores the rows with its skips.
pub(super) fn store_benchmark(
    run: &mut OpenRun,
    p: &mut Progress,
    benchmark: &crate::key::BenchId,
) -> Result<(), Unstored> {
    p.stored = true;
    let rows = rounds::merge(&p.rounds);
    let id = run.id;
    run.store().add_benchmark(id, &rows, &p.skipped).map_err(|e| Unstored {
        benchmark: benchmark.clone(),
        rows,
        skipped: p.skipped.clone(),
        error: Some(e.to_string()),
    })
}

/// A stop or a store failure leaves benchmarks with some of their rounds: each is
/// merged and stored, or, once the store has failed, set aside for the rescue file.
pub(super) fn keep_unfinished(
    run: &mut OpenRun,
    req: &RunRequest,
    progress: &mut [Progress],
    unstored: &mut Vec<Unstored>,
) {
    let arms = progress.len() / req.selected.len().max(1);
    for (slot, p) in progress.iter_mut().enumerate() {
        if p.stored || (p.rounds.is_empty() && p.skipped.is_empty()) {
            continue;
        }
        let benchmark = &req.selected[slot / arms.max(1)].0.id;
        if unstored.is_empty() {
            if let Err(e) = store_benchmark(run, p, benchmark) {
                unstored.push(e);
            }
        } else {
            p.stored = true;
            unstored.push(Unstored {
                benchmark: benchmark.clone(),
                rows: rounds::merge(&p.rounds),
                skipped: p.skipped.clone(),
                error: None,
            });
        }
    }
}
