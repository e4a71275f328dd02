//! The decision a result is read at: its confidence, its smallest effect that matters (δ) and
//! its design, and whose they are — the result's own (as its command line gave them), the
//! defaults (an import whose file kept none) or another a reader asked for (a re-analysis, which
//! every view says). Built once — from the command line when a result is made, by
//! [`Decision::resolve`] when one is read back — and the one place that says which decision
//! applies to a stored result and how that reads.

use crate::model::verdict::Design;
pub use crate::stats::level::{BENCH_CONFIDENCE, DEFAULT_CONFIDENCE, DEFAULT_EFFECT, Level};

/// Whose decision a result was read at.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// The result's own, as it ran.
    Own,
    /// The defaults: the result's source kept no decision (another tool's file, imported).
    Defaults,
    /// Another decision a reader asked for: the result re-analysed at it. `own_*` is the
    /// result's own (`None` where it kept none).
    Reanalysed {
        own_effect: Option<f64>,
        own_confidence: Option<f64>,
    },
}

/// What a result is read at.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    /// δ, a fraction (0.01 = 1%); `None` for a bench, whose cells are read without one.
    pub effect: Option<f64>,
    pub confidence: f64,
    /// How the trials were collected, and so how they are analysed.
    #[serde(default)]
    pub design: Design,
    pub origin: Origin,
    /// What a view says before the answer when the decision is not the result's own (the words
    /// of [`Decision::note`], kept so that `--json` readers see them too).
    pub reanalysed: Option<String>,
}

/// What a stored result kept of its own decision.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Kept {
    pub effect: Option<f64>,
    pub confidence: Option<f64>,
}

/// What kind of result a decision is for: a bench has its own default level and no δ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Run,
    Bench,
    /// Another tool's results (or a file that kept no decision): analysed at the defaults.
    Import,
}

impl Decision {
    /// A run's own decision, from its command line.
    pub fn own(effect: f64, confidence: f64, design: Design) -> Decision {
        Decision {
            effect: Some(effect),
            confidence,
            design,
            origin: Origin::Own,
            reanalysed: None,
        }
    }

    /// A bench's own decision: its level, no δ.
    pub fn bench(confidence: f64) -> Decision {
        Decision {
            effect: None,
            confidence,
            design: Design::Fixed,
            origin: Origin::Own,
            reanalysed: None,
        }
    }

    /// An import's: the defaults, said as such.
    pub fn defaults(design: Design) -> Decision {
        let mut d = Decision::own(DEFAULT_EFFECT, DEFAULT_CONFIDENCE, design);
        d.origin = Origin::Defaults;
        d.reanalysed = d.note();
        d
    }

