//! The switch costs a `live` profile takes from a stored run, read from the run's
//! document alone: `load.runqueue`'s yield rows at 2 tasks, threads and processes, and
//! `spawn.fork_exit`'s full cycle when the run has it. Here, above the families that
//! declare those rows, and not in the simulator, which knows no family.
//!
//! A switch row raised `intruded` (third tasks ran inside the hand-offs), `bimodal`
//! (its rounds disagree on how many switches a hand-off made) or `modes` (its rounds
//! sit at two levels) is not a switch cost: such a run is refused, and said so, and
//! the next one is tried; with none left the caller measures afresh.

use crate::bench::load::runqueue::{Design, point_key};
use crate::model::{FlagCode, ResultRow, RunDocument};
use crate::sim::cost::StoredSwitch;
use crate::tasks::Mode;

/// Flags that make a switch row unfit for a profile.
pub const REFUSED: [FlagCode; 3] = [FlagCode::Intruded, FlagCode::Bimodal, FlagCode::Modes];

/// Whether `r` is one of the switch rows a live profile takes (either mode).
fn is_switch_row(r: &ResultRow) -> bool {
    [Mode::Thread, Mode::Process].into_iter().any(|mode| {
        let key = point_key(2, mode, Design::Yield);
        // Both of the point's rows (batch and per-call) say whether the point is sound.
        r.benchmark == key.bench && r.params.includes(key.params())
    })
}

/// The switch rows of `doc` a live profile refuses, each with its flags and why.
pub fn refusals(doc: &RunDocument) -> Vec<String> {
    doc.results
        .iter()
        .filter(|r| is_switch_row(r))
        .filter_map(|r| {
            let why: Vec<String> = r
                .flags
                .iter()
                .filter(|f| REFUSED.contains(&f.flag))
                .map(|f| format!("{:?} ({})", f.flag, f.reason).to_lowercase())
                .collect();
            (!why.is_empty()).then(|| {
                format!(
                    "run #{}: load.runqueue yield, {} at 2 tasks: {}",
                    doc.run.id,
                    r.params.get(Mode::PARAM).unwrap_or_default(),
                    why.join("; ")
                )
            })
        })
        .collect()
}

/// The switch costs `doc` gives a live profile, or why it gives none: the refused
/// rows, or nothing (the run has no such rows).
pub fn usable_switch(doc: &RunDocument) -> Result<StoredSwitch, Vec<String>> {
    let refused = refusals(doc);
    if !refused.is_empty() {
        return Err(refused);
    }
    switch_of(doc).ok_or_else(Vec::new)
}

/// Whether a run's pair of switch rows contradict each other: a process switch is a
/// thread switch and an address-space change, so a thread row above its process row
/// beyond both intervals (and by more than a tenth) measured something else (a busy
/// machine, a hand-off that did not switch). Such a pair is taken only when no stored
/// run has a sound one, and its address-space change is then assumed, and said so.
fn inconsistent(thread: &ResultRow, process: &ResultRow) -> bool {
    thread.ci_low > process.ci_high && thread.median > 1.1 * process.median
}

/// The figures of a stored run: load.runqueue's yield rows at 2 tasks, threads and
/// processes (batch medians), and spawn.fork_exit's full cycle when present.
fn switch_of(doc: &RunDocument) -> Option<StoredSwitch> {
    let find = |key: crate::model::FigureKey| doc.results.iter().find(|r| r.carries(&key));
    let at_two = |mode: Mode| find(point_key(2, mode, Design::Yield));
    let fork = find(crate::bench::spawn::fork_exit_key());
    let (thread, process) = (at_two(Mode::Thread)?, at_two(Mode::Process)?);
    Some(StoredSwitch {
        run: doc.run.id,
        thread_ns: thread.median,
        process_ns: process.median,
        fork_exit_ns: fork.map(|r| r.median),
        inconsistent: inconsistent(thread, process),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flag, Method};

    fn doc(results: Vec<ResultRow>) -> RunDocument {
        RunDocument::for_tests(7, crate::machine::Machine::example(), results)
    }

    fn switch(mode: &str, ns: f64) -> ResultRow {
        ResultRow::from_samples("load.runqueue", Method::Batch, "ns/switch", vec![ns], 1)
            .unwrap()
            .with_param("design", "yield")
            .with_param("mode", mode)
            .with_param("tasks", 2u64)
    }

    #[test]
    fn an_intruded_or_bimodal_switch_row_is_refused_and_an_inconsistent_pair_marked() {
        let clean = doc(vec![switch("thread", 1000.0), switch("process", 1200.0)]);
        let s = usable_switch(&clean).unwrap();
        assert_eq!((s.thread_ns, s.process_ns), (1000.0, 1200.0));
        for code in REFUSED {
            let mut bad = switch("thread", 3950.0);
            bad.flag(Flag::new(code, "third tasks ran between wake-up and run"));
            let why = usable_switch(&doc(vec![bad, switch("process", 1200.0)])).unwrap_err();
            assert_eq!(why.len(), 1, "{why:?}");
            assert!(why[0].starts_with("run #7: load.runqueue yield, thread at 2 tasks: "), "{why:?}");
            assert!(why[0].contains(&format!("{code:?}").to_lowercase()), "{why:?}");
        }
        // A flag that says nothing against the figure does not refuse it.
        let mut noted = switch("thread", 1000.0);
        noted.flag(Flag::new(FlagCode::CoarseClock, "x"));
        assert!(usable_switch(&doc(vec![noted, switch("process", 1200.0)])).is_ok());
        // A thread switch three times its process switch, apart beyond both
        // intervals, is marked inconsistent; within them it is sound.
        let s = usable_switch(&doc(vec![switch("thread", 3600.0), switch("process", 1200.0)])).unwrap();
        assert!(s.inconsistent);
        let mut wide = switch("thread", 1250.0);
        wide.ci_low = 1100.0;
        assert!(!usable_switch(&doc(vec![wide, switch("process", 1200.0)])).unwrap().inconsistent);
        // No rows: nothing refused, nothing usable.
        assert_eq!(usable_switch(&doc(Vec::new())).unwrap_err(), Vec::<String>::new());
    }
}
