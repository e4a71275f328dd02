//! perf counters around a measurement, opened as one group (perf-event2 `Group`) so that every
//! event counts over exactly the same window: a ratio of two of them (dTLB misses per load,
//! walk cycles per cycle) never mixes different multiplexing windows. Counts are scaled by
//! time_enabled / time_running when the PMU had to time-share the group. Hardware events are
//! opened where the PMU has them; where it does not, the set records one reason per event and
//! the software events still count.

use crate::probe::cpu::Cpu;
use crate::probe::pmu::{PerfEvent, explain_open_error};
use perf_event::events::Raw;
use perf_event::{Builder, Counter, Group};
use std::collections::BTreeMap;

pub struct Counters {
    group: Option<Group>,
    open: Vec<(PerfEvent, Counter)>,
    /// Why some requested events could not be opened (said once per set).
    pub unavailable: Vec<(PerfEvent, String)>,
    /// time_running / time_enabled of the group at the last [`Counters::stop`]: below 1 the
    /// PMU time-shared it and the counts were scaled up.
    pub running_fraction: Option<f64>,
}

fn target(b: &mut Builder, inherit: bool, pid: Option<i32>) {
    match pid {
        Some(p) => b.observe_pid(p),
        None => b.observe_self(),
    };
    b.any_cpu().inherit(inherit);
}

fn member(
    event: PerfEvent,
    cpu: &Cpu,
    inherit: bool,
    pid: Option<i32>,
) -> Option<Builder<'static>> {
    let enc = crate::probe::pmu::encoding(event, cpu)?;
    let mut b = Builder::new(Raw::new(enc.config));
    let a = b.attrs_mut();
    a.type_ = enc.type_;
    a.config = enc.config;
    target(&mut b, inherit, pid);
    Some(b)
}

/// Scale a count read while the group ran only part of the time it was enabled.
pub fn scale(count: u64, enabled_ns: u64, running_ns: u64) -> u64 {
    if running_ns == 0 || running_ns >= enabled_ns {
        count
    } else {
        (count as u128 * enabled_ns as u128 / running_ns as u128) as u64
    }
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
        let mut c = Counters {
            group: None,
            open: Vec::new(),
            unavailable: Vec::new(),
            running_fraction: None,
        };
        let mut gb = Group::builder();
        target(&mut gb, inherit, pid);
        let mut group = match gb.build_group() {
            Ok(g) => g,
            Err(e) => {
                let why = explain_open_error(&e, paranoid);
                c.unavailable = events.iter().map(|ev| (*ev, why.clone())).collect();
                return c;
            }
        };
        for &e in events {
            let Some(b) = member(e, cpu, inherit, pid) else {
                c.unavailable
                    .push((e, "no event encoding is known for this CPU model".into()));
                continue;
            };
            match group.add(&b) {
                Ok(counter) => c.open.push((e, counter)),
                Err(err) => c.unavailable.push((e, explain_open_error(&err, paranoid))),
            }
        }
        c.group = Some(group);
        c
    }

    pub fn events(&self) -> Vec<PerfEvent> {
        self.open.iter().map(|(e, _)| *e).collect()
    }

    pub fn start(&mut self) {
        if let Some(g) = &mut self.group {
            let _ = g.reset();
            let _ = g.enable();
        }
    }

    /// Disable the group and read every member from the same window, scaled.
    pub fn stop(&mut self) -> BTreeMap<PerfEvent, u64> {
        let mut out = BTreeMap::new();
        let Some(g) = &mut self.group else {
            return out;
        };
        let _ = g.disable();
        let Ok(data) = g.read() else {
            return out;
        };
        let enabled = data.time_enabled().map_or(0, |d| d.as_nanos() as u64);
        let running = data.time_running().map_or(0, |d| d.as_nanos() as u64);
        self.running_fraction = (enabled > 0).then(|| running as f64 / enabled as f64);
        for (e, counter) in &self.open {
            if let Some(v) = data.get(counter) {
                out.insert(*e, scale(v.value(), enabled, running));
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
        crate::backing::first_touch(&mut v, 4096);
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
    fn one_group_one_window() {
        // Two software events in one group: both count over the same enabled span.
        let mut c = Counters::open(
            &[PerfEvent::PageFaults, PerfEvent::PageFaults],
            &Cpu::default(),
            false,
        );
        assert_eq!(c.events().len(), 2, "{:?}", c.unavailable);
        c.start();
        let mut v = vec![0u8; 16 << 20];
        crate::backing::first_touch(&mut v, 4096);
        c.stop();
        assert!(
            c.running_fraction.is_some_and(|f| f > 0.99),
            "{:?}",
            c.running_fraction
        );
    }

    #[test]
    fn scaling_by_running_time() {
        assert_eq!(scale(100, 10, 10), 100);
        assert_eq!(scale(100, 10, 5), 200);
        assert_eq!(scale(100, 10, 0), 100);
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
