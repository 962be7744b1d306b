//! Benchmarks for another number of ranks (`--ranks N`) from hand-built
//! traces: rules of the rank, classes of ranks, refusals.

use super::{finalize, init, int, options, seg, sig, trace_of, world};
use crate::{Compute, Error, Options, generate};
use mpigram_mpispec::{Rank, Signature, Value};

fn for_ranks(n: u32) -> Options {
    Options {
        ranks: Some(n),
        times: crate::Source::Best,
        cpu_time: false,
        serial_threads: false,
        ..options(Compute::None)
    }
}

fn send(dest: Rank, count: i64) -> Signature {
    let args = vec![
        seg(2, 0),
        Value::Int(count),
        int(),
        Value::Rank(dest),
        Value::Tag(0),
        world(),
    ];
    sig("MPI_Send", args)
}

fn recv(source: Rank) -> Signature {
    let args = vec![
        seg(3, 0),
        Value::Int(8),
        int(),
        Value::Rank(source),
        Value::Tag(0),
        world(),
        Value::Status(None),
    ];
    sig("MPI_Recv", args)
}

/// Rank `me` of `n` passes a value to the next rank around a ring, 10 times.
fn ring(me: i64, n: i64) -> Vec<Signature> {
    let exchange = exchange(me, n, seg(2, 0), seg(3, 0));
    let mut calls = vec![init()];
    calls.extend(std::iter::repeat_n(exchange, 10));
    calls.push(finalize());
    calls
}

#[test]
fn a_ring_of_four_becomes_a_ring_of_any_size() {
    let trace = trace_of((0..4).map(|me| ring(me, 4)).collect(), 1000);
    for n in [1, 3, 6] {
        let bench = generate(&trace, &for_ranks(n)).unwrap();
        let src = &bench.source;
        assert_eq!(bench.ranks, n);
        assert_eq!(bench.calls, u64::from(n) * 12);
        assert!(
            src.contains(&format!("static const int ranks = {n};")),
            "{src}"
        );
        assert!(
            src.contains(&format!(
                "periodic_peer(world_rank, 1, {n}), 0, (void *)segs[3], 8, MPI_INT, periodic_peer(world_rank, -1, {n})"
            )),
            "{src}"
        );
        assert!(
            src.contains("Extrapolated from the traced 4 ranks"),
            "{src}"
        );
        // One behaviour for every rank.
        let main = &src[src.find("int main").unwrap()..];
        assert_eq!(main.matches("rule_").count(), 1, "{main}");
    }
}

#[test]
fn a_line_whose_ends_do_other_calls_is_three_classes() {
    // Rank 0 sends first, then receives from the last rank; the others
    // receive from the previous rank, then send to the next (the last
    // rank to rank 0): a token around a ring started by rank 0.
    let stream = |me: i64| {
        let next = Rank::Relative((me + 1) % 4 - me);
        let previous = Rank::Relative((me + 3) % 4 - me);
        let mut c = vec![init()];
        if me == 0 {
            c.extend([send(next, 8), recv(previous)]);
        } else {
            c.extend([recv(previous), send(next, 8)]);
        }
        c.push(finalize());
        c
    };
    let trace = trace_of((0..4).map(stream).collect(), 1000);
    let bench = generate(&trace, &for_ranks(6)).unwrap();
    let src = &bench.source;
    assert!(
        src.contains("first rank as traced rank 0; middle ranks as traced ranks 1-2; last rank as traced rank 3"),
        "{src}"
    );
    let main = &src[src.find("int main").unwrap()..];
    assert!(main.contains("if (world_rank == 0)"), "{main}");
    assert!(
        main.contains("(world_rank >= 1 && world_rank <= 4)"),
        "{main}"
    );
    assert!(main.contains("world_rank == 5"), "{main}");
    // The middle ranks send on to the next rank; the last one to rank 0.
    assert!(
        src.contains("MPI_Send((void *)segs[2], 8, MPI_INT, offset_peer(world_rank, 1, 6)"),
        "{src}"
    );
    assert!(src.contains("periodic_peer(world_rank, 1, 6)"), "{src}");
}

/// `MPI_Comm_split(MPI_COMM_WORLD, colour, key, &comms[0])` on ranks 0-2
/// of 3, the colour and key of rank `me` given by `args`.
fn splits(args: impl Fn(i64) -> (Value, Value)) -> crate::Trace {
    let split = |me: i64| {
        let (colour, key) = args(me);
        let comm = Value::Handle(
            mpigram_mpispec::HandleKind::Comm,
            mpigram_mpispec::HandleRef::User(0),
        );
        sig("MPI_Comm_split", vec![world(), colour, key, comm])
    };
    trace_of(
        (0..3)
            .map(|me| vec![init(), split(me), finalize()])
            .collect(),
        1000,
    )
}

