//! Views: layouts that name benchmarks and their parameters, so they sit above the
//! families (whose ids they name) and the report (whose renderers they use), and the
//! layers below them know no family. The founding texts' reprints (`suites`) live
//! here; a family's own chart (its `SweepSpec`) lives with the family.

pub mod suites;
