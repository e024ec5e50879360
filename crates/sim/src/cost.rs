//! Cost profiles: the virtual time each operation of the simulated machine charges.
//!
//! A profile is data: every term carries its value and its basis, one of
//! - *measured* (how, on which machine),
//! - *fitted* (to which published figure, by which fit), or
//! - *assumed* (why, and what it stands for),
//!
//! and the whole profile is stored with every simulated row, so a stored run can be
//! simulated again to the nanosecond (`--profile live@RUN`). The simulator's physics
//! lives in these terms: a switch is `switch`, plus `address_space` when the CPU changes
//! address space (CR3 reload and TLB refill; threads of one mm skip it), plus
//! `migration_refill` when the task last ran on another CPU; a goodness scan charges
//! `scan_per_task` a task and `remote_line` for each task_struct last written by
//! another CPU; a contended lock charges `lock_transfer` for each CPU spinning on its
//! line when it changes hands, so the global lock's collapse emerges. Across CPUs: a
//! wake-up onto another CPU's queue charges the waker `wake_remote` (the queue's and
//! the task's lines), a busy CPU told to reschedule by another takes `ipi_busy`, and
//! a message read on another CPU than it was written charges the reader
//! `msg_remote` (its buffer's lines), and a send on a kernel whose loopback device
//! has a transmit lock holds it for `loopback_xmit` of its `msg_send`, and for a
//! `remote_line` more for each line the kernel writes under it when the lock comes
//! from another CPU.
//!
//! Profiles:
//! - `pentium200`: Travis's 200 MHz Pentium MMX (Linux 2.0.30, one CPU), fitted to
//!   Table 2's "Linux before change, process switch" row alone ([`pentium200`]);
//! - `smp2002`: Molnar's 2- and 8-way boxes, fitted to one figure, the old
//!   scheduler's 2-way loop_yield rate ([`super::fit::smp2002`]);
//! - `live`: this machine, measured ([`live`], from the [`MachineProbes`] it is
//!   handed).

/// Where a term's value comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "basis", content = "why", rename_all = "snake_case")]
pub enum Basis {
    Measured(String),
    Fitted(String),
    Assumed(String),
}

impl Basis {
    pub fn word(&self) -> &'static str {
        match self {
            Basis::Measured(_) => "measured",
            Basis::Fitted(_) => "fitted",
            Basis::Assumed(_) => "assumed",
        }
    }
    pub fn why(&self) -> &str {
        match self {
            Basis::Measured(w) | Basis::Fitted(w) | Basis::Assumed(w) => w,
        }
    }
}

/// One cost, ns of virtual time, with its basis.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Term {
    pub ns: f64,
    #[serde(flatten)]
    pub basis: Basis,
}

fn measured(ns: f64, why: impl Into<String>) -> Term {
    Term { ns, basis: Basis::Measured(why.into()) }
}
pub(crate) fn fitted(ns: f64, why: impl Into<String>) -> Term {
    Term { ns, basis: Basis::Fitted(why.into()) }
}
fn assumed(ns: f64, why: impl Into<String>) -> Term {
    Term { ns, basis: Basis::Assumed(why.into()) }
}

