//! The machine fingerprint stored with every run: enough to tell two machines, kernels
//! or settings apart when their figures differ.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::clock::Calibration;
use crate::sys;

/// The version line `oscost --version` prints, with the commit the fingerprint records.
pub const VERSION_LINE: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("OSCOST_GIT_COMMIT"), ")");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    pub arch: String,
    pub cpu_model: String,
    /// Logical CPUs online, and those this process may use.
    pub logical_cpus: usize,
    pub allowed_cpus: Vec<usize>,
    /// Whether simultaneous multithreading is active (None: the kernel does not say).
    pub smt_active: Option<bool>,
    pub governor: Option<String>,
    pub kernel_release: String,
    pub kernel_version: String,
    /// Hypervisor flag and DMI vendor/product where readable, else "none detected".
    pub virtualization: String,
    pub clocksource: Option<String>,
    pub transparent_hugepages: Option<String>,
    /// /sys/devices/system/cpu/vulnerabilities/* → its one-line state.
    pub mitigations: BTreeMap<String, String>,
    pub libc: String,
    pub tool_version: String,
    pub git_commit: String,
    pub command_line: String,
    /// Whether perf_event_open hardware counters work here, and why not.
    pub hardware_counters: String,
    pub calibration: Option<Calibration>,
    // Fields added after the first stored runs: absent in those, and then left out
    // of their exports, so an old run reads and prints as it did.
    /// The CPU's microcode revision (/proc/cpuinfo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microcode: Option<String>,
    /// The kernel's command line (/proc/cmdline): mitigations=, isolcpus=, nohz_full=.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_cmdline: Option<String>,
    /// Frequency boost (turbo): "on", "off", or None where the kernel does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<String>,
    /// The hypervisor's steal time since boot, as a coarse band (`steal_band`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal: Option<String>,
    /// The CPU limits of the run's cgroups (`procfs::cgroup_cpu_limits`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_limits: Option<String>,
    /// The traps the preflight found before the run measured anything (`preflight`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<crate::preflight::Trap>,
    /// What the process inherited that changes a system call's cost: seccomp filters,
    /// no_new_privs, speculation controls (`procfs::ProcessControls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_controls: Option<crate::procfs::ProcessControls>,
    /// The TCP congestion control new sockets get (net.ipv4.tcp_congestion_control): on
    /// loopback it sets how many segments may be in flight unacknowledged, and so how
    /// many messages a segment carries (load.chat's regime moved ×1.8 between cubic
    /// and bbr on one machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_congestion_control: Option<String>,
    /// How an idle CPU waits: the cpuidle driver and governor, and a guest's halt-poll
    /// window where the haltpoll governor has one (`haltpoll (governor haltpoll, guest
    /// halt poll 0 ns)`). A wake-up aimed at an idle CPU costs what its idle state
    /// costs to leave; in a VM whose idle vCPU halts, that is a trip through the host.
    /// On a 2-vCPU VM a thread's create and join ran at 20–60 µs, in phases, with no
    /// guest halt polling, and steadily at 22–24 µs with 200 µs of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuidle: Option<String>,
}

/// The cpuidle driver and governor from sysfs, with the haltpoll governor's guest
/// halt-poll window where that module is loaded; None without cpuidle.
fn read_cpuidle() -> Option<String> {
    let base = Path::new("/sys/devices/system/cpu/cpuidle");
    let driver = read_trim(base.join("current_driver"))?;
    let governor = read_trim(base.join("current_governor")).or_else(|| read_trim(base.join("current_governor_ro")));
    let poll = read_trim("/sys/module/haltpoll/parameters/guest_halt_poll_ns");
    Some(cpuidle_text(&driver, governor.as_deref(), poll.as_deref()))
}

/// The fingerprint's cpuidle text from what sysfs gave.
fn cpuidle_text(driver: &str, governor: Option<&str>, halt_poll_ns: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let Some(g) = governor {
        parts.push(format!("governor {g}"));
    }
    if let Some(ns) = halt_poll_ns {
        parts.push(format!("guest halt poll {ns} ns"));
    }
    if parts.is_empty() { driver.to_string() } else { format!("{driver} ({})", parts.join(", ")) }
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// The value of the first `key : value` line of /proc/cpuinfo.
pub fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// Describes virtualisation from the cpuinfo flags and DMI strings.
pub fn describe_virtualization(cpu_flags: &str, dmi_vendor: Option<&str>, dmi_product: Option<&str>) -> String {
    let hypervisor = cpu_flags.split_whitespace().any(|f| f == "hypervisor");
    let dmi: Vec<&str> = [dmi_vendor, dmi_product].into_iter().flatten().collect();
    match (hypervisor, dmi.is_empty()) {
        (true, false) => format!("hypervisor ({})", dmi.join(" ")),
        (true, true) => "hypervisor (no DMI)".to_string(),
        (false, false) => format!("none detected ({})", dmi.join(" ")),
        (false, true) => "none detected".to_string(),
    }
}

fn mitigations() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/vulnerabilities") {
        for e in dir.flatten() {
            if let Some(v) = read_trim(e.path()) {
                out.insert(e.file_name().to_string_lossy().into_owned(), v);
            }
        }
    }
    out
}

