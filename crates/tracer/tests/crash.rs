//! No recorded call is lost when a rank dies: MPI_Abort (and the SIGKILL
//! the launcher sends the other ranks), fatal signals, exit without
//! MPI_Finalize. Each test runs a crash program of `tests/mpi` and reads
//! every rank back, from its trace file or from its crash journal.

mod common;

use common::*;
use mpigram_mpispec::{FuncId, func};
use mpigram_testkit::{mpiexec, program};
use mpigram_trace::{Ending, RankPart, Trace};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;

/// The calls of the crash programs before they crash (`world_rank`,
/// `world_size`, a ring exchange, a sum, a barrier).
const BEFORE_THE_CRASH: [&str; 6] = [
    "MPI_Init",
    "MPI_Comm_rank",
    "MPI_Comm_size",
    "MPI_Sendrecv",
    "MPI_Allreduce",
    "MPI_Barrier",
];

fn funcs(trace: &Trace, rank: &RankPart) -> Vec<&'static str> {
    decoded(trace, rank.meta.rank)
        .iter()
        .map(|c| c.func)
        .collect()
}

/// Names of the files in `dir`.
fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// A rank killed by the launcher recorded `expected` up to where it was
/// killed: at least the calls before `complete_until`, which its peers
/// could not pass before it had recorded them.
fn assert_prefix(trace: &Trace, rank: &RankPart, expected: &[&str], complete_until: usize) {
    let got = funcs(trace, rank);
    assert!(
        got.len() >= complete_until && expected.starts_with(&got),
        "rank {}: {got:?} is not at least {complete_until} calls of {expected:?}",
        rank.meta.rank
    );
    assert_eq!(rank.meta.calls, got.len() as u64);
}

/// Runs a crash program on which every rank dies of `signal`; each rank
/// must say so (or, if the launcher killed it first, that it was killed)
/// and hold the calls before the crash.
fn assert_dies_of_signal(name: &str, ranks: u32, signal: i32) {
    let run = run_traced(name, ranks, &[], &[]);
    program(name).unwrap().expect.check(&run.output).unwrap();
    let trace = run.trace();
    assert_eq!(
        trace.ranks.len(),
        ranks as usize,
        "every rank, from its journal"
    );
    assert!(!trace.is_complete());
    let mut noted = 0;
    for rank in &trace.ranks {
        match rank.meta.ending {
            // Died of it, after every call before it.
            Ending::Signal(s) if s == signal && funcs(&trace, rank) == BEFORE_THE_CRASH => {
                assert_eq!(rank.meta.ended_in, None, "the signal came between calls");
                noted += 1
            }
            // Killed (or sent SIGTERM) by hydra while it cleaned up.
            Ending::Killed | Ending::Signal(libc::SIGTERM) if ranks > 1 => {
                assert_prefix(&trace, rank, &BEFORE_THE_CRASH, 5)
            }
            other => panic!("rank {}: {other:?}\n{}", rank.meta.rank, run.output),
        }
        assert_eq!(rank.meta.world_size, ranks);
    }
    assert!(noted >= 1, "no rank noted signal {signal}\n{}", run.output);
    let calls = decoded(&trace, 0);
    let sendrecv = calls.iter().find(|c| c.func == "MPI_Sendrecv").unwrap();
    assert_eq!(sendrecv.args["dest"], json!(1 % ranks), "decoded absolute");
}

