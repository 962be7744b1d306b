//! The trace profile (after Mohror's trace profiling): what behaviours
//! repeat, which ranks behave alike, and where ranks wait for each other.
//!
//! - [`segments`]: the iterations of the grammar's loops, with their
//!   contexts (the loop nest);
//! - [`similarity`]: the thesis's similarity operators behind one trait;
//! - [`classes`]: behaviour classes per context, within and across ranks,
//!   with their share of executions, and rank groups;
//! - [`waits`]: wait states (late sender, late receiver, wait at barrier,
//!   barrier completion, wait at N×N, early reduce, late broadcast) with
//!   rank, peer, call, call site and severity;
//! - [`report`]: findings first, for people, and JSON.
//!
//! Ranks are worked on in parallel (rayon): their times, segments,
//! classes and operations; messages and collectives are then matched over
//! all ranks at once ([`crate::matching`]).

pub mod classes;
pub mod report;
pub mod segments;
pub mod similarity;
pub use crate::sites;
mod stream;
use stream::{Behaviour, RankSummary};
pub mod waits;

use crate::critical_path::CallSites;
use crate::parallel::{self, Link, Remote, owner};
use crate::replay::{Reading, ReplayError};
use crate::timeline::{Source, Span, TimelineError};
use classes::{ContextClasses, Merge, RankMap};
use mpigram_mpispec::{FUNCS, decode_signature};
use mpigram_trace::Trace;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use similarity::Method;
use sites::{CallSite, Sites};
pub use waits::WaitStates;
use waits::{WaitKind, WaitState};

/// How to profile.
#[derive(Clone, Debug)]
pub struct Options {
    pub method: Method,
    /// Threshold within a rank.
    pub within: f64,
    /// Threshold across ranks.
    pub across: f64,
    /// Which recorded times to use.
    pub source: Source,
    /// Findings are aggregates costing at least this share of the run (0..1).
    pub min_share: f64,
}

