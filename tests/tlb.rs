//! The TLB without a PMU: `bench tlb` finds the reach by timing on this machine (and stores
//! it, and `status` shows it); `inspect --hot` finds a process's hot memory — a loop over a
//! known number of pages beside memory it touched once — and holds it against that reach.

mod common;

use std::io::BufRead;
use std::process::{Command, Stdio};

/// A process that touches `cold` pages once, then `hot` pages in a loop forever; it prints
/// "ready" once the loop is about to start.
const TOUCHER: &str = "import mmap, sys\nhot, cold = int(sys.argv[1]), int(sys.argv[2])\nc = mmap.mmap(-1, cold * 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\nfor i in range(0, cold * 4096, 4096):\n    c[i] = 1\nh = mmap.mmap(-1, hot * 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\nprint('ready', flush=True)\nwhile True:\n    for i in range(0, hot * 4096, 4096):\n        h[i] = 1\n";

struct Kill(std::process::Child);
impl Drop for Kill {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn toucher(hot: u64, cold: u64) -> Kill {
    let mut child = Command::new("python3")
        .args(["-c", TOUCHER, &hot.to_string(), &cold.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    Kill(child)
}

#[test]
fn bench_tlb_finds_a_reach_stores_it_and_a_hot_set_is_held_against_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let db = db.to_str().unwrap();
    // Spans of 16, 64, 4,096 and 16,384 pages; 4k against THP (madvise: the region asks).
    // Under another CPU-bound process the 16 MiB span's interval can stay wide after 15
    // rounds: the bench is repeated with more rounds (a narrower interval), never timed.
    let bench = |rounds: &str| {
        common::hugelab_json([
            "bench",
            "tlb",
            "-s",
            "64K,256K,16M,64M",
            "-b",
            "4k,thp",
            "-r",
            rounds,
            "--json",
            "--db",
            db,
            "-q",
        ])
    };
    let resolved = |r: &serde_json::Value| {
        let s = &r["tlb"]["sweeps"][0];
        s["points"][2]["ratio"]["hi"]
            .as_f64()
            .is_some_and(|h| h < 0.95)
            && s["knee"].is_array()
    };
    let mut r = bench("15");
    // Each bench is stored: the reach the answers cite is the last one's run.
    let mut run = 1;
    for rounds in ["40", "90"] {
        if resolved(&r) {
            break;
        }
        r = bench(rounds);
        run += 1;
    }
    let t = &r["tlb"];
    let sweep = &t["sweeps"][0];
    assert_eq!(sweep["backing"], "thp", "{t}");
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 4, "{t}");
    assert_eq!(points[0]["pages"], 16);
    // 16 pages fit any TLB: THP is not resolved faster (its interval reaches 0.95; these
    // 2 ns accesses are noisy under load, so no closer claim). 4,096 pages (16 MiB) are past
    // the reach of this machine's second-level TLB (3,072 entries): THP is faster by more
    // than 5%, with the bench's confidence. 16,384 pages are past it too, but their accesses
    // go to memory and under load their interval can be as wide as [0.46, 1.62] (seen in CI):
    // all that is asserted there is that they do not fit with confidence.
    let lo = |i: usize| points[i]["ratio"]["lo"].as_f64().unwrap();
    assert!(points[0]["ratio"]["hi"].as_f64().unwrap() >= 0.95, "{t}");
    assert!(points[2]["ratio"]["hi"].as_f64().unwrap() < 0.95, "{t}");
    assert!(lo(3) < 0.95, "{t}");
    let knee = sweep["knee"].as_array().unwrap();
    let (lo, hi) = (knee[0].as_u64().unwrap(), knee[1].as_u64().unwrap());
    assert!(lo >= 16 && hi <= 16_384 && lo < hi, "{knee:?}");
    // Every level the timing resolved is listed, the knee first, each further out than the
    // one before, with its entries and what a miss there costs.
    let levels = sweep["levels"].as_array().unwrap();
    assert_eq!(levels[0]["entries"], sweep["knee"], "{levels:?}");
    for w in levels.windows(2) {
        assert!(
            w[1]["entries"][0].as_u64() >= w[0]["entries"][1].as_u64(),
            "{levels:?}"
        );
    }
    assert!(levels.iter().all(|l| l["miss_ns"]["point"].is_number()));
    assert!(points[2]["extra_ns"]["lo"].as_f64().unwrap() > 0.0, "{t}");
    assert!(!t["geometry"]["source"].as_str().unwrap().is_empty());
    assert_eq!(
        t["hypervisor"].as_bool().unwrap(),
        std::fs::read_to_string("/proc/cpuinfo")
            .unwrap()
            .contains(" hypervisor")
    );

