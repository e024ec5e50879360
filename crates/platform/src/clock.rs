//! Clocks: the monotonic clock that times batches and the cycle counter that brackets
//! single calls, with the calibration that makes their figures mean nanoseconds.
//!
//! Calibration measures, at start: the counter's rate against CLOCK_MONOTONIC_RAW (three
//! rounds, their spread recorded), the cost of an empty counter bracket (subtracted from
//! every per-call sample), and the cost and resolution of a monotonic clock read (which
//! set how long a batch must last), and the bracket's quantum: the step its readings
//! move by (a hypervisor's scaled TSC may advance tens of ticks at a time, so every
//! per-call figure is a multiple of that step, whatever digits its conversion to
//! nanoseconds prints). Where no usable counter exists, per-call timing brackets with
//! the monotonic clock instead, and says so.

use serde::{Deserialize, Serialize};

use crate::sys;

/// Reads of a timestamp source used around one call. Generic (not a trait object) so
/// the per-call loop is monomorphised for the source and carries no dispatch.
pub trait Stamp {
    fn begin() -> u64;
    fn end() -> u64;
}

/// The serialised cycle counter (lfence;rdtsc … rdtscp;lfence on x86_64).
pub struct CycleStamp;

impl Stamp for CycleStamp {
    #[inline(always)]
    fn begin() -> u64 {
        sys::cycles_begin()
    }
    #[inline(always)]
    fn end() -> u64 {
        sys::cycles_end()
    }
}

/// CLOCK_MONOTONIC_RAW in nanoseconds: the fallback bracket.
pub struct MonoStamp;

impl Stamp for MonoStamp {
    #[inline(always)]
    fn begin() -> u64 {
        sys::monotonic_raw_ns()
    }
    #[inline(always)]
    fn end() -> u64 {
        sys::monotonic_raw_ns()
    }
}

/// Which source brackets per-call samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerCallSource {
    CycleCounter,
    Monotonic,
}

impl PerCallSource {
    /// The name users read (as in the JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            PerCallSource::CycleCounter => "cycle counter",
            PerCallSource::Monotonic => "CLOCK_MONOTONIC_RAW",
        }
    }
}

/// The calibration recorded with every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub per_call_source: PerCallSource,
    /// What the counter is, or why it is not used.
    pub counter: String,
    /// Counter ticks per nanosecond (1.0 when the monotonic clock brackets calls).
    pub ticks_per_ns: f64,
    /// Relative spread (max-min)/median of the three rate measurements.
    pub rate_spread: f64,
    /// Median cost of an empty bracket, in ticks and in nanoseconds; subtracted.
    pub bracket_ticks: f64,
    pub bracket_ns: f64,
    /// Median cost of one CLOCK_MONOTONIC_RAW read, and the clock's resolution.
    pub clock_read_ns: f64,
    pub clock_resolution_ns: f64,
    /// The shortest a batch may last so clock cost and resolution stay under 0.1%.
    pub min_batch_ns: f64,
    pub warnings: Vec<String>,
    /// The per-call bracket's quantum in nanoseconds (`quantum_of`): per-call figures
    /// are whole multiples of it. Absent in runs stored before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum_ns: Option<f64>,
}

impl Calibration {
    /// Converts a per-call bracket reading (ticks) to nanoseconds, empty bracket removed.
    pub fn ticks_to_call_ns(&self, ticks: u64) -> f64 {
        (ticks as f64 - self.bracket_ticks) / self.ticks_per_ns
    }
}

/// The largest step a bracket's readings are taken in: the largest `q` (ticks, up to
/// [`MAX_QUANTUM`]) that at least 80% of the nonzero `durations` are whole multiples
/// of, over at least four different multiples (a single repeated duration says
/// nothing of the step). 1 when no step shows: the counter resolves single ticks.
/// A few readings off the step are allowed: a virtual counter that advances 26 ticks
/// at a time here now and then reads 1 and 25 across one step.
pub fn quantum_of(durations: &[u64]) -> u64 {
    let nonzero: Vec<u64> = durations.iter().copied().filter(|d| *d > 0).collect();
    if nonzero.len() < 100 {
        return 1;
    }
    let fits = |q: u64| {
        let multiples: Vec<u64> = nonzero.iter().filter(|d| *d % q == 0).map(|d| d / q).collect();
        let mut levels = multiples.clone();
        levels.sort_unstable();
        levels.dedup();
        multiples.len() * 5 >= nonzero.len() * 4 && levels.len() >= 4
    };
    (2..=MAX_QUANTUM).rev().find(|&q| fits(q)).unwrap_or(1)
}

