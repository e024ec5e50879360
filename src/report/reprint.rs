//! The founding texts' tables reprinted: every published cell beside what the
//! simulator gives under the text's period profile, what it gives under this machine's
//! `live` profile, and what this machine measured, with the simulated/published ratio;
//! below each reprint, the cells where model and text part by more than 30%, with the
//! rule or cost term suspected. Pure: a stored run in, text out.

use super::fit;
use crate::key::Params;
use crate::model::{ResultRow, RunDocument};
use crate::published::Figure;
use crate::sim::WorkloadKind;

/// Where model and text part: beyond this ratio either way.
pub const DISAGREE: f64 = 1.3;

/// One row of a block: a published figure (or none: a row of this machine only) and
/// the other columns, all in the published unit.
pub struct Cell {
    pub label: String,
    pub published: Option<&'static Figure>,
    pub period: Option<f64>,
    pub live: Option<f64>,
    pub here: Result<f64, &'static str>,
}

/// A table of cells under a title, with the rule or cost term suspected where the
/// period simulation disagrees with the text.
pub struct Block {
    pub title: String,
    pub unit: String,
    pub cells: Vec<Cell>,
    pub suspect: &'static str,
}

/// A number as the texts print them: up to 4 significant digits, no exponent.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// A published value as printed (N/A where the text prints N/A).
pub fn published_text(f: &Figure) -> String {
    f.value.map(num).unwrap_or_else(|| "N/A".into())
}

fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_else(|| "-".into())
}

/// The width a reprint is set to: every line fits it (a reprint is printed whole, to
/// a terminal or a file, so it takes the width a terminal of common size shows).
pub const WIDTH: usize = fit::DEFAULT_WIDTH as usize;

/// `text` wrapped to [`WIDTH`], its continuation lines hanging `indent` columns in.
pub fn wrapped(text: &str, indent: usize) -> String {
    fit::hanging(text, fit::Width::Fit(fit::DEFAULT_WIDTH), indent)
}

/// The five value columns of a row (published, period, live, here, ratio).
fn values(v: [&str; 5]) -> String {
    format!("{:>10}  {:>12}  {:>12}  {:>12}  {:>7}", v[0], v[1], v[2], v[3], v[4])
}

/// One row of a block: its label and values on one line when they fit [`WIDTH`] beside
/// the block's widest label (`w`); otherwise stacked, the label on its line and the
/// values on the next, right-aligned under the header (`stacked`).
fn row(label: &str, values: &str, w: usize, stacked: bool) -> String {
    if stacked { format!("{}\n{values:>WIDTH$}\n", wrapped(label, 2)) } else { format!("{label:<w$}  {values}\n") }
}

/// Why a column of measured or machine-derived figures is doubted, when it is.
#[derive(Debug, Clone, Default)]
pub struct Doubts {
    /// The "here" column: the run found other work keeping its CPUs busy.
    pub here: Option<String>,
    /// The live column: the live profile's machine probes that never had their CPU
    /// to themselves, by the terms they priced.
    pub live: Option<String>,
}

