//! Finding an anchor's program and running it once: opened and verified like the no-op
//! helper (oscost often runs as root), exec'd through its descriptor, on the CPU its
//! oscost row uses when it has one, ended when it runs past its bound or oscost is
//! stopped, and reaped on every path.

use crate::bench::load::wakeup::WakeupOptions;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::ANCHOR_BOUND;
use super::anchor::{AnchorId, Program};
use crate::helper::{Executable, Inherited, RAW_LOOP_ELF};
use crate::sys;

/// The most of an anchor's output (or export file) that is read.
const OUTPUT_LIMIT: u64 = 1 << 20;

/// A program found and opened.
pub struct Found {
    exe: Executable,
    /// The name it is started under (its argv[0]).
    arg0: String,
    /// Where it was found, as printed.
    pub shown: String,
}

pub enum Located {
    Found(Found),
    /// Not installed here, or refused, with why.
    Missing(String),
}

/// The directories of PATH.
fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default()
}

/// `name` in the directories of PATH, in order.
fn on_path(name: &str) -> Vec<PathBuf> {
    path_dirs().into_iter().map(|d| d.join(name)).filter(|p| p.is_file()).collect()
}

/// Where Debian and Ubuntu keep perf's versioned binaries (`/usr/bin/perf_6.1`,
/// `/usr/lib/linux-tools/6.8.0-31-generic/perf`), newest name last; their `perf`
/// wrapper refuses to run on a kernel it has no build for.
fn versioned_perf() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let list = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> =
            std::fs::read_dir(dir).map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
        v.sort();
        v
    };
    for p in list(Path::new("/usr/bin")) {
        if p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("perf_")) {
            found.push(p);
        }
    }
    for base in ["/usr/lib/linux-tools", "/usr/lib"] {
        for d in list(Path::new(base)) {
            let is_tools = d.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("linux-tools"));
            if (base == "/usr/lib/linux-tools" || is_tools) && d.join("perf").is_file() {
                found.push(d.join("perf"));
            }
        }
    }
    found.reverse();
    found
}

/// Whether `found` is a perf that runs here (`perf --version` prints its version).
fn perf_runs(found: &Found) -> bool {
    let Ok(held) = found.exe.inherit() else { return false };
    let spec = Spec { exec: held.exec_path(), arg0: found.arg0.clone(), args: vec!["--version".into()], pin: None };
    matches!(run(&spec, Duration::from_secs(20)), Ok(out) if out.starts_with("perf version"))
}

pub fn locate(program: Program) -> Located {
    let name = match program {
        Program::RawLoop => {
            if RAW_LOOP_ELF.is_empty() {
                return Located::Missing("the raw loop is not built for this architecture".into());
            }
            return match Executable::sealed("oscost-rawloop", RAW_LOOP_ELF) {
                Ok(exe) => Located::Found(Found { exe, arg0: "oscost-rawloop".into(), shown: "oscost-rawloop".into() }),
                Err(e) => Located::Missing(format!("the raw loop cannot be held in sealed memory: {e}")),
            };
        }
        Program::Tool(name) => name,
    };
    let mut candidates = on_path(name);
    if name == "perf" {
        candidates.extend(versioned_perf());
    }
    if candidates.is_empty() {
        return Located::Missing(format!("{name} is not installed (not on PATH)"));
    }
    let mut refused = Vec::new();
    for path in candidates {
        let exe = match Executable::open_verified(&path) {
            Ok(exe) => exe,
            Err(why) => {
                refused.push(why.to_string());
                continue;
            }
        };
        let found = Found { exe, arg0: name.to_string(), shown: path.display().to_string() };
        if name != "perf" || perf_runs(&found) {
            return Located::Found(found);
        }
        refused.push(format!("{} does not run on this kernel (`perf --version` failed)", path.display()));
    }
    Located::Missing(refused.join("; "))
}

/// One start of a program.
struct Spec {
    exec: String,
    arg0: String,
    args: Vec<String>,
    /// The CPU it starts on, with a 1 ns timer slack.
    pin: Option<usize>,
}

/// Why one anchor run gave no figure.
#[derive(Debug)]
pub enum RunError {
    Start(io::Error),
    Exit(std::process::ExitStatus, String),
    Timeout,
    Stopped,
    Unreadable(super::parse::ParseError),
    Export(io::Error),
}

/// Reads at most [`OUTPUT_LIMIT`] bytes of `r`, then drains the rest (so the writer is
/// never blocked on a full pipe).
fn read_bounded(mut r: impl Read) -> String {
    let mut buf = Vec::new();
    let _ = (&mut r).take(OUTPUT_LIMIT).read_to_end(&mut buf);
    let _ = io::copy(&mut r, &mut io::sink());
    String::from_utf8_lossy(&buf).into_owned()
}

/// The last line of `text` with something in it, shortened.
fn tail(text: &str) -> String {
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("(no output)").trim();
    last.chars().take(160).collect()
}

