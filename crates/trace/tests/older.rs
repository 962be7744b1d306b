//! Whole-run files written by an earlier mpigram (format 2.0, before the
//! compact summary) still read: NPB FT class W on 4 ranks under MPICH 4.0.2,
//! traced with `MPIGRAM_RANK_STATS=exact` and summarised as that version
//! did by default (`tests/data/format-2.0`).

use mpigram_trace::{RankStats, Trace};
use std::path::Path;

fn open(name: &str) -> Trace {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/format-2.0")
        .join(name);
    Trace::open(&dir).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn files_of_format_2_0_still_read() {
    let exact = open("ft-w-4-exact");
    let summary = open("ft-w-4-summary");
    assert_eq!(exact.rank_stats, RankStats::Exact);
    assert_eq!(summary.rank_stats, RankStats::Summary);
    assert_eq!(exact.ranks.len(), 4);
    assert_eq!(summary.ranks.len(), 4);
    assert_eq!(exact.signatures.len(), 17);
    for (e, s) in exact.ranks.iter().zip(&summary.ranks) {
        let rank = e.meta.rank;
        assert!(exact.calls(rank).eq(summary.calls(rank)), "rank {rank}");
        assert_eq!(e.meta.calls, 26);
        assert_eq!(
            (s.meta.pid, &s.meta.host, s.meta.calls, &s.comms),
            (e.meta.pid, &e.meta.host, e.meta.calls, &e.comms)
        );
        let counts = |p: &mpigram_trace::RankPart| -> Vec<(u32, u64)> {
            p.stats.iter().map(|&(t, c)| (t, c.count)).collect()
        };
        assert_eq!(counts(s), counts(e), "rank {rank}");
    }
    // Time per signature over the ranks: quantised down by at most 1 %.
    assert_time_per_signature_within(&exact, &summary, 1);
}

/// Each signature's time over the ranks of `summary` is that of `exact`
/// within 1 % plus `quantum_ns` a rank (quantised down, but times below the
/// quantum up to it).
fn assert_time_per_signature_within(exact: &Trace, summary: &Trace, quantum_ns: u64) {
    for t in 0..exact.signatures.len() as u32 {
        let sum = |trace: &Trace| -> u64 {
            let stats = trace.ranks.iter().flat_map(|p| &p.stats);
            stats
                .filter(|(u, _)| *u == t)
                .map(|(_, c)| c.total_ns)
                .sum()
        };
        let (want, got) = (sum(exact), sum(summary));
        let slack = (exact.ranks.len() as u64 * quantum_ns) as f64;
        assert!(
            got as f64 <= want as f64 + slack && got as f64 * 1.01 + slack >= want as f64,
            "signature {t}: {got} for {want}"
        );
    }
}

/// The same run summarised as today's default: at most half the C
/// tracer's 834 bytes for FT on 4 ranks, and per signature the time over
/// the ranks within 1 % or the summary's unit a rank.
#[test]
fn the_compact_summary_of_the_same_run_is_under_half_the_c_tracers_bytes() {
    let exact = open("ft-w-4-exact");
    let mut today = exact.clone();
    today.rank_stats = RankStats::Summary;
    let dir = tempfile::tempdir().unwrap();
    let path = today.write(dir.path()).unwrap();
    let bytes = std::fs::metadata(&path).unwrap().len();
    assert!(bytes <= 834 / 2, "{bytes} bytes");
    let back = Trace::open(dir.path()).unwrap();
    assert_eq!(back.rank_stats, RankStats::Summary);
    // The run's unit: the power of two below 1/64 of its wall time; the
    // summary's a 1,024th of it.
    let start = exact.ranks.iter().map(|p| p.meta.start_ns).min().unwrap();
    let end = exact.ranks.iter().map(|p| p.meta.end_ns).max().unwrap();
    let quantum = (1u64 << ((end - start) / 64).ilog2()) / 1024;
    assert_time_per_signature_within(&exact, &back, quantum);
}
