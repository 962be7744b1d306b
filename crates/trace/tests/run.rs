//! The whole-run trace: ranks merged as at MPI_Finalize read back exactly,
//! whole or one rank at a time.

mod common;

use common::sample;
use mpigram_grammar::Sequitur;
use mpigram_trace::timing::{
    Bins, ColumnWriter, DEFAULT_BASE, ExactWriter, LossyClock, decode_columns, decode_exact,
};
use mpigram_trace::{
    Bases, CallTimes, Gaps, PairGap, RANKS_PER_CHUNK, RUN_FILE_NAME, RankStats, RankTrace, Timing,
    Trace, summary,
};

/// Rank `rank` of `n`: the sample, every third rank with a longer loop;
/// every other rank with per-call times, lossy and exact.
fn rank(rank: u32, n: u32) -> RankTrace {
    let mut t = sample(rank);
    t.meta.world_size = n;
    t.meta.pid = 1000 + rank;
    // Each rank starts at another time: the last rank first.
    t.meta.start_ns = 5_000 - u64::from(rank);
    if rank % 3 == 0 {
        let mut s = Sequitur::new();
        for _ in 0..70 {
            s.push(0);
            s.push(1);
        }
        t.grammar = s.grammar(rank);
        t.stats.iter_mut().for_each(|s| s.count = 70);
        t.meta.calls = 140;
    }
    if rank % 2 == 1 {
        let calls = t.grammar.stream_len(rank).unwrap();
        let bins = Bins::new(DEFAULT_BASE).unwrap();
        let (mut clock, mut codes, mut exact) = (
            LossyClock::default(),
            ColumnWriter::default(),
            ExactWriter::default(),
        );
        for k in 0..calls {
            let start = 1_000 * k + u64::from(rank);
            let (i, d) = clock.encode(&bins, start, start + 300 + k % 11);
            codes.push(i.into(), d.into());
            exact.push(start, start + 300 + k % 11);
        }
        t.meta.timing = Timing {
            lossy: Some(Bases::parse("").unwrap()),
            lossless: true,
        };
        t.times = CallTimes {
            lossy: codes.bytes(),
            exact: exact.bytes(),
        };
    }
    t
}

/// Rank `r`'s per-call times as a trace holds them.
/// (lossy codes, exact times) of each call.
type Times = (Vec<(u64, u64)>, Vec<(u64, u64)>);

fn times(t: &Trace, r: u32) -> Times {
    let stored = &t.rank(r).unwrap().times;
    (
        decode_columns(&stored.lossy).unwrap(),
        decode_exact(&stored.exact).unwrap(),
    )
}

fn merged(n: u32) -> Trace {
    let mut whole = Trace::from_rank(rank(0, n));
    for r in 1..n {
        whole.absorb(Trace::from_rank(rank(r, n))).unwrap();
    }
    whole.share().unwrap();
    whole
}

#[test]
fn a_merged_trace_reads_back_whole_and_one_rank_at_a_time() {
    let n = 3 * RANKS_PER_CHUNK as u32 + 5;
    let dir = tempfile::tempdir().unwrap();
    merged(n).write(dir.path()).unwrap();

    let whole = Trace::open(dir.path()).unwrap();
    assert_eq!(whole.ranks.len(), n as usize);
    assert_eq!(whole.signatures.len(), 2, "one table for all ranks");
    let mut starts: Vec<u32> = whole.grammar.streams().iter().map(|&(_, s)| s).collect();
    starts.sort_unstable();
    starts.dedup();
    assert_eq!(starts.len(), 2, "two behaviours, each stored once");
    for r in 0..n {
        let original = rank(r, n);
        assert!(whole.calls(r).eq(original.calls()), "rank {r}");
        assert_eq!(whole.rank(r).unwrap().meta, original.meta);
        let (lossy, exact) = times(&whole, r);
        assert_eq!(whole.rank(r).unwrap().times, original.times, "rank {r}");
        let timed = if r % 2 == 1 { original.meta.calls } else { 0 };
        assert_eq!((lossy.len() as u64, exact.len() as u64), (timed, timed));
    }

    // One rank alone: its chunk of per-rank data, one stream.
    let last = n - 1;
    for r in [
        0,
        1,
        RANKS_PER_CHUNK as u32 - 1,
        RANKS_PER_CHUNK as u32,
        150,
        last,
    ] {
        let one = Trace::open_rank(dir.path(), r).unwrap();
        assert_eq!(one.ranks.len(), 1, "rank {r}");
        assert_eq!(&one.ranks[0], whole.rank(r).unwrap());
        assert_eq!(one.grammar.streams().len(), 1);
        assert!(one.calls(r).eq(whole.calls(r)), "rank {r}");
        assert_eq!(times(&one, r), times(&whole, r), "rank {r}");
        assert_eq!(
            one.run_start_ns(),
            whole.run_start_ns(),
            "rank {r}: times from the run's start"
        );
    }
    // A rank the file does not hold: the whole directory, without it.
    let other = Trace::open_rank(dir.path(), n + 7).unwrap();
    assert!(other.rank(n + 7).is_none());
    assert_eq!(other.ranks.len(), n as usize);
}

