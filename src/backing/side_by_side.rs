//! Whether a run's arms can run side by side — every arm's server up at once (`run --server`,
//! the warm design) — and what is done instead of a system-wide setting that differs between
//! them. Per-process keys (`server.arg`, `env.*`, `process.thp`, `malloc`, `jvm*`) always can.
//! A system-wide knob can when every arm wants the same value, or through a per-process
//! equivalent the kernel honours:
//!
//! * THP `enabled` / `shmem_enabled` of `never` for some arms and one other mode for the rest:
//!   the knob is set to that mode and the `never` arms' servers get PR_SET_THP_DISABLE
//!   (inherited across fork and exec; the kernel then gives that process no THP, anonymous or
//!   shared — `vma_thp_disabled`); the evidence confirms it per trial;
//! * hugetlb pools: one pool holding the sum of what the arms asked for.
//!
//! * THP `enabled` of `madvise` for some arms and `always` for others (and `never` for more):
//!   the knob is set to `always` and the `madvise` arms' servers get PR_SET_THP_DISABLE with
//!   PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18: THP only in the regions the process advised;
//!   the evidence confirms it per trial from the kernel's `THPeligible` of its other regions);
//!   on an older kernel such arms cannot run side by side;
//!
//! Anything else (`defrag`, `mthp.*`, khugepaged knobs, an arm that asks for an empty pool while
//! another needs one) has no per-process equivalent: those arms restart a server per trial.

pub use crate::model::arm::side_by_side::SideBySide;

use super::arm::Arm;
use crate::control::Knob;

fn is_never(k: &Knob, v: &str) -> bool {
    match k {
        Knob::ThpShmemEnabled => v == "never" || v == "deny",
        _ => v == "never",
    }
}

/// Whether THP `enabled` values are `madvise` beside `always` (and perhaps `never`): what the
/// advised per-process policy can stand in for.
fn madvise_beside_always(distinct: &[String]) -> bool {
    distinct.iter().any(|v| v == "always")
        && distinct.iter().any(|v| v == "madvise")
        && distinct
            .iter()
            .all(|v| ["always", "madvise", "never"].contains(&v.as_str()))
}

/// The side-by-side form of `arms`, or why there is none. `current` gives a knob's value on the
/// machine now (what an arm that does not set it runs under); `advised`: whether the kernel
/// has PR_THP_DISABLE_EXCEPT_ADVISED.
pub fn side_by_side(
    arms: &[Arm],
    current: &dyn Fn(&Knob) -> Option<String>,
    advised: bool,
) -> Result<SideBySide, String> {
    let mut knobs: Vec<Knob> = Vec::new();
    for (k, _) in arms.iter().flat_map(|a| a.system.iter()) {
        if !knobs.contains(k) {
            knobs.push(*k);
        }
    }
    let mut out = SideBySide::default();
    let mut lifted: Vec<Knob> = Vec::new();
    for k in knobs {
        let wants: Vec<Option<&str>> = arms
            .iter()
            .map(|a| {
                a.system
                    .iter()
                    .find(|(x, _)| *x == k)
                    .map(|(_, v)| v.as_str())
            })
            .collect();
        if let Knob::HugetlbPages { .. } = k {
            one_pool(k, &wants, arms, &mut out)?;
            continue;
        }
        let now = current(&k);
        let values: Vec<String> = wants
            .iter()
            .map(|w| {
                w.map(String::from)
                    .or_else(|| now.clone())
                    .unwrap_or_default()
            })
            .collect();
        let mut distinct = values.clone();
        distinct.sort();
        distinct.dedup();
        match distinct.len() {
            0 | 1 => {
                if let Some(v) = distinct
                    .first()
                    .filter(|_| wants.iter().any(Option::is_some))
                {
                    out.system.push((k, v.clone()));
                }
            }
            _ if k == Knob::ThpEnabled && madvise_beside_always(&distinct) => {
                if !advised {
                    return Err(format!(
                        "the arms set {k} to {}: `madvise` beside `always` needs PR_THP_DISABLE_EXCEPT_ADVISED, which this kernel refuses (Linux 6.18+)",
                        distinct.join(" / ")
                    ));
                }
                out.system.push((k, "always".into()));
                lifted.push(k);
                for (i, v) in values.iter().enumerate() {
                    match v.as_str() {
                        "never" if !out.thp_off.contains(&i) => out.thp_off.push(i),
                        "madvise" => out.thp_advised.push(i),
                        _ => {}
                    }
                }
            }
            2 if matches!(k, Knob::ThpEnabled | Knob::ThpShmemEnabled)
                && distinct.iter().any(|v| is_never(&k, v))
                && !distinct.iter().all(|v| is_never(&k, v)) =>
            {
                let on = distinct
                    .iter()
                    .find(|v| !is_never(&k, v))
                    .expect("one is not never");
                out.system.push((k, on.clone()));
                lifted.push(k);
                for (i, v) in values.iter().enumerate() {
                    if is_never(&k, v) && !out.thp_off.contains(&i) {
                        out.thp_off.push(i);
                    }
                }
            }
            _ => {
                return Err(format!(
                    "the arms set {k} to {} and it has no per-process equivalent the kernel honours",
                    distinct.join(" / ")
                ));
            }
        }
    }
    check_policies(arms, current, &out)?;
    describe_policies(arms, &lifted, &mut out);
    out.thp_off.sort_unstable();
    Ok(out)
}

