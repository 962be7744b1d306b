//! Point-to-point matching as operations are read, holding only what is in
//! flight: sends no receive took yet, receives not decided yet.
//!
//! A receive is decided once it is final (completed, or never to be): its
//! status names the message's source and tag, and says whether it was
//! cancelled. Receives of one rank are decided in posting order, except
//! that a receive no earlier undecided one could compete with (another
//! communicator, source or tag) need not wait for it: a receive posted
//! early and completed late (a termination message) holds back only the
//! receives that could have taken its message.

use super::{Comm, Direction, Operation, Peer, Reason, WorldRanks};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// An operation: its rank and its index among the rank's operations.
pub(crate) type OpKey = (u32, usize);

/// What became of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A send in its channel, or a receive not decided yet.
    Open,
    Matched(OpKey),
    /// Unmatched, or an operation with MPI_PROC_NULL.
    Done,
}

struct Entry {
    op: Operation,
    /// Its completion is known, or will never be.
    settled: bool,
    state: State,
}

/// Channel key: communicator, sender's and receiver's world ranks.
type ChannelKey = (Comm, u32, u32);

/// What the matcher tells its user, as soon as it knows it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Decision {
    /// The receive got the send's message.
    Matched {
        send: OpKey,
        recv: OpKey,
    },
    Unmatched {
        op: OpKey,
        reason: Reason,
    },
    /// An operation with MPI_PROC_NULL: no message, not unmatched.
    Void {
        op: OpKey,
    },
    /// Both operations of a match are final (completed or never to be).
    Settled(Box<Message>),
}

/// A send and the receive that got its message, both final.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Message {
    pub(crate) keys: (OpKey, OpKey),
    pub(crate) send: Operation,
    pub(crate) recv: Operation,
    /// The receive's status count, else the send's size.
    pub(crate) bytes: Option<u64>,
}

pub(crate) struct PointToPoint {
    ops: FxHashMap<OpKey, Entry>,
    /// Sends no receive took yet, in posting order, with their tags.
    channels: FxHashMap<ChannelKey, VecDeque<(OpKey, Option<i64>)>>,
    /// Ranks that sent to each (communicator, receiver), for MPI_ANY_SOURCE.
    senders: FxHashMap<(Comm, u32), Vec<u32>>,
    /// Each rank's undecided receives.
    receives: FxHashMap<u32, Receives>,
    /// Every rank whose operations are read.
    ranks: Vec<u32>,
    /// Ranks whose operations have all been read.
    ended: FxHashSet<u32>,
    /// Every rank's operations have been read.
    finished: bool,
    /// Scratch list of the receives that may be decided.
    candidates: Vec<(u64, usize, OpKey)>,
}

impl PointToPoint {
    /// Matching of the operations of `ranks`.
    pub(crate) fn new(ranks: Vec<u32>) -> PointToPoint {
        PointToPoint {
            ops: FxHashMap::default(),
            channels: FxHashMap::default(),
            senders: FxHashMap::default(),
            receives: FxHashMap::default(),
            ranks,
            ended: FxHashSet::default(),
            finished: false,
            candidates: Vec::new(),
        }
    }

    pub(crate) fn post(
        &mut self,
        key: OpKey,
        op: Operation,
        ranks: &dyn WorldRanks,
        out: &mut Vec<Decision>,
    ) {
        let settled = op.completion.is_some();
        let (direction, rank) = (op.direction, op.rank);
        self.ops.insert(
            key,
            Entry {
                op,
                settled,
                state: State::Open,
            },
        );
        let op = &self.ops[&key].op;
        let Some(comm) = known_comm(op) else {
            let comm = op.comm.clone().unwrap_or(Comm::Other("none".into()));
            self.decide(key, Err(Reason::UnknownComm(comm)), out);
            return;
        };
        match direction {
            Direction::Recv => {
                let reach = Reach::of(&self.ops[&key].op);
                self.receives.entry(rank).or_default().push(reach, key);
                self.decide_receives(rank, ranks, out);
            }
            Direction::Send => match world_peer(ranks, op, comm, &op.peer) {
                Ok(None) => self.decide(key, Ok(None), out), // MPI_PROC_NULL
                Ok(Some(dest)) => {
                    let channel = (comm.clone(), rank, dest);
                    let tag = op.tag;
                    if !self.channels.contains_key(&channel) {
                        let senders = self.senders.entry((comm.clone(), dest)).or_default();
                        if !senders.contains(&rank) {
                            senders.push(rank);
                        }
                    }
                    self.channels
                        .entry(channel)
                        .or_default()
                        .push_back((key, tag));
                    if self.ended.contains(&dest)
                        && self.receives.get(&dest).is_none_or(Receives::is_empty)
                    {
                        self.flush_unreceived(dest, out);
                    } else {
                        self.decide_receives(dest, ranks, out);
                    }
                }
                Err(reason) => self.decide(key, Err(reason), out),
            },
        }
    }

