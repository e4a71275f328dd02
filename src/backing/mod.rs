//! Stage 3, backing: memory regions with a requested page backing. This is the only module
//! with `unsafe` mmap/madvise code; every block says why it holds.

pub use crate::model::arm::backing::{BACKING_NAMES, Backing, ONE_GIB, TWO_MIB, TmpfsHuge};

use crate::units::Bytes;

use std::time::{Duration, Instant};

pub mod arm;
pub mod collapse;
pub mod condition;
pub mod pagecache;
pub mod qemu;
pub mod segment;
pub mod services;
pub mod side_by_side;
pub mod tmpfs;

/// Kernel ABI values, spelled out so older libc crates and headers do not matter.
const MADV_POPULATE_WRITE: libc::c_int = 23; // Linux 5.14
const MADV_COLLAPSE: libc::c_int = 25; // Linux 6.1
const MAP_HUGE_SHIFT: u32 = 26;

fn last_os_error(what: &str, len: usize) -> std::io::Error {
    let e = std::io::Error::last_os_error();
    std::io::Error::new(
        e.kind(),
        format!("{what} of {} failed: {e}", Bytes(len as u64)),
    )
}

/// An anonymous private mapping with a page backing. Unmapped on drop.
/// [`Region::fragment`] keeps the first 4 KiB page of every stride of this many bytes.
pub const FRAGMENT_STRIDE: usize = 16 << 10;

pub struct Region {
    ptr: *mut u8,
    /// Mapped length: the request rounded up to the backing's page size.
    mapped: usize,
    /// The requested working set (rounded up to a cache line); workloads use only this part.
    working: usize,
    backing: Backing,
}

// SAFETY: the region owns its mapping exclusively; access goes through &/&mut borrows.
unsafe impl Send for Region {}
// SAFETY: shared access is read-only through `&self` methods.
unsafe impl Sync for Region {}

impl Region {
    /// Map at least `size` bytes with `backing`, aligned to the backing's page size (2 MiB for
    /// THP and mTHP regions, so every aligned 2 MiB range can become a huge page). Nothing is
    /// faulted in. hugetlb pages are reserved at mmap time (no MAP_NORESERVE), so a short pool
    /// fails here with ENOMEM instead of raising SIGBUS later.
    pub fn map(size: u64, backing: Backing) -> std::io::Result<Region> {
        Region::map_inner(size, backing, true)
    }

