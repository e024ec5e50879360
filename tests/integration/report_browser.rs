//! The HTML report in a real headless browser, read as a person would read it: the
//! page is drawn (a screenshot that is not blank, with plot colour), and in the laid
//! out page every chart has tick labels on its axes and an axis title, no text falls
//! outside its chart or onto the next tick label, every caption sits above its own
//! chart inside its box, and every figure of every run is drawn. No text overlaps
//! another's box (an axis title over its tick labels), a caption's unit is its axis's,
//! a histogram's bars reach across its axis, and a history's x axis names runs by id
//! and date. Needs Debian's
//! chromium (CI installs it); elsewhere the browser half says it is skipping.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Chromium's flags for a quiet, offline, headless page load.
fn browser(browser: &Path, profile: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(browser);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1400,1600",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// What the page measures of itself once laid out: per chart, its kind, tick label
/// counts and axis titles; the figures drawn; and every problem a reader would see.
/// Appended to a copy of the report (the report itself carries no script).
const CHECK: &str = r#"<script>
const out = {charts: [], figures: document.querySelectorAll('.figure-mark').length, problems: []};
for (const fig of document.querySelectorAll('figure.chart')) {
  const svg = fig.querySelector('svg');
  const cap = fig.querySelector('figcaption');
  const name = cap ? cap.textContent.slice(0, 80) : '(no caption)';
  const box = svg.getBoundingClientRect();
  if (!cap || cap.getBoundingClientRect().bottom > box.top + 1) out.problems.push('caption not above its chart: ' + name);
  const inFig = fig.getBoundingClientRect();
  if (cap && (cap.getBoundingClientRect().top < inFig.top || cap.getBoundingClientRect().bottom > inFig.bottom)) out.problems.push('caption outside its box: ' + name);
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (t.textContent.trim() === '') continue;
    if (r.width === 0 || r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
      out.problems.push('text outside its chart (' + name + '): ' + t.textContent);
  }
  // No text over another text's box (an axis title over its tick labels).
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() !== '').map(t => [t.textContent, t.getBoundingClientRect()]);
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const [a, ra] = texts[i], [b, rb] = texts[j];
    if (ra.left < rb.right - 1 && rb.left < ra.right - 1 && ra.top < rb.bottom - 1 && rb.top < ra.bottom - 1)
      out.problems.push('texts overlap (' + name + '): ' + a + ' / ' + b);
  }
  // The unit a caption names is the unit its axis shows (µs/call over a µs axis).
  const unit = (cap ? cap.textContent : '').match(/\b(ns|µs|ms|s)\/[a-z]+/);
  const titles = [...svg.querySelectorAll('text.axis-title')].map(t => t.textContent).join(' | ');
  if (unit && !titles.includes(unit[0])) out.problems.push('caption unit ' + unit[0] + ' not on the axes (' + titles + '): ' + name);
  // A histogram's bars cover its data's span: the bars holding samples reach across
  // at least half the axis, not all in one bar at a corner.
  if (fig.classList.contains('hist')) {
    const bars = [...svg.querySelectorAll('rect.bar')].map(b => [b.getBoundingClientRect(), +b.getAttribute('height')]);
    const full = bars.filter(([, h]) => h > 0).map(([r]) => r);
    if (bars.length && full.length) {
      const span = (rs) => Math.max(...rs.map(r => r.right)) - Math.min(...rs.map(r => r.left));
      if (full.length < 2 || span(full) < 0.5 * span(bars.map(([r]) => r))) out.problems.push('histogram data in a corner of its axis: ' + name);
    }
  }
  const xt = [...svg.querySelectorAll('text.tick.x')].map(t => t.getBoundingClientRect()).sort((a, b) => a.left - b.left);
  for (let i = 1; i < xt.length; i++) if (xt[i].left < xt[i - 1].right) out.problems.push('x tick labels overlap: ' + name);
  out.charts.push({
    kind: fig.className.replace('chart ', ''),
    caption: name,
    x_ticks: svg.querySelectorAll('text.tick.x').length,
    y_ticks: svg.querySelectorAll('text.tick.y').length,
    x_title: (svg.querySelector('text.axis-title.x') || {}).textContent || '',
    x_labels: [...svg.querySelectorAll('text.tick.x')].map(t => t.textContent),
    y_title: (svg.querySelector('text.axis-title.y') || {}).textContent || '',
    marks: svg.querySelectorAll('circle, rect.ratio, rect.bar').length,
  });
}
const pre = document.createElement('pre');
pre.id = 'oscost-check';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"#;

