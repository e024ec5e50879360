//! The cost profiles a simulation takes from a database: `live` from the newest stored
//! run that measured this machine's thread and process switch (`load.runqueue` yield
//! rows at 2 tasks), and `live@RUN` from a stored simulation, which carries the
//! profile it ran under. Only reads: nothing here measures or writes.

use std::path::Path;

use super::CostProfile;
use super::cost::StoredSwitch;
use crate::store::{RunFilter, Store, StoreError};

/// Why no stored profile could be had.
#[derive(Debug, thiserror::Error)]
pub enum StoredProfileError {
    #[error("{0} holds no runs")]
    NoDatabase(String),
    #[error("no run in {0} has them")]
    NoRunHasThem(String),
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
    for listing in store.list_runs(&filter)? {
        let (doc, _) = store.load_run(listing.id)?;
        if let Some(s) = StoredSwitch::from_run(&doc) {
            return Ok(s);
        }
    }
    Err(StoredProfileError::NoRunHasThem(db.display().to_string()))
}

/// The profile stored simulation `run` ran under.
pub fn profile_of_run(db: &Path, run: i64) -> Result<CostProfile, StoredProfileError> {
    let store = Store::open_existing(db)?;
    let (doc, _) = store.load_run(run)?;
    doc.results.iter().find_map(super::run::profile_of).ok_or(StoredProfileError::NotASimulation(run))
}
