//! Where a simulation's cost profile comes from when it is not fitted to the founding
//! texts: `live` takes this machine's switch costs from a stored run (or has them
//! measured), `live@RUN` repeats the profile a stored simulation ran under. The
//! simulator does not open a database or measure anything itself: whoever runs it
//! passes in a [`ProfileSource`] that does (a database, and the command line's
//! permission to measure), so a test can pass one that holds fixed figures.

use super::cost::{self, CostProfile, MachineProbes, StoredSwitch};

/// A source's own failure (a database that cannot be read, a measurement that
/// failed), kept whole so its causes are printed.
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// What a profile can be taken from.
pub trait ProfileSource {
    /// This machine's switch costs from the newest stored run that has them.
    fn stored_switch(&self) -> Result<StoredSwitch, SourceError>;
    /// This machine's switch costs, measured now (when no stored run has them).
    fn measure_switch(&self) -> Result<StoredSwitch, SourceError>;
    /// The profile stored run `run` was simulated under; `None` when it is not a
    /// simulation.
    fn profile_of_run(&self, run: i64) -> Result<Option<CostProfile>, SourceError>;
    /// What a `live` profile measures on the machine itself (the bare system call, the
    /// cold scans, the line transfer, the kernel's hrtick setting).
    fn machine_probes(&self) -> MachineProbes;
    /// What identifies this build of oscost (None: no fit is reused). A profile fitted
    /// by simulating carries it, since the same fit by another build of the simulator
    /// may give another value.
    fn build(&self) -> Option<String>;
    /// The newest stored profile named `name` fitted by `build`, when one is kept.
    fn stored_fit(&self, name: &str, build: &str) -> Option<CostProfile>;
}

/// A profile fitted by simulating (seconds of CPU): the fit this build stored before,
/// else fitted now and stamped with the build, so that the next command reuses it.
fn fitted_once(
    name: &str,
    fit: fn() -> Result<CostProfile, cost::ProfileError>,
    source: &dyn ProfileSource,
) -> Result<CostProfile, cost::ProfileError> {
    let build = source.build();
    let ours = |p: &CostProfile| p.name == name && p.fitted_by == build;
    if let Some(kept) = build.as_deref().and_then(|b| source.stored_fit(name, b)).filter(ours) {
        return Ok(kept);
    }
    Ok(CostProfile { fitted_by: build, ..fit()? })
}

/// The period profile of a reprint's texts, a fit by simulating made once a build.
pub fn period_profile(suite: &str, source: &dyn ProfileSource) -> Option<Result<CostProfile, cost::ProfileError>> {
    match suite {
        "travis98" => Some(cost::pentium200()),
        "molnar02" | "lmbench" => Some(fitted_once("smp2002", super::fit::smp2002, source)),
        _ => None,
    }
}

