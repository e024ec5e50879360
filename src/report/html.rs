//! The HTML report: one self-contained file (inline CSS and SVG, no network fetches)
//! with each run's machine, its tables, and plots where people would rather look than
//! read. Every piece of text from the database is escaped.

use std::fmt::Write;

use super::compare::Comparison;
use super::fmt_value;
use super::matrix::Matrix;
use crate::model::Skipped;
use crate::model::{Method, ResultRow, RunDocument};
use crate::stats;

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    // Control characters and bidirectional overrides become visible replacements first.
    for c in super::plain(s).chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const PALETTE: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];
const W: f64 = 560.0;
const H: f64 = 260.0;
const PAD: f64 = 48.0;

/// A line chart of several series; `log_x` plots x on a base-2 log scale.
pub fn line_chart(title: &str, x_label: &str, unit: &str, series: &[(String, Vec<(f64, f64)>)], log_x: bool) -> String {
    let tx = |x: f64| if log_x { x.max(1.0).log2() } else { x };
    let pts: Vec<(f64, f64)> = series.iter().flat_map(|s| s.1.iter().map(|&(x, y)| (tx(x), y))).collect();
    if pts.is_empty() {
        return String::new();
    }
    let (x0, x1) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let y1 = pts.iter().fold(0.0f64, |a, p| a.max(p.1)) * 1.05;
    let sx = |x: f64| PAD + (tx(x) - x0) / (x1 - x0).max(1e-9) * (W - 2.0 * PAD);
    let sy = |y: f64| H - PAD - y / y1.max(1e-9) * (H - 2.0 * PAD);
    let mut svg = format!(
        r##"<figure><svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{t}</title><rect width="100%" height="100%" fill="#fff"/><line x1="{PAD}" y1="{b}" x2="{r}" y2="{b}" stroke="#333"/><line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{b}" stroke="#333"/><text x="{PAD}" y="{ty}" font-size="11">{top}</text><text x="{PAD}" y="{lx}" font-size="11">{xl}{logn}</text>"##,
        t = esc(title),
        b = H - PAD,
        r = W - PAD,
        ty = PAD - 6.0,
        top = esc(&fmt_value(y1, unit)),
        lx = H - 12.0,
        xl = esc(x_label),
        logn = if log_x { " (log scale)" } else { "" },
    );
    for (i, (name, points)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = points.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect();
        let _ = write!(svg, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, path.join(" "));
        for &(x, y) in points {
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"><title>{}</title></circle>"#,
                sx(x),
                sy(y),
                esc(&format!("{name}: x={x} y={}", fmt_value(y, unit)))
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" font-size="11" fill="{color}">{}</text>"#,
            W - PAD - 150.0,
            PAD + 14.0 * i as f64,
            esc(name)
        );
    }
    let _ = write!(svg, "</svg><figcaption>{}</figcaption></figure>", esc(title));
    svg
}

/// A histogram of per-call samples between their 0.5th and 99.5th percentiles.
pub fn histogram(title: &str, samples: &[f64], unit: &str) -> String {
    let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if s.len() < 2 {
        return String::new();
    }
    s.sort_by(f64::total_cmp);
    let lo = stats::quantile_sorted(&s, 0.005);
    let hi = stats::quantile_sorted(&s, 0.995);
    let bins = 40;
    let mut counts = vec![0usize; bins];
    for &x in &s {
        if x >= lo && x <= hi {
            let b = (((x - lo) / (hi - lo).max(1e-9)) * bins as f64) as usize;
            counts[b.min(bins - 1)] += 1;
        }
    }
    let top = *counts.iter().max().unwrap_or(&1) as f64;
    let (w, h) = (320.0, 120.0);
    let bw = (w - 20.0) / bins as f64;
    let mut svg = format!(
        r##"<figure class="hist"><svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img"><title>{t}</title><rect width="100%" height="100%" fill="#fff"/>"##,
        t = esc(title)
    );
    for (i, c) in counts.iter().enumerate() {
        let bh = *c as f64 / top.max(1.0) * (h - 34.0);
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#1f77b4"/>"##,
            10.0 + i as f64 * bw,
            h - 20.0 - bh,
            bw - 1.0,
            bh
        );
    }
    let _ = write!(
        svg,
        r#"<text x="10" y="{}" font-size="10">{}</text><text x="{}" y="{}" font-size="10" text-anchor="end">{}</text></svg><figcaption>{}</figcaption></figure>"#,
        h - 6.0,
        esc(&fmt_value(lo, unit)),
        w - 10.0,
        h - 6.0,
        esc(&fmt_value(hi, unit)),
        esc(title)
    );
    svg
}

