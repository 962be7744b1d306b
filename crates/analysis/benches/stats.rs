//! `Stats::of` on large traces: 10^8 calls of a halo-like loop on 4 ranks
//! (counted on the grammar), a loop that redefines a datatype every
//! iteration (walked in order), and, if `MPIGRAM_BENCH_TRACE` names a
//! trace directory, that trace (e.g. from a real run under the tracer).
//! Also `diff` of two such 10^8-call traces: equal, and differing in the
//! last iteration (found without expanding them).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mpigram_analysis::stats::Stats;
use mpigram_grammar::{Grammar, Run, Symbol};
use mpigram_mpispec::{
    BufferRef, HandleKind, HandleRef, Rank, RequestRef, Signature, Value, func_by_name, predefined,
};
use mpigram_trace::{CallStats, Ending, RankMeta, RankPart, Timing, Trace};
use std::hint::black_box;
use std::path::PathBuf;

fn sig(func: &str, args: Vec<Value>) -> Vec<u8> {
    let (func, _) = func_by_name(func).unwrap();
    Signature { func, ret: 0, args }.encode()
}

fn handle(kind: HandleKind, name: &str) -> Value {
    let id = predefined(kind).iter().position(|n| *n == name).unwrap();
    Value::Handle(kind, HandleRef::Predefined(id as u32))
}

fn world() -> Value {
    handle(HandleKind::Comm, "MPI_COMM_WORLD")
}

fn double() -> Value {
    handle(HandleKind::Datatype, "MPI_DOUBLE")
}

fn buf() -> Value {
    Value::Buffer(BufferRef::Segment { id: 2, offset: 0 })
}

fn request(pool: u64) -> Value {
    Value::Request(RequestRef::Pooled { pool, index: 0 })
}

