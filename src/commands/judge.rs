//! `hugelab judge`: a huge-page change judged on live hosts from Prometheus, or by switchback
//! on this one. Parse (clap, into the engine's [`JudgeArgs`]), run the fleet engine
//! (`crate::fleet`), render, exit code by the overall verdict.

use crate::fleet::{self, JudgeArgs, exit_code};
use crate::model::judge::JudgeResult;

pub fn run(a: JudgeArgs) -> anyhow::Result<i32> {
    if let Some(path) = &a.analysis_template {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let text =
            crate::render::analysis_step::analysis_template(&analysis_args(&args, &a), &a.image);
        std::fs::write(path, text).map_err(|e| {
            super::UsageError(format!(
                "--analysis-template {}: {e}; give a path you can write",
                path.display()
            ))
        })?;
        println!(
            "wrote {}: an Argo Rollouts AnalysisTemplate (argoproj.io/v1alpha1) whose Job runs this judgement in {}",
            path.display(),
            a.image
        );
        return Ok(0);
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
    // --fail-on: only the verdicts named fail; the rest pass.
    let code = match a.fail_on.is_empty() || a.fail_on.iter().any(|f| f.is(r.overall)) {
        true => exit_code(r.overall),
        false => 0,
    };
    print(&a, &r, code)?;
    Ok(code)
}

/// The judgement's own command line for an analysis step: this one's arguments without what
/// only writing the template means (`--analysis-template`, `--image`, `--json`, `--line`),
/// with `--line` and, unless given, `--fail-on worse,flagged`.
fn analysis_args(args: &[String], a: &JudgeArgs) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "--analysis-template" | "--image" => {
                it.next();
            }
            "--json" | "--line" => {}
            w if w.starts_with("--analysis-template=") || w.starts_with("--image=") => {}
            _ => out.push(w.clone()),
        }
    }
    if a.fail_on.is_empty() {
        out.extend(["--fail-on".into(), "worse,flagged".into()]);
    }
    out.push("--line".into());
    out
}

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
