//! The values with a shape (sizes, lists, durations, dates, start times) and their
//! parsers, so a malformed value is refused by clap itself (exit 2, naming the flag).

use std::str::FromStr;
use std::time::{Duration, SystemTime};

/// Why a flag's value was refused; clap prints it as the flag's usage error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    #[error("{0:?} is not a size (use e.g. 0, 4K, 64M, 1G)")]
    NotASize(String),
    #[error("{0:?} is too large")]
    TooLarge(String),
    #[error("{0:?} is not a whole number")]
    NotAWholeNumber(String),
    #[error("{0:?} is not a duration (use e.g. 60s, 10ms, 2m)")]
    NotADuration(String),
    #[error("{0:?} must be a positive duration")]
    NotPositive(String),
    #[error("{given:?} is not a period (1s, 1m, 15m, 1h): {why}")]
    NotAPeriod { given: String, why: humantime::DurationError },
    #[error("{0:?}: the period is whole seconds from 1s to 24h")]
    PeriodRange(String),
    #[error("{given:?} is neither next:PERIOD (next:1m) nor an RFC 3339 time: {why}")]
    NotAStart { given: String, why: humantime::TimestampError },
    #[error("{given:?} is not a date (use YYYY-MM-DD or RFC 3339): {why}")]
    NotADate { given: String, why: humantime::TimestampError },
    #[error("{0:?} is not a whole number of 1 or more")]
    NotAtLeastOne(String),
    #[error("{0:?} is not a CPU number (0, 1, …; see `oscost info`)")]
    NotACpu(String),
    #[error(transparent)]
    SaveName(#[from] crate::model::SaveNameError),
    #[error("{0:?}: give 3 to 100 runs")]
    Runs(String),
    #[error("{0:?} is not a percentage")]
    NotAPercentage(String),
    #[error("{0}: the precision is a percentage above 0 and below 100")]
    PrecisionRange(String),
}

/// Why `--start-at` cannot be waited for.
#[derive(Debug, thiserror::Error)]
pub enum StartAtError {
    #[error("--start-at is more than 24 hours away")]
    TooFar,
    #[error("--start-at {0} is in the past")]
    Past(String),
    #[error("the system clock reads a time before 1970")]
    ClockBeforeEpoch,
}

/// A comma-separated list of byte sizes such as `0,4K,64M,1G` (binary multiples).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeList(pub Vec<u64>);

impl FromStr for SizeList {
    type Err = ValueError;
    fn from_str(list: &str) -> Result<Self, ValueError> {
        list.split(',').filter(|x| !x.trim().is_empty()).map(parse_size).collect::<Result<_, _>>().map(SizeList)
    }
}

/// Parses a size such as `64M`, `4K`, `1G` or `512` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, ValueError> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num.parse().map_err(|_| ValueError::NotASize(s.to_string()))?;
    n.checked_mul(mult).ok_or_else(|| ValueError::TooLarge(s.to_string()))
}

/// A comma-separated list of whole numbers such as `2,4,8`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountList(pub Vec<usize>);

impl FromStr for CountList {
    type Err = ValueError;
    fn from_str(list: &str) -> Result<Self, ValueError> {
        list.split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| x.trim().parse::<usize>().map_err(|_| ValueError::NotAWholeNumber(x.to_string())))
            .collect::<Result<_, _>>()
            .map(CountList)
    }
}

/// A positive duration: `60s`, `10ms`, `2m`, `500us` (humantime's units), or a bare
/// number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl FromStr for HumanDuration {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let t = s.trim();
        let bare = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.');
        let d = if bare {
            t.parse::<f64>().ok().filter(|v| v.is_finite() && *v < 1e12).map(Duration::from_secs_f64)
        } else {
            humantime::parse_duration(t).ok()
        }
        .ok_or_else(|| ValueError::NotADuration(s.to_string()))?;
        if d.is_zero() {
            return Err(ValueError::NotPositive(s.to_string()));
        }
        Ok(HumanDuration(d))
    }
}

/// A date (`YYYY-MM-DD`, midnight UTC) or an RFC 3339 time, kept as the RFC 3339 UTC
/// text the store compares with its start times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Date(pub String);

/// When `run --start-at` begins measuring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StartAt {
    /// The next instant whose time since the epoch is a whole number of this period.
    Aligned(Duration),
    /// This instant.
    At(SystemTime),
}

/// The longest `--start-at` waits: a day (a nightly job's period).
pub const START_AT_LIMIT: Duration = Duration::from_secs(24 * 3600);

impl StartAt {
    /// The instant to begin at, seen from `now`; an instant past, or further than
    /// [`START_AT_LIMIT`] away, is an error in words.
    pub fn instant(self, now: SystemTime) -> Result<SystemTime, StartAtError> {
        match self {
            StartAt::Aligned(period) => {
                let since = now.duration_since(SystemTime::UNIX_EPOCH).map_err(|_| StartAtError::ClockBeforeEpoch)?;
                let p = period.as_nanos();
                let next = (since.as_nanos() / p + 1) * p;
                // The wait is under one period, at most a day (the parser's bound).
                let wait = Duration::from_nanos(u64::try_from(next - since.as_nanos()).unwrap_or(u64::MAX));
                Ok(now + wait)
            }
            StartAt::At(t) => match t.duration_since(now) {
                Ok(wait) if wait <= START_AT_LIMIT => Ok(t),
                Ok(_) => Err(StartAtError::TooFar),
                Err(_) => Err(StartAtError::Past(humantime::format_rfc3339_seconds(t).to_string())),
            },
        }
    }
}

