//! The happened-before graph of a run and its longest path.
//!
//! Vertices are the start and the end of every timed call, plus one hub
//! per collective dependency that several processes share. Edges:
//! program order on each rank (a call's start to its end, its end to the
//! next call's start), messages (a send's start to the end of the call
//! that completed its receive; for synchronous sends also the receive's
//! post to the send's completion), collectives through hubs in O(P) per
//! instance, and one-sided epochs (a post to the origin's complete, a
//! complete to the target's wait).
//!
//! An edge into `v` weighs the time `v` spent after its last predecessor
//! happened: `t(v) - max t(pred)`, never below zero. So the length of a
//! path is the time of activity on it, waiting excluded, and the longest
//! path, found by one pass in topological order (O(V+E)), is the chain of
//! computation and communication that the run's length is made of. Of
//! equally long predecessors the latest one is on the path.
//!
//! Program order is implicit, and the pass walks each rank's calls in
//! order, so it keeps state only for the vertices that explicit edges
//! reach: memory grows with the messages and collectives, not with the
//! calls (a trace of 10^7 calls is two vectors of spans and little more).

use super::{RankCalls, VertexKind};
use crate::matching::Matching;
use crate::matching::collectives::CollectiveKind;
use crate::timeline::Span;

/// A vertex: a call's start or end, or a hub.
pub(super) type Vertex = u32;

pub(super) struct Graph<'r> {
    /// Each rank's calls (index in `ranks`).
    spans: Vec<&'r [Span]>,
    /// First vertex of each rank; hubs come after all ranks.
    first: Vec<u32>,
    /// Time of each hub (vertex `hubs_from + i`).
    hub_time: Vec<i64>,
    hubs_from: Vertex,
    /// Edges between ranks (and through hubs), as (from, to); program
    /// order is implicit.
    pub(super) edges: Vec<(Vertex, Vertex)>,
    /// Dependencies left out because a call has no time (a killed rank's
    /// last calls) or no traced completion.
    pub(super) untimed: u64,
}

impl Graph<'_> {
    pub(super) fn vertices(&self) -> usize {
        self.hubs_from as usize + self.hub_time.len()
    }

    /// Which rank (index in `ranks`), call and side `v` is; None for a hub.
    pub(super) fn locate(&self, v: Vertex) -> Option<(usize, u32, VertexKind)> {
        if v >= self.hubs_from {
            return None;
        }
        let r = self.first.partition_point(|&f| f <= v).checked_sub(1)?;
        let k = v - self.first[r];
        let side = if k % 2 == 0 {
            VertexKind::Start
        } else {
            VertexKind::End
        };
        Some((r, k / 2, side))
    }

    /// The time of `v`.
    pub(super) fn time(&self, v: Vertex) -> i64 {
        match self.locate(v) {
            Some((r, k, side)) => self.rank_time(r, 2 * k + u32::from(side == VertexKind::End)),
            None => self.hub_time[(v - self.hubs_from) as usize],
        }
    }

    /// The time of the `k`-th vertex of rank `r`.
    fn rank_time(&self, r: usize, k: u32) -> i64 {
        let span = &self.spans[r][(k / 2) as usize];
        if k % 2 == 0 {
            span.start_ns
        } else {
            span.end_ns
        }
    }

    /// Number of vertices of rank `r`.
    fn rank_len(&self, r: usize) -> u32 {
        2 * self.spans[r].len() as u32
    }
}

