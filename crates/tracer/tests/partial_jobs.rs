//! Jobs in which not every rank runs the tracer: `MPIGRAM_OFF=1` on some
//! ranks, or `LD_PRELOAD` given to one executable of an MPMD job. The
//! traced ranks find out at MPI_Init (before any communication of their
//! own) and trace without it: no clock synchronisation, no communicator
//! agreement, no merge, one file per traced rank, one warning for the job.
//! The application's MPI is untouched: each program checks its results.
//! Under MPICH's hydra the ranks count themselves through PMI-1, under Open
//! MPI's launcher through PMIx (Open MPI 4.1.4 here; `scripts/mpi-matrix`
//! runs the same under Open MPI 5).

mod common;

use common::*;
use mpigram_testkit::{Mpi, Mpiexec, RunOutput, compile, compile_with, mpi_available, mpiexec};
use mpigram_trace::{Ending, Trace};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// The warning a partly traced job prints, once.
const WARNING: &str = "not every rank of MPI_COMM_WORLD runs mpigram";

fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// Each traced rank's own file holds exactly its calls, and it ended with
/// MPI_Finalize; no other rank is in the trace.
fn assert_traced_exactly(dir: &Path, traced: &[u32], output: &str) -> Trace {
    let trace = Trace::open(dir).unwrap_or_else(|e| panic!("{e}\n{output}"));
    let found: Vec<u32> = trace.ranks.iter().map(|r| r.meta.rank).collect();
    assert_eq!(found, traced, "{output}");
    for rank in &trace.ranks {
        let r = rank.meta.rank;
        assert_eq!(rank.meta.ending, Ending::Finalized, "rank {r}");
        let expected = verify_stream(dir, r);
        let got: Vec<Vec<u8>> = trace.calls(r).map(<[u8]>::to_vec).collect();
        assert_eq!(got.len(), expected.len(), "rank {r}: calls");
        assert!(got == expected, "rank {r}: calls differ from its stream");
        assert!(rank.meta.clock_sync.is_empty(), "no clock synchronisation");
        let calls = decoded(&trace, r);
        assert_eq!(calls.first().map(|c| c.func), Some("MPI_Init"));
        assert_eq!(calls.last().map(|c| c.func), Some("MPI_Finalize"));
    }
    trace
}

/// Runs `job` tracing into `dir` with `MPIGRAM_VERIFY`, within a minute;
/// the application must succeed.
fn run_verified(job: &mut Mpiexec, dir: &Path) -> RunOutput {
    job.env("MPIGRAM_OUT", dir)
        .env("MPIGRAM_VERIFY", "1")
        .timeout(Duration::from_secs(60));
    let out = job.run().unwrap();
    out.assert_success();
    out
}

fn warnings(stderr: &str) -> usize {
    stderr.lines().filter(|l| l.contains(WARNING)).count()
}

/// `coll_blocking` on 3 ranks under `mpi`, rank 0 (the merge's root)
/// with `MPIGRAM_OFF=1`: ranks 1 and 2 trace alone, with one warning.
fn mpigram_off_on_the_first_rank(mpi: &Mpi) -> tempfile::TempDir {
    let exe = compile_with(mpi, "coll_blocking").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut job = mpiexec(1, &exe, [] as [&str; 0]);
    job.mpi(mpi)
        .env_here("MPIGRAM_OFF", "1")
        .then(2, &exe, [] as [&str; 0])
        .preload(tracer());
    let out = run_verified(&mut job, dir.path());
    assert_traced_exactly(dir.path(), &[1, 2], &out.stderr);
    assert_eq!(warnings(&out.stderr), 1, "{out}");
    dir
}

/// `p2p_blocking` on 2 ranks under `mpi` with the tracer preloaded into
/// the first executable only (`mpiexec -n 1 -env LD_PRELOAD libmpigram.so
/// ./a : -n 1 ./a`): rank 0 traces alone, with one warning.
fn the_tracer_in_the_first_executable(mpi: &Mpi) {
    let a = compile_with(mpi, "p2p_blocking").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut job = mpiexec(1, &a, [] as [&str; 0]);
    job.mpi(mpi)
        .env_here("LD_PRELOAD", tracer())
        .then(1, &a, [] as [&str; 0]);
    let out = run_verified(&mut job, dir.path());
    assert_traced_exactly(dir.path(), &[0], &out.stderr);
    assert_eq!(warnings(&out.stderr), 1, "{out}");
}

#[test]
fn mpigram_off_on_one_rank_changes_nothing_for_the_others() {
    mpi_available().unwrap();
    let dir = mpigram_off_on_the_first_rank(Mpi::selected());
    assert_eq!(
        files(dir.path()),
        [
            ".lock",
            "rank1.mgr",
            "rank1.verify",
            "rank2.mgr",
            "rank2.verify"
        ]
        .map(String::from)
        .into()
    );
}

#[test]
fn an_mpmd_job_with_the_tracer_in_one_executable_runs_and_traces_it() {
    mpi_available().unwrap();
    the_tracer_in_the_first_executable(Mpi::selected());
}

