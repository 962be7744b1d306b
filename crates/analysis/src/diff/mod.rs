//! `mpigram diff`: two traces compared call by call on every rank — the
//! same program under two MPIs, two versions of an application, two
//! inputs.
//!
//! The comparison works on the grammars: every signature of both traces
//! gets a class (equal signatures, once the ignored argument classes are
//! blanked, share one), each rule a fingerprint of its expansion in
//! classes ([`mpigram_grammar::Fingerprints`]), so equal ranks compare in
//! O(grammar size) and the first difference is found by a binary search on
//! prefix fingerprints, never by expanding the streams. Only the calls
//! around a difference are decoded, and calls per function are counted on
//! the grammar.

use crate::decode::{DecodedCall, RankDecoder};
use mpigram_grammar::{Fingerprints, common_prefix};
use mpigram_mpispec::{
    BufferRef, FUNCS, HandleRef, RequestRef, Signature, Value, decode_signature,
};
use mpigram_trace::{RankPart, Trace};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Argument classes that may be told to differ without counting as a
/// difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ignore {
    /// Buffer addresses (memory segment and offset; NULL and MPI_IN_PLACE
    /// still count).
    Buffers,
    /// Request ids (MPI_REQUEST_NULL still counts).
    Requests,
    /// Ids of user objects: communicators, datatypes, ... (predefined
    /// handles and null handles still count).
    Handles,
    /// Everything a status holds.
    Statuses,
    /// Return codes.
    Returns,
    /// Strings (object names, info keys and values, ...).
    Strings,
    /// Ids of user callbacks.
    Callbacks,
}

impl Ignore {
    pub const ALL: [Ignore; 7] = [
        Ignore::Buffers,
        Ignore::Requests,
        Ignore::Handles,
        Ignore::Statuses,
        Ignore::Returns,
        Ignore::Strings,
        Ignore::Callbacks,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Ignore::Buffers => "buffers",
            Ignore::Requests => "requests",
            Ignore::Handles => "handles",
            Ignore::Statuses => "statuses",
            Ignore::Returns => "returns",
            Ignore::Strings => "strings",
            Ignore::Callbacks => "callbacks",
        }
    }
}

impl std::str::FromStr for Ignore {
    type Err = String;

    fn from_str(s: &str) -> Result<Ignore, String> {
        Ignore::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Ignore::ALL.iter().map(|i| i.name()).collect();
                format!("unknown argument class {s:?} (one of {})", names.join(", "))
            })
    }
}

/// What to compare and how much to show.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub ignore: Vec<Ignore>,
    /// Calls shown before and after a rank's first difference.
    pub context: u64,
}

/// Which trace a line of context comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A call both traces make (before the first difference).
    Both,
    A,
    B,
}

/// One call around a difference.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextCall {
    pub side: Side,
    pub call: DecodedCall,
}

/// How many calls of one function each trace's rank makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCounts {
    pub func: &'static str,
    pub a: u64,
    pub b: u64,
}

/// One rank whose calls differ.
#[derive(Clone, Debug, PartialEq)]
pub struct RankDifference {
    pub rank: u32,
    /// Calls of the rank in A and in B.
    pub calls: (u64, u64),
    /// Index of the first call that differs (the shorter rank's length
    /// when one rank's calls are the start of the other's).
    pub first: u64,
    /// The calls around it.
    pub context: Vec<ContextCall>,
    /// The functions whose numbers of calls differ.
    pub counts: Vec<FunctionCounts>,
}

/// The comparison of two traces.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceDiff {
    /// Ranks compared (present in both).
    pub ranks: u32,
    /// Ranks whose calls differ, in rank order.
    pub differences: Vec<RankDifference>,
    /// Ranks only A has, and only B has.
    pub only_a: Vec<u32>,
    pub only_b: Vec<u32>,
    /// The calls are the same, but their recorded times are not.
    pub timing_differs: bool,
    /// The MPI library each trace was taken with (its first rank's).
    pub mpi: (String, String),
}

