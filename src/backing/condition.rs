//! backing: the machine states a run measures in (`run --condition`): `clean` (as found),
//! `fragmented` (free memory in pieces no 2 MiB page can be made of without compaction),
//! `pressure=SIZE` (only SIZE of memory left to the workload), `cache` (free memory filled with
//! clean page cache that a huge-page fault must reclaim first). A [`Held`] condition is this
//! process's own memory: prepared once, brought back before every trial so that one trial cannot
//! repair the next one's condition, released on drop — and by the kernel if hugelab dies.

pub use crate::model::arm::condition::{Condition, Restored};

use super::{Backing, FRAGMENT_STRIDE, Region};
use crate::probe::Root;
use crate::units::Bytes;
use std::io::{Error, ErrorKind};
use std::time::Instant;

const TWO_MIB: u64 = 2 << 20;
/// Memory a condition never takes: MemAvailable stays above this while it is prepared.
const FLOOR: u64 = 512 << 20;
/// Memory is taken in chunks of at most this size, MemAvailable read before each.
const CHUNK: u64 = 1 << 30;
/// `pressure`: how far MemAvailable may stray from the headroom before it is corrected.
const SLACK: u64 = 32 << 20;

/// How a condition was prepared.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Prepared {
    pub seconds: f64,
    /// Anonymous memory this process holds for it.
    pub held_bytes: u64,
    /// Page cache it filled (`cache`).
    pub cache_bytes: u64,
}

/// A condition this process holds.
pub struct Held {
    condition: Condition,
    /// `fragmented`: 4 KiB-page regions keeping one page per stride; `pressure`: chunks.
    regions: Vec<Region>,
    /// `fragmented`: the 2 MiB blocks taken whole.
    taken: Vec<Region>,
    /// `fragmented`: kept pages given back so far, counted from the last region's end.
    released: usize,
    cache: Option<CacheFile>,
}

fn mem_available(root: &Root) -> std::io::Result<u64> {
    crate::probe::meminfo::read(root)
        .ok()
        .flatten()
        .and_then(|m| m.mem_available)
        .ok_or_else(|| Error::other("MemAvailable is not readable in /proc/meminfo"))
}

fn mem_free(root: &Root) -> std::io::Result<u64> {
    crate::probe::meminfo::read(root)
        .ok()
        .flatten()
        .and_then(|m| m.mem_free)
        .ok_or_else(|| Error::other("MemFree is not readable in /proc/meminfo"))
}

/// At most this many rounds of taking the blocks that came free before a trial.
const RETAKE_ROUNDS: usize = 16;

/// Free 2 MiB blocks an ordinary allocation can take (the DMA zone's are kept for DMA).
fn free_blocks(root: &Root) -> std::io::Result<u64> {
    let zones = crate::probe::buddyinfo::read(root).map_err(Error::other)?;
    Ok(zones
        .iter()
        .filter(|z| z.zone != "DMA")
        .map(|z| z.blocks_available(9))
        .sum())
}

/// Map and fault in up to `want` bytes of `backing`, in chunks, never taking MemAvailable
/// below the floor. Returns the regions and the bytes they hold.
fn take(root: &Root, want: u64, backing: Backing) -> std::io::Result<(Vec<Region>, u64)> {
    let (mut regions, mut got) = (Vec::new(), 0);
    while got < want {
        let room = mem_available(root)?.saturating_sub(FLOOR);
        let size = CHUNK.min(want - got).min(room) / TWO_MIB * TWO_MIB;
        if size == 0 {
            break;
        }
        let mut r = Region::map(size, backing)?;
        r.dont_fork()?;
        r.populate()?;
        got += size;
        regions.push(r);
    }
    Ok((regions, got))
}

