//! A fuzz corpus kept in the tests: random command lines through the parser and the
//! run checks, and random damage to an export through the import validator. Errors
//! are expected and fine; a panic is the bug.

use clap::Parser;
use proptest::prelude::*;

use oscost::cli::{Cli, Command};
use oscost::model::{Method, ResultRow, RunDocument, RunInfo, SCHEMA_VERSION, Skipped};
use oscost::report::{export, import};

/// Words a user (or a script gone wrong) puts on a command line.
#[rustfmt::skip]
const WORDS: &[&str] = &[
    "run", "show", "runs", "export", "import", "compare", "report", "observe", "info", "list",
    "--quick", "--json", "--db", "--format", "--samples", "-o", "--baseline", "--suites",
    "--perf-counters", "syscall", "ctx.pipe", "load.chat", "load.runqueue", "load.yield_storm",
    "spawn.fork_mem", "ctx.footprint", "latest", "lmbench", "0", "-1", "1", "2",
    "18446744073709551616", "9223372036854775808", "-5", "0,1", "", ",", "fifo", "rr", "other",
    "1e9", "64M", "99999999999999G", "notadate", "2026-13-45", "2026-11-22", "=1+1", "\u{1b}[2J",
    "60s", "0s", "-0", "nan", "inf", "1,2,3,4,5,6,7,8,9,10", "/nonexistent/x.db",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(WORDS).prop_map(String::from),
        1 => prop::sample::select(FLAGS).prop_map(String::from),
        1 => "\\PC{0,12}",
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| format!("{n},{}", n / 3)),
    ]
}

/// Options that take a value (also words on their own).
#[rustfmt::skip]
const FLAGS: &[&str] = &[
    "--tasks", "--storm-tasks", "--sizes", "--parent-mem", "--stride", "--rooms", "--messages",
    "--nice", "--cpu", "--policy", "--save", "--suite", "--noop", "--for", "--interval", "--since",
    "--until",
];

/// A command line: mostly a subcommand, then flags with values, then anything.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    let sub = prop::sample::select(&["run", "run", "run", "observe", "runs", "show", "compare", "export"][..]);
    let flag = (prop::sample::select(FLAGS), word()).prop_map(|(f, v)| vec![f.to_string(), v]);
    (sub, prop::collection::vec(flag, 0..4), prop::collection::vec(word(), 0..3)).prop_map(|(s, flags, rest)| {
        std::iter::once(s.to_string()).chain(flags.into_iter().flatten()).chain(rest).collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6000, ..ProptestConfig::default() })]

    /// Parsing never panics, and neither do the checks `run` makes before measuring.
    #[test]
    fn command_lines_never_panic(args in prop_oneof![1 => prop::collection::vec(word(), 0..8), 3 => command_line()]) {
        let argv = std::iter::once("oscost".to_string()).chain(args);
        if let Ok(cli) = Cli::try_parse_from(argv)
            && let Command::Run(run) = cli.command
        {
            let _ = oscost::cli::check_run(&run);
        }
    }
}

fn export_text() -> String {
    let mut r = ResultRow::from_samples("syscall.getppid", Method::PerCall, "ns/call", vec![1.0, 2.0, 3.0], 3)
        .expect("three samples summarise")
        .with_param("via", "raw");
    r.percentiles = None;
    let doc = RunDocument {
        schema_version: SCHEMA_VERSION,
        run: RunInfo {
            id: 1,
            started_at: "2026-01-01T00:00:00Z".into(),
            command_line: "oscost run".into(),
            save_name: Some("base".into()),
            status: oscost::model::RunStatus::Complete,
            uuid: None,
            kind: oscost::model::RunKind::Measure,
        },
        machine: oscost::machine::Machine::example(),
        results: vec![r],
    };
    let skipped = vec![Skipped { benchmark: "ctx.pipe".into(), params: "p".into(), reason: "r".into() }];
    export::json::to_json(&[(doc, skipped)])
}

/// Replacement text for a stretch of the export: JSON values a hostile file might hold.
const VALUES: &[&str] = &[
    "null",
    "-1",
    "0",
    "1e308",
    "-1e308",
    "18446744073709551616",
    "\"\"",
    "\"latest\"",
    "[]",
    "{}",
    "[1,2,3]",
    "\"\\u001b[2J\"",
    "true",
    "7",
    "\"x\"",
    "-0.0",
    "{\"a\":null}",
    "\"9\"",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Any damage to a valid export (a stretch replaced by another value, or the file
    /// cut short) is refused or accepted, never a panic; what is accepted is consistent.
    #[test]
    fn damaged_exports_never_panic(at in 0.0f64..1.0, len in 0usize..12, value in prop::sample::select(VALUES), cut in any::<bool>()) {
        let text = export_text();
        let start = (at * text.len() as f64) as usize;
        let end = (start + len).min(text.len());
        if !(text.is_char_boundary(start) && text.is_char_boundary(end)) {
            return Ok(());
        }
        let damaged = if cut { text[..start].to_string() } else { format!("{}{value}{}", &text[..start], &text[end..]) };
        if let Ok(runs) = import::from_json(&damaged, &|id| id == "syscall.getppid") {
            for (doc, _) in &runs {
                for r in &doc.results {
                    prop_assert!(r.n >= 1 && (r.samples.is_empty() || r.samples.len() == r.n));
                    prop_assert!(r.stddev >= 0.0 && r.ci_low <= r.ci_high);
                }
            }
        }
    }
}
