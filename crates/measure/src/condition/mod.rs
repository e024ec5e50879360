//! Conditions: a setting, an isolation, an observer or a neighbour under which a
//! benchmark is measured beside an unchanged baseline (`run --condition SPEC`).
//!
//! Why paired: two separate runs differ by the machine's drift between them (±10–15%
//! on a shared VM), which swamps what most isolation costs. Measured in the same
//! rounds, back to back in fresh workers and in alternating order (`session`), the
//! baseline and the condition see the same drift, and the per-round ratio cancels it
//! (`paired`).
//!
//! A condition acts at one or more of three places, each a hook of [`Act`] that does
//! nothing unless the condition says otherwise:
//! - for the whole run, in the coordinator ([`Act::prepare`]): cgroups are made (and
//!   recorded in the [`journal`] first, so a run killed with -9 has them removed by the
//!   next); a setting of the whole system (THP) is taken under the journal's lock, so
//!   one run at a time changes it, and its original value recorded once;
//! - around each of its rounds ([`HoldsRun::hold_round`]): a sysfs setting written and
//!   put back, a neighbour started and killed, the tracepoints opened and closed;
//! - inside the worker ([`InWorker`], [`Act::enter`]): a seccomp filter, namespaces, a
//!   speculation control, a timer slack, a cgroup joined. The worker checks each is in
//!   effect before it measures and says how it knows (the evidence of [`Entered::Here`]); the
//!   kernel undoes these when the worker exits.
//!
//! A condition that needs privilege or a kernel feature this machine lacks is
//! [`Unavailable`] with the reason; the baseline still runs.
//!
//! A new condition is its own file (a type implementing [`Act`], overriding the hooks
//! it needs, and a [`Kind`] that parses it) and one line in [`KINDS`]. Nothing here
//! names a kind: this module only dispatches through the trait, so there is no match a
//! new kind must join and no default arm it could fall into unnoticed.

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

use std::sync::{Arc, Mutex};

use crate::bench::BenchOptions;
use crate::runner::MeasureConfig;
use oscost_figure::model::ResultRow;

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

/// One kind of condition: the name before the colon, how the rest parses, and what it
/// is, for `--help` and errors.
pub struct Kind {
    pub name: &'static str,
    pub parse: fn(&str) -> Result<Condition, Malformed>,
    pub forms: &'static str,
}

/// What one kind of condition does. Every hook has a default that does nothing, so a
/// condition overrides only the places it acts at. Its `Display` is its canonical text
/// (`thp:always`), which parses back to the same condition: rows carry it as their
/// `condition` parameter.
pub trait Act: std::fmt::Display + Send + Sync {
    /// Row parameters the condition itself changes (a nice value is recorded as the
    /// rows' `runner`): a condition row's baseline is the row equal in every other.
    fn params_changed(&self) -> &'static [&'static str] {
        &[]
    }

    /// Makes what the condition needs for the whole run, or says why it cannot be
    /// measured here.
    fn prepare(&self, _opts: &BenchOptions) -> Result<Setup, Unavailable> {
        Ok(Setup::default())
    }

    /// The round's measuring options under this condition (an observer counts; a nice
    /// value or policy is the worker's placement).
    fn adjust(&self, _cfg: &mut MeasureConfig, _opts: &mut BenchOptions) {}

    /// What a round's rows show of the condition, beside what the worker and the
    /// round's hold said.
    fn evidence(&self, _rows: &[ResultRow]) -> Vec<String> {
        Vec::new()
    }

    /// Whether a round's report shows the condition acted on the benchmark it ran
    /// (`cgroup:split` acts only where a hand-off has a peer), the reason if not.
    fn acted(&self, _report: &RoundReport) -> Result<(), NotActed> {
        Ok(())
    }

    /// Enters the condition in the worker, from the state its [`Act::prepare`] gave the
    /// worker ([`Setup::in_worker`]; read it with [`state_of`]), and checks it is in
    /// effect. Asked only of a condition whose `prepare` gave the worker a part.
    fn enter(&self, _state: &serde_json::Value) -> Result<Entered, EnterError> {
        Err(EnterError::NothingToEnter(self.to_string()))
    }
}