/// Rank `r` of `n` with aggregated timing only: a regular run, but rank 5
/// spends 40 times longer in its first call signature and rank 9 computes
/// 6 times longer before its second (each more than 1 % of the run).
fn aggregated_rank(r: u32, n: u32) -> RankTrace {
    let mut t = sample(r);
    t.meta.world_size = n;
    t.meta.pid = 1000 + r;
    t.meta.start_ns = 1_000_000 + 137 * u64::from(r);
    t.meta.end_ns = 50_000_000 + 11 * u64::from(r);
    for (i, s) in t.stats.iter_mut().enumerate() {
        s.total_ns = 100_000 + 10 * u64::from(r) + i as u64;
        s.gap_ns = 200_000 + 7 * u64::from(r);
    }
    if r == 5 {
        t.stats[0].total_ns *= 40;
    }
    if r == 9 {
        t.stats[1].gap_ns *= 6;
    }
    t
}

fn merged_aggregated(n: u32) -> Trace {
    let mut whole = Trace::from_rank(aggregated_rank(0, n));
    for r in 1..n {
        whole
            .absorb(Trace::from_rank(aggregated_rank(r, n)))
            .unwrap();
    }
    whole.share().unwrap();
    whole
}

/// `got` is `want` quantised down by at most the summary's 1 %.
fn within_summary_bound(got: u64, want: u64, what: &str) {
    assert!(
        got <= want && got as f64 * summary::BASE >= want as f64,
        "{what}: {got} for {want}"
    );
}

#[test]
fn a_summarised_trace_names_the_ranks_that_stand_out_and_keeps_the_rest_within_bounds() {
    let n = RANKS_PER_CHUNK as u32 + 6;
    let dir = tempfile::tempdir().unwrap();
    merged_aggregated(n).write(dir.path()).unwrap();
    let t = Trace::open(dir.path()).unwrap();
    assert_eq!(t.rank_stats, RankStats::Summary);
    // Times from the first start (1 ms, rounded down to the unit), in units
    // of 524,288 ns (the power of two below 1/64 of the 49 ms run).
    let (origin, unit) = (524_288, 524_288);
    for r in 0..n {
        let original = aggregated_rank(r, n);
        assert!(t.calls(r).eq(original.calls()), "rank {r}");
        let part = t.rank(r).unwrap();
        let m = &part.meta;
        assert_eq!(
            (m.pid, &m.host, m.calls),
            (1000 + r, &original.meta.host, 100)
        );
        assert_eq!(m.start_ns % unit, 0);
        assert!(
            original.meta.start_ns - origin - m.start_ns < unit,
            "rank {r}"
        );
        assert!(original.meta.end_ns - origin - m.end_ns < unit, "rank {r}");
        assert_eq!(part.comms, original.comms);
        for (t_, s) in &part.stats {
            let o = original.stats[*t_ as usize];
            assert_eq!(s.count, o.count);
            match (r, t_) {
                // Named: its own value.
                (5, 0) => within_summary_bound(s.total_ns, o.total_ns, "rank 5's time"),
                (9, 1) => within_summary_bound(s.gap_ns, o.gap_ns, "rank 9's gap"),
                // The others: the mean of the ranks not named, which are
                // all within 0.7 % of each other here.
                _ => {
                    assert!((s.total_ns as f64 / o.total_ns as f64 - 1.0).abs() < 0.02);
                    assert!((s.gap_ns as f64 / o.gap_ns as f64 - 1.0).abs() < 0.02);
                }
            }
        }
    }
    // Time per signature over all ranks: within the bins' 1 %.
    for sig in 0..2 {
        let want: u64 = (0..n)
            .map(|r| aggregated_rank(r, n).stats[sig].total_ns)
            .sum();
        let got: u64 = t.ranks.iter().map(|p| p.stats[sig].1.total_ns).sum();
        assert!(
            got <= want && got as f64 * 1.02 >= want as f64,
            "{got} {want}"
        );
    }
    // One rank alone reads the same.
    for r in [0, 5, 9, n - 1] {
        let one = Trace::open_rank(dir.path(), r).unwrap();
        assert_eq!(&one.ranks[0], t.rank(r).unwrap(), "rank {r}");
    }
    // Every rank's own, exactly, when asked for.
    let exact_dir = tempfile::tempdir().unwrap();
    let mut exact = merged_aggregated(n);
    exact.rank_stats = RankStats::Exact;
    exact.write(exact_dir.path()).unwrap();
    let e = Trace::open(exact_dir.path()).unwrap();
    assert_eq!(e.rank_stats, RankStats::Exact);
    for r in 0..n {
        let original = aggregated_rank(r, n);
        let part = e.rank(r).unwrap();
        assert_eq!(part.meta, original.meta);
        let stats: Vec<_> = part.stats.iter().map(|&(_, s)| s).collect();
        assert_eq!(stats, original.stats, "rank {r}");
    }
}

