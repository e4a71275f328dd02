//! fleet: the engine of `hugelab judge` — a huge-page change judged on live hosts from
//! Prometheus: a canary group against a baseline group over a window, per metric and overall,
//! with the exporter's coverage as the evidence that the canary really had huge pages
//! (`analyze::judge` does the statistics), looked at once or followed until settled
//! (`follow`), or a switchback on this host (`switchback.rs`). The command parses and renders.

use crate::analyze::judge::{self, Evidence, Overall, Prepared, Settings, Window};
use crate::analyze::verdict::{Design, SEQUENTIAL_N_OPT};
use crate::collect::prometheus::{Prometheus, Series};
use crate::error::UsageError;
use crate::model::judge::{JudgeResult, SCHEMA};
use crate::units::{fmt_span, fmt_utc};
use std::time::{Duration, Instant};

mod args;
pub mod kubelet;
mod spec;
pub mod switchback;
pub mod webhook;

pub use args::{JudgeArgs, OnOutage, step_args};
pub use spec::{MetricSpec, parse_metric, parse_span, parse_time};
use spec::{coverage_query, fill, kernel_queries, matchers};

/// Exit codes by the overall verdict.
pub const EXIT_WORSE: i32 = 3;
pub const EXIT_INCONCLUSIVE: i32 = 4;
pub const EXIT_FLAGGED: i32 = 5;

/// Everything checked before Prometheus is asked.
pub struct Plan {
    canary: String,
    baseline: String,
    from: f64,
    /// The window's end (unix seconds).
    pub to: f64,
    window: Window,
    /// The before window, when one was given.
    before: Option<Window>,
    step: f64,
    token: Option<String>,
}

pub fn plan(a: &JudgeArgs, now: f64) -> Result<Plan, UsageError> {
    check_common(a)?;
    let (Some(canary), Some(baseline)) = (&a.canary, &a.baseline) else {
        return Err(UsageError(
            "give the groups: --canary MATCHERS and --baseline MATCHERS (or --switchback --host MATCHERS for one host)".into(),
        ));
    };
    let canary = matchers("canary", canary)?;
    let baseline = matchers("baseline", baseline)?;
    if canary == baseline {
        return Err(UsageError(format!(
            "--canary and --baseline are the same matchers ({canary}); the groups must be different hosts"
        )));
    }
    let to = a.to.unwrap_or(now);
    let from = match (a.last, a.from) {
        (Some(l), _) => to - l.as_secs_f64(),
        (None, Some(f)) => f,
        (None, None) => {
            return Err(UsageError(
                "give the window: --last 3h, or --from TIME (the change) [--to TIME]".into(),
            ));
        }
    };
    if from >= to {
        return Err(UsageError(format!(
            "--from ({}) is not before --to ({}); the window must have a length",
            fmt_utc(from, true),
            fmt_utc(to, true)
        )));
    }
    if to > now + 60.0 && !a.follow {
        return Err(UsageError(format!(
            "--to ({}) is in the future; without --follow the window must have ended (leave --to out for now)",
            fmt_utc(to, true)
        )));
    }
    let (step, interval) = (a.step.as_secs_f64(), a.interval.as_secs_f64());
    if step * 2.0 > interval {
        return Err(UsageError(format!(
            "--step {} leaves fewer than 2 samples per --interval {}; give a shorter step or a longer interval",
            fmt_span(step),
            fmt_span(interval)
        )));
    }
    let start = from + a.burn_in.as_secs_f64();
    if start + interval > to && !a.follow {
        return Err(UsageError(format!(
            "after the burn-in of {} the window {} → {} holds no full interval of {}; widen the window or shorten --burn-in/--interval",
            fmt_span(a.burn_in.as_secs_f64()),
            fmt_utc(from, true),
            fmt_utc(to, true),
            fmt_span(interval)
        )));
    }
    let before = match (a.before, a.before_last) {
        (Some((f, t)), _) => Some((f, t)),
        (None, Some(d)) => Some((from - d.as_secs_f64(), from)),
        _ => None,
    };
    if let Some((bf, bt)) = before {
        if bt > from {
            return Err(UsageError(format!(
                "the before window ends at {}, after the change at {} (--from); it must end before the change reached the canary",
                fmt_utc(bt, true),
                fmt_utc(from, true)
            )));
        }
        if bf + 2.0 * interval > bt {
            return Err(UsageError(format!(
                "the before window {} → {} holds fewer than 2 intervals of {}; widen it (as long as the judged window if possible)",
                fmt_utc(bf, true),
                fmt_utc(bt, true),
                fmt_span(interval)
            )));
        }
    }
    Ok(Plan {
        canary,
        baseline,
        from,
        to,
        window: Window {
            start,
            end: to,
            interval,
        },
        before: before.map(|(bf, bt)| Window {
            start: bf,
            end: bt,
            interval,
        }),
        step,
        token: token(a)?,
    })
}

