//! The happened-before graph of a run, made as the matcher finds what
//! depends on what, for the walk of the longest path ([`super::walk`]).
//!
//! Vertices are the start and the end of every timed call, plus one hub
//! per collective dependency that several processes share. Edges:
//! program order on each rank (implicit), messages (a send's start to the
//! end of the call that completed its receive; for synchronous sends also
//! the receive's post to the send's completion), collectives through hubs
//! in O(P) per instance, and one-sided epochs (a post to the origin's
//! complete, a complete to the target's wait).
//!
//! [`Builder`] makes the graph while the ranks' calls are read: every
//! vertex that an operation may give edges is announced to the walk when
//! the operation is read (so that the walk waits there), and the edges
//! are made when the matcher decides. [`in_memory`] makes it from a
//! finished [`Matching`] (calls already timed).

use super::RankCalls;
use super::learn::Learn;
use super::walk::{Node, Step, Walk};
use crate::matching::collectives::{CollectiveInstance, CollectiveKind};
use crate::matching::instances::{self, CallKey};
use crate::matching::one_sided;
use crate::matching::p2p::{Decision, OpKey};
use crate::matching::{CallAt, Direction, Found, Matching, RankEvent};
use rustc_hash::FxHashMap;

/// Whether a send cannot complete before its receive is posted (an edge
/// from the receive's post to the send's completion).
pub(super) fn synchronous(func: &str) -> bool {
    func.contains("Ssend") || func.contains("Issend")
}

/// A message's edges.
fn message(walk: &mut impl Learn, send_start: Option<Node>, recv_end: Option<Node>) {
    walk.edge(send_start, recv_end);
}

/// Numbers hubs: `first` + `step`, + 2 `step`, ... (a walk spread over
/// K processes numbers process p's from p in steps of K, so that no two
/// processes' hubs have the same number).
#[derive(Clone, Copy)]
pub(super) struct HubIds {
    pub(super) last: u64,
    pub(super) step: u64,
}

impl HubIds {
    fn next(&mut self) -> u64 {
        self.last += self.step;
        self.last
    }
}

/// A collective instance's edges, from the starts and ends of its
/// participants (None: no time or no completion); hubs numbered by
/// `hubs`.
fn collective(
    walk: &mut impl Learn,
    hubs: &mut HubIds,
    inst: &CollectiveInstance,
    starts: &[Option<Node>],
    ends: &[Option<Node>],
) {
    let root = inst
        .root
        .and_then(|root| inst.participants.iter().position(|p| p.rank == root));
    let mut hub = |walk: &mut dyn Learn, preds: &[Option<Node>]| walk.hub(hubs.next(), preds);
    match inst.kind {
        CollectiveKind::AllToAll => {
            let h = hub(walk, starts);
            for &end in ends {
                walk.edge(h, end);
            }
            if let Some(h) = h {
                walk.close_hub(h);
            }
        }
        CollectiveKind::RootToAll => {
            if let Some(root) = root {
                for (i, &end) in ends.iter().enumerate() {
                    if i != root {
                        walk.edge(starts[root], end);
                    }
                }
            }
        }
        CollectiveKind::AllToRoot => {
            if let Some(root) = root {
                for (i, &start) in starts.iter().enumerate() {
                    if i != root {
                        walk.edge(start, ends[root]);
                    }
                }
            }
        }
        CollectiveKind::Scan | CollectiveKind::ExclusiveScan => {
            // A chain of hubs: hub i follows the starts of processes 0..=i.
            let inclusive = inst.kind == CollectiveKind::Scan;
            let mut prev: Option<Node> = None;
            for (i, &start) in starts.iter().enumerate() {
                if !inclusive {
                    walk.edge(prev, ends[i]);
                }
                let h = hub(walk, &[prev, start]);
                if inclusive {
                    walk.edge(h, ends[i]);
                }
                if let (Some(p), Some(_)) = (prev, h) {
                    walk.close_hub(p);
                }
                prev = h.or(prev);
            }
            if let Some(p) = prev {
                walk.close_hub(p);
            }
        }
        // Neighbours are not in the trace; a setup moves no data.
        CollectiveKind::Neighborhood | CollectiveKind::Setup => {}
    }
}

