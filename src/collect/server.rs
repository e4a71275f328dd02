//! Evidence from a `run --server` server: the memory of its whole process tree (a PostgreSQL
//! postmaster and its backends; a shared segment counted once), the segments that matter
//! (shared memory and the largest anonymous heaps) with the page size each is on, which
//! processes have THP disabled for themselves, and the tree's CPU time. Off the measuring path,
//! on the same schedule for every arm: cheap reads while the load runs ([`DuringLoad`]), the
//! page-table walk and the segments' residency right after it ([`read`]).
//!
//! A shared segment's residency belongs to the segment, not to any process: a PostgreSQL
//! postmaster's page tables hold only what it touched itself, and the backends that touched the
//! buffers come and go. With root, each shared segment is counted as the kernel holds it — the
//! shmem or hugetlbfs object behind `/proc/PID/map_files/…`: its allocated blocks, and for
//! shared memory the pages it holds mapped into hugelab read-only (`backing::segment`) to see
//! which are PMD-mapped THP. Without root, the largest view any of the server's processes has
//! of it. The kernel's own totals (hugetlb pool pages in use per size, ShmemHugePages) are read
//! at the same moment and stored beside it.

pub use crate::model::trial::server::{GroupMemory, KernelHuge, LoadView, Segment};

use crate::probe::process::{Kind, Mapping, kind, parse_smaps, parse_status, stat, tree};
use std::collections::BTreeMap;

fn huge_of(m: &Mapping) -> u64 {
    m.field("AnonHugePages")
        + m.field("ShmemPmdMapped")
        + m.field("FilePmdMapped")
        + m.field("Private_Hugetlb")
        + m.field("Shared_Hugetlb")
}

/// What one view of a mapping adds to a server's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct View {
    rss: u64,
    anon_huge: u64,
    shmem_pmd: u64,
    file_pmd: u64,
    hugetlb: u64,
    page_size: u64,
    referenced: u64,
}

impl View {
    fn of(m: &Mapping) -> View {
        View {
            rss: m.field("Rss"),
            anon_huge: m.field("AnonHugePages"),
            shmem_pmd: m.field("ShmemPmdMapped"),
            file_pmd: m.field("FilePmdMapped"),
            hugetlb: m.field("Private_Hugetlb") + m.field("Shared_Hugetlb"),
            page_size: m.field("KernelPageSize"),
            referenced: m.field("Referenced"),
        }
    }

    fn add(self, mem: &mut GroupMemory, sign: i64) {
        let f = |t: &mut u64, v: u64| *t = (*t as i64 + sign * v as i64).max(0) as u64;
        f(&mut mem.rss, self.rss);
        f(&mut mem.anon_huge, self.anon_huge);
        f(&mut mem.shmem_pmd, self.shmem_pmd);
        f(&mut mem.file_pmd, self.file_pmd);
        f(&mut mem.referenced, self.referenced);
        if self.hugetlb > 0 {
            f(mem.hugetlb.entry(self.page_size).or_default(), self.hugetlb);
            mem.hugetlb.retain(|_, v| *v > 0);
        }
    }

    fn weight(&self) -> u64 {
        self.rss + self.hugetlb
    }
}

/// The shared mappings already counted, with the view counted for each.
pub type Seen = BTreeMap<(String, u64, u64), (usize, View)>;

