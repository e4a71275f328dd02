//! `run`'s machine tables: how much of the spread the machine's noise explains (steal, other
//! processes, CPU pressure), and `--calibrate`'s noise floor.

use crate::model::analysis::NoiseAttribution;
use crate::model::verdict::fmt_level;
use crate::render::Grid;

/// Per arm the machine's noise during the trials, where any was read.
pub(super) fn noise_grid(noise: &[NoiseAttribution]) -> Option<Grid> {
    if noise.iter().all(|n| n.trials == 0) {
        return None;
    }
    let mut g = Grid::new(
        "machine noise during the trials (steal: the host ran someone else; other CPU: processes other than the child and hugelab; R²: share of the primary metric's log-variance each explains alone)",
        &[
            "arm",
            "steal/trial",
            "other CPU/trial",
            "CPU pressure/trial",
            "R²: steal · other · pressure",
            "heavy-steal trials",
        ],
    );
    let ms = |v: Option<&f64>| v.map_or("-".to_string(), |s| format!("{:.1} ms", s * 1000.0));
    let r2 = |v: Option<&f64>| v.map_or("-".to_string(), |x| format!("{:.0}%", x * 100.0));
    for n in noise {
        g.rows.push(vec![
            n.arm.clone(),
            ms(n.mean_s.get("steal_s")),
            ms(n.mean_s.get("other_cpu_s")),
            ms(n.mean_s.get("psi_cpu_some_s")),
            format!(
                "{} · {} · {}",
                r2(n.r2.get("steal_s")),
                r2(n.r2.get("other_cpu_s")),
                r2(n.r2.get("psi_cpu_some_s"))
            ),
            n.heavy_steal_trials.to_string(),
        ]);
    }
    let heavy: usize = noise.iter().map(|n| n.heavy_steal_trials).sum();
    if heavy > 0 {
        g.notes.push(format!(
            "  {heavy} trials ran while more than {:.0}% of the CPU time was stolen by the host: their times say more about the host than about the arms",
            crate::model::analysis::HEAVY_STEAL * 100.0
        ));
    }
    Some(g)
}

/// `--calibrate`: the smallest effect each running time resolves, and what δ needs.
pub(super) fn calibration_grid(c: &crate::model::run::Calibration) -> Grid {
    let mut g = Grid::new(
        format!(
            "noise floor of this machine for this command (A/A, {} blocks of {:.2} s; per-block log-ratio SD {:.2}%, robust {:.2}%; {} two-sided)",
            c.blocks,
            c.seconds_per_block,
            c.sd_log_ratio * 100.0,
            c.robust_sd_log_ratio * 100.0,
            fmt_level(c.confidence),
        ),
        &["running", "blocks", "smallest effect resolved (80% power)"],
    );
    for row in &c.rows {
        g.rows.push(vec![
            format!("{:.0} min", row.minutes),
            row.blocks.to_string(),
            format!("±{:.2}%", row.detectable_percent),
        ]);
    }
    g.notes.push(format!(
        "  δ = {}% needs about {} blocks ({:.0} min) for an 80% chance of a verdict; the A/A contrast itself: {}",
        c.effect * 100.0,
        c.blocks_for_effect,
        c.minutes_for_effect,
        c.aa_verdict
            .map_or("too few blocks".to_string(), |v| format!("{v:?}")
                .to_uppercase())
    ));
    g
}
