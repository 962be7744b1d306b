//! Matching over a trace: which receive got each send's message
//! (point-to-point), which calls of the member ranks make up each
//! collective operation ([`collectives`]), and how one-sided
//! synchronisation epochs pair up ([`one_sided`]).
//!
//! MPI matches a message to a receive by communicator, source, destination
//! and tag, and never lets messages between two ranks on one communicator
//! overtake each other: of two sends that a receive could take, it takes the
//! one posted first, and of two receives that could take a message, the one
//! posted first gets it. So, per channel (communicator, sender, receiver),
//! sends and receives pair up in their posting orders, one tag at a time.
//! A wildcard receive (MPI_ANY_SOURCE, MPI_ANY_TAG) is resolved through the
//! source and tag of its recorded status; without a status, MPI_ANY_TAG
//! takes the channel's first pending send, and MPI_ANY_SOURCE is resolved
//! only when a single sender could match.
//!
//! Operations are read from each rank's decoded calls: blocking sends and
//! receives, both halves of MPI_Sendrecv(_replace), non-blocking operations
//! followed through their request to the Wait/Test call that completed them,
//! persistent requests posted by each MPI_Start, and messages taken by
//! MPI_Mprobe/MPI_Improbe and received by MPI_Mrecv/MPI_Imrecv. Operations
//! with MPI_PROC_NULL match nothing and are not reported as unmatched.
//!
//! Ranks in a call are ranks in its communicator; a [`WorldRanks`] turns
//! them into world ranks: [`world_ranks`] from the trace's communicator
//! membership ([`Members`]). Operations on a communicator whose members
//! are not known are reported unmatched, with the reason.

#[cfg(test)]
mod collective_tests;
pub mod collectives;
pub(crate) mod instances;
pub mod one_sided;
mod operations;
pub(crate) mod p2p;
#[cfg(test)]
mod tests;

use crate::decode::{DecodeError, DecodedCall, RankDecoder};
use crate::members::{CommInstance, Members};
use crate::timeline::Span;
use collectives::Collectives;
use instances::Instances;
use mpigram_trace::Trace;
use one_sided::{Epochs, OneSided};
pub use operations::RankOperations;
pub(crate) use operations::{OperationLog, RankEvent, handles};
use p2p::{Decision, PointToPoint};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A communicator as the decoder names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Comm {
    World,
    SelfComm,
    /// `comm3`: the id every member rank agreed on.
    User(u64),
    /// A name that is none of those (`MPI_COMM_NULL`).
    Other(String),
}

impl Comm {
    pub fn from_name(name: &str) -> Comm {
        match name {
            "MPI_COMM_WORLD" => Comm::World,
            "MPI_COMM_SELF" => Comm::SelfComm,
            _ => match name.strip_prefix("comm").and_then(|id| id.parse().ok()) {
                Some(id) => Comm::User(id),
                None => Comm::Other(name.to_owned()),
            },
        }
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Comm::World => f.write_str("MPI_COMM_WORLD"),
            Comm::SelfComm => f.write_str("MPI_COMM_SELF"),
            Comm::User(id) => write!(f, "comm{id}"),
            Comm::Other(name) => f.write_str(name),
        }
    }
}

/// Translates a rank in a communicator to a world rank.
pub trait WorldRanks {
    /// The world rank of `rank_in_comm` in `comm`, as world rank `rank` saw
    /// the communicator at its call `seq`; None if not known.
    fn world_rank(&self, rank: u32, seq: u64, comm: &Comm, rank_in_comm: u32) -> Option<u32>;

    /// The communicator instance `comm` names at call `seq` of world rank
    /// `rank`, for counting collectives; None if not known.
    fn comm_instance(&self, _rank: u32, _seq: u64, _comm: &Comm) -> Option<CommInstance> {
        None
    }
}

/// Knows MPI_COMM_WORLD and MPI_COMM_SELF, no other communicator (for
/// calls without a trace).
pub struct PredefinedComms;

impl WorldRanks for PredefinedComms {
    fn world_rank(&self, rank: u32, _seq: u64, comm: &Comm, rank_in_comm: u32) -> Option<u32> {
        match comm {
            Comm::World => Some(rank_in_comm),
            Comm::SelfComm => (rank_in_comm == 0).then_some(rank),
            Comm::User(_) | Comm::Other(_) => None,
        }
    }
}

