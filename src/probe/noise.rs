//! Sources of measurement noise on a shared machine: the aggregate CPU line of /proc/stat
//! (steal time, busy time of everyone) and pressure stall information for the CPU
//! (/proc/pressure/cpu). Pure parsers; [`read`] takes the [`Root`].

use super::Root;
use crate::error::{ParseError, ProbeError};

/// The `cpu` line of /proc/stat, in USER_HZ ticks (100 per second on every Linux port that
/// hugelab runs on; `sysconf(_SC_CLK_TCK)` is what userspace is told).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    /// Time the hypervisor ran something else while this guest wanted the CPU. Since 2.6.11.
    pub steal: u64,
}

impl CpuTicks {
    /// Ticks spent running anything on this machine (not idle, not stolen).
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }
}

/// Parse the aggregate `cpu ` line of /proc/stat.
pub fn parse_stat_cpu(text: &str) -> Result<CpuTicks, ParseError> {
    let (i, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("cpu "))
        .ok_or_else(|| ParseError::new(1, "no aggregate `cpu ` line"))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|e| ParseError::new(i + 1, format!("cpu line: {e}")))?;
    if f.len() < 4 {
        return Err(ParseError::new(i + 1, "cpu line has fewer than 4 fields"));
    }
    let g = |k: usize| f.get(k).copied().unwrap_or(0);
    Ok(CpuTicks {
        user: g(0),
        nice: g(1),
        system: g(2),
        idle: g(3),
        iowait: g(4),
        irq: g(5),
        softirq: g(6),
        steal: g(7),
    })
}

/// `total=` of the `some` line of a PSI file, microseconds.
pub fn parse_psi_some_total(text: &str) -> Result<u64, ParseError> {
    let (i, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("some "))
        .ok_or_else(|| ParseError::new(1, "no `some` line"))?;
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix("total="))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| ParseError::new(i + 1, "no integer total= on the `some` line"))
}

/// What the machine's noise sources say right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NoiseReading {
    pub cpu: CpuTicks,
    /// `some` total of /proc/pressure/cpu, µs. Absent without CONFIG_PSI (since 4.20) or with
    /// `psi=0` on the kernel command line.
    pub psi_cpu_some_us: Option<u64>,
}

pub fn read(root: &Root) -> Result<NoiseReading, ProbeError> {
    let cpu = root
        .parse_opt("/proc/stat", parse_stat_cpu)?
        .ok_or_else(|| ProbeError::Io {
            path: "/proc/stat".into(),
            source: std::io::ErrorKind::NotFound.into(),
        })?;
    // A kernel booted with psi=0 has the file but fails to read it (EOPNOTSUPP): treat as absent.
    let psi = root
        .parse_opt("/proc/pressure/cpu", parse_psi_some_total)
        .ok()
        .flatten();
    Ok(NoiseReading {
        cpu,
        psi_cpu_some_us: psi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_and_psi() {
        let t = parse_stat_cpu("cpu  15071 0 3346 12697 534 0 72 326 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!((t.user, t.system, t.steal), (15071, 3346, 326));
        assert_eq!(t.busy(), 15071 + 3346 + 72);
        // Kernels before 2.6.11 have no steal column.
        assert_eq!(parse_stat_cpu("cpu 1 2 3 4\n").unwrap().steal, 0);
        assert!(parse_stat_cpu("cpu0 1 2 3 4\n").is_err());
        assert!(parse_stat_cpu("cpu 1 x 3 4\n").is_err());
        let p = "some avg10=2.87 avg60=4.52 avg300=2.07 total=8633806\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_psi_some_total(p).unwrap(), 8633806);
        assert!(parse_psi_some_total("full total=3\n").is_err());
    }

    #[test]
    fn live_reading() {
        let r = read(&Root::system()).unwrap();
        assert!(r.cpu.busy() > 0);
    }
}
