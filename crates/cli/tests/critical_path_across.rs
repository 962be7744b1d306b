//! `mpiexec -n K mpigram critical-path TRACE` (a build with the `mpi`
//! feature, MPICH): the trace's ranks shared out over K processes give
//! the single process's JSON, to the byte, with fewer, as many and more
//! processes than ranks.
#![cfg(feature = "mpi")]

mod common;

use common::{mpigram, one_at_a_time, text};
use mpigram_testkit::{compile, mpi_available, mpiexec};

/// Traces `program ARGS` on `ranks` ranks with lossless times.
fn traced(program: &str, ranks: u32, args: &[&str]) -> tempfile::TempDir {
    mpi_available().unwrap();
    let exe = compile(program).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = ranks.to_string();
    let mut run = vec![
        "run",
        "-o",
        dir.path().to_str().unwrap(),
        "-n",
        &n,
        "--timing",
        "lossless",
        "--",
    ];
    run.push(exe.to_str().unwrap());
    run.extend(args);
    let out = mpigram(&run);
    assert!(out.status.success(), "{program}: {}", text(&out.stderr));
    dir
}

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
    let dir = traced("microbench", 2, &["2000"]);
    assert_same_across(&dir, &[1, 2]);
}

#[test]
fn four_ranks_over_three_processes() {
    let _one = one_at_a_time();
    let dir = traced("critpath_paper", 4, &["100"]);
    assert_same_across(&dir, &[1, 2, 3]);
}