    /// Operation `key` completed (or never will): `apply` brings the news.
    pub(crate) fn settle(
        &mut self,
        key: OpKey,
        apply: impl FnOnce(&mut Operation),
        ranks: &dyn WorldRanks,
        out: &mut Vec<Decision>,
    ) {
        let Some(entry) = self.ops.get_mut(&key) else {
            return;
        };
        if entry.settled {
            return;
        }
        apply(&mut entry.op);
        entry.settled = true;
        if entry.op.direction == Direction::Recv && entry.state == State::Open {
            self.decide_receives(key.0, ranks, out);
        }
        self.release(key, out);
    }

    /// Every operation of `rank` has been read.
    pub(crate) fn end_rank(&mut self, rank: u32, ranks: &dyn WorldRanks, out: &mut Vec<Decision>) {
        self.ended.insert(rank);
        // Receives waiting for this rank's sends, or for every sender to end.
        let waiting: Vec<u32> = self.receives.keys().copied().collect();
        for r in waiting {
            self.decide_receives(r, ranks, out);
        }
        if self.receives.get(&rank).is_none_or(Receives::is_empty) {
            self.flush_unreceived(rank, out);
        }
    }

    /// Every rank's operations have been read: what is undecided matched nothing.
    pub(crate) fn finish(&mut self, ranks: &dyn WorldRanks, out: &mut Vec<Decision>) {
        self.finished = true;
        let mut waiting: Vec<u32> = self.receives.keys().copied().collect();
        waiting.sort_unstable();
        for r in &waiting {
            // Unsettled receives settle now (their completion never came).
            let keys: Vec<OpKey> = self.receives[r].keys().collect();
            for key in keys {
                if let Some(e) = self.ops.get_mut(&key) {
                    e.settled = true;
                }
            }
            self.decide_receives(*r, ranks, out);
        }
        let mut dests: Vec<u32> = self.channels.keys().map(|c| c.2).collect();
        dests.sort_unstable();
        dests.dedup();
        for dest in dests {
            self.flush_unreceived(dest, out);
        }
        let mut left: Vec<OpKey> = self.ops.keys().copied().collect();
        left.sort_unstable();
        for key in left {
            if let Some(e) = self.ops.get_mut(&key) {
                e.settled = true;
            }
            self.release(key, out);
        }
    }

    /// Sends to `dest` that no receive took: `dest` has no receives left.
    fn flush_unreceived(&mut self, dest: u32, out: &mut Vec<Decision>) {
        let mut keys: Vec<ChannelKey> = self
            .channels
            .keys()
            .filter(|c| c.2 == dest)
            .cloned()
            .collect();
        keys.sort_by_key(|c| c.1);
        for channel in keys {
            for (send, _) in self.channels.remove(&channel).unwrap_or_default() {
                self.decide(send, Err(Reason::NoReceive), out);
            }
        }
    }

    /// Records what became of `key` (Ok(None): MPI_PROC_NULL).
    fn decide(
        &mut self,
        key: OpKey,
        result: Result<Option<OpKey>, Reason>,
        out: &mut Vec<Decision>,
    ) {
        match result {
            Ok(Some(send)) => {
                if let Some(e) = self.ops.get_mut(&send) {
                    e.state = State::Matched(key);
                }
                if let Some(e) = self.ops.get_mut(&key) {
                    e.state = State::Matched(send);
                }
                out.push(Decision::Matched { send, recv: key });
                self.release(send, out);
            }
            Ok(None) => {
                if let Some(e) = self.ops.get_mut(&key) {
                    e.state = State::Done;
                }
                out.push(Decision::Void { op: key });
            }
            Err(reason) => {
                if let Some(e) = self.ops.get_mut(&key) {
                    e.state = State::Done;
                }
                out.push(Decision::Unmatched { op: key, reason });
            }
        }
        self.release(key, out);
    }

