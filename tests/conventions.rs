//! The test suite's own rules (docs/testing.md), checked over its sources: a test that needs
//! root says so where `cargo test` can see it, and test files are named for their command or
//! concern, with `_plan` / `_fixtures` / `_live` when one concern's tests are split by what they
//! need.

use crate::common;
use std::path::Path;

/// Each `#[test]` function of a file: its name, its attributes and its body.
fn tests_of(src: &str) -> Vec<(String, String, String)> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.strip_prefix("fn ") else {
            continue;
        };
        // The attributes right above the function (through multi-line ones).
        let mut j = i;
        while j > 0 {
            let above = lines[j - 1];
            if above.is_empty() || above.starts_with("///") || above.starts_with('}') {
                break;
            }
            j -= 1;
        }
        let attrs = lines[j..i].join("\n");
        if !attrs.contains("#[test]") {
            continue;
        }
        let end = (i + 1..lines.len())
            .find(|&k| lines[k] == "}")
            .unwrap_or(lines.len());
        let name = rest.split('(').next().unwrap_or(rest).to_string();
        out.push((name, attrs, lines[i..end].join("\n")));
    }
    out
}

fn test_files() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        // This file names the marks in its own strings.
        .filter(|p| p.extension().is_some_and(|x| x == "rs") && !p.ends_with("conventions.rs"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

/// A test that asserts it runs as root is ignored, with the reason, in a build by another user
/// (`cfg(unprivileged)` from build.rs) — so a non-root `cargo test` counts it as skipped, not as
/// passed or failed; and a test ignored for root really needs it.
#[test]
fn every_root_test_is_marked_and_every_marked_test_needs_root() {
    let mut wrong = Vec::new();
    let mut root_tests = 0;
    for (file, src) in test_files() {
        for (name, attrs, body) in tests_of(&src) {
            let needs = body.contains("require_root!()");
            let marked = attrs.contains("cfg_attr(") && attrs.contains("unprivileged");
            let always_ignored = attrs.contains("#[ignore");
            root_tests += needs as usize;
            if needs && !marked && !always_ignored {
                wrong.push(format!("{file}: {name} calls require_root!() without #[cfg_attr(unprivileged, ignore = \"needs root: …\")]"));
            }
            if marked && !attrs.contains("ignore = \"needs root") {
                wrong.push(format!(
                    "{file}: {name}'s ignore reason does not start with \"needs root\""
                ));
            }
            if marked && !needs {
                wrong.push(format!(
                    "{file}: {name} is ignored without root but never calls require_root!()"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The scan found the suite's root tests (it would pass vacuously on a parser that found none).
    assert!(root_tests >= 20, "only {root_tests} root tests found");
}

/// The integration tests are one binary (Cargo.toml: `autotests = false`, `tests/main.rs`): a
/// file in `tests/` that `tests/main.rs` does not declare would never be compiled or run.
#[test]
fn every_test_file_is_a_module_of_the_suite() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let declared: Vec<&str> = main
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut missing: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs") && !p.ends_with("main.rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|stem| !declared.contains(&stem.as_str()))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "add `mod NAME;` to tests/main.rs for each: {missing:?}"
    );
    assert!(declared.len() >= 30, "{declared:?}");
}

/// Files are named for a command or concern; a split concern says how with its suffix, and no
/// file is named by a prefix that says what it needs.
#[test]
fn test_files_follow_the_naming_rule() {
    let names: Vec<String> = test_files().into_iter().map(|(n, _)| n).collect();
    let bad: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("live_") || n.starts_with("test_"))
        .collect();
    assert!(
        bad.is_empty(),
        "name these for their command or concern: {bad:?}"
    );
    for n in &names {
        let stem = n.trim_end_matches(".rs");
        for suffix in ["_plan", "_fixtures", "_live"] {
            if let Some(concern) = stem.strip_suffix(suffix) {
                // A split concern has at least two parts, or its one part keeps the plain name.
                let parts = ["_plan", "_fixtures", "_live"]
                    .iter()
                    .filter(|s| names.contains(&format!("{concern}{s}.rs")))
                    .count();
                assert!(
                    parts >= 2,
                    "{n}: the only file of '{concern}' — name it {concern}.rs"
                );
            }
        }
    }
}

#[test]
fn the_scanner_finds_attributes_and_bodies() {
    let src = "#[test]\n#[cfg_attr(\n    unprivileged,\n    ignore = \"needs root: x\"\n)]\nfn a() {\n    require_root!();\n}\n\nfn helper() {\n}\n\n#[test]\nfn b() {\n    let x = 1;\n}\n";
    let t = tests_of(src);
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].0, "a");
    assert!(t[0].1.contains("needs root") && t[0].2.contains("require_root!()"));
    assert_eq!(t[1].0, "b");
    assert!(!t[1].2.contains("require_root"));
}

/// Every path README and docs/ name exists: `src/…` and `tests/…` anywhere, and in backticks
/// any path with a folder (`commands/run/mod.rs`, `scripts/check-layers.sh`), found from the
/// repository's root, `src/` or `docs/`. A file moved by a refactor is found here, not by the
/// next contributor.
#[test]
fn paths_named_in_the_docs_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    let anywhere =
        regex::Regex::new(r"\b((?:src|tests)/[A-Za-z0-9_./-]+\.(?:rs|css|smaps|sh))").unwrap();
    let quoted =
        regex::Regex::new(r"`([A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:rs|sh|css|md))`")
            .unwrap();
    // A folder named as where a kind of change goes (`src/stats/`, `src/collect/load/`).
    let folder = regex::Regex::new(r"`((?:src|tests|scripts)/[A-Za-z0-9_./-]*/)`").unwrap();
    let found = |rel: &str| {
        [root.to_path_buf(), root.join("src"), root.join("docs")]
            .iter()
            .any(|base| base.join(rel).exists())
    };
    let mut missing = Vec::new();
    let mut seen = 0;
    for d in &docs {
        let text = std::fs::read_to_string(d).unwrap();
        let named = anywhere
            .captures_iter(&text)
            .chain(quoted.captures_iter(&text))
            .chain(folder.captures_iter(&text))
            .map(|c| c[1].to_string());
        for rel in named {
            seen += 1;
            if !found(&rel) {
                missing.push(format!(
                    "{}: {rel}",
                    d.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but not there:\n{}",
        missing.join("\n")
    );
    assert!(seen >= 30, "only {seen} paths found in the docs");
}

/// README holds the two set-up commands and one short example per command; the rest is in
/// docs/ (a README that grows past a screenful of pages is read by nobody).
#[test]
fn readme_is_short_and_keeps_its_two_set_up_commands() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; move detail to docs/"
    );
    for cmd in ["cargo run --release -- bench", "cargo test --release"] {
        assert!(
            readme.contains(&format!("\n{cmd} ")),
            "README lost its set-up command `{cmd}`"
        );
    }
    // CI runs the test command README gives.
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.starts_with("cargo test --release ")),
        ".ci/run does not run README's test command"
    );
}