/// Horizontal bars of B/A ratios with their 95% intervals, around 1.
/// A ratio chart's scale (x of a ratio, labels in the left 320 px, 1 always in view)
/// and its opening SVG with the dashed line at 1 from `top` down.
fn ratio_canvas<'a>(
    intervals: impl Iterator<Item = &'a Comparison>,
    w: f64,
    h: f64,
    title: &str,
    top: f64,
) -> (impl Fn(f64) -> f64, String) {
    let (lo, hi) = intervals.fold((1.0f64, 1.0f64), |(a, b), c| (a.min(c.ci_low), b.max(c.ci_high)));
    let (lo, hi) = (lo.min(0.9), hi.max(1.1));
    let left = 320.0;
    let sx = move |x: f64| left + (x - lo) / (hi - lo) * (w - left - 20.0);
    let svg = format!(
        r##"<figure><svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img"><title>{title}</title><rect width="100%" height="100%" fill="#fff"/><line x1="{o:.1}" y1="{top}" x2="{o:.1}" y2="{b}" stroke="#999" stroke-dasharray="3"/>"##,
        o = sx(1.0),
        b = h - 6.0
    );
    (sx, svg)
}

pub fn ratio_bars(rows: &[Comparison]) -> String {
    let rows: Vec<&Comparison> = rows.iter().filter(|c| c.ci_low.is_finite()).take(60).collect();
    if rows.is_empty() {
        return String::new();
    }
    let (w, row_h) = (720.0, 16.0);
    let h = 30.0 + row_h * rows.len() as f64;
    let (sx, mut svg) = ratio_canvas(rows.iter().copied(), w, h, "B/A ratios", 10.0);
    for (i, c) in rows.iter().enumerate() {
        let y = 20.0 + row_h * i as f64;
        let color = match c.verdict.as_str() {
            "faster" => "#2ca02c",
            "slower" => "#d62728",
            _ => "#777",
        };
        let _ = write!(
            svg,
            r#"<text x="4" y="{:.1}" font-size="10">{}</text><line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2"/><rect x="{:.1}" y="{:.1}" width="4" height="8" fill="{color}"/>"#,
            y + 3.0,
            esc(&format!("{} {} ({})", c.benchmark, c.variant, c.method).chars().take(60).collect::<String>()),
            sx(c.ci_low),
            sx(c.ci_high),
            sx(c.ratio) - 2.0,
            y - 4.0
        );
    }
    svg.push_str("</svg><figcaption>B/A ratio of medians with 95% bootstrap intervals (left of the dashed line: B is lower)</figcaption></figure>");
    svg
}

fn series_by<F: Fn(&ResultRow) -> Option<(String, f64)>>(
    rows: &[ResultRow],
    id: &str,
    key: F,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in rows.iter().filter(|r| r.benchmark == id && r.method == Method::Batch) {
        if let Some((name, x)) = key(r) {
            match out.iter_mut().find(|s| s.0 == name) {
                Some(s) => s.1.push((x, r.median)),
                None => out.push((name, vec![(x, r.median)])),
            }
        }
    }
    out
}

fn param_f64(r: &ResultRow, k: &str) -> Option<f64> {
    r.params.get(k).and_then(|v| v.as_f64())
}