#[test]
fn a_key_that_is_the_callers_rank_stays_the_callers_rank() {
    let zero = || {
        Value::Const(
            mpigram_mpispec::ConstSet::Undefined,
            mpigram_mpispec::ConstRef::Plain(0),
        )
    };
    // MPI_Comm_split(MPI_COMM_WORLD, 0, rank): the tracer records colour 0
    // as the number on every rank (it is rank 0's own rank, but not the
    // others') and the key as each caller's own rank.
    let split = "MPI_Comm_split(MPI_COMM_WORLD, 0, world_rank, &comms[0]);";
    let trace = splits(|_| (zero(), Value::Rank(Rank::Relative(0))));
    let src = generate(&trace, &for_ranks(5)).unwrap().source;
    assert!(src.contains(split), "{src}");
    assert!(
        generate(&trace, &for_ranks(0))
            .unwrap_err()
            .to_string()
            .contains("--ranks must be 1 to")
    );
    // Traces of mpigram before the compact summary (rank timing 3) recorded that colour as "own
    // rank" on rank 0 alone: no one rule for all ranks then, but the first,
    // middle and last ranks as traced, rank 0's colour its own rank (0).
    let trace = splits(|me| {
        let colour = match me {
            0 => Value::Rank(Rank::Relative(0)),
            _ => zero(),
        };
        (colour, Value::Rank(Rank::Relative(0)))
    });
    let src = generate(&trace, &for_ranks(5)).unwrap().source;
    assert!(src.contains("first rank as traced rank 0"), "{src}");
    assert!(
        src.contains("MPI_Comm_split(MPI_COMM_WORLD, world_rank, world_rank, &comms[0]);"),
        "{src}"
    );
    assert!(src.contains(split), "{src}");
}

#[test]
fn what_follows_no_rule_of_the_rank_is_refused_with_the_call() {
    // Rank 2 sends more than the others.
    let stream = |me: i64| {
        let next = Rank::Relative((me + 1) % 4 - me);
        vec![init(), send(next, if me == 2 { 9 } else { 8 }), finalize()]
    };
    let trace = trace_of((0..4).map(stream).collect(), 1000);
    let e = generate(&trace, &for_ranks(3)).unwrap_err();
    assert!(matches!(e, Error::NotRegular(3, _)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(
            "call 1 of rank 0: MPI_Send's count differs between ranks (rank 0: 8, rank 2: 9)"
        ),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");

    // Rank 1 makes one call more.
    let stream = |me: i64| {
        let mut c = vec![init()];
        if me == 1 {
            c.push(super::barrier());
        }
        c.push(finalize());
        c
    };
    let trace = trace_of((0..2).map(stream).collect(), 1000);
    let msg = generate(&trace, &for_ranks(4)).unwrap_err().to_string();
    assert!(
        msg.contains("rank 0 calls MPI_Finalize where rank 1 calls MPI_Barrier"),
        "{msg}"
    );

    // Everyone sends to rank 2 of 4: no rule of the rank says "2".
    let stream = |me: i64| vec![init(), send(Rank::Relative(2 - me), 8), finalize()];
    let trace = trace_of((0..4).map(stream).collect(), 1000);
    let msg = generate(&trace, &for_ranks(8)).unwrap_err().to_string();
    assert!(
        msg.contains("MPI_Send's dest: peers that follow no rule of the rank"),
        "{msg}"
    );
}

/// A ring exchange whose send and receive buffers are the given segments.
fn exchange(me: i64, n: i64, send_buf: Value, recv_buf: Value) -> Signature {
    let next = Rank::Relative((me + 1) % n - me);
    let previous = Rank::Relative((me + n - 1) % n - me);
    sig(
        "MPI_Sendrecv",
        vec![
            send_buf,
            Value::Int(8),
            int(),
            Value::Rank(next),
            Value::Tag(0),
            recv_buf,
            Value::Int(8),
            int(),
            Value::Rank(previous),
            Value::Tag(0),
            world(),
            Value::Status(None),
        ],
    )
}

#[test]
fn segments_that_correspond_one_to_one_are_the_first_ranks() {
    // Each rank allocates its buffers in another order: rank r's send
    // buffer is segment 2 + r, its receive buffer 10 + 2r (offset 16).
    let stream = |me: i64| {
        let s = seg(2 + me as u64, 0);
        let r = seg(10 + 2 * me as u64, 16);
        let mut c = vec![init()];
        c.extend(std::iter::repeat_n(exchange(me, 4, s, r), 3));
        c.push(finalize());
        c
    };
    let trace = trace_of((0..4).map(stream).collect(), 1000);
    let bench = generate(&trace, &for_ranks(6)).unwrap();
    let src = &bench.source;
    assert!(
        src.contains("(void *)segs[2], 8, MPI_INT, periodic_peer(world_rank, 1, 6)"),
        "{src}"
    );
    assert!(src.contains("(void *)(segs[10] + 16), 8"), "{src}");
    assert!(!src.contains("segs[12]"), "{src}");
}

#[test]
fn segments_that_do_not_correspond_one_to_one_are_refused() {
    // Rank 1 sends and receives in one segment where rank 0 uses two.
    let stream = |me: i64| {
        let (s, r) = match me {
            1 => (seg(7, 0), seg(7, 0)),
            _ => (seg(2, 0), seg(3, 0)),
        };
        vec![init(), exchange(me, 4, s, r), finalize()]
    };
    let trace = trace_of((0..4).map(stream).collect(), 1000);
    let msg = generate(&trace, &for_ranks(8)).unwrap_err().to_string();
    assert!(
        msg.contains(
            "MPI_Sendrecv's recvbuf: rank 1's segments do not correspond one-to-one to rank 0's"
        ),
        "{msg}"
    );

    // The same segments at different offsets.
    let stream = |me: i64| {
        vec![
            init(),
            exchange(me, 4, seg(2, me as u64 * 8), seg(3, 0)),
            finalize(),
        ]
    };
    let trace = trace_of((0..4).map(stream).collect(), 1000);
    let msg = generate(&trace, &for_ranks(8)).unwrap_err().to_string();
    assert!(
        msg.contains(
            "MPI_Sendrecv's sendbuf: offsets differ between ranks (rank 0: seg2+0, rank 1: seg2+8)"
        ),
        "{msg}"
    );
}
