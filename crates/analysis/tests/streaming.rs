//! The critical path read from a trace a chunk at a time is the one found
//! from the whole run's calls in memory (timed, matched), to the byte.

mod common;

use mpigram_analysis::critical_path::{self, Analysis};
use mpigram_analysis::matching::{match_trace, world_ranks};
use mpigram_analysis::timeline::Source;

fn json(a: &Analysis) -> String {
    let mut out = Vec::new();
    a.write_json(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_streamed_analysis_is_the_analysis_of_the_calls_in_memory() {
    // Several chunks of calls per rank, thousands of path segments.
    let trace = common::two_ranks(10_000);
    let streamed = critical_path::analyse(&trace, Source::Best, true).unwrap();
    let timelines = critical_path::timelines(&trace, Source::Best).unwrap();
    let matching = match_trace(&trace, &world_ranks(&trace)).unwrap();
    let in_memory =
        critical_path::analyse_calls(timelines, &matching, streamed.sites.clone(), true).unwrap();
    assert_eq!(streamed.calls, 2 * (2 + 4 * 10_000));
    assert!(
        streamed.path.segments.len() > 10_000,
        "{}",
        streamed.path.segments.len()
    );
    assert_eq!(matching.unmatched.len(), 0);
    assert_eq!(json(&streamed), json(&in_memory));
}