    fn map_inner(size: u64, backing: Backing, advise: bool) -> std::io::Result<Region> {
        let page = backing.page_size().max(4096) as usize;
        let too_big = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "a region of {} bytes cannot be mapped (it overflows the address space); give a size below MemAvailable",
                    size
                ),
            )
        };
        let len = usize::try_from(size.max(1))
            .ok()
            .and_then(|s| s.checked_next_multiple_of(page))
            .filter(|l| l.checked_add(TWO_MIB as usize).is_some())
            .ok_or_else(too_big)?;
        let ptr = match backing {
            Backing::Hugetlb { page_size } => {
                let flags = libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_HUGETLB
                    | ((page_size.trailing_zeros() << MAP_HUGE_SHIFT) as libc::c_int);
                // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                        flags,
                        -1,
                        0,
                    )
                };
                if p == libc::MAP_FAILED {
                    let e = std::io::Error::last_os_error();
                    let hint = if e.raw_os_error() == Some(libc::ENOMEM) {
                        format!(
                            " (the {} hugetlb pool has too few free pages: grow nr_hugepages, or run hugelab as root to let it grow the pool)",
                            Bytes(page_size)
                        )
                    } else {
                        String::new()
                    };
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("mmap MAP_HUGETLB of {}: {e}{hint}", Bytes(len as u64)),
                    ));
                }
                p as *mut u8
            }
            Backing::Tmpfs { .. } | Backing::PageCache => {
                return Region::map_file(size, len, backing);
            }
            _ => {
                // Over-map by 2 MiB and trim, so the region starts on a 2 MiB boundary.
                let align = TWO_MIB as usize;
                let total = len + align;
                // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        total,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    )
                };
                if p == libc::MAP_FAILED {
                    return Err(last_os_error("mmap", total));
                }
                let start = p as usize;
                let aligned = start.next_multiple_of(align);
                let head = aligned - start;
                let tail = total - head - len;
                // SAFETY: both ranges lie inside the mapping just made and are not used after.
                unsafe {
                    if head > 0 {
                        libc::munmap(p, head);
                    }
                    if tail > 0 {
                        libc::munmap((aligned + len) as *mut libc::c_void, tail);
                    }
                }
                aligned as *mut u8
            }
        };
        let working = (size.max(1) as usize).next_multiple_of(64).min(len);
        let region = Region {
            ptr,
            mapped: len,
            working,
            backing,
        };
        let advice = match backing {
            Backing::Base | Backing::ThpCollapse => Some(libc::MADV_NOHUGEPAGE),
            Backing::Thp => Some(libc::MADV_HUGEPAGE),
            Backing::Hugetlb { .. }
            | Backing::Mthp { .. }
            | Backing::Tmpfs { .. }
            | Backing::PageCache => None,
        };
        if let Some(a) = advice.filter(|_| advise) {
            region.madvise(a, "madvise")?;
        }
        Ok(region)
    }

    /// A file-backed region: a file on a tmpfs hugelab mounts, or in the page cache, in whole
    /// 2 MiB and mapped 2 MiB-aligned.
    fn map_file(size: u64, len: usize, backing: Backing) -> std::io::Result<Region> {
        let len = len.next_multiple_of(TWO_MIB as usize);
        let ptr = match backing {
            Backing::Tmpfs { huge } => tmpfs::map(len, huge)?,
            _ => pagecache::map(len)?,
        };
        let region = Region {
            ptr,
            mapped: len,
            working: (size.max(1) as usize).next_multiple_of(64).min(len),
            backing,
        };
        if backing
            == (Backing::Tmpfs {
                huge: TmpfsHuge::Advise,
            })
        {
            region.madvise(libc::MADV_HUGEPAGE, "madvise")?;
        }
        Ok(region)
    }

    /// A 2 MiB-aligned anonymous region with no madvise at all (what a plain `malloc` of a
    /// large block gets), or with `unaligned` starting 4 KiB past a 2 MiB boundary. For helper
    /// processes that show how the system-wide THP mode treats ordinary memory.
    pub fn map_plain(size: u64, unaligned: bool) -> std::io::Result<Region> {
        let shift = if unaligned { 4096 } else { 0 };
        let r = Region::map_inner(size + shift, Backing::Base, false)?;
        if shift == 0 {
            return Ok(r);
        }
        let me = std::mem::ManuallyDrop::new(r);
        // SAFETY: unmapping the first page of our own mapping; the rest stays owned below.
        unsafe { libc::munmap(me.ptr as *mut libc::c_void, shift as usize) };
        Ok(Region {
            // SAFETY: still inside the original mapping.
            ptr: unsafe { me.ptr.add(shift as usize) },
            mapped: me.mapped - shift as usize,
            working: (size as usize).min(me.mapped - shift as usize),
            backing: Backing::Base,
        })
    }

    /// A huge, mostly untouched anonymous region (MAP_NORESERVE, 4 KiB pages): `touch` writes one
    /// byte every `stride` bytes. For showing that inspection costs what is resident, not the
    /// virtual size.
    pub fn map_sparse(size: u64, stride: u64) -> std::io::Result<Region> {
        let len = usize::try_from(size)
            .ok()
            .and_then(|s| s.checked_next_multiple_of(4096))
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "a region of {size} bytes cannot be mapped (it overflows the address space)"
                    ),
                )
            })?;
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(last_os_error("mmap MAP_NORESERVE", len));
        }
        let mut r = Region {
            ptr: p as *mut u8,
            mapped: len,
            working: len,
            backing: Backing::Base,
        };
        r.madvise(libc::MADV_NOHUGEPAGE, "madvise")?;
        first_touch(r.as_mut_slice(), stride.max(4096) as usize);
        Ok(r)
    }

    fn madvise(&self, advice: libc::c_int, what: &str) -> std::io::Result<()> {
        // SAFETY: the range is exactly this region's mapping.
        let rc = unsafe { libc::madvise(self.ptr as *mut libc::c_void, self.mapped, advice) };
        if rc != 0 {
            return Err(last_os_error(what, self.mapped));
        }
        Ok(())
    }

    /// Fault every page in for writing (MADV_POPULATE_WRITE): allocation failure is an error
    /// (ENOMEM/EFAULT), never a SIGBUS. Falls back to touching pages on kernels before 5.14.
    pub fn populate(&mut self) -> std::io::Result<()> {
        match self.madvise(MADV_POPULATE_WRITE, "MADV_POPULATE_WRITE") {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && !self.backing.is_hugetlb() => {
                // SAFETY: the whole mapping is ours and writable.
                let all = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.mapped) };
                first_touch(all, 4096);
                Ok(())
            }
            r => r,
        }
    }

    /// Give back three of every four 4 KiB pages (MADV_DONTNEED): a page faulted in comes from
    /// anywhere in physical memory, so keeping one in four leaves a kept page in practically
    /// every 2 MiB physical block the region used ((3/4)^512 of them come free whole): three
    /// quarters of the region return to free memory, in pieces no huge page can be made of
    /// without compaction.
    pub fn fragment(&mut self) -> std::io::Result<()> {
        // Every stride but its first page, in batches of IOV_MAX ranges per process_madvise
        // (one TLB flush per batch); a kernel that refuses MADV_DONTNEED there (before 6.12)
        // gets one madvise per stride.
        let ranges: Vec<(u64, u64)> = (0..self.mapped)
            .step_by(FRAGMENT_STRIDE)
            .filter(|at| at + 4096 < self.mapped)
            .map(|at| {
                let len = (FRAGMENT_STRIDE - 4096).min(self.mapped - at - 4096);
                (self.ptr as u64 + at as u64 + 4096, len as u64)
            })
            .collect();
        let pidfd = crate::sys::pidfd_open(std::process::id()).ok();
        for batch in ranges.chunks(1024) {
            let want: u64 = batch.iter().map(|r| r.1).sum();
            let done = pidfd.as_ref().and_then(|fd| {
                crate::sys::process_madvise_ranges(fd, batch, libc::MADV_DONTNEED).ok()
            });
            if done != Some(want) {
                for &(start, len) in batch {
                    self.discard(start as usize - self.ptr as usize, len as usize)?;
                }
            }
        }
        Ok(())
    }

    /// Keep the mapping out of children (MADV_DONTFORK): memory this process holds for a
    /// condition is then neither copied at fork nor counted in a child's RSS before its exec.
    pub fn dont_fork(&self) -> std::io::Result<()> {
        self.madvise(libc::MADV_DONTFORK, "madvise(MADV_DONTFORK)")
    }

    /// Give back `len` bytes at `offset` (MADV_DONTNEED; both rounded to whole 4 KiB pages and
    /// clipped to the mapping).
    pub fn discard(&mut self, offset: usize, len: usize) -> std::io::Result<()> {
        let start = offset.next_multiple_of(4096).min(self.mapped);
        let end = (offset + len).next_multiple_of(4096).min(self.mapped);
        if end <= start {
            return Ok(());
        }
        // SAFETY: [start, end) lies inside this region's mapping.
        let rc = unsafe {
            libc::madvise(
                self.ptr.add(start) as *mut libc::c_void,
                end - start,
                libc::MADV_DONTNEED,
            )
        };
        if rc != 0 {
            return Err(last_os_error("MADV_DONTNEED", end - start));
        }
        Ok(())
    }

    /// Prepare the region for measurement: fault it in, and for `thp-collapse` promote it.
    pub fn prepare(&mut self) -> std::io::Result<()> {
        self.populate()?;
        if self.backing == Backing::ThpCollapse {
            self.collapse()?;
        }
        Ok(())
    }

    /// Promote the faulted-in 4 KiB pages to huge pages now (MADV_COLLAPSE, Linux 6.1+).
    pub fn collapse(&mut self) -> std::io::Result<()> {
        // MADV_COLLAPSE refuses VM_NOHUGEPAGE regions; lift it first.
        self.madvise(libc::MADV_HUGEPAGE, "madvise(MADV_HUGEPAGE)")?;
        self.madvise(MADV_COLLAPSE, "MADV_COLLAPSE")
    }

    pub fn backing(&self) -> Backing {
        self.backing
    }
    /// Mapped bytes (what the kernel backs); at least the working set.
    pub fn mapped_len(&self) -> usize {
        self.mapped
    }
    /// The working set the workloads use.
    pub fn len(&self) -> usize {
        self.working
    }
    pub fn is_empty(&self) -> bool {
        self.working == 0
    }
    pub fn start(&self) -> u64 {
        self.ptr as u64
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr..ptr+working lies inside a live read/write mapping owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.working) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.working) }
    }

    /// The region as 64-bit words (the mapping is page-aligned, so u64-aligned).
    pub fn as_words(&self) -> &[u64] {
        // SAFETY: page-aligned start, working set a multiple of 64; any bit pattern is a valid u64.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u64, self.working / 8) }
    }

    pub fn as_words_mut(&mut self) -> &mut [u64] {
        // SAFETY: as above, with exclusive access through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u64, self.working / 8) }
    }

    /// Unmap now and return how long the kernel took to free the memory.
    pub fn unmap_timed(self) -> Duration {
        let me = std::mem::ManuallyDrop::new(self);
        let t = Instant::now();
        // SAFETY: the mapping is ours and is not touched after this (ManuallyDrop skips Drop).
        unsafe { libc::munmap(me.ptr as *mut libc::c_void, me.mapped) };
        t.elapsed()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours; nothing borrows it once drop runs.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.mapped) };
    }
}

/// Write one byte in every `stride` bytes: the first touch that faults memory in.
pub fn first_touch(data: &mut [u8], stride: usize) {
    let mut i = 0;
    while i < data.len() {
        data[i] = 1;
        i += stride;
    }
    std::hint::black_box(&data);
}

#[cfg(test)]
mod tests;
