//! `cgroup:cpu.max=Q/P`, `cgroup:cpu.weight=W`, `cgroup:cpuset=LIST`, `cgroup:split`:
//! the worker in a cgroup of its own, made for the run beside the coordinator's.
//!
//! The cgroups are made once per run (recorded in the journal first, so a run killed
//! with -9 has them removed by the next) and removed when the run ends. The worker
//! joins by writing to `cgroup.procs` before it measures, so every thread and process
//! it starts is inside, and checks the file lists it. `split` makes two sibling groups:
//! the worker (the measuring side) joins the first, and each hand-off's peer is moved
//! to the second as it starts (`tasks::move_peer`), so every switch crosses groups and
//! group scheduling works on each. Under cgroup v1 the `cpu` and `cpuset` hierarchies
//! are separate mounts; under v2 the groups are made below the coordinator's own,
//! which works where that group may hold children with the controller enabled.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::journal::{self, Restore, Undo};
use super::{
    Act, Condition, EnterError, Entered, HoldsRun, Kind, KindError, MAX_CPUS, Malformed, NotActed, RoundReport, Setup,
    Unavailable, state_of,
};

pub const KIND: Kind = Kind {
    name: "cgroup",
    parse,
    forms: "cgroup:cpu.max=QUOTA/PERIOD (µs), cgroup:cpu.weight=1–10000, cgroup:cpuset=LIST (CPUs 0–4095), cgroup:split",
};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    CpuMax { quota_us: u64, period_us: u64 },
    Weight(u64),
    Cpuset(Vec<usize>),
    Split,
}

/// The condition: the worker in the cgroup(s) made with the setting.
struct Cgroup(Setting);

impl std::fmt::Display for Cgroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cgroup:{}", self.0)
    }
}

impl Act for Cgroup {
    fn prepare(&self, _: &crate::bench::BenchOptions) -> Result<Setup, Unavailable> {
        let (groups, join) = prepare(&self.0)?;
        Ok(Setup { run: Some(Box::new(groups)), ..Setup::in_worker(&join)? })
    }

    fn enter(&self, state: &serde_json::Value) -> Result<Entered, EnterError> {
        enter(&state_of(state)?)
    }

    /// `split` acts only where the worker moved a hand-off's peer.
    fn acted(&self, report: &RoundReport) -> Result<(), NotActed> {
        match self.0 {
            Setting::Split => split_acted(report.peers_moved),
            Setting::CpuMax { .. } | Setting::Weight(_) | Setting::Cpuset(_) => Ok(()),
        }
    }
}

/// The groups are held for the run, and nothing more around each round.
impl HoldsRun for Groups {}

fn parse(rest: &str) -> Result<Condition, Malformed> {
    let kind = |e: SpecError| Malformed::Kind(KindError::new(e));
    let setting = if rest == "split" {
        Setting::Split
    } else if let Some(v) = rest.strip_prefix("cpu.max=") {
        let (quota_us, period_us) = parse_cpu_max(v).map_err(kind)?;
        Setting::CpuMax { quota_us, period_us }
    } else if let Some(v) = rest.strip_prefix("cpu.weight=") {
        match v.parse::<u64>() {
            Ok(w) if (1..=10_000).contains(&w) => Setting::Weight(w),
            _ => return Err(Malformed::Range { what: "cpu.weight", low: 1, high: 10_000, of: "" }),
        }
    } else if let Some(v) = rest.strip_prefix("cpuset=") {
        Setting::Cpuset(parse_cpuset(v).map_err(kind)?)
    } else {
        return Err(Malformed::NoCgroupSetting { given: rest.into() });
    };
    Ok(Condition::new(Cgroup(setting)))
}

/// `QUOTA/PERIOD` in µs: a period the kernel takes (1 ms to 1 s), and a quota of at
/// least 1 ms and at most every CPU's worth of periods (beyond that it limits nothing).
fn parse_cpu_max(v: &str) -> Result<(u64, u64), SpecError> {
    let (q, p) = v.split_once('/').ok_or(SpecError::CpuMaxForm)?;
    let most = |period: u64| period * MAX_CPUS as u64;
    match (q.parse::<u64>(), p.parse::<u64>()) {
        (Ok(quota), Ok(period)) if (1000..=1_000_000).contains(&period) && (1000..=most(period)).contains(&quota) => {
            Ok((quota, period))
        }
        _ => Err(SpecError::CpuMaxRange),
    }
}

