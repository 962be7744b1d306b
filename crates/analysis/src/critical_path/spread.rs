//! [`super::analyse`] spread over the processes of a [`Link`]
//! (`mpiexec -n K mpigram critical-path`), as Scalasca's parallel replay:
//! rank index r belongs to process r mod K, which reads it, matches what
//! it receives and walks it.
//!
//! - **Matching.** A send is matched by the owner of its destination,
//!   with the receives there; a collective call by the owner of its
//!   communicator's first member (of world rank 0 for MPI_COMM_WORLD),
//!   which forms the instances. The owner of a call's rank sends the event
//!   there, numbered as its rank's operations are.
//! - **Walking.** Each process walks its own ranks. An event matched
//!   elsewhere leaves its vertices with their owner: the owner sends the
//!   value of its start vertex (distance, time, call vertex on the path)
//!   to the matching process once walked, and holds its end vertex open
//!   as a join until the matching process closes it. The matching process
//!   makes the edges: those that enter another process's vertex (the
//!   receive's post into a synchronous send's end, a collective's hub
//!   into each member's end) go there, with the value of the vertex they
//!   leave once known. So each rank waits exactly where the single
//!   process's walk waits, and every vertex gets the same distance and
//!   back-pointer.
//! - **Rounds.** The processes work in rounds: each reads a chunk of its
//!   ranks furthest behind in time, walks what it can, and then every
//!   process sends every other what it has for it ([`Link::exchange`])
//!   with its state (read, matching finished, walked, an error). Once
//!   every process has read every rank, each finishes its matching; once
//!   every process has walked its ranks and none has anything to send,
//!   all stop. An error stops every process in the round after the one
//!   that found it.
//! - **The path.** The back-pointers, the ranks' ends and sums go to
//!   process 0, which rebuilds the path and reports, as a single process.
//!
//! Traces with one-sided epochs or persistent collectives (whose matching
//! refers to earlier instances) are analysed by the pass that spreads
//! only the reading ([`crate::parallel`]).

