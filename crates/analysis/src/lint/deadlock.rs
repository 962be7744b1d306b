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

use super::{Finding, Kind};
use crate::matching::{Direction, Matching, Operation};
use crate::sites::Sites;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What a blocking call waits for: `rank` to have entered call `seq`.
#[derive(Clone, Copy, Debug)]
struct Need {
    rank: u32,
    seq: u64,
    /// A send waiting for its receive (not a receive for its send).
    send: bool,
}

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

pub(super) fn send_cycles(
    matching: &Matching,
    sites: &Sites,
    funcs: &[&'static str],
    threaded: &[u32],
) -> Vec<Finding> {
    let func_at = |rank: u32, seq: u64| {
        sites
            .of(rank, seq)
            .and_then(|s| sites.signature(s))
            .and_then(|t| funcs.get(t as usize).copied())
    };
    // A completion waits if it is the posting blocking call or a Wait.
    let blocks_at = |op: &Operation| -> Option<u64> {
        let c = op.completion?;
        (c == op.post || func_at(op.rank, c).is_some_and(|f| f.starts_with("MPI_Wait")))
            .then_some(c)
    };
    let mut points: FxHashMap<u32, FxHashMap<u64, Vec<Need>>> = FxHashMap::default();
    for m in &matching.matches {
        let (send, recv) = (&matching.operations[m.send], &matching.operations[m.recv]);
        if let Some(c) = blocks_at(send)
            && send.direction == Direction::Send
            && synchronous_without_buffering(send.func)
        {
            let need = Need {
                rank: recv.rank,
                seq: recv.post,
                send: true,
            };
            points
                .entry(send.rank)
                .or_default()
                .entry(c)
                .or_default()
                .push(need);
        }
        if let Some(c) = blocks_at(recv) {
            let need = Need {
                rank: send.rank,
                seq: send.post,
                send: false,
            };
            points
                .entry(recv.rank)
                .or_default()
                .entry(c)
                .or_default()
                .push(need);
        }
    }
    for rank in threaded {
        points.remove(rank);
    }
    let mut ranks: Vec<u32> = points.keys().copied().collect();
    ranks.sort_unstable();
    let index: FxHashMap<u32, usize> = ranks.iter().enumerate().map(|(i, &r)| (r, i)).collect();
    let lists: Vec<Vec<Point>> = ranks
        .iter()
        .map(|r| {
            let mut list: Vec<Point> = points
                .remove(r)
                .unwrap_or_default()
                .into_iter()
                .map(|(seq, needs)| Point { seq, needs })
                .collect();
            list.sort_by_key(|p| p.seq);
            list
        })
        .collect();
    let blocked = replay(&lists, &index);
    cycle(&blocked, &lists, &index)
        .map(|(cycle, first)| {
            let rank = ranks[first.0];
            let point = &lists[first.0][first.1];
            let func = func_at(rank, point.seq).unwrap_or("MPI_Send");
            let order: Vec<String> = cycle.iter().map(|&i| ranks[i].to_string()).collect();
            Finding {
                ranks: {
                    let mut r: Vec<u32> = cycle.iter().map(|&i| ranks[i]).collect();
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

/// Where each rank stops in the replay: the index of the point it waits
/// at, or None if it finished.
fn replay(lists: &[Vec<Point>], index: &FxHashMap<u32, usize>) -> Vec<Option<usize>> {
    let n = lists.len();
    let mut at = vec![0usize; n];
    let mut need_at = vec![0usize; n];
    // The call each rank has entered (u64::MAX: finished).
    let entered =
        |lists: &[Vec<Point>], i: usize, at: usize| lists[i].get(at).map_or(u64::MAX, |p| p.seq);
    let mut reached: Vec<u64> = (0..n).map(|i| entered(lists, i, 0)).collect();
    // Ranks waiting for rank i to enter a call: min-heap by that call.
    let mut waiting: Vec<BinaryHeap<Reverse<(u64, usize)>>> = vec![BinaryHeap::new(); n];
    let mut ready: Vec<usize> = (0..n).collect();
    while let Some(i) = ready.pop() {
        while let Some(point) = lists[i].get(at[i]) {
            let mut blocked = false;
            while let Some(need) = point.needs.get(need_at[i]) {
                // A rank not in the replay has no blocking call: it runs to the end.
                let Some(&j) = index.get(&need.rank) else {
                    need_at[i] += 1;
                    continue;
                };
                if reached[j] >= need.seq {
                    need_at[i] += 1;
                } else {
                    waiting[j].push(Reverse((need.seq, i)));
                    blocked = true;
                    break;
                }
            }
            if blocked {
                break;
            }
            at[i] += 1;
            need_at[i] = 0;
            reached[i] = entered(lists, i, at[i]);
            while let Some(&Reverse((seq, k))) = waiting[i].peek() {
                if seq > reached[i] {
                    break;
                }
                waiting[i].pop();
                ready.push(k);
            }
        }
    }
    (0..n)
        .map(|i| (at[i] < lists[i].len()).then_some(at[i]))
        .collect()
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
