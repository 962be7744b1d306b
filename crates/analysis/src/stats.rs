//! What `mpigram stats` reports: per MPI function its calls, time and
//! bytes moved; the sizes of point-to-point messages and collective
//! operations; and the point-to-point communication matrix between world
//! ranks.
//!
//! Everything is computed from the grammar without expanding it: a rank's
//! calls of each distinct signature are counted from rule use counts
//! times repetition counts ([`Grammar::terminal_counts`]), and what one
//! signature moves is worked out once per rank and multiplied. Time comes
//! from the per-signature aggregated timing every trace has.
//!
//! A signature's meaning can depend on when it was called: datatype and
//! communicator ids come from free-id pools, so `type0` may be a 12-byte
//! type early in the run and a 40-byte one later. When a rank's
//! data-moving calls name such an id, that rank's calls are walked in
//! order instead (`walk`), still counting the stretches of the grammar
//! in which nothing is (re)defined without expanding them.

mod collective;
mod datatype;
mod histogram;
mod matrix;
mod per_call;
#[cfg(test)]
pub(crate) mod tests;
pub(crate) mod traffic;
mod walk;

pub use datatype::{DatatypeSizes, predefined_size};
pub use histogram::{BUCKETS, Histogram, bucket, bucket_range};
pub use matrix::{CommMatrix, Traffic as PairTraffic};
pub use per_call::{CallBytes, CallTraffic};

use crate::members::Members;
use mpigram_grammar::{Grammar, RuleId};
use mpigram_mpispec::Args as Call;
use mpigram_mpispec::{FUNCS, FuncId, HandleKind, Signature, decode_signature};
use mpigram_trace::{CommEntry, RankPart, Trace};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value as Json, json};
use traffic::{RankContext, Traffic};

/// One MPI function's calls over all ranks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionStats {
    pub name: &'static str,
    pub calls: u64,
    /// Calls that were timed, and their summed and longest duration.
    pub timed_calls: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    /// Bytes of the calls whose bytes are known.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Calls that moved data of unknown size (not in the bytes).
    pub calls_unknown_bytes: u64,
}

impl FunctionStats {
    pub fn mean_ns(&self) -> f64 {
        if self.timed_calls == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.timed_calls as f64
        }
    }
}

/// What `mpigram stats` reports about a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Ranks in the trace, and the size of MPI_COMM_WORLD.
    pub ranks: u32,
    pub world_size: u32,
    pub calls: u64,
    /// Functions called, by total time (longest first), then name.
    pub functions: Vec<FunctionStats>,
    pub histogram: Histogram,
    pub matrix: CommMatrix,
    /// Ranks whose calls were walked in order because a datatype or
    /// communicator id they use meant different things during the run.
    pub expanded_ranks: Vec<u32>,
}

/// Why a trace's statistics cannot be computed.
#[derive(Debug, thiserror::Error)]
#[error("call signature {terminal}: {message}")]
pub struct StatsError {
    pub terminal: u32,
    pub message: String,
}

/// What each signature of the trace is, decoded once.
pub(crate) struct Signatures {
    pub sigs: Vec<Signature>,
    /// The call may move data ([`traffic::moves_data`]).
    pub moves_data: Vec<bool>,
    /// The call changes what later calls mean: it defines datatypes or
    /// creates a persistent request.
    pub event: Vec<bool>,
}