/// One hugetlb pool for every arm's server: the sum of what the arms asked; an arm that asks
/// for an empty pool beside one that needs a pool cannot run side by side.
fn one_pool(
    k: Knob,
    wants: &[Option<&str>],
    arms: &[Arm],
    out: &mut SideBySide,
) -> Result<(), String> {
    if let Some(i) = wants.iter().position(|w| *w == Some("0")) {
        return Err(format!(
            "arm {} asks for an empty {k} pool while another arm needs one, and a pool is system-wide",
            arms[i].name
        ));
    }
    let sum: u64 = wants
        .iter()
        .flatten()
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    out.system.push((k, sum.to_string()));
    if wants.iter().filter(|w| w.is_some()).count() > 1 {
        out.instead.push(format!(
            "{k}: one pool of {sum} pages for every arm's server (the sum of what the arms asked)"
        ));
    }
    Ok(())
}

/// Whether the per-process policies stand for what each arm asked for, given the run's
/// system-wide settings.
fn check_policies(
    arms: &[Arm],
    current: &dyn Fn(&Knob) -> Option<String>,
    out: &SideBySide,
) -> Result<(), String> {
    // PR_SET_THP_DISABLE turns off every kind of THP for the process: an arm that gets it must
    // want none wherever THP is on for the run. THP `madvise` counts as none for a server that
    // asks for no MADV_HUGEPAGE region (each trial checks it: the server's `madvised` bytes).
    let value = |list: &[(Knob, String)], k: Knob| {
        list.iter()
            .find(|(x, _)| *x == k)
            .map(|(_, v)| v.clone())
            .or_else(|| current(&k))
            .unwrap_or_default()
    };
    for &i in &out.thp_off {
        for k in [Knob::ThpEnabled, Knob::ThpShmemEnabled] {
            let run = value(&out.system, k);
            let v = value(&arms[i].system, k);
            let none = is_never(&k, &v) || (k == Knob::ThpEnabled && v == "madvise");
            if !is_never(&k, &run) && !none {
                return Err(format!(
                    "arm {} wants {k} {v} but THP never elsewhere; PR_SET_THP_DISABLE cannot keep one and drop the other",
                    arms[i].name
                ));
            }
        }
    }
    // The advised policy limits shared-memory THP to advised regions as well.
    for &i in &out.thp_advised {
        let run = value(&out.system, Knob::ThpShmemEnabled);
        if !is_never(&Knob::ThpShmemEnabled, &run) && run != "advise" {
            return Err(format!(
                "arm {} runs as THP madvise (PR_THP_DISABLE_EXCEPT_ADVISED) but {} is {run} for the run: the advised policy would take shared-memory THP from its server too",
                arms[i].name,
                Knob::ThpShmemEnabled
            ));
        }
    }
    Ok(())
}

