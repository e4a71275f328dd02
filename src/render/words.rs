//! Words every answer shares: a contrast's effect, interval, level and verdict, numbers with
//! separators, and text wrapped to the terminal's width at words.

use crate::model::analysis::ExperimentAnalysis;
use crate::model::stats::Estimate;
use crate::model::verdict::Contrast;
use crate::model::verdict::Design;
use crate::model::verdict::Verdict;
use crate::model::verdict::fmt_level;
use crate::units::{fmt_bound, fmt_percent, percent_decimals};

/// How a design's intervals are computed and corrected, in words (printed above the table).
pub fn design(design: &Design, contrasts: usize, confidence: f64) -> String {
    let lvl = fmt_level(confidence);
    let fam = |what: &str| {
        if contrasts > 1 {
            format!("{what} across {contrasts} contrasts at {lvl} family-wise")
        } else {
            lvl.clone()
        }
    };
    match design {
        Design::Fixed if contrasts > 1 => format!(
            "Hodges–Lehmann, signed-rank intervals; Holm step-down across {contrasts} contrasts: verdicts family-wise at {lvl}, each interval at its step's level (@), not a joint {lvl} band"
        ),
        Design::Fixed => format!("Hodges–Lehmann, signed-rank intervals, {lvl}"),
        Design::Sequential { .. } => format!(
            "sequential: confidence sequence for the mean log-ratio (asymptotically valid at every look: its scale is estimated from the data), {}",
            fam("Bonferroni")
        ),
        Design::GroupSequential { looks, max_blocks } => format!(
            "O'Brien–Fleming, {looks} looks up to {max_blocks} blocks: repeated confidence intervals, {}",
            fam("Bonferroni")
        ),
        Design::Unpaired if contrasts > 1 => format!(
            "unpaired: Hodges–Lehmann shift, Mann–Whitney intervals; Holm step-down across {contrasts} contrasts: verdicts family-wise at {lvl}, each interval at its step's level (@), not a joint {lvl} band"
        ),
        Design::Unpaired => {
            format!("unpaired: Hodges–Lehmann shift, Mann–Whitney intervals, {lvl}")
        }
    }
}

/// Lines are wrapped to this many columns (the default output fits a 100-column terminal).
pub const WIDTH: usize = 100;

/// `-8.9% [-12.8, -8.8] @99.5% FASTER`, or for an unsettled contrast of the primary metric its
/// half-width and the blocks that δ would need.
pub fn contrast_words(r: &ExperimentAnalysis, c: &Contrast, primary: bool) -> String {
    format!(
        "{}{} {}",
        percent_interval(&c.percent),
        level_mark(r, c),
        verdict_phrase(r, c, primary)
    )
}

/// A contrast's verdict in words, the same in every answer (the command run's and the
/// service's): `FASTER`; `FASTER, not clearing δ = 1% (the interval reaches +0.2%)`;
/// `EQUIVALENT (within ±1%)`; `INCONCLUSIVE (no interval from 3 blocks)`; for the primary
/// metric `INCONCLUSIVE (±7.7%; δ = 2% needs ~624 more blocks)`.
pub fn verdict_phrase(r: &ExperimentAnalysis, c: &Contrast, primary: bool) -> String {
    let effect = r.effect * 100.0;
    match c.verdict {
        Verdict::Faster | Verdict::Slower => {
            let word = if c.verdict == Verdict::Faster {
                "FASTER"
            } else {
                "SLOWER"
            };
            match (c.clears_effect, c.percent.lo, c.percent.hi) {
                (true, _, _) => word.to_string(),
                // The interval excludes no change but not δ: name its end nearest zero.
                (false, Some(lo), Some(hi)) => {
                    let near = if c.percent.point < 0.0 { hi } else { lo };
                    let d = percent_decimals((hi - lo) / 2.0);
                    format!(
                        "{word}, not clearing δ = {effect}% (the interval reaches {}%)",
                        fmt_bound(near, d)
                    )
                }
                (false, _, _) => format!("{word}, not clearing δ = {effect}%"),
            }
        }
        Verdict::Equivalent => format!("EQUIVALENT (within ±{effect}%)"),
        Verdict::Inconclusive if c.percent.lo.is_none() && primary => format!(
            "INCONCLUSIVE (no interval from {} block{})",
            c.blocks,
            if c.blocks == 1 { "" } else { "s" }
        ),
        Verdict::Inconclusive => {
            let unit = if r.design == Design::Unpaired {
                "runs per arm"
            } else {
                "blocks"
            };
            match (c.min_detectable_percent, c.more_blocks) {
                (Some(mde), Some(more)) if primary => format!(
                    "INCONCLUSIVE (±{mde:.1}%; δ = {effect}% needs ~{} more {unit}{})",
                    thousands(more),
                    at_pace(c)
                ),
                (Some(mde), None) if primary => format!("INCONCLUSIVE (±{mde:.1}%)"),
                _ => "INCONCLUSIVE".to_string(),
            }
        }
    }
}

