//! The docs' study tables that say they are regenerated: `scripts/study/rows.sh` (services) and
//! `scripts/study/chase.sh rows` (the TLB model against `bench chase`) print them from the
//! stored runs in `docs/study/`; the services tables are exactly that output (both ways), and
//! every chase row is in the docs as it is, so a figure there is the record's, read back by
//! this version.

use crate::common;
use std::path::Path;

/// Each stored set of runs has its table in docs/services-study.md between `rows.sh` markers
/// naming it, and that table is exactly what `scripts/study/rows.sh` prints from it: a row typed
/// there by hand, one left out, or a marker naming no stored runs fails.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn every_study_table_is_printed_from_its_stored_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/services-study.md")).unwrap();
    let mut stored: Vec<_> = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.to_string_lossy().ends_with(".db.xz") && !is_chase(p) && !is_tlb(p) && !is_redis(p)
        })
        .collect();
    stored.sort();
    assert!(!stored.is_empty(), "no stored runs in docs/study");
    for db in &stored {
        let text = script(root, "rows.sh", &[db.as_os_str()], &[]);
        assert!(text.lines().count() > 2, "{}: no rows", db.display());
        let source = format!("docs/study/{}", db.file_name().unwrap().to_string_lossy());
        if let Err(e) = common::quoted_exactly(&docs, "rows.sh", &source, &text) {
            panic!("docs/services-study.md: {e}");
        }
    }
    let marked = docs.matches("<!-- rows.sh: ").count();
    assert_eq!(
        marked,
        stored.len(),
        "a rows.sh marker naming no stored runs"
    );
    // No table stands outside the markers: a table no script prints is typed by hand.
    let mut inside = false;
    for (n, line) in docs.lines().enumerate() {
        inside = (inside || line.starts_with("<!-- rows.sh: ")) && line != "<!-- /rows.sh -->";
        assert!(
            inside || !line.starts_with('|'),
            "docs/services-study.md:{}: a table row outside the rows.sh markers: {line}",
            n + 1
        );
    }
}

/// docs/services-study.md's Redis answers are the stored runs' own, as `hugelab results show`
/// prints them (`scripts/study/redis.sh show`): each run of the stored file is quoted exactly
/// between `results-show` markers naming it, and a fenced block outside such markers holds only a
/// command (an output typed, or kept from a run that was not stored, fails).
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn every_quoted_answer_is_a_stored_runs_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/services-study.md")).unwrap();
    let stored: Vec<_> = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_redis(p))
        .collect();
    assert!(!stored.is_empty(), "no stored Redis runs in docs/study");
    let mut quoted = 0;
    for db in &stored {
        let name = format!("docs/study/{}", db.file_name().unwrap().to_string_lossy());
        let (_dir, unpacked) = unpacked(db);
        let list = common::hugelab_stdout(["results", "list", "--json", "--db", &unpacked]);
        let runs: Vec<serde_json::Value> = serde_json::from_str(&list).unwrap();
        for run in &runs {
            let id = run["run"]["id"].to_string();
            let text = script(
                root,
                "redis.sh",
                &["show".as_ref(), db.as_os_str(), id.as_ref()],
                &[],
            );
            assert!(text.starts_with(&format!("run {id} (")), "{text}");
            let source = format!("{name} run {id}");
            if let Err(e) = common::quoted_exactly(&docs, "results-show", &source, &text) {
                panic!("docs/services-study.md, {source}: {e}");
            }
            quoted += 1;
        }
    }
    assert_eq!(
        docs.matches("<!-- results-show: ").count(),
        quoted,
        "a results-show marker naming no stored run"
    );
    let outputs = outputs_outside_quotes(&docs);
    assert!(
        outputs.is_empty(),
        "docs/services-study.md, lines {outputs:?}: an output outside the results-show markers (quote a stored run's)"
    );
    // The rule itself: a command passes, what it printed fails, inside a quote it passes.
    let cmd = "```\nhugelab run \\\n  -- true\n```\n";
    let printed = "```\n$ hugelab run -- true\nb vs a  wall_s +1% INCONCLUSIVE\n```\n";
    assert!(outputs_outside_quotes(cmd).is_empty());
    assert_eq!(outputs_outside_quotes(printed), [4]);
    let quoted = format!("<!-- results-show: x run 1 -->\n{printed}<!-- /results-show -->\n");
    assert!(outputs_outside_quotes(&quoted).is_empty());
}

