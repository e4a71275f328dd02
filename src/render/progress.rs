//! Progress of a long command, through one observer: a progress bar with elapsed time and ETA
//! on a terminal (indicatif), plain lines when stderr is not a terminal, nothing with --quiet.
//! Measuring code only calls the [`Observer`]; it never prints.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// What a command reports as it goes.
pub trait Observer {
    /// A new phase of `total` steps (`None`: open-ended, e.g. a sequential run).
    fn phase(&mut self, _name: &str, _total: Option<u64>) {}
    /// One step of the phase done; `msg` says what runs next.
    fn step(&mut self, _msg: &str) {}
    /// What runs now, without a step.
    fn message(&mut self, _msg: &str) {}
    /// The phase has reached `done` of its total (time-based phases, e.g. seconds traced).
    fn set(&mut self, _done: u64) {}
    /// A line that stays on screen (a FLAGGED arm, a note).
    fn note(&mut self, _msg: &str) {}
    fn done(&mut self) {}
}

/// Reports nothing (tests).
pub struct Silent;
impl Observer for Silent {}

/// On a stderr that is not a terminal (a log), at most one progress line per this long.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Progress on stderr: a bar on a terminal; otherwise a line per phase and at most one line of
/// progress every [`LOG_EVERY`] (with the steps done), so a log is not flooded.
pub struct Progress {
    prefix: String,
    bar: Option<ProgressBar>,
    tty: bool,
    quiet: bool,
    /// Not a terminal: the phase's steps done and total, and when a line was last written.
    done: u64,
    total: Option<u64>,
    last: Option<Instant>,
    kind: String,
    /// The last progress line held back: written when the phase ends, so a log has each phase's
    /// last state.
    pending: Option<String>,
    every: Duration,
    /// The clock the log's interval is measured on (`Instant::now`; a test's own clock).
    clock: Box<dyn Fn() -> Instant>,
    sink: Box<dyn FnMut(&str)>,
}

impl Progress {
    pub fn stderr(prefix: &str, quiet: bool) -> Progress {
        Progress::to(
            prefix,
            quiet,
            std::io::stderr().is_terminal(),
            (LOG_EVERY, Instant::now),
            |l| crate::eprintln_safe!("{l}"),
        )
    }

    /// Progress written to `sink` (a line at a time), as on a terminal or not; on a log at most
    /// one line of the same kind per `every`, as `clock` tells the time.
    pub fn to(
        prefix: &str,
        quiet: bool,
        tty: bool,
        (every, clock): (Duration, impl Fn() -> Instant + 'static),
        sink: impl FnMut(&str) + 'static,
    ) -> Progress {
        Progress {
            prefix: prefix.to_string(),
            bar: None,
            tty,
            quiet,
            done: 0,
            total: None,
            last: None,
            kind: String::new(),
            pending: None,
            every,
            clock: Box::new(clock),
            sink: Box::new(sink),
        }
    }

    fn line(&mut self, msg: &str) {
        if !self.quiet {
            let l = format!("{}: {msg}", self.prefix);
            (self.sink)(&l);
        }
    }

    /// The progress line held back, if any, now.
    fn flush(&mut self) {
        if let Some(msg) = self.pending.take() {
            self.last = None;
            self.log_line(&msg);
        }
    }

    /// A progress line for a log, unless one was written less than [`LOG_EVERY`] ago about the
    /// same thing: its first word that is not a count or a size (`block`, `round`, `pretouch`,
    /// …), so that `64M: pretouch round 1/5` after `64M: round 5/5` is something new.
    fn log_line(&mut self, msg: &str) {
        let kind = msg
            .split_whitespace()
            .find(|w| !w.starts_with(|c: char| c.is_ascii_digit()))
            .unwrap_or("")
            .to_string();
        let now = (self.clock)();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < self.every)
            && kind == self.kind
        {
            self.pending = Some(msg.to_string());
            return;
        }
        self.pending = None;
        self.last = Some(now);
        self.kind = kind;
        let count = match self.total {
            Some(t) => format!("{}/{t} · ", self.done),
            None if self.done > 0 => format!("{} done · ", self.done),
            None => String::new(),
        };
        self.line(&format!("{count}{msg}"));
    }
}