/// The report at `html` as laid out by Chromium (None, with a message, without one).
fn laid_out(html: &Path) -> Option<serde_json::Value> {
    let Some(b) = chromium() else {
        eprintln!("skipping the browser check: no chromium on this machine (CI installs Debian's chromium)");
        return None;
    };
    let dir = html.parent().unwrap();
    let checked = dir.join(format!("checked-{}", html.file_name().unwrap().to_string_lossy()));
    let page = std::fs::read_to_string(html).unwrap().replace("</body>", &format!("{CHECK}</body>"));
    std::fs::write(&checked, page).unwrap();
    let out = browser(&b, &dir.join("profile-dom"))
        .args(["--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", checked.display()))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"oscost-check\">").unwrap_or_else(|| {
        panic!("the check did not run: {}\n{}", String::from_utf8_lossy(&out.stderr), &dom[..dom.len().min(500)])
    });
    let text = &dom[start + 23..];
    let text = &text[..text.find("</pre>").unwrap()];
    let text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
}

/// The checks every report passes: no problem, and every chart with readable axes.
fn assert_readable(check: &serde_json::Value, what: &str) {
    let problems = check["problems"].as_array().unwrap();
    assert!(
        problems.is_empty(),
        "{what}: {} problems, first: {:?}",
        problems.len(),
        &problems[..problems.len().min(5)]
    );
    let charts = check["charts"].as_array().unwrap();
    assert!(!charts.is_empty(), "{what}: no chart");
    for c in charts {
        assert!(c["x_ticks"].as_u64().unwrap() >= 2, "{what}: a chart with fewer than two x tick labels: {c}");
        assert!(!c["x_title"].as_str().unwrap().is_empty(), "{what}: a chart without an x axis title: {c}");
        let kind = c["kind"].as_str().unwrap();
        if matches!(kind, "line" | "hist") {
            assert!(c["y_ticks"].as_u64().unwrap() >= 2, "{what}: a chart with fewer than two y tick labels: {c}");
            assert!(!c["y_title"].as_str().unwrap().is_empty(), "{what}: a chart without a y axis title: {c}");
        }
        assert!(c["marks"].as_u64().unwrap() >= 1, "{what}: a chart that draws nothing: {c}");
    }
}

fn count(check: &serde_json::Value, kind: &str) -> usize {
    check["charts"].as_array().unwrap().iter().filter(|c| c["kind"] == kind).count()
}

/// The rows of stored runs: every figure (finite median) and the per-call rows
/// with samples enough for a histogram.
fn figures(db: &Path, runs: &[&str]) -> (usize, usize) {
    let (mut all, mut hists) = (0, 0);
    for r in runs {
        let doc = json_of(&run_ok(&["show", r, "--json", "--samples"], db));
        for row in doc["results"].as_array().unwrap() {
            all += row["median"].as_f64().is_some_and(f64::is_finite) as usize;
            hists += (row["method"] == "per_call" && row["samples"].as_array().map_or(0, |s| s.len()) >= 10) as usize;
        }
    }
    (all, hists)
}

fn report(db: &TempDb, runs: &[&str], name: &str) -> PathBuf {
    let html = db.dir.path().join(name);
    run_ok(&[&["report"], runs, &["-o", html.to_str().unwrap()]].concat(), &db.path);
    html
}

/// One, two and three runs: every figure drawn once on the overviews, every per-call
/// row a histogram, the sweep's curve with its x ticks, the comparison's forest plot
/// and the three-run bars, each chart readable.
#[test]
fn reports_of_one_two_and_three_runs_draw_every_figure_with_axes() {
    let db = temp_db();
    let first =
        ["run", "syscall.getppid", "ctx.pipe", "spawn.fork_exit", "load.runqueue", "--quick", "--tasks", "2,4,8"];
    run_ok(&first, &db.path);
    run_ok(&["run", "syscall.getppid", "ctx.pipe", "--quick"], &db.path);
    run_ok(&["run", "syscall.getppid", "--quick"], &db.path);
    let one = report(&db, &["1"], "one.html");
    let two = report(&db, &["1", "2"], "two.html");
    let three = report(&db, &["1", "2", "3"], "three.html");
    let text = std::fs::read_to_string(&two).unwrap();
    assert!(text.contains("<svg") && text.contains("Run-queue sweep") && text.contains("Comparison"));
    assert!(!text.contains("src=\"http") && !text.contains("href=\"http"), "self-contained");

    let Some(c1) = laid_out(&one) else { return };
    assert_readable(&c1, "one run");
    let (rows, hists) = figures(&db.path, &["1"]);
    assert_eq!(c1["figures"].as_u64().unwrap() as usize, rows, "one run: every figure drawn once");
    assert_eq!(count(&c1, "hist"), hists, "one run: every per-call row a histogram");
    let sweep = c1["charts"].as_array().unwrap().iter().find(|c| c["caption"].as_str().unwrap().contains("Run-queue"));
    let sweep = sweep.expect("the run-queue sweep is drawn");
    assert!(sweep["x_ticks"].as_u64().unwrap() >= 3, "tasks 2, 4, 8 as ticks: {sweep}");

    let c2 = laid_out(&two).unwrap();
    assert_readable(&c2, "two runs");
    let (rows, hists) = figures(&db.path, &["1", "2"]);
    assert_eq!(c2["figures"].as_u64().unwrap() as usize, rows, "two runs: every figure drawn once");
    assert_eq!(count(&c2, "hist"), hists);
    assert_eq!(count(&c2, "forest"), 1, "the comparison's forest plot");

    let c3 = laid_out(&three).unwrap();
    assert_readable(&c3, "three runs");
    let (rows, _) = figures(&db.path, &["1", "2", "3"]);
    assert_eq!(c3["figures"].as_u64().unwrap() as usize, rows, "three runs: every figure drawn once");
    assert_eq!(count(&c3, "bars"), 1, "the machines' grouped bars");
}

