//! The per-CPU perf ring buffers of the four tracepoints (perf-event2: the crate owns
//! perf_event_open, the mmap and the ring's head and tail; oscost decodes the raw
//! records). Every buffer records all tasks on its CPU (pid -1), kernel side included,
//! with TID, TIME (CLOCK_MONOTONIC_RAW, the clock of oscost's timed loops), CPU and
//! RAW. Records the kernel could not write are counted: each event's counter counts
//! every firing, so firings minus records read is what was lost. (On this VM's
//! polling idle loop, wake-ups fired from a CPU's idle context are counted but never
//! written: they show as lost, not as missing.)

use perf_event::data::Record as Parsed;
use perf_event::events::Tracepoint;
use perf_event::{Builder, Clock, SampleFlag, Sampler};

use super::TraceError;
use super::event::{Decoder, Event, Which};
use super::tracefs::TraceSpec;

/// Ring buffer sizes per CPU, bytes (each rounded up to a power of two).
#[derive(Debug, Clone, Copy)]
pub struct BufferSizes {
    pub switch: usize,
    pub waking: usize,
    pub other: usize,
}

impl BufferSizes {
    /// For a pass read after it ends: room for about 20,000 switches and as many
    /// wake-ups per CPU (a record is about 100 bytes).
    pub fn pass() -> Self {
        Self { switch: 2 << 20, waking: 2 << 20, other: 256 << 10 }
    }

    /// For a recording drained while it runs (`oscost trace`).
    pub fn streaming() -> Self {
        Self { switch: 4 << 20, waking: 4 << 20, other: 512 << 10 }
    }

    /// The smallest buffers: a permission check.
    pub fn probe() -> Self {
        Self { switch: 4096, waking: 4096, other: 4096 }
    }

    fn of(&self, which: Which) -> usize {
        match which {
            Which::Switch => self.switch,
            Which::Waking => self.waking,
            Which::WakeupNew | Which::Migrate => self.other,
        }
    }
}

struct Buffer {
    sampler: Sampler,
    decoder: Decoder,
    /// Records read from this buffer so far.
    read: u64,
}

/// Open per-CPU buffers of the four tracepoints. Dropping it closes every descriptor
/// and unmaps every buffer.
pub struct Recorder {
    buffers: Vec<Buffer>,
    /// Records that did not decode (shorter than the layout says).
    malformed: u64,
}

fn open_one(spec: &TraceSpec, which: Which, cpu: usize, size: usize) -> Result<Buffer, TraceError> {
    let decoder = Decoder::new(which, spec)?;
    let mut b = Builder::new(Tracepoint::with_id(which.format(spec).id));
    b.one_cpu(cpu)
        .any_pid()
        .include_kernel()
        .sample_period(1)
        .sample(SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU | SampleFlag::RAW)
        .clockid(Clock::MONOTONIC_RAW)
        .wakeup_watermark(size / 2)
        .enabled(false);
    let counter = b.build().map_err(|e| TraceError::Perf(open_error(&e)))?;
    let sampler = counter
        .sampled(size)
        .map_err(|e| TraceError::Perf(format!("mapping a {} KiB perf buffer: {e}", size >> 10)))?;
    Ok(Buffer { sampler, decoder, read: 0 })
}

fn open_error(e: &std::io::Error) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "opening the sched tracepoints is not permitted ({e}; kernel.perf_event_paranoid = {}; it needs root or CAP_PERFMON)",
            paranoid.trim()
        ),
        Some(libc::ENOENT) | Some(libc::ENODEV) => format!("this kernel offers no sched tracepoints to perf ({e})"),
        _ => format!("opening a sched tracepoint: {e}"),
    }
}

impl Recorder {
    /// Opens the four tracepoints on each of `cpus`, disabled.
    pub fn open(spec: &TraceSpec, cpus: &[usize], sizes: BufferSizes) -> Result<Self, TraceError> {
        let mut buffers = Vec::with_capacity(cpus.len() * Which::ALL.len());
        for &cpu in cpus {
            for which in Which::ALL {
                buffers.push(open_one(spec, which, cpu, sizes.of(which))?);
            }
        }
        Ok(Self { buffers, malformed: 0 })
    }

    /// Starts recording on every buffer.
    pub fn enable(&mut self) -> Result<(), TraceError> {
        for b in &mut self.buffers {
            b.sampler.enable().map_err(|e| TraceError::Perf(format!("enabling a tracepoint: {e}")))?;
        }
        Ok(())
    }

    /// Stops recording on every buffer (what is recorded stays to be read).
    pub fn disable(&mut self) {
        for b in &mut self.buffers {
            let _ = b.sampler.disable();
        }
    }

    /// Moves every record now in the buffers to `out`, unsorted (buffer by buffer).
    pub fn drain(&mut self, out: &mut Vec<Event>) {
        for b in &mut self.buffers {
            while let Some(rec) = b.sampler.next_record() {
                let Ok(Parsed::Sample(s)) = rec.parse_record() else { continue };
                b.read += 1;
                let decoded = s.raw().and_then(|raw| b.decoder.decode(raw));
                match (decoded, s.time(), s.cpu(), s.tid()) {
                    (Some(kind), Some(time), Some(cpu), Some(tid)) => out.push(Event { time, cpu, tid, kind }),
                    _ => self.malformed += 1,
                }
            }
        }
    }

    /// Records lost so far: firings the counters saw beyond the records read (call
    /// after a last `drain`), plus records that did not decode.
    pub fn lost(&mut self) -> u64 {
        let mut lost = self.malformed;
        for b in &mut self.buffers {
            if let Ok(fired) = b.sampler.read() {
                lost += fired.saturating_sub(b.read);
            }
        }
        lost
    }
}

/// Sorts drained events into time order (buffers are each in order; CPUs interleave).
pub fn sort(events: &mut [Event]) {
    events.sort_by_key(|e| (e.time, e.cpu));
}
