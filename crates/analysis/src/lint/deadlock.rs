//! Send cycles: blocking sends in an order that deadlocks unless MPI
//! buffers the messages.
//!
//! MPI lets a standard-mode send (MPI_Send, or the Wait of an MPI_Isend)
//! wait until the receiver has posted the matching receive; programs that
//! work only because small messages are sent eagerly are unsafe (the
//! standard's word). The run is replayed with every standard-mode send
//! synchronous: a rank that enters a blocking call waits there until the
//! receive of each message the call sends has been posted and the send of
//! each message it receives has been posted. Operations completed by a
//! Test, buffered and ready sends, and collectives do not wait in the
//! replay: a replay with fewer waits deadlocks only where the real
//! program would too. If ranks are left waiting, their waits form a
//! cycle, reported once. Ranks that call MPI from several threads at
//! once are left out of the replay (their recorded order is one
//! interleaving of their threads): they wait for nothing.
//!
//! The replay runs while the run is read and matched ([`SendCycles`]): a
//! rank goes past a blocking call once every message the call waits for
//! is known and the ranks it waits for have got far enough. Where a rank
//! is, only ever grows with what is known, so it ends where a replay of
//! the whole run at once would end. What is held is the blocking calls
//! between where the replay is and where the reading is; ranks stuck for
//! good (waiting in a cycle, or for a rank that is) keep the call they
//! wait at and no later one.

use super::{Finding, Kind};
use crate::matching::p2p::{Message, OpKey};
use crate::matching::{Direction, Operation};
use crate::sites::Sites;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// What a blocking call waits for: `rank` to have entered call `seq`.
#[derive(Clone, Copy, Debug)]
struct Need {
    rank: u32,
    seq: u64,
    /// A send waiting for its receive (not a receive for its send).
    send: bool,
}

/// Where a need goes in its call's list: the needs of a call are in the
/// order of their messages' receives, a message's send's before its
/// receive's.
type NeedOrder = (OpKey, bool);

/// A rank's blocking call and what it waits for.
struct Point {
    seq: u64,
    needs: Vec<Need>,
}

/// Does a send by `func` (the posting call) complete only once its
/// receive is posted, when MPI does not buffer it?
fn synchronous_without_buffering(func: &str) -> bool {
    let func = func.strip_suffix("_c").unwrap_or(func);
    !matches!(
        func,
        "MPI_Bsend" | "MPI_Ibsend" | "MPI_Rsend" | "MPI_Irsend"
    )
}

/// An operation whose part in the replay is not known yet: its posting
/// call and, once known, the call that completed it.
struct Open {
    post: u64,
    completion: Option<u64>,
}

/// One rank in the replay.
#[derive(Default)]
struct RankReplay {
    /// Its blocking calls known and not gone past yet, with what each
    /// waits for (in no order until the call is whole).
    points: BTreeMap<u64, Vec<(NeedOrder, Need)>>,
    /// The next call to read (u64::MAX: all read).
    read: u64,
    /// The calls that completed its operations whose part is not known
    /// yet (how many at each): a blocking call there may wait for more.
    completing: BTreeMap<u64, u32>,
    /// The whole call it is at (its needs in order) and how many of its
    /// needs are met.
    at: Option<(u64, usize)>,
    /// The rank (by index) it waits for.
    waits: Option<usize>,
    /// Waits for good: in a cycle of waits, or for a rank that is.
    stuck: bool,
    /// Calls MPI from several threads at once: left out, waits for nothing.
    left_out: bool,
    /// Its operations whose part in the replay is not known yet.
    in_flight: usize,
}

impl RankReplay {
    /// Every blocking call before this one is known whole.
    fn whole_before(&self) -> u64 {
        let completing = self.completing.keys().next().copied();
        self.read.min(completing.unwrap_or(u64::MAX))
    }

    /// The call it has entered, at least (u64::MAX: past its last
    /// blocking call, or waits for nothing).
    fn reached(&self) -> u64 {
        if self.left_out {
            return u64::MAX;
        }
        let next = self.points.keys().next().copied().unwrap_or(u64::MAX);
        next.min(self.whole_before())
    }
}