/// The world ranks of the communicators of `trace`: the one place the
/// matcher learns communicator membership.
pub fn world_ranks(trace: &Trace) -> Members {
    Members::of(trace)
}

impl WorldRanks for Members {
    fn world_rank(&self, rank: u32, seq: u64, comm: &Comm, rank_in_comm: u32) -> Option<u32> {
        match comm {
            // Asked for every message: no name formatted for the usual ones.
            Comm::World => Members::world_rank(self, rank, seq, "MPI_COMM_WORLD", rank_in_comm),
            Comm::SelfComm => Members::world_rank(self, rank, seq, "MPI_COMM_SELF", rank_in_comm),
            Comm::User(id) => self.user_world_rank(rank, seq, *id, rank_in_comm),
            Comm::Other(name) => Members::world_rank(self, rank, seq, name, rank_in_comm),
        }
    }

    fn comm_instance(&self, rank: u32, seq: u64, comm: &Comm) -> Option<CommInstance> {
        Members::instance(self, rank, seq, &comm.to_string())
    }
}

/// The peer of an operation, as the call gave it (a rank in its communicator).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Peer {
    Rank(u32),
    /// MPI_ANY_SOURCE.
    Any,
    ProcNull,
    /// A value the decoder could not make absolute (`me+1`).
    Unknown(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    Send,
    Recv,
}

/// What a receive's status recorded about the message it got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub source: Peer,
    /// None: MPI_ANY_TAG.
    pub tag: Option<i64>,
    /// The received size in bytes.
    pub bytes: Option<u64>,
    pub cancelled: bool,
}

/// One send or receive of one rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    /// World rank of the caller.
    pub rank: u32,
    pub direction: Direction,
    /// The call that posted it (`MPI_Isend`, `MPI_Sendrecv`, `MPI_Start`, `MPI_Mprobe`).
    #[serde(with = "crate::parallel::func_name")]
    pub func: crate::parallel::FuncName,
    /// Sequence number of that call on the rank.
    pub post: u64,
    /// The call that completed it: `post` for blocking calls; a Wait or Test
    /// for requests; None when no traced call shows it (MPI_Request_free,
    /// never completed).
    pub completion: Option<u64>,
    /// None for a call without a communicator argument (never for the
    /// operations read here).
    pub comm: Option<Comm>,
    /// Destination of a send, source of a receive.
    pub peer: Peer,
    /// None: MPI_ANY_TAG.
    pub tag: Option<i64>,
    /// A completed receive's status, when recorded.
    pub status: Option<Envelope>,
    /// A send's size, when its datatype is predefined.
    pub bytes: Option<u64>,
    /// A receive that was cancelled (its status says so).
    pub cancelled: bool,
    /// When and where the posting and the completing call ran (when read
    /// from a trace with times).
    pub post_at: CallAt,
    pub completion_at: Option<CallAt>,
}

impl Operation {
    /// The operation completed at call `seq` (which ran `at`), with
    /// `status` if recorded; a second completion is no news.
    pub(crate) fn complete(&mut self, seq: u64, at: CallAt, status: Option<Envelope>) {
        if self.completion.is_some() {
            return;
        }
        self.completion = Some(seq);
        self.completion_at = Some(at);
        if self.direction == Direction::Recv {
            if let Some(envelope) = status {
                self.cancelled = envelope.cancelled;
                // A matched probe's status already named the message.
                self.status = Some(Envelope {
                    bytes: envelope
                        .bytes
                        .or(self.status.as_ref().and_then(|s| s.bytes)),
                    ..envelope
                });
            }
        }
    }
}

/// Where and when a call ran, for the analyses that time matched
/// operations: its span (None: no time recorded) and call site number
/// ([`crate::critical_path::CallSites`]; `u32::MAX`: not known).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallAt {
    pub span: Option<Span>,
    pub site: u32,
}

impl Default for CallAt {
    fn default() -> CallAt {
        CallAt {
            span: None,
            site: u32::MAX,
        }
    }
}

/// A send and the receive that got its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Match {
    /// Index in [`Matching::operations`].
    pub send: usize,
    pub recv: usize,
    /// Message size: the receive's status count, else the send's size.
    pub bytes: Option<u64>,
}

