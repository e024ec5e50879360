//! What `run` (and `noise`) will measure, checked before anything is: the suite or
//! benchmarks named, resolved in the registry; the options the user gave, with a
//! suite's presets over them, accepted by every selected benchmark; the no-op helper,
//! opened and verified only when a selected benchmark runs it; and room enough in the
//! address space to measure without aborting.

use std::path::Path;

use crate::bench::{self, BenchDef, BenchOptions, Scope};
use crate::catalogue::select::{self, UnknownBenchmark};
use crate::views::suites::{self, Suite};

/// What the user named: a suite, else benchmarks (the default suite when none), and
/// the no-op helper to run instead of the embedded one.
pub struct Choice<'a> {
    pub suite: Option<&'a str>,
    pub benchmarks: &'a [String],
    pub noop: Option<&'a Path>,
}

/// What a run will do: the benchmarks, the suite (if any) and the options, checked.
pub struct Plan {
    pub selected: Vec<(&'static BenchDef, Scope)>,
    pub suite: Option<&'static Suite>,
    pub options: BenchOptions,
}

/// Why a run cannot begin. All are bad usage but [`PlanError::NothingSelected`].
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("unknown suite {name:?}{}", .closest.as_ref().map(|c| format!("; did you mean {c:?}?")).unwrap_or_default())]
    UnknownSuite { name: String, closest: Option<String> },
    #[error(transparent)]
    UnknownBenchmark(#[from] UnknownBenchmark),
    #[error("no benchmark selected")]
    NothingSelected,
    #[error(
        "the address-space limit (ulimit -v) is {} MiB; oscost needs {} MiB to measure without aborting on a failed allocation (which would lose the rounds not yet stored): raise it",
        .limit >> 20,
        ADDRESS_SPACE_FLOOR >> 20
    )]
    AddressSpace { limit: u64 },
    #[error("--noop: {0}")]
    Noop(crate::helper::HelperError),
    /// A selected benchmark refuses an option.
    #[error("{0}")]
    Options(crate::bench::OptionsRefused),
}

/// The address space (`ulimit -v`) below which the coordinator itself may fail an
/// allocation, which aborts it and loses every round not yet stored: 40 MiB ran the
/// quick suite here and 30 MiB did not; the floor keeps a margin.
pub const ADDRESS_SPACE_FLOOR: u64 = 64 << 20;

/// A suite by name, or an error naming the closest.
pub fn find_suite(name: &str) -> Result<&'static Suite, PlanError> {
    suites::find(name).ok_or_else(|| PlanError::UnknownSuite {
        name: name.to_string(),
        closest: select::closest(name, suites::SUITES.iter().map(|s| s.name)),
    })
}

/// The run `choice` asks for with `options` (their `noop` is set here), checked. Raises
/// the open-file limit the benchmarks' peers need.
pub fn plan(choice: &Choice<'_>, mut options: BenchOptions) -> Result<Plan, PlanError> {
    let registry = bench::registry();
    let suite = choice.suite.map(find_suite).transpose()?;
    let selectors: Vec<String> = match suite {
        Some(s) => s.selectors.iter().map(|x| x.to_string()).collect(),
        None => choice.benchmarks.to_vec(),
    };
    let selected = select::select(&registry, &selectors)?;
    if selected.is_empty() {
        return Err(PlanError::NothingSelected);
    }
    check_address_space_floor()?;
    // The helper is opened only when a selected benchmark runs it; one the user named
    // and oscost refuses stops the run here, before anything is measured.
    let runs_helper = crate::session::runs_noop_helper(&selected);
    options.noop = match (choice.noop, runs_helper) {
        (_, false) => Err(crate::helper::NoNoop("no selected benchmark runs the no-op helper".to_string())),
        (Some(p), true) => Ok(crate::helper::Executable::open_verified(p).map_err(PlanError::Noop)?),
        (None, true) => crate::helper::Executable::embedded().map_err(crate::helper::NoNoop::from),
    }
    .map(std::sync::Arc::new);
    if let Some(s) = suite {
        if let Some(tasks) = s.presets.tasks {
            options.tasks = tasks.to_vec();
        }
        if let Some(rooms) = s.presets.rooms {
            options.rooms = rooms;
        }
        if let Some(storm) = s.presets.storm_tasks {
            options.storm_tasks = storm.to_vec();
        }
    }
    crate::sys::raise_nofile_limit();
    bench::check_options(&selected, &options).map_err(PlanError::Options)?;
    Ok(Plan { selected, suite, options })
}

fn check_address_space_floor() -> Result<(), PlanError> {
    match crate::sys::address_space_limit() {
        Some(limit) if limit < ADDRESS_SPACE_FLOOR => Err(PlanError::AddressSpace { limit }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_suite_names_the_closest() {
        let err = find_suite("lmbenc").err().unwrap();
        assert_eq!(err.to_string(), "unknown suite \"lmbenc\"; did you mean \"lmbench\"?");
        assert!(find_suite("lmbench").is_ok());
    }
}
