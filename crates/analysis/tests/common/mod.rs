//! Long traces built in memory: a halo-exchange-like loop on two ranks
//! with lossless times, recorded as the tracer records (a grammar of call
//! signatures, blocks of exact times), without holding the calls.

use mpigram_grammar::Sequitur;
use mpigram_mpispec::{
    BufferRef, HandleKind, HandleRef, Rank, RequestRef, Signature, Value, func_by_name, predefined,
};
use mpigram_trace::timing::ExactWriter;
use mpigram_trace::{CallStats, CallTimes, Ending, RankMeta, RankTrace, Timing, Trace};

fn sig(func: &str, args: Vec<Value>) -> Vec<u8> {
    let (id, f) = func_by_name(func).unwrap();
    assert_eq!(f.params.len(), args.len(), "{func}'s arguments");
    Signature {
        func: id,
        ret: 0,
        args,
    }
    .encode()
}

fn predefined_handle(kind: HandleKind, name: &str) -> Value {
    let id = predefined(kind).iter().position(|n| *n == name).unwrap();
    Value::Handle(kind, HandleRef::Predefined(id as u32))
}

fn buf(id: u64) -> Value {
    Value::Buffer(BufferRef::Segment { id, offset: 0 })
}

fn request(pool: u64) -> Value {
    Value::Request(RequestRef::Pooled { pool, index: 0 })
}

/// The signatures of one iteration of rank `rank` of 2: an exchange with
/// the other rank (Irecv, Isend, Waitall), then an Allreduce; and
/// MPI_Init and MPI_Finalize.
fn signatures(rank: u32) -> (Vec<u8>, Vec<Vec<u8>>, Vec<u8>) {
    let double = predefined_handle(HandleKind::Datatype, "MPI_DOUBLE");
    let world = predefined_handle(HandleKind::Comm, "MPI_COMM_WORLD");
    let other = Value::Rank(Rank::Relative(if rank == 0 { 1 } else { -1 }));
    let status = Value::Status(Some(mpigram_mpispec::Status {
        source: Rank::Relative(if rank == 0 { 1 } else { -1 }),
        tag: 7,
        count: 64,
        cancelled: false,
        error: 0,
    }));
    let init = sig("MPI_Init", vec![Value::Buffer(BufferRef::Null); 2]);
    let body = vec![
        sig(
            "MPI_Irecv",
            vec![
                buf(1),
                Value::Int(8),
                double.clone(),
                other.clone(),
                Value::Tag(7),
                world.clone(),
                request(1),
            ],
        ),
        sig(
            "MPI_Isend",
            vec![
                buf(2),
                Value::Int(8),
                double.clone(),
                other,
                Value::Tag(7),
                world.clone(),
                request(2),
            ],
        ),
        sig(
            "MPI_Waitall",
            vec![
                Value::Int(2),
                Value::Array(Some(vec![request(1), request(2)])),
                Value::Array(Some(vec![status, Value::Status(None)])),
            ],
        ),
        sig(
            "MPI_Allreduce",
            vec![
                buf(3),
                buf(4),
                Value::Int(1),
                double,
                predefined_handle(HandleKind::Op, "MPI_SUM"),
                world,
            ],
        ),
    ];
    (init, body, sig("MPI_Finalize", vec![]))
}

/// One rank's calls as the tracer records them.
#[derive(Default)]
struct Recording {
    grammar: Sequitur,
    times: ExactWriter,
    /// The last call's end.
    now: u64,
}

impl Recording {
    fn call(&mut self, signature: u32, start: u64, end: u64) {
        self.grammar.push(signature);
        self.times.push(start, end);
        self.now = end;
    }
}

/// A trace of two ranks running `iterations` iterations (4 calls each,
/// plus MPI_Init and MPI_Finalize), rank 1 computing longer than rank 0
/// every third iteration. The ranks' times keep to what MPI lets happen:
/// a Waitall ends after the other rank's Isend started, an Allreduce ends
/// on both ranks after both arrived.
pub fn two_ranks(iterations: u64) -> Trace {
    let mut rec: [Recording; 2] = Default::default();
    for r in &mut rec {
        r.call(0, 0, 50_000);
    }
    for i in 0..iterations {
        let compute = |r: usize| if r == 1 && i % 3 == 0 { 9_000 } else { 4_000 };
        let irecv = [0, 1].map(|r| rec[r].now + compute(r));
        let isend = irecv.map(|t| t + 300 + 200);
        for r in 0..2 {
            rec[r].call(1, irecv[r], irecv[r] + 300);
            rec[r].call(2, isend[r], isend[r] + 400);
            let waitall = rec[r].now + 100;
            let own = waitall + 2_000 + 500 * u64::from(r == 0);
            rec[r].call(3, waitall, own.max(isend[1 - r] + 1_000));
        }
        let allreduce = [0, 1].map(|r| rec[r].now + 150);
        let done = allreduce[0].max(allreduce[1]) + 1_500;
        for r in 0..2 {
            rec[r].call(4, allreduce[r], done);
        }
    }
    for r in &mut rec {
        r.call(5, r.now + 1_000, r.now + 11_000);
    }
    let mut ranks = rec.into_iter().zip(0u32..).map(|(rec, rank)| {
        let (init, body, finalize) = signatures(rank);
        let mut table: Vec<Vec<u8>> = vec![init];
        table.extend(body);
        table.push(finalize);
        let Recording {
            mut grammar,
            times,
            now,
        } = rec;
        let calls = 2 + 4 * iterations;
        let times = Some((times.bytes(), now));
        rank_trace(rank, table, grammar.grammar(rank), calls, times)
    });
    let mut trace = ranks.next().unwrap();
    trace.absorb(ranks.next().unwrap()).unwrap();
    trace.share().unwrap();
    trace
}

