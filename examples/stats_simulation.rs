//! Print the statistics engine's simulation study (coverage, false positives under sequential
//! stopping, runs to a verdict, power lost to outliers):
//!   cargo run --release --example stats_simulation -- [REPS]   (default 4000)

fn main() {
    let reps = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4000);
    let t = std::time::Instant::now();
    let rows = hugelab::analyze::simulate::study(reps);
    println!("{:<78} {:>10}  {:<12} ok", "study", "measured", "target");
    for r in &rows {
        println!(
            "{:<78} {:>10.4}  {:<12} {}",
            r.study,
            r.measured,
            r.target,
            if r.pass { "yes" } else { "NO" }
        );
    }
    println!("{reps} replications, {:.1} s", t.elapsed().as_secs_f64());
    if rows.iter().any(|r| !r.pass) {
        std::process::exit(1);
    }
}
