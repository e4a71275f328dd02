//! `hugelab judge`: a huge-page change judged on live hosts from Prometheus, or by switchback
//! on this one. Parse (clap, into the engine's [`JudgeArgs`]), run the fleet engine
//! (`crate::fleet`), render, exit code by the overall verdict.

use crate::fleet::{self, JudgeArgs, exit_code};
use crate::model::judge::JudgeResult;

pub fn run(a: JudgeArgs) -> anyhow::Result<i32> {
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
    print(&a, &r)?;
    Ok(exit_code(r.overall))
}

fn print(a: &JudgeArgs, r: &JudgeResult) -> anyhow::Result<()> {
    if a.json.json {
        super::print_json(r)
    } else {
        print!("{}", crate::render::judge::text(r, a.verbose));
        Ok(())
    }
}
