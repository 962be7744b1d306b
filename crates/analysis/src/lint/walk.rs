//! One pass over a rank's calls for the per-rank checks: the objects it
//! holds ([`super::objects`]), its runs of MPI_Wait, and the grammar of
//! its call shapes.
//!
//! A call's *shape* is its function and arguments with the ids of objects
//! and requests left out (`type7` becomes `type`, `req3` becomes `req`).
//! Iterations of a loop differ in the ids they create and in which
//! request of the tracer's pool they get, so the trace's own grammar does
//! not always repeat them; the grammar of shapes does. A loop is a
//! repeated run of it, and counts per iteration are read from the
//! repeated rule without expanding it.

use super::objects::{Live, Objects};
use super::{LintError, WAIT_GAP_NS};
use crate::decode::{Args, DecodedCall, RankDecoder, SlotCache};
use crate::timeline::{Span, SpanReader};
use mpigram_grammar::{Grammar, RuleId, Sequitur, Symbol};
use mpigram_mpispec::HandleKind;
use mpigram_trace::{RankPart, Trace};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value as Json};
use std::sync::Arc;

/// Argument objects whose shape a walk keeps (see [`walk`]).
const SHAPED_ARGS: usize = 1 << 14;

/// What one pass over a rank's calls found.
pub(super) struct RankWalk {
    /// Objects held at MPI_Finalize; None if the rank was killed before.
    pub(super) leaked: Option<Vec<Live>>,
    /// Runs of consecutive MPI_Wait calls, length ≥ 2.
    pub(super) wait_runs: WaitRuns,
    pub(super) shapes: Shapes,
    /// The rank runs MPI from several threads at once
    /// (MPI_THREAD_MULTIPLE): its calls' order is one interleaving.
    pub(super) threads: bool,
}

/// The grammar of a rank's call shapes.
pub(super) struct Shapes {
    pub(super) grammar: Grammar,
    /// By shape: its function and its first call.
    pub(super) first: Vec<(&'static str, u64)>,
}

/// Walks the calls of `part`; `spans`: when each call ran, read along
/// (None: not known), for telling two calls near enough in time to be one
/// after the other. Times that do not decode are an error, found when the
/// walk is over if not before.
pub(super) fn walk(
    trace: &Trace,
    part: &RankPart,
    mut spans: Option<SpanReader>,
) -> Result<RankWalk, LintError> {
    let mut objects = Objects::new()?;
    let mut sequitur = Sequitur::new();
    let mut first: Vec<(&'static str, u64)> = Vec::new();
    let mut ids: FxHashMap<String, u32> = FxHashMap::default();
    // Calls of one signature share their arguments while nothing they
    // name changes: shape them once. A slot per argument object (by its
    // address), of a bounded number: arguments decoded afresh for every
    // call (a request's name changes each iteration) do not pile up. A
    // slot holds its arguments alive, so an address it names is theirs.
    let mut by_args: SlotCache<(Args, u32)> = SlotCache::new(SHAPED_ARGS);
    let mut wait_runs = WaitRunsFound::default();
    let mut run: Option<(u64, u64)> = None; // (first call, length)
    let mut finalized = false;
    let mut threads = false;
    // The span of the call before (a rank may have fewer spans than calls).
    let mut before: Option<Span> = None;
    for call in RankDecoder::new(trace, part) {
        let call = call?;
        let span = match &mut spans {
            Some(spans) => spans.next().transpose()?,
            None => None,
        };
        // Without times, calls one after the other are near enough.
        let close = match (&spans, before, span) {
            (None, _, _) => true,
            (Some(_), Some(x), Some(y)) => y.start_ns - x.end_ns < WAIT_GAP_NS,
            _ => false,
        };
        before = span;
        if call.func == "MPI_Init_thread" {
            let provided = call.args.get("provided").and_then(Json::as_str);
            threads = provided == Some("MPI_THREAD_MULTIPLE");
        }
        if call.func == "MPI_Finalize" {
            finalized = true;
        }
        if !finalized {
            objects.record(&call);
        }
        // The address over 8 (objects are 8-aligned: a key per address).
        let key = Arc::as_ptr(&call.args) as usize / 8;
        let shape = match by_args.get(key) {
            Some(&(_, s)) => s,
            None => {
                let next = ids.len() as u32;
                let s = *ids.entry(shape(&call)).or_insert(next);
                if s == next {
                    first.push((call.func, call.seq));
                }
                by_args.put(key, (Arc::clone(&call.args), s));
                s
            }
        };
        sequitur.push(shape);
        run = match run {
            Some((start, n)) if is_single_wait(&call) && close => Some((start, n + 1)),
            _ => {
                if let Some((start, n)) = run.filter(|&(_, n)| n >= 2) {
                    wait_runs.push(start, n);
                }
                is_single_wait(&call).then_some((call.seq, 1))
            }
        };
    }
    if let Some((start, n)) = run.filter(|&(_, n)| n >= 2) {
        wait_runs.push(start, n);
    }
    // Times past the last call that do not decode count too.
    for span in spans.into_iter().flatten() {
        span?;
    }
    let leaked = (finalized || part.meta.ending.is_complete()).then(|| objects.live());
    Ok(RankWalk {
        leaked,
        wait_runs: wait_runs.finish(),
        shapes: Shapes {
            grammar: sequitur.grammar(0),
            first,
        },
        threads,
    })
}

/// A rank's runs of consecutive MPI_Wait calls, (first call, length),
/// kept as a grammar of (calls since the previous run's first call,
/// length): a loop's runs repeat, so they take the room of the loop, not
/// of its iterations.
pub(super) struct WaitRuns {
    grammar: Grammar,
    /// By terminal: (calls since the previous run's first call, length).
    runs: Vec<(u64, u64)>,
}

impl WaitRuns {
    /// The runs in order: (first call, length).
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut first = 0;
        self.grammar.expand(0).into_iter().flatten().map(move |t| {
            let (gap, length) = self.runs[t as usize];
            first += gap;
            (first, length)
        })
    }
}

/// [`WaitRuns`] as the walk finds them.
#[derive(Default)]
struct WaitRunsFound {
    sequitur: Sequitur,
    runs: Vec<(u64, u64)>,
    terminals: FxHashMap<(u64, u64), u32>,
    /// The last run's first call.
    last: u64,
}

impl WaitRunsFound {
    fn push(&mut self, first: u64, length: u64) {
        let run = (first - self.last, length);
        self.last = first;
        let next = self.runs.len() as u32;
        let t = *self.terminals.entry(run).or_insert(next);
        if t == next {
            self.runs.push(run);
        }
        self.sequitur.push(t);
    }