impl Plan {
    /// Where the judged window begins (before the burn-in).
    pub fn from(&self) -> f64 {
        self.from
    }

    /// The same plan with its window begun at `from` (a canary's first look), so that each
    /// look judges a window that only grows.
    pub fn begun_at(mut self, from: f64, burn_in_s: f64) -> Plan {
        self.from = from;
        self.window.start = from + burn_in_s;
        self
    }
}

/// What every judgement needs: metrics with distinct names and an http(s) address.
fn check_common(a: &JudgeArgs) -> Result<(), UsageError> {
    if a.metrics.is_empty() {
        return Err(UsageError(
            "give at least one --metric NAME=PROMQL,lower|higher to judge, e.g. --metric 'p99=histogram_quantile(0.99, sum by (le,instance) (rate(http_request_duration_seconds_bucket{$sel}[5m]))),lower'".into(),
        ));
    }
    let mut names: Vec<&str> = a.metrics.iter().map(|m| m.name.as_str()).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(UsageError(format!(
            "--metric {} is given twice; give each metric a name of its own",
            w[0]
        )));
    }
    if let Some(m) = &a.cgroup {
        matchers("cgroup", m)?;
    }
    if !(a.prometheus.starts_with("http://") || a.prometheus.starts_with("https://")) {
        return Err(UsageError(format!(
            "--prometheus {:?} is not an http:// or https:// address, e.g. http://prometheus:9090",
            a.prometheus
        )));
    }
    Ok(())
}

fn token(a: &JudgeArgs) -> Result<Option<String>, UsageError> {
    match &a.bearer_token_file {
        Some(p) => Ok(Some(
            std::fs::read_to_string(p)
                .map_err(|e| {
                    UsageError(format!(
                        "--bearer-token-file {}: {e}; give a file holding the token",
                        p.display()
                    ))
                })?
                .trim()
                .to_string(),
        )),
        None => Ok(None),
    }
}

pub fn now() -> f64 {
    jiff::Timestamp::now().as_millisecond() as f64 / 1000.0
}

/// Fetch both groups of one query over `range` (the judged window with its burn-in, or the
/// before window); an error names what was being fetched for which group.
fn both(
    prom: &mut Prometheus,
    what: &str,
    template: &str,
    p: &Plan,
    (from, end): (f64, f64),
) -> anyhow::Result<(Vec<Series>, Vec<Series>)> {
    let mut get = |sel: &str, group: &str| {
        prom.query_range(&fill(template, sel), from, end, p.step)
            .map_err(|e| anyhow::anyhow!("{e}\n  while fetching {what} for the {group}"))
    };
    Ok((get(&p.canary, "canary")?, get(&p.baseline, "baseline")?))
}

