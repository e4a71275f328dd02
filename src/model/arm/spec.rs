//! An arm as planned and stored: its backing, the settings it holds and what it expects to get.

use crate::model::arm::backing::{QemuBacking, QemuConfig};
use crate::model::arm::knob::Knob;
use crate::units::Bytes;
use std::time::Duration;

/// What an arm's workload (or server) must end up on; an arm whose memory is not is FLAGGED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Hugetlb pages, of this page size when given.
    Hugetlb(Option<u64>),
    /// Transparent huge pages (anonymous, shared memory or file).
    Thp,
    /// Any huge pages: THP or hugetlb.
    Huge,
    /// Base pages only: more than a tenth of resident memory on huge pages is a surprise.
    FourK,
    /// No anonymous or shared-memory THP at any walk (an arm whose THP is `never` or off for
    /// the process): a collapse the settings did not stop is a surprise. Hugetlb is allowed.
    NoThp,
}

impl Expect {
    pub const NAMES: &str = "4k, no-thp, thp, huge, hugetlb, hugetlb-2m, hugetlb-1g";

    pub fn parse(v: &str) -> Option<Expect> {
        Some(match v.to_ascii_lowercase().as_str() {
            "4k" => Expect::FourK,
            "no-thp" => Expect::NoThp,
            "thp" => Expect::Thp,
            "huge" => Expect::Huge,
            "hugetlb" => Expect::Hugetlb(None),
            "hugetlb-2m" => Expect::Hugetlb(Some(2 << 20)),
            "hugetlb-1g" => Expect::Hugetlb(Some(1 << 30)),
            _ => return None,
        })
    }

