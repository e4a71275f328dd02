//! The child's stdout and stderr, read on the measuring thread whenever `poll` says they have
//! data — no reader threads to start and wake — and capped: the head and the tail of each stream
//! are kept, the middle of a huge one dropped (and said so).

use std::io::Read;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Keep at most this much of the head and of the tail of each output stream: a metric printed
/// at the start or at the end of a long log is kept, the middle of a huge one is dropped.
pub(super) const OUTPUT_CAP: usize = 2 << 20;

/// The child's stdout and stderr, read on the measuring thread whenever `poll` says they have
/// data: no reader threads to start and wake.
pub(super) struct Output {
    out: Option<std::process::ChildStdout>,
    err: Option<std::process::ChildStderr>,
    bufs: [Vec<u8>; 2],
    /// Past the head's cap: the last bytes, and how many were dropped in between.
    tails: [std::collections::VecDeque<u8>; 2],
    dropped: [u64; 2],
}

impl Output {
    pub(super) fn new(
        out: Option<std::process::ChildStdout>,
        err: Option<std::process::ChildStderr>,
    ) -> Output {
        Output {
            out,
            err,
            bufs: [Vec::new(), Vec::new()],
            tails: Default::default(),
            dropped: [0, 0],
        }
    }

    pub(super) fn fds(&self) -> [i32; 2] {
        [
            self.out.as_ref().map_or(-1, |p| p.as_raw_fd()),
            self.err.as_ref().map_or(-1, |p| p.as_raw_fd()),
        ]
    }

    pub(super) fn open(&self) -> bool {
        self.out.is_some() || self.err.is_some()
    }

    /// Read what is there from stream `i` (0 stdout, 1 stderr); close it at end of file.
    pub(super) fn read(&mut self, i: usize) {
        let mut chunk = [0u8; 65536];
        let r = match i {
            0 => self.out.as_mut().map(|p| p.read(&mut chunk)),
            _ => self.err.as_mut().map(|p| p.read(&mut chunk)),
        };
        match r {
            Some(Ok(n)) if n > 0 => {
                let buf = &mut self.bufs[i];
                // Past the cap, keep draining (the child never blocks on a full pipe) into a
                // tail of the same size.
                let keep = n.min(OUTPUT_CAP.saturating_sub(buf.len()));
                buf.extend_from_slice(&chunk[..keep]);
                let tail = &mut self.tails[i];
                tail.extend(&chunk[keep..n]);
                let over = tail.len().saturating_sub(OUTPUT_CAP);
                tail.drain(..over);
                self.dropped[i] += over as u64;
            }
            Some(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            _ => {
                if i == 0 {
                    self.out = None
                } else {
                    self.err = None
                }
            }
        }
    }

    /// After the exit: read to end of file, for at most `limit` (a process outside the group
    /// may hold a pipe open).
    pub(super) fn drain(&mut self, limit: Duration) {
        let until = Instant::now() + limit;
        while self.open() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let fds = self.fds();
            let mut p = fds.map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            // SAFETY: `p` is a valid array of pollfd of the length given.
            let n = unsafe { libc::poll(p.as_mut_ptr(), 2, ms_ceil(left)) };
            if n <= 0 {
                continue;
            }
            for (i, q) in p.iter().enumerate() {
                if q.revents != 0 {
                    self.read(i);
                }
            }
        }
    }

    pub(super) fn into_strings(self) -> (String, String) {
        let [o, e] = self.bufs;
        let [to, te] = self.tails;
        let [dout, derr] = self.dropped;
        let join = |head: Vec<u8>, tail: std::collections::VecDeque<u8>, dropped: u64| {
            let mut s = String::from_utf8_lossy(&head).into_owned();
            if !tail.is_empty() {
                if dropped > 0 {
                    s.push_str(&format!(
                        "\n[hugelab: {dropped} bytes of output dropped here]\n"
                    ));
                }
                s.push_str(&String::from_utf8_lossy(&Vec::from(tail)));
            }
            s
        };
        (join(o, to, dout), join(e, te, derr))
    }
}

/// A duration as poll's millisecond timeout, rounded up so a deadline is never polled early.
pub(super) fn ms_ceil(d: Duration) -> i32 {
    d.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32
}