/// The reprint of `blocks`, with the period profile's name in the header. A doubted
/// column ([`Doubts`]) has each of its cells marked, `*` for "here" and `†` for live,
/// and the reason given under the table.
pub fn render(title: &str, period: &str, blocks: &[Block], doubts: &Doubts) -> String {
    let mut out = format!("{}\n", wrapped(title, 2));
    out.push_str(&wrapped(
        &format!(
            "columns: published | simulated, {period} profile | simulated, live profile | measured here | simulated ({period}) / published"
        ),
        2,
    ));
    out.push('\n');
    let mut notes: Vec<String> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    for b in blocks {
        let mut apart: Vec<(String, f64)> = Vec::new();
        out.push_str(&format!("\n{}\n", wrapped(&format!("{} ({})", b.title, b.unit), 2)));
        let w = b.cells.iter().map(|c| c.label.chars().count()).max().unwrap_or(0).max(8);
        let header = values(["published", period, "live", "here", "ratio"]);
        let stacked = w + 2 + header.chars().count() > WIDTH;
        out.push_str(&if stacked { format!("{header:>WIDTH$}\n") } else { format!("{:<w$}  {header}\n", "") });
        for c in &b.cells {
            let published = c.published.map(published_text).unwrap_or_else(|| "-".into());
            let ratio = match (c.published.and_then(|f| f.value), c.period) {
                (Some(p), Some(s)) if p != 0.0 => Some(s / p),
                _ => None,
            };
            let here = match &c.here {
                Ok(v) if doubts.here.is_some() => format!("{}*", num(*v)),
                Ok(v) => num(*v),
                Err(why) => {
                    if !notes.iter().any(|n| n.ends_with(why)) {
                        notes.push(format!("- \"here\" is empty where: {why}"));
                    }
                    "-".into()
                }
            };
            let ratio_text = ratio.map(|r| format!("{r:.2}")).unwrap_or_else(|| "-".into());
            let live = match c.live {
                Some(v) if doubts.live.is_some() => format!("{}†", num(v)),
                other => opt(other),
            };
            let v = values([&published, &opt(c.period), &live, &here, &ratio_text]);
            out.push_str(&row(&c.label, &v, w, stacked));
            if let Some(r) = ratio
                && !(1.0 / DISAGREE..=DISAGREE).contains(&r)
            {
                apart.push((c.label.clone(), r));
            }
        }
        if !apart.is_empty() {
            let compared =
                b.cells.iter().filter(|c| c.period.is_some() && c.published.is_some_and(|f| f.value.is_some())).count();
            let cells = apart.iter().map(|(l, r)| format!("{l} ({r:.2})")).collect::<Vec<_>>().join("; ");
            parts.push(format!(
                "- {}: {} of {compared} cells: {cells}. Suspected: {}",
                b.title,
                apart.len(),
                b.suspect
            ));
        }
    }
    if let Some(why) = &doubts.here {
        out.push_str(&wrapped(&format!("* measured here on a busy machine ({why}): doubted"), 2));
        out.push('\n');
    }
    let live_marked = blocks.iter().flat_map(|b| &b.cells).any(|c| c.live.is_some());
    if let Some(terms) = &doubts.live
        && live_marked
    {
        out.push_str(&wrapped(
            &format!(
                "† the live profile's probes of {terms} never had a CPU to themselves (other work shared it): doubted"
            ),
            2,
        ));
        out.push('\n');
    }
    out.push_str("\nWhere the model and the text part by more than 30%:\n");
    let modelled = blocks.iter().flat_map(|b| &b.cells).any(|c| c.period.is_some() || c.live.is_some());
    if !modelled {
        out.push_str(
            "- not known: the laboratory models none of these figures, so nothing simulated stands beside them\n",
        );
    } else if parts.is_empty() {
        out.push_str("- nowhere\n");
    }
    // A bullet names every cell that parts, so it runs long: wrapped, its
    // continuation lines hanging under its text.
    for line in parts.iter().chain(&notes) {
        out.push_str(&wrapped(line, 2));
        out.push('\n');
    }
    out
}

