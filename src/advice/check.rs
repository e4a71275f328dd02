//! A machine checked against an advice file.

use crate::control::{Knob, Settings, SysfsSettings};
use crate::error::UsageError;
use crate::model::advice::{Advice, Checked};
use crate::probe::Root;
use std::path::Path;

/// This machine's settings against the advice in `file` (written by `advise --format json`).
pub fn check(file: &Path) -> anyhow::Result<Checked> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| UsageError(format!("--check {}: {e}", file.display())))?;
    let adv: Advice = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!(
            "--check {}: not an advice file ({e}); write one with `hugelab advise --format json -o FILE`",
            file.display()
        ))
    })?;
    let live = SysfsSettings::new(Root::system());
    let settings = adv
        .settings
        .iter()
        .map(|s| {
            (
                s.clone(),
                differs(&s.knob, &s.value, live.read(&s.knob).ok()),
            )
        })
        .collect();
    let verify = adv.verify.first().map_or("-", String::as_str);
    let unchecked = adv
        .service
        .iter()
        .map(|s| {
            let line = s.line.lines().next().unwrap_or("");
            format!("{} line `{line}` (verify: {verify})", s.file)
        })
        .collect();
    Ok(Checked {
        file: file.display().to_string(),
        settings,
        unchecked,
    })
}

/// One setting of an advice file against the live machine: `None` when it is as advised.
fn differs(knob: &Knob, advised: &str, now: Option<String>) -> Option<String> {
    match now {
        None => Some(format!("{knob}: cannot be read here (advised {advised})")),
        // A pool at least as large as advised follows the advice (others may use it too).
        Some(n) if knob.is_pool() => match (n.parse::<u64>(), advised.parse::<u64>()) {
            (Ok(have), Ok(want)) if have >= want => None,
            _ => Some(format!("{knob}: {n} pages, advised at least {advised}")),
        },
        Some(n) if n == advised => None,
        Some(n) => Some(format!("{knob}: {n}, advised {advised}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_at_least_and_modes_exactly() {
        let pool = Knob::HugetlbPages {
            size: 2 << 20,
            node: None,
        };
        assert_eq!(differs(&pool, "100", Some("120".into())), None);
        assert!(differs(&pool, "100", Some("99".into())).is_some());
        assert_eq!(
            differs(&Knob::ThpEnabled, "always", Some("always".into())),
            None
        );
        assert!(
            differs(&Knob::ThpEnabled, "always", Some("madvise".into()))
                .unwrap()
                .contains("madvise, advised always")
        );
        assert!(differs(&Knob::ThpEnabled, "always", None).is_some());
    }
}