use super::graph::{Builder, HubIds};
use super::learn::Learn;
use super::stream::{Sums, conclude};
use super::waits::Waits;
use super::walk::{BackPointer, Farthest, Node, Progress, Step, Value, Walk, Walked};
use super::{Analysis, CallSites, CriticalPathError, CycleError};
use crate::matching::collectives::comm_of;
use crate::matching::p2p::destination;
use crate::matching::{Matcher, RankEvent, world_ranks};
use crate::members::{CommId, Members};
use crate::parallel::{Link, owner};
use crate::replay::{RankEnd, Read, Reading};
use crate::sites::Sites;
use crate::spill::Record;
use crate::timeline::Source;
use mpigram_trace::{NO_RANK, Trace};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Tags of the messages of this pass (those of [`crate::parallel`] are
/// below).
const ROUND: u32 = 2;
const RESULT: u32 = 3;

/// Back-pointers sent to process 0 in one message at most.
const POINTERS: usize = 1 << 15;

/// What one process tells another within a round.
#[derive(Debug, Serialize, Deserialize)]
enum Note {
    /// An event of rank index `r`, matched there: the numbers of its
    /// rank's next operation and collective call, and the vertex its
    /// owner holds open for it (to be closed from there).
    Event {
        r: u32,
        numbers: (usize, usize),
        event: RankEvent,
        held: Option<Node>,
    },
    /// Rank index `r` has no more events.
    RankEnded(u32),
    /// A vertex walked there.
    Value(Node, Value),
    /// An edge made there into a vertex here.
    Edge(Node, Node),
    /// A vertex held open here has all its edges.
    CloseTarget(Node),
}

/// A process's state, sent to every other each round.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct State {
    /// Every rank of the process read, its events sent.
    read: bool,
    /// Its matching finished.
    finished: bool,
    /// Every rank of the process walked.
    walked: bool,
    /// It sent notes this round.
    sent: bool,
    /// Where its walk waits (world rank, call), for a cycle's error.
    stuck: Option<(u32, u64)>,
    error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Round {
    state: State,
    notes: Vec<Note>,
}

/// What a process sends process 0 at the end, after its back-pointers.
#[derive(Serialize, Deserialize)]
struct Part {
    /// By rank index.
    ends: Vec<(u32, RankEnd)>,
    farthest: Vec<(u32, Farthest)>,
    edges: u64,
    hubs: u64,
    untimed: u64,
    unmatched: [usize; 3],
    waits: Waits,
    error: Option<String>,
}

/// Whether the pass can analyse `trace` (no one-sided epochs or
/// persistent collectives).
pub(super) fn spreads(trace: &Trace) -> bool {
    trace.signatures.iter().all(|bytes| {
        mpigram_mpispec::decode_signature(bytes).is_ok_and(|s| {
            let func = &mpigram_mpispec::FUNCS[s.func as usize];
            !crate::matching::collectives::refers_to_instances(func)
        })
    })
}

/// The analysis of `trace` over the processes of `link`: process 0's is
/// Some, the others' None.
pub(super) fn analyse(
    trace: &Trace,
    grammar_sites: &Sites,
    sites: CallSites,
    source: Source,
    heuristic: bool,
    link: &dyn Link,
) -> Result<Option<Analysis>, CriticalPathError> {
    let (me, k) = (link.process(), link.processes());
    let members = world_ranks(trace);
    let world: Vec<u32> = trace.ranks.iter().map(|p| p.meta.rank).collect();
    let mut process = Process::new(me, k, &world, &members);
    let reading = Reading::of_some(trace, grammar_sites, source, trace.run_start_ns(), |r| {
        owner(r, k) == me
    });
    let walked = match reading {
        Ok(reading) => process.rounds(reading, link),
        Err(e) => Process::fail(e.to_string(), link),
    };
    let walked = match walked {
        Ok(()) => Ok(process),
        Err(e) => Err(e),
    };
    if me != 0 {
        if let Ok(process) = walked {
            process.send_part(link);
        }
        return Ok(None);
    }
    let process = walked?;
    let (walked, ends, sums) = process.gather(link)?;
    conclude(
        trace,
        grammar_sites,
        sites,
        source,
        heuristic,
        walked,
        &ends,
        sums,
    )
    .map(Some)
}

/// One process of the pass.
struct Process<'a> {
    me: usize,
    k: usize,
    world: &'a [u32],
    /// Each world rank's index.
    index: FxHashMap<u32, u32>,
    members: &'a Members,
    matcher: Matcher<'a>,
    builder: Builder,
    walk: Walk,
    sums: Sums,
    /// What the readers of this process's ranks found at their ends.
    ends: Vec<RankEnd>,
    /// The numbers of each own rank's next operation and collective call.
    numbers: FxHashMap<u32, (usize, usize)>,
    /// Operations and collective calls of own ranks matched elsewhere
    /// whose completion is to come: where, and whether a synchronous send.
    sent_ops: FxHashMap<(u32, usize), (usize, bool)>,
    sent_calls: FxHashMap<(u32, usize), usize>,
    /// Notes for each process.
    out: Vec<Vec<Note>>,
    state: State,
}

