//! `mpiexec -n K mpigram critical-path|profile TRACE` (a build with the
//! `mpi` feature): the analysis spread over the K processes.

use anyhow::{Context, Result};
use mpigram_analysis::parallel::mpi_link::MpiLink;

/// MPI, when a process manager started this process (MPICH's hydra, Open
/// MPI, PMIx); None when it runs alone.
pub fn link() -> Result<Option<MpiLink>> {
    let launched = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if !launched {
        return Ok(None);
    }
    MpiLink::init()
        .context("cannot initialise MPI with MPI_THREAD_SERIALIZED")
        .map(Some)
}
