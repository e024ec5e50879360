//! The scheduler under load: run-queue sweeps, yield storms, the chat-room workload,
//! wake-up latency under CPU hogs, and nice-level fairness.

use super::{BenchDef, BenchOptions, Family, Scope, no_check};
use crate::tasks::Mode;

pub mod chat;
pub mod group;
pub mod runqueue;
pub mod storm;
pub mod wakeup;

/// Every task count, for both designs and both modes.
fn sweep(_: Scope, o: &BenchOptions) -> usize {
    4 * o.tasks.len()
}
fn storm_probes(_: Scope, o: &BenchOptions) -> usize {
    o.storm_tasks.len()
}
fn few(_: Scope, _: &BenchOptions) -> usize {
    4
}
fn chat_probes(_: Scope, _: &BenchOptions) -> usize {
    4
}

/// A list of task counts: not empty, each at least `min`, and within the limits.
fn check_counts(flag: &str, counts: &[usize], min: usize, mode: Mode, fds: usize) -> Result<(), String> {
    let Some(&max) = counts.iter().max() else {
        return Err(format!("{flag}: give at least one task count"));
    };
    if let Some(&small) = counts.iter().find(|&&n| n < min) {
        return Err(format!("{flag}: {small} is too few; each count must be at least {min}"));
    }
    group::check_limits(mode, max, fds).map_err(|e| format!("{flag}: {e}"))
}

/// The sweep needs the measuring task and at least one more on the CPU.
fn check_tasks(o: &BenchOptions) -> Result<(), String> {
    check_counts("--tasks", &o.tasks, 2, Mode::Process, 2)
}

fn check_storm(o: &BenchOptions) -> Result<(), String> {
    check_counts("--storm-tasks", &o.storm_tasks, 1, Mode::Thread, 0)
}

fn check_chat(o: &BenchOptions) -> Result<(), String> {
    if o.rooms == 0 || o.messages == 0 {
        return Err("--rooms and --messages must be at least 1".into());
    }
    group::check_limits(Mode::Thread, o.rooms * chat::THREADS_PER_ROOM, 4)
        .map_err(|e| format!("--rooms {}: {e}", o.rooms))
}

pub static BENCHES: [BenchDef; 5] = [
    BenchDef {
        id: "load.runqueue",
        family: Family::Load,
        summary: "switch time against the number of runnable tasks on one CPU: sched_yield loops and a pipe token ring, threads and processes",
        timing_model: "yield: one sched_yield of the measuring task; ring: one lap of the token through N tasks; both divided by the switches the kernel counted per iteration",
        in_default_suite: false,
        probes: sweep,
        check: check_tasks,
        run: runqueue::run,
    },
    BenchDef {
        id: "load.yield_storm",
        family: Family::Load,
        summary: "N sched_yield loops on all CPUs: system context switches per second, per-task progress and its evenness",
        timing_model: storm_model(),
        in_default_suite: false,
        probes: storm_probes,
        check: check_storm,
        run: storm::run,
    },
    BenchDef {
        id: "load.chat",
        family: Family::Load,
        summary: "chat rooms of 20 users over loopback TCP (80 threads per room), every delivery counted, at nice 0 and 19",
        timing_model: "from releasing the client senders to the last receiver's last message; messages delivered per second",
        in_default_suite: false,
        probes: chat_probes,
        check: check_chat,
        run: chat::run,
    },
    BenchDef {
        id: "load.wakeup",
        family: Family::Load,
        summary: "how late a 1 ms sleeper wakes while K hogs share its CPU at nice 0 and 19",
        timing_model: "one clock_nanosleep(1 ms); the sample is the time past 1 ms",
        in_default_suite: false,
        probes: few,
        check: no_check,
        run: wakeup::run_wakeup,
    },
    BenchDef {
        id: "load.fairness",
        family: Family::Load,
        summary: "CPU shares of hogs at nice 0,0,5,10 on one CPU against the shares the kernel's weights promise",
        timing_model: "CPU time per task from schedstat over five intervals; share = task / all",
        in_default_suite: false,
        probes: few,
        check: no_check,
        run: wakeup::run_fairness,
    },
];

const fn storm_model() -> &'static str {
    "a fixed window in ten intervals; each interval's system-wide switch rate (/proc/stat ctxt) is a sample"
}