/// Add one process's mappings. A shared segment (inherited by forked workers) is counted once,
/// at the largest view any process has of it: `seen` holds the views counted so far.
pub fn add_process(mem: &mut GroupMemory, pid: i32, comm: &str, maps: &[Mapping], seen: &mut Seen) {
    mem.processes += 1;
    for m in maps {
        let shared = m.perms.ends_with('s');
        let view = View::of(m);
        let k = kind(m);
        let advised = m.has_flag("hg");
        if advised && !(shared && seen.contains_key(&(m.path.clone(), m.start, m.end))) {
            mem.madvised += m.size();
        }
        if !shared
            && matches!(k, Kind::Heap | Kind::Anonymous | Kind::JavaHeap)
            && !advised
            && m.field("THPeligible") == 1
        {
            mem.thp_eligible_unadvised += m.size();
        }
        let noreserve = m.has_flag("nr");
        if shared && let Some((idx, old)) = seen.get_mut(&(m.path.clone(), m.start, m.end)) {
            if view.weight() > old.weight() {
                if noreserve && view.hugetlb > old.hugetlb {
                    mem.hugetlb_committed += view.hugetlb - old.hugetlb;
                }
                old.add(mem, -1);
                view.add(mem, 1);
                *old = view;
                if let Some(s) = mem.segments.get_mut(*idx) {
                    s.resident = view.weight();
                    s.huge = huge_of(m);
                    s.pid = pid;
                    s.comm = comm.to_string();
                }
            }
            continue;
        }
        view.add(mem, 1);
        let hugetlb = view.hugetlb;
        if k == Kind::Hugetlb {
            mem.hugetlb_committed += if noreserve { hugetlb } else { m.size() };
        }
        let matters = match k {
            Kind::SharedMemory | Kind::Hugetlb => true,
            Kind::Heap | Kind::Anonymous | Kind::JavaHeap => m.field("Rss") >= 1 << 20,
            _ => false,
        };
        if shared {
            seen.insert(
                (m.path.clone(), m.start, m.end),
                (
                    if matters {
                        mem.segments.len()
                    } else {
                        usize::MAX
                    },
                    view,
                ),
            );
        }
        if matters {
            mem.segments.push(Segment {
                pid,
                comm: comm.to_string(),
                path: m.path.clone(),
                kind: k.name().to_string(),
                size: m.size(),
                resident: m.field("Rss") + hugetlb,
                huge: huge_of(m),
                page_size: m.field("KernelPageSize"),
                shared,
                counted: shared.then(|| "page tables".to_string()),
                range: (m.start, m.end),
            });
        }
    }
}

/// Keep the 4 largest shared segments and the 4 largest private regions.
pub fn keep_largest(mem: &mut GroupMemory) {
    let mut all = std::mem::take(&mut mem.segments);
    all.sort_by(|a, b| {
        b.resident
            .max(b.size * b.shared as u64)
            .cmp(&a.resident.max(a.size * a.shared as u64))
    });
    let (shared, private): (Vec<_>, Vec<_>) = all.into_iter().partition(|s| s.shared);
    mem.segments = shared
        .into_iter()
        .take(4)
        .chain(private.into_iter().take(4))
        .collect();
}

/// Read the memory of `pid` and its descendants now, each shared segment by its own residency
/// where it can be read, with the kernel's accounting beside it.
pub fn read(pid: i32) -> GroupMemory {
    let mut mem = read_pids(&tree(pid));
    for i in 0..mem.segments.len() {
        if mem.segments[i].shared
            && let Some(r) = segment_residency(&mem.segments[i])
        {
            recount(&mut mem, i, r);
        }
    }
    mem.kernel = kernel_huge();
    mem
}

/// The memory of these processes from their page tables (`/proc/PID/smaps`), a shared segment
/// counted once at the largest view; the largest regions kept.
pub fn read_pids(pids: &[i32]) -> GroupMemory {
    let mut mem = GroupMemory::default();
    let mut seen = Seen::new();
    for &p in pids {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{p}/smaps")) else {
            continue; // exited since the tree was listed
        };
        let status = std::fs::read_to_string(format!("/proc/{p}/status"))
            .ok()
            .and_then(|t| parse_status(&t).ok())
            .unwrap_or_default();
        if status.thp_enabled == Some(false) {
            mem.thp_disabled.push(format!("{p} {}", status.name));
        }
        mem.thp_read += usize::from(status.thp_enabled.is_some());
        if let Ok(maps) = parse_smaps(&text) {
            add_process(&mut mem, p, &status.name, &maps, &mut seen);
        }
    }
    keep_largest(&mut mem);
    mem
}

/// A shared segment's own residency: bytes it holds and bytes of them on huge pages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Residency {
    pub resident: u64,
    pub huge: u64,
}

/// Count segment `i` by its own residency instead of a process's view of it.
fn recount(mem: &mut GroupMemory, i: usize, r: Residency) {
    let s = &mut mem.segments[i];
    let add = |t: &mut u64, old: u64, new: u64| *t = (*t + new).saturating_sub(old);
    if s.kind == "hugetlb" {
        let e = mem.hugetlb.entry(s.page_size).or_default();
        add(e, s.resident, r.resident);
    } else {
        add(&mut mem.rss, s.resident, r.resident);
        add(&mut mem.shmem_pmd, s.huge, r.huge);
    }
    s.resident = r.resident;
    s.huge = r.huge;
    s.counted = Some("segment".into());
}

