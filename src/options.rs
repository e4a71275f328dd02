//! The command line's shared options, declared once (`#[command(flatten)]`), the choices that
//! are closed sets (enums clap checks and lists in `--help`), and the value parsers every command
//! uses. A utility: the engine's run options (`experiment::plan::RunArgs`) flatten them too.

use crate::error::UsageError;
use crate::stats::level::{DEFAULT_CONFIDENCE, DEFAULT_EFFECT};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `--effect` and `--confidence`: what an analysis decides with.
#[derive(Debug, Clone, Copy, Args)]
pub struct Decision {
    /// Smallest effect that matters, as a fraction (0.01 = 1%): EQUIVALENT means the interval
    /// lies within ±δ; FASTER/SLOWER by less than δ are marked so
    #[arg(long, default_value_t = DEFAULT_EFFECT, allow_negative_numbers = true, value_parser = parse_effect)]
    pub effect: f64,
    /// Confidence level of the intervals and verdicts (0.99 = 99%; family-wise across the
    /// contrasts where the output says Holm or Bonferroni)
    #[arg(long, default_value_t = DEFAULT_CONFIDENCE, allow_negative_numbers = true, value_parser = parse_confidence)]
    pub confidence: f64,
}

/// `--effect`/`--confidence` for a stored run: left out, the run is read at its own decision,
/// as it was stored; given, it is re-analysed at them, and the output says so.
#[derive(Debug, Clone, Default, Args)]
pub struct Redecide {
    /// Re-analyse at this smallest effect that matters (a fraction: 0.02 = 2%) [default: the
    /// run's own]
    #[arg(long, allow_negative_numbers = true, value_parser = parse_effect)]
    pub effect: Option<f64>,
    /// Re-analyse at this confidence level (0.95 = 95%) [default: the run's own]
    #[arg(long, allow_negative_numbers = true, value_parser = parse_confidence)]
    pub confidence: Option<f64>,
}

/// `--db`: where results are stored (global: `results --db F list` and `results list --db F`
/// both work).
#[derive(Debug, Clone, Args)]
pub struct Database {
    /// Results database (SQLite; default $XDG_DATA_HOME/hugelab/results.db)
    #[arg(long, value_name = "FILE", global = true)]
    pub db: Option<PathBuf>,
}

/// `--seed`: the seed of a run's random order.
#[derive(Debug, Clone, Copy, Args)]
pub struct Seed {
    /// Seed of the random order (run: blocks; bench: rounds and access patterns) [default: from
    /// the clock; stored with the run and printed]
    #[arg(long)]
    pub seed: Option<u64>,
}

impl Seed {
    /// The seed given, or one from the clock (stored or printed, so the run can be repeated).
    pub fn or_clock(self) -> u64 {
        self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
    }
}

/// `--wait-for-settings`: what a command that changes system settings does when another
/// hugelab owns them.
#[derive(Debug, Clone, Copy, Args)]
pub struct SettingsWait {
    /// When another hugelab is changing system settings, wait until it has restored them
    /// instead of refusing at once (exit 2)
    #[arg(long)]
    pub wait_for_settings: bool,
}

/// `--quiet`: no progress on stderr.
#[derive(Debug, Clone, Copy, Args)]
pub struct Quiet {
    /// No progress on stderr (errors, notes and FLAGGED trials still print)
    #[arg(long, short)]
    pub quiet: bool,
}

/// `--json`: the record instead of text.
#[derive(Debug, Clone, Copy, Args)]
pub struct Json {
    /// Print the result as JSON instead of text (its `schema` field names the format;
    /// docs/json.md describes each)
    #[arg(long)]
    pub json: bool,
}

/// `--metric NAME` and `--higher` where a stored metric is chosen by name.
#[derive(Debug, Clone, Args)]
pub struct MetricChoice {
    /// The metric to compare (a stored metric's name: wall_s, or one of the run's --metric)
    #[arg(long, default_value = "wall_s")]
    pub metric: String,
    /// Higher values of --metric are better (throughput); lower is better by default
    #[arg(long)]
    pub higher: bool,
}

/// `results export --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// A superset of hyperfine's --export-json (importable again)
    Json,
    /// One row per trial
    Csv,
    /// Markdown tables
    Md,
}

/// `report --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained HTML file with inline SVG charts
    Html,
    /// Markdown
    Md,
}

