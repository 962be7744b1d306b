//! `mpigram export --format otf2` on traces of real MPI programs, read
//! back with OTF2's own tools: `otf2-print` (which validates the archive),
//! `otf2-estimator` (record sizes) and OTF2's Python reader (`python3-otf2`,
//! run by `tests/otf2/check.py` with Debian's Python, where the package
//! installs it).

mod common;

use common::{mpigram, text, trace};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Debian's Python, which python3-otf2 installs into.
const DEBIAN_PYTHON: &str = "/usr/bin/python3";

fn export(trace: &Path, out: &Path) -> Output {
    mpigram(&[
        "export",
        trace.to_str().unwrap(),
        "--format",
        "otf2",
        "-o",
        out.to_str().unwrap(),
    ])
}

/// What OTF2's Python reader finds in the archive (see check.py).
fn check(anchor: &Path) -> Json {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otf2/check.py");
    let out = Command::new(DEBIAN_PYTHON)
        .arg(script)
        .arg(anchor)
        .output()
        .expect("Debian's python3 with python3-otf2 (scripts/setup installs it)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each rank's calls from `mpigram decode`, with their arguments.
fn decoded_calls(trace: &Path) -> HashMap<u64, Vec<Json>> {
    let out = mpigram(&["decode", trace.to_str().unwrap(), "--format", "jsonl"]);
    let mut calls: HashMap<u64, Vec<Json>> = HashMap::new();
    for line in text(&out.stdout).lines() {
        let call: Json = serde_json::from_str(line).unwrap();
        calls
            .entry(call["rank"].as_u64().unwrap())
            .or_default()
            .push(call);
    }
    calls
}

/// The functions each rank called, from `mpigram decode`.
fn decoded(trace: &Path) -> HashMap<u64, Vec<String>> {
    decoded_calls(trace)
        .into_iter()
        .map(|(rank, calls)| {
            let funcs = calls.iter().map(|c| c["func"].as_str().unwrap().to_owned());
            (rank, funcs.collect())
        })
        .collect()
}

/// The collective operations OTF2 has a name for (other than creating
/// communicators), by their blocking functions' names.
const COLLECTIVES: [&str; 17] = [
    "Barrier",
    "Bcast",
    "Gather",
    "Gatherv",
    "Scatter",
    "Scatterv",
    "Allgather",
    "Allgatherv",
    "Alltoall",
    "Alltoallv",
    "Alltoallw",
    "Allreduce",
    "Reduce",
    "Reduce_scatter",
    "Reduce_scatter_block",
    "Scan",
    "Exscan",
];

fn events(report: &Json, rank: u64, kind: &str) -> u64 {
    report["locations"][format!("rank {rank}")]["events"][kind]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn the_halo_exchange_becomes_an_archive_with_every_call_and_every_message_paired() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    trace(&t, "halo2d", 4, &["5"], "lossless");
    let out_dir = dir.path().join("otf2");
    let out = export(&t, &out_dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let anchor = out_dir.join("traces.otf2");
    assert!(anchor.is_file());

    let report = check(&anchor);
    let calls = decoded(&t);
    assert_eq!(calls.len(), 4);
    for (&rank, funcs) in &calls {
        let n = funcs.len() as u64;
        assert_eq!(events(&report, rank, "Enter"), n, "rank {rank}");
        assert_eq!(events(&report, rank, "Leave"), n, "rank {rank}");
        // On the 2x2 grid each rank has two neighbours (the other two are
        // MPI_PROC_NULL: no message): per iteration two ISENDs with their
        // completions, two IRECV_REQUESTs with their IRECVs.
        assert_eq!(funcs.iter().filter(|f| *f == "MPI_Isend").count(), 4 * 5);
        for kind in [
            "MpiIsend",
            "MpiIsendComplete",
            "MpiIrecvRequest",
            "MpiIrecv",
        ] {
            assert_eq!(events(&report, rank, kind), 2 * 5, "rank {rank} {kind}");
        }
        let loc = &report["locations"][format!("rank {rank}")];
        assert_eq!(loc["monotonic"], true, "rank {rank}");
        let total: u64 = loc["events"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(report["defined_events"][format!("rank {rank}")], total);
    }
    // 2x2 grid: 8 messages an iteration, every send with its receive.
    assert_eq!(report["messages"], 8 * 5);
    assert_eq!(report["unmatched_sends"], 0);
    assert_eq!(report["unmatched_receives"], 0);
    assert_eq!(report["length_mismatches"], 0);
    assert_eq!(report["open_requests"], 0);
    assert_eq!(report["unpaired_requests"], 0);
    assert_eq!(report["timer_resolution"], 1_000_000_000u64);
    assert!(report["global_offset"].as_u64().unwrap() > 0);
    assert!(report["trace_length"].as_u64().unwrap() > 0);
    assert_eq!(
        report["comms"],
        serde_json::json!(["comm0"]),
        "the Cartesian communicator"
    );

    // otf2-print reads and validates the whole archive.
    let printed = Command::new("otf2-print").arg(&anchor).output().unwrap();
    assert!(printed.status.success(), "{}", text(&printed.stderr));
    let printed = text(&printed.stdout);
    let enters = printed.lines().filter(|l| l.starts_with("ENTER ")).count();
    let all_calls: usize = calls.values().map(Vec::len).sum();
    assert_eq!(enters, all_calls);
    assert_eq!(
        printed
            .lines()
            .filter(|l| l.starts_with("MPI_ISEND "))
            .count(),
        40
    );

    // The event files are no larger than otf2-estimator's bound for the
    // records they hold (each with a timestamp): no stray data.
    let estimate = estimated_event_bytes(&report);
    for rank in 0..4 {
        let evt = out_dir.join(format!("traces/{rank}.evt"));
        let bytes = std::fs::metadata(&evt).unwrap().len();
        assert!(
            bytes <= estimate[&rank] && bytes * 4 >= estimate[&rank],
            "rank {rank}: {bytes} bytes, estimated {}",
            estimate[&rank]
        );
    }
}

/// Per rank, otf2-estimator's size of its events, a timestamp each, plus
/// a chunk header.
fn estimated_event_bytes(report: &Json) -> HashMap<u64, u64> {
    let kinds = [
        "Enter",
        "Leave",
        "MpiIsend",
        "MpiIsendComplete",
        "MpiIrecvRequest",
        "MpiIrecv",
        "Timestamp",
    ];
    let mut input = String::from("set Region 64\nset Location 4\nset Comm 4\n");
    for k in kinds {
        input.push_str(&format!("get {k}\n"));
    }
    input.push_str("exit\n");
    let mut child = Command::new("otf2-estimator")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("otf2-estimator (scripts/setup installs otf2-tools)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let sizes: HashMap<String, u64> = text(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_owned(), v.trim().parse().ok()?))
        })
        .collect();
    assert_eq!(sizes.len(), kinds.len(), "{sizes:?}");
    let mut estimate = HashMap::new();
    for rank in 0..4 {
        let mut bytes = 64; // chunk header
        for k in &kinds[..kinds.len() - 1] {
            let n = events(report, rank, k);
            bytes += n * (sizes[*k] + sizes["Timestamp"]);
        }
        estimate.insert(rank, bytes);
    }
    estimate
}

#[test]
fn blocking_messages_and_collectives_have_their_records() {
    let dir = tempfile::tempdir().unwrap();
    // Send, Ssend, Bsend, Rsend, Sendrecv, Sendrecv_replace on 2 ranks.
    let t = dir.path().join("p2p");
    trace(&t, "p2p_blocking", 2, &[], "lossy");
    let o = dir.path().join("p2p.otf2");
    let out = export(&t, &o);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = check(&o.join("traces.otf2"));
    let calls = decoded(&t);
    let mut messages = 0;
    for (&rank, funcs) in &calls {
        let count =
            |names: &[&str]| funcs.iter().filter(|f| names.contains(&f.as_str())).count() as u64;
        let sends = count(&["MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend"]);
        let sendrecvs = count(&["MPI_Sendrecv", "MPI_Sendrecv_replace"]);
        assert_eq!(
            events(&report, rank, "MpiSend"),
            sends + sendrecvs,
            "rank {rank}"
        );
        assert_eq!(
            events(&report, rank, "MpiRecv"),
            count(&["MPI_Recv"]) + sendrecvs,
            "rank {rank}"
        );
        assert_eq!(events(&report, rank, "Enter"), funcs.len() as u64);
        messages += sends + sendrecvs;
    }
    assert_eq!(report["messages"], messages);
    assert_eq!(report["unmatched_sends"], 0);
    assert_eq!(report["unmatched_receives"], 0);
    assert_eq!(report["length_mismatches"], 0);

    // Every blocking collective on 3 ranks, root 2 for the rooted ones.
    let t = dir.path().join("coll");
    trace(&t, "coll_blocking", 3, &[], "lossless");
    let o = dir.path().join("coll.otf2");
    let out = export(&t, &o);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = check(&o.join("traces.otf2"));
    assert_eq!(report["open_collectives"], 0);
    let collective = |f: &str| COLLECTIVES.contains(&f.strip_prefix("MPI_").unwrap());
    for (&rank, funcs) in &decoded(&t) {
        let n = funcs.iter().filter(|f| collective(f)).count() as u64;
        assert!(n >= 17, "every kind at least once");
        assert_eq!(
            events(&report, rank, "MpiCollectiveBegin"),
            n,
            "rank {rank}"
        );
        assert_eq!(events(&report, rank, "MpiCollectiveEnd"), n, "rank {rank}");
    }
    for end in report["collectives"].as_array().unwrap() {
        let (location, op, root) = (end[0].as_str().unwrap(), end[1].as_str().unwrap(), &end[3]);
        let (sent, received) = (end[4].as_u64().unwrap(), end[5].as_u64().unwrap());
        assert_eq!(end[2], "MPI_COMM_WORLD");
        match op {
            "BCAST" | "SCATTER" | "SCATTERV" | "GATHER" | "GATHERV" | "REDUCE" => {
                assert_eq!(root, 2, "{end}");
                // The root sends a Bcast's data; the others receive it.
                if op == "BCAST" {
                    let is_root = location == "rank 2";
                    assert_eq!((sent > 0, received > 0), (is_root, !is_root), "{end}");
                }
            }
            _ => assert_eq!(*root, Json::Null, "{end}"),
        }
    }
}

/// OTF2's name of the collective operation of `func` (`MPI_Iallreduce`,
/// `MPI_Allreduce_init`: `ALLREDUCE`), or None for other functions.
fn otf2_op(func: &str) -> Option<String> {
    let name = func.strip_prefix("MPI_")?;
    let name = name.strip_suffix("_init").unwrap_or(name);
    let name = name.strip_prefix('I').unwrap_or(name);
    let blocking = COLLECTIVES
        .iter()
        .find(|op| op.eq_ignore_ascii_case(name))?;
    Some(blocking.to_ascii_uppercase())
}

#[test]
fn non_blocking_and_persistent_collectives_have_request_and_completion_records() {
    let dir = tempfile::tempdir().unwrap();
    for program in ["coll_nonblocking", "coll_persistent"] {
        let t = dir.path().join(program);
        trace(&t, program, 3, &[], "lossless");
        let o = dir.path().join(format!("{program}.otf2"));
        let out = export(&t, &o);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report = check(&o.join("traces.otf2"));
        assert_eq!(report["open_collective_requests"], 0, "{program}");
        assert_eq!(report["unpaired_collective_requests"], 0, "{program}");
        // Each rank's operations, as it posted them: a non-blocking
        // collective call, or each start of a persistent request (by the
        // init call that made it).
        let mut all_posted = 0;
        for (&rank, calls) in &decoded_calls(&t) {
            let func = |c: &Json| c["func"].as_str().unwrap().to_owned();
            let mut made: HashMap<String, String> = HashMap::new();
            let mut posted = Vec::new();
            for call in calls {
                let f = func(call);
                let request = |r: &Json| r.as_str().unwrap().to_owned();
                match f.as_str() {
                    "MPI_Start" => posted.push(made[&request(&call["args"]["request"])].clone()),
                    "MPI_Startall" => {
                        for r in call["args"]["array_of_requests"].as_array().unwrap() {
                            posted.push(made[&request(r)].clone());
                        }
                    }
                    _ if f.ends_with("_init") => {
                        if let Some(op) = otf2_op(&f) {
                            made.insert(request(&call["args"]["request"]), op);
                        }
                    }
                    _ if f.starts_with("MPI_I") => posted.extend(otf2_op(&f)),
                    _ => {}
                }
            }
            assert!(posted.len() >= 17, "{program} rank {rank}: {posted:?}");
            let location = format!("rank {rank}");
            for kind in [
                "NonBlockingCollectiveRequest",
                "NonBlockingCollectiveComplete",
            ] {
                assert_eq!(
                    events(&report, rank, kind),
                    posted.len() as u64,
                    "{program} {location} {kind}"
                );
            }
            // Neither program makes a blocking collective call, and a
            // persistent collective's init call moves no data: no
            // MPI_COLLECTIVE_BEGIN/END.
            assert_eq!(events(&report, rank, "MpiCollectiveBegin"), 0, "{program}");
            let mut completed: Vec<String> = Vec::new();
            let mut sized_bcasts = 0;
            for end in report["collective_completions"].as_array().unwrap() {
                if end[0] != location.as_str() {
                    continue;
                }
                let op = end[1].as_str().unwrap().to_owned();
                assert_eq!(end[2], "MPI_COMM_WORLD", "{end}");
                // coll_cases.h: the last rank is the root.
                let rooted = [
                    "BCAST", "GATHER", "GATHERV", "SCATTER", "SCATTERV", "REDUCE",
                ];
                let root = if rooted.contains(&op.as_str()) {
                    Json::from(2)
                } else {
                    Json::Null
                };
                assert_eq!(end[3], root, "{program} {end}");
                // The root sends a Bcast's data; the others receive it. An
                // MPI_Startall's operations carry no sizes (its bytes are
                // theirs together).
                let (sent, received) = (end[4].as_u64().unwrap(), end[5].as_u64().unwrap());
                let from_startall = program == "coll_persistent" && (sent, received) == (0, 0);
                if op == "BCAST" && !from_startall {
                    let is_root = rank == 2;
                    assert_eq!((sent > 0, received > 0), (is_root, !is_root), "{end}");
                    sized_bcasts += 1;
                }
                completed.push(op);
            }
            assert!(sized_bcasts > 0, "{program} {location}");
            posted.sort();
            completed.sort();
            assert_eq!(completed, posted, "{program} {location}");
            all_posted += posted.len();
        }
        // otf2-print reads and validates the whole archive.
        let printed = Command::new("otf2-print")
            .arg(o.join("traces.otf2"))
            .output()
            .unwrap();
        assert!(printed.status.success(), "{}", text(&printed.stderr));
        let printed = text(&printed.stdout);
        for record in [
            "NON_BLOCKING_COLLECTIVE_REQUEST ",
            "NON_BLOCKING_COLLECTIVE_COMPLETE ",
        ] {
            let n = printed.lines().filter(|l| l.starts_with(record)).count();
            assert_eq!(n, all_posted, "{program} {record}");
        }
    }
}

#[test]
fn an_aggregated_trace_is_refused_with_one_line_and_no_archive() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    trace(&t, "p2p_blocking", 2, &[], "aggregated");
    let o = dir.path().join("o");
    let out = export(&t, &o);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("aggregated timing only"), "{err}");
    assert!(!o.join("traces.otf2").exists());
}
