//! `hugelab advise` artefacts, all from one [`Advice`] record: the readable plan, sysctl.d lines,
//! tmpfiles.d lines and a systemd oneshot unit for the sysfs knobs (they are not sysctls), a
//! kernel command line, a tuned profile, the service's own configuration lines. Every artefact
//! carries its evidence and how to verify it. The registry of what `--format` writes, one file
//! an artefact, is `advice::artefact`.

use crate::control::Knob;
use crate::model::advice::Advice;
use crate::model::advice::Checked;
use crate::model::advice::Setting;
use crate::render::manifest;
use crate::units::Bytes;
use std::fmt::Write;

/// `--format daemonset`'s defaults: the canary nodes' label and the image the applier runs.
pub const CANARY_LABEL: &str = "hugelab.io/canary=true";
pub const IMAGE: &str = "REGISTRY/hugelab:0.1.0";

/// `advise --check`: each setting `ok` or `DIFFERS`, the lines not checked, and the verdict.
pub fn checked(c: &Checked) -> String {
    let mut o = String::new();
    for (s, d) in &c.settings {
        if d.is_none() {
            let _ = writeln!(o, "ok       {} = {}", s.knob, s.value);
        }
    }
    for d in c.settings.iter().filter_map(|(_, d)| d.as_ref()) {
        let _ = writeln!(o, "DIFFERS  {d}");
    }
    for u in &c.unchecked {
        let _ = writeln!(o, "not checked here: {u}");
    }
    let (n, all) = (c.differing(), c.settings.len());
    let _ = match n {
        0 => writeln!(o, "this machine follows {} ({all} settings)", c.file),
        _ => writeln!(
            o,
            "this machine does not follow {}: {n} of {all} settings differ",
            c.file
        ),
    };
    o
}

/// The header of a configuration file: what it is, on what evidence, how to verify it.
pub fn comments(a: &Advice, prefix: &str) -> String {
    let mut o = format!(
        "{prefix} hugelab advise --for {}: {}\n",
        target_name(a),
        a.summary
    );
    for v in &a.verify {
        let _ = writeln!(o, "{prefix} verify: {v}");
    }
    o
}

pub fn target_name(a: &Advice) -> String {
    format!("{:?}", a.target).to_lowercase()
}

/// The value a sysfs knob takes at boot on the kernel command line, if it has one.
fn cmdline_word(s: &Setting) -> Option<String> {
    match s.knob {
        Knob::ThpEnabled => Some(format!("transparent_hugepage={}", s.value)),
        // Linux 6.13+.
        Knob::ThpShmemEnabled => Some(format!("transparent_hugepage_shmem={}", s.value)),
        Knob::HugetlbPages { size, node: None } => {
            Some(format!("hugepagesz={} hugepages={}", Bytes(size), s.value))
        }
        Knob::HugetlbPages {
            size,
            node: Some(n),
        } => Some(format!(
            "hugepagesz={} hugepages={n}:{}",
            Bytes(size),
            s.value
        )),
        _ => None,
    }
}

/// The advice record as JSON, with the version that wrote it (what `advise --check` reads).
pub fn json(a: &Advice) -> String {
    serde_json::to_string_pretty(&crate::model::Versioned::of(a)).unwrap_or_default() + "\n"
}

/// How pools set at run time (the DaemonSet's `hugelab apply`) reach the scheduler.
pub const RUN_TIME_POOLS: &str = "the pools are set at run time (the DaemonSet's `hugelab apply`): a node's kubelet reports hugepages-2Mi/1Gi in its capacity only after it restarts (Kubernetes documents this for huge pages allocated after boot), and a pod that requests them stays Pending until it does; the applier reads its node's capacity through the API server and, where the pool is not advertised, restarts the kubelet once (--restart-kubelet) and checks again, saying which node still lags";

/// Whether an advice sets a hugetlb pool.
pub fn sets_pools(a: &Advice) -> bool {
    a.settings
        .iter()
        .any(|s| matches!(s.knob, Knob::HugetlbPages { .. }))
}

/// The applier's name: its ConfigMap, DaemonSet and (where it sets pools) ServiceAccount.
const APPLIER: &str = "hugelab-apply";
/// Where the applier runs: beside the node's own system pods.
const NAMESPACE: &str = "kube-system";

