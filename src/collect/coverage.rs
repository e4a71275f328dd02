//! What a region really got: its VMA's smaps fields and, where /proc/kpageflags is readable
//! (root), the folio-size histogram from /proc/self/pagemap — the only place mTHP shows.

pub use crate::model::trial::gathered::RegionEvidence;

use crate::probe::process::parse_smaps;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

const PAGE: u64 = 4096;
const PM_PRESENT: u64 = 1 << 63;
const PM_PFN_MASK: u64 = (1 << 55) - 1;
const KPF_COMPOUND_HEAD: u64 = 1 << 15;
const KPF_COMPOUND_TAIL: u64 = 1 << 16;
#[cfg(test)]
const KPF_THP: u64 = 1 << 22;

/// Sum the smaps fields of every mapping overlapping `[start, start + len)` in `smaps` text.
pub fn from_smaps(
    smaps: &str,
    start: u64,
    len: u64,
) -> Result<RegionEvidence, crate::error::ParseError> {
    let end = start + len;
    let mut e = RegionEvidence {
        mapped_bytes: len,
        ..RegionEvidence::default()
    };
    for m in parse_smaps(smaps)?
        .iter()
        .filter(|m| m.start < end && m.end > start)
    {
        e.rss_bytes += m.field("Rss");
        e.anon_huge_bytes += m.field("AnonHugePages");
        e.hugetlb_bytes += m.field("Private_Hugetlb") + m.field("Shared_Hugetlb");
        e.file_huge_bytes += m.field("ShmemPmdMapped") + m.field("FilePmdMapped");
        e.kernel_page_size = e.kernel_page_size.max(m.field("KernelPageSize"));
    }
    Ok(e)
}

/// A process's pagemap, with /proc/kpageflags where readable: folio sizes per address range.
pub struct PageMap {
    pagemap: File,
    kpageflags: Result<File, String>,
    /// PAGEMAP_SCAN works here (Linux 6.7+): only present ranges are read.
    scan: std::sync::atomic::AtomicBool,
    /// Threads for large scans (kpageflags is computed page by page in the kernel).
    pub workers: usize,
}

impl PageMap {
    /// `None` for this process.
    pub fn open(pid: Option<u32>) -> std::io::Result<PageMap> {
        let path = pid.map_or("/proc/self/pagemap".to_string(), |p| {
            format!("/proc/{p}/pagemap")
        });
        let pagemap =
            File::open(&path).map_err(|e| std::io::Error::new(e.kind(), format!("{path}: {e}")))?;
        let kpageflags = File::open("/proc/kpageflags").map_err(|e| {
            format!("/proc/kpageflags is unreadable ({e}): run as root to see folio sizes")
        });
        Ok(PageMap {
            pagemap,
            kpageflags,
            scan: std::sync::atomic::AtomicBool::new(true),
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
        })
    }

    fn present(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.scan.load(Relaxed) {
            match crate::sys::present_ranges(&self.pagemap, start, end) {
                Ok(r) => return r,
                Err(_) => self.scan.store(false, Relaxed),
            }
        }
        vec![(start, end)]
    }

    /// Folio size (bytes) → bytes of `[start, end)` in folios of that size, over present pages.
    /// `Ok(Err(reason))` when folio sizes cannot be read here (not root).
    pub fn folios(
        &self,
        start: u64,
        end: u64,
    ) -> std::io::Result<Result<BTreeMap<u64, u64>, String>> {
        if let Err(why) = &self.kpageflags {
            return Ok(Err(why.clone()));
        }
        let Ok(kpf) = &self.kpageflags else {
            unreachable!("checked above")
        };
        let mut total = BTreeMap::new();
        // Bounded memory: at most CHUNK pages at a time, cut at CHUNK-aligned addresses so no
        // folio up to 2 MiB straddles a cut.
        // Each worker finds the present pages of its chunk (PAGEMAP_SCAN) itself, in parallel.
        const CHUNK: u64 = 65536;
        let mut chunks = Vec::new();
        for (a, b) in [(start, end)] {
            let mut at = a;
            while at < b {
                let cut = ((at / PAGE / CHUNK + 1) * CHUNK * PAGE).min(b);
                chunks.push((at, cut));
                at = cut;
            }
        }
        // The kernel computes kpageflags page by page: spread large scans over the CPUs. Workers
        // take the next chunk as they finish one, so a CPU shared with another reader does not
        // hold the scan back.
        let workers = self.workers.min(chunks.len()).max(1);
        let this = self;
        let next = std::sync::atomic::AtomicUsize::new(0);
        let (chunks, next) = (&chunks, &next);
        let results: Vec<std::io::Result<Result<BTreeMap<u64, u64>, String>>> =
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..workers)
                    .map(|_| {
                        s.spawn(move || {
                            let mut part = BTreeMap::new();
                            loop {
                                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let Some(&(a, b)) = chunks.get(i) else { break };
                                if let Err(why) = this.chunk(kpf, a, b, &mut part)? {
                                    return Ok(Err(why));
                                }
                            }
                            Ok(Ok(part))
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("pagemap worker panicked"))
                    .collect()
            });
        for r in results {
            match r? {
                Ok(part) => {
                    for (k, v) in part {
                        *total.entry(k).or_insert(0) += v;
                    }
                }
                Err(why) => return Ok(Err(why)),
            }
        }
        Ok(Ok(total))
    }
}

