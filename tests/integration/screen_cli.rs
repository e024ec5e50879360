//! What a user reads at the terminal fits it: a default run on one screen at 100
//! columns, and no line of any command wider than the terminal at 80 and 100 columns
//! (`COLUMNS`, as a terminal of that size sets it); compare of one machine states it
//! in one line, with no fingerprint table.

use crate::common;
use common::*;

/// The output of `oscost ARGS --db DB` at `columns`, standard output and error.
fn at(columns: u16, args: &[&str], db: &std::path::Path) -> (String, String) {
    let out = oscost().args(args).arg("--db").arg(db).env("COLUMNS", columns.to_string()).output().unwrap();
    assert!(out.status.success(), "oscost {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// The lines of `text` wider than `columns`.
fn too_wide(text: &str, columns: u16) -> Vec<&str> {
    text.lines().filter(|l| l.chars().count() > usize::from(columns)).collect()
}

/// The default suite, one quick round: at 100 columns its table holds a line a figure
/// and the whole run (what it says while running, the table, the notes, where it was
/// stored) 50 lines at most; at 80 columns no line is wider than the terminal.
#[test]
fn a_default_run_fits_one_screen() {
    let db = temp_db();
    let (out, err) = at(100, &["run", "--quick", "--rounds", "1"], &db.path);
    // A busy machine's preflight warnings (said once, as found) come on top: they
    // are the machine's, not the suite's.
    let mut preflight = false;
    let said = err.lines().filter(|l| {
        preflight = l.starts_with("preflight:") || (preflight && l.starts_with("  "));
        !preflight
    });
    let lines = out.lines().filter(|l| !l.starts_with("preflight:")).count() + said.count();
    assert!(lines <= 50, "{lines} lines:\n{err}{out}");
    let doc = json_of(&run_ok(&["show", "--json"], &db.path));
    let figures: std::collections::BTreeSet<(String, String)> = doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let params = r["params"].as_object().unwrap();
            let variant: Vec<String> = params
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "batch_size" | "path"))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            (r["benchmark"].as_str().unwrap().to_string(), variant.join(" "))
        })
        .collect();
    let body = out.lines().filter(|l| l.starts_with('│')).count() - 1;
    assert!(body <= figures.len(), "{body} table lines for {} figures:\n{out}", figures.len());
    assert!(too_wide(&out, 100).is_empty() && too_wide(&err, 100).is_empty(), "{out}");
    for args in [&["show"][..], &["show", "-v"]] {
        let (out, _) = at(80, args, &db.path);
        assert_eq!(too_wide(&out, 80), Vec::<&str>::new(), "{args:?} at 80 columns");
    }
}

/// Every command that prints a table or prose keeps within the terminal at 80 and 100
/// columns; compare of two runs of one comparability key prints one line for the
/// machines and no fingerprint table (`--machine` prints it).
#[test]
fn every_command_fits_the_terminal() {
    let db = temp_db();
    for _ in 0..3 {
        run_ok(&["run", "syscall.getppid", "ctx.pipe", "--quick", "--rounds", "2", "--no-trace"], &db.path);
    }
    let noise = ["noise", "--runs", "3", "syscall.getppid", "--quick", "--rounds", "1", "--no-trace"];
    let commands: [&[&str]; 12] = [
        &["show"],
        &["show", "-v"],
        &["runs"],
        &["info"],
        &["history"],
        &["plan"],
        &["compare", "1", "2"],
        &["compare", "1", "2", "--machine"],
        &["compare", "1", "2", "3"],
        &noise,
        &["list"],
        &["show", "--format", "markdown"],
    ];
    for columns in [80u16, 100] {
        for args in commands {
            if args == ["list"] || args[..] == ["show", "--format", "markdown"] {
                continue; // not tables of the terminal: lists and an export format
            }
            let (out, err) = at(columns, args, &db.path);
            assert_eq!(too_wide(&out, columns), Vec::<&str>::new(), "{args:?} at {columns} columns:\n{out}");
            assert_eq!(too_wide(&err, columns), Vec::<&str>::new(), "{args:?} at {columns} columns (stderr)");
        }
    }
    let (same, _) = at(100, &["compare", "1", "2"], &db.path);
    let machines: Vec<&str> =
        same.lines().take_while(|l| !l.starts_with('┌') && !l.contains(" compared; typical MDE")).collect();
    let machines: Vec<&str> = machines.into_iter().take_while(|l| !l.starts_with("run #")).collect();
    assert!(machines[0].starts_with("machines: same ("), "{same}");
    assert!(machines.len() <= 2, "one line (wrapped at most once): {machines:?}");
    assert!(!same.contains('≠') && !same.contains("kernel command line"), "no fingerprint table:\n{same}");
    let (full, _) = at(100, &["compare", "1", "2", "--machine"], &db.path);
    assert!(full.contains("kernel command line"), "{full}");
    if oscost::sys::is_root() {
        let (traced, err) = at(80, &["trace", "--for", "200ms", "--", "true"], &db.path);
        assert_eq!(too_wide(&traced, 80), Vec::<&str>::new(), "trace at 80 columns:\n{traced}\n{err}");
    } else {
        eprintln!("skipped: trace_fits needs root (the scheduler's tracepoints)");
    }
}