/// What each operation costs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostProfile {
    pub name: String,
    /// The machine it stands for.
    pub machine: String,
    /// The fit behind the fitted terms, line by line (parameters, residuals, what the
    /// data identifies); empty for a profile with no fitted term.
    pub fit: Vec<String>,
    /// Entering and leaving the kernel (a sched_yield's own cost).
    pub syscall: Term,
    /// switch_to between two tasks of one address space, with schedule()'s fixed work.
    pub switch: Term,
    /// Changing address space: CR3 reload and the TLB refill after it.
    pub address_space: Term,
    /// goodness() of one task in a run-queue scan.
    pub scan_per_task: Term,
    /// One task in the counter recalculation loop.
    pub recalc_per_task: Term,
    /// A constant-time pick (bitmap search, list head, array requeue).
    pub pick_o1: Term,
    /// One level of a balanced tree.
    pub tree_step: Term,
    /// A task running on a CPU other than its last: its cache footprint refilled.
    pub migration_refill: Term,
    /// A cache line last written by another CPU (a scanned task_struct).
    pub remote_line: Term,
    /// A contended lock's line handed on, per CPU spinning on it.
    pub lock_transfer: Term,
    /// try_to_wake_up's own work.
    pub wake: Term,
    /// From an inter-processor interrupt to the idle CPU running schedule().
    pub ipi: Term,
    /// A timer interrupt.
    pub tick: Term,
    /// Creating a process (fork's own work) and tearing it down (exit and reaping).
    pub fork: Term,
    pub exit: Term,
    /// Sending one chat message (a write to a socket) and reading one.
    pub msg_send: Term,
    pub msg_recv: Term,
    /// A wake-up onto another CPU's queue, on the waker: the lines of the woken task
    /// and of the queue it joins (its lock, head and bitmap), last written there.
    #[serde(default = "not_stored")]
    pub wake_remote: Term,
    /// A reschedule IPI taken by a busy CPU: the interrupt's entry, handler and return
    /// on the interrupted CPU.
    #[serde(default = "not_stored")]
    pub ipi_busy: Term,
    /// A message read on another CPU than the one that wrote it, on the reader: the
    /// socket buffer, its data and the socket's queue and TCP state lines.
    #[serde(default = "not_stored")]
    pub msg_remote: Term,
    /// The part of a loopback TCP send that holds the loopback device's transmit lock
    /// (dev_queue_xmit → loopback_xmit → netif_rx), on kernels that take it
    /// ([`super::types::LoopbackXmit`]): part of `msg_send`, not added to it. The
    /// lines the kernel writes under the lock are charged apart, at `remote_line`
    /// each, when the lock comes from another CPU.
    #[serde(default = "not_stored")]
    pub loopback_xmit: Term,
    /// Whether the fair models end a slice on a high-resolution timer (the kernel's
    /// HRTICK sched feature) rather than at the next tick: off, the kernel's default
    /// (kernel/sched/features.h), except in a `live` profile of a kernel whose sched
    /// features list HRTICK on. Not a cost: a setting of the kernel the profile was
    /// taken on, stored with it so that `live@RUN` repeats it.
    #[serde(default)]
    pub hrtick: bool,
    /// The build of oscost that fitted the profile's fitted terms by simulating
    /// ([`super::profile_source::ProfileSource::build`]): a later command of the same
    /// build reuses the stored fit rather than fitting again. None for a profile
    /// fitted in closed form or not fitted at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted_by: Option<String>,
    /// The machine probes behind a `live` profile's measured terms that never had
    /// their CPU to themselves (every timed batch saw the probing thread switched out:
    /// other work shared the CPU), by the term they priced; empty for a profile whose
    /// probes each ran alone, and for every profile not probed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crowded: Vec<String>,
}

/// A cross-CPU term a profile stored before it existed: nothing charged, as then.
fn not_stored() -> Term {
    assumed(0.0, "not in this stored profile (stored before the term existed): nothing charged, as then")
}

impl CostProfile {
    /// Every term by name, in print order.
    pub fn terms(&self) -> Vec<(&'static str, &Term)> {
        vec![
            ("syscall", &self.syscall),
            ("switch", &self.switch),
            ("address_space", &self.address_space),
            ("scan_per_task", &self.scan_per_task),
            ("recalc_per_task", &self.recalc_per_task),
            ("pick_o1", &self.pick_o1),
            ("tree_step", &self.tree_step),
            ("migration_refill", &self.migration_refill),
            ("remote_line", &self.remote_line),
            ("lock_transfer", &self.lock_transfer),
            ("wake", &self.wake),
            ("ipi", &self.ipi),
            ("tick", &self.tick),
            ("fork", &self.fork),
            ("exit", &self.exit),
            ("msg_send", &self.msg_send),
            ("msg_recv", &self.msg_recv),
            ("wake_remote", &self.wake_remote),
            ("ipi_busy", &self.ipi_busy),
            ("msg_remote", &self.msg_remote),
            ("loopback_xmit", &self.loopback_xmit),
        ]
    }

