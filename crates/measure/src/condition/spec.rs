//! `spec:ssb`, `spec:ib`: speculative store bypass or indirect branch speculation
//! force-disabled for the worker (PR_SET_SPECULATION_CTRL), as a sandbox that asks for
//! it (seccomp's default on some kernels, browsers' renderers) runs.
//!
//! The kernel honours the request only where its mitigation mode for the feature is
//! per process (`prctl` or `seccomp` in /sys/devices/system/cpu/vulnerabilities); where
//! the CPU is not affected, or the mitigation is always on or off, the condition is
//! unavailable and says which.

use serde::{Deserialize, Serialize};

use super::{Act, Condition, EnterError, Entered, Kind, Malformed, Setup, Unavailable, state_of};
use oscost_platform::sys::{SpeculationFeature, SpeculationFeatureState};

pub const KIND: Kind = Kind { name: "spec", parse, forms: "spec:ssb, spec:ib" };

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    Ssb,
    Ib,
}

/// The condition: the feature force-disabled in the worker.
struct Spec(Feature);

fn parse(rest: &str) -> Result<Condition, Malformed> {
    match rest {
        "ssb" => Ok(Condition::new(Spec(Feature::Ssb))),
        "ib" => Ok(Condition::new(Spec(Feature::Ib))),
        _ => Err(Malformed::NotOneOf { given: rest.into(), expected: "ssb or ib" }),
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "spec:{}", self.0)
    }
}

impl Act for Spec {
    fn prepare(&self, _: &crate::bench::BenchOptions) -> Result<Setup, Unavailable> {
        Setup::in_worker(&check(self.0)?)
    }

    fn enter(&self, state: &serde_json::Value) -> Result<Entered, EnterError> {
        enter(state_of(state)?)
    }
}

impl std::fmt::Display for Feature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Feature::Ssb => "ssb",
            Feature::Ib => "ib",
        })
    }
}

impl Feature {
    fn raw(self) -> SpeculationFeature {
        match self {
            Feature::Ssb => SpeculationFeature::SpeculativeStoreBypass,
            Feature::Ib => SpeculationFeature::IndirectBranchSpeculation,
        }
    }

    fn vulnerability(self) -> &'static str {
        match self {
            Feature::Ssb => "/sys/devices/system/cpu/vulnerabilities/spec_store_bypass",
            Feature::Ib => "/sys/devices/system/cpu/vulnerabilities/spectre_v2",
        }
    }
}

/// Checks the kernel lets a process control the feature.
fn check(f: Feature) -> Result<Feature, Unavailable> {
    let state = oscost_platform::sys::speculation_state(f.raw());
    let mode = std::fs::read_to_string(f.vulnerability()).map(|s| s.trim().to_string()).unwrap_or_default();
    match state {
        Ok(Some(s)) if s.contains(SpeculationFeatureState::PRCTL) => Ok(f),
        Ok(_) => Err(Unavailable(format!(
            "this kernel does not let a process control it (PR_GET_SPECULATION_CTRL has no PRCTL bit; {}: {mode:?})",
            f.vulnerability()
        ))),
        Err(e) => Err(Unavailable(format!("PR_GET_SPECULATION_CTRL: {e} ({}: {mode:?})", f.vulnerability()))),
    }
}

/// Force-disables the feature in the worker and reads back that it is.
fn enter(f: Feature) -> Result<Entered, EnterError> {
    oscost_platform::sys::force_disable_speculation(f.raw()).map_err(EnterError::call("PR_SET_SPECULATION_CTRL"))?;
    let state =
        oscost_platform::sys::speculation_state(f.raw()).map_err(EnterError::call("PR_GET_SPECULATION_CTRL"))?;
    match state {
        Some(s) if s.contains(SpeculationFeatureState::FORCE_DISABLE) => Ok(Entered::Here {
            evidence: vec![format!("{f} force-disabled (PR_GET_SPECULATION_CTRL = {:#x})", s.bits())],
        }),
        other => {
            Err(EnterError::NotInEffect(format!("PR_GET_SPECULATION_CTRL reads {other:?} after force-disabling {f}")))
        }
    }
}
