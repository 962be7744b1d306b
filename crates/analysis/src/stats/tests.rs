//! Stats of traces built in memory, with known answers; the in-order walk
//! against counting on the grammar.

use super::*;
use mpigram_mpispec::{
    BufferRef, HandleKind, HandleRef, Rank, RequestRef, Value, func_by_name, predefined,
};
use mpigram_trace::NO_RANK;

pub(crate) fn sig(func: &str, args: Vec<Value>) -> Signature {
    let (id, f) = func_by_name(func).unwrap();
    assert_eq!(f.params.len(), args.len(), "{func}'s arguments");
    Signature {
        func: id,
        ret: 0,
        args,
    }
}

fn predefined_handle(kind: HandleKind, name: &str) -> Value {
    let id = predefined(kind).iter().position(|n| *n == name).unwrap();
    Value::Handle(kind, HandleRef::Predefined(id as u32))
}

pub(crate) fn int() -> Value {
    predefined_handle(HandleKind::Datatype, "MPI_INT")
}

pub(crate) fn world() -> Value {
    predefined_handle(HandleKind::Comm, "MPI_COMM_WORLD")
}

fn user(kind: HandleKind, id: u64) -> Value {
    Value::Handle(kind, HandleRef::User(id))
}

pub(crate) fn buf() -> Value {
    Value::Buffer(BufferRef::Segment { id: 1, offset: 0 })
}

fn n(v: i64) -> Value {
    Value::Int(v)
}

fn rel(d: i64) -> Value {
    Value::Rank(Rank::Relative(d))
}

pub(crate) fn request(pool: u64, index: u64) -> Value {
    Value::Request(RequestRef::Pooled { pool, index })
}

pub(crate) fn send(count: i64, datatype: Value, dest: i64) -> Signature {
    sig(
        "MPI_Send",
        vec![buf(), n(count), datatype, rel(dest), Value::Tag(0), world()],
    )
}

pub(crate) fn recv(count: i64, source: i64) -> Signature {
    sig(
        "MPI_Recv",
        vec![
            buf(),
            n(count),
            int(),
            rel(source),
            Value::Tag(0),
            world(),
            Value::Status(None),
        ],
    )
}

fn contiguous(count: i64, id: u64) -> Signature {
    sig(
        "MPI_Type_contiguous",
        vec![n(count), int(), user(HandleKind::Datatype, id)],
    )
}

fn type_free(id: u64) -> Signature {
    sig("MPI_Type_free", vec![user(HandleKind::Datatype, id)])
}

/// One rank's calls and communicator log.
pub(crate) struct RankCalls {
    calls: Vec<Signature>,
    comms: Vec<CommEntry>,
}

/// `func` (MPI_Allreduce, MPI_Iallreduce) of 3 doubles summed over
/// MPI_COMM_WORLD, followed by the arguments `more` (a request).
fn allreduce_of_3_doubles(func: &str, more: &[Value]) -> Signature {
    let mut args = vec![
        buf(),
        buf(),
        n(3),
        predefined_handle(HandleKind::Datatype, "MPI_DOUBLE"),
        predefined_handle(HandleKind::Op, "MPI_SUM"),
        world(),
    ];
    args.extend_from_slice(more);
    sig(func, args)
}

/// MPI_Waitall on the requests (0, 0) and (1, 0), statuses ignored.
fn waitall_of_two() -> Signature {
    sig(
        "MPI_Waitall",
        vec![
            n(2),
            Value::Array(Some(vec![request(0, 0), request(1, 0)])),
            Value::Array(None),
        ],
    )
}

pub(crate) fn rank(calls: Vec<Signature>) -> RankCalls {
    RankCalls {
        calls,
        comms: Vec::new(),
    }
}

/// A trace of `ranks` (rank i is world rank i), each call timed 1 µs.
pub(crate) fn trace(ranks: Vec<RankCalls>) -> Trace {
    Trace::of_calls(
        ranks
            .into_iter()
            .map(|r| (r.calls.iter().map(Signature::encode).collect(), r.comms))
            .collect(),
        1,
    )
}

pub(crate) fn repeat(times: usize, body: &[Signature]) -> Vec<Signature> {
    body.iter()
        .cloned()
        .cycle()
        .take(times * body.len())
        .collect()
}

