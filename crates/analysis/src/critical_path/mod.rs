//! The critical path of a run: the longest chain of computation and
//! communication through the happened-before graph of its calls
//! ([`graph`]), where it runs (ranks, call sites: places in the grammar,
//! [`crate::sites`]), and how long ranks wait
//! at each collective ([`waits`]: wait-before, wait-after, imbalance). The
//! interval-grouping heuristic of the critical-path paper is in
//! [`heuristic`], for comparison. [`svg`] draws the path over the
//! timeline.

mod checks;
mod graph;
pub mod heuristic;
mod report;
pub mod svg;
#[cfg(test)]
mod tests;
pub mod waits;

use crate::decode::DecodeError;
use crate::matching::{Matching, match_ranks, rank_operations, world_ranks};
use crate::sites::{CallSite, Sites};
use crate::timeline::{Source, Span, TimelineError, rank_times};
use mpigram_mpispec::{FUNCS, decode_signature};
use mpigram_trace::Trace;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

pub use graph::CycleError;
pub use heuristic::Heuristic;
pub use waits::{CallSiteWaits, RankWaits, WaitStats};

/// One rank's timed calls.
#[derive(Clone, Debug, Default)]
pub struct RankCalls {
    /// World rank.
    pub rank: u32,
    /// When each call ran (a killed rank's last calls may have none).
    pub spans: Vec<Span>,
    /// The call site of each call: its number in [`CallSites`].
    pub sites: Vec<u32>,
}

/// What the call sites are, by number ([`Sites::number`]): each one's
/// place in the grammar and the function called there.
#[derive(Clone, Debug, Default)]
pub struct CallSites {
    /// None for numbers that are not call sites (runs of rules).
    pub sites: Vec<Option<(CallSite, &'static str)>>,
}

impl CallSites {
    /// Every call site of `grammar`; `funcs` names each signature's function.
    pub fn new(sites: &Sites, funcs: &[&'static str]) -> CallSites {
        CallSites {
            sites: (0..sites.count())
                .map(|n| {
                    let site = sites.numbered(n)?;
                    let func = sites
                        .signature(site)
                        .and_then(|t| funcs.get(t as usize).copied())
                        .unwrap_or("?");
                    Some((site, func))
                })
                .collect(),
        }
    }

    pub fn func(&self, site: u32) -> &'static str {
        self.get(site).map_or("?", |s| s.1)
    }

    /// The place in the grammar of call site `site`.
    pub fn site(&self, site: u32) -> Option<CallSite> {
        self.get(site).map(|s| s.0)
    }

    /// A call site as people read it: `MPI_Recv R2:0` (function, grammar
    /// rule and position).
    pub fn name(&self, site: u32) -> String {
        match self.get(site) {
            Some((at, func)) => format!("{func} {at}"),
            None => "?".into(),
        }
    }

    fn get(&self, site: u32) -> Option<(CallSite, &'static str)> {
        self.sites.get(site as usize).copied().flatten()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VertexKind {
    Start,
    End,
}

/// What a rank does during a segment of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Computation between call `after` and the next call.
    Computation { after: u32 },
    /// Inside call `seq` at call site `site` (the part after its last
    /// dependency happened).
    Call { seq: u32, site: u32 },
}

/// A stretch of the critical path on one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub rank: u32,
    pub activity: Activity,
    pub start_ns: i64,
    pub end_ns: i64,
}

impl Segment {
    pub fn duration_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

/// Time on the path of one call site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteTime {
    /// A number in [`CallSites`].
    pub site: u32,
    /// Inside the call, or in the computation that follows it.
    pub computation: bool,
    pub ns: i64,
    /// Segments on the path.
    pub count: u64,
}

/// The critical path of a run and what lies on it.
#[derive(Clone, Debug, Default)]
pub struct CriticalPath {
    pub length_ns: i64,
    /// From the first call's start to the last call's end.
    pub wall_ns: i64,
    /// In time order; consecutive pieces of one activity merged.
    pub segments: Vec<Segment>,
    /// (world rank, computation on the path), every rank.
    pub by_rank_compute_ns: Vec<(u32, i64)>,
    /// (world rank, time in MPI calls on the path), every rank.
    pub by_rank_mpi_ns: Vec<(u32, i64)>,
    /// Most time first.
    pub sites: Vec<SiteTime>,
    pub vertices: usize,
    pub edges: usize,
    /// Dependencies left out: calls without time or completion.
    pub untimed_dependencies: u64,
}

/// Everything `mpigram critical-path` reports.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub path: CriticalPath,
    pub waits: WaitStats,
    pub heuristic: Option<Heuristic>,
    pub sites: CallSites,
    /// Operations that matched nothing, by kind: point-to-point,
    /// collective, one-sided.
    pub unmatched: [usize; 3],
    pub ranks: usize,
    pub calls: u64,
    /// Each rank's timed calls, by world rank (for pictures of the path).
    pub timelines: Vec<RankCalls>,
}

