//! A sweep's chart as its family declares it: which rows a chart draws and where.
//!
//! Why here, below both: a family knows its parameters' names and types and the
//! report knows how to draw, and neither should import the other. The family hands
//! the report this declaration; the report draws what it is given.

use crate::model::ResultRow;

/// A sweep's chart as its family declares it: which rows it draws, the x each row
/// stands at and the series it belongs to (read from the row's parameters by the
/// family, which knows their names and types). The report knows no family: it draws
/// what it is given.
pub struct SweepSpec {
    pub benchmark: crate::key::BenchId,
    pub title: &'static str,
    pub x_title: &'static str,
    pub x_axis: XAxis,
    pub unit: crate::unit::Unit,
    /// The row's series name and x, or None for a row not on the chart.
    pub place: fn(&ResultRow) -> Option<(String, f64)>,
}

/// What the x values of a line chart are, for its ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum XAxis {
    /// Counts on a log-2 axis (tasks, CPUs).
    Log2Count,
    /// Bytes on a log-2 axis.
    Log2Bytes,
    /// Plain numbers on a linear axis.
    Linear,
}