/// An exposure's edges: the target's post to the origin's complete, the
/// origin's complete to the target's wait.
fn exposure(
    walk: &mut impl Learn,
    post_start: Option<Node>,
    complete_end: Option<Node>,
    complete_start: Option<Node>,
    wait_end: Option<Node>,
) {
    walk.edge(post_start, complete_end);
    walk.edge(complete_start, wait_end);
}

/// The graph of timed, matched calls, all given to `walk`: ranks ordered
/// by world rank, every call a step.
pub(super) fn in_memory(walk: &mut Walk, ranks: &[RankCalls], matching: &Matching) {
    let index: FxHashMap<u32, usize> = ranks.iter().enumerate().map(|(i, r)| (r.rank, i)).collect();
    let vertex = |rank: u32, seq: Option<u64>, end: bool| -> Option<Node> {
        let r = *index.get(&rank)?;
        let seq = seq?;
        ((seq as usize) < ranks[r].spans.len()).then(|| match end {
            true => Node::end(r as u32, seq),
            false => Node::start(r as u32, seq),
        })
    };
    for m in &matching.matches {
        let (send, recv) = (&matching.operations[m.send], &matching.operations[m.recv]);
        message(
            walk,
            vertex(send.rank, Some(send.post), false),
            vertex(recv.rank, recv.completion, true),
        );
        if synchronous(send.func) {
            message(
                walk,
                vertex(recv.rank, Some(recv.post), false),
                vertex(send.rank, send.completion, true),
            );
        }
    }
    let mut hubs = HubIds { last: 0, step: 1 };
    for inst in &matching.collectives.instances {
        let starts: Vec<Option<Node>> = inst
            .participants
            .iter()
            .map(|p| vertex(p.rank, Some(p.post), false))
            .collect();
        let ends: Vec<Option<Node>> = inst
            .participants
            .iter()
            .map(|p| vertex(p.rank, p.completion, true))
            .collect();
        collective(walk, &mut hubs, inst, &starts, &ends);
    }
    for e in &matching.one_sided.exposures {
        exposure(
            walk,
            vertex(e.target, Some(e.post), false),
            vertex(e.origin, e.complete, true),
            vertex(e.origin, e.complete, false),
            vertex(e.target, e.wait, true),
        );
    }
    for (r, calls) in ranks.iter().enumerate() {
        let mut c = 0i64;
        let mut before: Option<i64> = None;
        for (seq, span) in calls.spans.iter().enumerate() {
            let c_start = before.map_or(0, |b| c + (span.start_ns - b).max(0));
            let c_end = c_start + (span.end_ns - span.start_ns).max(0);
            walk.push_step(
                r as u32,
                Step {
                    seq: seq as u64,
                    start: span.start_ns,
                    end: span.end_ns,
                    before,
                    c_start,
                    c_end,
                    stretch: None,
                },
            );
            c = c_end;
            before = Some(span.end_ns);
        }
        walk.end_rank(r as u32, None);
    }
}

/// What the graph keeps of an operation until its edges are made: the
/// vertices it announced to the walk.
#[derive(Clone, Copy)]
struct Pending {
    /// The posting call's start (a source).
    start: Option<Node>,
    /// The completing call's end (a target), once announced.
    end: Option<Node>,
    /// A receive, or a synchronous send: its completion waits for the other side.
    waits: bool,
    /// Its edges are decided.
    decided: bool,
}

