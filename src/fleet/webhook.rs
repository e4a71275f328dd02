//! `judge --webhook`: the judgement served over HTTP for a rollout engine's gate (a Flagger
//! canary's rollout webhook). The engine asks again and again while one canary is analysed, so
//! each canary's looks share one window that grows from its first look's `--last`, judged by a
//! confidence sequence: a look at any time, however many, holds at the level, where a fixed test
//! at every look would roll back a good change more often the longer the canary runs. A look
//! that cannot be judged (Prometheus down) answers as `--on-outage` says.

use super::JudgeArgs;
use super::OnOutage;
use crate::model::judge::Overall;
use std::collections::HashMap;

/// `--webhook`: answer each POST with a judgement of its canary's window up to then, until
/// Ctrl-C or SIGTERM.
pub fn serve(a: &JudgeArgs, addr: std::net::SocketAddr) -> anyhow::Result<i32> {
    let server = tiny_http::Server::http(addr).map_err(|e| {
        crate::error::UsageError(format!(
            "--webhook {addr}: cannot listen there ({e}); choose another address or port"
        ))
    })?;
    let addr = server.server_addr().to_ip().unwrap_or(addr);
    crate::eprintln_safe!(
        "hugelab judge: webhook on http://{addr}/ (POST judges its canary from its first look's last {} s on, by a confidence sequence valid at every look; a look Prometheus cannot answer: {}; GET /healthz; Ctrl-C stops)",
        a.last.map_or(0, |d| d.as_secs()),
        outage_rule(a.on_outage.unwrap_or(OnOutage::Fail))
    );
    crate::control::defer_first_signal("stopping the webhook");
    let mut canaries = Canaries::default();
    while !crate::control::stop_requested() {
        match server.recv_timeout(std::time::Duration::from_millis(250)) {
            Ok(Some(req)) => answer(a, req, &mut canaries),
            Ok(None) => {}
            Err(e) => crate::eprintln_safe!("hugelab judge: webhook: {e}"),
        }
    }
    Ok(0)
}

/// Each canary's looks so far, by its key (the payload's namespace, name and checksum): where
/// its window begins, how many looks it has had, and when the last was.
#[derive(Debug, Default)]
pub struct Canaries(HashMap<String, Looks>);

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Looks {
    pub from: f64,
    pub looks: usize,
    pub last: f64,
    /// The canary's last judged look and what it answered: what `--on-outage hold` repeats.
    pub judged: Option<Judged>,
}

/// A judged look's answer: its number, the overall verdict and the HTTP status it gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    pub look: usize,
    pub overall: Overall,
    pub status: u16,
}

impl Canaries {
    /// The canary `key`'s next look at `now`, whose `--last` window would begin at `from`:
    /// its first look begins the window; a later one keeps that beginning. A canary not asked
    /// about for longer than `forget_s` (the `--last` window) begins again: the engine has
    /// started a new analysis of it.
    pub fn look(&mut self, key: &str, now: f64, from: f64, forget_s: f64) -> Looks {
        let fresh = Looks {
            from,
            looks: 0,
            last: now,
            judged: None,
        };
        let l = self.0.entry(key.to_string()).or_insert(fresh);
        if now - l.last > forget_s {
            *l = fresh;
        }
        l.looks += 1;
        l.last = now;
        *l
    }

    /// The canary `key`'s look was judged and answered `j`.
    pub fn judged(&mut self, key: &str, j: Judged) {
        if let Some(l) = self.0.get_mut(key) {
            l.judged = Some(j);
        }
    }
}

/// How the startup line says `--on-outage`'s rule.
fn outage_rule(on: OnOutage) -> &'static str {
    match on {
        OnOutage::Fail => "500, a failed check (--on-outage fail)",
        OnOutage::Pass => "200, a pass on no evidence (--on-outage pass)",
        OnOutage::Hold => "what its last judged look answered (--on-outage hold)",
    }
}

/// The answer to a look that could not be judged (`why`), by `--on-outage`: its status and
/// its body, one line of JSON that says it was not judged, the rule, and what was held.
pub fn outage(on: OnOutage, held: Option<Judged>, why: &str) -> (u16, String) {
    let held = held.filter(|_| on == OnOutage::Hold);
    let status = match (on, held) {
        (OnOutage::Pass, _) => 200,
        (_, Some(j)) => j.status,
        _ => 500,
    };
    let held = held
        .map(|j| serde_json::json!({ "look": j.look, "overall": j.overall, "status": j.status }));
    let line = serde_json::json!({
        "schema": "hugelab.judge-outage/1",
        "judged": false,
        "why": why,
        "on_outage": on,
        "held": held,
        "status": status,
    });
    (status, line.to_string())
}

/// The canary a Flagger payload names (`namespace/name`, with the revision's checksum where
/// it has one), and how the log line says it; one canary, `""`, for a POST without a payload.
fn canary_of(body: &str) -> (String, String) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return (String::new(), String::new());
    };
    let (Some(ns), Some(name)) = (v["namespace"].as_str(), v["name"].as_str()) else {
        return (String::new(), String::new());
    };
    let checksum = v["checksum"].as_str().unwrap_or("");
    (
        format!("{ns}/{name}@{checksum}"),
        format!(" for {ns}/{name} ({})", v["phase"].as_str().unwrap_or("-")),
    )
}

