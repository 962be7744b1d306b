//! Message matching on traces of real MPI programs.

mod common;

use common::{mpigram, text};
use mpigram_analysis::matching::{
    Comm, Direction, Matching, Operation, Peer, PredefinedComms, Reason, WorldRanks, match_trace,
    world_ranks,
};
use mpigram_testkit::{compile, mpi_available};
use mpigram_trace::Trace;

/// Traces `program ARGS` on `ranks` ranks with `mpigram run`.
fn traced(program: &str, ranks: u32, args: &[&str]) -> (tempfile::TempDir, Trace) {
    mpi_available().unwrap();
    let exe = compile(program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = ranks.to_string();
    let mut run = vec!["run", "-o", dir.path().to_str().unwrap(), "-n", &n, "--"];
    run.push(exe.to_str().unwrap());
    run.extend(args);
    let out = mpigram(&run);
    assert!(out.status.success(), "{program}: {}", text(&out.stderr));
    let trace = Trace::open(dir.path()).unwrap();
    (dir, trace)
}

/// Every match joins a send and a receive whose envelopes agree (ranks
/// translated to world ranks), and every send to a real rank is matched
/// exactly once.
fn assert_consistent(program: &str, m: &Matching, ranks: &dyn WorldRanks) {
    let world = |op: &Operation, peer: &Peer| match peer {
        Peer::Rank(r) => ranks.world_rank(op.rank, op.post, op.comm.as_ref().unwrap(), *r),
        _ => None,
    };
    let mut matched_sends = vec![0; m.operations.len()];
    for x in &m.matches {
        let (send, recv) = (&m.operations[x.send], &m.operations[x.recv]);
        assert_eq!(send.direction, Direction::Send, "{program}: {x:?}");
        assert_eq!(recv.direction, Direction::Recv, "{program}: {x:?}");
        assert_eq!(send.comm, recv.comm, "{program}: {send:?} {recv:?}");
        assert_eq!(
            world(send, &send.peer),
            Some(recv.rank),
            "{program}: {send:?} {recv:?}"
        );
        match &recv.status {
            Some(s) if matches!(s.source, Peer::Rank(_)) => {
                assert_eq!(
                    world(recv, &s.source),
                    Some(send.rank),
                    "{program}: {recv:?}"
                );
                assert_eq!(s.tag, send.tag, "{program}: {recv:?}");
            }
            _ => {
                let from = world(recv, &recv.peer);
                assert!(
                    from == Some(send.rank) || recv.peer == Peer::Any,
                    "{program}: {recv:?}"
                );
                assert!(
                    recv.tag.is_none() || recv.tag == send.tag,
                    "{program}: {recv:?}"
                );
            }
        }
        for op in [send, recv] {
            assert!(
                op.completion.is_none_or(|c| c >= op.post),
                "{program}: {op:?}"
            );
        }
        matched_sends[x.send] += 1;
    }
    for (i, op) in m.operations.iter().enumerate() {
        if op.direction == Direction::Send && op.peer != Peer::ProcNull {
            assert_eq!(matched_sends[i], 1, "{program}: send {op:?}");
        }
    }
}

#[test]
fn every_message_of_the_point_to_point_programs_is_matched() {
    let cases: &[(&str, u32, &[&str])] = &[
        ("p2p_blocking", 3, &[]),
        ("p2p_nonblocking", 3, &[]),
        ("wildcard", 3, &[]),
        ("completion", 2, &[]),
        ("persistent", 3, &[]),
        ("probe", 2, &[]),
        ("proc_null", 2, &[]),
        ("halo2d", 4, &["20"]),
        ("halo3d", 2, &["5"]),
        ("threads", 2, &[]),
        ("intercomm", 3, &[]),
    ];
    for &(program, ranks, args) in cases {
        let (_dir, trace) = traced(program, ranks, args);
        let m = match_trace(&trace, &world_ranks(&trace)).unwrap();
        let sends = m
            .operations
            .iter()
            .filter(|op| op.direction == Direction::Send && op.peer != Peer::ProcNull)
            .count();
        assert!(
            m.unmatched.is_empty(),
            "{program}: {:?}",
            m.unmatched
                .iter()
                .take(5)
                .map(|u| (&m.operations[u.operation], u.reason.to_string()))
                .collect::<Vec<_>>()
        );
        assert_eq!(m.matches.len(), sends, "{program}");
        if program != "proc_null" {
            assert!(sends > 0, "{program} sends messages");
        }
        assert_consistent(program, &m, &world_ranks(&trace));
    }
}

#[test]
fn the_halo_exchange_on_a_cartesian_communicator_matches_every_neighbour_message() {
    let iterations = 20;
    let (_dir, trace) = traced("halo2d", 4, &[&iterations.to_string()]);
    let m = match_trace(&trace, &world_ranks(&trace)).unwrap();
    assert!(m.unmatched.is_empty(), "{:?}", m.unmatched.first());
    // A 2x2 grid, not periodic: each rank has two neighbours and sends one
    // message to each per iteration, all Isend/Irecv completed by Waitall.
    let halo: Vec<_> = m
        .matches
        .iter()
        .filter(|x| m.operations[x.send].func == "MPI_Isend")
        .collect();
    assert_eq!(halo.len(), 4 * 2 * iterations);
    let mut pairs: Vec<(u32, u32)> = halo
        .iter()
        .map(|x| (m.operations[x.send].rank, m.operations[x.recv].rank))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    // Neighbours differ in one grid coordinate: never the diagonal ones.
    assert_eq!(
        pairs,
        vec![
            (0, 1),
            (0, 2),
            (1, 0),
            (1, 3),
            (2, 0),
            (2, 3),
            (3, 1),
            (3, 2)
        ]
    );
    for x in &halo {
        let (send, recv) = (&m.operations[x.send], &m.operations[x.recv]);
        assert!(matches!(send.comm, Some(Comm::User(_))), "{send:?}");
        assert_eq!(recv.func, "MPI_Irecv");
        assert!(send.completion.unwrap() > send.post);
        assert!(recv.completion.unwrap() > recv.post);
    }
    // Without the communicator's membership, they are unmatched, and say why.
    let unknown = match_trace(&trace, &PredefinedComms).unwrap();
    let on_cart = unknown
        .unmatched
        .iter()
        .filter(|u| matches!(u.reason, Reason::UnknownRank { .. }))
        .count();
    assert_eq!(on_cart, 2 * halo.len());
}

#[test]
fn cancelled_receives_are_reported_not_dropped() {
    let (_dir, trace) = traced("free_cancel", 2, &[]);
    let m = match_trace(&trace, &world_ranks(&trace)).unwrap();
    let cancelled = m
        .unmatched
        .iter()
        .filter(|u| u.reason == Reason::Cancelled)
        .count();
    assert!(cancelled > 0, "{:?}", m.unmatched);
    assert!(
        m.unmatched.iter().all(|u| u.reason == Reason::Cancelled),
        "{:?}",
        m.unmatched
    );
}