/// The send-cycle check, fed the run's operations and what the matcher
/// decides about them.
pub(super) struct SendCycles<'a> {
    sites: &'a Sites<'a>,
    funcs: &'a [&'static str],
    /// Each world rank's index in `ranks`.
    index: FxHashMap<u32, usize>,
    ranks: Vec<RankReplay>,
    /// Ranks waiting for rank i to enter a call: min-heap by that call.
    waiting: Vec<BinaryHeap<Reverse<(u64, usize)>>>,
    /// Ranks that may go on.
    ready: Vec<usize>,
    /// The operations whose part in the replay is not known yet.
    open: FxHashMap<OpKey, Open>,
}

impl<'a> SendCycles<'a> {
    /// The check of the ranks of `world`, `threaded` left out; `funcs`
    /// names each signature's function.
    pub(super) fn new(
        world: &[u32],
        threaded: &[u32],
        sites: &'a Sites<'a>,
        funcs: &'a [&'static str],
    ) -> SendCycles<'a> {
        let ranks = world
            .iter()
            .map(|r| RankReplay {
                left_out: threaded.contains(r),
                ..RankReplay::default()
            })
            .collect();
        SendCycles {
            sites,
            funcs,
            index: world.iter().enumerate().map(|(i, &r)| (r, i)).collect(),
            ranks,
            waiting: vec![BinaryHeap::new(); world.len()],
            ready: Vec::new(),
            open: FxHashMap::default(),
        }
    }

    /// The function called at call `seq` of `rank`.
    fn func_at(&self, rank: u32, seq: u64) -> Option<&'static str> {
        self.sites
            .of(rank, seq)
            .and_then(|s| self.sites.signature(s))
            .and_then(|t| self.funcs.get(t as usize).copied())
    }

    /// The blocking call that completes an operation of `rank` posted at
    /// `post` and completed at `completion`: the posting call itself, or
    /// a Wait.
    fn blocks_at(&self, rank: u32, post: u64, completion: Option<u64>) -> Option<u64> {
        let c = completion?;
        (c == post
            || self
                .func_at(rank, c)
                .is_some_and(|f| f.starts_with("MPI_Wait")))
        .then_some(c)
    }

    /// Operation `key` is posted.
    pub(super) fn post(&mut self, key: OpKey, op: &Operation) {
        let open = Open {
            post: op.post,
            completion: None,
        };
        self.open.insert(key, open);
        if let Some(&i) = self.index.get(&key.0) {
            self.ranks[i].in_flight += 1;
        }
        if let Some(c) = op.completion {
            self.complete(key, c);
        }
    }

    /// Operation `key` completed at call `seq` (a second completion is no news).
    pub(super) fn complete(&mut self, key: OpKey, seq: u64) {
        let Some(open) = self.open.get_mut(&key).filter(|o| o.completion.is_none()) else {
            return;
        };
        open.completion = Some(seq);
        if let Some(&i) = self.index.get(&key.0) {
            *self.ranks[i].completing.entry(seq).or_default() += 1;
        }
    }

    /// Rank `rank`'s calls are read up to call `seq` (u64::MAX: all).
    pub(super) fn read(&mut self, rank: u32, seq: u64) {
        if let Some(&i) = self.index.get(&rank) {
            self.ranks[i].read = seq.saturating_add(1);
            self.ready.push(i);
        }
    }

    /// The part of operation `key` is known: it leaves the open ones.
    fn close(&mut self, key: OpKey) -> Option<Open> {
        let open = self.open.remove(&key)?;
        let Some(&i) = self.index.get(&key.0) else {
            return Some(open);
        };
        let r = &mut self.ranks[i];
        r.in_flight -= 1;
        if let Some(c) = open.completion {
            if let Some(n) = r.completing.get_mut(&c) {
                *n -= 1;
                if *n == 0 {
                    r.completing.remove(&c);
                }
            }
            self.ready.push(i);
        }
        Some(open)
    }

    /// Call `seq` of `rank` waits for `need`.
    fn add(&mut self, rank: u32, seq: u64, order: NeedOrder, need: Need) {
        let Some(&i) = self.index.get(&rank) else {
            return;
        };
        let r = &mut self.ranks[i];
        // A stuck rank never gets past the call it waits at.
        let gone = r.stuck && r.at.is_some_and(|(at, _)| seq > at);
        if !r.left_out && !gone {
            r.points.entry(seq).or_default().push((order, need));
        }
    }

    /// Receive `recv` got the message of send `send`: the receive is
    /// final, so what its blocking call waits for is known.
    pub(super) fn matched(&mut self, send: OpKey, recv: OpKey) {
        let Some(r) = self.close(recv) else {
            return;
        };
        // A send leaves the open ones once its message is settled, after this.
        let Some(s) = self.open.get(&send) else {
            return;
        };
        if let Some(c) = self.blocks_at(recv.0, r.post, r.completion) {
            let need = Need {
                rank: send.0,
                seq: s.post,
                send: false,
            };
            self.add(recv.0, c, (recv, true), need);
        }
    }

    /// Both operations of a message are final: what the send's blocking
    /// call waits for is known.
    pub(super) fn settled(&mut self, message: &Message) {
        let (send_key, recv_key) = message.keys;
        self.close(send_key);
        self.close(recv_key);
        let (send, recv) = (&message.send, &message.recv);
        if let Some(c) = self.blocks_at(send.rank, send.post, send.completion)
            && send.direction == Direction::Send
            && synchronous_without_buffering(send.func)
        {
            let need = Need {
                rank: recv.rank,
                seq: recv.post,
                send: true,
            };
            self.add(send.rank, c, (recv_key, false), need);
        }
    }

    /// Operation `key` matched nothing (or had MPI_PROC_NULL for peer):
    /// nothing waits for it.
    pub(super) fn unmatched(&mut self, key: OpKey) {
        self.close(key);
    }

    /// Replays as far as what is known allows.
    pub(super) fn replay(&mut self) {
        while let Some(i) = self.ready.pop() {
            self.run(i);
        }
    }

    /// Takes rank `i` past every blocking call it can go past.
    fn run(&mut self, i: usize) {
        if self.ranks[i].waits.is_some() || self.ranks[i].stuck {
            return;
        }
        while let Some((seq, mut met)) = self.whole_point(i) {
            let needs = &self.ranks[i].points[&seq];
            let mut blocked = None;
            while let Some(&(_, need)) = needs.get(met) {
                // A rank not in the trace waits for nothing.
                let reached = self
                    .index
                    .get(&need.rank)
                    .map(|&j| (j, self.ranks[j].reached()));
                match reached {
                    Some((j, reached)) if reached < need.seq => {
                        blocked = Some((j, need.seq));
                        break;
                    }
                    _ => met += 1,
                }
            }
            let r = &mut self.ranks[i];
            if let Some((j, need)) = blocked {
                r.at = Some((seq, met));
                r.waits = Some(j);
                self.waiting[j].push(Reverse((need, i)));
                break;
            }
            r.points.pop_first();
            r.at = None;
        }
        // The ranks waiting for calls it got past go on before its waits
        // are followed: only those left waiting for it are stuck if it is.
        self.wake(i);
        if self.ranks[i].waits.is_some() {
            self.find_stuck(i);
        }
    }

    /// The call rank `i` is at, if it is known whole (its needs then in
    /// order), and how many of its needs are met.
    fn whole_point(&mut self, i: usize) -> Option<(u64, usize)> {
        let r = &mut self.ranks[i];
        let whole = r.whole_before();
        let mut first = r.points.first_entry()?;
        let seq = *first.key();
        if seq >= whole {
            return None;
        }
        match r.at {
            Some((at, met)) if at == seq => Some((seq, met)),
            _ => {
                first.get_mut().sort_unstable_by_key(|&(order, _)| order);
                r.at = Some((seq, 0));
                Some((seq, 0))
            }
        }
    }

    /// Lets go on the ranks waiting for rank `i` to enter a call it has
    /// entered.
    fn wake(&mut self, i: usize) {
        let reached = self.ranks[i].reached();
        while let Some(&Reverse((seq, k))) = self.waiting[i].peek() {
            if seq > reached {
                break;
            }
            self.waiting[i].pop();
            debug_assert!(!self.ranks[k].stuck, "rank {k} was taken for stuck");
            self.ranks[k].waits = None;
            self.ready.push(k);
        }
    }

    /// Rank `i` has just stopped to wait: if its waits lead round to
    /// itself or to a stuck rank, it is stuck, as is every rank on the way.
    fn find_stuck(&mut self, i: usize) {
        let mut path = vec![i];
        let mut at = i;
        while let Some(j) = self.ranks[at].waits {
            if self.ranks[j].stuck || path.contains(&j) {
                for p in path {
                    self.stick(p);
                }
                return;
            }
            path.push(j);
            at = j;
        }
    }

    /// Rank `i` waits for good, and so does every rank waiting for it:
    /// the calls after the one each waits at are dropped.
    fn stick(&mut self, i: usize) {
        let mut todo = vec![i];
        while let Some(k) = todo.pop() {
            let r = &mut self.ranks[k];
            if r.stuck {
                continue;
            }
            r.stuck = true;
            if let Some((at, _)) = r.at {
                r.points.split_off(&(at + 1));
            }
            todo.extend(self.waiting[k].iter().map(|&Reverse((_, w))| w));
        }
    }

    /// How many operations of `rank` are posted whose part in the replay
    /// is not known yet.
    pub(super) fn in_flight(&self, rank: u32) -> usize {
        self.index
            .get(&rank)
            .map_or(0, |&i| self.ranks[i].in_flight)
    }

    /// How many blocking calls the replay holds.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.ranks.iter().map(|r| r.points.len()).sum()
    }

    /// Everything has been read and matched: the cycle the replay ends
    /// in, if any.
    pub(super) fn finish(mut self) -> Vec<Finding> {
        for i in 0..self.ranks.len() {
            self.ranks[i].read = u64::MAX;
            self.ready.push(i);
        }
        self.replay();
        // The ranks in the replay, ascending, and where each stopped.
        let mut ranks: Vec<(u32, usize)> = self
            .index
            .iter()
            .filter(|&(_, &i)| !self.ranks[i].left_out)
            .map(|(&r, &i)| (r, i))
            .collect();
        ranks.sort_unstable();
        let index: FxHashMap<u32, usize> = ranks
            .iter()
            .enumerate()
            .map(|(n, &(r, _))| (r, n))
            .collect();
        let lists: Vec<Vec<Point>> = ranks
            .iter()
            .map(|&(_, i)| {
                let first = self.ranks[i].points.pop_first();
                first
                    .map(|(seq, needs)| Point {
                        seq,
                        needs: needs.into_iter().map(|(_, need)| need).collect(),
                    })
                    .into_iter()
                    .collect()
            })
            .collect();
        let blocked: Vec<Option<usize>> =
            lists.iter().map(|l| (!l.is_empty()).then_some(0)).collect();
        let sites = self.sites;
        cycle(&blocked, &lists, &index)
            .map(|(cycle, first)| {
                let rank = ranks[first.0].0;
                let point = &lists[first.0][first.1];
                let func = self.func_at(rank, point.seq).unwrap_or("MPI_Send");
                let order: Vec<String> = cycle.iter().map(|&i| ranks[i].0.to_string()).collect();
                Finding {
                    ranks: {
                        let mut r: Vec<u32> = cycle.iter().map(|&i| ranks[i].0).collect();
                        r.sort_unstable();
                        r
                    },
                    ..Finding::on(
                        Kind::SendCycle,
                        rank,
                        func,
                        sites.of(rank, point.seq),
                        cycle.len() as u64,
                        format!(
                            "ranks {} -> {} each send before the next one receives: this completes only because MPI buffers the messages, and deadlocks without (larger messages, another MPI); use MPI_Sendrecv or non-blocking calls",
                            order.join(" -> "),
                            order[0]
                        ),
                    )
                }
            })
            .into_iter()
            .collect()
    }
}

