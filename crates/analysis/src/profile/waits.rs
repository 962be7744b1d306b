//! Wait states: time a rank spends blocked in MPI because another rank
//! was not there yet, with the KOJAK/Scalasca definitions (written out in
//! docs/profile.md). Times are the calls' spans on one clock.
//!
//! - point to point, from matched messages: *late sender* (a receive
//!   waits for a send that started after it), *late receiver* (a
//!   synchronous send — MPI_Ssend, MPI_Issend's wait — or a standard send
//!   that was still blocked when the receive was posted waits for it);
//! - collectives, from their instances (the k-th blocking collective on a
//!   communicator of each member): *wait at barrier*, *barrier
//!   completion*, *wait at N×N*, *early reduce*, *late broadcast*.

use super::sites::{CallSite, Sites};
use crate::matching::{Matching, Operation};
use crate::timeline::Span;
use mpigram_mpispec::{FUNCS, decode_signature};
use mpigram_trace::Trace;
use rustc_hash::FxHashMap;

/// The kinds of wait states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WaitKind {
    LateSender,
    LateReceiver,
    WaitAtBarrier,
    BarrierCompletion,
    WaitAtNxN,
    EarlyReduce,
    LateBroadcast,
}

impl WaitKind {
    /// As spelled in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::LateSender => "late_sender",
            WaitKind::LateReceiver => "late_receiver",
            WaitKind::WaitAtBarrier => "wait_at_barrier",
            WaitKind::BarrierCompletion => "barrier_completion",
            WaitKind::WaitAtNxN => "wait_at_nxn",
            WaitKind::EarlyReduce => "early_reduce",
            WaitKind::LateBroadcast => "late_broadcast",
        }
    }

    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            WaitKind::LateSender => "late sender",
            WaitKind::LateReceiver => "late receiver",
            WaitKind::WaitAtBarrier => "wait at barrier",
            WaitKind::BarrierCompletion => "barrier completion",
            WaitKind::WaitAtNxN => "wait at N×N",
            WaitKind::EarlyReduce => "early reduce",
            WaitKind::LateBroadcast => "late broadcast",
        }
    }
}

/// Time one call of one rank waited.
#[derive(Clone, Debug, PartialEq)]
pub struct WaitState {
    pub kind: WaitKind,
    /// The waiting rank.
    pub rank: u32,
    /// The rank waited for, where there is one.
    pub peer: Option<u32>,
    /// The waiting call: its index on the rank, function, call site.
    pub seq: u64,
    pub func: &'static str,
    pub site: Option<CallSite>,
    /// When the call started, seconds from the run's start.
    pub start_s: f64,
    pub severity_s: f64,
}

/// The last rank to reach a collective instance, and what that cost the
/// others (the sum of their waits at it).
#[derive(Clone, Debug, PartialEq)]
pub struct LateArrival {
    pub rank: u32,
    pub seq: u64,
    pub func: &'static str,
    pub site: Option<CallSite>,
    pub cost_s: f64,
}

/// How the ranks of a collective depend on each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pattern {
    Barrier,
    AllToAll,
    /// All to the root.
    ToRoot,
    /// From the root to all.
    FromRoot,
}

pub(crate) fn pattern(func: &str) -> Option<Pattern> {
    let func = func.strip_suffix("_c").unwrap_or(func);
    Some(match func {
        "MPI_Barrier" => Pattern::Barrier,
        "MPI_Allreduce"
        | "MPI_Allgather"
        | "MPI_Allgatherv"
        | "MPI_Alltoall"
        | "MPI_Alltoallv"
        | "MPI_Alltoallw"
        | "MPI_Reduce_scatter"
        | "MPI_Reduce_scatter_block" => Pattern::AllToAll,
        "MPI_Reduce" | "MPI_Gather" | "MPI_Gatherv" => Pattern::ToRoot,
        "MPI_Bcast" | "MPI_Scatter" | "MPI_Scatterv" => Pattern::FromRoot,
        _ => return None,
    })
}

/// The calls point-to-point matching reads (others are not passed on).
pub(crate) fn point_to_point(func: &str) -> bool {
    let f = func.strip_suffix("_c").unwrap_or(func);
    f.contains("send")
        || f.contains("Send")
        || f.contains("recv")
        || f.contains("Recv")
        || f.starts_with("MPI_Wait")
        || f.starts_with("MPI_Test")
        || f.starts_with("MPI_Start")
        || f.ends_with("probe")
        || f == "MPI_Request_free"
        || f == "MPI_Request_get_status"
}

/// One blocking collective call.
#[derive(Clone, Debug)]
pub(crate) struct CollectiveCall {
    pub rank: u32,
    pub seq: u64,
    pub func: &'static str,
    pub pattern: Pattern,
    /// The root's world rank, for rooted collectives.
    pub root: Option<u32>,
}

