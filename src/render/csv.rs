//! CSV: one row per stored trial, every metric a column.

use crate::store::{ArmRow, TrialRow};

/// A CSV field, quoted when it holds a separator, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn trials(run: i64, arms: &[ArmRow], trials: &[TrialRow]) -> String {
    let names: Vec<String> = trials
        .iter()
        .flat_map(|t| t.metrics.keys().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut s = format!(
        "run,block,seq,arm,ok,flagged,coverage_at_peak{}\n",
        names
            .iter()
            .map(|n| format!(",{}", field(n)))
            .collect::<String>()
    );
    for t in trials {
        let arm = arms
            .iter()
            .find(|a| a.idx == t.arm_idx)
            .map_or("", |a| a.name.as_str());
        let vals: String = names
            .iter()
            .map(|n| {
                format!(
                    ",{}",
                    t.metrics.get(n).map_or(String::new(), |v| v.to_string())
                )
            })
            .collect();
        s += &format!(
            "{run},{},{},{},{},{},{}{vals}\n",
            t.block,
            t.seq,
            field(arm),
            t.ok,
            field(t.flagged.as_deref().unwrap_or("")),
            t.evidence
                .gathered
                .memory
                .coverage_at_peak
                .map_or(String::new(), |c| c.to_string()),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_and_quotes_stay_one_field() {
        let arms = vec![ArmRow {
            idx: 0,
            name: "a,b".into(),
            spec: String::new(),
        }];
        let t = TrialRow {
            block: 0,
            arm_idx: 0,
            seq: 0,
            ok: true,
            flagged: Some("said \"no\"".into()),
            metrics: [("wall_s".to_string(), 1.5)].into(),
            evidence: serde_json::json!({"memory": {"coverage_at_peak": 0.5}}).into(),
        };
        let csv = trials(7, &arms, &[t]);
        assert_eq!(
            csv,
            "run,block,seq,arm,ok,flagged,coverage_at_peak,wall_s\n7,0,0,\"a,b\",true,\"said \"\"no\"\"\",0.5,1.5\n"
        );
    }
}