/// What a condition made for the whole run.
#[derive(Default)]
pub struct Setup {
    /// What the worker enters: the kind's own state, for its [`Act::enter`].
    pub in_worker: Option<serde_json::Value>,
    /// What the coordinator holds for the run (undone when dropped), and starts around
    /// each round.
    pub run: Option<Box<dyn HoldsRun>>,
}

impl Setup {
    /// A setup in which the worker enters `state` (the kind's own, for its
    /// [`Act::enter`]).
    pub fn in_worker(state: &impl serde::Serialize) -> Result<Self, Unavailable> {
        let state = serde_json::to_value(state).map_err(|e| Unavailable(format!("encoding the worker's part: {e}")))?;
        Ok(Setup { in_worker: Some(state), run: None })
    }

    /// A setup holding `run` for the run.
    pub fn holding(run: impl HoldsRun + 'static) -> Self {
        Setup { in_worker: None, run: Some(Box::new(run)) }
    }
}

/// What a condition holds for the whole run, in the coordinator.
pub trait HoldsRun {
    /// Starts what the condition holds while one of its rounds runs (None: nothing).
    fn hold_round(&self, _opts: &BenchOptions) -> Result<Option<Box<dyn HoldsRound>>, RoundError> {
        Ok(None)
    }
}

/// What a condition holds during one of its rounds; undone when dropped.
pub trait HoldsRound {
    /// What the coordinator saw of the condition over the round, asked before the hold
    /// is dropped; why the round's rows are not the condition's if it did not hold.
    fn seen(&self) -> Result<Vec<String>, NotActed>;
}

/// A condition as the user named it, parsed: one kind's value, behind [`Act`]. Two
/// are equal when their canonical texts are.
#[derive(Clone)]
pub struct Condition(Arc<dyn Act>);

impl Condition {
    /// The condition `act` (a kind's parser's result).
    pub fn new(act: impl Act + 'static) -> Self {
        Condition(Arc::new(act))
    }

    /// Row parameters the condition itself changes.
    pub fn params_changed(&self) -> &'static [&'static str] {
        self.0.params_changed()
    }
}

impl PartialEq for Condition {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Condition {}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Condition({:?})", self.to_string())
    }
}

impl std::fmt::Display for Condition {
    /// The canonical text, which parses back to the same condition.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl serde::Serialize for Condition {
    /// As its canonical text, the form rows and the command line carry.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Condition {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The kind named before the colon of `text`.
fn kind_of(text: &str) -> Option<&'static Kind> {
    let name = text.split_once(':').map_or(text, |(name, _)| name);
    KINDS.iter().find(|k| k.name == name)
}

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
    /// A kind's own reason, in its own error type.
    #[error(transparent)]
    Kind(KindError),
    #[error("{given:?} is not a CPU number (0 to {})", MAX_CPUS - 1)]
    CpuNumber { given: String },
    /// Nothing after the name, or a part missing: what to give.
    #[error("{hint}")]
    Incomplete { hint: &'static str },
}

/// A kind's own error, kept whole (its source chain included) and compared by what it
/// says.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct KindError(Arc<dyn std::error::Error + Send + Sync>);

impl KindError {
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        KindError(Arc::new(e))
    }
}

impl PartialEq for KindError {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for KindError {}

/// Why a worker could not enter its condition, or cannot show it is in effect.
#[derive(Debug, thiserror::Error)]
pub enum EnterError {
    /// A call or a file the entering needs failed.
    #[error("entering the condition failed: {what}: {source}")]
    Call { what: String, source: std::io::Error },
    /// The kernel took the change but does not read back as in effect: what it reads.
    #[error("entering the condition failed: {0}")]
    NotInEffect(String),
    /// What the coordinator gave the worker is not what its condition enters.
    #[error("entering the condition failed: the worker was given {condition:?} with {state}: {source}")]
    State { condition: String, state: String, source: serde_json::Error },
    /// The condition the worker was given does not parse.
    #[error("entering the condition failed: {0}")]
    Condition(#[from] ConditionError),
    /// The condition the worker was given has nothing to enter there.
    #[error("entering the condition failed: {0} has nothing a worker enters")]
    NothingToEnter(String),
}

impl EnterError {
    /// The failure of `what` (a call or a file), for `map_err`.
    fn call(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| EnterError::Call { what, source }
    }
}

/// Why the coordinator could not hold a condition through one of its rounds: the
/// kind's own error.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct RoundError(Box<dyn std::error::Error + Send + Sync>);

impl RoundError {
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        RoundError(Box::new(e))
    }
}

/// Why a round's rows are not measured under its condition, though the round ran: the
/// kind's own reason.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct NotActed(Box<dyn std::error::Error + Send + Sync>);

impl NotActed {
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        NotActed(Box::new(e))
    }
}

