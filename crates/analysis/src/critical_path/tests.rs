//! The graph, the longest path and the waits on hand-built, timed calls.

use super::*;
use crate::decode::DecodedCall;
use crate::matching::{Comm, PredefinedComms, WorldRanks, match_calls};
use crate::members::{CommId, CommInstance};
use serde_json::{Value as Json, json};

/// MPI_COMM_WORLD of `n` ranks.
struct World(u32);

impl WorldRanks for World {
    fn world_rank(&self, rank: u32, seq: u64, comm: &Comm, rank_in_comm: u32) -> Option<u32> {
        PredefinedComms
            .world_rank(rank, seq, comm, rank_in_comm)
            .filter(|&r| r < self.0)
    }

    fn comm_instance(&self, _rank: u32, _seq: u64, comm: &Comm) -> Option<CommInstance> {
        (*comm == Comm::World).then_some(CommInstance {
            id: CommId::World,
            size: self.0,
            remote_size: 0,
        })
    }
}

/// One call: function, arguments, start and end in ms.
type Call = (&'static str, Json, i64, i64);

const MS: i64 = 1_000_000;

/// One call site per function.
fn run(ranks: Vec<Vec<Call>>) -> (Vec<RankCalls>, Matching, CallSites) {
    let mut funcs: Vec<&'static str> = Vec::new();
    let mut decoded = Vec::new();
    let mut timed = Vec::new();
    for (r, calls) in ranks.iter().enumerate() {
        let mut rc = RankCalls {
            rank: r as u32,
            ..RankCalls::default()
        };
        for (seq, (func, args, start, end)) in calls.iter().enumerate() {
            let site = match funcs.iter().position(|f| f == func) {
                Some(i) => i,
                None => {
                    funcs.push(func);
                    funcs.len() - 1
                }
            };
            rc.sites.push(site as u32);
            rc.spans.push(Span {
                start_ns: start * MS,
                end_ns: end * MS,
            });
            decoded.push(DecodedCall {
                rank: r as u32,
                seq: seq as u64,
                func,
                ret: 0,
                args: std::sync::Arc::new(args.as_object().expect("object").clone()),
            });
        }
        timed.push(rc);
    }
    let m = match_calls(decoded, &World(ranks.len() as u32));
    (timed, m, CallSites { funcs })
}

fn send(dest: u32, start: i64, end: i64) -> Call {
    (
        "MPI_Send",
        json!({"count": 1, "datatype": "MPI_INT", "dest": dest, "tag": 0, "comm": "MPI_COMM_WORLD"}),
        start,
        end,
    )
}

fn recv(source: u32, start: i64, end: i64) -> Call {
    (
        "MPI_Recv",
        json!({"count": 1, "datatype": "MPI_INT", "source": source, "tag": 0, "comm": "MPI_COMM_WORLD", "status": "MPI_STATUS_IGNORE"}),
        start,
        end,
    )
}

fn coll(func: &'static str, root: Option<u32>, start: i64, end: i64) -> Call {
    let args = match root {
        Some(r) => json!({"root": r, "comm": "MPI_COMM_WORLD"}),
        None => json!({"comm": "MPI_COMM_WORLD"}),
    };
    (func, args, start, end)
}

fn segments(p: &CriticalPath) -> Vec<(u32, &'static str, i64, i64)> {
    p.segments
        .iter()
        .map(|s| {
            let kind = match s.activity {
                Activity::Computation { .. } => "compute",
                Activity::Call { .. } => "mpi",
            };
            (s.rank, kind, s.start_ns / MS, s.end_ns / MS)
        })
        .collect()
}

#[test]
fn a_receive_that_waited_puts_the_senders_computation_on_the_path() {
    // Rank 0 computes 10 ms then sends; rank 1 waits in its receive from 1 ms.
    let (ranks, m, _) = run(vec![
        vec![
            coll("MPI_Init", None, 0, 1),
            send(1, 11, 12),
            coll("MPI_Finalize", None, 12, 13),
        ],
        vec![
            coll("MPI_Init", None, 0, 1),
            recv(0, 1, 12),
            coll("MPI_Finalize", None, 14, 15),
        ],
    ]);
    let p = critical_path(&ranks, &m).unwrap();
    assert_eq!(p.length_ns, 15 * MS);
    assert_eq!(
        segments(&p),
        vec![
            (0, "mpi", 0, 1),
            (0, "compute", 1, 11),
            (1, "mpi", 11, 12),
            (1, "compute", 12, 14),
            (1, "mpi", 14, 15),
        ]
    );
    assert_eq!(p.by_rank_compute_ns, vec![(0, 10 * MS), (1, 2 * MS)]);
}

#[test]
fn a_receive_whose_message_was_already_there_stays_on_its_rank() {
    // Rank 1 computes 10 ms, then finds the early message.
    let (ranks, m, _) = run(vec![
        vec![coll("MPI_Init", None, 0, 1), send(1, 2, 3)],
        vec![coll("MPI_Init", None, 0, 1), recv(0, 11, 12)],
    ]);
    let p = critical_path(&ranks, &m).unwrap();
    assert_eq!(p.length_ns, 12 * MS);
    assert_eq!(
        segments(&p),
        vec![(1, "mpi", 0, 1), (1, "compute", 1, 11), (1, "mpi", 11, 12)]
    );
}

#[test]
fn the_last_to_arrive_at_an_allreduce_is_on_the_path_with_its_waits() {
    // Three ranks compute 2, 9 and 5 ms, then an Allreduce that ends 1 ms
    // after the last arrival (rank 0 leaves 1 ms later still).
    let (ranks, m, _) = run(vec![
        vec![
            coll("MPI_Init", None, 0, 1),
            coll("MPI_Allreduce", None, 3, 12),
        ],
        vec![
            coll("MPI_Init", None, 0, 1),
            coll("MPI_Allreduce", None, 10, 11),
        ],
        vec![
            coll("MPI_Init", None, 0, 1),
            coll("MPI_Allreduce", None, 6, 11),
        ],
    ]);
    let p = critical_path(&ranks, &m).unwrap();
    assert_eq!(p.length_ns, 12 * MS);
    assert_eq!(
        segments(&p),
        vec![(1, "mpi", 0, 1), (1, "compute", 1, 10), (0, "mpi", 10, 12)]
    );
    let w = waits::wait_stats(&ranks, &m);
    assert_eq!(w.instances.len(), 1);
    let i = &w.instances[0];
    // t_start_max = 10, t_end_min = 11.
    assert_eq!(i.exec_ns, MS);
    let got: Vec<_> = i
        .calls
        .iter()
        .map(|c| (c.rank, c.wait_before_ns / MS, c.wait_after_ns / MS))
        .collect();
    assert_eq!(got, vec![(0, 7, 1), (1, 0, 0), (2, 4, 0)]);
    assert_eq!(i.imbalance(), Some(12.0));
    assert_eq!(w.total.wait_ns(), 12 * MS);
    assert_eq!(w.total.exec_ns, 3 * MS);
    assert_eq!(w.by_rank[0].1.imbalance(), Some(8.0));
    // Rank 1 arrived last.
    assert_eq!(w.by_site[0].last_rank, 1);
    assert_eq!(w.by_site[0].instances, 1);
}

#[test]
fn rooted_collectives_depend_on_the_root_only_or_make_the_root_wait() {
    // Bcast from rank 2 (late): ranks 0 and 1 wait for it. Then a Reduce to
    // rank 0, which waits for rank 1's late arrival; rank 2 leaves early.
    let (ranks, m, _) = run(vec![
        vec![
            coll("MPI_Bcast", Some(2), 0, 8),
            coll("MPI_Reduce", Some(0), 9, 21),
        ],
        vec![
            coll("MPI_Bcast", Some(2), 0, 8),
            coll("MPI_Reduce", Some(0), 19, 20),
        ],
        vec![
            coll("MPI_Bcast", Some(2), 7, 8),
            coll("MPI_Reduce", Some(0), 9, 10),
        ],
    ]);
    let p = critical_path(&ranks, &m).unwrap();
    // Rank 2's time before its first call is not on the path: 1 + 11 + 2 ms.
    assert_eq!(p.length_ns, 14 * MS);
    assert_eq!(
        segments(&p),
        vec![(1, "mpi", 7, 8), (1, "compute", 8, 19), (0, "mpi", 19, 21)]
    );
    assert_eq!(p.by_rank_compute_ns, vec![(0, 0), (1, 11 * MS), (2, 0)]);
}

#[test]
fn a_ring_with_a_delay_on_one_rank_carries_the_delay() {
    // Each rank receives from its left and sends right; rank 0 starts the
    // ring after 50 ms of computation, the others after 1 ms.
    let n = 4u32;
    let ranks: Vec<Vec<Call>> = (0..n)
        .map(|r| {
            let left = (r + n - 1) % n;
            let right = (r + 1) % n;
            let init = coll("MPI_Init", None, 0, 1);
            if r == 0 {
                vec![init, send(right, 50, 51), recv(left, 51, 55)]
            } else {
                // Rank r gets the token at 50 + r.
                let at = 50 + i64::from(r);
                vec![init, recv(left, 1, at), send(right, at, at + 1)]
            }
        })
        .collect();
    let (timed, m, _) = run(ranks);
    assert!(m.unmatched.is_empty());
    let p = critical_path(&timed, &m).unwrap();
    assert_eq!(p.length_ns, 55 * MS);
    assert_eq!(p.by_rank_compute_ns[0], (0, 49 * MS));
    assert!(p.by_rank_compute_ns[1..].iter().all(|&(_, c)| c == 0));
    assert_eq!(p.segments.first().map(|s| s.rank), Some(0));
}

#[test]
fn a_heuristic_on_a_bulk_synchronous_run_finds_the_slow_ranks() {
    // Two supersteps: rank 1 slow in the first, rank 0 in the second.
    let (ranks, m, _) = run(vec![
        vec![
            coll("MPI_Barrier", None, 0, 1),
            coll("MPI_Barrier", None, 3, 9),
            coll("MPI_Barrier", None, 19, 20),
        ],
        vec![
            coll("MPI_Barrier", None, 0, 1),
            coll("MPI_Barrier", None, 8, 9),
            coll("MPI_Barrier", None, 12, 20),
        ],
    ]);
    let p = critical_path(&ranks, &m).unwrap();
    assert_eq!(p.by_rank_compute_ns, vec![(0, 10 * MS), (1, 7 * MS)]);
    let h = heuristic::interval_grouping(&ranks, &p);
    assert_eq!(h.groups, 2);
    assert_eq!(h.by_rank_compute_ns, vec![(0, 10 * MS), (1, 7 * MS)]);
    assert_eq!(h.agreement_ns, 17 * MS);
    assert_eq!(h.missed(), 0.0);
    assert_eq!(h.share_deviation(&p), 0.0);
}

#[test]
fn contradicting_dependencies_are_a_cycle_error_not_a_panic() {
    // Rank 1's receive ends before its matching send is even possible:
    // rank 0 sends only after receiving rank 1's later message.
    let (ranks, m, _) = run(vec![
        vec![recv(1, 0, 5), send(1, 5, 6)],
        vec![recv(0, 0, 3), send(0, 3, 4)],
    ]);
    let e = critical_path(&ranks, &m).unwrap_err();
    assert!(e.to_string().contains("cycle"), "{e}");
}
