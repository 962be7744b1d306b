//! `mpiexec -n K mpigram profile TRACE` (a build with the `mpi` feature,
//! MPICH): the trace's ranks shared out over K processes give the single
//! process's JSON, to the byte, with fewer, as many and more processes
//! than ranks.
#![cfg(feature = "mpi")]

mod common;

use common::{one_at_a_time, same_across_processes, traced};

/// The JSON of the single process, then of K processes for each K
/// (the single process's names `finding`).
fn assert_same_across(dir: &tempfile::TempDir, ks: &[u32], finding: &str) {
    let trace = dir.path().to_str().unwrap();
    let single = same_across_processes(&["profile", trace, "--json"], ks);
    assert!(single.contains(finding), "{single}");
}

#[test]
fn wait_states_and_classes_over_one_two_and_three_processes() {
    let _one = one_at_a_time();
    let late = traced("wait_states", 2, &["late_sender", "20", "5"], "lossless");
    assert_same_across(&late, &[1, 2, 3], "\"late_sender\"");
    let bsp = traced("critpath_bsp", 3, &["0", "20", "5"], "lossy");
    assert_same_across(&bsp, &[2, 3], "\"rank_groups\"");
    let halo = traced("halo2d", 4, &["20"], "lossless");
    assert_same_across(&halo, &[2, 3], "\"rank_groups\"");
}
