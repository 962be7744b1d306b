//! The longest path through the happened-before graph, walked while the
//! graph is being learnt, in bounded memory.
//!
//! Vertices are the start (2k) and end (2k + 1) of each timed call k of a
//! rank, and hubs. Program order is implicit: between two vertices that
//! explicit edges touch, a rank's distance grows by its *monotone length*
//! (Σ max(0, t(v) − t(v−1)), given by the reader with each call), so the
//! walk stops only at the calls that have operations (the steps). An edge
//! into `v` weighs the time `v` spent after its last predecessor
//! happened: `t(v) − max t(pred)`, never below zero; of equally long
//! predecessors the latest one is on the path, then program order, then
//! the greater vertex.
//!
//! The walk keeps state only for vertices in flight: a *join* for each
//! vertex that edges enter, until it is walked, and a *source* for each
//! vertex edges leave, until every edge from it is known and walked. A
//! rank waits (parks) at a join whose edges are not all known (`open`:
//! operations there not matched yet) or whose predecessors are not all
//! walked. Each join walked leaves a back-pointer (its predecessor on the
//! path) in a [`Spill`]: the path is rebuilt from them afterwards
//! ([`super::path`]).

use crate::spill::{Record, Spill, i64_at, put_i64, put_u32, put_u64, u32_at, u64_at};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;

/// A vertex: a call's start or end on one rank (by its index among the
/// walked ranks), or a hub.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) enum Node {
    Call { rank: u32, vertex: u64 },
    Hub(u64),
}

impl Node {
    pub(crate) fn start(rank: u32, seq: u64) -> Node {
        Node::Call {
            rank,
            vertex: 2 * seq,
        }
    }

    pub(crate) fn end(rank: u32, seq: u64) -> Node {
        Node::Call {
            rank,
            vertex: 2 * seq + 1,
        }
    }
}

/// A timed call with operations, as the walk needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Step {
    pub(crate) seq: u64,
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// The end of the call before (None for the rank's first call).
    pub(crate) before: Option<i64>,
    /// The rank's monotone length at the call's start and end vertices.
    pub(crate) c_start: i64,
    pub(crate) c_end: i64,
    /// Of the vertices since the previous step (before this call's start):
    /// the greatest monotone length, and the latest (time, vertex) at it.
    pub(crate) stretch: Option<Farthest>,
}

/// The farthest vertex of a stretch of program order: its monotone length
/// (or distance), time and vertex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Farthest {
    pub(crate) length: i64,
    pub(crate) t: i64,
    pub(crate) vertex: u64,
}

impl Farthest {
    /// Of two vertices of program order, the one a longest path ends at.
    pub(crate) fn max(a: Option<Farthest>, b: Farthest) -> Farthest {
        a.map_or(b, |a| a.max(b))
    }
}

/// What a walked vertex offers the vertices its edges enter.
#[derive(Clone, Copy, Debug)]
struct Offer {
    dist: i64,
    t: i64,
    program: bool,
    node: Node,
    /// The call vertex the path runs through (a hub's best predecessor's).
    origin: (u32, u64),
}

impl Offer {
    /// Of equal offers, a hub's wins over a call vertex's, and then the
    /// greater call vertex: a hub by the call vertex it runs through, so
    /// that how hubs are numbered never changes the path.
    fn key(&self) -> (i64, i64, bool, bool, (u32, u64)) {
        let hub = matches!(self.node, Node::Hub(_));
        (self.dist, self.t, self.program, hub, self.origin)
    }
}

/// A walked vertex's distance, time and the call vertex the path runs
/// through (a hub's best predecessor's).
pub(crate) type Value = (i64, i64, (u32, u64));

/// A vertex that explicit edges enter.
struct Join {
    /// Operations whose edges into it are not known yet.
    open: u32,
    /// Edges whose predecessor is not walked yet.
    waiting: u32,
    best: Option<Offer>,
    /// The latest predecessor's time.
    release: i64,
}

impl Default for Join {
    fn default() -> Join {
        Join {
            open: 0,
            waiting: 0,
            best: None,
            release: i64::MIN,
        }
    }
}

