//! Message matching on traces of real MPI programs.

use mpigram_analysis::matching::{
    Comm, Direction, Matching, Peer, PredefinedComms, Reason, match_trace,
};
use mpigram_testkit::{compile, mpi_available};
use mpigram_trace::Trace;
use std::process::Command;

/// Traces `program ARGS` on `ranks` ranks with `mpigram run`.
fn traced(program: &str, ranks: u32, args: &[&str]) -> (tempfile::TempDir, Trace) {
    mpi_available().unwrap();
    let exe = compile(program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mpigram"))
        .args(["run", "-o"])
        .arg(dir.path())
        .args(["-n", &ranks.to_string(), "--"])
        .arg(&exe)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = Trace::open(dir.path()).unwrap();
    (dir, trace)
}

/// Every match joins a send and a receive whose envelopes agree, and
/// every send to a real rank is matched exactly once.
fn assert_consistent(program: &str, m: &Matching) {
    let mut matched_sends = vec![0; m.operations.len()];
    for x in &m.matches {
        let (send, recv) = (&m.operations[x.send], &m.operations[x.recv]);
        assert_eq!(send.direction, Direction::Send, "{program}: {x:?}");
        assert_eq!(recv.direction, Direction::Recv, "{program}: {x:?}");
        assert_eq!(send.comm, recv.comm, "{program}: {send:?} {recv:?}");
        assert_eq!(
            send.peer,
            Peer::Rank(recv.rank),
            "{program}: {send:?} {recv:?}"
        );
        match &recv.status {
            Some(s) if matches!(s.source, Peer::Rank(_)) => {
                assert_eq!(s.source, Peer::Rank(send.rank), "{program}: {recv:?}");
                assert_eq!(s.tag, send.tag, "{program}: {recv:?}");
            }
            _ => {
                assert!(
                    matches!(recv.peer, Peer::Rank(r) if r == send.rank) || recv.peer == Peer::Any
                );
                assert!(
                    recv.tag.is_none() || recv.tag == send.tag,
                    "{program}: {recv:?}"
                );
            }
        }
        // A message is received after it is sent was posted; the
        // completion follows the post on each side.
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
    ];
    for &(program, ranks, args) in cases {
        let (_dir, trace) = traced(program, ranks, args);
        let m = match_trace(&trace, &PredefinedComms).unwrap();
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
        assert_consistent(program, &m);
    }
}

#[test]
fn cancelled_receives_and_other_communicators_are_reported_not_dropped() {
    let (_dir, trace) = traced("free_cancel", 2, &[]);
    let m = match_trace(&trace, &PredefinedComms).unwrap();
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

    // threads.c sends on duplicated communicators: without their
    // membership these are unmatched, and say why.
    let (_dir, trace) = traced("threads", 2, &[]);
    let m = match_trace(&trace, &PredefinedComms).unwrap();
    let on_user_comms: Vec<_> = m
        .unmatched
        .iter()
        .filter(|u| matches!(m.operations[u.operation].comm, Some(Comm::User(_))))
        .collect();
    assert!(!on_user_comms.is_empty());
    assert!(
        on_user_comms
            .iter()
            .all(|u| matches!(u.reason, Reason::UnknownRank { .. })),
        "{on_user_comms:?}"
    );
}
