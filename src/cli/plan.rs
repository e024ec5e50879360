//! `oscost plan`: for each figure of the stored runs, the variance each level adds
//! (runs, rounds, samples: `stats::planner`) and the cheapest design the command line
//! can run that reaches a requested precision, printed as the command that runs it,
//! with what it costs.
//!
//! Only `--rounds` (and how many runs) can be asked for: the samples a round follow
//! from the rounds, a run's budgets being split among them. What a round and a run
//! cost is read from the stored runs' own timings, which each round's rows carry: the
//! round's wall time, and the time its run took to set up before its first round.
//! Runs stored before rounds were timed have none: the plan then says "no stored
//! timing" and uses oscost's own estimate, named.

use std::path::Path;

use anyhow::Result;

use super::{UsageError, out, outln};
use crate::model::{Count, Method, ResultRow, RunDocument, RunKind};
use crate::report::table::Width;
use crate::stats::planner::{self, Components, Costs, Experiment, Plan};
use crate::store::RunFilter;

/// An experiment's shape: runs, rounds a run, samples a round.
type Shape = (usize, usize, usize);

/// Where a cost came from: the stored runs' timings, or an estimate when they have none.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Source {
    Stored,
    NoStoredTiming,
}

/// One figure's plan.
#[derive(Debug, serde::Serialize)]
struct FigurePlan {
    figure: String,
    /// The stored design the components were read from: runs × rounds × samples.
    read_from: (usize, usize, usize),
    components: Components,
    costs: Costs,
    /// Where the round's and the run's costs came from.
    round_cost: Source,
    run_cost: Source,
    now: f64,
    plan: Plan,
    /// The command that runs the design.
    command: String,
}

pub fn plan(db: &Path, figures: &[String], filter: &RunFilter, target: f64, json: bool) -> Result<i32> {
    if !(target.is_finite() && target > 0.0 && target < 1.0) {
        return Err(UsageError("--precision is a percentage between 0 and 100".into()).into());
    }
    let runs = super::history::load_runs(db, filter, &[RunKind::Measure, RunKind::Noise])?;
    if runs.len() < 2 {
        return Err(UsageError(format!(
            "plan reads the variance between runs from stored runs: {} complete measured run(s) found, it needs two or more (oscost run, twice)",
            runs.len()
        ))
        .into());
    }
    let run_start = run_start_seconds(&runs);
    // The newest run names the figures, and how they were run (--quick or not).
    let newest = &runs[runs.len() - 1];
    let quick = newest.run.command_line.split_whitespace().any(|a| a == "--quick");
    let mut plans = Vec::new();
    for r in newest.results.iter().filter(|r| r.method == Method::Batch) {
        if !figures.is_empty() && !figures.iter().any(|f| crate::judge::history::matches(f, r)) {
            continue;
        }
        let Some((data, shape)) = balanced(&runs, r) else { continue };
        let Some(c) = planner::components(&data) else { continue };
        plans.push(figure_plan(r, &runs, (data, shape), c, run_start, target, quick));
    }
    if json {
        outln(&serde_json::to_string_pretty(&plans)?)?;
    } else {
        let width = super::width();
        out(&render(&plans, target, width))?;
    }
    Ok(0)
}

/// One figure's costs, its cheapest runnable design, and that design's command.
fn figure_plan(
    r: &ResultRow,
    runs: &[RunDocument],
    (_, shape): (Experiment, Shape),
    c: Components,
    run_start: Option<f64>,
    target: f64,
    quick: bool,
) -> FigurePlan {
    let batch = r.params.get(crate::key::BATCH_SIZE).map_or(1.0, |b| b as f64);
    let sample = c.mean * batch * 1e-9;
    let round = round_seconds(runs, r).map(|t| (t - shape.2 as f64 * sample).max(0.0));
    let costs = Costs {
        sample,
        round: round.unwrap_or(ESTIMATED_ROUND_START.as_secs_f64()),
        run: run_start.unwrap_or(estimated_run_start().as_secs_f64()),
    };
    let plan = planner::runnable(&c, &costs, target, r.samples.len());
    FigurePlan {
        figure: format!("{} {}", r.benchmark, r.variant_label()).trim().to_string(),
        read_from: shape,
        now: planner::precision(&c, shape.0, shape.1, shape.2),
        command: command(&r.benchmark, &plan, quick),
        plan,
        components: c,
        costs,
        round_cost: source(round),
        run_cost: source(run_start),
    }
}

