//! The critical path spread over K processes (here threads, talking
//! through a [`Link`] of queues) is the single process's, to the byte:
//! with fewer, as many and more processes than ranks, and when a process
//! fails to read (process 0 then reads its ranks itself).

mod common;

#[path = "common/processes.rs"]
mod processes;

use mpigram_analysis::critical_path::{self, Analysis};
use mpigram_analysis::timeline::Source;
use mpigram_trace::Trace;

fn json(a: &Analysis) -> String {
    let mut out = Vec::new();
    a.write_json(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn across(trace: &Trace, processes: usize, garbled: Option<usize>) -> String {
    json(&processes::critical_path_across(
        trace, processes, garbled, true,
    ))
}

#[test]
fn the_analysis_across_processes_is_the_single_processs() {
    // Ten chunks of calls a rank.
    let trace = common::two_ranks(10_000);
    let single = json(&critical_path::analyse(&trace, Source::Best, true).unwrap());
    assert!(single.contains("\"segments\""));
    for processes in [1, 2, 3] {
        assert_eq!(
            across(&trace, processes, None),
            single,
            "{processes} processes"
        );
    }
}

#[test]
fn a_process_that_cannot_read_leaves_its_ranks_to_process_0() {
    let trace = common::two_ranks(10_000);
    let single = json(&critical_path::analyse(&trace, Source::Best, true).unwrap());
    // Process 1 reads rank 1: every chunk it sends is garbled.
    assert_eq!(across(&trace, 2, Some(1)), single);
}