impl Default for Options {
    /// The thesis's defaults: average wavelet, 0.2 within a rank, 0.4 across.
    fn default() -> Options {
        Options {
            method: Method::AvgWave,
            within: 0.2,
            across: 0.4,
            source: Source::Best,
            min_share: 0.01,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(transparent)]
    Timeline(#[from] TimelineError),
    #[error(transparent)]
    Decode(#[from] crate::decode::DecodeError),
    #[error("the trace has no ranks")]
    Empty,
    #[error("cannot keep the profile's records in a temporary file: {0}")]
    Spill(#[from] std::io::Error),
    /// What another process of `mpiexec -n K mpigram profile` found.
    #[error("{0}")]
    Elsewhere(String),
}

impl From<ReplayError> for ProfileError {
    fn from(e: ReplayError) -> ProfileError {
        match e {
            ReplayError::Timeline(e) => ProfileError::Timeline(e),
            ReplayError::Decode(e) => ProfileError::Decode(e),
            ReplayError::Spill(e) => ProfileError::Spill(e),
        }
    }
}

/// A late arrival's call site, rank and function.
type LateKey = (Option<CallSite>, u32, &'static str);

/// Wait states of one kind at one call site on one rank, summed.
#[derive(Clone, Debug, PartialEq)]
pub struct WaitTotal {
    pub kind: WaitKind,
    pub rank: u32,
    pub func: &'static str,
    pub site: Option<CallSite>,
    /// Calls that waited.
    pub count: u64,
    /// Calls at that site on the rank.
    pub executions: u64,
    pub severity_s: f64,
    /// The ranks waited for, most waited for first.
    pub peers: Vec<u32>,
}

/// A rank arriving last at one call site's collective instances, summed.
#[derive(Clone, Debug, PartialEq)]
pub struct LateTotal {
    pub rank: u32,
    pub func: &'static str,
    pub site: Option<CallSite>,
    /// Instances it was last at.
    pub count: u64,
    /// Calls at that site on the rank.
    pub executions: u64,
    /// The others' waiting at them.
    pub cost_s: f64,
}

/// The profile of a trace.
#[derive(Clone, Debug)]
pub struct Profile {
    pub options: Options,
    pub ranks: Vec<u32>,
    pub calls: u64,
    /// From the earliest call start to the latest end, seconds.
    pub run_s: f64,
    /// Per rank, how far the times used may be off (0 for exact times):
    /// (base − 1) × the longest time from one call's end to the next's.
    pub timing_bound_s: Vec<(u32, f64)>,
    pub contexts: Vec<ContextClasses>,
    /// Function names of each context's calls (the first ones).
    pub context_funcs: Vec<Vec<&'static str>>,
    pub rank_groups: Vec<Vec<u32>>,
    /// By rank, call and kind.
    pub wait_states: WaitStates,
    pub wait_totals: Vec<WaitTotal>,
    pub late_totals: Vec<LateTotal>,
    /// Point-to-point operations that matched nothing.
    pub unmatched: usize,
}

/// Profiles `trace`, in memory that does not grow with its calls (but
/// with its longest loop iteration, whose times a class compares whole).
pub fn profile(trace: &Trace, options: &Options) -> Result<Profile, ProfileError> {
    if trace.ranks.is_empty() {
        return Err(ProfileError::Empty);
    }
    let work = rank_works(trace, options, |_| true)?;
    let summaries: Vec<&RankSummary> = work.iter().map(|w| &w.summary).collect();
    let (contexts, maps) = merge(&summaries, options);
    let behaviours = work
        .iter()
        .zip(&maps)
        .map(|(w, map)| w.behaviour(map))
        .collect::<Result<Vec<_>, _>>()?;
    let sites = Sites::new(&trace.grammar);
    let reading = Reading::of(trace, &sites, options.source, trace.run_start_ns())?;
    conclude(
        trace,
        options,
        &summaries,
        (contexts, behaviours),
        &sites,
        reading,
    )
}

/// Tags of the messages of [`profile_across`] (those of
/// [`crate::parallel`] are below).
const SUMMARIES: u32 = 4;
const MAPS: u32 = 5;
const BEHAVIOURS: u32 = 6;

/// [`profile`] spread over the processes of `link` (`mpiexec -n K
/// mpigram profile`): rank index r belongs to process r mod K, which reads
/// its times and classifies its iterations (the work that grows with the
/// calls); process 0 merges every rank's classes, each process tells its
/// ranks' behaviour in the merged classes, and process 0 matches the
/// operations for the wait states while the others read their ranks for
/// it ([`crate::parallel`]). Process 0 returns the profile, [`profile`]'s
/// to the byte; the others return None.
pub fn profile_across(
    trace: &Trace,
    options: &Options,
    link: &dyn Link,
) -> Result<Option<Profile>, ProfileError> {
    if trace.ranks.is_empty() {
        return Err(ProfileError::Empty);
    }
    let (me, k) = (link.process(), link.processes());
    let work = rank_works(trace, options, |r| owner(r, k) == me);
    if me != 0 {
        let summaries = work
            .as_ref()
            .map(|w| w.iter().map(|w| &w.summary).collect::<Vec<_>>())
            .map_err(ToString::to_string);
        link.send(0, SUMMARIES, &to_bytes(&summaries));
        let maps: Option<Vec<RankMap>> = from_bytes(&link.receive(0, MAPS)).flatten();
        let (Some(maps), Ok(work)) = (maps, work) else {
            return Ok(None); // an error elsewhere: process 0 reports it
        };
        let behaviours: Result<Vec<Behaviour>, String> = work
            .iter()
            .zip(&maps)
            .map(|(w, map)| w.behaviour(map).map_err(|e| e.to_string()))
            .collect();
        link.send(0, BEHAVIOURS, &to_bytes(&behaviours));
        parallel::serve(trace, options.source, link);
        return Ok(None);
    }
    let remote: Vec<Result<Vec<RankSummary>, String>> = (1..k)
        .map(|p| {
            from_bytes(&link.receive(p, SUMMARIES))
                .unwrap_or_else(|| Err(format!("analysis process {p} sent an unreadable summary")))
        })
        .collect();
    let stop = || (1..k).for_each(|p| link.send(p, MAPS, &to_bytes(&None::<Vec<RankMap>>)));
    let here = match work {
        Ok(here) => here,
        Err(e) => {
            stop();
            return Err(e);
        }
    };
    let mut others = Vec::new();
    for summaries in remote {
        match summaries {
            Ok(s) => others.extend(s),
            Err(e) => {
                stop();
                return Err(ProfileError::Elsewhere(e));
            }
        }
    }
    let mut summaries: Vec<&RankSummary> = here.iter().map(|w| &w.summary).collect();
    summaries.extend(&others);
    summaries.sort_by_key(|s| s.rank);
    let (contexts, maps) = merge(&summaries, options);
    // Each process's maps in the order of its ranks' work (by rank).
    let mut map_of: FxHashMap<u32, RankMap> = summaries.iter().map(|s| s.rank).zip(maps).collect();
    let mut maps_of = |p: usize| -> Vec<RankMap> {
        let ranks = owned_ranks(trace, k, p);
        ranks.iter().filter_map(|r| map_of.remove(r)).collect()
    };
    let mine = maps_of(0);
    for p in 1..k {
        link.send(p, MAPS, &to_bytes(&Some(maps_of(p))));
    }
    let mut behaviour_of: FxHashMap<u32, Behaviour> = FxHashMap::default();
    let mut failed: Option<ProfileError> = None;
    for (w, map) in here.iter().zip(&mine) {
        match w.behaviour(map) {
            Ok(b) => {
                behaviour_of.insert(w.summary.rank, b);
            }
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    for p in 1..k {
        let ranks = owned_ranks(trace, k, p);
        let behaviours: Result<Vec<Behaviour>, String> = from_bytes(&link.receive(p, BEHAVIOURS))
            .unwrap_or_else(|| Err(format!("analysis process {p} sent an unreadable behaviour")));
        match behaviours {
            Ok(b) => behaviour_of.extend(ranks.into_iter().zip(b)),
            Err(e) => failed = failed.or(Some(ProfileError::Elsewhere(e))),
        }
    }
    if let Some(e) = failed {
        parallel::stop(link);
        return Err(e);
    }
    let behaviours = summaries
        .iter()
        .map(|s| behaviour_of.remove(&s.rank).unwrap_or_default())
        .collect();
    let sites = Sites::new(&trace.grammar);
    let remote = Remote::new(trace, &sites, options.source, link)?;
    let reading = Reading::from(Box::new(remote));
    conclude(
        trace,
        options,
        &summaries,
        (contexts, behaviours),
        &sites,
        reading,
    )
    .map(Some)
}

/// The ranks (world ranks, in order) whose work process `p` of `k` does.
fn owned_ranks(trace: &Trace, k: usize, p: usize) -> Vec<u32> {
    let mut ranks: Vec<u32> = (0..trace.ranks.len() as u32)
        .filter(|&r| owner(r, k) == p)
        .map(|r| trace.ranks[r as usize].meta.rank)
        .collect();
    ranks.sort_unstable();
    ranks
}

fn to_bytes<T: serde::Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).expect("a profile message serialises")
}

fn from_bytes<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> Option<T> {
    postcard::from_bytes(bytes).ok()
}

/// The work of the ranks (by index) that `here` picks, in rank order:
/// their times read and their iterations classified, in parallel.
fn rank_works(
    trace: &Trace,
    options: &Options,
    here: impl Fn(u32) -> bool + Sync,
) -> Result<Vec<stream::RankWork>, ProfileError> {
    let run_start = trace.run_start_ns();
    let within = options.method.with_threshold(options.within);
    let mut work: Vec<stream::RankWork> = trace
        .ranks
        .par_iter()
        .enumerate()
        .filter(|&(r, _)| here(r as u32))
        .map(|(_, part)| stream::rank_work(trace, part, options.source, run_start, within.as_ref()))
        .collect::<Result<_, _>>()?;
    work.sort_by_key(|w| w.summary.rank);
    Ok(work)
}

/// The ranks' classes merged across ranks (given in rank order), and
/// each rank's place in them.
fn merge(summaries: &[&RankSummary], options: &Options) -> (Vec<ContextClasses>, Vec<RankMap>) {
    let across = options.method.with_threshold(options.across);
    let mut merge = Merge::new(across.as_ref());
    let maps = summaries
        .iter()
        .map(|s| merge.add(s.rank, &s.contexts, &s.classes))
        .collect();
    (merge.finish(), maps)
}

/// The profile from the ranks' summaries (in rank order), the merged
/// classes and each rank's behaviour in them, and the wait states found
/// in `reading`.
fn conclude(
    trace: &Trace,
    options: &Options,
    summaries: &[&RankSummary],
    (contexts, behaviours): (Vec<ContextClasses>, Vec<Behaviour>),
    sites: &Sites,
    reading: Reading,
) -> Result<Profile, ProfileError> {
    let ranks: Vec<u32> = summaries.iter().map(|w| w.rank).collect();
    // Ranks whose iterations fall into the same classes, in the same order.
    let mut groups: FxHashMap<Behaviour, Vec<u32>> = FxHashMap::default();
    for (w, behaviour) in summaries.iter().zip(behaviours) {
        groups.entry(behaviour).or_default().push(w.rank);
    }
    let mut rank_groups: Vec<Vec<u32>> = groups.into_values().collect();
    rank_groups.sort();
    let context_funcs = contexts
        .iter()
        .map(|c| context_funcs(trace, c.path.last().copied()))
        .collect();
    let timing_bound_s = summaries.iter().map(|w| (w.rank, w.bound_s)).collect();
    let (first, last) = summaries
        .iter()
        .flat_map(|w| w.first_ns.zip(w.last_ns))
        .fold((i64::MAX, i64::MIN), |(a, b), (f, l)| (a.min(f), b.max(l)));
    let run_s = if last > first {
        (last - first) as f64 * 1e-9
    } else {
        0.0
    };
    let calls = summaries.iter().map(|w| w.calls).sum();

    let funcs: Vec<&'static str> = trace
        .signatures
        .iter()
        .map(|s| {
            decode_signature(s)
                .ok()
                .and_then(|sig| FUNCS.get(sig.func as usize).map(|f| f.name))
                .unwrap_or("?")
        })
        .collect();
    let call_sites = CallSites::new(sites, &funcs);
    let waits = stream::waits(trace, reading, &call_sites)?;

    let uses: FxHashMap<u32, Vec<u64>> = ranks
        .iter()
        .filter_map(|&r| Some((r, trace.grammar.rule_uses(trace.grammar.start(r)?))))
        .collect();
    let executions = |rank: u32, site: Option<CallSite>| {
        site.zip(uses.get(&rank))
            .map_or(0, |(s, u)| sites.executions(u, s))
    };
    let wait_totals = wait_totals(waits.states.iter(), &executions);
    let late_totals = late_totals(waits.late, &executions);
    Ok(Profile {
        options: options.clone(),
        ranks,
        calls,
        run_s,
        timing_bound_s,
        contexts,
        context_funcs,
        rank_groups,
        wait_states: waits.states,
        wait_totals,
        late_totals,
        unmatched: waits.unmatched,
    })
}

/// How far lossy times may be off, for every call after the rank's first
/// (MPI_Init, whose long duration would dominate otherwise): a decoded
/// end runs short of the true one by e_k <= (1 - 1/b) (g_k + e_(k-1)),
/// g_k the true time from the previous call's end (see
/// `mpigram_trace::timing`); true gaps are at most b times the decoded
/// ones. 0 for exact times. Fed one span at a time.
struct TimingBound {
    /// (base, 1 − 1/base) of the rank's lossy times; None for exact times.
    lossy: Option<(f64, f64)>,
    last: Option<Span>,
    error: f64,
    bound: f64,
}

impl TimingBound {
    fn new(part: &mpigram_trace::RankPart, source: Source) -> TimingBound {
        let timing = &part.meta.timing;
        let lossy = match source {
            Source::Lossless => false,
            Source::Lossy => true,
            Source::Best => !timing.lossless,
        };
        let lossy = timing.lossy.as_ref().filter(|_| lossy).map(|bases| {
            let base = bases
                .by_func
                .iter()
                .map(|(_, b)| *b)
                .fold(bases.default, f64::max);
            (base, 1.0 - 1.0 / base)
        });
        TimingBound {
            lossy,
            last: None,
            error: 0.0,
            bound: 0.0,
        }
    }

    fn add(&mut self, span: Span) {
        let Some((base, shrink)) = self.lossy else {
            return;
        };
        match self.last {
            None => self.error = shrink * base * (span.end_ns - span.start_ns) as f64,
            Some(last) => {
                // Start errors are at most the previous end's plus the interval's.
                self.error = shrink * (base * (span.end_ns - last.end_ns) as f64 + self.error);
                self.bound = self.bound.max(self.error);
            }
        }
        self.last = Some(span);
    }

    fn seconds(&self) -> f64 {
        self.bound * 1e-9
    }
}

/// The functions of the calls a context's symbol expands to (at most 8).
fn context_funcs(trace: &Trace, symbol: Option<mpigram_grammar::Symbol>) -> Vec<&'static str> {
    let Some(symbol) = symbol else {
        return Vec::new();
    };
    let terminals: Box<dyn Iterator<Item = u32>> = match symbol {
        mpigram_grammar::Symbol::Terminal(t) => Box::new(std::iter::once(t)),
        mpigram_grammar::Symbol::Rule(r) => Box::new(trace.grammar.expand_rule(r)),
    };
    terminals
        .take(8)
        .filter_map(|t| {
            let sig = mpigram_mpispec::decode_signature(trace.signatures.get(t as usize)?).ok()?;
            mpigram_mpispec::FUNCS
                .get(sig.func as usize)
                .map(|f| f.name)
        })
        .collect()
}

fn wait_totals(
    waits: impl Iterator<Item = WaitState>,
    executions: &dyn Fn(u32, Option<CallSite>) -> u64,
) -> Vec<WaitTotal> {
    // (kind, site, rank) -> total, and seconds waited for each peer.
    type Key = (WaitKind, Option<CallSite>, u32);
    let mut by: FxHashMap<Key, (WaitTotal, FxHashMap<u32, f64>)> = FxHashMap::default();
    for w in waits {
        let (t, peers) = by.entry((w.kind, w.site, w.rank)).or_insert_with(|| {
            (
                WaitTotal {
                    kind: w.kind,
                    rank: w.rank,
                    func: w.func,
                    site: w.site,
                    count: 0,
                    executions: executions(w.rank, w.site),
                    severity_s: 0.0,
                    peers: Vec::new(),
                },
                FxHashMap::default(),
            )
        });
        t.count += 1;
        t.severity_s += w.severity_s;
        if let Some(p) = w.peer {
            *peers.entry(p).or_insert(0.0) += w.severity_s;
        }
    }
    let mut out: Vec<WaitTotal> = by
        .into_values()
        .map(|(mut t, peers)| {
            let mut peers: Vec<(u32, f64)> = peers.into_iter().collect();
            peers.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            t.peers = peers.into_iter().map(|(p, _)| p).collect();
            t.executions = t.executions.max(t.count);
            t
        })
        .collect();
    out.sort_by(|a, b| {
        b.severity_s
            .total_cmp(&a.severity_s)
            .then((a.kind, a.rank, a.site).cmp(&(b.kind, b.rank, b.site)))
    });
    out
}

fn late_totals(
    late: FxHashMap<LateKey, (u64, f64)>,
    executions: &dyn Fn(u32, Option<CallSite>) -> u64,
) -> Vec<LateTotal> {
    let mut out: Vec<LateTotal> = late
        .into_iter()
        .map(|((site, rank, func), (count, cost_s))| LateTotal {
            rank,
            func,
            site,
            count,
            executions: executions(rank, site).max(count),
            cost_s,
        })
        .collect();
    out.sort_by(|a, b| {
        b.cost_s
            .total_cmp(&a.cost_s)
            .then((a.rank, a.site).cmp(&(b.rank, b.site)))
    });
    out
}