#[test]
fn mpi_abort_leaves_every_ranks_calls_readable() {
    let run = run_traced("crash_abort", 3, &[], &[]);
    assert_eq!(run.output.status.code(), Some(42), "{}", run.output);
    let trace = run.trace();
    assert!(!trace.is_complete());
    assert_eq!(
        files(run.dir.path()),
        [
            ".lock",
            "rank0.journal",
            "rank1.mgr",
            "rank1.verify",
            "rank2.journal"
        ]
        .map(String::from)
        .into(),
        "the aborting rank's journal is gone, its trace written"
    );
    let [r0, r1, r2] = &trace.ranks[..] else {
        panic!("three ranks");
    };

    // The aborting rank wrote its own trace: every call, MPI_Abort last.
    assert_eq!(r1.meta.ending, Ending::Abort);
    let expected = verify_stream(run.dir.path(), 1);
    assert_eq!(
        trace.calls(1).map(<[u8]>::to_vec).collect::<Vec<_>>(),
        expected
    );
    let calls = decoded(&trace, 1);
    let last = calls.last().unwrap();
    assert_eq!(
        (last.func, &last.args["errorcode"]),
        ("MPI_Abort", &json!(42))
    );

    // The others were killed in MPI_Recv: their journals hold the rest.
    let before_abort = [
        "MPI_Init",
        "MPI_Comm_size", // need_ranks
        "MPI_Comm_rank",
        "MPI_Comm_size",
        "MPI_Sendrecv",
        "MPI_Allreduce",
        "MPI_Barrier",
        "MPI_Comm_rank",
    ];
    for (r, rank) in [(0, r0), (2, r2)] {
        assert_eq!(rank.meta.ending, Ending::Killed, "rank {r}");
        assert_eq!((rank.meta.rank, rank.meta.world_size), (r, 3));
        assert_prefix(&trace, rank, &before_abort, 6);
        if funcs(&trace, rank).len() == before_abort.len() {
            assert_eq!(rank.meta.ended_in, Some(func::MPI_Recv), "rank {r}");
        }
        let calls = decoded(&trace, r);
        let sendrecv = &calls[4];
        assert_eq!(sendrecv.args["dest"], json!((r + 1) % 3));
        assert_eq!(sendrecv.args["source"], json!((r + 2) % 3));
        assert_eq!(calls[2].args["rank"], json!(r));
    }
}

#[test]
fn a_long_run_killed_across_checkpoints_loses_no_call() {
    let iterations = 3000;
    // Barriers after iterations k*k - 1: no period, so the journal's tail
    // fills with records (a periodic loop is counted, not recorded).
    let run = run_traced(
        "crash_abort_loop",
        3,
        &[&iterations.to_string(), "-1"],
        &[("MPIGRAM_JOURNAL_BYTES", "512")],
    );
    assert_eq!(run.output.status.code(), Some(42), "{}", run.output);
    let dir = run.dir.path();
    let trace = run.trace();
    // Rank 1 aborted and wrote its trace; every call before its MPI_Abort
    // has the same signature on every rank.
    let aborted = verify_stream(dir, 1);
    let barriers = (1..).take_while(|k| k * k <= iterations).count();
    assert_eq!(aborted.len(), 4 + iterations + barriers + 1);
    let before_abort = &aborted[..aborted.len() - 1];
    for r in [0, 2] {
        let rank = &trace.ranks[r];
        assert_eq!(rank.meta.ending, Ending::Killed);
        let calls: Vec<Vec<u8>> = trace.calls(r as u32).map(<[u8]>::to_vec).collect();
        // Killed after its last Allreduce at the latest (rank 1 could not
        // leave the final barrier before this rank entered it).
        assert!(
            calls.len() + 1 >= before_abort.len() && before_abort.starts_with(&calls),
            "rank {r}: {} calls, not a prefix of rank 1's {}",
            calls.len(),
            before_abort.len()
        );
        let counted: u64 = rank.stats.iter().map(|(_, s)| s.count).sum();
        assert_eq!(counted, calls.len() as u64, "every call counted once");
        let counts: Vec<i64> = decoded(&trace, r as u32)
            .iter()
            .filter(|c| c.func == "MPI_Allreduce")
            .map(|c| c.args["count"].as_i64().unwrap())
            .collect();
        assert_eq!(counts.len(), iterations);
        assert!(
            counts
                .iter()
                .enumerate()
                .all(|(i, &c)| c == (i % 3) as i64 + 1)
        );
        // Checkpoints kept the journal at its 512-byte tail, and the
        // checkpoint is the compressed trace.
        let journal = std::fs::metadata(dir.join(format!("rank{r}.journal"))).unwrap();
        let checkpoint = std::fs::metadata(dir.join(format!("rank{r}.checkpoint"))).unwrap();
        assert!(journal.len() <= 1024, "journal of {} bytes", journal.len());
        assert!(
            checkpoint.len() <= 2048,
            "checkpoint of {} bytes",
            checkpoint.len()
        );
    }
}