/// Every kind's forms, for help and errors.
pub fn all_forms() -> String {
    KINDS.iter().map(|k| k.forms).collect::<Vec<_>>().join(", ")
}

impl std::str::FromStr for Condition {
    type Err = ConditionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let rest = text.split_once(':').map_or("", |(_, rest)| rest);
        let kind = kind_of(text).ok_or_else(|| ConditionError::Unknown(text.into()))?;
        (kind.parse)(rest).map_err(|why| ConditionError::Malformed { text: text.into(), why, forms: kind.forms })
    }
}

/// The parameter every row measured under a condition carries: the condition's text.
pub const PARAM: oscost_figure::key::Param<oscost_figure::key::Text> = oscost_figure::key::Param::new("condition");

/// The row parameters the condition named by `text` changes itself (none for a text
/// that names no condition): what `paired` ignores when it finds a row's baseline.
pub fn params_changed_by(text: &str) -> &'static [&'static str] {
    text.parse::<Condition>().map(|c| c.params_changed()).unwrap_or(&[])
}

/// Why a condition cannot be measured on this machine, as said to the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// What a worker does to enter a condition before it measures: the condition's text
/// (the worker parses it back) and its state, as its [`Act::prepare`] made it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InWorker {
    condition: String,
    state: serde_json::Value,
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
    let condition: Condition = w.condition.parse()?;
    condition.0.enter(&w.state)
}

/// The kind's state a worker was given, read back (for an [`Act::enter`]).
pub fn state_of<T: serde::de::DeserializeOwned>(state: &serde_json::Value) -> Result<T, EnterError> {
    serde_json::from_value(state.clone()).map_err(|source| EnterError::State {
        condition: std::any::type_name::<T>().into(),
        state: state.to_string(),
        source,
    })
}

/// What a condition holds for the whole run; undone when dropped.
pub struct Prepared {
    pub condition: Condition,
    in_worker: Option<InWorker>,
    /// What the condition holds for the run (undone when dropped).
    run: Option<Box<dyn HoldsRun>>,
    /// Why the last round's rows are not the condition's (what it held did not hold
    /// through it): set from the evidence, taken when the round is judged.
    fault: Mutex<Option<NotActed>>,
}

/// Makes what `c` needs for the whole run, or says why it cannot be measured here.
pub fn prepare(c: &Condition, opts: &BenchOptions) -> Result<Prepared, Unavailable> {
    let setup = c.0.prepare(opts)?;
    let in_worker = setup.in_worker.map(|state| InWorker { condition: c.to_string(), state });
    Ok(Prepared { condition: c.clone(), in_worker, run: setup.run, fault: Mutex::new(None) })
}

/// What a worker reported of a round, for [`Prepared::acted`].
pub struct RoundReport<'a> {
    /// Hand-off peers moved to the peer cgroup (None: none were to be).
    pub peers_moved: Option<usize>,
    pub rows: &'a [ResultRow],
}

/// What a condition holds during one of its rounds (if anything); undone when dropped.
pub struct RoundHold(Option<Box<dyn HoldsRound>>);

impl Prepared {
    /// What the worker enters, if anything.
    pub fn in_worker(&self) -> Option<&InWorker> {
        self.in_worker.as_ref()
    }

    /// The round's measuring options under this condition.
    pub fn adjust(&self, cfg: &mut MeasureConfig, opts: &mut BenchOptions) {
        self.condition.0.adjust(cfg, opts);
    }

    /// Starts what the condition holds while one of its rounds runs.
    pub fn hold_round(&self, opts: &BenchOptions) -> Result<RoundHold, RoundError> {
        let held = self.run.as_ref().map(|run| run.hold_round(opts)).transpose()?;
        Ok(RoundHold(held.flatten()))
    }

