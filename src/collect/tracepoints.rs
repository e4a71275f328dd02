//! Kernel tracepoints through perf_event_open (PERF_TYPE_TRACEPOINT, one ring buffer per
//! event per CPU), no BPF: each record's raw bytes are kept with its event's [`Format`], so the
//! analysis reads fields by name.

use crate::probe::Root;
use crate::probe::tracefs::{self, Format};
use perf_event::events::Tracepoint;
use perf_event::{Builder, Clock, SampleFlag, Sampler};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Ring buffer per event per CPU.
const RING: usize = 256 << 10;

/// tracefs, mounted for the run if it was not (and unmounted again when dropped).
pub struct Tracefs {
    pub path: &'static str,
    mounted_here: bool,
    /// Said once to the user: what hugelab did to get tracefs.
    pub note: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(
        "tracefs is not mounted and mounting it needs root: run as root, or `sudo mount -t tracefs nodev /sys/kernel/tracing`"
    )]
    NoTracefs,
    #[error(
        "this kernel has no tracefs (it is not in /proc/filesystems): tracepoints are unavailable"
    )]
    NoKernelSupport,
    #[error("mounting tracefs at /sys/kernel/tracing: {0}")]
    Mount(std::io::Error),
}

impl Tracefs {
    /// tracefs as it is, or mounted at /sys/kernel/tracing (root only).
    pub fn open() -> Result<Tracefs, TraceError> {
        let root = Root::system();
        if let Some(p) = tracefs::find(&root) {
            return Ok(Tracefs {
                path: p,
                mounted_here: false,
                note: None,
            });
        }
        let known = tracefs::in_kernel(&root);
        if !known {
            return Err(TraceError::NoKernelSupport);
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(TraceError::NoTracefs);
        }
        let path = tracefs::TRACEFS_PATHS[0];
        let c = |s: &str| std::ffi::CString::new(s).expect("no NUL");
        let (src, target, fs) = (c("nodev"), c(path), c("tracefs"));
        // SAFETY: valid NUL-terminated strings; no mount data.
        let rc = unsafe {
            libc::mount(
                src.as_ptr(),
                target.as_ptr(),
                fs.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(TraceError::Mount(std::io::Error::last_os_error()));
        }
        Ok(Tracefs {
            path,
            mounted_here: true,
            note: Some(format!(
                "tracefs was not mounted: hugelab mounted it at {path} for this trace and unmounts it after"
            )),
        })
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted_here {
            let target = std::ffi::CString::new(self.path).expect("no NUL");
            // SAFETY: a valid path; the mount is ours. A busy tracefs (another tracer opened it
            // meanwhile) stays mounted.
            unsafe { libc::umount2(target.as_ptr(), 0) };
        }
    }
}

/// One decoded-later record: which event, when (CLOCK_MONOTONIC ns), who, and its raw bytes.
#[derive(Debug, Clone)]
pub struct Event {
    pub source: usize,
    pub time_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub raw: Vec<u8>,
}

/// One tracepoint, open on every CPU.
pub struct Source {
    /// `group:event`.
    pub name: String,
    pub format: Format,
    samplers: Vec<Sampler>,
}

/// A requested tracepoint that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Missing {
    pub event: String,
    pub reason: String,
}

pub struct Tracer {
    pub sources: Vec<Source>,
    pub missing: Vec<Missing>,
    /// Records the kernel dropped because a ring buffer was full.
    pub lost: u64,
}

/// Online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-3,6`).
pub fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut v = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
            v.extend(a..=b);
        }
    }
    if v.is_empty() {
        v = (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
    }
    v
}

