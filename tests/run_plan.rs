//! `hugelab run` without running anything real: the planner (its checks, the design, what
//! needs root), block order, and `execute` driving a fake runner into a real results database —
//! interleaving, storing, stopping on failure, Ctrl-C, sequential stopping, system arms switched
//! through the guard on a fake sysfs.

use crate::common;
use clap::Parser;
use hugelab::analyze::verdict::{Design, Verdict};
use hugelab::control::{Guard, SysfsSettings};
use hugelab::experiment::plan::{RunArgs, plan, plan_as};
use hugelab::experiment::{Effects, Executed, block_order, execute};
use hugelab::model::run::Plan;
use hugelab::probe::Root;
use hugelab::store::Store;
use hugelab::workload::child::{Runner, TrialHooks, TrialOutcome, TrialSpec};
use std::cell::Cell;
use std::path::Path;

#[derive(Parser)]
struct T {
    #[command(flatten)]
    a: RunArgs,
}

fn args(extra: &[&str]) -> RunArgs {
    T::parse_from(std::iter::once("run").chain(extra.iter().copied())).a
}

/// Records what it was asked to run; arm `slow` (process.thp=off) takes twice as long and
/// prints a lower score; fails on request; with `sysfs`, records the THP mode it ran under.
struct Fake {
    calls: Vec<TrialSpec>,
    fail_at: Option<usize>,
    sysfs: Option<std::path::PathBuf>,
    thp_seen: Vec<String>,
}
impl Fake {
    fn new(fail_at: Option<usize>) -> Fake {
        Fake {
            calls: vec![],
            fail_at,
            sysfs: None,
            thp_seen: vec![],
        }
    }
}
impl Runner for Fake {
    fn run(
        &mut self,
        spec: &TrialSpec,
        _hooks: &mut dyn TrialHooks,
    ) -> std::io::Result<TrialOutcome> {
        self.calls.push(spec.clone());
        if let Some(d) = &self.sysfs {
            let t = std::fs::read_to_string(d.join("sys/kernel/mm/transparent_hugepage/enabled"))?;
            self.thp_seen
                .push(hugelab::probe::kv::parse_selector(&t).unwrap().selected);
        }
        let n = self.calls.len();
        let slow = spec.config.thp_disable || self.thp_seen.last().is_some_and(|m| m == "never");
        let jitter = 1.0 + 0.001 * (n % 7) as f64;
        Ok(TrialOutcome {
            wall_ns: ((if slow { 2e8 } else { 1e8 }) * jitter) as u64,
            exit_code: Some(if Some(n) == self.fail_at { 1 } else { 0 }),
            stdout: format!("score: {}\n", if slow { 50 } else { 100 }),
            ..TrialOutcome::default()
        })
    }
}

fn store_in(dir: &Path, a: &RunArgs) -> (Store, i64) {
    let mut store = Store::open(&dir.join("r.db")).unwrap();
    let id = store
        .create_run(
            None,
            &a.command,
            None,
            "running",
            &serde_json::from_value(serde_json::json!({})).unwrap(),
            &[],
        )
        .unwrap();
    (store, id)
}

/// Execute `p` with `fake` into a fresh store in `dir`; `stop_after` calls simulate Ctrl-C.
fn execute_with(
    a: &RunArgs,
    p: &Plan,
    fake: &mut Fake,
    dir: &Path,
    stop_after: Option<usize>,
) -> (Executed, Store, i64) {
    let (mut store, id) = store_in(dir, a);
    let calls = Cell::new(0usize);
    let sysfs = fake.sysfs.clone();
    let stop = || {
        calls.set(calls.get() + 1);
        stop_after.is_some_and(|n| calls.get() >= n)
    };
    let mut ctx = Effects {
        runner: fake,
        store: &mut store,
        run_id: id,
        root: Root::new(dir),
        cpu: Default::default(),
        trace: None,
        guard: Box::new(move || {
            let root = Root::new(sysfs.clone().expect("a system arm needs the fake sysfs"));
            Ok(Guard::new(
                Box::new(common::FakeKernel(SysfsSettings::new(root.clone()))),
                root.clone(),
                root.path("/run/journal.json"),
            )?)
        }),
        stop: &stop,
        progress: &mut hugelab::render::progress::Silent,
    };
    let x = execute(p, &mut ctx).unwrap();
    drop(ctx);
    (x, store, id)
}