/// Builds the graph of `ranks` (ordered by world rank, `rank_index` maps a
/// world rank to its index) from the matched operations.
pub(super) fn build<'r>(ranks: &'r [RankCalls], matching: &Matching) -> Graph<'r> {
    let mut first = Vec::with_capacity(ranks.len());
    let mut vertices = 0u32;
    for r in ranks {
        first.push(vertices);
        vertices += 2 * r.spans.len() as u32;
    }
    let mut g = Graph {
        spans: ranks.iter().map(|r| r.spans.as_slice()).collect(),
        first,
        hub_time: Vec::new(),
        hubs_from: vertices,
        edges: Vec::new(),
        untimed: 0,
    };
    let max_rank = ranks
        .iter()
        .map(|r| r.rank)
        .max()
        .map_or(0, |m| m as usize + 1);
    let mut index = vec![usize::MAX; max_rank];
    for (i, r) in ranks.iter().enumerate() {
        index[r.rank as usize] = i;
    }
    let vertex = |g: &Graph, rank: u32, seq: Option<u64>, end: bool| -> Option<Vertex> {
        let r = *index.get(rank as usize)?;
        if r == usize::MAX {
            return None;
        }
        let seq = u32::try_from(seq?).ok()?;
        (2 * seq < g.rank_len(r)).then(|| g.first[r] + 2 * seq + u32::from(end))
    };

    for m in &matching.matches {
        let (send, recv) = (&matching.operations[m.send], &matching.operations[m.recv]);
        let from = vertex(&g, send.rank, Some(send.post), false);
        let to = vertex(&g, recv.rank, recv.completion, true);
        g.add(from, to);
        if send.func.contains("Ssend") || send.func.contains("Issend") {
            let from = vertex(&g, recv.rank, Some(recv.post), false);
            let to = vertex(&g, send.rank, send.completion, true);
            g.add(from, to);
        }
    }

    for inst in &matching.collectives.instances {
        let starts: Vec<Option<Vertex>> = inst
            .participants
            .iter()
            .map(|p| vertex(&g, p.rank, Some(p.post), false))
            .collect();
        let ends: Vec<Option<Vertex>> = inst
            .participants
            .iter()
            .map(|p| vertex(&g, p.rank, p.completion, true))
            .collect();
        let root = inst
            .root
            .and_then(|root| inst.participants.iter().position(|p| p.rank == root));
        match inst.kind {
            CollectiveKind::AllToAll => {
                let hub = g.hub(&starts);
                for &end in &ends {
                    g.add(hub, end);
                }
            }
            CollectiveKind::RootToAll => {
                if let Some(root) = root {
                    for (i, &end) in ends.iter().enumerate() {
                        if i != root {
                            g.add(starts[root], end);
                        }
                    }
                }
            }
            CollectiveKind::AllToRoot => {
                if let Some(root) = root {
                    for (i, &start) in starts.iter().enumerate() {
                        if i != root {
                            g.add(start, ends[root]);
                        }
                    }
                }
            }
            CollectiveKind::Scan | CollectiveKind::ExclusiveScan => {
                // A chain of hubs: hub i follows the starts of processes 0..=i.
                let inclusive = inst.kind == CollectiveKind::Scan;
                let mut prev: Option<Vertex> = None;
                for (i, &start) in starts.iter().enumerate() {
                    if !inclusive {
                        g.add(prev, ends[i]);
                    }
                    let hub = g.hub(&[prev, start]);
                    if inclusive {
                        g.add(hub, ends[i]);
                    }
                    prev = hub.or(prev);
                }
            }
            // Neighbours are not in the trace; a setup moves no data.
            CollectiveKind::Neighborhood | CollectiveKind::Setup => {}
        }
    }

    for e in &matching.one_sided.exposures {
        let post = vertex(&g, e.target, Some(e.post), false);
        let complete_end = vertex(&g, e.origin, e.complete, true);
        g.add(post, complete_end);
        let complete_start = vertex(&g, e.origin, e.complete, false);
        let wait_end = vertex(&g, e.target, e.wait, true);
        g.add(complete_start, wait_end);
    }
    g.edges.sort_unstable();
    g
}

impl Graph<'_> {
    fn add(&mut self, from: Option<Vertex>, to: Option<Vertex>) {
        match (from, to) {
            (Some(f), Some(t)) if f != t => self.edges.push((f, t)),
            (Some(_), Some(_)) => {}
            _ => self.untimed += 1,
        }
    }

    /// A hub after all of `preds` (the known ones), at the latest of their times.
    fn hub(&mut self, preds: &[Option<Vertex>]) -> Option<Vertex> {
        let known: Vec<Vertex> = preds.iter().flatten().copied().collect();
        if known.len() < preds.len() {
            self.untimed += (preds.len() - known.len()) as u64;
        }
        let t = known.iter().map(|&v| self.time(v)).max()?;
        let hub = self.vertices() as Vertex;
        self.hub_time.push(t);
        for v in known {
            self.edges.push((v, hub));
        }
        Some(hub)
    }
}

