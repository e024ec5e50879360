//! The machine fingerprint stored with every run: enough to tell two machines, kernels
//! or settings apart when their figures differ.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::clock::Calibration;
use crate::sys;

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
    }
}

impl Machine {
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