/// Rank `r` of `n` with aggregated timing and where its gaps were:
/// (0 1 1)^40, signature 1 after 0 following 40 µs of computation and after
/// itself 1 µs, its first call after 5 ms of start-up (rank 9: 0.2 ms).
fn gapped_rank(r: u32, n: u32) -> RankTrace {
    let mut t = aggregated_rank(r, n);
    let mut s = Sequitur::new();
    for _ in 0..40 {
        [0, 1, 1].into_iter().for_each(|c| s.push(c));
    }
    t.grammar = s.grammar(r);
    t.meta.calls = 120;
    let first = if r == 9 { 200_000 } else { 5_000_000 };
    let after_zero = first + 39 * 40_000;
    (t.stats[0].count, t.stats[0].gap_ns) = (40, 39 * 2_000);
    (t.stats[1].count, t.stats[1].gap_ns) = (80, after_zero + 40 * 1_000);
    let pair = |terminal, pred, gap_ns| PairGap {
        terminal,
        pred,
        gap_ns,
    };
    t.gaps = Gaps {
        pairs: vec![
            pair(0, 1, 39 * 2_000),
            pair(1, 0, after_zero),
            pair(1, 1, 40 * 1_000),
        ],
        firsts: vec![(1, first)],
    };
    t
}

#[test]
fn where_the_gaps_were_survives_rank_files_and_both_kinds_of_whole_run_file() {
    let n = 20;
    let dir = tempfile::tempdir().unwrap();
    // A file keeps what adds to the gaps per signature: signature 1's
    // pairs and first gap, not signature 0's one pair.
    let kept = |r: u32| {
        let mut g = gapped_rank(r, n).gaps;
        g.pairs.remove(0);
        g
    };
    let rank = gapped_rank(3, n);
    let path = rank.write(dir.path()).unwrap();
    assert_eq!(RankTrace::read(&path).unwrap().gaps, kept(3));
    std::fs::remove_file(path).unwrap();
    let merged = || {
        let mut whole = Trace::from_rank(gapped_rank(0, n));
        for r in 1..n {
            whole.absorb(Trace::from_rank(gapped_rank(r, n))).unwrap();
        }
        whole.share().unwrap();
        whole
    };
    // Every rank's own: exactly that.
    let mut exact = merged();
    exact.rank_stats = RankStats::Exact;
    exact.write(dir.path()).unwrap();
    let e = Trace::open(dir.path()).unwrap();
    for r in 0..n {
        assert_eq!(e.rank(r).unwrap().gaps, kept(r), "rank {r}");
    }
    // The merge's messages keep all (the summary needs every rank's).
    let all =
        Trace::from_bytes(merged().to_bytes(mpigram_format::Codec::Raw).unwrap(), "m").unwrap();
    assert_eq!(all.rank(4).unwrap().gaps, gapped_rank(4, n).gaps);
    // Summarised: signature 1's pairs (it follows two) and first gaps (apart
    // from its others), within the summary's bounds; rank 9's first named;
    // signature 0's single pair is its gap per signature, not kept.
    merged().write(dir.path()).unwrap();
    let t = Trace::open(dir.path()).unwrap();
    assert_eq!(t.rank_stats, RankStats::Summary);
    for r in 0..n {
        let got = &t.rank(r).unwrap().gaps;
        let want = gapped_rank(r, n).gaps;
        let pairs: Vec<(u32, u32)> = got.pairs.iter().map(|p| (p.terminal, p.pred)).collect();
        assert_eq!(pairs, [(1, 0), (1, 1)], "rank {r}");
        for (g, w) in got.pairs.iter().zip(&want.pairs[1..]) {
            assert!(
                g.gap_ns <= w.gap_ns && g.gap_ns as f64 * 1.02 >= w.gap_ns as f64,
                "rank {r}: {g:?} for {w:?}"
            );
        }
        let (first, want_first) = (got.first(1).unwrap(), want.first(1).unwrap());
        assert!(
            first <= want_first && first as f64 * summary::BASE >= want_first as f64,
            "rank {r}: first gap {first} for {want_first}"
        );
    }
    // Without gaps recorded, nothing is added to the file.
    let plain = |gaps: bool| {
        let mut whole = merged();
        if !gaps {
            whole
                .ranks
                .iter_mut()
                .for_each(|p| p.gaps = Gaps::default());
        }
        whole.write(dir.path()).unwrap();
        std::fs::metadata(dir.path().join(RUN_FILE_NAME))
            .unwrap()
            .len()
    };
    let (with, without) = (plain(true), plain(false));
    assert!(with > without, "{with} {without}");
    assert!(
        with - without < 60,
        "{with} bytes with gaps, {without} without"
    );
}