/// A loop's repeated calls are counted in the journal's header, not
/// appended to its tail: a rank killed after 20,000 iterations (three
/// MPI_Allreduce signatures in turn, an MPI_Barrier after every 1,000th)
/// has every call back from a 512-byte tail, whose checkpoint, if it
/// needed one, holds only the loop's first iterations.
#[test]
fn a_killed_ranks_repeated_calls_are_counted_in_the_journal() {
    let iterations = 20_000;
    let barrier_every = 1000;
    let run = run_traced(
        "crash_abort_loop",
        2,
        &[&iterations.to_string(), &barrier_every.to_string()],
        &[("MPIGRAM_JOURNAL_BYTES", "512")],
    );
    assert_eq!(run.output.status.code(), Some(42), "{}", run.output);
    let dir = run.dir.path();
    let trace = run.trace();
    let killed = trace.rank(0).unwrap();
    assert_eq!(killed.meta.ending, Ending::Killed);
    let in_loop = iterations + iterations / barrier_every;
    assert!(
        killed.meta.calls as usize >= 4 + in_loop,
        "{} calls",
        killed.meta.calls
    );
    let allreduces = decoded(&trace, 0)
        .iter()
        .filter(|c| c.func == "MPI_Allreduce")
        .count();
    assert_eq!(allreduces, iterations);
    let checkpoint = dir.join("rank0.checkpoint");
    if checkpoint.exists() {
        let held = mpigram_trace::RankTrace::read(&checkpoint)
            .unwrap()
            .meta
            .calls;
        assert!(held < 1000, "a checkpoint of {held} calls");
    }
}

#[test]
fn sigsegv_is_noted_with_the_calls_before_it() {
    assert_dies_of_signal("crash_segv", 1, libc::SIGSEGV);
    assert_dies_of_signal("crash_segv", 2, libc::SIGSEGV);
}

#[test]
fn sigbus_is_noted_with_the_calls_before_it() {
    assert_dies_of_signal("crash_sigbus", 2, libc::SIGBUS);
}

#[test]
fn sigterm_is_noted_with_the_calls_before_it() {
    assert_dies_of_signal("crash_sigterm", 2, libc::SIGTERM);
}

#[test]
fn sigint_is_noted_with_the_calls_before_it() {
    assert_dies_of_signal("crash_sigint", 2, libc::SIGINT);
}

#[test]
fn exit_without_finalize_writes_the_trace_and_removes_the_journal() {
    let run = run_traced("crash_exit", 2, &[], &[]);
    program("crash_exit")
        .unwrap()
        .expect
        .check(&run.output)
        .unwrap();
    let trace = run.trace();
    let (mut exited, mut tidied) = (0, 0);
    for rank in &trace.ranks {
        let r = rank.meta.rank;
        match rank.meta.ending {
            Ending::ExitWithoutFinalize => {
                exited += 1;
                let calls: Vec<Vec<u8>> = trace.calls(r).map(<[u8]>::to_vec).collect();
                assert_eq!(calls, verify_stream(run.dir.path(), r));
                assert_eq!(funcs(&trace, rank), BEFORE_THE_CRASH);
                assert_eq!(rank.meta.ended_in, None, "exit() came between calls");
                // The first rank to exit removes its journal after writing
                // its trace; hydra may kill a later one in between (its
                // trace is whole, the journal left for the next run to
                // remove), so at least one journal is gone.
                if !run.dir.path().join(format!("rank{r}.journal")).exists() {
                    tidied += 1;
                }
            }
            // hydra may kill a rank before it reaches exit() (tests/mpi/README.md).
            Ending::Killed => assert_prefix(&trace, rank, &BEFORE_THE_CRASH, 5),
            other => panic!("rank {r}: {other:?}"),
        }
    }
    assert!(exited >= 1, "{}", run.output);
    assert!(tidied >= 1, "no exited rank removed its journal");
}

