//! How a server is known to be ready for its load: a log line, a TCP or unix socket that
//! accepts, or a command that succeeds.

use regex::Regex;
use std::path::PathBuf;
use std::time::Duration;

/// How to tell that a server is ready for its load.
#[derive(Debug, Clone)]
pub enum Ready {
    /// A TCP connection to HOST:PORT is accepted.
    Tcp(String),
    /// A connection to a unix socket is accepted.
    Unix(PathBuf),
    /// A shell command exits 0 (e.g. `pg_isready -h /tmp -p 5433`).
    Cmd(String),
    /// The server prints a line matching this regex.
    Log(Regex),
}

impl Ready {
    /// `tcp:HOST:PORT`, `unix:PATH`, `cmd:COMMAND`, `log:REGEX`.
    pub fn parse(s: &str) -> Result<Ready, String> {
        let bad = |why: &str| {
            format!("--ready {s:?}: {why}; use tcp:HOST:PORT, unix:PATH, cmd:COMMAND or log:REGEX")
        };
        let (kind, v) = s.split_once(':').ok_or_else(|| bad("no kind"))?;
        if v.is_empty() {
            return Err(bad("nothing after the kind"));
        }
        match kind {
            "tcp" => {
                let (host, port) = v.rsplit_once(':').ok_or_else(|| bad("no :PORT"))?;
                if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
                    return Err(bad("HOST:PORT needs a host and a port 1–65535"));
                }
                Ok(Ready::Tcp(v.to_string()))
            }
            "unix" => Ok(Ready::Unix(PathBuf::from(v))),
            "cmd" => Ok(Ready::Cmd(v.to_string())),
            "log" => Regex::new(v)
                .map(Ready::Log)
                .map_err(|e| bad(&format!("invalid regex: {e}"))),
            _ => Err(bad(&format!("unknown kind {kind:?}"))),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Ready::Tcp(a) => format!("tcp:{a}"),
            Ready::Unix(p) => format!("unix:{}", p.display()),
            Ready::Cmd(c) => format!("cmd:{c}"),
            Ready::Log(r) => format!("log:{}", r.as_str()),
        }
    }

    /// Whether something already answers there: a server from before (or another program)
    /// holds the address, so a trial's server cannot be told from it.
    pub fn taken(&self) -> bool {
        match self {
            Ready::Tcp(a) => connect_tcp(a),
            Ready::Unix(p) => std::os::unix::net::UnixStream::connect(p).is_ok(),
            Ready::Cmd(_) | Ready::Log(_) => false,
        }
    }
}

pub(super) fn connect_tcp(addr: &str) -> bool {
    use std::net::ToSocketAddrs;
    addr.to_socket_addrs().is_ok_and(|mut it| {
        it.any(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok())
    })
}