/// The highest CPU number a condition may name.
const LAST_CPU: usize = MAX_CPUS - 1;

/// Why a cgroup setting's numbers are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SpecError {
    #[error("cpu.max=QUOTA/PERIOD, in microseconds")]
    CpuMaxForm,
    #[error("cpu.max wants a period of 1000–1000000 µs and a quota from 1000 µs to {MAX_CPUS} periods")]
    CpuMaxRange,
    #[error("cpuset=LIST of CPUs 0 to {LAST_CPU} (e.g. 0 or 0-1); {0:?} is not one")]
    Cpuset(String),
}

/// A CPU list (`0`, `0-1`, `0,2-3`): every number below [`MAX_CPUS`], each range in
/// order, checked before any list is made (a set of at most that many).
fn parse_cpuset(v: &str) -> Result<Vec<usize>, SpecError> {
    let bad = || SpecError::Cpuset(v.to_string());
    let cpu = |t: &str| t.trim().parse::<usize>().ok().filter(|c| *c < MAX_CPUS);
    let mut set = std::collections::BTreeSet::new();
    for part in v.split(',') {
        let (from, to) = match part.split_once('-') {
            Some((a, b)) => (cpu(a).ok_or_else(bad)?, cpu(b).ok_or_else(bad)?),
            None => (cpu(part).ok_or_else(bad)?, cpu(part).ok_or_else(bad)?),
        };
        if from > to {
            return Err(bad());
        }
        set.extend(from..=to);
    }
    Ok(set.into_iter().collect())
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setting::CpuMax { quota_us, period_us } => write!(f, "cpu.max={quota_us}/{period_us}"),
            Setting::Weight(w) => write!(f, "cpu.weight={w}"),
            Setting::Cpuset(cpus) => write!(f, "cpuset={}", oscost_platform::sys::cpu_list_text(cpus)),
            Setting::Split => write!(f, "split"),
        }
    }
}

/// Which cgroup hierarchy holds a controller, and where this process sits in it.
struct Hierarchy {
    /// The coordinator's own group in it (a folder).
    own: PathBuf,
    v2: bool,
}

/// The hierarchy of `controller` ("cpu" or "cpuset"), from /proc/self/cgroup.
fn hierarchy(controller: &str) -> Result<Hierarchy, Unavailable> {
    let text =
        std::fs::read_to_string("/proc/self/cgroup").map_err(|e| Unavailable(format!("/proc/self/cgroup: {e}")))?;
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, names, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = path.trim_start_matches('/');
        if v2 && names.is_empty() {
            return Ok(Hierarchy { own: Path::new("/sys/fs/cgroup").join(path), v2 });
        }
        if !v2 && names.split(',').any(|n| n == controller) {
            return Ok(Hierarchy { own: Path::new("/sys/fs/cgroup").join(names).join(path), v2 });
        }
    }
    Err(Unavailable(format!("no cgroup hierarchy with the {controller} controller is mounted")))
}

/// The groups a run made; each removed (with its record) when dropped.
struct Groups(Vec<Restore>);

/// What the worker does: join `procs` (the `cgroup.procs` files of its groups) and,
/// under `split`, move its peers.
#[derive(Serialize, Deserialize)]
struct Join {
    procs: Vec<PathBuf>,
    peer: Option<crate::tasks::PeerCgroup>,
}

/// Groups made by this process so far: each gets a name of its own.
static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A new group below `h`'s own, recorded before it is made. A group that could not be
/// made leaves no record (and nothing of anyone else's is removed).
fn make_group(h: &Hierarchy) -> Result<(PathBuf, Restore), Unavailable> {
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = h.own.join(format!("oscost-{}-{n}", oscost_platform::sys::getpid()));
    let restore = journal::record(Undo::RemoveCgroup { dir: dir.clone() }).map_err(|e| Unavailable(e.to_string()))?;
    if let Err(e) = std::fs::create_dir(&dir) {
        restore.abandon();
        return Err(unmade(h, e));
    }
    Ok((dir, restore))
}