impl TraceDiff {
    /// Whether both traces make the same calls on every rank.
    pub fn same_calls(&self) -> bool {
        self.differences.is_empty() && self.only_a.is_empty() && self.only_b.is_empty()
    }
}

/// Compares `a` and `b` call by call.
pub fn diff(a: &Trace, b: &Trace, options: &Options) -> Result<TraceDiff, String> {
    let mut classes = Classes::new(options);
    let values_a = classes.of(a, "A")?;
    let values_b = classes.of(b, "B")?;
    let (fa, fb) = (
        Fingerprints::new(&a.grammar, &values_a),
        Fingerprints::new(&b.grammar, &values_b),
    );
    let mut out = TraceDiff {
        ranks: 0,
        differences: Vec::new(),
        only_a: missing(a, b),
        only_b: missing(b, a),
        timing_differs: false,
        mpi: (mpi_of(a), mpi_of(b)),
    };
    for pa in &a.ranks {
        let rank = pa.meta.rank;
        let Some(pb) = b.rank(rank) else { continue };
        out.ranks += 1;
        let (Some(sa), Some(sb)) = (a.grammar.start(rank), b.grammar.start(rank)) else {
            return Err(format!("rank {rank} has no calls in one of the traces"));
        };
        let (whole_a, whole_b) = (fa.rule(sa), fb.rule(sb));
        if whole_a == whole_b {
            out.timing_differs |= timing_differs(pa, pb, &values_a, &values_b);
            continue;
        }
        let first = common_prefix(&fa, sa, &fb, sb);
        let context = context(a, pa, b, pb, first, options.context)?;
        out.differences.push(RankDifference {
            rank,
            calls: (whole_a.len, whole_b.len),
            first,
            context,
            counts: counts(a, sa, b, sb)?,
        });
    }
    Ok(out)
}

/// Classes of signatures: equal bytes once the ignored arguments are
/// blanked. The value of a class is what the fingerprints hash.
struct Classes<'o> {
    options: &'o Options,
    ids: FxHashMap<Vec<u8>, u64>,
}