    /// Which decision a stored result is read at — the one place that says so: the one a
    /// reader asked for where it differs from the result's own (a re-analysis); else the
    /// result's own; else, for a result that kept none, its kind's defaults (an import's said
    /// as the defaults). A bench never takes a δ.
    pub fn resolve(
        kind: Kind,
        kept: Kept,
        design: Design,
        asked_effect: Option<f64>,
        asked_confidence: Option<f64>,
    ) -> Decision {
        let default_confidence = match kind {
            Kind::Bench => BENCH_CONFIDENCE,
            _ => DEFAULT_CONFIDENCE,
        };
        let own_effect = match kind {
            Kind::Bench => None,
            _ => kept.effect.or(Some(DEFAULT_EFFECT)),
        };
        let own_confidence = kept.confidence.unwrap_or(default_confidence);
        let kept_none = kept.confidence.is_none() && kind != Kind::Bench;
        let effect = match kind {
            Kind::Bench => None,
            _ => asked_effect.or(own_effect),
        };
        let confidence = asked_confidence.unwrap_or(own_confidence);
        let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-12,
            (a, b) => a.is_none() && b.is_none(),
        };
        let origin = if same(effect, own_effect) && same(Some(confidence), Some(own_confidence)) {
            if kept_none || kind == Kind::Import {
                Origin::Defaults
            } else {
                Origin::Own
            }
        } else {
            Origin::Reanalysed {
                own_effect: kept.effect.filter(|_| kind != Kind::Bench),
                own_confidence: kept
                    .confidence
                    .or((kind == Kind::Bench).then_some(own_confidence)),
            }
        };
        let mut d = Decision {
            effect,
            confidence,
            design,
            origin,
            reanalysed: None,
        };
        d.reanalysed = d.note();
        d
    }

    /// The level, for its arithmetic.
    pub fn level(&self) -> Level {
        Level(self.confidence)
    }

    /// δ where the result has one, else the default (a bench's cells are not judged by it).
    pub fn effect_or_default(&self) -> f64 {
        self.effect.unwrap_or(DEFAULT_EFFECT)
    }

    /// Whether the result is read at another decision than its own.
    pub fn is_reanalysis(&self) -> bool {
        matches!(self.origin, Origin::Reanalysed { .. })
    }

    /// The decision in words: "99%, δ = 1%", or "99.9%" for a bench.
    pub fn words(&self) -> String {
        match self.effect {
            Some(e) => format!("{}, δ = {}", self.level(), percent(e)),
            None => self.level().to_string(),
        }
    }

    /// What a view says before the answer: nothing for the result's own decision; the defaults
    /// named as such; a re-analysis with the result's own decision beside it.
    pub fn note(&self) -> Option<String> {
        match self.origin {
            Origin::Own => None,
            Origin::Defaults => Some(format!(
                "analysed at the defaults, {} (it kept no decision of its own; --confidence and --effect re-analyse it)",
                self.words()
            )),
            Origin::Reanalysed {
                own_effect,
                own_confidence,
            } => {
                let own = match (own_confidence, own_effect) {
                    (Some(c), Some(e)) => {
                        format!("the run decided at {}, δ = {}", Level(c), percent(e))
                    }
                    (Some(c), None) => format!("the bench decided at {}", Level(c)),
                    (None, _) => format!(
                        "it kept no decision; the defaults are {}, δ = {}",
                        Level(DEFAULT_CONFIDENCE),
                        percent(DEFAULT_EFFECT)
                    ),
                };
                Some(format!("re-analysed at {} ({own})", self.words()))
            }
        }
    }
}

/// δ as a percentage, as few decimals as it needs: 1%, 2.5%.
fn percent(f: f64) -> String {
    let p = (f * 100.0 * 1e6).round() / 1e6;
    format!("{p}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_result_is_read_at_its_own_decision_unless_another_is_asked() {
        let run = Kept {
            effect: Some(0.02),
            confidence: Some(0.95),
        };
        let d = Decision::resolve(Kind::Run, run, Design::Fixed, None, None);
        assert_eq!(
            (d.effect, d.confidence, d.origin),
            (Some(0.02), 0.95, Origin::Own)
        );
        assert_eq!(d.note(), None);
        // The same values given again are still its own.
        let d = Decision::resolve(Kind::Run, run, Design::Fixed, Some(0.02), Some(0.95));
        assert_eq!(d.origin, Origin::Own);
        let d = Decision::resolve(Kind::Run, run, Design::Fixed, None, Some(0.99));
        assert_eq!(
            d.note().unwrap(),
            "re-analysed at 99%, δ = 2% (the run decided at 95%, δ = 2%)"
        );
    }

    #[test]
    fn a_bench_has_its_own_level_and_no_delta() {
        let kept = Kept {
            effect: None,
            confidence: Some(0.999),
        };
        let d = Decision::resolve(Kind::Bench, kept, Design::Fixed, Some(0.05), Some(0.999));
        assert_eq!(d.origin, Origin::Own, "{d:?}");
        assert_eq!(d.effect, None);
        // A bench that kept no level decided at the bench's default, not a run's.
        let d = Decision::resolve(Kind::Bench, Kept::default(), Design::Fixed, None, None);
        assert_eq!((d.confidence, d.origin), (BENCH_CONFIDENCE, Origin::Own));
        let d = Decision::resolve(Kind::Bench, kept, Design::Fixed, None, Some(0.95));
        assert_eq!(
            d.note().unwrap(),
            "re-analysed at 95% (the bench decided at 99.9%)"
        );
    }

    #[test]
    fn an_import_says_it_was_analysed_at_the_defaults() {
        let d = Decision::resolve(Kind::Import, Kept::default(), Design::Unpaired, None, None);
        assert_eq!(d.origin, Origin::Defaults);
        assert!(
            d.note()
                .unwrap()
                .starts_with("analysed at the defaults, 99%, δ = 1%"),
            "{:?}",
            d.note()
        );
        assert_eq!(Decision::defaults(Design::Unpaired).note(), d.note());
    }
}
