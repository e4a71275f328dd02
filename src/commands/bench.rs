//! `hugelab bench`: what each page backing does on this machine. Parse (clap, into the
//! engine's [`BenchArgs`]), run the bench engine (`crate::bench`), add the TLB reach last
//! measured here, render, exit code.

use super::print_json;
use crate::bench::BenchArgs;

pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    let res = crate::bench::conduct(&a)?;
    if a.out.json {
        print_json(&res)?;
    } else {
        print!("{}", crate::render::bench::render(&res));
    }
    Ok(0)
}