/// Makes the graph as calls are read and the matcher decides.
pub(super) struct Builder {
    /// Each world rank's index among the walked ranks.
    index: FxHashMap<u32, u32>,
    /// Per rank: operations and collective calls read so far.
    counts: FxHashMap<u32, (usize, usize)>,
    ops: FxHashMap<OpKey, Pending>,
    calls: FxHashMap<CallKey, Pending>,
    /// Window synchronisation calls announced before the matcher placed
    /// them: (rank, seq) -> (start announced, end announced).
    epoch_calls: FxHashMap<(u32, u64), (bool, bool)>,
    /// What each half of an epoch announced: its post's start, its close's
    /// end, its complete's start.
    halves: FxHashMap<u64, [Option<Node>; 3]>,
    hubs: HubIds,
}

impl Builder {
    /// `ranks`: the walked ranks, by world rank, in walk order.
    pub(super) fn new(ranks: &[u32]) -> Builder {
        Builder {
            index: ranks
                .iter()
                .enumerate()
                .map(|(i, &r)| (r, i as u32))
                .collect(),
            counts: FxHashMap::default(),
            ops: FxHashMap::default(),
            calls: FxHashMap::default(),
            epoch_calls: FxHashMap::default(),
            halves: FxHashMap::default(),
            hubs: HubIds { last: 0, step: 1 },
        }
    }

    /// Hubs numbered by `hubs`.
    pub(super) fn numbering_hubs(mut self, hubs: HubIds) -> Builder {
        self.hubs = hubs;
        self
    }

    /// The next operation and collective call of `rank` announced are
    /// its `numbers.0`-th and `numbers.1`-th (when some of its events are
    /// announced elsewhere).
    pub(super) fn number(&mut self, rank: u32, numbers: (usize, usize)) {
        self.counts.insert(rank, numbers);
    }

    /// The vertices the owner of `rank` holds for an event announced on
    /// another process (where its operation is matched): the vertex whose
    /// value goes there, and the vertex it opens as a target there (which
    /// that process closes). A superset of what [`Builder::announce`]
    /// opens for the event; `waits`: a completed operation is a
    /// synchronous send.
    pub(super) fn held(
        &self,
        rank: u32,
        event: &RankEvent,
        waits: bool,
    ) -> (Option<Node>, Option<Node>) {
        match event {
            RankEvent::Post(op) => {
                let start = self.node(rank, op.post, Some(&op.post_at), false);
                let waits = op.direction == Direction::Recv || synchronous(op.func);
                let end = match (op.completion, waits) {
                    (Some(seq), true) => self.node(rank, seq, op.completion_at.as_ref(), true),
                    _ => None,
                };
                (start, end)
            }
            RankEvent::Complete { seq, at, .. } if waits => {
                (None, self.node(rank, *seq, Some(at), true))
            }
            RankEvent::Collective(call) => (
                self.node(rank, call.post, Some(&call.post_at), false),
                call.completion
                    .and_then(|seq| self.node(rank, seq, call.completion_at.as_ref(), true)),
            ),
            RankEvent::CollectiveComplete { seq, at, .. } => {
                (None, self.node(rank, *seq, Some(at), true))
            }
            _ => (None, None),
        }
    }

    fn node(&self, rank: u32, seq: u64, at: Option<&CallAt>, end: bool) -> Option<Node> {
        at?.span?;
        let r = *self.index.get(&rank)?;
        Some(if end {
            Node::end(r, seq)
        } else {
            Node::start(r, seq)
        })
    }