fn hardware_counters() -> String {
    match sys::PerfCounter::open(sys::PerfEvent::Instructions, 0) {
        Ok(_) => "available".to_string(),
        Err(e) => format!("unavailable: {}", counters_refused(&e)),
    }
}

/// Why the kernel refused a hardware counter, in words: the errno alone ("No such
/// file or directory") names a file that does not exist.
fn counters_refused(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP) => {
            "this CPU (or its hypervisor) exposes no hardware performance counters".into()
        }
        Some(libc::EACCES | libc::EPERM) => {
            let level = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
            format!("not permitted (kernel.perf_event_paranoid = {})", level.trim())
        }
        Some(libc::EMFILE) => "too many open files".into(),
        _ => e.to_string(),
    }
}

/// Reads the fingerprint of this machine.
pub fn fingerprint(command_line: &str, calibration: Option<Calibration>) -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo_field(&cpuinfo, "flags").unwrap_or_default();
    let (_, nodename, release, version, machine) = sys::uname();
    let logical_cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let logical_cpus = cpuinfo.lines().filter(|l| l.starts_with("processor")).count().max(logical_cpus);
    Machine {
        hostname: nodename,
        arch: machine,
        cpu_model: cpuinfo_field(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
        logical_cpus,
        allowed_cpus: sys::allowed_cpus().unwrap_or_default(),
        smt_active: read_trim("/sys/devices/system/cpu/smt/active").map(|s| s == "1"),
        governor: read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        kernel_release: release,
        kernel_version: version,
        virtualization: describe_virtualization(
            &flags,
            read_trim("/sys/class/dmi/id/sys_vendor").as_deref(),
            read_trim("/sys/class/dmi/id/product_name").as_deref(),
        ),
        clocksource: read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        transparent_hugepages: read_trim("/sys/kernel/mm/transparent_hugepage/enabled"),
        mitigations: mitigations(),
        libc: sys::libc_version(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("OSCOST_GIT_COMMIT").to_string(),
        command_line: command_line.to_string(),
        hardware_counters: hardware_counters(),
        calibration,
        microcode: cpuinfo_field(&cpuinfo, "microcode"),
        kernel_cmdline: read_trim("/proc/cmdline"),
        boost: crate::procfs::boost(),
        steal: crate::procfs::steal_share().map(steal_band),
        cgroup_limits: Some(crate::procfs::cgroup_cpu_limits()),
        preflight: Vec::new(),
        process_controls: Some(crate::procfs::ProcessControls::read()),
        tcp_congestion_control: read_trim("/proc/sys/net/ipv4/tcp_congestion_control"),
        cpuidle: read_cpuidle(),
    }
}

/// A comparability-key field whose values differ between two sets of runs: the
/// distinct values on each side, in first-seen order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyChange {
    pub field: String,
    pub before: Vec<String>,
    pub after: Vec<String>,
}

/// The comparability-key fields whose sets of values differ between the machines of
/// `before` and those of `after` (a field either side lacks counts as "unknown").
pub fn key_changes(before: &[&Machine], after: &[&Machine]) -> Vec<KeyChange> {
    let keys = |ms: &[&Machine]| ms.iter().map(|m| m.comparability_key()).collect::<Vec<_>>();
    let (kb, ka) = (keys(before), keys(after));
    let mut fields: Vec<&String> = Vec::new();
    for (f, _) in kb.iter().chain(&ka).flatten() {
        if !fields.contains(&f) {
            fields.push(f);
        }
    }
    let values = |side: &[Vec<(String, String)>], field: &str| {
        let mut vs: Vec<String> = Vec::new();
        for key in side {
            let v = key.iter().find(|(f, _)| f == field).map_or("unknown", |(_, v)| v.as_str());
            if !vs.iter().any(|x| x == v) {
                vs.push(v.to_string());
            }
        }
        vs
    };
    fields
        .into_iter()
        .filter_map(|f| {
            let (b, a) = (values(&kb, f), values(&ka, f));
            let same = b.len() == a.len() && b.iter().all(|v| a.contains(v));
            (!same).then(|| KeyChange { field: f.clone(), before: b, after: a })
        })
        .collect()
}

