//! Views: layouts that name benchmarks and their parameters, so they sit above the
//! families (whose ids they name) and the report (whose renderers they use), and the
//! layers below them know no family. The founding texts' reprints (`suites`) live
//! here, and the laboratory's charts; a family's own chart (its `SweepSpec`) lives
//! with the family.

pub mod grounding;
pub mod laboratory;
pub mod suites;

/// Everything a report draws beyond each run's own charts: the families' sweeps
/// (`bench::sweeps`) and the laboratory.
pub fn report_views() -> crate::report::html::Views {
    crate::report::html::Views {
        sweeps: crate::bench::sweeps(),
        chapters: vec![laboratory::charts],
        paired: Some(crate::condition::params_changed_by),
    }
}
