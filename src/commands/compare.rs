//! `hugelab compare A B`: two stored runs or exported files compared unpaired (the same
//! benchmark on two machines, or before and after), with the Hodges–Lehmann shift and its
//! Mann–Whitney interval.

use super::print_json;
use crate::options::{Database, Decision, Json, MetricChoice};
use crate::stored_runs::compare_runs;
use clap::Args;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A stored run id or an exported JSON file
    pub a: String,
    /// A stored run id or an exported JSON file
    pub b: String,
    #[command(flatten)]
    pub metric: MetricChoice,
    #[command(flatten)]
    pub decision: Decision,
    #[command(flatten)]
    pub store: Database,
    #[command(flatten)]
    pub out: Json,
}

pub fn run(a: CompareArgs) -> anyhow::Result<i32> {
    let c = compare_runs(
        &a.a,
        &a.b,
        &a.metric.metric,
        a.metric.higher,
        a.decision.effect,
        a.decision.confidence,
        &a.store.db,
    )?;
    if a.out.json {
        print_json(&c)?;
    } else {
        for l in crate::render::summary::compare_answer(&c) {
            println!("{l}");
        }
        println!();
        print!("{}", crate::render::compare::compare_grid(&c).terminal());
    }
    Ok(0)
}
