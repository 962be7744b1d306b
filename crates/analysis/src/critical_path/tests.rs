//! The graph, the longest path and the waits on hand-built, timed calls.

use super::*;
use crate::decode::DecodedCall;
use crate::matching::{Comm, PredefinedComms, WorldRanks, match_calls};
use crate::members::{CommId, CommInstance};
use mpigram_grammar::{Grammar, Run, Symbol};
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

/// As if each function were called from one place of the program (call
/// site `R0:i` for the i-th function seen).
fn run(ranks: Vec<Vec<Call>>) -> (Vec<RankCalls>, Matching, CallSites) {
    let mut funcs: Vec<&'static str> = Vec::new();
    let (timed, m) = timed(&ranks, |_, _, func| {
        let site = funcs.iter().position(|f| *f == func).unwrap_or_else(|| {
            funcs.push(func);
            funcs.len() - 1
        });
        site as u32
    });
    let sites = funcs
        .into_iter()
        .zip(0..)
        .map(|(func, position)| Some((CallSite { rule: 0, position }, func)))
        .collect();
    (timed, m, CallSites { sites })
}

/// The calls of each rank (stream) of `grammar`, whose terminals are
/// signatures of `funcs`, with their grammar call sites.
fn run_in(
    grammar: &Grammar,
    funcs: &[&'static str],
    ranks: Vec<Vec<Call>>,
) -> (Vec<RankCalls>, Matching, CallSites) {
    let sites = Sites::new(grammar);
    let calls: Vec<Vec<u32>> = (0..ranks.len() as u32)
        .map(|r| sites.calls(r).unwrap())
        .collect();
    let (timed, m) = timed(&ranks, |rank, seq, func| {
        let site = calls[rank as usize][seq];
        assert_eq!(
            func,
            funcs[sites.signature(sites.numbered(site).unwrap()).unwrap() as usize]
        );
        site
    });
    (timed, m, CallSites::new(&sites, funcs))
}

/// Each rank's calls timed (with `site` of rank, call, function) and matched.
fn timed(
    ranks: &[Vec<Call>],
    mut site: impl FnMut(u32, usize, &'static str) -> u32,
) -> (Vec<RankCalls>, Matching) {
    let mut decoded = Vec::new();
    let mut timed = Vec::new();
    for (r, calls) in ranks.iter().enumerate() {
        let mut rc = RankCalls {
            rank: r as u32,
            ..RankCalls::default()
        };
        for (seq, (func, args, start, end)) in calls.iter().enumerate() {
            rc.sites.push(site(r as u32, seq, func));
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
    (timed, m)
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

/// Three ranks compute 2, 9 and 5 ms, then an Allreduce that ends 1 ms
/// after the last arrival (rank 0 leaves 1 ms later still).
fn three_ranks_at_an_allreduce() -> Vec<Vec<Call>> {
    vec![
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
    ]
}

#[test]
fn the_last_to_arrive_at_an_allreduce_is_on_the_path_with_its_waits() {
    let (ranks, m, sites) = run(three_ranks_at_an_allreduce());
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
    // Rank 1 arrived last at the one Allreduce call site.
    assert_eq!(w.by_site.len(), 1);
    assert_eq!(sites.name(w.by_site[0].site), "MPI_Allreduce R0:1");
    assert_eq!(w.by_site[0].last_rank, 1);
    assert_eq!(w.by_site[0].instances, 1);
}

/// A killed rank whose last calls have no times (its crash journal, of an
/// older mpigram, kept none after its last checkpoint): the analyses take
/// what is timed and count the dependencies left out.
#[test]
fn calls_without_times_are_counted_as_untimed_dependencies() {
    let (mut ranks, m, _) = run(three_ranks_at_an_allreduce());
    ranks[0].spans.truncate(1);
    let p = critical_path(&ranks, &m).unwrap();
    // Rank 0's Allreduce, into and out of the collective.
    assert_eq!(p.untimed_dependencies, 2);
    // Rank 1 still arrives last; the path ends at the latest timed end.
    assert_eq!(p.length_ns, 11 * MS);
    // The collective instance has an untimed call: no waits from it.
    let w = waits::wait_stats(&ranks, &m);
    assert_eq!((w.instances.len(), w.untimed), (0, 1));
}

#[test]
fn ranks_meeting_at_a_collective_from_different_call_sites_count_it_at_each() {
    // Ranks 0 and 1 share a rule (R0), rank 2 has its own (R1): one
    // Allreduce instance at two call sites. Times as above: rank 1 last.
    let grammar = Grammar::new(
        vec![
            vec![Run::terminal(0), Run::terminal(1)],
            vec![Run::terminal(0), Run::terminal(1)],
        ],
        vec![(0, 0), (1, 0), (2, 1)],
    )
    .unwrap();
    let (ranks, m, sites) = run_in(
        &grammar,
        &["MPI_Init", "MPI_Allreduce"],
        three_ranks_at_an_allreduce(),
    );
    let w = waits::wait_stats(&ranks, &m);
    let by_site: Vec<_> = w
        .by_site
        .iter()
        .map(|c| {
            (
                sites.name(c.site),
                c.waits.wait_ns() / MS,
                c.instances,
                c.last_rank,
                c.last_count,
            )
        })
        .collect();
    assert_eq!(
        by_site,
        [
            ("MPI_Allreduce R0:1".to_owned(), 8, 1, 1, 1),
            ("MPI_Allreduce R1:1".to_owned(), 4, 1, 1, 1)
        ]
    );
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

#[test]
fn one_function_called_in_two_places_of_the_program_is_two_call_sites() {
    // Ping-pong: rank 0 sends once before its loop and once in each of
    // two iterations (receive, send), computing after every send; rank 1
    // receives, then loops (send, receive).
    //   signatures: 0 Init, 1 Send to 1, 2 Recv from 1, 3 Finalize,
    //               4 Recv from 0, 5 Send to 0
    //   R0 = 2 1; R1 = 0 1 R0^2 3 (rank 0); R2 = 5 4; R3 = 0 4 R2^2 3 (rank 1)
    let funcs = [
        "MPI_Init",
        "MPI_Send",
        "MPI_Recv",
        "MPI_Finalize",
        "MPI_Recv",
        "MPI_Send",
    ];
    let rule = |r| Run::new(Symbol::Rule(r), 2);
    let t = Run::terminal;
    let grammar = Grammar::new(
        vec![
            vec![t(2), t(1)],
            vec![t(0), t(1), rule(0), t(3)],
            vec![t(5), t(4)],
            vec![t(0), t(4), rule(2), t(3)],
        ],
        vec![(0, 1), (1, 3)],
    )
    .unwrap();
    let init = || coll("MPI_Init", None, 0, 1);
    let fin = |start| coll("MPI_Finalize", None, start, start + 1);
    let (ranks, m, sites) = run_in(
        &grammar,
        &funcs,
        vec![
            vec![
                init(),
                send(1, 1, 2),
                recv(1, 10, 11),
                send(1, 11, 12),
                recv(1, 20, 21),
                send(1, 21, 22),
                fin(25),
            ],
            vec![
                init(),
                recv(0, 1, 3),
                send(0, 4, 5),
                recv(0, 5, 13),
                send(0, 13, 14),
                recv(0, 14, 23),
                fin(23),
            ],
        ],
    );
    assert!(m.unmatched.is_empty());
    let p = critical_path(&ranks, &m).unwrap();
    assert_eq!(p.length_ns, 26 * MS);
    assert_eq!(p.by_rank_compute_ns, vec![(0, 19 * MS), (1, 0)]);
    // Rank 0's computation after its sends: 8 ms after the one before the
    // loop (R1:1), 8 + 3 ms after the loop's (R0:1, both iterations).
    let after: Vec<(String, i64, u64)> = p
        .sites
        .iter()
        .filter(|t| t.computation)
        .map(|t| (sites.name(t.site), t.ns / MS, t.count))
        .collect();
    assert_eq!(
        after,
        [
            ("MPI_Send R0:1".to_owned(), 11, 2),
            ("MPI_Send R1:1".to_owned(), 8, 1)
        ]
    );
    // Ranks sharing no rule share no call site: rank 1's sends are elsewhere.
    assert_eq!(sites.name(ranks[1].sites[2]), "MPI_Send R2:0");
    assert_eq!(sites.site(ranks[1].sites[4]), sites.site(ranks[1].sites[2]));

    // The report names them so.
    let a = analyse_calls(ranks, &m, sites, false).unwrap();
    let mut out = Vec::new();
    a.write_json(&mut out).unwrap();
    let j: Json = serde_json::from_slice(&out).unwrap();
    let before_loop = j["call_sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "compute_after" && s["site"] == "R1:1")
        .unwrap();
    assert_eq!(before_loop["func"], "MPI_Send");
    assert_eq!(
        (&before_loop["rule"], &before_loop["position"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(before_loop["time_s"], json!(0.008));
    let segments = j["segments"].as_array().unwrap();
    let after: Vec<(&Json, &Json)> = segments
        .iter()
        .filter(|s| s["kind"] == "compute")
        .map(|s| (&s["after_seq"], &s["after_site"]))
        .collect();
    assert_eq!(
        after,
        [
            (&json!(1), &json!("R1:1")),
            (&json!(3), &json!("R0:1")),
            (&json!(5), &json!("R0:1"))
        ]
    );
    let first_send = segments.iter().find(|s| s["seq"] == 1).unwrap();
    assert_eq!(
        (&first_send["func"], &first_send["site"]),
        (&json!("MPI_Send"), &json!("R1:1"))
    );
    let text = a.to_text();
    assert!(
        text.contains("of the path is computation after MPI_Send R0:1\n"),
        "{text}"
    );
    assert!(
        text.contains("computation after call 1 (MPI_Send R1:1)"),
        "{text}"
    );
}

/// The streaming analysis against the analysis of the calls in memory,
/// on a recorded trace named by `MPIGRAM_COMPARE_TRACE` (a debugging aid).
#[test]
fn streaming_agrees_with_in_memory_on_a_recorded_trace() {
    let Ok(dir) = std::env::var("MPIGRAM_COMPARE_TRACE") else {
        return;
    };
    let trace = mpigram_trace::Trace::open(std::path::Path::new(&dir)).unwrap();
    let a = analyse(&trace, Source::Lossless, true).unwrap();
    let timelines = timelines(&trace, Source::Lossless).unwrap();
    let m = crate::matching::match_trace(&trace, &crate::matching::world_ranks(&trace)).unwrap();
    let b = analyse_calls(timelines, &m, a.sites.clone(), true).unwrap();
    let json = |a: &Analysis| {
        let mut out = Vec::new();
        a.write_json(&mut out).unwrap();
        serde_json::from_slice::<Json>(&out).unwrap()
    };
    let (ja, jb) = (json(&a), json(&b));
    for key in ja.as_object().unwrap().keys() {
        assert_eq!(ja[key], jb[key], "{key}");
    }
}

/// The waits of each process of the one collective of `calls` (after
/// MPI_Init), in ms: (rank, wait-before, wait-after), and its execution.
fn collective_waits(calls: Vec<Vec<Call>>) -> (Vec<(u32, i64, i64)>, i64, Analysis) {
    let (ranks, m, sites) = run(calls);
    let a = analyse_calls(ranks, &m, sites, false).unwrap();
    a.check().unwrap();
    let [i] = &a.waits.instances[..] else {
        panic!("one collective instance")
    };
    let got = i
        .calls
        .iter()
        .map(|c| (c.rank, c.wait_before_ns / MS, c.wait_after_ns / MS))
        .collect();
    (got, i.exec_ns / MS, a)
}

/// A broadcast whose root leaves before the others arrive, as MPICH's
/// broadcast lets it (NPB LU's input broadcasts right after MPI_Init on 16
/// ranks): the others depend on the root alone, and nobody waited. Taken
/// as N×N, its execution time was -6 ms, which made every rank's imbalance
/// undefined.
#[test]
fn a_broadcast_whose_root_left_first_has_no_waits_and_no_negative_time() {
    let bcast = |start, end| coll("MPI_Bcast", Some(0), start, end);
    let init = || coll("MPI_Init", None, 0, 1);
    let (waits, exec, a) = collective_waits(vec![
        vec![init(), bcast(1, 2)],
        vec![init(), bcast(5, 6)],
        vec![init(), bcast(8, 9)],
    ]);
    assert_eq!(waits, vec![(0, 0, 0), (1, 0, 0), (2, 0, 0)]);
    assert_eq!(exec, 1);
    assert_eq!(a.waits.total.exec_ns, 3 * MS);
    assert!(
        a.waits
            .by_rank
            .iter()
            .all(|(_, w)| w.imbalance() == Some(0.0))
    );
}

/// A broadcast whose root arrives last: each rank waits for the root, not
/// for the last of the others.
#[test]
fn at_a_late_broadcast_each_rank_waits_for_the_root_only() {
    let bcast = |start, end| coll("MPI_Bcast", Some(0), start, end);
    let init = || coll("MPI_Init", None, 0, 1);
    let (waits, exec, _) = collective_waits(vec![
        vec![init(), bcast(8, 9)],
        vec![init(), bcast(2, 9)],
        vec![init(), bcast(4, 10)],
    ]);
    assert_eq!(waits, vec![(0, 0, 0), (1, 6, 0), (2, 4, 1)]);
    assert_eq!(exec, 1);
}

/// At a reduce only the root waits for the others; they leave at once.
#[test]
fn at_a_reduce_only_the_root_waits_for_the_last() {
    let reduce = |start, end| coll("MPI_Reduce", Some(2), start, end);
    let init = || coll("MPI_Init", None, 0, 1);
    let (waits, exec, _) = collective_waits(vec![
        vec![init(), reduce(3, 4)],
        vec![init(), reduce(9, 10)],
        vec![init(), reduce(2, 11)],
    ]);
    assert_eq!(waits, vec![(0, 0, 0), (1, 0, 0), (2, 7, 1)]);
    assert_eq!(exec, 1);
}

/// The paper's numbers at an N×N collective stay as they were, and pass
/// the checks.
#[test]
fn the_allreduce_waits_pass_the_checks() {
    let (waits, exec, _) = collective_waits(three_ranks_at_an_allreduce());
    assert_eq!(waits, vec![(0, 7, 1), (1, 0, 0), (2, 4, 0)]);
    assert_eq!(exec, 1);
}
