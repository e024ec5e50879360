//! The hardening pass, defect 5: a 55 MB import (360 runs) took 8.8 GB of memory, since
//! the whole file was parsed and every histogram expanded before anything was written.
//! Imports now stream, one run in memory at a time. Its own test binary, so the memory
//! high-water mark of this binary's children is the import's.

mod common;

use common::*;

#[test]
fn a_large_import_holds_one_run_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    run_ok(&["run", "syscall.getppid", "syscall.getuid", "--quick", "--rounds", "2"], &a);
    let one = dir.path().join("one.json");
    run_ok(&["export", "latest", "--format", "json", "-o", one.to_str().unwrap()], &a);
    // The run copied under new UUIDs until its samples, expanded, would take far more
    // than the bound below.
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&one).unwrap()).unwrap();
    let run = doc["runs"][0].clone();
    let samples: u64 = run["results"].as_array().unwrap().iter().map(|r| r["n"].as_u64().unwrap()).sum();
    let copies = (1_000_000_000 / (samples * 8)).max(2) as usize;
    let runs: Vec<serde_json::Value> = (0..copies)
        .map(|_| {
            let mut r = run.clone();
            r["run"]["uuid"] = uuid::Uuid::new_v4().to_string().into();
            r
        })
        .collect();
    doc["runs"] = runs.into();
    let big = dir.path().join("big.json");
    std::fs::write(&big, serde_json::to_vec(&doc).unwrap()).unwrap();
    let before = oscost::sys::children_peak_rss().unwrap();
    let out = oscost().args(["import"]).arg(&big).arg("--db").arg(&b).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let peak = oscost::sys::children_peak_rss().unwrap().max(before);
    let size = std::fs::metadata(&big).unwrap().len();
    eprintln!("imported {copies} runs, {} MB, {samples} samples each: peak {} MiB", size / 1_000_000, peak >> 20);
    // 1 GB of samples (as f64) in the file; the import may hold a few runs' worth.
    assert!(peak < 256 << 20, "the import peaked at {} MiB for {copies} runs", peak >> 20);
    let listed = json_of(&run_ok(&["runs", "--json"], &b));
    assert_eq!(listed.as_array().unwrap().len(), copies, "every run imported");
}
