//! `hugelab judge`: a huge-page change judged on live hosts from Prometheus, or by switchback
//! on this one. Parse (clap, into the engine's [`JudgeArgs`]), run the fleet engine
//! (`crate::fleet`), render, exit code by the overall verdict.

use crate::fleet::{self, JudgeArgs};
use crate::model::judge::JudgeResult;
use crate::render::analysis_step::Rollout;

pub fn run(a: JudgeArgs) -> anyhow::Result<i32> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(path) = &a.analysis_template {
        let text =
            crate::render::analysis_step::analysis_template(&fleet::step_args(&args, &a), &a.image);
        super::write_file(path, "--analysis-template", &text)?;
        println!(
            "wrote {}: an Argo Rollouts AnalysisTemplate (argoproj.io/v1alpha1) whose Job runs this judgement in {}",
            path.display(),
            a.image
        );
        return place(&a, Rollout::Argo);
    }
    if let Some(path) = &a.flagger {
        let mut judge = fleet::step_args(&args, &a);
        judge.pop(); // --line: the webhook answers with the line whatever it is given
        judge.extend(["--webhook".into(), format!("0.0.0.0:{WEBHOOK_PORT}")]);
        let text = crate::render::analysis_step::flagger(&judge, &a.image, WEBHOOK_PORT);
        super::write_file(path, "--flagger", &text)?;
        println!(
            "wrote {}: a Deployment and Service serving this judgement as a webhook from {}, and the Flagger Canary's webhook entry that calls it",
            path.display(),
            a.image
        );
        return place(&a, Rollout::Flagger);
    }
    if let Some(addr) = a.webhook {
        return fleet::webhook::serve(&a, addr);
    }
    let r = if a.switchback {
        fleet::switchback::run(&a)?
    } else {
        let p = fleet::plan(&a, fleet::now())?;
        if a.follow {
            fleet::follow(&a, &p, &mut |line| crate::eprintln_safe!("{line}"))?
        } else {
            fleet::look(&a, &p, p.to, 1)?
        }
    };
    let code = fleet::policy(&a, &r);
    print(&a, &r, code)?;
    Ok(code)
}

/// The rollout's change beside its analysis step: the placement patch, to --placement or
/// printed.
fn place(a: &JudgeArgs, engine: Rollout) -> anyhow::Result<i32> {
    let text = crate::render::analysis_step::placement(&a.node_label, &a.toleration, engine);
    match &a.placement {
        Some(path) => {
            super::write_file(path, "--placement", &text)?;
            println!(
                "wrote {}: the pod-template change the rollout makes (its nodes: {}={})",
                path.display(),
                a.node_label.0,
                a.node_label.1
            );
        }
        None => print!("{text}"),
    }
    Ok(0)
}

/// The port the Flagger webhook's container listens on.
const WEBHOOK_PORT: u16 = 8080;

fn print(a: &JudgeArgs, r: &JudgeResult, code: i32) -> anyhow::Result<()> {
    if a.json.json {
        super::print_json(r)
    } else if a.line {
        println!("{}", crate::render::analysis_step::line(r, code));
        Ok(())
    } else {
        print!("{}", crate::render::judge::text(r, a.verbose));
        Ok(())
    }
}
