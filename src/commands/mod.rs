//! Command planning and orchestration: each CLI command turns parsed arguments plus the
//! probed system into a plan, runs it through the stages, and renders the result.

pub mod advise;
pub mod bench;
pub mod collapse;
pub mod compare;
pub mod exporter;
pub mod hold_memory;
pub mod import;
pub mod inspect;
pub mod judge;
pub mod options;
pub mod report;
pub mod restore;
pub mod results;
pub mod run;
pub mod shell;
pub mod status;
pub mod stored;
pub mod top;
pub mod trace;

pub use crate::error::UsageError;

/// Print a serializable record as pretty JSON on stdout, with the version that wrote it.
pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    println!(
        "{}",
        serde_json::to_string_pretty(&crate::model::Versioned::of(v))?
    );
    Ok(())
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

/// `--env NAME=VALUE`: NAME non-empty, without `=`.
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