impl Join {
    fn offer(&mut self, offer: Offer) {
        self.release = self.release.max(offer.t);
        if self.best.is_none_or(|b| offer.key() > b.key()) {
            self.best = Some(offer);
        }
    }

    fn ready(&self) -> bool {
        self.open == 0 && self.waiting == 0
    }
}

/// A vertex that explicit edges leave.
#[derive(Default)]
struct Source {
    /// Its distance, time and call vertex, once walked.
    value: Option<Value>,
    /// Operations whose edges from it are not known yet.
    open: u32,
    /// Vertices whose edges from it wait for its value.
    waiting: Vec<Node>,
}

/// A join's predecessor on the path, kept for rebuilding the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BackPointer {
    pub(crate) vertex: u64,
    /// The predecessor's rank (index) and vertex.
    pub(crate) pred: (u32, u64),
    pub(crate) release: i64,
}

impl Record for BackPointer {
    const SIZE: usize = 28;
    fn put(&self, out: &mut Vec<u8>) {
        put_u64(out, self.vertex);
        put_u32(out, self.pred.0);
        put_u64(out, self.pred.1);
        put_i64(out, self.release);
    }
    fn get(b: &[u8]) -> BackPointer {
        BackPointer {
            vertex: u64_at(b, 0),
            pred: (u32_at(b, 8), u64_at(b, 12)),
            release: i64_at(b, 20),
        }
    }
}

/// One rank's walk.
#[derive(Default)]
struct RankWalk {
    steps: VecDeque<Step>,
    /// The front step's start vertex is walked.
    started: bool,
    /// The last vertex walked: (vertex, distance, time, monotone length).
    last: Option<(u64, i64, i64, i64)>,
    /// Waiting at a join.
    parked: bool,
    /// No more steps will come; and the farthest vertex after the last
    /// step, if any.
    ended: bool,
    tail: Option<Farthest>,
    /// The rank's farthest vertex so far: (distance, time, vertex).
    farthest: Option<Farthest>,
    /// Queued in the ready heap.
    queued: bool,
    back: Spill<BackPointer>,
}

/// Where a walk stands after [`Walk::run`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Every rank walked to its end.
    Done,
    /// These ranks walked all their steps and need more (or their end).
    Hungry(Vec<u32>),
    /// Every rank not done waits at a join.
    Stuck,
}

/// The walk of all ranks.
pub(crate) struct Walk {
    ranks: Vec<RankWalk>,
    joins: FxHashMap<Node, Join>,
    sources: FxHashMap<Node, Source>,
    /// Ranks parked at a join, by the join.
    parked: FxHashMap<Node, u32>,
    ready: BinaryHeap<Reverse<(i64, u32)>>,
    /// Explicit edges and hubs made, dependencies left out.
    pub(crate) edges: u64,
    pub(crate) hubs: u64,
    pub(crate) untimed: u64,
    /// Vertices walked.
    pub(crate) walked: u64,
}

/// What a finished walk leaves for rebuilding the path.
pub(crate) struct Walked {
    /// Each rank's farthest vertex.
    pub(crate) farthest: Vec<Option<Farthest>>,
    pub(crate) edges: u64,
    pub(crate) hubs: u64,
    pub(crate) untimed: u64,
    /// Each rank's back-pointers, in vertex order.
    pub(crate) back: Vec<Spill<BackPointer>>,
}

impl Walk {
    pub(crate) fn new(ranks: usize) -> Walk {
        let mut walk = Walk {
            ranks: (0..ranks).map(|_| RankWalk::default()).collect(),
            joins: FxHashMap::default(),
            sources: FxHashMap::default(),
            parked: FxHashMap::default(),
            ready: BinaryHeap::new(),
            edges: 0,
            hubs: 0,
            untimed: 0,
            walked: 0,
        };
        for r in 0..ranks as u32 {
            walk.enqueue(r);
        }
        walk
    }

    /// Rank `r`'s next call with operations.
    pub(crate) fn push_step(&mut self, r: u32, step: Step) {
        self.ranks[r as usize].steps.push_back(step);
        self.enqueue(r);
    }

