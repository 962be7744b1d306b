//! [`super::analyse`] spread over the processes of a [`Link`]
//! (`mpiexec -n K mpigram critical-path`): rank index r belongs to
//! process r mod K, which reads it; the matching is shared out as
//! Scalasca's parallel replay shares it, and process 0 walks the graph.
//!
//! - **Matching.** A send is matched by the owner of its destination,
//!   with the receives there; a collective call by the owner of its
//!   communicator's first member (of world rank 0 for MPI_COMM_WORLD),
//!   which forms the instances. The owner of a call's rank sends the
//!   event there, numbered as its rank's operations are, and announces
//!   its vertices to the walk itself (the matching process announces
//!   nothing more, and closes a target the owner held open that it would
//!   not have opened).
//! - **Walking.** Each process tells the walk what it learns of the
//!   graph (its ranks' steps, the vertices they announce, the edges of
//!   what it matched) in the order it learns it; the walk runs on a
//!   thread of process 0, as a single process's does. A rank's lessons
//!   come from its owner in its order, and an edge into a vertex comes
//!   after the vertex was announced (it is made once the event was sent
//!   on, in a later round), so the walk waits where a single process's
//!   walk waits and finds the same path.
//! - **Rounds.** The processes work in rounds: each reads a chunk of its
//!   ranks furthest behind in time and matches what it can, then every
//!   process sends every other what it has for it ([`Link::exchange`])
//!   with its state (read, matching finished, an error). Once every
//!   process has read every rank, each finishes its matching; once every
//!   process has finished and none has anything to send, all stop, and
//!   the others send process 0 their ranks' ends and their sums. An error
//!   stops every process in the round after the one that found it.
//!
//! Traces with one-sided epochs or persistent collectives (whose matching
//! refers to earlier instances) are analysed by the pass that spreads
//! only the reading ([`crate::parallel`]).