/// A rank that ends inside an MPI call (MPI ends the process in it, or it
/// is killed while blocked in it) names that call, and holds every call
/// before it: `tests/mpi/crash_in_call.c` in each of its ways to end.
#[test]
fn a_rank_that_ends_inside_a_call_names_it() {
    let prelude = |errhandler: bool| {
        let mut calls = vec!["MPI_Init", "MPI_Comm_size"];
        if errhandler {
            calls.extend(["MPI_Comm_create_errhandler", "MPI_Comm_set_errhandler"]);
        }
        calls.extend(BEFORE_THE_CRASH[1..].iter().copied());
        calls.extend(["MPI_Bcast", "MPI_Comm_rank"]);
        calls
    };
    // (mode, exit status, rank 1's possible endings, the call it ended in)
    let send = Some(func::MPI_Send);
    let cases: [(&str, i32, &[Ending], Option<FuncId>); 4] = [
        ("kill", libc::SIGKILL, &[Ending::Killed], None),
        // MPICH 4.0.2 aborts the job from its fatal handler (exit status:
        // the error code's low byte): hydra kills the rank inside the call,
        // or it exits there first.
        (
            "fatal",
            6,
            &[Ending::Killed, Ending::ExitWithoutFinalize],
            send,
        ),
        ("exit", 3, &[Ending::ExitWithoutFinalize], send),
        (
            "abort",
            libc::SIGABRT,
            &[Ending::Signal(libc::SIGABRT)],
            send,
        ),
    ];
    for (mode, status, endings, ended_in) in cases {
        let run = run_traced("crash_in_call", 2, &[mode], &[]);
        let code = run.output.status.code();
        // Hydra's status is the first death it registers: now and then
        // rank 0's, killed in the cleanup (its banner then says "EXIT
        // CODE: 9", and the status is that or hydra's SIGTERM), before rank
        // 1's own ending, whatever the mode (CI saw it in "abort" and in
        // "exit"). Rank 1's ending is checked below, in the trace.
        let cleaned_up_first = run.output.stdout.contains("EXIT CODE: 9\n")
            && matches!(code, Some(libc::SIGKILL | libc::SIGTERM));
        assert!(
            code == Some(status) || cleaned_up_first,
            "{mode}: {}",
            run.output
        );
        let trace = run.trace();
        let [r0, r1] = &trace.ranks[..] else {
            panic!("{mode}: two ranks");
        };
        // Rank 0 was killed blocked in MPI_Recv (by rank 1 or hydra).
        let before = prelude(matches!(mode, "exit" | "abort"));
        assert_eq!(
            (r0.meta.ending, r0.meta.ended_in),
            (Ending::Killed, Some(func::MPI_Recv)),
            "{mode}"
        );
        assert_eq!(funcs(&trace, r0), before, "{mode}: every call before");
        assert!(
            r0.meta
                .describe_end()
                .ends_with("inside MPI_Recv (the call did not return: it is not in the trace)"),
            "{}",
            r0.meta.describe_end()
        );
        let mut before = before;
        if ended_in.is_some() {
            before.push("MPI_Comm_size"); // world_size() in the bad MPI_Send
        }
        assert!(
            endings.contains(&r1.meta.ending),
            "{mode}: {:?}",
            r1.meta.ending
        );
        assert_eq!(r1.meta.ended_in, ended_in, "{mode}");
        assert_eq!(funcs(&trace, r1), before, "{mode}: every call before");
        if r1.meta.ending == Ending::ExitWithoutFinalize {
            // Written at exit, with the verification stream.
            assert_eq!(
                trace.calls(1).map(<[u8]>::to_vec).collect::<Vec<_>>(),
                verify_stream(run.dir.path(), 1),
                "{mode}: exactly the calls rank 1 made"
            );
        }
    }
}

