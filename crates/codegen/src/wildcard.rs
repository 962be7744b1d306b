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
//! sender varied on one rank keeps MPI_ANY_SOURCE. All of it is worked out
//! on the grammar, without expanding a call.

use mpigram_grammar::Symbol;
use mpigram_mpispec::Args;
use mpigram_mpispec::{Rank, RequestRef, Signature, Status, Value};
use mpigram_trace::Trace;
use rustc_hash::{FxHashMap, FxHashSet};

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

/// A request, by (pool, index).
type Request = (u64, u64);

/// What expanding a stretch of calls does to wildcard receives, computed
/// on the grammar: a rule's effect is its runs' effects in order, and a
/// run repeated k >= 2 times has the effect of two repetitions (the
/// requests a repetition posts are the ones the next completes; a third
/// adds nothing), so no call is expanded.
#[derive(Clone, Default)]
struct Effect {
    /// Completions of requests posted before the stretch: their senders.
    needs: FxHashMap<Request, FxHashSet<Option<Rank>>>,
    /// The receive (terminal) each request was last posted by in the stretch.
    posts: FxHashMap<Request, u32>,
    /// Senders of receives posted and completed in the stretch, by terminal.
    seen: FxHashMap<u32, FxHashSet<Option<Rank>>>,
}

impl Effect {
    /// This stretch followed by `next`.
    fn then(&self, next: &Effect) -> Effect {
        let mut e = self.clone();
        for (request, senders) in &next.needs {
            match self.posts.get(request) {
                Some(post) => e.seen.entry(*post).or_default().extend(senders),
                None => e.needs.entry(*request).or_default().extend(senders),
            }
        }
        for (post, senders) in &next.seen {
            e.seen.entry(*post).or_default().extend(senders);
        }
        e.posts.extend(next.posts.iter().map(|(r, t)| (*r, *t)));
        e
    }

    /// The effect of one call.
    fn of_call(terminal: u32, a: &Args, posts: bool) -> Effect {
        let mut e = Effect::default();
        if posts {
            if let Some(Value::Request(RequestRef::Pooled { pool, index })) = a.value("request") {
                e.posts.insert((*pool, *index), terminal);
            }
            return e;
        }
        for (request, status) in completions(a) {
            e.needs
                .entry(request)
                .or_default()
                .insert(concrete(&status));
        }
        e
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
    let g = &trace.grammar;
    let calls: FxHashMap<u32, Effect> = g
        .rules()
        .flatten()
        .filter_map(|run| match run.symbol {
            Symbol::Terminal(t) => Some(t),
            Symbol::Rule(_) => None,
        })
        .collect::<FxHashSet<u32>>()
        .into_iter()
        .map(|t| {
            let e = match sigs.get(t as usize) {
                Some(sig) => Effect::of_call(t, &Args::new(sig), posts[t as usize]),
                None => Effect::default(),
            };
            (t, e)
        })
        .collect();
    // Rules refer only to rules numbered below them: one pass in order.
    let mut rules: Vec<Effect> = Vec::with_capacity(g.num_rules());
    for body in g.rules() {
        let mut e = Effect::default();
        for run in body {
            let once = match run.symbol {
                Symbol::Terminal(t) => &calls[&t],
                Symbol::Rule(r) => &rules[r as usize],
            };
            let repeated = if run.count > 1 {
                once.then(once)
            } else {
                once.clone()
            };
            e = e.then(&repeated);
        }
        rules.push(e);
    }
    // Per terminal, per rank: the sender (None: completions disagreed).
    let world = trace.rank_slots();
    let mut seen: FxHashMap<u32, Vec<Option<Option<Rank>>>> = FxHashMap::default();
    for part in &trace.ranks {
        let me = part.meta.rank as usize;
        let Some(start) = g.start(part.meta.rank) else {
            continue;
        };
        for (post, senders) in &rules[start as usize].seen {
            let one = match senders.iter().collect::<Vec<_>>()[..] {
                [one] => *one,
                _ => None,
            };
            seen.entry(*post).or_insert_with(|| vec![None; world])[me] = Some(one);
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
