//! Generation from small hand-built traces: loops, rank groups, arguments,
//! buffers, wildcards, polling, timing and bad input.

use crate::render::{Context, Rendered, c_string, int_lit};
use crate::{Compute, Error, Options, emit, generate};
use mpigram_mpispec::{
    BufferRef, HandleKind, HandleRef, Rank, RequestRef, Signature, Status, Value, func_by_name,
    predefined,
};
use mpigram_trace::Trace;

fn sig(name: &str, args: Vec<Value>) -> Signature {
    let (func, f) = func_by_name(name).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(
        f.params.len(),
        args.len(),
        "{name} takes {} arguments",
        f.params.len()
    );
    Signature { func, ret: 0, args }
}

fn predef(kind: HandleKind, name: &str) -> Value {
    let id = predefined(kind).iter().position(|n| *n == name).unwrap();
    Value::Handle(kind, HandleRef::Predefined(id as u32))
}

fn world() -> Value {
    predef(HandleKind::Comm, "MPI_COMM_WORLD")
}

fn int() -> Value {
    predef(HandleKind::Datatype, "MPI_INT")
}

fn seg(id: u64, offset: u64) -> Value {
    Value::Buffer(BufferRef::Segment { id, offset })
}

fn init() -> Signature {
    sig("MPI_Init", vec![seg(0, 0), seg(1, 0)])
}

fn finalize() -> Signature {
    sig("MPI_Finalize", vec![])
}

fn barrier() -> Signature {
    sig("MPI_Barrier", vec![world()])
}

fn comm_rank(rank: i64) -> Signature {
    sig("MPI_Comm_rank", vec![world(), Value::Int(rank)])
}

/// A trace of one stream of calls per rank (rank i is world rank i), each
/// call 1 µs long, recorded over `wall_ns`.
fn trace_of(ranks: Vec<Vec<Signature>>, wall_ns: u64) -> Trace {
    let calls = ranks
        .iter()
        .map(|calls| (calls.iter().map(Signature::encode).collect(), Vec::new()))
        .collect();
    Trace::of_calls(calls, wall_ns)
}

fn options(compute: Compute) -> Options {
    Options {
        compute,
        scale: 1.0,
        trace_name: "test".into(),
        io_dir: None,
        ranks: None,
        times: crate::Source::Best,
        cpu_time: false,
        serial_threads: false,
    }
}

/// Renders one signature as terminal 0 of a fresh context.
fn render(s: &Signature) -> Rendered {
    let mut ctx = Context::default();
    ctx.learn(std::slice::from_ref(s));
    ctx.render(0, s)
}

fn call_text(s: &Signature) -> String {
    match render(s) {
        Rendered::Call(code) => emit::call_statement(&code),
        Rendered::Skip(why) => panic!("skipped: {why}"),
    }
}

#[test]
fn a_million_iterations_are_one_loop() {
    let mut calls = vec![init()];
    calls.extend(std::iter::repeat_n(comm_rank(0), 1_000_000));
    calls.push(finalize());
    let bench = generate(&trace_of(vec![calls], 1000), &options(Compute::None)).unwrap();
    let src = &bench.source;
    assert!(
        src.contains("i < 1000000L; i++) { /* 1000000 calls */"),
        "{src}"
    );
    assert_eq!(src.matches("MPI_Comm_rank(MPI_COMM_WORLD").count(), 1);
    assert!(src.len() < 12_000, "{} bytes", src.len());
    assert_eq!(bench.calls, 1_000_002);
}

#[test]
fn ranks_that_behave_alike_share_their_code() {
    // Rank 0 broadcasts from itself; ranks 1-3 receive it; all then synchronise 10 times.
    let bcast = sig(
        "MPI_Bcast",
        vec![
            seg(2, 0),
            Value::Int(1),
            int(),
            Value::Rank(Rank::Absolute(0)),
            world(),
        ],
    );
    let stream = |rank: i64| {
        let mut c = vec![init(), comm_rank(rank), bcast.clone()];
        c.extend(std::iter::repeat_n(barrier(), 10));
        c.push(finalize());
        c
    };
    let bench = generate(
        &trace_of((0..4).map(stream).collect(), 1000),
        &options(Compute::None),
    )
    .unwrap();
    let src = &bench.source;
    // Ranks differ only in what MPI_Comm_rank returned: 4 start rules...
    assert!(src.contains("if (world_rank == 0) /* rank 0:"), "{src}");
    assert!(
        src.contains("else if (world_rank == 3) /* rank 3:"),
        "{src}"
    );
    // ...which share one function for the broadcast and the loop.
    assert_eq!(src.matches("MPI_Bcast(").count(), 1, "{src}");
    assert_eq!(src.matches("MPI_Barrier(").count(), 1, "{src}");
    assert!(src.contains("; ranks 0-3; "), "{src}");
}