fn set_filter(s: &Sampler, filter: &str) -> std::io::Result<()> {
    // PERF_EVENT_IOC_SET_FILTER = _IOW('$', 6, char *).
    const SET_FILTER: libc::c_ulong = 0x4008_2406;
    let f = std::ffi::CString::new(filter).map_err(std::io::Error::other)?;
    // SAFETY: a perf event fd we own and a NUL-terminated filter string that outlives the call.
    if unsafe { libc::ioctl(s.as_raw_fd(), SET_FILTER, f.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl Tracer {
    /// Open `events` (`group:event`, with an optional kernel-side filter) on every online CPU.
    /// Events that cannot be opened are listed in `missing` with the reason; the rest work.
    pub fn open(tfs: &Tracefs, events: &[(&str, Option<&str>)]) -> Tracer {
        let root = Root::system();
        let kernel = crate::probe::cpu::kernel_release(&root)
            .ok()
            .flatten()
            .unwrap_or_else(|| "?".into());
        let cpus = online_cpus();
        let mut t = Tracer {
            sources: Vec::new(),
            missing: Vec::new(),
            lost: 0,
        };
        for &(name, filter) in events {
            let path = name.replace(':', "/");
            let format = match tracefs::read_format(&root, tfs.path, &path) {
                Ok(f) => f,
                Err(e) => {
                    t.missing.push(Missing {
                        event: name.into(),
                        reason: format!("not in this kernel ({kernel}): {e}"),
                    });
                    continue;
                }
            };
            let mut samplers = Vec::new();
            let mut failed = None;
            for &cpu in &cpus {
                let opened = Builder::new(Tracepoint::with_id(format.id))
                    .one_cpu(cpu)
                    .any_pid()
                    .include_kernel()
                    .sample_period(1)
                    .sample(SampleFlag::RAW | SampleFlag::TID | SampleFlag::TIME)
                    .clockid(Clock::MONOTONIC)
                    .wakeup_events(64)
                    .build()
                    .and_then(|c| c.sampled(RING));
                match opened {
                    Ok(s) => {
                        if let Some(f) = filter
                            && let Err(e) = set_filter(&s, f)
                        {
                            failed = Some(format!("filter {f:?} refused: {e}"));
                            break;
                        }
                        samplers.push(s);
                    }
                    Err(e) => {
                        failed = Some(match e.raw_os_error() {
                            Some(libc::EACCES) | Some(libc::EPERM) => format!(
                                "{e}: tracepoints need root (or kernel.perf_event_paranoid = -1 and read access to tracefs)"
                            ),
                            _ => e.to_string(),
                        });
                        break;
                    }
                }
            }
            match failed {
                Some(reason) => t.missing.push(Missing {
                    event: name.into(),
                    reason,
                }),
                None => t.sources.push(Source {
                    name: name.into(),
                    format,
                    samplers,
                }),
            }
        }
        t
    }

    /// Start recording.
    pub fn enable(&mut self) -> std::io::Result<()> {
        for s in &mut self.sources {
            for x in &mut s.samplers {
                x.enable()?;
            }
        }
        Ok(())
    }

    /// Stop recording (what is in the buffers can still be drained).
    pub fn disable(&mut self) {
        for s in &mut self.sources {
            for x in &mut s.samplers {
                x.disable().ok();
            }
        }
    }

    /// Wait up to `timeout` for records (one poll on every buffer), then drain every buffer.
    /// Returns the records in time order.
    pub fn poll(&mut self, timeout: Duration) -> Vec<Event> {
        let mut fds: Vec<libc::pollfd> = self
            .sources
            .iter()
            .flat_map(|s| s.samplers.iter())
            .map(|x| libc::pollfd {
                fd: x.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if !fds.is_empty() {
            // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
            unsafe {
                libc::poll(
                    fds.as_mut_ptr(),
                    fds.len() as libc::nfds_t,
                    timeout.as_millis().min(i32::MAX as u128) as i32,
                )
            };
        } else {
            std::thread::sleep(timeout);
        }
        self.drain()
    }

    /// Every record now in the buffers, in time order.
    pub fn drain(&mut self) -> Vec<Event> {
        use perf_event::data::Record;
        let mut out = Vec::new();
        for (i, s) in self.sources.iter_mut().enumerate() {
            for x in &mut s.samplers {
                while let Some(r) = x.next_record() {
                    match r.parse_record() {
                        Ok(Record::Sample(smp)) => {
                            if let (Some(raw), Some(time)) = (smp.raw(), smp.time()) {
                                out.push(Event {
                                    source: i,
                                    time_ns: time,
                                    pid: smp.pid().unwrap_or(0),
                                    tid: smp.tid().unwrap_or(0),
                                    raw: raw.to_vec(),
                                });
                            }
                        }
                        Ok(Record::Lost(l)) => self.lost += l.lost,
                        _ => {}
                    }
                }
            }
        }
        out.sort_by_key(|e| e.time_ns);
        out
    }

    /// The index of source `name`, if it is open.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.sources.iter().position(|s| s.name == name)
    }

    pub fn formats(&self) -> Vec<Format> {
        self.sources.iter().map(|s| s.format.clone()).collect()
    }
}
