//! Storms of small messages: runs of at least [`STORM_MESSAGES`] sends
//! of at most [`SMALL_MESSAGE_BYTES`] from one rank to one peer on one
//! communicator, with no receive from that peer nor collective call of
//! the sender in between: one larger message would carry them.
//!
//! Each rank's operations are taken in the order it posted them, as the
//! run is read. A collective call ends the runs only if it is one of a
//! collective operation (the matcher found its other members' calls), which
//! is known once its last member calls it: until then, what the rank
//! posts after it is held back.

use super::{Finding, Kind, SMALL_MESSAGE_BYTES, STORM_MESSAGES};
use crate::matching::instances::CallKey;
use crate::matching::{Comm, Direction, Operation, Peer};
use crate::sites::{CallSite, Sites};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};

/// What a storm needs of an operation.
struct Posted {
    direction: Direction,
    comm: Option<Comm>,
    /// Destination of a send, source of a receive.
    peer: Peer,
    /// A send's size, when known.
    bytes: Option<u64>,
    post: u64,
    func: &'static str,
}

/// A rank's operation or collective call, in the order of its calls.
enum Held {
    Operation(Posted),
    /// Its collective call `number` (among the rank's), made at call `post`.
    Collective {
        number: usize,
        post: u64,
    },
}

/// A run in progress to one (communicator, peer).
struct Run {
    first: u64,
    last: u64,
    messages: u64,
    bytes: u64,
    func: &'static str,
}

/// The storms from one rank to one peer at one call site.
struct Storm {
    runs: u64,
    messages: u64,
    bytes: u64,
    longest: u64,
    /// The function of the first send.
    func: &'static str,
}

/// One rank's storm check.
#[derive(Default)]
struct RankStorms {
    /// Its collective calls so far.
    collectives: usize,
    /// What it posted from its first collective call not known to be of
    /// an operation or not, on.
    held: VecDeque<Held>,
    /// Whether each held collective call is one of an operation, once known.
    known: FxHashMap<usize, bool>,
    /// Runs in progress by (communicator, peer).
    open: FxHashMap<(Option<Comm>, u32), Run>,
    /// The calls of the last two collective operations taken in (the
    /// latest last): every one before them was made before them.
    operations: [Option<u64>; 2],
}

impl RankStorms {
    /// A collective operation between calls `a` and `b` (both excluded).
    fn collective_between(&self, a: u64, b: u64) -> bool {
        self.operations.iter().flatten().any(|&p| a < p && p < b)
    }
}

/// The storm check of every rank, fed as the run is read and matched.
pub(super) struct Storms<'s> {
    sites: &'s Sites<'s>,
    ranks: FxHashMap<u32, RankStorms>,
    /// Finished storms by (rank, site of the first send, peer).
    found: BTreeMap<(u32, Option<CallSite>, String), Storm>,
}

