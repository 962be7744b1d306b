//! Behaviour classes: executions of a segment context that behave alike.
//!
//! Within a rank, each execution's measurement vector is compared with the
//! first execution (the leader) of each class of its context found so far,
//! first match wins (the thesis's Fig. 8); no match opens a new class.
//! Across ranks the same is done with the ranks' classes, in rank order,
//! using their leaders and the looser across-rank threshold. A context
//! keeps at most [`MAX_CLASSES`] classes per rank: past that, an execution
//! that matches none joins the nearest one and is counted as unmatched.

use super::segments::{ContextPath, RankSegments};
use super::similarity::Similarity;
use crate::timeline::Span;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Classes per context and rank at most.
pub const MAX_CLASSES: usize = 16;

/// A class of one context on one rank.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RankClass {
    /// Rank-local context index.
    pub context: u32,
    /// The leader's transformed measurements.
    pub leader: Vec<f64>,
    /// Sum of the members' measurement vectors (seconds).
    pub sum: Vec<f64>,
    pub executions: u64,
}

/// One rank's classes.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RankClasses {
    pub classes: Vec<RankClass>,
    /// Per rank-local context: its executions' class indices in order.
    pub sequences: Vec<Vec<u32>>,
    /// Executions that matched no class of a full context.
    pub unmatched: Vec<u64>,
}

/// Classifies the segments of one rank whose calls ran at `spans`.
pub fn classify_rank(segs: &RankSegments, spans: &[Span], within: &dyn Similarity) -> RankClasses {
    let mut classifier = Classifier::new(within);
    let mut sequences: Vec<Vec<u32>> = vec![Vec::new(); segs.contexts.len()];
    let mut times = Vec::new();
    for seg in &segs.segments {
        if !measure(spans, seg.first, seg.calls, &mut times) {
            continue; // calls without times (a killed rank's last ones)
        }
        let class = classifier.classify(seg.context, &times);
        sequences[seg.context as usize].push(class);
    }
    let mut out = classifier.finish(segs.contexts.len());
    out.sequences = sequences;
    out
}

/// Classifies one rank's executions one at a time, in order.
pub struct Classifier<'s> {
    within: &'s dyn Similarity,
    classes: Vec<RankClass>,
    unmatched: Vec<u64>,
    /// Class indices of each context.
    of_context: Vec<Vec<u32>>,
}

impl<'s> Classifier<'s> {
    pub fn new(within: &'s dyn Similarity) -> Classifier<'s> {
        Classifier {
            within,
            classes: Vec::new(),
            unmatched: Vec::new(),
            of_context: Vec::new(),
        }
    }

    /// The class of an execution of rank-local context `context` whose
    /// measurement vector is `times`.
    pub fn classify(&mut self, context: u32, times: &[f64]) -> u32 {
        let within = self.within;
        let ctx = context as usize;
        if self.of_context.len() <= ctx {
            self.of_context.resize(ctx + 1, Vec::new());
            self.unmatched.resize(ctx + 1, 0);
        }
        let v = within.transform(times);
        let found = self.of_context[ctx]
            .iter()
            .copied()
            .find(|&c| within.similar(&self.classes[c as usize].leader, &v));
        let class = match found {
            Some(c) => c,
            None if self.of_context[ctx].len() < MAX_CLASSES => {
                let c = self.classes.len() as u32;
                self.classes.push(RankClass {
                    context,
                    leader: v,
                    sum: vec![0.0; times.len()],
                    executions: 0,
                });
                self.of_context[ctx].push(c);
                c
            }
            None => {
                self.unmatched[ctx] += 1;
                nearest(&self.of_context[ctx], &self.classes, &v, within)
            }
        };
        let c = &mut self.classes[class as usize];
        c.executions += 1;
        for (s, t) in c.sum.iter_mut().zip(times) {
            *s += t;
        }
        class
    }

    /// The rank's classes, for `contexts` contexts (no sequences: the
    /// caller kept them).
    pub fn finish(mut self, contexts: usize) -> RankClasses {
        self.unmatched.resize(contexts.max(self.unmatched.len()), 0);
        RankClasses {
            classes: self.classes,
            sequences: Vec::new(),
            unmatched: self.unmatched,
        }
    }
}

/// The class whose leader is closest to `v`, relative to its limit.
fn nearest(candidates: &[u32], classes: &[RankClass], v: &[f64], op: &dyn Similarity) -> u32 {
    let ratio = |c: u32| {
        let leader = &classes[c as usize].leader;
        let limit = op.limit(leader, v);
        let d = op.distance(leader, v);
        if limit > 0.0 { d / limit } else { d }
    };
    candidates
        .iter()
        .copied()
        .min_by(|&a, &b| ratio(a).total_cmp(&ratio(b)))
        .unwrap_or(0)
}

/// Fills `out` with the measurement vector of the `calls` calls from
/// `first`: `[0, start0, end0, start1, ..., end]` in seconds from the end
/// of the call before (or the first call's start). False if any lacks times.
pub fn measure(spans: &[Span], first: u64, calls: u64, out: &mut Vec<f64>) -> bool {
    measure_from(spans, 0, first, calls, out)
}

/// [`measure`] with `spans` the times of calls `base..`.
pub(super) fn measure_from(
    spans: &[Span],
    base: u64,
    first: u64,
    calls: u64,
    out: &mut Vec<f64>,
) -> bool {
    let Some(at) = first
        .checked_sub(base)
        .and_then(|a| usize::try_from(a).ok())
    else {
        return false;
    };
    let Ok(calls) = usize::try_from(calls) else {
        return false;
    };
    let Some(these) = spans.get(at..at.saturating_add(calls)) else {
        return false;
    };
    let Some(head) = these.first() else {
        return false;
    };
    let origin = match (first, at.checked_sub(1)) {
        (0, _) => head.start_ns,
        (_, Some(before)) => spans[before].end_ns,
        (_, None) => return false, // the call before is not held
    };
    let s = |ns: i64| (ns - origin) as f64 / 1e9;
    out.clear();
    out.push(0.0);
    for span in these {
        out.push(s(span.start_ns));
        out.push(s(span.end_ns));
    }
    true
}

/// A behaviour class of a context over all ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct BehaviourClass {
    /// Executions over all ranks.
    pub executions: u64,
    /// Its share of the context's executions (0..=1).
    pub share: f64,
    /// The mean measurement vector (seconds from the segment start).
    pub mean_times_s: Vec<f64>,
    /// Ranks with executions in it, ascending.
    pub ranks: Vec<u32>,
}

