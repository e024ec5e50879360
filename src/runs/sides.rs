//! The runs a command reads, named the way the user names them: a run reference
//! (`latest`, an id, a saved name), a side of a comparison (`1,2,3` pooled, `REFS@PATH`
//! from another database), or every run grouped by host; each side's machine noise
//! from the database it was read from; and which compared figures `--fail-on` fails.
//! Kept apart from the command line so that tests reach every rule it applies.

use std::path::{Path, PathBuf};

use crate::judge::noise::RunNoise;
use crate::model::{Method, ResultRow, RunDocument, RunStatus, Skipped};
use crate::report::compare::{Comparison, FailOn};
use crate::store::{RunFilter, Store, StoreError};

/// Why the runs asked for cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    /// A reference that names no run in its database.
    #[error(transparent)]
    Reference(StoreError),
    #[error("{0:?}: a side is runs separated by commas, as in 1,2,3")]
    BadSide(String),
    #[error("compare needs two sides or more (A B …), or --baseline NAME and at most one more, or --by host")]
    TooFew,
    #[error("--by host needs runs of two hosts or more; found {0}")]
    FewHosts(usize),
    /// The database itself could not be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SideError {
    /// Whether what the user named is at fault (bad usage), not the database.
    pub fn is_usage(&self) -> bool {
        !matches!(self, SideError::Store(_))
    }
}

/// A run by reference, with the benchmarks it skipped.
pub fn load(store: &Store, reference: &str) -> Result<(RunDocument, Vec<Skipped>), SideError> {
    let id = store.resolve(reference).map_err(SideError::Reference)?;
    Ok(store.load_run(id)?)
}

/// Every referenced run (the latest when none is named).
pub fn load_all(store: &Store, refs: &[String]) -> Result<Vec<(RunDocument, Vec<Skipped>)>, SideError> {
    if refs.is_empty() {
        return Ok(vec![load(store, "latest")?]);
    }
    refs.iter().map(|r| load(store, r)).collect()
}

/// One side of a comparison: a run, or runs separated by commas (`1,2,3`), pooled.
pub fn load_side(store: &Store, refs: &str) -> Result<Vec<RunDocument>, SideError> {
    let parts: Vec<&str> = refs.split(',').map(str::trim).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(SideError::BadSide(refs.to_string()));
    }
    parts.into_iter().map(|r| Ok(load(store, r)?.0)).collect()
}

/// A side's run references and the database they are in: `REFS@PATH`, or `REFS` in
/// `default_db`.
pub fn side_location<'a>(default_db: &'a Path, side: &'a str) -> (&'a str, &'a Path) {
    match side.rsplit_once('@') {
        Some((refs, path)) if !path.is_empty() => (refs, Path::new(path)),
        _ => (side, default_db),
    }
}

/// A side given as `REFS` or `REFS@PATH` (another database), read.
pub fn load_side_at(default_db: &Path, side: &str) -> Result<Vec<RunDocument>, SideError> {
    let (refs, path) = side_location(default_db, side);
    load_side(&Store::open_existing(path)?, refs)
}

/// The sides of a comparison: their runs, their names where they are not the runs'
/// own, and the database each was read from (whose noise runs it takes).
pub struct Sides {
    pub runs: Vec<Vec<RunDocument>>,
    pub names: Option<Vec<String>>,
    pub dbs: Vec<PathBuf>,
}

/// The side references of `compare`: `--baseline NAME` first (then `latest` when no
/// other side is given), then the sides named.
pub fn side_refs(mut sides: Vec<String>, baseline: Option<String>) -> Vec<String> {
    if let Some(name) = baseline {
        if sides.is_empty() {
            sides.push("latest".into());
        }
        sides.insert(0, name);
    }
    sides
}

