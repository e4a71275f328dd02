//! /proc/PID/stat: a process's parent, group and CPU time; from them, a process's tree (its
//! live descendants, however they regrouped) and the members of a process group.

/// The process group id in a /proc/PID/stat text (the field after the state).
pub fn parse_stat_pgid(text: &str) -> Option<i32> {
    stat_fields(text)?.get(2)?.parse().ok()
}

/// The fields after the command name of a /proc/PID/stat text (field 3, the state, first).
fn stat_fields(text: &str) -> Option<Vec<&str>> {
    let i = text.rfind(')')?;
    Some(text[i + 1..].split_whitespace().collect())
}

/// What /proc/PID/stat says about a process's place and its CPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    pub ppid: i32,
    pub pgid: i32,
    /// utime + stime, in clock ticks (USER_HZ).
    pub cpu_ticks: u64,
    /// cutime + cstime: children it has waited for (a server's exited workers), ticks.
    pub reaped_children_ticks: u64,
    /// Start time after boot, in clock ticks: with the pid, it names one process for good.
    pub start_ticks: u64,
}

pub fn parse_stat(text: &str) -> Option<Stat> {
    let f = stat_fields(text)?;
    let n = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some(Stat {
        ppid: f.get(1)?.parse().ok()?,
        pgid: f.get(2)?.parse().ok()?,
        cpu_ticks: n(11)? + n(12)?,
        reaped_children_ticks: n(13)? + n(14)?,
        start_ticks: n(19)?,
    })
}

/// /proc/PID/stat of a live process.
pub fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `pid` and every live descendant of it (a server's forked workers, however they regrouped:
/// PostgreSQL's backends call setsid), parents first.
pub fn tree(pid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![pid];
    };
    let parents: Vec<(i32, i32)> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| Some((p, stat(p)?.ppid)))
        .collect();
    descendants(pid, &parents)
}

/// `root` and its descendants in a (pid, ppid) list, parents first.
pub fn descendants(root: i32, parents: &[(i32, i32)]) -> Vec<i32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

/// The live processes in process group `pgid` (a child of `run` and what it started).
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![pgid];
    };
    let mut out: Vec<i32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_stat_pgid(&s))
                == Some(pgid)
        })
        .collect();
    if out.is_empty() {
        out.push(pgid);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_and_a_process_tree() {
        // A command name with spaces and parentheses, as /proc prints it.
        let t = "4242 (postgres: io (x)) S 4200 4242 4242 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 1 0 98765 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(t),
            Some(Stat {
                ppid: 4200,
                pgid: 4242,
                cpu_ticks: 175,
                reaped_children_ticks: 0,
                start_ticks: 98765
            })
        );
        assert_eq!(parse_stat_pgid(t), Some(4242));
        assert_eq!(parse_stat("1 (x) S"), None);
        // 10 → 11, 12; 12 → 13; 20 is not in the tree.
        let parents = [(11, 10), (12, 10), (13, 12), (20, 1), (10, 1)];
        assert_eq!(descendants(10, &parents), vec![10, 11, 12, 13]);
        let own = std::process::id() as i32;
        assert_eq!(tree(own)[0], own);
        assert!(stat(own).is_some_and(|s| s.ppid > 0));
    }

    #[test]
    fn stat_pgid() {
        assert_eq!(parse_stat_pgid("42 (a) b) S 1 42 42 0 -1"), Some(42));
        assert_eq!(parse_stat_pgid("42 (a"), None);
    }
}
