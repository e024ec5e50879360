//! Every benchmark id oscost can store, whoever produced it: the measuring families
//! (the bench registry), `observe`, `trace` and the simulator.
//!
//! Why one list: `import` accepts only rows of benchmarks this oscost knows, so a
//! producer missing from it would make a run that oscost itself exported (a trace or a
//! sim run) impossible to import back. Each producer owns its ids; this module only
//! gathers them.

use clap::ValueEnum;

/// Every id, producer by producer.
pub fn ids() -> Vec<String> {
    let mut all: Vec<String> = crate::bench::registry().iter().map(|b| b.id.to_string()).collect();
    all.extend(crate::observe::IDS.iter().map(|id| id.to_string()));
    all.extend(crate::trace::system::IDS.iter().map(|id| id.to_string()));
    all.extend(crate::sim::WorkloadKind::value_variants().iter().map(|w| w.id().to_string()));
    // A suite's judged conclusions, stored beside its simulated figures.
    all.push(crate::sim::suites::CONCLUSION_BENCHMARK.to_string());
    all
}

/// Whether some producer of this oscost stores rows under `id`.
pub fn is_known(id: &str) -> bool {
    ids().iter().any(|known| known == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_producer_is_gathered_once() {
        let all = ids();
        for id in
            ["syscall.getppid", "observe.switches", "trace.runqueue", "sim.travis", "sim.loop_yield", "sim.conclusion"]
        {
            assert!(is_known(id), "{id}");
        }
        assert!(!is_known("sim.nope") && !is_known("trace"));
        let unique: std::collections::BTreeSet<_> = all.iter().collect();
        assert_eq!(unique.len(), all.len(), "an id claimed twice");
    }
}
