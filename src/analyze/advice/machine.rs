//! `--for machine`: the system-wide THP, mTHP and hugetlb pool settings of the adopted arm.

use super::{
    Advice, EvidenceLine, Finding, RunEvidence, Target, adopted, arm_settings, base_advice,
};

pub fn advise(runs: &[RunEvidence], lines: Vec<EvidenceLine>) -> Advice {
    let chosen = adopted(runs, &lines).map(|(r, a)| (r.run_id, a.clone()));
    let mut a = base_advice(Target::Machine, lines);
    common_notes(&mut a);
    let Some((run_id, arm)) = chosen else {
        narrower(runs, &mut a);
        return a;
    };
    let run = runs.iter().find(|r| r.run_id == run_id);
    let base_env = run
        .and_then(|r| r.arms.get(r.baseline))
        .map(|b| b.process.environment())
        .unwrap_or_default();
    let line = a
        .evidence
        .iter()
        .find(|l| l.finding == Finding::Adopt)
        .cloned();
    let why = line.as_ref().map_or(String::new(), EvidenceLine::describe);
    a.adopt = Some(arm.name.clone());
    a.settings = arm_settings(&arm, &why);
    // Only what differs from the baseline arm: an environment both arms had is not the fix.
    let per_process: Vec<String> = arm
        .process
        .environment()
        .into_iter()
        .filter(|kv| !base_env.contains(kv))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for kv in &per_process {
        a.service.push(super::ServiceLine {
            file: "the program's environment".into(),
            line: kv.clone(),
            why: why.clone(),
        });
    }
    if arm.process.thp_disable || arm.process.thp_advised {
        a.service.push(super::ServiceLine {
            file: "the program's start".into(),
            line: if arm.process.thp_advised {
                "prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED) (Linux 6.18+)"
            } else {
                "prctl(PR_SET_THP_DISABLE, 1)"
            }
            .into(),
            why: why.clone(),
        });
    }
    a.service.extend(super::memory_thp(&arm, &why));
    a.summary = if a.settings.is_empty() {
        let how: Vec<&str> = a.service.iter().map(|s| s.line.as_str()).collect();
        let program = run.map_or_else(|| "the program".into(), |r| program(&r.command));
        format!(
            "no system-wide change; for {program}: {} — {why} (arm {} of run {run_id} configures only the process)",
            how.join("; "),
            arm.name
        )
    } else {
        let what: Vec<String> = a
            .settings
            .iter()
            .map(|s| format!("{} = {}", s.knob, s.value))
            .collect();
        format!("set {} — {why}", what.join(", "))
    };
    a
}

/// The measured program, as its run named it: `` `./dense --n 8` `` (the first words).
pub fn program(command: &[String]) -> String {
    let words: Vec<&str> = command.iter().map(String::as_str).take(4).collect();
    let more = if command.len() > 4 { " …" } else { "" };
    format!("`{}{more}`", words.join(" "))
}

/// Where no machine-wide setting was adopted because it gained only in some runs or
/// conditions: the lever for the one program that gained, stated and measurable, instead of
/// the machine-wide one.
fn narrower(runs: &[RunEvidence], a: &mut Advice) {
    let Some(l) = a
        .evidence
        .iter()
        .find(|l| l.finding == Finding::Conditional)
    else {
        return;
    };
    let Some(run) = runs.iter().find(|r| r.run_id == l.run_id) else {
        return;
    };
    let Some(arm) = run.arms.iter().find(|x| x.name == l.arm) else {
        return;
    };
    let mode = arm
        .system
        .iter()
        .find(|(k, _)| *k == crate::control::Knob::ThpEnabled)
        .map(|(_, v)| v.as_str());
    let (line, measure) = match mode {
        Some("always") => (
            "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (glibc 2.35+: its malloc heap madvised, so it gets THP while the machine stays in madvise mode)",
            "-a base= -a thp=malloc=thp",
        ),
        Some("never") => (
            "systemd MemoryTHP=disable, or prctl(PR_SET_THP_DISABLE) before exec (THP off for it alone)",
            "-a base= -a off=process.thp=off",
        ),
        Some("madvise") => (
            "systemd MemoryTHP=madvise, or prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED) (Linux 6.18+)",
            "-a base= -a advised=process.thp=advised",
        ),
        _ => return,
    };
    let who = program(&run.command);
    a.service.push(super::ServiceLine {
        file: format!("{who}'s environment or unit (run {})", run.run_id),
        line: line.into(),
        why: format!(
            "{} gained for {who} ({}) but not everywhere it was measured",
            l.arm,
            l.describe()
        ),
    });
    a.summary = format!(
        "{}; for {who} alone: {line} — measure it: hugelab run {measure} -- {}",
        a.summary,
        run.command.join(" ")
    );
}