    fn finish(mut self) -> WaitRuns {
        WaitRuns {
            grammar: self.sequitur.grammar(0),
            runs: self.runs,
        }
    }
}

/// An MPI_Wait on a request (not MPI_REQUEST_NULL).
fn is_single_wait(call: &DecodedCall) -> bool {
    call.func == "MPI_Wait"
        && call
            .args
            .get("request")
            .and_then(Json::as_str)
            .is_some_and(|r| r != "MPI_REQUEST_NULL")
}

/// A repeated run of the shapes' grammar: (rule, position).
pub(super) type LoopRef = (RuleId, usize);

impl Shapes {
    /// The innermost repeated run holding call `seq`, and the call's shape.
    pub(super) fn loop_of(&self, seq: u64) -> Option<(LoopRef, u32)> {
        let g = &self.grammar;
        let mut rule = g.start(0)?;
        let mut skip = seq;
        let mut found = None;
        'descend: loop {
            let mut at = 0u64;
            for (pos, run) in g.rule(rule).iter().enumerate() {
                let len = g.symbol_len(run.symbol);
                let span = len.saturating_mul(run.count);
                if skip < at + span {
                    if run.count >= 2 {
                        found = Some((rule, pos));
                    }
                    match run.symbol {
                        Symbol::Terminal(shape) => return found.map(|lp| (lp, shape)),
                        Symbol::Rule(child) => {
                            skip = (skip - at) % len;
                            rule = child;
                            continue 'descend;
                        }
                    }
                }
                at += span;
            }
            return None;
        }
    }

    /// How many calls of `shape` one iteration of loop `lp` makes.
    pub(super) fn per_iteration(&self, (rule, pos): LoopRef, shape: u32) -> u64 {
        match self.grammar.rule(rule)[pos].symbol {
            Symbol::Terminal(_) => 1,
            Symbol::Rule(body) => self
                .grammar
                .terminal_counts(body)
                .into_iter()
                .find(|&(t, _)| t == shape)
                .map_or(1, |(_, n)| n),
        }
    }

    /// How many times the rank made each shape of call: (shape, calls).
    pub(super) fn counts(&self) -> Vec<(u32, u64)> {
        self.grammar
            .start(0)
            .map(|root| self.grammar.terminal_counts(root))
            .unwrap_or_default()
    }
}

/// A call's function and arguments with object and request ids left
/// out: `type7` becomes `type`, `req3` becomes `req`.
fn shape(call: &DecodedCall) -> String {
    fn strip(v: &Json) -> Json {
        match v {
            Json::String(s) => {
                let head = s.trim_end_matches(|c: char| c.is_ascii_digit());
                let is_id = head.len() < s.len()
                    && (head == "req" || HandleKind::ALL.iter().any(|k| k.prefix() == head));
                Json::String(if is_id { head } else { s }.to_owned())
            }
            Json::Array(items) => Json::Array(items.iter().map(strip).collect()),
            Json::Object(o) => Json::Object(o.iter().map(|(k, v)| (k.clone(), strip(v))).collect()),
            other => other.clone(),
        }
    }
    let args: Map<String, Json> = call
        .args
        .iter()
        .map(|(k, v)| (k.clone(), strip(v)))
        .collect();
    format!("{}{}", call.func, Json::Object(args))
}

#[cfg(test)]
mod tests {
    use super::WaitRunsFound;

    #[test]
    fn wait_runs_come_back_in_order_and_a_loop_of_them_takes_the_room_of_one() {
        let mut runs: Vec<(u64, u64)> = (0..10_000).map(|i| (3 + 7 * i, 2)).collect();
        runs.extend([(80_000, 5), (80_010, 2)]);
        let mut found = WaitRunsFound::default();
        for &(first, length) in &runs {
            found.push(first, length);
        }
        let waits = found.finish();
        assert_eq!(waits.iter().collect::<Vec<_>>(), runs);
        assert_eq!(waits.runs.len(), 4);
        assert!(
            waits.grammar.num_runs() < 10,
            "{}",
            waits.grammar.num_runs()
        );
    }
}