/// The lines (1-based, each block's closing fence) of the fenced blocks outside `results-show`
/// quotes that hold more than one command: each line but a command's last continues with `\`.
fn outputs_outside_quotes(docs: &str) -> Vec<usize> {
    let (mut quote, mut block, mut found) = (false, None::<Vec<&str>>, Vec::new());
    for (n, line) in docs.lines().enumerate() {
        quote =
            (quote || line.starts_with("<!-- results-show: ")) && line != "<!-- /results-show -->";
        match (&mut block, line.starts_with("```")) {
            (None, true) if !quote => block = Some(Vec::new()),
            (Some(lines), true) => {
                if lines.iter().rev().skip(1).any(|l| !l.ends_with('\\')) {
                    found.push(n + 1);
                }
                block = None;
            }
            (Some(lines), false) => lines.push(line),
            _ => {}
        }
    }
    found
}

/// Every stored study is a database an earlier hugelab wrote (its commit in each run's note):
/// each run's plan reads whole in this version, and its answer is shown. A field this version
/// cannot read is named in the note, never dropped unsaid: one planted into a copy is.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn every_earlier_stored_version_reads_whole_and_a_field_it_cannot_read_is_named() {
    common::lowest_priority();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dbs = std::fs::read_dir(root.join("docs/study")).unwrap();
    let mut read = 0;
    for xz in dbs.map(|e| e.unwrap().path()) {
        if !xz.to_string_lossy().ends_with(".db.xz") {
            continue;
        }
        let (_dir, db) = unpacked(&xz);
        let runs = common::hugelab_json(["results", "list", "--json", "--db", &db]);
        for r in runs.as_array().unwrap() {
            let id = r["run"]["id"].to_string();
            let shown = common::hugelab_json(["results", "show", &id, "--json", "--db", &db]);
            assert!(r["hugelab_version"].is_string(), "{}: {r}", xz.display());
            assert_eq!(
                shown["run"]["unread"],
                serde_json::Value::Null,
                "{}: run {id}",
                xz.display()
            );
            // Re-analysed, every trial's evidence is read whole too.
            let again = common::hugelab_json([
                "results",
                "show",
                &id,
                "--json",
                "--confidence",
                "0.9",
                "--db",
                &db,
            ]);
            assert_eq!(
                again["unread"],
                serde_json::Value::Null,
                "{}: run {id}",
                xz.display()
            );
            read += 1;
        }
        if is_redis(&xz) {
            let c = rusqlite::Connection::open(&db).unwrap();
            let plan: String = c
                .query_row("SELECT plan FROM runs WHERE id = 1", [], |r| r.get(0))
                .unwrap();
            let mut plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
            plan["planted_field"] = serde_json::json!({"from": "a later version"});
            plan["system"] = serde_json::json!("another shape");
            c.execute("UPDATE runs SET plan = ?1 WHERE id = 1", [plan.to_string()])
                .unwrap();
            let out = common::hugelab_stdout(["results", "show", "1", "--db", &db]);
            assert!(
                out.contains("this version could not read 2: planted_field, system"),
                "{out}"
            );
            // A trial's evidence with a field of a later version and one in another shape:
            // named where the trials are analysed again, and the analysis goes on without them.
            let ev: String = c
                .query_row(
                    "SELECT evidence FROM trials WHERE run_id = 1 ORDER BY id LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            let mut ev: serde_json::Value = serde_json::from_str(&ev).unwrap();
            assert!(
                ev["server"].is_object(),
                "a service's trial holds its server's"
            );
            ev["planted_field"] = serde_json::json!(5);
            ev["server"] = serde_json::json!("another shape");
            c.execute(
                "UPDATE trials SET evidence = ?1 WHERE id = (SELECT min(id) FROM trials WHERE run_id = 1)",
                [ev.to_string()],
            )
            .unwrap();
            let args = ["results", "show", "1", "--confidence", "0.9", "--db", &db];
            let out = common::hugelab_stdout(args);
            let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                words.contains(
                    "of their stored evidence, this version could not read 2: planted_field, server"
                ),
                "{out}"
            );
        }
    }
    assert!(read >= 20, "{read} stored runs read");
}

/// A stored `.db.xz` unpacked into a temporary directory (removed when it is dropped).
fn unpacked(xz: &Path) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join(xz.file_stem().unwrap());
    let raw = std::process::Command::new("xz")
        .arg("-dc")
        .arg(xz)
        .output()
        .unwrap();
    assert!(raw.status.success(), "xz -dc {}", xz.display());
    std::fs::write(&out, raw.stdout).unwrap();
    let path = out.display().to_string();
    (dir, path)
}