/// The largest quantum looked for, in ticks (about 100 ns at 2.5 ticks/ns).
pub const MAX_QUANTUM: u64 = 256;

/// Brackets spins of many lengths (so the readings span many steps of the counter)
/// and returns their durations in ticks, for [`quantum_of`].
#[inline(never)]
fn spin_brackets<S: Stamp>() -> Vec<u64> {
    let mut out = Vec::with_capacity(20 * 200);
    for _ in 0..20 {
        for k in 0..200u64 {
            let t0 = S::begin();
            for i in 0..k {
                std::hint::black_box(i);
            }
            let t1 = S::end();
            out.push(t1.wrapping_sub(t0));
        }
    }
    out
}

/// One rate measurement: counter ticks over monotonic nanoseconds across `span_ns`.
fn measure_rate(span_ns: u64) -> f64 {
    let m0 = sys::monotonic_raw_ns();
    let c0 = sys::cycles_begin();
    let mut m1 = m0;
    while m1 - m0 < span_ns {
        m1 = sys::monotonic_raw_ns();
    }
    let c1 = sys::cycles_end();
    c1.wrapping_sub(c0) as f64 / (m1 - m0) as f64
}

#[inline(never)]
fn empty_brackets<S: Stamp>(out: &mut [u64]) {
    for slot in out.iter_mut() {
        let t0 = S::begin();
        let t1 = S::end();
        *slot = t1.wrapping_sub(t0);
    }
}

#[inline(never)]
fn clock_read_cost_ns() -> f64 {
    const READS: u64 = 100_000;
    let t0 = sys::monotonic_raw_ns();
    for _ in 0..READS {
        std::hint::black_box(sys::monotonic_raw_ns());
    }
    (sys::monotonic_raw_ns() - t0) as f64 / (READS + 1) as f64
}

fn median_u64(v: &mut [u64]) -> f64 {
    v.sort_unstable();
    v[v.len() / 2] as f64
}

/// The shortest batch: long enough that reading the clock twice and its resolution
/// stay under 0.1% of it, and never under 1 ms.
pub fn min_batch_ns(clock_read_ns: f64, clock_resolution_ns: f64) -> f64 {
    (1000.0 * (clock_read_ns + clock_resolution_ns)).max(1_000_000.0)
}

/// The counter rate from calibration rounds: their median, and their relative
/// spread (max - min) / median.
pub fn rate_of_rounds(rates: &mut [f64]) -> (f64, f64) {
    rates.sort_by(f64::total_cmp);
    let med = rates[rates.len() / 2];
    (med, (rates[rates.len() - 1] - rates[0]) / med)
}

