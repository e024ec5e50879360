//! The figures the founding texts publish (`data/published.csv`, embedded): what the
//! reprints print beside this machine's and the simulator's figures, and what the
//! period cost profiles are fitted to. Every figure keeps its source, machine and the
//! text's own caveats.

use std::sync::OnceLock;

/// One published figure.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Figure {
    /// The founding text's file name.
    pub source: String,
    /// Which table or passage (`travis98 table 2`, `molnar02 loop_yield`, …).
    pub table: String,
    /// The machine as the text describes it.
    pub system: String,
    pub row: String,
    pub column: String,
    /// None where the text prints N/A.
    pub value: Option<f64>,
    pub unit: String,
    pub note: String,
}

const CSV: &str = include_str!("../data/published.csv");

/// Every published figure, in the file's order.
pub fn all() -> &'static [Figure] {
    static ALL: OnceLock<Vec<Figure>> = OnceLock::new();
    ALL.get_or_init(|| parse(CSV).expect("data/published.csv is checked by the tests"))
}

/// Parses the CSV (a header line, then one figure a line).
pub fn parse(text: &str) -> Result<Vec<Figure>, csv::Error> {
    csv::Reader::from_reader(text.as_bytes()).deserialize().collect()
}

/// The figures of one table, in the file's order.
pub fn table(name: &str) -> impl Iterator<Item = &'static Figure> + '_ {
    all().iter().filter(move |f| f.table == name)
}

/// The value of one cell (None when absent or N/A).
pub fn value(table: &str, row: &str, column: &str) -> Option<f64> {
    all().iter().find(|f| f.table == table && f.row == row && f.column == column).and_then(|f| f.value)
}

/// Travis's Table 2 row (e.g. "Linux before change process switch") as (contexts, µs).
pub fn table2_row(row: &str) -> Vec<(f64, f64)> {
    table("travis98 table 2")
        .filter(|f| f.row == row)
        .filter_map(|f| Some((f.column.parse().ok()?, f.value?)))
        .collect()
}

/// The mean of the figures of `table` on the system starting `system`, whose row is
/// `row` and whose column starts with `column_prefix` (the texts' repeated runs: "old
/// scheduler run 1", "… run 2", …).
pub fn mean_of_runs(table: &str, system: &str, row: &str, column_prefix: &str) -> Option<f64> {
    let v: Vec<f64> = self::table(table)
        .filter(|f| f.system.starts_with(system) && f.row == row && f.column.starts_with(column_prefix))
        .filter_map(|f| f.value)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_file_parses_whole() {
        let all = all();
        assert_eq!(all.len(), CSV.lines().count() - 1, "one figure a line");
        assert!(all.iter().all(|f| !f.source.is_empty() && !f.table.is_empty() && !f.unit.is_empty()));
        // N/A cells are kept, with no value.
        assert!(all.iter().any(|f| f.value.is_none() && f.note.contains("N/A")));
    }

    #[test]
    fn cells_are_found_by_their_labels() {
        assert_eq!(table2_row("Linux before change process switch").len(), 6);
        assert_eq!(value("travis98 table 2", "Linux after change thread switch", "40"), Some(22.0));
        let old2 =
            mean_of_runs("molnar02 loop_yield", "2-CPU", "4 instances of ./loop_yield", "old scheduler").unwrap();
        assert!((old2 - 241_112.75).abs() < 0.01, "{old2}");
    }
}
