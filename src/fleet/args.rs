//! `judge`'s arguments: parsed by clap in the command, read by the fleet engine.

use super::spec::{MetricSpec, parse_metric, parse_span, parse_time};
use crate::analyze::judge::HugeOn;
use crate::options::{Decision, Json};
use crate::units::{parse_duration, parse_positive_duration};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    after_help = "Each group's value per interval is the mean over its hosts; the canary/baseline ratio per interval is one block \
(paired by time, so load that hits both cancels); the interval is widened for the blocks' autocorrelation; Hodges–Lehmann with \
signed-rank intervals and Holm across metrics (--follow: a confidence sequence, Bonferroni). With --before the change is \
the after blocks' shift over the before blocks, so what the groups of hosts differed by before cancels; the interval \
includes host-to-host variation (hosts as units, Welch t) where the hosts spread more than time explains. Exit codes: 0 BETTER or \
EQUIVALENT; 1 an error (Prometheus unreachable, a query refused); 2 bad input; 3 WORSE; 4 INCONCLUSIVE; 5 FLAGGED (the \
group meant to be on huge pages was not, or the other was as much)."
)]
pub struct JudgeArgs {
    /// Prometheus's base address (its HTTP API is only read), e.g. http://prometheus:9090
    #[arg(long, value_name = "URL")]
    pub prometheus: String,
    /// Label matchers of the canary hosts, as inside {…}: 'instance=~"db-1.*"' or 'pool="canary"'
    #[arg(long, value_name = "MATCHERS")]
    pub canary: Option<String>,
    /// Label matchers of the baseline hosts: 'instance=~"db-0.*"' or 'pool="baseline"'
    #[arg(long, value_name = "MATCHERS")]
    pub baseline: Option<String>,
    /// The window is the last DURATION up to now (e.g. 3h, 24h)
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, conflicts_with = "from")]
    pub last: Option<Duration>,
    /// Start of the window (when the change reached the canary): RFC 3339
    /// (2026-11-24T06:00:00Z) or unix seconds
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: Option<f64>,
    /// End of the window (default: now): RFC 3339 or unix seconds
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub to: Option<f64>,
    /// A window before the change, when neither group had it: FROM..TO (RFC 3339 or unix
    /// seconds). The change is then judged as the after ratio over the before ratio, so what
    /// the groups of hosts differed by before cancels. As long as the window judged if possible,
    /// on the same weekdays and hours
    #[arg(long, value_name = "FROM..TO", value_parser = parse_span, conflicts_with = "before_last")]
    pub before: Option<(f64, f64)>,
    /// The before window is the DURATION that ends where the judged window starts (--from, or
    /// the start of --last)
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub before_last: Option<Duration>,
    /// Resolution of the queries (Prometheus's step)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_positive_duration)]
    pub step: Duration,
    /// Length of one block: the groups are compared interval by interval
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_positive_duration)]
    pub interval: Duration,
    /// Left out at the start of the window: pages faulted and fragmentation from before the
    /// change carry over for a while
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub burn_in: Duration,
    /// A metric to judge: NAME=PROMQL,lower|higher[,critical]. `$sel` in the PromQL is replaced
    /// by each group's matchers; keep `by (instance)` to see hosts. Critical metrics decide the
    /// overall verdict (all metrics, if none is marked). Repeatable
    #[arg(long = "metric", short = 'm', value_name = "SPEC", value_parser = parse_metric)]
    pub metrics: Vec<MetricSpec>,
    /// Which group is meant to run on huge pages (the evidence check)
    #[arg(long, value_enum, default_value_t = HugeOn::Canary)]
    pub huge_on: HugeOn,
    /// Only watched processes of this name (the exporter's comm label) are the service whose
    /// coverage is the evidence
    #[arg(long, value_name = "COMM")]
    pub service: Option<String>,
    /// The service is the cgroups these label matchers select on each host (the exporter's
    /// cgroup series: cgroup, pod_uid, qos, container_id, unit), e.g. 'unit="postgresql.service"'
    /// or 'cgroup=~"/kubepods.slice/.*"': their share on huge pages is the evidence
    #[arg(long, value_name = "MATCHERS", conflicts_with = "service")]
    pub cgroup: Option<String>,
    #[command(flatten)]
    pub decision: Decision,
    /// Judge live: look again after every interval, with a confidence sequence (valid however
    /// often it is looked at), until every metric is settled, --to is reached or Ctrl-C
    #[arg(long, conflicts_with = "last")]
    pub follow: bool,
    /// A file whose content is sent as a bearer token to Prometheus
    #[arg(long, value_name = "FILE")]
    pub bearer_token_file: Option<PathBuf>,
    /// Longest wait for one answer from Prometheus
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_positive_duration)]
    pub timeout: Duration,
    /// Show each metric's hosts and blocks under the answer
    #[arg(long, short)]
    pub verbose: bool,
    #[command(flatten)]
    pub json: Json,
    /// Switchback on this host: alternate a system-wide setting between the two --arm values
    /// in pairs of --period (random order within each pair) through the guard, restored on
    /// exit, while the service runs under its real load; then judge the change's periods
    /// against the baseline's from this host's series (--host)
    #[arg(long, requires = "host", conflicts_with_all = ["canary", "baseline", "last", "from", "to", "follow", "before", "before_last"])]
    pub switchback: bool,
    /// With --switchback: the baseline, then the change, as `run --arm` (system-wide keys only),
    /// e.g. --arm off=thp=madvise --arm on=thp=always
    #[arg(long = "arm", value_name = "NAME=SPEC", value_parser = crate::backing::arm::parse_arm)]
    pub arms: Vec<crate::backing::arm::Arm>,
    /// With --switchback: this host's label matchers in Prometheus, e.g. 'instance="db-7:9717"'
    #[arg(long, value_name = "MATCHERS")]
    pub host: Option<String>,
    /// With --switchback: the length of one period (its first --burn-in is left out)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_positive_duration)]
    pub period: Duration,
    /// With --switchback: pairs of periods (each pair runs both arms, in random order)
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = crate::options::parse_count)]
    pub pairs: usize,
    /// With --switchback: seed of the order within pairs
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Exit non-zero only for these overall verdicts (worse, flagged, inconclusive; a comma
    /// list), with their own codes, and 0 for the rest — an analysis step that should fail only
    /// on a worse canary: --fail-on worse. Without it every verdict but BETTER and EQUIVALENT
    /// exits non-zero
    #[arg(long, value_enum, value_delimiter = ',', value_name = "VERDICTS")]
    pub fail_on: Vec<FailOn>,
    /// Print the answer as one line of JSON (the overall verdict, the exit code, each metric's
    /// verdict and interval), for a pipeline's log or an analysis step
    #[arg(long, conflicts_with = "json")]
    pub line: bool,
    /// Write this judgement as an Argo Rollouts analysis step to FILE (an AnalysisTemplate whose
    /// Job runs it in --image with --line, judging the --last window before each run) and exit
    #[arg(long, value_name = "FILE", requires = "last", conflicts_with_all = ["from", "to", "follow", "switchback", "before"])]
    pub analysis_template: Option<PathBuf>,
    /// Serve this judgement as a webhook on ADDR (e.g. 0.0.0.0:8080) until stopped: each POST
    /// judges its canary (the payload's namespace/name) from its first look's --last window to
    /// now by a confidence sequence, valid at every look, and answers 200 when it passes --fail-on, 412 when
    /// it fails (a look Prometheus cannot answer: --on-outage), the one-line answer as the body — a
    /// Flagger canary's rollout webhook, or any gate that calls a URL. GET /healthz answers 200
    #[arg(long, value_name = "ADDR", group = "served", requires = "last", conflicts_with_all = ["from", "to", "follow", "switchback", "before", "analysis_template"])]
    pub webhook: Option<std::net::SocketAddr>,
    /// Write this judgement as a Flagger analysis step to FILE (a Deployment and Service running
    /// it with --webhook in --image, and the Canary's webhook entry that calls it) and exit
    #[arg(long, value_name = "FILE", group = "served", requires = "last", conflicts_with_all = ["from", "to", "follow", "switchback", "before", "analysis_template", "webhook"])]
    pub flagger: Option<PathBuf>,
    /// With --webhook or --flagger: what a look answers when it cannot be judged (Prometheus
    /// unreachable or refusing a query). fail (the default): 500, which Flagger counts toward
    /// the Canary's analysis.threshold, so a long outage rolls back. pass: 200, the canary
    /// advances on no evidence. hold: what this canary's last judged look answered (500 if it
    /// had none), so an outage neither earns a failure nor a pass the canary had not earned
    #[arg(long, value_enum, value_name = "ANSWER", requires = "served")]
    pub on_outage: Option<OnOutage>,
    /// With --analysis-template or --flagger: the container image holding hugelab
    /// (deploy/container)
    #[arg(long, value_name = "IMAGE", default_value = concat!("REGISTRY/hugelab:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// With --analysis-template or --flagger: write the change the rollout makes to FILE — the
    /// pod template's node selection (--node-label, --toleration) that puts the revision under
    /// analysis on the canary nodes (printed when not given)
    #[arg(long, value_name = "FILE")]
    pub placement: Option<PathBuf>,
    /// With --analysis-template or --flagger: the label of the canary pool's nodes (as `advise
    /// --node-label` put the settings on them)
    #[arg(long, value_name = "KEY=VALUE", default_value = crate::render::advice::CANARY_LABEL, value_parser = crate::options::parse_label)]
    pub node_label: (String, String),
    /// With --analysis-template or --flagger: a taint of the canary pool the revision's pods
    /// tolerate (repeatable)
    #[arg(long, value_name = "KEY[=VALUE]:EFFECT", value_parser = crate::options::parse_toleration)]
    pub toleration: Vec<crate::model::node_pool::Toleration>,
}