    pub fn describe(self) -> String {
        match self {
            Expect::Hugetlb(Some(s)) => format!("{} hugetlb pages", Bytes(s)),
            Expect::Hugetlb(None) => "hugetlb pages".into(),
            Expect::Thp => "transparent huge pages".into(),
            Expect::Huge => "huge pages".into(),
            Expect::FourK => "4 KiB pages".into(),
            Expect::NoThp => "no transparent huge pages".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Malloc {
    Thp,
    Hugetlb,
    #[serde(rename = "hugetlb-1G")]
    Hugetlb1G,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Jvm {
    Off,
    Thp,
    Hugetlbfs,
}

/// What an arm does to the child process only.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessConfig {
    /// PR_SET_THP_DISABLE before exec (inherited): `process.thp=off`.
    pub thp_disable: bool,
    /// PR_SET_THP_DISABLE with PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18): THP only where the
    /// process asked for it (MADV_HUGEPAGE), THP `madvise` for this process alone:
    /// `process.thp=advised`.
    #[serde(default)]
    pub thp_advised: bool,
    pub malloc: Option<Malloc>,
    pub jvm: Option<Jvm>,
    pub jvm_pretouch: Option<bool>,
    pub jvm_pagesize: Option<u64>,
    /// MADV_COLLAPSE the child's anonymous memory this long after start.
    pub collapse_after: Option<Duration>,
    pub env: Vec<(String, String)>,
    /// `sample=off`: do not sample this arm's memory (to measure what sampling costs, as an
    /// A/A run of `sample=on` against `sample=off`).
    #[serde(default)]
    pub no_sample: bool,
    /// `qemu.backing` / `qemu.prealloc`: the QEMU command's guest RAM on this backend.
    #[serde(default)]
    pub qemu: Option<QemuConfig>,
    /// `watch=<pid|comm>`: another process (a VM's QEMU) whose memory is evidence of this arm.
    #[serde(default)]
    pub watch: Option<String>,
    /// `server.arg=WORD` (repeatable): words appended to the `--server` command for this arm.
    #[serde(default)]
    pub server_args: Vec<String>,
    /// The JVM options go to the JVMs a JMH launcher forks (`-jvmArgsAppend`), not to the
    /// launcher through `JAVA_TOOL_OPTIONS` (set by the planner for a forking JMH command).
    #[serde(default)]
    pub jvm_to_forks: bool,
    /// `tmpfs.huge=`: a tmpfs the run mounts for this arm with this `huge=` policy, named to
    /// the command as `{tmpfs}` and `$HUGELAB_TMPFS`.
    #[serde(default)]
    pub tmpfs_huge: Option<crate::model::arm::backing::TmpfsHuge>,
}

impl ProcessConfig {
    /// The THP policy the child starts with (`process.thp`).
    pub fn thp_policy(&self) -> crate::sys::ThpPolicy {
        use crate::sys::ThpPolicy;
        match (self.thp_disable, self.thp_advised) {
            (true, _) => ThpPolicy::Off,
            (false, true) => ThpPolicy::Advised,
            _ => ThpPolicy::System,
        }
    }

    /// Environment variables this configuration adds (GLIBC_TUNABLES, JAVA_TOOL_OPTIONS, env.*).
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(m) = self.malloc {
            let v = match m {
                Malloc::Thp => "1",
                Malloc::Hugetlb => "2",
                Malloc::Hugetlb1G => "2:glibc.malloc.hugetlb_size=1073741824",
            };
            out.push(("GLIBC_TUNABLES".into(), format!("glibc.malloc.hugetlb={v}")));
        }
        let java = self.java_options();
        if !java.is_empty() && !self.jvm_to_forks {
            out.push(("JAVA_TOOL_OPTIONS".into(), java.join(" ")));
        }
        out.extend(self.env.iter().cloned());
        out
    }

    /// The JVM options this configuration sets (`jvm`, `jvm.pretouch`, `jvm.pagesize`).
    pub fn java_options(&self) -> Vec<String> {
        let mut java = Vec::new();
        match self.jvm {
            Some(Jvm::Off) => java
                .extend(["-XX:-UseTransparentHugePages", "-XX:-UseLargePages"].map(String::from)),
            Some(Jvm::Thp) => java.extend(["-XX:+UseTransparentHugePages"].map(String::from)),
            // UseTransparentHugePages is off by default; writing -XX:-UseTransparentHugePages
            // as well makes OpenJDK 17.0.15 disable large pages ("UseLargePages disabled, no
            // large pages configured") with a pool ready, seen here.
            Some(Jvm::Hugetlbfs) => java.push("-XX:+UseLargePages".into()),
            None => {}
        }
        match self.jvm_pretouch {
            Some(true) => java.push("-XX:+AlwaysPreTouch".into()),
            Some(false) => java.push("-XX:-AlwaysPreTouch".into()),
            None => {}
        }
        if let Some(p) = self.jvm_pagesize {
            java.push(format!(
                "-XX:LargePageSizeInBytes={}",
                Bytes(p).to_string().to_lowercase()
            ));
        }
        java
    }
}

/// One arm: a name, system-wide settings and per-process configuration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Arm {
    pub name: String,
    pub spec: String,
    pub system: Vec<(Knob, String)>,
    pub process: ProcessConfig,
    /// `expect=`: what the workload or server must end up on.
    #[serde(default)]
    pub expect: Option<Expect>,
}

impl Arm {
    /// Whether the arm asks for huge pages, so evidence of none means it did not take effect.
    pub fn expects_huge(&self) -> bool {
        let p = &self.process;
        p.malloc.is_some()
            || matches!(p.jvm, Some(Jvm::Thp) | Some(Jvm::Hugetlbfs))
            || p.collapse_after.is_some()
            || p.qemu.is_some_and(|q| q.backing != QemuBacking::FourK)
            || self
                .system
                .iter()
                .any(|(k, v)| matches!(k, Knob::ThpEnabled) && v == "always")
            || self.expect.is_some_and(|e| e != Expect::FourK)
    }
    /// What a server run under this arm must end up on: `expect=` when given, else what the
    /// arm asks for (a hugetlb pool given to the server, THP `always` for anonymous or shared
    /// memory, a malloc or JVM page mode). `None`: the arm asks for nothing in particular.
    pub fn server_expectation(&self) -> Option<Expect> {
        if self.expect.is_some() {
            return self.expect;
        }
        let p = &self.process;
        let pool = self.system.iter().find_map(|(k, v)| match k {
            Knob::HugetlbPages { size, .. } if v != "0" => Some(*size),
            _ => None,
        });
        let thp = self.system.iter().any(|(k, v)| {
            matches!(k, Knob::ThpEnabled) && v == "always"
                || matches!(k, Knob::ThpShmemEnabled)
                    && ["always", "within_size", "force"].contains(&v.as_str())
        });
        match (p.malloc, p.jvm) {
            (Some(Malloc::Hugetlb), _) => Some(Expect::Hugetlb(Some(2 << 20))),
            (Some(Malloc::Hugetlb1G), _) => Some(Expect::Hugetlb(Some(1 << 30))),
            (_, Some(Jvm::Hugetlbfs)) => Some(Expect::Hugetlb(p.jvm_pagesize.or(pool))),
            (Some(Malloc::Thp), _) | (_, Some(Jvm::Thp)) => Some(Expect::Thp),
            _ if pool.is_some() => Some(Expect::Hugetlb(pool)),
            _ if thp || p.collapse_after.is_some() => Some(Expect::Thp),
            _ if self.thp_never() => Some(Expect::NoThp),
            _ => None,
        }
    }

    /// What a command run under this arm must end up on: the server's rule, and a VM's guest
    /// RAM on the backing its `qemu.backing` names; an arm that asks for huge pages in another
    /// way (THP `always` only through defrag, a collapse) expects any huge pages.
    pub fn expectation(&self) -> Option<Expect> {
        if self.expect.is_some() {
            return self.expect;
        }
        match self.process.qemu.map(|q| q.backing) {
            Some(QemuBacking::Hugetlb2M) => return Some(Expect::Hugetlb(Some(2 << 20))),
            Some(QemuBacking::Hugetlb1G) => return Some(Expect::Hugetlb(Some(1 << 30))),
            Some(QemuBacking::Thp) => return Some(Expect::Thp),
            _ => {}
        }
        self.server_expectation()
            .or_else(|| self.expects_huge().then_some(Expect::Huge))
    }

    /// Whether the arm turns anonymous THP off: THP `enabled` never, or off for the process.
    pub fn thp_never(&self) -> bool {
        self.process.thp_disable
            || self
                .system
                .iter()
                .any(|(k, v)| matches!(k, Knob::ThpEnabled) && v == "never")
    }

    pub fn needs_root(&self) -> bool {
        !self.system.is_empty()
    }
}
