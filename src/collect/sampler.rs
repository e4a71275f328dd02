//! Memory evidence of a running child, gathered on a thread of its own so that the thread
//! timing the trial only waits. Two sources, on a schedule that is the same for every arm:
//!
//! * cheap reads of `/proc/PID/status` (RSS and hugetlb from the mm's counters: no page-table
//!   walk, no mmap lock) every `every`;
//! * the page-table walk of each member's `/proc/PID/smaps` (which takes the child's mmap lock
//!   and costs more the more 4 KiB pages it maps, so it disturbs a 4K arm more than a huge-page
//!   arm; the same walk as `smaps_rollup`, per region, so that the walk at the peak says which
//!   process and region holds what: `analyze::flagged` judges the arm from it) only
//!   at `4·every`, `8·every`, `16·every`, … — a geometric back-off of `backoff_walks` steps
//!   (80 ms … 41 s by default), then once per that last offset (every 41 s), so that its share of
//!   a trial's time shrinks as the trial grows and a trial of minutes (a VM booting and touching
//!   its RAM) is still seen at its peak.

pub use crate::model::trial::gathered::{MemorySamples, Schedule, ThpWalk};

use crate::collect::server::{GroupMemory, read_pids};
use crate::probe::process::group_members;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

/// Anonymous and shared-memory THP of a view (what THP `enabled`/`shmem_enabled` and
/// MADV_COLLAPSE govern; file THP of the page cache is not counted).
pub fn anon_thp(m: &GroupMemory) -> u64 {
    m.anon_huge + m.shmem_pmd
}

/// (VmRSS, HugetlbPages) of one /proc/PID/status text, bytes.
fn status_totals(text: &str) -> (u64, u64) {
    let kb = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (kb("VmRSS:"), kb("HugetlbPages:"))
}

fn sum<T: Default + Copy>(
    pids: &[i32],
    file: &str,
    f: impl Fn(&str) -> Option<T>,
    add: impl Fn(T, T) -> T,
) -> Option<T> {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/{file}")).ok())
        .filter_map(|t| f(&t))
        .reduce(add)
}

/// Sample group `pgid` (started at `start`) until `stop` delivers or disconnects.
pub fn sample(pgid: i32, start: Instant, schedule: Schedule, stop: Receiver<()>) -> MemorySamples {
    let mut m = MemorySamples::default();
    if !schedule.enabled {
        let _ = stop.recv();
        return m;
    }
    let mut next_walk = 0u32;
    let mut next_cheap = start + schedule.every;
    let mut members = vec![pgid];
    let (mut weighted, mut weight) = (0.0f64, 0.0f64);
    let mut last_walk: Option<(Instant, f64)> = None;
    // The largest resident memory a walk saw, and the hugetlb share at the largest a status
    // read saw: a short-lived peak (a VM preallocating 1 GiB pages, then quitting) can fall
    // between two walks.
    let mut walk_peak = 0u64;
    let mut status_peak: (u64, f64) = (0, 0.0);
    let mut most_thp: Option<ThpWalk> = None;
    loop {
        let walk_at = start + schedule.walk_time(next_walk);
        let due = walk_at.min(next_cheap);
        match stop.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        if now >= walk_at {
            next_walk += 1;
            members = group_members(pgid);
            let t0 = Instant::now();
            let view = read_pids(&members);
            m.walk_ns += t0.elapsed().as_nanos() as u64;
            m.walks += 1;
            if view.processes > 0 {
                let (rss, anon, htlb) = (view.rss, view.anon_huge, view.hugetlb_total());
                let resident = rss + htlb;
                m.peak_anon_huge = m.peak_anon_huge.max(anon);
                m.peak_hugetlb = m.peak_hugetlb.max(htlb);
                if resident > 0 {
                    let cov = (view.thp() + htlb) as f64 / resident as f64;
                    if let Some((t, c)) = last_walk {
                        let dt = now.duration_since(t).as_secs_f64();
                        weighted += c * dt;
                        weight += dt;
                    }
                    last_walk = Some((now, cov));
                    m.max_coverage = Some(m.max_coverage.map_or(cov, |c| c.max(cov)));
                    let thp = anon_thp(&view);
                    if thp > most_thp.as_ref().map_or(0, |w| anon_thp(&w.memory)) {
                        most_thp = Some(ThpWalk {
                            at_s: now.duration_since(start).as_secs_f64(),
                            memory: view.clone(),
                        });
                    }
                    if m.coverage_at_peak.is_none() || resident >= walk_peak {
                        m.coverage_at_peak = Some(cov);
                        walk_peak = resident;
                        m.at_peak = Some(view);
                        m.gauges_at_peak = super::huge_gauges(&crate::probe::Root::system());
                    }
                    m.peak_rss = m.peak_rss.max(resident);
                }
            }
        } else {
            next_cheap += schedule.every;
            if m.samples % 10 == 9 {
                members = group_members(pgid);
            }
            if let Some((rss, htlb)) = sum(
                &members,
                "status",
                |t| Some(status_totals(t)),
                |a, b| (a.0 + b.0, a.1 + b.1),
            ) {
                m.samples += 1;
                if rss + htlb > status_peak.0 {
                    status_peak = (rss + htlb, htlb as f64 / (rss + htlb) as f64);
                }
                m.peak_rss = m.peak_rss.max(rss + htlb);
                m.peak_hugetlb = m.peak_hugetlb.max(htlb);
            }
            // A slow read (a busy machine) must not make the schedule try to catch up.
            if next_cheap < Instant::now() {
                next_cheap = Instant::now() + schedule.every;
            }
        }
    }
    if let Some((t, c)) = last_walk {
        weighted += c * t.elapsed().as_secs_f64();
        weight += t.elapsed().as_secs_f64();
    }
    m.coverage_at_peak = coverage_at_peak(m.coverage_at_peak, walk_peak, status_peak);
    let at_peak_thp = m.at_peak.as_ref().map_or(0, anon_thp);
    m.most_thp = most_thp.filter(|w| anon_thp(&w.memory) > at_peak_thp);
    if weight > 0.0 {
        m.mean_huge_coverage = Some(weighted / weight);
    } else if let Some((_, c)) = last_walk {
        m.mean_huge_coverage = Some(c);
    }
    m
}