/// An overall verdict `--fail-on` can make exit non-zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Worse,
    Flagged,
    Inconclusive,
}

impl FailOn {
    /// Whether `o` is this verdict.
    pub fn is(self, o: crate::model::judge::Overall) -> bool {
        use crate::model::judge::Overall;
        matches!(
            (self, o),
            (FailOn::Worse, Overall::Worse)
                | (FailOn::Flagged, Overall::Flagged)
                | (FailOn::Inconclusive, Overall::Inconclusive)
        )
    }
}

/// What the webhook answers for a look it cannot judge (`--on-outage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnOutage {
    Fail,
    Pass,
    Hold,
}

/// The judgement's own command line for an analysis step: this one's arguments without what
/// only writing the template means (`--analysis-template`, `--image`, `--json`, `--line`),
/// with `--line` and, unless given, `--fail-on worse,flagged`.
pub fn step_args(args: &[String], a: &JudgeArgs) -> Vec<String> {
    let mut out = crate::options::without(
        args,
        &[
            "--analysis-template",
            "--image",
            "--flagger",
            "--webhook",
            "--placement",
            "--node-label",
            "--toleration",
        ],
        &["--json", "--line"],
    );
    if a.fail_on.is_empty() {
        out.extend(["--fail-on".into(), "worse,flagged".into()]);
    }
    out.push("--line".into());
    out
}
