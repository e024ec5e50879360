//! Per-call samples kept small: each round's single-call times as an HDR histogram
//! (the `hdrhistogram` crate, its compressed V2 encoding), so a run of the default suite
//! stores well under a megabyte instead of 25 MB of raw f64s.
//!
//! What is kept: every sample to within 1/64 ns below 256 ns and to 4 significant
//! digits above (a tenth of a nanosecond at 1 µs, 0.1 µs at 1 ms), grouped by round.
//! The row's summary (median, interval, percentiles, mean) is computed from the raw
//! samples when the run is measured and stored as it is, so what `show` prints never
//! depends on this encoding; the decoded samples feed `compare`'s resampling and the
//! report's histograms, where a 10⁻⁴ relative blur is far below the counter's own step.
//!
//! Layout of a blob: `HDR1`, the offset (f64, little-endian: the whole nanoseconds
//! below the smallest sample, since bracket subtraction can leave a sample below zero),
//! the number of rounds (u32), then per round its encoded length (u32) and its V2
//! deflate bytes. Values are recorded as round((x − offset) · 64).

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// The blob's first bytes.
pub const MAGIC: &[u8; 4] = b"HDR1";
/// Recorded units per nanosecond.
const UNITS_PER_NS: f64 = 64.0;
/// Significant decimal digits the histograms keep.
const SIGFIG: u8 = 4;
/// The most samples one blob may hold. A compressed count costs a few bytes whatever
/// its size, so a blob's length bounds nothing: this does, checked against each
/// histogram's total count before anything is allocated for it. oscost's largest rows
/// hold a few million samples.
pub const MAX_SAMPLES: usize = 10_000_000;

/// Why a blob could not be encoded or read.
#[derive(Debug, thiserror::Error)]
pub enum HistoError {
    #[error("not a histogram blob")]
    NotHistogram,
    #[error("a histogram blob is cut short")]
    Truncated,
    #[error("a histogram could not be built: {0}")]
    Build(String),
    #[error("a histogram could not be read: {0}")]
    Decode(String),
    #[error("a histogram holds {0} samples, more than the {MAX_SAMPLES} any row of oscost has: refused")]
    TooMany(u64),
}

/// Encodes rounds of samples (ns). Non-finite samples are left out.
pub fn encode(rounds: &[&[f64]]) -> Result<Vec<u8>, HistoError> {
    let min = rounds.iter().flat_map(|r| r.iter()).copied().filter(|x| x.is_finite()).fold(f64::INFINITY, f64::min);
    // The offset comes from the smallest sample as it will be stored (to 1/64 ns), so
    // that encoding what a decode gave back picks the same offset, the same buckets and
    // the same values: an export imported again is the run it was.
    let offset = if min.is_finite() { ((min * UNITS_PER_NS).round() / UNITS_PER_NS).floor() } else { 0.0 };
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&(rounds.len() as u32).to_le_bytes());
    let mut ser = V2DeflateSerializer::new();
    for round in rounds {
        let mut h = Histogram::<u64>::new(SIGFIG).map_err(|e| HistoError::Build(format!("{e:?}")))?;
        for &x in round.iter().filter(|x| x.is_finite()) {
            let units = ((x - offset) * UNITS_PER_NS).round().max(0.0) as u64;
            h.record(units).map_err(|e| HistoError::Build(format!("{e:?}")))?;
        }
        let mut bytes = Vec::new();
        ser.serialize(&h, &mut bytes).map_err(|e| HistoError::Build(format!("{e:?}")))?;
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&bytes);
    }
    Ok(out)
}

/// One line of a percentile distribution: the value at or below which `quantile` of
/// the samples fall, and how many samples that is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantilePoint {
    pub value: f64,
    pub quantile: f64,
    pub count: u64,
}

/// The samples' percentile distribution as HdrHistogram prints it
/// (`outputPercentileDistribution`): quantiles that halve the distance to 100% in
/// `ticks_per_half` steps each, at the precision the store keeps.
pub fn distribution(samples: &[f64], ticks_per_half: u32) -> Result<Vec<QuantilePoint>, HistoError> {
    let finite = || samples.iter().copied().filter(|x| x.is_finite());
    let min = finite().fold(f64::INFINITY, f64::min);
    if !min.is_finite() {
        return Ok(Vec::new());
    }
    let offset = min.floor();
    let mut h = Histogram::<u64>::new(SIGFIG).map_err(|e| HistoError::Build(format!("{e:?}")))?;
    for x in finite() {
        h.record(((x - offset) * UNITS_PER_NS).round().max(0.0) as u64)
            .map_err(|e| HistoError::Build(format!("{e:?}")))?;
    }
    let mut total = 0;
    Ok(h.iter_quantiles(ticks_per_half)
        .map(|v| {
            total += v.count_since_last_iteration();
            let value = h.highest_equivalent(v.value_iterated_to()) as f64 / UNITS_PER_NS + offset;
            QuantilePoint { value, quantile: v.quantile_iterated_to(), count: total }
        })
        .collect())
}

/// Whether a blob is a histogram blob (else raw f64s).
pub fn is_histogram(blob: &[u8]) -> bool {
    blob.starts_with(MAGIC)
}

fn take<'a>(blob: &mut &'a [u8], n: usize) -> Result<&'a [u8], HistoError> {
    if blob.len() < n {
        return Err(HistoError::Truncated);
    }
    let (head, rest) = blob.split_at(n);
    *blob = rest;
    Ok(head)
}

