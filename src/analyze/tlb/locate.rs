//! Where the 4 KiB TLB's reach lies over a whole `bench tlb` sweep, and how sure that is.
//!
//! The table judges each span alone; the reach is judged on all of them together. In one set
//! of span ratios (huge / 4 KiB time per access), the knee is the first span at which huge
//! pages are at least 5% faster and stay so in a strict majority of the spans from it (up to
//! three): one noisy span neither makes a knee nor breaks one. The rounds of every span are
//! resampled with replacement (the percentile bootstrap, Efron and Tibshirani 1993, ch. 13)
//! and the knee found in each resample; the spans holding the central `confidence` share of
//! those knees are the stated range's start. A span whose own interval shows huge pages ≥ 10%
//! faster is past the reach whatever the resamples say: the range ends there (never beyond it,
//! and not before it either, since on a gradual slope the 5% crossing moves with the host's
//! state between runs while that span does not).

use crate::model::tlb::{FASTER_BY, Located, Point, SURELY_PAST_BY};
use crate::rng::XorShift;

/// Resamples per sweep: enough for the 0.05% tails of a 99.9% range to hold two knees.
pub const RESAMPLES: usize = 4000;

/// The stated range is settled within two doublings of span.
const SETTLED_WITHIN: u64 = 4;

/// One span's rounds: 4 KiB pages in it and ln(huge / 4 KiB) per round, paired by round.
#[derive(Debug, Clone)]
pub struct SpanRounds {
    pub pages: u64,
    pub log_ratios: Vec<f64>,
}

/// The knee of one set of span ratios (ln), smallest span first; `None`: no knee.
fn knee_index(m: &[f64]) -> Option<usize> {
    let rule = (1.0 - FASTER_BY).ln();
    (0..m.len()).find(|&k| {
        let window = &m[k..(k + 3).min(m.len())];
        let past = window.iter().filter(|&&x| x < rule).count();
        m[k] < rule && past * 2 > window.len()
    })
}

/// How many resamples put the knee at each span (the last slot: no knee). Each span's
/// ratio in a resample is the median of its resampled rounds.
fn knee_counts(spans: &[SpanRounds], seed: u64) -> Vec<usize> {
    let mut rng = XorShift::new(seed);
    let mut counts = vec![0usize; spans.len() + 1];
    let mut medians = vec![0.0; spans.len()];
    let mut buf = Vec::new();
    for _ in 0..RESAMPLES {
        for (m, s) in medians.iter_mut().zip(spans) {
            let n = s.log_ratios.len();
            buf.clear();
            buf.extend((0..n).map(|_| s.log_ratios[rng.below(n)]));
            buf.sort_by(f64::total_cmp);
            *m = crate::stats::quantile_sorted(&buf, 0.5);
        }
        counts[knee_index(&medians).unwrap_or(spans.len())] += 1;
    }
    counts
}

