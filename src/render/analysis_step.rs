//! `judge` as a step of a canary rollout: its answer as one line of JSON, and the Argo Rollouts
//! AnalysisTemplate (`argoproj.io/v1alpha1`, job provider) whose Job runs the judgement — the
//! Job's exit code is the measurement, so `--fail-on` decides what fails the step. Both print
//! what the record holds and compute nothing.

use crate::model::judge::JudgeResult;
use crate::render::manifest;

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
    let template = manifest::analysis_template(manifest::run_once(image, args));
    format!(
        "# hugelab judge as an Argo Rollouts analysis step (AnalysisTemplate, argoproj.io/v1alpha1,
# job provider). Each analysis run starts this Job; its exit code is the measurement: 0 passes
# the step, anything else fails it (with --fail-on, only the verdicts named fail; an error
# reaching Prometheus exits 1 and fails it too). The judgement and its one-line JSON answer are
# in the Job's log. The window is the --last one before the Job runs: give the canary that long
# first (an initialDelay, or a pause step before the analysis). Written by
# `hugelab judge ... --analysis-template FILE`.\n{}",
        manifest::document(&template)
    )
}

/// A Flagger analysis step: a Deployment and Service serving the judgement `args` (a `judge`
/// command line with `--webhook 0.0.0.0:PORT`) from `image`, and, in the comment, the Canary's
/// `analysis.webhooks` entry that calls it. Flagger counts a non-2xx answer as a failed check.
pub fn flagger(args: &[String], image: &str, port: u16) -> String {
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
# before it). Written by `hugelab judge ... --flagger FILE`.\n{}",
        manifest::served(image, args, port)
    )
}

/// The rollout engine whose object a placement patch changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rollout {
    /// An Argo Rollouts `Rollout` (a custom resource: a JSON merge patch).
    Argo,
    /// The Deployment a Flagger `Canary` targets (a strategic merge patch).
    Flagger,
}

/// The change the rollout makes, as a patch of its object's pod template: the node selector of
/// the canary pool (`label`) and the tolerations of its taints, so that the revision under
/// analysis runs on the canary nodes and the one it is judged against stays on the rest. Built
/// as typed JSON (a YAML document too), after a comment saying how to apply it and what
/// promotion and rollback then do.
pub fn placement(
    label: &(String, String),
    tolerations: &[crate::model::node_pool::Toleration],
    engine: Rollout,
) -> String {
    let mut spec = serde_json::Map::new();
    spec.insert(
        "nodeSelector".into(),
        serde_json::json!({ label.0.as_str(): label.1 }),
    );
    if !tolerations.is_empty() {
        spec.insert("tolerations".into(), serde_json::json!(tolerations));
    }
    let patch = serde_json::json!({ "spec": { "template": { "spec": spec } } });
    let how = match engine {
        Rollout::Argo => {
            "# Apply it to the Rollout (a merge patch: a tolerations list given here replaces the pod's\n\
             # own, so add those to it):\n\
             #   kubectl patch rollout NAME --type merge --patch-file THIS-FILE\n\
             # The patched template is the new revision: the Rollout's canary steps run its pods on the\n\
             # canary nodes beside the stable ones, and the analysis step (hugelab-judge) judges them.\n\
             # Aborted (a failed analysis), the Rollout scales the new revision down: its pods leave the\n\
             # canary nodes. Promoted, the stable template carries this node selection: every pod of\n\
             # the service runs on the canary pool, so size it for the whole service, or put the node\n\
             # settings on the other pools and roll out the template without it.\n"
        }
        Rollout::Flagger => {
            "# Apply it to the Deployment the Canary targets (a strategic merge patch; PodSpec's\n\
             # tolerations have no merge strategy, so a list given here replaces the pod's own: add\n\
             # those to it):\n\
             #   kubectl patch deployment NAME --patch-file THIS-FILE\n\
             # Flagger sees the new template and starts the analysis: the Deployment NAME runs it on the\n\
             # canary nodes while NAME-primary keeps the old one, and the hugelab-judge webhook judges.\n\
             # Rolled back, the canary scales to zero and the primary is unchanged. Promoted, Flagger\n\
             # copies this template into the primary: every pod of the service runs on the canary\n\
             # pool, so size it for the whole service, or put the node settings on the other pools\n\
             # and roll out the template without it.\n"
        }
    };
    format!(
        "# The change a canary rollout makes for hugelab's judgement: the pod template's node\n\
         # selection ({}={}), so that the revision under analysis runs on the canary nodes and\n\
         # the judgement's --canary and --baseline matchers see it there and the stable one on the\n\
         # rest. Written by `hugelab judge ... --placement FILE`.\n{how}{}\n",
        label.0,
        label.1,
        serde_json::to_string_pretty(&patch).expect("a patch serialises")
    )
}
