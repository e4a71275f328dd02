//! A confidence level, and the one place its arithmetic and its defaults are written: α = 1 −
//! level, the two-sided tail α/2, the Bonferroni split 1 − α/m, Holm's step levels, and how a
//! level reads ("99%", "99.5%", "99.67%"). Every other module asks a [`Level`]; none writes
//! `1 - confidence` or a default level of its own (`scripts/check-levels.sh` fails on a copy).

/// A run's verdicts and intervals, unless `--confidence` says otherwise.
pub const DEFAULT_CONFIDENCE: f64 = 0.99;

/// A bench's cells and `bench tlb`'s reach: each cell is read on its own, so the bench asks more
/// of each.
pub const BENCH_CONFIDENCE: f64 = 0.999;

/// The smallest effect that matters (δ), unless `--effect` says otherwise: 1%.
pub const DEFAULT_EFFECT: f64 = 0.01;

/// A two-sided confidence level in (0, 1).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Level(pub f64);

impl Level {
    /// The level whose α is `alpha`.
    pub fn of_alpha(alpha: f64) -> Level {
        Level(1.0 - alpha)
    }

    /// The level as a fraction (0.99).
    pub fn get(self) -> f64 {
        self.0
    }

    /// α = 1 − level: the chance the interval misses.
    pub fn alpha(self) -> f64 {
        1.0 - self.0
    }

    /// The chance in each tail of a two-sided interval, α/2.
    pub fn tail(self) -> f64 {
        self.alpha() / 2.0
    }

    /// The upper tail's quantile of a two-sided interval, 1 − α/2 (a z or t is read there).
    pub fn upper(self) -> f64 {
        1.0 - self.tail()
    }

    /// The level each of `m` intervals gets when α is split evenly among them (Bonferroni; the
    /// first, strictest, of Holm's steps): 1 − α/m.
    pub fn split(self, m: usize) -> Level {
        Level::of_alpha(self.alpha() / m.max(1) as f64)
    }

    /// Holm's step-down levels for `m` contrasts, strictest first: 1 − α/m, 1 − α/(m − 1), …,
    /// 1 − α.
    pub fn holm_steps(self, m: usize) -> Vec<Level> {
        (0..m).map(|k| self.split(m - k)).collect()
    }

    /// Whether a p-value rejects at this level (p < α).
    pub fn rejects(self, p: f64) -> bool {
        p < self.alpha()
    }

    /// The level as people write it: 99%, 99.5%, 99.67% (as few decimals as it needs, at most
    /// two).
    pub fn words(self) -> String {
        let p = self.0 * 100.0;
        let s = if (p - p.round()).abs() < 1e-9 {
            format!("{p:.0}")
        } else if (p * 10.0 - (p * 10.0).round()).abs() < 1e-9 {
            format!("{p:.1}")
        } else {
            format!("{p:.2}")
        };
        format!("{s}%")
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arithmetic_of_a_level() {
        let l = Level(0.99);
        assert!((l.alpha() - 0.01).abs() < 1e-15);
        assert!((l.tail() - 0.005).abs() < 1e-15);
        assert!((l.upper() - 0.995).abs() < 1e-15);
        assert!((l.split(2).get() - 0.995).abs() < 1e-15);
        assert_eq!(l.split(0), l.split(1));
        let steps: Vec<f64> = l.holm_steps(3).iter().map(|s| s.get()).collect();
        assert!((steps[0] - (1.0 - 0.01 / 3.0)).abs() < 1e-15);
        assert!((steps[2] - 0.99).abs() < 1e-15);
        assert!(l.rejects(0.009) && !l.rejects(0.011));
        assert!((Level::of_alpha(0.05).get() - 0.95).abs() < 1e-15);
    }

    #[test]
    fn a_level_reads_with_the_decimals_it_needs() {
        assert_eq!(Level(0.99).to_string(), "99%");
        assert_eq!(Level(0.995).to_string(), "99.5%");
        assert_eq!(Level(1.0 - 0.01 / 3.0).to_string(), "99.67%");
        assert_eq!(Level(0.999).to_string(), "99.9%");
        assert_eq!(Level(0.9).to_string(), "90%");
    }
}
