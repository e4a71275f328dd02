//! A stored result read back as every view reads it — `results show`, `report`, `results export
//! --format md`, `advise`: a run's (or an import's) record, or a bench's whole result, at the
//! decision [`Decision::resolve`] gives it. Re-analysis happens only where a reader asks for
//! another decision, and the decision says so; an answer an earlier version did not keep whole
//! is rebuilt from its rows, and says how.

use super::Trials;
use crate::analyze::stored::reanalyse;
use crate::model::bench::BenchResult;
use crate::model::decision::{Decision, Kept, Kind, Origin};
use crate::model::record::{RECORD_SCHEMA, RunFacts, RunRecord};
use crate::model::verdict::Design;
use crate::store::{ArmRow, RunMeta, Store};

/// A stored result's answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A run's record, or an import's.
    Run(Box<RunRecord>),
    /// A bench's whole result (`bench`, `bench tlb`).
    Bench(Box<BenchResult>),
}

/// A stored result as read: its answer at `decision`, and, where its run did not keep the
/// answer whole (an earlier version, a run that stopped), how it was rebuilt.
#[derive(Debug, Clone)]
pub struct Recalled {
    pub answer: Answer,
    pub decision: Decision,
    pub rebuilt: Option<String>,
    /// Where its trials were analysed, the fields of their stored evidence this version could
    /// not read (an earlier version's), said as a note.
    pub unread: Option<String>,
}

impl Recalled {
    /// What a view says before the answer: how it was rebuilt, what of its trials could not be
    /// read, then the decision's note.
    pub fn notes(&self) -> Vec<String> {
        self.rebuilt
            .iter()
            .chain(&self.unread)
            .cloned()
            .chain(self.decision.note())
            .collect()
    }

    pub fn record(&self) -> Option<&RunRecord> {
        match &self.answer {
            Answer::Run(r) => Some(r),
            Answer::Bench(_) => None,
        }
    }

    pub fn bench(&self) -> Option<&BenchResult> {
        match &self.answer {
            Answer::Bench(b) => Some(b),
            Answer::Run(_) => None,
        }
    }
}

/// A stored result at the decision asked for (`over`), else its own.
pub fn recall(
    store: &Store,
    meta: &RunMeta,
    arms: &[ArmRow],
    trials: &Trials,
    over: &crate::options::Redecide,
) -> anyhow::Result<Recalled> {
    if meta.plan.is_bench() {
        return recall_bench(store, meta, arms, trials, over);
    }
    let stored = store
        .summary::<RunRecord>(meta.id)?
        .filter(|r| r.schema == RECORD_SCHEMA);
    let (kind, kept) = kept_decision(meta, stored.as_ref());
    let decision = Decision::resolve(kind, kept, meta.plan.design(), over.effect, over.confidence);
    let (mut record, rebuilt) = match stored {
        Some(r) => (r, None),
        None => earlier(store, meta, arms, trials, &decision)?,
    };
    if decision.is_reanalysis() {
        let trials = trials.get()?;
        record.report = reanalyse(
            meta,
            arms,
            trials,
            decision.effect_or_default(),
            decision.confidence,
        );
        let names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
        record.trace_stalls = crate::analyze::stored::stall_contrasts(
            trials,
            &names,
            meta.plan.baseline(),
            decision.confidence,
        );
    }
    record.decision = Some(decision.clone());
    let analysed = decision.is_reanalysis() || rebuilt.is_some();
    Ok(Recalled {
        answer: Answer::Run(Box::new(record)),
        unread: analysed.then(|| unread(trials)).transpose()?.flatten(),
        decision,
        rebuilt,
    })
}

/// Whose decision a stored run kept: its record's (an import's said as the defaults), else the
/// one its plan stored; an import that kept none was analysed at the defaults.
fn kept_decision(meta: &RunMeta, stored: Option<&RunRecord>) -> (Kind, Kept) {
    match stored {
        Some(RunRecord {
            decision: Some(d), ..
        }) if d.origin == Origin::Defaults => (Kind::Import, Kept::default()),
        Some(r) => (
            Kind::Run,
            Kept {
                effect: Some(r.report.effect),
                confidence: Some(r.report.confidence),
            },
        ),
        None => {
            let (effect, confidence) = meta.plan.decision();
            let kind = match meta.status == "imported" && confidence.is_none() {
                true => Kind::Import,
                false => Kind::Run,
            };
            (kind, Kept { effect, confidence })
        }
    }
}

