//! What the tracer promises, one behaviour at a time, on real MPI runs.

mod common;

use common::*;
use mpigram_analysis::decode::DecodedCall;
use mpigram_analysis::members::Members;
use mpigram_testkit::{compile, mpiexec};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::process::Command;

fn calls_of<'a>(calls: &'a [DecodedCall], func: &str) -> Vec<&'a DecodedCall> {
    calls.iter().filter(|c| c.func == func).collect()
}

#[test]
fn preloading_into_processes_without_mpi_is_harmless() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        vec!["/bin/true"],
        vec!["sh", "-c", "echo traced-shell; ls / >/dev/null"],
    ] {
        let out = Command::new(cmd[0])
            .args(&cmd[1..])
            .env("LD_PRELOAD", tracer())
            .env("MPIGRAM_OUT", dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{cmd:?} printed {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no trace from non-MPI processes"
    );
}

#[test]
fn mpigram_off_records_nothing_and_the_program_still_works() {
    let run = run_traced("pcontrol", 2, &[], &[("MPIGRAM_OFF", "1")]);
    run.output.assert_success();
    assert_eq!(std::fs::read_dir(run.dir.path()).unwrap().count(), 0);
}

#[test]
fn pcontrol_pauses_and_resumes_recording() {
    let run = run_traced("pcontrol", 2, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    for rank in &trace.ranks {
        let calls = decoded(&trace, rank.meta.rank);
        let r = i64::from(rank.meta.rank);
        assert!(
            calls_of(&calls, "MPI_Comm_size").is_empty(),
            "calls while paused are not recorded"
        );
        assert!(calls_of(&calls, "MPI_Comm_dup").is_empty());
        let ranks = calls_of(&calls, "MPI_Comm_rank");
        assert_eq!(ranks.len(), 5);
        // Before the pause on MPI_COMM_WORLD, after it on the duplicate the
        // tracer never saw created: adopted, and its ranks still absolute.
        for c in &ranks[..3] {
            assert_eq!(c.args["comm"], json!("MPI_COMM_WORLD"));
            assert_eq!(c.args["rank"], json!(r));
        }
        for c in &ranks[3..] {
            assert_eq!(c.args["comm"], json!("comm0"));
            assert_eq!(c.args["rank"], json!(r));
        }
        let levels: Vec<&Value> = calls_of(&calls, "MPI_Pcontrol")
            .iter()
            .map(|c| &c.args["level"])
            .collect();
        assert_eq!(levels, [&json!(0), &json!(1)]);
    }
}

#[test]
fn a_million_comm_rank_calls_fit_in_a_kilobyte() {
    let exe = compile("microbench").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = mpiexec(1, &exe, ["1000000"])
        .preload(tracer())
        .env("MPIGRAM_OUT", dir.path())
        .run()
        .unwrap();
    out.assert_success();
    let trace = mpigram_trace::Trace::open(dir.path()).unwrap();
    let comm_ranks: u64 = trace.ranks[0]
        .stats
        .iter()
        .filter(|(t, _)| {
            mpigram_mpispec::decode_signature(&trace.signatures[*t as usize])
                .unwrap()
                .func
                == mpigram_mpispec::func::MPI_Comm_rank
        })
        .map(|(_, s)| s.count)
        .sum();
    assert!(
        comm_ranks >= 1_000_000,
        "{comm_ranks} MPI_Comm_rank calls recorded"
    );
    let bytes = trace.bytes();
    assert!(bytes <= 1024, "{bytes} bytes");
}

#[test]
fn requests_sharing_mpichs_builtin_handle_stay_distinct() {
    let run = run_traced("builtin_request", 2, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    for rank in &trace.ranks {
        let calls = decoded(&trace, rank.meta.rank);
        let waitall = calls_of(&calls, "MPI_Waitall");
        assert!(!waitall.is_empty());
        for w in waitall {
            let names: Vec<&Value> = w.args["array_of_requests"]
                .as_array()
                .unwrap()
                .iter()
                .collect();
            let mut distinct = names.clone();
            distinct.sort_by_key(|v| v.to_string());
            distinct.dedup();
            assert_eq!(
                distinct.len(),
                names.len(),
                "requests in one Waitall are distinct: {names:?}"
            );
        }
    }
}

#[test]
fn wildcard_receives_record_the_real_source() {
    let run = run_traced("wildcard", 3, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 3);
    let calls = decoded(&trace, 0);
    let mut sources: Vec<i64> = calls_of(&calls, "MPI_Recv")
        .iter()
        .filter(|c| c.args["source"] == json!("MPI_ANY_SOURCE"))
        .map(|c| {
            c.args["status"]["MPI_SOURCE"]
                .as_i64()
                .expect("absolute source")
        })
        .collect();
    sources.sort();
    assert_eq!(sources, [1, 1, 2, 2], "two messages from each other rank");
    // Equal behaviour, equal signatures: rank r sends tags 10r and 10r+1 to
    // rank 0 with a relative destination, which decodes to 0 on every rank.
    for r in 1..3 {
        let calls = decoded(&trace, r as u32);
        let to_zero: Vec<&Value> = calls_of(&calls, "MPI_Send")
            .iter()
            .filter(|c| c.args["tag"] == json!(10 * r) || c.args["tag"] == json!(10 * r + 1))
            .map(|c| &c.args["dest"])
            .collect();
        assert_eq!(to_zero, [&json!(0), &json!(0)], "rank {r}");
    }
}

#[test]
fn heap_buffers_are_their_blocks_and_offsets_whatever_else_is_allocated() {
    let run = run_traced("heap_buffers", 2, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    for r in 0..2 {
        let calls = decoded(&trace, r);
        // (segment id, offset) of each broadcast's buffer.
        let buffers = buffers_of(&calls, "MPI_Bcast");
        // MPI_Init's arguments took the first ids.
        let first = buffers[0].0;
        // a, a + 256, b + 10; a freed, then c takes its id; b; the stack.
        let expected = [(0, 0), (0, 256), (1, 10), (0, 0), (1, 0), (2, 0)];
        assert_eq!(
            buffers,
            expected.map(|(id, offset)| (first + id, offset)),
            "rank {r}"
        );
    }
}

/// (segment id, offset) of each buffer the calls of `function` name.
fn buffers_of(calls: &[DecodedCall], function: &str) -> Vec<(u64, u64)> {
    calls_of(calls, function)
        .iter()
        .map(|c| {
            let b = c.args["buffer"].as_str().expect("a buffer");
            let (id, offset) = b
                .strip_prefix("seg")
                .and_then(|b| b.split_once('+'))
                .expect(b);
            (id.parse().unwrap(), offset.parse().unwrap())
        })
        .collect()
}

#[test]
fn heap_churn_on_other_threads_leaves_a_buffer_its_name() {
    // The main thread allocates a block, broadcasts from it and frees it,
    // 300 times, while two threads allocate and free without pause. A
    // hook that missed the free (the table's lock busy) would leave the id
    // taken and the next block would get another.
    let run = run_traced("heap_threads", 2, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    for r in 0..2 {
        let buffers = buffers_of(&decoded(&trace, r), "MPI_Bcast");
        assert_eq!(buffers.len(), 300, "rank {r}");
        let names: BTreeSet<_> = buffers.iter().collect();
        assert_eq!(names.len(), 1, "rank {r}: {names:?}");
    }
}

#[test]
fn halo_trace_size_does_not_depend_on_iterations() {
    let short = run_traced("halo2d", 4, &["100"], &[("MPIGRAM_VERIFY", "0")]);
    let long = run_traced("halo2d", 4, &["10000"], &[("MPIGRAM_VERIFY", "0")]);
    short.output.assert_success();
    long.output.assert_success();
    let (a, b) = (short.trace(), long.trace());
    assert_eq!(a.signatures, b.signatures, "byte-identical call signatures");
    assert_eq!(a.grammar.num_rules(), b.grammar.num_rules());
    assert_eq!(a.grammar.num_runs(), b.grammar.num_runs());
    // The grammars differ only in their trip counts (100 -> 10,000).
    let (ga, gb) = (a.grammar.encode().len(), b.grammar.encode().len());
    assert!(gb <= ga + 16, "grammar of {ga} bytes, then {gb}");
    for rank in 0..4 {
        // 9,900 more iterations of 4 Irecv + 4 Isend + Waitall, and 990 more Allreduce.
        assert_eq!(
            b.grammar.stream_len(rank),
            a.grammar.stream_len(rank).map(|n| n + 9900 * 9 + 990)
        );
    }
    // Besides the trip counts only the aggregated timing grows: per
    // signature a call count and a total time, a few varint bytes each.
    let (sa, sb) = (a.bytes(), b.bytes());
    eprintln!("halo2d on 4 ranks: {sa} bytes for 100 iterations, {sb} bytes for 10,000");
    assert!(
        sb <= sa + 4 * 128,
        "{sa} bytes for 100 iterations, {sb} for 10,000"
    );
}

#[test]
fn recording_allocates_nothing_once_the_loop_repeats() {
    // With the default crash journal, and with one so small that the long
    // run writes a few checkpoints (per checkpoint, not per call).
    for journal in ["4194304", "4096"] {
        let env = [("MPIGRAM_VERIFY", "0"), ("MPIGRAM_JOURNAL_BYTES", journal)];
        let short = run_traced("halo2d", 2, &["100"], &env);
        let long = run_traced("halo2d", 2, &["2000"], &env);
        let (a, b) = (short.trace(), long.trace());
        for (x, y) in a.ranks.iter().zip(&b.ranks) {
            assert!(x.meta.recorder_allocations > 0, "the counter counts");
            assert_eq!(
                x.meta.recorder_allocations, y.meta.recorder_allocations,
                "rank {}, journal of {journal} bytes: 1,900 more iterations, no more allocations",
                x.meta.rank
            );
        }
    }
}

#[test]
fn fortran_calls_are_traced_through_the_c_layer() {
    let run = run_traced("fortran_basic", 2, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    let funcs: Vec<&str> = decoded(&trace, 0).iter().map(|c| c.func).collect();
    for f in [
        "MPI_Init",
        "MPI_Comm_rank",
        "MPI_Comm_size",
        "MPI_Allreduce",
        "MPI_Barrier",
        "MPI_Finalize",
    ] {
        assert!(funcs.contains(&f), "{f} missing from {funcs:?}");
    }
}

#[test]
fn fortran_2008_bindings_that_call_pmpi_directly_are_traced() {
    let run = run_traced("fortran_f08", 2, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    for rank in &trace.ranks {
        let funcs: Vec<&str> = decoded(&trace, rank.meta.rank)
            .iter()
            .map(|c| c.func)
            .collect();
        assert_eq!(
            funcs,
            [
                "MPI_Init",
                "MPI_Comm_rank",
                "MPI_Comm_size",
                "MPI_Comm_dup",
                "MPI_Irecv",
                "MPI_Isend",
                "MPI_Waitall",
                "MPI_Allreduce",
                "MPI_Barrier",
                "MPI_Comm_free",
                "MPI_Finalize"
            ],
            "rank {}",
            rank.meta.rank
        );
    }
}

/// (signature bytes, colour, key) of rank `r`'s MPI_Comm_split and
/// MPI_Comm_split_type calls, in call order (no colour: null).
fn splits(trace: &mpigram_trace::Trace, r: u32) -> Vec<(Vec<u8>, Value, Value)> {
    decoded(trace, r)
        .into_iter()
        .zip(trace.calls(r))
        .filter(|(c, _)| c.func.starts_with("MPI_Comm_split"))
        .map(|(c, bytes)| {
            let colour = c.args.get("color").cloned().unwrap_or(Value::Null);
            (bytes.to_vec(), colour, c.args["key"].clone())
        })
        .collect()
}

/// MPI_Comm_split's colour and key, and MPI_Comm_split_type's key, equal
/// to the caller's rank on every rank of the communicator are recorded as
/// "the caller's rank", other values as the numbers: ranks that pass the
/// same rule make the same call, and every value decodes back exactly
/// (MPI_UNDEFINED by name).
#[test]
fn split_colours_and_keys_equal_to_the_callers_rank_are_recorded_as_such() {
    let run = run_traced("comm", 4, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 4);
    let all: Vec<_> = (0..4).map(|r| splits(&trace, r)).collect();
    for (rank, s) in all.iter().enumerate() {
        let r = rank as i64;
        // (rank % 2, -rank), (MPI_UNDEFINED on rank 0 else 1, rank), split_type's key rank.
        let undefined_or_one = if rank == 0 {
            json!("MPI_UNDEFINED")
        } else {
            json!(1)
        };
        let expected = [
            (json!(r % 2), json!(-r)),
            (undefined_or_one, json!(r)),
            (Value::Null, json!(r)),
        ];
        let got: Vec<_> = s.iter().map(|(_, c, k)| (c.clone(), k.clone())).collect();
        assert_eq!(got, expected, "rank {rank}");
    }
    // Colour 1 and key = own rank: one signature on ranks 1, 2 and 3 (rank
    // 1's colour 1 is its own rank, but not the others': the number);
    // split_type's key: one on every rank.
    assert_eq!(all[1][1].0, all[2][1].0);
    assert_eq!(all[2][1].0, all[3][1].0);
    assert!(all.iter().all(|s| s[2].0 == all[0][2].0));
    // The parity split's colour and key are the caller's rank on ranks 0
    // (0, 0) and 1 (1, -1 for the key: not): the numbers everywhere.
    assert_ne!(all[0][0].0, all[2][0].0);
}

/// A colour or key that is the caller's rank on some ranks only (colour 0
/// on rank 0 in `MPI_Comm_split(comm, 0, rank)`, key 0 on rank 0 in
/// `(rank, 0)`) is recorded as the number on every rank: every rank makes
/// the same calls, also when one rank does not record the split.
#[test]
fn a_split_by_a_rule_of_the_rank_is_one_call_on_every_rank() {
    let run = run_traced("split", 4, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 4);
    let splits = |r: u32| splits(&trace, r);
    for rank in 0..4u32 {
        let r = i64::from(rank);
        let got: Vec<(Value, Value)> = splits(rank).into_iter().map(|(_, c, k)| (c, k)).collect();
        // Rank 1 did not record the last split.
        let mut want = vec![
            (json!(0), json!(r)),
            (json!(r), json!(0)),
            (json!(r), json!(r)),
            (Value::Null, json!(0)),
            (json!(0), json!(r)),
        ];
        if rank == 1 {
            want.pop();
        }
        assert_eq!(got, want, "rank {rank}");
    }
    let calls = |r: u32| -> Vec<Vec<u8>> { trace.calls(r).map(<[u8]>::to_vec).collect() };
    for rank in [2, 3] {
        assert_eq!(calls(rank), calls(0), "rank {rank}");
    }
    let bytes = |r: u32| -> Vec<Vec<u8>> { splits(r).into_iter().map(|(b, _, _)| b).collect() };
    assert_eq!(bytes(1)[..], bytes(0)[..4], "rank 1's recorded splits");
}

#[test]
fn one_sided_target_ranks_are_relative_to_the_caller() {
    let run = run_traced("rma_ops", 3, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 3);
    let put = |r: usize| -> (Vec<u8>, Value) {
        let rank = &trace.ranks[r];
        let (seq, call) = decoded(&trace, rank.meta.rank)
            .into_iter()
            .enumerate()
            .find(|(_, c)| c.func == "MPI_Put")
            .unwrap();
        let bytes = trace.calls(rank.meta.rank).nth(seq).unwrap().to_vec();
        (bytes, call.args["target_rank"].clone())
    };
    let (p0, p1, p2) = (put(0), put(1), put(2));
    // Each rank puts to its right neighbour: decoded absolute...
    assert_eq!((p0.1, p1.1, p2.1), (json!(1), json!(2), json!(0)));
    // ...and recorded relative, so ranks 0 and 1 (both "me+1") have one signature.
    assert_eq!(p0.0, p1.0);
    assert_ne!(p1.0, p2.0, "rank 2's right neighbour wraps around: me-2");
}

/// The halves of a split hold different numbers of communicators, yet every
/// communicator created afterwards, by every kind of creating call, gets
/// one id on all its members: the Barrier on it records the same signature
/// on every rank. A communicator created and freed in a loop keeps its id.
#[test]
fn new_communicators_have_one_id_on_every_member() {
    let run = run_traced("comm_ids", 4, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 4);
    let barriers: Vec<Vec<DecodedCall>> = trace
        .ranks
        .iter()
        .map(|r| {
            decoded(&trace, r.meta.rank)
                .into_iter()
                .filter(|c| c.func == "MPI_Barrier")
                .collect()
        })
        .collect();
    // dup, split, split_type, create, create_group, idup, Cart_sub, cart,
    // graph, dist graph, merged, inter, then the loop's ten.
    assert_eq!(barriers[0].len(), 12 + 10);
    let comms = |calls: &[DecodedCall]| -> Vec<Value> {
        calls.iter().map(|c| c.args["comm"].clone()).collect()
    };
    let first = comms(&barriers[0]);
    for (rank, b) in barriers.iter().enumerate() {
        assert_eq!(comms(b), first, "rank {rank}: communicator ids");
    }
    // Odd ranks hold three communicators, even ranks one: the agreed ids
    // skip the ids the odd ranks use.
    assert_eq!(first[0], json!("comm3"), "{first:?}");
    assert!(first[12..].iter().all(|c| *c == first[12]), "{first:?}");

    // Every member logged the same instance of each communicator: its
    // ranks translate to world ranks, whatever call created it.
    let members = Members::of(&trace);
    for (rank, calls) in barriers.iter().enumerate() {
        for (i, b) in calls.iter().enumerate() {
            let comm = b.args["comm"].as_str().unwrap();
            let size = if i == 11 { 2 } else { 4 };
            let world: Vec<Option<u32>> = (0..size)
                .map(|k| members.world_rank(rank as u32, b.seq, comm, k))
                .collect();
            let expected: Vec<u32> = match i {
                1 => vec![3, 2, 1, 0],             // split with key n - rank
                10 => vec![0, 2, 1, 3],            // merged with the odd group high
                11 if rank % 2 == 0 => vec![1, 3], // the remote group
                11 => vec![0, 2],
                _ => vec![0, 1, 2, 3],
            };
            let expected: Vec<Option<u32>> = expected.into_iter().map(Some).collect();
            assert_eq!(world, expected, "rank {rank}, barrier {i} on {comm}");
        }
    }
}

/// At MPI_Finalize the ranks merge their traces into one file: one
/// signature table for all ranks, so a collective that every rank calls
/// alike is stored once; with `MPIGRAM_MERGE=0` each rank keeps its own
/// file, and both read back to the same calls.
#[test]
fn the_ranks_traces_are_merged_into_one_file() {
    let merged = run_traced("halo2d", 4, &["30"], &[]);
    merged.output.assert_success();
    let files: Vec<String> = std::fs::read_dir(merged.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".mgr"))
        .collect();
    assert_eq!(files, ["trace.mgr"]);
    let trace = assert_trace_is_exact(&merged, 4);
    let allreduces = trace
        .signatures
        .iter()
        .filter(|s| {
            mpigram_mpispec::decode_signature(s).unwrap().func
                == mpigram_mpispec::func::MPI_Allreduce
        })
        .count();
    assert_eq!(allreduces, 1, "the Allreduce of all four ranks, once");
    for rank in &trace.ranks {
        assert!(
            rank.stats.iter().any(|(t, s)| {
                mpigram_mpispec::decode_signature(&trace.signatures[*t as usize])
                    .unwrap()
                    .func
                    == mpigram_mpispec::func::MPI_Allreduce
                    && s.count == 3
            }),
            "rank {}: its own timing of the 3 Allreduce calls",
            rank.meta.rank
        );
    }

    let separate = run_traced("halo2d", 4, &["30"], &[("MPIGRAM_MERGE", "0")]);
    separate.output.assert_success();
    assert!(!separate.dir.path().join("trace.mgr").exists());
    let apart = assert_trace_is_exact(&separate, 4);
    for rank in 0..4 {
        assert_eq!(
            decoded(&trace, rank)
                .iter()
                .map(DecodedCall::to_text)
                .collect::<Vec<_>>(),
            decoded(&apart, rank)
                .iter()
                .map(DecodedCall::to_text)
                .collect::<Vec<_>>()
        );
    }
}

/// A persistent receive (MPI_Recv_init, started and waited for) completes
/// with a status MPI defines: the Wait records its source, tag and count.
#[test]
fn persistent_receives_complete_with_their_status() {
    let run = run_traced("persistent", 2, &[], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    let waits: Vec<Value> = decoded(&trace, 1)
        .into_iter()
        .filter(|c| c.func == "MPI_Wait")
        .map(|c| c.args["status"].clone())
        .collect();
    assert!(
        waits.contains(&json!({"MPI_SOURCE": 0, "MPI_TAG": 3, "count": 16})),
        "{waits:?}"
    );
}

/// A window's MPI_Waitall with a statuses array (OSU's osu_bw receiver) is
/// recalled from the Waitall memo only when its statuses are the last
/// one's: the odd window's last status (tag 8, two ints) is recorded, and
/// so is the next window's, back to tag 7.
#[test]
fn a_waitall_recording_statuses_keeps_every_status() {
    let windows = 20;
    let run = run_traced("window_statuses", 2, &[&windows.to_string()], &[]);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    let calls = decoded(&trace, 1);
    let waits = calls_of(&calls, "MPI_Waitall");
    assert_eq!(waits.len(), windows, "one MPI_Waitall a window");
    for (w, wait) in waits.iter().enumerate() {
        let statuses = wait.args["array_of_statuses"]
            .as_array()
            .unwrap_or_else(|| panic!("window {w}: {:?}", wait.args));
        let tags: Vec<&Value> = statuses.iter().map(|s| &s["MPI_TAG"]).collect();
        let last = if w % 5 == 4 { 8 } else { 7 };
        assert_eq!(tags[..7], [&json!(7); 7], "window {w}: {:?}", wait.args);
        assert_eq!(tags[7], &json!(last), "window {w}: {:?}", wait.args);
    }
}

/// Without verification a keyed call whose input words are the call
/// memo's takes the fast path (compared before MPI runs it, its terminal
/// recalled, its arguments made again from the memo's words when its
/// outputs differ); with it every call is encoded in full and checked. The
/// two give the same calls, call for call, on programs whose calls do not
/// depend on timing.
#[test]
fn the_memo_fast_path_records_what_encoding_does() {
    let programs: [(&str, u32, &[&str]); 11] = [
        ("hotpath", 1, &["10"]),
        // MPI_THREAD_MULTIPLE: calls that may overlap, recalled under the lock.
        ("hotpath", 1, &["10", "multiple"]),
        ("halo2d", 2, &["50"]),
        ("group", 2, &[]),
        ("coll_blocking", 2, &[]),
        ("datatype", 2, &[]),
        ("persistent", 2, &[]),
        ("window_statuses", 2, &[]),
        ("spill_requests", 2, &[]),
        ("proc_null", 2, &[]),
        ("comm", 2, &[]),
    ];
    for (program, ranks, args) in programs {
        let verified = run_traced(program, ranks, args, &[]);
        let fast = run_traced(program, ranks, args, &[("MPIGRAM_VERIFY", "0")]);
        fast.output.assert_success();
        let (expected, found) = (assert_trace_is_exact(&verified, ranks), fast.trace());
        for rank in 0..ranks {
            let calls = |t: &mpigram_trace::Trace| -> Vec<Vec<u8>> {
                t.calls(rank).map(<[u8]>::to_vec).collect()
            };
            let (e, f) = (calls(&expected), calls(&found));
            assert_eq!(e.len(), f.len(), "{program}, rank {rank}: number of calls");
            if let Some(i) = (0..e.len()).find(|&i| e[i] != f[i]) {
                panic!("{program}, rank {rank}: call {i} differs from the verified run's");
            }
        }
    }
}
