//! Per-call times are decompressed as a tool reads them, one block at a
//! time, so a block damaged behind valid checksums is found then: the
//! error names the trace, the rank and the section.

mod common;

use mpigram_analysis::timeline::{Source, rank_times};

#[test]
fn a_damaged_block_of_times_names_the_trace_the_rank_and_the_section() {
    let mut trace = common::two_ranks(100);
    trace.dir = "/traces/run-7".into();
    let times = &mut trace.ranks[1].times.exact;
    let kept = times.len() / 2;
    times.truncate(kept);
    let start = trace.run_start_ns();
    assert!(rank_times(&trace, &trace.ranks[0], Source::Lossless, start).is_ok());
    let err = rank_times(&trace, &trace.ranks[1], Source::Lossless, start)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("/traces/run-7: rank 1's EXACT_TIMES section: "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
