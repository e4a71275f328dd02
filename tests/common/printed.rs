//! Printed = stored: every number an answer prints, found (rounded as printed, in the unit
//! printed) among the numbers of a stored record (`results show --json`), or in its words.

use regex::Regex;

/// A number as printed: its value, its decimals, the unit right after it (or after the `± x`
/// that follows it), and where it is in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Printed {
    pub text: String,
    pub value: f64,
    pub decimals: usize,
    pub unit: String,
    /// Its byte offset in the text.
    pub at: usize,
}

/// Every number in `text` with its unit, in the order printed; numbers inside words
/// (`hugetlb-2m`, `r2`) are not numbers, and a span like `2m26s` is one number of seconds.
pub fn numbers(text: &str) -> Vec<Printed> {
    let span = Regex::new(r"\b(?:(\d+)h)?(\d+)m(\d+)s\b").unwrap();
    let re = Regex::new(
        r"(^|[^\w.\-])([+\-−]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?((?:\s?|\n\s*)(?:%|×|GiB|MiB|KiB|kB|MB|GB|ms|µs|us|ns|s|min|h|days|B|M|G|K)\b|%|×)?",
    )
    .unwrap();
    let mut out = Vec::new();
    let mut rest = text.to_string();
    for c in span.captures_iter(text) {
        let n = |i| c.get(i).map_or(0.0, |m| m.as_str().parse::<f64>().unwrap());
        let m = c.get(0).unwrap();
        out.push(Printed {
            text: m.as_str().to_string(),
            value: n(1) * 3600.0 + n(2) * 60.0 + n(3),
            decimals: 0,
            unit: "s".into(),
            at: m.start(),
        });
        rest.replace_range(m.range(), &" ".repeat(m.len()));
    }
    for c in re.captures_iter(&rest) {
        let digits = c[3].replace(',', "");
        let frac = c.get(4).map_or("", |m| m.as_str());
        let sign = if matches!(&c[2], "-" | "−") {
            -1.0
        } else {
            1.0
        };
        let whole = c.get(0).unwrap();
        // A number that runs into a word is part of it (`4k`, `4k's`): a name, not a number.
        if rest[whole.end()..]
            .chars()
            .next()
            .is_some_and(|ch| ch.is_alphanumeric() || ch == '_')
        {
            continue;
        }
        let lead = whole.as_str().len() - whole.as_str().trim_start().len();
        out.push(Printed {
            text: whole.as_str().trim().to_string(),
            value: sign * format!("{digits}{frac}").parse::<f64>().unwrap(),
            decimals: frac.len().saturating_sub(1),
            // `×2.1`: a change printed as a ratio once it doubles.
            unit: match &c[1] {
                "×" => "×".to_string(),
                _ => c.get(5).map_or("", |m| m.as_str()).trim().to_string(),
            },
            at: whole.start() + lead,
        });
    }
    out.sort_by_key(|p| p.at);
    // `101.6 ± 1.4 ms`: the value takes the unit printed after its spread.
    for i in 0..out.len().saturating_sub(1) {
        let end = out[i].at + out[i].text.len();
        if out[i].unit.is_empty() && text[end..].starts_with(" ± ") {
            out[i].unit = out[i + 1].unit.clone();
        }
    }
    out
}

/// Every number a JSON value holds, every list's length, and every number printed inside its
/// strings (with the unit it was printed in there).
pub fn json_numbers(v: &serde_json::Value, out: &mut Vec<(f64, Option<String>)>) {
    match v {
        serde_json::Value::Number(n) => out.extend(n.as_f64().map(|n| (n, None))),
        serde_json::Value::String(s) => {
            out.extend(numbers(s).into_iter().map(|p| (p.value, Some(p.unit))))
        }
        // A count printed ("5 notes") is the length of a stored list.
        serde_json::Value::Array(a) => {
            out.push((a.len() as f64, None));
            a.iter().for_each(|x| json_numbers(x, out))
        }
        serde_json::Value::Object(m) => m.values().for_each(|x| json_numbers(x, out)),
        _ => {}
    }
}

