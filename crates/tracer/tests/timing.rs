//! Per-call timing on real runs: lossy times within their proven bound of
//! the exact times recorded in the same run, and ranks' clocks aligned.

mod common;

use common::*;
use mpigram_analysis::timeline::{RankClock, Span};

/// MPIGRAM_TIMING=lossy,lossless records both in one run. Every lossy
/// start and end is early by at most (b - 1) times the longest time from
/// one call's end to the next's so far (the bound `mpigram_trace::timing`
/// proves), so also by at most b - 1 relative to the time since the run
/// began, and never late; every duration is within b - 1 of the exact
/// one, with the base of its function (MPI_Allreduce has its own). The
/// same without the crash journal, whose mapping otherwise holds the
/// blocks of times being filled (`MPIGRAM_JOURNAL_BYTES=0`: on the heap).
#[test]
fn lossy_times_stay_within_their_bound_of_the_exact_ones() {
    let timing = [
        ("MPIGRAM_TIMING", "lossy,lossless"),
        ("MPIGRAM_TIMING_BASE", "1.1,MPI_Allreduce=1.4"),
    ];
    let no_journal = [timing[0], timing[1], ("MPIGRAM_JOURNAL_BYTES", "0")];
    let without = run_traced("timing", 3, &["300"], &no_journal);
    without.output.assert_success();
    let trace = assert_trace_is_exact(&without, 3);
    assert_lossy_times_within_bound(&trace, 1.1, &[("MPI_Allreduce", 1.4)]);
    let run = run_traced("timing", 3, &["300"], &timing);
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 3);
    // One machine, one clock: nothing to measure, nothing to correct.
    for r in &trace.ranks {
        let sync: Vec<(i64, u64)> = r
            .meta
            .clock_sync
            .iter()
            .map(|s| (s.offset_ns, s.error_ns))
            .collect();
        assert_eq!(sync, [(0, 0), (0, 0)], "rank {}", r.meta.rank);
    }
    for r in &trace.ranks {
        assert!(
            r.meta.calls > 600,
            "rank {}: {} calls",
            r.meta.rank,
            r.meta.calls
        );
    }
    let coarse_allreduce = assert_lossy_times_within_bound(&trace, 1.1, &[("MPI_Allreduce", 1.4)]);
    assert!(
        coarse_allreduce > 0,
        "MPI_Allreduce's own base 1.4 was not used"
    );
}

/// With rank 1's clock 250 ms behind rank 0's (as if on another node), a
/// message would seem to be received 250 ms before it was sent; the
/// offsets measured at MPI_Init and MPI_Finalize put it right, within
/// their measured uncertainty.
#[test]
fn clock_offsets_put_every_send_before_its_receive_ends() {
    let shift = -250_000_000i64;
    let run = run_traced(
        "timing",
        2,
        &["100"],
        &[
            ("MPIGRAM_TIMING", "lossless"),
            ("MPIGRAM_TEST_CLOCK_SHIFT", &format!("1={shift}")),
        ],
    );
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    let sync = &trace.ranks[1].meta.clock_sync;
    assert_eq!(sync.len(), 2, "measured at MPI_Init and MPI_Finalize");
    for s in sync {
        assert!(
            (s.offset_ns - shift).abs() < 5_000_000,
            "offset {} ns, shifted by {shift} ns",
            s.offset_ns
        );
    }
    assert!(
        trace.ranks[0]
            .meta
            .clock_sync
            .iter()
            .all(|s| s.offset_ns == 0)
    );
    let all = times(&trace);
    let sends: Vec<Span> = all[0]
        .0
        .iter()
        .zip(&all[0].1)
        .filter(|(f, _)| **f == "MPI_Send")
        .map(|(_, s)| *s)
        .collect();
    let recvs: Vec<Span> = all[1]
        .0
        .iter()
        .zip(&all[1].1)
        .filter(|(f, _)| **f == "MPI_Recv")
        .map(|(_, s)| *s)
        .collect();
    assert_eq!((sends.len(), recvs.len()), (100, 100));
    let uncertainty = (RankClock::of(&trace.ranks[0].meta).uncertainty_ns()
        + RankClock::of(&trace.ranks[1].meta).uncertainty_ns()) as i64;
    for (k, (s, r)) in sends.iter().zip(&recvs).enumerate() {
        assert!(
            s.start_ns <= r.end_ns + uncertainty,
            "message {k}: sent at {} ns, received by {} ns (uncertainty {uncertainty} ns)",
            s.start_ns,
            r.end_ns
        );
    }
}

