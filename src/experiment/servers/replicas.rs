//! Replicas (warm design): where one block's bursts leave the machine room, several servers per
//! arm run at once — each its own port, directory and data copy — so every block yields several
//! paired ratios. A replica's lifetimes are units of their own (each replica's server pair is a
//! separate instance, restarted with the others), so the interval stays over lifetimes and
//! narrows about as √replicas for the same running time. The number comes from what the first
//! lifetime measured: the CPUs one arm's burst kept busy against the CPUs the rest of the
//! machine left, the memory every arm's server took against MemAvailable, and the hugetlb
//! pool's free pages against what the servers committed; `--replicas N` chooses instead.

use super::tune::Demand;
use super::{Served, Warm, arm_servers, not_up};
use crate::units::Bytes;
use std::collections::BTreeMap;

/// The most replicas chosen without `--replicas`.
const MOST: usize = 8;

/// The share of the CPUs the rest of the machine left that every burst of a block may use.
const CPU_SHARE: f64 = 0.9;

/// The share of MemAvailable further replicas' servers may take.
const MEMORY_SHARE: f64 = 0.5;

/// What the first lifetime measured of the machine's room.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Room {
    pub arms: usize,
    pub cpus: f64,
    /// One arm's burst alone (None: not measured).
    pub demand: Option<Demand>,
    /// Every arm's server's memory at its configuration (one replica's), and MemAvailable.
    pub servers_bytes: u64,
    pub available: Option<u64>,
    /// Per hugetlb page size, the pool's unreserved free bytes, and what one replica's servers
    /// committed of it.
    pub pool_free: BTreeMap<u64, u64>,
    pub pool_need: BTreeMap<u64, u64>,
}

/// The replicas `room` holds, and why, in words.
pub(super) fn choose(room: &Room) -> (usize, String) {
    let Some(Demand { own, others }) = room.demand.filter(|d| d.own > 0.0) else {
        return (
            1,
            "replicas 1: no burst measured the machine's room (--replicas N to run N at once)"
                .into(),
        );
    };
    let per = own * room.arms as f64;
    let left = (room.cpus - others).max(0.0);
    let by_cpu = (CPU_SHARE * left / per).floor() as usize;
    let by_memory = match room.available {
        Some(av) if room.servers_bytes > 0 => {
            1 + (MEMORY_SHARE * av as f64 / room.servers_bytes as f64).floor() as usize
        }
        _ => usize::MAX,
    };
    // Each page size's pool on its own: free 1 GiB pages hold no 2 MiB server.
    let pool = room
        .pool_need
        .iter()
        .filter(|(_, need)| **need > 0)
        .map(|(size, need)| {
            let free = room.pool_free.get(size).copied().unwrap_or(0);
            (1 + (free / need) as usize, *size, *need, free)
        })
        .min();
    let by_pool = pool.map_or(usize::MAX, |p| p.0);
    let n = by_cpu.min(by_memory).min(by_pool).clamp(1, MOST);
    let bound = if n == by_cpu.max(1) {
        format!(
            "the CPUs: one arm's burst alone kept {own:.1} busy, so a replica of {} arms needs {per:.1}, and {} of the {left:.1} CPUs the rest of the machine left hold {}",
            room.arms,
            pct(CPU_SHARE),
            by_cpu.max(1)
        )
    } else if n == by_memory {
        format!(
            "memory: one replica's servers take {}, and further replicas may use {} of MemAvailable {}",
            Bytes(room.servers_bytes),
            pct(MEMORY_SHARE),
            Bytes(room.available.unwrap_or(0))
        )
    } else if let Some((_, size, need, free)) = pool.filter(|_| n == by_pool) {
        format!(
            "the {} hugetlb pool: one replica's servers committed {} of it and {} is free (--replicas N sizes the pool for N)",
            Bytes(size),
            Bytes(need),
            Bytes(free)
        )
    } else {
        format!("the most chosen without --replicas ({MOST})")
    };
    (
        n,
        format!(
            "replicas {n}: bound by {bound}{} (--replicas to choose)",
            what_they_do(n)
        ),
    )
}

/// What `n` replicas mean for the run, in words (nothing for one).
fn what_they_do(n: usize) -> String {
    match n {
        0 | 1 => String::new(),
        n => format!(
            "; each block holds {n} paired bursts, each replica's servers with a port, directory (and data copy) and lifetimes of their own, restarted with the others"
        ),
    }
}

