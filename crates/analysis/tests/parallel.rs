//! The critical path and the profile spread over K processes (here
//! threads, talking through a [`Link`] of queues) are the single
//! process's, to the byte: with fewer, as many and more processes than
//! ranks, and when a process fails to read (process 0 then reads its ranks
//! itself).

mod common;

#[path = "common/processes.rs"]
mod processes;

use mpigram_analysis::critical_path::{self, Analysis};
use mpigram_analysis::profile::{self, Profile};
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
fn a_garbled_message_stops_every_process_with_one_error() {
    let trace = common::two_ranks(10_000);
    for (processes, garbled) in [(2, 1), (3, 2)] {
        // Everything process `garbled` sends process 0 is garbled.
        let error = processes::try_critical_path_across(&trace, processes, Some(garbled), true)
            .expect_err("an error");
        assert_eq!(error, format!("cannot read what process {garbled} sent"));
    }
}

#[test]
fn a_rank_that_cannot_be_read_stops_every_process_with_the_single_processs_error() {
    let mut trace = common::two_ranks(10_000);
    let times = &mut trace.ranks[1].times.exact;
    times.truncate(times.len() / 2);
    let single = critical_path::analyse(&trace, Source::Best, true)
        .expect_err("an error")
        .to_string();
    assert!(single.contains("rank 1"), "{single}");
    for processes in [1, 2, 3] {
        let error = processes::try_critical_path_across(&trace, processes, None, true)
            .expect_err("an error");
        assert_eq!(error, single, "{processes} processes");
        assert_eq!(error.lines().count(), 1);
    }
}

fn profile_json(p: &Profile) -> String {
    let mut out = Vec::new();
    p.write_json(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_profile_across_processes_is_the_single_processs() {
    let trace = common::two_ranks(10_000);
    let single = profile::profile(&trace, &profile::Options::default()).unwrap();
    // Rank 1 computes longer every third iteration: two classes, and waits.
    assert!(!single.wait_totals.is_empty(), "{}", single.to_text());
    let single = profile_json(&single);
    for processes in [1, 2, 3] {
        let across = processes::try_profile_across(&trace, processes, None).unwrap();
        assert_eq!(profile_json(&across), single, "{processes} processes");
    }
}

#[test]
fn a_profile_with_a_garbled_message_or_an_unreadable_rank_stops_every_process() {
    let mut trace = common::two_ranks(10_000);
    for (processes, garbled) in [(2, 1), (3, 2)] {
        let error =
            processes::try_profile_across(&trace, processes, Some(garbled)).expect_err("an error");
        assert!(error.contains(&format!("process {garbled}")), "{error}");
    }
    let times = &mut trace.ranks[1].times.exact;
    times.truncate(times.len() / 2);
    let single = profile::profile(&trace, &profile::Options::default())
        .expect_err("an error")
        .to_string();
    assert!(single.contains("rank 1"), "{single}");
    for processes in [1, 2, 3] {
        let error = processes::try_profile_across(&trace, processes, None).expect_err("an error");
        assert_eq!(error, single, "{processes} processes");
    }
}