    /// What the coordinator saw of the condition over a round it held (the worker says
    /// its own in [`Entered::Here`]): to be asked before the hold is dropped. A hold
    /// that did not hold through the round is kept for [`Self::acted`], which refuses
    /// the round.
    pub fn evidence(&self, hold: &RoundHold, report: &RoundReport) -> Vec<String> {
        let (mut said, fault) = match hold.0.as_ref().map(|h| h.seen()) {
            None => (Vec::new(), None),
            Some(Ok(seen)) => (seen, None),
            Some(Err(why)) => (Vec::new(), Some(why)),
        };
        said.extend(self.condition.0.evidence(report.rows));
        *self.fault.lock().unwrap_or_else(|e| e.into_inner()) = fault;
        said
    }

    /// Whether a round's report shows the condition acted on the benchmark it ran,
    /// and ran under it (what it held held through the round); the reason if not.
    pub fn acted(&self, report: &RoundReport) -> Result<(), NotActed> {
        if let Some(why) = self.fault.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Err(why);
        }
        self.condition.0.acted(report)
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

    /// A kind that overrides no hook: prepared, it gives the worker nothing to enter and
    /// holds nothing around its rounds; its rounds say nothing and always acted; it
    /// changes no parameter and no option.
    #[test]
    fn a_kind_that_overrides_no_hook_does_nothing_anywhere() {
        struct Plain;
        impl std::fmt::Display for Plain {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("plain:x")
            }
        }
        impl Act for Plain {}
        let c = Condition::new(Plain);
        let mut opts = BenchOptions::smallest(Err("not needed".into()), 1);
        let p = prepare(&c, &opts).unwrap();
        assert!(p.in_worker().is_none());
        let hold = p.hold_round(&opts).unwrap();
        assert!(hold.0.is_none());
        let report = RoundReport { peers_moved: None, rows: &[] };
        assert!(p.evidence(&hold, &report).is_empty());
        assert!(p.acted(&report).is_ok());
        let mut cfg = MeasureConfig::quick();
        let before = (format!("{cfg:?}"), format!("{opts:?}"));
        p.adjust(&mut cfg, &mut opts);
        assert_eq!((format!("{cfg:?}"), format!("{opts:?}")), before);
        assert!(c.params_changed().is_empty());
        assert!(matches!(c.0.enter(&serde_json::Value::Null), Err(EnterError::NothingToEnter(_))));
    }

    /// A round whose hold did not hold through it is refused once, and the next round
    /// is judged on its own.
    #[test]
    fn a_hold_that_did_not_hold_refuses_its_round_only() {
        #[derive(Debug, thiserror::Error)]
        #[error("it moved")]
        struct Moved;
        struct Slips;
        impl HoldsRound for Slips {
            fn seen(&self) -> Result<Vec<String>, NotActed> {
                Err(NotActed::new(Moved))
            }
        }
        let p =
            Prepared { condition: "thp:never".parse().unwrap(), in_worker: None, run: None, fault: Mutex::new(None) };
        let report = RoundReport { peers_moved: None, rows: &[] };
        assert!(p.evidence(&RoundHold(Some(Box::new(Slips))), &report).is_empty());
        assert_eq!(p.acted(&report).unwrap_err().to_string(), "it moved");
        assert!(p.acted(&report).is_ok());
    }

    /// What the worker is given crosses as JSON and is entered by the condition's text:
    /// a timer slack, set on a thread of this test's own and read back.
    #[test]
    fn the_worker_enters_a_condition_from_its_text_and_state() {
        let opts = BenchOptions::smallest(Err("not needed".into()), 1);
        let p = prepare(&"slack:50us".parse().unwrap(), &opts).unwrap();
        let wire = serde_json::to_string(p.in_worker().expect("a slack is entered in the worker")).unwrap();
        let w: InWorker = serde_json::from_str(&wire).unwrap();
        let said = std::thread::spawn(move || match enter(&w) {
            Ok(Entered::Here { evidence }) => evidence,
            Ok(Entered::WaitedFor(code)) => panic!("a slack forks nothing (waited for {code})"),
            Err(e) => panic!("{e}"),
        });
        assert_eq!(said.join().unwrap(), vec!["timer slack 50000 ns (PR_GET_TIMERSLACK)".to_string()]);
        let forged = InWorker { condition: "slack:50us".into(), state: serde_json::json!("fifty") };
        assert!(matches!(enter(&forged), Err(EnterError::State { .. })));
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
