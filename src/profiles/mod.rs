//! The simulator's profiles from a results database: `live` from the newest stored
//! run that measured this machine's thread and process switch (`load.runqueue` yield
//! rows at 2 tasks), measured now in a child oscost when none has them and the caller
//! allows it, and `live@RUN` from a stored simulation, which carries the profile it
//! ran under; the machine's own figures are measured here
//! ([`crate::profiles::probes`]). A profile fitted by simulating (smp2002: seconds of
//! CPU) is fitted once per build: the stored simulations carry it, stamped with the
//! build that fitted it, and the next command of that build takes it from there. The
//! simulator sees only the [`ProfileSource`] this is.

pub mod probes;
pub mod switch;

use std::path::Path;

use crate::sim::CostProfile;
use crate::sim::cost::StoredSwitch;
use crate::sim::profile_source::{ProfileSource, SourceError};
use crate::store::{RunFilter, Store, StoreError};

/// Why no stored profile could be had.
#[derive(Debug, thiserror::Error)]
pub enum StoredProfileError {
    #[error("{0} holds no runs")]
    NoDatabase(String),
    #[error("no run in {0} has them")]
    NoRunHasThem(String),
    #[error("every run in {db} that has them was refused: {}", refused.join("; "))]
    Refused { db: String, refused: Vec<String> },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why measuring the switch costs failed.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("the switch costs are only read here, not measured")]
    NotAllowed,
    #[error("finding oscost's own executable")]
    OwnExecutable(#[source] std::io::Error),
    #[error("running the switch measurement")]
    Start(#[source] std::io::Error),
    #[error("measuring the switch costs failed ({0})")]
    Failed(std::process::ExitStatus),
}

/// The switch costs of the newest run in `db` that has them.
pub fn switch_costs(db: &Path) -> Result<StoredSwitch, StoredProfileError> {
    if !db.exists() && !crate::store::is_postgres(db) {
        return Err(StoredProfileError::NoDatabase(db.display().to_string()));
    }
    newest_switch(&Store::open(db)?)
}

/// The switch costs of the newest run in `store` that has them.
fn newest_switch(store: &Store) -> Result<StoredSwitch, StoredProfileError> {
    let db = store.location();
    let filter = RunFilter { benchmark: Some(crate::bench::load::runqueue::ID), ..Default::default() };
    let mut refused = Vec::new();
    let mut inconsistent = None;
    for listing in store.list_runs(&filter)? {
        let (doc, _) = store.load_run(listing.id)?;
        match switch::usable_switch(&doc) {
            Ok(s) if !s.inconsistent => return Ok(s),
            // Passed over for a sound pair further back; the newest taken if none is.
            Ok(s) => {
                inconsistent.get_or_insert(s);
            }
            Err(why) => refused.extend(why),
        }
    }
    if let Some(s) = inconsistent {
        return Ok(s);
    }
    if refused.is_empty() {
        Err(StoredProfileError::NoRunHasThem(db))
    } else {
        Err(StoredProfileError::Refused { db, refused })
    }
}

/// The profile stored run `run` in `db` ran under; `None` when it is not a simulation.
pub fn profile_of_run(db: &Path, run: i64) -> Result<Option<CostProfile>, StoredProfileError> {
    profile_in_store(&Store::open_existing(db)?, run)
}

/// The profile stored run `run` in `store` ran under; `None` when it is not a
/// simulation.
fn profile_in_store(store: &Store, run: i64) -> Result<Option<CostProfile>, StoredProfileError> {
    let (doc, _) = store.load_run(run)?;
    Ok(crate::sim::stored::profile_in(&doc))
}

/// This build of oscost: its version and its executable's size, modification time and
/// inode. A rebuild changes the time, so no fit made by one build is reused by another
/// whose simulator may fit another value.
pub fn build_identity() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let exe = std::fs::metadata(std::env::current_exe().ok()?).ok()?;
    Some(format!(
        "oscost {} ({} bytes, modified {}.{:09}, inode {})",
        env!("CARGO_PKG_VERSION"),
        exe.len(),
        exe.mtime(),
        exe.mtime_nsec(),
        exe.ino()
    ))
}

/// The newest stored runs holding simulated rows searched for a kept fit.
const FIT_RUNS_READ: usize = 10;

/// The newest stored profile named `name` fitted by `build`, and the run that holds it.
fn fit_in_store(store: &Store, name: &str, build: &str) -> Result<Option<(i64, CostProfile)>, StoredProfileError> {
    let filter = RunFilter { benchmark: Some(crate::key::BenchId::stored("sim")), ..Default::default() };
    let mut listed = store.list_runs(&filter)?;
    listed.sort_by_key(|l| std::cmp::Reverse(l.id));
    for listing in listed.iter().take(FIT_RUNS_READ) {
        let (doc, _) = store.load_run(listing.id)?;
        let same = |p: &CostProfile| p.name == name && p.fitted_by.as_deref() == Some(build);
        if let Some(p) = doc.results.iter().filter_map(crate::sim::run::profile_of).find(same) {
            return Ok(Some((listing.id, p)));
        }
    }
    Ok(None)
}

