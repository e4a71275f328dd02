//! Command planning and orchestration: each CLI command turns parsed arguments plus the
//! probed system into a plan, runs it through the stages, and renders the result.

pub mod bench;
pub mod inspect;
pub mod restore;
pub mod results;
pub mod run;
pub mod status;

/// Bad arguments discovered after parsing (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Print a serializable record as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// `--confidence` must be a usable level.
pub fn check_confidence(c: f64) -> Result<(), UsageError> {
    if (0.5..=0.9999).contains(&c) {
        Ok(())
    } else {
        Err(UsageError(format!(
            "--confidence {c} must be between 0.5 and 0.9999"
        )))
    }
}

/// The seed given, or one from the clock (printed or stored so a run can be repeated).
pub fn seed_or_clock(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    })
}