fn pair(stats: &Stats, from: u32, to: u32) -> (u64, u64) {
    let t = stats.matrix.get(from, to);
    (t.bytes, t.messages)
}

/// Counting on the grammar and walking every rank in order must agree.
fn assert_walk_agrees(t: &Trace, stats: &Stats) {
    let walked = Stats::compute(t, &mut |_, _| {}, true).unwrap();
    assert_eq!(walked.functions, stats.functions);
    assert_eq!(walked.histogram, stats.histogram);
    assert_eq!(walked.matrix, stats.matrix);
}

#[test]
fn a_reused_datatype_id_is_sized_as_of_each_call() {
    let type_loop = |count| {
        vec![
            contiguous(count, 0),
            sig("MPI_Type_commit", vec![user(HandleKind::Datatype, 0)]),
            send(1, user(HandleKind::Datatype, 0), 1),
            type_free(0),
        ]
    };
    let mut calls = repeat(3, &type_loop(2));
    calls.extend(repeat(2, &type_loop(5)));
    let t = trace(vec![rank(calls), rank(repeat(5, &[recv(5, -1)]))]);
    let mut reports = Vec::new();
    let stats = Stats::with_progress(&t, &mut |done, total| reports.push((done, total))).unwrap();
    assert_eq!(stats.expanded_ranks, [0], "type0 is 8 bytes, then 20");
    let send = stats.function("MPI_Send").unwrap();
    assert_eq!((send.calls, send.bytes_sent), (5, 3 * 8 + 2 * 20));
    assert_eq!(pair(&stats, 0, 1), (64, 5));
    assert_eq!(stats.function("MPI_Recv").unwrap().bytes_received, 5 * 20);
    assert_eq!(stats.histogram.p2p[bucket(8)], 3);
    assert_eq!(stats.histogram.p2p[bucket(20)], 2);
    assert_eq!(
        reports.last(),
        Some(&(20, 20)),
        "the walked rank's 20 calls"
    );
    // Timing comes from the aggregated timing, calls from the grammar.
    let free = stats.function("MPI_Type_free").unwrap();
    assert_eq!((free.calls, free.timed_calls, free.total_ns), (5, 5, 5000));
    assert_walk_agrees(&t, &stats);
}

#[test]
fn a_persistent_request_keeps_the_datatype_it_was_created_with() {
    let send_init = sig(
        "MPI_Send_init",
        vec![
            buf(),
            n(1),
            user(HandleKind::Datatype, 0),
            rel(1),
            Value::Tag(0),
            world(),
            request(0, 0),
        ],
    );
    let start = sig("MPI_Start", vec![request(0, 0)]);
    let wait = sig("MPI_Wait", vec![request(0, 0), Value::UndefinedStatus]);
    let free = sig("MPI_Request_free", vec![request(0, 0)]);
    let mut calls = Vec::new();
    for (size, starts) in [(2, 4), (5, 2)] {
        calls.push(contiguous(size, 0));
        calls.push(send_init.clone());
        // Freeing the type does not change what the request sends.
        calls.push(type_free(0));
        calls.push(contiguous(7, 0));
        calls.extend(repeat(starts, &[start.clone(), wait.clone()]));
        calls.push(free.clone());
        calls.push(type_free(0));
    }
    let t = trace(vec![rank(calls), rank(repeat(6, &[recv(5, -1)]))]);
    let stats = Stats::of(&t).unwrap();
    assert_eq!(stats.expanded_ranks, [0]);
    let s = stats.function("MPI_Start").unwrap();
    assert_eq!((s.calls, s.bytes_sent), (6, 4 * 8 + 2 * 20));
    assert_eq!(pair(&stats, 0, 1), (72, 6));
    assert_eq!(stats.function("MPI_Send_init").unwrap().bytes_sent, 0);
}