/// `, about 9.9 h at this run's pace`: how long a contrast's more blocks would take, where the
/// record knows (`Contrast::more_s`).
pub fn at_pace(c: &Contrast) -> String {
    c.more_s.map_or(String::new(), |s| {
        format!(", {} at this run's pace", crate::units::fmt_about(s))
    })
}

/// `-8.9% [-12.8, -8.8]`: decimals from the interval's half-width; without an interval the
/// point to two significant digits (`+140%`, `+3.7%`), since nothing says how many it has.
pub fn percent_interval(e: &Estimate) -> String {
    match (e.lo, e.hi) {
        (Some(lo), Some(hi)) => {
            let d = percent_decimals((hi - lo) / 2.0);
            // A bound beyond ×100 (a t quantile over two blocks on a log scale) says only that:
            // its digits would be noise.
            let bound = |x: f64| {
                if x >= HUGE_PERCENT {
                    format!(">+{HUGE_PERCENT:.0}")
                } else {
                    fmt_bound(x, d)
                }
            };
            format!("{:+.d$}% [{}, {}]", e.point, bound(lo), bound(hi))
        }
        _ => two_significant(e.point),
    }
}

/// The percent change beyond which an interval's bound is printed as `>+10000`.
const HUGE_PERCENT: f64 = 10_000.0;

/// A percentage to two significant digits, signed.
pub fn two_significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return fmt_percent(v, f64::NAN);
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (1 - magnitude).max(0) as usize;
    let scale = 10f64.powi(magnitude - 1);
    let rounded = (v / scale).round() * scale;
    format!("{rounded:+.decimals$}%")
}

/// ` @99.61%` when the level the interval really has is not the family's: computed at a Holm
/// step, a Bonferroni share or a sequential boundary, and for the exact signed-rank interval
/// the coverage its discrete ranks achieve (at least the level asked for).
pub fn level_mark(r: &ExperimentAnalysis, c: &Contrast) -> String {
    level_mark_at(r.confidence, c)
}

/// The level a contrast's interval is printed at, in the text and the charts alike: the
/// coverage its interval really has where it has one, else the level its step was tested at.
pub fn contrast_level(c: &Contrast) -> f64 {
    let p = &c.percent;
    if p.lo.is_some() && p.confidence > 0.0 {
        p.confidence
    } else {
        c.level
    }
}

/// [`level_mark`] against a family level `confidence`.
pub fn level_mark_at(confidence: f64, c: &Contrast) -> String {
    let level = contrast_level(c);
    if level > 0.0 && (level - confidence).abs() > 1e-9 {
        format!(" @{}", fmt_level(level))
    } else {
        String::new()
    }
}

/// `6,000`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut o = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(ch);
    }
    o
}

