//! cyclictest's knobs as `run` and `crosscheck` take them: the interval, priority and
//! number of `load.wakeup`'s sleepers, named after the benchmark they set, so a run of
//! many families reads which one they touch.

use std::time::Duration;

use crate::bench::load::wakeup::WakeupOptions;

/// `--wakeup-interval`, `--wakeup-priority`, `--wakeup-threads`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct WakeupArgs {
    /// load.wakeup's time between deadlines, as cyclictest's -i (which is in µs): 1ms,
    /// 200us; 10us to 100ms
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = interval)]
    pub wakeup_interval: Duration,
    /// load.wakeup's sleepers at this SCHED_FIFO priority, as cyclictest's -p (1 to
    /// 99; root, or an RLIMIT_RTPRIO that high)
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub wakeup_priority: Option<u8>,
    /// load.wakeup's sleepers, all on one CPU with one interval, as cyclictest's
    /// -t N -d 0; a row pools their wakes
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub wakeup_threads: u16,
}

impl WakeupArgs {
    pub fn options(&self) -> WakeupOptions {
        WakeupOptions {
            interval: self.wakeup_interval,
            priority: self.wakeup_priority,
            threads: usize::from(self.wakeup_threads),
        }
    }
}

/// Why an interval is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IntervalError {
    #[error("`{0}` has no unit: give one, as 1ms or 200us (cyclictest's -i 200 is 200us)")]
    NoUnit(String),
    #[error("`{0}` is not a duration (1ms, 200us)")]
    NotADuration(String),
}

/// A duration with its unit; a bare number is refused rather than read in seconds
/// (oscost's other durations) or µs (cyclictest's -i), which would each surprise
/// someone.
fn interval(s: &str) -> Result<Duration, IntervalError> {
    let t = s.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(IntervalError::NoUnit(s.to_string()));
    }
    humantime::parse_duration(t).map_err(|_| IntervalError::NotADuration(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_needs_its_unit() {
        assert_eq!(interval("200us"), Ok(Duration::from_micros(200)));
        assert_eq!(interval("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(interval("200"), Err(IntervalError::NoUnit("200".into())));
        assert_eq!(interval("soon"), Err(IntervalError::NotADuration("soon".into())));
    }
}
