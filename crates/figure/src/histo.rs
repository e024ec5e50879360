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
//!
//! Reading is bounded before anything is allocated. The histogram library sizes a
//! buffer from the payload length a V2 header claims (4 GB for a few bytes) and a
//! counts array from its value range, so each round's header (and, under deflate, the
//! inflated header) is read here first: a payload longer than the bytes that hold it,
//! or than any histogram of this precision needs, a precision finer than the store's,
//! or an empty range is refused. A count costs a few bytes whatever its size, so the
//! samples a blob holds are counted from the decoded histograms before any is expanded,
//! and against a budget ([`SampleBudget`]) that a reader shares across the rows it
//! loads.

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

/// The samples a reader may expand in one load (a run's rows, or an imported run's):
/// 160 MB as f64s. A default run holds about 3 million; a run of many long rounds, a
/// few times that.
pub const MAX_LOADED_SAMPLES: u64 = 20_000_000;

/// The histogram library's V2 encoding (its `serialization` module).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// The V2 header: cookie, payload length, normalizing offset, significant digits
/// (u32 each), lowest and highest trackable value (u64 each), int-to-double ratio (f64).
const V2_HEADER: usize = 40;
/// The longest payload a histogram of the store's precision can have: every count of
/// its counts array over the whole u64 range (fewer than 2²⁰ at 4 digits) as a 9-byte
/// varint.
const MAX_PAYLOAD: usize = 9 << 20;

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
    #[error("a histogram's header claims {claimed} bytes of counts where {held} are stored: refused")]
    Oversized { claimed: u64, held: u64 },
    #[error("a histogram's header is not one oscost writes ({0}): refused")]
    Header(String),
    #[error(
        "the rows read at once hold more than {MAX_LOADED_SAMPLES} samples ({0} and counting), more than any run of oscost: refused"
    )]
    OverBudget(u64),
}

/// The samples a reader may still expand, shared by the rows of one load.
#[derive(Debug, Clone)]
pub struct SampleBudget {
    used: u64,
    max: u64,
}

impl Default for SampleBudget {
    fn default() -> Self {
        Self::new(MAX_LOADED_SAMPLES)
    }
}

impl SampleBudget {
    pub fn new(max: u64) -> Self {
        Self { used: 0, max }
    }

    /// Takes `n` samples from the budget, or refuses (taking nothing) past it.
    pub fn take(&mut self, n: u64) -> Result<(), HistoError> {
        let used = self.used.saturating_add(n);
        if used > self.max {
            return Err(HistoError::OverBudget(used));
        }
        self.used = used;
        Ok(())
    }
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

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(w)
}

/// Checks an uncompressed V2 encoding (`bytes`, cookie included) before the library
/// reads it: its payload fits in the bytes that hold it, and its header is one of this
/// store's (a precision no finer, a range that is one).
fn check_v2(bytes: &[u8]) -> Result<(), HistoError> {
    if bytes.len() < V2_HEADER {
        return Err(HistoError::Truncated);
    }
    let claimed = be_u32(bytes, 4) as usize;
    let held = bytes.len() - V2_HEADER;
    if claimed > held || claimed > MAX_PAYLOAD {
        return Err(HistoError::Oversized { claimed: claimed as u64, held: held.min(MAX_PAYLOAD) as u64 });
    }
    let (digits, low, high) = (be_u32(bytes, 12), be_u64(bytes, 16), be_u64(bytes, 24));
    if !(1..=u32::from(SIGFIG)).contains(&digits) {
        return Err(HistoError::Header(format!("{digits} significant digits, at most {SIGFIG}")));
    }
    if low == 0 || high < low.saturating_mul(2) {
        return Err(HistoError::Header(format!("a range of {low} to {high}")));
    }
    Ok(())
}

/// One round's histogram, its header checked before the library allocates anything
/// from it. A deflated round is inflated here, to at most the longest encoding a
/// histogram can have, and read as the uncompressed encoding it holds.
fn read_round(bytes: &[u8]) -> Result<Histogram<u64>, HistoError> {
    use std::io::Read;
    if bytes.len() < 8 {
        return Err(HistoError::Truncated);
    }
    let inflated;
    let v2 = match be_u32(bytes, 0) {
        V2_COOKIE => bytes,
        V2_DEFLATE_COOKIE => {
            let compressed = be_u32(bytes, 4) as usize;
            let stream = bytes.get(8..8 + compressed).ok_or(HistoError::Truncated)?;
            let limit = (V2_HEADER + MAX_PAYLOAD + 1) as u64;
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(stream)
                .take(limit)
                .read_to_end(&mut out)
                .map_err(|e| HistoError::Decode(format!("inflating: {e}")))?;
            if out.len() as u64 >= limit {
                return Err(HistoError::Oversized { claimed: out.len() as u64, held: MAX_PAYLOAD as u64 });
            }
            if out.len() < 4 || be_u32(&out, 0) != V2_COOKIE {
                return Err(HistoError::Decode("the inflated bytes are not a V2 histogram".into()));
            }
            inflated = out;
            &inflated[..]
        }
        c => return Err(HistoError::Decode(format!("cookie {c:#x} is not a V2 histogram's"))),
    };
    check_v2(v2)?;
    Deserializer::new().deserialize(&mut &v2[..]).map_err(|e| HistoError::Decode(format!("{e:?}")))
}