    /// The profile as lines: every term with its value and basis, then the fit.
    pub fn describe(&self) -> Vec<String> {
        let mut out = vec![format!("profile {} ({})", self.name, self.machine)];
        for (name, t) in self.terms() {
            out.push(format!("  {name:<17} {:>10.1} ns  {:<8} {}", t.ns, t.basis.word(), t.basis.why()));
        }
        out.extend(self.fit.iter().map(|l| format!("  fit: {l}")));
        if self.hrtick {
            out.push("  hrtick: on (the kernel's sched features list HRTICK): fair slices end on a timer".into());
        }
        out
    }

    /// ns of a term, rounded to virtual-time units.
    pub fn ns(t: &Term) -> u64 {
        t.ns.max(0.0).round() as u64
    }
}

/// Why a profile cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("unknown profile {0:?} (profiles: live, live@RUN, pentium200, smp2002)")]
    Unknown(String),
    #[error("the published figures the {0} profile is fitted to are missing or cannot be fitted")]
    Unfittable(&'static str),
}

/// Sleeping system tasks beside Travis's yielders (a 1998 workstation's daemons, which
/// Linux 2.0's recalculation loop visits too): assumed, as the article does not say.
pub const TRAVIS_OTHERS: usize = 30;

/// Least squares of y = a + b·N + c/N over (N, y) points: the shape of a per-yield time
/// under Linux 2.0 before the fix (fixed costs, a goodness scan of N tasks, and one
/// recalculation of N + others tasks every N switches). Returns (a, b, c) and the
/// residuals (fitted − published).
pub fn fit_travis_row(points: &[(f64, f64)]) -> Option<([f64; 3], Vec<f64>)> {
    let rows: Vec<[f64; 3]> = points.iter().map(|&(n, _)| [1.0, n, 1.0 / n]).collect();
    let y: Vec<f64> = points.iter().map(|&(_, v)| v).collect();
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for (r, &yi) in rows.iter().zip(&y) {
        for i in 0..3 {
            b[i] += r[i] * yi;
            for j in 0..3 {
                a[i][j] += r[i] * r[j];
            }
        }
    }
    let p = solve3(a, b)?;
    let res = rows.iter().zip(&y).map(|(r, yi)| r[0] * p[0] + r[1] * p[1] + r[2] * p[2] - yi).collect();
    Some((p, res))
}