/// The knee as a range of 4 KiB pages (`None`: none within the spans, or the noise may put
/// it beyond them) and how it was located. `points` are the table's spans, in the same order
/// as `spans`. `None` when a span has no rounds.
pub fn locate(
    spans: &[SpanRounds],
    points: &[Point],
    confidence: f64,
    seed: u64,
) -> Option<(Option<(u64, u64)>, Located)> {
    if spans.is_empty() || spans.iter().any(|s| s.log_ratios.is_empty()) {
        return None;
    }
    let n = spans.len();
    let counts = knee_counts(spans, seed);
    let tail = (crate::stats::Level(confidence).tail() * RESAMPLES as f64).floor() as usize;
    // The first slot, from either end, past which more than the tail's share of knees lie.
    let first_past = |order: Vec<usize>| {
        let mut seen = 0;
        order.into_iter().find(|&i| {
            seen += counts[i];
            seen > tail
        })
    };
    let mut lo = first_past((0..=n).collect()).unwrap_or(n);
    let mut hi = first_past((0..=n).rev().collect()).unwrap_or(n);
    let surely_past = points
        .iter()
        .position(|p| p.ratio.hi.is_some_and(|h| h < 1.0 - SURELY_PAST_BY));
    // A span the table shows ≥ 10% faster with confidence is past the reach: the range ends
    // there, never beyond. It ends there too when the resamples put the 5% crossing earlier:
    // on a gradual slope that crossing moves with the level of the whole curve, which shifts
    // from run to run with the host's state (where the resamples of one run cannot see it),
    // while the span that is surely past does not.
    // Where every resample but the tail's puts the knee past that span, the cut is all that
    // bounds the range: it is not resolved, since no resample put the knee there.
    let mut cut_only = false;
    if let Some(s) = surely_past {
        cut_only = lo > s;
        hi = s;
        lo = lo.min(hi);
    }
    let pages = |i: usize| spans[i].pages;
    let lower = if lo == 0 { 0 } else { pages(lo - 1) };
    let upper = (hi < n).then(|| pages(hi));
    let resolved = !cut_only
        && match upper {
            Some(u) if lo == 0 => hi == 0 || u <= SETTLED_WITHIN * spans[0].pages,
            Some(u) => u <= SETTLED_WITHIN * lower,
            None => lo == n,
        };
    let rounds_to_resolve = if resolved {
        None
    } else {
        rounds_to_settle(
            &spans[lo.min(n - 1)..=hi.min(n - 1)],
            &points[lo.min(n - 1)..=hi.min(n - 1)],
        )
    };
    let located = Located {
        confidence,
        resamples: RESAMPLES,
        between: (if lo == n { pages(n - 1) } else { lower }, upper),
        no_knee: counts[n] as f64 / RESAMPLES as f64,
        resolved,
        surely_past: surely_past.map(pages),
        rounds_to_resolve,
    };
    Some((upper.map(|u| (lower, u)), located))
}

