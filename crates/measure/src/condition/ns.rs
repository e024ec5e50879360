//! `ns:user,pid,net,mnt,uts,ipc,cgroup`: the worker in new namespaces.
//!
//! The worker leaves the named namespaces with `unshare(2)` before it measures. A new
//! user namespace maps the worker's own user and group to root inside it (so what it
//! does stays allowed). A new network namespace has its loopback brought up, as a
//! container runtime does, so benchmarks that talk to 127.0.0.1 still can.
//!
//! A new PID namespace holds only the processes started after it is made, so the
//! worker forks once: the child, process 1 of the new namespace, measures and replies;
//! the parent waits for it (`Entered::WaitedFor`). The child needs a /proc of its own
//! namespace: the kernel counts oscost reads (`/proc/PID/…`) are looked up by the pids
//! it sees, and the host's /proc would answer for the host's process of that number.
//! So a PID namespace always comes with a mount namespace, in which the child makes the
//! mounts private and mounts a fresh proc.
//!
//! The worker checks each namespace's inode (`/proc/self/ns/NAME`) differs from the
//! coordinator's.

use serde::{Deserialize, Serialize};

use super::{Act, Condition, EnterError, Entered, Kind, Malformed, Setup, Unavailable, state_of};
use oscost_platform::sys::NamespaceFlags;

pub const KIND: Kind = Kind { name: "ns", parse, forms: "ns:LIST of user,pid,net,mnt,uts,ipc,cgroup" };

/// The namespaces, in the order they print.
const NAMES: [&str; 7] = ["user", "pid", "net", "mnt", "uts", "ipc", "cgroup"];

fn flag(name: &str) -> NamespaceFlags {
    match name {
        "user" => NamespaceFlags::NEWUSER,
        "pid" => NamespaceFlags::NEWPID,
        "net" => NamespaceFlags::NEWNET,
        "mnt" => NamespaceFlags::NEWNS,
        "uts" => NamespaceFlags::NEWUTS,
        "ipc" => NamespaceFlags::NEWIPC,
        _ => NamespaceFlags::NEWCGROUP,
    }
}

/// The namespaces to enter, as a set of [`NAMES`].
struct Namespaces(Vec<String>);

fn parse(rest: &str) -> Result<Condition, Malformed> {
    let mut names = Vec::new();
    for part in rest.split(',').filter(|p| !p.is_empty()) {
        if !NAMES.contains(&part) {
            return Err(Malformed::NotOneOf { given: part.into(), expected: "a namespace" });
        }
        names.push(part.to_string());
    }
    if names.is_empty() {
        return Err(Malformed::Incomplete { hint: "name at least one namespace" });
    }
    names.sort_by_key(|n| NAMES.iter().position(|m| m == n));
    names.dedup();
    Ok(Condition::new(Namespaces(names)))
}

impl std::fmt::Display for Namespaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ns:{}", self.0.join(","))
    }
}

impl Act for Namespaces {
    fn prepare(&self, _: &crate::bench::BenchOptions) -> Result<Setup, Unavailable> {
        Setup::in_worker(&prepare(self)?)
    }

    fn enter(&self, state: &serde_json::Value) -> Result<Entered, EnterError> {
        enter(&state_of(state)?)
    }
}

/// What the worker is given: the namespaces and the coordinator's inode of each.
#[derive(Serialize, Deserialize)]
struct Entry {
    names: Vec<String>,
    outer: Vec<u64>,
}

/// The inode of this process's namespace `name`.
fn inode(name: &str) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/ns/{name}")).map(|m| m.ino())
}

/// Checks the namespaces can be made here (without a user namespace, only root may
/// make the others) and records the coordinator's.
fn prepare(n: &Namespaces) -> Result<Entry, Unavailable> {
    let user = n.0.iter().any(|x| x == "user");
    if !user && !oscost_platform::sys::is_root() {
        return Err(Unavailable(format!(
            "{n} needs root (or add user to the list: a new user namespace lets anyone make the others)"
        )));
    }
    if user && std::fs::read_to_string("/proc/sys/user/max_user_namespaces").is_ok_and(|s| s.trim() == "0") {
        return Err(Unavailable("user namespaces are off here (user.max_user_namespaces = 0)".into()));
    }
    let outer = n.0.iter().map(|x| inode(x)).collect::<Result<Vec<_>, _>>();
    let outer = outer.map_err(|e| Unavailable(format!("reading /proc/self/ns: {e}")))?;
    Ok(Entry { names: n.0.clone(), outer })
}

/// Leaves the namespaces; in a new PID namespace, forks and returns in the child.
fn enter(e: &Entry) -> Result<Entered, EnterError> {
    let mut flags = e.names.iter().fold(NamespaceFlags::empty(), |f, n| f | flag(n));
    if flags.contains(NamespaceFlags::NEWPID) {
        flags |= NamespaceFlags::NEWNS;
    }
    let (uid, gid) = (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw());
    oscost_platform::sys::unshare_namespaces(flags)
        .map_err(EnterError::call(format!("unshare({})", e.names.join(","))))?;
    if flags.contains(NamespaceFlags::NEWUSER) {
        map_to_root(uid, gid)?;
    }
    if flags.contains(NamespaceFlags::NEWNET) {
        oscost_platform::sys::bring_loopback_up()
            .map_err(EnterError::call("bringing lo up in the new network namespace"))?;
    }
    if flags.contains(NamespaceFlags::NEWPID) {
        // The parent waits; the child (process 1 of the new namespace) goes on.
        if let Some(code) =
            oscost_platform::sys::fork_and_wait().map_err(EnterError::call("forking into the PID namespace"))?
        {
            return Ok(Entered::WaitedFor(code));
        }
        oscost_platform::sys::remount_proc().map_err(EnterError::call("mounting /proc for the PID namespace"))?;
    }
    evidence(e).map(|evidence| Entered::Here { evidence })
}

/// Maps the worker's user and group to root in its new user namespace.
fn map_to_root(uid: u32, gid: u32) -> Result<(), EnterError> {
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(EnterError::call(format!("writing /proc/self/{file}")))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("0 {uid} 1"))?;
    write("gid_map", format!("0 {gid} 1"))
}

/// Each namespace's inode here against the coordinator's; an error if one is the same.
fn evidence(e: &Entry) -> Result<Vec<String>, EnterError> {
    let mut said = Vec::new();
    for (name, outer) in e.names.iter().zip(&e.outer) {
        let here = inode(name).map_err(EnterError::call(format!("/proc/self/ns/{name}")))?;
        if here == *outer {
            return Err(EnterError::NotInEffect(format!("the {name} namespace is still the coordinator's ({here})")));
        }
        said.push(format!("{name} namespace {here} (coordinator's {outer})"));
    }
    if e.names.iter().any(|n| n == "pid") {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        // With /proc remounted, /proc/self is this process as the namespace numbers it.
        let seen = std::fs::read_link("/proc/self").map_err(EnterError::call("/proc/self"))?;
        if seen.to_string_lossy() != me.to_string() {
            return Err(EnterError::NotInEffect(format!(
                "/proc/self is {} but this process is {me} in its PID namespace",
                seen.display()
            )));
        }
        said.push(format!("process {me} in its PID namespace, /proc mounted for it"));
    }
    if e.names.iter().any(|n| n == "net") {
        said.push("lo up in the new network namespace".into());
    }
    Ok(said)
}