#[test]
fn a_finalized_run_leaves_no_journal() {
    let run = run_traced("p2p_blocking", 2, &[], &[("MPIGRAM_JOURNAL_BYTES", "256")]);
    run.output.assert_success();
    assert_trace_is_exact(&run, 2);
    assert_eq!(
        files(run.dir.path()),
        [".lock", "rank0.verify", "rank1.verify", "trace.mgr"]
            .map(String::from)
            .into()
    );
}

#[test]
fn without_room_for_a_journal_the_program_runs_as_before() {
    // A trace "directory" under a regular file cannot be created.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let exe = mpigram_testkit::compile("coll_blocking").unwrap();
    let out = mpiexec(1, &exe, [] as [&str; 0])
        .preload(tracer())
        .env("MPIGRAM_OUT", file.join("trace"))
        .run()
        .unwrap();
    out.assert_success();
    let said = "mpigram: cannot create the trace directory ";
    assert_eq!(out.stderr.matches(said).count(), 1, "{}", out.stderr);
    assert!(Trace::open(dir.path()).is_err(), "nothing written");
}

/// Ranks killed with SIGKILL (the launcher's, after rank 1's MPI_Abort)
/// keep the per-call times of every call they journaled, in the mode they
/// recorded: before their first checkpoint (the default journal, which
/// these runs never fill) and across checkpoints (a 512-byte tail), in
/// the first block of times and after two blocks filled (165,000 calls:
/// the journal's blocks, then its open block). The lossy times are within
/// their bound of the exact ones, as on a finalized run, and the trace
/// says which mode the run used.
#[test]
fn ranks_killed_with_sigkill_keep_their_call_times() {
    let runs = [
        (600, None),
        (3000, Some("512")),
        (150_000, None),
        (150_000, Some("512")),
    ];
    for (iterations, journal_bytes) in runs {
        let mut env = vec![("MPIGRAM_TIMING", "lossy,lossless")];
        env.extend(journal_bytes.map(|b| ("MPIGRAM_JOURNAL_BYTES", b)));
        // Barriers after iterations k*k - 1: no period, so that the
        // journal's tail fills with records (a periodic loop is counted).
        let args = [&iterations.to_string(), "-1"];
        let run = run_traced("crash_abort_loop", 3, &args, &env);
        assert_eq!(run.output.status.code(), Some(42), "{}", run.output);
        let dir = run.dir.path();
        let checkpoints = [0, 2].map(|r| dir.join(format!("rank{r}.checkpoint")).exists());
        assert_eq!(
            checkpoints,
            [journal_bytes.is_some(); 2],
            "checkpoints with a 512-byte tail only"
        );
        let trace = run.trace();
        assert!(trace.skipped.is_empty(), "{:?}", trace.skipped);
        let aborted = &trace.rank(1).unwrap().meta;
        assert_eq!(aborted.ending, Ending::Abort);
        for r in [0, 2] {
            let meta = &trace.rank(r).unwrap().meta;
            assert_eq!(
                meta.ending,
                Ending::Killed,
                "rank {r}: SIGKILL, no handler ran"
            );
            assert!(
                meta.calls as usize >= iterations,
                "rank {r}: {} calls",
                meta.calls
            );
            assert_eq!(meta.timing, aborted.timing, "rank {r}'s mode");
        }
        assert_lossy_times_within_bound(&trace, 1.1, &[]);
        let summary = mpigram_analysis::summary::TraceSummary::of(&trace);
        assert_eq!(summary.timing, "lossy (base 1.1) and lossless");
    }
}
