//! `mpigram gen-bench` round trips: trace a test program, generate its
//! benchmark, build it with mpicc, trace the benchmark, and check that
//! every rank made the same calls with the same arguments.
//! What may differ, and why: `common/round_trip.rs`.

mod common;

use common::round_trip::{
    assert_same_calls, build, decode, gen_bench, io_dir, run_gen_bench, trace,
};
use common::{mpigram, one_at_a_time, text};
use mpigram_testkit::{Mpi, compile_with, mpi_available};
use serde_json::Value as Json;
use std::path::Path;

/// Traces `program`, generates, builds and traces its benchmark, compares.
/// Returns the benchmark's source.
fn round_trip(program: &str, ranks: u32, args: &[&str]) -> String {
    mpi_available().unwrap();
    let mpi = Mpi::selected();
    round_trip_between(mpi, mpi, program, ranks, args)
}

/// [`round_trip`] with `program` built and traced under `from`, and its
/// benchmark built and traced under `to`.
fn round_trip_between(from: &Mpi, to: &Mpi, program: &str, ranks: u32, args: &[&str]) -> String {
    let _one = one_at_a_time();
    let exe = compile_with(from, program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (orig_dir, regen_dir) = (dir.path().join("orig"), dir.path().join("regen"));
    trace(from, &exe, ranks, args, "aggregated", &orig_dir);
    let io = io_dir(&orig_dir);
    let (c, source) = gen_bench(
        &orig_dir,
        &["--compute", "none", "--io-dir", io.to_str().unwrap()],
    );
    let bench = build(to, &c);
    trace(to, &bench, ranks, &[], "aggregated", &regen_dir);
    let compared = assert_same_calls(&decode(&orig_dir), &decode(&regen_dir));
    assert!(compared > 0, "{program}: no calls compared");
    source
}

#[test]
fn point_to_point_blocking_round_trips() {
    round_trip("p2p_blocking", 2, &[]);
    round_trip("p2p_blocking", 4, &[]);
}

#[test]
fn point_to_point_nonblocking_round_trips() {
    round_trip("p2p_nonblocking", 3, &[]);
}

#[test]
fn persistent_requests_round_trip() {
    round_trip("persistent", 2, &[]);
}

#[test]
fn wildcard_receives_are_bound_to_their_recorded_senders() {
    let source = round_trip("wildcard", 3, &[]);
    // Rank 0's receives from MPI_ANY_SOURCE name their recorded senders.
    assert!(!source.contains("MPI_ANY_SOURCE"), "{source}");
}

#[test]
fn probes_round_trip() {
    round_trip("probe", 2, &[]);
}

#[test]
fn blocking_collectives_round_trip() {
    round_trip("coll_blocking", 4, &[]);
}

#[test]
fn nonblocking_collectives_round_trip() {
    round_trip("coll_nonblocking", 2, &[]);
}

#[test]
fn persistent_collectives_round_trip() {
    round_trip("coll_persistent", 2, &[]);
}

#[test]
fn derived_datatypes_round_trip() {
    round_trip("datatype", 2, &[]);
}

#[test]
fn communicators_groups_and_intercommunicators_round_trip() {
    round_trip("comm", 4, &[]);
    round_trip("group", 2, &[]);
    round_trip("intercomm", 2, &[]);
}

#[test]
fn one_sided_windows_and_epochs_round_trip() {
    round_trip("rma_sync", 2, &[]);
    round_trip("rma_ops", 2, &[]);
}

#[test]
fn mpi_io_round_trips() {
    round_trip("mpiio", 2, &[]);
}

#[test]
fn completion_cancel_and_proc_null_round_trip() {
    round_trip("completion", 2, &[]);
    round_trip("free_cancel", 2, &[]);
    round_trip("proc_null", 2, &[]);
    round_trip("builtin_request", 2, &[]);
}

#[test]
fn attributes_topologies_and_calls_around_init_round_trip() {
    round_trip("attributes", 2, &[]);
    round_trip("topo", 2, &[]);
    round_trip("init_queries", 2, &[]);
    round_trip("comm_ids", 2, &[]);
}

#[test]
fn calls_that_fail_round_trip() {
    round_trip("errhandler", 2, &[]);
    round_trip("legacy", 2, &[]);
}

#[test]
fn single_rank_runs_round_trip() {
    round_trip("coll_blocking", 1, &[]);
    round_trip("datatype", 1, &[]);
    round_trip("mpiio", 1, &[]);
}

/// Fortran's calls reach the C functions the tracer records; the benchmark is C.
#[test]
fn fortran_programs_round_trip() {
    round_trip("fortran_basic", 2, &[]);
    round_trip("fortran_f08", 2, &[]);
}

/// Shaped like NAS IS: static arrays, an Allreduce of 1,029 bucket sizes
/// (more than 4 KiB), Alltoall of counts, Alltoallv of keys. The
/// benchmark's send buffer of the Allreduce once had 4 KiB and ran into
/// its receive buffer (MPICH aborted: memcpy ranges overlap).
#[test]
fn a_bucket_sort_like_nas_is_round_trips() {
    let source = round_trip("bucket_sort", 4, &["3"]);
    let sizes = source
        .lines()
        .find(|l| l.starts_with("static const size_t seg_bytes["))
        .expect("a table of segment sizes");
    assert_eq!(
        sizes.matches(" 4116,").count() + sizes.matches(" 4116}").count(),
        2,
        "the Allreduce's send and receive buffers: {sizes}"
    );
}

/// Threads that called MPI at once (`threads`: two a rank, each with an
/// MPI_Sendrecv ring on a communicator of its own): the benchmark makes a
/// rank's calls one after another on one thread, in the order they
/// returned, which can deadlock (IMB-MT's benchmark did). From a lossless
/// trace gen-bench refuses in one line that names the rank and its calls
/// that overlapped; `--serial-threads` generates it all the same, with a
/// note; a trace without lossless times cannot tell, and its benchmark
/// comes with a note. The same threads one at a time (MPI_THREAD_MULTIPLE
/// still) round-trip without a word.
#[test]
fn threads_that_called_mpi_at_once_are_refused() {
    mpi_available().unwrap();
    let _one = one_at_a_time();
    let mpi = Mpi::selected();
    let exe = compile_with(mpi, "threads").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let generate = |trace: &Path, extra: &[&str]| {
        let (c, out) = run_gen_bench(trace, extra);
        (out.status.code(), text(&out.stderr), c)
    };
    let at_once = dir.path().join("at_once");
    trace(mpi, &exe, 2, &[], "lossless", &at_once);
    let (code, err, c) = generate(&at_once, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mpigram: rank "), "{err}");
    assert!(err.contains(") began before its call "), "{err}");
    assert!(err.contains("--serial-threads"), "{err}");
    assert!(!c.exists());
    let (code, err, c) = generate(&at_once, &["--serial-threads"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("note: rank ") && err.contains("can deadlock"),
        "{err}"
    );
    assert!(c.exists());

    let untold = dir.path().join("untold");
    trace(mpi, &exe, 2, &[], "aggregated", &untold);
    let (code, err, _) = generate(&untold, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("note: the traced run was given MPI_THREAD_MULTIPLE"),
        "{err}"
    );

    let (orig, regen) = (dir.path().join("one_at_a_time"), dir.path().join("regen"));
    trace(mpi, &exe, 2, &["one-at-a-time"], "lossless", &orig);
    let (code, err, c) = generate(&orig, &["--compute", "none"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("thread"), "{err}");
    let bench = build(mpi, &c);
    trace(mpi, &bench, 2, &[], "aggregated", &regen);
    // The benchmark makes the threads' calls on its main thread, where
    // MPI_Is_thread_main says so (docs/gen-bench.md, "Threads").
    let without_thread_main = |calls: Vec<Json>| -> Vec<Json> {
        calls
            .into_iter()
            .map(|mut call| {
                if call["func"] == "MPI_Is_thread_main" {
                    call["args"]["flag"] = Json::Null;
                }
                call
            })
            .collect()
    };
    let compared = assert_same_calls(
        &without_thread_main(decode(&orig)),
        &without_thread_main(decode(&regen)),
    );
    assert!(compared > 0);
}

#[test]
fn halo_exchanges_round_trip() {
    round_trip("halo2d", 4, &[]);
    round_trip("halo3d", 2, &[]);
    round_trip("traffic", 3, &[]);
    round_trip("wait_states", 2, &[]);
    round_trip("critpath_ring", 2, &[]);
}

/// A benchmark generated from a trace taken under one MPI compiles and runs
/// under another, making the same calls: traces keep predefined handles
/// and named constants by their MPI names, which differ in value between
/// MPICH and Open MPI (MPI_ORDER_C is 56 in one and 0 in the other). The
/// programs are chosen for their constants: comparison results,
/// MPI_COMM_TYPE_SHARED and MPI_UNDEFINED (comm), lock types and assertion
/// flags (rma_sync), access modes and MPI_SEEK_* (mpiio), MPI_ORDER_C
/// (halo3d). Not here: datatype, whose MPI_Type_get_contents of a
/// duplicate returns a new handle in Open MPI and the old one in MPICH.
#[test]
fn benchmarks_from_one_mpi_run_under_another() {
    let (mpich, openmpi) = (Mpi::named("mpich").unwrap(), Mpi::named("openmpi").unwrap());
    for mpi in [&mpich, &openmpi] {
        assert!(
            mpi.installed(),
            "{} is not installed: scripts/setup-mpis installs it",
            mpi.name
        );
    }
    for (program, ranks, names) in [
        ("comm", 4, &["MPI_COMM_TYPE_SHARED", "MPI_UNDEFINED"][..]),
        (
            "rma_sync",
            2,
            &[
                "MPI_LOCK_EXCLUSIVE",
                "MPI_MODE_NOSTORE | MPI_MODE_NOSUCCEED",
            ][..],
        ),
        (
            "mpiio",
            2,
            &[
                "MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR",
                "MPI_SEEK_CUR",
            ][..],
        ),
        ("halo3d", 2, &["MPI_ORDER_C"][..]),
    ] {
        for (from, to) in [(&openmpi, &mpich), (&mpich, &openmpi)] {
            let source = round_trip_between(from, to, program, ranks, &[]);
            for name in names {
                assert!(
                    source.contains(name),
                    "{program} traced under {}: {name} not in the benchmark",
                    from.name
                );
            }
        }
    }
}

/// The benchmark's source grows with the trace's distinct behaviour, not
/// with its calls: ten times the iterations is the same program with
/// other loop counts.
#[test]
fn source_size_does_not_grow_with_iterations() {
    mpi_available().unwrap();
    let _one = one_at_a_time();
    let exe = compile_with(Mpi::selected(), "halo2d").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut sizes = Vec::new();
    // halo2d sums the field every 10 iterations: an outer loop of
    // iterations / 10 around the exchange.
    for (iterations, outer) in [("100", "10"), ("1000", "100")] {
        let trace_dir = dir.path().join(iterations);
        trace(
            Mpi::selected(),
            &exe,
            4,
            &[iterations],
            "aggregated",
            &trace_dir,
        );
        let (_, source) = gen_bench(&trace_dir, &["--compute", "none"]);
        let decoded = decode(&trace_dir).len();
        assert!(
            source.contains(&format!("i < {outer}L;")),
            "no loop of {outer} iterations"
        );
        sizes.push((source.len(), decoded, source.matches("for (long").count()));
    }
    assert_eq!(sizes[0].2, sizes[1].2, "the same loops");
    let ((small, calls_small, _), (large, calls_large, _)) = (sizes[0], sizes[1]);
    assert!(
        calls_large > 9 * calls_small,
        "{calls_small} vs {calls_large} calls"
    );
    assert!(
        large.abs_diff(small) <= 64,
        "source {small} bytes for {calls_small} calls, {large} bytes for {calls_large}"
    );
}

/// The busy-waits reproduce the recorded computation: the benchmark of a
/// bulk-synchronous loop with one slow rank (100 ms per iteration) runs as
/// long as the original, from MPI_Init to MPI_Finalize.
#[test]
fn recorded_computation_keeps_the_wall_time() {
    mpi_available().unwrap();
    let _one = one_at_a_time();
    let exe = compile_with(Mpi::selected(), "critpath_bsp").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let orig_dir = dir.path().join("orig");
    trace(
        Mpi::selected(),
        &exe,
        2,
        &["1", "100", "10"],
        "lossless",
        &orig_dir,
    );
    let original = wall_time(&decode(&orig_dir));
    assert!(
        original > 1.0,
        "the original computes 10 x 100 ms: {original} s"
    );
    let (c, source) = gen_bench(&orig_dir, &["--compute", "recorded"]);
    assert!(source.contains("spin("), "no computation in the benchmark");
    let bench = build(Mpi::selected(), &c);
    assert_runs_as_long(&bench, dir.path(), original);
    // With computation, the calls are still the same.
    assert_same_calls(&decode(&orig_dir), &decode(&dir.path().join("regen0")));

    // --scale 0.5 halves the computation.
    let (c, _) = gen_bench(&orig_dir, &["--compute", "recorded", "--scale", "0.5"]);
    let half = build(Mpi::selected(), &c);
    let half_dir = dir.path().join("half");
    trace(Mpi::selected(), &half, 2, &[], "lossless", &half_dir);
    let ratio = wall_time(&decode(&half_dir)) / original;
    assert!((0.4..=0.6).contains(&ratio), "scale 0.5: {ratio}");
}

/// From the default (aggregated) trace, the benchmark waits at each call
/// site the computation that preceded it there, though one signature
/// follows 20 ms at one site and 4 ms at the other (per signature both
/// would wait 12 ms), and the 50 ms of start-up once:
/// `tests/mpi/phases`, as CG of the NAS benchmarks. The short phase is
/// 4 ms, not 1: a rank descheduled for 0.2 ms in one of the five
/// iterations (seen on a loaded CI machine) moved a 1 ms mean by 23 %.
/// Being descheduled only lengthens a phase, so a wait may be up to half
/// again as long as its phase (a 4 ms mean came out 5.1 ms while another
/// build ran) but only 15 % shorter; 12 ms stays out of reach of both.
#[test]
fn aggregated_timing_places_computation_at_each_call_site() {
    mpi_available().unwrap();
    let _one = one_at_a_time();
    let exe = compile_with(Mpi::selected(), "phases").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let args = ["5", "20", "4", "50"];
    let aggregated = dir.path().join("aggregated");
    trace(Mpi::selected(), &exe, 2, &args, "aggregated", &aggregated);
    let (c, source) = gen_bench(&aggregated, &[]);
    // Every wait of the benchmark, in seconds.
    let waits: Vec<f64> = source
        .lines()
        .filter(|l| l.contains("spin(") || l.starts_with("static const double"))
        .flat_map(|l| {
            l.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
                .filter_map(|w| w.parse::<f64>().ok())
                .collect::<Vec<_>>()
        })
        .collect();
    let near = |s: f64| waits.iter().any(|&w| (0.85 * s..=1.5 * s).contains(&w));
    assert!(
        near(20e-3) && near(4e-3) && near(50e-3),
        "{waits:?}
{source}"
    );
    assert!(!near(12e-3), "a mean per signature: {waits:?}");
    // And the benchmark runs about as long as the original.
    let lossless = dir.path().join("lossless");
    trace(Mpi::selected(), &exe, 2, &args, "lossless", &lossless);
    let original = wall_time(&decode(&lossless));
    let bench = build(Mpi::selected(), &c);
    assert_runs_as_long(&bench, dir.path(), original);
}

/// Two ranks that computed on one processor (`tests/mpi/cpu_share`,
/// pinned): each recorded gap of 20 ms held about 10 ms of the rank's
/// CPU time. With `--cpu-time` the benchmark burns that CPU time, not 20
/// ms of wall time: run with a processor for each rank it takes about
/// half as long, as the program would.
#[test]
fn ranks_that_shared_a_processor_replay_their_cpu_time() {
    mpi_available().unwrap();
    let _one = one_at_a_time();
    let exe = compile_with(Mpi::selected(), "cpu_share").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let orig_dir = dir.path().join("orig");
    let args = ["10", "20000", "pinned"];
    trace(Mpi::selected(), &exe, 2, &args, "lossless", &orig_dir);
    let original = wall_time(&decode(&orig_dir));
    let (_, wall) = gen_bench(&orig_dir, &[]);
    assert!(
        !wall.contains("\n    cpu_share = "),
        "wall time unless asked: {wall}"
    );
    let (c, source) = gen_bench(&orig_dir, &["--cpu-time"]);
    assert!(source.contains("\n    cpu_share = "), "{source}");
    let bench = build(Mpi::selected(), &c);
    let regen = dir.path().join("regen");
    trace(Mpi::selected(), &bench, 2, &[], "lossless", &regen);
    assert_same_calls(&decode(&orig_dir), &decode(&regen));
    if mpigram_testkit::processors() >= 2 {
        let ratio = wall_time(&decode(&regen)) / original;
        assert!(
            (0.3..0.8).contains(&ratio),
            "benchmark / original wall time {ratio} (original {original:.3} s)"
        );
    }
}

/// The benchmark `bench`, traced three times on 2 ranks (into `dir`'s
/// `regen0`...), runs within 10 % of the `original`'s wall time (median).
fn assert_runs_as_long(bench: &Path, dir: &Path, original: f64) {
    let mut ratios: Vec<f64> = (0..3)
        .map(|i| {
            let regen = dir.join(format!("regen{i}"));
            trace(Mpi::selected(), bench, 2, &[], "lossless", &regen);
            wall_time(&decode(&regen)) / original
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    assert!(
        (0.9..=1.1).contains(&ratios[1]),
        "benchmark / original wall time: {ratios:?} (original {original:.3} s)"
    );
}

/// `--times` chooses which of a trace's per-call times the computation is
/// taken from: a run recorded with both gives the slow rank's 20 ms per
/// iteration from either, within lossy timing's 10 % (base 1.1); asking
/// for times a trace lacks is a one-line error.
#[test]
fn computation_from_the_lossy_or_the_lossless_times() {
    mpi_available().unwrap();
    let _one = one_at_a_time();
    let exe = compile_with(Mpi::selected(), "critpath_bsp").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both");
    trace(
        Mpi::selected(),
        &exe,
        2,
        &["1", "20", "5"],
        "lossy,lossless",
        &both,
    );
    // The longest wait of each rank's table of delays.
    let slowest = |source: &str| -> Vec<f64> {
        let mut longest = vec![0.0f64; 2];
        for line in source
            .lines()
            .filter(|l| l.starts_with("static const double delay_"))
        {
            let values = line.split('{').nth(1).unwrap().trim_end_matches("};");
            for (rank, v) in values.split(", ").enumerate() {
                longest[rank] = longest[rank].max(v.parse::<f64>().unwrap());
            }
        }
        longest
    };
    let (_, lossy) = gen_bench(&both, &["--times", "lossy"]);
    let (_, lossless) = gen_bench(&both, &["--times", "lossless"]);
    let (_, best) = gen_bench(&both, &[]);
    assert_eq!(best, lossless, "the exact times are the best");
    assert_ne!(lossy, lossless, "the lossy times are another source");
    let (a, b) = (slowest(&lossy)[1], slowest(&lossless)[1]);
    assert!((0.018..0.03).contains(&b), "rank 1 computes 20 ms: {b} s");
    assert!((a - b).abs() <= 0.1 * b, "lossy {a} s, lossless {b} s");

    let exact = dir.path().join("exact");
    trace(
        Mpi::selected(),
        &exe,
        2,
        &["1", "2", "1"],
        "lossless",
        &exact,
    );
    let out_c = dir.path().join("bench.c");
    let out = mpigram(&[
        "gen-bench",
        exact.to_str().unwrap(),
        "-o",
        out_c.to_str().unwrap(),
        "--times",
        "lossy",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("rank 0 has no lossy timing"), "{err}");
    assert!(!out_c.exists());
}

/// Seconds from the last rank's end of MPI_Init to the last rank's start
/// of MPI_Finalize.
fn wall_time(calls: &[Json]) -> f64 {
    let at = |func: &str, key: &str| {
        calls
            .iter()
            .filter(|c| c["func"] == func)
            .map(|c| c[key].as_i64().expect("per-call times"))
            .max()
            .unwrap_or_else(|| panic!("no {func}"))
    };
    (at("MPI_Finalize", "start_ns") - at("MPI_Init", "end_ns")) as f64 * 1e-9
}

/// A missing or corrupt trace is one line on stderr, not a panic.
#[test]
fn bad_input_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let out_c = dir.path().join("bench.c");
    let missing = dir.path().join("missing");
    let corrupt = dir.path().join("corrupt");
    std::fs::create_dir(&corrupt).unwrap();
    std::fs::write(corrupt.join("trace.mgr"), b"MGRX not a trace at all").unwrap();
    for trace in [&missing, &corrupt] {
        let out = mpigram(&[
            "gen-bench",
            trace.to_str().unwrap(),
            "-o",
            out_c.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("mpigram: "), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!out_c.exists());
    let out = mpigram(&[
        "gen-bench",
        "x",
        "-o",
        out_c.to_str().unwrap(),
        "--scale=-1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--scale"));
}