/// The longest path: its vertices from first to last, and its length.
pub(super) struct LongestPath {
    pub(super) vertices: Vec<Vertex>,
    pub(super) length_ns: i64,
    /// Weight of the edge into each vertex of the path (0 for the first).
    pub(super) weights: Vec<i64>,
}

#[derive(Debug, thiserror::Error)]
#[error(
    "the happened-before graph has a cycle through rank {rank}, call {seq}: the matched dependencies contradict each other"
)]
pub struct CycleError {
    pub rank: u32,
    pub seq: u32,
}

/// What the pass keeps of a vertex that explicit edges reach.
#[derive(Clone, Copy)]
struct Join {
    vertex: Vertex,
    /// Explicit predecessors not passed yet.
    waiting: u32,
    /// Time of the latest predecessor passed.
    release: i64,
    /// Longest distance into the vertex so far, and the predecessor giving it.
    best: i64,
    pred: Vertex,
}

impl Join {
    /// Predecessor `u`, at distance `dist` and time `t`, is passed.
    fn offer(&mut self, g: &Graph, u: Vertex, dist: i64, t: i64) {
        self.release = self.release.max(t);
        // Of equal distances, the latest predecessor.
        if dist > self.best || (dist == self.best && t >= g.time(self.pred)) {
            self.best = dist;
            self.pred = u;
        }
    }
}

/// The joins of `g`: one per vertex that explicit edges reach, by vertex.
fn joins(g: &Graph) -> Vec<Join> {
    let mut targets: Vec<Vertex> = g.edges.iter().map(|&(_, t)| t).collect();
    targets.sort_unstable();
    let mut joins: Vec<Join> = Vec::new();
    for t in targets {
        match joins.last_mut() {
            Some(j) if j.vertex == t => j.waiting += 1,
            _ => joins.push(Join {
                vertex: t,
                waiting: 1,
                release: i64::MIN,
                best: i64::MIN,
                pred: Vertex::MAX,
            }),
        }
    }
    joins
}

fn find(joins: &[Join], v: Vertex) -> Option<usize> {
    joins.binary_search_by_key(&v, |j| j.vertex).ok()
}

/// The walk of [`longest_path`] through the graph, in topological order.
struct Pass<'g, 'r> {
    g: &'g Graph<'r>,
    joins: Vec<Join>,
    /// Each rank's next vertex (index within the rank).
    next: Vec<u32>,
    /// Whether each rank waits at its next vertex for explicit predecessors.
    parked: Vec<bool>,
    ready_ranks: Vec<usize>,
    ready_hubs: Vec<Vertex>,
    /// The farthest vertex so far (of equal ones, the latest): distance, time, vertex.
    last: (i64, i64, Vertex),
    passed: usize,
}

impl Pass<'_, '_> {
    /// Passes `u` at distance `dist`: the explicit edges out of it, from
    /// `edge` on, offer it to their targets; targets with nothing left to
    /// wait for become ready.
    fn leave(&mut self, edge: &mut usize, u: Vertex, dist: i64, t: i64) {
        let g = self.g;
        self.last = self.last.max((dist, t, u));
        self.passed += 1;
        while let Some(&(_, w)) = g.edges.get(*edge).filter(|e| e.0 == u) {
            *edge += 1;
            let i = find(&self.joins, w).expect("every target has a join");
            let j = &mut self.joins[i];
            j.offer(g, u, dist, t);
            j.waiting -= 1;
            if j.waiting > 0 {
                continue;
            }
            match g.locate(w) {
                None => self.ready_hubs.push(w),
                Some((r, _, _)) if self.parked[r] && g.first[r] + self.next[r] == w => {
                    self.parked[r] = false;
                    self.ready_ranks.push(r);
                }
                Some(_) => {}
            }
        }
    }