/// A run an earlier version stored without its record: its analysis alone where it kept one,
/// else its trials analysed at `decision`; said as such.
fn earlier(
    store: &Store,
    meta: &RunMeta,
    arms: &[ArmRow],
    trials: &Trials,
    decision: &Decision,
) -> anyhow::Result<(RunRecord, Option<String>)> {
    let trials = trials.get()?;
    let kept = store.summary::<crate::model::analysis::ExperimentAnalysis>(meta.id)?;
    let (report, how) = match kept {
        Some(a) => (
            a,
            "stored by an earlier version with its analysis alone: its time, stop reason, pools and advice were not kept".to_string(),
        ),
        None => (
            reanalyse(
                meta,
                arms,
                trials,
                decision.effect_or_default(),
                decision.confidence,
            ),
            "no record of its answer was stored (an earlier version's run, or one that stopped): its trials analysed".to_string(),
        ),
    };
    let facts = RunFacts {
        blocks: report.primary().map_or(0, |m| m.complete_blocks),
        ..RunFacts::default()
    };
    let record = RunRecord {
        schema: RECORD_SCHEMA.into(),
        run_id: meta.id,
        stored: true,
        service: meta.plan.served(),
        replicas: meta.plan.replicas(),
        decision: None,
        report,
        facts,
        pools: Vec::new(),
        advice: None,
        servers: Vec::new(),
        notes: meta.plan.said().to_vec(),
        trace_stalls: crate::analyze::stored::stall_contrasts(
            trials,
            &arms.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
            meta.plan.baseline(),
            decision.confidence,
        ),
        noise: Vec::new(),
        calibration: None,
        tlb: None,
        vm_advice: None,
    };
    Ok((record, Some(how)))
}

/// A bench: its whole result as it printed it, or decided again at the level asked for; one an
/// earlier version (or an interrupted bench) stored only as rounds is rebuilt from them.
fn recall_bench(
    store: &Store,
    meta: &RunMeta,
    arms: &[ArmRow],
    trials: &Trials,
    over: &crate::options::Redecide,
) -> anyhow::Result<Recalled> {
    let stored = store
        .summary::<BenchResult>(meta.id)?
        .filter(|b| b.schema == crate::model::bench::SCHEMA);
    let kept = Kept {
        effect: None,
        confidence: stored
            .as_ref()
            .map(|b| b.plan.confidence)
            .or(meta.plan.decision().1),
    };
    let decision = Decision::resolve(
        Kind::Bench,
        kept,
        Design::Fixed,
        over.effect,
        over.confidence,
    );
    let (bench, rebuilt) = match stored {
        Some(b) if decision.is_reanalysis() => (
            crate::analyze::bench::redecide(&b, decision.confidence),
            None,
        ),
        Some(b) => (b, None),
        None => {
            let b = super::rounds::rebuild(meta, arms, trials.get()?, decision.confidence)?;
            let how = format!(
                "this bench kept its rounds, not its result (an earlier version's, or one that stopped): its rounds decided again at {} (the coverage and per-op counts it printed were not kept)",
                decision.level()
            );
            (b, Some(how))
        }
    };
    Ok(Recalled {
        answer: Answer::Bench(Box::new(bench)),
        unread: rebuilt
            .is_some()
            .then(|| unread(trials))
            .transpose()?
            .flatten(),
        decision,
        rebuilt,
    })
}

/// The note for the fields of the trials' stored evidence this version could not read, each
/// named once; `None` when it read them all.
fn unread(trials: &Trials) -> anyhow::Result<Option<String>> {
    let mut names: Vec<String> = Vec::new();
    for t in trials.get()? {
        for f in &t.evidence.unread {
            if !names.contains(f) {
                names.push(f.clone());
            }
        }
    }
    Ok((!names.is_empty()).then(|| {
        format!(
            "its trials were analysed as this version reads them: of their stored evidence, {}",
            crate::model::stored::could_not_read(&names)
        )
    }))
}