/// Why a group could not be made, as said to the user.
fn unmade(h: &Hierarchy, e: std::io::Error) -> Unavailable {
    let why = if e.kind() == std::io::ErrorKind::PermissionDenied {
        "making a cgroup needs root or a delegated cgroup".to_string()
    } else {
        e.to_string()
    };
    Unavailable(format!("making a cgroup in {}: {why}", h.own.display()))
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), Unavailable> {
    std::fs::write(dir.join(file), value)
        .map_err(|e| Unavailable(format!("writing {value:?} to {}: {e}", dir.join(file).display())))
}

/// Makes the run's groups with their settings.
fn prepare(s: &Setting) -> Result<(Groups, Join), Unavailable> {
    let h = hierarchy(if matches!(s, Setting::Cpuset(_)) { "cpuset" } else { "cpu" })?;
    let (dir, first) = make_group(&h)?;
    let mut groups = Groups(vec![first]);
    let mut join = Join { procs: vec![dir.join("cgroup.procs")], peer: None };
    match s {
        Setting::CpuMax { quota_us, period_us } if h.v2 => write(&dir, "cpu.max", &format!("{quota_us} {period_us}"))?,
        Setting::CpuMax { quota_us, period_us } => {
            write(&dir, "cpu.cfs_period_us", &period_us.to_string())?;
            write(&dir, "cpu.cfs_quota_us", &quota_us.to_string())?;
        }
        Setting::Weight(w) if h.v2 => write(&dir, "cpu.weight", &w.to_string())?,
        // v1 shares: 1024 is v2's weight 100.
        Setting::Weight(w) => write(&dir, "cpu.shares", &(w * 1024 / 100).max(2).to_string())?,
        Setting::Cpuset(cpus) => {
            let allowed = oscost_platform::sys::allowed_cpus().unwrap_or_default();
            if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
                return Err(Unavailable(format!("CPU {c} is not one this process may use")));
            }
            if !h.v2 {
                let mems = std::fs::read_to_string(h.own.join("cpuset.mems")).unwrap_or_else(|_| "0".into());
                write(&dir, "cpuset.mems", mems.trim())?;
            }
            write(&dir, "cpuset.cpus", &oscost_platform::sys::cpu_list_text(cpus))?;
        }
        Setting::Split => {
            let (peer_dir, second) = make_group(&h)?;
            groups.0.push(second);
            let file = peer_dir.join(if h.v2 { "cgroup.procs" } else { "tasks" });
            join.peer = Some(crate::tasks::PeerCgroup { file, threads: !h.v2 });
        }
    }
    Ok((groups, join))
}

/// Joins the groups and checks each lists this process.
fn enter(j: &Join) -> Result<Entered, EnterError> {
    let me = oscost_platform::sys::getpid().to_string();
    let mut evidence = Vec::new();
    for procs in &j.procs {
        std::fs::write(procs, "0").map_err(EnterError::call(format!("joining {}", procs.display())))?;
        let listed = std::fs::read_to_string(procs).map_err(EnterError::call(procs.display().to_string()))?;
        if !listed.split_whitespace().any(|p| p == me) {
            return Err(EnterError::NotInEffect(format!(
                "{} does not list this worker ({me}) after it joined",
                procs.display()
            )));
        }
        evidence.push(format!("{} lists the worker ({me})", procs.display()));
    }
    if let Some(peer) = &j.peer {
        crate::tasks::set_peer_cgroup(peer.clone());
        evidence.push(format!("hand-off peers go to {}", peer.file.display()));
    }
    Ok(Entered::Here { evidence })
}

/// Whether `split` acted: the worker moved at least one peer.
fn split_acted(peers_moved: Option<usize>) -> Result<(), NotActed> {
    match peers_moved {
        Some(n) if n > 0 => Ok(()),
        _ => Err(NotActed::new(NoPeer)),
    }
}

/// `split` had no hand-off peer to move.
#[derive(Debug, thiserror::Error)]
#[error("cgroup:split acts on hand-offs between two tasks; this benchmark started no peer")]
struct NoPeer;
