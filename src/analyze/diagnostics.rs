//! Diagnostics of a series of blocks, each with a plain-language warning when it matters:
//! drift across blocks (least-squares slope), lag-1 autocorrelation, and a bimodality hint
//! (Sarle's bimodality coefficient, SAS/STAT manual; > 0.555 suggests two modes, e.g. runs
//! that did and did not get huge pages).

pub use crate::model::analysis::Diagnostics;
use crate::stats::{mean, summarize};

pub fn slope(y: &[f64]) -> Option<f64> {
    let n = y.len();
    if n < 3 {
        return None;
    }
    let xm = (n - 1) as f64 / 2.0;
    let ym = mean(y);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in y.iter().enumerate() {
        sxy += (i as f64 - xm) * (v - ym);
        sxx += (i as f64 - xm).powi(2);
    }
    Some(sxy / sxx)
}

pub fn lag1(y: &[f64]) -> Option<f64> {
    if y.len() < 4 {
        return None;
    }
    let m = mean(y);
    let den: f64 = y.iter().map(|v| (v - m).powi(2)).sum();
    if den == 0.0 {
        return Some(0.0);
    }
    Some(y.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / den)
}

pub fn bimodality(y: &[f64]) -> Option<f64> {
    let n = y.len() as f64;
    if y.len() < 8 {
        return None;
    }
    let m = mean(y);
    let m2 = y.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n;
    if m2 == 0.0 {
        return Some(0.0);
    }
    let g = y.iter().map(|v| (v - m).powi(3)).sum::<f64>() / n / m2.powf(1.5);
    let k = y.iter().map(|v| (v - m).powi(4)).sum::<f64>() / n / (m2 * m2) - 3.0;
    Some((g * g + 1.0) / (k + 3.0 * (n - 1.0).powi(2) / ((n - 2.0) * (n - 3.0))))
}

/// Diagnose one arm's raw values in block order. `coverage`: the lowest and highest huge
/// coverage of the arm's trials, when measured (two modes from the backing need it to vary).
pub fn diagnose(values: &[f64], coverage: Option<(f64, f64)>) -> Diagnostics {
    let mut warnings = Vec::new();
    let level = summarize(values).map(|s| s.mean).filter(|m| *m != 0.0);
    let drift = slope(values)
        .zip(level)
        .map(|(s, m)| s * (values.len() - 1) as f64 / m);
    // Too few blocks make slopes and correlations noise: warn from 10 on.
    let enough = values.len() >= 10;
    if let Some(d) = drift
        && enough
        && d.abs() > 0.05
    {
        warnings.push(format!(
            "values drift by {:+.1}% from first to last block: the machine changed during the run (thermal, other load, memory fragmentation); the paired design cancels drift shared by all arms",
            d * 100.0
        ));
    }
    let ac = lag1(values);
    if let Some(a) = ac
        && enough
        && a > 0.3
    {
        warnings.push(format!("consecutive blocks are correlated (lag-1 autocorrelation {a:.2}): intervals may be too narrow; interleave longer or add --prepare steps"));
    }
    let bc = bimodality(values);
    if let Some(b) = bc
        && b > 0.555
    {
        let cause = match coverage {
            Some((lo, hi)) if hi - lo < 0.05 => format!(
                "not from the pages: every trial of this arm had {:.0}% of its memory on huge pages, so the two modes are the workload's or the machine's",
                hi * 100.0
            ),
            Some((lo, hi)) => format!(
                "some trials may have got huge pages and others not: this arm's huge coverage ranged from {:.0}% to {:.0}% across its trials",
                lo * 100.0,
                hi * 100.0
            ),
            None => {
                "some trials may have got huge pages and others not; check the coverage evidence"
                    .into()
            }
        };
        warnings.push(format!("the values look bimodal (bimodality coefficient {b:.2} > 0.555): {cause}; with one arm bimodal, paired intervals cover up to about 1 point less than their printed level (simulation study)"));
    }
    Diagnostics {
        drift_over_run: drift,
        lag1_autocorrelation: ac,
        bimodality_coefficient: bc,
        warnings,
    }
}

/// The warnings of the distribution checks (drift, correlation, bimodality) and of the
/// contrasts, counted by kind, in the order the brief answer names them.
pub fn warning_kinds(metrics: &[crate::model::analysis::MetricAnalysis]) -> Vec<(String, usize)> {
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut count = |w: &str| {
        let kind = if w.contains("drift") {
            "values drift over the run"
        } else if w.contains("correlated") {
            "consecutive blocks correlated"
        } else if w.contains("bimodal") {
            "bimodal values"
        } else {
            "about the intervals"
        };
        *kinds.entry(kind).or_default() += 1;
    };
    for m in metrics {
        for a in &m.arms {
            a.diagnostics.warnings.iter().for_each(|w| count(w));
        }
        for c in m.contrasts.iter().filter_map(|(_, c)| c.as_ref()) {
            c.warnings.iter().for_each(|w| count(w));
        }
    }
    kinds.into_iter().map(|(k, n)| (k.to_string(), n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_drift_autocorrelation_and_two_modes() {
        let drifting: Vec<f64> = (0..100).map(|i| 100.0 + i as f64 * 0.1).collect();
        let d = diagnose(&drifting, None);
        assert!((d.drift_over_run.unwrap() - 9.9 / 104.95).abs() < 0.01);
        assert!(d.warnings.iter().any(|w| w.contains("drift")));
        assert!(d.lag1_autocorrelation.unwrap() > 0.9);
        let two: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 100.0 } else { 160.0 } + (i % 7) as f64 * 0.1)
            .collect();
        assert!(
            diagnose(&two, None)
                .warnings
                .iter()
                .any(|w| w.contains("bimodal"))
        );
        // An arm on 4 KiB pages in every trial: the two modes are not the backing's.
        let never = diagnose(&two, Some((0.0, 0.0)));
        assert!(
            never
                .warnings
                .iter()
                .any(|w| w.contains("not from the pages")
                    && w.contains("every trial of this arm had 0%")
                    && !w.contains("some trials may have got huge pages")),
            "{:?}",
            never.warnings
        );
        let mixed = diagnose(&two, Some((0.02, 0.95)));
        assert!(
            mixed
                .warnings
                .iter()
                .any(|w| w.contains("ranged from 2% to 95%")),
            "{:?}",
            mixed.warnings
        );
        let flat: Vec<f64> = (0..100)
            .map(|i| 100.0 + ((i * 37) % 11) as f64 * 0.01)
            .collect();
        assert!(
            diagnose(&flat, None).warnings.is_empty(),
            "{:?}",
            diagnose(&flat, None).warnings
        );
    }
}