/// An operation that matched nothing, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmatched {
    /// Index in [`Matching::operations`].
    pub operation: usize,
    pub reason: Reason,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    NoReceive,
    NoSend,
    Cancelled,
    /// The communicator's name is not one the matcher knows.
    UnknownComm(Comm),
    /// A rank of a communicator whose world rank is not known.
    UnknownRank {
        comm: Comm,
        rank: u32,
    },
    /// A peer the decoder could not make absolute.
    UnknownPeer(String),
    /// MPI_ANY_SOURCE without a recorded status, and several senders could match.
    AmbiguousWildcard,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NoReceive => f.write_str("no receive takes this message"),
            Reason::NoSend => f.write_str("no send matches this receive"),
            Reason::Cancelled => f.write_str("cancelled"),
            Reason::UnknownComm(c) => write!(f, "communicator {c} is not known"),
            Reason::UnknownRank { comm, rank } => {
                write!(f, "the world rank of rank {rank} of {comm} is not known")
            }
            Reason::UnknownPeer(p) => write!(f, "peer {p} is not known"),
            Reason::AmbiguousWildcard => f.write_str(
                "MPI_ANY_SOURCE receive without a status, and several senders could match",
            ),
        }
    }
}

/// Every point-to-point operation of a run, the matches, and what matched
/// nothing; the collective operations and one-sided epochs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matching {
    /// By rank, each rank's in posting order.
    pub operations: Vec<Operation>,
    /// In the receivers' posting order.
    pub matches: Vec<Match>,
    /// In the order of `operations`.
    pub unmatched: Vec<Unmatched>,
    pub collectives: Collectives,
    pub one_sided: OneSided,
}

/// Matches the operations of `calls`: every rank's calls, each rank's in
/// order (ranks may be interleaved).
pub fn match_calls(
    calls: impl IntoIterator<Item = DecodedCall>,
    ranks: &dyn WorldRanks,
) -> Matching {
    let mut logs: FxHashMap<u32, OperationLog> = FxHashMap::default();
    for call in calls {
        logs.entry(call.rank)
            .or_insert_with(|| OperationLog::new(call.rank))
            .record(&call, CallAt::default());
    }
    let mut logs: Vec<(u32, OperationLog)> = logs.into_iter().collect();
    logs.sort_by_key(|(rank, _)| *rank);
    match_ranks(
        logs.into_iter()
            .map(|(rank, log)| (rank, log.finish()))
            .collect(),
        ranks,
    )
}

/// Decodes every rank of `trace` and matches its operations.
pub fn match_trace(trace: &Trace, ranks: &dyn WorldRanks) -> Result<Matching, DecodeError> {
    let mut logs = Vec::new();
    for part in &trace.ranks {
        logs.push((part.meta.rank, rank_operations(trace, part)?));
    }
    logs.sort_by_key(|(rank, _)| *rank);
    Ok(match_ranks(logs, ranks))
}

/// The operations of one rank of `trace`, read from its calls (ranks can
/// be read in parallel, then matched by [`match_ranks`]).
pub fn rank_operations(
    trace: &Trace,
    part: &mpigram_trace::RankPart,
) -> Result<RankOperations, DecodeError> {
    let mut log = OperationLog::new(part.meta.rank);
    for call in RankDecoder::new(trace, part) {
        log.record(&call?, CallAt::default());
    }
    Ok(log.finish())
}

/// What the matcher found, as soon as it is sure of it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Found {
    PointToPoint(Decision),
    Collective(instances::Found),
    OneSided(one_sided::Found),
}

/// Matching as the ranks' calls are read, in any interleaving of the
/// ranks, holding only what is in flight: sends not received yet,
/// receives not decided yet, collective instances whose members are not
/// all there, open epochs. What it finds collects in `found`. Reading the
/// ranks in time order keeps what is in flight to what was in flight in
/// the run.
pub(crate) struct Matcher<'w> {
    world: &'w dyn WorldRanks,
    p2p: PointToPoint,
    instances: Instances,
    epochs: Epochs,
    /// Per rank: operations and collective calls read so far.
    counts: FxHashMap<u32, (usize, usize)>,
    pub(crate) found: Vec<Found>,
    decisions: Vec<Decision>,
    collective: Vec<instances::Found>,
    one_sided: Vec<one_sided::Found>,
}