/// Decodes a blob into its rounds' samples (ns), each round in ascending order, every
/// sample at the middle of its histogram bucket.
pub fn decode(blob: &[u8]) -> Result<Vec<Vec<f64>>, HistoError> {
    let mut rest = blob;
    if take(&mut rest, 4)? != MAGIC {
        return Err(HistoError::NotHistogram);
    }
    let offset = f64::from_le_bytes(take(&mut rest, 8)?.try_into().map_err(|_| HistoError::Truncated)?);
    let n = u32::from_le_bytes(take(&mut rest, 4)?.try_into().map_err(|_| HistoError::Truncated)?) as usize;
    let mut de = Deserializer::new();
    // Each round takes at least its 4-byte length.
    let mut rounds = Vec::with_capacity(n.min(rest.len() / 4));
    let mut total: u64 = 0;
    for _ in 0..n {
        let len = u32::from_le_bytes(take(&mut rest, 4)?.try_into().map_err(|_| HistoError::Truncated)?) as usize;
        let mut bytes = take(&mut rest, len)?;
        let h: Histogram<u64> = de.deserialize(&mut bytes).map_err(|e| HistoError::Decode(format!("{e:?}")))?;
        total = total.saturating_add(h.len());
        if total > MAX_SAMPLES as u64 {
            return Err(HistoError::TooMany(total));
        }
        let mut values = Vec::with_capacity(h.len() as usize);
        for v in h.iter_recorded() {
            let x = offset + h.median_equivalent(v.value_iterated_to()) as f64 / UNITS_PER_NS;
            values.extend(std::iter::repeat_n(x, v.count_at_value() as usize));
        }
        rounds.push(values);
    }
    Ok(rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_distribution_climbs_to_every_sample() {
        let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
        let d = distribution(&samples, 5).unwrap();
        let last = d.last().unwrap();
        assert_eq!((last.count, last.quantile), (1000, 1.0));
        assert!((last.value - 1000.0).abs() <= 1000.0 * 1e-3, "{last:?}");
        let median = d.iter().find(|p| p.quantile >= 0.5).unwrap();
        assert!((median.value - 500.0).abs() <= 1.0, "{median:?}");
        assert!(d.windows(2).all(|w| w[0].quantile <= w[1].quantile && w[0].count <= w[1].count));
        assert!(distribution(&[], 5).unwrap().is_empty());
    }

    #[test]
    fn rounds_come_back_with_their_counts_within_the_stated_precision() {
        let a: Vec<f64> = (0..5000).map(|i| 60.1 + 10.0 * (i % 3) as f64).collect();
        let b: Vec<f64> = (0..300).map(|i| 120_000.0 + 37.3 * i as f64).collect();
        let c = vec![-3.2, 0.0, 4.7];
        let blob = encode(&[&a, &b, &c]).unwrap();
        assert!(is_histogram(&blob));
        let back = decode(&blob).unwrap();
        assert_eq!(back.iter().map(Vec::len).collect::<Vec<_>>(), vec![5000, 300, 3]);
        let mut sorted = a.clone();
        sorted.sort_by(f64::total_cmp);
        for (x, y) in sorted.iter().zip(&back[0]) {
            assert!((x - y).abs() <= 1.0 / 64.0, "{x} {y}");
        }
        for (x, y) in b.iter().zip(&back[1]) {
            assert!((x - y).abs() <= 1e-4 * x, "{x} {y}");
        }
        for (x, y) in c.iter().zip(&back[2]) {
            assert!((x - y).abs() <= 1.0 / 64.0, "negative samples survive: {x} {y}");
        }
        // 5,303 samples as f64 would take 42 kB.
        assert!(blob.len() < 4_000, "{} bytes", blob.len());
    }

    #[test]
    fn damaged_blobs_are_errors_not_panics() {
        let blob = encode(&[&[1.0, 2.0]]).unwrap();
        assert!(matches!(decode(&blob[..blob.len() - 3]), Err(HistoError::Truncated | HistoError::Decode(_))));
        assert!(matches!(decode(b"XXXX1234"), Err(HistoError::NotHistogram)));
        assert!(decode(b"HD").is_err());
        assert_eq!(decode(&encode(&[]).unwrap()).unwrap().len(), 0);
    }

    #[test]
    fn a_crafted_count_is_refused_before_it_is_allocated() {
        // One histogram whose single bucket claims 2^40 samples (8 TB as f64s).
        let mut h = Histogram::<u64>::new(SIGFIG).unwrap();
        h.record_n(640, 1u64 << 40).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut bytes).unwrap();
        let mut blob = MAGIC.to_vec();
        blob.extend_from_slice(&0f64.to_le_bytes());
        blob.extend_from_slice(&1u32.to_le_bytes());
        blob.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        blob.extend_from_slice(&bytes);
        assert!(blob.len() < 100, "a few bytes claim a huge count");
        let e = decode(&blob).unwrap_err();
        assert!(matches!(e, HistoError::TooMany(n) if n == 1 << 40), "{e}");
        // A round count beyond what the bytes can hold allocates nothing either.
        let mut many = MAGIC.to_vec();
        many.extend_from_slice(&0f64.to_le_bytes());
        many.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(decode(&many), Err(HistoError::Truncated)));
    }

    #[test]
    fn decoding_then_encoding_again_gives_the_same_samples() {
        // The smallest sample rounds up to a whole nanosecond: the offset must not move.
        let samples = [1023.995, 1024.2, 35_348.7, 39_368.2, 120_000.0];
        let once = decode(&encode(&[&samples]).unwrap()).unwrap();
        let twice = decode(&encode(&[&once[0]]).unwrap()).unwrap();
        assert_eq!(once, twice);
        for (x, y) in samples.iter().zip(&once[0]) {
            assert!((x - y).abs() / x < 1e-3, "{x} {y}");
        }
    }
}