/// Plan `a` and execute it with a fake runner into a fresh store in `dir`.
fn fake_execute(
    a: &RunArgs,
    dir: &Path,
    fail_at: Option<usize>,
) -> (
    Fake,
    Vec<hugelab::store::TrialRow>,
    usize,
    String,
    Store,
    i64,
) {
    let p = plan(a).unwrap();
    let mut fake = Fake::new(fail_at);
    let (x, store, id) = execute_with(a, &p, &mut fake, dir, None);
    (fake, x.trials, x.blocks_done, x.stop_reason, store, id)
}

#[test]
fn calibrate_plans_the_command_against_itself() {
    // With no arm and with one arm: two identical arms, A1 and A2.
    for extra in [&[][..], &["--arm", "x=env.FOO=1"][..]] {
        let mut v = vec!["--calibrate", "1m"];
        v.extend_from_slice(extra);
        v.extend_from_slice(&["--", "true"]);
        let p = plan(&args(&v)).unwrap();
        assert!(p.calibrate);
        let names: Vec<&str> = p.arms.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["A1", "A2"]);
        assert_eq!(p.arms[0].spec, p.arms[1].spec);
    }
}

#[test]
fn block_order_is_a_seeded_permutation() {
    for b in 0..20 {
        let mut o = block_order(3, b, 42);
        assert_eq!(o, block_order(3, b, 42), "same seed, same order");
        o.sort();
        assert_eq!(o, vec![0, 1, 2]);
    }
    let orders: std::collections::BTreeSet<Vec<usize>> =
        (0..50).map(|b| block_order(3, b, 7)).collect();
    assert!(orders.len() >= 5, "orders vary across blocks: {orders:?}");
}

