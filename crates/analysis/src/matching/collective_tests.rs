//! Collective and one-sided matching on hand-built call lists.

use super::collectives::{CollectiveKind, CollectiveReason, Participant};
use super::*;
use crate::members::CommId;
use serde_json::json;

use crate::decode::test_call as call;

/// A world of three ranks. comm1 is {0, 1, 2} (instance 7) until call 10,
/// then, on ranks 0 and 1 only, a new comm1 {1, 0} (instance 8).
struct Three;

impl WorldRanks for Three {
    fn world_rank(&self, rank: u32, seq: u64, comm: &Comm, rank_in_comm: u32) -> Option<u32> {
        match comm {
            Comm::World => (rank_in_comm < 3).then_some(rank_in_comm),
            Comm::User(1) if seq < 10 => (rank_in_comm < 3).then_some(rank_in_comm),
            Comm::User(1) if rank < 2 => [1, 0].get(rank_in_comm as usize).copied(),
            _ => None,
        }
    }

    fn comm_instance(&self, rank: u32, seq: u64, comm: &Comm) -> Option<CommInstance> {
        let (id, size) = match comm {
            Comm::World => (CommId::World, 3),
            Comm::User(1) if seq < 10 => (created(7), 3),
            Comm::User(1) if rank < 2 => (created(8), 2),
            _ => return None,
        };
        Some(CommInstance {
            id,
            size,
            remote_size: 0,
        })
    }
}

fn created(instance: u64) -> CommId {
    CommId::Created {
        instance,
        leader: 0,
    }
}

fn run(calls: Vec<DecodedCall>) -> Matching {
    match_calls(calls, &Three)
}

fn on_all(make: impl Fn(u32) -> Vec<DecodedCall>) -> Vec<DecodedCall> {
    (0..3).flat_map(make).collect()
}

fn participants(seqs: &[(u64, Option<u64>)]) -> Vec<Participant> {
    seqs.iter()
        .enumerate()
        .map(|(rank, &(post, completion))| Participant {
            rank: rank as u32,
            post,
            completion,
            post_at: CallAt::default(),
            completion_at: completion.map(|_| CallAt::default()),
        })
        .collect()
}

#[test]
fn the_kth_collective_on_each_rank_is_one_instance() {
    // Rank 2 calls its Bcast later than the others: still the second collective.
    let m = run(on_all(|r| {
        let late = u64::from(r == 2) * 3;
        vec![
            call(
                r,
                1,
                "MPI_Allreduce",
                json!({"count": 1, "comm": "MPI_COMM_WORLD"}),
            ),
            call(
                r,
                2 + late,
                "MPI_Bcast",
                json!({"count": 1, "root": 2, "comm": "MPI_COMM_WORLD"}),
            ),
            call(
                r,
                6 + late,
                "MPI_Reduce",
                json!({"count": 1, "root": 0, "comm": "MPI_COMM_WORLD"}),
            ),
        ]
    }));
    let c = &m.collectives;
    assert!(c.unmatched.is_empty(), "{:?}", c.unmatched);
    let got: Vec<_> = c
        .instances
        .iter()
        .map(|i| (i.func, i.kind, i.root, i.participants.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "MPI_Allreduce",
                CollectiveKind::AllToAll,
                None,
                participants(&[(1, Some(1)); 3])
            ),
            (
                "MPI_Bcast",
                CollectiveKind::RootToAll,
                Some(2),
                participants(&[(2, Some(2)), (2, Some(2)), (5, Some(5))])
            ),
            (
                "MPI_Reduce",
                CollectiveKind::AllToRoot,
                Some(0),
                participants(&[(6, Some(6)), (6, Some(6)), (9, Some(9))])
            ),
        ]
    );
}

#[test]
fn non_blocking_collectives_complete_at_their_wait() {
    let m = run(on_all(|r| {
        vec![
            call(
                r,
                1,
                "MPI_Iallreduce",
                json!({"comm": "MPI_COMM_WORLD", "request": "req0"}),
            ),
            call(
                r,
                2,
                "MPI_Ibarrier",
                json!({"comm": "MPI_COMM_WORLD", "request": "req1"}),
            ),
            call(
                r,
                3,
                "MPI_Test",
                json!({"request": "req1", "flag": 0, "status": "MPI_STATUS_IGNORE"}),
            ),
            call(
                r,
                4,
                "MPI_Waitall",
                json!({"count": 2, "array_of_requests": ["req0", "req1"], "array_of_statuses": "MPI_STATUSES_IGNORE"}),
            ),
        ]
    }));
    let c = &m.collectives;
    assert!(c.unmatched.is_empty());
    assert_eq!(c.instances.len(), 2);
    assert_eq!(
        c.instances[0].participants,
        participants(&[(1, Some(4)); 3])
    );
    assert_eq!(c.instances[1].func, "MPI_Ibarrier");
    assert_eq!(
        c.instances[1].participants,
        participants(&[(2, Some(4)); 3])
    );
}

