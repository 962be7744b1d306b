//! Waiting at collectives, as the critical-path paper defines it. For
//! process i of one collective instance:
//!
//! - wait-before `wb = t_start_max - t_start[i]`: waiting for the last to arrive;
//! - wait-after `wa = t_end[i] - t_end_min`: still inside after the first left;
//! - execution `exec = t_end_min - t_start_max`: the operation itself;
//! - imbalance `(wb + wa) / exec`.
//!
//! Those are the N×N collectives' (Allreduce, Barrier, ...), where every
//! process depends on every other's arrival. In general a process waits
//! for the arrival of the processes its end depends on, by the same rules
//! as the graph's edges: at a broadcast or scatter the root's alone (the
//! root waits for nobody), at a reduce or gather the root waits for every
//! process and the others for nobody, at a scan process i waits for 0..=i.
//! So for each process, `arrived[i]` is the latest start among those (its
//! own at least, and at most its end: clocks of different hosts may
//! disagree), `wb = arrived[i] - t_start[i]`, the execution is the shortest
//! time any process spent after its `arrived`, and `wa` is the rest of its
//! time in the call. Every term is at least 0, and `wb + wa + exec` is the
//! process's time in the collective (from its post to its completion). A
//! broadcast whose root left before the others arrived (MPICH lets it) has
//! no waits and a short execution, not a negative one.
//!
//! Per rank and for the whole run the sums are divided: Σ(wb + wa) / Σ exec
//! (the paper's table; `exec` counts once per process), and also with the
//! rank's computation added to the divisor (the paper's formula). A
//! non-blocking collective starts at its post and ends at its completion;
//! neighbourhood collectives and persistent setups have no common start and
//! end and are left out.

use super::RankCalls;
use crate::matching::Matching;
use crate::matching::collectives::{CollectiveInstance, CollectiveKind, Participant};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Sums of one rank's (or the run's) waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankWaits {
    pub wait_before_ns: i64,
    pub wait_after_ns: i64,
    pub exec_ns: i64,
    /// Time between calls (computation), for the paper's per-process divisor.
    pub compute_ns: i64,
    pub calls: u64,
}

impl RankWaits {
    pub fn wait_ns(&self) -> i64 {
        self.wait_before_ns + self.wait_after_ns
    }

    /// Σ(wb + wa) / Σ exec; None without execution time.
    pub fn imbalance(&self) -> Option<f64> {
        (self.exec_ns > 0).then(|| self.wait_ns() as f64 / self.exec_ns as f64)
    }

    /// Σ(wb + wa) / (Σ exec + computation).
    pub fn imbalance_with_compute(&self) -> Option<f64> {
        let d = self.exec_ns + self.compute_ns;
        (d > 0).then(|| self.wait_ns() as f64 / d as f64)
    }

    fn add(&mut self, wb: i64, wa: i64, exec: i64) {
        self.wait_before_ns += wb;
        self.wait_after_ns += wa;
        self.exec_ns += exec;
        self.calls += 1;
    }

    /// Adds the sums of `other` (of other instances).
    fn merge(&mut self, other: &RankWaits) {
        self.wait_before_ns += other.wait_before_ns;
        self.wait_after_ns += other.wait_after_ns;
        self.exec_ns += other.exec_ns;
        self.calls += other.calls;
    }
}

/// The waits at one call site (a place in the grammar) over all its
/// instances.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSiteWaits {
    /// A number in [`super::CallSites`].
    pub site: u32,
    pub waits: RankWaits,
    /// Of the instances this site's calls took part in, the rank that
    /// arrived last most often, and how often.
    pub last_rank: u32,
    pub last_count: u64,
    /// Instances this site's calls took part in (ranks that do not share
    /// the grammar rule of a collective call meet at different sites).
    pub instances: u64,
}

/// One process of one collective instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallWaits {
    pub rank: u32,
    /// The call that posted it.
    pub seq: u64,
    pub wait_before_ns: i64,
    pub wait_after_ns: i64,
    /// Its time in the collective: from the post's start to the
    /// completion's end.
    pub duration_ns: i64,
}

/// One collective instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceWaits {
    /// Index in `crate::matching::Collectives::instances`.
    pub instance: usize,
    pub exec_ns: i64,
    pub calls: Vec<CallWaits>,
}

impl InstanceWaits {
    pub fn imbalance(&self) -> Option<f64> {
        let wait: i64 = self
            .calls
            .iter()
            .map(|c| c.wait_before_ns + c.wait_after_ns)
            .sum();
        (self.exec_ns > 0).then(|| wait as f64 / self.exec_ns as f64)
    }
}