    // The knee predicts `bench chase` (every line of the region, in random order): below it
    // huge pages are not resolved faster, far past it (16×) they are.
    let below = lo.clamp(16, 512) * 4096;
    // Far past it: chase is memory-bound there and noisy on this VM (at 64 MiB a CI run once
    // left THP unresolved, [0.91, 1.37]); at 256 MiB the gap is about 30%.
    let above = (hi * 16).max(65_536) * 4096;
    let sizes = format!("{below},{above}");
    let c = common::hugelab_json([
        "bench",
        "chase",
        "-s",
        &sizes,
        "-b",
        "4k,thp",
        "-r",
        "21",
        "--confidence",
        "0.99",
        "--json",
        "--no-save",
        "-q",
    ]);
    let cell = |size: u64| {
        c["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["size"] == size && x["backing"] == "thp")
            .unwrap()["vs_baseline"]
            .clone()
    };
    let (b, a) = (cell(below), cell(above));
    // Below the knee THP is not faster by more than 5% (the sweep's own bar for "fits",
    // above): a 1-3% edge there is real on this VM some days (fewer page-walk cache lines)
    // and was resolved twice in one session at [0.93, 0.99].
    assert!(b["hi"].as_f64().unwrap() >= 0.95, "below the knee: {b}");
    // Past it THP is faster: seen from 0.65 to 0.90 on this VM from day to day (the host's
    // own backing of guest memory moves it), so the claim is the direction with a margin, in
    // this one run, not a resolved interval.
    let (pa, pb) = (a["point"].as_f64().unwrap(), b["point"].as_f64().unwrap());
    assert!(
        pa < 0.97 && pa < pb - 0.03,
        "past the knee: {a}, below it: {b}"
    );

    // Once a reach is stored, bench and run say why in its terms, labelled as a model.
    let text = common::hugelab_stdout([
        "bench", "chase", "-s", "64M", "-b", "4k,thp", "-r", "3", "--db", db, "-q",
    ]);
    // (Lines wrap under a hanging indent: read them as one.)
    let flat = |t: &str| t.replace("\n    ", " ").replace("\n  ", " ");
    assert!(
        flat(&text).contains(&format!(
            "why (a model: the 4 KiB TLB reach bench tlb measured here, run {run},"
        )),
        "{text}"
    );
    assert!(
        flat(&text).contains("16,384 TLB entries on 4k's pages"),
        "{text}"
    );
    // (Trials of a second or more, so the sampler's page-table walks see the peak.)
    let text = common::hugelab_stdout([
        "run",
        "-a",
        "4k=process.thp=off",
        "-a",
        "thp=malloc=thp",
        "--blocks",
        "2",
        "--db",
        db,
        "--",
        "sysbench",
        "memory",
        "--memory-block-size=256M",
        "--memory-total-size=4G",
        "run",
    ]);
    // Two blocks resolve no effect here: the model then says what it predicts, not why.
    let resolved = text
        .lines()
        .next()
        .is_some_and(|l| l.contains("FASTER") || l.contains("SLOWER"));
    let head = if resolved {
        "why (a model: "
    } else {
        "what the TLB model predicts (no effect on wall_s was resolved, so it explains none; a model: "
    };
    assert!(
        flat(&text).contains(&format!(
            "{head}the 4 KiB TLB reach bench tlb measured here, run {run},"
        )),
        "{text}"
    );
    assert!(
        flat(&text).contains("each arm's memory that matters (up to "),
        "{text}"
    );

    // The text answers with the reach first.
    let text = common::hugelab_stdout([
        "bench",
        "tlb",
        "-s",
        "64K,16M",
        "-b",
        "4k,thp",
        "-r",
        "11",
        "--no-save",
        "-q",
    ]);
    assert!(text.starts_with("TLB, from timing:"), "{text}");
    assert!(text.lines().nth(1).unwrap().contains("reach"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");

    // results list names the run by what was run.
    let list = common::hugelab_stdout(["results", "--db", db, "list"]);
    assert!(
        list.lines()
            .any(|l| l.contains(&format!(" {run} ")) && l.contains("hugelab bench tlb")),
        "{list}"
    );
    // status shows what was stored.
    let status = common::hugelab_stdout(["status", "--db", db]);
    assert!(
        status.contains(&format!("TLB (measured by bench tlb, run {run}, ")),
        "{status}"
    );
    assert!(
        status.contains(&format!(
            "reach about {}",
            hugelab::render::summary::thousands(lo as usize)
        )),
        "{status}"
    );

    // A process looping over 25,600 pages (100 MiB) beside 102,400 it touched once (400 MiB):
    // its hot set is its loop within 10%, not its resident memory.
    let p = toucher(25_600, 102_400);
    let pid = p.0.id().to_string();
    let r = common::hugelab_json(["inspect", "--hot", "3s", &pid, "--json", "--db", db]);
    let h = &r["hot"][0];
    let hot = h["hot"].as_f64().unwrap();
    let want = 25_600.0 * 4096.0;
    assert!((hot / want - 1.0).abs() < 0.10, "hot {hot} vs {want}: {h}");
    assert!(h["resident"].as_f64().unwrap() > 4.5 * want, "{h}");
    let at_4k = h["entries"]["at_4k"].as_u64().unwrap();
    assert!((at_4k as f64 / 25_600.0 - 1.0).abs() < 0.10, "{h}");
    assert_eq!(r["tlb"]["measured"]["run"], run);
    let text = common::hugelab_stdout(["inspect", "--hot", "2s", &pid, "--db", db]);
    assert!(
        text.contains(&format!(
            "against the reach bench tlb measured here (run {run})"
        )),
        "{text}"
    );
    assert!(
        text.contains("perturb") || text.contains("idle to reclaim"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    // Without a measured reach in the database it looked in, it says which one.
    let elsewhere = tempfile::tempdir().unwrap();
    let none = elsewhere.path().join("none.db").display().to_string();
    let text = common::hugelab_stdout(["inspect", "--hot", "1s", &pid, "--db", &none]);
    assert!(
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains(&format!("no TLB reach measured on this machine in {none}")),
        "{text}"
    );
    drop(p);

    // tlb lays its region out on its own: not beside another workload.
    let err = common::hugelab_exits(["bench", "tlb", "chase", "--no-save"], 2);
    assert!(err.is_empty());
}