/// A trace of `ranks` ranks whose streams are `rules`' last rule, with
/// `signatures` as the signature table.
fn trace(ranks: u32, signatures: Vec<Vec<u8>>, rules: Vec<Vec<Run>>) -> Trace {
    let start = rules.len() as u32 - 1;
    let grammar = Grammar::new(rules, (0..ranks).map(|r| (r, start)).collect()).unwrap();
    let counts = grammar.terminal_counts(start);
    let calls = grammar.rule_len(start);
    let parts = (0..ranks)
        .map(|rank| RankPart {
            meta: RankMeta {
                rank,
                world_size: ranks,
                pid: 1,
                host: "bench".into(),
                mpi_library: "MPICH".into(),
                timing: Timing::default(),
                calls,
                start_ns: 0,
                end_ns: 1,
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
            stats: counts
                .iter()
                .map(|&(t, n)| {
                    let s = CallStats {
                        count: n,
                        total_ns: n * 500,
                        min_ns: 400,
                        max_ns: 900,
                        gap_ns: 2_000,
                    };
                    (t, s)
                })
                .collect(),
            gaps: Default::default(),
            comms: Vec::new(),
            times: Default::default(),
        })
        .collect();
    Trace {
        dir: PathBuf::new(),
        signatures,
        grammar,
        ranks: parts,
        run_start_ns: None,
        rank_stats: Default::default(),
        skipped: Vec::new(),
        notes: Vec::new(),
    }
}

fn t(terminal: u32) -> Run {
    Run::terminal(terminal)
}

/// 4 ranks × (2 + 5 × 5 000 000) calls: a ring Isend/Irecv/Waitall of 1000
/// doubles, an Allreduce and a Comm_rank per iteration.
fn halo_loop() -> Trace {
    let signatures = vec![
        sig(
            "MPI_Init",
            vec![
                Value::Buffer(BufferRef::Null),
                Value::Buffer(BufferRef::Null),
            ],
        ),
        sig("MPI_Comm_rank", vec![world(), Value::Int(0)]),
        sig(
            "MPI_Isend",
            vec![
                buf(),
                Value::Int(1000),
                double(),
                Value::Rank(Rank::Relative(1)),
                Value::Tag(0),
                world(),
                request(0),
            ],
        ),
        sig(
            "MPI_Irecv",
            vec![
                buf(),
                Value::Int(1000),
                double(),
                Value::Rank(Rank::Relative(-1)),
                Value::Tag(0),
                world(),
                request(1),
            ],
        ),
        sig(
            "MPI_Waitall",
            vec![
                Value::Int(2),
                Value::Array(Some(vec![request(0), request(1)])),
                Value::Array(None),
            ],
        ),
        sig(
            "MPI_Allreduce",
            vec![
                buf(),
                buf(),
                Value::Int(1),
                double(),
                handle(HandleKind::Op, "MPI_SUM"),
                world(),
            ],
        ),
        sig("MPI_Finalize", vec![]),
    ];
    let body = (1..=5).map(t).collect();
    let main = vec![t(0), Run::new(Symbol::Rule(0), 5_000_000), t(6)];
    trace(4, signatures, vec![body, main])
}

/// 2 ranks × 3 × 2 × 500 000 calls: a contiguous type built, sent once and
/// freed every iteration, 2 doubles in the first half of the run and 3 in
/// the second: the same `type0` means two sizes, so the ranks are walked.
fn type_loop() -> Trace {
    let type0 = Value::Handle(HandleKind::Datatype, HandleRef::User(0));
    let contiguous = |n| {
        sig(
            "MPI_Type_contiguous",
            vec![Value::Int(n), double(), type0.clone()],
        )
    };
    let signatures = vec![
        contiguous(2),
        contiguous(3),
        sig(
            "MPI_Send",
            vec![
                buf(),
                Value::Int(1),
                type0.clone(),
                Value::Rank(Rank::Relative(0)),
                Value::Tag(0),
                world(),
            ],
        ),
        sig("MPI_Type_free", vec![type0.clone()]),
    ];
    let rules = vec![
        vec![t(0), t(2), t(3)],
        vec![t(1), t(2), t(3)],
        vec![
            Run::new(Symbol::Rule(0), 500_000),
            Run::new(Symbol::Rule(1), 500_000),
        ],
    ];
    trace(2, signatures, rules)
}

fn stats(c: &mut Criterion) {
    let mut group = c.benchmark_group("stats");
    group.sample_size(20);
    let halo = halo_loop();
    let calls = halo.grammar.total_len();
    assert_eq!(calls, 100_000_008);
    group.throughput(Throughput::Elements(calls));
    group.bench_function("halo_loop/100M_calls", |b| {
        b.iter(|| Stats::of(black_box(&halo)).unwrap())
    });
    let types = type_loop();
    let stats = Stats::of(&types).unwrap();
    assert_eq!(stats.expanded_ranks, [0, 1]);
    group.throughput(Throughput::Elements(types.grammar.total_len()));
    group.bench_function("type_loop_walked/6M_calls", |b| {
        b.iter(|| Stats::of(black_box(&types)).unwrap())
    });
    if let Some(dir) = std::env::var_os("MPIGRAM_BENCH_TRACE") {
        let real = Trace::open(std::path::Path::new(&dir)).unwrap();
        group.throughput(Throughput::Elements(real.grammar.total_len()));
        group.bench_function("real_trace", |b| {
            b.iter(|| Stats::of(black_box(&real)).unwrap())
        });
        group.bench_function("real_trace_open_and_stats", |b| {
            b.iter(|| Stats::of(&Trace::open(std::path::Path::new(&dir)).unwrap()).unwrap())
        });
    }
    group.finish();
}

fn diff(c: &mut Criterion) {
    use mpigram_analysis::diff::{Options, diff};
    let mut group = c.benchmark_group("diff");
    group.sample_size(20);
    let a = halo_loop();
    let b = halo_loop();
    // B's last iteration skips its MPI_Allreduce: the loop runs once less
    // and the body without it follows.
    let mut c2 = halo_loop();
    let rules = vec![
        (1..=5).map(t).collect(),
        (1..=4).map(t).collect(),
        vec![
            t(0),
            Run::new(Symbol::Rule(0), 4_999_999),
            Run::new(Symbol::Rule(1), 1),
            t(6),
        ],
    ];
    c2.grammar = Grammar::new(rules, (0..4).map(|r| (r, 2)).collect()).unwrap();
    let options = Options::default();
    let same = mpigram_analysis::diff::diff(&a, &b, &options).unwrap();
    assert!(same.same_calls());
    let d = mpigram_analysis::diff::diff(&a, &c2, &options).unwrap();
    assert_eq!(d.differences[0].first, 25_000_000);
    group.throughput(Throughput::Elements(a.grammar.total_len() * 2));
    group.bench_function("equal/2x100M_calls", |bench| {
        bench.iter(|| diff(black_box(&a), black_box(&b), &options).unwrap())
    });
    group.bench_function("last_iteration_differs/2x100M_calls", |bench| {
        bench.iter(|| diff(black_box(&a), black_box(&c2), &options).unwrap())
    });
    group.finish();
}

criterion_group!(benches, stats, diff);
criterion_main!(benches);