#[derive(Debug, thiserror::Error)]
pub enum CriticalPathError {
    #[error(transparent)]
    Timeline(#[from] TimelineError),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error(transparent)]
    Cycle(#[from] CycleError),
    #[error("bad signature {0}: {1}")]
    Signature(usize, String),
}

/// Reads `trace` (ranks in parallel), matches its operations and finds
/// the critical path, the waits at collectives and, with `heuristic`, the
/// interval-grouping path.
pub fn analyse(
    trace: &Trace,
    source: Source,
    heuristic: bool,
) -> Result<Analysis, CriticalPathError> {
    let funcs: Vec<&'static str> = trace
        .signatures
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            decode_signature(bytes)
                .map(|s| FUNCS[s.func as usize].name)
                .map_err(|e| CriticalPathError::Signature(i, e.to_string()))
        })
        .collect::<Result<_, _>>()?;
    let grammar_sites = Sites::new(&trace.grammar);
    let sites = CallSites::new(&grammar_sites, &funcs);
    let origin = trace.run_start_ns();
    let loaded: Vec<_> = trace
        .ranks
        .par_iter()
        .map(|part| -> Result<_, CriticalPathError> {
            let spans = rank_times(trace, part, source, origin)?;
            let sites = grammar_sites.calls(part.meta.rank).unwrap_or_default();
            let ops = rank_operations(trace, part)?;
            Ok((
                RankCalls {
                    rank: part.meta.rank,
                    spans,
                    sites,
                },
                ops,
            ))
        })
        .collect::<Result<_, _>>()?;
    let mut loaded = loaded;
    loaded.sort_by_key(|(r, _)| r.rank);
    let (ranks, ops): (Vec<RankCalls>, Vec<_>) = loaded.into_iter().unzip();
    let logs = ranks.iter().map(|r| r.rank).zip(ops).collect();
    let matching = match_ranks(logs, &world_ranks(trace));
    analyse_calls(ranks, &matching, sites, heuristic)
}

/// The analysis of ranks whose calls are already timed and matched.
pub fn analyse_calls(
    ranks: Vec<RankCalls>,
    matching: &Matching,
    sites: CallSites,
    heuristic: bool,
) -> Result<Analysis, CriticalPathError> {
    let (path, waits) = rayon::join(
        || critical_path(&ranks, matching),
        || waits::wait_stats(&ranks, matching),
    );
    let path = path?;
    let heuristic = heuristic.then(|| heuristic::interval_grouping(&ranks, &path));
    let analysis = Analysis {
        path,
        waits,
        heuristic,
        sites,
        unmatched: [
            matching.unmatched.len(),
            matching.collectives.unmatched.len(),
            matching.one_sided.unmatched.len(),
        ],
        ranks: ranks.len(),
        calls: ranks.iter().map(|r| r.spans.len() as u64).sum(),
        timelines: ranks,
    };
    // The report's properties hold by construction; the test suite's
    // (debug) builds check them on every trace they analyse.
    #[cfg(debug_assertions)]
    if let Err(e) = analysis.check() {
        panic!("the critical-path report breaks its properties: {e}");
    }
    Ok(analysis)
}

