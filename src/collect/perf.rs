//! perf counters around a measurement. Hardware events are opened where the PMU has them;
//! where it does not, the set records one reason and the software events still count.

use crate::probe::cpu::Cpu;
use crate::probe::pmu::{PerfEvent, explain_open_error};
use perf_event::events::Raw;
use std::collections::BTreeMap;

pub struct Counters {
    open: Vec<(PerfEvent, perf_event::Counter)>,
    /// Why some requested events could not be opened (said once per set).
    pub unavailable: Vec<(PerfEvent, String)>,
}

fn build(
    event: PerfEvent,
    cpu: &Cpu,
    inherit: bool,
    pid: Option<i32>,
) -> std::io::Result<perf_event::Counter> {
    let enc = event
        .encoding(cpu)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    let mut b = perf_event::Builder::new(Raw::new(enc.config));
    let a = b.attrs_mut();
    a.type_ = enc.type_;
    a.config = enc.config;
    match pid {
        Some(p) => b.observe_pid(p),
        None => b.observe_self(),
    };
    b.any_cpu().inherit(inherit).enabled(false).build()
}

impl Counters {
    /// Open what can be opened. `inherit` counts threads spawned after opening as well.
    pub fn open(events: &[PerfEvent], cpu: &Cpu, inherit: bool) -> Counters {
        Counters::open_for(events, cpu, inherit, None)
    }

    /// Count another process (`pid`) and, with `inherit`, the children it starts afterwards.
    pub fn open_for(events: &[PerfEvent], cpu: &Cpu, inherit: bool, pid: Option<i32>) -> Counters {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let mut open = Vec::new();
        let mut unavailable = Vec::new();
        for &e in events {
            match build(e, cpu, inherit, pid) {
                Ok(c) => open.push((e, c)),
                Err(err) => {
                    let why = if e.encoding(cpu).is_none() {
                        "no event encoding is known for this CPU model".to_string()
                    } else {
                        explain_open_error(&err, paranoid)
                    };
                    unavailable.push((e, why));
                }
            }
        }
        Counters { open, unavailable }
    }

    pub fn events(&self) -> Vec<PerfEvent> {
        self.open.iter().map(|(e, _)| *e).collect()
    }

    pub fn start(&mut self) {
        for (_, c) in &mut self.open {
            let _ = c.reset();
            let _ = c.enable();
        }
    }

    pub fn stop(&mut self) -> BTreeMap<PerfEvent, u64> {
        let mut out = BTreeMap::new();
        for (e, c) in &mut self.open {
            let _ = c.disable();
            if let Ok(v) = c.read() {
                out.insert(*e, v);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_faults_are_counted() {
        let mut c = Counters::open(&[PerfEvent::PageFaults], &Cpu::default(), false);
        assert!(c.unavailable.is_empty(), "{:?}", c.unavailable);
        c.start();
        let mut v = vec![0u8; 64 << 20];
        crate::workload::kernels::first_touch(&mut v, 4096);
        let r = c.stop();
        assert!(r[&PerfEvent::PageFaults] >= 1000, "{r:?}");
    }

    #[test]
    fn counts_another_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let mut c = Counters::open_for(
            &[PerfEvent::PageFaults],
            &Cpu::default(),
            true,
            Some(child.id() as i32),
        );
        assert!(c.unavailable.is_empty(), "{:?}", c.unavailable);
        c.start();
        child.wait().unwrap();
        assert!(c.stop().contains_key(&PerfEvent::PageFaults));
    }

    #[test]
    fn unsupported_hardware_is_reported_not_fatal() {
        // On a machine with a PMU this opens; on one without, it must say why, once per event.
        let c = Counters::open(
            &[
                PerfEvent::Cycles,
                PerfEvent::DtlbLoadMisses,
                PerfEvent::PageFaults,
            ],
            &Cpu::default(),
            false,
        );
        assert!(c.events().contains(&PerfEvent::PageFaults));
        for (e, why) in &c.unavailable {
            assert!(!why.is_empty(), "{e:?}");
        }
        assert_eq!(c.events().len() + c.unavailable.len(), 3);
    }
}