/// A cycle of waiting ranks (indices, in waiting order) that holds a
/// send waiting for its receive, and the point of its first rank.
fn cycle(
    blocked: &[Option<usize>],
    lists: &[Vec<Point>],
    index: &FxHashMap<u32, usize>,
) -> Option<(Vec<usize>, (usize, usize))> {
    // The need each blocked rank waits on: the first one not met.
    let waits_on = |i: usize| -> Option<(usize, bool)> {
        let point = &lists[i][blocked[i]?];
        point.needs.iter().find_map(|need| {
            let j = *index.get(&need.rank)?;
            let met = match blocked[j] {
                None => true,
                Some(at) => lists[j][at].seq >= need.seq,
            };
            (!met).then_some((j, need.send))
        })
    };
    for start in 0..blocked.len() {
        if blocked[start].is_none() {
            continue;
        }
        // Follow the waits until a rank repeats.
        let mut path: Vec<usize> = vec![start];
        let mut sends = Vec::new();
        let mut i = start;
        while let Some((j, send)) = waits_on(i) {
            sends.push(send);
            if let Some(k) = path.iter().position(|&p| p == j) {
                let cycle = path[k..].to_vec();
                if sends[k..].iter().any(|&s| s) {
                    let first = cycle[0];
                    return Some((cycle, (first, blocked[first]?)));
                }
                return None;
            }
            path.push(j);
            i = j;
        }
    }
    None
}
