//! What a fleet operator installs and relies on: the systemd units (checked by
//! `systemd-analyze verify` where it exists, and their oscost command lines against
//! the flags oscost has), `run --start-at`, and `--export-prometheus`.

use crate::common;
use common::*;

use std::path::Path;
use std::time::{Duration, SystemTime};

const UNITS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/systemd");

fn unit(name: &str) -> String {
    std::fs::read_to_string(Path::new(UNITS).join(name)).unwrap()
}

#[test]
fn the_systemd_units_verify() {
    let Ok(out) = std::process::Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("skipped the_systemd_units_verify: systemd-analyze is not installed");
        return;
    };
    assert!(out.status.success());
    // The units name the installed binary; here it is the one under test.
    let dir = tempfile::tempdir().unwrap();
    for name in ["oscost-nightly.service", "oscost-nightly.timer"] {
        let text = unit(name).replace("/usr/local/bin/oscost", env!("CARGO_BIN_EXE_oscost"));
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(dir.path().join("oscost-nightly.service"))
        .arg(dir.path().join("oscost-nightly.timer"))
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "systemd-analyze verify: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every flag the service passes to oscost is one oscost has.
#[test]
fn the_service_uses_only_flags_oscost_has() {
    let service = unit("oscost-nightly.service");
    let help =
        |cmd: &str| String::from_utf8_lossy(&oscost().args([cmd, "--help"]).output().unwrap().stdout).into_owned();
    let (run, push) = (help("run"), help("push"));
    let mut checked = 0;
    for line in service.lines().filter(|l| l.starts_with("ExecStart")) {
        let help = if line.contains("oscost run") { &run } else { &push };
        for flag in line.split(|c: char| c.is_whitespace() || c == '\'' || c == '"').filter(|w| w.starts_with("--")) {
            assert!(help.contains(flag), "{flag} is not an oscost flag");
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "run --quiet --start-at --export-prometheus, push --to");
    assert!(unit("oscost-nightly.timer").contains("OnCalendar="));
}

#[test]
fn a_run_starts_at_the_aligned_instant_and_writes_its_textfile() {
    let db = temp_db();
    let prom = db.dir.path().join("oscost.prom");
    let before = SystemTime::now();
    let out = run_ok(
        &[
            "run",
            "syscall.getppid",
            "--quick",
            "--rounds",
            "1",
            "--start-at",
            "next:2s",
            "--export-prometheus",
            prom.to_str().unwrap(),
        ],
        &db.path,
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("waiting until"));
    // The run began at or after the next whole two seconds of the epoch.
    let since = before.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let aligned = SystemTime::UNIX_EPOCH + Duration::from_secs((since / 2 + 1) * 2);
    let runs = json_of(&run_ok(&["runs", "--json"], &db.path));
    let started = humantime::parse_rfc3339(runs[0]["started_at"].as_str().unwrap()).unwrap();
    assert!(started >= aligned, "started {started:?}, aligned {aligned:?}");
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(text.contains("# TYPE") && text.contains("syscall.getppid"), "{text}");
    // An instant already past is refused before anything is measured.
    let out = oscost()
        .args(["run", "syscall.getppid", "--start-at", "2020-01-01T00:00:00Z", "--db"])
        .arg(&db.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("in the past"));
    assert_eq!(json_of(&run_ok(&["runs", "--json"], &db.path)).as_array().unwrap().len(), 1);
}
