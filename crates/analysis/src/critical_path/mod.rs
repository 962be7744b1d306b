//! The critical path of a run: the longest chain of computation and
//! communication through the happened-before graph of its calls
//! (`graph`), where it runs (ranks, call sites: places in the grammar,
//! [`crate::sites`]), and how long ranks wait
//! at each collective ([`waits`]: wait-before, wait-after, imbalance). The
//! interval-grouping heuristic of the critical-path paper is in
//! [`heuristic`], for comparison. [`svg`] draws the path over the
//! timeline.

mod checks;
mod graph;
pub mod heuristic;
mod learn;
mod path;
mod report;
mod spread;
mod stream;
pub mod svg;
#[cfg(test)]
mod tests;
pub mod waits;
pub(crate) mod walk;

use crate::decode::DecodeError;
use crate::matching::Matching;
use crate::parallel::{self, Link, Remote};
use crate::replay::{Reading, ReplayError};
use crate::sites::{CallSite, Sites};
use crate::timeline::{Source, Span, TimelineError};
use mpigram_mpispec::{FUNCS, decode_signature};
use mpigram_trace::Trace;

pub use heuristic::Heuristic;
pub use path::Segments;
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
    /// In time order.
    pub segments: Segments,
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
    /// Each rank's timed calls, by world rank, when the analysis was of
    /// calls in memory ([`analyse_calls`]); empty when read from a trace
    /// ([`analyse`]: the picture reads them again, `svg::rank_calls`).
    pub timelines: Vec<RankCalls>,
}