/// What a stored number `n` reads as in the unit printed.
fn as_printed(n: f64, unit: &str) -> Vec<f64> {
    let k = 1024f64;
    match unit {
        // A fraction, a percentage, or a ratio printed as its change (0.60 → -40%).
        "%" => vec![n * 100.0, n, (n - 1.0) * 100.0],
        // A ratio, or a stored percentage change printed as one.
        "×" => vec![n, 1.0 + n / 100.0],
        "GiB" | "G" => vec![n / k.powi(3)],
        "MiB" | "M" => vec![n / k.powi(2)],
        "KiB" | "K" => vec![n / k],
        "GB" => vec![n / 1e9],
        "MB" => vec![n / 1e6],
        "kB" => vec![n / 1e3, n / k],
        "s" => vec![n, n / 1e3, n / 1e9],
        "ms" => vec![n * 1e3, n, n / 1e6],
        "µs" | "us" => vec![n * 1e6, n * 1e3, n, n / 1e3],
        "ns" => vec![n * 1e9, n],
        // A time in its unit (`about 9.9 h`), stored in seconds or in that unit.
        "min" => vec![n / 60.0, n],
        "h" => vec![n / 3600.0, n],
        "days" => vec![n / 86_400.0, n],
        _ => vec![n],
    }
}

/// Whether `p` is one of `stored`, rounded as printed.
pub fn is_stored(p: &Printed, stored: &[(f64, Option<String>)]) -> bool {
    let step = 10f64.powi(-(p.decimals as i32));
    let eps = 1e-9 * p.value.abs().max(1.0);
    // A span of seconds is printed to the second.
    let tol = if p.text.contains('m') && p.unit == "s" {
        1.0
    } else {
        0.5 * step + eps
    };
    let near = |c: f64| (c - p.value).abs() <= tol;
    stored.iter().any(|(n, unit)| match unit {
        Some(u) => *u == p.unit && near(*n),
        None => as_printed(*n, &p.unit).into_iter().any(near),
    })
}

/// The numbers `text` prints that the record does not hold.
pub fn not_stored(text: &str, record: &serde_json::Value) -> Vec<Printed> {
    let mut stored = Vec::new();
    json_numbers(record, &mut stored);
    numbers(text)
        .into_iter()
        .filter(|p| !is_stored(p, &stored))
        .collect()
}

/// A printed number no field of the record explains, with its line.
#[derive(Debug, Clone)]
pub struct Unexplained {
    pub text: String,
    pub line: String,
    /// The fields whose change moved it (its provenance), by path.
    pub moved_by: Vec<String>,
}

/// One leaf of a record: its path, and what it holds.
#[derive(Debug, Clone)]
enum Leaf {
    Number(Vec<Step>, f64),
    Text(Vec<Step>, String),
    List(Vec<Step>, usize),
    /// A map's key that holds a number (a page size, `mthp.2048kB.anon_fault_alloc`).
    Key(Vec<Step>, String),
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

impl Leaf {
    fn path(&self) -> &[Step] {
        match self {
            Leaf::Number(p, _) | Leaf::Text(p, _) | Leaf::List(p, _) | Leaf::Key(p, _) => p,
        }
    }

    fn name(&self) -> String {
        self.path()
            .iter()
            .map(|s| match s {
                Step::Key(k) => format!(".{k}"),
                Step::Index(i) => format!("[{i}]"),
            })
            .collect()
    }