    /// Forgets `key` once nothing more can happen to it.
    fn release(&mut self, key: OpKey, out: &mut Vec<Decision>) {
        let Some(e) = self.ops.get(&key) else { return };
        if !e.settled {
            return;
        }
        match e.state {
            State::Open => {}
            State::Done => {
                self.ops.remove(&key);
            }
            State::Matched(other) => {
                if self.ops.get(&other).is_some_and(|o| o.settled) {
                    let a = self.ops.remove(&key).expect("present").op;
                    let b = self.ops.remove(&other).expect("present").op;
                    let ((send, s), (recv, r)) = match a.direction {
                        Direction::Send => ((a, key), (b, other)),
                        Direction::Recv => ((b, other), (a, key)),
                    };
                    let bytes = recv.status.as_ref().and_then(|s| s.bytes).or(send.bytes);
                    out.push(Decision::Settled(Box::new(Message {
                        keys: (s, r),
                        send,
                        recv,
                        bytes,
                    })));
                }
            }
        }
    }

    /// Decides the receives of `rank` that can be decided now: the first
    /// undecided one of each reach, unless an earlier undecided one could
    /// compete with it.
    fn decide_receives(&mut self, rank: u32, ranks: &dyn WorldRanks, out: &mut Vec<Decision>) {
        // Asked after every operation: its list is kept, not allocated anew.
        let mut candidates = std::mem::take(&mut self.candidates);
        self.decide_receives_with(rank, ranks, out, &mut candidates);
        self.candidates = candidates;
    }

    fn decide_receives_with(
        &mut self,
        rank: u32,
        ranks: &dyn WorldRanks,
        out: &mut Vec<Decision>,
        candidates: &mut Vec<(u64, usize, OpKey)>,
    ) {
        loop {
            let Some(receives) = self.receives.get(&rank) else {
                return;
            };
            // The settled heads no earlier head competes with, in posting order.
            candidates.clear();
            for (g, group) in receives.groups.iter().enumerate() {
                let &(order, key) = group.queue.front().expect("groups are not empty");
                let competing = receives.groups.iter().enumerate().any(|(h, other)| {
                    h != g
                        && other.reach.overlaps(&group.reach)
                        && other.queue.front().is_some_and(|&(o, _)| o < order)
                });
                if !competing && self.ops[&key].settled {
                    candidates.push((order, g, key));
                }
            }
            candidates.sort_unstable();
            let mut decided = None;
            for &(_, g, key) in candidates.iter() {
                if let Some(result) = self.find_send(key, ranks) {
                    decided = Some((g, key, result));
                    break;
                }
            }
            let Some((g, key, result)) = decided else {
                return;
            };
            let receives = self.receives.get_mut(&rank).expect("present");
            receives.groups[g].queue.pop_front();
            if receives.groups[g].queue.is_empty() {
                receives.groups.swap_remove(g);
            }
            self.decide(key, result, out);
            if self.receives.get(&rank).is_some_and(Receives::is_empty) {
                self.receives.remove(&rank);
                if self.ended.contains(&rank) {
                    self.flush_unreceived(rank, out);
                }
                return;
            }
        }
    }

