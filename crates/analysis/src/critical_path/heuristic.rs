//! The interval-grouping heuristic of the critical-path paper: the
//! computation intervals of all ranks (between consecutive calls) sorted by
//! start, grouped while they overlap; the longest interval of each group is
//! taken to be on the critical path, and the chosen intervals chained. No
//! graph and no messages: right for bulk-synchronous programs with
//! synchronised clocks, a hint otherwise. Its deviation from the exact path
//! is measured here.

use super::{Activity, CriticalPath, RankCalls};

/// A computation interval of one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    let mut chosen: Vec<Interval> = Vec::new();
    let mut groups = 0;
    let mut group_end = i64::MIN;
    for i in intervals {
        if i.start_ns >= group_end {
            groups += 1;
            chosen.push(i);
        } else if let Some(longest) = chosen.last_mut() {
            if i.end_ns - i.start_ns > longest.end_ns - longest.start_ns {
                *longest = i;
            }
        }
        group_end = group_end.max(i.end_ns);
    }
    let mut by_rank: Vec<(u32, i64)> = ranks.iter().map(|r| (r.rank, 0)).collect();
    for i in &chosen {
        if let Some(e) = by_rank.iter_mut().find(|(r, _)| *r == i.rank) {
            e.1 += i.end_ns - i.start_ns;
        }
    }
    // Overlap, on the same rank, of the chosen intervals and the exact
    // path's computation (both in time order, neither overlapping itself).
    let exact_compute: Vec<_> = exact
        .segments
        .iter()
        .filter(|s| matches!(s.activity, Activity::Computation { .. }))
        .collect();
    let mut agreement = 0;
    let (mut a, mut b) = (0, 0);
    while a < chosen.len() && b < exact_compute.len() {
        let (h, e) = (&chosen[a], exact_compute[b]);
        if h.rank == e.rank {
            agreement += (h.end_ns.min(e.end_ns) - h.start_ns.max(e.start_ns)).max(0);
        }
        if h.end_ns < e.end_ns {
            a += 1;
        } else {
            b += 1;
        }
    }
    Heuristic {
        compute_ns: chosen.iter().map(|i| i.end_ns - i.start_ns).sum(),
        intervals: chosen,
        groups,
        by_rank_compute_ns: by_rank,
        exact_compute_ns: exact_compute.iter().map(|s| s.duration_ns()).sum(),
        agreement_ns: agreement,
    }
}
