//! The page cache as a backing: a file of the machine's own file system (the temporary
//! directory's, `$TMPDIR` else /tmp), written once with buffered writes of 2 MiB and mapped
//! shared with MADV_HUGEPAGE, as a database's data files are read through the page cache. A
//! file system with large folios (ext4 since Linux 6.16, xfs, btrfs) keeps such writes in
//! folios up to 2 MiB, which a 2 MiB-aligned mapping maps with one PMD each; one without keeps
//! 4 KiB pages, and the coverage (from the file's own folios) says so. The file is unlinked as
//! soon as it is mapped: its pages go with the mapping, unwritten.

use std::io::Write;
use std::path::PathBuf;

/// The directory the file is made in.
pub fn dir() -> PathBuf {
    std::env::temp_dir()
}

/// A shared, writable mapping of a fresh `len`-byte file (a multiple of 2 MiB) in [`dir`], at
/// a 2 MiB-aligned address, its pages in the page cache.
pub fn map(len: usize) -> std::io::Result<*mut u8> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir().join(format!(".hugelab-pagecache-{}-{n}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mapped = (|| {
        let chunk = vec![1u8; 2 << 20];
        for _ in 0..len / chunk.len() {
            file.write_all(&chunk)?;
        }
        let p = super::segment::map_file_aligned(&file, len, libc::PROT_READ | libc::PROT_WRITE)?;
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
        Ok(p as *mut u8)
    })();
    let _ = std::fs::remove_file(&path);
    mapped.map_err(|e: std::io::Error| {
        std::io::Error::new(
            e.kind(),
            format!("page-cache file in {}: {e}", dir().display()),
        )
    })
}