impl BehaviourClass {
    /// The mean duration of an execution, in seconds.
    pub fn mean_duration_s(&self) -> f64 {
        self.mean_times_s.last().copied().unwrap_or(0.0)
    }
}

/// Classes of one context across ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextClasses {
    pub path: ContextPath,
    pub executions: u64,
    /// Seconds spent in its executions, over all ranks.
    pub total_s: f64,
    /// Most executions first.
    pub classes: Vec<BehaviourClass>,
    /// Executions that matched no class within the threshold.
    pub unmatched: u64,
}

/// Every rank's classes merged across ranks.
pub struct Merged {
    pub contexts: Vec<ContextClasses>,
    /// Per rank (in the order given): global context -> its executions'
    /// global class ids, in order.
    pub sequences: Vec<Vec<(u32, Vec<u32>)>>,
}

/// Merges the ranks' classes: per context, leader clustering of the
/// ranks' classes in rank order with `across`.
pub fn merge_ranks(
    ranks: &[(u32, &RankSegments, &RankClasses)],
    across: &dyn Similarity,
) -> Merged {
    let mut merge = Merge::new(across);
    let mut sequences = Vec::with_capacity(ranks.len());
    for &(rank, segs, classes) in ranks {
        let map = merge.add(rank, &segs.contexts, classes);
        let mut seq: Vec<(u32, Vec<u32>)> = classes
            .sequences
            .iter()
            .enumerate()
            .map(|(local, s)| {
                let ids = s.iter().map(|&c| map.classes[c as usize]).collect();
                (map.contexts[local], ids)
            })
            .collect();
        seq.sort_by_key(|(c, _)| *c);
        sequences.push(seq);
    }
    Merged {
        contexts: merge.finish(),
        sequences,
    }
}

/// A rank's contexts and classes in the merged ones.
#[derive(Debug, Serialize, Deserialize)]
pub struct RankMap {
    /// The global context of each local one.
    pub contexts: Vec<u32>,
    /// The global class (within its context) of each local class.
    pub classes: Vec<u32>,
}

struct Building {
    path: ContextPath,
    /// Leaders of the global classes.
    leaders: Vec<Vec<f64>>,
    sums: Vec<Vec<f64>>,
    executions: Vec<u64>,
    ranks: Vec<Vec<u32>>,
    unmatched: u64,
}

/// Merges ranks' classes one rank at a time, in rank order.
pub struct Merge<'s> {
    across: &'s dyn Similarity,
    index: FxHashMap<ContextPath, u32>,
    building: Vec<Building>,
}