    /// Announces the vertices an event of `rank`'s call may give edges,
    /// before the matcher sees it.
    pub(super) fn announce(&mut self, walk: &mut impl Learn, rank: u32, event: &RankEvent) {
        let counts = self.counts.entry(rank).or_default();
        match event {
            RankEvent::Post(op) => {
                let key = (rank, counts.0);
                counts.0 += 1;
                let waits = op.direction == Direction::Recv || synchronous(op.func);
                let start = self.node(rank, op.post, Some(&op.post_at), false);
                let end = match (op.completion, waits) {
                    (Some(seq), true) => self.node(rank, seq, op.completion_at.as_ref(), true),
                    _ => None,
                };
                open(walk, start, end);
                self.ops.insert(
                    key,
                    Pending {
                        start,
                        end,
                        waits,
                        decided: false,
                    },
                );
            }
            RankEvent::Complete { op, seq, at, .. } => {
                let end = self.node(rank, *seq, Some(at), true);
                if let Some(p) = self.ops.get_mut(&(rank, *op)) {
                    // A synchronous send's edge waits for both ends to settle.
                    if p.waits && p.end.is_none() {
                        p.end = end;
                        open(walk, None, end);
                    }
                }
            }
            RankEvent::Collective(call) => {
                let key = (rank, counts.1);
                counts.1 += 1;
                let start = self.node(rank, call.post, Some(&call.post_at), false);
                let end = call
                    .completion
                    .and_then(|seq| self.node(rank, seq, call.completion_at.as_ref(), true));
                open(walk, start, end);
                self.calls.insert(
                    key,
                    Pending {
                        start,
                        end,
                        waits: true,
                        decided: false,
                    },
                );
            }
            RankEvent::CollectiveComplete { call, seq, at } => {
                let end = self.node(rank, *seq, Some(at), true);
                if let Some(p) = self.calls.get_mut(&(rank, *call)) {
                    if p.end.is_none() && !p.decided {
                        p.end = end;
                        open(walk, None, end);
                    }
                }
            }
            RankEvent::Epoch(e) => {
                let (opens, closes) = e.opens_closes();
                let seq = e.seq();
                // Timed or not is learnt from the matcher's halves; here
                // the walk is told to wait until the matcher places the call.
                let start = (opens || closes)
                    .then(|| self.node(rank, seq, Some(&e.at()), false))
                    .flatten();
                let end = closes
                    .then(|| self.node(rank, seq, Some(&e.at()), true))
                    .flatten();
                if start.is_some() || end.is_some() {
                    open(walk, start, end);
                    self.epoch_calls
                        .insert((rank, seq), (start.is_some(), end.is_some()));
                }
            }
            RankEvent::Abandon(_) | RankEvent::CollectiveAbandon(_) => {}
        }
    }

    /// Makes the edges of what the matcher found.
    pub(super) fn found(&mut self, walk: &mut impl Learn, found: &Found) {
        match found {
            Found::PointToPoint(Decision::Matched { send, recv }) => {
                let s = self.ops.get(send).copied();
                let r = self.ops.get(recv).copied();
                let (Some(mut s), Some(mut r)) = (s, r) else {
                    return;
                };
                message(walk, s.start, r.end);
                close(walk, s.start, r.end);
                s.decided = true;
                r.decided = true;
                if s.waits {
                    // The receive's post gives the send's completion an
                    // edge once both have settled.
                    self.ops.insert(*send, s);
                    self.ops.insert(*recv, r);
                } else {
                    close(walk, r.start, None);
                    self.ops.remove(send);
                    self.ops.remove(recv);
                }
            }
            Found::PointToPoint(Decision::Settled(m)) => {
                let (send, recv) = m.keys;
                let (Some(s), Some(r)) =
                    (self.ops.get(&send).copied(), self.ops.get(&recv).copied())
                else {
                    return;
                };
                if s.waits {
                    message(walk, r.start, s.end);
                    close(walk, r.start, s.end);
                    self.ops.remove(&send);
                    self.ops.remove(&recv);
                }
            }
            Found::PointToPoint(Decision::Unmatched { op, .. } | Decision::Void { op }) => {
                if let Some(p) = self.ops.remove(op) {
                    close(walk, p.start, p.end);
                }
            }
            Found::Collective(instances::Found::Settled {
                instance, calls, ..
            }) => {
                let pending: Vec<Pending> = calls
                    .iter()
                    .map(|k| self.calls.remove(k).unwrap_or(NONE))
                    .collect();
                let starts: Vec<Option<Node>> = pending.iter().map(|p| p.start).collect();
                let ends: Vec<Option<Node>> = pending.iter().map(|p| p.end).collect();
                collective(walk, &mut self.hubs, instance, &starts, &ends);
                for p in pending {
                    close(walk, p.start, p.end);
                }
            }
            Found::Collective(instances::Found::Unmatched { call, .. }) => {
                if let Some(p) = self.calls.remove(call) {
                    close(walk, p.start, p.end);
                }
            }
            Found::Collective(instances::Found::Formed { .. }) => {}
            Found::OneSided(f) => self.one_sided(walk, f),
        }
    }