fn source(v: Option<f64>) -> Source {
    if v.is_some() { Source::Stored } else { Source::NoStoredTiming }
}

/// A round's start when no stored round was timed: the session's estimate of a
/// worker's start.
const ESTIMATED_ROUND_START: std::time::Duration = crate::session::WORKER_START;

/// A run's start when no stored run has an end time: the estimate runs announce.
fn estimated_run_start() -> std::time::Duration {
    crate::runner::MeasureConfig::standard().startup
}

/// The command that runs `plan` for `benchmark`: one run, or a series of runs back to
/// back (`oscost noise`, which stores them as noise runs: `plan` and `compare` read
/// them); the same number of `oscost run`s spread over time does it as well.
fn command(benchmark: &str, plan: &Plan, quick: bool) -> String {
    let quick = if quick { " --quick" } else { "" };
    if plan.runs == 1 {
        format!("oscost run {benchmark} --rounds {}{quick}", plan.rounds)
    } else {
        format!("oscost noise {benchmark} --runs {} --rounds {}{quick}", plan.runs, plan.rounds)
    }
}

/// The median wall time of the rounds that measured `row`'s figure in the stored
/// runs (None when no round of it was timed).
fn round_seconds(runs: &[RunDocument], row: &ResultRow) -> Option<f64> {
    let label = row.variant_label();
    let times: Vec<f64> = runs
        .iter()
        .flat_map(|d| &d.results)
        .filter(|x| x.benchmark == row.benchmark && x.method == row.method && x.variant_label() == label)
        .flat_map(|x| &x.rounds)
        .filter_map(|round| round.counts.get(&Count::RoundSeconds).copied())
        .filter(|t| t.is_finite() && *t >= 0.0)
        .collect();
    (!times.is_empty()).then(|| crate::stats::median(&times))
}

/// The median set-up time of the stored runs (each run's rows carry it), None when
/// no run recorded one.
fn run_start_seconds(runs: &[RunDocument]) -> Option<f64> {
    let starts: Vec<f64> = runs
        .iter()
        .filter_map(|d| d.results.iter().find_map(|r| r.counts.get(&Count::RunSetupSeconds).copied()))
        .filter(|t| t.is_finite() && *t >= 0.0)
        .collect();
    (!starts.is_empty()).then(|| crate::stats::median(&starts))
}

/// `row`'s figure in every run, cut to a balanced experiment (the fewest rounds of
/// any run, the fewest samples of any round): the estimators assume one.
fn balanced(runs: &[RunDocument], row: &ResultRow) -> Option<(Experiment, Shape)> {
    let label = row.variant_label();
    let rows: Vec<&ResultRow> = runs
        .iter()
        .filter_map(|d| {
            d.results
                .iter()
                .find(|x| x.benchmark == row.benchmark && x.method == row.method && x.variant_label() == label)
        })
        .collect();
    let rounds = rows.iter().map(|r| r.round_slices().len()).min()?;
    let samples = rows.iter().flat_map(|r| r.round_slices()).map(<[f64]>::len).min()?;
    let data: Experiment =
        rows.iter().map(|r| r.round_slices().iter().take(rounds).map(|s| s[..samples].to_vec()).collect()).collect();
    Some((data, (rows.len(), rounds, samples)))
}