impl<'w> Matcher<'w> {
    /// A matcher of the calls of `ranks` (world ranks).
    pub(crate) fn new(world: &'w dyn WorldRanks, ranks: Vec<u32>) -> Matcher<'w> {
        Matcher {
            world,
            p2p: PointToPoint::new(ranks),
            instances: Instances::default(),
            epochs: Epochs::default(),
            counts: FxHashMap::default(),
            found: Vec::new(),
            decisions: Vec::new(),
            collective: Vec::new(),
            one_sided: Vec::new(),
        }
    }

    /// The next operation and collective call of `rank` fed are its
    /// `numbers.0`-th and `numbers.1`-th (when some of its events are
    /// matched elsewhere).
    pub(crate) fn number(&mut self, rank: u32, numbers: (usize, usize)) {
        self.counts.insert(rank, numbers);
    }

    /// The next event of `rank`'s calls.
    pub(crate) fn feed(&mut self, rank: u32, event: RankEvent) {
        let world = self.world;
        let counts = self.counts.entry(rank).or_default();
        match event {
            RankEvent::Post(op) => {
                let key = (rank, counts.0);
                counts.0 += 1;
                self.p2p.post(key, op, world, &mut self.decisions);
            }
            RankEvent::Complete {
                op,
                seq,
                at,
                status,
            } => self.p2p.settle(
                (rank, op),
                |o| o.complete(seq, at, status),
                world,
                &mut self.decisions,
            ),
            RankEvent::Abandon(op) => {
                self.p2p
                    .settle((rank, op), |_| {}, world, &mut self.decisions)
            }
            RankEvent::Collective(call) => {
                let key = (rank, counts.1);
                counts.1 += 1;
                self.instances.post(key, call, world, &mut self.collective);
            }
            RankEvent::CollectiveComplete { call, seq, at } => {
                self.instances
                    .settle((rank, call), Some((seq, at)), &mut self.collective)
            }
            RankEvent::CollectiveAbandon(call) => {
                self.instances
                    .settle((rank, call), None, &mut self.collective)
            }
            RankEvent::Epoch(e) => {
                let instances = &self.instances;
                self.epochs.record(
                    rank,
                    e,
                    world,
                    &|r, c| instances.window(r, c),
                    &mut self.one_sided,
                )
            }
        }
        self.collect();
    }

    /// Every event of `rank` has been fed.
    pub(crate) fn end_rank(&mut self, rank: u32) {
        self.p2p.end_rank(rank, self.world, &mut self.decisions);
        self.epochs.end_rank(rank, &mut self.one_sided);
        self.collect();
    }

    /// Every event of every rank has been fed: the rest is decided.
    pub(crate) fn finish(&mut self) {
        self.instances.finish(&mut self.collective);
        let instances = &self.instances;
        self.epochs.windows_known(
            self.world,
            &|r, c| instances.window(r, c),
            &mut self.one_sided,
        );
        self.p2p.finish(self.world, &mut self.decisions);
        self.epochs.finish(&mut self.one_sided);
        self.collect();
    }

    /// Moves what the parts found into `found`; instances found may let
    /// window calls waiting for them go on.
    fn collect(&mut self) {
        let windows = self
            .collective
            .iter()
            .any(|f| !matches!(f, instances::Found::Settled { .. }));
        self.found
            .extend(self.decisions.drain(..).map(Found::PointToPoint));
        self.found
            .extend(self.collective.drain(..).map(Found::Collective));
        if windows {
            let instances = &self.instances;
            self.epochs.windows_known(
                self.world,
                &|r, c| instances.window(r, c),
                &mut self.one_sided,
            );
        }
        self.found
            .extend(self.one_sided.drain(..).map(Found::OneSided));
    }
}

/// Adds what the matcher found to `out` (collective instances to
/// `instances`, numbered later); `first`: where each rank's operations
/// begin in the run's.
fn collect(
    found: Found,
    first: &FxHashMap<u32, usize>,
    out: &mut Matching,
    instances: &mut Vec<(u64, collectives::CollectiveInstance)>,
) {
    let index = |(rank, i): (u32, usize)| first[&rank] + i;
    match found {
        // Its bytes once the receive's status is known (`match_ranks`).
        Found::PointToPoint(Decision::Matched { send, recv }) => out.matches.push(Match {
            send: index(send),
            recv: index(recv),
            bytes: None,
        }),
        Found::PointToPoint(Decision::Unmatched { op, reason }) => out.unmatched.push(Unmatched {
            operation: index(op),
            reason,
        }),
        Found::PointToPoint(Decision::Settled(_) | Decision::Void { .. }) => {}
        Found::Collective(instances::Found::Settled { slot, instance, .. }) => {
            instances.push((slot, instance))
        }
        Found::Collective(instances::Found::Unmatched { unmatched, .. }) => {
            out.collectives.unmatched.push(unmatched)
        }
        Found::Collective(instances::Found::Formed { .. }) => {}
        Found::OneSided(one_sided::Found::Exposure { exposure, .. }) => {
            out.one_sided.exposures.push(exposure)
        }
        Found::OneSided(one_sided::Found::Lock(lock)) => out.one_sided.locks.push(lock),
        Found::OneSided(
            one_sided::Found::Unmatched(u) | one_sided::Found::Unpaired { unmatched: u, .. },
        ) => out.one_sided.unmatched.push(u),
        Found::OneSided(one_sided::Found::Closing { .. } | one_sided::Found::Opening { .. }) => {}
    }
}

/// Matches the operations of every rank (in rank order).
pub fn match_ranks(logs: Vec<(u32, RankOperations)>, ranks: &dyn WorldRanks) -> Matching {
    let mut matcher = Matcher::new(ranks, logs.iter().map(|(r, _)| *r).collect());
    let mut operations: Vec<Operation> = Vec::new();
    // Where each rank's operations begin in `operations`.
    let mut first: FxHashMap<u32, usize> = FxHashMap::default();
    let mut out = Matching::default();
    let mut instances: Vec<(u64, collectives::CollectiveInstance)> = Vec::new();
    for (rank, log) in logs {
        first.insert(rank, operations.len());
        let at = operations.len();
        for event in log.events {
            match &event {
                RankEvent::Post(op) => operations.push(op.clone()),
                RankEvent::Complete {
                    op,
                    seq,
                    at: call_at,
                    status,
                } => operations[at + op].complete(*seq, *call_at, status.clone()),
                _ => {}
            }
            matcher.feed(rank, event);
            // What is found is collected at once: the matcher's findings
            // carry copies of operations.
            for found in matcher.found.drain(..) {
                collect(found, &first, &mut out, &mut instances);
            }
        }
        matcher.end_rank(rank);
    }
    matcher.finish();
    for found in matcher.found.drain(..) {
        collect(found, &first, &mut out, &mut instances);
    }
    for m in &mut out.matches {
        let (send, recv) = (&operations[m.send], &operations[m.recv]);
        m.bytes = recv.status.as_ref().and_then(|s| s.bytes).or(send.bytes);
    }
    out.operations = operations;
    out.matches.sort_by_key(|m| m.recv);
    out.unmatched.sort_by_key(|u| u.operation);
    // Instances in the order their first participant posted them; windows
    // named by the index of their creation's instance.
    instances.sort_by_key(|(slot, i)| {
        let first = i.participants.first().map(|p| (p.rank, p.post));
        (first, *slot)
    });
    let number: FxHashMap<u64, usize> = instances
        .iter()
        .enumerate()
        .map(|(n, (slot, _))| (*slot, n))
        .collect();
    out.collectives.instances = instances.into_iter().map(|(_, i)| i).collect();
    out.collectives.unmatched.sort_by_key(|u| (u.rank, u.post));
    let o = &mut out.one_sided;
    for e in &mut o.exposures {
        e.window = number[&(e.window as u64)];
    }
    for l in &mut o.locks {
        l.window = number[&(l.window as u64)];
    }
    o.exposures
        .sort_by_key(|e| (e.window, e.origin, e.target, e.start));
    o.locks.sort_by_key(|l| (l.origin, l.unlock));
    o.unmatched.sort_by_key(|u| {
        let peer = match u.reason {
            one_sided::EpochReason::NoPartner { peer } => peer,
            _ => 0,
        };
        (u.rank, u.seq, peer)
    });
    out
}
