use super::*;

#[test]
fn wraps_to_the_width_with_a_hanging_indent() {
    let text = "word ".repeat(60);
    let lines = wrap_hanging(text.trim(), 4);
    assert!(lines.len() > 2);
    assert!(lines.iter().all(|l| l.chars().count() <= WIDTH));
    assert!(lines[1].starts_with("    word"));
    assert_eq!(
        lines
            .iter()
            .map(|l| l.split_whitespace().count())
            .sum::<usize>(),
        60
    );
    // A single word longer than the width stays whole.
    let long = "x".repeat(120);
    assert_eq!(wrap_hanging(&long, 2), vec![long.clone()]);
}

#[test]
fn a_point_without_an_interval_has_two_significant_digits() {
    assert_eq!(two_significant(139.9), "+140%");
    assert_eq!(two_significant(24.9), "+25%");
    assert_eq!(two_significant(-3.74), "-3.7%");
    assert_eq!(two_significant(0.523), "+0.52%");
    assert_eq!(two_significant(0.0), "+0.0%");
}

#[test]
fn thousands_separators() {
    assert_eq!(thousands(6000), "6,000");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1234567), "1,234,567");
}

#[test]
fn level_words_say_the_procedure_the_code_ran() {
    assert_eq!(level_words(&Design::Fixed, 1, 0.99), "verdicts at 99%");
    assert_eq!(
        level_words(&Design::Fixed, 2, 0.99),
        "verdicts at 99% family-wise (Holm, 2 contrasts)"
    );
    assert_eq!(
        level_words(&Design::Sequential { n_opt: 30.0 }, 2, 0.95),
        "sequential verdicts at 95% (Bonferroni, 2 contrasts)"
    );
}