    /// Rank `r` has no more steps; `tail`: the farthest vertex after its
    /// last step.
    pub(crate) fn end_rank(&mut self, r: u32, tail: Option<Farthest>) {
        let w = &mut self.ranks[r as usize];
        w.ended = true;
        w.tail = tail;
        self.enqueue(r);
    }

    /// An operation at `node` will give it edges (to be made, or not).
    pub(crate) fn open_target(&mut self, node: Node) {
        self.joins.entry(node).or_default().open += 1;
    }

    /// An operation at `node` has given it its edges.
    pub(crate) fn close_target(&mut self, node: Node) {
        if let Some(j) = self.joins.get_mut(&node) {
            j.open = j.open.saturating_sub(1);
            self.wake(node);
        }
    }

    /// An operation at `node` will have edges leave it (or not).
    pub(crate) fn open_source(&mut self, node: Node) {
        self.sources.entry(node).or_default().open += 1;
    }

    /// An operation at `node` has made its edges.
    pub(crate) fn close_source(&mut self, node: Node) {
        if let Some(s) = self.sources.get_mut(&node) {
            s.open = s.open.saturating_sub(1);
            self.forget_source(node);
        }
    }

    /// An edge; None for a vertex without time (a killed rank's last
    /// calls) or an operation never completed: then a dependency left out.
    pub(crate) fn edge(&mut self, from: Option<Node>, to: Option<Node>) {
        let (Some(from), Some(to)) = (from, to) else {
            self.untimed += 1;
            return;
        };
        if from == to {
            return;
        }
        self.edges += 1;
        self.joins.entry(to).or_default();
        let source = self.sources.entry(from).or_default();
        match source.value {
            Some(value) => {
                let offer = offer(from, value, false);
                self.joins.get_mut(&to).expect("made above").offer(offer);
            }
            None => {
                source.waiting.push(to);
                self.joins.get_mut(&to).expect("made above").waiting += 1;
            }
        }
    }

    /// A hub after `preds` (the known ones), at the latest of their
    /// times; None if none is known.
    pub(crate) fn hub(&mut self, id: u64, preds: &[Option<Node>]) -> Option<Node> {
        let known: Vec<Node> = preds.iter().flatten().copied().collect();
        self.untimed += (preds.len() - known.len()) as u64;
        let hub = super::learn::hub_node(id, preds)?;
        self.hubs += 1;
        self.sources.entry(hub).or_default().open += 1;
        for pred in known {
            self.edge(Some(pred), Some(hub));
        }
        self.wake(hub);
        Some(hub)
    }

    /// The hub's edges are all made.
    pub(crate) fn close_hub(&mut self, hub: Node) {
        self.close_source(hub);
    }

    /// Walks what can be walked, earliest ranks first.
    pub(crate) fn run(&mut self) -> io::Result<Progress> {
        while let Some(Reverse((_, r))) = self.ready.pop() {
            self.ranks[r as usize].queued = false;
            self.walk(r)?;
        }
        let mut hungry = Vec::new();
        let mut done = true;
        for (r, w) in self.ranks.iter().enumerate() {
            if w.steps.is_empty() && !w.ended {
                hungry.push(r as u32);
            }
            done &= w.ended && w.steps.is_empty();
        }
        Ok(if done {
            Progress::Done
        } else if hungry.is_empty() {
            Progress::Stuck
        } else {
            Progress::Hungry(hungry)
        })
    }

    /// The rank and call a stuck walk waits at (for the error message).
    pub(crate) fn stuck_at(&self) -> Option<(u32, u64)> {
        self.ranks
            .iter()
            .enumerate()
            .find(|(_, w)| w.parked)
            .and_then(|(r, w)| Some((r as u32, w.steps.front()?.seq)))
    }

    /// The farthest vertex of each rank: (distance, time, vertex).
    pub(crate) fn farthest(&self) -> Vec<Option<Farthest>> {
        self.ranks.iter().map(|w| w.farthest).collect()
    }

    /// What the walk leaves for rebuilding the path.
    pub(crate) fn into_walked(self) -> Walked {
        Walked {
            farthest: self.farthest(),
            edges: self.edges,
            hubs: self.hubs,
            untimed: self.untimed,
            back: self.ranks.into_iter().map(|w| w.back).collect(),
        }
    }