/// What no run of this kind measures, and the checks that prove the advice took effect.
pub fn common_notes(a: &mut Advice) {
    let mut unweighed: Vec<String> = a
        .evidence
        .iter()
        .filter(|l| l.weighed.is_empty())
        .map(|l| l.run_id.to_string())
        .collect();
    unweighed.dedup();
    if !unweighed.is_empty() {
        a.not_measured.push(format!(
            "the memory and CPU cost: run {} recorded no cost metric (stored by an older hugelab, or imported): repeat it with `hugelab run`",
            unweighed.join(", ")
        ));
    }
    if a.evidence.iter().all(|l| l.stalls.is_empty()) {
        a.not_measured.push(
            "the latency cost (compaction and reclaim stalls) was not traced: repeat the run with `--trace compaction,reclaim`"
                .into(),
        );
    }
    for l in a.evidence.iter().filter(|l| l.finding == Finding::Slower) {
        a.notes
            .push(format!("do not adopt {}: {}", l.arm, l.describe()));
    }
    for l in a.evidence.iter().filter(|l| l.finding == Finding::Flagged) {
        a.notes.push(format!(
            "no advice from {}: its trials did not get the pages it asked for ({}); `hugelab results show {}` says why",
            l.arm,
            l.describe(),
            l.run_id
        ));
    }
    if !a.evidence.is_empty() {
        a.not_measured.push(
            "khugepaged (pages_to_scan, max_ptes_none, …) was not varied by these runs; its defaults stay"
                .into(),
        );
    }
    a.not_measured.push(
        "other workloads on the same machine: each needs its own run (`hugelab run --preset thp -- COMMAND`)"
            .into(),
    );
    a.verify
        .push("hugelab advise --check ADVICE.json (exit 0 when the machine follows it)".into());
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::super::{Finding, findings};
    use super::*;
    use crate::analyze::verdict::Verdict;

    #[test]
    fn faster_thp_always_becomes_the_setting_with_its_evidence() {
        let r = run(
            7,
            &["never=thp=never", "always=thp=always,defrag=defer+madvise"],
            &[(8.0, 3.0, 13.0, Verdict::Faster, 0)],
        );
        let runs = [r];
        let a = advise(&runs, findings(&runs));
        assert_eq!(a.adopt.as_deref(), Some("always"));
        let s: Vec<(String, String)> = a
            .settings
            .iter()
            .map(|s| (s.knob.to_string(), s.value.clone()))
            .collect();
        assert_eq!(
            s,
            [
                ("thp.enabled".into(), "always".into()),
                ("thp.defrag".into(), "defer+madvise".into())
            ]
        );
        assert!(
            a.settings[0].why.starts_with(
                "run 7: always vs never, tps +8.0% [+3.0, +13.0] FASTER, 95% on huge pages"
            ),
            "{}",
            a.settings[0].why
        );
        assert!(a.not_measured[0].contains("--trace compaction,reclaim"));
    }

    #[test]
    fn a_per_process_arm_is_advised_for_the_program_not_the_machine() {
        let r = run(
            5,
            &["4k=process.thp=off", "thp=malloc=thp"],
            &[(40.0, 30.0, 48.0, Verdict::Faster, 0)],
        );
        let runs = [r];
        let a = advise(&runs, findings(&runs));
        assert!(a.settings.is_empty());
        assert_eq!(a.service[0].line, "GLIBC_TUNABLES=glibc.malloc.hugetlb=1");
        assert!(
            a.summary
                .starts_with("no system-wide change; for `load`: GLIBC_TUNABLES="),
            "{}",
            a.summary
        );
    }

    #[test]
    fn inconclusive_evidence_gives_no_change_with_the_half_width() {
        let r = run(
            8,
            &["never=thp=never", "always=thp=always"],
            &[(2.0, -3.0, 7.0, Verdict::Inconclusive, 0)],
        );
        let runs = [r];
        let a = advise(&runs, findings(&runs));
        assert!(a.adopt.is_none() && a.settings.is_empty());
        assert!(
            a.summary.contains("no change") && a.summary.contains("INCONCLUSIVE at ±5.0%"),
            "{}",
            a.summary
        );
        assert_eq!(a.evidence[0].finding, Finding::Inconclusive);
    }

    #[test]
    fn a_flagged_arm_is_refused_and_said_so() {
        let r = run(
            9,
            &["never=thp=never", "always=thp=always"],
            &[(30.0, 20.0, 40.0, Verdict::Faster, 4)],
        );
        let runs = [r];
        let a = advise(&runs, findings(&runs));
        assert!(a.settings.is_empty());
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("no advice from always")),
            "{:?}",
            a.notes
        );
    }
}
