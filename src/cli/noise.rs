//! `oscost noise`: A/A runs of the selected benchmarks, back to back, stored as kind
//! `noise`, then each figure's spread between runs, which `compare` adds to one-run
//! sides (`crate::judge::noise`).

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::args::NoiseArgs;
use super::{Plan, UsageError, out, outln, plan, run_request};
use crate::judge::noise::{FigureNoise, figure_noise};
use crate::model::{RunDocument, RunKind};
use crate::session;

pub fn noise(args: NoiseArgs, db: PathBuf) -> Result<i32> {
    let NoiseArgs { runs, run: mut args } = args;
    if args.suite.is_some() || args.save.is_some() || args.start_at.is_some() {
        return Err(
            UsageError("noise takes benchmarks and run options, not --suite, --save or --start-at".into()).into()
        );
    }
    let Plan { selected, options, .. } = plan(&args)?;
    let (json, quiet) = (args.json, args.quiet);
    args.quiet = true;
    let mut docs: Vec<RunDocument> = Vec::new();
    for i in 0..runs {
        let req = run_request(&args, (selected.clone(), options.clone()), db.clone(), RunKind::Noise);
        let outcome = session::execute(req)?;
        let (doc, _) = outcome.store.load_run(outcome.run_id).context("reading a noise run back")?;
        if !quiet && !json {
            eprintln!("noise run {}/{runs}: run #{} ({:.1} s)", i + 1, outcome.run_id, outcome.elapsed.as_secs_f64());
        }
        docs.push(doc);
        if let Some(sig) = outcome.stopped_by {
            eprintln!("stopped by signal {sig}: {} noise runs are stored", docs.len());
            return Ok(128 + sig);
        }
        if !outcome.failures.is_empty() {
            eprintln!("a benchmark failed in run #{}: its figures have fewer pairs", outcome.run_id);
        }
    }
    // As `compare` reads them: complete runs only (a run with a failed benchmark is
    // left out, and said).
    let total = docs.len();
    docs.retain(|d| d.run.status == crate::model::RunStatus::Complete);
    if docs.len() < total && !json {
        eprintln!("{} of {total} noise runs did not complete and are left out", total - docs.len());
    }
    let noise = figure_noise(&docs);
    if json {
        let ids: Vec<i64> = docs.iter().map(|d| d.run.id).collect();
        outln(&serde_json::to_string_pretty(&serde_json::json!({ "runs": ids, "figures": noise }))?)?;
    } else if !quiet {
        out(&render(&noise, &docs))?;
    }
    Ok(0)
}

/// The figures' noise as a table, with what `compare` does with it.
fn render(noise: &[FigureNoise], docs: &[RunDocument]) -> String {
    use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
    let width = super::width();
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    crate::report::fit::table(&mut t, width);
    t.set_header(vec![
        "benchmark",
        "variant",
        "method",
        "pairs",
        "A/A spread",
        "within runs",
        "between runs",
        "one-run compare",
    ]);
    for n in noise {
        t.add_row(vec![
            crate::report::plain(&n.key.bench).into_owned(),
            crate::report::plain(n.key.variant()).into_owned(),
            n.key.method.as_str().to_string(),
            n.pairs.to_string(),
            n.percent(n.sigma),
            n.percent(n.within),
            n.percent(n.between),
            if n.is_model() { format!("±{:.1}%", n.widening * 100.0) } else { "refused".to_string() },
        ]);
    }
    let ids: Vec<String> = docs.iter().map(|d| format!("#{}", d.run.id)).collect();
    let prose = |text: String| crate::report::fit::prose(&text, width);
    format!(
        "{}\n{t}\n{}\n",
        prose(format!("this machine's noise from {} A/A runs ({}): the A/A spread is the root mean square of consecutive runs' log ratios; within runs, what the runs' own intervals explain of it; between runs, the rest, as one run's standard deviation (σ_b² = (spread² − within²)/2)", docs.len(), ids.join(", "))),
        prose("compare now widens the interval of a one-run side by its figure's between-run spread when that side ran on a machine with this comparability key (every noise run of that key counts), and run --precision judges a figure with it until it has blocks of rounds of its own; the last column is the least half-width a comparison of one run a side then gets (Student's t over the pairs, in quadrature with its own interval), or \"refused\" where the runs sit a factor of two or more apart as a matter of course: no spread describes that, and compare gives such a figure of one run a side no verdict".into()),
    )
}
