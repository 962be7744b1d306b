//! Matching on hand-built call lists.

use super::*;
use serde_json::{Value as Json, json};

use crate::decode::test_call as call;

fn send(rank: u32, seq: u64, dest: Json, tag: i64) -> DecodedCall {
    call(
        rank,
        seq,
        "MPI_Send",
        json!({"buf": "seg1+0", "count": 4, "datatype": "MPI_INT", "dest": dest, "tag": tag, "comm": "MPI_COMM_WORLD"}),
    )
}

fn recv(rank: u32, seq: u64, source: Json, tag: Json, status: Json) -> DecodedCall {
    call(
        rank,
        seq,
        "MPI_Recv",
        json!({"buf": "seg2+0", "count": 4, "datatype": "MPI_INT", "source": source, "tag": tag, "comm": "MPI_COMM_WORLD", "status": status}),
    )
}

fn isend(rank: u32, seq: u64, dest: u32, tag: i64, request: &str) -> DecodedCall {
    call(
        rank,
        seq,
        "MPI_Isend",
        json!({"buf": "seg1+0", "count": 2, "datatype": "MPI_DOUBLE", "dest": dest, "tag": tag, "comm": "MPI_COMM_WORLD", "request": request}),
    )
}

fn irecv(rank: u32, seq: u64, source: Json, tag: Json, request: &str) -> DecodedCall {
    call(
        rank,
        seq,
        "MPI_Irecv",
        json!({"buf": "seg2+0", "count": 2, "datatype": "MPI_DOUBLE", "source": source, "tag": tag, "comm": "MPI_COMM_WORLD", "request": request}),
    )
}

fn status(source: u32, tag: i64, count: u64) -> Json {
    json!({"MPI_SOURCE": source, "MPI_TAG": tag, "count": count})
}

fn wait(rank: u32, seq: u64, request: &str, status: Json) -> DecodedCall {
    call(
        rank,
        seq,
        "MPI_Wait",
        json!({"request": request, "status": status}),
    )
}

/// Each match as ((send rank, post, completion), (recv rank, post, completion), bytes).
type Pair = (
    (u32, u64, Option<u64>),
    (u32, u64, Option<u64>),
    Option<u64>,
);

fn pairs(m: &Matching) -> Vec<Pair> {
    let end = |i: usize| {
        let op = &m.operations[i];
        (op.rank, op.post, op.completion)
    };
    m.matches
        .iter()
        .map(|x| (end(x.send), end(x.recv), x.bytes))
        .collect()
}

/// Each unmatched operation as (rank, post, reason).
fn unmatched(m: &Matching) -> Vec<(u32, u64, Reason)> {
    m.unmatched
        .iter()
        .map(|u| {
            let op = &m.operations[u.operation];
            (op.rank, op.post, u.reason.clone())
        })
        .collect()
}

fn run(calls: Vec<DecodedCall>) -> Matching {
    match_calls(calls, &PredefinedComms)
}

#[test]
fn messages_on_one_channel_do_not_overtake() {
    let m = run(vec![
        send(0, 1, json!(1), 7),
        send(0, 2, json!(1), 7),
        send(0, 3, json!(1), 7),
        recv(1, 4, json!(0), json!(7), json!("MPI_STATUS_IGNORE")),
        recv(1, 5, json!(0), json!(7), status(0, 7, 12)),
        recv(1, 6, json!(0), json!(7), json!("MPI_STATUS_IGNORE")),
    ]);
    assert_eq!(
        pairs(&m),
        vec![
            ((0, 1, Some(1)), (1, 4, Some(4)), Some(16)),
            ((0, 2, Some(2)), (1, 5, Some(5)), Some(12)),
            ((0, 3, Some(3)), (1, 6, Some(6)), Some(16)),
        ]
    );
    assert!(m.unmatched.is_empty());
}

#[test]
fn receives_by_tag_take_the_first_send_of_their_tag() {
    let m = run(vec![
        send(0, 1, json!(1), 1),
        send(0, 2, json!(1), 2),
        recv(1, 1, json!(0), json!(2), json!("MPI_STATUS_IGNORE")),
        // MPI_ANY_TAG without a status: the first pending send of the channel.
        recv(
            1,
            2,
            json!(0),
            json!("MPI_ANY_TAG"),
            json!("MPI_STATUS_IGNORE"),
        ),
    ]);
    let posts: Vec<(u64, u64)> = pairs(&m).iter().map(|(s, r, _)| (s.1, r.1)).collect();
    assert_eq!(posts, vec![(2, 1), (1, 2)]);
}