use super::graph::{Builder, HubIds};
use super::learn::{Batches, Learn, Lesson};
use super::stream::{Sums, conclude, walking};
use super::waits::Waits;
use super::walk::{Farthest, Node, Step};
use super::{Analysis, CallSites, CriticalPathError};
use crate::matching::collectives::comm_of;
use crate::matching::p2p::destination;
use crate::matching::{Matcher, RankEvent, world_ranks};
use crate::members::{CommId, Members};
use crate::parallel::{Link, owner};
use crate::replay::{RankEnd, Read, Reading};
use crate::sites::Sites;
use crate::timeline::Source;
use mpigram_trace::{NO_RANK, Trace};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Tags of the messages of this pass (those of [`crate::parallel`] are
/// below).
const ROUND: u32 = 2;
const RESULT: u32 = 3;

/// What one process tells another within a round.
#[derive(Debug, Serialize, Deserialize)]
enum Note {
    /// An event of rank index `r`, to be matched there: the numbers of its
    /// rank's next operation and collective call, and the vertex its
    /// owner announced as a target for it.
    Event {
        r: u32,
        numbers: (usize, usize),
        event: Box<RankEvent>,
        held: Option<Node>,
    },
    /// Rank index `r` has no more events.
    RankEnded(u32),
    /// For the walk (on process 0).
    Lesson(Lesson),
}

/// A process's state, sent to every other each round.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct State {
    /// Every rank of the process read, its events sent.
    read: bool,
    /// Its matching finished.
    finished: bool,
    /// Where its ranks not read to the end have got to in time, the one
    /// furthest behind's (`i64::MAX`: all read).
    frontier: i64,
    /// It sent notes this round.
    sent: bool,
    error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Round {
    state: State,
    notes: Vec<Note>,
}

/// What a process sends process 0 at the end.
#[derive(Serialize, Deserialize)]
struct Part {
    /// By rank index.
    ends: Vec<(u32, RankEnd)>,
    unmatched: [usize; 3],
    waits: Waits,
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
/// Some, the others' None (they say nothing of errors: process 0 tells).
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
    let mut reading = match reading {
        Ok(reading) => reading,
        Err(e) => {
            let error = fail(e.to_string(), link);
            return if me == 0 { Err(error) } else { Ok(None) };
        }
    };
    if me != 0 {
        if process.rounds(&mut reading, link, None).is_ok() {
            process.send_part(link);
        }
        return Ok(None);
    }
    let (rounds, walk) = walking(&world, |batches| {
        process.rounds(&mut reading, link, Some(batches))
    });
    // A walk cut short by a reading error is not the news.
    match rounds {
        Err(Stop::Walk) => {
            return Err(walk
                .err()
                .unwrap_or(CriticalPathError::Elsewhere("the walk stopped".into())));
        }
        Err(Stop::Told(e)) => return Err(e),
        Ok(()) => {}
    }
    // The others sent their parts: taken whatever the walk found.
    let gathered = process.gather(link);
    let walk = walk?;
    let (ends, sums) = gathered?;
    conclude(
        trace,
        grammar_sites,
        sites,
        source,
        heuristic,
        walk.into_walked(),
        &ends,
        sums,
    )
    .map(Some)
}

/// Why the rounds stopped early.
enum Stop {
    /// A process told an error.
    Told(CriticalPathError),
    /// The walk (on process 0) stopped: its error is the news.
    Walk,
}

/// Takes part in the rounds as a process that failed before it began:
/// the others stop too. The error of the first process that failed.
fn fail(error: String, link: &dyn Link) -> CriticalPathError {
    let state = State {
        error: Some(error),
        ..State::default()
    };
    let round = encode(&Round {
        state,
        notes: Vec::new(),
    });
    let out = vec![round; link.processes()];
    let rounds = decode_rounds(&link.exchange(ROUND, &out), link.process());
    first_error(link.process(), &out[0], &rounds)
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
            sums: Sums::new(world),
            ends: (0..world.len()).map(|_| RankEnd::default()).collect(),
            numbers: FxHashMap::default(),
            sent_ops: FxHashMap::default(),
            sent_calls: FxHashMap::default(),
            out: (0..k).map(|_| Vec::new()).collect(),
            state: State::default(),
        }
    }

    /// The rounds, until every process has read and matched everything
    /// or one failed. `batches`: the walk's, on process 0.
    fn rounds(
        &mut self,
        reading: &mut Reading,
        link: &dyn Link,
        mut batches: Option<&mut Batches>,
    ) -> Result<(), Stop> {
        let mut error: Option<String> = None;
        let mut walk_stopped = false;
        // What processes but 0 learn for the walk, sent ahead of their
        // other notes to process 0.
        let mut lessons: Vec<Lesson> = Vec::new();
        // The others' frontier, and how far this process's last chunks
        // went in time: a process reads while it is at most that much
        // ahead of every other, so that the ranks are read in about the
        // order of time, as a single process reads them, and what is in
        // flight stays what was in flight in the run.
        let mut others = i64::MIN;
        let mut stride = 0i64;
        loop {
            let behind = reading.behind().unwrap_or(i64::MAX);
            if error.is_none() && !self.state.read && behind <= others.saturating_add(stride) {
                let walk = learner(&mut batches, &mut lessons);
                match reading.step(|r, read| self.own(r, read, walk)) {
                    Ok(more) => self.state.read = !more,
                    Err(e) => error = Some(e.to_string()),
                }
                let now = reading.behind().unwrap_or(i64::MAX);
                if behind > i64::MIN && now < i64::MAX {
                    stride = now.saturating_sub(behind).max(0);
                }
            }
            self.state.frontier = reading.behind().unwrap_or(i64::MAX);
            if batches.as_ref().is_some_and(|b| b.gone()) && error.is_none() {
                walk_stopped = true;
                error = Some("the walk stopped".into());
            }
            let mut to_0: Vec<Note> = lessons.drain(..).map(Note::Lesson).collect();
            to_0.append(&mut self.out[0]);
            self.out[0] = to_0;
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
            let rounds = decode_rounds(&link.exchange(ROUND, &out), self.me);
            let told = self.state.error.is_some()
                || rounds
                    .iter()
                    .any(|r| r.as_ref().is_some_and(|r| r.state.error.is_some()));
            if told {
                return Err(match walk_stopped {
                    true => Stop::Walk,
                    false => Stop::Told(first_error(self.me, &out[self.me], &rounds)),
                });
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
                        self.note(note, learner(&mut batches, &mut lessons));
                    }
                }
            }
            if error.is_some() {
                continue;
            }
            others = states[1..]
                .iter()
                .map(|s| s.frontier)
                .min()
                .unwrap_or(i64::MAX);
            if states.iter().all(|s| s.read) && !self.state.finished {
                self.matcher.finish();
                self.take_found(learner(&mut batches, &mut lessons));
                self.state.finished = true;
            }
            if states.iter().all(|s| s.finished && !s.sent) {
                return Ok(());
            }
        }
    }

    /// What the matcher found: the edges made, the sums summed.
    fn take_found(&mut self, walk: &mut dyn Learn) {
        let mut route = Route::new(walk);
        for found in self.matcher.found.drain(..) {
            self.builder.found(&mut route, &found);
            self.sums.found(&found);
        }
    }

    /// A call (or the end) of own rank index `r`, as read.
    fn own(&mut self, r: u32, read: Read<'_>, walk: &mut dyn Learn) {
        let rank = self.world[r as usize];
        let (events, step, end): (Vec<RankEvent>, Option<Step>, Option<RankEnd>) = match read {
            Read::Call(call, events) => (events.collect(), call.step, None),
            Read::End(mut end) => (std::mem::take(&mut end.events), None, Some(end)),
        };
        // Every event announced before any is matched, as a single
        // process does; an event matched elsewhere by what its owner
        // holds for it.
        let mut placed = Vec::with_capacity(events.len());
        for event in &events {
            let numbers = self.next_numbers(r, event);
            let place = self.place(r, event);
            let held = match place {
                Some((_, waits)) => {
                    let (start, end) = self.builder.held(rank, event, waits);
                    if let Some(start) = start {
                        walk.open_source(start);
                    }
                    if let Some(end) = end {
                        walk.open_target(end);
                    }
                    end
                }
                None => {
                    self.builder.number(rank, numbers);
                    self.builder.announce(&mut Route::new(walk), rank, event);
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
                    event: Box::new(event),
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
        self.take_found(walk);
        if let Some(step) = step {
            walk.push_step(r, step);
        }
        if let Some(end) = end {
            walk.end_rank(r, end.tail);
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
    fn note(&mut self, note: Note, walk: &mut dyn Learn) {
        match note {
            Note::Event {
                r,
                numbers,
                event,
                held,
            } => {
                let rank = self.world[r as usize];
                self.builder.number(rank, numbers);
                let mut route = Route::new(walk);
                route.proxy = true;
                self.builder.announce(&mut route, rank, &event);
                // The owner announced a superset of what is opened here.
                if let Some(held) = held.filter(|h| !route.opened.contains(h)) {
                    route.close_target(held);
                }
                self.matcher.number(rank, numbers);
                self.matcher.feed(rank, *event);
                self.take_found(walk);
            }
            Note::RankEnded(r) => {
                self.matcher.end_rank(self.world[r as usize]);
                self.take_found(walk);
            }
            Note::Lesson(lesson) => lesson.tell(walk),
        }
    }

    /// A process but 0: its ranks' ends and its sums.
    fn send_part(self, link: &dyn Link) {
        let (me, k) = (self.me, self.k);
        let part = Part {
            ends: (0..)
                .zip(self.ends)
                .filter(|(r, _)| owner(*r, k) == me)
                .collect(),
            unmatched: self.sums.unmatched,
            waits: self.sums.waits,
        };
        link.send(0, RESULT, &encode(&part));
    }

    /// Process 0: every process's ranks' ends and sums with its own.
    /// Everything sent is received, whatever fails.
    fn gather(self, link: &dyn Link) -> Result<(Vec<RankEnd>, Sums), CriticalPathError> {
        let mut ends = self.ends;
        let mut sums = self.sums;
        let mut error = None;
        for p in 1..self.k {
            let part: Option<Part> = postcard::from_bytes(&link.receive(p, RESULT)).ok();
            let Some(part) = part else {
                error.get_or_insert(format!("cannot read what process {p} sent"));
                continue;
            };
            for (r, end) in part.ends {
                if let Some(slot) = ends.get_mut(r as usize) {
                    *slot = end;
                }
            }
            for (sum, more) in sums.unmatched.iter_mut().zip(part.unmatched) {
                *sum += more;
            }
            sums.waits.merge(part.waits);
        }
        match error {
            Some(e) => Err(CriticalPathError::Elsewhere(e)),
            None => Ok((ends, sums)),
        }
    }
}

/// The walk as this process reaches it: on process 0 its batches, on the
/// others the lessons for process 0.
fn learner<'b>(
    batches: &'b mut Option<&mut Batches>,
    lessons: &'b mut Vec<Lesson>,
) -> &'b mut dyn Learn {
    match batches {
        Some(batches) => *batches,
        None => lessons,
    }
}

/// Tells the builder's lessons to the walk; announcing an event of
/// another process's rank (`proxy`), only the targets it opens are noted
/// (in `opened`): their owner announced the event's vertices.
struct Route<'w> {
    walk: &'w mut dyn Learn,
    proxy: bool,
    opened: Vec<Node>,
}

impl<'w> Route<'w> {
    fn new(walk: &'w mut dyn Learn) -> Route<'w> {
        Route {
            walk,
            proxy: false,
            opened: Vec::new(),
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
        self.walk.close_target(node)
    }
    fn open_source(&mut self, node: Node) {
        if !self.proxy {
            self.walk.open_source(node)
        }
    }
    fn close_source(&mut self, node: Node) {
        self.walk.close_source(node)
    }
    fn edge(&mut self, from: Option<Node>, to: Option<Node>) {
        self.walk.edge(from, to)
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

/// The rounds received (None: unreadable, and this process's), by process.
fn decode_rounds(received: &[Vec<u8>], me: usize) -> Vec<Option<Round>> {
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