/// A server's hugetlb bytes per page size: what its mappings hold of each pool, and what it
/// committed (reserved, not yet faulted) counted against the one size it uses (the default
/// size when none is resident yet).
fn committed_by_size(m: &crate::collect::server::GroupMemory, default: u64) -> BTreeMap<u64, u64> {
    let mut by = m.hugetlb.clone();
    let resident: u64 = by.values().sum();
    if m.hugetlb_committed > resident {
        let size = match by.len() {
            0 => default,
            1 => *by.keys().next().unwrap_or(&default),
            // Several sizes: the reservation's size is not known; resident bytes only.
            _ => return by,
        };
        *by.entry(size).or_default() += m.hugetlb_committed - resident;
    }
    by
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

impl Warm {
    /// The room the first lifetime's servers leave, with `demand` measured of one arm's burst.
    fn room(&self, demand: Option<Demand>) -> Room {
        let root = crate::probe::Root::system();
        let meminfo = crate::probe::meminfo::read(&root).ok().flatten();
        let default = meminfo
            .as_ref()
            .and_then(|m| m.hugepagesize)
            .unwrap_or(2 << 20);
        let mut servers_bytes = 0;
        let mut pool_need: BTreeMap<u64, u64> = BTreeMap::new();
        for r in self.running.iter().take(self.arms).flatten() {
            let m = crate::collect::server::read(r.pid());
            servers_bytes += m.configured_bytes();
            for (size, bytes) in committed_by_size(&m, default) {
                *pool_need.entry(size).or_default() += bytes;
            }
        }
        let pool_free = crate::probe::hugetlb::read(&root)
            .unwrap_or_default()
            .iter()
            .map(|p| (p.page_size, p.bytes(p.available())))
            .collect();
        Room {
            arms: self.arms,
            cpus: crate::probe::cpu::allowed_cpus().len().max(1) as f64,
            demand,
            servers_bytes,
            available: meminfo.and_then(|m| m.mem_available),
            pool_free,
            pool_need,
        }
    }

    /// After the first lifetime's servers are up and measured: the replicas chosen (or asked
    /// for), said once, and every further replica's servers made and started.
    pub(super) fn start_replicas(&mut self, demand: Option<Demand>) -> Result<(), (usize, Served)> {
        let (n, note) = match self.replicas_asked {
            Some(n) => (
                n,
                format!("replicas {n}: as asked (--replicas){}", what_they_do(n)),
            ),
            // A path every replica would share rules replicas out in any schedule: said first,
            // so the fix is named whether or not the run can run its arms at once.
            None if self.replicas_shared.is_some() => {
                (1, self.replicas_shared.clone().unwrap_or_default())
            }
            None if !self.duet => (
                1,
                "replicas 1: the run alternates, one burst at a time (--replicas N runs N at once)"
                    .into(),
            ),
            None => choose(&self.room(demand)),
        };
        self.pending.push(note);
        for r in 1..n {
            let (mut servers, dirs) = arm_servers(&self.plan, &self.base, r).map_err(|e| {
                (
                    0,
                    not_up(&format!(
                        "replica {}'s servers could not be made: {e}",
                        r + 1
                    )),
                )
            })?;
            if let Some(b) = self.burst {
                for s in &mut servers {
                    s.slot.burst = Some(b);
                    s.fill_all(&self.template_load);
                }
            }
            self.servers.extend(servers);
            self.running.extend((0..self.arms).map(|_| None));
            self._dirs.extend(dirs);
        }
        self.replicas = n;
        match self.start_all() {
            Err((arm, served)) if n > 1 && self.replicas_asked.is_none() => {
                // Chosen, not asked for: the servers share something their words name outright
                // (a data directory, a port) rather than through {dir} and {port}. One replica
                // still measures.
                self.servers.truncate(self.arms);
                self.running.truncate(self.arms);
                self._dirs.truncate(1);
                self.replicas = 1;
                self.pending.pop(); // the choice, said again with what became of it
                self.pending.push(format!(
                    "replicas 1: the room held {n}, but a further replica's server of arm {} did not come up — {}; the run goes on with one",
                    self.plan.arms[arm].name,
                    served.failure.unwrap_or_default()
                ));
                self.start_all()
            }
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(own: f64, cpus: f64) -> Room {
        Room {
            arms: 2,
            cpus,
            demand: Some(Demand { own, others: 0.1 }),
            servers_bytes: 1 << 30,
            available: Some(100 << 30),
            pool_free: BTreeMap::new(),
            pool_need: BTreeMap::new(),
        }
    }

    #[test]
    fn replicas_fill_the_cpus_one_burst_left_and_no_more() {
        // The 16-CPU machine's PostgreSQL A/A: pgbench -c2 -j2 and its server kept 1.85 CPUs
        // busy, so a replica of two arms needs 3.7 and three fit in 90% of 15.9.
        let (n, why) = choose(&room(1.85, 16.0));
        assert_eq!(n, 3, "{why}");
        assert!(why.contains("bound by the CPUs") && why.contains("3 paired bursts"));
        // The 2-CPU VM: one pair already needs more than the machine.
        assert_eq!(choose(&room(0.95, 2.0)).0, 1);
        // A light load on a large machine: at most MOST.
        let (n, why) = choose(&room(0.1, 64.0));
        assert_eq!(n, MOST);
        assert!(
            why.contains("the most chosen without --replicas (8)"),
            "{why}"
        );
        // Nothing measured: one, said so.
        let mut r = room(1.0, 16.0);
        r.demand = None;
        assert!(choose(&r).1.contains("no burst measured"));
    }

    #[test]
    fn memory_and_the_hugetlb_pool_bound_replicas_before_the_cpus_do() {
        let mut r = room(0.5, 64.0);
        r.servers_bytes = 10 << 30;
        r.available = Some(41 << 30);
        // Half of 41 GiB holds two more replicas of 10 GiB: three in all.
        let (n, why) = choose(&r);
        assert_eq!(n, 3, "{why}");
        assert!(why.contains("bound by memory"), "{why}");
        r.available = Some(1000 << 30);
        r.pool_need = [(2 << 20, 1 << 30)].into();
        r.pool_free = [(2 << 20, 1 << 30)].into();
        let (n, why) = choose(&r);
        assert_eq!(n, 2, "{why}");
        assert!(why.contains("the 2M hugetlb pool"), "{why}");
        // Free 1 GiB pages are no room for servers on 2 MiB pages: counted per size.
        r.pool_free = [(1 << 30, 8 << 30), (2 << 20, 0)].into();
        let (n, why) = choose(&r);
        assert_eq!(n, 1, "{why}");
        assert!(why.contains("the 2M hugetlb pool"), "{why}");
    }
}
