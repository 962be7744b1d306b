//! The profile's two passes over a trace, in memory that does not grow
//! with the calls: each rank's iterations classified as its times are
//! read (ranks in parallel), and the ranks read side by side for the
//! wait states, their operations matched in time order.

use super::classes::{Classifier, RankClasses, RankMap};
use super::segments::{ContextPath, SegmentWalk};
use super::similarity::Similarity;
use super::waits::{
    Candidate, ItemCalls, LateArrival, WaitStates, exposure_waits, instance_waits, message_waits,
    settle,
};
use super::{LateKey, ProfileError};
use crate::critical_path::CallSites;
use crate::matching::instances;
use crate::matching::one_sided;
use crate::matching::p2p::Decision;
use crate::matching::{Found, Matcher, world_ranks};
use crate::replay::{Reading, match_in_time_order};
use crate::spill::{Record, Spill, put_u32, u32_at};
use crate::timeline::{Source, Span, rank_spans};
use mpigram_trace::{RankPart, Trace};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};

/// What one rank contributes to the classes and the run's extent: what
/// the process that reads the rank sends the one that merges the ranks'
/// classes (`mpiexec -n K mpigram profile`).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct RankSummary {
    pub(super) rank: u32,
    /// Calls with times, the first start and the last end.
    pub(super) calls: u64,
    pub(super) first_ns: Option<i64>,
    pub(super) last_ns: Option<i64>,
    pub(super) bound_s: f64,
    #[serde(with = "context_paths")]
    pub(super) contexts: Vec<ContextPath>,
    pub(super) classes: RankClasses,
}

/// A rank's summary, and the class of each of its executions.
pub(super) struct RankWork {
    pub(super) summary: RankSummary,
    /// Each classified execution's (rank-local context, class), in order.
    sequence: Spill<Execution>,
}

