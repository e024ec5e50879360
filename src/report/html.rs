//! The HTML report: one self-contained file (inline CSS and SVG, no network fetches)
//! with each run's machine, its tables, and plots where people would rather look than
//! read. Every piece of text from the database is escaped.

use std::fmt::Write;

use super::charts::{self, SweepSpec};
use super::compare::Comparison;
use super::fmt_value;
use super::matrix::Matrix;
use crate::model::Skipped;
use crate::model::{ResultRow, RunDocument};

pub use super::esc;

/// The charts a report draws beyond every run's own (overviews, histograms), declared
/// by the layers that know what the rows are: each family's sweep, and chapters that
/// lay out rows of several producers (the simulator's laboratory beside the published
/// and measured curves). The report knows no benchmark: it draws what it is given.
#[derive(Default)]
pub struct Views {
    pub sweeps: Vec<SweepSpec>,
    pub chapters: Vec<fn(&[ResultRow]) -> String>,
    /// What a condition changes of its rows (`condition::params_changed_by`), for the
    /// chapter on a paired run's conditions; None draws none.
    pub paired: Option<crate::judge::paired::ParamsChanged>,
}

fn run_section(doc: &RunDocument, skipped: &[Skipped], views: &Views) -> String {
    let mut h = format!("<section><h2>Run #{} ({}) · {}</h2>", doc.run.id, doc.run.status, esc(&doc.run.started_at));
    let _ = write!(h, "<p class=cmd><code>{}</code></p>", esc(&doc.run.command_line));
    if doc.run.kind == crate::model::RunKind::Sim {
        h.push_str("<p>Simulated, not measured: every figure is virtual time charged by the cost profile its row names; the machine it stands for is the profile's, not this one.</p>");
    } else {
        h.push_str(&fingerprint_table(&doc.machine));
    }
    h.push_str(&results_table(&doc.results));
    h.push_str(&conditions(&doc.results, views));
    h.push_str(&trace_table(&doc.results));
    h.push_str(&notes(&doc.results, skipped));
    h.push_str(&plots(&doc.results, views));
    h.push_str("</section>");
    h
}

/// A paired run's conditions against its baseline: a forest plot per condition and
/// the table.
fn conditions(results: &[ResultRow], views: &Views) -> String {
    let Some(changed) = views.paired else { return String::new() };
    let threshold = super::compare::DEFAULT_THRESHOLD;
    let pairs = crate::judge::paired::pairs(results, threshold, changed);
    if pairs.is_empty() {
        return String::new();
    }
    let mut h = String::from("<h3>Conditions against the baseline, paired by round</h3>");
    h.push_str(&charts::paired_bars(&pairs));
    h.push_str("<table><tr><th>condition</th><th>benchmark</th><th>variant</th><th>method</th><th>baseline gm</th><th>condition gm</th><th>ratio [95% CI]</th><th>MDE</th><th>verdict</th><th>rounds</th></tr>");
    for p in &pairs {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3} [{:.3}, {:.3}]</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.condition),
            esc(&p.key.bench),
            esc(p.key.variant()),
            esc(p.key.method.as_str()),
            esc(&fmt_value(p.paired_baseline, &p.unit)),
            esc(&fmt_value(p.paired_value, &p.unit)),
            p.ratio,
            p.ci_low,
            p.ci_high,
            if p.mde.is_finite() { format!("±{:.1}%", p.mde * 100.0) } else { "-".into() },
            esc(&p.verdict.to_string()),
            p.pairs
        );
    }
    let _ = write!(
        h,
        "</table><p>Ratio: the condition over the baseline, the geometric mean of the rounds' ratios (each round measured both, back to back, in alternating order), which is condition gm over baseline gm (each arm's geometric mean of its paired rounds' medians); the interval resamples the paired rounds; a verdict needs it to clear ±{:.1}%.</p>",
        threshold * 100.0
    );
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
    for t in &m.preflight {
        fp.push(("preflight", format!("{} ({})", t.reason, t.advice)));
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

/// The charts of a run: every figure on an overview per family and unit, the
/// laboratory's and the sweeps' curves, and every per-call histogram.
fn plots(results: &[ResultRow], views: &Views) -> String {
    let mut h = String::new();
    let groups = charts::overview_groups(results);
    if !groups.is_empty() {
        h.push_str("<h3>Every figure</h3>");
        for (title, rows) in &groups {
            h.push_str(&charts::overview(title, rows));
        }
    }
    for chapter in &views.chapters {
        h.push_str(&chapter(results));
    }
    for spec in &views.sweeps {
        h.push_str(&charts::sweep_chart(spec, results));
    }
    let hists: Vec<String> = results.iter().filter(|r| charts::has_histogram(r)).map(charts::histogram).collect();
    if !hists.is_empty() {
        let _ = write!(h, "<h3>Per-call latency ({})</h3><div class=hists>{}</div>", hists.len(), hists.join(""));
    }
    h
}

/// The page's head: title and styles.
pub(crate) const HEAD: &str = "<!doctype html><html lang=en><head><meta charset=utf-8><title>oscost report</title><style>\
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}\
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;font-size:12px}\
table.res td:nth-child(n+4){text-align:right;font-variant-numeric:tabular-nums}\
figure.chart{display:inline-block;vertical-align:top;margin:8px;padding:6px 8px;border:1px solid #ddd;border-radius:4px}\
figcaption{font-size:12px;color:#444;margin-bottom:4px;max-width:880px}.hists figure.chart figcaption{max-width:400px}\
code{background:#f4f4f4;padding:2px 4px}h2{border-bottom:2px solid #1f77b4}\
</style></head><body><h1>oscost report</h1>";

/// A page: an optional comparison section, then every run.
fn page(runs: &[(RunDocument, Vec<Skipped>)], comparison: &str, views: &Views) -> String {
    let mut h = String::from(HEAD);
    h.push_str(comparison);
    for (d, s) in runs {
        h.push_str(&run_section(d, s, views));
    }
    h.push_str("</body></html>\n");
    h
}

/// A comparison of the first two runs, as the page shows it.
pub struct ComparisonSection<'a> {
    pub rows: &'a [Comparison],
    /// Where the between-run spreads some intervals took came from
    /// (`compare::noise_sources`); None when none did.
    pub between_runs: Option<String>,
}