/// The sides `refs` name, the first read from `db`, the others from `db_b` where given
/// (a side's own `@PATH` first); with `by_host`, the runs regrouped one side per host.
pub fn sides(db: &Path, db_b: Option<&Path>, refs: &[String], by_host: bool) -> Result<Sides, SideError> {
    if by_host {
        return self::by_host(db, db_b, refs);
    }
    if refs.len() < 2 {
        return Err(SideError::TooFew);
    }
    let side_db = |i: usize| if i == 0 { db } else { db_b.unwrap_or(db) };
    let dbs = refs.iter().enumerate().map(|(i, r)| side_location(side_db(i), r).1.to_path_buf()).collect();
    let runs = refs.iter().enumerate().map(|(i, r)| load_side_at(side_db(i), r)).collect::<Result<Vec<_>, _>>()?;
    Ok(Sides { runs, names: None, dbs })
}

/// Every run given (or every complete run of the databases), one side per host, in
/// the order the hosts first appear; each side's name is its host, and its database
/// the one its first run came from.
pub fn by_host(db: &Path, db_b: Option<&Path>, refs: &[String]) -> Result<Sides, SideError> {
    let mut runs: Vec<(RunDocument, &Path)> = Vec::new();
    if refs.is_empty() {
        for path in std::iter::once(db).chain(db_b) {
            let store = Store::open_existing(path)?;
            for l in
                store.list_runs(&RunFilter::default())?.into_iter().rev().filter(|l| l.status == RunStatus::Complete)
            {
                runs.push((store.load_run(l.id)?.0, path));
            }
        }
    } else {
        for (i, r) in refs.iter().enumerate() {
            let (refs, path) = side_location(if i == 0 { db } else { db_b.unwrap_or(db) }, r);
            runs.extend(load_side(&Store::open_existing(path)?, refs)?.into_iter().map(|d| (d, path)));
        }
    }
    let mut hosts: Vec<String> = Vec::new();
    let mut sides: Vec<Vec<RunDocument>> = Vec::new();
    let mut dbs: Vec<PathBuf> = Vec::new();
    for (d, path) in runs {
        match hosts.iter().position(|h| *h == d.machine.hostname) {
            Some(i) => sides[i].push(d),
            None => {
                hosts.push(d.machine.hostname.clone());
                sides.push(vec![d]);
                dbs.push(path.to_path_buf());
            }
        }
    }
    if sides.len() < 2 {
        return Err(SideError::FewHosts(hosts.len()));
    }
    let names = hosts.iter().map(|h| crate::report::plain(h).into_owned()).collect();
    Ok(Sides { runs: sides, names: Some(names), dbs })
}

/// Each figure's between-run spread from the noise runs (`oscost noise`) in `db` of the
/// machine of `side`'s first run (its comparability key). Noise runs that cannot be
/// read leave the side without them, with a warning: the comparison still stands on
/// what the runs themselves show.
pub fn machine_noise(db: &Path, side: &[RunDocument]) -> RunNoise {
    let Some(first) = side.first() else { return RunNoise::none() };
    let read = Store::open_existing(db)
        .and_then(|store| crate::session::machine_noise(&store, &first.machine.comparability_key()));
    read.unwrap_or_else(|e| {
        // Its causes too, as the command line prints an error.
        let e = anyhow::Error::from(e);
        eprintln!(
            "warning: the noise runs in {} could not be read ({e:#}); run #{}'s side is compared without its machine's spread between runs",
            db.display(),
            first.run.id
        );
        RunNoise::none()
    })
}

/// What `--fail-on` found in a comparison: the lines to say (figures a flag kept from
/// being judged, figures that fail) and whether any figure fails.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Gate {
    pub lines: Vec<String>,
    pub failed: bool,
}

/// Judges the compared figures with `--fail-on` (nothing fails without it).
pub fn gate<'a>(compared: impl IntoIterator<Item = &'a Comparison>, fail_on: Option<FailOn>) -> Gate {
    let Some(on) = fail_on else { return Gate::default() };
    let compared: Vec<&Comparison> = compared.into_iter().collect();
    let name = |c: &&Comparison| format!("{} {} ({})", c.key.bench, c.key.variant(), c.verdict);
    let mut lines = Vec::new();
    let withheld = crate::report::compare::withheld(compared.iter().copied());
    if !withheld.is_empty() {
        let names: Vec<String> = withheld.iter().map(name).collect();
        lines.push(format!(
            "--fail-on: {} figure(s) not judged, a flag doubts them: {}",
            withheld.len(),
            names.join(", ")
        ));
    }
    let failing = crate::report::compare::failing(compared, on);
    if !failing.is_empty() {
        let names: Vec<String> = failing.iter().map(name).collect();
        let on = format!("{on:?}").to_lowercase();
        lines.push(format!("--fail-on {on}: {} figure(s) fail: {}", failing.len(), names.join(", ")));
    }
    Gate { lines, failed: !failing.is_empty() }
}