#[test]
fn planning_errors_name_the_fix() {
    let e = plan(&args(&["--arm", "a=", "--", "true"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least two arms"), "{e}");
    let e = plan(&args(&["--arm", "a=", "--arm", "a=", "--", "true"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("two arms are named"), "{e}");
    let e = plan(&args(&[
        "--preset",
        "malloc",
        "--baseline",
        "x",
        "--",
        "true",
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("arms: off, thp, hugetlb"), "{e}");
    let e = plan(&args(&[
        "--preset", "malloc", "--metric", "x=[0-9]+", "--", "true",
    ]))
    .unwrap_err()
    .to_string();
    assert!(e.contains("capture group"), "{e}");
    let p = plan(&args(&[
        "--preset",
        "jvm",
        "--baseline",
        "thp",
        "--metric",
        "ops=([0-9.]+) ops,higher",
        "--",
        "java",
    ]))
    .unwrap();
    let gains = p.metrics.iter().filter(|m| !m.cost).count();
    assert_eq!((p.baseline, gains, p.outputs.len()), (1, 2, 1));
    assert_eq!(
        serde_json::to_value(&p).unwrap()["outputs"][0]["regex"],
        "([0-9.]+) ops"
    );
}

#[test]
fn fake_runner_interleaves_stores_and_stops_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "fast=",
        "--arm",
        "slow=process.thp=off",
        "--blocks",
        "12",
        "--warmup",
        "1",
        "--seed",
        "3",
        "--metric",
        "score=score: ([0-9]+),higher",
        "--",
        "prog",
        "x",
    ]);
    let (fake, trials, blocks, reason, store, id) = fake_execute(&a, dir.path(), None);
    assert_eq!(fake.calls.len(), 2 + 24, "2 warm-up + 12 blocks × 2 arms");
    assert_eq!((trials.len(), blocks), (24, 12), "{reason}");
    assert_eq!(fake.calls[0].argv, vec!["prog", "x"]);
    // Every block holds each arm once; the per-process configuration reached the runner.
    for b in 0..12 {
        let mut arms: Vec<i64> = trials
            .iter()
            .filter(|t| t.block == b)
            .map(|t| t.arm_idx)
            .collect();
        arms.sort();
        assert_eq!(arms, vec![0, 1]);
    }
    assert_eq!(
        fake.calls.iter().filter(|c| c.config.thp_disable).count(),
        13
    );
    for t in &trials {
        let want = if t.arm_idx == 1 { 50.0 } else { 100.0 };
        assert_eq!(t.metrics["score"], want, "each arm's own output was parsed");
    }
    let (_, _, stored) = store.load(id).unwrap();
    assert_eq!(stored.len(), 24, "every trial was written as it finished");

    // The fifth call fails (the third measured trial): without --keep-going the run stops there.
    let dir2 = tempfile::tempdir().unwrap();
    let (_, trials, _, reason, _, _) = fake_execute(&a, dir2.path(), Some(5));
    assert_eq!(trials.len(), 3);
    assert!(!trials[2].ok && reason.contains("--keep-going"), "{reason}");
}

#[test]
fn first_ctrl_c_keeps_the_trial_in_flight_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "a=",
        "--arm",
        "b=process.thp=off",
        "--blocks",
        "10",
        "--warmup",
        "0",
        "--",
        "prog",
    ]);
    let p = plan(&a).unwrap();
    let mut fake = Fake::new(None);
    // Ctrl-C arrives while the 5th trial runs: the stop is seen after it finishes.
    let (x, store, id) = execute_with(&a, &p, &mut fake, dir.path(), Some(5));
    assert_eq!(fake.calls.len(), 5, "nothing new started after the stop");
    assert_eq!(x.trials.len(), 5, "the trial in flight was kept");
    assert!(
        x.interrupted && x.stop_reason.contains("kept"),
        "{}",
        x.stop_reason
    );
    assert_eq!(x.blocks_done, 2);
    assert_eq!(store.load(id).unwrap().2.len(), 5, "and stored");
}

#[test]
fn system_arms_switch_through_the_guard_on_a_fake_sysfs() {
    let dir = tempfile::tempdir().unwrap();
    common::fake_sysfs(dir.path());
    let a = args(&[
        "--arm", "never=", "--arm", "always=", "--blocks", "6", "--warmup", "0", "--seed", "9",
        "--", "prog",
    ]);
    let mut p = plan(&a).unwrap();
    p.arms = vec![
        hugelab::backing::arm::parse_arm("never=thp=never").unwrap(),
        hugelab::backing::arm::parse_arm("always=thp=always").unwrap(),
    ];
    let mut fake = Fake::new(None);
    fake.sysfs = Some(dir.path().to_path_buf());
    let (x, _, _) = execute_with(&a, &p, &mut fake, dir.path(), None);
    // Every trial ran under its own arm's mode, in the shuffled block order.
    for (t, seen) in x.trials.iter().zip(&fake.thp_seen) {
        assert_eq!(seen, if t.arm_idx == 0 { "never" } else { "always" });
    }
    assert_eq!(fake.thp_seen.len(), 12);
    // The guard restored the machine's own value when the run ended.
    let t = std::fs::read_to_string(
        dir.path()
            .join("sys/kernel/mm/transparent_hugepage/enabled"),
    )
    .unwrap();
    assert!(t.contains("[madvise]"), "{t}");
    assert!(!dir.path().join("run/journal.json").exists());
}

#[test]
fn sequential_stops_by_the_rule_it_reports() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "fast=",
        "--arm",
        "slow=process.thp=off",
        "--arm",
        "same=",
        "--sequential",
        "--warmup",
        "0",
        "--",
        "prog",
    ]);
    let p = plan(&a).unwrap();
    let mut fake = Fake::new(None);
    let (x, _, _) = execute_with(&a, &p, &mut fake, dir.path(), None);
    // Deterministic arms settle at the first look the confidence sequence allows.
    assert_eq!(
        x.blocks_done,
        hugelab::analyze::sequential::ConfidenceSequence::MIN_BLOCKS
    );
    assert!(
        x.stop_reason.contains("confidence sequence") && x.stop_reason.contains("Bonferroni"),
        "{}",
        x.stop_reason
    );
    let data: Vec<_> = x
        .trials
        .iter()
        .map(hugelab::analyze::stored::trial_data)
        .collect();
    let names: Vec<String> = p.arms.iter().map(|x| x.name.clone()).collect();
    let r = hugelab::analyze::experiment::analyse(
        &names,
        0,
        &data,
        &p.metrics,
        p.effect,
        p.confidence,
        &p.design,
    );
    for (_, c) in &r.metrics[0].contrasts {
        let c = c.as_ref().unwrap();
        assert!((c.level - 0.995).abs() < 1e-12, "α split over 2 contrasts");
        assert!(c.method.contains("confidence sequence"));
        assert_ne!(c.verdict, Verdict::Inconclusive);
    }
}

