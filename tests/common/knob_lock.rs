//! The knob lock: one test at a time, in any test binary, changes global kernel settings. What
//! a test writes to a setting itself goes through [`KnobLock::set`], which journals the value it
//! replaces before writing: a test killed holding the lock (SIGKILL, a runner stopped mid-run)
//! never restores, and the next test to take the lock puts its settings back before it starts.
//! (A CI once failed 13 tests on a 2 MiB pool of 6846 pages that a killed run had left.)

use std::path::PathBuf;
use std::sync::Mutex;

/// Held while a test changes global settings. The tests holding it run one at a time, so its
/// holding times add up to the suite's shortest possible wall time: each is logged on release
/// (`knob_lock_log`), and `.ci/run` prints the total and the longest holders.
pub struct KnobLock {
    _file: std::fs::File,
    since: std::time::Instant,
    /// How long this holder waited for the lock: a test thread idle while another holds it.
    waited: f64,
    /// The settings this holder wrote, each with the value it replaced (also in the journal).
    written: Mutex<Vec<(String, String)>>,
}

fn lock_dir() -> PathBuf {
    std::env::temp_dir()
}

/// The settings the holder wrote and the values to put back: on disk before each write.
fn journal() -> PathBuf {
    lock_dir().join("hugelab-test-knobs.journal")
}

pub fn knob_lock() -> KnobLock {
    let asked = std::time::Instant::now();
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_dir().join("hugelab-test-knobs.lock"))
        .expect("lock file");
    // SAFETY: flock on a valid open file descriptor.
    let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock");
    // A journal here is a holder's that died before putting its settings back.
    put_back();
    KnobLock {
        _file: f,
        since: std::time::Instant::now(),
        waited: asked.elapsed().as_secs_f64(),
        written: Mutex::new(Vec::new()),
    }
}

/// A setting's value as it is written back: the selected word of a sysfs choice
/// (`always [madvise] never`), else the file's text.
fn value_of(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(text.trim())
        .to_owned()
}

/// Writes back every value the journal holds, last written first, and removes it. Says what it
/// put back: a journal found at `knob_lock` means an earlier test was killed holding the lock.
fn put_back() {
    let Ok(text) = std::fs::read_to_string(journal()) else {
        return;
    };
    let entries: Vec<(String, String)> = serde_json::from_str(&text).unwrap_or_default();
    for (path, value) in entries.iter().rev() {
        if let Err(e) = std::fs::write(path, value) {
            eprintln!("knob lock: could not put {value} back in {path}: {e}");
        }
    }
    let _ = std::fs::remove_file(journal());
}

impl KnobLock {
    /// Writes `value` to the setting at `path` (a sysfs or procfs file), journaling the value it
    /// replaces first: put back when the lock is released, or by the next holder should this
    /// process die first.
    pub fn set(&self, path: &str, value: &str) {
        let mut written = self.written.lock().unwrap();
        if !written.iter().any(|(p, _)| p == path) {
            written.push((path.to_owned(), value_of(path)));
            let file = std::fs::File::create(journal()).expect("the knob journal opens");
            serde_json::to_writer(&file, &*written).expect("the knob journal is written");
            file.sync_all().expect("the knob journal reaches the disk");
        }
        std::fs::write(path, value).unwrap_or_else(|e| panic!("writing {value} to {path}: {e}"));
    }
}

/// Where each release of the knob lock is logged: the seconds it was held, the seconds its
/// holder waited for it, and the test (the thread's name, which libtest sets to the test's
/// path).
fn knob_lock_log() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("knob-lock.log")
}

impl Drop for KnobLock {
    fn drop(&mut self) {
        use std::io::Write;
        put_back();
        let held = self.since.elapsed().as_secs_f64();
        let test = std::thread::current().name().unwrap_or("?").to_owned();
        // A log that cannot be written costs only the summary, never the test.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(knob_lock_log())
        {
            let _ = writeln!(f, "{held:.1} {:.1} {test}", self.waited);
        }
    }
}