/// Rounds that would put every span in the range on one side of the 5% rule: a span's
/// interval half-width (in ln) shrinks as 1/√rounds until it no longer reaches the rule.
/// `None` when a span sits on the rule (within 1%) or has no interval.
fn rounds_to_settle(spans: &[SpanRounds], points: &[Point]) -> Option<usize> {
    let rule = (1.0 - FASTER_BY).ln();
    let mut most = 0usize;
    for (s, p) in spans.iter().zip(points) {
        let (lo, hi) = (p.ratio.lo?, p.ratio.hi?);
        if lo <= 0.0 || hi <= 0.0 || p.ratio.point <= 0.0 {
            return None;
        }
        let half = (hi.ln() - lo.ln()) / 2.0;
        let distance = (p.ratio.point.ln() - rule).abs();
        if distance < 0.01 {
            return None;
        }
        let need = (s.log_ratios.len() as f64 * (half / distance).powi(2)).ceil() as usize;
        most = most.max(need);
    }
    (most > 0).then_some(most)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Estimate;

    /// A span whose rounds scatter `spread` (ln) around `ratio`, with its table point.
    fn span(pages: u64, ratio: f64, spread: f64) -> (SpanRounds, Point) {
        let log_ratios: Vec<f64> = (0..12)
            .map(|r| ratio.ln() + spread * ((r as f64 * 0.7).sin()))
            .collect();
        let e = Estimate {
            point: ratio,
            lo: Some(ratio * (-2.0 * spread).exp()),
            hi: Some(ratio * (2.0 * spread).exp()),
            confidence: 0.999,
        };
        (
            SpanRounds { pages, log_ratios },
            Point {
                pages,
                base_ns: 1.0,
                huge_ns: ratio,
                ratio: e,
                extra_ns: e,
                extra_share: None,
            },
        )
    }

    fn sweep(ratios: &[(u64, f64, f64)]) -> (Vec<SpanRounds>, Vec<Point>) {
        ratios.iter().map(|&(p, r, s)| span(p, r, s)).unzip()
    }

    #[test]
    fn one_noisy_span_neither_makes_nor_breaks_a_knee() {
        let rule = 0.9f64.ln();
        let ok = 1.0f64.ln();
        // A lone dip before the knee does not make one.
        assert_eq!(knee_index(&[ok, rule, ok, ok, rule, rule, rule]), Some(4));
        // A lone span back near 1 after the knee does not break it.
        assert_eq!(knee_index(&[ok, ok, rule, ok, rule, rule]), Some(2));
        // The last span alone past the rule is a knee; nothing past it is none.
        assert_eq!(knee_index(&[ok, ok, rule]), Some(2));
        assert_eq!(knee_index(&[ok, ok, ok]), None);
    }

    #[test]
    fn a_clean_step_is_located_within_one_step_and_capped_by_the_table() {
        let (s, p) = sweep(&[
            (1024, 1.0, 0.01),
            (1536, 1.0, 0.01),
            (2048, 0.99, 0.01),
            (3072, 0.80, 0.01),
            (4096, 0.75, 0.01),
            (6144, 0.74, 0.01),
        ]);
        let (knee, l) = locate(&s, &p, 0.999, 1).unwrap();
        assert_eq!(knee, Some((2048, 3072)));
        assert!(l.resolved && l.rounds_to_resolve.is_none(), "{l:?}");
        assert_eq!(l.surely_past, Some(3072));
        assert_eq!(l.no_knee, 0.0);
    }

    /// The AMD host's sweep that stated 49,152–65,536 entries while its own table showed huge
    /// pages 0.58× at 32 MiB: the range now ends at the first span the table shows ≥ 10%
    /// faster with confidence, and the noise it could not resolve is said as a range.
    #[test]
    fn noisy_spans_give_a_range_never_beyond_the_first_span_surely_past() {
        let (s, p) = sweep(&[
            (1024, 1.0, 0.08),
            (2048, 0.97, 0.08),
            (3072, 0.885, 0.08),
            (6144, 0.824, 0.08),
            (8192, 0.582, 0.05),
            (16384, 0.9, 0.15),
            (49152, 0.865, 0.15),
            (65536, 0.7, 0.05),
        ]);
        let (knee, l) = locate(&s, &p, 0.999, 7).unwrap();
        let (lo, hi) = knee.unwrap();
        assert_eq!(l.surely_past, Some(8192));
        assert!(hi <= 8192 && lo < hi, "{l:?}");
        // Reached from both sides by the resamples: the range spans several steps.
        assert!(lo <= 2048, "{l:?}");
    }

    /// A span the table shows ≥ 10% faster, before a knee every resample puts further on (a
    /// lone dip the 5% rule's majority passes over): the range is cut there, and is not
    /// resolved, since no resample put the knee at the cut.
    #[test]
    fn a_range_only_the_cut_bounds_is_not_resolved() {
        // Six spans, huge pages pulling ahead from 6,144; `dip` at 2,048.
        let spans = |dip: f64| {
            sweep(&[
                (1024, 1.0, 0.01),
                (2048, dip, 0.01),
                (3072, 1.0, 0.01),
                (4096, 1.0, 0.01),
                (6144, 0.80, 0.01),
                (8192, 0.78, 0.01),
            ])
        };
        let (s, mut p) = spans(0.85);
        p[1].ratio.hi = Some(0.86);
        let (knee, l) = locate(&s, &p, 0.999, 11).unwrap();
        assert_eq!(l.surely_past, Some(2048));
        assert_eq!(knee, Some((1024, 2048)));
        assert!(!l.resolved, "{l:?}");
        // The same spans without the lone dip: the resamples bound the range themselves.
        let (s, p) = spans(1.0);
        let (knee, l) = locate(&s, &p, 0.999, 11).unwrap();
        assert_eq!(knee, Some((4096, 6144)));
        assert!(l.resolved, "{l:?}");
    }

    #[test]
    fn a_sweep_that_never_pulls_ahead_has_no_knee_and_says_so() {
        let (s, p) = sweep(&[(1024, 1.0, 0.01), (2048, 1.0, 0.01), (4096, 0.99, 0.01)]);
        let (knee, l) = locate(&s, &p, 0.999, 3).unwrap();
        assert_eq!(knee, None);
        assert!(l.resolved && l.no_knee == 1.0, "{l:?}");
        assert_eq!(l.between, (4096, None));
    }

    #[test]
    fn a_knee_the_noise_may_put_beyond_the_spans_is_not_resolved_and_names_the_rounds() {
        // The last spans sit just past the rule with wide rounds: some resamples find no knee.
        let (s, p) = sweep(&[(1024, 1.0, 0.01), (2048, 0.93, 0.06), (4096, 0.92, 0.06)]);
        let (knee, l) = locate(&s, &p, 0.999, 5).unwrap();
        assert_eq!(knee, None, "{l:?}");
        assert!(!l.resolved && l.no_knee > 0.0, "{l:?}");
        assert_eq!(l.between.1, None);
        let r = l.rounds_to_resolve.unwrap();
        assert!(r > 12, "{l:?}");
    }
}
