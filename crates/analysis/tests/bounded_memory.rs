//! The analyses hold what is in flight, not the calls: the most memory
//! `critical-path`, `profile`, `decode` (calls and times read as
//! `mpigram decode` reads them) and `stats` allocate while reading a trace (beyond
//! the trace as opened) does not grow as the calls double (200,000,
//! 400,000, 800,000), and stays under a bound. Counted by this test
//! binary's allocator; one test, so that nothing else allocates meanwhile.

mod common;

use mpigram_analysis::critical_path;
use mpigram_analysis::decode::RankDecoder;
use mpigram_analysis::profile::{self, Options};
use mpigram_analysis::stats::Stats;
use mpigram_analysis::timeline::{Source, rank_spans};
use mpigram_testkit::alloc::{Counting, assert_bounded, peak_of};
use mpigram_trace::Trace;

#[global_allocator]
static COUNTING: Counting = Counting;

/// Decodes every call of `trace` with its time, as `mpigram decode` does;
/// the calls decoded.
fn decode(trace: &Trace) -> u64 {
    let mut calls = 0;
    for part in &trace.ranks {
        let mut spans = rank_spans(trace, part, Source::Best, trace.run_start_ns()).unwrap();
        for call in RankDecoder::new(trace, part) {
            let line = call.unwrap().to_text();
            let span = spans.next().unwrap().unwrap();
            assert!(span.end_ns >= span.start_ns, "{line}");
            calls += 1;
        }
    }
    calls
}

#[test]
fn the_analyses_hold_what_is_in_flight_not_the_calls() {
    let (mut path, mut prof, mut dec, mut stats) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for iterations in [25_000u64, 50_000, 100_000] {
        let trace = common::two_ranks(iterations);
        let calls = 2 * (2 + 4 * iterations);
        path.push((
            calls,
            peak_of(|| {
                let a = critical_path::analyse(&trace, Source::Best, false).unwrap();
                assert_eq!(a.calls, calls);
                assert!(a.path.segments.len() as u64 > iterations);
            }),
        ));
        prof.push((
            calls,
            peak_of(|| {
                let p = profile::profile(&trace, &Options::default()).unwrap();
                assert_eq!(p.calls, calls);
                assert!(p.wait_states.len() as u64 >= iterations / 3);
            }),
        ));
        dec.push((calls, peak_of(|| assert_eq!(decode(&trace), calls))));
        stats.push((
            calls,
            peak_of(|| {
                let s = Stats::of(&trace).unwrap();
                assert_eq!(s.function("MPI_Allreduce").unwrap().calls, 2 * iterations);
            }),
        ));
    }
    // Within 2 MiB (the 256 KiB write buffers of the temporary files fill
    // up), under 64 MiB. The walk's tables of what is in flight double
    // once between 400,000 and 800,000 calls (2.8 MiB: their entries at a
    // chunk's end cross a hash table's capacity).
    assert_bounded("critical-path", &path, 2 << 20, 64 << 20);
    assert_bounded("profile", &prof, 2 << 20, 64 << 20);
    assert_bounded("decode", &dec, 1 << 20, 16 << 20);
    assert_bounded("stats", &stats, 1 << 20, 16 << 20);
}
