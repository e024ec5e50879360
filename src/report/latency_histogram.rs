//! Wake-up latencies in cyclictest's `-h` layout: one line a microsecond from 0 to the
//! bound, one column a row (each of `load.wakeup`'s hog variants), then the totals,
//! the extremes and the wakes past the bound. A user who runs `cyclictest -h` beside
//! oscost reads the two the same way, and a script that plots one plots the other.

use std::fmt::Write;

use crate::model::ResultRow;

/// A row's latencies counted in 1 µs buckets up to a bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    /// Wakes per µs of lateness, 0 to the bound − 1.
    pub counts: Vec<u64>,
    /// Wakes at or past the bound.
    pub overflows: u64,
}

/// Counts `samples` (ns) into `bound_us` buckets of 1 µs.
pub fn buckets(samples: &[f64], bound_us: u32) -> Buckets {
    let mut counts = vec![0u64; bound_us as usize];
    let mut overflows = 0;
    for &ns in samples {
        let us = (ns.max(0.0) / 1000.0).floor();
        match counts.get_mut(us as usize) {
            Some(c) if us < f64::from(bound_us) => *c += 1,
            _ => overflows += 1,
        }
    }
    Buckets { counts, overflows }
}

/// The histogram of `rows` (their stored samples) with a bound of `bound_us` µs.
pub fn render(rows: &[&ResultRow], bound_us: u32) -> String {
    let columns: Vec<String> = rows.iter().map(|r| column(r)).collect();
    let mut o = format!("# Histogram (1 µs buckets; columns: {})\n", columns.join(", "));
    let all: Vec<Buckets> = rows.iter().map(|r| buckets(&r.samples, bound_us)).collect();
    for us in 0..bound_us as usize {
        let cells: Vec<String> = all.iter().map(|b| format!("{:06}", b.counts[us])).collect();
        let _ = writeln!(o, "{us:06} {}", cells.join("\t"));
    }
    let line = |name: &str, f: &dyn Fn(&ResultRow, &Buckets) -> String| {
        let cells: Vec<String> = rows.iter().zip(&all).map(|(r, b)| f(r, b)).collect();
        format!("# {name}: {}\n", cells.join(" "))
    };
    let us = |ns: f64| (ns / 1000.0).round().max(0.0) as u64;
    o += &line("Total", &|r, _| format!("{:09}", r.samples.len()));
    o += &line("Min Latencies", &|r, _| format!("{:05}", us(extreme(&r.samples, f64::min))));
    o += &line("Avg Latencies", &|r, _| {
        format!("{:05}", us(r.samples.iter().sum::<f64>() / r.samples.len().max(1) as f64))
    });
    o += &line("Max Latencies", &|r, _| format!("{:05}", us(extreme(&r.samples, f64::max))));
    o += &line("Histogram Overflows", &|_, b| format!("{:05}", b.overflows));
    o
}

/// A row's column name: its hogs and their nice level, the parameters that tell
/// `load.wakeup`'s rows of one run apart (the sleepers' settings are the run's).
fn column(r: &ResultRow) -> String {
    use crate::bench::load::wakeup::{HOG_NICE, HOGS};
    let hogs = r.params.get(HOGS).map_or("?".into(), |v| v.to_string());
    let nice = r.params.get(HOG_NICE).map_or("?".into(), |v| v.to_string());
    format!("hogs={hogs} nice={nice}")
}

fn extreme(samples: &[f64], pick: fn(f64, f64) -> f64) -> f64 {
    samples.iter().copied().reduce(pick).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_fall_in_their_microsecond_and_past_the_bound_overflow() {
        let b = buckets(&[0.0, 999.9, 1000.0, 2500.0, 3000.0, 1e9, -5.0], 3);
        assert_eq!(b.counts, vec![3, 1, 1]);
        assert_eq!(b.overflows, 2);
    }

    #[test]
    fn the_layout_is_cyclictests() {
        let row = |hogs: u64, samples: Vec<f64>| {
            let n = samples.len() as u64;
            ResultRow::from_samples("load.wakeup", crate::model::Method::PerCall, crate::unit::Unit::NsLate, samples, n)
                .unwrap()
                .with(crate::bench::load::wakeup::HOGS, hogs)
                .with(crate::bench::load::wakeup::HOG_NICE, 19)
        };
        let a = row(0, vec![500.0, 1500.0, 1600.0]);
        let b = row(1, vec![2500.0, 9000.0]);
        let text = render(&[&a, &b], 3);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# Histogram (1 µs buckets; columns: hogs=0 nice=19, hogs=1 nice=19)");
        assert_eq!(lines[1], "000000 000001\t000000");
        assert_eq!(lines[2], "000001 000002\t000000");
        assert_eq!(lines[3], "000002 000000\t000001");
        assert_eq!(lines[4], "# Total: 000000003 000000002");
        assert_eq!(lines[5], "# Min Latencies: 00001 00003");
        assert_eq!(lines[7], "# Max Latencies: 00002 00009");
        assert_eq!(lines[8], "# Histogram Overflows: 00000 00001");
    }
}
