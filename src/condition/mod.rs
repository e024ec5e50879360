//! Conditions: a setting, an isolation, an observer or a neighbour under which a
//! benchmark is measured beside an unchanged baseline (`run --condition SPEC`).
//!
//! Why paired: two separate runs differ by the machine's drift between them (±10–15%
//! on a shared VM), which swamps what most isolation costs. Measured in the same
//! rounds, back to back in fresh workers and in alternating order (`session`), the
//! baseline and the condition see the same drift, and the per-round ratio cancels it
//! (`paired`).
//!
//! A condition acts at one or more of three places:
//! - for the whole run, in the coordinator ([`prepare`]): cgroups are made (and
//!   recorded in the [`journal`] first, so a run killed with -9 has them removed by the
//!   next); a setting of the whole system (THP) is taken under the journal's lock, so
//!   one run at a time changes it, and its original value recorded once;
//! - around each of its rounds ([`Prepared::hold_round`]): a sysfs setting written and
//!   put back, a neighbour started and killed, the tracepoints opened and closed;
//! - inside the worker ([`InWorker`], [`enter`]): a seccomp filter, namespaces, a
//!   speculation control, a timer slack, a cgroup joined. The worker checks each is in
//!   effect before it measures and says how it knows (the evidence of [`Entered::Here`]); the
//!   kernel undoes these when the worker exits.
//!
//! A condition that needs privilege or a kernel feature this machine lacks is
//! [`Unavailable`] with the reason; the baseline still runs. A new condition is its own
//! file and one line in [`KINDS`].

mod cgroup;
pub mod journal;
pub mod neighbour;
mod ns;
mod observer;
mod sched;
mod seccomp;
mod settings;
mod spec;
mod thp;

use serde::{Deserialize, Serialize};

use crate::bench::BenchOptions;
use crate::runner::MeasureConfig;

/// A condition as the user named it, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    Seccomp(seccomp::Filter),
    Namespaces(ns::Namespaces),
    Cgroup(cgroup::Setting),
    Spec(spec::Feature),
    Observer(observer::Observer),
    Neighbour(neighbour::Load),
    Sched(sched::Setting),
    Thp(thp::Mode),
}

/// One kind of condition: the name before the colon, how the rest parses, and what it
/// is, for `--help` and errors.
pub struct Kind {
    pub name: &'static str,
    pub parse: fn(&str) -> Result<Condition, Malformed>,
    pub forms: &'static str,
}

/// Every kind of condition.
pub const KINDS: &[Kind] = &[
    seccomp::KIND,
    ns::KIND,
    cgroup::KIND,
    spec::KIND,
    observer::KIND,
    neighbour::KIND,
    sched::NICE,
    sched::POLICY,
    sched::SLACK,
    thp::KIND,
];

/// The most CPUs a condition may name (CPU numbers 0 to 4095): the kernel's default
/// ceiling on x86 (`CONFIG_NR_CPUS`), checked before a list of them is made.
pub const MAX_CPUS: usize = 4096;

/// Why a condition's text could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConditionError {
    #[error("unknown condition {0:?}; conditions are: {forms}", forms = all_forms())]
    Unknown(String),
    #[error("condition {text:?}: {why} (forms: {forms})")]
    Malformed { text: String, why: Malformed, forms: &'static str },
}