/// One rank of two, as the tracer records it: its signatures, the grammar
/// of its `calls` calls and, if recorded, their exact times and the
/// last call's end (else aggregated timing only).
fn rank_trace(
    rank: u32,
    signatures: Vec<Vec<u8>>,
    grammar: mpigram_grammar::Grammar,
    calls: u64,
    times: Option<(Vec<u8>, u64)>,
) -> Trace {
    let stats = (0..signatures.len())
        .map(|_| CallStats {
            count: 1,
            total_ns: 1,
            min_ns: 1,
            max_ns: 1,
            gap_ns: 0,
        })
        .collect();
    let (exact, end_ns) = times.clone().unwrap_or_default();
    Trace::from_rank(RankTrace {
        meta: RankMeta {
            rank,
            world_size: 2,
            pid: 1,
            host: "test".into(),
            mpi_library: "MPICH".into(),
            timing: Timing {
                lossy: None,
                lossless: times.is_some(),
            },
            calls,
            start_ns: 0,
            end_ns,
            ending: Ending::Finalized,
            recorder_allocations: 0,
            ns_per_tick: 1.0,
            cpus: 0,
            cpu_share: None,
            clock_sync: Vec::new(),
            run: 0,
            lost: mpigram_trace::Lost::None,
            ended_in: None,
        },
        signatures,
        grammar,
        stats,
        gaps: Default::default(),
        comms: Vec::new(),
        times: CallTimes {
            lossy: Vec::new(),
            exact,
        },
    })
}

/// A trace of two ranks with aggregated timing only (no per-call times):
/// `messages` times, rank 0 calls MPI_Comm_rank ten times and sends 8
/// bytes to rank 1, which receives them; the ranks' calls do not line up.
#[allow(dead_code)] // not every test file lints
pub fn lopsided(messages: u64) -> Trace {
    let world = predefined_handle(HandleKind::Comm, "MPI_COMM_WORLD");
    let double = predefined_handle(HandleKind::Datatype, "MPI_DOUBLE");
    let init = sig("MPI_Init", vec![Value::Buffer(BufferRef::Null); 2]);
    let finalize = sig("MPI_Finalize", vec![]);
    let other = |rank: u32| Value::Rank(Rank::Relative(if rank == 0 { 1 } else { -1 }));
    let send = sig(
        "MPI_Send",
        vec![
            buf(1),
            Value::Int(1),
            double.clone(),
            other(0),
            Value::Tag(3),
            world.clone(),
        ],
    );
    let status = Value::Status(Some(mpigram_mpispec::Status {
        source: Rank::Relative(-1),
        tag: 3,
        count: 8,
        cancelled: false,
        error: 0,
    }));
    let recv = sig(
        "MPI_Recv",
        vec![
            buf(2),
            Value::Int(1),
            double,
            other(1),
            Value::Tag(3),
            world.clone(),
            status,
        ],
    );
    let comm_rank = sig("MPI_Comm_rank", vec![world, Value::Int(0)]);
    // Rank 0: MPI_Init 0, MPI_Comm_rank 1, MPI_Send 2, MPI_Finalize 3.
    let tables = [
        vec![init.clone(), comm_rank, send, finalize.clone()],
        vec![init, recv, finalize],
    ];
    let mut ranks = tables.into_iter().zip(0u32..).map(|(table, rank)| {
        let mut grammar = Sequitur::new();
        grammar.push(0);
        for _ in 0..messages {
            if rank == 0 {
                (0..10).for_each(|_| grammar.push(1));
                grammar.push(2);
            } else {
                grammar.push(1);
            }
        }
        grammar.push(table.len() as u32 - 1);
        let calls = 2 + messages * if rank == 0 { 11 } else { 1 };
        rank_trace(rank, table, grammar.grammar(rank), calls, None)
    });
    let mut trace = ranks.next().unwrap();
    trace.absorb(ranks.next().unwrap()).unwrap();
    trace.share().unwrap();
    trace
}