/// `run all`: every one of its figures drawn, none cut (the report drew 40 of 79
/// histograms), each chart readable.
#[test]
fn a_report_of_run_all_draws_every_figure() {
    let db = temp_db();
    run_ok(&["run", "all", "--quick", "--rounds", "2", "-q"], &db.path);
    let html = report(&db, &["latest"], "all.html");
    let Some(c) = laid_out(&html) else { return };
    assert_readable(&c, "run all");
    let (rows, hists) = figures(&db.path, &["latest"]);
    assert!(hists > 40, "run all has more per-call rows than the old cut: {hists}");
    assert_eq!(c["figures"].as_u64().unwrap() as usize, rows, "every figure drawn once");
    assert_eq!(count(&c, "hist"), hists, "every per-call row a histogram");
}

/// A sim run: its figures drawn (no interval: deterministic), the published curve
/// beside the simulated ones, and no machine header as if measured.
#[test]
fn a_sim_report_draws_the_laboratory_with_axes() {
    let db = temp_db();
    let sim = TRAVIS_SIM;
    run_ok(sim, &db.path);
    let html = report(&db, &["latest"], "sim.html");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("Simulated, not measured") && !text.contains("<th>mitigations</th>"), "no machine header");
    let Some(c) = laid_out(&html) else { return };
    assert_readable(&c, "sim run");
    let (rows, _) = figures(&db.path, &["latest"]);
    assert_eq!(c["figures"].as_u64().unwrap() as usize, rows, "every simulated figure drawn");
    assert!(count(&c, "line") >= 4, "Table 2's four rows, published against simulated: {c}");
}

#[test]
fn report_renders_in_headless_chromium_with_plots() {
    let db = temp_db();
    run_ok(&["run", "syscall.getppid", "ctx.pipe", "load.runqueue", "--quick", "--tasks", "2,4,8"], &db.path);
    let html = report(&db, &["1"], "report.html");
    let Some(b) = chromium() else {
        eprintln!("skipping the browser check: no chromium on this machine (CI installs Debian's chromium)");
        return;
    };
    let shot = db.dir.path().join("shot.png");
    let out = browser(&b, &db.dir.path().join("profile"))
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

/// The history page: a chart per figure with its runs on the x axis, readable like
/// the report's, each change's mark and label inside its chart.
#[test]
fn a_history_page_draws_each_series_with_its_change_marked() {
    let db = temp_db();
    let kernels: Vec<&str> = (0..20).map(|i| if i >= 10 { "6.2.0-test" } else { "6.1.0-test" }).collect();
    let file = history_export(db.dir.path(), &twenty_medians(true), &kernels);
    run_ok(&["import", file.to_str().unwrap()], &db.path);
    let html = db.dir.path().join("history.html");
    run_ok(&["history", "--html", html.to_str().unwrap()], &db.path);
    let Some(c) = laid_out(&html) else { return };
    assert_readable(&c, "history");
    assert_eq!(count(&c, "line"), 1, "one figure, one chart: {c}");
    assert_eq!(c["charts"][0]["x_title"], "run (oldest first)");
    assert!(c["charts"][0]["marks"].as_u64().unwrap() >= 20, "every run drawn: {c}");
    // The x axis names runs by id and date (the first run imported on 2026-10-01).
    let labels: Vec<&str> =
        c["charts"][0]["x_labels"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(labels.len() >= 3 && labels.iter().all(|l| l.starts_with('#') && l.contains("10-")), "{labels:?}");
    assert_eq!(labels[0], "#1 10-01", "{labels:?}");
}

/// A paired run's report: a forest plot per condition with its axis, beside the table
/// of paired ratios.
#[test]
fn a_paired_runs_report_draws_a_forest_per_condition() {
    let db = temp_db();
    let run = [
        "run",
        "syscall.getppid",
        "syscall.read",
        "--quick",
        "--rounds",
        "3",
        "--condition",
        "nice:1",
        "--condition",
        "slack:1ns",
    ];
    run_ok(&run, &db.path);
    let html = report(&db, &["latest"], "paired.html");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("Conditions against the baseline, paired by round"), "no conditions chapter");
    for c in ["nice:1 against the baseline", "slack:1ns against the baseline"] {
        assert!(text.contains(c), "no forest plot titled {c}");
    }
    let Some(check) = laid_out(&html) else { return };
    assert_readable(&check, "paired run");
    assert_eq!(count(&check, "forest"), 2, "a forest plot per condition: {check}");
}
