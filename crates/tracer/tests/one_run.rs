//! The tracer owns its trace directory for a run: the files an earlier run
//! left (an aborted run's rank files and journals, an unmerged run's rank
//! files) are removed at MPI_Init, and a run that finds another one still
//! alive in the directory is not traced, with one message, instead of the
//! two deleting each other's files.

mod common;

use common::*;
use mpigram_testkit::{compile, mpiexec};
use std::path::Path;
use std::time::Duration;

/// `program` traced into `dir` (by hand, as `LD_PRELOAD=... mpiexec` does).
fn run_into(dir: &Path, program: &str, ranks: u32, args: &[&str]) -> TracedRunIn {
    let exe = compile(program).unwrap();
    let mut job = mpiexec(ranks, &exe, args);
    job.preload(tracer())
        .env("MPIGRAM_OUT", dir)
        .env("MPIGRAM_VERIFY", "1")
        .timeout(Duration::from_secs(90));
    TracedRunIn(job.run().unwrap())
}

struct TracedRunIn(mpigram_testkit::RunOutput);

/// Waits (at most 30 s) until no process runs the executable `exe`.
fn wait_until_no_process_runs(exe: &Path) {
    let exe = exe.canonicalize().unwrap();
    let running = || {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .any(|p| std::fs::read_link(p.path().join("exe")).is_ok_and(|e| e == exe))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while running() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} still runs after 30 s",
            exe.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The trace in `dir` is exactly that of the last run, `ranks` ranks.
fn assert_only_the_last_run(dir: tempfile::TempDir, last: TracedRunIn, ranks: u32) {
    let run = TracedRun {
        dir,
        output: last.0,
    };
    let trace = assert_trace_is_exact(&run, ranks);
    assert!(trace.is_complete(), "{}", run.output);
}

#[test]
fn an_aborted_runs_files_do_not_mix_into_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let aborted = run_into(dir.path(), "crash_abort", 3, &[]);
    assert_eq!(aborted.0.status.code(), Some(42), "{}", aborted.0);
    assert!(dir.path().join("rank1.mgr").is_file());
    // The next run comes after the aborted one has ended: mpiexec can
    // return while a killed rank is still exiting, and a run alive in the
    // directory keeps the next one from tracing into it (tested below).
    wait_until_no_process_runs(&compile("crash_abort").unwrap());
    let next = run_into(dir.path(), "halo2d", 2, &["10"]);
    next.0.assert_success();
    assert_only_the_last_run(dir, next, 2);
}

/// What writers killed in the middle of a write leave (hidden temporary
/// files) is gone once the next run owns the directory.
#[test]
fn temporary_files_of_killed_writes_are_removed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let left = [
        ".trace.mgr.tmp-4194300-0",
        ".rank0.journal.tmp-4194301-0",
        ".rank1.checkpoint.tmp-4194302-3",
        ".rank5.mgr.tmp-4194303-0",
    ];
    for name in left {
        std::fs::write(dir.path().join(name), b"half a file").unwrap();
    }
    let other = dir.path().join(".notes.tmp-1-0");
    std::fs::write(&other, b"not the tracer's").unwrap();
    let next = run_into(dir.path(), "halo2d", 2, &["10"]);
    next.0.assert_success();
    for name in left {
        assert!(!dir.path().join(name).exists(), "{name} is still there");
    }
    assert!(other.exists(), "a file not of the tracer's names stays");
    assert_only_the_last_run(dir, next, 2);
}

#[test]
fn an_unmerged_runs_files_do_not_replace_the_next_runs_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile("p2p_blocking").unwrap();
    let mut job = mpiexec(2, &exe, [] as [&str; 0]);
    job.preload(tracer())
        .env("MPIGRAM_OUT", dir.path())
        .env("MPIGRAM_MERGE", "0");
    job.run().unwrap().assert_success();
    assert!(dir.path().join("rank0.mgr").is_file());
    let next = run_into(dir.path(), "halo2d", 2, &["10"]);
    next.0.assert_success();
    assert!(!dir.path().join("rank0.mgr").exists());
    assert_only_the_last_run(dir, next, 2);
}

#[test]
fn a_run_into_a_directory_another_run_is_using_is_not_traced() {
    let dir = tempfile::tempdir().unwrap();
    let signal = tempfile::tempdir().unwrap();
    let go = signal.path().join("go");
    let exe = compile("linger").unwrap();
    // One rank each: the test kit gives each run its cores, two here.
    let mut first = mpiexec(1, &exe, [go.as_os_str()]);
    first
        .preload(tracer())
        .env("MPIGRAM_OUT", dir.path())
        .env("MPIGRAM_VERIFY", "1")
        .timeout(Duration::from_secs(90));
    let first = std::thread::spawn(move || first.run().unwrap());
    // The first run is alive once its journals are there.
    for _ in 0..3000 {
        if dir.path().join("rank0.journal").exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = run_into(dir.path(), "halo2d", 1, &["10"]);
    std::fs::write(&go, "").unwrap();
    let first = first.join().unwrap();
    first.assert_success();
    second.0.assert_success();
    let refusals = second
        .0
        .stderr
        .lines()
        .filter(|l| l.contains("in use by another run"))
        .count();
    assert_eq!(refusals, 1, "{}", second.0);
    // The first run's trace is whole, and holds linger's calls only.
    let run = TracedRun { dir, output: first };
    let trace = assert_trace_is_exact(&run, 1);
    let funcs: Vec<&str> = decoded(&trace, 0).iter().map(|c| c.func).collect();
    assert_eq!(
        funcs,
        [
            "MPI_Init",
            "MPI_Barrier",
            "MPI_Comm_rank",
            "MPI_Barrier",
            "MPI_Finalize"
        ]
    );
}