/// The switch measurement a `live` profile runs when no stored run has the figures.
const MEASURE_ARGS: [&str; 8] = ["run", "load.runqueue", "--tasks", "2", "--rounds", "3", "--quick", "--no-trace"];

/// Measures the switch costs now: a run of `load.runqueue` at 2 tasks in a child
/// oscost (this executable), stored in `db` like any run.
fn measure_into(db: &Path, why: &StoredProfileError) -> Result<(), MeasureError> {
    eprintln!(
        "the live profile needs this machine's thread and process switch: {why}, so measuring them now (oscost {} --db {})",
        MEASURE_ARGS.join(" "),
        db.display()
    );
    let exe = std::env::current_exe().map_err(MeasureError::OwnExecutable)?;
    let status = std::process::Command::new(exe)
        .args(MEASURE_ARGS)
        .arg("--db")
        .arg(db)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(MeasureError::Start)?;
    if !status.success() {
        return Err(MeasureError::Failed(status));
    }
    Ok(())
}

/// A database as the simulator's profile source: one it opens at each question (and
/// may measure into), or one already open (a run's own store, handed down).
pub enum StoredProfiles<'a> {
    /// Reads the database at this path only: a `live` profile without stored switch
    /// costs is refused.
    Reading(&'a Path),
    /// Reads it, and measures the switch costs into it when no run there has them
    /// (this executable must be oscost).
    Measuring(&'a Path),
    /// Reads this store, already open, only.
    Open(&'a Store),
}

impl ProfileSource for StoredProfiles<'_> {
    fn stored_switch(&self) -> Result<StoredSwitch, SourceError> {
        Ok(match *self {
            Self::Reading(db) | Self::Measuring(db) => switch_costs(db)?,
            Self::Open(store) => newest_switch(store)?,
        })
    }

    fn measure_switch(&self) -> Result<StoredSwitch, SourceError> {
        let Self::Measuring(db) = *self else { return Err(MeasureError::NotAllowed.into()) };
        if let Err(why) = switch_costs(db) {
            measure_into(db, &why)?;
        }
        Ok(switch_costs(db)?)
    }

    fn profile_of_run(&self, run: i64) -> Result<Option<CostProfile>, SourceError> {
        Ok(match *self {
            Self::Reading(db) | Self::Measuring(db) => profile_of_run(db, run)?,
            Self::Open(store) => profile_in_store(store, run)?,
        })
    }

    fn machine_probes(&self) -> crate::sim::cost::MachineProbes {
        crate::profiles::probes::probe()
    }

    fn build(&self) -> Option<String> {
        build_identity()
    }

    fn stored_fit(&self, name: &str, build: &str) -> Option<CostProfile> {
        let found = match *self {
            Self::Reading(db) | Self::Measuring(db) => {
                Store::open_existing(db).map_err(StoredProfileError::from).and_then(|s| fit_in_store(&s, name, build))
            }
            Self::Open(store) => fit_in_store(store, name, build),
        };
        // A database that cannot be read is no reason to refuse the profile: fitted again.
        let (run, profile) = found.ok().flatten()?;
        eprintln!("the {name} profile: the fit this build stored with run #{run}, reused");
        Some(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_fit_is_found_only_under_its_own_name_and_build() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("fits.db")).unwrap();
        let keep = |store: &mut Store, name: &str, build: &str| {
            let profile =
                CostProfile { name: name.into(), fitted_by: Some(build.into()), ..crate::sim::cost::smp2002_assumed() };
            let mut row = crate::sim::run::value_row("sim.loop_yield", crate::unit::Unit::SwitchesPerSecond, 1.0);
            row.params.set(crate::sim::run::PROFILE, serde_json::to_value(&profile).unwrap());
            let start = crate::store::RunStart {
                started_at: "2026-01-01T00:00:00Z".into(),
                command_line: "oscost sim".into(),
                save_name: None,
                uuid: format!("{name} {build}"),
                kind: crate::model::RunKind::Sim,
            };
            let id = store.begin_run(&start, &crate::machine::Machine::example(), None).unwrap();
            store.add_benchmark(id, &[row], &[]).unwrap();
            id
        };
        let ours = keep(&mut store, "smp2002", "build A");
        keep(&mut store, "smp2002", "build B");
        keep(&mut store, "pentium200", "build A");
        let found = fit_in_store(&store, "smp2002", "build A").unwrap().map(|(run, p)| (run, p.fitted_by));
        assert_eq!(found, Some((ours, Some("build A".into()))));
        assert!(fit_in_store(&store, "smp2002", "build C").unwrap().is_none());
        assert!(fit_in_store(&store, "live", "build A").unwrap().is_none());
    }

    #[test]
    fn a_database_not_there_has_no_costs_and_reading_never_measures() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("none.db");
        let source = StoredProfiles::Reading(&db);
        assert!(source.stored_switch().unwrap_err().to_string().contains("holds no runs"));
        assert!(matches!(
            source.measure_switch().unwrap_err().downcast_ref::<MeasureError>(),
            Some(MeasureError::NotAllowed)
        ));
        assert!(!db.exists(), "reading created no database");
    }
}