impl<'a> Process<'a> {
    fn new(me: usize, k: usize, world: &'a [u32], members: &'a Members) -> Process<'a> {
        Process {
            me,
            k,
            world,
            index: world
                .iter()
                .enumerate()
                .map(|(i, &w)| (w, i as u32))
                .collect(),
            members,
            matcher: Matcher::new(members, world.to_vec()),
            builder: Builder::new(world).numbering_hubs(HubIds {
                last: me as u64,
                step: k as u64,
            }),
            walk: Walk::of(world.len(), |r| owner(r, k) == me),
            sums: Sums::new(world),
            ends: (0..world.len()).map(|_| RankEnd::default()).collect(),
            numbers: FxHashMap::default(),
            sent_ops: FxHashMap::default(),
            sent_calls: FxHashMap::default(),
            out: (0..k).map(|_| Vec::new()).collect(),
            state: State::default(),
        }
    }

    /// Takes part in the rounds of a process that failed before it began:
    /// the others stop too.
    fn fail(error: String, link: &dyn Link) -> Result<(), CriticalPathError> {
        let state = State {
            error: Some(error),
            ..State::default()
        };
        let round = encode(&Round {
            state,
            notes: Vec::new(),
        });
        let out = vec![round; link.processes()];
        let states = decode_round(&link.exchange(ROUND, &out), link.process());
        Err(first_error(link.process(), &out[0], &states))
    }

    /// The rounds, until every process has walked its ranks or one failed.
    fn rounds(&mut self, mut reading: Reading, link: &dyn Link) -> Result<(), CriticalPathError> {
        let mut error: Option<String> = None;
        loop {
            if error.is_none() && !self.state.read {
                match reading.step(|r, read| self.own(r, read)) {
                    Ok(more) => self.state.read = !more,
                    Err(e) => error = Some(e.to_string()),
                }
            }
            if error.is_none() {
                if let Err(e) = self.run_walk() {
                    error = Some(e.to_string());
                }
            }
            self.state.sent = self.out.iter().any(|o| !o.is_empty());
            self.state.error = error.clone();
            let out: Vec<Vec<u8>> = self
                .out
                .iter_mut()
                .map(|notes| {
                    encode(&Round {
                        state: self.state.clone(),
                        notes: std::mem::take(notes),
                    })
                })
                .collect();
            let received = link.exchange(ROUND, &out);
            let rounds = decode_round(&received, self.me);
            let told = self.state.error.is_some()
                || rounds
                    .iter()
                    .any(|r| r.as_ref().is_some_and(|r| r.state.error.is_some()));
            if told {
                return Err(first_error(self.me, &out[self.me], &rounds));
            }
            let mut states = vec![self.state.clone()];
            for (p, round) in rounds.into_iter().enumerate() {
                if p == self.me {
                    continue;
                }
                let Some(round) = round else {
                    // Told the others next round.
                    error.get_or_insert_with(|| format!("cannot read what process {p} sent"));
                    continue;
                };
                states.push(round.state);
                if error.is_none() {
                    for note in round.notes {
                        self.note(note);
                    }
                }
            }
            if error.is_some() {
                continue;
            }
            if states.iter().all(|s| s.read) && !self.state.finished {
                self.matcher.finish();
                self.take_found();
                self.state.finished = true;
            }
            let quiet = states.iter().all(|s| s.finished && !s.sent);
            if quiet && states.iter().all(|s| s.walked) {
                return Ok(());
            }
            if quiet {
                // Nothing is on its way, and a walk waits: for a cycle.
                let (rank, seq) = states.iter().find_map(|s| s.stuck).unwrap_or((0, 0));
                return Err(CycleError { rank, seq }.into());
            }
            if let Err(e) = self.run_walk() {
                error = Some(e.to_string());
            }
        }
    }

    /// Walks what can be walked; what other processes need goes out.
    fn run_walk(&mut self) -> std::io::Result<()> {
        let progress = self.walk.run()?;
        self.state.walked = progress == Progress::Done;
        self.state.stuck = match progress {
            Progress::Done => None,
            _ => self
                .walk
                .stuck_at()
                .map(|(r, seq)| (self.world[r as usize], seq)),
        };
        for (to, node, value) in self.walk.shipped.drain(..) {
            self.out[to].push(Note::Value(node, value));
        }
        Ok(())
    }

    /// What the matcher found: the edges made, the sums summed.
    fn take_found(&mut self) {
        let mut route = Route::new(self.me, self.k, &mut self.walk, &mut self.out);
        for found in self.matcher.found.drain(..) {
            self.builder.found(&mut route, &found);
            self.sums.found(&found);
        }
    }

    /// A call (or the end) of own rank index `r`, as read.
    fn own(&mut self, r: u32, read: Read<'_>) {
        let rank = self.world[r as usize];
        let (events, step, end): (Vec<RankEvent>, Option<Step>, Option<RankEnd>) = match read {
            Read::Call(call, events) => (events.collect(), call.step, None),
            Read::End(mut end) => (std::mem::take(&mut end.events), None, Some(end)),
        };
        // Every event announced before any is matched, as a single
        // process does.
        let mut placed = Vec::with_capacity(events.len());
        for event in &events {
            let numbers = self.next_numbers(r, event);
            let place = self.place(r, event);
            let held = match place {
                Some((to, waits)) => {
                    let (start, end) = self.builder.held(rank, event, waits);
                    if let Some(start) = start {
                        self.walk.ship(start, to);
                    }
                    if let Some(end) = end {
                        self.walk.open_target(end);
                    }
                    end
                }
                None => {
                    self.builder.number(rank, numbers);
                    let mut route = Route::new(self.me, self.k, &mut self.walk, &mut self.out);
                    self.builder.announce(&mut route, rank, event);
                    None
                }
            };
            placed.push((numbers, place.map(|p| p.0), held));
        }
        for (event, (numbers, to, held)) in events.into_iter().zip(placed) {
            match to {
                Some(to) => self.out[to].push(Note::Event {
                    r,
                    numbers,
                    event,
                    held,
                }),
                None => {
                    self.matcher.number(rank, numbers);
                    self.matcher.feed(rank, event);
                }
            }
        }
        if end.is_some() {
            self.matcher.end_rank(rank);
            for (p, out) in self.out.iter_mut().enumerate() {
                if p != self.me {
                    out.push(Note::RankEnded(r));
                }
            }
        }
        self.take_found();
        if let Some(step) = step {
            self.walk.push_step(r, step);
        }
        if let Some(end) = end {
            self.walk.end_rank(r, end.tail);
            self.ends[r as usize] = end;
        }
    }

    /// The numbers of `event`'s operation or collective call, if it
    /// posts one (the rank's next), before it.
    fn next_numbers(&mut self, r: u32, event: &RankEvent) -> (usize, usize) {
        let numbers = self.numbers.entry(r).or_default();
        let before = *numbers;
        match event {
            RankEvent::Post(_) => numbers.0 += 1,
            RankEvent::Collective(_) => numbers.1 += 1,
            _ => {}
        }
        before
    }

    /// The process that matches `event` of own rank index `r`, if another
    /// one, and whether the event completes a synchronous send.
    fn place(&mut self, r: u32, event: &RankEvent) -> Option<(usize, bool)> {
        let to = match event {
            RankEvent::Post(op) => {
                let to = self.owner_of_world(destination(op, self.members)?)?;
                if to != self.me && op.completion.is_none() {
                    let waits = super::graph::synchronous(op.func);
                    let n = self.numbers[&r].0 - 1;
                    self.sent_ops.insert((r, n), (to, waits));
                }
                to
            }
            RankEvent::Complete { op, .. } | RankEvent::Abandon(op) => {
                return self.sent_ops.remove(&(r, *op));
            }
            RankEvent::Collective(call) => {
                let to = self.home(comm_of(call, self.members)?);
                if to != self.me && call.completion.is_none() {
                    let n = self.numbers[&r].1 - 1;
                    self.sent_calls.insert((r, n), to);
                }
                to
            }
            RankEvent::CollectiveComplete { call, .. } | RankEvent::CollectiveAbandon(call) => {
                self.sent_calls.remove(&(r, *call))?
            }
            RankEvent::Epoch(_) => return None,
        };
        (to != self.me).then_some((to, false))
    }

    /// The process of world rank `rank`'s index.
    fn owner_of_world(&self, rank: u32) -> Option<usize> {
        self.index.get(&rank).map(|&r| owner(r, self.k))
    }

    /// The process that forms the instances of communicator `comm`: the
    /// owner of its first member.
    fn home(&self, comm: CommId) -> usize {
        let first = match comm {
            CommId::World => 0,
            CommId::SelfOf(rank) => rank,
            CommId::Created { leader, .. } if leader != NO_RANK => leader,
            // An inter-communicator's two groups are one instance.
            CommId::Created { instance, .. } => return (instance % self.k as u64) as usize,
        };
        self.owner_of_world(first).unwrap_or(0)
    }

    /// A note from another process.
    fn note(&mut self, note: Note) {
        match note {
            Note::Event {
                r,
                numbers,
                event,
                held,
            } => {
                let rank = self.world[r as usize];
                self.builder.number(rank, numbers);
                let mut route = Route::new(self.me, self.k, &mut self.walk, &mut self.out);
                route.proxy = true;
                self.builder.announce(&mut route, rank, &event);
                // The owner holds a superset of what is opened here.
                if let Some(held) = held.filter(|h| !route.opened.contains(h)) {
                    route.close_target(held);
                }
                self.matcher.number(rank, numbers);
                self.matcher.feed(rank, event);
                self.take_found();
            }
            Note::RankEnded(r) => {
                self.matcher.end_rank(self.world[r as usize]);
                self.take_found();
            }
            Note::Value(node, value) => self.walk.arrive(node, value),
            Note::Edge(from, to) => self.walk.edge(Some(from), Some(to)),
            Note::CloseTarget(node) => self.walk.close_target(node),
        }
    }

    /// A process but 0: its back-pointers, rank by rank (each ended by an
    /// empty message), then the rest of what it found.
    fn send_part(self, link: &dyn Link) {
        let mut error = None;
        let Walked {
            farthest,
            edges,
            hubs,
            untimed,
            back,
        } = self.walk.into_walked();
        for (r, pointers) in back.iter().enumerate() {
            if owner(r as u32, self.k) != self.me {
                continue;
            }
            let mut bytes = Vec::new();
            for pointer in pointers.iter() {
                match pointer {
                    Ok(p) => p.put(&mut bytes),
                    Err(e) => {
                        error.get_or_insert(e.to_string());
                        break;
                    }
                }
                if bytes.len() >= POINTERS * BackPointer::SIZE {
                    link.send(0, RESULT, &std::mem::take(&mut bytes));
                }
            }
            if !bytes.is_empty() {
                link.send(0, RESULT, &bytes);
            }
            link.send(0, RESULT, &[]);
        }
        let (me, k) = (self.me, self.k);
        let part = Part {
            ends: (0..)
                .zip(self.ends)
                .filter(|(r, _)| owner(*r, k) == me)
                .collect(),
            farthest: farthest
                .iter()
                .enumerate()
                .filter_map(|(r, f)| Some((r as u32, (*f)?)))
                .collect(),
            edges,
            hubs,
            untimed,
            unmatched: self.sums.unmatched,
            waits: self.sums.waits,
            error,
        };
        link.send(0, RESULT, &encode(&part));
    }

    /// Process 0: every process's back-pointers, ends and sums with its
    /// own. Everything sent is received, whatever fails.
    fn gather(self, link: &dyn Link) -> Result<(Walked, Vec<RankEnd>, Sums), CriticalPathError> {
        let mut walked = self.walk.into_walked();
        let mut ends = self.ends;
        let mut sums = self.sums;
        let mut error: Option<CriticalPathError> = None;
        for p in 1..self.k {
            for r in (0..self.world.len()).filter(|&r| owner(r as u32, self.k) == p) {
                loop {
                    let bytes = link.receive(p, RESULT);
                    if bytes.is_empty() {
                        break;
                    }
                    for record in bytes.chunks_exact(BackPointer::SIZE) {
                        if error.is_none() {
                            if let Err(e) = walked.back[r].push(&BackPointer::get(record)) {
                                error = Some(e.into());
                            }
                        }
                    }
                }
            }
            let part: Option<Part> = postcard::from_bytes(&link.receive(p, RESULT)).ok();
            let Some(part) = part else {
                error.get_or_insert(CriticalPathError::Elsewhere(format!(
                    "cannot read what process {p} sent"
                )));
                continue;
            };
            if let Some(e) = part.error {
                error.get_or_insert(CriticalPathError::Elsewhere(e));
            }
            for (r, end) in part.ends {
                if let Some(slot) = ends.get_mut(r as usize) {
                    *slot = end;
                }
            }
            for (r, f) in part.farthest {
                if let Some(slot) = walked.farthest.get_mut(r as usize) {
                    *slot = Some(f);
                }
            }
            walked.edges += part.edges;
            walked.hubs += part.hubs;
            walked.untimed += part.untimed;
            for (sum, more) in sums.unmatched.iter_mut().zip(part.unmatched) {
                *sum += more;
            }
            sums.waits.merge(part.waits);
        }
        match error {
            Some(e) => Err(e),
            None => Ok((walked, ends, sums)),
        }
    }
}