    fn one_sided(&mut self, walk: &mut impl Learn, found: &one_sided::Found) {
        match found {
            one_sided::Found::Opening { rank, seq, halves } => {
                let start = self.epoch_start(*rank, *seq);
                for &h in halves {
                    open(walk, start, None);
                    self.halves.entry(h).or_default()[0] = start;
                }
                self.placed(walk, *rank, *seq);
            }
            one_sided::Found::Closing {
                rank,
                seq,
                access,
                halves,
            } => {
                let end = self.epoch_end(*rank, *seq);
                let start = access.then(|| self.epoch_start(*rank, *seq)).flatten();
                for &h in halves {
                    open(walk, start, end);
                    let nodes = self.halves.entry(h).or_default();
                    nodes[1] = end;
                    nodes[2] = start;
                }
                self.placed(walk, *rank, *seq);
            }
            one_sided::Found::Exposure { halves, .. } => {
                let origin = self.halves.remove(&halves.0).unwrap_or_default();
                let target = self.halves.remove(&halves.1).unwrap_or_default();
                // The target's post to the origin's complete, the origin's
                // complete to the target's wait.
                exposure(walk, target[0], origin[1], origin[2], target[1]);
                for nodes in [origin, target] {
                    close(walk, nodes[0], nodes[1]);
                    close(walk, nodes[2], None);
                }
            }
            one_sided::Found::Unpaired { half, .. } => {
                if let Some(nodes) = self.halves.remove(half) {
                    close(walk, nodes[0], nodes[1]);
                    close(walk, nodes[2], None);
                }
            }
            one_sided::Found::Unmatched(u) => self.placed(walk, u.rank, u.seq),
            one_sided::Found::Lock(_) => {}
        }
    }

    fn epoch_start(&self, rank: u32, seq: u64) -> Option<Node> {
        let (start, _) = self.epoch_calls.get(&(rank, seq)).copied()?;
        start.then(|| Node::start(self.index[&rank], seq))
    }

    fn epoch_end(&self, rank: u32, seq: u64) -> Option<Node> {
        let (_, end) = self.epoch_calls.get(&(rank, seq)).copied()?;
        end.then(|| Node::end(self.index[&rank], seq))
    }

    /// The matcher placed a window call: what was announced for it at
    /// reading is replaced by what its halves announced.
    fn placed(&mut self, walk: &mut impl Learn, rank: u32, seq: u64) {
        if let Some((start, end)) = self.epoch_calls.remove(&(rank, seq)) {
            let r = self.index[&rank];
            close(
                walk,
                start.then(|| Node::start(r, seq)),
                end.then(|| Node::end(r, seq)),
            );
        }
    }
}

const NONE: Pending = Pending {
    start: None,
    end: None,
    waits: false,
    decided: true,
};

fn open(walk: &mut impl Learn, start: Option<Node>, end: Option<Node>) {
    if let Some(s) = start {
        walk.open_source(s);
    }
    if let Some(e) = end {
        walk.open_target(e);
    }
}

fn close(walk: &mut impl Learn, start: Option<Node>, end: Option<Node>) {
    if let Some(s) = start {
        walk.close_source(s);
    }
    if let Some(e) = end {
        walk.close_target(e);
    }
}