/// Why the text after a condition's name does not parse; each names what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("{given:?} is not {expected}")]
    NotOneOf { given: String, expected: &'static str },
    #[error("{given:?} needs a unit: ns, us or ms")]
    NoUnit { given: String },
    #[error("{given:?} is longer than the longest timer slack taken, 1000ms (1 s)")]
    SlackTooLong { given: String },
    #[error("{what} takes {low} to {high}{of}")]
    Range { what: &'static str, low: u64, high: u64, of: &'static str },
    #[error("{given:?} is no cgroup setting")]
    NoCgroupSetting { given: String },
    #[error(transparent)]
    Cgroup(#[from] cgroup::SpecError),
    #[error("{given:?} is not a CPU number (0 to {})", MAX_CPUS - 1)]
    CpuNumber { given: String },
    /// Nothing after the name, or a part missing: what to give.
    #[error("{hint}")]
    Incomplete { hint: &'static str },
}

/// Why a worker could not enter its condition, or cannot show it is in effect.
#[derive(Debug, thiserror::Error)]
pub enum EnterError {
    /// A call or a file the entering needs failed.
    #[error("entering the condition failed: {what}: {source}")]
    Call { what: String, source: std::io::Error },
    /// The kernel took the change but does not read back as in effect: what it reads.
    #[error("entering the condition failed: {0}")]
    NotInEffect(String),
}

impl EnterError {
    /// The failure of `what` (a call or a file), for `map_err`.
    fn call(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| EnterError::Call { what, source }
    }
}

/// Why the coordinator could not hold a condition through one of its rounds.
#[derive(Debug, thiserror::Error)]
pub enum RoundError {
    #[error(transparent)]
    Setting(#[from] thp::SetError),
    #[error(transparent)]
    Neighbour(#[from] neighbour::StartError),
    #[error(transparent)]
    Observer(#[from] observer::WatchError),
}

/// Why a round's rows are not measured under its condition, though the round ran.
#[derive(Debug, thiserror::Error)]
pub enum NotActed {
    #[error(transparent)]
    SettingChanged(#[from] thp::NotHeld),
    #[error("cgroup:split acts on hand-offs between two tasks; this benchmark started no peer")]
    NoPeer,
    #[error("observer:perf attaches to benchmarks of at most 4 tasks, and no counter could be attached here")]
    NoCounter,
}

/// Every kind's forms, for help and errors.
pub fn all_forms() -> String {
    KINDS.iter().map(|k| k.forms).collect::<Vec<_>>().join(", ")
}

impl std::str::FromStr for Condition {
    type Err = ConditionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let kind = KINDS.iter().find(|k| k.name == name).ok_or_else(|| ConditionError::Unknown(text.into()))?;
        (kind.parse)(rest).map_err(|why| ConditionError::Malformed { text: text.into(), why, forms: kind.forms })
    }
}

impl std::fmt::Display for Condition {
    /// The canonical text, which parses back to the same condition: rows carry it as
    /// their `condition` parameter.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Condition::Seccomp(x) => write!(f, "seccomp:{x}"),
            Condition::Namespaces(x) => write!(f, "ns:{x}"),
            Condition::Cgroup(x) => write!(f, "cgroup:{x}"),
            Condition::Spec(x) => write!(f, "spec:{x}"),
            Condition::Observer(x) => write!(f, "observer:{x}"),
            Condition::Neighbour(x) => write!(f, "neighbour:{x}"),
            Condition::Sched(x) => write!(f, "{x}"),
            Condition::Thp(x) => write!(f, "thp:{x}"),
        }
    }
}

/// The parameter every row measured under a condition carries.
pub const PARAM: &str = crate::paired::CONDITION;

/// The row parameters the condition named by `text` changes itself (none for a text
/// that names no condition): what `paired` ignores when it finds a row's baseline.
pub fn params_changed_by(text: &str) -> &'static [&'static str] {
    text.parse::<Condition>().map(|c| c.params_changed()).unwrap_or(&[])
}

impl Condition {
    /// Row parameters the condition itself changes (a nice value is recorded as the
    /// rows' `runner`): a condition row's baseline is the row equal in every other.
    pub fn params_changed(&self) -> &'static [&'static str] {
        match self {
            Condition::Sched(s) => s.params_changed(),
            Condition::Thp(_) => &["thp"],
            Condition::Seccomp(_)
            | Condition::Namespaces(_)
            | Condition::Cgroup(_)
            | Condition::Spec(_)
            | Condition::Observer(_)
            | Condition::Neighbour(_) => &[],
        }
    }
}

/// Why a condition cannot be measured on this machine, as said to the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// What a worker does to enter a condition before it measures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InWorker {
    Seccomp(seccomp::Filter),
    Namespaces(ns::Entry),
    Cgroup(cgroup::Join),
    Spec(spec::Feature),
    Slack(u64),
}

/// How a worker entered its condition.
pub enum Entered {
    /// In effect in this process, and how that was checked.
    Here { evidence: Vec<String> },
    /// This process only waited for a child that entered it (a new PID namespace holds
    /// the children started after it is made): the child measured and replied, and
    /// this is its exit code.
    WaitedFor(i32),
}

/// Enters `w` in the worker and checks it is in effect.
pub fn enter(w: &InWorker) -> Result<Entered, EnterError> {
    match w {
        InWorker::Seccomp(f) => seccomp::enter(f),
        InWorker::Namespaces(e) => ns::enter(e),
        InWorker::Cgroup(j) => cgroup::enter(j),
        InWorker::Spec(s) => spec::enter(*s),
        InWorker::Slack(ns) => sched::enter_slack(*ns),
    }
}

/// What a condition holds for the whole run; undone when dropped.
pub struct Prepared {
    pub condition: Condition,
    in_worker: Option<InWorker>,
    /// Cgroups made for the run (removed when dropped).
    _cgroups: Option<cgroup::Groups>,
    /// A system setting taken for the run (put back and released when dropped).
    setting: Option<Box<thp::Held>>,
}

