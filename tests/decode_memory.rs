//! Hardening, third pass, defect 4: a 7 KB export whose histogram header claimed a
//! payload of 0xFFFFFFF0 bytes cost 4.2 GB in `import` (or aborted under a memory
//! limit), and planted in a database aborted every reader; a 9 KB export of 8 rows of
//! 9,999,999 samples imported and cost gigabytes. Both are now refused, with a clear
//! error, before anything is allocated for them.
//!
//! Its own test binary with a single test, so the memory high-water mark of this
//! binary's children is that of the commands below. Each runs under a 1 GB address
//! space limit too, so a command that still tried the allocation would abort (exit 134)
//! rather than take the machine's memory.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Output;

use base64::Engine;
use common::*;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

/// The growth a refused command may show: what oscost takes to start, and far less
/// than the samples claimed (640 MB as f64s; 4.2 GB of payload).
const BOUND: u64 = 64 << 20;

/// `oscost ARGS --db DB` under a 1 GB address space limit (`ulimit -v`).
fn limited(args: &[&str], db: &Path) -> Output {
    let mut script = String::from("ulimit -v 1048576; exec \"$0\" \"$@\"");
    script.push_str(" --db \"$DB\"");
    std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_oscost"))
        .args(args)
        .env("DB", db)
        .output()
        .unwrap()
}

/// The command failed with a message, not a crash.
fn refused(args: &[&str], out: &Output, words: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(1) | Some(2)), "{args:?} must fail cleanly: {:?} {err}", out.status);
    assert!(err.contains(words) && !err.contains("panicked"), "{args:?}: {err}");
}

/// A round's V2 deflate encoding whose inner header claims a payload of `claimed`
/// bytes (the histogram is small, and honest but for that field).
fn planted_round(claimed: u32) -> Vec<u8> {
    let mut h = Histogram::<u64>::new(4).unwrap();
    h.record_n(6400, 1000).unwrap();
    let mut deflated = Vec::new();
    V2DeflateSerializer::new().serialize(&h, &mut deflated).unwrap();
    let mut inner = Vec::new();
    flate2::read::ZlibDecoder::new(&deflated[8..]).read_to_end(&mut inner).unwrap();
    inner[4..8].copy_from_slice(&claimed.to_be_bytes());
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&inner).unwrap();
    let stream = z.finish().unwrap();
    let mut out = deflated[..4].to_vec();
    out.extend_from_slice(&(stream.len() as u32).to_be_bytes());
    out.extend_from_slice(&stream);
    out
}

/// A stored blob (`histo`'s layout) of one round holding `round`.
fn blob_of(round: &[u8]) -> Vec<u8> {
    let mut blob = b"HDR1".to_vec();
    blob.extend_from_slice(&0f64.to_le_bytes());
    blob.extend_from_slice(&1u32.to_le_bytes());
    blob.extend_from_slice(&(round.len() as u32).to_le_bytes());
    blob.extend_from_slice(round);
    blob
}

/// One round of `n` samples at one value.
fn many_at_one_value(n: u64) -> Vec<u8> {
    let mut h = Histogram::<u64>::new(4).unwrap();
    h.record_n(6400, n).unwrap();
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(&h, &mut bytes).unwrap();
    bytes
}

fn b64(blob: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(blob)
}

#[test]
fn crafted_histograms_are_refused_by_import_and_every_reader_within_a_small_memory_bound() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "--quick", "--rounds", "1"], &db.path);
    let export = json_of(&run_ok(&["export", "latest", "--format", "json"], &db.path));
    let run = export["runs"][0].clone();
    let per_call = run["results"].as_array().unwrap().iter().position(|r| r["method"] == "per_call").unwrap();
    let before = oscost::sys::children_peak_rss().unwrap();

    // The planted header, in an export.
    let planted = blob_of(&planted_round(0xFFFF_FFF0));
    let mut doc = export.clone();
    doc["runs"][0]["run"]["uuid"] = uuid::Uuid::new_v4().to_string().into();
    doc["runs"][0]["results"][per_call]["histogram"] = b64(&planted).into();
    let file = db.dir.path().join("planted.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    assert!(std::fs::metadata(&file).unwrap().len() < 16 << 10, "a few kilobytes");
    let other = db.dir.path().join("other.db");
    let args = ["import", file.to_str().unwrap()];
    refused(&args, &limited(&args, &other), "claims 4294967280 bytes of counts");

    // 8 rows of 9,999,999 samples at one value, each within the bound of one row.
    let mut doc = export.clone();
    let mut row = run["results"][per_call].clone();
    row["histogram"] = b64(&blob_of(&many_at_one_value(9_999_999))).into();
    row["n"] = 9_999_999.into();
    row["rounds"] = serde_json::json!([{"samples": 9_999_999, "counts": {}}]);
    doc["runs"][0]["run"]["uuid"] = uuid::Uuid::new_v4().to_string().into();
    doc["runs"][0]["results"] = vec![row; 8].into();
    let file = db.dir.path().join("many.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    assert!(std::fs::metadata(&file).unwrap().len() < 16 << 10, "a few kilobytes");
    let args = ["import", file.to_str().unwrap()];
    refused(&args, &limited(&args, &other), "more than 20000000 samples");

    // The planted header in the database: every reader of the run fails with a
    // message. A second run, clean, is there to compare with.
    let mut clean = export.clone();
    clean["runs"][0]["run"]["uuid"] = uuid::Uuid::new_v4().to_string().into();
    let file = db.dir.path().join("clean.json");
    std::fs::write(&file, clean.to_string()).unwrap();
    run_ok(&["import", file.to_str().unwrap()], &db.path);
    let c = rusqlite::Connection::open(&db.path).unwrap();
    let planted_rows = c
        .execute(
            "UPDATE results SET samples = ?1 WHERE rowid = (SELECT MIN(rowid) FROM results WHERE run_id = 1 AND samples_format = 'hdr1')",
            [&planted],
        )
        .unwrap();
    assert_eq!(planted_rows, 1);
    drop(c);
    let report = db.dir.path().join("report.html");
    let readers: [&[&str]; 7] = [
        &["show", "1"],
        &["show", "1", "--json"],
        &["compare", "1", "2"],
        &["report", "1", "-o", report.to_str().unwrap()],
        &["export", "1"],
        &["export", "1", "--format", "csv"],
        &["history"],
    ];
    for args in readers {
        refused(args, &limited(args, &db.path), "claims 4294967280 bytes of counts");
    }
    // The clean run still reads.
    run_ok(&["show", "2", "--json"], &db.path);

    let peak = oscost::sys::children_peak_rss().unwrap().max(before);
    eprintln!("peak resident set of any command: {} MiB", peak >> 20);
    assert!(peak < BOUND, "a command peaked at {} MiB", peak >> 20);
}