/// Gaussian elimination with partial pivoting on a 3×3 system.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for c in 0..3 {
        let p = (c..3).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..3 {
            let f = a[r][c] / a[c][c];
            let pivot = a[c];
            for (x, p) in a[r].iter_mut().zip(pivot).skip(c) {
                *x -= f * p;
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = [0.0; 3];
    for c in (0..3).rev() {
        x[c] = (b[c] - (c + 1..3).map(|k| a[c][k] * x[k]).sum::<f64>()) / a[c][c];
    }
    Some(x)
}

const BEFORE_PROCESS: &str = "Linux before change process switch";
const BEFORE_THREAD: &str = "Linux before change thread switch";

/// Travis's 200 MHz Pentium MMX under Linux 2.0.30, one CPU.
///
/// The fit: under 2.0 before the fix every yield switches, scans the N queued tasks,
/// and every N-th runs the recalculation over the N yielders and the system's other
/// tasks, so a switch costs `S + scan·N + recalc·(N + others)/N`, S being the system
/// call, the switch and the address-space change. Least squares of `a + b·N + c/N` over
/// the "before, process" row identifies b = scan, c = recalc·others and a = S +
/// recalc: recalc and S follow only given `others` (assumed, [`TRAVIS_OTHERS`]), and
/// how S splits into system call, switch and address space is not identified by that
/// row. The address-space term is fitted on one more cell, "before, thread" at 2
/// contexts; the system call is assumed, the switch is what is left of S.
pub fn pentium200() -> Result<CostProfile, ProfileError> {
    let row: Vec<(f64, f64)> = oscost_figure::published::table2_row(BEFORE_PROCESS);
    let ([a, b, c], residuals) = fit_travis_row(&row).ok_or(ProfileError::Unfittable("pentium200"))?;
    let thread2 = oscost_figure::published::value("travis98 table 2", BEFORE_THREAD, "2")
        .ok_or(ProfileError::Unfittable("pentium200"))?;
    let others = TRAVIS_OTHERS as f64;
    let recalc = c / others;
    let s = a - recalc;
    // The process row's fitted value at 2 contexts, less the published thread cell.
    let asid = (a + 2.0 * b + c / 2.0) - thread2;
    let syscall = 1.0;
    let switch = s - asid - syscall;
    let us = |x: f64| x * 1000.0;
    let from = "Table 2 \"Linux before change, process switch\" (Appleton 1999), least squares of a + b·N + c/N";
    let fit = vec![
        format!("{from}: a = {a:.3} µs, b = {b:.3} µs/task, c = {c:.3} µs·task"),
        format!(
            "residuals (fitted − published, µs) at N = {}: {}",
            row.iter().map(|(n, _)| format!("{n}")).collect::<Vec<_>>().join(","),
            residuals.iter().map(|r| format!("{r:+.2}")).collect::<Vec<_>>().join(", ")
        ),
        format!(
            "identified: scan = b; recalc × others = c; system call + switch + address space + recalc = a; with others = {TRAVIS_OTHERS} (assumed): recalc = c/others, system call + switch + address space = a − recalc = {s:.3} µs"
        ),
        format!(
            "address space = the fitted process switch at N = 2 ({:.2} µs) − the published thread switch at N = 2 ({thread2} µs)",
            a + 2.0 * b + c / 2.0
        ),
        "not identified by the row: how system call and switch split (the system call is assumed)".into(),
    ];
    Ok(CostProfile {
        name: "pentium200".into(),
        machine: "Travis's 200 MHz Pentium MMX, Linux 2.0.30, one CPU (1998)".into(),
        fit,
        syscall: assumed(
            us(syscall),
            "a system call on a 200 MHz Pentium: about 200 cycles of int 0x80 and iret; the fit does not separate it from the switch",
        ),
        switch: fitted(us(switch), format!("{from}: a − recalc − address space − system call")),
        address_space: fitted(us(asid), "Table 2 \"before, thread\" at 2 contexts against the fitted process row at 2"),
        scan_per_task: fitted(us(b), format!("{from}: b")),
        recalc_per_task: fitted(us(recalc), format!("{from}: c / {TRAVIS_OTHERS} other tasks (assumed)")),
        pick_o1: assumed(us(b), "no O(1) pick on this machine: priced as one goodness()"),
        tree_step: assumed(us(b), "no tree on this machine: priced as one goodness()"),
        migration_refill: assumed(0.0, "one CPU: no migration"),
        remote_line: assumed(0.0, "one CPU: no remote cache line"),
        lock_transfer: assumed(0.0, "one CPU: no lock contention"),
        wake: assumed(us(b), "a wake-up's own work priced as one goodness() (wake-ups do not occur in Travis's loop)"),
        ipi: assumed(0.0, "one CPU: no inter-processor interrupt"),
        tick: assumed(
            us(5.0),
            "a timer interrupt on a 200 MHz Pentium: about 1000 cycles; 100 a second, so under 0.05% of the time",
        ),
        fork: assumed(
            us(700.0),
            "not simulated against Table 1 (its fork figure is published, not fitted); a fork of a small process on this machine, order of Table 1's 1.0 ms",
        ),
        exit: assumed(us(300.0), "as fork: a small process's exit and reaping, order of magnitude"),
        msg_send: assumed(us(20.0), "a socket write on a 1998 machine; no chat figure exists for it"),
        msg_recv: assumed(us(15.0), "a socket read on a 1998 machine; no chat figure exists for it"),
        wake_remote: assumed(0.0, "one CPU: every wake-up is local"),
        ipi_busy: assumed(0.0, "one CPU: no inter-processor interrupt"),
        msg_remote: assumed(0.0, "one CPU: every message is read where it was written"),
        loopback_xmit: assumed(0.0, "one CPU: the loopback's lock is never contended"),
        hrtick: false,
        fitted_by: None,
        crowded: Vec::new(),
    })
}

/// The smp2002 terms before the fit ([`super::fit::smp2002`]), each with its reason.
pub fn smp2002_assumed() -> CostProfile {
    let era = "a Pentium III-class SMP box of 2002 (about 700 MHz, shared front-side bus)";
    CostProfile {
        name: "smp2002".into(),
        machine: "Molnar's 2- and 8-way boxes, Linux 2.4.17 / 2.5.2-pre6 (2002)".into(),
        fit: Vec::new(),
        syscall: assumed(400.0, format!("{era}: a system call, about 300 cycles")),
        switch: assumed(900.0, format!("{era}: switch_to and schedule()'s fixed work")),
        address_space: assumed(700.0, format!("{era}: a CR3 reload and the TLB refill after it")),
        scan_per_task: assumed(60.0, format!("{era}: one goodness() on a cached task_struct, about 40 cycles")),
        recalc_per_task: assumed(60.0, format!("{era}: one task of the recalculation loop")),
        pick_o1: assumed(100.0, format!("{era}: two bit searches, a list head and a requeue")),
        tree_step: assumed(30.0, "no tree in these schedulers"),
        migration_refill: assumed(
            40_000.0,
            format!(
                "{era}: the cache footprint of a task that moved, refilled across the bus: about 40 KB (a fork child's kernel stack, task_struct, the page tables and pages fork copied or touched, the exit path's data) at about 1 GB/s (a 133 MHz, 8-byte front-side bus); a whole 256 KB L2 would take about 240 µs, but a child that exits at once touches a fraction of it"
            ),
        ),
        remote_line: assumed(
            REMOTE_LINE_2002,
            format!("{era}: a cache line fetched from the other CPU's cache over the bus"),
        ),
        lock_transfer: assumed(0.0, "fitted below"),
        wake: assumed(300.0, format!("{era}: try_to_wake_up's own work")),
        ipi: assumed(
            1_000.0,
            format!(
                "{era}: an inter-processor interrupt reaching an idle CPU and its schedule() starting, about a microsecond"
            ),
        ),
        tick: assumed(1_000.0, format!("{era}: a timer interrupt")),
        fork: assumed(60_000.0, format!("{era}: fork of a small process (page tables copied, copy-on-write set up)")),
        exit: assumed(30_000.0, format!("{era}: exit and reaping of a small process")),
        msg_send: assumed(3_000.0, format!("{era}: a TCP write on loopback, protocol processing included")),
        msg_recv: assumed(2_000.0, format!("{era}: a TCP read on loopback")),
        wake_remote: assumed(
            4.0 * REMOTE_LINE_2002,
            format!(
                "{era}: 4 lines at remote_line: the woken task_struct's state and run-list lines, the target queue's lock and its head or bitmap (try_to_wake_up on another CPU's queue)"
            ),
        ),
        ipi_busy: assumed(
            1_500.0,
            format!(
                "{era}: a reschedule IPI taken by a busy CPU: interrupt entry through the APIC, the handler's acknowledge and the return, about 1000 cycles"
            ),
        ),
        msg_remote: assumed(
            MSG_LINES as f64 * REMOTE_LINE_2002,
            format!(
                "{era}: {MSG_LINES} lines at remote_line: a TCP message read on another CPU than it was written brings the sk_buff (3 lines), its 100-byte payload (2), the receiving socket's queue and TCP state (4) and, for the ACK and the buffer's free, the sending socket's state and the slab's list (3)"
            ),
        ),
        loopback_xmit: assumed(
            500.0,
            format!(
                "{era}: the transmit under the loopback device's lock, about 350 cycles: loopback_xmit (skb_orphan, eth_type_trans, the statistics) and netif_rx queueing the segment on the CPU's backlog, with the lines cached; its lock's line, and each line the kernel writes under it, moves at remote_line"
            ),
        ),
        hrtick: false,
        fitted_by: None,
        crowded: Vec::new(),
    }
}

/// smp2002's cross-CPU cache line, ns (its `remote_line`): the cross-CPU terms are
/// counted in lines of this price.
const REMOTE_LINE_2002: f64 = 250.0;
/// Cache lines one loopback TCP message moves between CPUs when reader and writer
/// run on different CPUs (see smp2002's `msg_remote`).
pub const MSG_LINES: u32 = 12;

/// The switch figures a live profile takes from a stored run, ns, with the run's id.
#[derive(Debug, Clone, Copy)]
pub struct StoredSwitch {
    pub run: i64,
    /// A sched_yield hand-off between two threads, and between two processes, on one
    /// CPU (load.runqueue, yield design, 2 tasks).
    pub thread_ns: f64,
    pub process_ns: f64,
    /// spawn.fork_exit's full cycle, when the run has it.
    pub fork_exit_ns: Option<f64>,
    /// The thread switch stands above the process switch beyond both intervals: the
    /// address-space change cannot be measured from the pair, and is assumed.
    pub inconsistent: bool,
}

/// What a `live` profile measures on the machine itself, ns, handed to [`live`] by
/// whoever runs the simulator (the simulator measures nothing itself).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineProbes {
    /// sched_yield with nothing else runnable.
    pub syscall: f64,
    /// A goodness-like read, and a counter update, of a cache-cold task-sized record.
    pub scan: f64,
    pub recalc: f64,
    /// A bitmap find-first-bit, and one level of an ordered tree.
    pub pick: f64,
    pub tree: f64,
    /// Half a cache line's round trip between two CPUs; None with one CPU allowed.
    pub line: Option<f64>,
    /// How long a thread asleep on a CPU idle for 20 µs takes to run once another CPU
    /// wakes it (the wake-up's system call, the interrupt, the idle exit and the
    /// switch in); None with one CPU allowed.
    pub idle_wake: Option<f64>,
    /// Whether the kernel's sched features list HRTICK on; None where they cannot be
    /// read.
    pub hrtick: Option<bool>,
    /// CPUs the process may run on.
    pub cpus: usize,
    /// Which probes never ran alone: no timed batch of theirs went by without the
    /// probing thread (or, for the line, either thread) being switched out.
    pub crowded: Crowded,
}

