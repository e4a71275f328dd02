//! The command line as a user meets it: help on every option, completions for the shells,
//! the man page, the answer-first output within 100 columns, and README's commands real.

use crate::common;
use assert_cmd::Command;
use clap::CommandFactory;
use hugelab::cli::Cli;

/// Every subcommand, option and positional argument has help text.
#[test]
fn every_option_and_argument_has_help() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if a.get_help().is_none() && a.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            if sub.get_about().is_none() {
                missing.push(format!("{path} {} (the command)", sub.get_name()));
            }
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&Cli::command(), "hugelab", &mut missing);
    assert!(missing.is_empty(), "without help:\n{}", missing.join("\n"));
}

/// Completions come out for bash, zsh and fish and name the commands and options; the bash
/// script is valid bash.
#[test]
fn completions_for_three_shells() {
    for shell in ["bash", "zsh", "fish"] {
        let text = common::hugelab_stdout(["completions", shell]);
        for word in ["bench", "results", "inspect", "preset", "verbose"] {
            assert!(text.contains(word), "{shell} completions lack {word}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hugelab.bash");
    std::fs::write(&script, common::hugelab_stdout(["completions", "bash"])).unwrap();
    let ok = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(ok.success(), "bash -n refused the completion script");
    common::hugelab_exits(["completions", "tcsh"], 2);
}

/// `hugelab man` prints a roff page; `--out` writes one page per command.
#[test]
fn man_pages() {
    let page = common::hugelab_stdout(["man"]);
    assert!(page.contains(".TH hugelab 1"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    common::hugelab_stdout(["man", "--out", dir.path().to_str().unwrap()]);
    for p in [
        "hugelab.1",
        "hugelab-run.1",
        "hugelab-bench.1",
        "hugelab-results-show.1",
    ] {
        assert!(dir.path().join(p).exists(), "{p} not written");
    }
}

fn assert_fits(what: &str, text: &str) {
    for l in text.lines() {
        assert!(
            l.chars().count() <= 100,
            "{what}: a line of {} columns:\n{l}\n---\n{text}",
            l.chars().count()
        );
    }
}

/// The default output of `run` leads with the answer: the first line is the contrast with its
/// verdict, the second the run; every line fits 100 columns (stdout is not a terminal here).
#[test]
fn run_leads_with_the_answer_within_100_columns() {
    let out = common::hugelab_stdout([
        "run",
        "--no-save",
        "-q",
        "-b",
        "4",
        "-a",
        "a=env.X=1",
        "-a",
        "b=env.X=2",
        "--",
        "true",
    ]);
    assert_fits("run", &out);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("b vs a  wall_s  "), "{out}");
    assert!(
        ["FASTER", "SLOWER", "EQUIVALENT", "INCONCLUSIVE"]
            .iter()
            .any(|v| lines[0].contains(v)),
        "{out}"
    );
    // The costs under the verdict, then the run line (`true` is too short and too small for
    // its peak memory to be known: the sampler misses it and its kernel mark is hugelab's).
    // 4 blocks give no interval at 99%: why, on its own line, then the costs.
    assert!(
        lines[1].starts_with("  no interval: 4 blocks are too few"),
        "{out}"
    );
    // Which costs read as changed is measured noise (user or system CPU, memory): the line is
    // there and names what it weighed, whichever moved in this run.
    assert!(lines[2].starts_with("  costs: "), "{out}");
    assert!(
        ["user CPU", "system CPU", "peak memory"]
            .iter()
            .any(|c| lines[2].contains(c)),
        "{out}"
    );
    assert!(lines.iter().any(|l| l.starts_with("4 blocks in ")), "{out}");
    assert!(!out.contains('┌'), "tables only with --verbose:\n{out}");
    let verbose = common::hugelab_stdout([
        "run",
        "--no-save",
        "-q",
        "-v",
        "-b",
        "4",
        "-a",
        "a=env.X=1",
        "-a",
        "b=env.X=2",
        "--",
        "true",
    ]);
    assert!(
        verbose.contains("mean ± sd") && verbose.contains("backing evidence"),
        "{verbose}"
    );
    // Times in units a person reads: `true` takes about a millisecond, never `± 0.0000`.
    assert!(!verbose.contains("0.0000"), "{verbose}");
    assert!(
        verbose.contains(" µs") || verbose.contains(" ms"),
        "{verbose}"
    );
}

/// `bench` leads with its headline at the largest size; its tables fit 100 columns.
#[test]
fn bench_leads_with_the_headline_within_100_columns() {
    let out = common::hugelab_stdout([
        "bench",
        "--no-save",
        "-q",
        "-s",
        "64K,4M",
        "-b",
        "4k,thp",
        "-r",
        "3",
        "touch",
    ]);
    assert_fits("bench", &out);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("at 4M (the largest size), vs 4k"),
        "{out}"
    );
    assert!(lines[1].trim_start().starts_with("thp  touch "), "{out}");
}

/// Every `hugelab …` command in README's examples exists (`--help` of it succeeds), and every
/// file README links to is in the repository.
#[test]
fn readme_commands_and_links_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    // `hugelab CMD …` in code blocks (`$ hugelab …`, `$ sudo hugelab …`) and in inline code.
    let mut checked = std::collections::BTreeSet::new();
    for (i, _) in readme.match_indices("hugelab ") {
        let before = &readme[..i];
        if !(before.ends_with('`') || before.ends_with("$ ") || before.ends_with("sudo ")) {
            continue;
        }
        let words: Vec<&str> = readme[i + 8..]
            .split(|c: char| c.is_whitespace() || c == '`')
            .filter(|w| !w.is_empty())
            .take(2)
            .collect();
        let Some(first) = words
            .first()
            .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        else {
            continue;
        };
        // The command, and its subcommand where it has them (`results show`).
        let mut path = vec![*first];
        if *first == "results"
            && let Some(sub) = words
                .get(1)
                .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
        {
            path.push(sub);
        }
        if checked.insert(path.join(" ")) {
            let mut args = path.clone();
            args.push("--help");
            common::hugelab_stdout(args);
        }
    }
    assert!(
        checked.len() >= 12,
        "README shows few commands: {checked:?}"
    );
    for (i, _) in readme.match_indices("](") {
        let target: String = readme[i + 2..].chars().take_while(|c| *c != ')').collect();
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        let file = target.split('#').next().unwrap();
        assert!(
            root.join(file).exists(),
            "README links to {target}, which does not exist"
        );
    }
}

#[test]
fn bad_levels_and_env_are_usage_errors_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    for argv in [
        vec![
            "run",
            "--arm",
            "a=",
            "--arm",
            "b=",
            "--confidence",
            "1.5",
            "--",
            "true",
        ],
        vec![
            "run", "--arm", "a=", "--arm", "b=", "--effect", "2", "--", "true",
        ],
        vec![
            "run", "--arm", "a=", "--arm", "b=", "--env", "FOO", "--", "true",
        ],
        vec!["results", "--db", db, "show", "1", "--confidence", "1.5"],
        vec!["compare", "1", "2", "--db", db, "--confidence", "1.5"],
        vec!["bench", "--confidence", "1.5"],
    ] {
        let out = Command::cargo_bin("hugelab")
            .unwrap()
            .args(&argv)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
        assert!(
            err.contains("outside") || err.contains("NAME=VALUE"),
            "{argv:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Every quoted word in a source file: the candidates the parser might accept.
fn quoted(src: &str) -> Vec<String> {
    let mut out: Vec<String> = src
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            !w.is_empty()
                && w.len() < 40
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
        })
        .map(String::from)
        .collect();
    out.sort();
    out.dedup();
    out
}

fn flat_help(args: &[&str]) -> String {
    let help = common::hugelab_stdout(args.iter().copied());
    help.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every backing `bench -b` accepts and every arm key `run -a` accepts is named in `bench
/// --help` and `run --help`: the words are walked through the parsers themselves (any word
/// in their source the parser takes as a backing, or as a key rather than an unknown one).
#[test]
fn every_backing_and_arm_key_the_parsers_accept_is_in_the_help() {
    use hugelab::backing::Backing;
    let bench = flat_help(&["bench", "--help"]);
    let mut backings = 0;
    for w in quoted(include_str!("../src/model/arm/backing.rs")) {
        // Prefixes take a size: hugetlb-2m, mthp-64k.
        let (name, shown) = match w.as_str() {
            "hugetlb-" => ("hugetlb-2m".to_string(), "hugetlb-2m".to_string()),
            "mthp-" => ("mthp-64k".to_string(), "mthp-<size>".to_string()),
            _ => (w.clone(), w.clone()),
        };
        if name.parse::<Backing>().is_ok() && name != "base" {
            backings += 1;
            assert!(
                bench.contains(&shown),
                "bench --help lacks {shown}:\n{bench}"
            );
        }
    }
    assert!(
        backings >= 10,
        "{backings} backings found in the parser's source"
    );
    for b in ["tmpfs-huge", "tmpfs-within", "pagecache"] {
        assert!(bench.contains(b), "{b}: {bench}");
    }

    let run = flat_help(&["run", "--help"]);
    let mut keys = 0;
    for w in quoted(include_str!("../src/backing/arm.rs")) {
        // Prefixes take a name: mthp.64K, hugetlb.2M, khugepaged.max_ptes_none, env.X.
        let key = match w.as_str() {
            "mthp." => "mthp.64K".to_string(),
            "hugetlb." => "hugetlb.2M".to_string(),
            "khugepaged." => "khugepaged.max_ptes_none".to_string(),
            "env." => "env.X".to_string(),
            _ => w.clone(),
        };
        let unknown = match hugelab::backing::arm::parse_arm(&format!("a={key}=?")) {
            Ok(_) => false,
            Err(e) => e.contains("unknown key"),
        };
        if !unknown {
            keys += 1;
            assert!(run.contains(&w), "run --help lacks the arm key {w}:\n{run}");
        }
    }
    assert!(keys >= 20, "{keys} arm keys found in the parser's source");
    assert!(run.contains("tmpfs.huge"), "{run}");
}
