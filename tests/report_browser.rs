//! The HTML report in a real headless browser: the page renders, with its plots, and
//! the screenshot is not blank. Needs Debian's chromium (CI installs it); elsewhere the
//! test says it is skipping.

mod common;
use common::*;

fn chromium() -> Option<std::path::PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

#[test]
fn report_renders_in_headless_chromium_with_plots() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "ctx.pipe", "load.runqueue", "--quick", "--tasks", "2,4,8"], &db.path);
    run_ok(&["run", "syscall.getppid", "ctx.pipe", "--quick"], &db.path);
    let html = db.dir.path().join("report.html");
    run_ok(&["report", "1", "2", "-o", html.to_str().unwrap()], &db.path);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("<svg") && text.contains("Run-queue sweep") && text.contains("Comparison"));
    assert!(!text.contains("src=\"http") && !text.contains("href=\"http"), "self-contained");

    let Some(browser) = chromium() else {
        eprintln!("skipping the browser check: no chromium on this machine (CI installs Debian's chromium)");
        return;
    };
    let shot = db.dir.path().join("shot.png");
    let profile = db.dir.path().join("profile");
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1280,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    assert!(shot.exists(), "chromium wrote no screenshot: {}", String::from_utf8_lossy(&out.stderr));
    let decoder = png::Decoder::new(std::fs::File::open(&shot).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let non_white = px.chunks(channels).filter(|p| p.iter().take(3).any(|&c| c < 200)).count();
    let coloured = px.chunks(channels).filter(|p| p.len() >= 3 && (i32::from(p[2]) - i32::from(p[0])) > 60).count();
    let total = px.len() / channels;
    assert!(non_white * 100 > total, "the page is blank: {non_white} of {total} pixels drawn");
    assert!(coloured > 200, "no plot colour on the page ({coloured} blue pixels)");
}