impl Signatures {
    fn decode(trace: &Trace) -> Result<Signatures, StatsError> {
        let sigs = trace
            .signatures
            .iter()
            .enumerate()
            .map(|(t, bytes)| {
                decode_signature(bytes).map_err(|e| StatsError {
                    terminal: t as u32,
                    message: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let calls = || sigs.iter().map(Call::new);
        Ok(Signatures {
            moves_data: calls().map(|c| traffic::moves_data(&c)).collect(),
            event: calls()
                .map(|c| !datatype::defined_types(&c).is_empty() || traffic::operation(&c).1)
                .collect(),
            sigs,
        })
    }

    pub fn call(&self, t: u32) -> Call<'_> {
        Call::new(&self.sigs[t as usize])
    }
}

/// Function statistics, histogram and matrix as they are summed up.
pub(crate) struct Tally {
    functions: Vec<FunctionStats>,
    histogram: Histogram,
    matrix: CommMatrix,
}

impl Tally {
    /// Adds `n` calls of function `func` by rank `from` that each moved `traffic`.
    pub fn account(&mut self, func: FuncId, from: u32, traffic: &Traffic, n: u64) {
        let f = &mut self.functions[func as usize];
        let times = |b: u64| b.saturating_mul(n);
        if let Some(s) = traffic.sent {
            f.bytes_sent = f.bytes_sent.saturating_add(times(s));
        }
        if let Some(r) = traffic.received {
            f.bytes_received = f.bytes_received.saturating_add(times(r));
        }
        if traffic.sent.is_none() || traffic.received.is_none() {
            f.calls_unknown_bytes += n;
        }
        for m in &traffic.messages {
            self.histogram.add_p2p(m.bytes, n);
            self.matrix.add(from, m.to, m.bytes, n);
        }
        for &c in &traffic.collectives {
            self.histogram.add_collective(c, n);
        }
    }
}

impl Stats {
    pub fn of(trace: &Trace) -> Result<Stats, StatsError> {
        Stats::with_progress(trace, &mut |_, _| {})
    }

    /// The statistics; `progress(done, total)` is told how many calls of
    /// the ranks that must be walked in order have been walked.
    pub fn with_progress(
        trace: &Trace,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Stats, StatsError> {
        Stats::compute(trace, progress, false)
    }

    /// The statistics, walking every rank in order if `walk_all` (tests
    /// check that both ways agree).
    fn compute(
        trace: &Trace,
        progress: &mut dyn FnMut(u64, u64),
        walk_all: bool,
    ) -> Result<Stats, StatsError> {
        let signatures = Signatures::decode(trace)?;
        let members = Members::of(trace);
        let world_size = trace
            .ranks
            .iter()
            .map(|r| r.meta.world_size)
            .max()
            .unwrap_or(0);
        let mut tally = Tally {
            functions: FUNCS
                .iter()
                .map(|f| FunctionStats {
                    name: f.name,
                    ..FunctionStats::default()
                })
                .collect(),
            histogram: Histogram::default(),
            matrix: CommMatrix {
                ranks: world_size,
                ..CommMatrix::default()
            },
        };
        let mut counts_by_start: FxHashMap<RuleId, Vec<(u32, u64)>> = FxHashMap::default();
        let mut walks = Vec::new();
        for part in &trace.ranks {
            let Some(start) = trace.grammar.start(part.meta.rank) else {
                continue;
            };
            let counts = counts_by_start
                .entry(start)
                .or_insert_with(|| trace.grammar.terminal_counts(start));
            for &(t, n) in counts.iter() {
                let f = &mut tally.functions[signatures.sigs[t as usize].func as usize];
                f.calls = f.calls.saturating_add(n);
            }
            for &(t, s) in &part.stats {
                let Some(sig) = signatures.sigs.get(t as usize) else {
                    continue;
                };
                let f = &mut tally.functions[sig.func as usize];
                f.timed_calls = f.timed_calls.saturating_add(s.count);
                f.total_ns = f.total_ns.saturating_add(s.total_ns);
                f.max_ns = f.max_ns.max(s.max_ns);
            }
            match stable_context(part, counts, &signatures, &members).filter(|_| !walk_all) {
                Some(ctx) => {
                    for &(t, n) in counts
                        .iter()
                        .filter(|(t, _)| signatures.moves_data[*t as usize])
                    {
                        let call = signatures.call(t);
                        tally.account(call.sig.func, part.meta.rank, &ctx.traffic(&call), n);
                    }
                }
                None => walks.push(part),
            }
        }
        let total: u64 = walks
            .iter()
            .filter_map(|p| trace.grammar.stream_len(p.meta.rank))
            .sum();
        let mut walker = walk::Walker::new(&trace.grammar, &signatures, &members, total, progress);
        for part in &walks {
            walker.walk_rank(part, &mut tally);
        }
        let mut functions: Vec<FunctionStats> = tally
            .functions
            .into_iter()
            .filter(|f| f.calls > 0 || f.timed_calls > 0)
            .collect();
        functions.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(b.name)));
        Ok(Stats {
            ranks: trace.ranks.len() as u32,
            world_size,
            calls: functions.iter().map(|f| f.calls).sum(),
            functions,
            histogram: tally.histogram,
            matrix: tally.matrix,
            expanded_ranks: walks.iter().map(|p| p.meta.rank).collect(),
        })
    }

    pub fn function(&self, name: &str) -> Option<&FunctionStats> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The JSON document of `mpigram stats --json` (see docs/stats.md).
    pub fn to_json(&self) -> Json {
        let mut functions = Map::new();
        for f in &self.functions {
            functions.insert(
                f.name.to_owned(),
                json!({
                    "calls": f.calls,
                    "total_s": f.total_ns as f64 / 1e9,
                    "mean_s": f.mean_ns() / 1e9,
                    "max_s": f.max_ns as f64 / 1e9,
                    "bytes_sent": f.bytes_sent,
                    "bytes_received": f.bytes_received,
                    "calls_unknown_bytes": f.calls_unknown_bytes,
                }),
            );
        }
        let histogram: Vec<Json> = self
            .histogram
            .rows()
            .into_iter()
            .map(|(i, p2p, collective)| {
                let (min, max) = bucket_range(i);
                json!({"min_bytes": min, "max_bytes": max, "p2p": p2p, "collective": collective})
            })
            .collect();
        let pairs: Vec<Json> = self
            .matrix
            .pairs
            .iter()
            .map(|(&(from, to), t)| {
                json!({"from": from, "to": to, "bytes": t.bytes, "messages": t.messages})
            })
            .collect();
        json!({
            "ranks": self.ranks,
            "world_size": self.world_size,
            "calls": self.calls,
            "expanded_ranks": self.expanded_ranks,
            "functions": functions,
            "histogram": histogram,
            "histogram_unknown_size": {
                "p2p": self.histogram.p2p_unknown,
                "collective": self.histogram.collective_unknown,
            },
            "matrix": {
                "ranks": self.matrix.ranks,
                "pairs": pairs,
                "unattributed": {
                    "bytes": self.matrix.unattributed.bytes,
                    "messages": self.matrix.unattributed.messages,
                },
                "unknown_size_messages": self.matrix.unknown_size_messages,
            },
        })
    }
}

/// What a rank's signatures mean if each means one thing over the whole
/// run: every datatype its data-moving calls (and persistent requests)
/// name has one size, every user communicator one entry in its log.
/// `None` if not: the rank must be walked in order.
fn stable_context<'m>(
    part: &RankPart,
    counts: &[(u32, u64)],
    signatures: &Signatures,
    members: &'m Members,
) -> Option<RankContext<'m>> {
    let mut ctx = RankContext::new(members, part.meta.rank, part.meta.world_size);
    let mut logged: FxHashMap<u64, Vec<CommEntry>> = FxHashMap::default();
    for e in &part.comms {
        logged.entry(e.comm).or_default().push(*e);
    }
    let mut reused_comms = FxHashSet::default();
    for (id, entries) in logged {
        match entries.as_slice() {
            [one] => {
                ctx.comms.insert(id, *one);
            }
            _ => {
                reused_comms.insert(id);
            }
        }
    }
    let mut definitions: FxHashMap<u64, Vec<u32>> = FxHashMap::default();
    for &(t, _) in counts {
        for id in datatype::defined_types(&signatures.call(t)) {
            definitions.entry(id).or_default().push(t);
        }
    }
    let mut types = TypeResolver {
        definitions: &definitions,
        signatures,
        resolved: FxHashMap::default(),
        resolving: FxHashSet::default(),
    };
    for &id in definitions.keys() {
        match types.resolve(id) {
            Resolved::Size(size) => ctx.types.set(id, size),
            Resolved::Unstable => {}
        }
    }
    let depends_on_history = |call: &Call<'_>| {
        call.user_handles(HandleKind::Datatype)
            .any(|id| types.resolved.get(&id) == Some(&Resolved::Unstable))
            || call
                .user_handles(HandleKind::Comm)
                .any(|id| reused_comms.contains(&id))
    };
    for &(t, _) in counts {
        let call = signatures.call(t);
        let matters = signatures.moves_data[t as usize] || traffic::operation(&call).1;
        if matters && depends_on_history(&call) {
            return None;
        }
    }
    for &(t, _) in counts {
        if let Some((key, traffic)) = ctx.persistent_request(&signatures.call(t)) {
            ctx.requests.insert(key, traffic);
        }
    }
    Some(ctx)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolved {
    /// One size (or unknown) whichever definition is in force.
    Size(Option<u64>),
    /// Definitions of different sizes, or built from such a type.
    Unstable,
}

