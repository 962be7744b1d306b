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
pub mod one_sided;
mod operations;
#[cfg(test)]
mod tests;

use crate::decode::{DecodeError, DecodedCall, RankDecoder};
use crate::members::{CommInstance, Members};
use collectives::{CollectiveCall, Collectives};
use mpigram_trace::Trace;
use one_sided::{OneSided, OneSidedLog};
use operations::OperationLog;
pub use operations::RankOperations;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::fmt;

/// A communicator as the decoder names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
        Members::world_rank(self, rank, seq, &comm.to_string(), rank_in_comm)
    }

    fn comm_instance(&self, rank: u32, seq: u64, comm: &Comm) -> Option<CommInstance> {
        Members::instance(self, rank, seq, &comm.to_string())
    }
}

/// The peer of an operation, as the call gave it (a rank in its communicator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    Rank(u32),
    /// MPI_ANY_SOURCE.
    Any,
    ProcNull,
    /// A value the decoder could not make absolute (`me+1`).
    Unknown(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Send,
    Recv,
}

/// What a receive's status recorded about the message it got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub source: Peer,
    /// None: MPI_ANY_TAG.
    pub tag: Option<i64>,
    /// The received size in bytes.
    pub bytes: Option<u64>,
    pub cancelled: bool,
}

/// One send or receive of one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// World rank of the caller.
    pub rank: u32,
    pub direction: Direction,
    /// The call that posted it (`MPI_Isend`, `MPI_Sendrecv`, `MPI_Start`, `MPI_Mprobe`).
    pub func: &'static str,
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
            .record(&call);
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
        log.record(&call?);
    }
    Ok(log.finish())
}

/// Matches the operations of every rank (in rank order).
pub fn match_ranks(logs: Vec<(u32, RankOperations)>, ranks: &dyn WorldRanks) -> Matching {
    // The first rank's operations grow, in one reallocation, into all of them.
    let total: usize = logs.iter().map(|(_, l)| l.point_to_point.len()).sum();
    let mut operations = Vec::new();
    let mut collective_calls: Vec<Vec<CollectiveCall>> = Vec::with_capacity(logs.len());
    let mut one_sided_logs: Vec<(u32, OneSidedLog)> = Vec::with_capacity(logs.len());
    for (rank, log) in logs {
        if operations.is_empty() {
            operations = log.point_to_point;
            operations.reserve_exact(total - operations.len());
        } else {
            operations.extend(log.point_to_point);
        }
        collective_calls.push(log.collectives);
        one_sided_logs.push((rank, log.one_sided));
    }
    let (collectives, instance_of) = collectives::match_collectives(&collective_calls, ranks);
    let one_sided =
        one_sided::match_epochs(&one_sided_logs, &collective_calls, &instance_of, ranks);
    Matching {
        collectives,
        one_sided,
        ..match_operations(operations, ranks)
    }
}

/// Messages from one rank to another on one communicator, in posting order.
#[derive(Default)]
struct Channel {
    /// Send operations.
    sends: Vec<usize>,
    taken: Vec<bool>,
    /// Positions in `sends` by tag, front first (taken ones skipped lazily).
    by_tag: FxHashMap<i64, VecDeque<usize>>,
    /// Positions before this are all taken.
    first_pending: usize,
}

impl Channel {
    fn push(&mut self, send: usize, tag: Option<i64>) {
        // A send always has a tag; a missing one matches MPI_ANY_TAG only.
        let tag = tag.unwrap_or(i64::MIN);
        self.by_tag
            .entry(tag)
            .or_default()
            .push_back(self.sends.len());
        self.sends.push(send);
        self.taken.push(false);
    }

    /// The first pending send that a receive of `tag` (None: any) matches.
    fn head(&mut self, tag: Option<i64>) -> Option<usize> {
        match tag {
            None => {
                while self.taken.get(self.first_pending) == Some(&true) {
                    self.first_pending += 1;
                }
                (self.first_pending < self.sends.len()).then_some(self.first_pending)
            }
            Some(t) => {
                let queue = self.by_tag.get_mut(&t)?;
                while queue.front().is_some_and(|&p| self.taken[p]) {
                    queue.pop_front();
                }
                queue.front().copied()
            }
        }
    }

    fn take(&mut self, position: usize) -> usize {
        self.taken[position] = true;
        self.sends[position]
    }
}

/// Channel key: communicator, sender's and receiver's world ranks.
type ChannelKey = (Comm, u32, u32);

