//! The creation family (filled in below).
use super::BenchDef;
pub static BENCHES: [BenchDef; 0] = [];
