//! Build script: records the git commit for the machine fingerprint and assembles the
//! static no-op helper program that the creation benchmarks exec.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    record_git_commit();
    build_noop_helper();
}

fn record_git_commit() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=OSCOST_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs");
}

/// Assembles `helper/noop-<arch>.S` into a static executable with no start files and no
/// C library. The binary is embedded into oscost and written out at run time.
fn build_noop_helper() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let dest = out.join("oscost-noop");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let src = PathBuf::from(format!("helper/noop-{arch}.S"));
    println!("cargo:rerun-if-changed=helper");
    if !src.exists() {
        // No helper for this architecture: the creation benchmarks that exec it say so.
        std::fs::write(&dest, b"").expect("write empty helper placeholder");
        return;
    }
    let compiler = cc::Build::new().get_compiler();
    let status = compiler
        .to_command()
        .args(["-static", "-nostdlib", "-nostartfiles", "-Wl,--build-id=none", "-s", "-o"])
        .arg(&dest)
        .arg(&src)
        .status()
        .expect("run the C compiler to assemble the no-op helper");
    assert!(status.success(), "assembling {} failed", src.display());
}