/// `top --sort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TopSort {
    /// Resident memory
    Rss,
    /// Share of the resident memory on huge pages
    Coverage,
    /// Bytes on huge pages
    Huge,
}

/// `run --fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any arm SLOWER than the baseline on the primary metric
    Slower,
}

/// `--confidence` must be a usable level.
pub fn check_confidence(c: f64) -> Result<(), UsageError> {
    parse_confidence(&c.to_string())
        .map(|_| ())
        .map_err(UsageError)
}

/// The one parser of `--confidence` for every command (clap `value_parser`): a fraction in
/// [0.5, 0.9999]; a bad value is a usage error (exit 2) naming the range.
pub fn parse_confidence(s: &str) -> Result<f64, String> {
    let c: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number; give a level such as 0.99"))?;
    if (0.5..=0.9999).contains(&c) {
        Ok(c)
    } else {
        Err(format!(
            "{s} is outside 0.5–0.9999 (a fraction: 0.99 means 99%)"
        ))
    }
}

/// The one parser of `--effect` (the smallest effect that matters): a fraction in
/// [0.0001, 0.5].
pub fn parse_effect(s: &str) -> Result<f64, String> {
    let e: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number; give a fraction such as 0.01 (1%)"))?;
    if (0.0001..=0.5).contains(&e) {
        Ok(e)
    } else {
        Err(format!(
            "{s} is outside 0.0001–0.5 (a fraction: 0.01 means 1%)"
        ))
    }
}

/// `--target-halfwidth`: `1%` or `±1%` (a percentage), or a fraction such as 0.01, within
/// (0, 50%]; returned as a fraction.
pub fn parse_half_width(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_start_matches('±');
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{s:?} is not a half-width; give a percentage such as 1% (or 0.01)"))?;
    if v > 0.0 && v <= 0.5 {
        Ok(v)
    } else {
        Err(format!("{s} is outside (0, 50%]: give e.g. 1% or 0.5%"))
    }
}

/// `--env NAME=VALUE`: NAME non-empty, without `=`.
/// `--node-label KEY=VALUE`: a Kubernetes label selector of one key and value.
pub fn parse_label(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| {
            format!("{s:?} is not KEY=VALUE; give a node label such as hugelab.io/canary=true")
        })?;
    let ok = |w: &str| {
        w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    };
    if !ok(k) || !ok(v) || k.len() > 253 || v.len() > 63 {
        return Err(format!(
            "{s:?}: a label's key and value are letters, digits, '-', '_', '.' (and '/' in the key's prefix), the value at most 63 characters"
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

/// `--toleration KEY[=VALUE]:EFFECT`: a pod's toleration of a tainted node pool's taint.
pub fn parse_toleration(s: &str) -> Result<crate::model::node_pool::Toleration, String> {
    use crate::model::node_pool::TAINT_EFFECTS;
    let (taint, effect) = s.rsplit_once(':').ok_or_else(|| {
        format!("{s:?} is not KEY[=VALUE]:EFFECT; give the pool's taint, e.g. hugelab.io/canary=true:NoSchedule")
    })?;
    if !TAINT_EFFECTS.contains(&effect) {
        return Err(format!(
            "{s:?}: the effect {effect:?} is not a taint's; give one of {}",
            TAINT_EFFECTS.join(", ")
        ));
    }
    let (key, value) = match taint.split_once('=') {
        Some(_) => {
            let (k, v) = parse_label(taint)?;
            (k, Some(v))
        }
        None => (parse_label(&format!("{taint}=x"))?.0, None),
    };
    Ok(crate::model::node_pool::Toleration {
        key,
        value,
        effect: effect.to_string(),
    })
}

pub fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        Some(_) => Err(format!(
            "{s:?} has no NAME before '='; give NAME=VALUE, e.g. MALLOC_ARENA_MAX=2"
        )),
        None => Err(format!(
            "{s:?} is not NAME=VALUE (to pass an empty value write {s}=)"
        )),
    }
}

/// A count that must be at least 1 (rows to show, rounds, blocks).
pub fn parse_count(s: &str) -> Result<usize, String> {
    match s.parse::<i64>() {
        Ok(n) if n >= 1 => Ok(n as usize),
        Ok(n) => Err(format!("{n} is not a count; give 1 or more")),
        Err(_) => Err(format!("{s:?} is not a whole number; give 1 or more")),
    }
}

/// `--warmup`: 0 or more runs.
pub fn parse_warmup(s: &str) -> Result<usize, String> {
    match s.parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n as usize),
        Ok(n) => Err(format!("{n} is negative; give 0 (no warm-up) or more")),
        Err(_) => Err(format!("{s:?} is not a whole number; give 0 or more")),
    }
}

