//! Judging stored rows beyond one row's own interval: a condition against its
//! baseline (`paired`), a machine's spread between runs from its A/A runs (`noise`),
//! what precision a row of `run --precision` has reached (`precision`), and each
//! figure's run medians over stored runs split at its change points (`history`).
//! Pure functions of stored runs: `run`, `show`, `compare` and the report judge alike.

pub mod history;
pub mod noise;
pub mod paired;
pub mod precision;