/// The comparability-key fields that differ among `machines` themselves (runs pooled
/// as one side that should not have been).
pub fn key_spread(machines: &[&Machine]) -> Vec<String> {
    match machines {
        [first, rest @ ..] => {
            let mut out = Vec::new();
            for m in rest {
                for c in key_changes(&[first], &[m]) {
                    if !out.contains(&c.field) {
                        out.push(c.field);
                    }
                }
            }
            out
        }
        [] => Vec::new(),
    }
}

/// Steal time as a band, not a number: the comparability key must not change with
/// every run's last decimal, only when the host's sharing does.
pub fn steal_band(share: f64) -> String {
    match share {
        s if s <= 0.0 => "none",
        s if s < 0.01 => "under 1%",
        s if s < 0.05 => "1-5%",
        _ => "5% or more",
    }
    .to_string()
}

impl Machine {
    /// The comparability key: the fields that can move a figure without the code
    /// measuring it changing (what runs, on what, under which settings), as (name,
    /// value) in a fixed order, mitigations last, one field each. Two runs whose keys
    /// differ are compared only with the difference named. The host name is not in
    /// it: two hosts alike in every field are comparable (and `--by host` separates
    /// them where that matters).
    pub fn comparability_key(&self) -> Vec<(String, String)> {
        let known = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
        let mut key = vec![
            ("cpu".to_string(), self.cpu_model.clone()),
            ("microcode".into(), known(&self.microcode)),
            (
                "cpus".into(),
                format!("{} online, {} allowed", self.logical_cpus, sys::cpu_list_text(&self.allowed_cpus)),
            ),
            ("smt".into(), self.smt_text().into()),
            ("governor".into(), known(&self.governor)),
            ("boost".into(), known(&self.boost)),
            ("kernel".into(), self.kernel_release.clone()),
            ("kernel command line".into(), known(&self.kernel_cmdline)),
            ("virtualization".into(), self.virtualization.clone()),
            ("steal".into(), known(&self.steal)),
            ("clocksource".into(), known(&self.clocksource)),
            ("transparent hugepages".into(), known(&self.transparent_hugepages)),
            ("cgroup limits".into(), known(&self.cgroup_limits)),
            ("tcp congestion control".into(), known(&self.tcp_congestion_control)),
            ("cpuidle".into(), known(&self.cpuidle)),
            ("process controls".into(), self.process_controls.as_ref().map_or_else(|| "unknown".into(), |c| c.text())),
            ("libc".into(), self.libc.clone()),
            ("oscost".into(), format!("{} ({})", self.tool_version, self.git_commit)),
        ];
        key.extend(self.mitigations.iter().map(|(k, v)| (format!("mitigation {k}"), v.clone())));
        key
    }

