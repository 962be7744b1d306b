//! A benchmark for another number of ranks (`gen-bench --ranks N`), as
//! ScalaExtrap extrapolates a trace: for SPMD programs whose ranks make the
//! same calls and differ only in arguments that follow the rank (peers,
//! see `peers.rs`; per-member counts; the grid of `MPI_Dims_create`).
//!
//! The traced ranks are walked call by call in lockstep, in *classes*:
//! first all ranks as one class; if they do not make the same calls, the
//! first rank, the middle ones and the last as three (a line of ranks
//! whose ends do other work). At each call the class's signatures must be
//! one function with the same arguments, except
//! - outputs (results, statuses, coordinates), which the benchmark does
//!   not use;
//! - requests, which become one slot per position (each rank numbers its
//!   requests by its own signatures);
//! - peer ranks, which become the rule they follow (a C expression of the
//!   caller's rank and the size);
//! - arrays with one element per member of a communicator, scaled to the
//!   new size;
//! - `MPI_Dims_create` of the traced size and the grid of `MPI_Cart_create`
//!   that came from it, which the benchmark asks `MPI_Dims_create` for at
//!   the new size.
//!
//! Anything else that differs stops the extrapolation with one line that
//! names the call and the argument. The unified calls are compressed into a
//! new grammar (Sequitur) per class; rank r of the N gets its class's. The
//! computation before a call site is the mean over the traced ranks of
//! their class (the trace says nothing about how it changes with N: the
//! benchmark keeps each rank's work, as in weak scaling).
//!
//! Unlike generation for the traced size, this walks every call of the
//! traced ranks: its cost grows with the calls times the ranks.

use crate::peers::Geometry;
use crate::timing::{self, Delay, Delays, Site, Sites};
use crate::unify::Unifier;
use mpigram_grammar::{Grammar, RuleId};
use mpigram_mpispec::Signature;
use mpigram_trace::Trace;
use rustc_hash::{FxHashMap, FxHashSet};

/// Most ranks a benchmark is generated for (per-member arrays are written
/// out in the C).
pub const MAX_RANKS: u32 = 1 << 20;

/// The traced ranks' calls unified for `ranks` ranks.
pub struct Extrapolated {
    pub grammar: Grammar,
    /// Start rule of each of the new ranks.
    pub starts: Vec<RuleId>,
    /// The unified signatures (the new grammar's terminals).
    pub sigs: Vec<Signature>,
    /// C expressions for arguments: (terminal, parameter position) -> C.
    pub args: FxHashMap<(u32, usize), String>,
    pub delays: Delays,
    /// The classes, for the header: (which ranks of N, traced ranks).
    pub classes: Vec<String>,
}

/// Unifies the traced ranks' calls for a run of `ranks` ranks; `delays`
/// are the traced run's computation per site and rank.
pub fn extrapolate(
    trace: &Trace,
    sigs: &[Signature],
    traced: u32,
    ranks: u32,
    delays: &Delays,
) -> Result<Extrapolated, String> {
    if !(1..=MAX_RANKS).contains(&ranks) {
        return Err(format!("--ranks must be 1 to {MAX_RANKS}"));
    }
    let geometry = Geometry::of(trace, sigs, traced);
    let all: Vec<u32> = (0..traced).collect();
    let mut u = Unifier::new(sigs, &geometry, ranks);
    let (classes, grammars) = match u.class(trace, &all) {
        Ok(g) => (vec![all], vec![g]),
        Err(one) if traced >= 3 => {
            let lines = [vec![0], (1..traced - 1).collect(), vec![traced - 1]];
            let mut grammars = Vec::new();
            let mut u3 = Unifier::new(sigs, &geometry, ranks);
            for class in &lines {
                match u3.class(trace, class) {
                    Ok(g) => grammars.push(g),
                    Err(three) => {
                        return Err(format!(
                            "{one}; as classes of the first, middle and last ranks: {three}"
                        ));
                    }
                }
            }
            if ranks < 2 {
                return Err(format!(
                    "the first and last ranks do other calls than the rest ({one}): a benchmark needs at least 2 ranks"
                ));
            }
            u = u3;
            (lines.to_vec(), grammars)
        }
        Err(one) => return Err(one),
    };
    // Each class's calls are one stream of the new grammar.
    let parts: Vec<Grammar> = grammars
        .into_iter()
        .enumerate()
        .map(|(c, mut s)| s.grammar(c as u32))
        .collect();
    let grammar = mpigram_grammar::union(&parts).map_err(|e| e.to_string())?;
    let class_of = |rank: u32| -> usize {
        match classes.len() {
            1 => 0,
            _ if rank == 0 => 0,
            _ if rank == ranks - 1 => 2,
            _ => 1,
        }
    };
    let starts: Vec<RuleId> = (0..ranks)
        .map(|r| grammar.start(class_of(r) as u32).unwrap_or(0))
        .collect();
    let new_delays = class_delays(trace, &grammar, &classes, delays);
    let names = ["first rank", "middle ranks", "last rank"];
    let classes = match classes.len() {
        1 => vec![format!("every rank as traced ranks 0-{}", traced - 1)],
        _ => (0..3)
            .map(|c| {
                format!(
                    "{} as traced {}",
                    names[c],
                    crate::emit::ranks_phrase(&classes[c])
                )
            })
            .collect(),
    };
    Ok(Extrapolated {
        grammar,
        starts,
        sigs: u.sigs,
        args: u.args,
        delays: new_delays,
        classes,
    })
}

