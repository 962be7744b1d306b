//! The interval-grouping heuristic of the critical-path paper: the
//! computation intervals of all ranks (between consecutive calls) sorted by
//! start, grouped while they overlap; the longest interval of each group is
//! taken to be on the critical path, and the chosen intervals chained. No
//! graph and no messages: right for bulk-synchronous programs with
//! synchronised clocks, a hint otherwise. Its deviation from the exact path
//! is measured here.

use super::path::RankCallTimes;
use super::{Activity, CriticalPath, RankCalls};
use crate::timeline::Span;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A computation interval of one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interval {
    pub rank: u32,
    /// The call it follows.
    pub after: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// The heuristic's path and how far it is from the exact one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Heuristic {
    /// The longest interval of each group, in time order.
    pub intervals: Vec<Interval>,
    pub groups: usize,
    pub compute_ns: i64,
    /// (world rank, computation on the heuristic path), every rank.
    pub by_rank_compute_ns: Vec<(u32, i64)>,
    /// Computation on the exact path.
    pub exact_compute_ns: i64,
    /// Time that both paths spend computing on the same rank.
    pub agreement_ns: i64,
}

impl Heuristic {
    /// The part of the exact path's computation the heuristic misses
    /// (0: it finds all of it).
    pub fn missed(&self) -> f64 {
        if self.exact_compute_ns <= 0 {
            return 0.0;
        }
        1.0 - self.agreement_ns as f64 / self.exact_compute_ns as f64
    }

    /// Largest difference between the two paths in a rank's share of
    /// computation (0 to 1).
    pub fn share_deviation(&self, exact: &CriticalPath) -> f64 {
        let share = |v: i64, total: i64| {
            if total > 0 {
                v as f64 / total as f64
            } else {
                0.0
            }
        };
        self.by_rank_compute_ns
            .iter()
            .zip(&exact.by_rank_compute_ns)
            .map(|(&(_, h), &(_, e))| {
                (share(h, self.compute_ns) - share(e, self.exact_compute_ns)).abs()
            })
            .fold(0.0, f64::max)
    }
}

/// Chosen intervals kept in [`Heuristic::intervals`] (every one counts in
/// the sums).
pub const KEPT_INTERVALS: usize = 1000;

/// The heuristic on calls in memory.
pub fn interval_grouping(ranks: &[RankCalls], exact: &CriticalPath) -> Heuristic {
    let mut intervals: Vec<Interval> = ranks
        .iter()
        .flat_map(|r| {
            r.spans.windows(2).enumerate().filter_map(move |(k, w)| {
                (w[1].start_ns > w[0].end_ns).then_some(Interval {
                    rank: r.rank,
                    after: k as u32,
                    start_ns: w[0].end_ns,
                    end_ns: w[1].start_ns,
                })
            })
        })
        .collect();
    intervals.sort_unstable_by_key(|i| (i.start_ns, i.rank));
    let ranks: Vec<u32> = ranks.iter().map(|r| r.rank).collect();
    group(intervals.into_iter(), &ranks, exact)
}

/// The heuristic on the ranks' calls read again from a trace: each rank's
/// intervals (in time order) merged by start. `world[r]`: rank index r's
/// world rank.
pub(super) fn grouping_of_streams<'a, E>(
    world: &[u32],
    calls: &dyn Fn(u32) -> Result<RankCallTimes<'a, E>, E>,
    exact: &CriticalPath,
) -> Result<Heuristic, E> {
    let mut streams = Vec::with_capacity(world.len());
    for r in 0..world.len() as u32 {
        streams.push((calls(r)?, None::<Span>, 0u32));
    }
    // The next interval of each rank, merged by (start, rank).
    let mut next = |r: usize| -> Result<Option<Interval>, E> {
        let (calls, last, k) = &mut streams[r];
        for call in calls.by_ref() {
            let (span, _) = call?;
            let before = last.replace(span);
            *k += 1;
            if let Some(before) = before {
                if span.start_ns > before.end_ns {
                    return Ok(Some(Interval {
                        rank: world[r],
                        after: *k - 2,
                        start_ns: before.end_ns,
                        end_ns: span.start_ns,
                    }));
                }
            }
        }
        Ok(None)
    };
    let mut heap = BinaryHeap::new();
    for r in 0..world.len() {
        if let Some(i) = next(r)? {
            heap.push(Reverse(((i.start_ns, i.rank), r, i)));
        }
    }
    let mut failed = None;
    let merged = std::iter::from_fn(|| {
        let Reverse((_, r, i)) = heap.pop()?;
        match next(r) {
            Ok(Some(n)) => heap.push(Reverse(((n.start_ns, n.rank), r, n))),
            Ok(None) => {}
            Err(e) => failed = Some(e),
        }
        Some(i)
    });
    let h = group(merged, world, exact);
    match failed {
        Some(e) => Err(e),
        None => Ok(h),
    }
}

/// Groups `intervals` (in order of start, then rank) while they overlap,
/// takes each group's longest, and measures it against the exact path.
fn group(
    intervals: impl Iterator<Item = Interval>,
    ranks: &[u32],
    exact: &CriticalPath,
) -> Heuristic {
    let mut h = Heuristic {
        by_rank_compute_ns: ranks.iter().map(|&r| (r, 0)).collect(),
        ..Heuristic::default()
    };
    let mut exact_compute = exact
        .segments
        .iter()
        .filter(|s| matches!(s.activity, Activity::Computation { .. }));
    let mut pending_exact = exact_compute.next();
    let mut choose = |h: &mut Heuristic, c: Interval| {
        h.compute_ns += c.end_ns - c.start_ns;
        if let Some(e) = h.by_rank_compute_ns.iter_mut().find(|(r, _)| *r == c.rank) {
            e.1 += c.end_ns - c.start_ns;
        }
        if h.intervals.len() < KEPT_INTERVALS {
            h.intervals.push(c);
        }
        // Overlap, on the same rank, of the chosen intervals and the exact
        // path's computation (both in time order, neither overlapping itself).
        while let Some(e) = pending_exact {
            if c.rank == e.rank {
                h.agreement_ns += (c.end_ns.min(e.end_ns) - c.start_ns.max(e.start_ns)).max(0);
            }
            if c.end_ns < e.end_ns {
                break;
            }
            h.exact_compute_ns += e.duration_ns();
            pending_exact = exact_compute.next();
        }
    };
    let mut current: Option<Interval> = None;
    let mut group_end = i64::MIN;
    for i in intervals {
        if i.start_ns >= group_end {
            h.groups += 1;
            if let Some(c) = current.replace(i) {
                choose(&mut h, c);
            }
        } else if let Some(longest) = &mut current {
            if i.end_ns - i.start_ns > longest.end_ns - longest.start_ns {
                *longest = i;
            }
        }
        group_end = group_end.max(i.end_ns);
    }
    if let Some(c) = current {
        choose(&mut h, c);
    }
    while let Some(e) = pending_exact {
        h.exact_compute_ns += e.duration_ns();
        pending_exact = exact_compute.next();
    }
    h
}