    fn enqueue(&mut self, r: u32) {
        let w = &mut self.ranks[r as usize];
        if w.queued || w.parked {
            return;
        }
        let t = w.steps.front().map_or(i64::MAX, |s| s.start);
        w.queued = true;
        self.ready.push(Reverse((t, r)));
    }

    /// Walks rank `r` until it waits, runs out of steps, or another rank
    /// is earlier.
    fn walk(&mut self, r: u32) -> io::Result<()> {
        loop {
            let w = &self.ranks[r as usize];
            let Some(&step) = w.steps.front() else {
                if w.ended {
                    self.finish_rank(r);
                }
                return Ok(());
            };
            if !w.started {
                if let Some(&Reverse((t, _))) = self.ready.peek() {
                    if t < step.start {
                        self.enqueue(r);
                        return Ok(());
                    }
                }
                if let Some(stretch) = step.stretch {
                    self.pass_stretch(r, stretch);
                }
                let prev = step.before.map(|before| {
                    let c = step.c_start - (step.start - before).max(0);
                    (before, c)
                });
                if !self.vertex(r, 2 * step.seq, step.start, step.c_start, prev)? {
                    return Ok(());
                }
                self.ranks[r as usize].started = true;
            }
            let prev = Some((step.start, step.c_start));
            if !self.vertex(r, 2 * step.seq + 1, step.end, step.c_end, prev)? {
                return Ok(());
            }
            let w = &mut self.ranks[r as usize];
            w.steps.pop_front();
            w.started = false;
        }
    }

    /// The vertices of a stretch of program order, of which `farthest` is
    /// the farthest.
    fn pass_stretch(&mut self, r: u32, farthest: Farthest) {
        let w = &mut self.ranks[r as usize];
        let (_, dist, _, c) = w.last.unwrap_or((0, 0, 0, 0));
        let at = Farthest {
            length: dist + farthest.length - c,
            ..farthest
        };
        w.farthest = Some(Farthest::max(w.farthest, at));
    }

    /// Walks vertex `vertex` of rank `r` at time `t` with monotone length
    /// `c`; `prev`: the vertex before it (time, monotone length), if any.
    /// False if the rank must wait.
    fn vertex(
        &mut self,
        r: u32,
        vertex: u64,
        t: i64,
        c: i64,
        prev: Option<(i64, i64)>,
    ) -> io::Result<bool> {
        let node = Node::Call { rank: r, vertex };
        let w = &self.ranks[r as usize];
        // The distance into the vertex before: program order from the last walked.
        let before = prev.map(|(t_prev, c_prev)| {
            let (_, dist, _, c_last) = w.last.unwrap_or((0, 0, 0, 0));
            (dist + c_prev - c_last, t_prev)
        });
        let dist = match self.joins.get(&node) {
            Some(j) if !j.ready() => {
                self.ranks[r as usize].parked = true;
                self.parked.insert(node, r);
                return Ok(false);
            }
            Some(_) => {
                let mut j = self.joins.remove(&node).expect("present");
                if let Some((dist, t_prev)) = before {
                    j.offer(Offer {
                        dist,
                        t: t_prev,
                        program: true,
                        node: Node::Call {
                            rank: r,
                            vertex: vertex - 1,
                        },
                        origin: (r, vertex - 1),
                    });
                }
                match j.best {
                    Some(best) => {
                        self.ranks[r as usize].back.push(&BackPointer {
                            vertex,
                            pred: best.origin,
                            release: j.release,
                        })?;
                        best.dist + (t - j.release).max(0)
                    }
                    None => 0,
                }
            }
            None => before.map_or(0, |(dist, t_prev)| dist + (t - t_prev).max(0)),
        };
        self.walked += 1;
        let w = &mut self.ranks[r as usize];
        w.parked = false;
        w.last = Some((vertex, dist, t, c));
        w.farthest = Some(Farthest::max(
            w.farthest,
            Farthest {
                length: dist,
                t,
                vertex,
            },
        ));
        self.publish(node, (dist, t, (r, vertex)));
        Ok(true)
    }

