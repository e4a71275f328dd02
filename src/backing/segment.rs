//! A server's shared segment mapped into hugelab, read-only, to count the segment's own
//! residency (as the kernel holds it: the shmem or hugetlbfs object behind the mapping), not
//! one process's page-table view of it. Only pages already in the segment are mapped: mincore
//! finds them, MADV_POPULATE_READ maps exactly those (a read fault on a hole of a shared
//! mapping would allocate one), so the reading adds no memory to the server.

use std::os::fd::AsRawFd;

/// MADV_POPULATE_READ (Linux 5.14), spelled out as the kernel ABI value.
const MADV_POPULATE_READ: libc::c_int = 22;

/// A file mapped shared and read-only at a 2 MiB-aligned address (so its PMD-sized folios map
/// with one PMD each); unmapped on drop.
pub struct MappedSegment {
    addr: *mut libc::c_void,
    len: usize,
}

/// `len` bytes of `file` from offset 0 mapped shared with `prot` at a 2 MiB-aligned address
/// (so its PMD-sized folios can map with one PMD each): a reservation 2 MiB larger, the file
/// placed at its first 2 MiB boundary, the rest of the reservation unmapped.
pub fn map_file_aligned(
    file: &std::fs::File,
    len: usize,
    prot: libc::c_int,
) -> std::io::Result<*mut libc::c_void> {
    let align = 2usize << 20;
    // SAFETY: a fresh private reservation; nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + align,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let at = (base as usize).next_multiple_of(align);
    // SAFETY: [at, at+len) lies inside the reservation just made; MAP_FIXED replaces that part
    // of it with the file.
    let addr = unsafe {
        libc::mmap(
            at as *mut libc::c_void,
            len,
            prot,
            libc::MAP_SHARED | libc::MAP_FIXED,
            file.as_raw_fd(),
            0,
        )
    };
    let fail = (addr == libc::MAP_FAILED).then(std::io::Error::last_os_error);
    // SAFETY: unmapping the unused head and tail of our own reservation (and all of it on
    // failure).
    unsafe {
        match fail {
            Some(_) => {
                libc::munmap(base, len + align);
            }
            None => {
                let head = at - base as usize;
                if head > 0 {
                    libc::munmap(base, head);
                }
                let tail = align - head;
                if tail > 0 {
                    libc::munmap((at + len) as *mut libc::c_void, tail);
                }
            }
        }
    }
    match fail {
        Some(e) => Err(e),
        None => Ok(addr),
    }
}

impl MappedSegment {
    /// Map `len` bytes of `file` from offset 0. `len` is rounded up to 4 KiB.
    pub fn map(file: &std::fs::File, len: u64) -> std::io::Result<MappedSegment> {
        let len = (len as usize).div_ceil(4096) * 4096;
        if len == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
        }
        // Shared and read-only: we never write through it.
        let addr = map_file_aligned(file, len, libc::PROT_READ)?;
        Ok(MappedSegment { addr, len })
    }

    /// The mapping's address range in this process.
    pub fn range(&self) -> (u64, u64) {
        (self.addr as u64, self.addr as u64 + self.len as u64)
    }

    /// Map the pages the segment holds (found by mincore) into this mapping; their bytes.
    pub fn populate_resident(&self) -> std::io::Result<u64> {
        let pages = self.len / 4096;
        let mut vec = vec![0u8; pages];
        // SAFETY: `vec` has one byte per page of the mapping, as mincore requires.
        if unsafe { libc::mincore(self.addr, self.len, vec.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut resident = 0u64;
        let mut i = 0;
        while i < pages {
            if vec[i] & 1 == 0 {
                i += 1;
                continue;
            }
            let start = i;
            while i < pages && vec[i] & 1 == 1 {
                i += 1;
            }
            resident += ((i - start) * 4096) as u64;
            // SAFETY: the run lies inside our mapping; populating reads maps pages the file
            // already holds (mincore just saw them) and writes nothing.
            let r = unsafe {
                libc::madvise(
                    (self.addr as usize + start * 4096) as *mut libc::c_void,
                    (i - start) * 4096,
                    MADV_POPULATE_READ,
                )
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(resident)
    }
}

impl Drop for MappedSegment {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pages_a_file_holds_are_mapped() {
        // A sparse tmpfs-like file: 3 pages written at 0, 1 MiB and 5 MiB of an 8 MiB file.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(8 << 20).unwrap();
        use std::os::unix::fs::FileExt;
        for off in [0u64, 1 << 20, 5 << 20] {
            f.write_all_at(&[1u8; 4096], off).unwrap();
        }
        f.sync_all().unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let m = MappedSegment::map(&f, 8 << 20).unwrap();
        assert_eq!(m.range().0 % (2 << 20), 0, "2 MiB-aligned");
        let r = m.populate_resident().unwrap();
        // At least the written pages (the page cache may hold read-ahead beside them).
        assert!((3 * 4096..=8 << 20).contains(&r), "{r}");
    }
}