/// Instances kept in [`WaitStats::instances`] (every instance counts in
/// the sums and in [`WaitStats::instance_count`]).
pub const KEPT_INSTANCES: usize = 1000;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitStats {
    /// Every rank, by world rank.
    pub by_rank: Vec<(u32, RankWaits)>,
    pub total: RankWaits,
    /// Most waiting first.
    pub by_site: Vec<CallSiteWaits>,
    /// The first [`KEPT_INSTANCES`] instances, in detail.
    pub instances: Vec<InstanceWaits>,
    /// Instances weighed.
    pub instance_count: usize,
    /// Instances left out: a participant without time or completion.
    pub untimed: usize,
}

/// When a participant posted (start of its posting call), when its
/// completing call ended, and the posting call's call site.
pub(crate) type Timed = (i64, i64, u32);

/// Wait statistics summed instance by instance.
#[derive(Serialize, Deserialize)]
pub(crate) struct Waits {
    /// Each world rank's index in `by_rank`.
    index: FxHashMap<u32, usize>,
    ranks: Vec<u32>,
    by_rank: Vec<RankWaits>,
    sites: FxHashMap<u32, (CallSiteWaits, FxHashMap<u32, u64>)>,
    stats: WaitStats,
}

impl Waits {
    /// Sums for `ranks` (world ranks).
    pub(crate) fn new(ranks: &[u32]) -> Waits {
        Waits {
            index: ranks.iter().enumerate().map(|(i, &r)| (r, i)).collect(),
            ranks: ranks.to_vec(),
            by_rank: vec![RankWaits::default(); ranks.len()],
            sites: FxHashMap::default(),
            stats: WaitStats::default(),
        }
    }

    /// Instance `n`, whose participants' times `timed` gives (None: no
    /// time or no completion).
    pub(crate) fn instance(
        &mut self,
        n: usize,
        inst: &CollectiveInstance,
        timed: impl Fn(&Participant) -> Option<Timed>,
    ) {
        if matches!(
            inst.kind,
            CollectiveKind::Neighborhood | CollectiveKind::Setup
        ) {
            return;
        }
        let mut times = Vec::with_capacity(inst.participants.len());
        for p in &inst.participants {
            let (Some(&r), Some((start, end, site))) = (self.index.get(&p.rank), timed(p)) else {
                self.stats.untimed += 1;
                return;
            };
            times.push((r, p, start, end, site));
        }
        let Some(start_max) = times.iter().map(|t| t.2).max() else {
            return;
        };
        let starts: Vec<i64> = times.iter().map(|t| t.2).collect();
        let root = inst
            .root
            .and_then(|root| times.iter().position(|t| t.1.rank == root));
        let arrived: Vec<i64> = arrivals(inst.kind, root, &starts)
            .into_iter()
            .zip(&times)
            .map(|(a, t)| a.clamp(t.2, t.3))
            .collect();
        let exec = times
            .iter()
            .zip(&arrived)
            .map(|(t, a)| t.3 - a)
            .min()
            .unwrap_or(0);
        let last = times.iter().find(|t| t.2 == start_max).map(|t| t.1.rank);
        let mut calls = Vec::with_capacity(times.len());
        let mut at_sites: Vec<u32> = Vec::new();
        for (&(r, p, start, end, site), &arrived) in times.iter().zip(&arrived) {
            let (wb, wa) = (arrived - start, end - arrived - exec);
            self.by_rank[r].add(wb, wa, exec);
            self.stats.total.add(wb, wa, exec);
            let entry = self.sites.entry(site).or_insert_with(|| {
                (
                    CallSiteWaits {
                        site,
                        ..CallSiteWaits::default()
                    },
                    FxHashMap::default(),
                )
            });
            entry.0.waits.add(wb, wa, exec);
            at_sites.push(site);
            calls.push(CallWaits {
                rank: p.rank,
                seq: p.post,
                wait_before_ns: wb,
                wait_after_ns: wa,
                duration_ns: end - start,
            });
        }
        // The instance counts once for each call site taking part.
        at_sites.sort_unstable();
        at_sites.dedup();
        for site in at_sites {
            if let Some(entry) = self.sites.get_mut(&site) {
                entry.0.instances += 1;
                if let Some(last) = last {
                    *entry.1.entry(last).or_default() += 1;
                }
            }
        }
        let weighed = InstanceWaits {
            instance: n,
            exec_ns: exec,
            calls,
        };
        // Every instance is held to the report's properties in the test
        // suite's (debug) builds, the ones not kept in detail too.
        #[cfg(debug_assertions)]
        if let Err(e) = super::checks::check_instance(&weighed) {
            panic!("the critical-path report breaks its properties: {e}");
        }
        self.stats.instance_count += 1;
        if self.stats.instances.len() < KEPT_INSTANCES {
            self.stats.instances.push(weighed);
        }
    }