impl<'s> Merge<'s> {
    pub fn new(across: &'s dyn Similarity) -> Merge<'s> {
        Merge {
            across,
            index: FxHashMap::default(),
            building: Vec::new(),
        }
    }

    /// Adds the classes of `rank`, whose contexts are `contexts`.
    pub fn add(&mut self, rank: u32, contexts: &[ContextPath], classes: &RankClasses) -> RankMap {
        let building = &mut self.building;
        let contexts: Vec<u32> = contexts
            .iter()
            .map(|path| {
                *self.index.entry(path.clone()).or_insert_with(|| {
                    building.push(Building {
                        path: path.clone(),
                        leaders: Vec::new(),
                        sums: Vec::new(),
                        executions: Vec::new(),
                        ranks: Vec::new(),
                        unmatched: 0,
                    });
                    building.len() as u32 - 1
                })
            })
            .collect();
        for (local, &n) in classes.unmatched.iter().enumerate() {
            if let Some(&g) = contexts.get(local) {
                building[g as usize].unmatched += n;
            }
        }
        let mut global_class = Vec::with_capacity(classes.classes.len());
        for class in &classes.classes {
            let b = &mut building[contexts[class.context as usize] as usize];
            let found = b
                .leaders
                .iter()
                .position(|leader| self.across.similar(leader, &class.leader));
            let g = match found {
                Some(g) => g,
                None => {
                    b.leaders.push(class.leader.clone());
                    b.sums.push(vec![0.0; class.sum.len()]);
                    b.executions.push(0);
                    b.ranks.push(Vec::new());
                    b.leaders.len() - 1
                }
            };
            b.executions[g] += class.executions;
            for (s, x) in b.sums[g].iter_mut().zip(&class.sum) {
                *s += x;
            }
            if b.ranks[g].last() != Some(&rank) {
                b.ranks[g].push(rank);
            }
            global_class.push(g as u32);
        }
        RankMap {
            contexts,
            classes: global_class,
        }
    }

    /// The behaviour classes of every context.
    pub fn finish(self) -> Vec<ContextClasses> {
        self.building
            .into_iter()
            .map(|b| {
                let executions: u64 = b.executions.iter().sum();
                let mut total_s = 0.0;
                let mut classes: Vec<BehaviourClass> = (0..b.leaders.len())
                    .map(|g| {
                        let n = b.executions[g];
                        total_s += b.sums[g].last().copied().unwrap_or(0.0);
                        BehaviourClass {
                            executions: n,
                            share: if executions > 0 {
                                n as f64 / executions as f64
                            } else {
                                0.0
                            },
                            mean_times_s: b.sums[g].iter().map(|s| s / n.max(1) as f64).collect(),
                            ranks: b.ranks[g].clone(),
                        }
                    })
                    .collect();
                classes.sort_by_key(|c| std::cmp::Reverse(c.executions));
                ContextClasses {
                    path: b.path,
                    executions,
                    total_s,
                    classes,
                    unmatched: b.unmatched,
                }
            })
            .collect()
    }
}

/// Ranks whose sequences of behaviour classes agree, each group ascending,
/// groups by their first rank.
pub fn rank_groups(ranks: &[u32], sequences: &[Vec<(u32, Vec<u32>)>]) -> Vec<Vec<u32>> {
    let mut groups: FxHashMap<&[(u32, Vec<u32>)], Vec<u32>> = FxHashMap::default();
    for (&rank, seq) in ranks.iter().zip(sequences) {
        groups.entry(seq.as_slice()).or_default().push(rank);
    }
    let mut groups: Vec<Vec<u32>> = groups.into_values().collect();
    for g in &mut groups {
        g.sort_unstable();
    }
    groups.sort();
    groups
}

#[cfg(test)]
mod tests {
    use super::super::segments::Segment;
    use super::super::similarity::{Method, Minkowski};
    use super::*;
    use mpigram_grammar::Symbol;

    /// Calls of `durations` ns back to back after `gap` ns each.
    fn spans(calls: &[(i64, i64)]) -> Vec<Span> {
        let mut at = 0;
        calls
            .iter()
            .map(|&(gap, dur)| {
                let start = at + gap;
                at = start + dur;
                Span {
                    start_ns: start,
                    end_ns: at,
                }
            })
            .collect()
    }