/// The probes of [`MachineProbes`] that never had their CPU to themselves. Such a
/// probe's figure is the median of all its batches, each inflated by whatever shared
/// the CPU (a sched_yield that finds another task runnable switches to it), so the
/// profile says so beside the term and lists it in [`CostProfile::crowded`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Crowded {
    pub syscall: bool,
    /// The cold scan and recalculation walks.
    pub walks: bool,
    /// The bitmap pick and the tree step.
    pub pick: bool,
    pub line: bool,
    pub idle_wake: bool,
}

impl Crowded {
    /// The profile terms the crowded probes priced, by name.
    pub fn terms(self) -> Vec<String> {
        let Crowded { syscall, walks, pick, line, idle_wake } = self;
        [
            // The switch is a stored hand-off less the system call.
            (syscall, &["syscall", "switch"][..]),
            (walks, &["scan_per_task", "recalc_per_task"][..]),
            (pick, &["pick_o1", "tree_step"][..]),
            (line, &["remote_line"][..]),
            (idle_wake, &["ipi"][..]),
        ]
        .into_iter()
        .filter(|(crowded, _)| *crowded)
        .flat_map(|(_, names)| names.iter().map(|n| n.to_string()))
        .collect()
    }
}

/// A probe's note when it never ran alone.
const CROWDED: &str = "; its probe never had the CPU to itself (other work shared it): doubted";

