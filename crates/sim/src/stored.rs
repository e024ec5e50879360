//! The profile a stored simulation ran under, read from the run's document alone (the
//! database is the caller's: see the profile source): a suite's run carries two, and
//! `live@RUN` replays its live one.

use super::CostProfile;
use oscost_figure::model::RunDocument;

/// The profile a stored simulation ran under: its live one when it has one (a suite's
/// run simulates under its period profile and live), else its first.
pub fn profile_in(doc: &RunDocument) -> Option<CostProfile> {
    let live = "profile live";
    doc.results
        .iter()
        .filter(|r| r.params.get(super::run::SIMULATED) == Some(live))
        .find_map(super::run::profile_of)
        .or_else(|| doc.results.iter().find_map(super::run::profile_of))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oscost_figure::model::ResultRow;

    fn doc(results: Vec<ResultRow>) -> RunDocument {
        RunDocument::for_tests(7, oscost_platform::machine::Machine::example(), results)
    }

    #[test]
    fn a_suite_run_replays_its_live_profile() {
        let p = crate::workload::Params::new(crate::PolicyKind::Linux20, crate::WorkloadKind::Travis, 1, 2);
        let period = crate::cost::pentium200().unwrap();
        let mut live = crate::cost::unit_profile();
        live.name = "live".into();
        let mut rows = crate::run::simulate_rows(&p, &period);
        rows.extend(crate::run::simulate_rows(&p, &live));
        assert_eq!(profile_in(&doc(rows)), Some(live));
        // A run of one profile replays that one.
        let only = doc(crate::run::simulate_rows(&p, &period));
        assert_eq!(profile_in(&only), Some(period));
        assert_eq!(profile_in(&doc(Vec::new())), None);
    }
}
