//! `hugelab compare A B` as a table: per shared arm both medians and B against A with its
//! unpaired interval (the answer lines above it come from `summary`).

use super::Grid;
use crate::model::report::CompareResult;
use crate::model::stats::Estimate;
use crate::units::{Unit, fmt_interval};

/// `compare A B`: per shared arm, both medians and B vs A with its unpaired interval.
pub fn compare_grid(c: &CompareResult) -> Grid {
    let mut g = Grid::new(
        format!(
            "A = {}\nB = {}\nmetric {} (unpaired: Hodges–Lehmann shift of log values, Mann–Whitney {} interval; δ = {}%)",
            c.a,
            c.b,
            c.metric,
            crate::model::verdict::fmt_level(c.confidence),
            c.effect * 100.0
        ),
        &[
            "arm", "n (A, B)", "median A", "median B", "B vs A", "p", "verdict",
        ],
    );
    let reference = c.rows.iter().find_map(|r| r.median_a).unwrap_or(0.0);
    // Medians to 3 significant digits at one scale for the column.
    let shown = Unit::of_metric(&c.metric).fmt_for(reference, 0.0);
    for r in &c.rows {
        g.rows.push(vec![
            r.arm.clone(),
            format!("{}, {}", r.n_a, r.n_b),
            r.median_a.map_or("-".into(), |v| shown.show(v)),
            r.median_b.map_or("-".into(), |v| shown.show(v)),
            match r.b_vs_a_percent {
                Some(Estimate {
                    point,
                    lo: Some(lo),
                    hi: Some(hi),
                    ..
                }) => format!("{point:+.2}% {}", fmt_interval(lo, hi, 2)),
                Some(e) => format!("{:+.2}%", e.point),
                None => "-".into(),
            },
            r.p_value.map_or("-".into(), |p| format!("{p:.4}")),
            r.verdict.map_or("INCONCLUSIVE".to_string(), |v| {
                format!("{v:?}").to_uppercase()
            }),
        ]);
    }
    g
}