/// Sizes of a rank's user datatypes from all their definitions.
struct TypeResolver<'a> {
    definitions: &'a FxHashMap<u64, Vec<u32>>,
    signatures: &'a Signatures,
    resolved: FxHashMap<u64, Resolved>,
    /// Types being resolved: meeting one again is a cycle of definitions
    /// through reused ids, which only the order of calls can untangle.
    resolving: FxHashSet<u64>,
}

impl TypeResolver<'_> {
    fn resolve(&mut self, id: u64) -> Resolved {
        if let Some(&r) = self.resolved.get(&id) {
            return r;
        }
        let Some(definitions) = self.definitions.get(&id) else {
            return Resolved::Size(None); // never defined here: unknown
        };
        if !self.resolving.insert(id) {
            return Resolved::Unstable;
        }
        let mut result = None;
        for &t in definitions {
            let call = self.signatures.call(t);
            let defined = datatype::defined_types(&call);
            let inputs: Vec<u64> = call
                .user_handles(HandleKind::Datatype)
                .filter(|i| !defined.contains(i))
                .collect();
            let size = if inputs
                .iter()
                .any(|&i| self.resolve(i) == Resolved::Unstable)
            {
                Resolved::Unstable
            } else {
                let sizes = &self.resolved;
                Resolved::Size(datatype::defined_size(&call, &|i| match sizes.get(&i) {
                    Some(Resolved::Size(s)) => *s,
                    _ => None,
                }))
            };
            result = match result {
                None => Some(size),
                Some(r) if r == size => Some(r),
                Some(_) => Some(Resolved::Unstable),
            };
        }
        self.resolving.remove(&id);
        let r = result.unwrap_or(Resolved::Size(None));
        self.resolved.insert(id, r);
        r
    }
}

/// Rule `r` of `grammar` contains (at any depth) a terminal for which
/// `event` holds, by rule.
pub(crate) fn rules_with(grammar: &Grammar, event: &[bool]) -> Vec<bool> {
    use mpigram_grammar::Symbol;
    let mut has = Vec::with_capacity(grammar.num_rules());
    for body in grammar.rules() {
        let found = body.iter().any(|run| match run.symbol {
            Symbol::Terminal(t) => event.get(t as usize).copied().unwrap_or(false),
            Symbol::Rule(r) => has[r as usize],
        });
        has.push(found);
    }
    has
}
