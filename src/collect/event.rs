//! collect: an operator's event during a load (`run --during`, e.g. a Redis BGSAVE): a command
//! run at the same point of every arm's burst against its server, off the load's thread; the
//! server tree's memory around it (the sum of Pss, which counts a page shared by parent and child
//! once) sampled until the processes it made are gone — the copy-on-write its child caused.

pub use crate::model::trial::gathered::EventView;

use crate::probe::process::{Proc, tree};
use std::collections::BTreeSet;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

/// How often the server tree is read while the event's processes live.
const EVERY: Duration = Duration::from_millis(10);
/// How long the event's processes are waited for after the load has ended.
const LINGER: Duration = Duration::from_secs(60);
/// How long a process the event should make may take to appear.
const APPEAR: Duration = Duration::from_secs(2);

/// The event in flight: a thread that waits for its moment, runs it and watches the tree.
pub struct DuringEvent {
    done: Sender<()>,
    thread: std::thread::JoinHandle<EventView>,
}

fn summed_pss(pids: &[i32]) -> u64 {
    pids.iter()
        .filter_map(|p| Proc::system(*p as u32).rollup().ok())
        .map(|r| r.pss)
        .sum()
}

impl DuringEvent {
    /// Start waiting: `command` (through /bin/sh -c) runs `at` after now (the load's start)
    /// unless the load ends first; `server` is the server's pid.
    pub fn start(server: i32, command: String, at: Duration) -> std::io::Result<DuringEvent> {
        let (done, wait) = channel::<()>();
        let start = Instant::now();
        let thread = std::thread::Builder::new()
            .name("hugelab-event".into())
            .spawn(move || match wait.recv_timeout(at) {
                Err(RecvTimeoutError::Timeout) => run(server, &command, start, &wait),
                _ => EventView::default(),
            })?;
        Ok(DuringEvent { done, thread })
    }

    /// The load has ended: what the event did, once the processes it made are gone (at most a
    /// minute more, so the next trial never overlaps them).
    pub fn finish(self) -> EventView {
        let _ = self.done.send(());
        self.thread.join().unwrap_or_default()
    }
}

fn run(server: i32, command: &str, start: Instant, wait: &Receiver<()>) -> EventView {
    let before_pids: BTreeSet<i32> = tree(server).into_iter().collect();
    let mut v = EventView {
        ran: true,
        at_s: start.elapsed().as_secs_f64(),
        before_bytes: summed_pss(&before_pids.iter().copied().collect::<Vec<_>>()),
        ..Default::default()
    };
    let t = Instant::now();
    let out = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .output();
    v.command_s = t.elapsed().as_secs_f64();
    if let Ok(o) = &out {
        v.ok = o.status.success();
        let text = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
        let text = text.trim();
        let cut = text.char_indices().rev().nth(199).map_or(0, |(i, _)| i);
        v.output = text[cut..].to_string();
    }
    v.peak_bytes = v.before_bytes;
    let mut seen: BTreeSet<i32> = BTreeSet::new();
    let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
    let mut ended: Option<Instant> = None;
    loop {
        let pids = tree(server);
        let new: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|p| !before_pids.contains(p))
            .collect();
        let now = Instant::now();
        if !new.is_empty() {
            seen.extend(&new);
            first.get_or_insert(now);
            last = Some(now);
            v.peak_bytes = v.peak_bytes.max(summed_pss(&pids));
        } else if first.is_some() || t.elapsed() > APPEAR {
            break; // the event's processes are gone, or none came
        }
        if ended.is_none() && wait.recv_timeout(EVERY).is_ok() {
            ended = Some(Instant::now());
        } else if ended.is_some() {
            std::thread::sleep(EVERY);
        }
        if ended.is_some_and(|e| e.elapsed() > LINGER) {
            break;
        }
    }
    v.children = seen.len();
    v.child_s = first.zip(last).map_or(0.0, |(f, l)| (l - f).as_secs_f64());
    v
}

/// Redis's own account of its last fork (`INFO stats`: `latest_fork_usec`), seconds.
pub fn redis_fork_s(info: &str) -> Option<f64> {
    info.lines()
        .find_map(|l| l.trim().strip_prefix("latest_fork_usec:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|us| *us > 0.0)
        .map(|us| us / 1e6)
}

/// Redis's own account of its last save's copy-on-write (`INFO persistence`:
/// `rdb_last_cow_size`, measured by its child), bytes.
pub fn redis_cow_bytes(info: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.trim().strip_prefix("rdb_last_cow_size:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_reports_its_last_fork_in_microseconds() {
        let info = "# Stats\r\ntotal_connections_received:3\r\nlatest_fork_usec:7212\r\n";
        assert_eq!(redis_fork_s(info), Some(0.007212));
        assert_eq!(redis_fork_s("latest_fork_usec:0\r\n"), None);
        assert_eq!(
            redis_cow_bytes("rdb_last_cow_size:4194304\r\n"),
            Some(4 << 20)
        );
    }

    #[test]
    fn an_event_in_a_tree_sees_its_child_and_one_after_the_load_runs_nothing() {
        // A shell as the "server"; the event makes it no child, so it ends after APPEAR.
        let mut server = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = server.id() as i32;
        let e = DuringEvent::start(pid, "true".into(), Duration::from_millis(10)).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let v = e.finish();
        assert!(v.ran && v.ok && v.children == 0, "{v:?}");
        assert!(
            v.before_bytes > 0 && v.peak_bytes == v.before_bytes,
            "{v:?}"
        );
        let late = DuringEvent::start(pid, "true".into(), Duration::from_secs(60)).unwrap();
        assert!(!late.finish().ran);
        server.kill().unwrap();
        server.wait().unwrap();
    }
}