#[test]
fn wildcard_receives_follow_their_status() {
    let m = run(vec![
        send(0, 1, json!(1), 5),
        send(2, 1, json!(1), 9),
        recv(
            1,
            1,
            json!("MPI_ANY_SOURCE"),
            json!("MPI_ANY_TAG"),
            status(2, 9, 16),
        ),
        recv(1, 2, json!("MPI_ANY_SOURCE"), json!(5), status(0, 5, 16)),
    ]);
    let ranks: Vec<(u32, u64)> = pairs(&m).iter().map(|(s, r, _)| (s.0, r.1)).collect();
    assert_eq!(ranks, vec![(2, 1), (0, 2)]);
    assert!(m.unmatched.is_empty());
}

#[test]
fn a_wildcard_without_status_is_resolved_only_with_one_possible_sender() {
    let ignore = json!("MPI_STATUS_IGNORE");
    let one = run(vec![
        send(2, 1, json!(1), 3),
        recv(1, 1, json!("MPI_ANY_SOURCE"), json!(3), ignore.clone()),
    ]);
    assert_eq!(pairs(&one).len(), 1);
    assert_eq!(one.operations[one.matches[0].send].rank, 2);

    let two = run(vec![
        send(0, 1, json!(1), 3),
        send(2, 1, json!(1), 3),
        recv(1, 1, json!("MPI_ANY_SOURCE"), json!(3), ignore.clone()),
        recv(1, 2, json!("MPI_ANY_SOURCE"), json!(3), ignore),
    ]);
    assert!(two.matches.is_empty());
    assert_eq!(
        unmatched(&two),
        vec![
            (0, 1, Reason::NoReceive),
            (1, 1, Reason::AmbiguousWildcard),
            (1, 2, Reason::AmbiguousWildcard),
            (2, 1, Reason::NoReceive),
        ]
    );
}

#[test]
fn requests_completed_out_of_order_complete_their_own_operations() {
    let m = run(vec![
        isend(0, 1, 1, 1, "req0"),
        isend(0, 2, 1, 2, "req1"),
        call(
            0,
            3,
            "MPI_Waitall",
            json!({"count": 2, "array_of_requests": ["req0", "req1"], "array_of_statuses": "MPI_STATUSES_IGNORE"}),
        ),
        irecv(1, 1, json!(0), json!(1), "req0"),
        irecv(1, 2, json!(0), json!(2), "req1"),
        wait(1, 3, "req1", status(0, 2, 16)),
        wait(1, 4, "req0", status(0, 1, 16)),
    ]);
    assert_eq!(
        pairs(&m),
        vec![
            ((0, 1, Some(3)), (1, 1, Some(4)), Some(16)),
            ((0, 2, Some(3)), (1, 2, Some(3)), Some(16)),
        ]
    );
}

#[test]
fn waitany_and_waitsome_complete_the_request_at_their_index() {
    let m = run(vec![
        send(0, 1, json!(1), 0),
        send(2, 1, json!(1), 0),
        send(2, 2, json!(1), 0),
        irecv(1, 1, json!("MPI_ANY_SOURCE"), json!(0), "req0"),
        irecv(1, 2, json!("MPI_ANY_SOURCE"), json!(0), "req1"),
        irecv(1, 3, json!(2), json!(0), "req2"),
        call(
            1,
            4,
            "MPI_Waitany",
            json!({"count": 3, "array_of_requests": ["req0", "req1", "req2"], "index": 1, "status": status(2, 0, 8)}),
        ),
        call(
            1,
            5,
            "MPI_Waitany",
            json!({"count": 3, "array_of_requests": ["req0", "MPI_REQUEST_NULL", "req2"], "index": -32766, "status": "MPI_STATUS_IGNORE"}),
        ),
        call(
            1,
            6,
            "MPI_Waitsome",
            json!({"incount": 3, "array_of_requests": ["req0", "MPI_REQUEST_NULL", "req2"], "outcount": 2,
                   "array_of_indices": [2, 0], "array_of_statuses": [status(2, 0, 8), status(0, 0, 8)]}),
        ),
    ]);
    // Receive 1 took rank 2's first message (its status), so receive 3,
    // from rank 2, took the second; receive 0 got rank 0's.
    assert_eq!(
        pairs(&m),
        vec![
            ((0, 1, Some(1)), (1, 1, Some(6)), Some(8)),
            ((2, 1, Some(1)), (1, 2, Some(4)), Some(8)),
            ((2, 2, Some(2)), (1, 3, Some(6)), Some(8)),
        ]
    );
}