#[test]
fn each_start_of_a_persistent_collective_is_an_instance() {
    let m = run(on_all(|r| {
        vec![
            call(
                r,
                1,
                "MPI_Bcast_init",
                json!({"root": 1, "comm": "MPI_COMM_WORLD", "request": "req0"}),
            ),
            call(r, 2, "MPI_Start", json!({"request": "req0"})),
            call(
                r,
                3,
                "MPI_Wait",
                json!({"request": "req0", "status": "MPI_STATUS_IGNORE"}),
            ),
            call(
                r,
                4,
                "MPI_Startall",
                json!({"count": 1, "array_of_requests": ["req0"]}),
            ),
            call(
                r,
                5,
                "MPI_Wait",
                json!({"request": "req0", "status": "MPI_STATUS_IGNORE"}),
            ),
            call(r, 6, "MPI_Request_free", json!({"request": "req0"})),
        ]
    }));
    let c = &m.collectives;
    assert!(c.unmatched.is_empty());
    let got: Vec<_> = c
        .instances
        .iter()
        .map(|i| (i.func, i.kind, i.root, i.participants[2]))
        .collect();
    let p = |post, completion: Option<u64>| Participant {
        rank: 2,
        post,
        completion,
        post_at: CallAt::default(),
        completion_at: completion.map(|_| CallAt::default()),
    };
    assert_eq!(
        got,
        vec![
            ("MPI_Bcast_init", CollectiveKind::Setup, None, p(1, Some(1))),
            (
                "MPI_Start",
                CollectiveKind::RootToAll,
                Some(1),
                p(2, Some(3))
            ),
            (
                "MPI_Startall",
                CollectiveKind::RootToAll,
                Some(1),
                p(4, Some(5))
            ),
        ]
    );
}

#[test]
fn a_communicator_id_created_again_is_another_instance() {
    let mut calls = on_all(|r| vec![call(r, 2, "MPI_Barrier", json!({"comm": "comm1"}))]);
    // comm1 again, on ranks 0 and 1: its root 0 is world rank 1.
    for r in 0..2 {
        calls.push(call(
            r,
            11,
            "MPI_Bcast",
            json!({"root": 0, "comm": "comm1"}),
        ));
    }
    calls.push(call(2, 11, "MPI_Barrier", json!({"comm": "comm9"})));
    let m = match_calls(calls, &Three);
    let c = &m.collectives;
    assert_eq!(c.instances.len(), 2);
    assert_eq!(c.instances[0].comm, created(7));
    assert_eq!(c.instances[0].participants.len(), 3);
    assert_eq!(c.instances[1].comm, created(8));
    assert_eq!(c.instances[1].root, Some(1));
    assert_eq!(c.instances[1].participants.len(), 2);
    let unmatched: Vec<_> = c
        .unmatched
        .iter()
        .map(|u| (u.rank, u.post, u.reason.clone()))
        .collect();
    assert_eq!(
        unmatched,
        vec![(2, 11, CollectiveReason::UnknownComm(Comm::User(9)))]
    );
}

#[test]
fn a_collective_that_not_every_member_made_is_reported() {
    let mut calls = on_all(|r| vec![call(r, 1, "MPI_Barrier", json!({"comm": "MPI_COMM_WORLD"}))]);
    calls.push(call(
        0,
        2,
        "MPI_Allreduce",
        json!({"comm": "MPI_COMM_WORLD"}),
    ));
    calls.push(call(
        1,
        2,
        "MPI_Allreduce",
        json!({"comm": "MPI_COMM_WORLD"}),
    ));
    // Ranks that name different roots.
    calls.push(call(
        0,
        3,
        "MPI_Bcast",
        json!({"root": 0, "comm": "MPI_COMM_WORLD"}),
    ));
    calls.push(call(
        1,
        3,
        "MPI_Bcast",
        json!({"root": 1, "comm": "MPI_COMM_WORLD"}),
    ));
    calls.push(call(
        2,
        2,
        "MPI_Bcast",
        json!({"root": 1, "comm": "MPI_COMM_WORLD"}),
    ));
    let m = match_calls(calls, &Three);
    let c = &m.collectives;
    assert_eq!(c.instances.len(), 1);
    let unmatched: Vec<_> = c
        .unmatched
        .iter()
        .map(|u| (u.rank, u.func, u.reason.clone()))
        .collect();
    let missing = CollectiveReason::MissingMembers {
        expected: 3,
        found: 2,
    };
    // Rank 2's Bcast is its second collective: it pairs with the Allreduces.
    let mismatch = CollectiveReason::Mismatch;
    assert_eq!(
        unmatched,
        vec![
            (0, "MPI_Allreduce", mismatch.clone()),
            (0, "MPI_Bcast", missing.clone()),
            (1, "MPI_Allreduce", mismatch.clone()),
            (1, "MPI_Bcast", missing.clone()),
            (2, "MPI_Bcast", mismatch.clone()),
        ]
    );
}