impl Held {
    /// Bring the machine into `condition` (nothing for `clean`).
    pub fn prepare(condition: &Condition, root: &Root) -> std::io::Result<(Held, Prepared)> {
        let t = Instant::now();
        let mut h = Held {
            condition: condition.clone(),
            regions: Vec::new(),
            taken: Vec::new(),
            released: 0,
            cache: None,
        };
        match *condition {
            Condition::Clean => {}
            Condition::Fragmented { fraction, .. } => {
                let want = mem_available(root)?.saturating_sub(FLOOR) as f64 * fraction;
                let (mut regions, _) = take(root, want as u64, Backing::Base)?;
                for r in &mut regions {
                    r.fragment()?;
                }
                h.regions = regions;
                // What is left free is the regions' pieces: the blocks still whole are taken
                // and nothing is given back for them (a kept page given back for each, as
                // between trials, would free the pieces' blocks whole again, and round after
                // round every block would be taken: with a FRACTION below 1 that was all of
                // memory).
                h.retake(root, &mut Restored::default(), false)?;
            }
            Condition::Pressure { headroom } => {
                let avail = mem_available(root)?;
                if avail <= headroom + SLACK {
                    return Err(Error::new(
                        ErrorKind::InvalidInput,
                        format!(
                            "--condition pressure={}: MemAvailable is only {} now; give a smaller headroom",
                            Bytes(headroom),
                            Bytes(avail)
                        ),
                    ));
                }
                h.restore(root)?;
            }
            Condition::Cache { fraction } => {
                let size = mem_free(root)?.saturating_sub(FLOOR) as f64 * fraction;
                h.cache = Some(CacheFile::fill((size as u64) / TWO_MIB * TWO_MIB)?);
            }
        }
        let prepared = Prepared {
            seconds: t.elapsed().as_secs_f64(),
            held_bytes: h.held_bytes(),
            cache_bytes: h.cache.as_ref().map_or(0, |c| c.len),
        };
        Ok((h, prepared))
    }

    pub fn condition(&self) -> &Condition {
        &self.condition
    }

    /// Anonymous memory held now (kept 4 KiB pages count one page per stride).
    pub fn held_bytes(&self) -> u64 {
        let taken: u64 = self.taken.iter().map(|r| r.mapped_len() as u64).sum();
        match self.condition {
            Condition::Fragmented { .. } => {
                let kept: usize = self
                    .regions
                    .iter()
                    .map(|r| r.mapped_len() / FRAGMENT_STRIDE)
                    .sum();
                taken + (kept.saturating_sub(self.released) as u64) * 4096
            }
            _ => {
                taken
                    + self
                        .regions
                        .iter()
                        .map(|r| r.mapped_len() as u64)
                        .sum::<u64>()
            }
        }
    }

    /// Bring the condition back before a trial: what the previous trial (its compaction, its
    /// reclaim) changed is undone the same way for every arm.
    pub fn restore(&mut self, root: &Root) -> std::io::Result<Restored> {
        let t = Instant::now();
        let mut r = Restored::default();
        match self.condition {
            Condition::Clean => {}
            Condition::Fragmented { .. } => self.retake(root, &mut r, true)?,
            Condition::Pressure { headroom } => self.adjust(root, headroom, &mut r)?,
            Condition::Cache { .. } => {
                if let Some(c) = &self.cache {
                    r.added_bytes = c.reread()?;
                }
            }
        }
        r.seconds = t.elapsed().as_secs_f64();
        Ok(r)
    }

    /// `fragmented`: take every free 2 MiB block whole (faulted as 4 KiB pages from the pieces,
    /// then collapsed into 2 MiB pages, which works under every THP setting), and, between
    /// trials (`give_back`), give back as many kept pages so free memory stays the same size;
    /// repeated while blocks come free (a child's freed huge pages and pages on the per-CPU
    /// lists merge into whole blocks a little later, more so on a loaded machine: four rounds
    /// once left 4 blocks free). Never takes MemAvailable below the floor.
    fn retake(&mut self, root: &Root, r: &mut Restored, give_back: bool) -> std::io::Result<()> {
        for _ in 0..RETAKE_ROUNDS {
            let room = mem_available(root)?.saturating_sub(FLOOR) / TWO_MIB;
            let n = free_blocks(root)?.min(room);
            if n == 0 {
                break;
            }
            let mut region = Region::map(n * TWO_MIB, Backing::ThpCollapse)?;
            region.dont_fork()?;
            region.populate()?;
            // A block that cannot be collapsed stays held as 4 KiB pages: still taken.
            let _ = region.collapse();
            self.taken.push(region);
            r.taken_2m += n;
            if give_back {
                r.released_bytes += self.give_back_kept(n as usize * (TWO_MIB as usize / 4096))?;
            }
        }
        Ok(())
    }

