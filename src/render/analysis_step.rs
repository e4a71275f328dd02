//! `judge` as a step of a canary rollout: its answer as one line of JSON, and the Argo Rollouts
//! AnalysisTemplate (`argoproj.io/v1alpha1`, job provider) whose Job runs the judgement — the
//! Job's exit code is the measurement, so `--fail-on` decides what fails the step. Both print
//! what the record holds and compute nothing.

use crate::model::judge::JudgeResult;

/// One line of JSON: the overall verdict, the exit code it gave, the window, and per metric
/// its verdict and interval (percent, at the level it has) or why it has none.
pub fn line(r: &JudgeResult, exit: i32) -> String {
    let metrics: Vec<serde_json::Value> = r
        .metrics
        .iter()
        .map(|m| match &m.contrast {
            Some(c) => serde_json::json!({
                "name": m.name,
                "verdict": c.verdict,
                "percent": c.percent.point,
                "lo": c.percent.lo,
                "hi": c.percent.hi,
                "level": c.percent.confidence,
            }),
            None => serde_json::json!({ "name": m.name, "why_not": m.why_not }),
        })
        .collect();
    serde_json::json!({
        "schema": "hugelab.judge-line/1",
        "overall": r.overall,
        "exit": exit,
        "canary": r.canary,
        "baseline": r.baseline,
        "from": r.judged_from,
        "to": r.to,
        "design": r.design,
        "look": r.look,
        "metrics": metrics,
    })
    .to_string()
}

/// The AnalysisTemplate whose one metric is a Job running `hugelab` with `args` (a `judge`
/// command line) in `image`, once per analysis run; the step fails when the Job does.
pub fn analysis_template(args: &[String], image: &str) -> String {
    // A JSON string is a YAML double-quoted scalar: every argument goes through as it is.
    let quoted = |s: &str| serde_json::to_string(s).expect("a string serialises");
    let mut a = String::new();
    for w in args {
        a.push_str(&format!("                      - {}\n", quoted(w)));
    }
    format!(
        "# hugelab judge as an Argo Rollouts analysis step (AnalysisTemplate, argoproj.io/v1alpha1,
# job provider). Each analysis run starts this Job; its exit code is the measurement: 0 passes
# the step, anything else fails it (with --fail-on, only the verdicts named fail; an error
# reaching Prometheus exits 1 and fails it too). The judgement and its one-line JSON answer are
# in the Job's log. The window is the --last one before the Job runs: give the canary that long
# first (an initialDelay, or a pause step before the analysis). Written by
# `hugelab judge ... --analysis-template FILE`.
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: hugelab-judge
spec:
  metrics:
    - name: hugelab-judge
      count: 1
      failureLimit: 0
      provider:
        job:
          metadata:
            labels:
              app.kubernetes.io/name: hugelab-judge
          spec:
            backoffLimit: 0
            template:
              spec:
                restartPolicy: Never
                containers:
                  - name: judge
                    image: {}
                    args:
{a}",
        quoted(image)
    )
}

/// A Flagger analysis step: a Deployment and Service serving the judgement `args` (a `judge`
/// command line with `--webhook 0.0.0.0:PORT`) from `image`, and, in the comment, the Canary's
/// `analysis.webhooks` entry that calls it. Flagger counts a non-2xx answer as a failed check.
pub fn flagger(args: &[String], image: &str, port: u16) -> String {
    let quoted = |s: &str| serde_json::to_string(s).expect("a string serialises");
    let mut a = String::new();
    for w in args {
        a.push_str(&format!("            - {}\n", quoted(w)));
    }
    format!(
        "# hugelab judge as a Flagger analysis step: this Deployment serves the judgement as a
# webhook (hugelab judge --webhook); each POST judges its canary from its first look's --last
# window to now, by a confidence sequence valid at every look (one canary's looks are kept
# together by the payload's namespace, name and checksum), and answers
# 200 when it passes --fail-on, 412 when it fails, with the one-line JSON answer as the body;
# a look Prometheus cannot answer gets what --on-outage says (fail, the default: 500; pass:
# 200; hold: the canary's last judged answer). Flagger counts any answer but 2xx as a failed
# check; after the Canary's analysis.threshold failed checks it rolls the canary back. In the
# Canary:
#
#   analysis:
#     webhooks:
#       - name: hugelab-judge
#         type: rollout
#         url: http://hugelab-judge.NAMESPACE:{port}/
#         timeout: 60s
#
# (type rollout runs it at every analysis interval; confirm-promotion only before promoting).
# Give the canary the --last window before the first check (analysis.interval × the checks
# before it). Written by `hugelab judge ... --flagger FILE`.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hugelab-judge
  labels:
    app.kubernetes.io/name: hugelab-judge
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: hugelab-judge
  template:
    metadata:
      labels:
        app.kubernetes.io/name: hugelab-judge
    spec:
      containers:
        - name: judge
          image: {}
          args:
{a}          ports:
            - name: http
              containerPort: {port}
          readinessProbe:
            httpGet:
              path: /healthz
              port: http
---
apiVersion: v1
kind: Service
metadata:
  name: hugelab-judge
  labels:
    app.kubernetes.io/name: hugelab-judge
spec:
  selector:
    app.kubernetes.io/name: hugelab-judge
  ports:
    - name: http
      port: {port}
      targetPort: http
",
        quoted(image)
    )
}