/// Huge coverage at the peak: the walk's, unless status reads saw a peak more than 5% larger
/// than any walk did with a larger hugetlb share there (a lower bound at that peak: status
/// shows hugetlb, not THP).
pub fn coverage_at_peak(walk: Option<f64>, walk_peak: u64, status: (u64, f64)) -> Option<f64> {
    let (status_peak, share) = status;
    let missed = status_peak as f64 > walk_peak as f64 * 1.05;
    match walk {
        Some(c) if missed && share > c => Some(share),
        None if status_peak > 0 => Some(share),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn walks_back_off_geometrically_then_keep_the_last_period() {
        let s = Schedule::default();
        let w: Vec<Duration> = (0..14).map(|k| s.walk_time(k)).collect();
        assert_eq!(w[0], Duration::from_millis(80));
        assert_eq!(w[1], Duration::from_millis(160));
        assert!(w[..10].windows(2).all(|p| p[1] == p[0] * 2));
        assert_eq!(w[9], Duration::from_millis(40_960));
        // Then every 40.96 s: a trial of minutes is still walked near its end.
        assert!(w[9..].windows(2).all(|p| p[1] - p[0] == w[9]));
        // A 10 s trial is walked 7 times (80 ms … 5.12 s), not 400 times as at a fixed 25 ms;
        // a 7-minute one (a VM booting and touching 1 GiB) 19 times, the last at 6.8 minutes.
        let within = |t: u64| w.iter().filter(|d| **d <= Duration::from_secs(t)).count();
        assert_eq!(within(10), 7);
        let w: Vec<Duration> = (0..20).map(|k| s.walk_time(k)).collect();
        assert_eq!(
            w.iter().filter(|d| **d <= Duration::from_secs(420)).count(),
            19
        );
    }

    #[test]
    fn a_peak_between_walks_is_taken_from_status_reads() {
        // 1 GiB of hugetlb seen only by status reads: the walks saw 30 MiB of 4 KiB.
        let gib = 1u64 << 30;
        assert_eq!(
            coverage_at_peak(Some(0.0), 30 << 20, (gib + (30 << 20), 0.97)),
            Some(0.97)
        );
        // THP seen by a walk near the peak stays (status cannot see THP).
        assert_eq!(
            coverage_at_peak(Some(0.96), gib, (gib + (8 << 20), 0.0)),
            Some(0.96)
        );
        // A walk far below the peak with THP: status shares no hugetlb, so the walk stays.
        assert_eq!(coverage_at_peak(Some(0.9), gib / 2, (gib, 0.0)), Some(0.9));
        assert_eq!(coverage_at_peak(None, 0, (gib, 0.5)), Some(0.5));
        assert_eq!(coverage_at_peak(None, 0, (0, 0.0)), None);
    }

    #[test]
    fn parses_status() {
        assert_eq!(
            status_totals("Name:\tx\nVmRSS:\t  2048 kB\nHugetlbPages:\t 4096 kB\n"),
            (2 << 20, 4 << 20)
        );
    }

    #[test]
    fn samples_a_live_child_and_stops_on_request() {
        let child = std::process::Command::new("sleep")
            .arg("0.5")
            .spawn()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let start = Instant::now();
        let pid = child.id() as i32;
        let h = std::thread::spawn(move || sample(pid, start, Schedule::default(), rx));
        std::thread::sleep(Duration::from_millis(300));
        tx.send(()).unwrap();
        let m = h.join().unwrap();
        let mut child = child;
        child.wait().unwrap();
        assert!(m.samples >= 3, "{m:?}");
        assert!(m.walks >= 1 && m.peak_rss > 0, "{m:?}");
        let off = {
            let (tx, rx) = std::sync::mpsc::channel();
            drop(tx);
            sample(pid, start, Schedule::off(), rx)
        };
        assert_eq!(off, MemorySamples::default());
    }
}