#[test]
fn group_sequential_looks_need_a_maximum() {
    let e = plan(&args(&[
        "--arm", "a=", "--arm", "b=", "--looks", "4", "--", "x",
    ]))
    .unwrap_err();
    assert!(e.to_string().contains("--looks needs --blocks"), "{e}");
    let p = plan(&args(&[
        "--arm",
        "a=",
        "--arm",
        "b=process.thp=off",
        "--looks",
        "4",
        "--blocks",
        "40",
        "--",
        "x",
    ]))
    .unwrap();
    assert_eq!(
        p.design,
        Design::GroupSequential {
            looks: 4,
            max_blocks: 40
        }
    );
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "a=",
        "--arm",
        "b=process.thp=off",
        "--looks",
        "4",
        "--blocks",
        "40",
        "--warmup",
        "0",
        "--",
        "x",
    ]);
    let p = plan(&a).unwrap();
    let mut fake = Fake::new(None);
    let (x, _, _) = execute_with(&a, &p, &mut fake, dir.path(), None);
    // Look 1 (10 blocks) has boundary |Z| ≥ 5.8: a repeated interval at that level needs more
    // than 10 blocks, so even a 2× effect waits for look 2 (20 blocks).
    let g = hugelab::analyze::sequential::GroupSequential::new(4, 40, 0.01);
    assert!(g.bounds[0] > 5.0, "{:?}", g.bounds);
    assert_eq!(
        x.blocks_done, 20,
        "stopped at the second look: {}",
        x.stop_reason
    );
    assert!(
        x.stop_reason.contains("O'Brien–Fleming"),
        "{}",
        x.stop_reason
    );
}

#[test]
fn sequential_stops_when_every_contrast_is_settled() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(&[
        "--arm",
        "fast=",
        "--arm",
        "slow=process.thp=off",
        "--blocks",
        "200",
        "--warmup",
        "0",
        "--sequential",
        "--",
        "prog",
    ]);
    let (_, _, blocks, reason, _, _) = fake_execute(&a, dir.path(), None);
    assert!(
        reason.contains("settled") && reason.contains("sequential"),
        "{reason}"
    );
    assert!(
        (20..60).contains(&blocks),
        "a 2× difference settles soon after the confidence sequence starts: {blocks}"
    );
}

#[test]
fn without_root_system_arms_and_root_options_are_refused_with_the_fix() {
    let thp = args(&["--preset", "thp", "--", "true"]);
    let e = plan_as(&thp, false).unwrap_err().to_string();
    assert!(
        e.contains("needs root") && e.contains("process.thp=off"),
        "{e}"
    );
    assert!(plan_as(&thp, true).is_ok());
    for opt in ["--drop-caches", "--compact"] {
        let a = args(&["--arm", "a=", "--arm", "b=", opt, "--", "true"]);
        let e = plan_as(&a, false).unwrap_err().to_string();
        assert!(e.contains("need root"), "{opt}: {e}");
    }
    let traced = args(&[
        "--arm",
        "a=",
        "--arm",
        "b=",
        "--trace",
        "compaction",
        "--",
        "true",
    ]);
    let e = plan_as(&traced, false).unwrap_err().to_string();
    assert!(e.contains("--trace needs root"), "{e}");
    // An unknown kind is refused by the parser, with the valid ones listed.
    let bad = [
        "run", "--arm", "a=", "--arm", "b=", "--trace", "compact", "--", "true",
    ];
    let e = T::try_parse_from(bad).err().unwrap().to_string();
    assert!(
        e.contains("invalid value 'compact' for '--trace <KINDS>'")
            && e.contains("possible values: compaction, reclaim"),
        "{e}"
    );
    let twice = args(&[
        "--arm",
        "a=",
        "--arm",
        "b=",
        "--trace",
        "reclaim,compaction,reclaim",
        "--",
        "true",
    ]);
    let p = plan_as(&twice, true).unwrap();
    assert_eq!(
        serde_json::to_value(&p.trace).unwrap(),
        serde_json::json!(["reclaim", "compaction"])
    );
    // Per-process arms need no privilege.
    let a = args(&["--arm", "a=", "--arm", "b=process.thp=off", "--", "true"]);
    assert!(plan_as(&a, false).is_ok());
}