/// Word-wrap `text` to [`WIDTH`] columns; continuation lines are indented by `indent`.
pub fn wrap_hanging(text: &str, indent: usize) -> Vec<String> {
    let lead = text.len() - text.trim_start_matches(' ').len();
    let mut lines = Vec::new();
    let mut line = " ".repeat(lead);
    let mut len = lead;
    let indent = indent.max(lead);
    for word in text[lead..].split(' ') {
        let w = word.chars().count();
        if len > indent && len + 1 + w > WIDTH {
            lines.push(std::mem::take(&mut line));
            line = " ".repeat(indent);
            len = indent;
        } else if len > lead || !lines.is_empty() {
            line.push(' ');
            len += 1;
        }
        line.push_str(word);
        len += w;
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}

/// Every line of `text` longer than [`WIDTH`] wrapped, continuation lines indented two more
/// than the line's own indent.
pub fn wrap_lines(text: &str) -> String {
    let mut o = String::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            o.push_str(line);
            o.push('\n');
            continue;
        }
        let lead = line.len() - line.trim_start_matches(' ').len();
        for l in wrap_hanging(line, lead + 2) {
            o += &l;
            o.push('\n');
        }
    }
    o
}

/// Every line of `text` longer than [`WIDTH`] wrapped under its own value: after a `key: `
/// near its start (`evidence: …`), else after the spaces that follow its label (`memory      …`),
/// else two more than its own indent.
pub fn wrap_aligned(text: &str) -> String {
    let mut o = String::new();
    for line in text.lines() {
        if line.chars().count() <= WIDTH {
            o.push_str(line);
            o.push('\n');
            continue;
        }
        let lead = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[lead..];
        let key = rest
            .find(": ")
            .filter(|i| *i < 20 && !rest[..*i].contains(' '))
            .map(|i| lead + i + 2);
        let label = rest.find("  ").filter(|i| *i < 20).map(|i| {
            let after = &rest[i..];
            lead + i + (after.len() - after.trim_start_matches(' ').len())
        });
        let indent = key.or(label).unwrap_or(lead + 2);
        for l in wrap_hanging(line, indent) {
            o += &l;
            o.push('\n');
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_design_names_its_correction_only_across_contrasts() {
        assert!(design(&Design::Fixed, 2, 0.99).contains("Holm step-down across 2 contrasts"));
        assert_eq!(
            design(&Design::Fixed, 1, 0.99),
            "Hodges–Lehmann, signed-rank intervals, 99%"
        );
    }

    #[test]
    fn an_interval_bound_beyond_a_hundredfold_is_said_as_such() {
        let e = |point, lo, hi| Estimate {
            point,
            lo: Some(lo),
            hi: Some(hi),
            confidence: 0.998,
        };
        assert_eq!(
            percent_interval(&e(-8.9, -12.8, -8.8)),
            "-8.9% [-12.8, -8.8]"
        );
        assert_eq!(
            percent_interval(&e(-43.0, -100.0, 1.25e77)),
            "-43% [-100, >+10000]"
        );
    }

    /// Planted intervals whose end nearest zero would round to it at the half-width's decimals:
    /// no end reads `-0` or `+0`, and the interval keeps the side of zero it is on.
    #[test]
    fn no_printed_end_reads_zero() {
        let e = |point, lo, hi| Estimate {
            point,
            lo: Some(lo),
            hi: Some(hi),
            confidence: 0.9902,
        };
        let zero = regex::Regex::new(r"[-+]0(\.0*)?[],%)]").unwrap();
        for (point, lo, hi, text) in [
            (-15.0, -28.0, -0.3, "-15% [-28, -0.3]"),
            (-15.0, -28.0, -0.04, "-15% [-28, -0.04]"),
            (12.0, 0.2, 25.0, "+12% [+0.2, +25]"),
            (4.1, 0.003, 8.2, "+4.1% [+0.003, +8.2]"),
            (-2.0, -3.9, -0.0004, "-2.0% [-3.9, -0.0004]"),
        ] {
            let printed = percent_interval(&e(point, lo, hi));
            assert_eq!(printed, text);
            assert!(!zero.is_match(&printed), "{printed}");
        }
    }
}