/// docs/statistics.md states no measured figure of its own: outside the quoted studies every
/// figure with a decimal point is one the stored studies print (a rate as a percent: `96.5%` is
/// `0.9650` rounded), one of the method's constants the test computes (`99.2%`, the most 8
/// blocks can exclude zero at: 1 − 2⁻⁷; `99.67%`, Holm's first step over three arms at 99%), or
/// an example of notation or a published design's parameter listed here with its reason.
#[test]
fn the_statistics_prose_quotes_no_figure_the_studies_do_not_print() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/statistics.md")).unwrap();
    let mut printed = String::new();
    for f in ["docs/study/simulation.txt", "docs/study/forecast.txt"] {
        printed += &std::fs::read_to_string(root.join(f)).unwrap();
    }
    let computed = [1.0 - 2f64.powi(-7), 1.0 - 0.01 / 3.0];
    let stray = stray_figures(&docs, &printed, &computed, NOT_MEASURED);
    assert!(
        stray.is_empty(),
        "docs/statistics.md states figures no stored study prints (quote the row, or run the study): {stray:#?}"
    );
    // The check itself: a figure typed beside the quoted study fails, its rounding passes.
    let planted = "The known process held 0.615 of its level.\n";
    assert_eq!(stray_figures(planted, &printed, &computed, &[]).len(), 1);
    let rounded = "The known process: 0.912 of its runs (91.2%).\n";
    assert!(stray_figures(rounded, "x 0.9123 y", &[], &[]).is_empty());
}

/// docs/services-study.md's prose reads its figures off the stored runs: every figure with a
/// decimal point outside the quotes is one that `hugelab results show` prints for a run stored
/// in docs/study/ (its answer, design, notes and tables) or one of the page's quoted rows.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn the_services_study_prose_reads_its_figures_off_the_stored_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/services-study.md")).unwrap();
    // The page's own quotes (its rows.sh tables hold the A/As' half-widths and forecasts), and
    // every stored run's whole answer.
    let mut printed: String = docs
        .lines()
        .scan(false, |inside, line| {
            let opens = QUOTES
                .iter()
                .any(|q| line.starts_with(&format!("<!-- {q}: ")));
            let closes = QUOTES
                .iter()
                .any(|q| line.starts_with(&format!("<!-- /{q}")));
            *inside = (*inside || opens) && !closes;
            Some(if *inside {
                format!("{line}\n")
            } else {
                String::new()
            })
        })
        .collect();
    for entry in std::fs::read_dir(root.join("docs/study")).unwrap() {
        let db = entry.unwrap().path();
        if !db.to_string_lossy().ends_with(".db.xz") || is_chase(&db) || is_tlb(&db) {
            continue;
        }
        let (_dir, unpacked) = unpacked(&db);
        let list = common::hugelab_stdout(["results", "list", "--json", "--db", &unpacked]);
        let runs: Vec<serde_json::Value> = serde_json::from_str(&list).unwrap();
        for run in &runs {
            let id = run["run"]["id"].to_string();
            printed += &common::hugelab_stdout(["results", "show", &id, "--db", &unpacked]);
        }
    }
    let versions = [("6.18", "a Linux version"), ("10.11", "a MariaDB version")];
    let stray = stray_figures(&docs, &printed, &[], &versions);
    assert!(
        stray.is_empty(),
        "docs/services-study.md states figures no stored run prints: {stray:#?}"
    );
}

/// Figures docs/statistics.md may state that no study measures, each with why.
const NOT_MEASURED: &[(&str, &str)] = &[
    (
        "0.63",
        "how a ratio is printed (`0.63×`), an example of notation",
    ),
    (
        "99.61%",
        "the level the exact signed-rank interval's ranks reach at 10 blocks",
    ),
    (
        "99.5%",
        "the level of Holm's second step over two contrasts at 99%",
    ),
    ("1.1%", "the published comparison's effect"),
    ("0.9", "the published comparison's within-block correlation"),
    ("99.99%", "the published comparison's level"),
];

/// The markers of what the docs quote from a script's output.
const QUOTES: [&str; 4] = [
    "simulation-study",
    "forecast-study",
    "rows.sh",
    "results-show",
];

