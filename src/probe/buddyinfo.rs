//! /proc/buddyinfo: free blocks per order per zone, and what they mean for huge allocations.
//!
//! The unusable free space index follows Gorman & Whitcroft ("The What, The Why and the Where
//! To of Anti-Fragmentation", OLS 2006), as in the kernel's `unusable_free_index()`:
//! (free pages − free pages in blocks of order ≥ j) / free pages.

pub use crate::model::machine::memory::{Fragmentation, Zone};

use crate::error::ParseError;

/// /proc/buddyinfo of `root` (no zones where it is absent).
pub fn read(root: &crate::probe::Root) -> Result<Vec<Zone>, crate::error::ProbeError> {
    Ok(root
        .parse_opt("/proc/buddyinfo", parse)?
        .unwrap_or_default())
}

pub fn parse(text: &str) -> Result<Vec<Zone>, ParseError> {
    let mut zones = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |m: &str| ParseError::new(i + 1, format!("{m}: {line:?}"));
        let rest = line
            .strip_prefix("Node ")
            .ok_or_else(|| err("expected `Node N, zone NAME counts…`"))?;
        let (node, rest) = rest
            .split_once(',')
            .ok_or_else(|| err("missing comma after node"))?;
        let node: u32 = node
            .trim()
            .parse()
            .map_err(|_| err("node is not a number"))?;
        let rest = rest
            .trim_start()
            .strip_prefix("zone")
            .ok_or_else(|| err("missing `zone`"))?;
        let mut words = rest.split_whitespace();
        let zone = words
            .next()
            .ok_or_else(|| err("missing zone name"))?
            .to_string();
        let free_blocks = words
            .map(|w| w.parse::<u64>().map_err(|_| err("count is not a number")))
            .collect::<Result<Vec<_>, _>>()?;
        zones.push(Zone {
            node,
            zone,
            free_blocks,
        });
    }
    Ok(zones)
}

pub fn fragmentation(zones: &[Zone], order: usize) -> Fragmentation {
    let free_pages: u64 = zones.iter().map(Zone::free_pages).sum();
    let usable: u64 = zones.iter().map(|z| z.free_pages_at_least(order)).sum();
    Fragmentation {
        order,
        free_pages,
        blocks_available: zones.iter().map(|z| z.blocks_available(order)).sum(),
        unusable_index: (free_pages > 0).then(|| (free_pages - usable) as f64 / free_pages as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \nNode 0, zone    DMA32      2      2      4      2      5      4      3      3      4      2    752 \n";

    #[test]
    fn parses_and_derives() {
        let z = parse(SAMPLE).unwrap();
        assert_eq!(z.len(), 2);
        assert_eq!(z[0].zone, "DMA");
        assert_eq!(z[0].free_blocks.len(), 11);
        // DMA: one order-8 (256 pages), one order-9 (512), three order-10 (3072).
        assert_eq!(z[0].free_pages(), 256 + 512 + 3072);
        assert_eq!(z[0].blocks_available(9), 1 + 3 * 2);
        let f = fragmentation(&z[..1], 9);
        let idx = f.unusable_index.unwrap();
        assert!((idx - 256.0 / 3840.0).abs() < 1e-12);
    }

    #[test]
    fn malformed() {
        assert_eq!(parse("Node 0, zone DMA 1 x\n").unwrap_err().line, 1);
        assert!(parse("garbage").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,200}") { let _ = parse(&s); }

        #[test]
        fn index_in_unit_interval(counts in prop::collection::vec(0u64..1_000_000, 0..12), order in 0usize..12) {
            let z = Zone { node: 0, zone: "N".into(), free_blocks: counts };
            let f = fragmentation(&[z], order);
            if let Some(i) = f.unusable_index { prop_assert!((0.0..=1.0).contains(&i)); }
        }
    }
}