/// Starts `spec` from a thread of its own, which waits for it (the child dies with that
/// thread): pinned and with a 1 ns timer slack while it starts the child when asked (the
/// child inherits both), then back on every allowed CPU, so its polling never runs on
/// the child's CPU. The child is killed when it runs past `bound` or a stop signal
/// arrives. Its standard output, or why there is none.
fn run(spec: &Spec, bound: Duration) -> Result<String, RunError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let child = match spec.pin {
                Some(cpu) => {
                    let allowed = sys::allowed_cpus().map_err(RunError::Start)?;
                    sys::set_affinity(&[cpu]).map_err(RunError::Start)?;
                    let slack = sys::TimerSlack::set(1).map_err(RunError::Start)?;
                    let child = start(spec);
                    drop(slack);
                    sys::set_affinity(&allowed).map_err(RunError::Start)?;
                    child
                }
                None => start(spec),
            }?;
            wait(child, bound)
        })
        .join()
        .unwrap_or_else(|_| Err(RunError::Start(io::Error::other("the thread starting it panicked"))))
    })
}

fn start(spec: &Spec) -> Result<std::process::Child, RunError> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&spec.exec);
    cmd.arg0(&spec.arg0).args(&spec.args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    sys::command_dies_with_starter(&mut cmd);
    cmd.spawn().map_err(RunError::Start)
}

/// Waits for `child` (reaped on every path), reading its output as it comes.
fn wait(mut child: std::process::Child, bound: Duration) -> Result<String, RunError> {
    let stdout = child.stdout.take().expect("stdout was piped");
    let stderr = child.stderr.take().expect("stderr was piped");
    let out = std::thread::spawn(move || read_bounded(stdout));
    let err = std::thread::spawn(move || read_bounded(stderr));
    let started = Instant::now();
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(RunError::Start(e));
            }
        }
        let why = if sys::stop_signal().is_some() {
            Some(RunError::Stopped)
        } else if started.elapsed() > bound {
            Some(RunError::Timeout)
        } else {
            None
        };
        if let Some(why) = why {
            let _ = child.kill();
            let _ = child.wait();
            break Err(why);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    let status = ended?;
    if !status.success() {
        return Err(RunError::Exit(status, tail(if err.trim().is_empty() { &out } else { &err })));
    }
    Ok(out)
}

/// An anchor ready to run: its program's descriptor held open for exec, its arguments,
/// the CPU it runs on, and for hyperfine the no-op helper and a private folder for its
/// export file.
pub struct Prepared {
    spec: Spec,
    shown: String,
    _held: Inherited,
    _helper: Option<Inherited>,
    export: Option<(tempfile::TempDir, PathBuf)>,
}

/// Why an anchor program could not be made ready to run.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("passing {shown} on: {source}")]
    Pass { shown: String, source: io::Error },
    #[error("the no-op helper: {0}")]
    Helper(#[from] crate::helper::HelperError),
    #[error("the no-op helper: {0}")]
    HelperPass(#[source] io::Error),
    #[error("a private folder for hyperfine's export: {0}")]
    ExportDir(#[source] io::Error),
    #[error("reading CPU affinity: {0}")]
    Affinity(#[source] io::Error),
    #[error(transparent)]
    Cpus(#[from] crate::tasks::TooFewCpus),
}

impl Prepared {
    pub fn new(a: AnchorId, found: &Found, quick: bool, wakeup: &WakeupOptions) -> Result<Self, PrepareError> {
        let held = found.exe.inherit().map_err(|source| PrepareError::Pass { shown: found.shown.clone(), source })?;
        let helper = match a {
            AnchorId::Hyperfine => Some(Executable::embedded()?.inherit().map_err(PrepareError::HelperPass)?),
            _ => None,
        };
        let export = match a {
            AnchorId::Hyperfine => {
                let dir = crate::files::private_dir("oscost-crosscheck-").map_err(PrepareError::ExportDir)?;
                let file = dir.path().join("hyperfine.json");
                Some((dir, file))
            }
            _ => None,
        };
        let helper_path = helper.as_ref().map(Inherited::exec_path).unwrap_or_default();
        let export_path = export.as_ref().map(|(_, f)| f.display().to_string()).unwrap_or_default();
        let pin = if a.pinned() {
            let allowed = sys::allowed_cpus().map_err(PrepareError::Affinity)?;
            let (cpus, _) = crate::tasks::PeerPlacement::SameCpu.cpus(&allowed)?;
            cpus.first().copied()
        } else {
            None
        };
        let spec = Spec {
            exec: held.exec_path(),
            arg0: found.arg0.clone(),
            args: a.args(quick, &helper_path, &export_path, wakeup),
            pin,
        };
        let mut shown = spec.arg0.clone();
        for arg in &spec.args {
            shown.push(' ');
            shown.push_str(if *arg == helper_path {
                "oscost-noop"
            } else if *arg == export_path {
                "FILE"
            } else {
                arg
            });
        }
        if let Some(cpu) = pin {
            shown.push_str(&format!(" [CPU {cpu}, timer slack 1 ns]"));
        }
        if found.shown != found.arg0 {
            shown.push_str(&format!(" [{}]", found.shown));
        }
        Ok(Prepared { spec, shown, _held: held, _helper: helper, export })
    }

    /// What runs, as a command line with where the program was found.
    pub fn command_line(&self) -> String {
        self.shown.clone()
    }

    /// One run: the anchor's figure in its comparison's unit.
    pub fn run_once(&self, a: AnchorId) -> Result<f64, RunError> {
        if let Some((_, file)) = &self.export {
            let _ = std::fs::remove_file(file);
        }
        let out = run(&self.spec, ANCHOR_BOUND)?;
        let text = match &self.export {
            Some((_, file)) => std::fs::File::open(file).map(read_bounded).map_err(RunError::Export)?,
            None => out,
        };
        a.figure(&text).map_err(RunError::Unreadable)
    }
}