#[test]
fn services_run_warm_side_by_side_where_they_can_and_say_why_not_otherwise() {
    use hugelab::model::run::ServiceDesign;
    let server = |extra: &[&str], s: &str| {
        let mut v = vec!["--server", s, "--ready", "log:up"];
        v.extend_from_slice(extra);
        v.extend(["--", "sh", "-c", "true"]);
        plan_as(&args(&v), true)
    };
    // Per-process arms with an address of their own per arm: warm, each arm its own port.
    let p = server(
        &["-a", "a=", "-a", "b=env.X=1"],
        "sleep 300 --port {port} --dir {dir}",
    )
    .unwrap();
    let sp = p.server.as_ref().unwrap();
    assert_eq!(sp.design, ServiceDesign::Warm);
    assert_eq!(sp.slots.len(), 2);
    assert_ne!(sp.slots[0].port, sp.slots[1].port);
    assert!(sp.slots.iter().all(|s| s.port > 0));
    // THP never against always: side by side, `never` as PR_SET_THP_DISABLE for its server.
    let p = server(
        &["-a", "never=thp=never", "-a", "always=thp=always"],
        "sleep 300 {port}",
    )
    .unwrap();
    let sp = p.server.as_ref().unwrap();
    let w = sp.warm.as_ref().unwrap();
    assert_eq!(w.side_by_side.thp_off, [0]);
    assert!(
        sp.design_reason.contains("PR_SET_THP_DISABLE"),
        "{}",
        sp.design_reason
    );
    // Three THP modes: side by side where the kernel has the advised policy (Linux 6.18+),
    // `madvise` as PR_THP_DISABLE_EXCEPT_ADVISED under `always`; else a fresh server per
    // trial, and why.
    let p = server(
        &[
            "-a",
            "n=thp=never",
            "-a",
            "m=thp=madvise",
            "-a",
            "a=thp=always",
        ],
        "sleep 300 {port}",
    )
    .unwrap();
    let sp = p.server.as_ref().unwrap();
    if hugelab::sys::thp_advised_supported() {
        assert_eq!(sp.design, ServiceDesign::Warm);
        let w = sp.warm.as_ref().unwrap();
        assert_eq!(
            (
                w.side_by_side.thp_off.as_slice(),
                w.side_by_side.thp_advised.as_slice()
            ),
            (&[0][..], &[1][..])
        );
        assert!(
            sp.design_reason
                .contains("arm m: THP madvise for its server alone (PR_SET_THP_DISABLE with PR_THP_DISABLE_EXCEPT_ADVISED)"),
            "{}",
            sp.design_reason
        );
    } else {
        assert_eq!(sp.design, ServiceDesign::Restart);
        assert!(
            sp.design_reason.contains("Linux 6.18+"),
            "{}",
            sp.design_reason
        );
    }
    // A defrag mode has no per-process form: a fresh server per trial, and why.
    let p = server(
        &["-a", "a=defrag=never", "-a", "b=defrag=always"],
        "sleep 300 {port}",
    )
    .unwrap();
    let sp = p.server.as_ref().unwrap();
    assert_eq!(sp.design, ServiceDesign::Restart);
    assert!(
        sp.design_reason.contains("no per-process equivalent"),
        "{}",
        sp.design_reason
    );
    // One address for every arm: restart, and --design warm is refused with the fix.
    let p = server(&["-a", "a=", "-a", "b=env.X=1"], "sleep 300 --port 6390").unwrap();
    assert_eq!(p.server.as_ref().unwrap().design, ServiceDesign::Restart);
    assert!(p.server.as_ref().unwrap().design_reason.contains("{port}"));
    let e = server(
        &["-a", "a=", "-a", "b=env.X=1", "--design", "warm"],
        "sleep 300 --port 6390",
    )
    .unwrap_err();
    assert!(
        e.0.contains("--design warm") && e.0.contains("{port}"),
        "{e:?}"
    );
    // A tcp: probe must name each arm's own port.
    let e = plan_as(
        &args(&[
            "--server",
            "sleep 300 {port}",
            "--ready",
            "tcp:127.0.0.1:6390",
            "-a",
            "a=",
            "-a",
            "b=env.X=1",
            "--",
            "true",
        ]),
        true,
    )
    .unwrap_err();
    assert!(e.0.contains("tcp:127.0.0.1:{port}"), "{e:?}");
    // --design restart is kept, and said.
    let p = server(
        &["-a", "a=", "-a", "b=env.X=1", "--design", "restart"],
        "sleep 300 {port}",
    )
    .unwrap();
    assert_eq!(p.server.as_ref().unwrap().design, ServiceDesign::Restart);
    assert_eq!(p.warmup, 1);
    // Warm options without a server are a usage error.
    let e = plan_as(
        &args(&["--burst", "1s", "-a", "a=", "-a", "b=", "--", "true"]),
        true,
    )
    .unwrap_err();
    assert!(e.0.contains("--server"), "{e:?}");
}