/// A blob's offset and its rounds' encodings, each round's length checked against the
/// bytes that hold it.
fn split(blob: &[u8]) -> Result<(f64, Vec<&[u8]>), HistoError> {
    let mut rest = blob;
    if take(&mut rest, 4)? != MAGIC {
        return Err(HistoError::NotHistogram);
    }
    let offset = f64::from_le_bytes(take(&mut rest, 8)?.try_into().map_err(|_| HistoError::Truncated)?);
    let n = u32::from_le_bytes(take(&mut rest, 4)?.try_into().map_err(|_| HistoError::Truncated)?) as usize;
    // Each round takes at least its 4-byte length.
    let mut rounds = Vec::with_capacity(n.min(rest.len() / 4));
    for _ in 0..n {
        let len = u32::from_le_bytes(take(&mut rest, 4)?.try_into().map_err(|_| HistoError::Truncated)?) as usize;
        rounds.push(take(&mut rest, len)?);
    }
    Ok((offset, rounds))
}

/// The samples a blob holds, counted from its histograms without expanding any;
/// refused past [`MAX_SAMPLES`].
pub fn count(blob: &[u8]) -> Result<u64, HistoError> {
    let (_, rounds) = split(blob)?;
    let mut total: u64 = 0;
    for bytes in rounds {
        total = total.saturating_add(read_round(bytes)?.len());
        if total > MAX_SAMPLES as u64 {
            return Err(HistoError::TooMany(total));
        }
    }
    Ok(total)
}

/// Decodes a blob into its rounds' samples (ns), each round in ascending order, every
/// sample at the middle of its histogram bucket. Its samples are counted first, and
/// none expanded when there are more than [`MAX_SAMPLES`].
pub fn decode(blob: &[u8]) -> Result<Vec<Vec<f64>>, HistoError> {
    count(blob)?;
    let (offset, encoded) = split(blob)?;
    let mut rounds = Vec::with_capacity(encoded.len());
    for bytes in encoded {
        let h = read_round(bytes)?;
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

    /// A blob of one round holding `bytes` (one histogram's encoding).
    fn blob_of(bytes: &[u8]) -> Vec<u8> {
        let mut blob = MAGIC.to_vec();
        blob.extend_from_slice(&0f64.to_le_bytes());
        blob.extend_from_slice(&1u32.to_le_bytes());
        blob.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        blob.extend_from_slice(bytes);
        blob
    }

    /// A histogram's uncompressed V2 encoding with its payload length set to `claimed`.
    fn v2_claiming(claimed: u32) -> Vec<u8> {
        let mut h = Histogram::<u64>::new(SIGFIG).unwrap();
        h.record_n(640, 3).unwrap();
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        bytes[4..8].copy_from_slice(&claimed.to_be_bytes());
        bytes
    }

    fn deflated(v2: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(v2).unwrap();
        let stream = z.finish().unwrap();
        let mut out = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        out.extend_from_slice(&(stream.len() as u32).to_be_bytes());
        out.extend_from_slice(&stream);
        out
    }

    /// A header claiming a 4 GB payload would make the library allocate it; it is
    /// refused from the header, plain or deflated.
    #[test]
    fn a_payload_length_beyond_the_stored_bytes_is_refused_before_it_is_allocated() {
        let honest = v2_claiming(0);
        let held = (honest.len() - V2_HEADER) as u32;
        let good = v2_claiming(held);
        assert_eq!(decode(&blob_of(&good)).unwrap(), vec![vec![10.0; 3]], "the true length reads");
        assert_eq!(decode(&blob_of(&deflated(&good))).unwrap(), vec![vec![10.0; 3]]);
        for planted in [v2_claiming(0xFFFF_FFF0), v2_claiming(held + 1)] {
            for bytes in [planted.clone(), deflated(&planted)] {
                let e = decode(&blob_of(&bytes)).unwrap_err();
                assert!(matches!(e, HistoError::Oversized { .. }), "{e}");
                assert!(count(&blob_of(&bytes)).is_err());
            }
        }
        // A finer precision than the store's sizes a larger counts array: refused.
        let mut finer = good.clone();
        finer[12..16].copy_from_slice(&5u32.to_be_bytes());
        assert!(matches!(decode(&blob_of(&finer)), Err(HistoError::Header(_))));
        // A deflate stream that inflates past any histogram's size is cut off.
        let mut huge = good.clone();
        huge.resize(V2_HEADER + MAX_PAYLOAD + 64, 0);
        let e = decode(&blob_of(&deflated(&huge))).unwrap_err();
        assert!(matches!(e, HistoError::Oversized { .. }), "{e}");
    }

    #[test]
    fn samples_are_counted_without_expanding_and_a_budget_is_shared() {
        let mut h = Histogram::<u64>::new(SIGFIG).unwrap();
        h.record_n(640, 9_999_999).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut bytes).unwrap();
        let blob = blob_of(&bytes);
        assert!(blob.len() < 100);
        assert_eq!(count(&blob).unwrap(), 9_999_999);
        let mut budget = SampleBudget::default();
        budget.take(9_999_999).unwrap();
        budget.take(9_999_999).unwrap();
        assert!(matches!(budget.take(9_999_999), Err(HistoError::OverBudget(_))));
        assert!(budget.take(2).is_ok(), "a refusal takes nothing");
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