#[derive(Debug, thiserror::Error)]
#[error(
    "the happened-before graph has a cycle through rank {rank}, call {seq}: the matched dependencies contradict each other"
)]
pub struct CycleError {
    pub rank: u32,
    pub seq: u64,
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
    #[error("cannot keep the analysis's records in a temporary file: {0}")]
    Spill(#[from] std::io::Error),
    /// What another analysis process (or this one's part of the rounds)
    /// reported, as it reported it (`spread`).
    #[error("{0}")]
    Elsewhere(String),
}

impl From<ReplayError> for CriticalPathError {
    fn from(e: ReplayError) -> CriticalPathError {
        match e {
            ReplayError::Timeline(e) => CriticalPathError::Timeline(e),
            ReplayError::Decode(e) => CriticalPathError::Decode(e),
            ReplayError::Spill(e) => CriticalPathError::Spill(e),
        }
    }
}

/// Reads `trace` (ranks side by side, a chunk of calls at a time, in
/// memory that does not grow with the calls), matches its operations and
/// finds the critical path, the waits at collectives and, with
/// `heuristic`, the interval-grouping path.
pub fn analyse(
    trace: &Trace,
    source: Source,
    heuristic: bool,
) -> Result<Analysis, CriticalPathError> {
    let grammar_sites = Sites::new(&trace.grammar);
    let reading = Reading::of(trace, &grammar_sites, source, trace.run_start_ns())?;
    analyse_reading(trace, &grammar_sites, reading, source, heuristic)
}

/// [`analyse`] spread over the processes of `link` ([`crate::parallel`]):
/// each reads its share of the trace's ranks, process 0 matches and
/// walks them and returns the analysis (the same as [`analyse`]'s); the
/// others return None once process 0 has read every rank.
pub fn analyse_across(
    trace: &Trace,
    source: Source,
    heuristic: bool,
    link: &dyn Link,
) -> Result<Option<Analysis>, CriticalPathError> {
    if spread::spreads(trace) {
        let grammar_sites = Sites::new(&trace.grammar);
        let sites = call_sites(trace, &grammar_sites);
        return spread::analyse(trace, &grammar_sites, sites?, source, heuristic, link);
    }
    if link.process() != 0 {
        parallel::serve(trace, source, link);
        return Ok(None);
    }
    let grammar_sites = Sites::new(&trace.grammar);
    let remote = Remote::new(trace, &grammar_sites, source, link)?;
    let reading = Reading::from(Box::new(remote));
    analyse_reading(trace, &grammar_sites, reading, source, heuristic).map(Some)
}

/// The call sites of `trace`'s grammar, with their functions.
fn call_sites(trace: &Trace, grammar_sites: &Sites) -> Result<CallSites, CriticalPathError> {
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
    Ok(CallSites::new(grammar_sites, &funcs))
}

fn analyse_reading(
    trace: &Trace,
    grammar_sites: &Sites,
    reading: Reading,
    source: Source,
    heuristic: bool,
) -> Result<Analysis, CriticalPathError> {
    let sites = call_sites(trace, grammar_sites)?;
    stream::analyse(trace, grammar_sites, reading, sites, source, heuristic)
}

/// Each rank's timed calls with their call sites, by world rank: what a
/// picture of the path draws ([`svg`]). Holds every call's time (16
/// bytes and a call site a call).
pub fn timelines(trace: &Trace, source: Source) -> Result<Vec<RankCalls>, CriticalPathError> {
    let sites = Sites::new(&trace.grammar);
    let origin = trace.run_start_ns();
    trace
        .ranks
        .iter()
        .map(|part| {
            let spans = crate::timeline::rank_times(trace, part, source, origin)?;
            let mut sites: Vec<u32> = sites.calls(part.meta.rank).unwrap_or_default();
            sites.truncate(spans.len());
            Ok(RankCalls {
                rank: part.meta.rank,
                spans,
                sites,
            })
        })
        .collect()
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
    Ok(checked(analysis))
}

/// `analysis`, whose properties hold by construction; the test suite's
/// (debug) builds check them on every trace they analyse.
fn checked(analysis: Analysis) -> Analysis {
    #[cfg(debug_assertions)]
    if let Err(e) = analysis.check() {
        panic!("the critical-path report breaks its properties: {e}");
    }
    analysis
}

/// The critical path of `ranks` (ordered by world rank).
pub fn critical_path(
    ranks: &[RankCalls],
    matching: &Matching,
) -> Result<CriticalPath, CriticalPathError> {
    let mut w = walk::Walk::new(ranks.len());
    graph::in_memory(&mut w, ranks, matching);
    if w.run()? != walk::Progress::Done {
        let (r, seq) = w.stuck_at().unwrap_or((0, 0));
        return Err(CycleError {
            rank: ranks.get(r as usize).map_or(0, |c| c.rank),
            seq,
        }
        .into());
    }
    let world: Vec<u32> = ranks.iter().map(|r| r.rank).collect();
    let wall = ranks
        .iter()
        .filter_map(|r| Some((r.spans.first()?.start_ns, r.spans.last()?.end_ns)))
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    let calls = |r: u32| -> Result<path::RankCallTimes<'_, std::io::Error>, std::io::Error> {
        let c = &ranks[r as usize];
        Ok(Box::new(c.spans.iter().enumerate().map(|(k, &span)| {
            Ok((span, c.sites.get(k).copied().unwrap_or(u32::MAX)))
        })))
    };
    let calls_total: u64 = ranks.iter().map(|r| r.spans.len() as u64).sum();
    Ok(finish(w.into_walked(), &world, wall, calls_total, &calls)?)
}

/// The path the walk found, rebuilt and summed.
fn finish<'a, E: From<std::io::Error>>(
    walked: walk::Walked,
    world: &[u32],
    wall: Option<(i64, i64)>,
    calls: u64,
    rank_calls: &dyn Fn(u32) -> Result<path::RankCallTimes<'a, E>, E>,
) -> Result<CriticalPath, E>
where
    CriticalPathError: From<E>,
{
    let end = walked
        .farthest
        .iter()
        .enumerate()
        .filter_map(|(r, f)| f.map(|f| ((f.length, f.t, r), f.vertex)))
        .max();
    let made = path::make(
        &walked.back,
        end.map(|((_, _, r), v)| (r as u32, v)),
        world,
        rank_calls,
    )?;
    let sorted = |v: &[i64]| -> Vec<(u32, i64)> {
        let mut out: Vec<(u32, i64)> = world.iter().copied().zip(v.iter().copied()).collect();
        out.sort_unstable();
        out
    };
    Ok(CriticalPath {
        length_ns: end.map_or(0, |((length, _, _), _)| length),
        wall_ns: wall.map_or(0, |(first, last)| last - first),
        by_rank_compute_ns: sorted(&made.compute),
        by_rank_mpi_ns: sorted(&made.mpi),
        segments: made.segments,
        sites: made.sites,
        vertices: (2 * calls + walked.hubs) as usize,
        edges: (walked.edges + 2 * calls) as usize,
        untimed_dependencies: walked.untimed,
    })
}