impl<'s> Storms<'s> {
    pub(super) fn new(sites: &'s Sites<'s>) -> Storms<'s> {
        Storms {
            sites,
            ranks: FxHashMap::default(),
            found: BTreeMap::new(),
        }
    }

    /// `op` is the next operation `rank` posted.
    pub(super) fn post(&mut self, rank: u32, op: &Operation) {
        let posted = Posted {
            direction: op.direction,
            comm: op.comm.clone(),
            peer: op.peer.clone(),
            bytes: op.bytes,
            post: op.post,
            func: op.func,
        };
        let r = self.ranks.entry(rank).or_default();
        if r.held.is_empty() {
            take(r, rank, posted, self.sites, &mut self.found);
        } else {
            r.held.push_back(Held::Operation(posted));
        }
    }

    /// `rank` made its next collective call, at call `post`.
    pub(super) fn collective(&mut self, rank: u32, post: u64) {
        let r = self.ranks.entry(rank).or_default();
        let number = r.collectives;
        r.collectives += 1;
        r.held.push_back(Held::Collective { number, post });
    }

    /// Collective call `call` is one of an operation (`operation`) or not.
    pub(super) fn known(&mut self, (rank, number): CallKey, operation: bool) {
        let Some(r) = self.ranks.get_mut(&rank) else {
            return;
        };
        r.known.insert(number, operation);
        self.take_held(rank, false);
    }

    /// Takes in what `rank` holds, up to its first collective call not
    /// known yet (`all`: every call is known that will be: a call not
    /// known is of no operation).
    fn take_held(&mut self, rank: u32, all: bool) {
        let Some(r) = self.ranks.get_mut(&rank) else {
            return;
        };
        while let Some(held) = r.held.pop_front() {
            match held {
                Held::Operation(posted) => take(r, rank, posted, self.sites, &mut self.found),
                Held::Collective { number, post } => match r.known.remove(&number) {
                    Some(true) => {
                        if r.operations[1] != Some(post) {
                            r.operations = [r.operations[1], Some(post)];
                        }
                    }
                    Some(false) => {}
                    None if all => {}
                    None => {
                        r.held.push_front(Held::Collective { number, post });
                        return;
                    }
                },
            }
        }
    }

    /// How many operations and collective calls of `rank` are held back.
    pub(super) fn in_flight(&self, rank: u32) -> usize {
        self.ranks.get(&rank).map_or(0, |r| r.held.len())
    }

    /// How many operations and collective calls are held back.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.ranks.values().map(|r| r.held.len()).sum()
    }

    /// The run is over: its storms.
    pub(super) fn finish(mut self) -> Vec<Finding> {
        let mut ranks: Vec<u32> = self.ranks.keys().copied().collect();
        ranks.sort_unstable();
        for rank in ranks {
            self.take_held(rank, true);
            let r = self.ranks.get_mut(&rank).expect("a rank of the check");
            for (key, run) in r.open.drain() {
                finish(rank, key, run, self.sites, &mut self.found);
            }
        }
        self.found
            .into_iter()
            .map(|((rank, site, peer), storm)| {
                let Storm {
                    runs,
                    messages,
                    bytes,
                    longest,
                    func,
                } = storm;
                Finding::on(
                    Kind::SmallMessageStorm,
                    rank,
                    func,
                    site,
                    messages,
                    format!(
                        "messages of {:.0} bytes on average to {peer}, in {runs} run(s) of up to {longest} with nothing received from it in between: send each run as one message",
                        bytes as f64 / messages as f64
                    ),
                )
            })
            .collect()
    }
}

/// Takes in the next operation of `rank`, in its posting order.
fn take(
    r: &mut RankStorms,
    rank: u32,
    op: Posted,
    sites: &Sites,
    found: &mut BTreeMap<(u32, Option<CallSite>, String), Storm>,
) {
    match (op.direction, &op.peer) {
        (Direction::Recv, Peer::Rank(_) | Peer::Any) => {
            // A receive from the peer (or from anyone) ends its runs.
            let ended: Vec<_> = r
                .open
                .keys()
                .filter(|(c, p)| {
                    *c == op.comm && (op.peer == Peer::Any || op.peer == Peer::Rank(*p))
                })
                .cloned()
                .collect();
            for k in ended {
                let run = r.open.remove(&k).expect("a key of open");
                finish(rank, k, run, sites, found);
            }
        }
        (Direction::Send, &Peer::Rank(peer)) => {
            let key = (op.comm.clone(), peer);
            let small = op.bytes.filter(|&b| b <= SMALL_MESSAGE_BYTES);
            let between = |run: &Run| r.collective_between(run.last, op.post);
            if let (Some(run), Some(b)) = (r.open.get(&key), small)
                && !between(run)
            {
                let run = r.open.get_mut(&key).expect("a run in progress");
                run.last = op.post;
                run.messages += 1;
                run.bytes += b;
                return;
            }
            if let Some(run) = r.open.remove(&key) {
                finish(rank, key.clone(), run, sites, found);
            }
            if let Some(b) = small {
                let run = Run {
                    first: op.post,
                    last: op.post,
                    messages: 1,
                    bytes: b,
                    func: op.func,
                };
                r.open.insert(key, run);
            }
        }
        _ => {}
    }
}

/// A run to (communicator, peer) ended: a storm if it is long enough.
fn finish(
    rank: u32,
    (comm, peer): (Option<Comm>, u32),
    run: Run,
    sites: &Sites,
    found: &mut BTreeMap<(u32, Option<CallSite>, String), Storm>,
) {
    if run.messages < STORM_MESSAGES {
        return;
    }
    let to = match comm {
        Some(comm) => format!("rank {peer} of {comm}"),
        None => format!("rank {peer}"),
    };
    let e = found
        .entry((rank, sites.of(rank, run.first), to))
        .or_insert(Storm {
            runs: 0,
            messages: 0,
            bytes: 0,
            longest: 0,
            func: run.func,
        });
    e.runs += 1;
    e.messages += run.messages;
    e.bytes += run.bytes;
    e.longest = e.longest.max(run.messages);
}
