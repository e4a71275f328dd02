//! Stage 7, store: the SQLite results database. Each finished trial is written in its own
//! transaction before the next starts (WAL, synchronous=FULL), so killing hugelab loses at
//! most the trial in flight and the database stays valid.

pub mod import;
mod read;

pub use crate::model::evidence::Evidence;
pub use crate::model::stored::RunMeta;
use crate::model::stored::RunOwner;
use crate::model::stored::StoredRunPlan;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

pub const SCHEMA_VERSION: i64 = 1;

/// `$XDG_DATA_HOME/hugelab/results.db`, default `~/.local/share/hugelab/results.db`.
/// The host of an imported run whose file names none (hyperfine's).
pub const UNKNOWN_HOST: &str = "unknown host (not in the imported file)";

pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/root"))
                .join(".local/share")
        });
    base.join("hugelab/results.db")
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmRow {
    pub idx: i64,
    pub name: String,
    pub spec: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialRow {
    pub block: i64,
    pub arm_idx: i64,
    pub seq: i64,
    pub ok: bool,
    pub flagged: Option<String>,
    /// Metric name → value (`wall_s` always).
    pub metrics: std::collections::BTreeMap<String, f64>,
    pub evidence: Evidence,
}

pub struct Store {
    conn: Connection,
    pub path: PathBuf,
}

/// Now, in UTC to the second: `2026-11-24T06:05:09Z`.
fn now_utc() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// How long an opener or writer waits for another hugelab's lock on the database.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Switch to WAL. SQLite does not call the busy handler when two connections convert a new
/// database at once (one would deadlock the other), so the loser retries for the busy timeout.
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            r => return r,
        }
    }
}

