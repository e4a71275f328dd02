//! `--for jvm`: the JVM options the better arm ran with (`JAVA_TOOL_OPTIONS`, as measured) and
//! the pool it had for `-Xmx`.

use super::{Adopted, Advice, EvidenceLine, RunEvidence, ServiceLine, Target, begin};

pub fn advise(runs: &[RunEvidence], lines: Vec<EvidenceLine>) -> Advice {
    let (mut a, chosen) = begin(
        Target::Jvm,
        runs,
        lines,
        "hugelab inspect --name java (the heap on the advised page size; a FLAGGED arm in `run` shows HotSpot's own warning)",
    );
    let Some(Adopted { arm, why, .. }) = chosen else {
        return a;
    };
    for (k, v) in arm.process.environment() {
        if k == "JAVA_TOOL_OPTIONS" {
            for opt in v.split_whitespace() {
                a.service.push(ServiceLine {
                    file: "JVM options".into(),
                    line: opt.into(),
                    why: why.clone(),
                });
            }
        }
    }
    if a.settings.iter().any(|s| s.knob.is_pool()) {
        a.notes.push("the pool is the one the run sized for its -Xmx (heap + 1/16 + 256 MiB); resize it with the heap".into());
    }
    a
}

#[cfg(test)]
mod tests {
    use super::super::findings;
    use super::super::tests::run;
    use super::*;
    use crate::analyze::verdict::Verdict;

    #[test]
    fn the_measured_jvm_flags_and_pool() {
        let r = run(
            4,
            &[
                "off=jvm=off",
                "thp=jvm=thp",
                "huge=jvm=hugetlbfs,hugetlb.2M=700",
            ],
            &[
                (5.0, 1.5, 9.0, Verdict::Faster, 0),
                (12.0, 6.0, 18.0, Verdict::Faster, 0),
            ],
        );
        let runs = [r];
        let a = advise(&runs, findings(&runs));
        assert_eq!(a.adopt.as_deref(), Some("huge"));
        assert_eq!(
            a.service
                .iter()
                .map(|s| s.line.as_str())
                .collect::<Vec<_>>(),
            ["-XX:+UseLargePages"]
        );
        assert_eq!(a.settings[0].value, "700");
    }
}
