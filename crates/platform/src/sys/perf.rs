//! perf_event_open counters: hardware instructions and cycles of the measuring thread,
//! and (opt-in) per-task software switch and migration counts.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The fields of `struct perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_FLAG_DISABLED: u64 = 1;
const PERF_FLAG_EXCLUDE_HV: u64 = 1 << 6;

/// The perf event kinds oscost counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerfEvent {
    Instructions,
    Cycles,
    ContextSwitches,
    CpuMigrations,
}

impl PerfEvent {
    fn type_config(self) -> (u32, u64) {
        match self {
            PerfEvent::Instructions => (0, 1),    // PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS
            PerfEvent::Cycles => (0, 0),          // PERF_COUNT_HW_CPU_CYCLES
            PerfEvent::ContextSwitches => (1, 3), // PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES
            PerfEvent::CpuMigrations => (1, 4),   // PERF_COUNT_SW_CPU_MIGRATIONS
        }
    }
}

/// One perf counter attached to one task (thread or process), user and kernel counted.
pub struct PerfCounter(OwnedFd);

impl PerfCounter {
    /// Opens a disabled counter of `event` on task `tid` (0 = the calling thread).
    pub fn open(event: PerfEvent, tid: libc::pid_t) -> io::Result<Self> {
        let (type_, config) = event.type_config();
        let attr = PerfEventAttr {
            type_,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config,
            flags: PERF_FLAG_DISABLED | PERF_FLAG_EXCLUDE_HV,
            ..Default::default()
        };
        // SAFETY: `attr` is a valid VER0 perf_event_attr; no group fd, no flags.
        let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, tid, -1, -1, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor to us; no one else owns it.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) }))
    }

    fn ioctl(&self, req: libc::c_ulong) -> io::Result<()> {
        // SAFETY: the enable/disable/reset ioctls take an integer argument of 0.
        super::check(unsafe { libc::ioctl(self.0.as_raw_fd(), req as _, 0) })?;
        Ok(())
    }

    /// Zeroes and starts the counter.
    pub fn start(&self) -> io::Result<()> {
        self.ioctl(0x2403)?; // PERF_EVENT_IOC_RESET
        self.ioctl(0x2400) // PERF_EVENT_IOC_ENABLE
    }

    /// Stops the counter.
    pub fn stop(&self) -> io::Result<()> {
        self.ioctl(0x2401) // PERF_EVENT_IOC_DISABLE
    }

    /// Reads the counter's value.
    pub fn value(&self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        match rustix::io::read(&self.0, &mut b)? {
            8 => Ok(u64::from_ne_bytes(b)),
            _ => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
        }
    }
}
