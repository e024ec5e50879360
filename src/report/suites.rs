//! Named suites that reproduce classic published tables on this machine: what to run,
//! which options they need, and how to print the result in the original's layout.

use crate::model::{Method, ResultRow, RunDocument};

pub struct Suite {
    pub name: &'static str,
    pub summary: &'static str,
    pub selectors: &'static [&'static str],
    /// Option values the layout needs; the CLI applies them to the run.
    pub presets: Presets,
    pub render: fn(&RunDocument) -> String,
}

/// Family options a suite sets (plain data: the report layer knows no family).
#[derive(Debug, Clone, Copy, Default)]
pub struct Presets {
    /// Runnable-task counts for load.runqueue.
    pub tasks: Option<&'static [usize]>,
    /// Chat rooms for load.chat.
    pub rooms: Option<usize>,
}

/// The batch (or headline) figure of `id` whose params include all of `want`.
fn fig<'a>(d: &'a RunDocument, id: &str, want: &[(&str, &str)]) -> Option<&'a ResultRow> {
    let matches = |r: &&ResultRow| {
        r.benchmark == id
            && want.iter().all(|(k, v)| {
                r.params.get(*k).is_some_and(|p| {
                    p.as_str() == Some(v)
                        || p.as_u64().is_some_and(|n| v.parse() == Ok(n))
                        || p.as_i64().is_some_and(|n| v.parse() == Ok(n))
                })
            })
    };
    d.results.iter().filter(matches).find(|r| r.method == Method::Batch).or_else(|| d.results.iter().find(matches))
}

fn us(r: Option<&ResultRow>, scale: f64) -> String {
    r.map(|r| format!("{:.2}", r.median * scale / 1000.0)).unwrap_or_else(|| "n/a".into())
}

fn line(out: &mut String, label: &str, value: String) {
    out.push_str(&format!("{label:<44} {value}\n"));
}

fn travis98(d: &RunDocument) -> String {
    let mut o = String::from("travis98: Linux scheduler costs after the 1998 table (µs)\n\n");
    line(&mut o, "Spawn new process (fork+exec)", us(fig(d, "spawn.fork_exec", &[("phase", "full_cycle")]), 1.0));
    line(&mut o, "Clone current process (fork)", us(fig(d, "spawn.fork_exit", &[("phase", "full_cycle")]), 1.0));
    line(&mut o, "Spawn new thread", us(fig(d, "spawn.thread", &[("phase", "full_cycle")]), 1.0));
    line(&mut o, "Switch current process (sched_yield)", us(fig(d, "ctx.yield", &[("mode", "process")]), 1.0));
    line(&mut o, "Switch current thread (sched_yield)", us(fig(d, "ctx.yield", &[("mode", "thread")]), 1.0));
    o.push_str("\nSwitch time (µs) against runnable contexts, sched_yield design, one CPU\n");
    o.push_str(&format!("{:<10} {:>12} {:>12}\n", "contexts", "processes", "threads"));
    for n in ["2", "4", "8", "10", "20", "40"] {
        let p = fig(d, "load.runqueue", &[("design", "yield"), ("mode", "process"), ("tasks", n)]);
        let t = fig(d, "load.runqueue", &[("design", "yield"), ("mode", "thread"), ("tasks", n)]);
        o.push_str(&format!("{n:<10} {:>12} {:>12}\n", us(p, 1.0), us(t, 1.0)));
    }
    o
}

fn molnar02(d: &RunDocument) -> String {
    let mut o = String::from("molnar02: O(1) scheduler evaluation workloads\n\n");
    for nice in ["0", "19"] {
        let r = fig(d, "load.chat", &[("nice", nice)]);
        line(
            &mut o,
            &format!("chat, 10 rooms, nice {nice} (messages/s)"),
            r.map(|r| format!("{:.0}", r.median)).unwrap_or_else(|| "n/a".into()),
        );
    }
    for r in d.results.iter().filter(|r| r.benchmark == "load.yield_storm") {
        let n = r.params.get("tasks").map(|v| v.to_string()).unwrap_or_default();
        line(&mut o, &format!("yield loop, {n} tasks (context switches/s)"), format!("{:.0}", r.median));
    }
    line(&mut o, "fork+exit (µs)", us(fig(d, "spawn.fork_exit", &[("phase", "full_cycle")]), 1.0));
    line(&mut o, "fork+execve (µs)", us(fig(d, "spawn.fork_exec", &[("phase", "full_cycle")]), 1.0));
    line(&mut o, "fork+/bin/sh -c (µs)", us(fig(d, "spawn.shell", &[("phase", "full_cycle")]), 1.0));
    o
}