    #[test]
    fn measurements_start_where_the_previous_call_ended() {
        let s = spans(&[(5, 10), (100, 20), (30, 40)]);
        let mut v = Vec::new();
        assert!(measure(&s, 1, 2, &mut v));
        assert_eq!(v, [0.0, 100e-9, 120e-9, 150e-9, 190e-9]);
        assert!(measure(&s, 0, 1, &mut v));
        assert_eq!(v, [0.0, 0.0, 10e-9]);
        assert!(!measure(&s, 2, 2, &mut v));
    }

    /// One context of one call: iterations with these (gap, duration),
    /// after a first call (MPI_Init).
    fn one_loop(iterations: &[(i64, i64)]) -> (RankSegments, Vec<Span>) {
        let segs = RankSegments {
            contexts: vec![vec![Symbol::Terminal(0)]],
            segments: (1..=iterations.len() as u64)
                .map(|i| Segment {
                    context: 0,
                    first: i,
                    calls: 1,
                })
                .collect(),
        };
        let mut calls = vec![(0, 5)];
        calls.extend_from_slice(iterations);
        (segs, spans(&calls))
    }

    #[test]
    fn iterations_fall_into_classes_by_similarity() {
        // 8 fast iterations (100 compute + 10 in the call), 2 slow in compute.
        let mut its = vec![(100, 10); 8];
        its.insert(3, (1000, 10));
        its.push((1010, 12));
        let (segs, s) = one_loop(&its);
        let op = Method::AvgWave.with_threshold(0.2);
        let c = classify_rank(&segs, &s, op.as_ref());
        assert_eq!(c.classes.len(), 2);
        assert_eq!(c.classes[0].executions, 8);
        assert_eq!(c.classes[1].executions, 2);
        assert_eq!(c.sequences[0], [0, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
        // The slow class's mean: starts at 1005 ns, ends at 1016 ns.
        let mean: Vec<f64> = c.classes[1].sum.iter().map(|x| x / 2.0).collect();
        assert!((mean[1] - 1005e-9).abs() < 1e-15 && (mean[2] - 1016e-9).abs() < 1e-15);

        // Merged alone: shares 80/20.
        let m = merge_ranks(&[(0, &segs, &c)], op.as_ref());
        let ctx = &m.contexts[0];
        assert_eq!(ctx.executions, 10);
        let shares: Vec<f64> = ctx.classes.iter().map(|c| c.share).collect();
        assert_eq!(shares, [0.8, 0.2]);
        assert!((ctx.total_s - (8.0 * 110e-9 + 1010e-9 + 1022e-9)).abs() < 1e-15);
    }

    #[test]
    fn a_full_context_sends_the_rest_to_the_nearest_class_as_unmatched() {
        // Durations growing by half each time: nothing matches at 0.2.
        let its: Vec<(i64, i64)> = (0..20).map(|i| (0, 1i64 << i)).collect();
        let (segs, s) = one_loop(&its);
        let op = Minkowski::chebyshev(0.2);
        let c = classify_rank(&segs, &s, &op);
        assert_eq!(c.classes.len(), MAX_CLASSES);
        assert_eq!(c.unmatched[0], 20 - MAX_CLASSES as u64);
        // The last ones are nearest the largest class leader.
        assert_eq!(c.sequences[0][19], MAX_CLASSES as u32 - 1);
    }

    #[test]
    fn ranks_that_behave_alike_share_classes_and_form_groups() {
        let fast = vec![(100, 10); 4];
        let slow = vec![(100, 10), (1000, 10), (100, 10), (1000, 10)];
        let within = Method::AvgWave.with_threshold(0.2);
        let across = Method::AvgWave.with_threshold(0.4);
        let runs = [fast.clone(), slow.clone(), fast, slow];
        let built: Vec<(RankSegments, Vec<Span>)> = runs.iter().map(|r| one_loop(r)).collect();
        let classes: Vec<RankClasses> = built
            .iter()
            .map(|(segs, s)| classify_rank(segs, s, within.as_ref()))
            .collect();
        let input: Vec<(u32, &RankSegments, &RankClasses)> = (0..4)
            .map(|r| (r as u32, &built[r].0, &classes[r]))
            .collect();
        let m = merge_ranks(&input, across.as_ref());
        let ctx = &m.contexts[0];
        assert_eq!(ctx.classes.len(), 2);
        assert_eq!(ctx.classes[0].executions, 12);
        assert_eq!(ctx.classes[0].ranks, [0, 1, 2, 3]);
        assert_eq!(ctx.classes[1].ranks, [1, 3]);
        assert_eq!(ctx.classes[1].share, 0.25);
        let groups = rank_groups(&[0, 1, 2, 3], &m.sequences);
        assert_eq!(groups, [vec![0, 2], vec![1, 3]]);
    }
}