/// Makes what `c` needs for the whole run, or says why it cannot be measured here.
pub fn prepare(c: &Condition, opts: &BenchOptions) -> Result<Prepared, Unavailable> {
    let mut p = Prepared { condition: c.clone(), in_worker: None, _cgroups: None, setting: None };
    match c {
        Condition::Seccomp(f) => p.in_worker = Some(InWorker::Seccomp(seccomp::check(f)?)),
        Condition::Namespaces(n) => p.in_worker = Some(InWorker::Namespaces(ns::prepare(n)?)),
        Condition::Cgroup(s) => {
            let (groups, join) = cgroup::prepare(s)?;
            p._cgroups = Some(groups);
            p.in_worker = Some(InWorker::Cgroup(join));
        }
        Condition::Spec(s) => p.in_worker = Some(InWorker::Spec(spec::check(*s)?)),
        Condition::Observer(o) => observer::check(*o)?,
        Condition::Neighbour(n) => neighbour::check(n, opts)?,
        Condition::Sched(s) => p.in_worker = sched::prepare(s, opts)?,
        Condition::Thp(m) => p.setting = Some(Box::new(thp::prepare(*m)?)),
    }
    Ok(p)
}

/// What a worker reported of a round, for [`Prepared::acted`].
pub struct RoundReport<'a> {
    /// Hand-off peers moved to the peer cgroup (None: none were to be).
    pub peers_moved: Option<usize>,
    pub rows: &'a [crate::model::ResultRow],
}

/// What a condition holds during one of its rounds; undone when dropped.
pub enum RoundHold {
    Nothing,
    Setting(thp::Round),
    Neighbour(neighbour::Running),
    Observer(observer::Watching),
}

impl Prepared {
    /// What the worker enters, if anything.
    pub fn in_worker(&self) -> Option<&InWorker> {
        self.in_worker.as_ref()
    }

    /// The round's measuring options under this condition (an observer counts; a
    /// nice value or policy is the worker's placement).
    pub fn adjust(&self, cfg: &mut MeasureConfig, opts: &mut BenchOptions) {
        match &self.condition {
            Condition::Observer(o) => o.adjust(cfg),
            Condition::Sched(s) => s.adjust(opts),
            Condition::Seccomp(_)
            | Condition::Namespaces(_)
            | Condition::Cgroup(_)
            | Condition::Spec(_)
            | Condition::Neighbour(_)
            | Condition::Thp(_) => {}
        }
    }

    /// Starts what the condition holds while one of its rounds runs.
    pub fn hold_round(&self, opts: &BenchOptions) -> Result<RoundHold, RoundError> {
        Ok(match &self.condition {
            Condition::Thp(_) => match &self.setting {
                Some(held) => RoundHold::Setting(thp::set(held)?),
                None => RoundHold::Nothing,
            },
            Condition::Neighbour(n) => RoundHold::Neighbour(neighbour::start(n, opts)?),
            Condition::Observer(o) => o.watch()?.map_or(RoundHold::Nothing, RoundHold::Observer),
            Condition::Seccomp(_)
            | Condition::Namespaces(_)
            | Condition::Cgroup(_)
            | Condition::Spec(_)
            | Condition::Sched(_) => RoundHold::Nothing,
        })
    }

    /// What the coordinator saw of the condition over a round it held (the worker says
    /// its own in [`Entered::Here`]): to be asked before the hold is dropped. A setting
    /// that did not hold through the round is kept (in the held setting) for
    /// [`Self::acted`], which refuses the round.
    pub fn evidence(&self, hold: &RoundHold, report: &RoundReport) -> Vec<String> {
        let mut fault = None;
        let mut said = match hold {
            RoundHold::Nothing => Vec::new(),
            RoundHold::Setting(round) => match round.held() {
                Ok(seen) => vec![seen],
                Err(why) => {
                    fault = Some(why);
                    Vec::new()
                }
            },
            RoundHold::Neighbour(n) => vec![n.describe()],
            RoundHold::Observer(w) => {
                vec![format!("{} scheduler events recorded and drained during the round", w.records())]
            }
        };
        match &self.condition {
            Condition::Observer(o) => said.extend(o.evidence(report.rows)),
            Condition::Sched(s) => said.extend(s.evidence(report.rows)),
            Condition::Seccomp(_)
            | Condition::Namespaces(_)
            | Condition::Cgroup(_)
            | Condition::Spec(_)
            | Condition::Neighbour(_)
            | Condition::Thp(_) => {}
        }
        if let Some(held) = &self.setting {
            held.set_fault(fault);
        }
        said
    }

