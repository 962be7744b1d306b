//! `mpigram stats` on traces of real MPI runs, checked against what the
//! programs are known to send (tests/mpi/traffic.c and datatype.c).

mod common;

use common::{mpigram, text};
use mpigram_testkit::{compile, mpi_available};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Traces `program` on `ranks` ranks into `dir` and returns its stats JSON.
fn traced_stats(program: &str, ranks: u32, dir: &Path) -> Value {
    mpi_available().unwrap();
    let exe = compile(program).unwrap();
    let trace = dir.to_str().unwrap();
    let run = mpigram(&[
        "run",
        "-o",
        trace,
        "-n",
        &ranks.to_string(),
        "--",
        exe.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let out = mpigram(&["stats", trace, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Power-of-two bucket of a message size, as docs/stats.md defines it.
fn bucket_of(bytes: u64) -> (u64, u64) {
    if bytes == 0 {
        return (0, 0);
    }
    let low = 1u64 << (63 - bytes.leading_zeros());
    (low, 2 * low - 1)
}

#[test]
fn stats_of_a_known_traffic_pattern_are_exact() {
    const N: u64 = 4;
    const ITER: u64 = 10;
    let dir = tempfile::tempdir().unwrap();
    let stats = traced_stats("traffic", N as u32, &dir.path().join("t"));
    assert_eq!(stats["ranks"], N);
    assert_eq!(
        stats["expanded_ranks"],
        serde_json::json!([]),
        "no id means two things"
    );

    // What each rank r sends, from traffic.c's description.
    let ring = |r: u64| (r + 1) * 100 * 4;
    let (right, left, far) = (|r| (r + 1) % N, |r| (r + N - 1) % N, |r| (r + 2) % N);
    let mut pairs: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new();
    let mut sizes: BTreeMap<(u64, u64), (u64, u64)> = BTreeMap::new(); // bucket -> (p2p, coll)
    let mut send = |from: u64, to: u64, bytes: u64, times: u64| {
        let e = pairs.entry((from, to)).or_default();
        e.0 += bytes * times;
        e.1 += times;
        sizes.entry(bucket_of(bytes)).or_default().0 += times;
    };
    for r in 0..N {
        send(r, right(r), ring(r), ITER); // MPI_Send
        send(r, far(r), 50 * 8, ITER); // MPI_Isend
        send(r, right(r), 7 * 4, ITER); // MPI_Startall of the persistent send
        send(r, left(r), 8 * 4, 1); // MPI_Sendrecv of vector(4, 2, 3, MPI_INT)
        send(r, right(r), 5, 1); // MPI_Send on the duplicate of MPI_COMM_WORLD
    }
    for bytes in [10 * 8, 4 * 4, N * 2 * 4] {
        // MPI_Bcast, MPI_Allreduce, MPI_Alltoall on every rank
        sizes.entry(bucket_of(bytes)).or_default().1 += N;
    }

    let f = &stats["functions"];
    let sum = |g: &dyn Fn(u64) -> u64| (0..N).map(g).sum::<u64>();
    let expect = [
        // (function, calls, bytes sent, bytes received)
        (
            "MPI_Send",
            N * (ITER + 2),
            sum(&|r| ring(r) * ITER) + 5 * N,
            0,
        ),
        // MPI_Recv counts its status's bytes: the left neighbour's ring.
        ("MPI_Recv", N * ITER, 0, sum(&|r| ring(left(r)) * ITER)),
        ("MPI_Isend", N * ITER, N * ITER * 400, 0),
        ("MPI_Irecv", N * (ITER + 1), 0, N * ITER * 400 + N * 5),
        ("MPI_Startall", N * ITER, N * ITER * 28, N * ITER * 28),
        ("MPI_Sendrecv", N, N * 32, N * 32),
        ("MPI_Bcast", N, 80, (N - 1) * 80),
        ("MPI_Allreduce", N, N * 16, N * 16),
        ("MPI_Alltoall", N, N * N * 8, N * N * 8),
        ("MPI_Send_init", N, 0, 0),
        ("MPI_Waitall", N * ITER * 2, 0, 0),
        ("MPI_Comm_dup", N, 0, 0),
    ];
    for (name, calls, sent, received) in expect {
        let e = &f[name];
        assert_eq!(num(&e["calls"]), calls, "{name} calls");
        assert_eq!(num(&e["bytes_sent"]), sent, "{name} bytes sent");
        assert_eq!(num(&e["bytes_received"]), received, "{name} bytes received");
        assert_eq!(num(&e["calls_unknown_bytes"]), 0, "{name}");
        let (total, mean, max) = (
            e["total_s"].as_f64().unwrap(),
            e["mean_s"].as_f64().unwrap(),
            e["max_s"].as_f64().unwrap(),
        );
        assert!(
            total > 0.0 && mean <= max && max <= total,
            "{name} times {e}"
        );
    }
    let calls: u64 = f
        .as_object()
        .unwrap()
        .values()
        .map(|e| num(&e["calls"]))
        .sum();
    assert_eq!(num(&stats["calls"]), calls);

    let matrix = &stats["matrix"];
    let got: BTreeMap<(u64, u64), (u64, u64)> = matrix["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                (num(&p["from"]), num(&p["to"])),
                (num(&p["bytes"]), num(&p["messages"])),
            )
        })
        .collect();
    assert_eq!(got, pairs, "(from, to) -> (bytes, messages)");
    // Every message is placed (the duplicate's through its members); the
    // send to MPI_PROC_NULL moves nothing.
    assert_eq!(num(&matrix["unattributed"]["bytes"]), 0);
    assert_eq!(num(&matrix["unattributed"]["messages"]), 0);
    assert_eq!(num(&matrix["unknown_size_messages"]), 0);

    let histogram: BTreeMap<(u64, u64), (u64, u64)> = stats["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let key = (num(&b["min_bytes"]), num(&b["max_bytes"]));
            (key, (num(&b["p2p"]), num(&b["collective"])))
        })
        .filter(|(_, counts)| *counts != (0, 0))
        .collect();
    assert_eq!(histogram, sizes, "bucket -> (p2p messages, collectives)");
}

/// datatype.c reuses `type0` for a 12-, 15- and 16-byte layout: its ranks
/// are walked in order, and every transfer's bytes are its type's size.
#[test]
fn reused_datatype_ids_are_sized_as_of_each_call() {
    const N: u64 = 2;
    let dir = tempfile::tempdir().unwrap();
    let stats = traced_stats("datatype", N as u32, &dir.path().join("t"));
    assert_eq!(stats["expanded_ranks"], serde_json::json!([0, 1]));
    // Per rank, to the right neighbour: 2 x contiguous(3 int), vector(3, 2),
    // indexed(2+1+3), indexed_block(3 x 2), subarray 2 x 3, 6 MPI_INT and an
    // hvector of 3 doubles: 24 bytes each; hindexed(1+2 ints) and 3 resized
    // ints: 12 each; 2 particles of int + double + 3 chars: 30. And 8 ints in
    // blocks over N ranks, to itself on MPI_COMM_SELF: 11 transfers.
    let to_right = 7 * 24 + 2 * 12 + 30;
    let darray = 8 / N * 4;
    let sendrecv = &stats["functions"]["MPI_Sendrecv"];
    assert_eq!(num(&sendrecv["calls"]), N * 11);
    assert_eq!(num(&sendrecv["bytes_sent"]), N * (to_right + darray));
    assert_eq!(num(&sendrecv["calls_unknown_bytes"]), 0);
    let pairs = stats["matrix"]["pairs"].as_array().unwrap();
    for p in pairs {
        let (from, to) = (num(&p["from"]), num(&p["to"]));
        let expected = if from == to { darray } else { to_right };
        assert_eq!(num(&p["bytes"]), expected, "{from} -> {to}");
    }
    assert_eq!(pairs.len() as u64, 2 * N);
}

#[test]
fn stats_prints_tables_and_draws_heat_maps() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t");
    traced_stats("traffic", 3, &trace);
    let trace = trace.to_str().unwrap();
    let svg = dir.path().join("m.svg");
    let png = dir.path().join("m.png");
    for map in [&svg, &png] {
        let out = mpigram(&["stats", trace, "--heatmap", map.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let table = text(&out.stdout);
        // Function rows by total time, the histogram, the 3 x 3 matrix.
        assert!(
            table.contains("MPI_Send ") && table.contains("MPI_Alltoall"),
            "{table}"
        );
        assert!(table.contains("[256 B, 512 B)"), "{table}");
        assert!(table.contains("point-to-point matrix"), "{table}");
        let row0 = table
            .lines()
            .find(|l| l.trim_start().starts_with("0 ") && l.contains('.'))
            .unwrap_or_else(|| panic!("matrix row of rank 0 in {table}"));
        assert_eq!(row0.split_whitespace().count(), 1 + 3 * 2 - 1, "{row0}");
        // Piped stderr: no progress bar, no noise.
        assert_eq!(text(&out.stderr), "");
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("receiver rank") && svg.contains("sender rank"));
    let png = std::fs::read(&png).unwrap();
    assert_eq!(&png[1..4], b"PNG");
}

#[test]
fn stats_of_bad_input_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    let out = mpigram(&["stats", path]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no mpigram trace here"), "{err}");

    let out = mpigram(&["stats", "/nonexistent/trace", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).lines().count(), 1);
    assert!(out.stdout.is_empty());

    std::fs::write(dir.path().join("trace.mgr"), b"MPIGRAM but truncated").unwrap();
    let out = mpigram(&["stats", path]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("trace.mgr"), "{err}");
}