/// The settings on a canary node pool of plain Kubernetes: a ConfigMap holding the advice
/// record and a DaemonSet, on the nodes with `label`, whose container runs `hugelab apply` on it
/// — privileged (it writes the node's /sys), its journal on the node (`/run/hugelab`), so a
/// pod killed outright is restored by the next one. Deleting the DaemonSet (or the label from a
/// node) stops the pod, and SIGTERM restores every value.
pub fn daemonset(a: &Advice, label: &(String, String), image: &str) -> String {
    let mut o = comments(a, "#");
    let (k, v) = label;
    let _ = writeln!(
        o,
        "# On the nodes labelled {k}={v} (kubectl label node NODE {k}={v}); elsewhere nothing\n\
         # changes. Removing the DaemonSet or the label restores each node's own values.\n\
         # It needs: privileged (writes /sys/kernel/mm), the node's /run/hugelab for its journal,\n\
         # and Kubernetes 1.14 or later (huge pages a stable resource from v1.14, as Kubernetes'\n\
         # \"Manage HugePages\" task says)."
    );
    for s in &a.settings {
        let _ = writeln!(o, "#   {} = {}", s.knob, s.value);
    }
    if a.settings.is_empty() {
        let _ = writeln!(o, "#   (no setting: the advice changes nothing)");
    }
    let pools = sets_pools(a);
    if pools {
        let _ = writeln!(
            o,
            "# Note: {RUN_TIME_POOLS}.\n\
             # For that the pod runs with hostPID (the restart runs in the host's namespaces:\n\
             # `{}`) and a ServiceAccount that may read nodes/status. Drop --restart-kubelet to\n\
             # restart kubelets yourself: the applier then warns which node does not advertise the pool.",
            crate::collect::kubernetes::RESTART_KUBELET
        );
    }
    if !a.service.is_empty() {
        let _ = writeln!(
            o,
            "# Not set by this DaemonSet: the service's own lines (`advise --format service`)."
        );
    }
    let reader = pools.then_some(APPLIER);
    o.push_str(&manifest::document(&manifest::config_map(
        APPLIER,
        NAMESPACE,
        "advice.json",
        &json(a),
    )));
    if let Some(account) = reader {
        o.push_str(&manifest::node_status_reader(account, NAMESPACE));
    }
    let mut args: Vec<String> = ["apply", "/etc/hugelab/advice.json", "--wait-for-settings"]
        .map(String::from)
        .into();
    if pools {
        args.push("--restart-kubelet".into());
    }
    o.push_str(&manifest::document(&manifest::daemon_set(
        &manifest::Agent {
            name: APPLIER,
            namespace: NAMESPACE,
            node_label: label,
            image,
            args,
            node_reader: reader,
        },
    )));
    o
}

pub fn plan(a: &Advice) -> String {
    let mut o = String::new();
    for l in super::summary::wrap_hanging(&a.summary, 2) {
        let _ = writeln!(o, "{l}");
    }
    if !a.settings.is_empty() {
        let _ = writeln!(o, "\nset:");
        for s in &a.settings {
            let now = s.now.as_deref().map_or(String::new(), |n| {
                if n == s.value {
                    " (already)".into()
                } else {
                    format!(" (now {n})")
                }
            });
            let _ = writeln!(o, "  {} = {}{now}", s.knob, s.value);
        }
    }
    if !a.service.is_empty() {
        let _ = writeln!(o, "\nin the service's configuration:");
        for s in &a.service {
            let _ = writeln!(o, "  {}:", s.file);
            for l in s.line.lines() {
                let _ = writeln!(o, "    {l}");
            }
        }
    }
    let _ = writeln!(o, "\nevidence:");
    if a.evidence.is_empty() {
        let _ = writeln!(o, "  none (no stored run compares arms)");
    }
    for e in &a.evidence {
        let line = format!("  {}: {}", e.finding.word(), e.describe());
        for l in super::summary::wrap_hanging(&line, 4) {
            let _ = writeln!(o, "{l}");
        }
        for s in &e.stalls {
            let _ = writeln!(o, "    stalls: {s}");
        }
        if !e.weighed.is_empty() {
            let w = format!("    weighed against the benefit: {}", e.weighed.join(", "));
            for l in super::summary::wrap_hanging(&w, 6) {
                let _ = writeln!(o, "{l}");
            }
        }
    }
    for (what, list) in [
        ("note", &a.notes),
        ("not measured", &a.not_measured),
        ("verify", &a.verify),
    ] {
        for n in list {
            for l in super::summary::wrap_hanging(&format!("{what}: {n}"), 2) {
                let _ = writeln!(o, "{l}");
            }
        }
    }
    o
}