#[test]
fn fences_are_collectives_on_the_window_and_pscw_epochs_pair() {
    let m = run(on_all(|r| {
        let (left, right) = ((r + 2) % 3, (r + 1) % 3);
        vec![
            call(
                r,
                1,
                "MPI_Win_create",
                json!({"comm": "MPI_COMM_WORLD", "win": "win0"}),
            ),
            call(r, 2, "MPI_Win_fence", json!({"assert": 0, "win": "win0"})),
            call(
                r,
                3,
                "MPI_Comm_group",
                json!({"comm": "MPI_COMM_WORLD", "group": "group0"}),
            ),
            call(
                r,
                4,
                "MPI_Group_incl",
                json!({"group": "group0", "n": 1, "ranks": [left], "newgroup": "group1"}),
            ),
            call(
                r,
                5,
                "MPI_Group_excl",
                json!({"group": "group0", "n": 2, "ranks": [r, left], "newgroup": "group2"}),
            ),
            call(
                r,
                6,
                "MPI_Win_post",
                json!({"group": "group1", "assert": 0, "win": "win0"}),
            ),
            call(
                r,
                7,
                "MPI_Win_start",
                json!({"group": "group2", "assert": 0, "win": "win0"}),
            ),
            call(r, 8, "MPI_Win_complete", json!({"win": "win0"})),
            call(r, 9, "MPI_Win_wait", json!({"win": "win0"})),
            call(
                r,
                10,
                "MPI_Win_lock",
                json!({"lock_type": "MPI_LOCK_EXCLUSIVE", "rank": 0, "assert": 0, "win": "win0"}),
            ),
            call(r, 11, "MPI_Win_unlock", json!({"rank": 0, "win": "win0"})),
            call(
                r,
                12,
                "MPI_Win_lock",
                json!({"lock_type": "MPI_LOCK_SHARED", "rank": right, "assert": 0, "win": "win0"}),
            ),
            call(r, 13, "MPI_Win_free", json!({"win": "win0"})),
        ]
    }));
    let c = &m.collectives;
    assert!(c.unmatched.is_empty(), "{:?}", c.unmatched);
    let funcs: Vec<_> = c
        .instances
        .iter()
        .map(|i| (i.func, i.participants.len()))
        .collect();
    assert_eq!(
        funcs,
        vec![
            ("MPI_Win_create", 3),
            ("MPI_Win_fence", 3),
            ("MPI_Win_free", 3)
        ]
    );
    let o = &m.one_sided;
    let pairs: Vec<_> = o
        .exposures
        .iter()
        .map(|e| {
            (
                e.window, e.origin, e.target, e.start, e.complete, e.post, e.wait,
            )
        })
        .collect();
    assert_eq!(
        pairs,
        vec![
            (0, 0, 1, 7, Some(8), 6, Some(9)),
            (0, 1, 2, 7, Some(8), 6, Some(9)),
            (0, 2, 0, 7, Some(8), 6, Some(9)),
        ]
    );
    let locks: Vec<_> = o
        .locks
        .iter()
        .map(|l| (l.origin, l.target, l.exclusive, l.lock, l.unlock))
        .collect();
    assert_eq!(
        locks,
        vec![
            (0, Some(0), true, 10, 11),
            (1, Some(0), true, 10, 11),
            (2, Some(0), true, 10, 11)
        ]
    );
    // The shared locks are never released.
    let open: Vec<_> = o
        .unmatched
        .iter()
        .map(|u| (u.rank, u.seq, u.reason.clone()))
        .collect();
    assert_eq!(
        open,
        (0..3)
            .map(|r| (r, 12, one_sided::EpochReason::NotClosed))
            .collect::<Vec<_>>()
    );
}