impl Store {
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                anyhow::anyhow!("cannot create {}: {e} (use --db PATH)", dir.display())
            })?;
        }
        let conn = Connection::open(path)
            .map_err(|e| anyhow::anyhow!("cannot open results database {}: {e}", path.display()))?;
        Store::init(conn, path)
            .map_err(|e| anyhow::anyhow!("results database {}: {e:#}", path.display()))
    }

    /// For commands that only read: a database that exists (nothing is created), or an error
    /// naming the path.
    pub fn open_existing(path: &Path) -> anyhow::Result<Store> {
        if !path.is_file() {
            anyhow::bail!(
                "no results database at {}: nothing has been stored there (give --db PATH, or run `hugelab run` or `hugelab bench` first)",
                path.display()
            );
        }
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
            .map_err(|e| {
            anyhow::anyhow!("cannot open results database {}: {e}", path.display())
        })?;
        Store::init(conn, path)
            .map_err(|e| anyhow::anyhow!("results database {}: {e:#}", path.display()))
    }

    /// A database in memory, gone when dropped (`run --no-save`).
    pub fn in_memory() -> anyhow::Result<Store> {
        Store::init(Connection::open_in_memory()?, Path::new(":memory:"))
    }

    fn init(conn: Connection, path: &Path) -> anyhow::Result<Store> {
        // The timeout first: switching to WAL and creating the schema take write locks, and
        // another hugelab (a `results list` while a run writes) may hold one for a moment.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        set_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        // One immediate transaction: it takes the write lock up front (waiting through the busy
        // timeout), so two openers never both read "no schema" and then race to write it.
        let tx =
            rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS runs (
                id INTEGER PRIMARY KEY, created TEXT NOT NULL, label TEXT, command TEXT NOT NULL,
                host TEXT NOT NULL, kernel TEXT, status TEXT NOT NULL, plan TEXT NOT NULL, summary TEXT);
             CREATE TABLE IF NOT EXISTS arms (
                run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, name TEXT NOT NULL,
                spec TEXT NOT NULL, PRIMARY KEY (run_id, idx));
             CREATE TABLE IF NOT EXISTS trials (
                id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), block INTEGER NOT NULL,
                arm_idx INTEGER NOT NULL, seq INTEGER NOT NULL, ok INTEGER NOT NULL, flagged TEXT,
                evidence TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS metrics (
                trial_id INTEGER NOT NULL REFERENCES trials(id), name TEXT NOT NULL, value REAL NOT NULL);
             CREATE INDEX IF NOT EXISTS trials_run ON trials(run_id);",
        )?;
        let v: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'schema'", [], |r| {
                r.get(0)
            })
            .optional()?;
        match v {
            None => {
                tx.execute(
                    "INSERT INTO meta VALUES ('schema', ?1)",
                    [SCHEMA_VERSION.to_string()],
                )?;
            }
            Some(v) if v != SCHEMA_VERSION.to_string() => {
                anyhow::bail!(
                    "{} has schema version {v}; this hugelab reads version {SCHEMA_VERSION} (use another --db)",
                    path.display()
                )
            }
            _ => {}
        }
        tx.commit()?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn create_run(
        &mut self,
        label: Option<&str>,
        command: &[String],
        kernel: Option<&str>,
        status: &str,
        plan: &StoredRunPlan,
        arms: &[ArmRow],
    ) -> anyhow::Result<i64> {
        let plan = plan.clone().versioned();
        let tx = self.conn.transaction()?;
        let id = insert_run(
            &tx,
            label,
            command,
            kernel,
            status,
            &plan,
            arms,
            &Default::default(),
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// One trial and its metrics, atomically.
    pub fn add_trial(&mut self, run: i64, t: &TrialRow) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        insert_trial(&tx, run, t)?;
        tx.commit()?;
        Ok(())
    }

    /// A whole run at once (an import): its row (where and when it ran, as its file says),
    /// arms, trials and the answer it kept (a run's record, renumbered as this database's run,
    /// or a bench's result) in one transaction, so a failure stores nothing.
    pub fn import_run(
        &mut self,
        label: Option<&str>,
        command: &[String],
        imp: &import::Import,
    ) -> anyhow::Result<i64> {
        let plan = imp.plan.clone().versioned();
        let tx = self.conn.transaction()?;
        let id = insert_run(
            &tx,
            label,
            command,
            imp.source.kernel.as_deref(),
            "imported",
            &plan,
            &imp.arms,
            &imp.source,
        )?;
        for t in &imp.trials {
            insert_trial(&tx, id, t)?;
        }
        let summary = match (&imp.record, &imp.bench) {
            (Some(r), _) => {
                let mut r = r.clone();
                r.run_id = id;
                Some(serde_json::to_string(&r)?)
            }
            (None, Some(b)) => Some(serde_json::to_string(b)?),
            (None, None) => None,
        };
        tx.execute(
            "UPDATE runs SET summary = ?1 WHERE id = ?2",
            params![summary, id],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// Store a run's plan whole again: as it ran, once the run has ended (the engine settles
    /// some of it on the way).
    pub fn set_plan(&mut self, run: i64, plan: &StoredRunPlan) -> anyhow::Result<()> {
        let plan = serde_json::to_string(&plan.clone().versioned())?;
        self.conn.execute(
            "UPDATE runs SET plan = ?1 WHERE id = ?2",
            params![plan, run],
        )?;
        Ok(())
    }

    /// Close a run: its status and its summary, stored whole as JSON (a run's record, a
    /// bench's findings).
    pub fn finish_run<T: serde::Serialize>(
        &mut self,
        run: i64,
        status: &str,
        summary: Option<&T>,
    ) -> anyhow::Result<()> {
        let text = summary.map(serde_json::to_string).transpose()?;
        self.conn.execute(
            "UPDATE runs SET status = ?1, summary = ?2 WHERE id = ?3",
            params![status, text, run],
        )?;
        Ok(())
    }

    /// A run's summary read back as `T`: `None` when it stored none, or one of another shape
    /// (an earlier version's, or another command's).
    pub fn summary<T: serde::de::DeserializeOwned>(&self, run: i64) -> anyhow::Result<Option<T>> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT summary FROM runs WHERE id = ?1", [run], |r| {
                r.get(0)
            })
            .optional()?
            .flatten();
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Runs still `running` whose process is gone (`gone` judges the plan's `owner`: its pid and
    /// start time) are marked `interrupted`: a run killed outright (SIGKILL, power loss) never
    /// finished its row. Returns their ids.
    pub fn mark_interrupted(
        &mut self,
        gone: impl Fn(&RunOwner) -> bool,
    ) -> anyhow::Result<Vec<i64>> {
        // Only the running rows' owners are read: a plan holds the machine's whole status.
        let running: Vec<(i64, Option<String>)> = self
            .conn
            .prepare("SELECT id, json_extract(plan, '$.owner') FROM runs WHERE status = 'running'")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let stale: Vec<i64> = running
            .into_iter()
            .filter(|(_, owner)| {
                let owner = owner.as_deref().and_then(|o| serde_json::from_str(o).ok());
                owner.as_ref().is_some_and(&gone)
            })
            .map(|(id, _)| id)
            .collect();
        for id in &stale {
            self.conn.execute(
                "UPDATE runs SET status = 'interrupted' WHERE id = ?1 AND status = 'running'",
                params![id],
            )?;
        }
        Ok(stale)
    }
}

/// A run's row and its arms, inside the caller's transaction.
/// A run's row. `at` names where and when it ran where that is not here and now (an import's
/// file): a file that says neither is stored with an unknown host and the time it was imported.
#[allow(clippy::too_many_arguments)]
fn insert_run(
    tx: &rusqlite::Transaction,
    label: Option<&str>,
    command: &[String],
    kernel: Option<&str>,
    status: &str,
    plan: &StoredRunPlan,
    arms: &[ArmRow],
    at: &import::Source,
) -> anyhow::Result<i64> {
    let host = match (status, &at.host) {
        (_, Some(h)) => h.clone(),
        ("imported", None) => UNKNOWN_HOST.to_string(),
        _ => crate::probe::cpu::hostname(&crate::probe::Root::system()).unwrap_or_default(),
    };
    let created = at.created.clone().unwrap_or_else(now_utc);
    tx.execute(
        "INSERT INTO runs (created, label, command, host, kernel, status, plan) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![created, label, serde_json::to_string(command)?, host, kernel, status, serde_json::to_string(plan)?],
    )?;
    let id = tx.last_insert_rowid();
    for a in arms {
        tx.execute(
            "INSERT INTO arms VALUES (?1, ?2, ?3, ?4)",
            params![id, a.idx, a.name, a.spec],
        )?;
    }
    Ok(id)
}

/// A trial's row and its metrics, inside the caller's transaction.
fn insert_trial(tx: &rusqlite::Transaction, run: i64, t: &TrialRow) -> anyhow::Result<()> {
    tx.execute(
        "INSERT INTO trials (run_id, block, arm_idx, seq, ok, flagged, evidence) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![run, t.block, t.arm_idx, t.seq, t.ok, t.flagged, serde_json::to_string(&t.evidence)?],
    )?;
    let tid = tx.last_insert_rowid();
    for (k, v) in &t.metrics {
        tx.execute(
            "INSERT INTO metrics VALUES (?1, ?2, ?3)",
            params![tid, k, v],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_trace_window_reads_back_typed() {
        use crate::model::trace::{HistSummary, Latency, TraceWindow};
        let w = TraceWindow {
            seconds: 1.5,
            latencies: vec![Latency {
                kind: "direct compaction".into(),
                hist: HistSummary {
                    count: 3,
                    total_ns: 9_000,
                    log2: vec![(2048, 2), (4096, 1)],
                    ..Default::default()
                },
                by_order: [(9, (3, 9_000))].into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let traced =
            Evidence::decode(&serde_json::json!({"trace": w, "trace_lost": 4}).to_string());
        assert_eq!((traced.trace, traced.trace_lost), (Some(w), Some(4)));
        // Not traced, or a window this version cannot read: no window rather than zeros.
        assert_eq!(Evidence::decode(r#"{"wall_s": 1}"#).trace, None);
        assert_eq!(Evidence::decode(r#"{"trace": "garbled"}"#).trace, None);
        // A window stored without later fields reads with their defaults.
        let old = Evidence::decode(
            r#"{"trace": {"latencies": [{"kind": "k", "hist": {"total_ns": 5}}]}}"#,
        );
        assert_eq!(old.trace.unwrap().latencies[0].hist.total_ns, 5);
    }

    #[test]
    fn roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("x/results.db")).unwrap();
        let arms = vec![
            ArmRow {
                idx: 0,
                name: "a".into(),
                spec: "".into(),
            },
            ArmRow {
                idx: 1,
                name: "b".into(),
                spec: "thp=always".into(),
            },
        ];
        let id = s
            .create_run(
                Some("t"),
                &["true".into()],
                None,
                "running",
                &StoredRunPlan::Partial(Box::default()),
                &arms,
            )
            .unwrap();
        let t = TrialRow {
            block: 0,
            arm_idx: 1,
            seq: 0,
            ok: true,
            flagged: None,
            metrics: [("wall_s".to_string(), 1.5)].into(),
            evidence: Evidence {
                lifetime: Some(1),
                ..Default::default()
            },
        };
        s.add_trial(id, &t).unwrap();
        s.finish_run::<()>(id, "complete", None).unwrap();
        let (m, a, tr) = s.load(id).unwrap();
        assert_eq!((m.status.as_str(), a.len(), tr.len()), ("complete", 2, 1));
        assert_eq!(m.written_by(), Some(crate::VERSION));
        assert_eq!(tr[0], t);
        assert!(s.load(99).unwrap_err().to_string().contains("no run 99"));
        assert!(now_utc().len() == 20 && now_utc().starts_with("20"));
    }

    #[test]
    fn processes_opening_one_new_database_at_once_all_succeed() {
        // A run creating its database while `results list` (or a test) opens it: both
        // switch to WAL and create the schema; neither may fail with "database is locked".
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(format!("r{round}.db"));
            let handles: Vec<_> = (0..6)
                .map(|_| {
                    let path = path.clone();
                    std::thread::spawn(move || Store::open(&path).map(|_| ()))
                })
                .collect();
            for h in handles {
                h.join().unwrap().unwrap();
            }
        }
    }
}