    /// Whether a round's report shows the condition acted on the benchmark it ran
    /// (`cgroup:split` acts only where a hand-off has a peer; `observer:perf` only
    /// where a counter could be attached), and ran under it (a setting that held
    /// through the round); the reason if not.
    pub fn acted(&self, report: &RoundReport) -> Result<(), NotActed> {
        if let Some(why) = self.setting.as_ref().and_then(|held| held.take_fault()) {
            return Err(why.into());
        }
        match &self.condition {
            Condition::Cgroup(cgroup::Setting::Split) => cgroup::split_acted(report.peers_moved),
            Condition::Observer(o) => o.acted(report.rows),
            Condition::Cgroup(
                cgroup::Setting::CpuMax { .. } | cgroup::Setting::Weight(_) | cgroup::Setting::Cpuset(_),
            )
            | Condition::Seccomp(_)
            | Condition::Namespaces(_)
            | Condition::Spec(_)
            | Condition::Neighbour(_)
            | Condition::Sched(_)
            | Condition::Thp(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_prints_back() {
        for text in [
            "seccomp:allow=1",
            "seccomp:allow=64",
            "seccomp:default",
            "seccomp:notify",
            "ns:user",
            "ns:user,pid,net,mnt,uts,ipc,cgroup",
            "cgroup:cpu.max=50000/100000",
            "cgroup:cpu.weight=50",
            "cgroup:cpuset=0",
            "cgroup:cpuset=0-1",
            "cgroup:split",
            "spec:ssb",
            "spec:ib",
            "observer:perf",
            "observer:trace",
            "neighbour:cpu",
            "neighbour:mem",
            "neighbour:cpu@1",
            "nice:0",
            "nice:-5",
            "nice:19",
            "policy:batch",
            "policy:idle",
            "policy:fifo",
            "slack:1ns",
            "slack:50us",
            "slack:1000ms",
            "cgroup:cpuset=0,2-3",
            "cgroup:cpuset=0-4095",
            "cgroup:cpu.max=409600000/100000",
            "neighbour:mem@4095",
            "thp:always",
            "thp:never",
        ] {
            let c: Condition = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            let printed = c.to_string();
            assert_eq!(printed.parse::<Condition>().unwrap(), c, "{text} printed as {printed}");
            let wire = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Condition>(&wire).unwrap(), c);
        }
        assert_eq!("ns:pid,user".parse::<Condition>().unwrap().to_string(), "ns:user,pid");
        assert_eq!("slack:1000ns".parse::<Condition>().unwrap().to_string(), "slack:1us");
    }

    #[test]
    fn bad_forms_are_refused_with_the_forms() {
        for (text, says) in [
            ("magic", "unknown condition"),
            ("seccomp:allow=0", "seccomp"),
            ("seccomp:allow=5000", "seccomp"),
            ("seccomp:", "seccomp"),
            ("ns:", "ns:"),
            ("ns:user,time", "time"),
            ("cgroup:cpu.max=0/100000", "cpu.max"),
            ("cgroup:cpu.max=50000", "cpu.max"),
            ("cgroup:cpu.weight=0", "cpu.weight"),
            ("cgroup:cpuset=", "cpuset"),
            ("spec:meltdown", "spec"),
            ("observer:ebpf", "observer"),
            ("neighbour:disk", "neighbour"),
            ("nice:20", "nice"),
            ("nice:x", "nice"),
            ("policy:rr", "policy"),
            ("policy:other", "policy"),
            ("slack:0ns", "slack"),
            ("slack:fast", "slack"),
            ("thp:madvise", "thp"),
            // Every number has a range, checked before anything is made of it.
            ("cgroup:cpuset=0-18446744073709551615", "CPUs 0 to 4095"),
            ("cgroup:cpuset=0-99999999999", "CPUs 0 to 4095"),
            ("cgroup:cpuset=0-99999999", "CPUs 0 to 4095"),
            ("cgroup:cpuset=4096", "CPUs 0 to 4095"),
            ("cgroup:cpuset=3-1", "cpuset"),
            ("cgroup:cpuset=0,,1", "cpuset"),
            ("cgroup:cpu.max=409600001/100000", "4096 periods"),
            ("cgroup:cpu.max=18446744073709551615/1000000", "cpu.max"),
            ("slack:18446744073709552ms", "longest timer slack taken, 1000ms"),
            ("slack:1001ms", "1000ms"),
            ("slack:18446744073709551616ns", "slack"),
            ("neighbour:cpu@4096", "0 to 4095"),
            ("neighbour:cpu@18446744073709551616", "CPU number"),
            ("nice:-2147483649", "nice"),
        ] {
            let e = text.parse::<Condition>().unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