/// The simulated row of `workload` under `profile` whose variant matches `want`: a
/// parameter the simulator leaves unwritten while it holds its default (nice 0,
/// processes: [`crate::sim::run::unwritten_defaults`]) matches that default.
pub fn sim<'a>(d: &'a RunDocument, workload: WorkloadKind, profile: &str, want: &Params) -> Option<&'a ResultRow> {
    let id = workload.id();
    let label = format!("profile {profile}");
    let defaults = crate::sim::run::unwritten_defaults();
    d.results.iter().find(|r| {
        r.benchmark == id
            && r.params.get(crate::sim::run::SIMULATED) == Some(label.as_str())
            && r.params.matches_with_defaults(want, &defaults)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_the_texts_do() {
        assert_eq!(num(19.0), "19");
        assert_eq!(num(0.019), "0.0190");
        assert_eq!(num(440.0), "440");
        assert_eq!(num(491.6364), "491.6");
        assert_eq!(num(2.5), "2.50");
        assert_eq!(num(241_247.0), "241247");
    }

    #[test]
    fn a_disagreement_beyond_30_percent_is_listed_with_its_suspect() {
        let f: &'static Figure = crate::published::all().iter().find(|f| f.value == Some(19.0)).unwrap();
        let cell =
            |period| Cell { label: "x".into(), published: Some(f), period: Some(period), live: None, here: Err("no") };
        let quiet = render(
            "t",
            "p",
            &[Block { title: "b".into(), unit: "µs".into(), cells: vec![cell(20.0)], suspect: "S" }],
            &Doubts::default(),
        );
        assert!(quiet.contains("- nowhere"), "{quiet}");
        let loud = render(
            "t",
            "p",
            &[Block { title: "b".into(), unit: "µs".into(), cells: vec![cell(30.0)], suspect: "S" }],
            &Doubts::default(),
        );
        assert!(loud.contains("- b: 1 of 1 cells: x (1.58). Suspected: S"), "{loud}");
    }

    #[test]
    fn a_doubted_live_profile_marks_every_live_cell_and_says_which_probes() {
        let f: &'static Figure = crate::published::all().iter().find(|f| f.value == Some(19.0)).unwrap();
        let cells = || {
            vec![
                Cell { label: "a".into(), published: Some(f), period: Some(20.0), live: Some(7.5), here: Ok(2.0) },
                Cell { label: "b".into(), published: Some(f), period: Some(20.0), live: None, here: Ok(2.0) },
            ]
        };
        let block = || [Block { title: "b".into(), unit: "µs".into(), cells: cells(), suspect: "S" }];
        let quiet = render("t", "p", &block(), &Doubts::default());
        assert!(!quiet.contains('†'), "{quiet}");
        let doubted = render("t", "p", &block(), &Doubts { here: None, live: Some("syscall, remote_line".into()) });
        let a = doubted.lines().find(|l| l.starts_with("a ")).unwrap();
        assert!(a.contains("7.50†") && !a.contains("2.00*"), "only the live cell is marked: {a}");
        let b = doubted.lines().find(|l| l.starts_with("b ")).unwrap();
        assert!(!b.contains('†'), "a cell with no live figure has no mark: {b}");
        assert!(
            doubted.contains("† the live profile's probes of syscall, remote_line never had a CPU to themselves"),
            "{doubted}"
        );
        for l in doubted.lines() {
            assert!(l.chars().count() <= WIDTH, "{l:?}");
        }
    }

    #[test]
    fn a_long_disagreement_is_wrapped_under_its_bullet() {
        let f: &'static Figure = crate::published::all().iter().find(|f| f.value == Some(19.0)).unwrap();
        let cells = (0..12)
            .map(|i| Cell {
                label: format!("a cell with a long label, number {i}"),
                published: Some(f),
                period: Some(30.0),
                live: None,
                here: Err("no"),
            })
            .collect();
        let text = render(
            "t",
            "p",
            &[Block { title: "b".into(), unit: "µs".into(), cells, suspect: "S" }],
            &Doubts::default(),
        );
        let bullet: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("- b: 12 of 12 cells")).collect();
        let end = bullet.iter().position(|l| l.ends_with("Suspected: S")).expect("the bullet ends with its suspect");
        assert!(end > 0, "wrapped onto more than one line:\n{text}");
        for l in &bullet[..=end] {
            assert!(l.chars().count() <= usize::from(super::super::fit::DEFAULT_WIDTH), "{l:?}");
        }
        for l in &bullet[1..=end] {
            assert!(l.starts_with("  ") && !l.starts_with("   "), "continuation hangs under the text: {l:?}");
        }
        // No cell's label is lost in the wrapping.
        let joined = bullet[..=end].iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
        assert!((0..12).all(|i| joined.contains(&format!("a cell with a long label, number {i} (1.58)"))), "{joined}");
    }
}