/// The critical path of `ranks` (ordered by world rank).
pub fn critical_path(ranks: &[RankCalls], matching: &Matching) -> Result<CriticalPath, CycleError> {
    let g = graph::build(ranks, matching);
    let longest = graph::longest_path(&g, ranks)?;
    let mut segments: Vec<Segment> = Vec::new();
    for (i, (&v, &w)) in longest.vertices.iter().zip(&longest.weights).enumerate() {
        if w <= 0 || i == 0 {
            continue;
        }
        // The edge into v: program order on one rank, or from elsewhere
        // into the end of a call.
        let Some((r, k, side)) = g.locate(v) else {
            continue; // a hub: weight 0
        };
        let end = g.time(v);
        let activity = match side {
            VertexKind::Start => Activity::Computation { after: k - 1 },
            VertexKind::End => Activity::Call {
                seq: k,
                site: ranks[r].sites.get(k as usize).copied().unwrap_or(u32::MAX),
            },
        };
        let rank = ranks[r].rank;
        match segments.last_mut() {
            Some(s) if s.rank == rank && s.activity == activity && s.end_ns == end - w => {
                s.end_ns = end
            }
            _ => segments.push(Segment {
                rank,
                activity,
                start_ns: end - w,
                end_ns: end,
            }),
        }
    }
    let mut compute: FxHashMap<u32, i64> = ranks.iter().map(|r| (r.rank, 0)).collect();
    let mut mpi = compute.clone();
    let mut sites: FxHashMap<(u32, bool), (i64, u64)> = FxHashMap::default();
    let index: FxHashMap<u32, usize> = ranks.iter().enumerate().map(|(i, r)| (r.rank, i)).collect();
    let site_of = |rank: u32, seq: u32| {
        index
            .get(&rank)
            .and_then(|&i| ranks[i].sites.get(seq as usize))
            .copied()
            .unwrap_or(u32::MAX)
    };
    for s in &segments {
        let d = s.duration_ns();
        let (site, computation) = match s.activity {
            Activity::Computation { after } => {
                *compute.entry(s.rank).or_default() += d;
                (site_of(s.rank, after), true)
            }
            Activity::Call { site, .. } => {
                *mpi.entry(s.rank).or_default() += d;
                (site, false)
            }
        };
        let e = sites.entry((site, computation)).or_default();
        e.0 += d;
        e.1 += 1;
    }
    let sorted = |m: FxHashMap<u32, i64>| {
        let mut v: Vec<(u32, i64)> = m.into_iter().collect();
        v.sort_unstable();
        v
    };
    let mut sites: Vec<SiteTime> = sites
        .into_iter()
        .map(|((site, computation), (ns, count))| SiteTime {
            site,
            computation,
            ns,
            count,
        })
        .collect();
    sites.sort_by_key(|s| (std::cmp::Reverse(s.ns), s.site, s.computation));
    let first = ranks
        .iter()
        .filter_map(|r| r.spans.first())
        .map(|s| s.start_ns)
        .min();
    let last = ranks
        .iter()
        .filter_map(|r| r.spans.last())
        .map(|s| s.end_ns)
        .max();
    Ok(CriticalPath {
        length_ns: longest.length_ns,
        wall_ns: last.zip(first).map_or(0, |(l, f)| l - f),
        segments,
        by_rank_compute_ns: sorted(compute),
        by_rank_mpi_ns: sorted(mpi),
        sites,
        vertices: g.vertices(),
        edges: g.edges.len() + 2 * ranks.iter().map(|r| r.spans.len()).sum::<usize>(),
        untimed_dependencies: g.untimed,
    })
}