fn param_str(r: &ResultRow, k: &str) -> String {
    r.params.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string()
}

fn run_section(doc: &RunDocument, skipped: &[Skipped]) -> String {
    let mut h =
        format!("<section><h2>Run #{} ({}) · {}</h2>", doc.run.id, esc(&doc.run.status), esc(&doc.run.started_at));
    let _ = write!(h, "<p class=cmd><code>{}</code></p>", esc(&doc.run.command_line));
    if doc.run.kind == crate::model::RunKind::Sim {
        h.push_str("<p>Simulated, not measured: every figure is virtual time charged by the cost profile its row names; the machine it stands for is the profile's, not this one.</p>");
    } else {
        h.push_str(&fingerprint_table(&doc.machine));
    }
    h.push_str(&results_table(&doc.results));
    h.push_str(&trace_table(&doc.results));
    h.push_str(&notes(&doc.results, skipped));
    h.push_str(&plots(&doc.results));
    h.push_str("</section>");
    h
}

/// The machine the run measured, as a two-column table.
fn fingerprint_table(m: &crate::machine::Machine) -> String {
    let mut h = String::from("<table class=fp>");
    let mut fp = vec![
        ("host", m.hostname.clone()),
        ("cpu", format!("{} ({} logical, SMT {})", m.cpu_model, m.logical_cpus, m.smt_text())),
        ("kernel", format!("{} {}", m.kernel_release, m.kernel_version)),
        ("virtualization", m.virtualization.clone()),
        ("clocksource", m.clocksource.clone().unwrap_or_default()),
        ("governor", m.governor.clone().unwrap_or_else(|| "none exposed".into())),
        ("libc", m.libc.clone()),
        ("hardware counters", m.hardware_counters.clone()),
        ("oscost", format!("{} ({})", m.tool_version, m.git_commit)),
    ];
    if let Some(c) = &m.calibration {
        fp.push((
            "per-call bracket",
            format!("{} · {:.4} ticks/ns · empty bracket {:.1} ns", c.counter, c.ticks_per_ns, c.bracket_ns),
        ));
    }
    for (k, v) in fp {
        let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    let mit: Vec<String> = m.mitigations.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let _ = write!(h, "<tr><th>mitigations</th><td>{}</td></tr></table>", esc(&mit.join("; ")));
    h
}

/// The trace passes: what the scheduler's events said of each traced row.
fn trace_table(results: &[ResultRow]) -> String {
    let lines = super::trace::traced(results);
    if lines.is_empty() {
        return String::new();
    }
    let mut h =
        String::from("<h3>Trace pass (kernel events, recorded after the timed pass)</h3><table class=trace><tr>");
    for c in super::trace::HEADER {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>");
    for l in lines {
        h.push_str("<tr>");
        for c in l {
            let _ = write!(h, "<td>{}</td>", esc(&c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    for l in super::trace::spawn_lines(results) {
        let _ = write!(h, "<p>{}</p>", esc(&l));
    }
    h
}

/// Every figure with its interval, percentiles, proof and flags.
fn results_table(results: &[ResultRow]) -> String {
    let mut h = String::from(
        "<table class=res><tr><th>benchmark</th><th>variant</th><th>method</th><th>median [95% CI]</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th><th>kernel counts</th><th>flags</th></tr>",
    );
    for r in results {
        let f = |x: f64| esc(&fmt_value(x, &r.unit));
        let p = r.percentiles.as_ref();
        // A tail percentile only from the samples it needs (see the terminal table).
        let tail = |x: f64, min: usize| esc(&super::table::percentile(x, &r.unit, r.n, min, &mut false));
        let flags: Vec<String> = r
            .flags
            .iter()
            .map(|x| format!("<span title=\"{}\">{}</span>", esc(&x.reason), esc(x.flag.as_str())))
            .collect();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.benchmark),
            esc(&r.variant_label()),
            r.method.as_str(),
            esc(&super::figure_with_interval(r)),
            p.map(|p| f(p.p50)).unwrap_or_default(),
            p.map(|p| tail(p.p99, super::table::P99_MIN_SAMPLES)).unwrap_or_default(),
            p.map(|p| tail(p.p999, super::table::P999_MIN_SAMPLES)).unwrap_or_default(),
            p.map(|p| f(p.max)).unwrap_or_default(),
            esc(&super::table::proof(r)),
            flags.join(" ")
        );
    }
    h.push_str("</table>");
    h
}

/// Every flag's reason, and every skipped variant's.
fn notes(results: &[ResultRow], skipped: &[Skipped]) -> String {
    let mut h = String::new();
    let notes: Vec<String> = results
        .iter()
        .flat_map(|r| {
            r.flags.iter().map(move |f| {
                format!(
                    "<li><b>{} {}</b> {}: {}</li>",
                    esc(&r.benchmark),
                    esc(&r.variant_label()),
                    esc(f.flag.as_str()),
                    esc(&f.reason)
                )
            })
        })
        .collect();
    if !notes.is_empty() {
        let _ = write!(h, "<h3>Flags</h3><ul>{}</ul>", notes.join(""));
    }
    if !skipped.is_empty() {
        h.push_str("<h3>Skipped</h3><ul>");
        for s in skipped {
            let _ = write!(h, "<li>{} {}: {}</li>", esc(&s.benchmark), esc(&s.params), esc(&s.reason));
        }
        h.push_str("</ul>");
    }
    h
}

/// The sweeps' curves and the per-call histograms.
/// The simulated rows' profiles, as their rows name them (`profile NAME`), in order.
fn sim_profiles(results: &[ResultRow]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in results.iter().filter(|r| crate::sim::run::is_simulated(r)) {
        let p = param_str(r, crate::sim::run::SIMULATED_PARAM);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// A simulated series: `figure` of `workload` under `profile`, against the numeric
/// parameter `x`, for rows whose parameters include `want` (a missing mode is process).
fn sim_series(results: &[ResultRow], workload: &str, profile: &str, x: &str, want: &[(&str, &str)]) -> Vec<(f64, f64)> {
    let id = format!("sim.{workload}");
    let mut pts: Vec<(f64, f64)> = results
        .iter()
        .filter(|r| r.benchmark == id && param_str(r, crate::sim::run::SIMULATED_PARAM) == profile)
        .filter(|r| {
            want.iter().all(|(k, v)| {
                let got = param_str(r, k);
                got == *v || (got.is_empty() && *k == "mode" && *v == "process")
            })
        })
        .filter_map(|r| Some((param_f64(r, x)?, r.median)))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// The laboratory's charts: each published curve on one chart with the simulated ones
/// (every profile of the run) and, where this machine can measure it, today's kernel.
fn laboratory(results: &[ResultRow]) -> String {
    let mut h = String::new();
    let profiles = sim_profiles(results);
    let has = |id: &str| results.iter().any(|r| r.benchmark == id);
    if has("sim.travis") {
        for (row, policy, mode) in [
            ("Linux before change process switch", "linux-2.0", "process"),
            ("Linux before change thread switch", "linux-2.0", "thread"),
            ("Linux after change process switch", "linux-2.0-yieldfix", "process"),
            ("Linux after change thread switch", "linux-2.0-yieldfix", "thread"),
        ] {
            let published = crate::published::table2_row(row).into_iter().map(|(n, us)| (n, us * 1000.0)).collect();
            let mut series = vec![("published (Appleton 1999)".to_string(), published)];
            for p in &profiles {
                let want = [("policy", policy), ("mode", mode), ("figure", "time per switch")];
                let pts = sim_series(results, "travis", p, "tasks", &want);
                if !pts.is_empty() {
                    series.push((format!("simulated, {p}"), pts));
                }
            }
            if policy == "linux-2.0" {
                let here = series_by(results, "load.runqueue", |r| {
                    (param_str(r, "design") == "yield" && param_str(r, "mode") == mode)
                        .then(|| Some(("measured here (today's kernel)".to_string(), param_f64(r, "tasks")?)))
                        .flatten()
                });
                series.extend(here);
            }
            h.push_str(&line_chart(
                &format!("Table 2, {row}: time per switch against contexts"),
                "contexts in the run queue",
                "ns/switch",
                &series,
                false,
            ));
        }
    }
    if has("sim.loop_yield") {
        for (label, policy, column) in [("old scheduler (2.4)", "linux-2.4", "old"), ("O(1)", "o1", "O(1)")] {
            let published =
                [(2.0, "2-CPU", "4 instances of ./loop_yield"), (8.0, "8-CPU", "16 instances of ./loop_yield")]
                    .iter()
                    .filter_map(|&(cpus, system, row)| {
                        Some((cpus, crate::published::mean_of_runs("molnar02 loop_yield", system, row, column)?))
                    })
                    .collect();
            let mut series = vec![("published (Molnar 2002)".to_string(), published)];
            for p in &profiles {
                let pts = sim_series(results, "loop_yield", p, "cpus", &[("policy", policy)]);
                if !pts.is_empty() {
                    series.push((format!("simulated, {p}"), pts));
                }
            }
            h.push_str(&line_chart(
                &format!("loop_yield, {label}: context switches per second against CPUs"),
                "CPUs",
                "switches/s",
                &series,
                true,
            ));
        }
    }
    h
}

fn plots(results: &[ResultRow]) -> String {
    let mut h = laboratory(results);
    let rq = series_by(results, "load.runqueue", |r| {
        Some((format!("{} {}", param_str(r, "design"), param_str(r, "mode")), param_f64(r, "tasks")?))
    });
    h.push_str(&line_chart(
        "Run-queue sweep: time per switch against runnable tasks",
        "runnable tasks",
        "ns/switch",
        &rq,
        true,
    ));
    let fp =
        series_by(results, "ctx.footprint", |r| Some(("extra per hand-off".to_string(), param_f64(r, "size_bytes")?)));
    h.push_str(&line_chart(
        "Cache footprint: extra cost per hand-off against working set",
        "working set per task, bytes",
        "ns/hand-off",
        &fp,
        true,
    ));
    let fm = series_by(results, "spawn.fork_mem", |r| {
        Some((format!("THP {}", param_str(r, "thp")), param_f64(r, "parent_mem_bytes")? / (1u64 << 20) as f64))
    });
    h.push_str(&line_chart("fork+exit against touched parent memory", "parent memory, MiB", "ns/call", &fm, false));
    let hists: Vec<String> = results
        .iter()
        .filter(|r| r.method == Method::PerCall && r.samples.len() >= 10)
        .take(40)
        .map(|r| histogram(&format!("{} {}", r.benchmark, r.variant_label()), &r.samples, &r.unit))
        .collect();
    if !hists.is_empty() {
        let _ = write!(h, "<h3>Per-call latency</h3><div class=hists>{}</div>", hists.join(""));
    }
    h
}

/// The page's head: title and styles.
const HEAD: &str = "<!doctype html><html lang=en><head><meta charset=utf-8><title>oscost report</title><style>\
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}\
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;font-size:12px}\
table.res td:nth-child(n+4){text-align:right;font-variant-numeric:tabular-nums}\
figure{display:inline-block;margin:8px}figcaption{font-size:11px;color:#555}.hists figure{width:330px}\
code{background:#f4f4f4;padding:2px 4px}h2{border-bottom:2px solid #1f77b4}\
</style></head><body><h1>oscost report</h1>";

/// A page: an optional comparison section, then every run.
fn page(runs: &[(RunDocument, Vec<Skipped>)], comparison: &str) -> String {
    let mut h = String::from(HEAD);
    h.push_str(comparison);
    for (d, s) in runs {
        h.push_str(&run_section(d, s));
    }
    h.push_str("</body></html>\n");
    h
}

/// Renders runs (and, with two or more, a comparison of the first with the second).
pub fn render(runs: &[(RunDocument, Vec<Skipped>)], comparison: Option<&[Comparison]>) -> String {
    let mut h = String::new();
    if let (Some(c), [a, b, ..]) = (comparison, runs) {
        let _ = write!(h, "<section><h2>Comparison: run #{} (A) → run #{} (B)</h2>", a.0.run.id, b.0.run.id);
        h.push_str(&ratio_bars(c));
        h.push_str("<table><tr><th>benchmark</th><th>variant</th><th>method</th><th>A</th><th>B</th><th>B/A [95% CI]</th><th>verdict</th></tr>");
        for x in c {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3} [{:.3}, {:.3}]</td><td>{}</td></tr>",
                esc(&x.benchmark),
                esc(&x.variant),
                esc(&x.method),
                esc(&fmt_value(x.a_median, &x.unit)),
                esc(&fmt_value(x.b_median, &x.unit)),
                x.ratio,
                x.ci_low,
                x.ci_high,
                esc(&x.verdict)
            );
        }
        h.push_str("</table></section>");
    }
    page(runs, &h)
}

/// Colours of the compared sides, in order (the baseline is the dashed line at 1).
const SIDE_COLORS: [&str; 8] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

/// Renders runs with the machines side by side: the fingerprint differences, grouped
/// bars (per figure, one bar per side: its ratio to the baseline with the interval)
/// and the matrix as a table.
pub fn render_matrix(runs: &[(RunDocument, Vec<Skipped>)], m: &Matrix) -> String {
    let mut h = String::from("<section><h2>Machines side by side</h2><table><tr><th></th>");
    for c in &m.columns {
        let _ = write!(h, "<th>{}</th>", esc(&c.name));
    }
    h.push_str("</tr>");
    for (field, values) in &m.differences {
        let _ = write!(h, "<tr><td>{}</td>", esc(field));
        for v in values {
            let _ = write!(h, "<td>{}</td>", esc(v));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    h.push_str(&grouped_bars(m));
    h.push_str("<table><tr><th>benchmark</th><th>variant</th><th>method</th>");
    for (i, c) in m.columns.iter().enumerate() {
        let what = if i == 0 { "baseline" } else { "ratio [95% CI] verdict" };
        let _ = write!(h, "<th>{} ({what})</th>", esc(&c.name));
    }
    h.push_str("</tr>");
    for r in &m.rows {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(&r.benchmark),
            esc(&r.variant),
            esc(&r.method),
            esc(&fmt_value(r.baseline_median, &r.unit))
        );
        for c in &r.cells {
            let cell = match c {
                Some(c) if c.ci_low.is_finite() => {
                    format!("{:.3} [{:.3}, {:.3}] {}", c.ratio, c.ci_low, c.ci_high, c.verdict)
                }
                Some(c) => format!("{:.3} {}", c.ratio, c.verdict),
                None => "-".into(),
            };
            let _ = write!(h, "<td>{}</td>", esc(&cell));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table></section>");
    page(runs, &h)
}

/// Grouped bars: a group per figure, in it a bar per compared side from 1 to its ratio,
/// with the interval as a whisker; the baseline is the dashed line at 1.
pub fn grouped_bars(m: &Matrix) -> String {
    let rows: Vec<_> =
        m.rows.iter().filter(|r| r.cells.iter().flatten().any(|c| c.ci_low.is_finite())).take(40).collect();
    let sides = m.columns.len().saturating_sub(1);
    if rows.is_empty() || sides == 0 {
        return String::new();
    }
    let cells = rows.iter().flat_map(|r| r.cells.iter().flatten()).filter(|c| c.ci_low.is_finite());
    let (w, bar_h) = (760.0, 7.0);
    let group_h = bar_h * sides as f64 + 6.0;
    let h = 40.0 + group_h * rows.len() as f64;
    let (sx, mut svg) = ratio_canvas(cells, w, h, "ratios to the baseline", 24.0);
    for (i, c) in m.columns.iter().skip(1).enumerate() {
        let color = SIDE_COLORS[i % SIDE_COLORS.len()];
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="6" width="10" height="10" fill="{color}"/><text x="{:.1}" y="15" font-size="10">{}</text>"#,
            4.0 + 150.0 * i as f64,
            18.0 + 150.0 * i as f64,
            esc(&c.name.chars().take(22).collect::<String>())
        );
    }
    for (g, r) in rows.iter().enumerate() {
        let top = 28.0 + group_h * g as f64;
        let _ = write!(
            svg,
            r#"<text x="4" y="{:.1}" font-size="10">{}</text>"#,
            top + group_h / 2.0,
            esc(&format!("{} {} ({})", r.benchmark, r.variant, r.method).chars().take(60).collect::<String>())
        );
        for (i, c) in r.cells.iter().enumerate() {
            let Some(c) = c.as_ref().filter(|c| c.ci_low.is_finite()) else { continue };
            let color = SIDE_COLORS[i % SIDE_COLORS.len()];
            let y = top + bar_h * i as f64;
            let (x0, x1) = (sx(1.0).min(sx(c.ratio)), sx(1.0).max(sx(c.ratio)));
            let _ = write!(
                svg,
                r##"<rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#222"/>"##,
                (x1 - x0).max(1.0),
                bar_h - 1.0,
                sx(c.ci_low),
                y + bar_h / 2.0,
                sx(c.ci_high),
                y + bar_h / 2.0
            );
        }
    }
    svg.push_str("</svg><figcaption>each side's median over the baseline's (the dashed line), with 95% intervals</figcaption></figure>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flag, FlagCode, RunInfo};

    #[test]
    fn text_from_the_database_is_escaped() {
        assert_eq!(esc("<b>&\"'"), "&lt;b&gt;&amp;&quot;&#39;");
        // Hardening, defect 7: the report kept U+202E, which reorders what a reader sees.
        assert_eq!(esc("a\u{202e}b\u{1b}c"), "a\u{fffd}b\u{fffd}c");
        let mut r = ResultRow::from_samples(
            "syscall.getppid",
            Method::PerCall,
            "ns/call",
            (1..100).map(f64::from).collect(),
            99,
        )
        .unwrap();
        r.flag(Flag::new(FlagCode::Vdso, "<script>alert(1)</script>"));
        let mut m = crate::machine::Machine::example();
        m.hostname = "<img src=x onerror=alert(1)>".into();
        let doc = RunDocument {
            schema_version: 1,
            run: RunInfo {
                id: 1,
                started_at: "t".into(),
                command_line: "oscost run </code><script>".into(),
                save_name: None,
                status: "complete".into(),
                uuid: None,
                kind: crate::model::RunKind::Measure,
            },
            machine: m,
            results: vec![r],
        };
        let html = render(&[(doc, vec![])], None);
        assert!(!html.contains("<script>") && !html.contains("<img"));
        assert!(html.contains("&lt;script&gt;"));
        assert!(html.contains("<svg"), "the per-call histogram is drawn");
        // No address but the SVG namespace: the page fetches nothing.
        let addresses: Vec<&str> = html
            .match_indices("http")
            .map(|(i, _)| &html[i..(i + 40).min(html.len())])
            .filter(|a| !a.starts_with("http://www.w3.org/2000/svg"))
            .collect();
        assert!(addresses.is_empty(), "external addresses: {addresses:?}");
        assert!(!html.contains("src=\"//") && !html.contains("url("), "no external fetches");
    }

    #[test]
    fn charts_are_empty_without_data() {
        assert!(line_chart("t", "x", "ns", &[], false).is_empty());
        assert!(histogram("t", &[1.0], "ns").is_empty());
        let c = line_chart("t", "x", "ns", &[("a".into(), vec![(2.0, 10.0), (4.0, 20.0)])], true);
        assert!(c.contains("<polyline"));
    }
}
