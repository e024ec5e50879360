//! What `run --precision` reached, as the lines printed under the run's table: how many
//! figures got within the target and on what evidence, and for each that did not, why
//! and what could still narrow it (see `precision::Standing`).

use crate::judge::precision::{Basis, PROJECTION_ROUNDS, RunJudgement, Standing};

/// The summary line, then one line for each figure that did not reach the target;
/// `ceiling` is the most rounds a benchmark may run (a cap below it came from
/// `--max-time`).
pub fn summary(j: &RunJudgement, ceiling: usize) -> Vec<String> {
    let mut lines = vec![format!(
        "precision ±{:.1}%: {} of {} figures reached it; judged from blocks of {} rounds or more (the drift the run saw) for {}, {} of them with this machine's spread between runs beside; with that spread alone (oscost noise) for {}; on their own interval for the rest",
        j.target * 100.0,
        j.reached,
        j.figures.len(),
        crate::stats::blocks::BLOCK_ROUNDS,
        j.judged_on(Basis::Blocks) + j.judged_on(Basis::BlocksAndBetweenRuns),
        j.judged_on(Basis::BlocksAndBetweenRuns),
        j.judged_on(Basis::BetweenRuns),
    )];
    for f in &j.figures {
        let name =
            format!("{} {} [{}]", super::plain(&f.key.bench), super::plain(f.key.variant()), f.key.method.as_str());
        let now = f.precision.map_or_else(|| "no interval".into(), |p| format!("±{:.1}%", p * 100.0));
        match f.standing {
            Standing::Reached => {}
            Standing::OutOfReach { rounds_needed } => lines.push(format!(
                "  out of reach: {name} at {now} after {} rounds would need {} rounds, past {} (runs spread over time can: oscost plan)",
                f.rounds,
                rounds_needed.map_or_else(|| format!("more than {PROJECTION_ROUNDS}"), |n| format!("about {n}")),
                if f.cap >= ceiling {
                    format!("the ceiling of {} rounds", f.cap)
                } else {
                    format!("the {} that fit in --max-time at its pace", f.cap)
                }
            )),
            Standing::OneWindow => lines.push(format!(
                "  not reached: {name} at {now} in one round: that interval holds one window; the spread between runs (oscost noise) or runs spread over time (compare 1,2,3 …) can say more"
            )),
            Standing::NeedsRuns { between, pairs } => lines.push(format!(
                "  needs runs: {name} at {now}: this machine's noise runs ({pairs} pairs, oscost noise) bound its spread between runs at ±{:.1}% (95%), past ±{:.1}%; rounds of one run cannot narrow that; more noise runs can narrow the bound, runs spread over time the figure (oscost plan)",
                between * 100.0,
                j.target * 100.0
            )),
            Standing::NoRounds => lines.push(format!(
                "  not reached: {name} at {now}: a fitted figure, without rounds of samples to add"
            )),
            Standing::Short => lines.push(format!(
                "  not reached: {name} at {now} after {} rounds ({})",
                f.rounds,
                f.why.unwrap_or("rounds or time spent")
            )),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::precision::FigureJudgement;

    fn figure(standing: Standing, cap: usize) -> FigureJudgement {
        FigureJudgement {
            key: crate::model::FigureKey::new(
                "ctx.pipe".into(),
                crate::model::Method::Batch,
                crate::model::Params::new().with(crate::key::Param::<crate::key::Text>::new("mode"), "thread"),
            ),
            precision: Some(0.05),
            basis: Basis::Blocks,
            rounds: 30,
            cap,
            standing,
            why: None,
        }
    }

    #[test]
    fn each_figure_short_of_the_target_gets_its_reason() {
        let figures = vec![
            figure(Standing::Reached, 1000),
            figure(Standing::OutOfReach { rounds_needed: Some(4000) }, 1000),
            figure(Standing::OutOfReach { rounds_needed: None }, 40),
            figure(Standing::NoRounds, 1000),
        ];
        let lines = summary(&RunJudgement::of(0.02, figures), 1000);
        assert!(lines[0].starts_with("precision ±2.0%: 1 of 4 figures reached it"), "{}", lines[0]);
        assert_eq!(lines.len(), 4, "no line for the figure that reached it: {lines:#?}");
        assert!(lines[1].contains("would need about 4000 rounds, past the ceiling of 1000 rounds"), "{}", lines[1]);
        assert!(lines[2].contains("more than 100000 rounds, past the 40 that fit in --max-time"), "{}", lines[2]);
        assert!(lines[3].contains("a fitted figure"), "{}", lines[3]);
    }
}
