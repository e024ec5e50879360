//! Runs carried between databases and files: an export file imported (checked whole
//! before anything is written), runs pushed to another database, and where the HTML
//! report is written and what it holds. What is read from the user's files is bounded
//! and checked by `report::export`; where a file is written, by `files`.

use std::path::{Path, PathBuf};

use crate::model::{RunDocument, RunStatus, Skipped};
use crate::runs::sides::SideError;
use crate::store::{ImportFailure, Imported, RunFilter, Store, StoreError};

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("reading {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file's path breaks the rules a database path keeps (bad input).
    #[error("{0}; nothing was imported")]
    Unsafe(#[from] crate::files::UnsafePath),
    /// The file is not an export oscost takes (bad input).
    #[error("{}: {why}; nothing was imported", .path.display())]
    Refused { path: PathBuf, why: crate::report::import::ImportError },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Imports an export run by run inside one transaction (SQLite writes each as it is
/// read, so memory holds one run whatever the file's size); any problem imports nothing.
pub fn import(db: &Path, file: &Path) -> Result<Vec<Imported>, ImportError> {
    let open = || {
        crate::files::open_input(file).map_err(|e| match e {
            crate::files::UnsafePath::Io { path, cause } => ImportError::Read { path, source: cause },
            unsafe_path => ImportError::Unsafe(unsafe_path),
        })
    };
    let refused = |why: crate::report::import::ImportError| ImportError::Refused { path: file.to_path_buf(), why };
    // Into a database not there yet, the file is read once to check it, so a bad file
    // leaves no empty database behind; an existing one rolls back instead.
    if !crate::store::is_postgres(db) && !db.exists() {
        crate::report::import::read_runs(open()?, &crate::catalogue::producers::is_known, &mut |_, _| Ok(()))
            .map_err(refused)?;
    }
    let input = open()?;
    let mut store = Store::open(db)?;
    let mut read = |take: &mut dyn FnMut(_, _) -> Result<(), crate::report::import::Refusal>| {
        crate::report::import::read_runs(&input, &crate::catalogue::producers::is_known, take).map(drop)
    };
    store.import_each(&mut read).map_err(|e| match e {
        ImportFailure::Input(e) => refused(e),
        ImportFailure::Store(e) => ImportError::Store(e),
    })
}

/// What `import` says it did: the runs added, and those the database already held.
pub fn import_message(done: &[Imported]) -> String {
    let list = |added: bool| -> Vec<String> {
        done.iter().filter(|i| matches!(i, Imported::Added(_)) == added).map(|i| format!("#{}", i.id())).collect()
    };
    let (added, held) = (list(true), list(false));
    let mut msg = match added.len() {
        0 => "imported no run".to_string(),
        1 => format!("imported 1 run as {}", added[0]),
        n => format!("imported {n} runs as {}", added.join(", ")),
    };
    if !held.is_empty() {
        msg.push_str(&format!("; {} already here (same run UUID) as {}", held.len(), held.join(", ")));
    }
    msg
}

/// What a push did.
#[derive(Debug)]
pub struct Pushed {
    /// Runs the other database did not hold before.
    pub added: usize,
    /// Runs it already held (same run UUID).
    pub already: usize,
    /// Where they went (a password in it masked).
    pub location: String,
}

/// Copies runs (every run not still being measured, when `refs` is empty) into `to` in
/// one transaction (a push cut short leaves no part of a run there); a run still being
/// measured is left for a later push, said on standard error.
pub fn push(db: &Path, refs: &[String], to: &Path) -> Result<Pushed, SideError> {
    let store = Store::open_existing(db)?;
    let ids: Vec<i64> = if refs.is_empty() {
        store
            .list_runs(&RunFilter::default())?
            .into_iter()
            .rev()
            .filter(|l| l.status != RunStatus::Running)
            .map(|l| l.id)
            .collect()
    } else {
        refs.iter().map(|r| store.resolve(r).map_err(SideError::Reference)).collect::<Result<_, _>>()?
    };
    let mut runs = Vec::with_capacity(ids.len());
    for id in ids {
        let (doc, skipped) = store.load_run(id)?;
        if doc.run.status == RunStatus::Running {
            eprintln!("run #{id} is still running: not pushed (push it when it has finished)");
            continue;
        }
        runs.push((doc, skipped));
    }
    let mut remote = Store::open(to)?;
    let done = remote.import(&runs)?;
    let added = done.iter().filter(|i| matches!(i, Imported::Added(_))).count();
    Ok(Pushed { added, already: done.len() - added, location: remote.location() })
}

/// The file `report` writes when no `-o` is given.
pub const DEFAULT_REPORT: &str = "report.html";

/// Why the report's file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ReportPathError {
    #[error("{DEFAULT_REPORT} is already here: pass --force to replace it, or -o PATH to write elsewhere")]
    DefaultTaken,
    #[error(transparent)]
    Output(#[from] crate::files::BadOutput),
}

/// Whether an output path means standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Refuses an output path that is not `-`, a regular file or a new name (see
/// [`crate::files::check_output`]); checked before anything is read or measured.
pub fn check_output(path: &Path) -> Result<(), crate::files::BadOutput> {
    if is_stdout(path) { Ok(()) } else { crate::files::check_output(path) }
}

/// The file `report` writes: `-o` as given (replaced if it is there), else
/// [`DEFAULT_REPORT`], which is not replaced without `force` (a report written earlier
/// in this folder is not lost to a command that named no file).
pub fn report_output(output: Option<PathBuf>, force: bool) -> Result<PathBuf, ReportPathError> {
    let path = match output {
        Some(p) => p,
        None => {
            let p = PathBuf::from(DEFAULT_REPORT);
            if !force && std::fs::symlink_metadata(&p).is_ok() {
                return Err(ReportPathError::DefaultTaken);
            }
            p
        }
    };
    check_output(&path)?;
    Ok(path)
}

/// The HTML report of `docs`, read from `db`: one run alone; two compared; three or
/// more as a matrix, the first the baseline. Every run is a side of one run and takes
/// its machine's noise runs from `db`, as `compare` does.
pub fn report_html(db: &Path, docs: &[(RunDocument, Vec<Skipped>)]) -> String {
    use crate::report::{compare, html, matrix};
    let threshold = compare::DEFAULT_THRESHOLD;
    let compared = if docs.len() >= 2 { docs.len() } else { 0 };
    let noise: Vec<crate::judge::noise::RunNoise> = docs
        .iter()
        .take(compared)
        .map(|(d, _)| crate::runs::sides::machine_noise(db, std::slice::from_ref(d)))
        .collect();
    match (docs, &noise[..]) {
        (_, [_, _, _, ..]) => {
            let sides: Vec<Vec<RunDocument>> = docs.iter().map(|d| vec![d.0.clone()]).collect();
            let m = matrix::matrix(&sides, None, threshold, &noise, 2000);
            html::render_matrix(docs, &m, &crate::views::report_views())
        }
        ([a, b], [na, nb]) => {
            let rows = compare::compare_with(
                std::slice::from_ref(&a.0),
                std::slice::from_ref(&b.0),
                threshold,
                [na, nb],
                2000,
            );
            let between_runs = compare::between_runs_line(&rows, [na, nb]);
            let section = html::ComparisonSection { rows: &rows, between_runs };
            html::render(docs, Some(&section), &crate::views::report_views())
        }
        _ => html::render(docs, None, &crate::views::report_views()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_import_message_names_the_runs_added_and_held() {
        assert_eq!(import_message(&[]), "imported no run");
        assert_eq!(import_message(&[Imported::Added(4)]), "imported 1 run as #4");
        assert_eq!(
            import_message(&[Imported::Added(4), Imported::AlreadyHeld(2), Imported::Added(5)]),
            "imported 2 runs as #4, #5; 1 already here (same run UUID) as #2"
        );
    }

    #[test]
    fn a_bad_file_into_a_new_database_leaves_no_database() {
        let dir = tempfile::tempdir().unwrap();
        let (db, file) = (dir.path().join("new.db"), dir.path().join("bad.json"));
        std::fs::write(&file, b"{\"not\": \"an export\"}").unwrap();
        let err = import(&db, &file).unwrap_err();
        assert!(matches!(err, ImportError::Refused { .. }), "{err}");
        assert!(err.to_string().ends_with("; nothing was imported"), "{err}");
        assert!(!db.exists());
        let err = import(&db, &dir.path().join("absent.json")).unwrap_err();
        assert!(matches!(err, ImportError::Read { .. }), "{err}");
    }

    #[test]
    fn the_default_report_is_not_replaced_without_force() {
        let dir = tempfile::tempdir().unwrap();
        let given = dir.path().join("r.html");
        assert_eq!(report_output(Some(given.clone()), false).unwrap(), given);
        assert!(check_output(Path::new("-")).is_ok());
    }
}
