//! What `judge` is asked: `--metric` specs, times, label matchers, and the built-in PromQL on
//! hugelab's exporter (the coverage evidence and the kernel activity).

use crate::analyze::verdict::Better;
use crate::error::UsageError;

/// `--metric NAME=PROMQL,lower|higher[,critical]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSpec {
    pub name: String,
    pub query: String,
    pub better: Better,
    pub critical: bool,
}

/// Parse `NAME=PROMQL,lower|higher[,critical]` (PromQL has commas of its own, so the flags are
/// taken from the end).
pub fn parse_metric(s: &str) -> Result<MetricSpec, String> {
    let example = "e.g. 'p99=histogram_quantile(0.99, sum by (le,instance) (rate(http_request_duration_seconds_bucket{$sel}[5m]))),lower'";
    let (name, mut rest) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=PROMQL,lower|higher; {example}"))?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "{name:?} is not a metric name (letters, digits and _); {example}"
        ));
    }
    let (mut better, mut critical) = (None, false);
    while let Some((head, flag)) = rest.rsplit_once(',') {
        match flag.trim() {
            "lower" if better.is_none() => better = Some(Better::Lower),
            "higher" if better.is_none() => better = Some(Better::Higher),
            "critical" => critical = true,
            _ => break,
        }
        rest = head;
    }
    let better = better.ok_or_else(|| {
        format!(
            "metric {name}: say which way is better with ,lower or ,higher at the end; {example}"
        )
    })?;
    let query = rest.trim();
    if !query.contains("$sel") {
        return Err(format!(
            "metric {name}: the query has no $sel, so both groups would get the same series; put $sel among its label matchers, {example}"
        ));
    }
    Ok(MetricSpec {
        name: name.to_string(),
        query: query.to_string(),
        better,
        critical,
    })
}

/// A time: RFC 3339 (`2026-11-24T06:00:00Z`) or unix seconds.
pub fn parse_time(s: &str) -> Result<f64, String> {
    if let Ok(v) = s.trim().parse::<f64>()
        && v.is_finite()
        && v >= 0.0
    {
        return Ok(v);
    }
    s.trim()
        .parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond() as f64 / 1000.0)
        .map_err(|_| {
            format!("{s:?} is not a time; give RFC 3339 (2026-11-24T06:00:00Z) or unix seconds")
        })
}

/// `--before FROM..TO`: two times, the first before the second.
pub fn parse_span(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| {
        format!("{s:?} is not FROM..TO; give two times joined by '..', e.g. 2026-11-23T06:00:00Z..2026-11-23T14:00:00Z")
    })?;
    let (from, to) = (parse_time(a)?, parse_time(b)?);
    if from >= to {
        return Err(format!(
            "{s:?} does not run forward: FROM must be before TO"
        ));
    }
    Ok((from, to))
}

/// The group's matchers, without braces, checked to be non-empty.
pub(super) fn matchers(flag: &str, s: &str) -> Result<String, UsageError> {
    let m = s
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim();
    if m.is_empty() {
        return Err(UsageError(format!(
            "--{flag} is empty; give label matchers such as 'instance=~\"db-1.*\"'"
        )));
    }
    Ok(m.to_string())
}

/// A query template with `$sel` replaced by `sel`.
pub(super) fn fill(template: &str, sel: &str) -> String {
    template.replace("$sel", sel)
}

/// The built-in queries on hugelab's exporter: coverage (the evidence) and kernel activity,
/// per host. `range` is the rate window.
/// Coverage is the share of the memory that matters on huge pages where the exporter gives it
/// (the rule `run` judges arms by), else all resident memory's share (older exporters); with
/// `--cgroup`, the share of the selected cgroups' memory on huge pages.
pub(super) fn coverage_query(service: Option<&str>, cgroups: Option<&str>) -> String {
    if let Some(m) = cgroups {
        // Bytes over bytes across the selected leaves (a parent holds its children's bytes,
        // so only groups with no exported group below them are summed); an exporter without
        // the byte series (before 0.1.x) falls back to the mean of the groups' ratios.
        return format!(
            "sum by (instance) (hugelab_cgroup_huge_bytes{{{m},leaf=\"true\",$sel}}) / sum by (instance) (hugelab_cgroup_total_bytes{{{m},leaf=\"true\",$sel}}) or avg by (instance) (hugelab_cgroup_huge_ratio{{{m},$sel}})"
        );
    }
    let sel = match service {
        Some(c) => format!("comm=\"{c}\",$sel"),
        None => "$sel".into(),
    };
    format!(
        "avg by (instance) (hugelab_process_huge_matters_ratio{{{sel}}}) or avg by (instance) (hugelab_process_huge_coverage_ratio{{{sel}}})"
    )
}

pub(super) fn kernel_queries(range: &str) -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "THP faults that fell back",
            format!(
                "sum by (instance) (rate(hugelab_thp_events_total{{event=\"fault_fallback\",$sel}}[{range}])) / sum by (instance) (rate(hugelab_thp_events_total{{event=~\"fault_alloc|fault_fallback\",$sel}}[{range}]))"
            ),
            "ratio",
        ),
        (
            "direct compaction stalls",
            format!(
                "sum by (instance) (rate(hugelab_compaction_events_total{{event=\"stall\",$sel}}[{range}]))"
            ),
            "/s",
        ),
        (
            "time in direct compaction",
            format!(
                "sum by (instance) (rate(hugelab_kernel_stall_seconds_sum{{kind=\"direct compaction\",$sel}}[{range}]))"
            ),
            "s/s",
        ),
        (
            "khugepaged collapses",
            format!(
                "sum by (instance) (rate(hugelab_khugepaged_pages_collapsed_total{{$sel}}[{range}]))"
            ),
            "/s",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{fmt_span, fmt_utc};

    #[test]
    fn a_metric_spec_keeps_the_commas_of_its_promql() {
        let m = parse_metric(
            "p99=histogram_quantile(0.99, sum by (le,instance) (rate(x_bucket{$sel}[5m]))),lower,critical",
        )
        .unwrap();
        assert_eq!(m.name, "p99");
        assert_eq!(
            m.query,
            "histogram_quantile(0.99, sum by (le,instance) (rate(x_bucket{$sel}[5m])))"
        );
        assert_eq!(m.better, Better::Lower);
        assert!(m.critical);
        assert!(parse_metric("tps=sum(rate(x{$sel}[1m])),higher").is_ok());
        for bad in [
            "p99",
            "p99=x{$sel}",
            "p 9=x{$sel},lower",
            "p99=x{job=\"a\"},lower",
        ] {
            assert!(parse_metric(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_are_rfc3339_or_unix_seconds() {
        assert_eq!(parse_time("1764000000").unwrap(), 1764000000.0);
        assert_eq!(parse_time("2025-11-24T16:00:00Z").unwrap(), 1764000000.0);
        assert!(parse_time("yesterday").is_err());
        assert_eq!(
            parse_span("1764000000..2025-11-24T17:00:00Z").unwrap(),
            (1764000000.0, 1764003600.0)
        );
        assert!(
            parse_span("1764003600..1764000000")
                .unwrap_err()
                .contains("forward")
        );
        assert!(parse_span("1764000000").unwrap_err().contains("FROM..TO"));
        assert_eq!(fmt_span(5400.0), "1h30m");
        assert_eq!(fmt_utc(1764000000.0, true), "2025-11-24 16:00:00 UTC");
    }
}