/// The aggregated gap before the first call after MPI_Init is the
/// application's computation: the tracer's own start-up inside MPI_Init
/// (the census, the clocks' alignment over messages) is not in it, as the
/// exact times of the same run, which end MPI_Init where PMPI_Init ended,
/// show; and MPI_Init, the first call, has no gap before it (the time
/// since the tracer started is the tracer's: claiming the directory,
/// announcing the rank). The same after a program of sessions' first
/// MPI_Session_init, where the ranks count themselves. (gen-bench waits
/// the gaps; a traced benchmark repeats the start-up.)
#[test]
fn the_gap_after_mpi_init_leaves_the_tracers_start_up_out() {
    for (program, args, init_func) in [
        ("timing", &["10"][..], "MPI_Init"),
        // A program of sessions counts its ranks in its first one.
        ("sessions", &[][..], "MPI_Session_init"),
    ] {
        start_up_left_out(program, args, init_func);
    }
}

fn start_up_left_out(program: &str, args: &[&str], init_func: &str) {
    let run = run_traced(
        program,
        2,
        args,
        &[
            ("MPIGRAM_TIMING", "lossless"),
            ("MPIGRAM_RANK_STATS", "exact"),
        ],
    );
    run.output.assert_success();
    let trace = assert_trace_is_exact(&run, 2);
    for (part, (funcs, exact, _)) in trace.ranks.iter().zip(times(&trace)) {
        let rank = part.meta.rank;
        let init = funcs.iter().position(|f| *f == init_func).unwrap();
        let terminals: Vec<u32> = trace.grammar.expand(rank).unwrap().collect();
        let next = terminals[init + 1];
        // The exact gaps before that signature's calls, the one after
        // MPI_Init counted from the end of PMPI_Init.
        let exact_gaps: i64 = (1..terminals.len())
            .filter(|&i| terminals[i] == next)
            .map(|i| exact[i].start_ns - exact[i - 1].end_ns)
            .sum();
        let stats_of = |terminal: u32| part.stats.iter().find(|(t, _)| *t == terminal).unwrap().1;
        let init_gap = stats_of(terminals[init]).gap_ns;
        assert!(
            init_gap < 1_000_000,
            "{program} rank {rank}: {init_gap} ns before {init_func}"
        );
        let stats = stats_of(next);
        // The start-up exchanges messages with the other rank: microseconds
        // at least.
        assert!(
            (stats.gap_ns as i64) + 1_000 < exact_gaps,
            "{program} rank {rank}: {} gap {} ns, exact {exact_gaps} ns",
            funcs[init + 1],
            stats.gap_ns
        );
    }
}

/// A rank's share of a processor between its calls (`RankMeta::cpu_share`,
/// one gap in about a millisecond sampled): nearly all of it where the
/// rank computes, none where it sleeps, and about half where two ranks
/// compute at once on one processor (for 20 ms at a time, longer than the
/// scheduler's slices: shorter spins take turns); with the processors the
/// rank may run on.
#[test]
fn the_share_of_a_processor_between_calls_is_measured() {
    let measured = |ranks: u32, args: &[&str]| -> Vec<(u32, f64)> {
        let run = run_traced("cpu_share", ranks, args, &[]);
        run.output.assert_success();
        let trace = assert_trace_is_exact(&run, ranks);
        trace
            .ranks
            .iter()
            .map(|r| {
                let share = r.meta.cpu_share;
                (
                    r.meta.cpus,
                    share.unwrap_or_else(|| panic!("{args:?}: no share measured")),
                )
            })
            .collect()
    };
    let processors = mpigram_testkit::processors();
    let [(cpus, computing)] = measured(1, &["40", "2000", "compute"])[..] else {
        panic!("one rank")
    };
    assert_eq!(cpus, processors, "the processors the rank may run on");
    let [(_, sleeping)] = measured(1, &["40", "2000", "sleep"])[..] else {
        panic!("one rank")
    };
    assert!(
        sleeping < 0.2,
        "a rank that sleeps between calls: {sleeping}"
    );
    // Other tests may share the machine's processors meanwhile.
    assert!(
        computing > 0.5,
        "a rank that computes between calls: {computing}"
    );
    let pinned = measured(2, &["10", "20000", "pinned"]);
    for (rank, &(cpus, share)) in pinned.iter().enumerate() {
        assert_eq!(cpus, 1, "rank {rank}: pinned to one processor");
        assert!(
            (0.25..0.8).contains(&share),
            "rank {rank}: two ranks on one processor: {pinned:?}"
        );
    }
}
