//! The text report's entry: which layout a run or a set of rows prints in. A
//! simulated run prints its own tables (`sim`); a fitted width prints one screen
//! (`screen`); `-v` and `--wide` print the full table (`table`). Its own file so that
//! the layouts need not know each other.

use super::fit::Width;
use crate::model::{ResultRow, RunDocument, RunKind, Skipped};

/// A stored run as text, in the layout `width` asks for.
pub fn render_run(doc: &RunDocument, skipped: &[Skipped], width: Width) -> String {
    render_run_as(doc, skipped, width, false)
}

/// [`render_run`] for the run just measured, whose preflight warnings were printed as
/// they were found: the one-screen header counts them instead of saying them twice.
pub fn render_fresh_run(doc: &RunDocument, skipped: &[Skipped], width: Width) -> String {
    render_run_as(doc, skipped, width, true)
}

fn render_run_as(doc: &RunDocument, skipped: &[Skipped], width: Width, preflight_said: bool) -> String {
    if doc.run.kind == RunKind::Sim {
        let mut out = super::sim::render(doc, width);
        out.push('\n');
        for line in super::sim::profiles(doc) {
            // A term's basis runs long: wrapped under its text, the columns kept.
            out.push_str(&super::fit::hanging(&line, width, 6));
            out.push('\n');
        }
        return out;
    }
    match width {
        Width::Fit(w) => super::screen::render_run(doc, skipped, w, preflight_said),
        Width::Full(_) | Width::Wide => super::table::render_run_full(doc, skipped, width),
    }
}

/// Result rows (any run, any families) as text: one screen when fitted, else the full
/// table.
pub fn render_results(rows: &[ResultRow], skipped: &[Skipped], width: Width) -> String {
    match width {
        Width::Fit(w) => super::screen::render_results(rows, skipped, w, None),
        Width::Full(_) | Width::Wide => super::table::render_results_full(rows, skipped, width),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fit::DEFAULT_WIDTH;
    use super::*;
    use crate::model::{Count, Flag, FlagCode, Method};

    /// The default table fits 100 columns, whatever the rows: long variants, rates
    /// in the millions, flags, counts; and every number of a line is in its one unit.
    #[test]
    fn the_fitted_table_fits_and_keeps_one_unit_a_line() {
        let mut rows = Vec::new();
        for i in 0..6 {
            let mut b = ResultRow::from_samples(
                "ctx.footprint",
                Method::Batch,
                "ns/hand-off",
                vec![1400.0, 1500.0, 9988.0, 13370.0],
                4,
            )
            .unwrap()
            .with_param("mode", "process")
            .with_param("placement", "same_cpu")
            .with_param("size_bytes", 4096 << i)
            .with_param("stride_bytes", 64);
            b.counts.insert(Count::SwitchesPerOp, 1.0);
            b.counts.insert(Count::ParentAnonKib, 4321.0);
            b.counts.insert(Count::ParentFileKib, 5555.0);
            b.flag(Flag::new(FlagCode::TraceDisagrees, "the trace saw fewer switches"));
            b.flag(Flag::new(FlagCode::Intruded, "third tasks ran"));
            rows.push(b);
        }
        let rate =
            ResultRow::from_samples("load.yield_storm", Method::Workload, "switches/s", vec![2.0e6, 2.4e6, 2.6e6], 3)
                .unwrap()
                .with_param("tasks", 8);
        rows.push(rate);
        let t = render_results(&rows, &[], Width::Fit(DEFAULT_WIDTH));
        for l in t.lines().filter(|l| l.starts_with(['│', '┌', '└', '╞', '├'])) {
            assert!(l.chars().count() <= 100, "{} columns: {l}\n{t}", l.chars().count());
        }
        assert!(!t.contains("e6") && !t.contains("e5"), "rates print plain: {t}");
        assert!(t.contains("2400000"), "{t}");
        // 9988 ns and 13.37 µs in one line are both in the line's unit (ns).
        assert!(!t.contains("µs"), "one unit a line: {t}");
        let wide = render_results(&rows, &[], Width::Wide);
        assert!(wide.lines().any(|l| l.chars().count() > 100), "--wide keeps every column");
        assert!(wide.contains("per-call p50"));
    }
}