/// A term measured by a probe: `why`, and the doubt when the probe was crowded.
fn probed(ns: f64, why: &str, crowded: bool) -> Term {
    if crowded { measured(ns, format!("{why}{CROWDED}")) } else { measured(ns, why) }
}

/// This machine: the bare system call, the cold scan and recalculation, the pick, the
/// tree step and the cross-CPU line transfer as `probes` measured them; the thread and
/// process switches from a stored run's yield hand-offs; the rest assumed, each saying
/// why.
pub fn live(stored: StoredSwitch, probes: &MachineProbes) -> CostProfile {
    let MachineProbes { syscall, scan, recalc, pick, tree, line, idle_wake, hrtick, cpus, crowded } = *probes;
    let run = stored.run;
    // A yield hand-off at 2 tasks holds a system call, one goodness-free pick and one
    // switch: the switch is the rest.
    let switch = (stored.thread_ns - syscall - pick).max(1.0);
    let asid = (stored.process_ns - stored.thread_ns).max(0.0);
    let line_ns = line.unwrap_or(0.0);
    let line_term = match line {
        Some(ns) => probed(
            ns,
            "half the round trip of a cache line bounced between two threads pinned to two CPUs",
            crowded.line,
        ),
        None => assumed(0.0, "one CPU allowed: no line to transfer"),
    };
    let (fork, exit) = match stored.fork_exit_ns {
        Some(cycle) => (
            measured(
                cycle * 2.0 / 3.0,
                format!("run #{run}: spawn.fork_exit's full cycle, two thirds (the split is assumed)"),
            ),
            measured(
                cycle / 3.0,
                format!("run #{run}: spawn.fork_exit's full cycle, one third (the split is assumed)"),
            ),
        ),
        None => (
            assumed(100.0 * switch, format!("run #{run} has no spawn.fork_exit: a fork priced as 100 switches")),
            assumed(50.0 * switch, format!("run #{run} has no spawn.fork_exit: an exit priced as 50 switches")),
        ),
    };
    CostProfile {
        name: "live".into(),
        machine: format!("this machine ({cpus} cpus allowed)"),
        fit: Vec::new(),
        syscall: probed(syscall, "sched_yield with nothing else runnable, timed in a loop", crowded.syscall),
        switch: probed(
            switch,
            &format!(
                "run #{run}: load.runqueue yield hand-off between 2 threads on one CPU, less the system call and a pick"
            ),
            crowded.syscall,
        ),
        address_space: if stored.inconsistent {
            assumed(
                asid,
                format!(
                    "run #{run}'s thread switch ({:.0} ns) stands above its process switch ({:.0} ns) beyond both intervals: the pair cannot price the address-space change, taken as nothing",
                    stored.thread_ns, stored.process_ns
                ),
            )
        } else {
            measured(
                asid,
                format!("run #{run}: load.runqueue yield hand-off between 2 processes less that between 2 threads"),
            )
        },
        scan_per_task: probed(
            scan,
            "a goodness-like read of 1.75 KB records linked in shuffled order (14 MB, cache-cold)",
            crowded.walks,
        ),
        recalc_per_task: probed(recalc, "a counter update of the same cache-cold records", crowded.walks),
        pick_o1: probed(pick, "a bitmap find-first-bit, timed", crowded.pick),
        tree_step: probed(tree, "one level of an ordered tree's insert and removal (1024 keys), timed", crowded.pick),
        migration_refill: assumed(
            64.0 * line_ns,
            "a task's footprint on a switch (64 lines: stack, task and mm structures) fetched from another CPU, at the measured line transfer",
        ),
        remote_line: line_term.clone(),
        lock_transfer: Term {
            ns: line_ns,
            basis: Basis::Assumed("one line transfer (the measured one) per spinning CPU".into()),
        },
        wake: assumed(syscall, "try_to_wake_up's own work priced as one bare system call"),
        ipi: match idle_wake {
            // The engine charges the waker's try_to_wake_up (`wake`) and the woken
            // CPU's switch on their own: the rest of the latency is the IPI's.
            Some(ns) => probed(
                (ns - syscall - switch).max(0.0),
                "the wake-to-run latency of a thread asleep on a CPU idle for 20 µs, woken from another, less a system call and a switch (a CPU idle longer may cost more to wake)",
                crowded.idle_wake,
            ),
            None => assumed(2.0 * switch, "an idle CPU woken by an inter-processor interrupt, priced as two switches"),
        },
        tick: assumed(syscall, "a timer interrupt priced as one bare system call"),
        fork,
        exit,
        msg_send: assumed(3.0 * syscall, "a socket write priced as three bare system calls"),
        msg_recv: assumed(2.0 * syscall, "a socket read priced as two bare system calls"),
        wake_remote: assumed(4.0 * line_ns, "4 lines (the woken task's and its queue's) at the measured line transfer"),
        ipi_busy: assumed(2.0 * syscall, "a reschedule IPI taken by a busy CPU priced as two bare system calls"),
        msg_remote: assumed(
            MSG_LINES as f64 * line_ns,
            format!(
                "a message read on another CPU than it was written: {MSG_LINES} lines at the measured line transfer"
            ),
        ),
        loopback_xmit: assumed(
            syscall,
            "the transmit under the loopback device's lock (kernels that take it) priced as one bare system call",
        ),
        hrtick: hrtick.unwrap_or(false),
        fitted_by: None,
        crowded: crowded.terms(),
    }
}

