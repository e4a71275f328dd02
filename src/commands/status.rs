//! `hugelab status`: probe, optionally explain, render; `--interval` repeats with deltas.

use super::print_json;
use crate::analyze::findings::{self, Finding};
use crate::probe::{Root, status};
use crate::units::parse_positive_duration;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Add findings, each with its evidence and the reason it matters
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub out: crate::options::Json,
    /// Repeat every interval (e.g. 2s) and show counter changes since the previous sample; Ctrl-C stops
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub interval: Option<std::time::Duration>,
    /// Stop after this many samples in --interval mode
    #[arg(long, requires = "interval", allow_negative_numbers = true, value_parser = crate::options::parse_count)]
    pub count: Option<usize>,
    /// Read /proc and /sys under this directory instead of / (for captured fixtures)
    #[arg(long, hide = true)]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub store: crate::options::Database,
}
use std::collections::BTreeMap;

#[derive(serde::Serialize)]
struct StatusJson<'a> {
    #[serde(flatten)]
    status: &'a status::Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    findings: Option<&'a [Finding]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    counter_deltas: Option<&'a BTreeMap<String, i64>>,
    /// What `bench tlb` last measured on this host (run id, when, the reach).
    #[serde(skip_serializing_if = "Option::is_none")]
    tlb: Option<&'a crate::analyze::tlb::Measured>,
}

pub fn run(a: StatusArgs) -> anyhow::Result<i32> {
    let root = a.root.clone().map_or_else(Root::system, Root::new);
    let mut previous: Option<status::Status> = None;
    let mut samples = 0u64;
    // The machine's measured TLB, when `bench tlb` has run here (not for a fixture's tree).
    let tlb = if a.root.is_none() {
        crate::stored_runs::measured_tlb(&a.store.db)
    } else {
        None
    };
    loop {
        let s = status::probe(&root).context("reading the machine's page-size state")?;
        let f = a.explain.then(|| findings::explain(&s));
        let deltas = previous
            .as_ref()
            .map(|p| counter_deltas(&p.counters, &s.counters));
        if a.out.json {
            print_json(&StatusJson {
                status: &s,
                findings: f.as_deref(),
                counter_deltas: deltas.as_ref(),
                tlb: tlb.as_ref(),
            })?;
        } else {
            if a.interval.is_some() {
                println!("── {} ──", humantime_now());
            }
            print!("{}", crate::render::status::render(&s, f.as_deref()));
            if let Some(t) = &tlb {
                for l in crate::render::summary::wrap_hanging(
                    &crate::render::tlb::summary_line(&t.reach, t.run, &t.created),
                    2,
                ) {
                    println!("{l}");
                }
            }
            if let Some(d) = &deltas {
                let changed: BTreeMap<String, u64> = d
                    .iter()
                    .filter(|(_, v)| **v != 0)
                    .map(|(k, v)| (k.clone(), v.unsigned_abs()))
                    .collect();
                println!("\nchanged since the previous sample");
                if changed.is_empty() {
                    println!("  nothing");
                } else {
                    print!("{}", crate::render::status::counter_lines(&changed));
                }
            }
        }
        samples += 1;
        let Some(every) = a.interval else { break };
        if a.count.is_some_and(|c| samples >= c as u64) {
            break;
        }
        previous = Some(s);
        std::thread::sleep(every);
    }
    Ok(0)
}

/// Counter changes between two samples (negative only if a counter was reset).
pub fn counter_deltas(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, i64> {
    after
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                *v as i64 - before.get(k).copied().unwrap_or(0) as i64,
            )
        })
        .collect()
}

fn humantime_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    format!("{h:02}:{m:02}:{s:02} UTC")
}