    /// The rank walked its last step.
    fn finish_rank(&mut self, r: u32) {
        let w = &mut self.ranks[r as usize];
        if let Some(tail) = w.tail.take() {
            self.pass_stretch(r, tail);
        }
    }

    /// `node` is walked (or a hub computed): its edges' targets get its offer.
    fn publish(&mut self, node: Node, value: Value) {
        let Some(source) = self.sources.get_mut(&node) else {
            return;
        };
        source.value = Some(value);
        let waiting = std::mem::take(&mut source.waiting);
        for to in waiting {
            if let Some(j) = self.joins.get_mut(&to) {
                j.offer(offer(node, value, false));
                j.waiting -= 1;
            }
            self.wake(to);
        }
        self.forget_source(node);
    }

    /// A join may be ready: a hub is computed, a parked rank goes on.
    fn wake(&mut self, node: Node) {
        if !self.joins.get(&node).is_some_and(Join::ready) {
            return;
        }
        match node {
            Node::Hub(_) => {
                let j = self.joins.remove(&node).expect("present");
                let best = j.best.expect("a hub has a known predecessor");
                self.publish(node, (best.dist, j.release, best.origin));
            }
            Node::Call { .. } => {
                if let Some(r) = self.parked.remove(&node) {
                    self.ranks[r as usize].parked = false;
                    self.enqueue(r);
                }
            }
        }
    }

    /// Forgets a source whose edges are all made and offered.
    fn forget_source(&mut self, node: Node) {
        if self
            .sources
            .get(&node)
            .is_some_and(|s| s.value.is_some() && s.open == 0 && s.waiting.is_empty())
        {
            self.sources.remove(&node);
        }
    }
}