pub fn sysctl(a: &Advice) -> String {
    let mut o = comments(a, "#");
    let mut any = false;
    for s in &a.settings {
        // vm.nr_hugepages is the default page size's pool (2 MiB on x86-64), vm.defrag_mode and
        // vm.compaction_proactiveness are sysctls too; other sizes and the THP knobs live in
        // sysfs only.
        let Some(name) = s.knob.sysctl() else {
            continue;
        };
        if name == "vm.nr_hugepages" {
            o.push_str("# vm.nr_hugepages sizes the default huge page size's pool (Hugepagesize in /proc/meminfo:\n# 2 MiB unless the kernel was booted with default_hugepagesz=)\n");
        }
        let _ = writeln!(o, "{name} = {}", s.value);
        any = true;
    }
    if !any {
        o.push_str("# nothing here is a sysctl: see --format tmpfiles or systemd\n");
    }
    o
}

pub fn tmpfiles(a: &Advice) -> String {
    let mut o = comments(a, "#");
    for s in &a.settings {
        let _ = writeln!(o, "w {} - - - - {}", s.knob.path(), s.value);
    }
    if a.settings.is_empty() {
        o.push_str("# no system setting to change\n");
    }
    o
}

pub fn systemd(a: &Advice) -> String {
    let mut o = comments(a, "#");
    let before = match a.target {
        crate::model::advice::Target::Postgres => " postgresql.service",
        crate::model::advice::Target::Redis => " redis-server.service",
        crate::model::advice::Target::Kubernetes => " kubelet.service",
        crate::model::advice::Target::Qemu => " libvirtd.service",
        _ => "",
    };
    let _ = writeln!(
        o,
        "[Unit]\nDescription=Huge page settings advised by hugelab ({})\nDefaultDependencies=no\nAfter=sysinit.target local-fs.target\nBefore=basic.target{before}\n\n[Service]\nType=oneshot\nRemainAfterExit=yes",
        target_name(a)
    );
    for s in &a.settings {
        let _ = writeln!(
            o,
            "ExecStart=/bin/sh -c 'echo {} > {}'",
            s.value,
            s.knob.path()
        );
    }
    if a.settings.is_empty() {
        o.push_str("ExecStart=/bin/true\n");
    }
    o.push_str("\n[Install]\nWantedBy=basic.target\n");
    o
}

/// The mTHP sizes' modes as one `thp_anon=` word (Linux 6.12+): `thp_anon=64K:always;2M:inherit`.
fn thp_anon_word(a: &Advice) -> Option<String> {
    let sizes: Vec<String> = a
        .settings
        .iter()
        .filter_map(|s| match s.knob {
            Knob::MthpEnabled { size } => Some(format!("{}:{}", Bytes(size), s.value)),
            _ => None,
        })
        .collect();
    (!sizes.is_empty()).then(|| format!("thp_anon={}", sizes.join(";")))
}

pub fn cmdline(a: &Advice) -> String {
    let mut words: Vec<String> = a.settings.iter().filter_map(cmdline_word).collect();
    words.extend(thp_anon_word(a));
    let mut o = comments(a, "#");
    let other: Vec<String> = a
        .settings
        .iter()
        .filter(|s| cmdline_word(s).is_none() && !matches!(s.knob, Knob::MthpEnabled { .. }))
        .map(|s| s.knob.to_string())
        .collect();
    if !other.is_empty() {
        let _ = writeln!(
            o,
            "# not on the command line (sysfs only): {}; see --format tmpfiles",
            other.join(", ")
        );
    }
    for (word, since) in [
        ("thp_anon=", "6.12"),
        ("transparent_hugepage_shmem=", "6.13"),
    ] {
        if words.iter().any(|w| w.starts_with(word)) {
            let _ = writeln!(o, "# {word} needs Linux {since}+");
        }
    }
    let _ = writeln!(o, "{}", words.join(" "));
    o
}

pub fn tuned(a: &Advice) -> String {
    let mut o = comments(a, "#");
    let _ = writeln!(
        o,
        "[main]\nsummary=Huge page settings advised by hugelab ({})",
        target_name(a)
    );
    let settings: Vec<&Setting> = a.settings.iter().collect();
    o.push_str(&tuned_plugins(&settings, false));
    o
}