impl FromStr for StartAt {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        if let Some(period) = s.strip_prefix("next:") {
            let d = humantime::parse_duration(period)
                .map_err(|why| ValueError::NotAPeriod { given: period.to_string(), why })?;
            if d < Duration::from_secs(1) || d > START_AT_LIMIT || d.subsec_nanos() != 0 {
                return Err(ValueError::PeriodRange(period.to_string()));
            }
            return Ok(StartAt::Aligned(d));
        }
        humantime::parse_rfc3339_weak(s)
            .map(StartAt::At)
            .map_err(|why| ValueError::NotAStart { given: s.to_string(), why })
    }
}

impl FromStr for Date {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let t = s.trim();
        let full = if t.len() == 10 { format!("{t}T00:00:00Z") } else { t.to_string() };
        let when: SystemTime =
            humantime::parse_rfc3339_weak(&full).map_err(|why| ValueError::NotADate { given: s.to_string(), why })?;
        Ok(Date(humantime::format_rfc3339_seconds(when).to_string()))
    }
}

/// A count that must be a whole number of at least 1.
pub(super) fn at_least_one(s: &str) -> Result<usize, ValueError> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(ValueError::NotAtLeastOne(s.to_string())),
    }
}

/// A CPU number as the kernel numbers them (0, 1, …).
pub(super) fn cpu_number(s: &str) -> Result<usize, ValueError> {
    s.trim().parse::<usize>().map_err(|_| ValueError::NotACpu(s.to_string()))
}

/// `--cpus A,B`: two CPU numbers.
pub(super) fn cpu_pair(s: &str) -> Result<[usize; 2], ValueError> {
    let mut it = s.split(',').map(cpu_number);
    match (it.next(), it.next(), it.next()) {
        (Some(a), Some(b), None) => Ok([a?, b?]),
        _ => Err(ValueError::NotACpu(s.to_string())),
    }
}

/// `--save`: a name the run can be found by again (see `model::check_save_name`).
pub(super) fn save_name(s: &str) -> Result<String, ValueError> {
    Ok(crate::model::check_save_name(s).map(|()| s.to_string())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_at_aligns_to_the_epoch_and_refuses_what_it_cannot_wait_for() {
        let at = |secs: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        let minute: StartAt = "next:1m".parse().unwrap();
        assert_eq!(minute.instant(at(120)).unwrap(), at(180), "a whole minute now waits for the next");
        assert_eq!(minute.instant(at(121)).unwrap(), at(180));
        let quarter: StartAt = "next:15m".parse().unwrap();
        assert_eq!(quarter.instant(at(3600 + 1)).unwrap(), at(3600 + 900));
        let then: StartAt = "2026-11-24T06:00:00Z".parse().unwrap();
        let six = humantime::parse_rfc3339("2026-11-24T06:00:00Z").unwrap();
        assert_eq!(then.instant(six - Duration::from_secs(5)).unwrap(), six);
        assert!(then.instant(six + Duration::from_secs(1)).unwrap_err().to_string().contains("in the past"));
        assert!(then.instant(six - Duration::from_secs(25 * 3600)).unwrap_err().to_string().contains("24 hours"));
        for bad in ["next:0s", "next:500ms", "next:2days", "tomorrow", "next:"] {
            assert!(bad.parse::<StartAt>().is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_parse() {
        assert_eq!("0,64M,512M".parse::<SizeList>().unwrap().0, vec![0, 64 << 20, 512 << 20]);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("99999999999999G").is_err());
        assert_eq!("2, 4,8".parse::<CountList>().unwrap().0, vec![2, 4, 8]);
        assert!("2,x".parse::<CountList>().is_err());
    }

    #[test]
    fn durations_parse() {
        let d = |s: &str| s.parse::<HumanDuration>().map(|d| d.0);
        assert_eq!(d("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(d("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(d("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(d("1.5").unwrap(), Duration::from_millis(1500));
        assert!(d("0s").is_err());
        assert!(d("ten").is_err());
        assert!(d("5 parsecs").is_err());
        assert!(d("18446744073709551616").is_err());
        assert!(d("18446744073709551616s").is_err());
    }

    #[test]
    fn dates_parse_and_normalise() {
        assert_eq!("2026-11-22".parse::<Date>().unwrap().0, "2026-11-22T00:00:00Z");
        assert_eq!("2026-11-22T10:00:00+00:00".parse::<Date>().unwrap().0, "2026-11-22T10:00:00Z");
        assert!("2026-13-45".parse::<Date>().is_err());
        assert!("notadate".parse::<Date>().is_err());
    }
}
