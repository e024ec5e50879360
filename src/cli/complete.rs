//! Dynamic shell completion (clap_complete's engine): the shell asks the binary, so
//! benchmark ids, families, suites and the runs stored in the database are offered
//! where they belong, not file names. Enabled by `source <(COMPLETE=bash oscost)`
//! (zsh, fish, elvish and powershell alike); `oscost completions SHELL` keeps the
//! static scripts, which need no callback but know no stored run.

use clap_complete::engine::CompletionCandidate;
use std::ffi::OsStr;

/// The candidates among `(value, help)` that start with what was typed.
fn matching(current: &OsStr, all: impl IntoIterator<Item = (String, String)>) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    all.into_iter()
        .filter(|(v, _)| v.starts_with(typed.as_ref()))
        .map(|(v, help)| CompletionCandidate::new(v).help(Some(help.into())))
        .collect()
}

/// What `run` accepts: benchmark ids, families and `all`.
pub fn benchmarks(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut all: Vec<(String, String)> = vec![("all".into(), "every benchmark".into())];
    for b in crate::bench::registry() {
        let family = b.family.name().to_string();
        if !all.iter().any(|(v, _)| *v == family) {
            all.push((family.clone(), format!("the {family} family")));
        }
        all.push((b.id.to_string(), b.summary.to_string()));
    }
    matching(current, all)
}

/// The suites `run --suite` and `show --suite` know.
pub fn suites(current: &OsStr) -> Vec<CompletionCandidate> {
    matching(current, crate::views::suites::SUITES.iter().map(|s| (s.name.to_string(), s.summary.to_string())))
}

/// `latest` and every run of the database `--db` would default to ($OSCOST_DB, else
/// the default file), by id and by saved name; nothing is created or migrated.
pub fn runs(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut all = vec![("latest".to_string(), "the newest run".to_string())];
    all.extend(stored_runs());
    matching(current, all)
}

/// The stored runs as completions, newest first; none when there is no SQLite
/// database to read (a PostgreSQL URL is not dialled from a shell's tab key). The
/// file is opened as every database is (`files::resolve_db`): a link planted by
/// another user, or a database of theirs, offers nothing.
fn stored_runs() -> Vec<(String, String)> {
    let db = match std::env::var_os("OSCOST_DB") {
        Some(p) => std::path::PathBuf::from(p),
        None => match crate::store::default_location() {
            Some((_, db)) => db,
            None => return Vec::new(),
        },
    };
    if db.to_string_lossy().contains("://") {
        return Vec::new();
    }
    let Ok(store) = crate::store::Store::open_existing(&db) else { return Vec::new() };
    let Ok(listed) = store.list_runs(&crate::store::RunFilter::default()) else { return Vec::new() };
    let mut out = Vec::new();
    for r in listed.iter().rev() {
        let what = format!("{} on {}, {} results", r.started_at, r.hostname, r.results);
        if let Some(name) = &r.save_name {
            out.push((name.clone(), format!("run #{}, {what}", r.id)));
        }
        out.push((r.id.to_string(), what));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benchmark_ids_and_families_complete_by_prefix() {
        let values = |typed: &str| -> Vec<String> {
            benchmarks(OsStr::new(typed)).iter().map(|c| c.get_value().to_string_lossy().into_owned()).collect()
        };
        let sys = values("syscall.getp");
        assert!(sys.contains(&"syscall.getppid".to_string()) && sys.iter().all(|v| v.starts_with("syscall.getp")));
        assert!(values("").contains(&"ctx".to_string()) && values("").contains(&"all".to_string()));
        assert!(values("zzz").is_empty());
        let s: Vec<String> = suites(OsStr::new("tra")).iter().map(|c| c.get_value().to_string_lossy().into()).collect();
        assert_eq!(s, vec!["travis98".to_string()]);
    }
}