#[test]
fn a_reused_communicator_id_is_read_as_of_each_call() {
    let allgather = sig(
        "MPI_Allgather",
        vec![
            buf(),
            n(1),
            int(),
            buf(),
            n(1),
            int(),
            user(HandleKind::Comm, 0),
        ],
    );
    let split = sig(
        "MPI_Comm_split",
        vec![world(), n(0), n(0), user(HandleKind::Comm, 0)],
    );
    let free = sig("MPI_Comm_free", vec![user(HandleKind::Comm, 0)]);
    let mut calls = vec![split.clone()];
    calls.extend(repeat(5, std::slice::from_ref(&allgather)));
    calls.push(free.clone());
    calls.push(split);
    calls.extend(repeat(3, &[allgather]));
    calls.push(free);
    let entry = |seq, size| CommEntry {
        seq,
        comm: 0,
        rank: 0,
        size,
        remote_size: 0,
        inter: false,
        leader: NO_RANK,
        instance: 0,
    };
    let mut r0 = rank(calls);
    r0.comms = vec![entry(0, 2), entry(7, 4)];
    let t = trace(vec![r0]);
    let stats = Stats::of(&t).unwrap();
    assert_eq!(stats.expanded_ranks, [0]);
    let a = stats.function("MPI_Allgather").unwrap();
    assert_eq!(a.bytes_sent, 8 * 4);
    assert_eq!(a.bytes_received, 5 * 2 * 4 + 3 * 4 * 4);
    assert_eq!(stats.histogram.collective[bucket(8)], 5);
    assert_eq!(stats.histogram.collective[bucket(16)], 3);
}

/// A halo-like program on 3 ranks without reused ids: counted on the
/// grammar (no rank walked), with the same result as walking.
#[test]
fn counting_on_the_grammar_agrees_with_walking_in_order() {
    let isend = |dest, pool| {
        sig(
            "MPI_Isend",
            vec![
                buf(),
                n(16),
                int(),
                rel(dest),
                Value::Tag(1),
                world(),
                request(pool, 0),
            ],
        )
    };
    let irecv = |source, pool| {
        sig(
            "MPI_Irecv",
            vec![
                buf(),
                n(16),
                int(),
                rel(source),
                Value::Tag(1),
                world(),
                request(pool, 0),
            ],
        )
    };
    let waitall = waitall_of_two();
    let allreduce = allreduce_of_3_doubles("MPI_Allreduce", &[]);
    let bcast = |root| sig("MPI_Bcast", vec![buf(), n(100), int(), rel(root), world()]);
    let sub = user(HandleKind::Comm, 2);
    // Root 0, relative to each rank.
    let gather = |r: i64| {
        sig(
            "MPI_Gather",
            vec![buf(), n(2), int(), buf(), n(2), int(), rel(-r), sub.clone()],
        )
    };
    let ranks = (0..3)
        .map(|r: i64| {
            let mut calls = vec![sig("MPI_Comm_dup", vec![world(), sub.clone()])];
            // A ring: rank 2's right neighbour is 0.
            let (right, left) = (if r == 2 { -2 } else { 1 }, if r == 0 { 2 } else { -1 });
            let mut step = vec![isend(right, 0), irecv(left, 1), waitall.clone()];
            step.extend(repeat(3, std::slice::from_ref(&allreduce)));
            for _ in 0..7 {
                calls.extend(repeat(4, &step));
                calls.push(bcast(-r));
                calls.push(gather(r));
            }
            calls.push(send(3, int(), right));
            // On the duplicate: placed through its members.
            calls.push(sig(
                "MPI_Send",
                vec![buf(), n(5), int(), rel(right), Value::Tag(0), sub.clone()],
            ));
            let mut rank = rank(calls);
            rank.comms = vec![CommEntry {
                seq: 0,
                comm: 2,
                rank: r as u32,
                size: 3,
                remote_size: 0,
                inter: false,
                leader: 0,
                instance: 7,
            }];
            rank
        })
        .collect();
    let t = trace(ranks);
    let stats = Stats::of(&t).unwrap();
    assert!(stats.expanded_ranks.is_empty());
    assert_eq!(stats.calls, 3 * (1 + 7 * (4 * 6 + 2) + 2));
    let isend = stats.function("MPI_Isend").unwrap();
    assert_eq!((isend.calls, isend.bytes_sent), (3 * 28, 3 * 28 * 64));
    assert_eq!(pair(&stats, 0, 1), (28 * 64 + 12 + 20, 30));
    assert_eq!(pair(&stats, 2, 0), (28 * 64 + 12 + 20, 30));
    assert_eq!(stats.matrix.pairs.len(), 3);
    assert_eq!(stats.matrix.unattributed, PairTraffic::default());
    let b = stats.function("MPI_Bcast").unwrap();
    assert_eq!((b.bytes_sent, b.bytes_received), (7 * 400, 2 * 7 * 400));
    // Gather on the duplicate: rank 0 is its root (3 blocks of 8 bytes in).
    let g = stats.function("MPI_Gather").unwrap();
    assert_eq!((g.bytes_sent, g.bytes_received), (3 * 7 * 8, 7 * 3 * 8));
    // 24-byte all-reductions on every rank, and the root's gathers.
    assert_eq!(stats.histogram.collective[bucket(24)], 3 * 7 * 4 * 3 + 7);
    assert_walk_agrees(&t, &stats);
}

