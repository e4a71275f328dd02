//! Answering one HTTP request: `/metrics` in the classic text format or, when the scraper
//! asks for it, OpenMetrics; `/` an index page; anything else 404; methods other than GET and
//! HEAD 405.

use super::scrape::Exporter;
use crate::error::UsageError;
use crate::render::prometheus;
use std::net::SocketAddr;

fn wants_openmetrics(req: &tiny_http::Request) -> bool {
    req.headers().iter().any(|h| {
        h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
    })
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

const INDEX: &str = "<!doctype html><title>hugelab exporter</title><h1>hugelab exporter</h1><p><a href=\"/metrics\">/metrics</a>: huge-page metrics of this host (hugetlb pools by state, THP and mTHP, compaction, fragmentation, watched processes).</p>";

/// Answer one request: `/metrics`, `/` or 404.
pub fn respond(ex: &mut Exporter, req: tiny_http::Request) -> std::io::Result<()> {
    if *req.method() != tiny_http::Method::Get && *req.method() != tiny_http::Method::Head {
        return req.respond(tiny_http::Response::from_string("GET only\n").with_status_code(405));
    }
    match req.url().split('?').next().unwrap_or("") {
        "/metrics" => match ex.scrape() {
            Ok(s) => {
                let om = prometheus::openmetrics(&s);
                let (body, ctype) = if wants_openmetrics(&req) {
                    (om, prometheus::OPENMETRICS)
                } else {
                    (prometheus::classic(&om), prometheus::TEXT)
                };
                req.respond(
                    tiny_http::Response::from_string(body)
                        .with_header(header("Content-Type", ctype)),
                )
            }
            Err(e) => req.respond(
                tiny_http::Response::from_string(format!("{e:#}\n")).with_status_code(500),
            ),
        },
        "/" => req.respond(
            tiny_http::Response::from_string(INDEX)
                .with_header(header("Content-Type", "text/html; charset=utf-8")),
        ),
        _ => req.respond(
            tiny_http::Response::from_string("not found: try /metrics\n").with_status_code(404),
        ),
    }
}

pub fn parse_listen(s: &str) -> Result<SocketAddr, UsageError> {
    s.parse().map_err(|_| {
        UsageError(format!(
            "--listen {s:?} is not an address:port such as 127.0.0.1:9717 or [::1]:9717"
        ))
    })
}

/// A server listening on `addr`, or an error that says why not (the port in use, by whom).
pub fn listen(addr: SocketAddr) -> anyhow::Result<tiny_http::Server> {
    tiny_http::Server::http(addr).map_err(|e| {
        let in_use = e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::AddrInUse);
        if in_use {
            anyhow::anyhow!(
                "{addr} is already in use (another hugelab exporter, or another service on that port): choose another with --listen"
            )
        } else {
            anyhow::anyhow!("cannot listen on {addr}: {e}")
        }
    })
}

/// Answer requests until Ctrl-C or SIGTERM (which end the loop, so that a trace thread can
/// unmount tracefs afterwards); errors are logged on stderr, never fatal.
pub fn serve(server: &tiny_http::Server, ex: &mut Exporter) {
    let mut said_folios = false;
    crate::control::defer_first_signal("stopping the exporter");
    while !crate::control::stop_requested() {
        let req = match server.recv_timeout(std::time::Duration::from_millis(250)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                crate::eprintln_safe!("hugelab exporter: {e}");
                continue;
            }
        };
        if let Err(e) = respond(ex, req) {
            crate::eprintln_safe!("hugelab exporter: answering a request: {e}");
        }
        if !said_folios && let Some(why) = ex.folio_note() {
            crate::eprintln_safe!("note: folio sizes of watched processes are not exported: {why}");
            said_folios = true;
        }
    }
}
