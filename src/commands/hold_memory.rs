//! `hugelab hold-memory`: memory with a known backing, mapped, faulted in and held — for
//! examples, tests and recipes that need a process whose pages are known.

use super::UsageError;
use crate::backing::{Backing, Region};
use crate::units::Bytes;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct HoldMemoryArgs {
    /// 4k, thp, hugetlb-2m, hugetlb-1g, mthp-<size> or `plain` (no madvise at all)
    #[arg(long)]
    pub backing: String,
    /// How much to map, e.g. 64M, 1G
    #[arg(long)]
    pub size: Bytes,
    /// PR_SET_THP_DISABLE before mapping
    #[arg(long)]
    pub thp_disable: bool,
    /// Offset the region by 4 KiB from a 2 MiB boundary
    #[arg(long)]
    pub unaligned: bool,
    /// Reserve nothing and touch one page per GiB (a huge, mostly empty mapping)
    #[arg(long)]
    pub sparse: bool,
    /// After faulting in, give back three of every four 4 KiB pages (fragments free memory; with a
    /// size near MemAvailable, later huge-page faults must compact)
    #[arg(long)]
    pub fragment: bool,
    /// How long to hold the memory before exiting
    #[arg(long, default_value_t = 3600)]
    pub seconds: u64,
}

/// A size this machine can map and fault in (exit 2 otherwise): at least one page, and at most
/// MemTotal — or for `--sparse`, which reserves nothing, the 128 TiB of a user address space.
fn check_size(size: u64, sparse: bool) -> Result<(), UsageError> {
    if size < 4096 {
        return Err(UsageError(format!(
            "--size {size}: below one 4 KiB page; give at least 4K"
        )));
    }
    let limit = if sparse {
        Some((128u64 << 40, "a user address space (128T)".to_string()))
    } else {
        crate::probe::meminfo::read(&crate::probe::Root::system())
            .ok()
            .flatten()
            .and_then(|m| m.mem_total)
            .map(|t| (t, format!("this machine's memory (MemTotal {})", Bytes(t))))
    };
    match limit {
        Some((max, what)) if size > max => Err(UsageError(format!(
            "--size {}: more than {what}; give a size below it",
            if size > 1 << 60 {
                size.to_string()
            } else {
                Bytes(size).to_string()
            }
        ))),
        _ => Ok(()),
    }
}

/// Map and fault in memory with a known backing, print `ready START END`, and wait.
pub fn run(a: HoldMemoryArgs) -> anyhow::Result<i32> {
    if a.thp_disable {
        crate::sys::set_thp_policy(crate::sys::ThpPolicy::Off)?;
    }
    check_size(a.size.0, a.sparse)?;
    let (backing, plain) = match a.backing.as_str() {
        "plain" => (Backing::Base, true),
        b => (b.parse::<Backing>().map_err(UsageError)?, false),
    };
    let region = if a.sparse {
        Region::map_sparse(a.size.0, 1 << 30)?
    } else {
        let mut r = if plain {
            Region::map_plain(a.size.0, a.unaligned)?
        } else {
            Region::map(a.size.0, backing)?
        };
        r.populate()?;
        if a.fragment {
            r.fragment()?;
        }
        r
    };
    println!(
        "ready {:x} {:x}",
        region.start(),
        region.start() + region.mapped_len() as u64
    );
    std::thread::sleep(Duration::from_secs(a.seconds));
    Ok(0)
}