/// Renders runs (and, with two or more, a comparison of the first with the second),
/// with the charts the layers above declare (`Views`).
pub fn render(runs: &[(RunDocument, Vec<Skipped>)], comparison: Option<&ComparisonSection>, views: &Views) -> String {
    let mut h = String::new();
    if let (Some(section), [a, b, ..]) = (comparison, runs) {
        let c = section.rows;
        let widened = c.iter().any(|x| x.between_runs.is_some());
        let _ = write!(h, "<section><h2>Comparison: run #{} (A) → run #{} (B)</h2>", a.0.run.id, b.0.run.id);
        h.push_str(&charts::ratio_bars(c));
        h.push_str("<table><tr><th>benchmark</th><th>variant</th><th>method</th><th>A</th><th>B</th><th>B/A [95% CI]</th><th>MDE</th><th>verdict</th>");
        if widened {
            h.push_str("<th>between runs</th>");
        }
        h.push_str("</tr>");
        for x in c {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3} [{:.3}, {:.3}]</td><td>{}</td><td>{}</td>",
                esc(&x.key.bench),
                esc(x.key.variant()),
                esc(x.key.method.as_str()),
                esc(&fmt_value(x.a_centre, &x.unit)),
                esc(&fmt_value(x.b_centre, &x.unit)),
                x.ratio,
                x.ci_low,
                x.ci_high,
                if x.mde.is_finite() { format!("±{:.1}%", x.mde * 100.0) } else { "-".into() },
                esc(&x.verdict.to_string())
            );
            if widened {
                let spread = x.between_runs.map_or_else(|| "-".into(), |s| format!("σ {:.1}%", s * 100.0));
                let _ = write!(h, "<td>{}</td>", esc(&spread));
            }
            h.push_str("</tr>");
        }
        h.push_str("</table>");
        if let Some(line) = &section.between_runs {
            let _ = write!(h, "<p>{}</p>", esc(line));
        }
        h.push_str("</section>");
    }
    page(runs, &h, views)
}

/// Renders runs with the machines side by side: the fingerprint differences, grouped
/// bars (per figure, one bar per side: its ratio to the baseline with the interval)
/// and the matrix as a table.
pub fn render_matrix(runs: &[(RunDocument, Vec<Skipped>)], m: &Matrix, views: &Views) -> String {
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
    h.push_str(&charts::grouped_bars(m));
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
            esc(&r.key.bench),
            esc(r.key.variant()),
            esc(r.key.method.as_str()),
            esc(&fmt_value(r.baseline_median, &r.unit))
        );
        for c in &r.cells {
            let _ = write!(h, "<td>{}</td>", esc(&super::matrix::cell(c.as_ref())));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    if let Some(line) = super::matrix::between_runs_line(m) {
        let _ = write!(h, "<p>{}</p>", esc(&line));
    }
    h.push_str("</section>");
    page(runs, &h, views)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Flag, FlagCode, Method, RunInfo};
    use crate::report::charts::{Point, Series, XAxis, line_chart};

    #[test]
    fn text_from_the_database_is_escaped() {
        assert_eq!(esc("<b>&\"'"), "&lt;b&gt;&amp;&quot;&#39;");
        // U+202E would reorder what a reader of the report sees.
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
                status: crate::model::RunStatus::Complete,
                uuid: None,
                kind: crate::model::RunKind::Measure,
            },
            machine: m,
            results: vec![r],
        };
        let html = render(&[(doc, vec![])], None, &Views::default());
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
        assert!(line_chart("t", "x", &crate::unit::Unit::Ns, XAxis::Linear, &[]).is_empty());
        let one = ResultRow::from_samples("x.y", Method::PerCall, "ns", vec![1.0], 1).unwrap();
        assert!(charts::histogram(&one).is_empty());
        let pts = vec![Point::bare(2.0, 10.0), Point::bare(4.0, 20.0)];
        let c =
            line_chart("t", "x", &crate::unit::Unit::Ns, XAxis::Log2Count, &[Series { name: "a".into(), points: pts }]);
        assert!(c.contains("<polyline"));
    }
}