/// Per-call facts the analysis looks up: times, function, call site.
pub(crate) struct CallInfo<'a> {
    pub trace: &'a Trace,
    pub sites: &'a Sites<'a>,
    /// Spans by rank.
    pub spans: &'a FxHashMap<u32, Vec<Span>>,
    /// Function name of each terminal, decoded once.
    funcs: Vec<Option<&'static str>>,
}

impl<'a> CallInfo<'a> {
    pub fn new(
        trace: &'a Trace,
        sites: &'a Sites<'a>,
        spans: &'a FxHashMap<u32, Vec<Span>>,
    ) -> CallInfo<'a> {
        let funcs = trace
            .signatures
            .iter()
            .map(|s| {
                decode_signature(s)
                    .ok()
                    .and_then(|sig| FUNCS.get(sig.func as usize).map(|f| f.name))
            })
            .collect();
        CallInfo {
            trace,
            sites,
            spans,
            funcs,
        }
    }

    pub fn span(&self, rank: u32, seq: u64) -> Option<Span> {
        let i = usize::try_from(seq).ok()?;
        self.spans.get(&rank)?.get(i).copied()
    }

    /// Function and call site of call `seq` of `rank`.
    pub fn call(&self, rank: u32, seq: u64) -> (Option<&'static str>, Option<CallSite>) {
        let Some(site) = self.sites.of(rank, seq) else {
            return (None, None);
        };
        let run = self.trace.grammar.rule(site.rule)[site.position as usize];
        let func = match run.symbol {
            mpigram_grammar::Symbol::Terminal(t) => self.funcs.get(t as usize).copied().flatten(),
            mpigram_grammar::Symbol::Rule(_) => None,
        };
        (func, Some(site))
    }
}

fn seconds(ns: i64) -> f64 {
    ns as f64 * 1e-9
}

/// A blocking call that completes a receive and may wait for its message.
fn waits_for_message(func: &str) -> bool {
    matches!(
        func.strip_suffix("_c").unwrap_or(func),
        "MPI_Recv"
            | "MPI_Sendrecv"
            | "MPI_Sendrecv_replace"
            | "MPI_Mrecv"
            | "MPI_Wait"
            | "MPI_Waitall"
            | "MPI_Waitany"
            | "MPI_Waitsome"
    )
}

/// A send that cannot complete before its receive is posted.
fn synchronous(func: &str) -> bool {
    matches!(
        func.strip_suffix("_c").unwrap_or(func),
        "MPI_Ssend" | "MPI_Issend"
    )
}

/// The point-to-point wait states: per waiting call the longest wait.
pub(crate) fn point_to_point_waits(matching: &Matching, info: &CallInfo) -> Vec<WaitState> {
    let ops = &matching.operations;
    // (kind, rank, waiting call) -> wait state.
    let mut worst: FxHashMap<(WaitKind, u32, u64), WaitState> = FxHashMap::default();
    let mut keep = |w: WaitState| {
        let key = (w.kind, w.rank, w.seq);
        match worst.get(&key) {
            Some(old) if old.severity_s >= w.severity_s => {}
            _ => {
                worst.insert(key, w);
            }
        }
    };
    for m in &matching.matches {
        let (send, recv) = (&ops[m.send], &ops[m.recv]);
        if let Some(w) = late_sender(send, recv, info) {
            keep(w);
        }
        if let Some(w) = late_receiver(send, recv, info) {
            keep(w);
        }
    }
    let mut out: Vec<WaitState> = worst.into_values().collect();
    out.sort_by_key(|w| (w.rank, w.seq, w.kind));
    out
}

fn late_sender(send: &Operation, recv: &Operation, info: &CallInfo) -> Option<WaitState> {
    let seq = recv.completion?;
    let (func, site) = info.call(recv.rank, seq);
    let func = func.filter(|f| waits_for_message(f))?;
    let wait = info.span(recv.rank, seq)?;
    let sent = info.span(send.rank, send.post)?.start_ns;
    let severity = sent.min(wait.end_ns) - wait.start_ns;
    (severity > 0).then(|| WaitState {
        kind: WaitKind::LateSender,
        rank: recv.rank,
        peer: Some(send.rank),
        seq,
        func,
        site,
        start_s: seconds(wait.start_ns),
        severity_s: seconds(severity),
    })
}

