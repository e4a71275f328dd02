//! A running exporter and a Prometheus answering over plain HTTP (tests/exporter.rs,
//! tests/cgroups.rs).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

/// A running exporter on a free loopback port.
pub struct Served {
    pub child: Child,
    pub addr: String,
    /// What it printed before its address line (warnings, notes).
    pub before: Vec<String>,
}

impl Drop for Served {
    fn drop(&mut self) {
        // SIGINT first: an exporter with --trace then unmounts the tracefs it mounted.
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

pub fn serve(extra: &[&str]) -> Served {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hugelab"))
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Notes may come first; the address line says where it listens.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut before = Vec::new();
    let addr = loop {
        let line = lines
            .next()
            .expect("the exporter ended before listening")
            .unwrap();
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
        before.push(line);
    };
    // Keep reading its stderr, so that later notes never hit a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Served {
        child,
        addr,
        before,
    }
}

/// (status line, headers and body) of one HTTP GET.
pub fn get(addr: &str, path: &str, accept: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{}Connection: close\r\n\r\n",
        accept
            .map(|a| format!("Accept: {a}\r\n"))
            .unwrap_or_default()
    )
    .unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    (head.to_string(), body.to_string())
}

pub fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"_.-".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Prometheus's answer to one instant query.
pub fn api(prom: &str, q: &str) -> serde_json::Value {
    let (_, body) = get(
        prom,
        &format!("/api/v1/query?query={}", percent_encode(q)),
        None,
    );
    // Chunked or not, the JSON object is the body from its first brace.
    let json = body
        .find('{')
        .and_then(|i| body.rfind('}').map(|j| &body[i..=j]))
        .unwrap_or("{}");
    serde_json::from_str(json).unwrap_or_default()
}

/// The samples of one instant query.
pub fn query(prom: &str, q: &str) -> Vec<serde_json::Value> {
    api(prom, q)["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}