    /// The last key on its path (`failed` of `evidence[1].failed`).
    fn key(&self) -> Option<&str> {
        self.path().iter().rev().find_map(|s| match s {
            Step::Key(k) => Some(k.as_str()),
            Step::Index(_) => None,
        })
    }
}

fn leaves(v: &serde_json::Value, path: &mut Vec<Step>, out: &mut Vec<Leaf>) {
    match v {
        serde_json::Value::Number(n) => {
            out.extend(n.as_f64().map(|x| Leaf::Number(path.clone(), x)))
        }
        serde_json::Value::String(s) if s.chars().any(|c| c.is_ascii_digit()) => {
            out.push(Leaf::Text(path.clone(), s.clone()))
        }
        serde_json::Value::Array(a) => {
            if !a.is_empty() {
                out.push(Leaf::List(path.clone(), a.len()));
            }
            for (i, x) in a.iter().enumerate() {
                path.push(Step::Index(i));
                leaves(x, path, out);
                path.pop();
            }
        }
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                path.push(Step::Key(k.clone()));
                if k.chars().any(|c| c.is_ascii_digit()) {
                    out.push(Leaf::Key(path.clone(), k.clone()));
                }
                leaves(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut serde_json::Value, path: &[Step]) -> &'a mut serde_json::Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

/// The record with one leaf changed: a number moved (an integer by 7, a fraction by 37%), a
/// string's digits shifted, a list one longer (its last item again).
fn perturbed(doc: &serde_json::Value, leaf: &Leaf) -> serde_json::Value {
    let mut d = doc.clone();
    perturb(&mut d, leaf);
    d
}

/// Its digits shifted: `2048kB` → `5371kB`.
fn shifted(s: &str) -> String {
    s.chars()
        .map(|c| {
            c.to_digit(10)
                .map_or(c, |d| char::from_digit((d + 3) % 10, 10).unwrap())
        })
        .collect()
}

fn perturb(d: &mut serde_json::Value, leaf: &Leaf) {
    if let Leaf::Key(path, k) = leaf {
        let (_, parent) = path.split_last().unwrap();
        if let Some(m) = at(d, parent).as_object_mut()
            && let Some(v) = m.remove(k)
        {
            m.insert(shifted(k), v);
        }
        return;
    }
    let slot = at(d, leaf.path());
    *slot = match (leaf, &*slot) {
        (Leaf::Number(..), serde_json::Value::Number(n)) if n.is_u64() || n.is_i64() => {
            serde_json::json!(n.as_i64().unwrap_or(0) * 3 + 7)
        }
        (Leaf::Number(_, x), _) if *x == 0.0 => serde_json::json!(1.7),
        // Enough to move a number printed to its unit (1 min → 3 min); one near zero is
        // shifted whole, since scaling it (-1.0 → -1.4) can leave it as printed (`-1%`).
        (Leaf::Number(_, x), _) if x.abs() < 2.0 => serde_json::json!(x + 7.3),
        (Leaf::Number(_, x), _) => serde_json::json!(x * 2.7 + 1.3),
        (Leaf::Text(_, s), _) => serde_json::json!(shifted(s)),
        (Leaf::List(..), serde_json::Value::Array(a)) => {
            let mut a = a.clone();
            a.push(a.last().cloned().unwrap());
            serde_json::Value::Array(a)
        }
        (_, other) => other.clone(),
    };
}

/// Printed = stored by provenance. `render` draws a text from a record (`doc`, JSON); each
/// number it prints must come from the fields the line reads: changing such a field (one at a
/// time) moves the number — that is its provenance — and the number is one of them as printed
/// (in the unit printed, rounded as printed), a number a text field of them holds, the length
/// of a list among them, or the sum of same-named fields among them (a count over the arms). A
/// constant of the wording is allowed only inside the words `constants` names.
pub struct Provenance {
    leaves: Vec<Leaf>,
    /// The numbers the record renders to, and the leaves whose change moved each.
    rendered: Vec<Printed>,
    moved: Vec<Vec<usize>>,
}

impl Provenance {
    pub fn of(
        doc: &serde_json::Value,
        render: &dyn Fn(&serde_json::Value) -> Option<String>,
    ) -> Provenance {
        let base = render(doc).expect("the record renders");
        let rendered = numbers(&base);
        let mut all = Vec::new();
        leaves(doc, &mut Vec::new(), &mut all);
        let mut moved: Vec<Vec<usize>> = vec![Vec::new(); rendered.len()];
        let base_tokens = tokens(&base);
        // A changed record may break what the renderer may assume of a real one (an index into
        // its own lists): such a change says nothing of where a number comes from.
        let draw = |d: &serde_json::Value| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| render(d)))
                .ok()
                .flatten()
        };
        // Parts of the record no view prints (a bench's raw rounds) are found whole: where
        // every value under a key changed at once moves nothing, none is tried alone.
        let mut silent = vec![false; all.len()];
        mark_silent(doc, &all, 0..all.len(), 0, &base_tokens, &draw, &mut silent);
        for (k, leaf) in all.iter().enumerate() {
            if silent[k] {
                continue;
            }
            let Some(t) = draw(&perturbed(doc, leaf)) else {
                continue;
            };
            // The numbers this change moved: those of the text that the changed text does not
            // keep in order (a longest common subsequence, so a number the change adds or
            // leaves out elsewhere does not move the rest).
            for i in unkept(&base_tokens, &tokens(&t)) {
                moved[i].push(k);
            }
        }
        Provenance {
            leaves: all,
            rendered,
            moved,
        }
    }

