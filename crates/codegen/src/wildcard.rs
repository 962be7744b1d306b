//! Wildcard receives bound to the sender they matched. A blocking receive
//! or probe has its status in its own signature; a non-blocking or
//! persistent one is completed later, by a Wait or Test of its request, so
//! its sender is found by following each rank's calls: the receive's
//! signature is bound only if every completion of every occurrence, on
//! every rank, reports the same sender (as the tracer encodes it: relative
//! to the receiver where that applies, so "my left neighbour" binds on
//! every rank), or, failing that, if each rank's completions agree among
//! themselves: then the sender comes from a table by rank (a ring's rank 0
//! has its left neighbour at +N-1, the others at -1). A signature whose
//! sender varied on one rank keeps MPI_ANY_SOURCE.

use mpigram_mpispec::Args;
use mpigram_mpispec::{Rank, RequestRef, Signature, Status, Value};
use mpigram_trace::Trace;
use rustc_hash::FxHashMap;

/// The sender a wildcard receive's signature is bound to.
#[derive(Clone, Debug, PartialEq)]
pub enum Binding {
    /// The same on every rank.
    All(Rank),
    /// By world rank (`None`: the rank never makes the call); all
    /// relative, or all absolute.
    PerRank(Vec<Option<Rank>>),
}

/// Bindings by terminal.
pub type Bindings = FxHashMap<u32, Binding>;

/// Whether `a` is a receive (or probe) posted with MPI_ANY_SOURCE.
pub fn is_wildcard(a: &Args) -> bool {
    matches!(a.value("source"), Some(Value::Rank(Rank::AnySource)))
}

/// The sender of a blocking wildcard receive or probe, from its own status.
pub fn own_sender(a: &Args) -> Option<Rank> {
    match a.value("status") {
        Some(Value::Status(Some(s))) => concrete(s),
        _ => None,
    }
}

fn concrete(s: &Status) -> Option<Rank> {
    match s.source {
        r @ (Rank::Relative(_) | Rank::Absolute(_)) => Some(r),
        _ => None,
    }
}

/// Binds the non-blocking and persistent wildcard receives of `trace`.
/// `sigs[t]` is terminal `t`'s decoded signature.
pub fn bind(trace: &Trace, sigs: &[Signature]) -> Bindings {
    let posts: Vec<bool> = sigs
        .iter()
        .map(|s| {
            let a = Args::new(s);
            is_wildcard(&a) && matches!(a.value("request"), Some(Value::Request(_)))
        })
        .collect();
    if !posts.iter().any(|p| *p) {
        return Bindings::default();
    }
    // Per terminal, per rank: the sender (None: completions disagreed).
    let world = trace.rank_slots();
    let mut seen: FxHashMap<u32, Vec<Option<Option<Rank>>>> = FxHashMap::default();
    for part in &trace.ranks {
        let me = part.meta.rank as usize;
        let Some(calls) = trace.grammar.expand(part.meta.rank) else {
            continue;
        };
        let mut pending: FxHashMap<(u64, u64), u32> = FxHashMap::default();
        for t in calls {
            let Some(sig) = sigs.get(t as usize) else {
                continue;
            };
            let a = Args::new(sig);
            if posts[t as usize] {
                if let Some(Value::Request(RequestRef::Pooled { pool, index })) = a.value("request")
                {
                    pending.insert((*pool, *index), t);
                }
                continue;
            }
            for (request, status) in completions(&a) {
                let Some(&post) = pending.get(&request) else {
                    continue;
                };
                let sender = concrete(&status);
                let slot = &mut seen.entry(post).or_insert_with(|| vec![None; world])[me];
                match slot {
                    None => *slot = Some(sender),
                    Some(s) if *s != sender => *s = None,
                    Some(_) => {}
                }
            }
        }
    }
    seen.into_iter()
        .filter_map(|(t, by_rank)| Some((t, binding(&by_rank)?)))
        .collect()
}

/// One binding from each rank's sender, if every rank that completed the
/// receive saw one sender.
fn binding(by_rank: &[Option<Option<Rank>>]) -> Option<Binding> {
    let mut senders: Vec<Option<Rank>> = Vec::with_capacity(by_rank.len());
    for s in by_rank {
        match s {
            None => senders.push(None),
            Some(None) => return None,
            Some(Some(r)) => senders.push(Some(*r)),
        }
    }
    let mut distinct = senders.iter().flatten();
    let first = *distinct.next()?;
    if distinct.clone().all(|r| *r == first) {
        return Some(Binding::All(first));
    }
    let relative = |r: &Rank| matches!(r, Rank::Relative(_));
    let all_alike =
        senders.iter().flatten().all(relative) || !senders.iter().flatten().any(relative);
    all_alike.then_some(Binding::PerRank(senders))
}

/// The (request, status) pairs a completion call reports.
fn completions(a: &Args) -> Vec<((u64, u64), Status)> {
    let req = |v: &Value| match v {
        Value::Request(RequestRef::Pooled { pool, index }) => Some((*pool, *index)),
        _ => None,
    };
    let status = |v: &Value| match v {
        Value::Status(Some(s)) => Some(*s),
        _ => None,
    };
    let list = |name: &str| match a.value(name) {
        Some(Value::Array(Some(items))) => items.clone(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    if let (Some(r), Some(s)) = (a.value("request"), a.value("status")) {
        if let (Some(r), Some(s)) = (req(r), status(s)) {
            out.push((r, s));
        }
        return out;
    }
    let requests = list("array_of_requests");
    if requests.is_empty() {
        return out;
    }
    if let Some(index) = a.int("index") {
        if let (Some(r), Some(s)) = (
            requests.get(index as usize).and_then(req),
            a.value("status").and_then(status),
        ) {
            out.push((r, s));
        }
        return out;
    }
    let statuses = list("array_of_statuses");
    match a.ints("array_of_indices") {
        Some(indices) => {
            for (i, s) in indices.iter().zip(&statuses) {
                if let (Some(r), Some(s)) = (requests.get(*i as usize).and_then(req), status(s)) {
                    out.push((r, s));
                }
            }
        }
        None => {
            for (r, s) in requests.iter().zip(&statuses) {
                if let (Some(r), Some(s)) = (req(r), status(s)) {
                    out.push((r, s));
                }
            }
        }
    }
    out
}