    /// Adds the sums of `other`, of other instances of the same ranks
    /// (another process's, [`super::spread`]): instances kept in detail
    /// are this one's, then `other`'s.
    pub(crate) fn merge(&mut self, other: Waits) {
        for (w, o) in self.by_rank.iter_mut().zip(&other.by_rank) {
            w.merge(o);
        }
        for (site, (waits, last)) in other.sites {
            let entry = self.sites.entry(site).or_insert_with(|| {
                (
                    CallSiteWaits {
                        site,
                        ..CallSiteWaits::default()
                    },
                    FxHashMap::default(),
                )
            });
            entry.0.waits.merge(&waits.waits);
            entry.0.instances += waits.instances;
            for (rank, count) in last {
                *entry.1.entry(rank).or_default() += count;
            }
        }
        let (stats, o) = (&mut self.stats, other.stats);
        stats.total.merge(&o.total);
        let room = KEPT_INSTANCES.saturating_sub(stats.instances.len());
        stats.instances.extend(o.instances.into_iter().take(room));
        stats.instance_count += o.instance_count;
        stats.untimed += o.untimed;
    }

    /// The sums, with each rank's computation (time between its calls).
    pub(crate) fn finish(mut self, compute_ns: &[i64]) -> WaitStats {
        for (w, &c) in self.by_rank.iter_mut().zip(compute_ns) {
            w.compute_ns = c;
        }
        let mut stats = self.stats;
        stats.total.compute_ns = self.by_rank.iter().map(|w| w.compute_ns).sum();
        stats.by_rank = self.ranks.into_iter().zip(self.by_rank).collect();
        stats.by_site = self
            .sites
            .into_values()
            .map(|(mut s, last)| {
                if let Some((&rank, &count)) = last
                    .iter()
                    .max_by_key(|(r, c)| (**c, std::cmp::Reverse(**r)))
                {
                    s.last_rank = rank;
                    s.last_count = count;
                }
                s
            })
            .collect();
        stats
            .by_site
            .sort_by_key(|s| (std::cmp::Reverse(s.waits.wait_ns()), s.site));
        stats
    }
}

/// The waits at the collectives of `matching`, whose calls `ranks` times.
pub fn wait_stats(ranks: &[RankCalls], matching: &Matching) -> WaitStats {
    let index: FxHashMap<u32, usize> = ranks.iter().enumerate().map(|(i, r)| (r.rank, i)).collect();
    let world: Vec<u32> = ranks.iter().map(|r| r.rank).collect();
    let compute: Vec<i64> = ranks
        .iter()
        .map(|r| {
            r.spans
                .windows(2)
                .map(|w| (w[1].start_ns - w[0].end_ns).max(0))
                .sum()
        })
        .collect();
    let mut waits = Waits::new(&world);
    for (n, inst) in matching.collectives.instances.iter().enumerate() {
        waits.instance(n, inst, |p| {
            let r = &ranks[*index.get(&p.rank)?];
            let start = r.spans.get(p.post as usize)?;
            let end = r.spans.get(p.completion? as usize)?;
            let site = r.sites.get(p.post as usize).copied().unwrap_or(u32::MAX);
            Some((start.start_ns, end.end_ns, site))
        });
    }
    waits.finish(&compute)
}

/// For each process (in the instance's order, `starts` their arrivals),
/// the latest arrival among the processes its end depends on, its own
/// included: the graph's rules for each kind of collective.
fn arrivals(kind: CollectiveKind, root: Option<usize>, starts: &[i64]) -> Vec<i64> {
    let all = starts.iter().copied().max().unwrap_or(0);
    let mut before = i64::MIN;
    starts
        .iter()
        .enumerate()
        .map(|(i, &own)| match kind {
            CollectiveKind::AllToAll => all,
            CollectiveKind::RootToAll => root.map_or(own, |r| own.max(starts[r])),
            CollectiveKind::AllToRoot if root == Some(i) => all,
            CollectiveKind::Scan => {
                before = before.max(own);
                before
            }
            CollectiveKind::ExclusiveScan => {
                let arrived = before.max(own);
                before = before.max(own);
                arrived
            }
            CollectiveKind::AllToRoot | CollectiveKind::Neighborhood | CollectiveKind::Setup => own,
        })
        .collect()
}