/// What the run does instead of the arms' own settings, in words.
fn describe_policies(arms: &[Arm], lifted: &[Knob], out: &mut SideBySide) {
    let on: Vec<String> = lifted
        .iter()
        .filter_map(|k| out.system.iter().find(|(x, _)| x == k))
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let named = |list: &[usize]| -> (String, &str) {
        let names: Vec<&str> = list.iter().map(|i| arms[*i].name.as_str()).collect();
        let several = names.len() > 1;
        (
            format!(
                "{} {}",
                if several { "arms" } else { "arm" },
                names.join(", ")
            ),
            if several {
                "their servers"
            } else {
                "its server"
            },
        )
    };
    if !out.thp_advised.is_empty() {
        let (who, whose) = named(&out.thp_advised);
        out.instead.push(format!(
            "{who}: THP madvise for {whose} alone (PR_SET_THP_DISABLE with PR_THP_DISABLE_EXCEPT_ADVISED) under {}",
            on.join(", ")
        ));
    }
    if !out.thp_off.is_empty() {
        let (who, whose) = named(&out.thp_off);
        out.instead.push(format!(
            "{who}: THP never for {whose} alone (PR_SET_THP_DISABLE) under {}",
            on.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backing::arm::parse_arm;

    fn arms(specs: &[&str]) -> Vec<Arm> {
        specs.iter().map(|s| parse_arm(s).unwrap()).collect()
    }

    fn machine(k: &Knob) -> Option<String> {
        Some(
            match k {
                Knob::ThpEnabled => "madvise",
                Knob::ThpShmemEnabled => "never",
                Knob::ThpDefrag => "madvise",
                _ => "0",
            }
            .into(),
        )
    }

    #[test]
    fn never_against_one_mode_becomes_thp_disable_for_the_never_arms() {
        // The PostgreSQL preset: shmem THP for one arm, a pool for another.
        let a = arms(&[
            "off=server.arg=-c",
            "hugetlb-2m=hugetlb.2M=300",
            "thp=shmem=always",
        ]);
        let s = side_by_side(&a, &machine, true).unwrap();
        assert!(s.system.contains(&(Knob::ThpShmemEnabled, "always".into())));
        assert!(
            s.system
                .iter()
                .any(|(k, v)| matches!(k, Knob::HugetlbPages { .. }) && v == "300")
        );
        assert_eq!(s.thp_off, [0, 1]);
        assert!(
            s.instead[0].contains("arms off, hugetlb-2m: THP never for their servers alone"),
            "{:?}",
            s.instead
        );
        // Redis: never / always / always.
        let a = arms(&["never=thp=never", "always=thp=always", "d=thp=always"]);
        let s = side_by_side(&a, &machine, true).unwrap();
        assert_eq!(s.system, [(Knob::ThpEnabled, "always".into())]);
        assert_eq!(s.thp_off, [0]);
    }

    #[test]
    fn madvise_beside_always_becomes_the_advised_policy() {
        let a = arms(&[
            "never=thp=never",
            "madvise=thp=madvise",
            "always=thp=always",
        ]);
        let s = side_by_side(&a, &machine, true).unwrap();
        assert_eq!(s.system, [(Knob::ThpEnabled, "always".into())]);
        assert_eq!(
            (s.thp_off.as_slice(), s.thp_advised.as_slice()),
            (&[0][..], &[1][..])
        );
        assert_eq!(
            s.instead,
            [
                "arm madvise: THP madvise for its server alone (PR_SET_THP_DISABLE with PR_THP_DISABLE_EXCEPT_ADVISED) under thp.enabled always",
                "arm never: THP never for its server alone (PR_SET_THP_DISABLE) under thp.enabled always"
            ]
        );
        // The machine's madvise beside an always arm.
        let s = side_by_side(&arms(&["a=", "b=thp=always"]), &machine, true).unwrap();
        assert_eq!(s.thp_advised, [0]);
        // Shared-memory THP on for the run: the advised policy would take it away.
        let e = side_by_side(
            &arms(&["m=thp=madvise,shmem=always", "a=thp=always,shmem=always"]),
            &machine,
            true,
        )
        .unwrap_err();
        assert!(e.contains("arm m runs as THP madvise"), "{e}");
    }

    #[test]
    fn pools_add_up_and_what_has_no_equivalent_is_refused_with_why() {
        let a = arms(&["a=hugetlb.2M=100", "b=hugetlb.2M=50"]);
        let s = side_by_side(&a, &machine, true).unwrap();
        assert!(s.system.iter().any(|(_, v)| v == "150"), "{s:?}");
        let e = side_by_side(
            &arms(&["a=hugetlb.2M=100", "b=hugetlb.2M=0"]),
            &machine,
            true,
        )
        .unwrap_err();
        assert!(e.contains("arm b asks for an empty"), "{e}");
        // The thp preset on a kernel without the advised policy: three modes.
        let e = side_by_side(
            &arms(&["n=thp=never", "m=thp=madvise", "a=thp=always"]),
            &machine,
            false,
        )
        .unwrap_err();
        assert!(
            e.contains("always / madvise / never") && e.contains("Linux 6.18+"),
            "{e}"
        );
        let e = side_by_side(
            &arms(&["a=defrag=never", "b=defrag=always"]),
            &machine,
            true,
        )
        .unwrap_err();
        assert!(e.contains("no per-process equivalent"), "{e}");
        // madvise (the machine's) vs always without the advised policy: no equivalent either.
        assert!(side_by_side(&arms(&["a=", "b=thp=always"]), &machine, false).is_err());
        // Same value everywhere: just set.
        let s = side_by_side(&arms(&["a=defrag=never", "b=defrag=never"]), &machine, true).unwrap();
        assert_eq!(s.system, [(Knob::ThpDefrag, "never".into())]);
        assert!(s.thp_off.is_empty());
        // An arm that would need THP off for shmem but on for anonymous memory.
        let e = side_by_side(
            &arms(&["x=thp=always,shmem=never", "y=thp=always,shmem=always"]),
            &machine,
            true,
        )
        .unwrap_err();
        assert!(
            e.contains("arm x wants transparent_hugepage/enabled always")
                || e.contains("arm x wants"),
            "{e}"
        );
        let e = side_by_side(
            &arms(&["x=thp=never,shmem=always", "y=thp=always,shmem=never"]),
            &machine,
            true,
        )
        .unwrap_err();
        assert!(e.contains("cannot keep one and drop the other"), "{e}");
    }
}