fn bartz24(d: &RunDocument) -> String {
    let mut o = String::from("bartz24: system call and switch latencies (ns unless noted)\n\n");
    let ns = |r: Option<&ResultRow>| r.map(|r| format!("{:.1}", r.median)).unwrap_or_else(|| "n/a".into());
    line(&mut o, "getpid (raw syscall)", ns(fig(d, "syscall.getpid", &[("via", "raw")])));
    line(&mut o, "getpid (C library)", ns(fig(d, "syscall.getpid", &[("via", "libc")])));
    line(&mut o, "getuid", ns(fig(d, "syscall.getuid", &[])));
    line(&mut o, "gettimeofday (vDSO)", ns(fig(d, "syscall.gettimeofday", &[("via", "vdso")])));
    line(&mut o, "open+close", ns(fig(d, "syscall.open_close", &[])));
    let pc = d.results.iter().find(|r| {
        r.benchmark == "syscall.getpid"
            && r.method == Method::PerCall
            && r.params.get("via").and_then(|v| v.as_str()) == Some("raw")
    });
    line(
        &mut o,
        "getpid, rdtsc bracket per call (p50)",
        pc.and_then(|r| r.percentiles.as_ref()).map(|p| format!("{:.1}", p.p50)).unwrap_or_else(|| "n/a".into()),
    );
    line(&mut o, "getpid, clock over a batch (median)", ns(fig(d, "syscall.getpid", &[("via", "raw")])));
    line(&mut o, "sched_yield, alone on its CPU", ns(fig(d, "syscall.sched_yield", &[])));
    line(&mut o, "sleep(0), alone", ns(fig(d, "ctx.sleep0", &[("competition", "alone")])));
    line(&mut o, "sleep(0), with a runnable peer", ns(fig(d, "ctx.sleep0", &[("competition", "yielding_peer")])));
    o.push_str("\nPing-pong per hand-off (ns): regular = unpinned, affinity = same CPU\n");
    o.push_str(&format!("{:<10} {:>12} {:>12}\n", "", "regular", "affinity"));
    for (label, id) in [("condvar", "ctx.condvar"), ("pipe", "ctx.pipe")] {
        let reg = fig(d, id, &[("mode", "thread"), ("placement", "unpinned")]);
        let aff = fig(d, id, &[("mode", "thread"), ("placement", "same_cpu")]);
        o.push_str(&format!("{label:<10} {:>12} {:>12}\n", ns(reg), ns(aff)));
    }
    let policy = d.results.iter().find_map(|r| r.params.get("policy").and_then(|v| v.as_str()).map(str::to_string));
    match policy {
        Some(p) => o.push_str(&format!("(this run used --policy {p}: these are the high-priority columns)\n")),
        None => o.push_str("(high-priority columns: run again with --policy fifo, which needs root or CAP_SYS_NICE)\n"),
    }
    o
}

fn lmbench(d: &RunDocument) -> String {
    let mut o = String::new();
    let mic = |r: Option<&ResultRow>, scale: f64| {
        r.map(|r| format!("{:.4} microseconds", r.median * scale / 1000.0)).unwrap_or_else(|| "n/a".into())
    };
    o.push_str(&format!("Simple syscall: {}\n", mic(fig(d, "syscall.getppid", &[]), 1.0)));
    o.push_str(&format!("Simple read: {}\n", mic(fig(d, "syscall.read", &[]), 1.0)));
    o.push_str(&format!("Simple write: {}\n", mic(fig(d, "syscall.write", &[]), 1.0)));
    o.push_str(&format!("Simple stat: {}\n", mic(fig(d, "syscall.stat", &[]), 1.0)));
    o.push_str(&format!("Simple open/close: {}\n", mic(fig(d, "syscall.open_close", &[]), 1.0)));
    o.push_str(&format!("Process fork+exit: {}\n", mic(fig(d, "spawn.fork_exit", &[("phase", "full_cycle")]), 1.0)));
    o.push_str(&format!("Process fork+execve: {}\n", mic(fig(d, "spawn.fork_exec", &[("phase", "full_cycle")]), 1.0)));
    o.push_str(&format!("Process fork+/bin/sh -c: {}\n", mic(fig(d, "spawn.shell", &[("phase", "full_cycle")]), 1.0)));
    // lat_pipe and lat_unix report a round trip: two hand-offs.
    o.push_str(&format!(
        "Pipe latency: {}\n",
        mic(fig(d, "ctx.pipe", &[("mode", "process"), ("placement", "unpinned")]), 2.0)
    ));
    o.push_str(&format!(
        "AF_UNIX sock stream latency: {}\n",
        mic(fig(d, "ctx.unix", &[("mode", "process"), ("placement", "unpinned")]), 2.0)
    ));
    o.push_str("\n\"size=0k ovr=0 (lat_ctx: token ring of processes on one CPU, µs per switch)\n");
    for n in ["2", "4", "8", "16"] {
        let r = fig(d, "load.runqueue", &[("design", "ring"), ("mode", "process"), ("tasks", n)]);
        o.push_str(&format!(
            "{n} {}\n",
            r.map(|r| format!("{:.2}", r.median / 1000.0)).unwrap_or_else(|| "n/a".into())
        ));
    }
    o
}

