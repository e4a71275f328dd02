//! Reading the results database: every run's row, one run's row and arms, its trials apart (read
//! only where a reader asks for them), and the TLB reaches `bench tlb` measured on this host.

use super::{ArmRow, RunMeta, Store, TrialRow};
use crate::model::evidence::Evidence;
use crate::model::stored::StoredRunPlan;
use rusqlite::{OptionalExtension, params};

impl Store {
    /// Every TLB reach `bench tlb` measured and stored on this host, oldest first.
    pub fn measured_tlbs(&self) -> anyhow::Result<Vec<crate::model::tlb::Measured>> {
        let host = crate::probe::cpu::hostname(&crate::probe::Root::system()).unwrap_or_default();
        let mut st = self.conn.prepare(
            "SELECT id, created, json_extract(summary, '$.tlb') FROM runs WHERE host = ?1 AND summary IS NOT NULL AND json_extract(summary, '$.schema') = ?2 AND json_extract(summary, '$.tlb') IS NOT NULL ORDER BY id",
        )?;
        let rows = st.query_map(params![host, crate::model::bench::SCHEMA], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (run, created, v) = row?;
            // A reach an earlier version stored in another shape is left out.
            if let Ok(reach) = serde_json::from_str(&v) {
                out.push(crate::model::tlb::Measured {
                    run,
                    created,
                    reach,
                });
            }
        }
        Ok(out)
    }

    /// The TLB reach `bench tlb` last measured on this host: which run, when, and what it found.
    pub fn measured_tlb(&self) -> Option<crate::model::tlb::Measured> {
        self.measured_tlbs().ok()?.pop()
    }

    /// Every run's row, with how many trials it stored.
    pub fn runs(&self) -> anyhow::Result<Vec<(RunMeta, i64)>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT {META}, (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id) FROM runs r ORDER BY r.id"
        ))?;
        let rows = st.query_map([], |r| Ok((meta_of(r)?, r.get(8)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// A run whole: its row, its arms and its trials (every trial's evidence decoded).
    pub fn load(&self, run: i64) -> anyhow::Result<(RunMeta, Vec<ArmRow>, Vec<TrialRow>)> {
        let (meta, arms) = self.head(run)?;
        Ok((meta, arms, self.trials(run)?))
    }

    /// A run's row and its arms, without its trials: what a view of the stored answer needs.
    pub fn head(&self, run: i64) -> anyhow::Result<(RunMeta, Vec<ArmRow>)> {
        let meta = self
            .conn
            .query_row(
                &format!("SELECT {META} FROM runs r WHERE r.id = ?1"),
                [run],
                meta_of,
            )
            .optional()?
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "no run {run} in {} (see `hugelab results list`)",
                    self.path.display()
                )
            })?;
        let mut st = self
            .conn
            .prepare("SELECT idx, name, spec FROM arms WHERE run_id = ?1 ORDER BY idx")?;
        let arms = st
            .query_map([run], |r| {
                Ok(ArmRow {
                    idx: r.get(0)?,
                    name: r.get(1)?,
                    spec: r.get(2)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok((meta, arms))
    }

    /// A run's trials in the order they ran, each with its metrics and its evidence decoded.
    pub fn trials(&self, run: i64) -> anyhow::Result<Vec<TrialRow>> {
        let mut st = self.conn.prepare("SELECT id, block, arm_idx, seq, ok, flagged, evidence FROM trials WHERE run_id = ?1 ORDER BY seq")?;
        let mut mst = self
            .conn
            .prepare("SELECT name, value FROM metrics WHERE trial_id = ?1")?;
        let mut trials = Vec::new();
        let rows: Vec<(i64, TrialRow)> = st
            .query_map([run], |r| {
                Ok((
                    r.get(0)?,
                    TrialRow {
                        block: r.get(1)?,
                        arm_idx: r.get(2)?,
                        seq: r.get(3)?,
                        ok: r.get(4)?,
                        flagged: r.get(5)?,
                        metrics: Default::default(),
                        evidence: Evidence::decode(&r.get::<_, String>(6)?),
                    },
                ))
            })?
            .collect::<Result<_, _>>()?;
        for (tid, mut t) in rows {
            t.metrics = mst
                .query_map([tid], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))?
                .collect::<Result<_, _>>()?;
            trials.push(t);
        }
        Ok(trials)
    }
}

/// The columns of a run's row [`meta_of`] reads, in its order.
const META: &str = "r.id, r.created, r.label, r.command, r.host, r.kernel, r.status, r.plan";

/// A run's row, from a query that selects [`META`] first.
fn meta_of(r: &rusqlite::Row) -> rusqlite::Result<RunMeta> {
    let stored: serde_json::Value =
        serde_json::from_str(&r.get::<_, String>(7)?).unwrap_or_default();
    let plan = serde_json::from_value(stored.clone())
        .unwrap_or_else(|_| StoredRunPlan::Partial(Box::default()));
    let read = serde_json::to_value(&plan).unwrap_or_default();
    Ok(RunMeta {
        id: r.get(0)?,
        created: r.get(1)?,
        label: r.get(2)?,
        command: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
        host: r.get(4)?,
        kernel: r.get(5)?,
        status: r.get(6)?,
        unread: crate::model::stored::unread_fields(&stored, &read),
        plan,
    })
}
