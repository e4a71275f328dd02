//! `exporter --trace`: a thread traces the stall kinds system-wide and adds each half second's
//! latencies to histograms since start, exported as Prometheus histograms with every scrape.

use std::collections::BTreeMap;
use std::time::Duration;

/// Stall histograms since start, filled by the trace thread.
#[derive(Debug, Default)]
pub struct Stalls {
    /// kind → (sum ns, count, count per power-of-two bucket by its lower edge in ns).
    kinds: BTreeMap<String, (u64, u64, BTreeMap<u64, u64>)>,
    pub lost: u64,
}

/// Bucket upper bounds: 1 µs to 16 s in powers of two, then +Inf.
fn bounds() -> Vec<f64> {
    let mut v: Vec<f64> = (10..=34).map(|k| (1u64 << k) as f64 / 1e9).collect();
    v.push(f64::INFINITY);
    v
}

impl Stalls {
    pub fn add(&mut self, w: &crate::analyze::trace::TraceWindow) {
        for l in &w.latencies {
            let e = self.kinds.entry(l.kind.clone()).or_default();
            e.0 += l.hist.total_ns;
            e.1 += l.hist.count;
            for (lo, n) in &l.hist.log2 {
                *e.2.entry(*lo).or_insert(0) += n;
            }
        }
    }

    pub fn histograms(&self) -> Vec<crate::model::exporter::StallHistogram> {
        let b = bounds();
        self.kinds
            .iter()
            .map(|(kind, (sum, count, log2))| {
                let mut buckets: Vec<(f64, u64)> = b.iter().map(|u| (*u, 0)).collect();
                for (lo, n) in log2 {
                    // A log2 row [lo, 2·lo) falls under the first bound ≥ 2·lo.
                    let hi = (*lo).max(1) as f64 * 2.0 / 1e9;
                    let i = b.iter().position(|u| *u >= hi).unwrap_or(b.len() - 1);
                    buckets[i].1 += n;
                }
                crate::model::exporter::StallHistogram {
                    kind: kind.clone(),
                    sum_s: *sum as f64 / 1e9,
                    count: *count,
                    buckets,
                }
            })
            .collect()
    }
}

/// The trace thread: stops (and unmounts tracefs if it mounted it) when told.
pub struct TraceThread {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl TraceThread {
    pub fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.handle.join().ok();
    }
}

/// Trace `kinds` system-wide until stopped, adding each half second's stalls.
pub fn start_trace(
    kinds: &[crate::analyze::trace::TraceKind],
) -> anyhow::Result<(std::sync::Arc<std::sync::Mutex<Stalls>>, TraceThread)> {
    use crate::analyze::trace::{Aggregator, tracepoints};
    use crate::collect::tracepoints::{Tracefs, Tracer};
    let tfs = Tracefs::open()?;
    let wanted: Vec<(&str, Option<&str>)> = tracepoints(kinds);
    let mut tracer = Tracer::open(&tfs, &wanted);
    for m in &tracer.missing {
        crate::eprintln_safe!("note: --trace: {} not traced: {}", m.event, m.reason);
    }
    if tracer.sources.is_empty() {
        anyhow::bail!("--trace: no tracepoint could be opened");
    }
    if let Some(n) = &tfs.note {
        crate::eprintln_safe!("note: {n}");
    }
    tracer.enable()?;
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Stalls::default()));
    let out = shared.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let handle = std::thread::Builder::new()
        .name("hugelab-trace".into())
        .spawn(move || {
            let _tfs = tfs; // mounted for as long as the exporter runs
            let names: Vec<String> = tracer.sources.iter().map(|s| s.name.clone()).collect();
            let mut agg = Aggregator::new(names, tracer.formats());
            while !stopped.load(std::sync::atomic::Ordering::SeqCst) {
                for e in tracer.poll(Duration::from_millis(500)) {
                    agg.add(&e);
                }
                let w = agg.take(0.0, 0.0, &|_| String::new());
                let mut s = out.lock().unwrap_or_else(|e| e.into_inner());
                s.add(&w);
                s.lost = tracer.lost;
            }
            drop(tracer);
        })?;
    Ok((shared, TraceThread { stop, handle }))
}
