//! The server's output, read on a thread of its own: the head, the last lines, and the moment
//! the readiness line was printed.

use regex::Regex;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// The server's output: the head and the last lines, and when the readiness line was seen.
#[derive(Debug, Default)]
pub(super) struct Log {
    pub(super) head: String,
    pub(super) tail: VecDeque<String>,
    pub(super) ready_at: Option<Instant>,
    pub(super) closed: bool,
}

const HEAD_BYTES: usize = 256 << 10;
const TAIL_LINES: usize = 200;

pub(super) type Shared = Arc<(Mutex<Log>, Condvar)>;

pub(super) fn read_log(pipe: std::io::PipeReader, ready: Option<Regex>, shared: Shared) {
    let mut r = BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line).unwrap_or(0);
        let (lock, cv) = &*shared;
        let mut log = lock.lock().unwrap_or_else(|p| p.into_inner());
        if n == 0 {
            log.closed = true;
            cv.notify_all();
            return;
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        if log.ready_at.is_none() && ready.as_ref().is_some_and(|re| re.is_match(&text)) {
            log.ready_at = Some(Instant::now());
            cv.notify_all();
        }
        if log.head.len() + text.len() < HEAD_BYTES {
            log.head.push_str(&text);
            log.head.push('\n');
        }
        if log.tail.len() == TAIL_LINES {
            log.tail.pop_front();
        }
        log.tail.push_back(text);
    }
}