/// Why `show --histogram ROW` names no one row.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    #[error("run #{run} has no row with samples that matches '{spec}'")]
    NoMatch { run: i64, spec: String },
    #[error("'{spec}' matches {} rows: {}; name more parameters", .names.len(), .names.join(", "))]
    Several { spec: String, names: Vec<String> },
}

/// The one row with samples that `spec` names in `doc` (its benchmark id, then any of
/// its `key=value` parameters), a per-call row before any other.
pub fn named_row<'a>(doc: &'a RunDocument, spec: &str) -> Result<&'a ResultRow, RowError> {
    let mut words = spec.split_whitespace();
    let id = words.next().unwrap_or_default();
    let want: Vec<&str> = words.collect();
    let matching: Vec<&ResultRow> = doc
        .results
        .iter()
        .filter(|r| r.benchmark == id && !r.samples.is_empty())
        .filter(|r| want.iter().all(|w| r.variant_params().iter().any(|p| p == w)))
        .collect();
    let per_call: Vec<_> = matching.iter().copied().filter(|r| r.method == Method::PerCall).collect();
    let chosen = if per_call.is_empty() { matching } else { per_call };
    match chosen.as_slice() {
        [r] => Ok(r),
        [] => Err(RowError::NoMatch { run: doc.run.id, spec: spec.to_string() }),
        many => Err(RowError::Several {
            spec: spec.to_string(),
            names: many.iter().map(|r| format!("'{} {}'", r.benchmark, r.variant_label())).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_is_runs_separated_by_commas_in_a_database_it_may_name() {
        let db = Path::new("main.db");
        assert_eq!(side_location(db, "1,2"), ("1,2", db));
        assert_eq!(side_location(db, "3@other.db"), ("3", Path::new("other.db")));
        assert_eq!(side_location(db, "name@"), ("name@", db), "an empty path names no database");
        assert_eq!(side_refs(vec![], Some("base".into())), ["base", "latest"]);
        assert_eq!(side_refs(vec!["4".into()], Some("base".into())), ["base", "4"]);
        assert_eq!(side_refs(vec!["1".into(), "2".into()], None), ["1", "2"]);
    }

    #[test]
    fn too_few_sides_and_empty_parts_are_bad_usage_before_any_database_is_read() {
        let db = Path::new("/nonexistent/oscost.db");
        let err = sides(db, None, &["1".into()], false).err().unwrap();
        assert!(err.is_usage() && matches!(err, SideError::TooFew), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("r.db")).unwrap();
        let err = load_side(&store, "1,,2").unwrap_err();
        assert!(err.is_usage() && err.to_string().contains("a side is runs separated by commas"), "{err}");
        let err = load(&store, "latest").unwrap_err();
        assert!(err.is_usage(), "an empty database has no latest run: {err}");
    }

    #[test]
    fn a_row_is_named_by_its_id_and_parameters_and_only_rows_with_samples_count() {
        let doc = RunDocument::for_tests(3, crate::machine::Machine::example(), Vec::new());
        let err = named_row(&doc, "ctx.pipe mode=thread").unwrap_err();
        assert_eq!(err.to_string(), "run #3 has no row with samples that matches 'ctx.pipe mode=thread'");
    }

    #[test]
    fn without_fail_on_nothing_fails() {
        assert_eq!(gate(std::iter::empty(), None), Gate::default());
        assert_eq!(gate(std::iter::empty(), Some(FailOn::Slower { by: None })), Gate::default());
    }
}