/// Every `.rs` file under src/, with its path relative to the crate.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push((
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
}

/// A source file up to its test module (`#[cfg(test)]` on the line above `mod …`): a
/// `#[cfg(test)]` on anything else (a constant, a function) leaves the rest of the file read.
fn code_of(src: &str) -> &str {
    let mut at = 0;
    let mut lines = src.split_inclusive('\n').peekable();
    while let Some(l) = lines.next() {
        if l.trim_end() == "#[cfg(test)]" && lines.peek().is_some_and(|n| n.starts_with("mod ")) {
            return &src[..at];
        }
        at += l.len();
    }
    src
}

#[test]
fn the_scanners_read_a_file_past_a_cfg_test_item_to_its_test_module() {
    let src = "const A: u8 = 1;\n#[cfg(test)]\nconst B: u8 = 2;\nfn f() {\n}\n#[cfg(test)]\nmod tests {\n}\n";
    assert_eq!(
        code_of(src),
        "const A: u8 = 1;\n#[cfg(test)]\nconst B: u8 = 2;\nfn f() {\n}\n"
    );
    assert_eq!(function_lengths(src), vec![("f".to_string(), 2)]);
}

/// Functions with a body and their length in lines (signature to closing brace), as rustfmt
/// lays them out: the closing brace at the indent of `fn`. Test modules are not counted.
fn function_lengths(src: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code_of(src).lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let head = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn "]
            .iter()
            .find_map(|p| t.strip_prefix(p));
        let Some(rest) = head else { continue };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // A declaration without a body, or an empty one.
        let Some(open) = lines[i..]
            .iter()
            .position(|x| x.ends_with('{') || x.ends_with(';') || x.ends_with("{}"))
        else {
            continue;
        };
        let decl = lines[i + open];
        if decl.ends_with(';') || decl.ends_with("{}") {
            continue;
        }
        let indent = &l[..l.len() - t.len()];
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|x| *x == close) {
            out.push((name, end + 2));
        }
    }
    out
}