impl PageMap {
    fn chunk(
        &self,
        kpf: &File,
        a: u64,
        b: u64,
        total: &mut BTreeMap<u64, u64>,
    ) -> std::io::Result<Result<(), String>> {
        for (pa, pb) in self.present(a, b) {
            if let Err(why) = self.range(kpf, pa, pb, total)? {
                return Ok(Err(why));
            }
        }
        Ok(Ok(()))
    }

    fn range(
        &self,
        kpf: &File,
        a: u64,
        b: u64,
        total: &mut BTreeMap<u64, u64>,
    ) -> std::io::Result<Result<(), String>> {
        // Scratch buffers live per thread: fresh buffers per chunk would fault in (and zero)
        // new pages every time, which costs as much as a good part of the scan.
        thread_local! {
            static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
        }
        let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let result = self.range_with(kpf, a, b, total, &mut scratch);
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
        result
    }

    fn range_with(
        &self,
        kpf: &File,
        a: u64,
        b: u64,
        total: &mut BTreeMap<u64, u64>,
        sc: &mut Scratch,
    ) -> std::io::Result<Result<(), String>> {
        let pages = ((b - a) / PAGE) as usize;
        sc.raw.resize(pages * 8, 0);
        self.pagemap
            .read_exact_at(&mut sc.raw[..pages * 8], a / PAGE * 8)?;
        sc.pfns.clear();
        sc.pfns.extend(
            sc.raw[..pages * 8]
                .chunks_exact(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
                .map(|e| (e & PM_PRESENT != 0).then_some(e & PM_PFN_MASK)),
        );
        let pfns = &sc.pfns;
        if pfns.iter().any(|p| p.is_some()) && pfns.iter().all(|p| p.unwrap_or(0) == 0) {
            return Ok(Err("page frame numbers are hidden without CAP_SYS_ADMIN: run as root to see folio sizes".into()));
        }
        // Runs of physically contiguous pages, then one pread per group of runs that lie
        // close together in physical memory (a whole huge page, or neighbouring small folios).
        sc.runs.clear();
        let mut i = 0;
        while i < pages {
            let Some(p0) = pfns[i] else {
                i += 1;
                continue;
            };
            let mut j = i + 1;
            while j < pages && pfns[j] == Some(p0 + (j - i) as u64) {
                j += 1;
            }
            sc.runs.push((i, j, p0));
            i = j;
        }
        sc.flags.clear();
        sc.flags.resize(pages, 0);
        let runs = &sc.runs;
        let mut g = 0;
        while g < runs.len() {
            let (first_pfn, mut end_pfn) = (runs[g].2, runs[g].2 + (runs[g].1 - runs[g].0) as u64);
            let mut h = g + 1;
            while h < runs.len()
                && runs[h].2 >= end_pfn
                && runs[h].2 - end_pfn <= 16
                && runs[h].2 + ((runs[h].1 - runs[h].0) as u64) - first_pfn <= 1 << 16
            {
                end_pfn = runs[h].2 + (runs[h].1 - runs[h].0) as u64;
                h += 1;
            }
            let len = ((end_pfn - first_pfn) * 8) as usize;
            sc.buf.resize(len, 0);
            kpf.read_exact_at(&mut sc.buf[..len], first_pfn * 8)?;
            for &(ri, rj, p0) in &runs[g..h] {
                let off = ((p0 - first_pfn) * 8) as usize;
                for (k, c) in sc.buf[off..off + (rj - ri) * 8].chunks_exact(8).enumerate() {
                    sc.flags[ri + k] = u64::from_ne_bytes(c.try_into().unwrap());
                }
            }
            g = h;
        }
        for (size, bytes) in histogram(&sc.pfns, &sc.flags) {
            if size > 0 {
                *total.entry(size).or_insert(0) += bytes;
            }
        }
        Ok(Ok(()))
    }
}

/// Reused per-thread buffers for [`PageMap`] scans.
#[derive(Default)]
struct Scratch {
    raw: Vec<u8>,
    pfns: Vec<Option<u64>>,
    runs: Vec<(usize, usize, u64)>,
    flags: Vec<u64>,
    buf: Vec<u8>,
}

/// Pure folio grouping: a compound head plus the physically contiguous tails after it form one
/// folio; a non-compound page is a 4 KiB folio; non-present pages are bucket 0.
pub fn histogram(pfns: &[Option<u64>], flags: &[u64]) -> BTreeMap<u64, u64> {
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < pfns.len() {
        let Some(p) = pfns[i] else {
            *out.entry(0).or_insert(0) += PAGE;
            i += 1;
            continue;
        };
        let f = flags[i];
        let mut j = i + 1;
        if f & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL) != 0 {
            while j < pfns.len()
                && flags[j] & KPF_COMPOUND_TAIL != 0
                && pfns[j] == Some(p + (j - i) as u64)
            {
                j += 1;
            }
        }
        let pages_in_folio = if f & KPF_COMPOUND_HEAD != 0 || f & KPF_COMPOUND_TAIL != 0 {
            // A folio cut by the region's edge still counts at its visible size, rounded up to a power of two.
            ((j - i) as u64).next_power_of_two()
        } else {
            1
        };
        *out.entry(pages_in_folio * PAGE).or_insert(0) += (j - i) as u64 * PAGE;
        i = j;
    }
    out
}

