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

use super::sites::CallSite;
use crate::critical_path::CallSites;
use crate::matching::collectives::{CollectiveInstance, CollectiveKind};
use crate::matching::one_sided::Exposure;
use crate::matching::{CallAt, Operation};
use crate::spill::{Record, Spill, put_u32, put_u64, u32_at, u64_at};
use crate::timeline::Span;
use mpigram_mpispec::{FUNCS, func_by_name};

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
    // MPI_Iallreduce: the same operation, non-blocking.
    blocking(op).or_else(|| blocking(&mpigram_mpispec::blocking_operation(op)?))
}

/// What the wait states need to know of a call: its time, function and
/// call site.
pub(crate) trait Lookup {
    fn span(&self, rank: u32, seq: u64) -> Option<Span>;
    /// Function and call site of call `seq` of `rank`.
    fn call(&self, rank: u32, seq: u64) -> (Option<&'static str>, Option<CallSite>);
}

/// The calls of one matched message, instance or epoch pair, as read
/// with them ([`CallAt`]).
pub(crate) struct ItemCalls<'a> {
    calls: Vec<(u32, u64, CallAt)>,
    sites: &'a CallSites,
}

impl<'a> ItemCalls<'a> {
    pub(crate) fn new(sites: &'a CallSites) -> ItemCalls<'a> {
        ItemCalls {
            calls: Vec::new(),
            sites,
        }
    }

    /// Call `seq` of `rank` ran `at` (if it ran: None for a completion never seen).
    pub(crate) fn add(&mut self, rank: u32, seq: Option<u64>, at: Option<CallAt>) -> &mut Self {
        if let (Some(seq), Some(at)) = (seq, at) {
            self.calls.push((rank, seq, at));
        }
        self
    }

    fn at(&self, rank: u32, seq: u64) -> Option<&CallAt> {
        self.calls
            .iter()
            .find(|(r, s, _)| *r == rank && *s == seq)
            .map(|(_, _, at)| at)
    }
}

impl Lookup for ItemCalls<'_> {
    fn span(&self, rank: u32, seq: u64) -> Option<Span> {
        self.at(rank, seq)?.span
    }

    fn call(&self, rank: u32, seq: u64) -> (Option<&'static str>, Option<CallSite>) {
        let Some(at) = self.at(rank, seq) else {
            return (None, None);
        };
        match self.sites.site(at.site) {
            Some(site) => (Some(self.sites.func(at.site)), Some(site)),
            None => (None, None),
        }
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

/// A wait state before the longest of each kind per waiting call is kept:
/// which analysis found it, and whether it is a standard-mode send's late
/// receiver (an inference: the send may have returned at once, eagerly;
/// it is dropped where the same call also waited for a late sender, which
/// explains its blocking).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Candidate {
    pub(crate) state: WaitState,
    pub(crate) origin: Origin,
    pub(crate) standard: bool,
}

/// Which analysis found a wait state (the order they are listed in, for
/// equal rank, call and kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Origin {
    Collective,
    PointToPoint,
    OneSided,
}

/// The wait states of a matched send and receive.
pub(crate) fn message_waits(
    send: &Operation,
    recv: &Operation,
    info: &dyn Lookup,
    out: &mut Vec<Candidate>,
) {
    let candidate = |state, standard| Candidate {
        state,
        origin: Origin::PointToPoint,
        standard,
    };
    out.extend(late_sender(send, recv, info).map(|w| candidate(w, false)));
    let standard = !synchronous(send.func);
    out.extend(late_receiver(send, recv, info).map(|w| candidate(w, standard)));
}

fn late_sender(send: &Operation, recv: &Operation, info: &dyn Lookup) -> Option<WaitState> {
    let seq = recv.completion?;
    info.call(recv.rank, seq)
        .0
        .filter(|f| waits_for_message(f))?;
    let sent = info.span(send.rank, send.post)?.start_ns;
    waited_for(info, WaitKind::LateSender, recv.rank, seq, send.rank, sent)
}

