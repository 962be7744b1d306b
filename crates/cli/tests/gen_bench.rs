//! `mpigram gen-bench` round trips: trace a test program, generate its
//! benchmark, build it with mpicc, trace the benchmark, and check that
//! every rank made the same calls with the same arguments.
//!
//! What may differ, and why:
//! - memory segment ids (`seg7+16` vs `seg3+16`: the benchmark allocates
//!   differently); offsets must agree;
//! - call numbers and times, and polling calls that found nothing (MPI_Test with
//!   flag 0, ...): how often a program polls depends on timing;
//! - a wildcard receive's source: the benchmark binds it to the recorded
//!   sender, so the original's MPI_ANY_SOURCE may be that rank (its
//!   status, compared, still says who sent);
//! - MPI-IO statuses other than their count, and the cancelled flag of a
//!   probe's status (MPI leaves them undefined: they hold what the
//!   program's status variable held before);
//! - error codes beyond their class (MPICH numbers each error instance),
//!   and MPI_Error_string's text (it names the failing call's addresses);
//! - which requests a Waitany, Testany, Waitsome or Testsome completed
//!   (timing; the benchmark waits for the recorded ones first, but others
//!   may have completed too): only the call and its request count.

mod common;

use common::{mpigram, one_at_a_time, text};
use mpigram_testkit::{Mpi, compile_with, mpi_available, mpiexec};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A traced run of `exe ARGS` under `mpi` on `ranks` ranks with `timing`
/// into `dir`; returns the run's wall time.
fn trace(mpi: &Mpi, exe: &Path, ranks: u32, args: &[&str], timing: &str, dir: &Path) -> Duration {
    let lib = text(&mpigram(&["lib"]).stdout).trim().to_owned();
    let run = mpiexec(ranks, exe, args)
        .mpi(mpi)
        .preload(&lib)
        .env("MPIGRAM_OUT", dir)
        .env("MPIGRAM_TIMING", timing)
        // Scratch files (mpiio's) in the run's own directory.
        .env("TMPDIR", io_dir(dir))
        .timeout(Duration::from_secs(120))
        .run()
        .unwrap();
    assert!(
        run.success(),
        "{}: {}\n{}",
        run.command,
        run.stdout,
        run.stderr
    );
    run.elapsed
}

/// Where a traced run in `dir`, and its benchmark, keep their files.
fn io_dir(dir: &Path) -> PathBuf {
    let io = dir.with_extension("io");
    std::fs::create_dir_all(&io).unwrap();
    io
}