    /// Walks rank `r` from its next vertex until it ends or must wait.
    fn walk(
        &mut self,
        r: usize,
        next_join: &mut usize,
        next_edge: &mut usize,
        prev_dist: &mut i64,
    ) {
        let g = self.g;
        while self.next[r] < g.rank_len(r) {
            let k = self.next[r];
            let v = g.first[r] + k;
            let t = g.rank_time(r, k);
            let mut from = (k > 0).then(|| (*prev_dist, g.rank_time(r, k - 1), v - 1));
            if let Some(j) = self.joins.get_mut(*next_join).filter(|j| j.vertex == v) {
                if j.waiting > 0 {
                    self.parked[r] = true;
                    return;
                }
                if let Some((dist, t_prev, u)) = from {
                    j.offer(g, u, dist, t_prev);
                }
                from = Some((j.best, j.release, j.pred));
                *next_join += 1;
            }
            let dist = from.map_or(0, |(best, release, _)| best + (t - release).max(0));
            self.leave(next_edge, v, dist, t);
            *prev_dist = dist;
            self.next[r] += 1;
        }
    }
}

/// The longest path of `g` (see the module's documentation), in O(V+E)
/// (and O(log E) per explicit edge). `g.edges` must be sorted.
pub(super) fn longest_path(g: &Graph, ranks: &[RankCalls]) -> Result<LongestPath, CycleError> {
    debug_assert!(g.edges.is_sorted());
    let n = g.spans.len();
    let joins = joins(g);
    // Where each rank's joins and outgoing edges start, and the distance
    // into the vertex before its next one.
    let mut next_join: Vec<usize> = (0..n)
        .map(|r| joins.partition_point(|j| j.vertex < g.first[r]))
        .collect();
    let mut next_edge: Vec<usize> = (0..n)
        .map(|r| g.edges.partition_point(|e| e.0 < g.first[r]))
        .collect();
    let mut prev_dist = vec![0i64; n];
    let mut pass = Pass {
        g,
        joins,
        next: vec![0; n],
        parked: vec![false; n],
        ready_ranks: (0..n).rev().collect(),
        ready_hubs: Vec::new(),
        last: (i64::MIN, i64::MIN, Vertex::MAX),
        passed: 0,
    };
    loop {
        if let Some(h) = pass.ready_hubs.pop() {
            // A hub has predecessors, all passed.
            let j = pass.joins[find(&pass.joins, h).expect("a hub has a join")];
            let t = g.time(h);
            let mut edge = g.edges.partition_point(|e| e.0 < h);
            pass.leave(&mut edge, h, j.best + (t - j.release).max(0), t);
        } else if let Some(r) = pass.ready_ranks.pop() {
            pass.walk(r, &mut next_join[r], &mut next_edge[r], &mut prev_dist[r]);
        } else {
            break;
        }
    }
    if pass.passed < g.vertices() {
        let stuck = (0..n).find(|&r| pass.parked[r]).unwrap_or(0);
        return Err(CycleError {
            rank: ranks.get(stuck).map_or(0, |r| r.rank),
            seq: pass.next.get(stuck).map_or(0, |k| k / 2),
        });
    }
    let Pass { joins, last, .. } = pass;
    let (length_ns, _, end) = last;
    if end == Vertex::MAX {
        return Ok(LongestPath {
            vertices: Vec::new(),
            length_ns: 0,
            weights: Vec::new(),
        });
    }
    // Back from the end: a join names its predecessor; any other vertex
    // follows its program predecessor. `at` counts the joins up to `v`.
    let mut vertices = vec![end];
    let mut weights = Vec::new();
    let mut v = end;
    let mut at = joins.partition_point(|j| j.vertex <= v);
    loop {
        let (pred, release) = match at.checked_sub(1).map(|i| joins[i]) {
            Some(j) if j.vertex == v => (j.pred, j.release),
            _ => match g.locate(v) {
                Some((_, k, side)) if k > 0 || side == VertexKind::End => (v - 1, g.time(v - 1)),
                _ => break,
            },
        };
        weights.push((g.time(v) - release).max(0));
        if v.checked_sub(1) == Some(pred) {
            while at > 0 && joins[at - 1].vertex >= v {
                at -= 1;
            }
        } else {
            at = joins.partition_point(|j| j.vertex <= pred);
        }
        v = pred;
        vertices.push(v);
    }
    weights.push(0);
    vertices.reverse();
    weights.reverse();
    Ok(LongestPath {
        vertices,
        length_ns,
        weights,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The longest path by the definition, over every vertex with dense
    /// arrays: the distance into each vertex, in a topological order.
    fn reference_length(g: &Graph) -> i64 {
        let n = g.vertices();
        let mut preds: Vec<Vec<Vertex>> = vec![Vec::new(); n];
        for v in 0..n as Vertex {
            if let Some((_, k, side)) = g.locate(v)
                && (k > 0 || side == VertexKind::End)
            {
                preds[v as usize].push(v - 1);
            }
        }
        for &(f, t) in &g.edges {
            preds[t as usize].push(f);
        }
        let mut dist: Vec<Option<i64>> = vec![None; n];
        let mut left = n;
        while left > 0 {
            for v in 0..n {
                if dist[v].is_some() || preds[v].iter().any(|&u| dist[u as usize].is_none()) {
                    continue;
                }
                let t = g.time(v as Vertex);
                dist[v] = Some(
                    match preds[v]
                        .iter()
                        .map(|&u| u as usize)
                        .max_by_key(|&u| dist[u])
                    {
                        None => 0,
                        Some(best) => {
                            let release = preds[v].iter().map(|&u| g.time(u)).max().unwrap();
                            dist[best].unwrap() + (t - release).max(0)
                        }
                    },
                );
                left -= 1;
            }
        }
        dist.into_iter().flatten().max().unwrap_or(0)
    }

    /// A random graph: ranks of calls with increasing times, edges only
    /// forward in time (so no cycles), some through hubs.
    fn graph(
        calls: Vec<Vec<(i64, i64)>>,
        picks: Vec<(usize, usize, bool)>,
    ) -> (Vec<RankCalls>, Vec<(usize, usize, bool)>) {
        let ranks = calls
            .into_iter()
            .enumerate()
            .map(|(r, gaps)| {
                let mut t = 0;
                let spans = gaps
                    .into_iter()
                    .map(|(gap, len)| {
                        let start = t + gap;
                        t = start + len;
                        Span {
                            start_ns: start,
                            end_ns: t,
                        }
                    })
                    .collect();
                RankCalls {
                    rank: r as u32,
                    spans,
                    sites: Vec::new(),
                }
            })
            .collect();
        (ranks, picks)
    }

    proptest! {
        #[test]
        fn the_walk_finds_the_longest_path_of_the_definition(
            calls in prop::collection::vec(prop::collection::vec((0i64..20, 0i64..20), 1..12), 1..5),
            picks in prop::collection::vec((0usize..1000, 0usize..1000, any::<bool>()), 0..40),
        ) {
            let (ranks, picks) = graph(calls, picks);
            let mut g = build(&ranks, &Matching::default());
            let rank_vertices = g.vertices();
            for (a, b, through_hub) in picks {
                let (u, w) = ((a % rank_vertices) as Vertex, (b % rank_vertices) as Vertex);
                if g.time(u) >= g.time(w) {
                    continue;
                }
                if through_hub {
                    let hub = g.hub(&[Some(u)]);
                    g.add(hub, Some(w));
                } else {
                    g.add(Some(u), Some(w));
                }
            }
            g.edges.sort_unstable();
            let path = longest_path(&g, &ranks).unwrap();
            prop_assert_eq!(path.length_ns, reference_length(&g));
            // The path is a chain of edges whose weights add up to its length.
            prop_assert_eq!(path.weights.iter().sum::<i64>(), path.length_ns);
            prop_assert_eq!(path.weights.first().copied(), Some(0));
            for pair in path.vertices.windows(2) {
                let (u, v) = (pair[0], pair[1]);
                let program = g.locate(v).is_some() && u + 1 == v && g.locate(u).map(|l| l.0) == g.locate(v).map(|l| l.0);
                prop_assert!(program || g.edges.contains(&(u, v)), "{u} -> {v} is no edge");
            }
        }
    }
}
