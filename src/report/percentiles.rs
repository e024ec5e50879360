//! A row's percentile distribution as text, in HdrHistogram's layout (what
//! `outputPercentileDistribution`, wrk2 and cyclictest's users read and plot): value,
//! percentile, cumulative count, 1/(1−percentile), then the mean and maximum.

use std::fmt::Write;

use crate::histo::{HistoError, distribution};
use crate::model::ResultRow;

/// Quantile steps per halving of the distance to 100% (HdrHistogram's default).
const TICKS_PER_HALF: u32 = 5;

/// The distribution of `r`'s stored samples.
pub fn render(r: &ResultRow) -> Result<String, HistoError> {
    let points = distribution(&r.samples, TICKS_PER_HALF)?;
    let mut o = format!(
        "# {} {} ({}), {}, {} samples\n",
        super::plain(&r.benchmark),
        super::plain(&r.variant_label()),
        r.method.as_str(),
        super::plain(r.unit.as_str()),
        r.samples.len()
    );
    let _ = writeln!(o, "{:>12} {:>14} {:>10} {:>14}\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    for p in &points {
        if p.quantile < 1.0 {
            let _ = writeln!(
                o,
                "{:>12.3} {:>14.12} {:>10} {:>14.2}",
                p.value,
                p.quantile,
                p.count,
                1.0 / (1.0 - p.quantile)
            );
        } else {
            let _ = writeln!(o, "{:>12.3} {:>14.12} {:>10}", p.value, p.quantile, p.count);
        }
    }
    let n = r.samples.len().max(1) as f64;
    let mean = r.samples.iter().sum::<f64>() / n;
    let sd = (r.samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let max = r.samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let _ = writeln!(o, "#[Mean    = {mean:>12.3}, StdDeviation   = {sd:>12.3}]");
    let _ = writeln!(o, "#[Max     = {max:>12.3}, Total count    = {:>12}]", r.samples.len());
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Method;

    #[test]
    fn the_dump_has_hdr_layout_and_ends_at_every_sample() {
        let r = ResultRow::from_samples(
            "syscall.getppid",
            Method::PerCall,
            "ns/call",
            (1..=2000).map(f64::from).collect(),
            2000,
        )
        .unwrap();
        let text = render(&r).unwrap();
        assert!(text.contains("Value     Percentile TotalCount 1/(1-Percentile)"), "{text}");
        let last = text.lines().rfind(|l| !l.starts_with('#') && !l.trim().is_empty()).unwrap();
        let cols: Vec<&str> = last.split_whitespace().collect();
        assert_eq!((cols[1], cols[2]), ("1.000000000000", "2000"), "{last}");
        assert!(text.contains("Total count    =         2000]"), "{text}");
    }
}
