//! The conditions of a paired run, as a table: each condition's figure against the
//! baseline measured in the same rounds, with the paired ratio, its interval, the
//! minimum detectable effect and the verdict.

use comfy_table::Table;
use comfy_table::presets::UTF8_FULL_CONDENSED;

use crate::judge::paired::PairedFigure;

/// The table, or nothing when the run measured no condition.
pub fn render(pairs: &[PairedFigure], threshold: f64, width: super::table::Width) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    super::fit::table(&mut t, width);
    t.set_header(vec![
        "condition",
        "benchmark",
        "variant",
        "method",
        "baseline gm",
        "condition gm",
        "ratio [95% CI]",
        "MDE",
        "verdict",
        "rounds",
    ]);
    for p in pairs {
        t.add_row(vec![
            super::plain(&p.condition).into_owned(),
            super::plain(&p.key.bench).into_owned(),
            super::plain(p.key.variant()).into_owned(),
            p.key.method.as_str().to_string(),
            super::fmt_value(p.paired_baseline, &p.unit),
            super::fmt_value(p.paired_value, &p.unit),
            format!("{:.3} [{:.3}, {:.3}]", p.ratio, p.ci_low, p.ci_high),
            if p.mde.is_finite() { format!("±{:.1}%", p.mde * 100.0) } else { "-".into() },
            p.verdict.to_string(),
            p.pairs.to_string(),
        ]);
    }
    let prose = |text: String| super::fit::prose(&text, width);
    format!(
        "{}\n{t}\n{}\n",
        prose("conditions against the baseline, paired by round (each arm in a fresh worker, in alternating order; rounds: the pairs behind each ratio):".into()),
        prose(format!("ratio: the condition over the baseline, the geometric mean of the rounds' ratios, which is condition gm over baseline gm (each arm's geometric mean of its paired rounds' medians; `show` prints each arm's median of all samples); its 95% interval resamples the paired rounds; a verdict needs the interval to clear ±{:.1}%", threshold * 100.0))
    )
}