/// New communicators are not agreed on (the tracer's all-reduce over
/// them would wait for the rank without the tracer): halo2d creates a
/// Cartesian communicator and exchanges halos over it.
#[test]
fn a_partly_traced_job_that_creates_communicators_runs_to_its_end() {
    mpi_available().unwrap();
    let exe = compile("halo2d").unwrap();
    for untraced_first in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut job = mpiexec(1, &exe, ["20"]);
        if untraced_first {
            job.env_here("MPIGRAM_OFF", "1").then(1, &exe, ["20"]);
        } else {
            job.then(1, &exe, ["20"]).env_here("MPIGRAM_OFF", "1");
        }
        job.preload(tracer());
        let out = run_verified(&mut job, dir.path());
        let traced = if untraced_first { [1] } else { [0] };
        let trace = assert_traced_exactly(dir.path(), &traced, &out.stderr);
        let calls = decoded(&trace, traced[0]);
        assert!(calls.iter().any(|c| c.func == "MPI_Cart_create"));
        assert_eq!(warnings(&out.stderr), 1, "{out}");
    }
}

/// A program of MPI sessions never calls MPI_Init: the ranks count
/// themselves at MPI_Session_init, and the communicator MPI_Comm_create_from_group
/// makes is agreed on only when every rank runs the tracer.
#[test]
fn a_partly_traced_program_of_sessions_runs_to_its_end() {
    mpi_available().unwrap();
    let exe = compile("sessions").unwrap();
    for traced in [&[0u32][..], &[0, 1]] {
        let dir = tempfile::tempdir().unwrap();
        let mut job = mpiexec(1, &exe, [] as [&str; 0]);
        job.then(1, &exe, [] as [&str; 0]);
        if traced.len() == 1 {
            job.env_here("MPIGRAM_OFF", "1");
        }
        job.preload(tracer());
        let out = run_verified(&mut job, dir.path());
        let trace = Trace::open(dir.path()).unwrap_or_else(|e| panic!("{e}\n{out}"));
        let found: Vec<u32> = trace.ranks.iter().map(|r| r.meta.rank).collect();
        assert_eq!(found, traced, "{out}");
        for &r in traced {
            let got: Vec<Vec<u8>> = trace.calls(r).map(<[u8]>::to_vec).collect();
            assert!(
                got == verify_stream(dir.path(), r),
                "rank {r}: calls differ"
            );
        }
        let warned = usize::from(traced.len() == 1);
        assert_eq!(warnings(&out.stderr), warned, "{out}");
        // Agreed communicators carry the instance their members agreed on.
        let instances: Vec<u64> = trace
            .ranks
            .iter()
            .flat_map(|r| r.comms.iter().map(|c| c.instance))
            .collect();
        assert!(!instances.is_empty(), "{out}");
        assert!(
            instances.iter().all(|&i| (i != 0) == (traced.len() == 2)),
            "{instances:?}"
        );
    }
}

#[test]
fn a_fully_traced_job_still_merges_and_says_nothing() {
    let run = run_traced("coll_blocking", 2, &[], &[]);
    run.output.assert_success();
    assert_trace_is_exact(&run, 2);
    assert!(run.dir.path().join("trace.mgr").is_file());
    assert_eq!(warnings(&run.output.stderr), 0);
    let trace = run.trace();
    assert!(trace.ranks.iter().all(|r| !r.meta.clock_sync.is_empty()));
}

/// Open MPI 4.1.4, which scripts/setup installs.
fn open_mpi() -> Mpi {
    let mpi = Mpi::named("openmpi").unwrap();
    assert!(
        mpi.installed(),
        "Open MPI 4 is missing: scripts/setup-mpis openmpi4"
    );
    mpi
}

#[test]
fn under_open_mpi_a_fully_traced_job_merges_without_a_promise() {
    let mpi = open_mpi();
    let exe = compile_with(&mpi, "coll_blocking").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut job = mpiexec(2, &exe, [] as [&str; 0]);
    job.mpi(&mpi)
        .preload(tracer())
        .env("MPIGRAM_OUT", dir.path())
        .timeout(Duration::from_secs(60));
    let out = job.run().unwrap();
    out.assert_success();
    assert!(!out.stderr.contains("MPIGRAM_ALL_RANKS"), "{out}");
    assert_eq!(warnings(&out.stderr), 0, "{out}");
    assert!(dir.path().join("trace.mgr").is_file(), "{out}");
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.ranks.len(), 2);
    assert!(trace.ranks.iter().all(|r| !r.meta.clock_sync.is_empty()));
}

#[test]
fn under_open_mpi_an_mpmd_job_with_the_tracer_in_one_executable_traces_it_alone() {
    the_tracer_in_the_first_executable(&open_mpi());
}

#[test]
fn under_open_mpi_mpigram_off_on_the_first_rank_leaves_the_others_tracing_alone() {
    mpigram_off_on_the_first_rank(&open_mpi());
}