/// The generated source of the trace in `dir`.
fn gen_bench(dir: &Path, extra: &[&str]) -> (PathBuf, String) {
    let c = dir.with_extension("bench.c");
    let mut args = vec![
        "gen-bench",
        dir.to_str().unwrap(),
        "-o",
        c.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = mpigram(&args);
    assert!(out.status.success(), "gen-bench: {}", text(&out.stderr));
    let source = std::fs::read_to_string(&c).unwrap();
    (c, source)
}

/// Builds a generated benchmark with `mpi`'s mpicc, as a user would:
/// without a warning.
fn build(mpi: &Mpi, c: &Path) -> PathBuf {
    let exe = c.with_extension("");
    let out = Command::new(&mpi.cc)
        .envs(mpi.env.iter().cloned())
        .args(["-O1", "-Wall", "-o"])
        .arg(&exe)
        .arg(c)
        .output()
        .unwrap();
    assert!(out.status.success(), "mpicc: {}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("warning"),
        "mpicc -Wall warns about {}:\n{}",
        c.display(),
        text(&out.stderr)
    );
    exe
}

/// Every call of every rank, as `mpigram decode --format jsonl` prints them.
fn decode(dir: &Path) -> Vec<Json> {
    let out = mpigram(&["decode", dir.to_str().unwrap(), "--format", "jsonl"]);
    assert!(out.status.success(), "decode: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const POLLS: &[&str] = &[
    "MPI_Test",
    "MPI_Testall",
    "MPI_Testany",
    "MPI_Iprobe",
    "MPI_Improbe",
    "MPI_Request_get_status",
    "MPI_Win_test",
    "MPI_Parrived",
];

/// Completion calls whose outcome (which of the requests completed) is
/// timing: the benchmark waits for the recorded ones, but more may have
/// completed by then.
const ANY_OR_SOME: &[&str] = &["MPI_Waitany", "MPI_Testany", "MPI_Waitsome", "MPI_Testsome"];

/// A call as compared: see the module's comment for what is left out.
fn comparable(call: &Json) -> Option<Json> {
    let func = call["func"].as_str().unwrap();
    let args = &call["args"];
    let found_nothing = (POLLS.contains(&func) && args["flag"] == 0)
        || (func == "MPI_Testsome" && args["outcount"] == 0);
    if found_nothing {
        return None;
    }
    let mut c = call.clone();
    let o = c.as_object_mut().unwrap();
    o.remove("seq");
    o.remove("start_ns");
    o.remove("end_ns");
    if ANY_OR_SOME.contains(&func) {
        let count = args.get("incount").or(args.get("count")).cloned();
        o.insert("args".into(), serde_json::json!({ "count": count }));
        return Some(c);
    }
    if let Some(ret) = o.get("ret").and_then(Json::as_i64) {
        o.insert("ret".into(), Json::from(ret & 0x7f));
    }
    let args = o.get_mut("args").unwrap().as_object_mut().unwrap();
    if let Some(code) = args.get("errorcode").and_then(Json::as_i64) {
        args.insert("errorcode".into(), Json::from(code & 0x7f));
    }
    if func == "MPI_Error_string" {
        // The text names the failing call's arguments, buffer addresses included.
        args.remove("string");
        args.remove("resultlen");
    }
    for v in args.values_mut() {
        mask_segments(v);
        if func.starts_with("MPI_File_") && v.get("count").is_some() {
            *v = serde_json::json!({ "count": v["count"] });
        }
        if func.to_ascii_lowercase().contains("probe") {
            if let Some(status) = v.as_object_mut() {
                status.remove("cancelled");
            }
        }
    }
    Some(c)
}

fn mask_segments(v: &mut Json) {
    match v {
        Json::String(s) if s.starts_with("seg") && s.contains('+') => {
            let offset = s.split('+').nth(1).unwrap_or("").to_owned();
            *s = format!("seg+{offset}");
        }
        Json::Array(items) => items.iter_mut().for_each(mask_segments),
        Json::Object(o) => o.values_mut().for_each(mask_segments),
        _ => {}
    }
}

/// Whether `regen` is `orig` with its wildcard source bound to a rank.
fn bound_wildcard(orig: &Json, regen: &Json) -> bool {
    let (o, r) = (&orig["args"], &regen["args"]);
    if o["source"] != "MPI_ANY_SOURCE" || !r["source"].is_i64() {
        return false;
    }
    if r["status"]["MPI_SOURCE"].is_i64() && r["status"]["MPI_SOURCE"] != r["source"] {
        return false;
    }
    let mut r = regen.clone();
    r["args"]["source"] = "MPI_ANY_SOURCE".into();
    &r == orig
}

/// Asserts that both runs made the same calls, rank by rank.
fn assert_same_calls(orig: &[Json], regen: &[Json]) -> usize {
    let ranks = orig
        .iter()
        .map(|c| c["rank"].as_u64().unwrap())
        .max()
        .unwrap();
    let mut compared = 0;
    for rank in 0..=ranks {
        let of = |calls: &[Json]| -> Vec<Json> {
            calls
                .iter()
                .filter(|c| c["rank"] == rank)
                .filter_map(comparable)
                .collect()
        };
        let (a, b) = (of(orig), of(regen));
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                x == y || bound_wildcard(x, y),
                "rank {rank}, call {i}:\n original:  {x}\n benchmark: {y}"
            );
        }
        assert_eq!(
            a.len(),
            b.len(),
            "rank {rank}: {} calls in the original, {} in the benchmark; first extra: {:?}",
            a.len(),
            b.len(),
            a.get(b.len()).or(b.get(a.len()))
        );
        compared += a.len();
    }
    compared
}

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
    let mut ratios: Vec<f64> = (0..3)
        .map(|i| {
            let regen_dir = dir.path().join(format!("regen{i}"));
            trace(Mpi::selected(), &bench, 2, &[], "lossless", &regen_dir);
            wall_time(&decode(&regen_dir)) / original
        })
        .collect();
    // With computation, the calls are still the same.
    assert_same_calls(&decode(&orig_dir), &decode(&dir.path().join("regen0")));
    ratios.sort_by(f64::total_cmp);
    let median = ratios[1];
    assert!(
        (0.9..=1.1).contains(&median),
        "benchmark / original wall time: {ratios:?} (original {original:.3} s)"
    );

    // --scale 0.5 halves the computation.
    let (c, _) = gen_bench(&orig_dir, &["--compute", "recorded", "--scale", "0.5"]);
    let half = build(Mpi::selected(), &c);
    let half_dir = dir.path().join("half");
    trace(Mpi::selected(), &half, 2, &[], "lossless", &half_dir);
    let ratio = wall_time(&decode(&half_dir)) / original;
    assert!((0.4..=0.6).contains(&ratio), "scale 0.5: {ratio}");
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