/// The plans as a table fitted to `width`, each design's command below it (whole, one
/// to a line, to copy), and what the costs came from.
fn render(plans: &[FigurePlan], target: f64, width: Width) -> String {
    use comfy_table::{ColumnConstraint, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    if let Width::Fit(w) = width {
        t.set_content_arrangement(ContentArrangement::Dynamic).set_width(w);
    }
    t.set_header(vec![
        "figure",
        "sd %: runs / rounds / samples",
        "±now (read from)",
        "plan: runs × rounds × samples",
        "±plan",
        "time",
        "cmd",
    ]);
    // A figure's name is not broken where the width allows it whole.
    let longest = plans.iter().map(|p| p.figure.chars().count()).max().unwrap_or(6);
    if let (Width::Fit(w), Some(col)) = (width, t.column_mut(0)) {
        let keep = longest.min(usize::from(w) / 4);
        // The width counts the cell's padding, a space each side.
        col.set_constraint(ColumnConstraint::LowerBoundary(comfy_table::Width::Fixed(keep as u16 + 2)));
    }
    let mut commands: Vec<&str> = Vec::new();
    let pct = |v: f64, m: f64| format!("{:.1}", v.sqrt() / m * 100.0);
    for p in plans {
        let c = &p.components;
        let n = match commands.iter().position(|x| *x == p.command) {
            Some(i) => i + 1,
            None => {
                commands.push(&p.command);
                commands.len()
            }
        };
        let (runs, rounds, samples) = p.read_from;
        t.add_row(vec![
            crate::report::plain(&p.figure).into_owned(),
            format!("{} / {} / {}", pct(c.runs, c.mean), pct(c.rounds, c.mean), pct(c.samples, c.mean)),
            format!("{:.1}% ({runs}×{rounds}×{samples})", p.now * 100.0),
            format!("{} × {} × {}", p.plan.runs, p.plan.rounds, p.plan.samples),
            format!("{:.1}%{}", p.plan.precision * 100.0, if p.plan.precision > target { " capped" } else { "" }),
            format!("{:.0} s", p.plan.cost),
            format!("[{n}]"),
        ]);
    }
    let mut text = format!("{t}\n");
    for (i, c) in commands.iter().enumerate() {
        text.push_str(&format!("[{}] {c}\n", i + 1));
    }
    let columns = match width {
        Width::Fit(w) | Width::Full(w) => usize::from(w),
        Width::Wide => usize::MAX,
    };
    text.push_str(&wrap(&footnote(plans, target), columns));
    text
}

/// What the plan assumed, in words.
fn footnote(plans: &[FigurePlan], target: f64) -> String {
    let told = |s: &[f64], stored: bool, estimate: f64| {
        if stored {
            format!("measured from the stored runs (median {:.2} s)", crate::stats::median(s))
        } else {
            format!("no stored timing, oscost's estimate of {estimate:.2} s")
        }
    };
    let rounds: Vec<f64> = plans.iter().map(|p| p.costs.round).collect();
    let runs: Vec<f64> = plans.iter().map(|p| p.costs.run).collect();
    let round_stored = plans.iter().all(|p| p.round_cost == Source::Stored);
    let run_stored = plans.iter().all(|p| p.run_cost == Source::Stored);
    let costs = if plans.is_empty() {
        String::new()
    } else {
        format!(
            "; a round's start {}; a run's start {}",
            told(&rounds, round_stored, ESTIMATED_ROUND_START.as_secs_f64()),
            told(&runs, run_stored, estimated_run_start().as_secs_f64())
        )
    };
    format!(
        "plan for ±{:.1}% (95% interval of the mean): runs × rounds × samples a round, Kalibera & Jones's estimators on the stored runs' level variances, over the designs the flags run (--rounds 1 to 100; one run, or 3 to 100 with oscost noise, or as many oscost runs spread over time; the samples a round follow from the rounds); a sample's cost is its median × batch size{costs}.",
        target * 100.0
    )
}

/// `text` broken at spaces into lines of at most `columns` characters (a word longer
/// than that stands alone on its line), each ending in a newline.
fn wrap(text: &str, columns: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > columns {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_between_words() {
        let w = wrap("a plan for two runs of ten rounds each", 12);
        assert!(w.lines().all(|l| l.chars().count() <= 12), "{w}");
        assert_eq!(w.split_whitespace().collect::<Vec<_>>().join(" "), "a plan for two runs of ten rounds each");
    }

    #[test]
    fn a_design_is_printed_as_the_command_that_runs_it() {
        let p = |runs, rounds| Plan { runs, rounds, samples: 3, precision: 0.01, cost: 1.0 };
        assert_eq!(command("ctx.pipe", &p(1, 12), false), "oscost run ctx.pipe --rounds 12");
        assert_eq!(command("ctx.pipe", &p(4, 10), true), "oscost noise ctx.pipe --runs 4 --rounds 10 --quick");
    }
}