#[test]
fn rank_conditions_use_ranges() {
    assert_eq!(
        emit::rank_condition(&[7, 0, 1, 2, 5, 8]),
        "(world_rank >= 0 && world_rank <= 2) || world_rank == 5 || (world_rank >= 7 && world_rank <= 8)"
    );
    assert_eq!(emit::rank_list(&[3, 1, 2, 9]), "1-3, 9");
    assert_eq!(emit::ranks_phrase(&[4]), "rank 4");
}

#[test]
fn arguments_are_rank_independent_c() {
    let isend = sig(
        "MPI_Isend",
        vec![
            seg(3, 16),
            Value::Int(4),
            Value::Handle(HandleKind::Datatype, HandleRef::User(2)),
            Value::Rank(Rank::Relative(1)),
            Value::Tag(7),
            world(),
            Value::Request(RequestRef::Pooled { pool: 5, index: 0 }),
        ],
    );
    assert_eq!(
        call_text(&isend),
        "MPI_Isend((void *)(segs[3] + 16), 4, types[2], world_rank + 1, 7, MPI_COMM_WORLD, &reqs[0]);"
    );
    // A rank in a user communicator is relative to the caller's rank in it.
    let send = sig(
        "MPI_Send",
        vec![
            Value::Buffer(BufferRef::InPlace),
            Value::Int(1),
            int(),
            Value::Rank(Rank::Relative(-2)),
            Value::Tag(-1),
            Value::Handle(HandleKind::Comm, HandleRef::User(1)),
        ],
    );
    assert_eq!(
        call_text(&send),
        "MPI_Send(MPI_IN_PLACE, 1, MPI_INT, rank_in(comms[1]) - 2, MPI_ANY_TAG, comms[1]);"
    );
}

#[test]
fn a_wildcard_receive_is_bound_to_the_recorded_sender() {
    let status = Status {
        source: Rank::Relative(-1),
        tag: 3,
        count: 4,
        cancelled: false,
        error: 0,
    };
    let recv = sig(
        "MPI_Recv",
        vec![
            seg(2, 0),
            Value::Int(1),
            int(),
            Value::Rank(Rank::AnySource),
            Value::Tag(-1),
            world(),
            Value::Status(Some(status)),
        ],
    );
    let text = call_text(&recv);
    assert!(
        text.contains("MPI_INT, world_rank - 1, MPI_ANY_TAG,"),
        "{text}"
    );
}

#[test]
fn polling_repeats_until_the_recorded_success_and_empty_polls_are_dropped() {
    let test = |flag: i64| {
        sig(
            "MPI_Test",
            vec![
                Value::Request(RequestRef::Pooled { pool: 0, index: 0 }),
                Value::Int(flag),
                Value::Status(None),
            ],
        )
    };
    assert_eq!(
        call_text(&test(1)),
        "{\n    int flag = 0;\n    do\n        MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE);\n    while (!flag);\n}"
    );
    assert!(matches!(render(&test(0)), Rendered::Skip(_)));
}

#[test]
fn segments_hold_the_largest_offset_plus_extent() {
    // vector(3, 2, 4, MPI_INT): extent (2 * 4 + 2) * 4 = 40 bytes.
    let vector = sig(
        "MPI_Type_vector",
        vec![
            Value::Int(3),
            Value::Int(2),
            Value::Int(4),
            int(),
            Value::Handle(HandleKind::Datatype, HandleRef::User(0)),
        ],
    );
    let send = sig(
        "MPI_Send",
        vec![
            seg(5, 1000),
            Value::Int(2),
            Value::Handle(HandleKind::Datatype, HandleRef::User(0)),
            Value::Rank(Rank::Relative(1)),
            Value::Tag(0),
            world(),
        ],
    );
    let sigs = [&vector, &send];
    let extents = crate::buffers::Extents::of(&sigs);
    assert_eq!(
        extents.extent(Some(HandleRef::User(0))),
        Some(40),
        "vector extent"
    );
    let sizes = crate::buffers::segment_sizes(&sigs, &extents, 2);
    assert_eq!(sizes[5].bytes, 1080);
    assert!(!sizes[5].guessed);
}

