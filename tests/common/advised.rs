//! Stored runs for the advice tests: arms with a known effect, built in the store as a run
//! would leave them (`advise.rs`, `apply.rs`).

use hugelab::backing::arm::parse_arm;
use hugelab::store::{ArmRow, Store, TrialRow};
use std::path::Path;

/// One stored run: `arms` as NAME=SPEC (the first the baseline), each later arm's wall time
/// changed by `effect[i-1]` (−0.1 = 10% faster) with ±1% jitter, flagged where asked; with
/// `trace_ms`, every trial of the last arm stalled that long in compaction.
pub fn stored(
    db: &Path,
    arms: &[&str],
    effect: &[f64],
    flagged: &[bool],
    command: &[&str],
    preset: Option<&str>,
    trace_ms: Option<f64>,
) -> i64 {
    let mut s = Store::open(db).unwrap();
    let parsed: Vec<_> = arms.iter().map(|a| parse_arm(a).unwrap()).collect();
    let rows: Vec<ArmRow> = parsed
        .iter()
        .enumerate()
        .map(|(i, a)| ArmRow {
            idx: i as i64,
            name: a.name.clone(),
            spec: a.spec.clone(),
        })
        .collect();
    let plan = serde_json::json!({
        "baseline": 0,
        "metrics": [{"name": "wall_s", "better": "lower"}],
        "arms": parsed,
        "server": preset.map(|p| serde_json::json!({"preset": p})),
    });
    let command: Vec<String> = command.iter().map(|c| c.to_string()).collect();
    let id = s
        .create_run(
            Some("advise"),
            &command,
            Some("6.18"),
            "running",
            &serde_json::from_value(plan.clone()).unwrap(),
            &rows,
        )
        .unwrap();
    let mut seq = 0;
    for b in 0..14i64 {
        for a in 0..arms.len() {
            let jitter = 1.0 + 0.01 * (((b * 7 + a as i64 * 3) % 5) as f64 - 2.0) / 2.0;
            let v = if a == 0 { 1.0 } else { 1.0 + effect[a - 1] } * jitter;
            let flag = a > 0 && flagged[a - 1];
            let trace = match trace_ms {
                Some(ms) if a + 1 == arms.len() => serde_json::json!({"latencies": [
                    {"kind": "compaction", "hist": {"total_ns": (ms * 1e6) as u64, "log2": [[1048576, 3]]}}
                ]}),
                Some(_) => serde_json::json!({"latencies": []}),
                None => serde_json::Value::Null,
            };
            s.add_trial(
                id,
                &TrialRow {
                    block: b,
                    arm_idx: a as i64,
                    seq,
                    ok: true,
                    flagged: flag.then(|| "asked for huge pages but got none".to_string()),
                    metrics: [("wall_s".to_string(), v)].into(),
                    evidence: serde_json::json!({
                        "memory": {"coverage_at_peak": if a == 0 || flag { 0.0 } else { 0.97 }},
                        "trace": trace,
                    })
                    .into(),
                },
            )
            .unwrap();
            seq += 1;
        }
    }
    s.finish_run::<()>(id, "complete", None).unwrap();
    id
}