fn late_receiver(send: &Operation, recv: &Operation, info: &CallInfo) -> Option<WaitState> {
    let seq = send.completion?;
    let (func, site) = info.call(send.rank, seq);
    let func = func?;
    let plain = func.strip_suffix("_c").unwrap_or(func);
    let blocking = synchronous(send.func) && (synchronous(plain) || plain.starts_with("MPI_Wait"))
        || plain == "MPI_Send"
        || (plain.starts_with("MPI_Wait") && send.func.starts_with("MPI_Isend"));
    if !blocking {
        return None;
    }
    let wait = info.span(send.rank, seq)?;
    let posted = info.span(recv.rank, recv.post)?.start_ns;
    // A standard send waited for the receive only if it was still blocked
    // when the receive was posted (a rendezvous); a synchronous one always.
    if !synchronous(send.func) && wait.end_ns < posted {
        return None;
    }
    let severity = posted.min(wait.end_ns) - wait.start_ns;
    (severity > 0).then(|| WaitState {
        kind: WaitKind::LateReceiver,
        rank: send.rank,
        peer: Some(recv.rank),
        seq,
        func,
        site,
        start_s: seconds(wait.start_ns),
        severity_s: seconds(severity),
    })
}

/// The collective wait states, and who arrived last at each instance of
/// a barrier or N×N collective.
pub(crate) fn collective_waits(
    instances: &[Vec<CollectiveCall>],
    info: &CallInfo,
) -> (Vec<WaitState>, Vec<LateArrival>) {
    let mut waits = Vec::new();
    let mut late = Vec::new();
    for calls in instances {
        let timed: Vec<(&CollectiveCall, Span)> = calls
            .iter()
            .filter_map(|c| Some((c, info.span(c.rank, c.seq)?)))
            .collect();
        // An instance whose ranks disagree on the operation is no instance.
        let Some((first, _)) = timed.first() else {
            continue;
        };
        if timed.len() < 2 || timed.iter().any(|(c, _)| c.func != first.func) {
            continue;
        }
        let wait = |kind, c: &CollectiveCall, span: Span, peer, severity: i64| WaitState {
            kind,
            rank: c.rank,
            peer,
            seq: c.seq,
            func: c.func,
            site: info.sites.of(c.rank, c.seq),
            start_s: seconds(span.start_ns),
            severity_s: seconds(severity),
        };
        match first.pattern {
            Pattern::Barrier | Pattern::AllToAll => {
                let kind = if first.pattern == Pattern::Barrier {
                    WaitKind::WaitAtBarrier
                } else {
                    WaitKind::WaitAtNxN
                };
                let (last, last_span) = *timed
                    .iter()
                    .max_by_key(|(c, s)| (s.start_ns, std::cmp::Reverse(c.rank)))
                    .expect("two calls or more");
                let mut cost = 0;
                for &(c, span) in &timed {
                    let severity = last_span.start_ns.min(span.end_ns) - span.start_ns;
                    if severity > 0 && c.rank != last.rank {
                        cost += severity;
                        waits.push(wait(kind, c, span, Some(last.rank), severity));
                    }
                }
                if cost > 0 {
                    late.push(LateArrival {
                        rank: last.rank,
                        seq: last.seq,
                        func: last.func,
                        site: info.sites.of(last.rank, last.seq),
                        cost_s: seconds(cost),
                    });
                }
                if first.pattern == Pattern::Barrier {
                    let first_out = timed.iter().map(|(_, s)| s.end_ns).min().unwrap_or(0);
                    for &(c, span) in &timed {
                        let severity = span.end_ns - first_out.max(span.start_ns);
                        if severity > 0 {
                            waits.push(wait(WaitKind::BarrierCompletion, c, span, None, severity));
                        }
                    }
                }
            }
            Pattern::ToRoot => {
                let Some(&(root, root_span)) = timed.iter().find(|(c, _)| Some(c.rank) == c.root)
                else {
                    continue;
                };
                let Some(&(earliest, earliest_span)) = timed
                    .iter()
                    .filter(|(c, _)| c.rank != root.rank)
                    .min_by_key(|(_, s)| s.start_ns)
                else {
                    continue;
                };
                let severity = earliest_span.start_ns.min(root_span.end_ns) - root_span.start_ns;
                if severity > 0 {
                    waits.push(wait(
                        WaitKind::EarlyReduce,
                        root,
                        root_span,
                        Some(earliest.rank),
                        severity,
                    ));
                }
            }
            Pattern::FromRoot => {
                let Some(&(root, root_span)) = timed.iter().find(|(c, _)| Some(c.rank) == c.root)
                else {
                    continue;
                };
                let mut cost = 0;
                for &(c, span) in timed.iter().filter(|(c, _)| c.rank != root.rank) {
                    let severity = root_span.start_ns.min(span.end_ns) - span.start_ns;
                    if severity > 0 {
                        cost += severity;
                        waits.push(wait(
                            WaitKind::LateBroadcast,
                            c,
                            span,
                            Some(root.rank),
                            severity,
                        ));
                    }
                }
                if cost > 0 {
                    late.push(LateArrival {
                        rank: root.rank,
                        seq: root.seq,
                        func: root.func,
                        site: info.sites.of(root.rank, root.seq),
                        cost_s: seconds(cost),
                    });
                }
            }
        }
    }
    (waits, late)
}