/// The decimal figures of `docs` outside its quoted studies that `printed` does not hold
/// (rounded), that are not `computed` and not listed in `allowed`.
fn stray_figures(
    docs: &str,
    printed: &str,
    computed: &[f64],
    allowed: &[(&str, &str)],
) -> Vec<String> {
    let numbers = |text: &str| -> Vec<(String, f64, usize, bool)> {
        let mut out = Vec::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if !b[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            let tok = text[start..i].trim_end_matches('.');
            if let Some((_, frac)) = tok.split_once('.')
                && let Ok(v) = tok.parse::<f64>()
                && (start == 0 || !b[start - 1].is_ascii_alphanumeric())
            {
                let pct = b.get(start + tok.len()) == Some(&b'%');
                out.push((
                    format!("{tok}{}", if pct { "%" } else { "" }),
                    v,
                    frac.len(),
                    pct,
                ));
            }
        }
        out
    };
    let held: Vec<f64> = numbers(printed).into_iter().map(|(_, v, ..)| v).collect();
    let mut inside = false;
    let mut stray = Vec::new();
    for line in docs.lines() {
        if QUOTES
            .iter()
            .any(|q| line.starts_with(&format!("<!-- {q}: ")))
        {
            inside = true;
        }
        if QUOTES
            .iter()
            .any(|q| line.starts_with(&format!("<!-- /{q}")))
        {
            inside = false;
            continue;
        }
        if inside {
            continue;
        }
        for (tok, v, decimals, pct) in numbers(line) {
            let half = 0.5 * 10f64.powi(-(decimals as i32));
            let near = |x: f64| (x - v).abs() <= half + 1e-12;
            let as_printed = |x: f64| near(x) || (pct && near(x * 100.0));
            let ok = held.iter().any(|x| as_printed(*x))
                || computed.iter().any(|x| as_printed(*x))
                || allowed.iter().any(|(a, _)| *a == tok);
            if !ok {
                stray.push(format!("{tok}: {}", line.trim()));
            }
        }
    }
    stray
}

/// The table check fails on a row typed into the docs by hand and on a printed row left out.
#[test]
fn a_study_table_with_a_row_typed_or_left_out_fails() {
    let printed = "| run | tps |\n|---|---|\n| 1 | +0.2% |\n| 2 | −0.1% |\n";
    let docs = |table: &str| {
        format!("text\n<!-- rows.sh: docs/study/x.db.xz -->\n{table}<!-- /rows.sh -->\n")
    };
    let check = |d: &str| common::quoted_exactly(d, "rows.sh", "docs/study/x.db.xz", printed);
    assert_eq!(check(&docs(printed)), Ok(()));
    let typed = check(&docs(
        "| run | tps |\n|---|---|\n| 1 | +0.2% |\n| 0 | −0.21% |\n| 2 | −0.1% |\n",
    ))
    .unwrap_err();
    assert!(typed.contains("| 0 | −0.21% |"), "{typed}");
    let left = check(&docs("| run | tps |\n|---|---|\n| 1 | +0.2% |\n")).unwrap_err();
    assert!(left.contains("| 2 | −0.1% |"), "{left}");
    assert!(check("no markers").is_err());
}

/// A study script's output, run with this build's hugelab; its failure fails the test.
fn script(root: &Path, name: &str, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new("bash")
        .arg(root.join("scripts/study").join(name))
        .args(args)
        .envs(env.iter().copied())
        .env("HUGELAB", env!("CARGO_BIN_EXE_hugelab"))
        .current_dir(root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn is_chase(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().contains("-chase"))
}

fn is_redis(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().contains("-redis"))
}

fn is_tlb(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().contains("-tlb"))
}

/// docs/bench.md's study of `bench tlb` across runs is exactly what `scripts/study/tlb.sh rows`
/// prints from the stored runs (both ways): each run's range and whether every range overlaps
/// every other, as the runs stored them.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn the_tlb_study_table_is_printed_from_its_stored_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/bench.md")).unwrap();
    let stored: Vec<_> = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_tlb(p))
        .collect();
    assert!(
        !stored.is_empty(),
        "no stored bench tlb study in docs/study"
    );
    for db in &stored {
        let text = script(root, "tlb.sh", &["rows".as_ref(), db.as_os_str()], &[]);
        // A heading, its rule, ten runs or more, and the overlap line.
        assert!(text.lines().count() >= 13, "{text}");
        let source = format!("docs/study/{}", db.file_name().unwrap().to_string_lossy());
        if let Err(e) = common::quoted_exactly(&docs, "tlb.sh", &source, &text) {
            panic!("docs/bench.md: {e}");
        }
    }
}