/// The segment behind `s` (through `/proc/PID/map_files/`, root only), counted as the kernel
/// holds it: a hugetlbfs object's allocated blocks are all huge pages of its size; a shmem
/// object's pages are mapped into hugelab read-only to count the PMD-mapped ones.
pub fn segment_residency(s: &Segment) -> Option<Residency> {
    use std::os::unix::fs::MetadataExt;
    let path = format!("/proc/{}/map_files/{:x}-{:x}", s.pid, s.range.0, s.range.1);
    let file = std::fs::File::open(path).ok()?;
    let blocks = file.metadata().ok()?.blocks() * 512;
    if s.kind == "hugetlb" {
        return Some(Residency {
            resident: blocks,
            huge: blocks,
        });
    }
    let size = file.metadata().ok()?.len().min(s.size);
    let seg = crate::backing::segment::MappedSegment::map(&file, size).ok()?;
    let resident = seg.populate_resident().ok()?;
    let (lo, hi) = seg.range();
    let me = crate::probe::process::Proc::new(&crate::probe::Root::system(), std::process::id());
    let m = me
        .smaps()
        .ok()?
        .into_iter()
        .find(|m| m.start == lo && m.end == hi)?;
    Some(Residency {
        resident: resident.max(m.field("Rss")),
        huge: m.field("ShmemPmdMapped"),
    })
}

/// The kernel's huge-page accounting now (hugetlb pools per size, ShmemHugePages).
pub fn kernel_huge() -> Option<KernelHuge> {
    let root = crate::probe::Root::system();
    let mi = crate::probe::meminfo::read(&root).ok().flatten()?;
    let pools = crate::probe::hugetlb::read(&root).unwrap_or_default();
    Some(KernelHuge {
        hugetlb_in_use: pools
            .iter()
            .map(|p| (p.page_size, p.total.saturating_sub(p.free) * p.page_size))
            .collect(),
        hugetlb_reserved: pools
            .iter()
            .map(|p| (p.page_size, p.reserved * p.page_size))
            .collect(),
        shmem_huge: mi.shmem_huge_pages.unwrap_or(0),
        anon_huge: mi.anon_huge_pages.unwrap_or(0),
        thp_gauges: super::huge_gauges(&root),
    })
}

/// The cheap reading of `pid`'s tree now.
pub fn load_view(pid: i32) -> LoadView {
    let mut v = LoadView::default();
    for p in tree(pid) {
        let Some(st) = std::fs::read_to_string(format!("/proc/{p}/status"))
            .ok()
            .and_then(|t| parse_status(&t).ok())
        else {
            continue;
        };
        v.processes += 1;
        v.rss_sum += st.vm_rss.unwrap_or(0);
        v.hugetlb_max = v.hugetlb_max.max(st.hugetlb.unwrap_or(0));
    }
    v
}

/// The server read while its load runs: `after` the load's spawn on a thread of its own (the
/// same delay for every arm), or when the load ends if that comes first. Only the cheap
/// reading is taken then; the page-table walk and the segments' residency follow the load
/// ([`read`]), before the server is stopped or loaded again, so they cannot slow one arm's
/// burst more than another's.
pub struct DuringLoad {
    done: std::sync::mpsc::Sender<()>,
    reader: std::thread::JoinHandle<LoadView>,
}

impl DuringLoad {
    /// Start waiting; `pid` is the server's process.
    pub fn start(pid: i32, after: std::time::Duration) -> std::io::Result<DuringLoad> {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::Builder::new()
            .name("hugelab-server-memory".into())
            .spawn(move || {
                // Blocks until the delay passes or the load ends, whichever is first.
                let during = matches!(
                    wait.recv_timeout(after),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                );
                LoadView {
                    during_load: during,
                    ..load_view(pid)
                }
            })?;
        Ok(DuringLoad { done, reader })
    }

    /// The load has ended: the reading (taken now if it was not yet).
    pub fn finish(self) -> LoadView {
        let _ = self.done.send(());
        self.reader.join().unwrap_or_default()
    }
}

/// CPU time (user + system) of `pid` and its descendants so far, ns: live ones by their own
/// time, exited ones (PostgreSQL's backends after their client left) by their parent's
/// waited-for children's time; each process is counted once.
pub fn tree_cpu_ns(pid: i32) -> u64 {
    let ticks: u64 = tree(pid)
        .into_iter()
        .filter_map(|p| stat(p).map(|s| s.cpu_ticks + s.reaped_children_ticks))
        .sum();
    ticks * super::noise::tick_ns()
}

#[cfg(test)]
mod tests;
