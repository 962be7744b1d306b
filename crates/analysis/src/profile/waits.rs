//! Wait states: time a rank spends blocked in MPI because another rank
//! was not there yet, with the KOJAK/Scalasca definitions (written out in
//! docs/profile.md). Times are the calls' spans on one clock.
//!
//! - point to point, from matched messages: *late sender* (a receive
//!   waits for a send that started after it), *late receiver* (a
//!   synchronous send — MPI_Ssend, MPI_Issend's wait — or a standard send
//!   that was still blocked when the receive was posted waits for it);
//! - one-sided general active target synchronisation, from the matched
//!   epochs: *late post* (an origin's MPI_Win_start or MPI_Win_complete
//!   waits for the target's MPI_Win_post) and *early wait* (a target's
//!   MPI_Win_wait waits for the origins' MPI_Win_complete);
//! - collectives, from their instances as [`crate::matching::collectives`]
//!   finds them — blocking, non-blocking and persistent: *wait at
//!   barrier*, *barrier completion*, *wait at N×N*, *early reduce*, *late
//!   broadcast*. A process enters an instance when it posts it (the
//!   collective call, MPI_Ixxx or MPI_Start) and waits in the call that
//!   completes it (the same call, or the Wait/Test of its request).

use super::sites::{CallSite, Sites};
use crate::matching::collectives::{CollectiveInstance, CollectiveKind};
use crate::matching::one_sided::OneSided;
use crate::matching::{Matching, Operation};
use crate::timeline::Span;
use mpigram_mpispec::{FUNCS, decode_signature};
use mpigram_trace::Trace;
use rustc_hash::{FxHashMap, FxHashSet};

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
    WaitAtFence,
    LatePost,
    EarlyWait,
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
            WaitKind::WaitAtFence => "wait_at_fence",
            WaitKind::LatePost => "late_post",
            WaitKind::EarlyWait => "early_wait",
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
            WaitKind::WaitAtFence => "wait at fence",
            WaitKind::LatePost => "late post",
            WaitKind::EarlyWait => "early wait",
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
enum Pattern {
    Barrier,
    /// MPI_Win_fence: N×N over the window's group.
    Fence,
    AllToAll,
    /// All to the root.
    ToRoot,
    /// From the root to all.
    FromRoot,
}

