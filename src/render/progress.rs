//! Progress of a long command, through one observer: a progress bar with elapsed time and ETA
//! on a terminal (indicatif), plain lines when stderr is not a terminal, nothing with --quiet.
//! Measuring code only calls the [`Observer`]; it never prints.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

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

/// Progress on stderr: a bar on a terminal, lines otherwise.
pub struct Progress {
    prefix: String,
    bar: Option<ProgressBar>,
    tty: bool,
    quiet: bool,
}

impl Progress {
    pub fn stderr(prefix: &str, quiet: bool) -> Progress {
        Progress {
            prefix: prefix.to_string(),
            bar: None,
            tty: std::io::stderr().is_terminal(),
            quiet,
        }
    }

    fn line(&self, msg: &str) {
        if !self.quiet {
            crate::eprintln_safe!("{}: {msg}", self.prefix);
        }
    }
}

impl Observer for Progress {
    fn phase(&mut self, name: &str, total: Option<u64>) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        if self.quiet || !self.tty {
            self.line(name);
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
            None if !msg.is_empty() => self.line(msg),
            None => {}
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
            None => self.line(msg),
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
            None => crate::eprintln_safe!("{msg}"),
        }
    }

    fn done(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
}