/// Every metric judged and the evidence gathered from series that `fetch(what, template,
/// range)` gives as (canary, baseline) over `range`: the judged window (with its burn-in), and
/// the before window when there is one.
fn judge_all(
    a: &JudgeArgs,
    (window, range): (&Window, (f64, f64)),
    before: Option<&Window>,
    (design, groups): (&Design, judge::Groups),
    mut fetch: impl FnMut(&str, &str, (f64, f64)) -> anyhow::Result<(Vec<Series>, Vec<Series>)>,
) -> anyhow::Result<(Vec<judge::MetricJudgement>, Evidence)> {
    let before_range = before.map(|b| (b.start, b.end));
    let mut both_windows = |what: &str, q: &str| -> anyhow::Result<_> {
        let after = fetch(what, q, range)?;
        let before = match before_range {
            Some(r) => Some(fetch(&format!("{what} (before window)"), q, r)?),
            None => None,
        };
        Ok((after, before))
    };
    let mut prepared: Vec<Prepared> = Vec::new();
    for m in &a.metrics {
        let ((c, b), pre) = both_windows(&format!("metric {}", m.name), &m.query)?;
        prepared.push(judge::prepare(
            &m.name,
            m.better,
            m.critical,
            (&c, &b),
            window,
            pre.as_ref()
                .zip(before)
                .map(|((bc, bb), w)| ((bc.as_slice(), bb.as_slice()), w)),
        ));
    }
    let metrics = judge::judge(
        prepared,
        &Settings {
            effect: a.decision.effect,
            confidence: a.decision.confidence,
            design: design.clone(),
            groups,
        },
    );
    let cgroups = a
        .cgroup
        .as_deref()
        .map(|m| matchers("cgroup", m))
        .transpose()?;
    let ((cc, bc), pre) = both_windows(
        "the coverage evidence",
        &coverage_query(a.service.as_deref(), cgroups.as_deref()),
    )?;
    let mut evidence: Evidence = judge::evidence(&cc, &bc, window, a.huge_on, cgroups.as_deref());
    if let (Some((pc, pb)), Some(w)) = (&pre, before) {
        judge::before_evidence(pc, pb, w, a.huge_on, &mut evidence);
    }
    let range = fmt_span((4.0 * a.step.as_secs_f64()).max(60.0));
    for (name, q, unit) in kernel_queries(&range) {
        let ((c, b), pre) = both_windows(&format!("the kernel evidence ({name})"), &q)?;
        let (canary_before, baseline_before) = match (&pre, before) {
            (Some((pc, pb)), Some(w)) => (judge::window_mean(pc, w), judge::window_mean(pb, w)),
            _ => (None, None),
        };
        evidence.kernel.push(judge::KernelRow {
            name: name.to_string(),
            canary: judge::window_mean(&c, window),
            baseline: judge::window_mean(&b, window),
            unit: unit.to_string(),
            canary_before,
            baseline_before,
        });
    }
    Ok((metrics, evidence))
}

/// The record of one judgement.
#[allow(clippy::too_many_arguments)]
fn record(
    a: &JudgeArgs,
    groups: (String, String),
    (from, to, window): (f64, f64, &Window),
    design: Design,
    (metrics, evidence): (Vec<judge::MetricJudgement>, Evidence),
    prom: &Prometheus,
    started: Instant,
    look: usize,
    switchback: Option<crate::model::judge::Switchback>,
) -> JudgeResult {
    let overall = judge::overall(&metrics, &evidence);
    JudgeResult {
        schema: SCHEMA,
        prometheus: a.prometheus.clone(),
        canary: groups.0,
        baseline: groups.1,
        from,
        to,
        judged_from: window.start,
        burn_in_s: a.burn_in.as_secs_f64(),
        step_s: a.step.as_secs_f64(),
        interval_s: window.interval,
        effect: a.decision.effect,
        confidence: a.decision.confidence,
        design,
        huge_on: a.huge_on,
        queries: a
            .metrics
            .iter()
            .map(|m| (m.name.clone(), m.query.clone()))
            .collect(),
        metrics,
        evidence,
        overall,
        requests: prom.requests,
        samples: prom.samples,
        elapsed_s: started.elapsed().as_secs_f64(),
        look,
        switchback,
        before: None,
    }
}