fn offer(node: Node, (dist, t, origin): Value, program: bool) -> Offer {
    Offer {
        dist,
        t,
        program,
        node,
        origin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A vertex: (rank, index); an edge between two.
    type At = (usize, usize);
    type Edge = (At, At);
    /// Vertex times by rank, and edges (through a hub or not).
    type Graph = (Vec<Vec<i64>>, Vec<(At, At, bool)>);

    /// Rank r's vertex times: call starts and ends with the given gaps and lengths.
    fn times(calls: &[Vec<(i64, i64)>]) -> Vec<Vec<i64>> {
        calls
            .iter()
            .map(|gaps| {
                let mut t = 0;
                let mut out = Vec::new();
                for &(gap, len) in gaps {
                    out.push(t + gap);
                    t += gap + len;
                    out.push(t);
                }
                out
            })
            .collect()
    }

    /// The longest path by the definition, over every vertex with dense
    /// arrays: the distance into each vertex, in a topological order.
    fn reference_length(t: &[Vec<i64>], edges: &[Edge]) -> i64 {
        let mut preds: FxHashMap<(usize, usize), Vec<(usize, usize)>> = FxHashMap::default();
        for (r, ts) in t.iter().enumerate() {
            for v in 1..ts.len() {
                preds.entry((r, v)).or_default().push((r, v - 1));
            }
        }
        for &(u, w) in edges {
            preds.entry(w).or_default().push(u);
        }
        let all: Vec<(usize, usize)> = t
            .iter()
            .enumerate()
            .flat_map(|(r, ts)| (0..ts.len()).map(move |v| (r, v)))
            .collect();
        let mut dist: FxHashMap<(usize, usize), i64> = FxHashMap::default();
        while dist.len() < all.len() {
            for &v in &all {
                if dist.contains_key(&v) {
                    continue;
                }
                let p = preds.get(&v).cloned().unwrap_or_default();
                if p.iter().any(|u| !dist.contains_key(u)) {
                    continue;
                }
                let time = |(r, k): (usize, usize)| t[r][k];
                let d = match p.iter().max_by_key(|u| dist[u]) {
                    None => 0,
                    Some(best) => {
                        let release = p.iter().map(|&u| time(u)).max().unwrap();
                        dist[best] + (time(v) - release).max(0)
                    }
                };
                dist.insert(v, d);
            }
        }
        dist.into_values().max().unwrap_or(0)
    }

    fn node((r, v): (usize, usize)) -> Node {
        Node::Call {
            rank: r as u32,
            vertex: v as u64,
        }
    }

    fn steps(walk: &mut Walk, t: &[Vec<i64>]) {
        for (r, ts) in t.iter().enumerate() {
            let mut c = 0;
            for k in 0..ts.len() / 2 {
                let before = k.checked_sub(1).map(|p| ts[2 * p + 1]);
                let c_start = before.map_or(0, |b| c + (ts[2 * k] - b).max(0));
                let c_end = c_start + (ts[2 * k + 1] - ts[2 * k]).max(0);
                walk.push_step(
                    r as u32,
                    Step {
                        seq: k as u64,
                        start: ts[2 * k],
                        end: ts[2 * k + 1],
                        before,
                        c_start,
                        c_end,
                        stretch: None,
                    },
                );
                c = c_end;
            }
            walk.end_rank(r as u32, None);
        }
    }

    fn longest(walk: &Walk) -> i64 {
        walk.farthest()
            .into_iter()
            .flatten()
            .map(|f| f.length)
            .max()
            .unwrap_or(0)
    }

    /// Random ranks of calls and edges forward in time, some through hubs.
    fn graph(calls: &[Vec<(i64, i64)>], picks: &[(usize, usize, bool)]) -> Graph {
        let t = times(calls);
        let all: Vec<(usize, usize)> = t
            .iter()
            .enumerate()
            .flat_map(|(r, ts)| (0..ts.len()).map(move |v| (r, v)))
            .collect();
        let edges = picks
            .iter()
            .filter_map(|&(a, b, hub)| {
                let (u, w) = (all[a % all.len()], all[b % all.len()]);
                (t[u.0][u.1] < t[w.0][w.1]).then_some((u, w, hub))
            })
            .collect();
        (t, edges)
    }

    proptest! {
        #[test]
        fn the_walk_finds_the_longest_path_of_the_definition(
            calls in prop::collection::vec(prop::collection::vec((0i64..20, 0i64..20), 1..12), 1..5),
            picks in prop::collection::vec((0usize..1000, 0usize..1000, any::<bool>()), 0..40),
        ) {
            let (t, edges) = graph(&calls, &picks);
            let mut walk = Walk::new(t.len());
            for (i, &(u, w, through_hub)) in edges.iter().enumerate() {
                if through_hub {
                    let hub = walk.hub(i as u64, &[Some(node(u))]);
                    walk.edge(hub, Some(node(w)));
                    walk.close_hub(hub.unwrap());
                } else {
                    walk.edge(Some(node(u)), Some(node(w)));
                }
            }
            steps(&mut walk, &t);
            prop_assert_eq!(walk.run().unwrap(), Progress::Done);
            let plain: Vec<_> = edges.iter().map(|&(u, w, _)| (u, w)).collect();
            prop_assert_eq!(longest(&walk), reference_length(&t, &plain));
        }

        /// Edges learnt while the ranks walk (announced first, made in any
        /// order between runs) give the same path as edges known at once.
        #[test]
        fn edges_learnt_while_walking_give_the_same_path(
            calls in prop::collection::vec(prop::collection::vec((0i64..20, 0i64..20), 1..12), 1..5),
            picks in prop::collection::vec((0usize..1000, 0usize..1000, any::<bool>()), 0..40),
            order in prop::collection::vec(any::<u16>(), 40),
        ) {
            let (t, edges) = graph(&calls, &picks);
            let plain: Vec<_> = edges.iter().map(|&(u, w, _)| (u, w)).collect();
            let mut walk = Walk::new(t.len());
            for &(u, w, _) in &edges {
                walk.open_source(node(u));
                walk.open_target(node(w));
            }
            steps(&mut walk, &t);
            let mut todo: Vec<usize> = (0..edges.len()).collect();
            todo.sort_by_key(|&i| order[i % order.len()]);
            for i in todo {
                prop_assert_ne!(walk.run().unwrap(), Progress::Done);
                let (u, w, _) = edges[i];
                walk.edge(Some(node(u)), Some(node(w)));
                walk.close_source(node(u));
                walk.close_target(node(w));
            }
            prop_assert_eq!(walk.run().unwrap(), Progress::Done);
            prop_assert_eq!(longest(&walk), reference_length(&t, &plain));
        }
    }
}