#[test]
fn a_reductions_send_buffer_holds_its_count() {
    // IS's Allreduce of 1,029 ints from a static array: 4,116 bytes each side.
    let allreduce = sig(
        "MPI_Allreduce",
        vec![
            seg(3, 0),
            seg(4, 0),
            Value::Int(1029),
            int(),
            predef(HandleKind::Op, "MPI_SUM"),
            world(),
        ],
    );
    // Reduce_scatter: the send buffer holds every block, the receive buffer one.
    let reduce_scatter = sig(
        "MPI_Reduce_scatter",
        vec![
            seg(5, 8),
            seg(6, 0),
            Value::Array(Some(vec![Value::Int(10), Value::Int(20), Value::Int(30)])),
            int(),
            predef(HandleKind::Op, "MPI_SUM"),
            world(),
        ],
    );
    let sigs = [&allreduce, &reduce_scatter];
    let sizes = crate::buffers::segment_sizes(&sigs, &crate::buffers::Extents::of(&sigs), 3);
    let bytes: Vec<u64> = sizes.iter().map(|s| s.bytes).collect();
    assert_eq!(bytes[3..], [4116, 4116, 8 + 240, 240]);
    assert!(sizes.iter().all(|s| !s.guessed));
}

#[test]
fn sizes_the_trace_cannot_tell_err_large_and_say_so() {
    // MPI_File_read_all_end's buffer has no count: the begin call had it.
    let read_end = sig(
        "MPI_File_read_all_end",
        vec![
            Value::Handle(HandleKind::File, HandleRef::User(0)),
            seg(2, 0),
            Value::Status(None),
        ],
    );
    // A type of unknown extent (MPI_Type_create_f90_real's).
    let send = sig(
        "MPI_Send",
        vec![
            seg(3, 0),
            Value::Int(2),
            Value::Handle(HandleKind::Datatype, HandleRef::User(7)),
            Value::Rank(Rank::Relative(1)),
            Value::Tag(0),
            world(),
        ],
    );
    let bench = generate(
        &trace_of(vec![vec![init(), read_end, send, finalize()]], 10),
        &options(Compute::None),
    )
    .unwrap();
    let src = &bench.source;
    assert!(src.contains(", 1048576, 8192};"), "{src}");
    assert!(
        src.contains("/* Sizes guessed, on the large side, for segments 2-3:"),
        "{src}"
    );
}