/// Calibrates the clocks. `span_ns` is the length of each of the three rate rounds.
pub fn calibrate(span_ns: u64) -> Calibration {
    let mut warnings = Vec::new();
    let clock_read_ns = clock_read_cost_ns();
    let clock_resolution_ns = sys::monotonic_raw_resolution_ns() as f64;
    let min_batch_ns = min_batch_ns(clock_read_ns, clock_resolution_ns);
    let mut brackets = vec![0u64; 20_000];

    let (per_call_source, counter, ticks_per_ns, rate_spread) = match sys::counter_status() {
        Ok(desc) => {
            let mut rates: Vec<f64> = (0..3).map(|_| measure_rate(span_ns)).collect();
            let (med, spread) = rate_of_rounds(&mut rates);
            if !med.is_finite() || med <= 0.0 {
                warnings.push("cycle counter did not advance; per-call timing uses the monotonic clock".into());
                (PerCallSource::Monotonic, format!("{desc}: unusable"), 1.0, 0.0)
            } else {
                if spread > 0.01 {
                    warnings
                        .push(format!("cycle counter rate varied by {:.2}% across calibration rounds", spread * 100.0));
                }
                (PerCallSource::CycleCounter, desc.to_string(), med, spread)
            }
        }
        Err(why) => {
            warnings.push(format!("{why}; per-call timing uses the monotonic clock"));
            (PerCallSource::Monotonic, why.to_string(), 1.0, 0.0)
        }
    };

    match per_call_source {
        PerCallSource::CycleCounter => empty_brackets::<CycleStamp>(&mut brackets),
        PerCallSource::Monotonic => empty_brackets::<MonoStamp>(&mut brackets),
    }
    let bracket_ticks = median_u64(&mut brackets);
    let quantum_ticks = quantum_of(&match per_call_source {
        PerCallSource::CycleCounter => spin_brackets::<CycleStamp>(),
        PerCallSource::Monotonic => spin_brackets::<MonoStamp>(),
    });
    Calibration {
        per_call_source,
        counter,
        ticks_per_ns,
        rate_spread,
        bracket_ticks,
        bracket_ns: bracket_ticks / ticks_per_ns,
        clock_read_ns,
        clock_resolution_ns,
        min_batch_ns,
        warnings,
        quantum_ns: Some(quantum_ticks as f64 / ticks_per_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_length_and_rate_rules_on_known_values() {
        assert_eq!(min_batch_ns(30.0, 1.0), 1_000_000.0, "cheap clocks: the 1 ms floor");
        assert_eq!(min_batch_ns(2_000.0, 1_000.0), 3_000_000.0, "a slow clock: 1000 x (read + resolution)");
        let (med, spread) = rate_of_rounds(&mut [2.5, 2.4, 2.6]);
        assert_eq!(med, 2.5);
        assert!((spread - 0.2 / 2.5).abs() < 1e-12);
    }

    /// A counter that moves 26 ticks at a time (with the odd 1 + 25 split across a
    /// step) has a quantum of 26; one that resolves single ticks has 1; a single
    /// repeated duration, or too few readings, show no step.
    #[test]
    fn the_quantum_is_the_step_readings_move_by() {
        let mut stepped: Vec<u64> = (0..1000).map(|i| 26 * (1 + i % 40)).collect();
        stepped.extend((0..100).map(|i| if i % 2 == 0 { 1 } else { 25 + 26 * (i % 7) }));
        assert_eq!(quantum_of(&stepped), 26);
        let fine: Vec<u64> = (0..1000).map(|i| 40 + (i * 7919) % 397).collect();
        assert_eq!(quantum_of(&fine), 1);
        assert_eq!(quantum_of(&[52; 1000]), 1, "one level says nothing of the step");
        assert_eq!(quantum_of(&[26, 52, 78, 104]), 1, "too few readings");
        let ten_ns: Vec<u64> = (0..500).map(|i| 10 * (3 + i % 50)).collect();
        assert_eq!(quantum_of(&ten_ns), 10);
    }

    #[test]
    fn calibration_subtracts_exactly_its_empty_bracket() {
        let c = calibrate(5_000_000);
        assert!(c.ticks_per_ns.is_finite() && c.ticks_per_ns > 0.0);
        // A reading equal to the empty bracket is a call of zero cost.
        assert_eq!(
            c.ticks_to_call_ns(c.bracket_ticks as u64),
            (c.bracket_ticks.floor() - c.bracket_ticks) / c.ticks_per_ns
        );
        assert_eq!(c.min_batch_ns, min_batch_ns(c.clock_read_ns, c.clock_resolution_ns));
        if c.per_call_source == PerCallSource::Monotonic {
            assert!(!c.warnings.is_empty(), "a fallback is always explained");
        }
    }

    #[test]
    fn counter_measures_a_known_interval() {
        // 20 ms measured by the counter and by the monotonic clock agree within 5%
        // once converted (a generous bound: it checks units, not speed).
        let c = calibrate(2_000_000);
        let m0 = sys::monotonic_raw_ns();
        let t0 = sys::cycles_begin();
        while sys::monotonic_raw_ns() - m0 < 20_000_000 {}
        let t1 = sys::cycles_end();
        let m1 = sys::monotonic_raw_ns();
        let counter_ns = if c.per_call_source == PerCallSource::CycleCounter {
            (t1 - t0) as f64 / c.ticks_per_ns
        } else {
            (t1 - t0) as f64
        };
        let mono_ns = (m1 - m0) as f64;
        assert!((counter_ns / mono_ns - 1.0).abs() < 0.05, "{counter_ns} vs {mono_ns}");
    }
}
