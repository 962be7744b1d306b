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
pub mod waits;

use crate::critical_path::CallSites;
use crate::replay::ReplayError;
use crate::timeline::{Source, Span, TimelineError};
use classes::{ContextClasses, Merge};
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
    let run_start = trace.run_start_ns();
    let within = options.method.with_threshold(options.within);
    let across = options.method.with_threshold(options.across);
    let mut work: Vec<stream::RankWork> = trace
        .ranks
        .par_iter()
        .map(|part| stream::rank_work(trace, part, options.source, run_start, within.as_ref()))
        .collect::<Result<_, _>>()?;
    work.sort_by_key(|w| w.rank);

    let mut merge = Merge::new(across.as_ref());
    let maps: Vec<classes::RankMap> = work
        .iter()
        .map(|w| merge.add(w.rank, &w.contexts, &w.classes))
        .collect();
    let contexts = merge.finish();
    let ranks: Vec<u32> = work.iter().map(|w| w.rank).collect();
    // Ranks whose iterations fall into the same classes, in the same order.
    let mut groups: FxHashMap<stream::Behaviour, Vec<u32>> = FxHashMap::default();
    for (w, map) in work.iter().zip(&maps) {
        groups.entry(w.behaviour(map)?).or_default().push(w.rank);
    }
    let mut rank_groups: Vec<Vec<u32>> = groups.into_values().collect();
    rank_groups.sort();
    let context_funcs = contexts
        .iter()
        .map(|c| context_funcs(trace, c.path.last().copied()))
        .collect();
    let timing_bound_s = work.iter().map(|w| (w.rank, w.bound_s)).collect();
    let (first, last) = work
        .iter()
        .flat_map(|w| w.first_ns.zip(w.last_ns))
        .fold((i64::MAX, i64::MIN), |(a, b), (f, l)| (a.min(f), b.max(l)));
    let run_s = if last > first {
        (last - first) as f64 * 1e-9
    } else {
        0.0
    };
    let calls = work.iter().map(|w| w.calls).sum();

    let sites = Sites::new(&trace.grammar);
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
    let call_sites = CallSites::new(&sites, &funcs);
    let waits = stream::waits(trace, &sites, &call_sites, options.source, run_start)?;

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