/// Whether a sched features list has HRTICK on.
pub fn hrtick_listed(features: &str) -> bool {
    features.split_whitespace().any(|f| f == "HRTICK")
}

/// A fixed profile for tests and examples: round numbers, not a machine.
pub fn unit_profile() -> CostProfile {
    let t = |ns: f64| assumed(ns, "a round number for tests");
    CostProfile {
        name: "unit".into(),
        machine: "none: round numbers for tests".into(),
        fit: Vec::new(),
        syscall: t(100.0),
        switch: t(500.0),
        address_space: t(500.0),
        scan_per_task: t(10.0),
        recalc_per_task: t(20.0),
        pick_o1: t(30.0),
        tree_step: t(15.0),
        migration_refill: t(1000.0),
        remote_line: t(50.0),
        lock_transfer: t(100.0),
        wake: t(200.0),
        ipi: t(2000.0),
        tick: t(0.0),
        fork: t(20_000.0),
        exit: t(10_000.0),
        msg_send: t(1000.0),
        msg_recv: t(500.0),
        wake_remote: t(200.0),
        ipi_busy: t(300.0),
        msg_remote: t(600.0),
        loopback_xmit: t(200.0),
        hrtick: false,
        fitted_by: None,
        crowded: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_travis_fit_recovers_known_parameters() {
        let (a, b, c) = (3.0, 0.05, 12.0);
        let pts: Vec<(f64, f64)> = [2.0, 4.0, 8.0, 10.0, 20.0, 40.0].iter().map(|&n| (n, a + b * n + c / n)).collect();
        let (p, res) = fit_travis_row(&pts).unwrap();
        assert!((p[0] - a).abs() < 1e-9 && (p[1] - b).abs() < 1e-9 && (p[2] - c).abs() < 1e-9, "{p:?}");
        assert!(res.iter().all(|r| r.abs() < 1e-9));
    }

    #[test]
    fn pentium200_is_fitted_to_the_before_process_row_and_says_so() {
        let p = pentium200().unwrap();
        assert_eq!(p.name, "pentium200");
        for (name, t) in p.terms() {
            assert!(t.ns.is_finite() && t.ns >= 0.0, "{name}: {}", t.ns);
            assert!(!t.basis.why().is_empty(), "{name} says why");
        }
        assert!(matches!(p.scan_per_task.basis, Basis::Fitted(ref w) if w.contains("before change")));
        assert!(matches!(p.address_space.basis, Basis::Fitted(_)));
        assert!(matches!(p.syscall.basis, Basis::Assumed(_)));
        assert!(p.fit.iter().any(|l| l.starts_with("residuals")));
        // The profile is data: it survives JSON unchanged.
        let back: CostProfile = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
