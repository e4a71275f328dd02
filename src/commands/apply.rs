//! `hugelab apply ADVICE.json`: put an advice's settings on this machine through the guard and
//! hold them until stopped — the applier a canary node's DaemonSet runs (`advise --format
//! daemonset`). SIGTERM or Ctrl-C restores every value it changed; after a SIGKILL the journal
//! it kept is restored by the next hugelab on the machine (`hugelab restore`, or the applier's
//! own next start), before anything else. Runs that change no setting measure under them. On a
//! Kubernetes node it checks that the node advertises the pools it set (`fleet::kubelet`).

use super::UsageError;
use crate::control::{Guard, default_journal_path};
use crate::fleet::kubelet;
use crate::model::advice::Advice;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The advice record to apply (`hugelab advise RUN --format json -o ADVICE.json`)
    pub advice: PathBuf,
    /// While another hugelab owns the settings, wait for it instead of exiting 2
    #[arg(long)]
    pub wait_for_settings: bool,
    #[command(flatten)]
    pub node: kubelet::NodeArgs,
}

pub fn run(a: ApplyArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&a.advice)
        .map_err(|e| UsageError(format!("{}: {e}", a.advice.display())))?;
    let adv: Advice = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!(
            "{}: not an advice record ({e}); write one with `hugelab advise RUN --format json -o FILE`",
            a.advice.display()
        ))
    })?;
    let owner = crate::control::own_to_apply(a.wait_for_settings)?;
    let mut guard = Guard::system_owned(&owner)?;
    println!(
        "applying {} ({} settings): {}",
        a.advice.display(),
        adv.settings.len(),
        adv.summary
    );
    for s in &adv.settings {
        let applied = guard.set(s.knob, &s.value)?;
        println!(
            "  {} = {}{}",
            applied.knob,
            applied.actual,
            if applied.honoured() {
                String::new()
            } else {
                format!(" (asked {}: the kernel gave less)", applied.requested)
            }
        );
    }
    if adv.settings.is_empty() {
        println!("  nothing to set: the advice changes no setting");
    }
    owner.share_settings()?;
    for l in kubelet::check(&adv.settings, &a.node) {
        println!("{l}");
    }
    println!(
        "holding them until stopped (SIGTERM or Ctrl-C restores every value; after a SIGKILL, `hugelab restore` or the next hugelab does, from {}); runs that change no setting measure under them meanwhile, and one that would change them is refused",
        default_journal_path().display()
    );
    // The guard's signal handler restores the journal and exits as the signal would have:
    // nothing is left to do here but wait, without waking.
    loop {
        std::thread::park();
    }
}
