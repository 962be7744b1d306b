//! What the walk ([`super::walk`]) learns of the graph while the graph is
//! made ([`super::graph::Builder`]): steps, vertices announced and
//! closed, edges and hubs. The builder tells it to a [`Learn`]: the walk
//! itself, or [`Batches`], which sends it in order to a walk on another
//! thread (so that matching and walking run side by side). The walk
//! learns the same things in the same order either way, so it finds the
//! same path.

use super::walk::{Farthest, Node, Step, Walk};
use serde::{Deserialize, Serialize};
use std::sync::mpsc::{Receiver, SyncSender};

/// What the walk learns of the graph, in the order the graph is made.
pub(crate) trait Learn {
    /// Rank `r`'s next call with operations.
    fn push_step(&mut self, r: u32, step: Step);
    /// Rank `r` has no more steps; `tail`: the farthest vertex after its last.
    fn end_rank(&mut self, r: u32, tail: Option<Farthest>);
    /// An operation at `node` will give it edges (to be made, or not).
    fn open_target(&mut self, node: Node);
    /// An operation at `node` has given it its edges.
    fn close_target(&mut self, node: Node);
    /// An operation at `node` will have edges leave it (or not).
    fn open_source(&mut self, node: Node);
    /// An operation at `node` has made its edges.
    fn close_source(&mut self, node: Node);
    /// An edge; None for a vertex without time or an operation never
    /// completed (a dependency left out).
    fn edge(&mut self, from: Option<Node>, to: Option<Node>);
    /// Hub `id` after `preds` (the known ones); None if none is known.
    fn hub(&mut self, id: u64, preds: &[Option<Node>]) -> Option<Node>;
    /// The hub's edges are all made.
    fn close_hub(&mut self, hub: Node);
}

/// The hub `id` after `preds`: None if no predecessor is known.
pub(crate) fn hub_node(id: u64, preds: &[Option<Node>]) -> Option<Node> {
    preds.iter().any(Option::is_some).then_some(Node::Hub(id))
}

/// One thing learnt, as sent to the walk's thread (or process).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Lesson {
    Step(u32, Step),
    EndRank(u32, Option<Farthest>),
    OpenTarget(Node),
    CloseTarget(Node),
    OpenSource(Node),
    CloseSource(Node),
    Edge(Option<Node>, Option<Node>),
    Hub(u64, Vec<Option<Node>>),
    CloseHub(Node),
}

impl Lesson {
    /// Tells the lesson to `walk`.
    pub(crate) fn tell(self, walk: &mut dyn Learn) {
        match self {
            Lesson::Step(r, step) => walk.push_step(r, step),
            Lesson::EndRank(r, tail) => walk.end_rank(r, tail),
            Lesson::OpenTarget(node) => walk.open_target(node),
            Lesson::CloseTarget(node) => walk.close_target(node),
            Lesson::OpenSource(node) => walk.open_source(node),
            Lesson::CloseSource(node) => walk.close_source(node),
            Lesson::Edge(from, to) => walk.edge(from, to),
            Lesson::Hub(id, preds) => {
                walk.hub(id, &preds);
            }
            Lesson::CloseHub(hub) => walk.close_hub(hub),
        }
    }
}

impl Walk {
    /// Learns `lesson`.
    pub(crate) fn learn(&mut self, lesson: Lesson) {
        lesson.tell(self)
    }
}

impl Learn for Walk {
    fn push_step(&mut self, r: u32, step: Step) {
        Walk::push_step(self, r, step)
    }
    fn end_rank(&mut self, r: u32, tail: Option<Farthest>) {
        Walk::end_rank(self, r, tail)
    }
    fn open_target(&mut self, node: Node) {
        Walk::open_target(self, node)
    }
    fn close_target(&mut self, node: Node) {
        Walk::close_target(self, node)
    }
    fn open_source(&mut self, node: Node) {
        Walk::open_source(self, node)
    }
    fn close_source(&mut self, node: Node) {
        Walk::close_source(self, node)
    }
    fn edge(&mut self, from: Option<Node>, to: Option<Node>) {
        Walk::edge(self, from, to)
    }
    fn hub(&mut self, id: u64, preds: &[Option<Node>]) -> Option<Node> {
        Walk::hub(self, id, preds)
    }
    fn close_hub(&mut self, hub: Node) {
        Walk::close_hub(self, hub)
    }
}

/// Lessons sent a batch at a time.
pub(crate) const BATCH: usize = 4096;

/// Sends what is learnt, in batches of [`BATCH`], to a walk on another
/// thread; the batches come back emptied, to be filled again.
pub(crate) struct Batches {
    batch: Vec<Lesson>,
    to_walk: SyncSender<Vec<Lesson>>,
    emptied: Receiver<Vec<Lesson>>,
    /// The walk stopped (its error is reported where it is joined).
    gone: bool,
}

impl Batches {
    pub(crate) fn new(to_walk: SyncSender<Vec<Lesson>>, emptied: Receiver<Vec<Lesson>>) -> Batches {
        Batches {
            batch: Vec::with_capacity(BATCH),
            to_walk,
            emptied,
            gone: false,
        }
    }

    /// The walk's thread stopped before it was told everything.
    pub(crate) fn gone(&self) -> bool {
        self.gone
    }

    fn push(&mut self, lesson: Lesson) {
        self.batch.push(lesson);
        if self.batch.len() == BATCH {
            self.flush();
        }
    }

    /// Sends what is batched.
    pub(crate) fn flush(&mut self) {
        if self.batch.is_empty() || self.gone {
            self.batch.clear();
            return;
        }
        let next = self
            .emptied
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        let full = std::mem::replace(&mut self.batch, next);
        self.gone = self.to_walk.send(full).is_err();
    }
}

/// Where lessons are kept for a walk elsewhere (on another thread or
/// process): what is learnt becomes [`Lesson`]s, in the order learnt.
pub(crate) trait Lessons {
    fn lesson(&mut self, lesson: Lesson);
}

impl Lessons for Batches {
    fn lesson(&mut self, lesson: Lesson) {
        self.push(lesson)
    }
}

impl Lessons for Vec<Lesson> {
    fn lesson(&mut self, lesson: Lesson) {
        self.push(lesson)
    }
}

impl<L: Lessons> Learn for L {
    fn push_step(&mut self, r: u32, step: Step) {
        self.lesson(Lesson::Step(r, step))
    }
    fn end_rank(&mut self, r: u32, tail: Option<Farthest>) {
        self.lesson(Lesson::EndRank(r, tail))
    }
    fn open_target(&mut self, node: Node) {
        self.lesson(Lesson::OpenTarget(node))
    }
    fn close_target(&mut self, node: Node) {
        self.lesson(Lesson::CloseTarget(node))
    }
    fn open_source(&mut self, node: Node) {
        self.lesson(Lesson::OpenSource(node))
    }
    fn close_source(&mut self, node: Node) {
        self.lesson(Lesson::CloseSource(node))
    }
    fn edge(&mut self, from: Option<Node>, to: Option<Node>) {
        self.lesson(Lesson::Edge(from, to))
    }
    fn hub(&mut self, id: u64, preds: &[Option<Node>]) -> Option<Node> {
        self.lesson(Lesson::Hub(id, preds.to_vec()));
        hub_node(id, preds)
    }
    fn close_hub(&mut self, hub: Node) {
        self.lesson(Lesson::CloseHub(hub))
    }
}
