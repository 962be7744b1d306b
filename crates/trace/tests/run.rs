//! The whole-run trace: ranks merged as at MPI_Finalize read back exactly,
//! whole or one rank at a time.

mod common;

use common::sample;
use mpigram_grammar::Sequitur;
use mpigram_trace::timing::{
    Bins, ColumnWriter, DEFAULT_BASE, ExactWriter, LossyClock, decode_columns, decode_exact,
};
use mpigram_trace::{Bases, CallTimes, RANKS_PER_CHUNK, RankTrace, Timing, Trace};

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