/// Tells the builder's lessons to the walk here, or to the process whose
/// vertex they are about.
struct Route<'w> {
    me: usize,
    k: usize,
    walk: &'w mut Walk,
    out: &'w mut Vec<Vec<Note>>,
    /// Announcing an event of another process's rank: the targets it
    /// opens are held by their owner (noted in `opened`), the sources
    /// here wait for values from there.
    proxy: bool,
    opened: Vec<Node>,
}

impl<'w> Route<'w> {
    fn new(me: usize, k: usize, walk: &'w mut Walk, out: &'w mut Vec<Vec<Note>>) -> Route<'w> {
        Route {
            me,
            k,
            walk,
            out,
            proxy: false,
            opened: Vec::new(),
        }
    }

    /// The process that walks `node` (hubs: the one that made them).
    fn owner(&self, node: Node) -> usize {
        match node {
            Node::Call { rank, .. } => owner(rank, self.k),
            Node::Hub(_) => self.me,
        }
    }
}

impl Learn for Route<'_> {
    fn push_step(&mut self, r: u32, step: Step) {
        self.walk.push_step(r, step)
    }
    fn end_rank(&mut self, r: u32, tail: Option<Farthest>) {
        self.walk.end_rank(r, tail)
    }
    fn open_target(&mut self, node: Node) {
        match self.proxy {
            true => self.opened.push(node),
            false => self.walk.open_target(node),
        }
    }
    fn close_target(&mut self, node: Node) {
        match self.owner(node) {
            to if to == self.me => self.walk.close_target(node),
            to => self.out[to].push(Note::CloseTarget(node)),
        }
    }
    fn open_source(&mut self, node: Node) {
        self.walk.open_source(node)
    }
    fn close_source(&mut self, node: Node) {
        self.walk.close_source(node)
    }
    fn edge(&mut self, from: Option<Node>, to: Option<Node>) {
        match (from, to) {
            (Some(from), Some(to)) if self.owner(to) != self.me => {
                let p = self.owner(to);
                self.out[p].push(Note::Edge(from, to));
                self.walk.ship(from, p);
            }
            _ => self.walk.edge(from, to),
        }
    }
    fn hub(&mut self, id: u64, preds: &[Option<Node>]) -> Option<Node> {
        self.walk.hub(id, preds)
    }
    fn close_hub(&mut self, hub: Node) {
        self.walk.close_hub(hub)
    }
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).expect("the pass's messages serialise")
}

/// The rounds received (None: unreadable), by process.
fn decode_round(received: &[Vec<u8>], me: usize) -> Vec<Option<Round>> {
    received
        .iter()
        .enumerate()
        .map(|(p, bytes)| match p == me {
            true => None,
            false => postcard::from_bytes(bytes).ok(),
        })
        .collect()
}

/// The error of the first process (by number) that told one.
fn first_error(me: usize, mine: &[u8], rounds: &[Option<Round>]) -> CriticalPathError {
    let own: Option<Round> = postcard::from_bytes(mine).ok();
    let error = (0..rounds.len()).find_map(|p| match p == me {
        true => own.as_ref()?.state.error.clone(),
        false => rounds[p].as_ref()?.state.error.clone(),
    });
    CriticalPathError::Elsewhere(error.unwrap_or_else(|| "another process failed".into()))
}