#[test]
fn c_literals_are_exact() {
    assert_eq!(c_string(b"a\"b\\c?\n\xff"), r#""a\"b\\c\?\012\377""#);
    assert_eq!(int_lit(-5), "-5");
    assert_eq!(int_lit(1 << 40), "1099511627776LL");
    assert_eq!(int_lit(i64::from(i32::MIN)), "(-2147483647 - 1)");
}

#[test]
fn aggregated_timing_spreads_each_ranks_computation_over_its_calls() {
    // 4 calls of 1 µs in 1 ms: 996 µs outside MPI, 249 µs before each call.
    let calls = vec![init(), barrier(), barrier(), finalize()];
    let bench = generate(
        &trace_of(vec![calls], 1_000_000),
        &options(Compute::Recorded),
    )
    .unwrap();
    assert!(bench.source.contains("spin(2.490e-4);"), "{}", bench.source);
    let [note] = &bench.notes[..] else {
        panic!("recorded falls back to mean: {:?}", bench.notes)
    };
    assert!(note.contains("no gaps by call site"), "{note}");
    let none = generate(
        &trace_of(vec![vec![init(), barrier(), finalize()]], 1_000_000),
        &options(Compute::None),
    )
    .unwrap();
    assert!(!none.source.contains("spin(2"), "{}", none.source);
}

#[test]
fn aggregated_timing_waits_each_signatures_recorded_gap() {
    // 300 µs before each barrier, 10 µs before MPI_Finalize: per signature
    // the shortest mean gap is computation too, waited in full.
    let mut t = trace_of(
        vec![vec![init(), barrier(), barrier(), finalize()]],
        1_000_000,
    );
    let (barrier_bytes, finalize_bytes) = (barrier().encode(), finalize().encode());
    for (term, s) in &mut t.ranks[0].stats {
        let bytes = &t.signatures[*term as usize];
        s.gap_ns = if *bytes == barrier_bytes {
            300_000 * s.count
        } else if *bytes == finalize_bytes {
            10_000
        } else {
            0
        };
    }
    let bench = generate(&t, &options(Compute::Mean)).unwrap();
    let src = &bench.source;
    assert!(src.contains("spin(3.000e-4);"), "{src}");
    assert!(src.contains("spin(1.000e-5);"), "{src}");
    assert!(!src.contains("spin(2.490e-4);"), "{src}");
    assert!(
        src.contains("aggregated timing: mean gap before each call signature"),
        "{src}"
    );
}

#[test]
fn aggregated_timing_places_computation_by_the_call_before_and_the_first_call() {
    // A barrier after 1 ms of computation when MPI_Comm_rank gave 1 before
    // it, after 10 µs when it gave 2, and after 20 ms of start-up the first
    // time: per signature, 0.5 ms before each would be waited everywhere.
    let mut calls = vec![init(), comm_rank(0)];
    for _ in 0..10 {
        calls.extend([comm_rank(1), barrier(), comm_rank(2), barrier()]);
    }
    calls.push(finalize());
    let mut t = trace_of(vec![calls], 1_000_000_000);
    let term = |s: Signature| {
        let bytes = s.encode();
        t.signatures.iter().position(|b| *b == bytes).unwrap() as u32
    };
    let (b, one, two) = (term(barrier()), term(comm_rank(1)), term(comm_rank(2)));
    let after_one = 20_000_000 + 9 * 1_000_000;
    let after_two = 10 * 10_000;
    let part = &mut t.ranks[0];
    let stats = &mut part.stats.iter_mut().find(|(u, _)| *u == b).unwrap().1;
    stats.gap_ns = after_one + after_two;
    part.gaps = mpigram_trace::Gaps {
        pairs: vec![
            mpigram_trace::PairGap {
                terminal: b,
                pred: one,
                gap_ns: after_one,
            },
            mpigram_trace::PairGap {
                terminal: b,
                pred: two,
                gap_ns: after_two,
            },
        ],
        firsts: vec![(b, 20_000_000)],
    };
    let bench = generate(&t, &options(Compute::Recorded)).unwrap();
    let src = &bench.source;
    assert!(src.contains(", 2.000e-2) : 1.000e-3);"), "{src}");
    assert!(src.contains("spin(1.000e-5);"), "{src}");
    assert!(src.contains("by the calls before it"), "{src}");
    assert!(bench.notes.is_empty(), "{:?}", bench.notes);
    // Asked for the mean per signature: 1.5 ms before each barrier.
    let bench = generate(&t, &options(Compute::Mean)).unwrap();
    assert!(bench.source.contains("spin(1.455e-3);"), "{}", bench.source);
    assert!(!bench.source.contains("first_"), "{}", bench.source);
}

/// `calls` on one rank with lossless times: each call lasts 1 µs and
/// follows the gap given with it (nanoseconds).
fn timed_trace(calls: Vec<(Signature, u64)>) -> Trace {
    let mut t = trace_of(vec![calls.iter().map(|(s, _)| s.clone()).collect()], 1);
    let mut times = mpigram_trace::timing::ExactWriter::default();
    let mut now = 0;
    for (_, gap) in &calls {
        now += gap;
        times.push(now, now + 1000);
        now += 1000;
    }
    let part = &mut t.ranks[0];
    part.meta.timing.lossless = true;
    part.meta.end_ns = now;
    part.times.exact = times.bytes();
    t
}

#[test]
fn recorded_computation_keeps_a_loops_longer_first_gap_apart() {
    // Start-up (10 ms) before the first of 5 barriers, then 1 ms before each;
    // the shortest gap (2 µs, before MPI_Finalize) is the tracer's own.
    let mut calls = vec![(init(), 0), (comm_rank(0), 0), (barrier(), 10_002_000)];
    calls.extend(std::iter::repeat_n((barrier(), 1_002_000), 4));
    calls.push((finalize(), 2_000));
    let bench = generate(&timed_trace(calls), &options(Compute::Recorded)).unwrap();
    let src = &bench.source;
    assert!(
        src.contains("spin(first_0_2 ? (first_0_2 = 0, 1.000e-2) : 1.000e-3);"),
        "{src}"
    );
    assert!(src.contains("static int first_0_2 = 1;"), "{src}");
    assert!(bench.notes.is_empty(), "{:?}", bench.notes);
    // Ten times alike: one mean, no first-call test.
    let mut calls = vec![(init(), 0), (comm_rank(0), 0)];
    calls.extend(std::iter::repeat_n((barrier(), 1_002_000), 10));
    calls.push((finalize(), 2_000));
    let bench = generate(&timed_trace(calls), &options(Compute::Recorded)).unwrap();
    assert!(bench.source.contains("spin(1.000e-3);"), "{}", bench.source);
    assert!(!bench.source.contains("first_"), "{}", bench.source);
}

/// With `--cpu-time`, where a host ran more ranks than they had
/// processors, each rank's waits burn its recorded share of a processor
/// in CPU time (set in main, a table where ranks differ); with a
/// processor each, or no share measured, or without `--cpu-time`, they
/// spin wall time as recorded.
#[test]
fn ranks_that_shared_processors_burn_their_share_in_cpu_time() {
    let cpu_time = Options {
        cpu_time: true,
        serial_threads: false,
        ..options(Compute::Recorded)
    };
    let shared = |cpus: [u32; 3], shares: [Option<f64>; 3], hosts: [&str; 3]| {
        let calls = vec![init(), barrier(), barrier(), finalize()];
        let mut t = trace_of(vec![calls.clone(), calls.clone(), calls], 1_000_000);
        for (r, part) in t.ranks.iter_mut().enumerate() {
            part.meta.cpus = cpus[r];
            part.meta.cpu_share = shares[r];
            part.meta.host = hosts[r].into();
        }
        let bench = generate(&t, &cpu_time).unwrap();
        let wall = generate(&t, &options(Compute::Recorded)).unwrap();
        assert!(
            !wall.source.contains("\n    cpu_share = "),
            "{}",
            wall.source
        );
        // Without --cpu-time, a note says where it would apply.
        let crowded = bench.source.contains("\n    cpu_share = ");
        let said = wall.notes.iter().any(|n| n.contains("(--cpu-time waits"));
        assert_eq!(said, crowded, "{:?}", wall.notes);
        (crate::timing::processor_shares(&t), bench.source)
    };
    // Three ranks on two processors: each its share, in a table.
    let (shares, src) = shared([2; 3], [Some(0.5), Some(0.75), Some(0.5)], ["a"; 3]);
    assert_eq!(shares, [Some(0.5), Some(0.75), Some(0.5)]);
    assert!(
        src.contains("static const double cpu_share_by_rank[3] = {5.000e-1, 7.500e-1, 5.000e-1};"),
        "{src}"
    );
    assert!(
        src.contains("    cpu_share = cpu_share_by_rank[world_rank];"),
        "{src}"
    );
    assert!(src.contains("as CPU time"), "the header says so: {src}");
    // The same share everywhere: a literal.
    let (_, src) = shared([1; 3], [Some(0.3); 3], ["a"; 3]);
    assert!(src.contains("    cpu_share = 3.000e-1;"), "{src}");
    // Hosts with a processor for each of their ranks (two on one with
    // two, one on another), and a rank without a share: wall time.
    let (shares, src) = shared(
        [2, 2, 1],
        [Some(0.5), Some(0.4), Some(0.9)],
        ["a", "a", "b"],
    );
    assert_eq!(shares, [None; 3]);
    assert!(!src.contains("\n    cpu_share = "), "{src}");
    let (shares, _) = shared([1; 3], [Some(0.5), None, Some(0.5)], ["a"; 3]);
    assert_eq!(shares, [Some(0.5), None, Some(0.5)]);
    // Unknown processors (older traces): wall time.
    let (shares, _) = shared([0; 3], [Some(0.5); 3], ["a"; 3]);
    assert_eq!(shares, [None; 3]);
}

#[test]
fn a_trace_without_every_rank_or_without_mpi_init_is_refused() {
    let mut t = trace_of(vec![vec![init(), finalize()], vec![init(), finalize()]], 10);
    t.ranks.pop();
    assert!(matches!(
        generate(&t, &options(Compute::None)),
        Err(Error::MissingRank(1, 2))
    ));
    let t = trace_of(vec![vec![barrier()]], 10);
    assert!(matches!(
        generate(&t, &options(Compute::None)),
        Err(Error::NoInit)
    ));
}

#[test]
fn the_tool_interface_is_not_reproduced_and_is_reported() {
    let calls = vec![
        init(),
        sig("MPI_T_init_thread", vec![Value::Int(0), Value::Int(0)]),
        finalize(),
    ];
    let bench = generate(&trace_of(vec![calls], 10), &options(Compute::None)).unwrap();
    assert_eq!(bench.skipped.len(), 1, "{:?}", bench.skipped);
    assert!(bench.skipped[0].0.starts_with("MPI_T_init_thread"));
    assert!(
        bench
            .source
            .contains("/* not reproduced: MPI_T_init_thread")
    );
}

#[test]
fn an_absurd_segment_id_is_an_error_not_an_allocation() {
    let send = sig(
        "MPI_Send",
        vec![
            seg(1 << 40, 0),
            Value::Int(1),
            int(),
            Value::Rank(Rank::Relative(0)),
            Value::Tag(0),
            world(),
        ],
    );
    let t = trace_of(vec![vec![init(), send, finalize()]], 10);
    let err = generate(&t, &options(Compute::None)).unwrap_err();
    assert!(matches!(err, Error::TooLarge(_)), "{err}");
    assert!(
        err.to_string().contains("segment id 1099511627776"),
        "{err}"
    );
}

/// Generation works on the grammar: a trace of 10^8 MPI_Comm_rank calls
/// and a loop of 10^9 wildcard receives (bound to their sender), with a
/// call the MPI library made after MPI_Finalize, is generated without
/// expanding a call (expanding would take minutes and gigabytes; the time
/// is measured by scripts/bench-gen-bench, not here).
#[test]
fn huge_repeat_counts_are_generated_from_the_grammar() {
    use mpigram_grammar::{Grammar, Run, Symbol};
    let irecv = sig(
        "MPI_Irecv",
        vec![
            seg(2, 0),
            Value::Int(1),
            int(),
            Value::Rank(Rank::AnySource),
            Value::Tag(0),
            world(),
            Value::Request(RequestRef::Pooled { pool: 0, index: 0 }),
        ],
    );
    let status = Status {
        source: Rank::Relative(0),
        tag: 0,
        count: 4,
        cancelled: false,
        error: 0,
    };
    let wait = sig(
        "MPI_Wait",
        vec![
            Value::Request(RequestRef::Pooled { pool: 0, index: 0 }),
            Value::Status(Some(status)),
        ],
    );
    let free_keyval = sig(
        "MPI_Comm_free_keyval",
        vec![Value::Handle(HandleKind::Keyval, HandleRef::User(0))],
    );
    let sigs = [init(), comm_rank(0), irecv, wait, finalize(), free_keyval];
    let mut t = trace_of(vec![sigs.to_vec()], 1_000_000_000);
    t.signatures = sigs.iter().map(Signature::encode).collect();
    let term = |t: u32| Symbol::Terminal(t);
    t.grammar = Grammar::new(
        vec![
            vec![Run::new(term(2), 1), Run::new(term(3), 1)],
            vec![
                Run::new(term(0), 1),
                Run::new(term(1), 100_000_000),
                Run::new(Symbol::Rule(0), 1_000_000_000),
                Run::new(term(4), 1),
                Run::new(term(5), 1),
            ],
        ],
        vec![(0, 1)],
    )
    .unwrap();
    let part = &mut t.ranks[0];
    part.meta.calls = 2_100_000_003;
    part.stats = (0..6)
        .map(|terminal| (terminal, mpigram_trace::CallStats::default()))
        .collect();
    let bench = generate(&t, &options(Compute::Recorded)).unwrap();
    let src = &bench.source;
    assert_eq!(bench.calls, 2_100_000_003);
    assert!(
        src.contains("i < 100000000L; i++) { /* 100000000 calls */"),
        "{src}"
    );
    assert!(
        src.contains("i < 1000000000L; i++) { /* 1000000000 x rule 0"),
        "{src}"
    );
    // Bound to the recorded sender (the rank itself), found on the grammar.
    assert!(
        src.contains("MPI_Irecv((void *)segs[2], 1, MPI_INT, world_rank, 0,"),
        "{src}"
    );
    assert!(
        src.contains("/* not reproduced: MPI_Comm_free_keyval after MPI_Finalize"),
        "{src}"
    );
}

mod lossy;
mod ranks;
