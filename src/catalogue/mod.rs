//! What a command can name and a run can store: selection patterns over the
//! families' registry (`select`), and every benchmark id any producer stores
//! (`producers`).

pub mod producers;
pub mod select;