impl<'o> Classes<'o> {
    fn new(options: &'o Options) -> Classes<'o> {
        Classes {
            options,
            ids: FxHashMap::default(),
        }
    }

    /// The value of each terminal of `trace`, by terminal.
    fn of(&mut self, trace: &Trace, which: &str) -> Result<Vec<u64>, String> {
        trace
            .signatures
            .iter()
            .enumerate()
            .map(|(t, bytes)| {
                let key = if self.options.ignore.is_empty() {
                    bytes.clone()
                } else {
                    let sig = decode_signature(bytes)
                        .map_err(|e| format!("trace {which}: bad signature {t}: {e}"))?;
                    blank(sig, &self.options.ignore).encode()
                };
                let next = self.ids.len() as u64;
                let id = *self.ids.entry(key).or_insert(next);
                Ok(spread(id))
            })
            .collect()
    }
}

/// A class id spread over 64 bits (splitmix64's finaliser), so that the
/// fingerprints of different classes are unrelated.
fn spread(id: u64) -> u64 {
    let mut z = id.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `sig` with the arguments of the ignored classes replaced by one value.
fn blank(mut sig: Signature, ignore: &[Ignore]) -> Signature {
    if ignore.contains(&Ignore::Returns) {
        sig.ret = 0;
    }
    for v in &mut sig.args {
        blank_value(v, ignore);
    }
    sig
}

fn blank_value(v: &mut Value, ignore: &[Ignore]) {
    let class = match v {
        Value::Buffer(BufferRef::Segment { .. }) => Ignore::Buffers,
        Value::Request(RequestRef::Pooled { .. }) => Ignore::Requests,
        Value::Handle(_, HandleRef::User(_)) => Ignore::Handles,
        Value::Status(_) | Value::UndefinedStatus => Ignore::Statuses,
        Value::Str(_) => Ignore::Strings,
        Value::Callback(Some(_)) => Ignore::Callbacks,
        Value::Array(Some(items)) => {
            for item in items {
                blank_value(item, ignore);
            }
            return;
        }
        _ => return,
    };
    if !ignore.contains(&class) {
        return;
    }
    *v = match v {
        Value::Buffer(_) => Value::Buffer(BufferRef::Segment { id: 0, offset: 0 }),
        Value::Request(_) => Value::Request(RequestRef::Pooled { pool: 0, index: 0 }),
        Value::Handle(kind, _) => Value::Handle(*kind, HandleRef::User(0)),
        Value::Callback(_) => Value::Callback(Some(0)),
        Value::Str(_) => Value::Str(None),
        _ => Value::Status(None),
    };
}

/// Ranks of `x` that `y` does not have.
fn missing(x: &Trace, y: &Trace) -> Vec<u32> {
    x.ranks
        .iter()
        .map(|r| r.meta.rank)
        .filter(|&r| y.rank(r).is_none())
        .collect()
}

fn mpi_of(t: &Trace) -> String {
    t.ranks
        .first()
        .map_or_else(String::new, |r| r.meta.mpi_library.clone())
}

/// Whether two ranks with the same calls were timed differently: their
/// aggregated timing per signature class, or their per-call times.
fn timing_differs(a: &RankPart, b: &RankPart, values_a: &[u64], values_b: &[u64]) -> bool {
    let by_class = |part: &RankPart, values: &[u64]| {
        let mut v: Vec<_> = part
            .stats
            .iter()
            .map(|(t, s)| {
                let class = values.get(*t as usize).copied().unwrap_or(u64::MAX);
                (class, s.count, s.total_ns, s.min_ns, s.max_ns)
            })
            .collect();
        v.sort_unstable();
        v
    };
    by_class(a, values_a) != by_class(b, values_b) || a.times != b.times
}

/// The calls before the first difference (from A) and after it (from
/// each trace).
fn context(
    a: &Trace,
    pa: &RankPart,
    b: &Trace,
    pb: &RankPart,
    first: u64,
    around: u64,
) -> Result<Vec<ContextCall>, String> {
    let start = first.saturating_sub(around);
    let decode = |trace, part, from, count, side| -> Result<Vec<ContextCall>, String> {
        RankDecoder::window(trace, part, from, count)
            .map(|call| {
                call.map(|call| ContextCall { side, call })
                    .map_err(|e| e.to_string())
            })
            .collect()
    };
    let mut out = decode(a, pa, start, first - start, Side::Both)?;
    let after = around.max(1);
    out.extend(decode(a, pa, first, after, Side::A)?);
    out.extend(decode(b, pb, first, after, Side::B)?);
    Ok(out)
}

/// Functions whose numbers of calls differ between rank rules `sa` of `a`
/// and `sb` of `b`, counted on the grammars.
fn counts(
    a: &Trace,
    sa: mpigram_grammar::RuleId,
    b: &Trace,
    sb: mpigram_grammar::RuleId,
) -> Result<Vec<FunctionCounts>, String> {
    let mut per_func: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
    for (trace, rule, is_a) in [(a, sa, true), (b, sb, false)] {
        for (t, n) in trace.grammar.terminal_counts(rule) {
            let bytes = trace
                .signatures
                .get(t as usize)
                .ok_or_else(|| format!("terminal {t} has no signature"))?;
            let func = function_of(bytes)?;
            let slot = per_func.entry(func).or_default();
            if is_a {
                slot.0 += n;
            } else {
                slot.1 += n;
            }
        }
    }
    Ok(per_func
        .into_iter()
        .filter(|(_, (x, y))| x != y)
        .map(|(func, (a, b))| FunctionCounts { func, a, b })
        .collect())
}

/// The function a signature's bytes call (the head only is read).
fn function_of(bytes: &[u8]) -> Result<&'static str, String> {
    let id = mpigram_varint::ByteReader::new(bytes)
        .u64()
        .map_err(|e| e.to_string())?;
    FUNCS
        .get(id as usize)
        .map(|f| f.name)
        .ok_or_else(|| format!("unknown function id {id}"))
}

#[cfg(test)]
mod tests;