#[test]
fn non_blocking_collectives_move_what_their_blocking_forms_move() {
    // Each rank: an MPI_Ibcast of 100 ints from rank 0 and an
    // MPI_Iallreduce of 3 doubles, then MPI_Waitall; the same blocking.
    let ranks = (0..3)
        .map(|r: i64| {
            let ibcast = sig(
                "MPI_Ibcast",
                vec![buf(), n(100), int(), rel(-r), world(), request(0, 0)],
            );
            let iallreduce = allreduce_of_3_doubles("MPI_Iallreduce", &[request(1, 0)]);
            let waitall = waitall_of_two();
            let bcast = sig("MPI_Bcast", vec![buf(), n(100), int(), rel(-r), world()]);
            rank(vec![ibcast, iallreduce, waitall, bcast])
        })
        .collect();
    let t = trace(ranks);
    let stats = Stats::of(&t).unwrap();
    let bytes = |f: &str| {
        let s = stats.function(f).unwrap();
        (s.bytes_sent, s.bytes_received)
    };
    assert_eq!(bytes("MPI_Ibcast"), (400, 2 * 400));
    assert_eq!(bytes("MPI_Ibcast"), bytes("MPI_Bcast"));
    assert_eq!(bytes("MPI_Iallreduce"), (3 * 24, 3 * 24));
    // Each all-reduction is a 24-byte collective, each broadcast 400.
    assert_eq!(stats.histogram.collective[bucket(24)], 3);
    assert_eq!(stats.histogram.collective[bucket(400)], 2 * 3);
    assert_walk_agrees(&t, &stats);
}

#[test]
fn sends_to_proc_null_move_nothing_and_unsized_types_are_unknown() {
    let null = sig(
        "MPI_Send",
        vec![
            buf(),
            n(1000),
            int(),
            Value::Rank(Rank::ProcNull),
            Value::Tag(0),
            world(),
        ],
    );
    let unknown = send(4, user(HandleKind::Datatype, 9), 1);
    let t = trace(vec![rank(vec![null, unknown]), rank(vec![])]);
    let stats = Stats::of(&t).unwrap();
    let s = stats.function("MPI_Send").unwrap();
    assert_eq!((s.calls, s.bytes_sent, s.calls_unknown_bytes), (2, 0, 1));
    assert_eq!(pair(&stats, 0, 1), (0, 1));
    assert_eq!(stats.matrix.unknown_size_messages, 1);
    assert_eq!(stats.histogram.p2p_unknown, 1);
    assert_eq!(stats.histogram.rows(), []);
}

#[test]
fn the_json_names_functions_and_lists_buckets_and_pairs() {
    let t = trace(vec![
        rank(repeat(3, &[send(10, int(), 1)])),
        rank(repeat(3, &[recv(10, -1)])),
    ]);
    let json = Stats::of(&t).unwrap().to_json();
    assert_eq!(json["functions"]["MPI_Send"]["calls"], 3);
    assert_eq!(json["functions"]["MPI_Send"]["bytes_sent"], 120);
    assert_eq!(json["functions"]["MPI_Recv"]["bytes_received"], 120);
    assert_eq!(json["functions"]["MPI_Send"]["mean_s"], 1e-6);
    assert_eq!(
        json["histogram"],
        serde_json::json!([{"min_bytes": 32, "max_bytes": 63, "p2p": 3, "collective": 0}])
    );
    assert_eq!(
        json["matrix"]["pairs"],
        serde_json::json!([{"from": 0, "to": 1, "bytes": 120, "messages": 3}])
    );
    assert_eq!(json["matrix"]["ranks"], 2);
}