    /// Give back up to `pages` kept pages, spread out: the k-th is kept slot k × 521 (mod the
    /// slots), 8 MiB apart, so every 2 MiB block keeps the rest of its kept pages and none comes
    /// free whole (giving back a run of neighbours would free whole blocks, four for every
    /// block's worth given back).
    fn give_back_kept(&mut self, pages: usize) -> std::io::Result<u64> {
        let slots: Vec<usize> = self
            .regions
            .iter()
            .map(|r| r.mapped_len() / FRAGMENT_STRIDE)
            .collect();
        let total: usize = slots.iter().sum();
        let step = [521, 523, 541]
            .into_iter()
            .find(|p| !total.is_multiple_of(*p))
            .unwrap_or(1);
        let mut given = 0;
        while given < pages && self.released < total {
            let mut slot = self.released * step % total;
            self.released += 1;
            for (region, n) in self.regions.iter_mut().zip(&slots) {
                if slot < *n {
                    region.discard(slot * FRAGMENT_STRIDE, 4096)?;
                    given += 1;
                    break;
                }
                slot -= n;
            }
        }
        Ok(given as u64 * 4096)
    }

    /// `pressure`: hold more or give back chunks until MemAvailable is the headroom.
    fn adjust(&mut self, root: &Root, headroom: u64, r: &mut Restored) -> std::io::Result<()> {
        while mem_available(root)? + SLACK < headroom {
            let Some(last) = self.regions.pop() else {
                break;
            };
            r.released_bytes += last.mapped_len() as u64;
        }
        let avail = mem_available(root)?;
        if avail > headroom + SLACK {
            let (more, got) = take(root, avail - headroom, Backing::Thp)?;
            self.regions.extend(more);
            r.added_bytes += got;
        }
        Ok(())
    }
}

/// An unnamed file (O_TMPFILE on a disk file system, gone when closed) whose pages are read
/// into the page cache: clean cache, which any allocation may reclaim.
struct CacheFile {
    file: std::fs::File,
    len: u64,
}

/// Linux `statfs` magic numbers of memory-backed file systems (no page cache to reclaim).
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

impl CacheFile {
    /// A directory on a disk: $TMPDIR, /var/tmp or /tmp, the first not in memory.
    fn directory() -> std::io::Result<std::path::PathBuf> {
        let candidates = std::env::var_os("TMPDIR")
            .map(std::path::PathBuf::from)
            .into_iter()
            .chain(["/var/tmp".into(), "/tmp".into()]);
        for d in candidates {
            let Ok(c) = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()) else {
                continue;
            };
            // SAFETY: a zeroed statfs is a valid out-parameter; c is a NUL-terminated path.
            let mut st: libc::statfs = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            if unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0 {
                let magic = st.f_type as i64;
                if magic != TMPFS_MAGIC && magic != RAMFS_MAGIC {
                    return Ok(d);
                }
            }
        }
        Err(Error::other(
            "--condition cache needs a directory on a disk file system ($TMPDIR, /var/tmp or /tmp); all are in memory here",
        ))
    }

    fn fill(len: u64) -> std::io::Result<CacheFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = Self::directory()?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .open(&dir)
            .map_err(|e| {
                Error::new(
                    e.kind(),
                    format!("an unnamed file in {}: {e}", dir.display()),
                )
            })?;
        // A sparse file: its holes read as zeros through the page cache, without a disk write.
        file.set_len(len)?;
        let c = CacheFile { file, len };
        c.read_range(0, len)?;
        Ok(c)
    }

    fn read_range(&self, from: u64, to: u64) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; 4 << 20];
        let mut at = from;
        while at < to {
            let n = (to - at).min(buf.len() as u64) as usize;
            let got = self.file.read_at(&mut buf[..n], at)?;
            if got == 0 {
                break;
            }
            at += got as u64;
        }
        Ok(())
    }

    /// Read again what reclaim took from the cache (found with mincore); the bytes read.
    fn reread(&self) -> std::io::Result<u64> {
        use std::os::fd::AsRawFd;
        let len = self.len as usize;
        // SAFETY: a read-only shared mapping of our own file, unmapped below; nothing is faulted.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                self.file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os_error());
        }
        let mut resident = vec![0u8; len.div_ceil(4096)];
        // SAFETY: p..p+len is the mapping made above; the vector has one byte per page.
        let rc = unsafe { libc::mincore(p, len, resident.as_mut_ptr()) };
        let err = Error::last_os_error();
        // SAFETY: the mapping made above, not used after this.
        unsafe { libc::munmap(p, len) };
        if rc != 0 {
            return Err(err);
        }
        let mut read = 0;
        let mut i = 0;
        while i < resident.len() {
            if resident[i] & 1 == 1 {
                i += 1;
                continue;
            }
            let start = i;
            while i < resident.len() && resident[i] & 1 == 0 {
                i += 1;
            }
            let (from, to) = (start as u64 * 4096, (i as u64 * 4096).min(self.len));
            self.read_range(from, to)?;
            read += to - from;
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests;