#[test]
fn a_summarised_trace_of_a_regular_run_hardly_grows_with_ranks() {
    let bytes = |n: u32| {
        let dir = tempfile::tempdir().unwrap();
        merged_aggregated(n).write(dir.path()).unwrap();
        std::fs::metadata(dir.path().join(RUN_FILE_NAME))
            .unwrap()
            .len()
    };
    let (small, large) = (bytes(16), bytes(64));
    // pid, start and end differ from rank to rank: under 4 bytes a rank.
    assert!(
        large - small < 4 * 48,
        "{small} bytes for 16 ranks, {large} for 64"
    );
}

/// A summarised file of up to 64 ranks is one section: RUN holds the
/// ranks' metadata too. Above, each chunk of 64 has its PARTS section; a
/// file with every rank's own timing has its STATS_COLUMNS as well.
#[test]
fn a_summarised_trace_of_up_to_64_ranks_is_one_section() {
    let kinds = |n: u32, stats: RankStats| {
        let dir = tempfile::tempdir().unwrap();
        let mut trace = merged_aggregated(n);
        trace.rank_stats = stats;
        let path = trace.write(dir.path()).unwrap();
        let file = mpigram_format::TraceFile::open(&path).unwrap();
        let kinds: Vec<(u32, u32)> = file.sections().iter().map(|s| (s.kind, s.index)).collect();
        let back = Trace::open(dir.path()).unwrap();
        assert_eq!(back.ranks.len(), n as usize);
        for (r, part) in back.ranks.iter().enumerate() {
            assert_eq!(part.meta.pid, 1000 + r as u32);
        }
        kinds
    };
    let (run, parts, stats) = (11, 12, 15);
    assert_eq!(kinds(64, RankStats::Summary), [(run, 0)]);
    assert_eq!(
        kinds(65, RankStats::Summary),
        [(run, 0), (parts, 0), (parts, 1)]
    );
    assert_eq!(
        kinds(3, RankStats::Exact),
        [(run, 0), (parts, 0), (stats, 0)]
    );
}
