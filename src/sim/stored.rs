//! The cost profiles a simulation takes from a database: `live` from the newest stored
//! run that measured this machine's thread and process switch (`load.runqueue` yield
//! rows at 2 tasks), and `live@RUN` from a stored simulation, which carries the
//! profile it ran under (a suite's run carries two, and `live@RUN` replays its live
//! one). Only reads: nothing here measures or writes.
//!
//! A switch row raised `intruded` (third tasks ran inside the hand-offs), `bimodal`
//! (its rounds disagree on how many switches a hand-off made) or `modes` (its rounds
//! sit at two levels) is not a switch cost: such a run is refused, and said so, and
//! the next one is tried; with none left the caller measures afresh.

use std::path::Path;

use super::CostProfile;
use super::cost::StoredSwitch;
use crate::model::{FlagCode, ResultRow, RunDocument};
use crate::store::{RunFilter, Store, StoreError};

/// Flags that make a switch row unfit for a profile.
pub const REFUSED: [FlagCode; 3] = [FlagCode::Intruded, FlagCode::Bimodal, FlagCode::Modes];

/// Whether `r` is one of the switch rows a live profile takes.
fn is_switch_row(r: &ResultRow) -> bool {
    r.benchmark == "load.runqueue"
        && r.param_str("design") == "yield"
        && r.params.get("tasks").and_then(|v| v.as_u64()) == Some(2)
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
                    r.param_str("mode"),
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
    StoredSwitch::from_run(doc).ok_or_else(Vec::new)
}

/// The profile a stored simulation ran under: its live one when it has one (a suite's
/// run simulates under its period profile and live), else its first.
pub fn profile_in(doc: &RunDocument) -> Option<CostProfile> {
    let live = "profile live";
    doc.results
        .iter()
        .filter(|r| r.param_str(super::run::SIMULATED_PARAM) == live)
        .find_map(super::run::profile_of)
        .or_else(|| doc.results.iter().find_map(super::run::profile_of))
}

/// Why no stored profile could be had.
#[derive(Debug, thiserror::Error)]
pub enum StoredProfileError {
    #[error("{0} holds no runs")]
    NoDatabase(String),
    #[error("no run in {0} has them")]
    NoRunHasThem(String),
    #[error("every run in {db} that has them was refused: {}", refused.join("; "))]
    Refused { db: String, refused: Vec<String> },
    #[error("run #{0} is not a simulation: it carries no cost profile")]
    NotASimulation(i64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The switch costs of the newest run in `db` that has them.
pub fn switch_costs(db: &Path) -> Result<StoredSwitch, StoredProfileError> {
    if !db.exists() && !crate::store::is_postgres(db) {
        return Err(StoredProfileError::NoDatabase(db.display().to_string()));
    }
    let store = Store::open(db)?;
    let filter = RunFilter { benchmark: Some("load.runqueue".into()), ..Default::default() };
    let mut refused = Vec::new();
    for listing in store.list_runs(&filter)? {
        let (doc, _) = store.load_run(listing.id)?;
        match usable_switch(&doc) {
            Ok(s) => return Ok(s),
            Err(why) => refused.extend(why),
        }
    }
    if refused.is_empty() {
        Err(StoredProfileError::NoRunHasThem(db.display().to_string()))
    } else {
        Err(StoredProfileError::Refused { db: db.display().to_string(), refused })
    }
}

/// The profile stored simulation `run` ran under.
pub fn profile_of_run(db: &Path, run: i64) -> Result<CostProfile, StoredProfileError> {
    let store = Store::open_existing(db)?;
    let (doc, _) = store.load_run(run)?;
    profile_in(&doc).ok_or(StoredProfileError::NotASimulation(run))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flag, Method};

    fn doc(results: Vec<ResultRow>) -> RunDocument {
        RunDocument {
            schema_version: 1,
            run: crate::model::RunInfo {
                id: 7,
                started_at: "t".into(),
                command_line: "c".into(),
                save_name: None,
                status: crate::model::RunStatus::Complete,
                uuid: None,
                kind: crate::model::RunKind::Measure,
            },
            machine: crate::machine::Machine::example(),
            results,
        }
    }

    fn switch(mode: &str, ns: f64) -> ResultRow {
        ResultRow::from_samples("load.runqueue", Method::Batch, "ns/switch", vec![ns], 1)
            .unwrap()
            .with_param("design", "yield")
            .with_param("mode", mode)
            .with_param("tasks", 2u64)
    }

    #[test]
    fn an_intruded_or_bimodal_switch_row_is_refused_and_said() {
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
        // No rows: nothing refused, nothing usable.
        assert_eq!(usable_switch(&doc(Vec::new())).unwrap_err(), Vec::<String>::new());
    }

    #[test]
    fn a_suite_run_replays_its_live_profile() {
        let p =
            crate::sim::workload::Params::new(crate::sim::PolicyKind::Linux20, crate::sim::WorkloadKind::Travis, 1, 2);
        let period = crate::sim::cost::pentium200().unwrap();
        let mut live = crate::sim::cost::unit_profile();
        live.name = "live".into();
        let mut rows = crate::sim::run::simulate_rows(&p, &period);
        rows.extend(crate::sim::run::simulate_rows(&p, &live));
        assert_eq!(profile_in(&doc(rows)), Some(live));
        // A run of one profile replays that one.
        let only = doc(crate::sim::run::simulate_rows(&p, &period));
        assert_eq!(profile_in(&only), Some(period));
        assert_eq!(profile_in(&doc(Vec::new())), None);
    }
}
