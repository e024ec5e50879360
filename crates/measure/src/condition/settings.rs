//! The system settings outside a cgroup that a condition may change, by path, with
//! the values each may hold.
//!
//! Why a table of its own: the journal reads records as untrusted and restores only a
//! path and value named here, and the condition that changes a setting takes its path
//! from here too, so neither imports the other.

/// Transparent huge pages, changed by `thp:always` and `thp:never`.
pub const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// The values [`THP`] takes.
pub const THP_VALUES: &[&str] = &["always", "madvise", "never"];

/// Every setting a record may name, with its values.
pub const KNOWN: [(&str, &[&str]); 1] = [(THP, THP_VALUES)];
