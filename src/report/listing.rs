//! `oscost runs` as text: a line per run. Fitted to the terminal, the start is given to
//! the minute, host and kernel are elided to their columns and the command line (its
//! program named by file name) follows where it has room, else takes a line of its
//! own, elided to the width; `--wide` prints every value whole.

use super::fit::elide;
use super::plain;
use super::table::Width;
use crate::store::RunListing;

/// The fewest columns the command line is given beside the run's other fields before
/// it moves to a line of its own.
const COMMAND_ROOM: usize = 20;

/// Stored runs, newest first as listed, with a header (nothing when there are none).
pub fn runs(runs: &[RunListing], width: Width) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let Some(w) = width.columns().map(usize::from) else { return wide(runs) };
    let fields = |id: &str, started: &str, host: &str, kernel: &str, status: &str, results: &str| {
        format!("{id:>5}  {started:<16}  {host:<12} {kernel:<16} {status:<11} {results:>9}  ")
    };
    let head = fields("run", "started (UTC)", "host", "kernel", "status", "results");
    let beside = w >= head.chars().count() + COMMAND_ROOM;
    let mut out = if beside { format!("{head}command\n") } else { format!("{}\n       command\n", head.trim_end()) };
    for r in runs {
        let started = r.started_at.get(..16).unwrap_or(&r.started_at).replace('T', " ");
        let line = fields(
            &r.id.to_string(),
            &started,
            &elide(&plain(&r.hostname), 12),
            &elide(&plain(&r.kernel_release), 16),
            &r.status.to_string(),
            &format!("{} rows", r.results),
        );
        let command = command(r);
        if beside {
            out.push_str(&format!("{line}{}\n", elide(&command, w - line.chars().count())));
        } else {
            out.push_str(&format!("{}\n       {}\n", line.trim_end(), elide(&command, w.saturating_sub(7))));
        }
    }
    out
}

/// The command line as shown: its program by file name, then its arguments, and the
/// name the run was saved under.
fn command(r: &RunListing) -> String {
    let line = plain(&r.command_line);
    let (program, args) = line.split_once(' ').unwrap_or((&line, ""));
    let program = program.rsplit('/').next().unwrap_or(program);
    let saved = r.save_name.as_ref().map(|n| format!("  [saved as {}]", plain(n))).unwrap_or_default();
    format!("{program} {args}{saved}").trim_start().to_string()
}

/// Every field whole (`--wide`).
fn wide(runs: &[RunListing]) -> String {
    let mut out = format!(
        "{:>5}  {:<20}  {:<16} {:<24} {:<11} {:>9}  command\n",
        "run", "started (UTC)", "host", "kernel", "status", "results"
    );
    for r in runs {
        out.push_str(&format!(
            "{:>5}  {}  {:<16} {:<24} {:<11} {:>4} rows  {}{}\n",
            r.id,
            r.started_at,
            plain(&r.hostname),
            plain(&r.kernel_release),
            r.status,
            r.results,
            plain(&r.command_line),
            r.save_name.as_ref().map(|n| format!("  [saved as {}]", plain(n))).unwrap_or_default()
        ));
    }
    out
}
