//! The system side of a bench: hugetlb pools grown for the run, mTHP sizes switched on while
//! their regions fault in, all through one settings guard made on first use (injected, so it
//! can be a fake sysfs in tests) and restored at the end.

use super::{Plan, Skipped};
use crate::backing::Backing;
use crate::control::{Guard, Knob, Restored};
use crate::probe::status::Status;
use crate::units::Bytes;

/// The settings guard of one bench, made the first time a setting changes.
pub struct BenchSettings<'a> {
    guard: Option<Guard>,
    make: Box<dyn FnMut() -> anyhow::Result<Guard> + 'a>,
    /// What was changed for the run, one line each, for the output.
    pub changed: Vec<String>,
}

impl<'a> BenchSettings<'a> {
    /// Guards the live machine (`/sys`, the journal in `/run/hugelab`), under `owner` where
    /// this process already owns the settings.
    pub fn live(owner: Option<std::sync::Arc<crate::control::Owner>>) -> BenchSettings<'a> {
        BenchSettings::new(Box::new(move || {
            Ok(match &owner {
                Some(o) => Guard::system_owned(o)?,
                None => Guard::system()?,
            })
        }))
    }

    /// Whether preparing `plan` may change settings: as root, a hugetlb pool to grow or an
    /// mTHP size to switch on.
    pub fn may_change(plan: &Plan, st: &Status, grow: bool) -> bool {
        st.is_root
            && plan.backings.iter().any(|b| match b {
                Backing::Hugetlb { .. } => grow,
                Backing::Mthp { .. } => true,
                _ => false,
            })
    }

    pub fn new(make: Box<dyn FnMut() -> anyhow::Result<Guard> + 'a>) -> BenchSettings<'a> {
        BenchSettings {
            guard: None,
            make,
            changed: Vec::new(),
        }
    }

    fn guard(&mut self) -> anyhow::Result<&mut Guard> {
        if self.guard.is_none() {
            self.guard = Some((self.make)()?);
        }
        Ok(self.guard.as_mut().expect("just set"))
    }

    /// Put back every setting changed; what could not be restored, described.
    pub fn restore(&mut self) -> Vec<Restored> {
        self.guard
            .take()
            .map(|mut g| g.restore())
            .unwrap_or_default()
    }

    /// Make hugetlb pools and mTHP knobs ready. Returns backings that cannot run, with reasons.
    pub fn prepare(
        &mut self,
        plan: &Plan,
        st: &Status,
        grow: bool,
    ) -> anyhow::Result<Vec<Skipped>> {
        let mut skipped = Vec::new();
        let max_size = plan.sizes.iter().copied().max().unwrap_or(0);
        for &b in &plan.backings {
            match b {
                Backing::Hugetlb { page_size } => {
                    let pool = st
                        .hugetlb
                        .iter()
                        .find(|p| p.page_size == page_size)
                        .expect("validated in plan");
                    let need = max_size.div_ceil(page_size);
                    if pool.available() >= need {
                        continue;
                    }
                    let short = need - pool.available();
                    if !grow || !st.is_root {
                        skipped.push(Skipped {
                        below_page: false,
                        backing: b,
                        size: None,
                        reason: format!(
                            "the {} pool has {} free unreserved pages, {} needed; {}",
                            Bytes(page_size),
                            pool.available(),
                            need,
                            if st.is_root { "drop --no-grow to let hugelab grow it for the run".into() } else { format!("run as root, or `echo {} > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages`", pool.total + short, page_size / 1024) }
                        ),
                    });
                        continue;
                    }
                    let g = self.guard()?;
                    let knob = Knob::HugetlbPages {
                        size: page_size,
                        node: None,
                    };
                    let want = pool.total + short;
                    let applied = g.set(knob, &want.to_string())?;
                    self.changed.push(format!(
                        "{knob}: {} → {} (asked {want})",
                        pool.total, applied.actual
                    ));
                    if applied.actual.parse::<u64>().unwrap_or(0) < want {
                        skipped.push(Skipped {
                        below_page: false,
                        backing: b,
                        size: None,
                        reason: format!("the kernel could only grow the {} pool to {} of {want} pages (memory too fragmented or too little free)", Bytes(page_size), applied.actual),
                    });
                    }
                }
                Backing::Mthp { size } => {
                    let m = st
                        .thp
                        .mthp
                        .iter()
                        .find(|m| m.size_bytes == size)
                        .expect("validated in plan");
                    if m.enabled.as_ref().is_some_and(|e| e.selected == "always") {
                        continue;
                    }
                    if !st.is_root {
                        skipped.push(Skipped {
                            below_page: false,
                            backing: b,
                            size: None,
                            reason: format!(
                                "mTHP {} is not `always` and changing it needs root",
                                Bytes(size)
                            ),
                        });
                        continue;
                    }
                    self.changed.push(format!(
                    "mthp.{}: {} → always while each of its regions faults in (one mTHP size at a time; this affects the whole machine meanwhile)",
                    Bytes(size),
                    m.enabled.as_ref().map_or("-", |e| e.selected.as_str())
                ));
                }
                _ => {}
            }
        }
        Ok(skipped)
    }

    /// Turn one mTHP size on to `always` while `f` faults memory in, then back, so each
    /// mthp-<size> region gets exactly its size (the kernel prefers the largest enabled size).
    pub fn with_mthp<T>(
        &mut self,
        b: Backing,
        st: &Status,
        f: impl FnOnce() -> T,
    ) -> anyhow::Result<T> {
        let Backing::Mthp { size } = b else {
            return Ok(f());
        };
        let knob = Knob::MthpEnabled { size };
        let already = st.thp.mthp.iter().any(|m| {
            m.size_bytes == size && m.enabled.as_ref().is_some_and(|e| e.selected == "always")
        });
        if already || !st.is_root {
            return Ok(f());
        }
        let g = self.guard()?;
        g.set(knob, "always")?;
        let out = f();
        let original = g.original(&knob).unwrap_or("never").to_string();
        g.set(knob, &original)?;
        Ok(out)
    }
}