    /// The send whose message settled receive `key` got, if that can be
    /// known now: Some(Ok(None)) for MPI_PROC_NULL, None to wait for sends
    /// not read yet.
    fn find_send(
        &mut self,
        key: OpKey,
        ranks: &dyn WorldRanks,
    ) -> Option<Result<Option<OpKey>, Reason>> {
        let op = &self.ops[&key].op;
        if op.cancelled {
            return Some(Err(Reason::Cancelled));
        }
        let comm = known_comm(op)
            .expect("receives have a known communicator")
            .clone();
        if op.peer == Peer::ProcNull {
            return Some(Ok(None));
        }
        // The status names the message's source and tag, wildcards or not.
        let (source, tag) = match &op.status {
            Some(s) if matches!(s.source, Peer::Rank(_)) => (s.source.clone(), s.tag.or(op.tag)),
            _ => (op.peer.clone(), op.tag),
        };
        let me = op.rank;
        if source == Peer::Any {
            // Without a status: resolved only if one sender has a message for it.
            let senders = self
                .senders
                .get(&(comm.clone(), me))
                .cloned()
                .unwrap_or_default();
            let candidates: Vec<(u32, usize)> = senders
                .iter()
                .filter_map(|&s| {
                    let channel = self.channels.get(&(comm.clone(), s, me))?;
                    head(channel, tag).map(|p| (s, p))
                })
                .collect();
            if candidates.len() >= 2 {
                return Some(Err(Reason::AmbiguousWildcard));
            }
            // Another rank may still send a message it could take.
            if !self.all_others_ended(me) {
                return None;
            }
            let Some(&(sender, position)) = candidates.first() else {
                return Some(Err(Reason::NoSend));
            };
            let channel = self
                .channels
                .get_mut(&(comm, sender, me))
                .expect("a candidate's channel");
            return Some(Ok(channel.remove(position).map(|(send, _)| send)));
        }
        let sender = match world_peer(ranks, op, &comm, &source) {
            Ok(Some(sender)) => sender,
            Ok(None) => return Some(Ok(None)),
            Err(reason) => return Some(Err(reason)),
        };
        let channel = (comm, sender, me);
        match self
            .channels
            .get_mut(&channel)
            .and_then(|c| Some((head(c, tag)?, c)))
        {
            Some((position, c)) => Some(Ok(c.remove(position).map(|(send, _)| send))),
            None if self.finished || self.ended.contains(&sender) => Some(Err(Reason::NoSend)),
            None => None,
        }
    }

    fn all_others_ended(&self, me: u32) -> bool {
        self.finished
            || self
                .ranks
                .iter()
                .all(|&r| r == me || self.ended.contains(&r))
    }
}

/// The position of the first pending send a receive of `tag` (None: any) takes.
fn head(channel: &VecDeque<(OpKey, Option<i64>)>, tag: Option<i64>) -> Option<usize> {
    match tag {
        None => (!channel.is_empty()).then_some(0),
        // A send always has a tag; a missing one matches MPI_ANY_TAG only.
        Some(t) => channel.iter().position(|&(_, s)| s == Some(t)),
    }
}

/// One rank's undecided receives, grouped by what they could take (in
/// a group, in posting order, with their posting order).
#[derive(Default)]
struct Receives {
    next: u64,
    groups: Vec<Group>,
}

struct Group {
    reach: Reach,
    queue: VecDeque<(u64, OpKey)>,
}

impl Receives {
    fn push(&mut self, reach: Reach, key: OpKey) {
        let order = self.next;
        self.next += 1;
        match self.groups.iter_mut().find(|g| g.reach == reach) {
            Some(g) => g.queue.push_back((order, key)),
            None => self.groups.push(Group {
                reach,
                queue: VecDeque::from([(order, key)]),
            }),
        }
    }

    fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The receives, in no particular order.
    fn keys(&self) -> impl Iterator<Item = OpKey> + '_ {
        self.groups
            .iter()
            .flat_map(|g| g.queue.iter().map(|&(_, k)| k))
    }
}

/// The messages a receive not yet decided could take: its communicator,
/// source and tag (None: any).
#[derive(Clone, PartialEq)]
struct Reach {
    comm: Option<Comm>,
    source: Option<u32>,
    tag: Option<i64>,
    /// MPI_PROC_NULL: takes no message.
    none: bool,
}

impl Reach {
    fn of(op: &Operation) -> Reach {
        Reach {
            comm: op.comm.clone(),
            source: match op.peer {
                Peer::Rank(r) => Some(r),
                _ => None,
            },
            tag: op.tag,
            none: op.peer == Peer::ProcNull,
        }
    }

    fn overlaps(&self, other: &Reach) -> bool {
        let same = |a: Option<u32>, b: Option<u32>| a.is_none() || b.is_none() || a == b;
        let same_tag = |a: Option<i64>, b: Option<i64>| a.is_none() || b.is_none() || a == b;
        !self.none
            && !other.none
            && self.comm == other.comm
            && same(self.source, other.source)
            && same_tag(self.tag, other.tag)
    }
}

fn known_comm(op: &Operation) -> Option<&Comm> {
    op.comm.as_ref().filter(|c| !matches!(c, Comm::Other(_)))
}

/// The world rank a send's message goes to, if it goes to one.
pub(crate) fn destination(op: &Operation, ranks: &dyn WorldRanks) -> Option<u32> {
    if op.direction != Direction::Send {
        return None;
    }
    let comm = known_comm(op)?;
    world_peer(ranks, op, comm, &op.peer).ok().flatten()
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
