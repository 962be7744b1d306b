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

use super::{RankCalls, VertexKind};
use crate::matching::Matching;
use crate::matching::collectives::CollectiveKind;

/// A vertex: a call's start or end, or a hub.
pub(super) type Vertex = u32;

pub(super) struct Graph {
    /// First vertex of each rank (index in `ranks`); hubs come after all ranks.
    pub(super) first: Vec<u32>,
    /// Number of timed calls of each rank.
    pub(super) calls: Vec<u32>,
    pub(super) time: Vec<i64>,
    /// Edges between ranks (and through hubs), as (from, to); program
    /// order is implicit.
    pub(super) edges: Vec<(Vertex, Vertex)>,
    /// Dependencies left out because a call has no time (a killed rank's
    /// last calls) or no traced completion.
    pub(super) untimed: u64,
}

impl Graph {
    pub(super) fn vertices(&self) -> usize {
        self.time.len()
    }

    /// Which rank (index in `ranks`), call and side `v` is; None for a hub.
    pub(super) fn locate(&self, v: Vertex) -> Option<(usize, u32, VertexKind)> {
        let r = self.first.partition_point(|&f| f <= v).checked_sub(1)?;
        let k = v - self.first[r];
        if k >= 2 * self.calls[r] {
            return None;
        }
        let side = if k % 2 == 0 {
            VertexKind::Start
        } else {
            VertexKind::End
        };
        Some((r, k / 2, side))
    }

    /// The implicit program-order predecessor of `v`.
    fn program_pred(&self, v: Vertex) -> Option<Vertex> {
        let (r, _, _) = self.locate(v)?;
        (v > self.first[r]).then(|| v - 1)
    }
}

/// Builds the graph of `ranks` (ordered by world rank, `rank_index` maps a
/// world rank to its index) from the matched operations.
pub(super) fn build(ranks: &[RankCalls], matching: &Matching) -> Graph {
    let mut first = Vec::with_capacity(ranks.len());
    let mut calls = Vec::with_capacity(ranks.len());
    let mut time = Vec::new();
    for r in ranks {
        first.push(time.len() as u32);
        calls.push(r.spans.len() as u32);
        for s in &r.spans {
            time.push(s.start_ns);
            time.push(s.end_ns);
        }
    }
    let mut g = Graph {
        first,
        calls,
        time,
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
        (seq < g.calls[r]).then(|| g.first[r] + 2 * seq + u32::from(end))
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
    g
}

impl Graph {
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
        let t = known.iter().map(|&v| self.time[v as usize]).max()?;
        let hub = self.time.len() as Vertex;
        self.time.push(t);
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

/// The longest path of `g` (see the module's documentation), in O(V+E).
pub(super) fn longest_path(g: &Graph, ranks: &[RankCalls]) -> Result<LongestPath, CycleError> {
    let n = g.vertices();
    // Successors of the explicit edges, as a compressed list.
    let mut out_start = vec![0u32; n + 1];
    let mut indegree = vec![0u32; n];
    for &(f, t) in &g.edges {
        out_start[f as usize + 1] += 1;
        indegree[t as usize] += 1;
    }
    for i in 0..n {
        out_start[i + 1] += out_start[i];
    }
    let mut fill = out_start.clone();
    let mut out = vec![0 as Vertex; g.edges.len()];
    for &(f, t) in &g.edges {
        out[fill[f as usize] as usize] = t;
        fill[f as usize] += 1;
    }
    let rank_vertices = g.first.last().map_or(0, |&f| {
        f as usize + 2 * *g.calls.last().unwrap_or(&0) as usize
    });
    for (v, d) in indegree.iter_mut().enumerate().take(rank_vertices) {
        if g.program_pred(v as Vertex).is_some() {
            *d += 1;
        }
    }

    // Best distance into each vertex so far, the time of its latest
    // predecessor, and the predecessor giving the distance.
    let mut dist = vec![i64::MIN; n];
    let mut release = vec![i64::MIN; n];
    let mut pred = vec![Vertex::MAX; n];
    let mut best = vec![i64::MIN; n];
    let mut ready: Vec<Vertex> = (0..n as Vertex)
        .filter(|&v| indegree[v as usize] == 0)
        .collect();
    let mut done = 0usize;
    let relax = |u: Vertex,
                 v: Vertex,
                 dist: &[i64],
                 best: &mut [i64],
                 release: &mut [i64],
                 pred: &mut [Vertex]| {
        let (u, vi) = (u as usize, v as usize);
        let t = g.time[u];
        release[vi] = release[vi].max(t);
        // Of equal distances, the latest predecessor.
        if dist[u] > best[vi] || (dist[u] == best[vi] && t >= g.time[pred[vi] as usize]) {
            best[vi] = dist[u];
            pred[vi] = u as Vertex;
        }
    };
    while let Some(u) = ready.pop() {
        let ui = u as usize;
        dist[ui] = if pred[ui] == Vertex::MAX {
            0
        } else {
            best[ui] + (g.time[ui] - release[ui]).max(0)
        };
        done += 1;
        let next = g
            .locate(u)
            .filter(|&(r, k, side)| side == VertexKind::Start || k + 1 < g.calls[r])
            .map(|_| u + 1);
        for v in next.into_iter().chain(
            out[out_start[ui] as usize..out_start[ui + 1] as usize]
                .iter()
                .copied(),
        ) {
            relax(u, v, &dist, &mut best, &mut release, &mut pred);
            indegree[v as usize] -= 1;
            if indegree[v as usize] == 0 {
                ready.push(v);
            }
        }
    }
    if done < n {
        let stuck = (0..n).find(|&v| indegree[v] > 0).unwrap_or(0) as Vertex;
        let (r, seq, _) = g.locate(stuck).unwrap_or((0, 0, VertexKind::Start));
        return Err(CycleError {
            rank: ranks.get(r).map_or(0, |r| r.rank),
            seq,
        });
    }
    // The path ends at the farthest vertex (of equal ones, the latest).
    let Some(last) = (0..n).max_by_key(|&v| (dist[v], g.time[v])) else {
        return Ok(LongestPath {
            vertices: Vec::new(),
            length_ns: 0,
            weights: Vec::new(),
        });
    };
    let mut vertices = vec![last as Vertex];
    let mut weights = Vec::new();
    let mut v = last;
    while pred[v] != Vertex::MAX {
        weights.push(dist[v] - best[v]);
        v = pred[v] as usize;
        vertices.push(v as Vertex);
    }
    weights.push(0);
    vertices.reverse();
    weights.reverse();
    Ok(LongestPath {
        vertices,
        length_ns: dist[last],
        weights,
    })
}