#[test]
fn tests_complete_only_when_their_flag_is_set() {
    let m = run(vec![
        isend(0, 1, 1, 4, "req0"),
        call(
            0,
            2,
            "MPI_Test",
            json!({"request": "req0", "flag": 0, "status": "MPI_STATUS_IGNORE"}),
        ),
        call(
            0,
            3,
            "MPI_Test",
            json!({"request": "req0", "flag": 1, "status": "undefined"}),
        ),
        irecv(1, 1, json!(0), json!(4), "req3"),
        call(
            1,
            2,
            "MPI_Testall",
            json!({"count": 1, "array_of_requests": ["req3"], "flag": 0, "array_of_statuses": "MPI_STATUSES_IGNORE"}),
        ),
        call(
            1,
            3,
            "MPI_Request_get_status",
            json!({"request": "req3", "flag": 1, "status": status(0, 4, 16)}),
        ),
        wait(1, 4, "req3", json!("MPI_STATUS_IGNORE")),
    ]);
    assert_eq!(
        pairs(&m),
        vec![((0, 1, Some(3)), (1, 1, Some(3)), Some(16))]
    );
}

#[test]
fn both_halves_of_sendrecv_match() {
    // A ring of two: each rank sends right and receives from the left.
    let sendrecv = |rank: u32, other: u32| {
        call(
            rank,
            5,
            "MPI_Sendrecv",
            json!({"sendbuf": "seg1+0", "sendcount": 3, "sendtype": "MPI_INT", "dest": other, "sendtag": 1,
                   "recvbuf": "seg2+0", "recvcount": 3, "recvtype": "MPI_INT", "source": other, "recvtag": 1,
                   "comm": "MPI_COMM_WORLD", "status": status(other, 1, 12)}),
        )
    };
    let m = run(vec![sendrecv(0, 1), sendrecv(1, 0)]);
    assert_eq!(
        pairs(&m),
        vec![
            ((1, 5, Some(5)), (0, 5, Some(5)), Some(12)),
            ((0, 5, Some(5)), (1, 5, Some(5)), Some(12)),
        ]
    );
}

#[test]
fn persistent_requests_post_at_each_start() {
    let m = run(vec![
        call(
            0,
            1,
            "MPI_Send_init",
            json!({"buf": "seg1+0", "count": 1, "datatype": "MPI_LONG", "dest": 1, "tag": 0, "comm": "MPI_COMM_WORLD", "request": "req0"}),
        ),
        call(0, 2, "MPI_Start", json!({"request": "req0"})),
        wait(0, 3, "req0", json!("MPI_STATUS_IGNORE")),
        call(
            0,
            4,
            "MPI_Startall",
            json!({"count": 1, "array_of_requests": ["req0"]}),
        ),
        wait(0, 5, "req0", json!("MPI_STATUS_IGNORE")),
        call(0, 6, "MPI_Request_free", json!({"request": "req0"})),
        recv(1, 1, json!(0), json!(0), json!("MPI_STATUS_IGNORE")),
        recv(1, 2, json!(0), json!(0), json!("MPI_STATUS_IGNORE")),
    ]);
    assert_eq!(
        pairs(&m),
        vec![
            ((0, 2, Some(3)), (1, 1, Some(1)), Some(8)),
            ((0, 4, Some(5)), (1, 2, Some(2)), Some(8)),
        ]
    );
    assert_eq!(m.operations[0].func, "MPI_Start");
}

#[test]
fn a_reused_request_name_is_a_new_operation() {
    let m = run(vec![
        isend(0, 1, 1, 0, "req0"),
        wait(0, 2, "req0", json!("MPI_STATUS_IGNORE")),
        isend(0, 3, 1, 0, "req0"),
        wait(0, 4, "req0", json!("MPI_STATUS_IGNORE")),
        recv(1, 1, json!(0), json!(0), json!("MPI_STATUS_IGNORE")),
        recv(1, 2, json!(0), json!(0), json!("MPI_STATUS_IGNORE")),
    ]);
    let sends: Vec<(u64, Option<u64>)> = pairs(&m).iter().map(|(s, _, _)| (s.1, s.2)).collect();
    assert_eq!(sends, vec![(1, Some(2)), (3, Some(4))]);
}

#[test]
fn a_matched_probe_is_received_by_mrecv() {
    let m = run(vec![
        send(0, 1, json!(1), 3),
        call(
            1,
            1,
            "MPI_Mprobe",
            json!({"source": "MPI_ANY_SOURCE", "tag": 3, "comm": "MPI_COMM_WORLD", "message": "msg0", "status": status(0, 3, 16)}),
        ),
        call(
            1,
            2,
            "MPI_Get_count",
            json!({"status": status(0, 3, 16), "datatype": "MPI_INT", "count": 4}),
        ),
        call(
            1,
            3,
            "MPI_Mrecv",
            json!({"buf": "seg3+0", "count": 4, "datatype": "MPI_INT", "message": "msg0", "status": "MPI_STATUS_IGNORE"}),
        ),
        call(
            1,
            4,
            "MPI_Mprobe",
            json!({"source": "MPI_PROC_NULL", "tag": 0, "comm": "MPI_COMM_WORLD", "message": "MPI_MESSAGE_NO_PROC", "status": "MPI_STATUS_IGNORE"}),
        ),
    ]);
    assert_eq!(
        pairs(&m),
        vec![((0, 1, Some(1)), (1, 1, Some(3)), Some(16))]
    );
    assert!(m.unmatched.is_empty());
}

