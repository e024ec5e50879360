//! `nice:N`, `policy:batch|idle|fifo`, `slack:DURATION`: the worker's scheduling
//! settings. A nice value and a policy become the worker's placement (applied as
//! `--nice` and `--policy` are: a real-time policy under the watchdog and its bound);
//! a timer slack is set on the worker's thread before it starts any other, and they
//! inherit it.

use oscost_figure::key::{Param, RUNNER, SCHED_POLICY, Text};
use serde::{Deserialize, Serialize};

use super::{Act, Condition, EnterError, Entered, Kind, Malformed, Setup, Unavailable, state_of};
use crate::bench::BenchOptions;
use oscost_platform::placement::{Placement, Policy};

pub const NICE: Kind = Kind { name: "nice", parse: parse_nice, forms: "nice:-20…19" };
pub const POLICY: Kind = Kind { name: "policy", parse: parse_policy, forms: "policy:batch|idle|fifo" };
pub const SLACK: Kind =
    Kind { name: "slack", parse: parse_slack, forms: "slack:DURATION (1ns, 50us, 1ms; at most 1000ms)" };

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    Nice(i32),
    Policy(Policy),
    /// Nanoseconds.
    Slack(u64),
}

fn parse_nice(rest: &str) -> Result<Condition, Malformed> {
    match rest.parse::<i32>() {
        Ok(n) if (-20..=19).contains(&n) => Ok(Condition::new(Setting::Nice(n))),
        _ => Err(Malformed::NotOneOf { given: rest.into(), expected: "a nice value from -20 to 19" }),
    }
}

fn parse_policy(rest: &str) -> Result<Condition, Malformed> {
    let p = match rest {
        "batch" => Policy::Batch,
        "idle" => Policy::Idle,
        "fifo" => Policy::Fifo,
        _ => return Err(Malformed::NotOneOf { given: rest.into(), expected: "batch, idle or fifo" }),
    };
    Ok(Condition::new(Setting::Policy(p)))
}

const UNITS: [(&str, u64); 4] = [("ms", 1_000_000), ("us", 1_000), ("µs", 1_000), ("ns", 1)];

/// The longest timer slack taken: 1 s. The kernel takes any `unsigned long`, but a
/// slack of more than a second delays every sleep past what any program asks for.
const MAX_SLACK_NS: u64 = 1_000_000_000;

fn parse_slack(rest: &str) -> Result<Condition, Malformed> {
    let (digits, scale) = UNITS
        .iter()
        .find_map(|(u, scale)| rest.strip_suffix(u).map(|d| (d, *scale)))
        .ok_or_else(|| Malformed::NoUnit { given: rest.into() })?;
    let n = digits
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| Malformed::NotOneOf { given: rest.into(), expected: "a positive duration" })?;
    match n.checked_mul(scale) {
        Some(ns) if ns <= MAX_SLACK_NS => Ok(Condition::new(Setting::Slack(ns))),
        _ => Err(Malformed::SlackTooLong { given: rest.into() }),
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setting::Nice(n) => write!(f, "nice:{n}"),
            Setting::Policy(p) => write!(f, "policy:{}", p.as_str()),
            Setting::Slack(ns) => {
                let (unit, scale) = [("ms", 1_000_000), ("us", 1_000), ("ns", 1)]
                    .into_iter()
                    .find(|(_, s)| ns % s == 0)
                    .unwrap_or(("ns", 1));
                write!(f, "slack:{}{unit}", ns / scale)
            }
        }
    }
}

impl Act for Setting {
    fn params_changed(&self) -> &'static [&'static str] {
        match self {
            Setting::Nice(_) => {
                const CHANGED: [&str; 1] = [RUNNER.name()];
                &CHANGED
            }
            Setting::Policy(_) => {
                const CHANGED: [&str; 1] = [SCHED_POLICY.name()];
                &CHANGED
            }
            Setting::Slack(_) => &[],
        }
    }

    /// What the rows show of the setting: the worker labels them with what it applied.
    fn evidence(&self, rows: &[oscost_figure::model::ResultRow]) -> Vec<String> {
        let labelled =
            |key: Param<Text>| rows.iter().find_map(|r| r.params.get(key)).map(|v| format!("{}={v:?}", key.name()));
        match self {
            Setting::Nice(_) => {
                labelled(RUNNER).map(|l| format!("the worker ran at it (rows say {l})")).into_iter().collect()
            }
            Setting::Policy(_) => {
                labelled(SCHED_POLICY).map(|l| format!("the worker ran under it (rows say {l})")).into_iter().collect()
            }
            Setting::Slack(_) => Vec::new(),
        }
    }

    /// The worker's placement under the setting.
    fn adjust(&self, _: &mut crate::runner::MeasureConfig, opts: &mut BenchOptions) {
        match self {
            Setting::Nice(n) => opts.placement.nice = Some(*n),
            Setting::Policy(p) => opts.placement.policy = *p,
            Setting::Slack(_) => {}
        }
    }

    fn prepare(&self, opts: &BenchOptions) -> Result<Setup, Unavailable> {
        prepare(self, opts)
    }

    /// Only a timer slack is entered in the worker (its nanoseconds).
    fn enter(&self, state: &serde_json::Value) -> Result<Entered, EnterError> {
        enter_slack(state_of(state)?)
    }
}

/// Checks the setting can be had here (a lowered nice value or a real-time policy
/// needs privilege), trying it on a scratch thread.
fn prepare(s: &Setting, opts: &BenchOptions) -> Result<Setup, Unavailable> {
    let mut placement = Placement { cpu: None, ..opts.placement.clone() };
    match s {
        Setting::Slack(ns) => return Setup::in_worker(ns),
        Setting::Nice(n) => placement.nice = Some(*n),
        Setting::Policy(p) => placement.policy = *p,
    }
    let tried = std::thread::scope(|scope| {
        scope.spawn(|| placement.apply_static().and_then(|()| placement.probe_policy())).join()
    });
    match tried {
        Ok(Ok(())) => Ok(Setup::default()),
        Ok(Err(e)) => Err(Unavailable(e.to_string())),
        Err(_) => Err(Unavailable("trying the setting failed".into())),
    }
}

/// Sets the worker's timer slack and reads it back.
fn enter_slack(ns: u64) -> Result<Entered, EnterError> {
    oscost_platform::sys::set_timer_slack(ns).map_err(EnterError::call("PR_SET_TIMERSLACK"))?;
    match oscost_platform::sys::timer_slack() {
        Ok(now) if now == ns => {
            Ok(Entered::Here { evidence: vec![format!("timer slack {now} ns (PR_GET_TIMERSLACK)")] })
        }
        other => Err(EnterError::NotInEffect(format!("PR_GET_TIMERSLACK reads {other:?} after setting {ns} ns"))),
    }
}
