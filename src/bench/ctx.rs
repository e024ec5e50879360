//! The context-switch family (filled in below).
use super::BenchDef;
pub static BENCHES: [BenchDef; 0] = [];