    /// Simultaneous multithreading in words: active, inactive or unknown.
    pub fn smt_text(&self) -> &'static str {
        match self.smt_active {
            Some(true) => "active",
            Some(false) => "inactive",
            None => "unknown",
        }
    }

    /// A fixed, made-up fingerprint, for tests and examples that must not depend on
    /// (or probe) the machine they run on.
    pub fn example() -> Machine {
        Machine {
            hostname: "example-host".into(),
            arch: "x86_64".into(),
            cpu_model: "Example CPU @ 2.00GHz".into(),
            logical_cpus: 2,
            allowed_cpus: vec![0, 1],
            smt_active: Some(false),
            governor: None,
            kernel_release: "6.1.0-example".into(),
            kernel_version: "#1 SMP".into(),
            virtualization: "hypervisor (no DMI)".into(),
            clocksource: Some("tsc".into()),
            transparent_hugepages: Some("always [madvise] never".into()),
            mitigations: BTreeMap::from([("spectre_v2".to_string(), "Mitigation: Retpolines".to_string())]),
            libc: "glibc 2.36".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: "000000000000".into(),
            command_line: "oscost run".into(),
            hardware_counters: "unavailable (example)".into(),
            calibration: None,
            microcode: Some("0x1".into()),
            kernel_cmdline: Some("root=/dev/vda1 ro".into()),
            boost: None,
            steal: Some("none".into()),
            cgroup_limits: Some("cpu.max=max 100000 cpuset=0-1".into()),
            preflight: Vec::new(),
            process_controls: Some(crate::procfs::ProcessControls::parse(
                "Seccomp:\t0\nSeccomp_filters:\t0\nNoNewPrivs:\t0\nSpeculation_Store_Bypass:\tthread vulnerable\nSpeculationIndirectBranch:\tconditional enabled\n",
            )),
            tcp_congestion_control: Some("cubic".into()),
            cpuidle: Some("haltpoll (governor haltpoll, guest halt poll 0 ns)".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_and_virtualization() {
        let text = "processor\t: 0\nmodel name\t: Test CPU @ 2.0GHz\nflags\t\t: fpu tsc hypervisor\n";
        assert_eq!(cpuinfo_field(text, "model name").as_deref(), Some("Test CPU @ 2.0GHz"));
        let flags = cpuinfo_field(text, "flags").unwrap();
        assert_eq!(describe_virtualization(&flags, Some("QEMU"), None), "hypervisor (QEMU)");
        assert_eq!(describe_virtualization("fpu tsc", None, None), "none detected");
    }

    #[test]
    fn key_changes_name_the_fields_that_moved() {
        let a = Machine::example();
        let mut b = a.clone();
        b.kernel_release = "6.2.0-example".into();
        b.mitigations.insert("retbleed".into(), "Vulnerable".into());
        let changed = key_changes(&[&a, &a], &[&b]);
        let fields: Vec<&str> = changed.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["kernel", "mitigation retbleed"]);
        assert_eq!(changed[0].before, ["6.1.0-example"]);
        assert_eq!(changed[0].after, ["6.2.0-example"]);
        assert_eq!(changed[1].before, ["unknown"]);
        assert!(key_changes(&[&a], &[&a.clone()]).is_empty());
        // The host is not in the key; the order of runs within a side is not either.
        let mut elsewhere = a.clone();
        elsewhere.hostname = "other".into();
        assert!(key_changes(&[&a, &b], &[&b, &elsewhere]).is_empty());
        assert_eq!(key_spread(&[&a, &elsewhere, &b]), ["kernel", "mitigation retbleed"]);
        assert!(key_spread(&[&a, &elsewhere]).is_empty());
    }

    #[test]
    fn a_change_of_tcp_congestion_control_is_named() {
        let a = Machine::example();
        let b = Machine { tcp_congestion_control: Some("bbr".into()), ..a.clone() };
        let changed = key_changes(&[&a], &[&b]);
        assert_eq!(changed.len(), 1, "{changed:?}");
        assert_eq!(changed[0].field, "tcp congestion control");
        assert_eq!(
            (changed[0].before.as_slice(), changed[0].after.as_slice()),
            (&["cubic".to_string()][..], &["bbr".to_string()][..])
        );
        // A run stored before the field existed reads it as unknown (serde's default).
        let old = Machine { tcp_congestion_control: None, ..a.clone() };
        assert!(old.comparability_key().contains(&("tcp congestion control".into(), "unknown".into())));
    }

    #[test]
    fn a_change_of_how_idle_cpus_wait_is_named() {
        let a = Machine::example();
        let polled = cpuidle_text("haltpoll", Some("haltpoll"), Some("200000"));
        assert_eq!(polled, "haltpoll (governor haltpoll, guest halt poll 200000 ns)");
        let b = Machine { cpuidle: Some(polled), ..a.clone() };
        let changed = key_changes(&[&a], &[&b]);
        assert_eq!(changed.len(), 1, "{changed:?}");
        assert_eq!(changed[0].field, "cpuidle");
        assert_eq!(cpuidle_text("intel_idle", Some("menu"), None), "intel_idle (governor menu)");
        assert_eq!(cpuidle_text("acpi_idle", None, None), "acpi_idle");
        let old = Machine { cpuidle: None, ..a };
        assert!(old.comparability_key().contains(&("cpuidle".into(), "unknown".into())));
    }

    #[test]
    fn the_fingerprint_reads_the_cpuidle_driver() {
        let m = fingerprint("oscost info", None);
        match std::fs::read_to_string("/sys/devices/system/cpu/cpuidle/current_driver") {
            Ok(s) => assert!(m.cpuidle.as_deref().is_some_and(|c| c.starts_with(s.trim())), "{:?}", m.cpuidle),
            Err(e) => eprintln!("skipping: no cpuidle driver readable here ({e})"),
        }
    }

    #[test]
    fn the_fingerprint_reads_the_kernels_tcp_congestion_control() {
        let m = fingerprint("oscost info", None);
        match std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control") {
            Ok(s) => assert_eq!(m.tcp_congestion_control.as_deref(), Some(s.trim())),
            Err(e) => eprintln!("skipping: /proc/sys/net/ipv4/tcp_congestion_control unreadable here ({e})"),
        }
    }

    #[test]
    fn fingerprint_has_the_essentials() {
        let m = fingerprint("oscost info", None);
        assert!(!m.kernel_release.is_empty());
        assert!(m.logical_cpus >= 1);
        assert!(!m.allowed_cpus.is_empty());
        assert_eq!(m.command_line, "oscost info");
        // The C library as its own tool reports it, where that tool exists.
        match std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output() {
            Ok(o) if o.status.success() => {
                assert_eq!(m.libc, String::from_utf8_lossy(&o.stdout).trim(), "libc version");
            }
            _ => eprintln!("skipping the libc cross-check: getconf GNU_LIBC_VERSION is not available"),
        }
    }
}
