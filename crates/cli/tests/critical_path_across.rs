//! `mpiexec -n K mpigram critical-path TRACE` (a build with the `mpi`
//! feature, MPICH): the trace's ranks shared out over K processes give
//! the single process's JSON, to the byte, with fewer, as many and more
//! processes than ranks.
#![cfg(feature = "mpi")]

mod common;

use common::{mpigram, one_at_a_time, same_across_processes, text, traced};
use mpigram_testkit::mpiexec;

/// The JSON of the single process, then of K processes for each K.
fn assert_same_across(dir: &tempfile::TempDir, ks: &[u32]) {
    let trace = dir.path().to_str().unwrap();
    let args = ["critical-path", trace, "--json", "--heuristic"];
    let single = same_across_processes(&args, ks);
    assert!(single.contains("\"segments\""), "{single}");
}

#[test]
fn two_ranks_over_one_and_two_processes() {
    let _one = one_at_a_time();
    // 33,000 calls: four chunks of calls a rank.
    let dir = traced("microbench", 2, &["2000"], "lossless");
    assert_same_across(&dir, &[1, 2]);
}

#[test]
fn four_ranks_over_three_processes() {
    let _one = one_at_a_time();
    let dir = traced("critpath_paper", 4, &["100"], "lossless");
    assert_same_across(&dir, &[1, 2, 3]);
}

#[test]
fn the_ring_the_bsp_loop_and_halo2d_over_two_and_three_processes() {
    let _one = one_at_a_time();
    let ring = traced("critpath_ring", 3, &["1", "40", "3"], "lossless");
    assert_same_across(&ring, &[2, 3]);
    let bsp = traced("critpath_bsp", 3, &["0", "20", "5"], "lossless");
    assert_same_across(&bsp, &[2, 3]);
    let halo = traced("halo2d", 4, &["20"], "lossless");
    assert_same_across(&halo, &[2, 3]);
}

#[test]
fn a_stream_of_synchronous_sends_over_two_processes() {
    let _one = one_at_a_time();
    // MPI_Ssend/MPI_Recv pairs: each send's end waits for its receive's
    // post, an edge from the receiver's process to the sender's.
    let dir = traced(
        "wait_states",
        2,
        &["late_receiver", "0", "3000"],
        "lossless",
    );
    assert_same_across(&dir, &[2]);
}

#[test]
fn an_error_found_by_the_walk_is_the_single_processs_and_every_process_ends() {
    let _one = one_at_a_time();
    // Threads of one rank whose calls interleave: their matches contradict
    // program order, and the walk finds a cycle.
    let dir = traced("threads", 3, &[], "lossless");
    let trace = dir.path().to_str().unwrap();
    let args = ["critical-path", trace, "--json"];
    let single = mpigram(&args);
    assert!(!single.status.success());
    let error = text(&single.stderr);
    assert!(error.contains("cycle"), "{error}");
    for k in [2, 3] {
        let out = mpiexec(k, env!("CARGO_BIN_EXE_mpigram"), args)
            .run()
            .unwrap();
        assert!(!out.status.success(), "{}", out.command);
        assert!(
            out.stderr.contains(error.trim()),
            "{}: {}",
            out.command,
            out.stderr
        );
        // Nothing else: no report, and no message left unreceived.
        assert_eq!(out.stdout, "", "{}", out.command);
    }
}