    /// The numbers `text` (said to be rendered from the record) prints that the record does not
    /// explain, or that differ from what it renders to (a planted change).
    pub fn unexplained(&self, text: &str, constants: &[&str]) -> Vec<Unexplained> {
        let printed = numbers(text);
        let line_of = |p: &Printed| {
            let start = text[..p.at].rfind('\n').map_or(0, |i| i + 1);
            let end = text[p.at..].find('\n').map_or(text.len(), |i| p.at + i);
            text[start..end].to_string()
        };
        let mut out = Vec::new();
        for (i, p) in printed.iter().enumerate() {
            let from: Vec<&Leaf> = self
                .moved
                .get(i)
                .map_or(Vec::new(), |m| m.iter().map(|k| &self.leaves[*k]).collect());
            // The text printed must be the text rendered from the record, number for number.
            let same = self
                .rendered
                .get(i)
                .is_some_and(|r| r.value == p.value && r.unit == p.unit);
            if same && explained(p, &from) {
                continue;
            }
            // A constant of the wording, printed inside the words that say it (a pattern over
            // the text around it, its lines joined).
            let around = {
                let (mut lo, mut hi) = (p.at.saturating_sub(80), (p.at + 80).min(text.len()));
                while !text.is_char_boundary(lo) {
                    lo -= 1;
                }
                while !text.is_char_boundary(hi) {
                    hi += 1;
                }
                text[lo..hi]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            if same
                && constants.iter().any(|c| {
                    Regex::new(c)
                        .unwrap()
                        .find_iter(&around)
                        .any(|m| m.as_str().contains(p.text.trim_start_matches(['(', '['])))
                })
            {
                continue;
            }
            out.push(Unexplained {
                text: p.text.clone(),
                line: line_of(p),
                moved_by: from.iter().map(|l| l.name()).collect(),
            });
        }
        out
    }
}

/// Marks the values (numbers and texts) under each key whose change, all at once, leaves the
/// text's numbers as they were; descends only where some did move. `range`: the leaves under
/// the key at `depth` of their paths.
fn mark_silent(
    doc: &serde_json::Value,
    all: &[Leaf],
    range: std::ops::Range<usize>,
    depth: usize,
    base: &[Token],
    draw: &dyn Fn(&serde_json::Value) -> Option<String>,
    silent: &mut [bool],
) {
    let values: Vec<usize> = range
        .clone()
        .filter(|k| matches!(all[*k], Leaf::Number(..) | Leaf::Text(..)))
        .collect();
    if values.len() > 1 {
        let mut d = doc.clone();
        for k in &values {
            perturb(&mut d, &all[*k]);
        }
        if draw(&d).is_some_and(|t| tokens(&t) == base) {
            values.iter().for_each(|k| silent[*k] = true);
            return;
        }
    }
    // The keys one step down, each with its leaves (contiguous: the leaves are in path order).
    let mut start = range.start;
    while start < range.end {
        let Some(step) = all[start].path().get(depth) else {
            start += 1;
            continue;
        };
        let end = (start..range.end)
            .find(|k| all[*k].path().get(depth) != Some(step))
            .unwrap_or(range.end);
        if end - start > 1 {
            mark_silent(doc, all, start..end, depth + 1, base, draw, silent);
        }
        start = end;
    }
}

/// A number as the alignment sees it: its value with the mark before it (`@99%` is not `at
/// 99%`), its unit, and the words either side where they hold no number (`in 3 s` is not
/// `--calibrate 3 s`, `0 failed` is not `0 flagged`).
type Token = (String, String, String, String);

fn tokens(text: &str) -> Vec<Token> {
    let plain = |w: Option<&str>| {
        w.filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
            .unwrap_or("")
            .to_string()
    };
    numbers(text)
        .into_iter()
        .map(|p| {
            let before = plain(text[..p.at].split_whitespace().next_back());
            let after = plain(text[p.at + p.text.len()..].split_whitespace().next());
            let mark = p
                .text
                .chars()
                .next()
                .filter(|c| !c.is_ascii_digit())
                .unwrap_or(' ');
            (format!("{}{mark}", p.value), p.unit, before, after)
        })
        .collect()
}

/// The indices of `a` that a longest common subsequence with `b` leaves out (what both start
/// and end with is kept without the quadratic table).
fn unkept<T: PartialEq>(a: &[T], b: &[T]) -> Vec<usize> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    unkept_lcs(&a[head..a.len() - tail], &b[head..b.len() - tail])
        .into_iter()
        .map(|i| i + head)
        .collect()
}

