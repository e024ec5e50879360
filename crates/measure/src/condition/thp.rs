//! `thp:always`, `thp:never`: the system's transparent huge page setting
//! (/sys/kernel/mm/transparent_hugepage/enabled) changed during the condition's rounds
//! and put back after each, so the baseline's rounds see the machine's own.
//!
//! The setting is the whole system's, so a run takes it for its life ([`prepare`],
//! through the journal's lock): a second run at the same time skips the condition
//! with the reason rather than read the first's value as the original. The owner puts
//! back what a killed run left, reads the original once, and records it with the value
//! it writes before its first change: a run killed mid-round has it restored by the
//! next, unless someone changed it since.
//!
//! Each round checks the setting still reads the original before writing, and reads
//! the mode at its end: a round under which it did not hold is refused, not labelled
//! with a setting it did not run under; a value someone else wrote is never
//! overwritten.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::journal::{self, Claim, Restore, Undo};
use super::{Act, Condition, HoldsRound, HoldsRun, Kind, Malformed, NotActed, RoundError, Setup, Unavailable};

pub const KIND: Kind = Kind { name: "thp", parse, forms: "thp:always, thp:never" };

pub const SETTING: &str = super::settings::THP;

/// How long a run waits for another that holds the setting before it skips the
/// condition: long enough for a run that is ending to put it back.
const WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Always,
    Never,
}

/// The condition: the mode set during its rounds.
struct Thp(Mode);

fn parse(rest: &str) -> Result<Condition, Malformed> {
    match rest {
        "always" => Ok(Condition::new(Thp(Mode::Always))),
        "never" => Ok(Condition::new(Thp(Mode::Never))),
        _ => Err(Malformed::NotOneOf { given: rest.into(), expected: "always or never" }),
    }
}

impl std::fmt::Display for Thp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "thp:{}", self.0)
    }
}

impl Act for Thp {
    fn params_changed(&self) -> &'static [&'static str] {
        &["thp"]
    }

    fn prepare(&self, _: &crate::bench::BenchOptions) -> Result<Setup, Unavailable> {
        prepare(self.0).map(Setup::holding)
    }
}

impl HoldsRun for Held {
    fn hold_round(&self, _: &crate::bench::BenchOptions) -> Result<Option<Box<dyn HoldsRound>>, RoundError> {
        let round = set(self).map_err(RoundError::new)?;
        Ok(Some(Box::new(round)))
    }
}

impl HoldsRound for Round {
    fn seen(&self) -> Result<Vec<String>, NotActed> {
        self.held().map(|seen| vec![seen]).map_err(NotActed::new)
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

/// The setting's current value: the bracketed word of `always [madvise] never`.
pub fn current() -> Option<String> {
    journal::read_setting(Path::new(SETTING)).ok()
}

/// Checks the setting exists and can be written.
pub fn check(_: Mode) -> Result<(), Unavailable> {
    if current().is_none() {
        return Err(Unavailable(format!("this kernel has no transparent huge pages ({SETTING})")));
    }
    if !oscost_platform::sys::is_root() {
        return Err(Unavailable(format!("changing {SETTING} needs root")));
    }
    journal::folder().map(drop).map_err(|e| Unavailable(e.to_string()))
}

/// The setting held by this run: the lock, and the record of the original value and
/// the mode written. Dropped after the run's last round: the record's undo puts the
/// original back if the setting still reads the mode, then the lock goes (in this
/// order, the fields' order).
pub struct Held {
    mode: Mode,
    original: String,
    _restore: Restore,
    _claim: std::sync::Arc<Claim>,
}

/// Takes the setting for the run (see the module's doc).
pub fn prepare(m: Mode) -> Result<Held, Unavailable> {
    check(m)?;
    let (claim, said) = journal::claim(Path::new(SETTING), WAIT).map_err(|e| Unavailable(e.to_string()))?;
    for line in said {
        eprintln!("{line}");
    }
    let original = current().ok_or_else(|| Unavailable(format!("reading {SETTING}")))?;
    let undo = Undo::Write { path: SETTING.into(), original: original.clone(), wrote: m.to_string() };
    let restore = journal::record(undo).map_err(|e| Unavailable(e.to_string()))?;
    Ok(Held { mode: m, original, _restore: restore, _claim: claim })
}

/// The setting did not hold through a round: its rows are not the condition's.
#[derive(Debug, thiserror::Error)]
#[error(
    "{SETTING} reads {now} at the end of the round, not the {mode} it was set to: its rows are not measured under thp:{mode}"
)]
pub struct NotHeld {
    now: String,
    mode: Mode,
}

/// Why the mode could not be set for a round.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    #[error("reading {SETTING}")]
    Unreadable,
    #[error(
        "{SETTING} reads {now}, not the {found} this run found: someone else changed it, so it is left as it is and the round is not measured under thp:{mode}"
    )]
    Changed { now: String, found: String, mode: Mode },
    #[error("writing {mode} to {SETTING}: {source}")]
    Write { mode: Mode, source: std::io::Error },
    #[error("{SETTING} does not read {mode} after it was written")]
    NotWritten { mode: Mode },
}

/// The mode set for one round: the original put back when dropped, if the setting
/// still reads the mode.
pub struct Round {
    mode: Mode,
    original: String,
}

/// Sets the mode for a round, if the setting reads the original the run found (else
/// someone else changed it, and it is theirs).
pub fn set(h: &Held) -> Result<Round, SetError> {
    let now = current().ok_or(SetError::Unreadable)?;
    if now != h.original {
        return Err(SetError::Changed { now, found: h.original.clone(), mode: h.mode });
    }
    let m = h.mode;
    journal::write_setting(Path::new(SETTING), &m.to_string()).map_err(|source| SetError::Write { mode: m, source })?;
    let round = Round { mode: m, original: h.original.clone() };
    if current().as_deref() != Some(&m.to_string()) {
        return Err(SetError::NotWritten { mode: m });
    }
    Ok(round)
}

impl Round {
    /// What the setting read at the end of the round: Ok with the evidence if the
    /// mode, else why the round's rows are not the condition's.
    pub fn held(&self) -> Result<String, NotHeld> {
        let now = current().unwrap_or_else(|| "nothing".into());
        if now == self.mode.to_string() {
            Ok(format!("{SETTING} reads {now} during the round"))
        } else {
            Err(NotHeld { now, mode: self.mode })
        }
    }
}

impl Drop for Round {
    fn drop(&mut self) {
        let now = current();
        if now.as_deref() == Some(&self.mode.to_string()) {
            if let Err(e) = journal::write_setting(Path::new(SETTING), &self.original) {
                eprintln!("warning: writing {} back to {SETTING}: {e}", self.original);
            }
        } else if now.as_deref() != Some(&self.original) {
            eprintln!(
                "note: {SETTING} reads {}, not the {} this run wrote: someone changed it, so it is left as it is",
                now.unwrap_or_else(|| "nothing".into()),
                self.mode
            );
        }
    }
}