impl Observer for Progress {
    fn phase(&mut self, name: &str, total: Option<u64>) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        self.flush();
        if self.quiet || !self.tty {
            (self.done, self.total, self.last) = (0, total, None);
            self.line(name);
            // The phase's first message follows it at once.
            return;
        }
        let (bar, template) = match total {
            Some(n) => (
                ProgressBar::new(n),
                "{prefix} {elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta} · {msg}",
            ),
            None => (
                ProgressBar::new_spinner(),
                "{prefix} {elapsed_precise} {spinner} {pos} done · {msg}",
            ),
        };
        bar.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(format!("{} {name}", self.prefix));
        bar.enable_steady_tick(Duration::from_millis(250));
        self.bar = Some(bar);
    }

    fn step(&mut self, msg: &str) {
        match &self.bar {
            Some(b) => {
                b.inc(1);
                if !msg.is_empty() {
                    b.set_message(msg.to_string());
                }
            }
            None => {
                self.done += 1;
                if !msg.is_empty() {
                    self.log_line(msg);
                }
            }
        }
    }

    fn set(&mut self, done: u64) {
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }

    fn message(&mut self, msg: &str) {
        match &self.bar {
            Some(b) => b.set_message(msg.to_string()),
            None => self.log_line(msg),
        }
    }

    fn note(&mut self, msg: &str) {
        // Within 100 columns, continuation lines indented.
        let msg = msg
            .lines()
            .flat_map(|l| super::summary::wrap_hanging(l, 2))
            .collect::<Vec<_>>()
            .join("\n");
        match &self.bar {
            Some(b) => b.println(msg),
            // A note stays even with --quiet: it is not progress but something to read.
            None => (self.sink)(&msg),
        }
    }

    fn done(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        self.flush();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[test]
    fn a_log_gets_a_line_per_phase_and_not_one_per_step() {
        let lines = Rc::new(RefCell::new(Vec::<String>::new()));
        let l = lines.clone();
        // The test's own clock: it moves only when the test moves it.
        let start = Instant::now();
        let secs = Rc::new(std::cell::Cell::new(0u64));
        let s = secs.clone();
        let clock = move || start + Duration::from_secs(s.get());
        let every = Duration::from_secs(10);
        let mut p = Progress::to("hugelab bench", false, false, (every, clock), move |s| {
            l.borrow_mut().push(s.to_string())
        });
        p.phase("tlb", Some(300));
        for k in 0..300 {
            p.message(&format!("round {}/12", k % 12 + 1));
            p.step("");
        }
        // Something else begins: said at once, once. A size before the words (as `bench`
        // writes them) is not the kind: `64M: round` is still a round.
        p.message("64M: round 12/12");
        p.message("64M: pretouch round 1/5");
        p.message("pretouch round 2/5");
        // Ten seconds later, the next line of the same kind is written.
        secs.set(10);
        p.message("pretouch round 3/5");
        p.message("pretouch round 4/5");
        p.note("FLAGGED x: a note always shows");
        p.phase("results", None);
        let got = lines.borrow().clone();
        // The phase, its first progress line, the first of something else, one more after the
        // interval, the note, the phase's last state as it ends, the next phase: not 300 rounds.
        assert_eq!(
            got,
            [
                "hugelab bench: tlb",
                "hugelab bench: 0/300 · round 1/12",
                "hugelab bench: 300/300 · 64M: pretouch round 1/5",
                "hugelab bench: 300/300 · pretouch round 3/5",
                "FLAGGED x: a note always shows",
                "hugelab bench: 300/300 · pretouch round 4/5",
                "hugelab bench: results",
            ]
        );
    }
}