fn unkept_lcs<T: PartialEq>(a: &[T], b: &[T]) -> Vec<usize> {
    let (n, m) = (a.len(), b.len());
    let mut l = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            l[i][j] = if a[i] == b[j] {
                l[i + 1][j + 1] + 1
            } else {
                l[i + 1][j].max(l[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n {
        if j < m && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < m && l[i][j + 1] > l[i + 1][j] {
            j += 1;
        } else {
            out.push(i);
            i += 1;
        }
    }
    out
}

/// Whether `p` is one of the fields that move it, as printed.
fn explained(p: &Printed, from: &[&Leaf]) -> bool {
    let one = |n: f64| is_stored(p, &[(n, None)]);
    // A count of 4 KiB pages (a span, TLB entries) printed as the bytes they cover.
    let pages = |l: &Leaf| {
        l.key().is_some_and(|k| {
            k.contains("pages") || ["entries", "knee", "between", "surely_past"].contains(&k)
        })
    };
    if from.iter().any(|l| match l {
        Leaf::Number(_, x) => one(*x) || (pages(l) && one(x * 4096.0)),
        Leaf::Text(_, s) => numbers(s).iter().any(|q| {
            q.unit == p.unit && (q.value - p.value).abs() <= 1e-9 * p.value.abs().max(1.0)
        }),
        Leaf::List(_, n) => one(*n as f64),
        // A size in a key, printed in the unit of its own (2048kB → 2M).
        Leaf::Key(_, k) => Regex::new(r"(\d+)(kB|K|M|G)?")
            .unwrap()
            .captures_iter(k)
            .any(|c| {
                let n: f64 = c[1].parse().unwrap();
                let scale = match c.get(2).map_or("", |m| m.as_str()) {
                    "kB" | "K" => 1024.0,
                    "M" => 1048576.0,
                    "G" => 1073741824.0,
                    _ => 1.0,
                };
                one(n) || one(n * scale)
            }),
    }) {
        return true;
    }
    // A count over the arms: the sum of the same-named fields that move it.
    let mut sums: std::collections::BTreeMap<&str, f64> = Default::default();
    for l in from {
        if let (Leaf::Number(_, x), Some(k)) = (l, l.key()) {
            *sums.entry(k).or_default() += x;
        }
    }
    if sums.values().any(|s| one(*s)) {
        return true;
    }
    // Two counters the line reads together (faults that were huge and fell back): their sum,
    // or one's share of it.
    let xs: Vec<f64> = from
        .iter()
        .filter_map(|l| match l {
            Leaf::Number(_, x) => Some(*x),
            _ => None,
        })
        .collect();
    xs.len() <= 8
        && xs.iter().enumerate().any(|(i, a)| {
            xs[i + 1..]
                .iter()
                .any(|b| one(a + b) || (a + b > 0.0 && (one(a / (a + b)) || one(b / (a + b)))))
        })
}

/// The constants the renderers word their lines with (a test's power, an outlier's robust z, the
/// bench's 5% rule): printed, but no field's.
pub const WORDING: &[&str] = &[
    r"resolve δ = \S+ with 80% probability",
    r"for an 80% chance",
    r"\(80% power\)",
    r"robust z above 5",
    r"> 0\.555",
    r"up to about 1 point less",
    r"a BCa bootstrap interval needs 10 units",
    r"past the 5% rule",
    // The share of stolen CPU time past which a trial is said to be under heavy steal
    // (`model::analysis::HEAVY_STEAL`): a threshold, not a measurement.
    r"more than 5% of the CPU time was stolen",
    r"at least 5% faster",
    r"(of|on|as|every|huge /) 4 KiB",
    r"4 KiB (pages?|TLB|time|reach)",
    r"2 MiB",
    r"the interval excludes 1, `~`",
    r"│ span +pages +4k ns",
    r"1 GiB",
    // A size's fallback counter that never moved (absent from the kernel's deltas): none fell
    // back.
    r"huge faults, 0% fell back",
    // An mTHP size's name heading what its counters did (`render::thp_activity`): one of the
    // sizes the kernel offers, not a measurement. A size with two counters moved is moved by
    // neither alone, so no leaf of the record moves its name.
    r"\b(?:16K|32K|64K|128K|256K|512K|1M|2M): ",
    r"huge allocations, 0% fell back",
    // An interval's bound past ×100 (a t quantile over two blocks), printed as the cap
    // (`render::words::percent_interval`), not as its digits.
    r", >\+10000\]",
    // An arm no trial measured a metric for: n = 0, nothing else.
    r"│ \S+ +0 +- +- +- ",
];

/// A run's record drawn as `run` (brief) or `results show` (every table) draws it.
pub fn run_text(doc: &serde_json::Value, how: hugelab::render::run::Print) -> Option<String> {
    let record = serde_json::from_value(doc["record"].clone()).ok()?;
    let said = serde_json::from_value(doc["said"].clone()).ok()?;
    Some(hugelab::render::run::record_text(&record, &said, &[], how))
}

/// `text` with the first digit of its `nth` number changed.
fn planted(text: &str, nth: usize) -> (String, String) {
    let p = &numbers(text)[nth];
    let at = text.find(&p.text).unwrap();
    let digit = at + p.text.find(|c: char| c.is_ascii_digit()).unwrap();
    let d = text.as_bytes()[digit] - b'0';
    let mut out = text.to_string();
    out.replace_range(digit..digit + 1, &((d + 1) % 10).to_string());
    (out, p.text.clone())
}

/// The record explains every number `text` prints, and a changed one is caught.
pub fn holds(
    doc: &serde_json::Value,
    text: &str,
    render: &dyn Fn(&serde_json::Value) -> Option<String>,
) {
    let provenance = Provenance::of(doc, render);
    let missing = provenance.unexplained(text, WORDING);
    assert!(
        missing.is_empty(),
        "printed, not stored: {missing:#?}\n{text}"
    );
    let n = numbers(text).len();
    assert!(n >= 5, "{text}");
    for nth in [0, n / 2, n - 1] {
        let (wrong, was) = planted(text, nth);
        assert!(
            !provenance.unexplained(&wrong, WORDING).is_empty(),
            "a planted change of {was} passed:\n{wrong}"
        );
    }
}
