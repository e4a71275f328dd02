//! `judge --webhook`: the judgement served over HTTP for a rollout engine's gate (a Flagger
//! canary's rollout webhook): each POST judges the `--last` window ending then.

use super::JudgeArgs;

/// `--webhook`: answer each POST with a judgement of the `--last` window ending then, until
/// Ctrl-C or SIGTERM.
pub fn serve(a: &JudgeArgs, addr: std::net::SocketAddr) -> anyhow::Result<i32> {
    let server = tiny_http::Server::http(addr).map_err(|e| {
        crate::error::UsageError(format!(
            "--webhook {addr}: cannot listen there ({e}); choose another address or port"
        ))
    })?;
    let addr = server.server_addr().to_ip().unwrap_or(addr);
    crate::eprintln_safe!(
        "hugelab judge: webhook on http://{addr}/ (POST judges the last {} s; GET /healthz; Ctrl-C stops)",
        a.last.map_or(0, |d| d.as_secs())
    );
    crate::control::defer_first_signal("stopping the webhook");
    while !crate::control::stop_requested() {
        match server.recv_timeout(std::time::Duration::from_millis(250)) {
            Ok(Some(req)) => answer(a, req),
            Ok(None) => {}
            Err(e) => crate::eprintln_safe!("hugelab judge: webhook: {e}"),
        }
    }
    Ok(0)
}

/// One webhook request: POST judges (200 passes, 412 fails, 500 no answer), GET /healthz.
fn answer(a: &JudgeArgs, mut req: tiny_http::Request) {
    use tiny_http::{Method, Response};
    let reply = match (req.method(), req.url()) {
        (Method::Get, "/healthz") => Response::from_string("ok\n"),
        (Method::Post, _) => {
            // Flagger's payload names the canary and the phase: said in the log line.
            let mut body = String::new();
            let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
            let who = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| {
                    Some(format!(
                        " for {}/{} ({})",
                        v["namespace"].as_str()?,
                        v["name"].as_str()?,
                        v["phase"].as_str().unwrap_or("-")
                    ))
                })
                .unwrap_or_default();
            let judged = super::plan(a, super::now())
                .map_err(anyhow::Error::from)
                .and_then(|p| super::look(a, &p, p.to, 1));
            match judged {
                Ok(r) => {
                    let code = super::policy(a, &r);
                    let line = crate::render::analysis_step::line(&r, code);
                    crate::eprintln_safe!("judged{who}: {line}");
                    Response::from_string(line + "\n").with_status_code(if code == 0 {
                        200
                    } else {
                        412
                    })
                }
                Err(e) => {
                    crate::eprintln_safe!("judged{who}: no answer: {e:#}");
                    Response::from_string(format!("{e:#}\n")).with_status_code(500)
                }
            }
        }
        _ => Response::from_string("POST judges; GET /healthz\n").with_status_code(405),
    };
    if let Err(e) = req.respond(reply) {
        crate::eprintln_safe!("hugelab judge: webhook: answering: {e}");
    }
}
