//! Build script: assembles the static no-op helper program that the creation
//! benchmarks exec, and compiles the raw loop that `crosscheck` runs beside other tools.

use std::path::PathBuf;

fn main() {
    build_noop_helper();
    build_raw_loop();
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

/// Compiles `helper/rawloop-<arch>.c` (inline `syscall` instructions, so x86_64 only)
/// into a static executable embedded into oscost. Where it cannot be built (another
/// architecture, no static C library), an empty placeholder stands in and `crosscheck`
/// names the raw loop as not built.
fn build_raw_loop() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let dest = out.join("oscost-rawloop");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let src = PathBuf::from(format!("helper/rawloop-{arch}.c"));
    let placeholder = |why: &str| {
        println!("cargo:warning=the raw loop is not built: {why}");
        std::fs::write(&dest, b"").expect("write empty raw loop placeholder");
    };
    if !src.exists() {
        std::fs::write(&dest, b"").expect("write empty raw loop placeholder");
        return;
    }
    let compiler = cc::Build::new().get_compiler();
    let status =
        compiler.to_command().args(["-O2", "-static", "-s", "-Wl,--build-id=none", "-o"]).arg(&dest).arg(&src).status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => placeholder(&format!("compiling {} failed ({s})", src.display())),
        Err(e) => placeholder(&format!("the C compiler did not run ({e})")),
    }
}