pub static SUITES: [Suite; 4] = [
    Suite {
        name: "travis98",
        summary: "spawn/clone/thread creation, process and thread switches, switch time against 2–40 runnable contexts",
        selectors: &["spawn.fork_exec", "spawn.fork_exit", "spawn.thread", "ctx.yield", "load.runqueue"],
        presets: Presets { tasks: Some(&[2, 4, 8, 10, 20, 40]), rooms: None },
        render: travis98,
    },
    Suite {
        name: "molnar02",
        summary: "chat rooms (10) at nice 0 and 19, yield-loop switches per second, fork+exit / fork+execve / fork+sh",
        selectors: &["load.chat", "load.yield_storm", "spawn.fork_exit", "spawn.fork_exec", "spawn.shell"],
        presets: Presets { tasks: None, rooms: Some(10) },
        render: molnar02,
    },
    Suite {
        name: "bartz24",
        summary: "getpid/getuid/gettimeofday/open latencies, rdtsc vs clock for getpid, sched_yield and sleep(0), condvar and pipe ping-pong with and without affinity",
        selectors: &[
            "syscall.getpid",
            "syscall.getuid",
            "syscall.gettimeofday",
            "syscall.open_close",
            "syscall.sched_yield",
            "ctx.sleep0",
            "ctx.condvar",
            "ctx.pipe",
        ],
        presets: Presets { tasks: None, rooms: None },
        render: bartz24,
    },
    Suite {
        name: "lmbench",
        summary: "the lat_syscall, lat_ctx, lat_proc, lat_pipe and lat_unix rows",
        selectors: &[
            "syscall.getppid",
            "syscall.read",
            "syscall.write",
            "syscall.stat",
            "syscall.open_close",
            "spawn.fork_exit",
            "spawn.fork_exec",
            "spawn.shell",
            "ctx.pipe",
            "ctx.unix",
            "load.runqueue",
        ],
        presets: Presets { tasks: Some(&[2, 4, 8, 16]), rooms: None },
        render: lmbench,
    },
];

pub fn find(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(results: Vec<ResultRow>) -> RunDocument {
        RunDocument {
            schema_version: 1,
            run: crate::model::RunInfo {
                id: 1,
                started_at: "t".into(),
                command_line: "c".into(),
                save_name: None,
                status: "complete".into(),
                uuid: None,
                kind: crate::model::RunKind::MEASURE.into(),
            },
            machine: crate::machine::Machine::example(),
            results,
        }
    }

    fn batch(id: &str, median: f64) -> ResultRow {
        ResultRow::from_samples(id, Method::Batch, "ns/call", vec![median], 1).unwrap()
    }

    /// The line of `text` that starts with `label`.
    fn line_of<'a>(text: &'a str, label: &str) -> &'a str {
        text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no line {label:?} in\n{text}"))
    }

    #[test]
    fn each_layout_puts_a_figure_on_its_line_and_n_a_where_a_row_is_missing() {
        let d = doc(vec![
            batch("syscall.getppid", 110.0),
            batch("syscall.getuid", 111.1),
            batch("spawn.fork_exit", 123_456.0).with_param("phase", "full_cycle"),
        ]);
        let t = travis98(&d);
        assert!(line_of(&t, "Clone current process (fork)").ends_with(" 123.46"), "{t}");
        assert!(line_of(&t, "Spawn new thread").ends_with(" n/a"), "{t}");
        let m = molnar02(&d);
        assert!(line_of(&m, "fork+exit (µs)").ends_with(" 123.46"), "{m}");
        assert!(line_of(&m, "chat, 10 rooms, nice 0").ends_with(" n/a"), "{m}");
        let b = bartz24(&d);
        assert!(line_of(&b, "getuid").ends_with(" 111.1"), "{b}");
        assert!(line_of(&b, "open+close").ends_with(" n/a"), "{b}");
        let l = lmbench(&d);
        assert!(l.contains("Simple syscall: 0.1100 microseconds"), "{l}");
        assert!(l.contains("Simple read: n/a"), "{l}");
        assert!(line_of(&l, "Process fork+exit:").contains("123.4560"), "{l}");
    }
}