/// One webhook request: POST judges (200 passes, 412 fails; a look not judged answers as
/// `--on-outage` says), GET /healthz.
fn answer(a: &JudgeArgs, mut req: tiny_http::Request, canaries: &mut Canaries) {
    use tiny_http::{Method, Response};
    let reply = match (req.method(), req.url()) {
        (Method::Get, "/healthz") => Response::from_string("ok\n"),
        (Method::Post, _) => {
            let mut body = String::new();
            let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
            let (key, who) = canary_of(&body);
            let now = super::now();
            let forget_s = a.last.map_or(0.0, |d| d.as_secs_f64());
            let mut held = None;
            let judged = super::plan(a, now)
                .map_err(anyhow::Error::from)
                .and_then(|p| {
                    let l = canaries.look(&key, now, p.from(), forget_s);
                    held = l.judged;
                    let p = p.begun_at(l.from, a.burn_in.as_secs_f64());
                    super::look_as(a, &p, p.to, l.looks, true)
                });
            match judged {
                Ok(r) => {
                    let code = super::policy(a, &r);
                    let status = if code == 0 { 200 } else { 412 };
                    canaries.judged(
                        &key,
                        Judged {
                            look: r.look,
                            overall: r.overall,
                            status,
                        },
                    );
                    let line = crate::render::analysis_step::line(&r, code);
                    crate::eprintln_safe!("judged{who}, look {}: {line}", r.look);
                    Response::from_string(line + "\n").with_status_code(status)
                }
                Err(e) => {
                    let on = a.on_outage.unwrap_or(OnOutage::Fail);
                    let (status, line) = outage(on, held, &format!("{e:#}"));
                    crate::eprintln_safe!("not judged{who}: {e:#}; answered {status} ({line})");
                    Response::from_string(line + "\n").with_status_code(status)
                }
            }
        }
        _ => Response::from_string("POST judges; GET /healthz\n").with_status_code(405),
    };
    if let Err(e) = req.respond(reply) {
        crate::eprintln_safe!("hugelab judge: webhook: answering: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One canary's looks keep its first window's beginning and count up; another canary, or
    /// the same one after a silence longer than the window, begins its own.
    #[test]
    fn a_canarys_looks_share_one_growing_window() {
        let mut c = Canaries::default();
        let first = c.look("ns/app@1", 1000.0, 400.0, 600.0);
        assert_eq!((first.from, first.looks), (400.0, 1));
        let second = c.look("ns/app@1", 1060.0, 460.0, 600.0);
        assert_eq!((second.from, second.looks), (400.0, 2));
        let other = c.look("ns/app@2", 1070.0, 470.0, 600.0);
        assert_eq!((other.from, other.looks), (470.0, 1));
        let again = c.look("ns/app@1", 1060.0 + 601.0, 1061.0, 600.0);
        assert_eq!((again.from, again.looks), (1061.0, 1));
    }

    /// Each `--on-outage` answer: fail and a hold with nothing judged yet count as a failed
    /// check; pass passes; hold repeats the canary's last judged status, and says so.
    #[test]
    fn an_outage_answers_by_the_rule_chosen() {
        let worse = Judged {
            look: 3,
            overall: Overall::Worse,
            status: 412,
        };
        let fields = |(status, line): (u16, String)| {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["status"], status, "{line}");
            assert_eq!(v["judged"], false, "{line}");
            assert_eq!(v["why"], "Prometheus: connection refused", "{line}");
            (status, v["on_outage"].clone(), v["held"].clone())
        };
        let why = "Prometheus: connection refused";
        assert_eq!(fields(outage(OnOutage::Fail, Some(worse), why)).0, 500);
        assert_eq!(fields(outage(OnOutage::Pass, Some(worse), why)).0, 200);
        let (status, on, held) = fields(outage(OnOutage::Hold, Some(worse), why));
        assert_eq!((status, on.as_str()), (412, Some("hold")));
        assert_eq!(
            (&held["look"], &held["overall"]),
            (&3.into(), &"WORSE".into())
        );
        let (status, _, held) = fields(outage(OnOutage::Hold, None, why));
        assert_eq!((status, held), (500, serde_json::Value::Null));
        let mut c = Canaries::default();
        c.look("ns/app@1", 1000.0, 400.0, 600.0);
        c.judged("ns/app@1", worse);
        assert_eq!(c.look("ns/app@1", 1060.0, 460.0, 600.0).judged, Some(worse));
        assert_eq!(c.look("ns/app@1", 1661.0, 1061.0, 600.0).judged, None);
    }

    #[test]
    fn a_flagger_payload_names_its_canary_and_revision() {
        let (key, who) = canary_of(
            r#"{"name":"podinfo","namespace":"test","phase":"Progressing","checksum":"6d6b7c"}"#,
        );
        assert_eq!(key, "test/podinfo@6d6b7c");
        assert_eq!(who, " for test/podinfo (Progressing)");
        assert_eq!(canary_of("").0, "");
    }
}
