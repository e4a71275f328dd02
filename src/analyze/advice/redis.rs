//! `--for redis`: the THP mode and Redis's own `disable-thp`, from the arm measured better.

use super::{Adopted, Advice, EvidenceLine, RunEvidence, ServiceLine, Target, begin};

/// `server.arg` words as `redis.conf` lines: `--disable-thp no` → `disable-thp no`.
pub fn conf_lines(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if let Some(key) = words[i].strip_prefix("--") {
            let mut line = key.to_string();
            while i + 1 < words.len() && !words[i + 1].starts_with("--") {
                i += 1;
                line.push(' ');
                line.push_str(&words[i]);
            }
            out.push(line);
        }
        i += 1;
    }
    out
}

pub fn advise(runs: &[RunEvidence], lines: Vec<EvidenceLine>) -> Advice {
    let (mut a, chosen) = begin(
        Target::Redis,
        runs,
        lines,
        "hugelab inspect --name redis-server (THP_enabled 1 and AnonHugePages when THP was advised)",
    );
    let Some(Adopted { arm, why, .. }) = chosen else {
        a.notes.push(
            "Redis's default (`disable-thp yes`) turns THP off for itself when THP is `always`"
                .into(),
        );
        return a;
    };
    // The configuration file's lines first, then the unit's (MemoryTHP=) from `begin`.
    let unit = std::mem::take(&mut a.service);
    a.service = conf_lines(&arm.process.server_args)
        .into_iter()
        .map(|line| ServiceLine {
            file: "redis.conf".into(),
            line,
            why: why.clone(),
        })
        .chain(unit)
        .collect();
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_words_become_conf_lines() {
        let w: Vec<String> = ["--disable-thp", "no", "--save", "", "--maxmemory", "1gb"]
            .map(String::from)
            .to_vec();
        assert_eq!(conf_lines(&w), ["disable-thp no", "save ", "maxmemory 1gb"]);
    }
}
