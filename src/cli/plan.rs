//! `oscost plan`: for each figure of the stored runs, the variance each level adds
//! (runs, rounds, samples: `stats::planner`) and the cheapest design that reaches a
//! requested precision, with what it costs.

use std::path::Path;

use anyhow::Result;

use super::{UsageError, out, outln};
use crate::model::{Method, ResultRow, RunDocument, RunKind};
use crate::stats::planner::{self, Components, Costs, Experiment, Plan};

/// An experiment's shape: runs, rounds a run, samples a round.
type Shape = (usize, usize, usize);
use crate::store::RunFilter;

/// What starting one round costs beyond its samples: a worker process started and
/// its clocks calibrated. Assumed (not measured per run): about what a quick round's
/// start takes on this project's 2-vCPU VM.
pub const ASSUMED_ROUND_START_S: f64 = 0.05;

/// Caps on a plan: samples a round, rounds a run, runs.
const CAPS: (usize, usize, usize) = (2_000, 100, 1_000);

/// One figure's plan.
#[derive(Debug, serde::Serialize)]
struct FigurePlan {
    figure: String,
    /// The stored design the components were read from: runs × rounds × samples.
    read_from: (usize, usize, usize),
    components: Components,
    costs: Costs,
    now: f64,
    plan: Plan,
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
    let run_cost = crate::runner::MeasureConfig::standard().startup.as_secs_f64();
    let mut plans = Vec::new();
    // The newest run names the figures.
    let newest = &runs[runs.len() - 1];
    for r in newest.results.iter().filter(|r| r.method == Method::Batch) {
        if !figures.is_empty() && !figures.iter().any(|f| crate::history::matches(f, r)) {
            continue;
        }
        let Some((data, shape)) = balanced(&runs, r) else { continue };
        let Some(c) = planner::components(&data) else { continue };
        let batch = r.param_f64("batch_size").unwrap_or(1.0);
        let costs = Costs { sample: c.mean * batch * 1e-9, round: ASSUMED_ROUND_START_S, run: run_cost };
        plans.push(FigurePlan {
            figure: format!("{} {}", r.benchmark, r.variant_label()).trim().to_string(),
            read_from: shape,
            now: planner::precision(&c, shape.0, shape.1, shape.2),
            plan: planner::plan(&c, &costs, target, CAPS),
            components: c,
            costs,
        });
    }
    if json {
        outln(&serde_json::to_string_pretty(&plans)?)?;
    } else {
        out(&render(&plans, target))?;
    }
    Ok(0)
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

fn render(plans: &[FigurePlan], target: f64) -> String {
    use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    crate::report::fit::table(&mut t, super::width());
    t.set_header(vec![
        "figure",
        "sd: runs / rounds / samples",
        "read from",
        "±now",
        "plan: runs × rounds × samples",
        "±plan",
        "time",
    ]);
    let pct = |v: f64, m: f64| format!("{:.1}%", v.sqrt() / m * 100.0);
    for p in plans {
        let c = &p.components;
        t.add_row(vec![
            crate::report::plain(&p.figure).into_owned(),
            format!("{} / {} / {}", pct(c.runs, c.mean), pct(c.rounds, c.mean), pct(c.samples, c.mean)),
            format!("{}×{}×{}", p.read_from.0, p.read_from.1, p.read_from.2),
            format!("{:.1}%", p.now * 100.0),
            format!("{} × {} × {}", p.plan.runs, p.plan.rounds, p.plan.samples),
            format!("{:.1}%{}", p.plan.precision * 100.0, if p.plan.precision > target { " (capped)" } else { "" }),
            format!("{:.0} s", p.plan.cost),
        ]);
    }
    let note = format!(
        "plan for ±{:.1}% (95% interval of the mean): Kalibera & Jones's optimum from the stored runs' level variances; costs: a sample measured (its median × batch size), a round's start assumed {ASSUMED_ROUND_START_S} s, a run's start assumed {} s",
        target * 100.0,
        crate::runner::MeasureConfig::standard().startup.as_secs_f64()
    );
    format!("{t}\n{}\n", crate::report::fit::prose(&note, super::width()))
}