#[test]
fn warm_services_run_for_a_time_not_ten_blocks() {
    let p = |extra: &[&str]| {
        let mut v = vec![
            "--server",
            "sleep 300 {port}",
            "--ready",
            "log:up",
            "-a",
            "a=",
            "-a",
            "b=env.X=1",
        ];
        v.extend_from_slice(extra);
        v.extend(["--", "true"]);
        plan_as(&args(&v), true).unwrap()
    };
    let d = p(&[]);
    assert_eq!(d.max_time, Some(std::time::Duration::from_secs(300)));
    assert!(d.blocks > 1000);
    let t = p(&["--max-time", "60s"]);
    assert_eq!(t.max_time, Some(std::time::Duration::from_secs(60)));
    assert!(
        t.blocks > 1000,
        "--max-time alone bounds a warm run, not 10 blocks"
    );
    let b = p(&["--blocks", "12"]);
    assert_eq!((b.blocks, b.max_time), (12, None));
    let r = p(&["--design", "restart"]);
    assert_eq!((r.blocks, r.max_time), (10, None));
}

/// The plan a run stores reads back as the same plan: serialized, read and serialized again it
/// is the same JSON (regexes, durations, the server's warm design, conditions and notes
/// included), so nothing a reader needs is only in an untyped patch.
#[test]
fn a_stored_plan_round_trips_through_json() {
    use hugelab::model::stored::{RunOwner, StoredPlan, StoredRunPlan};
    let p = plan(&args(&[
        "--server",
        "sleep 100; echo {port} {dir} {arm}-{replica}",
        "--shell",
        "--ready",
        "log:up",
        "--metric",
        "ops=ops: ([0-9.]+),higher",
        "--condition",
        "clean",
        "--timeout",
        "30s",
        "--env",
        "K=V",
        "--max-time",
        "2m",
        "-a",
        "a=",
        "-a",
        "b=env.X=1",
        "--",
        "echo ops: 1",
    ]))
    .unwrap();
    let stored = StoredPlan {
        plan: p,
        owner: Some(RunOwner {
            pid: 7,
            start: Some(9),
        }),
        system: None,
        said: vec!["a note".into()],
        hugelab_version: Some("9.9.9".into()),
        imported_from: None,
    };
    let json = serde_json::to_value(&stored).unwrap();
    assert!(json["server"]["warm"].is_object(), "{json}");
    let back: StoredPlan = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), json);
    assert_eq!(back.plan.outputs[0].name, "ops");
    assert!(back.plan.outputs[0].higher);
    assert_eq!(back.said, ["a note"]);
    // Read as the store reads a plan, it is a run's, whole, with what every reader asks of it.
    let read: StoredRunPlan = serde_json::from_value(json.clone()).unwrap();
    let run = read.run().expect("a run's plan reads as one");
    assert_eq!(run.plan.arms.len(), 2);
    assert_eq!(read.version(), Some("9.9.9"));
    assert_eq!(read.decision(), (Some(0.01), Some(0.99)));
    assert_eq!(read.said(), ["a note"]);
    assert_eq!(read.owner().map(|o| o.pid), Some(7));
    assert!(read.server().is_some_and(|s| s.warm.is_some()));
    assert!(!read.is_bench());
    assert_eq!(serde_json::to_value(&read).unwrap(), json);
    // A plan an earlier version stored without a field this one needs is read in part,
    // leniently: what does read is kept, a part in another shape is absent, not an error.
    let mut older = json.clone();
    older.as_object_mut().unwrap().remove("seed");
    older["conditions"] = "another shape".into();
    let read: StoredRunPlan = serde_json::from_value(older).unwrap();
    assert!(read.run().is_none());
    assert!(read.conditions().is_empty());
    assert_eq!(read.decision(), (Some(0.01), Some(0.99)));
    assert_eq!(read.said(), ["a note"]);
    assert_eq!(read.arms().map(<[_]>::len), Some(2));
    assert_eq!(read.version(), Some("9.9.9"));
    // hyperfine's import: unpaired, wall time lower is better.
    let hf: StoredRunPlan = serde_json::from_value(serde_json::json!({
        "paired": false, "baseline": 0, "metrics": [{"name": "wall_s", "better": "lower"}]
    }))
    .unwrap();
    assert_eq!(hf.design(), hugelab::model::verdict::Design::Unpaired);
    assert_eq!(hf.metrics()[0].name, "wall_s");
    assert_eq!(hf.decision(), (None, None));
}