/// The pattern of a collective operation, blocking (`MPI_Allreduce`),
/// non-blocking (`MPI_Iallreduce`) or persistent (`MPI_Allreduce_init`);
/// None for collectives without one (scans, neighbourhood collectives,
/// communicator and window creation).
fn pattern(operation: &str) -> Option<Pattern> {
    let op = operation.strip_suffix("_c").unwrap_or(operation);
    let op = op
        .strip_suffix("_init")
        .unwrap_or(op)
        .strip_prefix("MPI_")?;
    let blocking = |op: &str| {
        Some(match op {
            "Barrier" => Pattern::Barrier,
            "Win_fence" => Pattern::Fence,
            "Allreduce"
            | "Allgather"
            | "Allgatherv"
            | "Alltoall"
            | "Alltoallv"
            | "Alltoallw"
            | "Reduce_scatter"
            | "Reduce_scatter_block" => Pattern::AllToAll,
            "Reduce" | "Gather" | "Gatherv" => Pattern::ToRoot,
            "Bcast" | "Scatter" | "Scatterv" => Pattern::FromRoot,
            _ => return None,
        })
    };
    blocking(op).or_else(|| {
        // MPI_Iallreduce: the same operation, non-blocking.
        let rest = op.strip_prefix('I')?;
        let mut chars = rest.chars();
        let first = chars.next()?.to_ascii_uppercase();
        blocking(&format!("{first}{}", chars.as_str()))
    })
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

/// The point-to-point wait states: per waiting call the longest wait of
/// each kind. A standard-mode send's late receiver is an inference (the
/// send may have returned at once, eagerly): it is dropped where the same
/// call also waited for a late sender, which explains its blocking.
pub(crate) fn point_to_point_waits(matching: &Matching, info: &CallInfo) -> Vec<WaitState> {
    let ops = &matching.operations;
    // Each wait state, and whether it is a standard send's late receiver.
    let mut all: Vec<(WaitState, bool)> = Vec::new();
    for m in &matching.matches {
        let (send, recv) = (&ops[m.send], &ops[m.recv]);
        all.extend(late_sender(send, recv, info).map(|w| (w, false)));
        let standard = !synchronous(send.func);
        all.extend(late_receiver(send, recv, info).map(|w| (w, standard)));
    }
    keep_longest(&mut all, |(w, _)| w);
    let late_sender: FxHashSet<(u32, u64)> = all
        .iter()
        .filter(|(w, _)| w.kind == WaitKind::LateSender)
        .map(|(w, _)| (w.rank, w.seq))
        .collect();
    all.into_iter()
        .filter(|(w, standard)| !(*standard && late_sender.contains(&(w.rank, w.seq))))
        .map(|(w, _)| w)
        .collect()
}

fn late_sender(send: &Operation, recv: &Operation, info: &CallInfo) -> Option<WaitState> {
    let seq = recv.completion?;
    info.call(recv.rank, seq)
        .0
        .filter(|f| waits_for_message(f))?;
    let sent = info.span(send.rank, send.post)?.start_ns;
    waited_for(info, WaitKind::LateSender, recv.rank, seq, send.rank, sent)
}

fn late_receiver(send: &Operation, recv: &Operation, info: &CallInfo) -> Option<WaitState> {
    let seq = send.completion?;
    let func = info.call(send.rank, seq).0?;
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
    waited_for(
        info,
        WaitKind::LateReceiver,
        send.rank,
        seq,
        recv.rank,
        posted,
    )
}

/// The one-sided wait states of general active target synchronisation:
/// per waiting call the longest wait.
pub(crate) fn one_sided_waits(epochs: &OneSided, info: &CallInfo) -> Vec<WaitState> {
    let mut all = Vec::new();
    for e in &epochs.exposures {
        let Some(post) = info.span(e.target, e.post) else {
            continue;
        };
        // The origin waits for the post in MPI_Win_start or in
        // MPI_Win_complete, as the MPI library chooses.
        for seq in std::iter::once(e.start).chain(e.complete) {
            all.extend(waited_for(
                info,
                WaitKind::LatePost,
                e.origin,
                seq,
                e.target,
                post.start_ns,
            ));
        }
        // The target's MPI_Win_wait waits for the origin's MPI_Win_complete.
        if let (Some(wait), Some(complete)) = (e.wait, e.complete)
            && let Some(complete) = info.span(e.origin, complete)
        {
            all.extend(waited_for(
                info,
                WaitKind::EarlyWait,
                e.target,
                wait,
                e.origin,
                complete.start_ns,
            ));
        }
    }
    keep_longest(&mut all, |w| w);
    all
}

/// Keeps one wait state per (rank, waiting call, kind), the longest, in
/// that order; `state` finds each item's wait state.
fn keep_longest<T>(all: &mut Vec<T>, state: impl Fn(&T) -> &WaitState) {
    let key = |w: &WaitState| (w.rank, w.seq, w.kind);
    all.sort_unstable_by(|a, b| {
        let (a, b) = (state(a), state(b));
        key(a)
            .cmp(&key(b))
            .then(b.severity_s.total_cmp(&a.severity_s))
    });
    all.dedup_by(|a, b| key(state(a)) == key(state(b)));
}

/// Call `seq` of `rank` waiting for `peer`'s event at `at_ns`, if it did.
fn waited_for(
    info: &CallInfo,
    kind: WaitKind,
    rank: u32,
    seq: u64,
    peer: u32,
    at_ns: i64,
) -> Option<WaitState> {
    let span = info.span(rank, seq)?;
    let severity = at_ns.min(span.end_ns) - span.start_ns;
    let (func, site) = info.call(rank, seq);
    (severity > 0).then_some(WaitState {
        kind,
        rank,
        peer: Some(peer),
        seq,
        func: func?,
        site,
        start_s: seconds(span.start_ns),
        severity_s: seconds(severity),
    })
}

/// One process in a collective instance, timed: when it entered (its
/// post's start) and the call it waited in (the completing call).
struct Entered {
    rank: u32,
    /// The posting call.
    post: u64,
    enter_ns: i64,
    /// The completing call and its span.
    seq: u64,
    wait: Span,
}

/// The collective wait states, and who arrived last at each instance of
/// a barrier, N×N or one-to-all collective.
pub(crate) fn collective_waits(
    instances: &[CollectiveInstance],
    info: &CallInfo,
) -> (Vec<WaitState>, Vec<LateArrival>) {
    let mut waits = Vec::new();
    let mut late = Vec::new();
    for inst in instances {
        // A persistent collective's MPI_*_init moves no data: only its starts wait.
        if inst.kind == CollectiveKind::Setup {
            continue;
        }
        let Some(pattern) = pattern(inst.operation) else {
            continue;
        };
        let timed: Vec<Entered> = inst
            .participants
            .iter()
            .filter_map(|p| {
                let seq = p.completion?;
                Some(Entered {
                    rank: p.rank,
                    post: p.post,
                    enter_ns: info.span(p.rank, p.post)?.start_ns,
                    seq,
                    wait: info.span(p.rank, seq)?,
                })
            })
            .collect();
        if timed.len() < 2 {
            continue;
        }
        let wait = |kind, e: &Entered, peer, severity: i64| {
            let (func, site) = info.call(e.rank, e.seq);
            WaitState {
                kind,
                rank: e.rank,
                peer,
                seq: e.seq,
                func: func.unwrap_or(inst.func),
                site,
                start_s: seconds(e.wait.start_ns),
                severity_s: seconds(severity),
            }
        };
        let arrival = |e: &Entered, cost: i64| {
            let (func, site) = info.call(e.rank, e.post);
            LateArrival {
                rank: e.rank,
                seq: e.post,
                func: func.unwrap_or(inst.func),
                site,
                cost_s: seconds(cost),
            }
        };
        // Time `e` waited in its completing call for something that
        // happened at `at`.
        let waited = |e: &Entered, at: i64| at.min(e.wait.end_ns) - e.wait.start_ns;
        let root = timed.iter().find(|e| Some(e.rank) == inst.root);
        match pattern {
            Pattern::Barrier | Pattern::Fence | Pattern::AllToAll => {
                let kind = match pattern {
                    Pattern::Barrier => WaitKind::WaitAtBarrier,
                    Pattern::Fence => WaitKind::WaitAtFence,
                    _ => WaitKind::WaitAtNxN,
                };
                let last = timed
                    .iter()
                    .max_by_key(|e| (e.enter_ns, std::cmp::Reverse(e.rank)))
                    .expect("two processes or more");
                let mut cost = 0;
                for e in timed.iter().filter(|e| e.rank != last.rank) {
                    let severity = waited(e, last.enter_ns);
                    if severity > 0 {
                        cost += severity;
                        waits.push(wait(kind, e, Some(last.rank), severity));
                    }
                }
                if cost > 0 {
                    late.push(arrival(last, cost));
                }
                if pattern == Pattern::Barrier {
                    let first_out = timed.iter().map(|e| e.wait.end_ns).min().unwrap_or(0);
                    for e in &timed {
                        let severity = e.wait.end_ns - first_out.max(e.wait.start_ns);
                        if severity > 0 {
                            waits.push(wait(WaitKind::BarrierCompletion, e, None, severity));
                        }
                    }
                }
            }
            Pattern::ToRoot => {
                // The root waits until the first other process sends.
                let Some(root) = root else { continue };
                let Some(earliest) = timed
                    .iter()
                    .filter(|e| e.rank != root.rank)
                    .min_by_key(|e| e.enter_ns)
                else {
                    continue;
                };
                let severity = waited(root, earliest.enter_ns);
                if severity > 0 {
                    waits.push(wait(
                        WaitKind::EarlyReduce,
                        root,
                        Some(earliest.rank),
                        severity,
                    ));
                }
            }
            Pattern::FromRoot => {
                let Some(root) = root else { continue };
                let mut cost = 0;
                for e in timed.iter().filter(|e| e.rank != root.rank) {
                    let severity = waited(e, root.enter_ns);
                    if severity > 0 {
                        cost += severity;
                        waits.push(wait(WaitKind::LateBroadcast, e, Some(root.rank), severity));
                    }
                }
                if cost > 0 {
                    late.push(arrival(root, cost));
                }
            }
        }
    }
    (waits, late)
}