/// Evidence for a region of this process: smaps always, folio sizes where readable.
pub fn region_evidence(start: u64, len: u64) -> std::io::Result<RegionEvidence> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut e = from_smaps(&smaps, start, len)
        .map_err(|err| std::io::Error::other(format!("/proc/self/smaps: {err}")))?;
    match PageMap::open(None)?.folios(start, start + len)? {
        Ok(h) => e.folios = Some(h),
        Err(note) => e.folio_note = Some(note),
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_folios() {
        // 16 pages: a 4-page mTHP folio, 2 base pages, a missing page, an 8-page folio, 1 base.
        let mut pfns: Vec<Option<u64>> = Vec::new();
        let mut flags = Vec::new();
        for k in 0..4 {
            pfns.push(Some(100 + k));
            flags.push(if k == 0 {
                KPF_COMPOUND_HEAD
            } else {
                KPF_COMPOUND_TAIL
            });
        }
        pfns.extend([Some(7), Some(9), None]);
        flags.extend([0, 0, 0]);
        for k in 0..8 {
            pfns.push(Some(512 + k));
            flags.push(if k == 0 {
                KPF_COMPOUND_HEAD | KPF_THP
            } else {
                KPF_COMPOUND_TAIL | KPF_THP
            });
        }
        pfns.push(Some(3));
        flags.push(0);
        let h = histogram(&pfns, &flags);
        assert_eq!(h[&16384], 16384);
        assert_eq!(h[&4096], 3 * 4096);
        assert_eq!(h[&32768], 32768);
        assert_eq!(h[&0], 4096);
    }

    #[test]
    fn two_adjacent_folios_stay_apart() {
        let pfns: Vec<Option<u64>> = (0..8).map(|k| Some(64 + k)).collect();
        let flags: Vec<u64> = (0..8)
            .map(|k| {
                if k % 4 == 0 {
                    KPF_COMPOUND_HEAD
                } else {
                    KPF_COMPOUND_TAIL
                }
            })
            .collect();
        let h = histogram(&pfns, &flags);
        assert_eq!(h.len(), 1);
        assert_eq!(h[&16384], 32768);
    }

    #[test]
    fn smaps_fields_summed_over_overlap() {
        let smaps = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \nRss: 4096 kB\nAnonHugePages: 4096 kB\nKernelPageSize: 4 kB\n7f0000400000-7f0000600000 rw-p 00000000 00:00 0 \nRss: 0 kB\nPrivate_Hugetlb: 2048 kB\nKernelPageSize: 2048 kB\n7f0001000000-7f0001200000 rw-p 00000000 00:00 0 \nRss: 2048 kB\n";
        let e = from_smaps(smaps, 0x7f00_0000_0000, 6 << 20).unwrap();
        assert_eq!(e.anon_huge_bytes, 4 << 20);
        assert_eq!(e.hugetlb_bytes, 2 << 20);
        assert_eq!(e.rss_bytes, 4 << 20);
        assert_eq!(e.kernel_page_size, 2 << 20);
    }
}
