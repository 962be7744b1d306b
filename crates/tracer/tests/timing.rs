//! Per-call timing on real runs: lossy times within their proven bound of
//! the exact times recorded in the same run, and ranks' clocks aligned.

mod common;

use common::*;
use mpigram_analysis::decode::RankDecoder;
use mpigram_analysis::timeline::{RankClock, Source, Span, rank_times};
use mpigram_trace::Trace;

/// Exact and lossy per-call times of every rank (lossy if recorded), with
/// each call's function.
fn times(trace: &Trace) -> Vec<(Vec<&'static str>, Vec<Span>, Vec<Span>)> {
    let start = trace.run_start_ns();
    trace
        .ranks
        .iter()
        .map(|part| {
            let funcs = RankDecoder::new(trace, part)
                .map(|c| c.unwrap().func)
                .collect();
            let exact = rank_times(trace, part, Source::Lossless, start).unwrap();
            let lossy = match part.meta.timing.lossy {
                Some(_) => rank_times(trace, part, Source::Lossy, start).unwrap(),
                None => Vec::new(),
            };
            (funcs, exact, lossy)
        })
        .collect()
}

/// MPIGRAM_TIMING=lossy,lossless records both in one run. Every lossy
/// start and end is early by at most (b - 1) times the longest time from
/// one call's end to the next's so far (the bound `mpigram_trace::timing`
/// proves), so also by at most b - 1 relative to the time since the run
/// began, and never late; every duration is within b - 1 of the exact
/// one, with the base of its function (MPI_Allreduce has its own).
#[test]
fn lossy_times_stay_within_their_bound_of_the_exact_ones() {
    let run = run_traced(
        "timing",
        3,
        &["300"],
        &[
            ("MPIGRAM_TIMING", "lossy,lossless"),
            ("MPIGRAM_TIMING_BASE", "1.1,MPI_Allreduce=1.4"),
        ],
    );
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
    let mut coarse_allreduce = 0;
    for (rank, (funcs, exact, lossy)) in times(&trace).into_iter().enumerate() {
        assert_eq!(exact.len(), funcs.len(), "rank {rank}: a time per call");
        assert_eq!(lossy.len(), funcs.len(), "rank {rank}: a time per call");
        assert!(funcs.len() > 600, "rank {rank}: {} calls", funcs.len());
        let origin = RankClock::of(&trace.ranks[rank].meta).global_ns(0) - trace.run_start_ns();
        let (mut longest, mut last_end) = (0i64, origin as i64);
        for (k, ((f, e), l)) in funcs.iter().zip(&exact).zip(&lossy).enumerate() {
            let b = if *f == "MPI_Allreduce" { 1.4 } else { 1.1 };
            longest = longest.max(e.end_ns - last_end);
            last_end = e.end_ns;
            // Rounding to whole nanoseconds, twice.
            let slack = 0.4 * longest as f64 + 2.0;
            for (what, t, t_lossy) in [
                ("start", e.start_ns, l.start_ns),
                ("end", e.end_ns, l.end_ns),
            ] {
                let early = (t - t_lossy) as f64;
                assert!(
                    (-2.0..=slack).contains(&early),
                    "rank {rank}, call {k} ({f}): {what} {t} ns exact, {t_lossy} ns lossy"
                );
                assert!(
                    early <= 0.4 * (t as f64 - origin) + 2.0,
                    "rank {rank}, call {k} ({f}): {what} {t} ns exact, {t_lossy} ns lossy, origin {origin}"
                );
            }
            let (d, d_lossy) = (e.end_ns - e.start_ns, l.end_ns - l.start_ns);
            let short = (d - d_lossy) as f64;
            assert!(
                (-2.0..=(1.0 - 1.0 / b) * d as f64 + 2.0).contains(&short),
                "rank {rank}, call {k} ({f}): duration {d} ns exact, {d_lossy} ns lossy"
            );
            if *f == "MPI_Allreduce" && short > (1.0 - 1.0 / 1.1) * d as f64 + 2.0 {
                coarse_allreduce += 1;
            }
        }
    }
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