/// Short functions and files: none over 120 lines, no file over 600 (a file's tests may sit
/// in a `tests.rs` beside it).
#[test]
fn functions_and_files_stay_short() {
    let mut long = Vec::new();
    for (path, src) in sources() {
        let n = src.lines().count();
        if n > 600 {
            long.push(format!("{path}: {n} lines"));
        }
        for (name, len) in function_lengths(&src) {
            if len > 120 {
                long.push(format!("{path}: fn {name} is {len} lines"));
            }
        }
    }
    assert!(long.is_empty(), "split these:\n{}", long.join("\n"));
    // The scanner itself: a body's length, a declaration and an empty body skipped.
    let src = "fn a() {\n    x();\n}\n\ntrait T {\n    fn b(&self);\n    fn c(&self) {}\n}\n";
    assert_eq!(function_lengths(src), [("a".to_string(), 3)]);
}

/// Every command is thin: it parses, calls its engine (`src/experiment/`, `src/bench/`,
/// `src/fleet/`, `src/exporter/`, `src/trace/`, the advice wing `src/advice/`), renders and
/// maps the exit code. `src/commands/` stays under 2,000 lines, no command's `run` is longer
/// than 60, and `run`, `bench` and `judge` each stay under 200 lines.
#[test]
fn commands_stay_thin() {
    let lines_of = |part: &str| -> usize {
        sources()
            .iter()
            .filter(|(path, _)| path.contains(part))
            .map(|(_, src)| src.lines().count())
            .sum()
    };
    let all = lines_of("/src/commands/");
    assert!(
        all < 2000,
        "src/commands/ has {all} lines; engines belong in their own rooms"
    );
    let long: Vec<String> = sources()
        .iter()
        .filter(|(path, _)| path.contains("/src/commands/"))
        .flat_map(|(path, src)| {
            function_lengths(src)
                .into_iter()
                .filter(|(name, n)| name == "run" && *n > 60)
                .map(move |(_, n)| format!("{path}: run is {n} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "a command's run parses, calls its engine and renders; move the rest out:\n{}",
        long.join("\n")
    );
    for part in [
        "/src/commands/run/",
        "/src/commands/bench.rs",
        "/src/commands/judge.rs",
    ] {
        let n = lines_of(part);
        assert!(
            (1..200).contains(&n),
            "{part} has {n} lines; its engine's parts belong in the engine's room"
        );
    }
}

/// A source file's module path: `src/analyze/judge/mod.rs` → [analyze, judge].
fn module_of(path: &str) -> Vec<String> {
    let rel = path.split("/src/").last().unwrap().trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(String::from).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// No two modules import each other (a parent and its own child aside): each stage's files
/// point one way, so a change in one is not a change in the other.
#[test]
fn no_two_modules_import_each_other() {
    let files = sources();
    let modules: Vec<Vec<String>> = files.iter().map(|(p, _)| module_of(p)).collect();
    let resolve = |parts: &[String]| -> Option<usize> {
        (1..=parts.len())
            .rev()
            .find_map(|k| modules.iter().position(|m| m.as_slice() == &parts[..k]))
    };
    let mut edges = std::collections::BTreeSet::new();
    for (i, (path, src)) in files.iter().enumerate() {
        if path.ends_with("/tests.rs") {
            continue;
        }
        let code = code_of(src);
        let me = &modules[i];
        for (at, word) in code
            .match_indices("crate::")
            .chain(code.match_indices("super::"))
        {
            let rest: String = code[at + word.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let mut parts: Vec<String> = if word == "crate::" {
                Vec::new()
            } else {
                // `super` of a/b.rs and of a/b/mod.rs is a.
                me[..me.len().saturating_sub(1)].to_vec()
            };
            for seg in rest.split("::").filter(|s| !s.is_empty()) {
                if seg == "super" {
                    parts.pop();
                } else {
                    parts.push(seg.to_string());
                }
            }
            if let Some(j) = resolve(&parts).filter(|j| *j != i) {
                edges.insert((i, j));
            }
        }
    }
    let nested = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
    let circles: Vec<String> = edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(*b, *a)))
        .filter(|(a, b)| !nested(&modules[*a], &modules[*b]))
        .map(|(a, b)| format!("{} <-> {}", files[*a].0, files[*b].0))
        .collect();
    assert!(
        circles.is_empty(),
        "modules that import each other:\n{}",
        circles.join("\n")
    );
}

/// No test passes by skipping: a test that needs a tool is marked by build.rs
/// (`cfg(missing_…)`, reported ignored where the tool is missing) and asserts the tool, so it
/// never returns early as passed.
#[test]
fn no_test_returns_early_as_passed() {
    let common = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/mod.rs");
    let helpers = (
        "common/mod.rs".to_string(),
        std::fs::read_to_string(common).unwrap(),
    );
    for (path, src) in test_files().into_iter().chain([helpers]) {
        for bad in ["common::skip(", "fn skip(", "\"skipped: "] {
            assert!(!src.contains(bad), "{path} contains {bad:?}");
        }
    }
}

/// The layers check on a copy of the sources, with `line` added to the end of `file`: its exit
/// status and what it said.
fn layers_check_with(file: &str, line: &str) -> (bool, String) {
    common::lowest_priority();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let copy = |from: &Path, to: &Path| {
        let ok = std::process::Command::new("cp")
            .args(["-r", from.to_str().unwrap(), to.to_str().unwrap()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "cp {from:?}");
    };
    copy(&root.join("src"), &dir.path().join("src"));
    copy(&root.join("scripts"), &dir.path().join("scripts"));
    let target = dir.path().join(file);
    let mut text = std::fs::read_to_string(&target).unwrap();
    text.push_str(line);
    std::fs::write(&target, text).unwrap();
    let out = std::process::Command::new("bash")
        .arg(dir.path().join("scripts/check-layers.sh"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// One record: the store keeps what `analyze` built and every renderer reads it, so neither
/// may import `analyze` — the check passes on the tree as it is and fails on such an import.
#[test]
fn the_layers_check_refuses_a_renderer_or_the_store_reaching_analyze() {
    let (ok, said) = layers_check_with("src/render/words.rs", "\n");
    assert!(ok, "the tree as it is passes: {said}");
    for file in ["src/render/words.rs", "src/store/mod.rs"] {
        let (ok, said) = layers_check_with(file, "\nuse crate::analyze::experiment;\n");
        assert!(!ok, "{file} importing analyze passed: {said}");
        assert!(said.contains("imports the later stage 'analyze'"), "{said}");
    }
    // Nor does analyze reach the renderers.
    let (ok, said) = layers_check_with(
        "src/analyze/costs.rs",
        "\nuse crate::render::words::WIDTH;\n",
    );
    assert!(!ok && said.contains("analyze imports render"), "{said}");
}

/// The statistics kernel at the bottom, methods beside their types, engines above the stages
/// and the advice wing above the engines: a planted upward import from the kernel, the kernel
/// imported by a renderer, an inherent `impl` outside its type's module, a stage importing an
/// engine, and an engine importing the wing each fail the layers check, which names the file.
#[test]
fn the_layers_check_fails_on_a_planted_upward_import_and_a_stray_impl() {
    for (file, line, said) in [
        (
            "src/stats/welch.rs",
            "\nuse crate::analyze::bench;\n",
            "the statistics kernel (src/stats) imports more than the utilities",
        ),
        (
            "src/render/words.rs",
            "\nuse crate::stats::hodges_lehmann;\n",
            "render imports the statistics kernel",
        ),
        (
            "src/render/tlb.rs",
            "\nimpl Sweep {\n    pub fn planted(&self) {}\n}\n",
            "impl Sweep in src/render/tlb.rs",
        ),
        // The record's schema (model) sits under the stages that fill it: it imports none of
        // the collectors, backings, probes, workloads or settings.
        (
            "src/model/run.rs",
            "\nuse crate::collect::trial::Gatherer;\n",
            "stage 'model' imports the later stage 'collect'",
        ),
        (
            "src/model/stored.rs",
            "\nuse crate::backing::arm::parse_arm;\n",
            "stage 'model' imports the later stage 'backing'",
        ),
        (
            "src/model/machine/status.rs",
            "\nuse crate::probe::Root;\n",
            "stage 'model' imports the later stage 'probe'",
        ),
        (
            "src/model/evidence.rs",
            "\nuse crate::workload::child::run_child;\n",
            "stage 'model' imports the later stage 'workload'",
        ),
        (
            "src/model/arm/knob.rs",
            "\nuse crate::control::Settings;\n",
            "stage 'model' imports the later stage 'control'",
        ),
        // A stage reaching an engine, and anything but a command reaching the advice wing.
        (
            "src/probe/mod.rs",
            "\nuse crate::trace::Request;\n",
            "stage 'probe' imports the engine 'trace'",
        ),
        (
            "src/fleet/mod.rs",
            "\nuse crate::advice::Request;\n",
            "'fleet' imports the wing 'advice'",
        ),
        (
            "src/advice/mod.rs",
            "\nuse crate::commands::UsageError;\n",
            "wing 'advice' imports 'commands'",
        ),
    ] {
        let (ok, out) = layers_check_with(file, line);
        assert!(!ok && out.contains(said), "{file}: {out}");
    }
}

/// A trial's evidence is built once, where the trial ends: the check passes on this tree and
/// fails on a planted patch of a built evidence (a field assigned, one mutated in place, a
/// function handed `&mut Evidence`), in each place trials are built or read.
#[test]
fn the_evidence_check_fails_on_a_field_patched_after_the_evidence_was_built() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = |tree: &Path| {
        std::process::Command::new("bash")
            .arg(root.join("scripts/check-evidence.sh"))
            .arg(tree)
            .output()
            .unwrap()
    };
    let here = check(root);
    let said = String::from_utf8_lossy(&here.stdout);
    assert!(here.status.success(), "{said}");
    for (file, planted) in [
        (
            "src/experiment/planted.rs",
            "fn f(t: &mut TrialRow) { t.evidence.duet = true; }",
        ),
        (
            "src/bench/planted.rs",
            "fn f(mut ev: Evidence) { ev.gathered.memory.coverage_at_peak = 1.0; }",
        ),
        (
            "src/experiment/execute/planted.rs",
            "fn f(t: &mut TrialRow) { t.evidence.condition.clone_from(&None); }",
        ),
        (
            "src/store/planted.rs",
            "fn f(evidence: &mut Evidence) { let _ = evidence; }",
        ),
        (
            "src/experiment/planted.rs",
            "fn f(t: &mut TrialRow) { if let Some(n) = t.evidence.gathered.noise.as_mut() { n.steal_ns = 0; } }",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{planted}\n")).unwrap();
        let out = check(dir.path());
        assert!(!out.status.success(), "not caught: {planted}");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains(&format!("{file}:1")), "{planted}: {said}");
    }
}