/// A command line (`args`) less the options named in `drop` (each `--name VALUE` or
/// `--name=VALUE`) and the flags in `flags` (taking no value): how a command writes the command
/// line a pod will run, without the options that wrote the pod.
pub fn without(args: &[String], drop: &[&str], flags: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(w) = it.next() {
        let named = |w: &str| {
            drop.iter()
                .any(|d| w.strip_prefix(d).is_some_and(|r| r.starts_with('=')))
        };
        if drop.contains(&w.as_str()) {
            it.next();
        } else if !flags.contains(&w.as_str()) && !named(w) {
            out.push(w.clone());
        }
    }
    out
}

/// `clap::ValueEnum` for a closed set the record stores (`model`): each value's name on the
/// command line and its help, written here with the command line, so that the record's types
/// carry no command-line derive.
macro_rules! value_enum {
    ($ty:path { $($variant:ident => $name:literal: $help:literal),+ $(,)? }) => {
        impl ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &[$(Self::$variant),+]
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(match self {
                    $(Self::$variant => clap::builder::PossibleValue::new($name).help($help)),+
                })
            }
        }
    };
}

value_enum!(crate::model::trace::TraceKind {
    Compaction => "compaction": "Direct compaction and kcompactd stalls (mm_compaction_begin → _end), order, status",
    Reclaim => "reclaim": "Direct and memcg reclaim stalls (mm_vmscan_*_reclaim_begin → _end), order, pages reclaimed",
    Migrate => "migrate": "Page migration (mm_migrate_pages_start → mm_migrate_pages), reason, result",
    Khugepaged => "khugepaged": "khugepaged scans and collapses by result (counts; no begin event to time them)",
    Alloc => "alloc": "Page allocations of order ≥ 1 by order and fallbacks (extfrag); filtered in the kernel, but every allocation runs the filter: +7% wall time on a 4 KiB-fault-heavy child here",
    Tlb => "tlb": "TLB flushes by reason",
    Faults => "faults": "User page faults (one event per fault: costs the most to trace)",
});

value_enum!(crate::model::advice::Target {
    Machine => "machine": "System-wide THP, mTHP and hugetlb pool settings",
    Postgres => "postgres": "PostgreSQL: huge_pages and the pool its shared memory needs",
    Redis => "redis": "Redis: disable-thp and the THP mode",
    Jvm => "jvm": "A JVM: -XX flags and the pool for -Xmx",
    Qemu => "qemu": "QEMU and libvirt: guest RAM backing",
    Kubernetes => "kubernetes": "Kubernetes: pod hugepages resources and the node pool",
});

value_enum!(crate::model::run::ServiceDesign {
    Warm => "warm": "Every arm's server up at once, warmed, one burst per arm in random order per block, all restarted every lifetime (the default wherever the arms can run side by side)",
    Restart => "restart": "A fresh server for every trial, started under the arm",
});

value_enum!(crate::model::run::BurstSchedule {
    Alternating => "alternating": "One arm's burst after another, in the block's random order",
    Duet => "duet": "Every arm's burst at the same moment: the machine's time-varying noise hits all alike",
});

value_enum!(crate::model::judge::HugeOn {
    Canary => "canary": "The canary got huge pages, the baseline did not (turning THP or a pool on)",
    Baseline => "baseline": "The baseline keeps huge pages and the canary gives them up (turning THP off)",
    Both => "both": "Both are on huge pages (comparing 2 MiB with 1 GiB pages, or THP with hugetlb)",
});

#[cfg(test)]
mod tests {
    #[test]
    fn without_drops_each_option_in_both_spellings_and_the_flags_and_keeps_the_rest() {
        let args: Vec<String> = [
            "exporter",
            "--image",
            "a/b:1",
            "--top",
            "5",
            "--manifest=f.yaml",
            "--json",
            "--image-pull",
            "x",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            super::without(&args, &["--image", "--manifest"], &["--json"]),
            ["exporter", "--top", "5", "--image-pull", "x"]
        );
    }
}
