//! Test kit for mpigram's integration tests: builds the MPI programs of
//! `tests/mpi` and runs them under an MPI's launcher: MPICH 4.0.2's unless
//! `MPIGRAM_TEST_MPI` names another ([`Mpi`]).
//!
//! ```no_run
//! use mpigram_testkit::{compile, mpi_available, mpiexec};
//!
//! mpi_available().expect("MPICH is needed for this test");
//! let exe = compile("halo2d").unwrap();
//! let out = mpiexec(4, &exe, ["20"])
//!     .preload("/path/to/libmpigram.so")
//!     .env("MPIGRAM_OUT", "/tmp/trace")
//!     .run()
//!     .unwrap();
//! out.assert_success();
//! ```
//!
//! - [`compile`] builds `tests/mpi/<name>.c` (mpicc) or `.f90` (mpif90) into
//!   `target/mpi-tests/`, only when a source or header changed; safe from
//!   many threads and processes at once.
//! - [`mpiexec`] describes a run: environment and preloads for the ranks only,
//!   the yield preload (on by default; it keeps runs with more ranks than cores
//!   fast), a hard timeout that kills mpiexec and every rank, captured output.
//! - [`programs`] lists the programs with the rank counts they support and how
//!   the crash programs must fail, read from their header comments.
//! - [`mpi_available`] tells, with an install hint, whether MPICH is there:
//!   tests should fail with it, not skip, when it is missing.

pub mod alloc;
mod compile;
mod error;
mod mpis;
mod paths;
mod programs;
mod run;

pub use compile::{compile, compile_with, mpi_available, yield_preload};
pub use error::{Error, Result};
pub use mpis::{Launch, MPI_NAMES, Mpi, wheels_dir};
pub use paths::{cache_dir, mpi_tests_dir, target_dir, workspace_root};
pub use programs::{Expect, Program, program, programs};
pub use run::{DEFAULT_TIMEOUT, Mpiexec, RunOutput, mpiexec};

/// Processors this process may run on (its CPU affinity, as the ranks it
/// launches inherit it; not a cgroup's quota, which the tracer does not
/// see either).
pub fn processors() -> u32 {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the set's size is given.
    let ok = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } == 0;
    assert!(ok, "sched_getaffinity failed");
    // SAFETY: reads the set filled above.
    unsafe { libc::CPU_COUNT(&set) as u32 }
}
