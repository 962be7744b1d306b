//! `mpiexec -n K mpigram critical-path TRACE` (a build with the `mpi`
//! feature, MPICH): the trace's ranks shared out over K processes give
//! the single process's JSON, to the byte, with fewer, as many and more
//! processes than ranks.
#![cfg(feature = "mpi")]

mod common;

use common::{mpigram, one_at_a_time, text, traced};
use mpigram_testkit::mpiexec;

/// The JSON of the single process, then of K processes for each K.
fn assert_same_across(dir: &tempfile::TempDir, ks: &[u32]) {
    let trace = dir.path().to_str().unwrap();
    let args = ["critical-path", trace, "--json", "--heuristic"];
    let single = mpigram(&args);
    assert!(single.status.success(), "{}", text(&single.stderr));
    let single = text(&single.stdout);
    assert!(single.contains("\"segments\""), "{single}");
    for &k in ks {
        let out = mpiexec(k, env!("CARGO_BIN_EXE_mpigram"), args)
            .run()
            .unwrap();
        assert!(out.status.success(), "{}: {}", out.command, out.stderr);
        assert_eq!(out.stdout, single, "{}", out.command);
    }
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
