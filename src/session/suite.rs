//! A suite's run: the benchmarks measured as any run's, then the suite's simulations
//! added before the run is marked finished, so that they share its lifecycle (and its
//! status) instead of being written into a run already closed.

use anyhow::Result;

use super::store::OpenRun;
use super::{RunOutcome, RunRequest, execute_then};
use crate::sys;

/// [`execute`](super::execute) for a suite: its simulations (the texts' experiments
/// under the period and `live` profiles) are added to the run once the benchmarks are
/// done, before the run is marked finished.
pub fn execute_suite(req: RunRequest, suite: &str) -> Result<RunOutcome> {
    execute_then(req, Some(suite))
}

/// A suite's simulations, added to its run: the texts' experiments under the period
/// profile and under `live` (its switch costs from this very run, else from the newest
/// run in the run's own store that has them). Said on standard error, as the run's
/// notes are.
pub(super) fn add_suite_simulations(suite: &str, scale: crate::sim::suites::Scale, run: &mut OpenRun) -> Result<()> {
    let id = run.id;
    let (doc, _) = run.store().load_run(id)?;
    let own = crate::profiles::switch::usable_switch(&doc);
    let source = crate::profiles::StoredProfiles::Open(run.store());
    let Some(chosen) = crate::sim::profile_source::suite_profiles(suite, own, &source) else { return Ok(()) };
    for note in &chosen.notes {
        eprintln!("note: {note}");
    }
    let names: Vec<&str> = chosen.profiles.iter().map(|p| p.name.as_str()).collect();
    let scale_note = match scale {
        crate::sim::suites::Scale::Full => String::new(),
        crate::sim::suites::Scale::Quick => format!(
            ", --quick: chat at {} messages a user, no term swept ±50%",
            crate::sim::suites::QUICK_CHAT_MESSAGES
        ),
    };
    eprintln!("simulating the suite's experiments ({}{scale_note}) …", names.join(", "));
    let rows = crate::sim::suites::rows(suite, &chosen.profiles, scale, sys::interrupted);
    run.store().add_benchmark(id, &rows, &[])?;
    Ok(())
}