#[test]
fn proc_null_matches_nothing_and_is_not_unmatched() {
    let m = run(vec![
        send(0, 1, json!("MPI_PROC_NULL"), 0),
        irecv(0, 2, json!("MPI_PROC_NULL"), json!(0), "req0"),
        wait(0, 3, "req0", status(0, 0, 0)),
    ]);
    assert!(m.matches.is_empty());
    assert!(m.unmatched.is_empty());
    assert_eq!(m.operations.len(), 2);
    assert_eq!(m.operations[1].completion, Some(3));
}

#[test]
fn what_matches_nothing_is_reported_with_its_reason() {
    let m = run(vec![
        send(0, 1, json!(1), 1),
        recv(1, 1, json!(0), json!(2), json!("MPI_STATUS_IGNORE")),
        irecv(1, 2, json!(0), json!(9), "req0"),
        call(1, 3, "MPI_Cancel", json!({"request": "req0"})),
        wait(
            1,
            4,
            "req0",
            json!({"MPI_SOURCE": 0, "MPI_TAG": 9, "count": 0, "cancelled": true}),
        ),
        call(
            1,
            5,
            "MPI_Send",
            json!({"buf": "seg1+0", "count": 1, "datatype": "MPI_INT", "dest": 0, "tag": 0, "comm": "comm4"}),
        ),
        call(
            1,
            6,
            "MPI_Send",
            json!({"buf": "seg1+0", "count": 1, "datatype": "MPI_INT", "dest": "me+1", "tag": 0, "comm": "MPI_COMM_WORLD"}),
        ),
    ]);
    assert!(m.matches.is_empty());
    assert_eq!(
        unmatched(&m),
        vec![
            (0, 1, Reason::NoReceive),
            (1, 1, Reason::NoSend),
            (1, 2, Reason::Cancelled),
            (
                1,
                5,
                Reason::UnknownRank {
                    comm: Comm::User(4),
                    rank: 0
                }
            ),
            (1, 6, Reason::UnknownPeer("\"me+1\"".into())),
        ]
    );
    assert_eq!(
        m.unmatched[3].reason.to_string(),
        "the world rank of rank 0 of comm4 is not known"
    );
}

/// comm1 holds world ranks 2 and 0, in that order.
struct Reversed;

impl WorldRanks for Reversed {
    fn world_rank(&self, rank: u32, seq: u64, comm: &Comm, rank_in_comm: u32) -> Option<u32> {
        match comm {
            Comm::User(1) => [2, 0].get(rank_in_comm as usize).copied(),
            _ => PredefinedComms.world_rank(rank, seq, comm, rank_in_comm),
        }
    }
}

#[test]
fn ranks_of_other_communicators_are_translated_to_world_ranks() {
    let on_comm1 = |rank: u32, func: &'static str, peer: &str, peer_rank: u32| {
        call(
            rank,
            9,
            func,
            json!({"buf": "seg1+0", "count": 1, "datatype": "MPI_INT", peer: peer_rank, "tag": 0,
                   "comm": "comm1", "status": status(peer_rank, 0, 4)}),
        )
    };
    let calls = vec![
        on_comm1(2, "MPI_Send", "dest", 1), // world 2 = comm1 rank 0, to comm1 rank 1 = world 0
        on_comm1(0, "MPI_Recv", "source", 0), // world 0 receives from comm1 rank 0 = world 2
    ];
    let m = match_calls(calls.clone(), &Reversed);
    assert_eq!(pairs(&m), vec![((2, 9, Some(9)), (0, 9, Some(9)), Some(4))]);
    let unknown = match_calls(calls, &PredefinedComms);
    assert!(unknown.matches.is_empty());
    assert_eq!(unknown.unmatched.len(), 2);
}

#[test]
fn isendrecv_completes_both_halves_at_its_request() {
    let isendrecv = |rank: u32, other: u32| {
        call(
            rank,
            1,
            "MPI_Isendrecv_replace",
            json!({"buf": "seg1+0", "count": 2, "datatype": "MPI_SHORT", "dest": other, "sendtag": 0,
                   "source": other, "recvtag": 0, "comm": "MPI_COMM_WORLD", "request": "req2"}),
        )
    };
    let m = run(vec![
        isendrecv(0, 1),
        wait(0, 2, "req2", status(1, 0, 4)),
        isendrecv(1, 0),
        wait(1, 2, "req2", status(0, 0, 4)),
    ]);
    assert_eq!(
        pairs(&m),
        vec![
            ((1, 1, Some(2)), (0, 1, Some(2)), Some(4)),
            ((0, 1, Some(2)), (1, 1, Some(2)), Some(4)),
        ]
    );
}
