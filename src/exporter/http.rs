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