/// One look: fetch every query up to `end` and judge, by a confidence sequence under
/// `--follow` (see [`look_as`]).
pub fn look(a: &JudgeArgs, p: &Plan, end: f64, look: usize) -> anyhow::Result<JudgeResult> {
    look_as(a, p, end, look, a.follow)
}

/// One look; `sequential` where the same canary is looked at again and again over a window
/// that only grows from one start (`--follow`, the webhook's looks at one canary): a confidence
/// sequence, valid at every look however many there are, where the fixed design's level holds
/// for one look only.
pub fn look_as(
    a: &JudgeArgs,
    p: &Plan,
    end: f64,
    look: usize,
    sequential: bool,
) -> anyhow::Result<JudgeResult> {
    let started = Instant::now();
    let mut prom = Prometheus::new(&a.prometheus, p.token.clone(), a.timeout);
    let window = Window { end, ..p.window };
    let design = if sequential {
        Design::Sequential {
            n_opt: SEQUENTIAL_N_OPT,
        }
    } else {
        Design::Fixed
    };
    let judged = judge_all(
        a,
        (&window, (p.from, end)),
        p.before.as_ref(),
        (&design, judge::Groups::Hosts),
        |what, q, range| both(&mut prom, what, q, p, range),
    )?;
    let mut r = record(
        a,
        (p.canary.clone(), p.baseline.clone()),
        (p.from, end, &window),
        design,
        judged,
        &prom,
        started,
        look,
        None,
    );
    r.before = p.before.map(|w| (w.start, w.end));
    Ok(r)
}

pub fn exit_code(o: Overall) -> i32 {
    match o {
        Overall::Better | Overall::Equivalent => 0,
        Overall::Worse => EXIT_WORSE,
        Overall::Inconclusive => EXIT_INCONCLUSIVE,
        Overall::Flagged => EXIT_FLAGGED,
    }
}

/// `--follow`: look after every interval until every metric is settled, the window's end, or
/// a signal; `say` gets a line per look (and why it stopped); the last look is returned.
pub fn follow(a: &JudgeArgs, p: &Plan, say: &mut dyn FnMut(&str)) -> anyhow::Result<JudgeResult> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let (tx, rx) = std::sync::mpsc::channel();
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let handle = signals.handle();
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = tx.send(());
        }
    });
    let mut n = 0;
    let last = loop {
        n += 1;
        let end = now().min(p.to);
        let r = if end >= p.window.start + p.window.interval {
            Some(look(a, p, end, n)?)
        } else {
            None
        };
        if let Some(r) = &r {
            say(&crate::render::judge::look_line(r));
        }
        let settled = r
            .as_ref()
            .is_some_and(|r| r.overall == Overall::Flagged || judge::settled(&r.metrics));
        if settled || end >= p.to {
            break r;
        }
        // Wait for the next interval to complete (or a signal), blocking.
        let done = p.window.start
            + p.window.interval * (((end - p.window.start) / p.window.interval).floor() + 1.0);
        let wait = (done - now()).max(1.0) + p.step;
        if rx.recv_timeout(Duration::from_secs_f64(wait)).is_ok() {
            say("stopped by a signal; the last look:");
            break r;
        }
    };
    handle.close();
    match last {
        Some(r) => Ok(r),
        None => Err(anyhow::anyhow!(
            "stopped before the first interval after the burn-in ended ({}); nothing judged",
            fmt_utc(p.window.start + p.window.interval, true)
        )),
    }
}

/// The exit code `--fail-on` gives: only the verdicts named fail; the rest pass.
pub fn policy(a: &JudgeArgs, r: &JudgeResult) -> i32 {
    match a.fail_on.is_empty() || a.fail_on.iter().any(|f| f.is(r.overall)) {
        true => exit_code(r.overall),
        false => 0,
    }
}