/// Why `--profile` names no profile that can be had.
#[derive(Debug, thiserror::Error)]
pub enum ChoiceError {
    #[error("--profile live@RUN takes a run id, not {0:?}")]
    NotARunId(String),
    #[error("run #{0} is not a simulation: it carries no cost profile")]
    NotASimulation(i64),
    #[error(transparent)]
    Profile(#[from] cost::ProfileError),
    #[error(transparent)]
    Source(SourceError),
}

impl ChoiceError {
    /// Whether the name given is at fault (bad usage), rather than the source or the
    /// fitted figures.
    pub fn is_usage(&self) -> bool {
        match self {
            ChoiceError::NotARunId(_) | ChoiceError::NotASimulation(_) => true,
            ChoiceError::Profile(e) => matches!(e, cost::ProfileError::Unknown(_)),
            ChoiceError::Source(_) => false,
        }
    }
}

/// The profile `name` names: `live` (this machine: stored switch costs, else measured
/// now), `live@RUN` (the profile a stored simulation carries), `pentium200` or
/// `smp2002` (fitted to the texts).
pub fn choose(name: &str, source: &dyn ProfileSource) -> Result<CostProfile, ChoiceError> {
    if let Some(run) = name.strip_prefix("live@") {
        let id: i64 = run.parse().map_err(|_| ChoiceError::NotARunId(run.into()))?;
        return source.profile_of_run(id).map_err(ChoiceError::Source)?.ok_or(ChoiceError::NotASimulation(id));
    }
    Ok(match name {
        "live" => {
            let switch = source.stored_switch().or_else(|_| source.measure_switch()).map_err(ChoiceError::Source)?;
            cost::live(switch, &source.machine_probes())
        }
        "pentium200" => cost::pentium200()?,
        "smp2002" => fitted_once("smp2002", super::fit::smp2002, source)?,
        other => return Err(cost::ProfileError::Unknown(other.into()).into()),
    })
}

/// The profiles a suite's simulations run under, and what could not be had (one note a
/// line, for the user).
#[derive(Debug)]
pub struct SuiteProfiles {
    pub profiles: Vec<CostProfile>,
    pub notes: Vec<String>,
}

/// The profiles of `suite`'s simulations, or `None` for a suite with nothing to
/// simulate: the period profile of its texts, and `live` with the switch costs of the
/// suite's own run (`own`: its costs, or the rows of it a live profile refused), else
/// of the newest stored run that has them (never measured: the run just measured is
/// what a suite offers).
pub fn suite_profiles(
    suite: &str,
    own: Result<StoredSwitch, Vec<String>>,
    source: &dyn ProfileSource,
) -> Option<SuiteProfiles> {
    let mut profiles = Vec::new();
    let mut notes = Vec::new();
    match period_profile(suite, source)? {
        Ok(p) => profiles.push(p),
        Err(e) => notes.push(format!("no period simulation: {e}")),
    }
    let own = own.map_err(|refused| {
        notes.extend(refused.into_iter().map(|why| format!("the live profile refuses {why}")));
    });
    match own.ok().or_else(|| source.stored_switch().ok()) {
        Some(s) => profiles.push(cost::live(s, &source.machine_probes())),
        None => notes.push(
            "no live simulation: no run has load.runqueue yield rows at 2 tasks free of intruded, bimodal or modes flags"
                .into(),
        ),
    }
    Some(SuiteProfiles { profiles, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source holding fixed figures, counting what it was asked.
    struct Fixed {
        stored: Option<StoredSwitch>,
        measured: Option<StoredSwitch>,
        simulation: Option<CostProfile>,
        measurements: std::cell::Cell<usize>,
        build: Option<String>,
        kept: Option<CostProfile>,
        /// Whether its system-call probe never ran alone.
        crowded: bool,
    }

    impl ProfileSource for Fixed {
        fn stored_switch(&self) -> Result<StoredSwitch, SourceError> {
            self.stored.ok_or_else(|| "no run has them".into())
        }
        fn measure_switch(&self) -> Result<StoredSwitch, SourceError> {
            self.measurements.set(self.measurements.get() + 1);
            self.measured.ok_or_else(|| "measuring failed".into())
        }
        fn profile_of_run(&self, _: i64) -> Result<Option<CostProfile>, SourceError> {
            Ok(self.simulation.clone())
        }
        fn machine_probes(&self) -> MachineProbes {
            MachineProbes {
                syscall: 100.0,
                scan: 60.0,
                recalc: 60.0,
                pick: 5.0,
                tree: 20.0,
                line: Some(80.0),
                idle_wake: Some(9_000.0),
                hrtick: Some(true),
                cpus: 2,
                crowded: cost::Crowded { syscall: self.crowded, ..Default::default() },
            }
        }
        fn build(&self) -> Option<String> {
            self.build.clone()
        }
        fn stored_fit(&self, _: &str, _: &str) -> Option<CostProfile> {
            // Whatever is kept, asked or not: the caller checks name and build itself.
            self.kept.clone()
        }
    }

    fn switch(run: i64) -> StoredSwitch {
        StoredSwitch { run, thread_ns: 900.0, process_ns: 1_400.0, fork_exit_ns: None, inconsistent: false }
    }

    fn fixed(stored: Option<StoredSwitch>, measured: Option<StoredSwitch>) -> Fixed {
        Fixed {
            stored,
            measured,
            simulation: None,
            measurements: std::cell::Cell::new(0),
            build: None,
            kept: None,
            crowded: false,
        }
    }

    #[test]
    fn a_fit_by_simulating_is_reused_by_the_same_build_and_stamped_when_made() {
        let fresh = || Ok(CostProfile { machine: "fitted now".into(), ..cost::smp2002_assumed() });
        let stamped = |build: &str| CostProfile {
            machine: "kept".into(),
            fitted_by: Some(build.into()),
            ..cost::smp2002_assumed()
        };
        let with = |build: Option<&str>, kept: Option<CostProfile>| Fixed {
            build: build.map(Into::into),
            kept,
            ..fixed(None, None)
        };
        let source = with(Some("build A"), Some(stamped("build A")));
        assert_eq!(fitted_once("smp2002", fresh, &source).unwrap().machine, "kept");
        // Another build's fit is not this build's: fitted again, and stamped.
        let p = fitted_once("smp2002", fresh, &with(Some("build B"), Some(stamped("build A")))).unwrap();
        assert_eq!((p.machine.as_str(), p.fitted_by.as_deref()), ("fitted now", Some("build B")));
        // A source that hands back another profile's fit is not believed.
        let other = CostProfile { name: "pentium200".into(), ..stamped("build A") };
        let p = fitted_once("smp2002", fresh, &with(Some("build A"), Some(other))).unwrap();
        assert_eq!(p.machine, "fitted now");
        // A build that cannot name itself reuses nothing and stamps nothing.
        let p = fitted_once("smp2002", fresh, &with(None, Some(stamped("build A")))).unwrap();
        assert_eq!((p.machine.as_str(), p.fitted_by), ("fitted now", None));
    }

    #[test]
    fn live_takes_stored_costs_before_measuring() {
        let source = fixed(Some(switch(3)), Some(switch(4)));
        assert!(choose("live", &source).is_ok());
        assert_eq!(source.measurements.get(), 0, "stored costs were there: nothing measured");
        let source = fixed(None, Some(switch(4)));
        assert!(choose("live", &source).is_ok());
        assert_eq!(source.measurements.get(), 1);
        let err = choose("live", &fixed(None, None)).unwrap_err();
        assert!(!err.is_usage() && err.to_string().contains("measuring failed"), "{err}");
    }

    #[test]
    fn an_inconsistent_switch_pair_prices_the_address_space_change_as_assumed_and_says_why() {
        let source = fixed(None, None);
        let sound = cost::live(switch(3), &source.machine_probes());
        assert!(matches!(sound.address_space.basis, cost::Basis::Measured(_)));
        let odd = StoredSwitch { thread_ns: 2_700.0, inconsistent: true, ..switch(3) };
        let p = cost::live(odd, &source.machine_probes());
        assert_eq!(p.address_space.ns, 0.0);
        match &p.address_space.basis {
            cost::Basis::Assumed(why) => assert!(why.contains("stands above its process switch"), "{why}"),
            other => panic!("not assumed: {other:?}"),
        }
    }

    #[test]
    fn an_idle_cpus_wake_up_is_priced_from_its_probe_less_what_the_engine_charges_apart() {
        // 9 µs wake-to-run, less the bare call (100 ns) and the switch (a 900 ns
        // hand-off less the call and a 5 ns pick: 795 ns).
        let probes = fixed(None, None).machine_probes();
        let p = cost::live(switch(3), &probes);
        assert_eq!(p.ipi.ns, 9_000.0 - 100.0 - 795.0);
        assert!(matches!(p.ipi.basis, cost::Basis::Measured(_)), "{:?}", p.ipi);
        // One CPU allowed: no probe, the assumption as before.
        let one = cost::live(switch(3), &MachineProbes { idle_wake: None, ..probes });
        assert_eq!(one.ipi.ns, 2.0 * 795.0);
        assert!(matches!(one.ipi.basis, cost::Basis::Assumed(_)), "{:?}", one.ipi);
    }

    #[test]
    fn a_probe_that_never_ran_alone_is_doubted_beside_its_term_and_listed() {
        let quiet = cost::live(switch(3), &fixed(None, None).machine_probes());
        assert!(quiet.crowded.is_empty());
        assert!(!quiet.syscall.basis.why().contains("doubted"), "{:?}", quiet.syscall);
        let crowded = cost::live(switch(3), &Fixed { crowded: true, ..fixed(None, None) }.machine_probes());
        assert_eq!(crowded.crowded, ["syscall", "switch"], "the switch is a hand-off less the system call");
        assert!(crowded.syscall.basis.why().contains("other work shared it): doubted"), "{:?}", crowded.syscall);
        assert!(crowded.switch.basis.why().contains("doubted"), "{:?}", crowded.switch);
        assert!(!crowded.remote_line.basis.why().contains("doubted"), "only the crowded probe's terms");
        let all = cost::Crowded { syscall: true, walks: true, pick: true, line: true, idle_wake: true };
        assert_eq!(
            all.terms(),
            ["syscall", "switch", "scan_per_task", "recalc_per_task", "pick_o1", "tree_step", "remote_line", "ipi"],
            "every probed term, by its profile name"
        );
    }

    #[test]
    fn names_that_are_wrong_are_bad_usage() {
        let source = fixed(None, None);
        for (name, says) in
            [("live@x", "takes a run id"), ("live@5", "run #5 is not a simulation"), ("nonesuch", "unknown profile")]
        {
            let err = choose(name, &source).unwrap_err();
            assert!(err.is_usage(), "{name}: {err}");
            assert!(err.to_string().contains(says), "{name}: {err}");
        }
        assert_eq!(choose("pentium200", &source).unwrap().name, cost::pentium200().unwrap().name);
    }

    #[test]
    fn a_stored_simulation_repeats_its_profile() {
        let profile = cost::pentium200().unwrap();
        let source = Fixed { simulation: Some(profile.clone()), ..fixed(None, None) };
        assert_eq!(choose("live@12", &source).unwrap().name, profile.name);
    }

    #[test]
    fn a_suite_without_live_costs_says_so_and_keeps_its_period_profile() {
        // A run with no switch rows: nothing refused, nothing usable.
        let run = || Err(Vec::new());
        assert!(suite_profiles("default", run(), &fixed(None, None)).is_none(), "nothing to simulate");
        let got = suite_profiles("travis98", run(), &fixed(None, None)).unwrap();
        assert_eq!(got.profiles.len(), 1);
        assert!(got.notes.iter().any(|n| n.starts_with("no live simulation")), "{:?}", got.notes);
        let got = suite_profiles("travis98", run(), &fixed(Some(switch(2)), None)).unwrap();
        assert_eq!(got.profiles.len(), 2);
        assert!(got.notes.is_empty());
    }
}
