//! The scheduler under load: run-queue sweeps, yield storms, the chat-room workload,
//! wake-up latency under CPU hogs, and nice-level fairness.

use std::time::Duration;

use super::{BenchDef, BenchOptions, Cost, Family, OptionError, RoundPlan, Scope, Warmup, no_check};
use crate::runner::MeasureConfig;
use crate::tasks::Mode;
use oscost_figure::key::BenchId;

pub mod chat;
pub mod group;
pub mod runqueue;
pub mod storm;
pub mod wakeup;

/// Every task count, for both designs and both modes.
/// Four short variants per count (about a probe in all), and starting, pinning and
/// cycling N tasks, which grows faster than N: about 2.4 ms × N + 6.4 µs × N².
fn sweep(_: Scope, o: &BenchOptions, _: &MeasureConfig) -> Cost {
    let setup: f64 = o.tasks.iter().map(|&n| n as f64).map(|n| 2.4e-3 * n + 6.4e-6 * n * n).sum();
    Cost::probes(o.tasks.len()).plus(seconds(setup))
}
/// A fixed window per task count (see `storm::window`).
fn storm_cost(_: Scope, o: &BenchOptions, cfg: &MeasureConfig) -> Cost {
    Cost::fixed(storm::window(cfg) * o.storm_tasks.len().min(u32::MAX as usize) as u32)
}
/// Two nice levels, one run each (three with the standard budgets), each a fixed
/// number of deliveries at about a million a second plus 5 ms to connect.
fn chat_cost(_: Scope, o: &BenchOptions, cfg: &MeasureConfig) -> Cost {
    let deliveries = chat::ChatSize { rooms: o.rooms, messages: o.messages, nice: None }.expected() as f64;
    Cost::fixed(seconds(2.0 * chat::repetitions(cfg) as f64 * (deliveries / 1e6 + 0.005)))
}
/// Five sleeper passes of the batch and per-call budgets together (or of the fewest
/// wakes, at a long interval).
fn wakeup_cost(_: Scope, o: &BenchOptions, cfg: &MeasureConfig) -> Cost {
    Cost::fixed(o.wakeup.pass(cfg.batch_budget + cfg.per_call_budget) * 5)
}
/// One window of three times the batch and per-call budgets.
fn fairness_cost(_: Scope, _: &BenchOptions, cfg: &MeasureConfig) -> Cost {
    Cost::fixed((cfg.batch_budget + cfg.per_call_budget) * 3)
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX / 4)
}

/// A list of task counts: not empty, each at least `min`, and within the limits.
fn check_counts(flag: &'static str, counts: &[usize], min: usize, mode: Mode, fds: usize) -> Result<(), OptionError> {
    let Some(&max) = counts.iter().max() else {
        return Err(OptionError::Empty { flag, what: "task count" });
    };
    if let Some(&small) = counts.iter().find(|&&n| n < min) {
        return Err(OptionError::TooFew { flag, given: small, min });
    }
    group::check_limits(mode, max, fds).map_err(|source| OptionError::Limits { option: flag.into(), source })
}

/// The sweep needs the measuring task and at least one more on the CPU.
fn check_tasks(o: &BenchOptions) -> Result<(), OptionError> {
    check_counts("--tasks", &o.tasks, 2, Mode::Process, 2)
}

fn check_storm(o: &BenchOptions) -> Result<(), OptionError> {
    check_counts("--storm-tasks", &o.storm_tasks, 1, Mode::Thread, 0)
}

fn check_wakeup(o: &BenchOptions) -> Result<(), OptionError> {
    wakeup::check(&o.wakeup)
}

fn check_chat(o: &BenchOptions) -> Result<(), OptionError> {
    if o.rooms == 0 || o.messages == 0 {
        return Err(OptionError::NoChat);
    }
    group::check_limits(Mode::Thread, o.rooms * chat::THREADS_PER_ROOM, 4)
        .map_err(|source| OptionError::Limits { option: format!("--rooms {}", o.rooms), source })
}

pub static BENCHES: [BenchDef; 5] = [
    BenchDef {
        id: runqueue::ID,
        family: Family::Load,
        summary: "switch time against the number of runnable tasks on one CPU: sched_yield loops and a pipe token ring, threads and processes",
        timing_model: "yield: one sched_yield of the measuring task; ring: one lap of the token through N tasks; both divided by the switches the kernel counted per iteration",
        warmup: Warmup::Own(
            "the runner's whole warm-up (30 ms, 10 ms with --quick) at each task count, every task already runnable",
        ),
        in_default_suite: false,
        rounds: RoundPlan::Once,
        cost: sweep,
        check: check_tasks,
        run: runqueue::run,
    },
    BenchDef {
        id: storm::ID,
        family: Family::Load,
        summary: "N sched_yield loops on all CPUs: system context switches per second, per-task progress and its evenness",
        timing_model: storm_model(),
        warmup: Warmup::None("the first of its ten intervals starts when every task is ready"),
        in_default_suite: false,
        rounds: RoundPlan::Once,
        cost: storm_cost,
        check: check_storm,
        run: storm::run,
    },
    BenchDef {
        id: chat::ID,
        family: Family::Load,
        summary: "chat rooms of 20 users over loopback TCP (80 threads per room), every delivery counted, at nice 0 and 19",
        timing_model: "from releasing the client senders to the last receiver's last message; messages delivered per second",
        warmup: Warmup::None("every run is a sample; the connections are made before the clock starts"),
        in_default_suite: false,
        rounds: RoundPlan::Once,
        cost: chat_cost,
        check: check_chat,
        run: chat::run,
    },
    BenchDef {
        id: BenchId::new("load.wakeup"),
        family: Family::Load,
        summary: "how late a sleeper wakes while K hogs share its CPU at nice 0 and 19 (cyclictest's -i, -p, -t)",
        timing_model: "one clock_nanosleep to an absolute deadline an interval (1 ms) after the last; the sample is how late the clock read after it",
        warmup: Warmup::None("every wake is a sample, as every cycle is one of cyclictest's"),
        in_default_suite: false,
        rounds: RoundPlan::Once,
        cost: wakeup_cost,
        check: check_wakeup,
        run: wakeup::run_wakeup,
    },
    BenchDef {
        id: BenchId::new("load.fairness"),
        family: Family::Load,
        summary: "CPU shares of hogs at nice 0,0,5,10 on one CPU against the shares the kernel's weights promise",
        timing_model: "CPU time per task from schedstat over five intervals; share = task / all",
        warmup: Warmup::None("the first of its five intervals starts when the hogs are running"),
        in_default_suite: false,
        rounds: RoundPlan::Once,
        cost: fairness_cost,
        check: no_check,
        run: wakeup::run_fairness,
    },
];

const fn storm_model() -> &'static str {
    "a fixed window in ten intervals; each interval's system-wide switch rate (/proc/stat ctxt) is a sample"
}