fn match_operations(operations: Vec<Operation>, ranks: &dyn WorldRanks) -> Matching {
    let mut unmatched = Vec::new();
    let mut channels: FxHashMap<ChannelKey, Channel> = FxHashMap::default();
    // Senders to each (communicator, receiver), for MPI_ANY_SOURCE.
    let mut senders: FxHashMap<(Comm, u32), Vec<u32>> = FxHashMap::default();
    let mut receives = Vec::new();
    for (i, op) in operations.iter().enumerate() {
        let Some(comm) = known_comm(op) else {
            let comm = op.comm.clone().unwrap_or(Comm::Other("none".into()));
            unmatched.push(Unmatched {
                operation: i,
                reason: Reason::UnknownComm(comm),
            });
            continue;
        };
        match op.direction {
            Direction::Recv if op.cancelled => unmatched.push(Unmatched {
                operation: i,
                reason: Reason::Cancelled,
            }),
            Direction::Recv => receives.push(i),
            Direction::Send => match world_peer(ranks, op, comm, &op.peer) {
                Ok(None) => {} // MPI_PROC_NULL
                Ok(Some(dest)) => {
                    let key = (comm.clone(), op.rank, dest);
                    if !channels.contains_key(&key) {
                        senders
                            .entry((comm.clone(), dest))
                            .or_default()
                            .push(op.rank);
                    }
                    channels.entry(key).or_default().push(i, op.tag);
                }
                Err(reason) => unmatched.push(Unmatched {
                    operation: i,
                    reason,
                }),
            },
        }
    }

    let mut matches = Vec::new();
    for i in receives {
        let op = &operations[i];
        match find_send(op, ranks, &mut channels, &senders) {
            Ok(Some(send)) => matches.push(Match {
                send,
                recv: i,
                bytes: op
                    .status
                    .as_ref()
                    .and_then(|s| s.bytes)
                    .or(operations[send].bytes),
            }),
            Ok(None) => {} // MPI_PROC_NULL
            Err(reason) => unmatched.push(Unmatched {
                operation: i,
                reason,
            }),
        }
    }
    for channel in channels.values() {
        for (position, &send) in channel.sends.iter().enumerate() {
            if !channel.taken[position] {
                unmatched.push(Unmatched {
                    operation: send,
                    reason: Reason::NoReceive,
                });
            }
        }
    }
    unmatched.sort_by_key(|u| u.operation);
    Matching {
        operations,
        matches,
        unmatched,
        ..Matching::default()
    }
}

fn known_comm(op: &Operation) -> Option<&Comm> {
    op.comm.as_ref().filter(|c| !matches!(c, Comm::Other(_)))
}

/// The world rank of `peer` (None for MPI_PROC_NULL).
fn world_peer(
    ranks: &dyn WorldRanks,
    op: &Operation,
    comm: &Comm,
    peer: &Peer,
) -> Result<Option<u32>, Reason> {
    match peer {
        Peer::ProcNull => Ok(None),
        Peer::Rank(r) => ranks
            .world_rank(op.rank, op.post, comm, *r)
            .map(Some)
            .ok_or_else(|| Reason::UnknownRank {
                comm: comm.clone(),
                rank: *r,
            }),
        Peer::Any => Err(Reason::AmbiguousWildcard),
        Peer::Unknown(text) => Err(Reason::UnknownPeer(text.clone())),
    }
}

/// The send whose message receive `op` got; None for MPI_PROC_NULL.
fn find_send(
    op: &Operation,
    ranks: &dyn WorldRanks,
    channels: &mut FxHashMap<ChannelKey, Channel>,
    senders: &FxHashMap<(Comm, u32), Vec<u32>>,
) -> Result<Option<usize>, Reason> {
    let comm = known_comm(op).expect("receives have a known communicator");
    if op.peer == Peer::ProcNull {
        return Ok(None);
    }
    // The status names the message's source and tag, wildcards or not.
    let (source, tag) = match &op.status {
        Some(s) if matches!(s.source, Peer::Rank(_)) => (&s.source, s.tag.or(op.tag)),
        _ => (&op.peer, op.tag),
    };
    if *source == Peer::Any {
        // Without a status: resolved only if one sender has a message for it.
        let mut candidates = senders
            .get(&(comm.clone(), op.rank))
            .into_iter()
            .flatten()
            .filter_map(|&sender| {
                let channel = channels.get_mut(&(comm.clone(), sender, op.rank))?;
                channel.head(tag).map(|position| (sender, position))
            });
        let (sender, position) = candidates.next().ok_or(Reason::NoSend)?;
        if candidates.next().is_some() {
            return Err(Reason::AmbiguousWildcard);
        }
        let channel = channels
            .get_mut(&(comm.clone(), sender, op.rank))
            .expect("a candidate's channel");
        return Ok(Some(channel.take(position)));
    }
    let Some(sender) = world_peer(ranks, op, comm, source)? else {
        return Ok(None);
    };
    let channel = channels
        .get_mut(&(comm.clone(), sender, op.rank))
        .ok_or(Reason::NoSend)?;
    let position = channel.head(tag).ok_or(Reason::NoSend)?;
    Ok(Some(channel.take(position)))
}