/// A tuned profile's plugin sections for `settings`: the THP mode in `[vm]`, sysctls in
/// `[sysctl]`, every other knob in `[sysfs]` (tuned's sysfs plugin writes any sysfs file); with
/// `pools_at_boot`, the hugetlb pools on the kernel command line (`[bootloader]`) instead.
pub fn tuned_plugins(settings: &[&Setting], pools_at_boot: bool) -> String {
    let mut o = String::new();
    let at_boot = |s: &Setting| pools_at_boot && matches!(s.knob, Knob::HugetlbPages { .. });
    if let Some(t) = settings.iter().find(|s| s.knob == Knob::ThpEnabled) {
        let _ = writeln!(o, "\n[vm]\ntransparent_hugepages={}", t.value);
    }
    let sysctls: Vec<(&str, &Setting)> = settings
        .iter()
        .filter(|s| !at_boot(s))
        .filter_map(|s| Some((s.knob.sysctl()?, *s)))
        .collect();
    if !sysctls.is_empty() {
        let _ = writeln!(o, "\n[sysctl]");
        for (name, s) in &sysctls {
            let _ = writeln!(o, "{name}={}", s.value);
        }
    }
    let rest: Vec<&Setting> = settings
        .iter()
        .copied()
        .filter(|s| s.knob != Knob::ThpEnabled && s.knob.sysctl().is_none() && !at_boot(s))
        .collect();
    if !rest.is_empty() {
        let _ = writeln!(o, "\n[sysfs]");
        for s in rest {
            let _ = writeln!(o, "{}={}", s.knob.path(), s.value);
        }
    }
    let boot: Vec<String> = settings
        .iter()
        .filter(|s| at_boot(s))
        .filter_map(|s| cmdline_word(s))
        .collect();
    if !boot.is_empty() {
        let _ = writeln!(o, "\n[bootloader]\ncmdline_hugelab={}", boot.join(" "));
    }
    o
}

pub fn service(a: &Advice) -> String {
    let mut o = String::new();
    if a.service.is_empty() {
        let _ = writeln!(o, "# no service configuration to change: {}", a.summary);
    }
    let mut file = "";
    for s in &a.service {
        if s.file != file {
            let _ = writeln!(o, "# {} — {}", s.file, s.why);
            file = &s.file;
        }
        let _ = writeln!(o, "{}", s.line);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `vm.defrag_mode` is a sysctl: the sysctl.d lines and tuned's `[sysctl]` carry it beside
    /// the pool; THP's knobs stay in sysfs.
    #[test]
    fn every_sysctl_knob_goes_to_the_sysctl_artefacts() {
        let set = |knob: Knob, value: &str| Setting {
            knob,
            value: value.into(),
            now: None,
            why: "measured".into(),
        };
        let a = Advice {
            schema: crate::model::advice::SCHEMA.into(),
            target: crate::model::advice::Target::Machine,
            adopt: Some("on".into()),
            summary: "set vm.defrag_mode = 1".into(),
            settings: vec![
                set(Knob::ThpEnabled, "always"),
                set(Knob::DefragMode, "1"),
                set(
                    Knob::HugetlbPages {
                        size: 2 << 20,
                        node: None,
                    },
                    "100",
                ),
                set(Knob::ThpDefrag, "defer+madvise"),
            ],
            service: Vec::new(),
            evidence: Vec::new(),
            not_measured: Vec::new(),
            notes: Vec::new(),
            verify: Vec::new(),
        };
        let s = sysctl(&a);
        assert!(
            s.contains("\nvm.defrag_mode = 1\n") && s.contains("\nvm.nr_hugepages = 100\n"),
            "{s}"
        );
        assert!(!s.contains("defer+madvise"), "{s}");
        let t = tuned(&a);
        let sysctl = &t[t.find("[sysctl]").expect("a [sysctl] section")..];
        assert!(
            sysctl.contains("vm.defrag_mode=1") && sysctl.contains("vm.nr_hugepages=100"),
            "{t}"
        );
        assert!(!t.contains("/proc/sys/vm/defrag_mode"), "{t}");
        assert!(
            t.contains("/sys/kernel/mm/transparent_hugepage/defrag=defer+madvise"),
            "{t}"
        );
    }
}