/// Grammar symbols of context paths as (is a rule, number).
mod context_paths {
    use super::ContextPath;
    use mpigram_grammar::Symbol;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(paths: &[ContextPath], s: S) -> Result<S::Ok, S::Error> {
        let plain: Vec<Vec<(bool, u32)>> = paths
            .iter()
            .map(|p| {
                p.iter()
                    .map(|&sym| match sym {
                        Symbol::Rule(r) => (true, r),
                        Symbol::Terminal(t) => (false, t),
                    })
                    .collect()
            })
            .collect();
        plain.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<ContextPath>, D::Error> {
        let plain = Vec::<Vec<(bool, u32)>>::deserialize(d)?;
        Ok(plain
            .into_iter()
            .map(|p| {
                p.into_iter()
                    .map(|(rule, n)| match rule {
                        true => Symbol::Rule(n),
                        false => Symbol::Terminal(n),
                    })
                    .collect()
            })
            .collect())
    }
}

#[derive(Clone, Copy)]
struct Execution {
    context: u32,
    class: u32,
}

impl Record for Execution {
    const SIZE: usize = 8;
    fn put(&self, out: &mut Vec<u8>) {
        put_u32(out, self.context);
        put_u32(out, self.class);
    }
    fn get(b: &[u8]) -> Execution {
        Execution {
            context: u32_at(b, 0),
            class: u32_at(b, 4),
        }
    }
}

/// Classifies the iterations of one rank as its times are read: the
/// times of the iteration being measured (and of the ones it encloses)
/// are held, no others.
pub(super) fn rank_work(
    trace: &Trace,
    part: &RankPart,
    source: Source,
    run_start_ns: f64,
    within: &dyn Similarity,
) -> Result<RankWork, ProfileError> {
    let rank = part.meta.rank;
    let mut spans = rank_spans(trace, part, source, run_start_ns)?;
    let mut bound = super::TimingBound::new(part, source);
    let mut work = RankWork {
        summary: RankSummary {
            rank,
            calls: 0,
            first_ns: None,
            last_ns: None,
            bound_s: 0.0,
            contexts: Vec::new(),
            classes: RankClasses::default(),
        },
        sequence: Spill::default(),
    };
    let mut take =
        |window: &mut VecDeque<Span>, work: &mut RankWork| -> Result<bool, ProfileError> {
            let Some(span) = spans.next().transpose()? else {
                return Ok(false);
            };
            bound.add(span);
            let summary = &mut work.summary;
            summary.calls += 1;
            summary.first_ns.get_or_insert(span.start_ns);
            summary.last_ns = Some(span.end_ns);
            window.push_back(span);
            Ok(true)
        };
    let mut walk = SegmentWalk::new(&trace.grammar, rank);
    let mut classifier = Classifier::new(within);
    // Spans from call `base` on; the rank's spans have ended if `ended`.
    let mut window: VecDeque<Span> = VecDeque::new();
    let (mut base, mut ended) = (0u64, false);
    let mut times = Vec::new();
    for seg in walk.by_ref() {
        while !ended && base + (window.len() as u64) < seg.first + seg.calls {
            ended = !take(&mut window, &mut work)?;
        }
        // Keep the call before the segment (it starts at that call's end).
        while base + 1 < seg.first && !window.is_empty() {
            window.pop_front();
            base += 1;
        }
        let held = window.make_contiguous();
        if !super::classes::measure_from(held, base, seg.first, seg.calls, &mut times) {
            continue; // calls without times (a killed rank's last ones)
        }
        let class = classifier.classify(seg.context, &times);
        work.sequence.push(&Execution {
            context: seg.context,
            class,
        })?;
    }
    window.clear();
    while take(&mut window, &mut work)? {
        window.clear();
    }
    let summary = &mut work.summary;
    summary.bound_s = bound.seconds();
    summary.contexts = std::mem::take(&mut walk.contexts);
    summary.classes = classifier.finish(summary.contexts.len());
    Ok(work)
}

impl RankWork {
    /// What tells this rank's classes of iterations apart from another
    /// rank's: per merged context, the number of executions and a 128-bit
    /// hash of their merged classes in order.
    pub(super) fn behaviour(
        &self,
        map: &RankMap,
    ) -> Result<Vec<(u32, u64, u64, u64)>, ProfileError> {
        let mut by_context: FxHashMap<u32, (u64, DefaultHasher, DefaultHasher)> =
            FxHashMap::default();
        for e in self.sequence.iter() {
            let e = e?;
            let context = map.contexts[e.context as usize];
            let class = map.classes[e.class as usize];
            let entry = by_context.entry(context).or_insert_with(|| {
                let mut second = DefaultHasher::new();
                0xA5A5_u16.hash(&mut second);
                (0, DefaultHasher::new(), second)
            });
            entry.0 += 1;
            class.hash(&mut entry.1);
            class.hash(&mut entry.2);
        }
        let mut key: Vec<(u32, u64, u64, u64)> = by_context
            .into_iter()
            .map(|(c, (n, a, b))| (c, n, a.finish(), b.finish()))
            .collect();
        key.sort_unstable();
        Ok(key)
    }
}

/// Per merged context: executions and a 128-bit hash of their classes.
pub(super) type Behaviour = Vec<(u32, u64, u64, u64)>;

/// What the wait-state pass finds.
pub(super) struct Waits {
    pub(super) states: WaitStates,
    pub(super) late: FxHashMap<LateKey, (u64, f64)>,
    /// Point-to-point operations that matched nothing.
    pub(super) unmatched: usize,
}

/// Reads the ranks side by side, a chunk of calls at a time (the ranks
/// furthest behind in time first), matches their operations and weighs
/// the wait states of every message, collective instance and epoch pair
/// as soon as it is settled.
pub(super) fn waits(
    trace: &Trace,
    reading: Reading,
    sites: &CallSites,
) -> Result<Waits, ProfileError> {
    let members = world_ranks(trace);
    let world: Vec<u32> = trace.ranks.iter().map(|p| p.meta.rank).collect();
    let mut matcher = Matcher::new(&members, world);
    let mut candidates: Spill<Candidate> = Spill::default();
    let mut out = Waits {
        states: WaitStates::default(),
        late: FxHashMap::default(),
        unmatched: 0,
    };
    let mut failed: Option<std::io::Error> = None;
    match_in_time_order(trace, reading, &mut matcher, |matcher| {
        weigh(matcher, sites, &mut candidates, &mut out, &mut failed)
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    out.states = settle(&candidates)?;
    Ok(out)
}

/// Weighs the wait states of what the matcher found.
fn weigh(
    matcher: &mut Matcher,
    sites: &CallSites,
    candidates: &mut Spill<Candidate>,
    out: &mut Waits,
    failed: &mut Option<std::io::Error>,
) {
    let mut found_waits = Vec::new();
    let mut late: Vec<LateArrival> = Vec::new();
    for found in matcher.found.drain(..) {
        let mut calls = ItemCalls::new(sites);
        match found {
            Found::PointToPoint(Decision::Settled(m)) => {
                for op in [&m.send, &m.recv] {
                    calls.add(op.rank, Some(op.post), Some(op.post_at)).add(
                        op.rank,
                        op.completion,
                        op.completion_at,
                    );
                }
                message_waits(&m.send, &m.recv, &calls, &mut found_waits);
            }
            Found::PointToPoint(Decision::Unmatched { .. }) => out.unmatched += 1,
            Found::Collective(instances::Found::Settled { instance, .. }) => {
                for p in &instance.participants {
                    calls.add(p.rank, Some(p.post), Some(p.post_at)).add(
                        p.rank,
                        p.completion,
                        p.completion_at,
                    );
                }
                instance_waits(&instance, &calls, &mut found_waits, &mut late);
            }
            Found::OneSided(one_sided::Found::Exposure { exposure: e, .. }) => {
                calls
                    .add(e.origin, Some(e.start), Some(e.start_at))
                    .add(e.origin, e.complete, e.complete_at)
                    .add(e.target, Some(e.post), Some(e.post_at))
                    .add(e.target, e.wait, e.wait_at);
                exposure_waits(&e, &calls, &mut found_waits);
            }
            _ => {}
        }
    }
    for l in late {
        let t = out.late.entry((l.site, l.rank, l.func)).or_default();
        t.0 += 1;
        t.1 += l.cost_s;
    }
    for c in found_waits {
        if let Err(e) = candidates.push(&c) {
            failed.get_or_insert(e);
        }
    }
}