/// The stored study's runs, read back as a new `bench tlb` on their host reads them (the store's
/// runs of this host), set each against all the others by the code `bench tlb` runs: every
/// range overlaps the rest, in the common span docs/bench.md quotes, so the study supports its
/// level across runs; a planted range an hour away from them is named as apart.
#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs xz (apt-get install xz-utils; .ci/run does)"
)]
fn the_tlb_studys_ranges_all_overlap_as_bench_tlb_sets_them_against_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let study = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| is_tlb(p))
        .expect("a stored bench tlb study in docs/study");
    let (_dir, db) = unpacked(&study);
    // Their host is this one: the store reads the runs of the host it runs on.
    let host = hugelab::probe::cpu::hostname(&hugelab::probe::Root::system()).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE runs SET host = ?1", [&host]).unwrap();
    drop(conn);
    let store = hugelab::store::Store::open_existing(Path::new(&db)).unwrap();
    let runs = store.measured_tlbs().unwrap();
    assert!(
        runs.len() >= hugelab::model::tlb::STUDY_RUNS,
        "{}",
        runs.len()
    );
    let (earlier, last) = runs.split_at(runs.len() - 1);
    let a = hugelab::analyze::tlb::across(earlier, &last[0].reach).unwrap();
    assert_eq!(a.runs.len(), runs.len());
    assert_eq!(
        (a.common, a.apart),
        (Some((1024, Some(1536))), None),
        "{a:#?}"
    );
    let docs = std::fs::read_to_string(root.join("docs/bench.md")).unwrap();
    assert!(
        docs.contains("all 12 hold 1,024–1,536 entries"),
        "docs/bench.md"
    );
    // A run whose range lies below all of theirs.
    let mut apart = last[0].reach.clone();
    let sweep = apart.headline.unwrap();
    apart.sweeps[sweep].located.as_mut().unwrap().between = (256, Some(512));
    let a = hugelab::analyze::tlb::across(&runs, &apart).unwrap();
    assert_eq!(a.common, None);
    let (i, j) = a.apart.unwrap();
    assert_eq!(a.runs[j].run, None, "{a:#?}");
    assert!(a.runs[i].between.0 >= 512, "{a:#?}");
}

#[test]
#[cfg_attr(
    missing_jq,
    ignore = "needs jq and xz (apt-get install jq xz-utils; .ci/run does)"
)]
fn the_chase_table_is_printed_from_its_stored_benches() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/measurements.md")).unwrap();
    let stored: Vec<_> = std::fs::read_dir(root.join("docs/study"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_chase(p))
        .collect();
    assert!(!stored.is_empty(), "no stored chase benches in docs/study");
    for db in stored {
        let text = script(root, "chase.sh", &["rows".as_ref(), db.as_os_str()], &[]);
        // The heading names the machine and the reach; eleven sizes follow.
        assert_eq!(text.lines().count(), 13, "{text}");
        for row in text.lines() {
            assert!(
                docs.contains(row),
                "{}: this row is not in docs/measurements.md as printed:\n{row}",
                db.display()
            );
        }
    }
}

/// `scripts/study/aa.sh` makes the A/A rows again: a short A/A on a small cluster, its row
/// printed from the stored run in the columns of docs/services-study.md's table.
#[test]
#[cfg_attr(
    any(unprivileged, missing_postgres, missing_jq),
    ignore = "needs root, PostgreSQL and jq (.ci/run installs them)"
)]
fn the_aa_script_measures_and_prints_its_rows() {
    require_root!();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("aa.db");
    let text = script(
        root,
        "aa.sh",
        &[db.as_os_str(), "5m".as_ref()],
        // A burst the run would calibrate from the client's start-up cost grows on a busy
        // machine (and a row's claim is the same at any length): fixed at 1 s here, and the run
        // ends after six blocks, not at a time, so a loaded machine makes it slower, not
        // shorter. Its hold on the settings (a reader's) keeps any test that changes them
        // waiting, so it is kept short.
        &[("SCALE", "1"), ("BURST", "1"), ("BLOCKS", "6")],
    );
    let docs = std::fs::read_to_string(root.join("docs/services-study.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(docs.contains(lines[0]), "the table's heading: {}", lines[0]);
    assert_eq!(lines.len(), 3, "one A/A, one contrast: {text}");
    let row = lines[2];
    assert_eq!(row.matches('|').count(), 13, "{row}");
    assert!(
        row.contains(" | b vs a tps ") && row.contains(" CPUs, "),
        "{row}"
    );
}
