//! `oscost history` end to end on stored runs with known figures: the change found
//! where it is and named by the key field that changed, the exit codes a nightly job
//! gates on, the strata, the HTML page, and errors.

use crate::common;
use common::*;

/// A database of twenty runs: a 10% step at the eleventh, when the kernel changed
/// (or, with `step` false, twenty runs alike on one kernel).
fn stored(step: bool) -> TempDb {
    let db = temp_db();
    let kernels: Vec<&str> = (0..20).map(|i| if step && i >= 10 { "6.2.0-test" } else { "6.1.0-test" }).collect();
    let file = history_export(db.dir.path(), &twenty_medians(step), &kernels);
    run_ok(&["import", file.to_str().unwrap()], &db.path);
    db
}

fn status(args: &[&str], db: &TempDb) -> (Option<i32>, String, String) {
    let out = oscost().arg("history").args(args).arg("--db").arg(&db.path).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_step_is_found_where_it_is_and_named_by_the_kernel_that_changed() {
    let db = stored(true);
    let doc = json_of(&run_ok(&["history", "--json"], &db.path));
    assert_eq!(doc["runs"], 20);
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{doc}");
    let s = &series[0];
    assert_eq!(s["benchmark"], "syscall.getppid");
    assert_eq!(s["points"].as_array().unwrap().len(), 20);
    let changes = s["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{s}");
    let c = &changes[0];
    assert!(c["index"].as_u64().unwrap().abs_diff(10) <= 1, "{c}");
    let ratio = c["ratio"].as_f64().unwrap();
    assert!(c["ci_low"].as_f64().unwrap() < ratio && ratio < c["ci_high"].as_f64().unwrap(), "{c}");
    assert!((1.05..1.15).contains(&ratio), "{c}");
    let fields: Vec<&str> = c["key_changes"].as_array().unwrap().iter().map(|k| k["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["kernel"]);
    assert_eq!(c["key_changes"][0]["after"][0], "6.2.0-test");
    // The terminal view says the same in words.
    let text = String::from_utf8_lossy(&run_ok(&["history", "syscall.getppid"], &db.path).stdout).into_owned();
    assert!(text.contains("kernel 6.1.0-test → 6.2.0-test"), "{text}");
    assert!(text.contains('│'), "the sparkline marks the change: {text}");
}

#[test]
fn fail_on_change_gates_a_nightly_job() {
    let (stepped, steady) = (stored(true), stored(false));
    let (code, _, err) = status(&["--fail-on-change"], &stepped);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("syscall.getppid") && err.contains("kernel"), "{err}");
    assert_eq!(status(&["--fail-on-change"], &steady).0, Some(0), "twenty runs alike pass");
    // The change is ten runs old: among the newest five it is not, among twelve it is.
    assert_eq!(status(&["--fail-on-change", "--recent", "5"], &stepped).0, Some(0));
    assert_eq!(status(&["--fail-on-change", "--recent", "12"], &stepped).0, Some(3));
    // Without the flag the change is only printed.
    assert_eq!(status(&[], &stepped).0, Some(0));
    // Runs before the step only: nothing changed in them.
    assert_eq!(status(&["--fail-on-change", "--until", "2026-10-11"], &stepped).0, Some(0));
}

#[test]
fn strata_separate_what_the_key_separates() {
    let db = stored(true);
    let doc = json_of(&run_ok(&["history", "--json", "--by", "key"], &db.path));
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "two kernels, two series");
    assert!(series.iter().all(|s| s["changes"].as_array().unwrap().is_empty()), "{doc}");
    assert_eq!(series[1]["stratum"], "key 2: kernel=6.2.0-test");
    let doc = json_of(&run_ok(&["history", "--json", "--by", "host"], &db.path));
    assert_eq!(doc["series"].as_array().unwrap().len(), 1, "one host");
}

#[test]
fn the_html_page_charts_the_series_with_the_change_marked() {
    let db = stored(true);
    let page = db.dir.path().join("history.html");
    run_ok(&["history", "--html", page.to_str().unwrap()], &db.path);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg").count(), 1);
    assert_eq!(html.matches(r#"class="marker""#).count(), 1);
    assert!(html.contains("×1.1") && html.contains("kernel"), "the mark is labelled with its size and cause");
}

#[test]
fn a_figure_that_is_not_stored_is_refused_and_an_empty_store_says_so() {
    let db = stored(false);
    let (code, _, err) = status(&["ctx.pipe"], &db);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no figure") && err.contains("ctx.pipe"), "{err}");
    let (code, out, _) = status(&["--since", "2030-01-01"], &db);
    assert_eq!(code, Some(0));
    assert!(out.contains("no figure matched in 0"), "{out}");
    let (code, _, err) = status(&["--recent", "3"], &db);
    assert_eq!(code, Some(2), "--recent needs --fail-on-change: {err}");
}
