//! `thp:always`, `thp:never`: the system's transparent huge page setting
//! (/sys/kernel/mm/transparent_hugepage/enabled) changed during the condition's rounds
//! and put back after each, so the baseline's rounds see the machine's own. The old
//! value is recorded in the journal before each change: a run killed mid-round has it
//! restored by the next.

use serde::{Deserialize, Serialize};

use super::journal::{self, Restore, Undo};
use super::{Condition, Kind, Unavailable};

pub const KIND: Kind = Kind { name: "thp", parse, forms: "thp:always, thp:never" };

const SETTING: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Always,
    Never,
}

fn parse(rest: &str) -> Result<Condition, String> {
    match rest {
        "always" => Ok(Condition::Thp(Mode::Always)),
        "never" => Ok(Condition::Thp(Mode::Never)),
        _ => Err(format!("{rest:?} is not always or never")),
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Always => "always",
            Mode::Never => "never",
        })
    }
}

/// The setting's current value: the bracketed word of "always [madvise] never".
pub fn current() -> Option<String> {
    let text = std::fs::read_to_string(SETTING).ok()?;
    let start = text.find('[')?;
    let end = text[start..].find(']')?;
    Some(text[start + 1..start + end].to_string())
}

/// Checks the setting exists and can be written.
pub fn check(_: Mode) -> Result<(), Unavailable> {
    if current().is_none() {
        return Err(Unavailable(format!("this kernel has no transparent huge pages ({SETTING})")));
    }
    if !crate::sys::is_root() {
        return Err(Unavailable(format!("changing {SETTING} needs root")));
    }
    journal::folder().map(drop).map_err(Unavailable)
}

/// Sets the mode, recorded first; put back when the returned guard drops.
pub fn set(m: Mode) -> Result<Restore, String> {
    let old = current().ok_or_else(|| format!("reading {SETTING}"))?;
    let restore = journal::record(Undo::Write { path: SETTING.into(), value: old })?;
    std::fs::write(SETTING, m.to_string()).map_err(|e| format!("writing {m} to {SETTING}: {e}"))?;
    if current().as_deref() != Some(&m.to_string()) {
        return Err(format!("{SETTING} does not read {m} after it was written"));
    }
    Ok(restore)
}

/// The setting as it reads now.
pub fn describe() -> String {
    format!("{SETTING} reads {}", current().unwrap_or_else(|| "nothing".into()))
}
