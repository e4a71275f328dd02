//! `hugelab judge` at fleet size (`cargo bench --bench judge`): 50 hosts (25 canary, 25
//! baseline) × 10 metrics over 24 hours at a 30 s step — 1.44 million samples — backfilled into
//! a private Prometheus with promtool, then judged end to end (queries, blocks, autocorrelation,
//! Holm across the 10 metrics, the coverage and kernel evidence). Prints the samples fetched,
//! the requests made and the wall time of the judgement. Needs Debian's prometheus.

#[path = "../tests/common/mod.rs"]
mod common;

use common::openmetrics::{backfill, family, recent_window, relabel};
use hugelab::analyze::simulate::{Fleet, Rng};
use std::time::Instant;

const HOSTS: usize = 25;
const METRICS: usize = 10;
const HOURS: f64 = 24.0;
const STEP: f64 = 30.0;

fn main() {
    if !common::has_prometheus() {
        return;
    }
    let (start, end) = recent_window(HOURS);
    let t = Instant::now();
    let mut rng = Rng::new(50);
    let mut text = String::new();
    for k in 0..METRICS {
        let f = Fleet {
            hosts: HOSTS,
            step: STEP,
            hours: HOURS,
            phi: 0.9,
            sigma: 0.05,
            effect: if k == 0 { 0.03 } else { 0.0 },
            ..Fleet::default()
        };
        let (c, b) = f.series(&mut rng);
        let mut s = relabel(c, start, |i| vec![("instance", format!("canary-{i}:9100"))]);
        s.extend(relabel(b, start, |i| {
            vec![("instance", format!("base-{i}:9100"))]
        }));
        let name = format!("fleet_metric_{k}");
        family(&mut text, &name, "gauge", &name, &s);
    }
    text.push_str("# EOF\n");
    let lines = text.lines().count();
    let dir = tempfile::tempdir().unwrap();
    let data = backfill(dir.path(), &text);
    println!(
        "generated and backfilled {lines} samples in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let server =
        common::PrometheusServer::start(dir.path(), "global:\n  scrape_interval: 1h\n", &data);
    let mut args: Vec<String> = vec![
        "judge".into(),
        "--prometheus".into(),
        server.url(),
        "--canary".into(),
        "instance=~\"canary-.*\"".into(),
        "--baseline".into(),
        "instance=~\"base-.*\"".into(),
        "--from".into(),
        format!("{start:.0}"),
        "--to".into(),
        format!("{:.0}", end - STEP),
        "--json".into(),
    ];
    for k in 0..METRICS {
        args.push("--metric".into());
        args.push(format!(
            "m{k}=avg by (instance) (fleet_metric_{k}{{$sel}}),lower"
        ));
    }
    for round in 0..3 {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hugelab"))
            .args(&args)
            .output()
            .unwrap();
        let wall = t.elapsed().as_secs_f64();
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!("{}", String::from_utf8_lossy(&out.stderr));
        });
        println!(
            "judge round {round}: {} samples in {} requests, {:.2} s wall ({:.2} s inside), m0 {} [{}, {}] {}",
            r["samples"],
            r["requests"],
            wall,
            r["elapsed_s"].as_f64().unwrap(),
            r["metrics"][0]["contrast"]["percent"]["point"],
            r["metrics"][0]["contrast"]["percent"]["lo"],
            r["metrics"][0]["contrast"]["percent"]["hi"],
            r["metrics"][0]["contrast"]["verdict"],
        );
    }
}