fn late_receiver(send: &Operation, recv: &Operation, info: &dyn Lookup) -> Option<WaitState> {
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

/// The one-sided wait states of a pair of general-active-target epochs.
pub(crate) fn exposure_waits(e: &Exposure, info: &dyn Lookup, out: &mut Vec<Candidate>) {
    let Some(post) = info.span(e.target, e.post) else {
        return;
    };
    let mut push = |state: Option<WaitState>| {
        out.extend(state.map(|state| Candidate {
            state,
            origin: Origin::OneSided,
            standard: false,
        }))
    };
    // The origin waits for the post in MPI_Win_start or in
    // MPI_Win_complete, as the MPI library chooses.
    for seq in std::iter::once(e.start).chain(e.complete) {
        push(waited_for(
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
        push(waited_for(
            info,
            WaitKind::EarlyWait,
            e.target,
            wait,
            e.origin,
            complete.start_ns,
        ));
    }
}

/// The wait states to report from every candidate (in any order): per
/// waiting call the longest of each kind found by point-to-point and by
/// one-sided matching (every collective one), standard sends' late
/// receivers dropped where the call waited for a late sender; ordered by
/// rank, call and kind.
pub(crate) fn settle(candidates: &Spill<Candidate>) -> std::io::Result<WaitStates> {
    let sorted = candidates.sorted(|c| {
        let w = &c.state;
        (
            w.rank,
            w.seq,
            w.kind,
            c.origin,
            std::cmp::Reverse(OrderedSeconds(w.severity_s)),
            w.peer,
        )
    })?;
    let mut out = WaitStates::default();
    let mut last: Option<(u32, u64, WaitKind, Origin)> = None;
    let mut late_sender: Option<(u32, u64)> = None;
    for c in sorted.iter() {
        let c = c?;
        let w = &c.state;
        let key = (w.rank, w.seq, w.kind, c.origin);
        let first = last != Some(key);
        last = Some(key);
        if c.origin != Origin::Collective && !first {
            continue; // a shorter wait of the same kind at the same call
        }
        if c.origin == Origin::PointToPoint && w.kind == WaitKind::LateSender {
            late_sender = Some((w.rank, w.seq));
        }
        if c.standard && late_sender == Some((w.rank, w.seq)) {
            continue;
        }
        out.states.push(&c)?;
    }
    Ok(out)
}

/// Seconds in a total order.
#[derive(Clone, Copy, PartialEq)]
struct OrderedSeconds(f64);

impl Eq for OrderedSeconds {}

impl PartialOrd for OrderedSeconds {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedSeconds {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The wait states of a profile, by rank, call and kind; kept in a
/// temporary file when many.
#[derive(Default)]
pub struct WaitStates {
    states: Spill<Candidate>,
}

impl WaitStates {
    /// The wait states in order. Reading stops early only if the
    /// temporary file cannot be read back: [`WaitStates::len`] tells.
    pub fn iter(&self) -> impl Iterator<Item = WaitState> + '_ {
        self.states.iter().map_while(Result::ok).map(|c| c.state)
    }

    pub fn len(&self) -> usize {
        self.states.len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
}

impl std::fmt::Debug for WaitStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WaitStates({})", self.len())
    }
}

impl Clone for WaitStates {
    fn clone(&self) -> WaitStates {
        let mut out = WaitStates::default();
        for c in self.states.iter().map_while(Result::ok) {
            if out.states.push(&c).is_err() {
                break;
            }
        }
        out
    }
}

const KINDS: [WaitKind; 10] = [
    WaitKind::LateSender,
    WaitKind::LateReceiver,
    WaitKind::WaitAtBarrier,
    WaitKind::BarrierCompletion,
    WaitKind::WaitAtNxN,
    WaitKind::EarlyReduce,
    WaitKind::LateBroadcast,
    WaitKind::WaitAtFence,
    WaitKind::LatePost,
    WaitKind::EarlyWait,
];

impl Record for Candidate {
    const SIZE: usize = 48;
    fn put(&self, out: &mut Vec<u8>) {
        let w = &self.state;
        let kind = KINDS.iter().position(|k| *k == w.kind).unwrap_or(0) as u8;
        let func = func_by_name(w.func).map_or(u32::MAX, |(id, _)| id as u32);
        out.extend_from_slice(&[kind, self.origin as u8, u8::from(self.standard), 0]);
        put_u32(out, w.rank);
        put_u32(out, w.peer.unwrap_or(u32::MAX));
        put_u64(out, w.seq);
        put_u32(out, func);
        let (rule, position) = w
            .site
            .map_or((u32::MAX, u32::MAX), |s| (s.rule, s.position));
        put_u32(out, rule);
        put_u32(out, position);
        put_u64(out, w.start_s.to_bits());
        put_u64(out, w.severity_s.to_bits());
    }
    fn get(b: &[u8]) -> Candidate {
        let func = u32_at(b, 20) as usize;
        let (rule, position) = (u32_at(b, 24), u32_at(b, 28));
        let peer = u32_at(b, 8);
        Candidate {
            state: WaitState {
                kind: KINDS[b[0] as usize % KINDS.len()],
                rank: u32_at(b, 4),
                peer: (peer != u32::MAX).then_some(peer),
                seq: u64_at(b, 12),
                func: FUNCS.get(func).map_or("?", |f| f.name),
                site: (rule != u32::MAX).then_some(CallSite { rule, position }),
                start_s: f64::from_bits(u64_at(b, 32)),
                severity_s: f64::from_bits(u64_at(b, 40)),
            },
            origin: match b[1] {
                0 => Origin::Collective,
                1 => Origin::PointToPoint,
                _ => Origin::OneSided,
            },
            standard: b[2] != 0,
        }
    }
}

/// Call `seq` of `rank` waiting for `peer`'s event at `at_ns`, if it did.
fn waited_for(
    info: &dyn Lookup,
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

/// The wait states of a collective instance, and who arrived last at it
/// if it is a barrier, N×N or one-to-all collective.
pub(crate) fn instance_waits(
    inst: &CollectiveInstance,
    info: &dyn Lookup,
    out: &mut Vec<Candidate>,
    late: &mut Vec<LateArrival>,
) {
    let mut waits = Vec::new();
    #[allow(clippy::never_loop)] // one instance: `continue` leaves it
    for inst in [inst] {
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
    out.extend(waits.into_iter().map(|state| Candidate {
        state,
        origin: Origin::Collective,
        standard: false,
    }));
}
