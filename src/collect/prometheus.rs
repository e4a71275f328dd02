//! A read-only client of the Prometheus HTTP API (`/api/v1/query_range`, `/api/v1/query`):
//! the series a fleet's hosts already export, fetched for `hugelab judge`.
//!
//! Range queries are cut into chunks of at most [`MAX_POINTS`] steps, so a long window at a
//! short step stays under Prometheus's 11,000-points-per-series limit and each answer stays
//! small; every chunk is one request per query (per group), never one per host. Queries go as
//! form posts, so long PromQL does not meet URL length limits.

use std::collections::BTreeMap;
use std::time::Duration;

/// Steps per chunk of a range query (Prometheus refuses more than 11,000 per series).
pub const MAX_POINTS: u64 = 10_000;

/// One series of a query's answer: its labels and its finite samples (unix seconds, value),
/// in time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub points: Vec<(f64, f64)>,
}

/// What went wrong talking to Prometheus; each names the address or the query.
#[derive(Debug, thiserror::Error)]
pub enum PromError {
    #[error(
        "cannot reach Prometheus at {url}: {reason} (check --prometheus; it must be the server's base address, e.g. http://prometheus:9090)"
    )]
    Unreachable { url: String, reason: String },
    #[error("Prometheus at {url} answered HTTP {status} to {query:?}: {message}")]
    Rejected {
        url: String,
        status: u16,
        query: String,
        message: String,
    },
    #[error(
        "Prometheus at {url} sent an answer that is not its API's JSON ({reason}); is --prometheus the Prometheus server and not a proxy or UI page?"
    )]
    Malformed { url: String, reason: String },
}

/// A Prometheus server, and how many samples and requests were fetched from it.
pub struct Prometheus {
    base: String,
    agent: ureq::Agent,
    token: Option<String>,
    pub requests: u64,
    pub samples: u64,
}

#[derive(serde::Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
}

#[derive(serde::Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<RawSeries>,
}

#[derive(serde::Deserialize)]
struct RawSeries {
    metric: BTreeMap<String, String>,
    #[serde(default)]
    values: Vec<(f64, String)>,
    #[serde(default)]
    value: Option<(f64, String)>,
}

impl Prometheus {
    /// A client of the server at `url` (`http://host:9090`, with or without a trailing `/`),
    /// sending `token` as a bearer token when given.
    pub fn new(url: &str, token: Option<String>, timeout: Duration) -> Prometheus {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Prometheus {
            base: url.trim_end_matches('/').to_string(),
            agent,
            token,
            requests: 0,
            samples: 0,
        }
    }

    pub fn url(&self) -> &str {
        &self.base
    }

    /// The series of `query` from `start` to `end` (unix seconds) at `step` seconds, fetched in
    /// chunks of at most [`MAX_POINTS`] steps and joined by label set.
    pub fn query_range(
        &mut self,
        query: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Vec<Series>, PromError> {
        let mut by_labels: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
        let span = step * MAX_POINTS as f64;
        let mut from = start;
        while from <= end {
            let to = (from + span - step).min(end);
            let form = [
                ("query", query.to_string()),
                ("start", format!("{from:.3}")),
                ("end", format!("{to:.3}")),
                ("step", format!("{step}")),
            ];
            let data = self.call("/api/v1/query_range", query, &form)?;
            for s in data.result {
                let points = by_labels.entry(s.metric).or_default();
                points.extend(s.values.iter().filter_map(finite));
            }
            from = to + step;
        }
        let series: Vec<Series> = by_labels
            .into_iter()
            .map(|(labels, points)| Series { labels, points })
            .collect();
        self.samples += series.iter().map(|s| s.points.len() as u64).sum::<u64>();
        Ok(series)
    }

    /// The series of an instant `query` at `time` (unix seconds), one point each.
    pub fn query(&mut self, query: &str, time: f64) -> Result<Vec<Series>, PromError> {
        let form = [("query", query.to_string()), ("time", format!("{time:.3}"))];
        let data = self.call("/api/v1/query", query, &form)?;
        if data.result_type != "vector" {
            return Err(PromError::Malformed {
                url: self.base.clone(),
                reason: format!(
                    "an instant query gave a {} instead of a vector",
                    data.result_type
                ),
            });
        }
        Ok(data
            .result
            .into_iter()
            .map(|s| Series {
                points: s.value.as_ref().and_then(finite).into_iter().collect(),
                labels: s.metric,
            })
            .collect())
    }

    fn call(
        &mut self,
        path: &str,
        query: &str,
        form: &[(&str, String)],
    ) -> Result<Data, PromError> {
        let url = format!("{}{path}", self.base);
        let mut req = self.agent.post(&url);
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        self.requests += 1;
        let mut resp = req
            .send_form(form.iter().map(|(k, v)| (*k, v.as_str())))
            .map_err(|e| PromError::Unreachable {
                url: self.base.clone(),
                reason: e.to_string(),
            })?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
            .map_err(|e| PromError::Unreachable {
                url: self.base.clone(),
                reason: format!("reading the answer: {e}"),
            })?;
        let answer: Answer = match serde_json::from_str(&body) {
            Ok(a) => a,
            Err(e) if status == 200 => {
                return Err(PromError::Malformed {
                    url: self.base.clone(),
                    reason: e.to_string(),
                });
            }
            Err(_) => {
                return Err(PromError::Rejected {
                    url: self.base.clone(),
                    status,
                    query: query.to_string(),
                    message: body
                        .chars()
                        .take(200)
                        .collect::<String>()
                        .trim()
                        .to_string(),
                });
            }
        };
        if answer.status != "success" || status != 200 {
            return Err(PromError::Rejected {
                url: self.base.clone(),
                status,
                query: query.to_string(),
                message: format!(
                    "{}{}",
                    answer.error_type.map(|t| t + ": ").unwrap_or_default(),
                    answer.error.unwrap_or_else(|| "no reason given".into())
                ),
            });
        }
        answer.data.ok_or_else(|| PromError::Malformed {
            url: self.base.clone(),
            reason: "a successful answer without data".into(),
        })
    }
}

/// A sample whose value is a finite number (Prometheus writes NaN and ±Inf as strings).
fn finite(p: &(f64, String)) -> Option<(f64, f64)> {
    p.1.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| (p.0, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_parses_and_drops_non_finite_samples() {
        let a: Answer = serde_json::from_str(
            r#"{"status":"success","data":{"resultType":"matrix","result":[
                {"metric":{"instance":"a"},"values":[[10,"1.5"],[40,"NaN"],[70,"+Inf"],[100,"2"]]}]}}"#,
        )
        .unwrap();
        let d = a.data.unwrap();
        let pts: Vec<(f64, f64)> = d.result[0].values.iter().filter_map(finite).collect();
        assert_eq!(pts, vec![(10.0, 1.5), (100.0, 2.0)]);
        assert_eq!(d.result[0].metric["instance"], "a");
    }

    #[test]
    fn nobody_listening_is_unreachable_naming_the_address() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let mut p = Prometheus::new(&url, None, Duration::from_secs(5));
        let e = p.query("up", 0.0).unwrap_err();
        assert!(matches!(e, PromError::Unreachable { .. }), "{e}");
        assert!(e.to_string().contains(&url), "{e}");
    }
}