/// The computation before each site of the new grammar: per call, the
/// mean over the class's traced ranks of what each waited before it.
fn class_delays(trace: &Trace, grammar: &Grammar, classes: &[Vec<u32>], delays: &Delays) -> Delays {
    // new site -> (first call's delay, sum of later ones, later calls)
    let mut acc: FxHashMap<Site, (f64, f64, u64)> = FxHashMap::default();
    if !delays.by_site.is_empty() {
        for (c, members) in classes.iter().enumerate() {
            let Some(start) = grammar.start(c as u32) else {
                continue;
            };
            let mut walks: Vec<Sites> = members
                .iter()
                .filter_map(|&r| {
                    trace
                        .grammar
                        .start(r)
                        .map(|s| Sites::new(&trace.grammar, s))
                })
                .collect();
            let mut seen: FxHashSet<(u32, Site)> = FxHashSet::default();
            for (site, _) in Sites::new(grammar, start) {
                let mut sum = 0.0;
                for (walk, &rank) in walks.iter_mut().zip(members) {
                    let Some((old, _)) = walk.next() else {
                        continue;
                    };
                    let first = seen.insert((rank, old));
                    if let Some(Some(d)) =
                        delays.by_site.get(&old).and_then(|v| v.get(rank as usize))
                    {
                        sum += if first { d.first } else { d.rest };
                    }
                }
                let mean = sum / members.len() as f64;
                match acc.get_mut(&site) {
                    None => {
                        acc.insert(site, (mean, 0.0, 0));
                    }
                    Some(a) => {
                        a.1 += mean;
                        a.2 += 1;
                    }
                }
            }
        }
    }
    let by_site = acc
        .into_iter()
        .map(|(site, (first, sum, later))| {
            let rest = if later == 0 {
                first
            } else {
                sum / later as f64
            };
            // A first call on its own as timing.rs decides it for a site;
            // else every call waits the mean.
            let delay = if timing::apart_s(first, rest) {
                Delay { first, rest }
            } else {
                let mean = (first + sum) / (later + 1) as f64;
                Delay {
                    first: mean,
                    rest: mean,
                }
            };
            // The same on every rank (emit.rs writes one literal).
            (site, vec![Some(delay)])
        })
        .collect();
    // At another count the ranks' mean share (one literal in emit.rs).
    let shares: Vec<f64> = delays.cpu_shares.iter().flatten().copied().collect();
    let cpu_shares = match shares.is_empty() {
        true => Vec::new(),
        false => vec![Some(shares.iter().sum::<f64>() / shares.len() as f64)],
    };
    Delays {
        by_site,
        cpu_shares,
        description: format!(
            "{}; per call site the mean over the traced ranks of its class",
            delays.description
        ),
        note: delays.note.clone(),
    }
}
